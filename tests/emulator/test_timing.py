"""Timing mode for block streams (docs/timing.md): the PE engines as fabric resources, block
admission through Supports, and hand-derived issue/complete cycles."""
import copy
import json
import pathlib

import numpy as np
import pytest

from emu_helpers import blk, fill
from emulator import Machine
from emulator.cli import main
from emulator.timing import DEFAULT_FABRIC, EngineModelError, PEEngines, stream_timing
from fabric.io import load, load_document, to_document
from isa import encode
from isa.errors import REASONS, IllegalBlockException

ROOT = pathlib.Path(__file__).resolve().parents[2]
ONE = 0x3F800000  # FP32 1.0

# ADR 0080: "its semantic engine is SFU" / "executes on the SFU engine" (Decisions 060, 061,
# 073-077, 126-128); every other instruction of the set executes on VEC.
SEED_SFU = ["TDIV", "TREM", "TEXP", "TLOG", "TRECIP", "TSQRT", "TRSQRT", "TEXTRACT", "TINSERT", "TIMG2COL"]
SEED_VEC = ["TADD", "TSUB", "TMUL", "TAND", "TOR", "TXOR", "TSHL", "TSHR", "TMAX", "TMIN", "TCMP", "TABS",
            "TNOT", "TNEG", "TRELU", "TSEL", "TCVT", "TFMA"]
ALL_25 = ["FP64", "FP32", "TF32", "HF32", "FP16", "BF16", "HiF8", "E4M3", "E5M2", "E3M2", "E2M3", "E2M1X2",
          "E1M2X2", "E8M0", "HiF4X2", "S64", "S32", "S16", "S8", "S4X2", "U64", "U32", "U16", "U8", "U4X2"]


@pytest.fixture(scope="module")
def pe_doc():
    """The shipped description as loaded: its op lists expanded."""
    return to_document(load(DEFAULT_FABRIC))


@pytest.fixture(scope="module")
def engines():
    return PEEngines.load()


def engines_from(doc, edit):
    d = copy.deepcopy(doc)
    edit({n["name"]: n for fu in d["fus"] for n in fu["nodes"]})
    return PEEngines.from_fabric(load_document(d))


def machine(pes=(0,)):
    m = Machine()
    for p in pes:
        for t in (1, 2):
            fill(m, p, t, "FP32", np.full((4, 16), ONE + t, np.uint32))
    return m


def b(mn, srcs, dst, mask=0b0001, dtype="FP32"):
    """A 4 x 16 block: 64 physical destination elements (CAP = 4 rows of 16 x 4 bytes)."""
    return blk(mn, dtype, srcs, dst, mask=mask, vc=16, vr=4, cap=256)


# ---------------------------------------------------------------- the shipped description

def test_shipped_description_is_package_data_its_op_lists_the_instruction_table():
    assert DEFAULT_FABRIC.parent.name == "emulator"      # inside the package: found when installed
    assert not (ROOT / "examples" / "fabric" / "pe.json").exists()     # one file, no copy to keep equal
    doc = json.loads(DEFAULT_FABRIC.read_text())
    assert [n["op_list"] for fu in doc["fus"] for n in fu["nodes"]] == [["*"], ["*"]]   # every member


def test_shipped_description_passes_fabric_check(capsys):
    assert main(["fabric", "check", str(DEFAULT_FABRIC)]) == 0
    out = capsys.readouterr()
    assert out.err == ""
    # one behaviour key per (instruction, DataType): VEC 11 x 16 (TADD TSUB TMUL TMAX TMIN TCMP
    # TABS TNEG TRELU TSEL TFMA) + 6 x 8 integer-only + TCVT 25 x 25 = 849; SFU 2 x 16 (TDIV
    # TREM) + 5 x 8 floating + 2 x 24 (TEXTRACT TINSERT) + 9 (TIMG2COL) = 129
    assert "Finite: 849 canonical behaviour key(s)" in out.out
    assert "Finite: 129 canonical behaviour key(s)" in out.out


def test_each_engine_lists_the_instructions_the_seed_assigns_it(pe_doc):
    ops = {n["implementation_family"]: n for fu in pe_doc["fus"] for n in fu["nodes"]}
    assert ops["TileVecEngine"]["op_list"] == [f"tile.{m}" for m in SEED_VEC]
    assert ops["TileSfuEngine"]["op_list"] == [f"tile.{m}" for m in SEED_SFU]
    # VEC carries TCVT (every assigned DataType); SFU's widest set is TEXTRACT's (all but HiF4X2)
    assert ops["TileVecEngine"]["hw_params"]["datatypes"] == ALL_25
    assert ops["TileSfuEngine"]["hw_params"]["datatypes"] == [d for d in ALL_25 if d != "HiF4X2"]
    for n in ops.values():
        assert {"lanes", "pipeline_latency"} <= set(n["hw_params"])


def test_engine_capability_is_a_documented_reason():
    assert "ENGINE_CAPABILITY" in REASONS
    assert "ENGINE_CAPABILITY" in (ROOT / "docs" / "timing.md").read_text()


# ---------------------------------------------------------------- admission

def test_without_a_fabric_nothing_is_admitted_or_rejected():
    m = machine()
    assert m.engines is None
    m.execute(b("TMUL", [1, 2], 3))


def test_an_engine_without_the_op_rejects_the_block_before_effects(pe_doc):
    eng = engines_from(pe_doc, lambda n: n["vec"]["op_list"].remove("tile.TMUL"))
    m = machine()
    m.engines = eng
    before = m.digest()
    with pytest.raises(IllegalBlockException) as exc:
        m.execute(b("TMUL", [1, 2], 1))                      # would overwrite a source
    assert exc.value.reason == "ENGINE_CAPABILITY" and "MemberNotEnabled" in exc.value.message
    assert m.digest() == before
    m.execute(b("TADD", [1, 2], 3))                          # the rest of the engine still runs


def test_an_engine_without_the_datatype_rejects_the_block_before_effects(pe_doc):
    eng = engines_from(pe_doc, lambda n: n["vec"]["hw_params"]["datatypes"].remove("FP32"))
    m = machine()
    fill(m, 0, 5, "FP16", np.full((4, 16), 0x3C00, np.uint16))
    m.engines = eng
    before = m.digest()
    with pytest.raises(IllegalBlockException) as exc:
        m.execute(b("TADD", [1, 2], 3))
    assert exc.value.reason == "ENGINE_CAPABILITY" and "ParameterNotAdmitted" in exc.value.message
    assert "FP32" in exc.value.message
    assert m.digest() == before
    m.execute(blk("TADD", "FP16", [5, 5], 6, vc=16, vr=4, cap=128))


def test_a_missing_engine_rejects_its_blocks(pe_doc):
    d = copy.deepcopy(pe_doc)
    d["fus"] = [fu for fu in d["fus"] if fu["name"] != "sfu"]
    m = machine()
    m.engines = PEEngines.from_fabric(load_document(d))
    before = m.digest()
    with pytest.raises(IllegalBlockException, match="no SFU engine"):
        m.execute(b("TEXP", [1], 3))
    assert m.digest() == before


def test_a_rejected_block_stops_a_stream_after_the_last_commit(pe_doc):
    eng = engines_from(pe_doc, lambda n: n["vec"]["op_list"].remove("tile.TMUL"))
    ref = machine()
    ref.execute(b("TADD", [1, 2], 3))
    m = machine()
    m.engines = eng
    res = m.run([b("TADD", [1, 2], 3), b("TMUL", [3, 2], 3)])
    assert res.executed == 1 and res.error.reason == "ENGINE_CAPABILITY" and res.error.index == 1
    assert m.digest() == ref.digest()


def test_the_shipped_model_admits_what_the_isa_admits(engines):
    from isa import datatypes as dt
    from isa.instructions import INSTRUCTIONS
    for instr in INSTRUCTIONS:
        for d in instr.dtypes:
            dst = d if "DataType" in instr.datr else None
            assert engines._verdict(instr, d, dst) is None, (instr.mnemonic, d)
    assert len(dt.DATATYPES) == 25


def test_a_fabric_with_two_vec_engines_is_not_a_pe_model(pe_doc):
    d = copy.deepcopy(pe_doc)
    twin = copy.deepcopy(d["fus"][0])
    twin["name"] = "vec2"
    d["fus"].append(twin)
    with pytest.raises(EngineModelError, match="one VEC engine"):
        PEEngines.from_fabric(load_document(d))


def test_a_fabric_without_engines_is_not_a_pe_model():
    with pytest.raises(EngineModelError, match="no TileVecEngine or TileSfuEngine"):
        PEEngines.load(ROOT / "examples" / "fabric" / "loop.json")


# ---------------------------------------------------------------- hand-derived cycles
# Shipped model: VEC 16 lanes, latency 4; SFU 4 lanes, latency 12.  A 4 x 16 destination is
# 64 elements: 4 VEC beats, 16 SFU beats.  complete = issue + beats + latency.

def test_shipped_lanes_and_latencies(engines):
    assert (engines.engines["VEC"].lanes, engines.engines["VEC"].latency) == (16, 4)
    assert (engines.engines["SFU"].lanes, engines.engines["SFU"].latency) == (4, 12)


def test_independent_blocks_overlap_on_different_engines_and_queue_in_order_on_one(engines):
    stream = [b("TADD", [1, 2], 3),       # VEC: issue 0, beats 4, complete 0+4+4 = 8
              b("TEXP", [1], 4),          # SFU, independent: issue 0, 16 beats, complete 0+16+12 = 28
              b("TMUL", [3, 4], 5),       # VEC, needs t3 (8) and t4 (28): issue 28, complete 36
              b("TSUB", [1, 2], 6)]       # VEC, independent but in order behind TMUL: issue 32, complete 40
    t = stream_timing(stream, machine(), engines)
    assert [(x.issue, x.complete, x.beats) for x in t.blocks] == [(0, 8, 4), (0, 28, 16), (28, 36, 4), (32, 40, 4)]
    assert [x.after for x in t.blocks] == [(), (), (0, 1), ()]
    assert t.total == 40
    assert t.busy == {(0, "VEC"): 12, (0, "SFU"): 16}      # 30% and 40% of 40 cycles
    assert t.utilisation(0, "VEC") == pytest.approx(0.3)


def test_a_chain_through_one_tile_waits_for_each_commit(engines):
    stream = [b("TADD", [1, 2], 3),       # 0 -> 8
              b("TADD", [3, 2], 3),       # reads t3 version 1: issue 8, complete 16
              b("TSQRT", [3], 4)]         # reads t3 version 2: issue 16, complete 16+16+12 = 44
    t = stream_timing(stream, machine(), engines)
    assert [(x.issue, x.complete) for x in t.blocks] == [(0, 8), (8, 16), (16, 44)]
    assert t.total == 44


def test_a_renamed_destination_does_not_wait_for_readers_of_the_old_tile(engines):
    stream = [b("TEXP", [1], 3),          # SFU reads t1: 0 -> 28
              b("TADD", [2, 2], 1)]       # VEC writes a new t1: no dependence, issue 0 -> 8
    t = stream_timing(stream, machine(), engines)
    assert [(x.issue, x.complete) for x in t.blocks] == [(0, 28), (0, 8)]


def test_pes_run_their_engines_independently_and_a_zero_mask_takes_no_time(engines):
    stream = [b("TADD", [1, 2], 3, mask=0b0001),   # PE0 VEC 0 -> 8
              b("TADD", [1, 2], 3, mask=0b0010),   # PE1 VEC, its own engine: 0 -> 8
              b("TADD", [1, 2], 4, mask=0b0000),   # strict no-op: no engine time
              b("TMUL", [3, 3], 4, mask=0b0011)]   # PE0 and PE1: after their own t3: 8 -> 16
    t = stream_timing(stream, machine(pes=(0, 1)), engines)
    assert [(x.pes, x.issue, x.complete) for x in t.blocks] == [
        ((0,), 0, 8), ((1,), 0, 8), ((), None, None), ((0, 1), 8, 16)]
    assert t.total == 16 and t.busy == {(0, "VEC"): 8, (1, "VEC"): 8}


def test_beats_round_up_to_whole_lanes(engines):
    m = Machine()
    fill(m, 0, 1, "S8", np.ones((1, 17), np.uint8))
    t = stream_timing([blk("TABS", "S8", [1], 2, vc=17, cap=17)], m, engines)
    assert (t.blocks[0].beats, t.blocks[0].complete) == (2, 6)   # ceil(17 / 16) = 2 beats, + 4


# ---------------------------------------------------------------- the CLI

def _stream(tmp_path, blocks):
    p = tmp_path / "s.tbs"
    p.write_bytes(encode(blocks))
    init = tmp_path / "init.arrow"
    machine().save(init)
    return p, init


def test_timing_leaves_architectural_results_identical(tmp_path, capsys):
    s, init = _stream(tmp_path, [b("TADD", [1, 2], 3), b("TEXP", [1], 4), b("TMUL", [3, 4], 5)])
    plain, timed = tmp_path / "plain.arrow", tmp_path / "timed.arrow"
    assert main(["run", str(s), "--init", str(init), "--out", str(plain)]) == 0
    assert main(["run", str(s), "--init", str(init), "--out", str(timed), "--timing"]) == 0
    assert Machine.load(plain).digest() == Machine.load(timed).digest()
    out = capsys.readouterr().out
    assert "total cycles 36" in out and "PE0 VEC: 8/36 (22.2%)" in out and "PE0 SFU: 16/36 (44.4%)" in out


def test_cli_fabric_rejection_is_one_line_and_leaves_the_initial_state(tmp_path, capsys, pe_doc):
    d = copy.deepcopy(pe_doc)
    d["fus"][0]["nodes"][0]["op_list"].remove("tile.TMUL")
    fab = tmp_path / "novecmul.json"
    fab.write_text(json.dumps(d))
    s, init = _stream(tmp_path, [b("TMUL", [1, 2], 3)])
    out = tmp_path / "out.arrow"
    assert main(["run", str(s), "--init", str(init), "--out", str(out), "--fabric", str(fab)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert "ENGINE_CAPABILITY" in err[0] and "block 0" in err[0]
    assert Machine.load(out).digest() == Machine.load(init).digest()


def test_cli_bad_fabric_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    s, init = _stream(tmp_path, [b("TADD", [1, 2], 3)])
    assert main(["run", str(s), "--init", str(init), "--timing", "--fabric", str(bad)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(bad) in err[0]


# ---------------------------------------------------------------- the engine families in fabric

def _sfu_op(pe_doc, edit=lambda n: None):
    from fabric.io import load, load_document, to_document
    d = copy.deepcopy(pe_doc)
    node = next(n for fu in d["fus"] for n in fu["nodes"] if n["name"] == "sfu")
    edit(node)
    fab = load_document(d)
    return next(n.op for fu in fab.fus for n in fu.ops() if n.op.family == "TileSfuEngine")


def _codes(op):
    from fabric.verify import verify_op
    return [(d.code.name, d.path.split("nodes[0].")[-1]) for d in verify_op(op)]


def test_a_datatype_no_enabled_instruction_uses_is_an_orphan(pe_doc):
    # HiF4X2 is supported only by TCVT (Decision 080), which is a VEC instruction
    op = _sfu_op(pe_doc, lambda n: n["hw_params"]["datatypes"].append("HiF4X2"))
    assert ("OrphanDeclaration", "hw_params.datatypes[24]") in _codes(op)


def test_an_instruction_of_the_other_engine_is_outside_the_family(pe_doc):
    op = _sfu_op(pe_doc, lambda n: n["op_list"].append("tile.TADD"))
    assert ("OpListMemberOutsideFamily", "op_list[10]") in _codes(op)


def test_a_port_too_narrow_for_a_beat_makes_the_wide_types_unreachable(pe_doc):
    def narrow(n):   # 4 lanes x 32 bits: FP64/S64/U64 beats need 256 bits
        n["ports"] = {"inputs": ["bits<128>", "bits<128>"], "results": ["bits<128>"]}
    op = _sfu_op(pe_doc, narrow)
    orphans = {p for c, p in _codes(op) if c == "OrphanDeclaration"}
    assert orphans == {"hw_params.datatypes[0]", "hw_params.datatypes[14]", "hw_params.datatypes[19]"}


def test_the_block_actor_is_a_valid_schema_instance_only_inside_the_instructions_set():
    from fabric.schemas import ActorInvalid, check_actor
    from fabric.tile_engine import block_actor
    from fabric.types import I1, IntegerType
    from isa.instructions import lookup
    a = block_actor(lookup("TSEL"), "FP16")
    assert a.inputs == (I1, IntegerType(16), IntegerType(16)) and a.results == (IntegerType(16),)
    assert block_actor(lookup("TCMP"), "S8").results == (I1,)
    assert block_actor(lookup("TCVT"), "FP32", "E2M1X2").results == (IntegerType(4),)
    check_actor(a)
    with pytest.raises(ActorInvalid, match="TAND does not support DataType FP32"):
        check_actor(block_actor(lookup("TAND"), "FP32"))


def test_behaviour_key_datatype_component_round_trips_and_rejects_unassigned_codes():
    from fabric import codec
    key = codec.encode_behavior_key("TileVecEngine", "TCVT", [("datatype", "FP32"), ("datatype", "U4X2")])
    assert key.endswith(bytes.fromhex("00000001" "00000018"))         # field codes 1 and 24
    lay = {"TCVT": (("datatype", None), ("datatype", None))}
    assert codec.decode_behavior_key(key, "TileVecEngine", lay) == ("TCVT", (("datatype", "FP32"), ("datatype", "U4X2")))
    with pytest.raises(codec.CodecError, match="DataType code 25 is not assigned"):
        codec.decode_behavior_key(key[:-4] + bytes.fromhex("00000019"), "TileVecEngine", lay)


def test_pipelined_beats_contract_round_trips():
    from fabric.contract import decode_contract, encode_contract, pipelined_beats
    rec = pipelined_beats(12)
    assert rec.timings[0].ranks == (0, 1, 12) and rec.states[0].capacity == 12
    assert decode_contract(encode_contract(rec)) == rec


def test_timing_reports_the_blocks_committed_before_a_rejection(tmp_path, capsys, pe_doc):
    d = copy.deepcopy(pe_doc)
    d["fus"][0]["nodes"][0]["op_list"].remove("tile.TMUL")
    fab = tmp_path / "novecmul.json"
    fab.write_text(json.dumps(d))
    s, init = _stream(tmp_path, [b("TADD", [1, 2], 3), b("TMUL", [3, 2], 4)])
    assert main(["run", str(s), "--init", str(init), "--timing", "--fabric", str(fab)]) == 1
    out = capsys.readouterr()
    assert "total cycles 8" in out.out and "TMUL" not in out.out
    assert "block 1" in out.err and "ENGINE_CAPABILITY" in out.err


def test_timing_does_not_apply_to_region_programs(capsys):
    prog = ROOT / "examples" / "regions" / "pointwise.regions.json"
    assert main(["run", str(prog), "--timing"]) == 2
    assert "block streams" in capsys.readouterr().err


def test_timing_without_the_blocks_engine_says_so(pe_doc):
    d = copy.deepcopy(pe_doc)
    d["fus"] = [fu for fu in d["fus"] if fu["name"] != "sfu"]
    eng = PEEngines.from_fabric(load_document(d))
    with pytest.raises(EngineModelError, match="block 0 .TEXP. needs the SFU engine"):
        stream_timing([b("TEXP", [1], 3)], machine(), eng)
