"""Fusion of consecutive element-wise blocks in the batch engine (issue 9): a chain runs as one
pass only where emulator.calculus.check_plan admits it, never where it rejects it, and a
fused run ends every machine exactly where the reference ends it alone -- equal digests,
committed-block counts and StreamErrors -- faults inside a chain included."""
import contextlib

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator import Machine, MachineConfig, fusion
from emulator.calculus.witnesses import Verdict
from isa import BDatr, BDim, BIor, Block, BStart, TileBinding, encoding
from isa import instructions as I
from isa.datatypes import datatype
from isa.errors import EncodeError
from isa.instructions import INSTRUCTIONS
from isa.legality import resolve

from test_batch_differential import PARTIAL, TYPED, assert_batch_matches_reference, blocks, device_stand_in, machine

POINTWISE = [r for r in INSTRUCTIONS if r.schema in (I.BINARY, I.UNARY, I.TERNARY, I.COMPARE)]
ROW = {r.mnemonic: r for r in INSTRUCTIONS}


def block(mnemonic, dtype, tiles, mask=15, dim=BDim(4, 2), cap=None, datr=None, ior=None):
    r = ROW[mnemonic]
    iot = tuple(TileBinding(t, mask, cap if i == len(tiles) - 1 else None) for i, t in enumerate(tiles))
    return Block(BStart(r.mode, r.function, dtype, r.engine), iot, dim, datr, ior, None)


@st.composite
def chain(draw):
    """2..6 element-wise blocks over one PE mask and valid rectangle, reading the typed tiles
    and each other's results (tiles 11-14), so dependences run inside the chain; now and then
    a result is read as another DataType (a descriptor fault inside the chain)."""
    mask = draw(st.sampled_from([15, 15, 15, 3, 6, 1]))
    partial = draw(st.integers(0, 3)) == 0
    typed = PARTIAL if partial else TYPED
    dim, cap = (BDim(3, 1, 4), 32) if partial else (BDim(4, 2), None)
    out = []
    for _ in range(draw(st.integers(2, 6))):
        row = draw(st.sampled_from(POINTWISE))
        codes = [c for c in typed if c in {datatype(n).code for n in row.dtypes}]
        if not codes:
            continue
        dtype = draw(st.sampled_from(codes))
        srcs = [draw(st.sampled_from([typed[dtype]] * 3 + [11, 12, 13, 14])) for _ in row.sources]
        dest = draw(st.integers(11, 14))
        datr = BDatr(**{n: draw(st.none() | st.integers(0, {"CMode": 5}.get(n, 3))) for n in row.datr
                        if n in ("PadValueOrByteId", "CMode")}) if row.datr else None
        out.append(block(row.mnemonic, dtype, srcs + [dest], mask, dim, cap, datr))
    return out


streams = st.lists(chain() | chain() | blocks().map(lambda b: [b]), min_size=1, max_size=4).map(
    lambda parts: [b for p in parts for b in p])


def assert_fused_matches_reference(machines, stream, backend="cpu"):
    """The fused run's counts, errors and digests are each machine's alone on the reference."""
    return assert_batch_matches_reference(machines, stream, backend, fuse=True)[1]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=5), streams, st.booleans(),
       st.none() | st.integers(0, 400))
def test_a_fused_run_ends_where_each_machine_ends_alone_on_the_reference(seeds, stream, as_bytes, cut):
    machines = [machine(s) for s in seeds]
    if as_bytes:
        try:
            stream = encoding.encode(stream)
        except EncodeError:
            pass
        else:
            if cut is not None:   # a damaged word: a decode fault, maybe inside a chain
                data = bytearray(stream)
                data[(cut * 7) % len(data)] ^= 0xA5
                stream = bytes(data)
    assert_fused_matches_reference(machines, stream)


def clean(seed: int) -> Machine:
    """Every tile fully defined, no zero divisors: machine(seed) with holes and zeros removed."""
    rng = np.random.default_rng(seed)
    m = Machine(MachineConfig(local_bytes=4096, matrix_bytes=2048))
    for p in range(4):
        m.write_tile(p, 1, "FP32", rng.integers(0, 2**32, (2, 4), dtype=np.uint64))
        m.write_tile(p, 2, "S32", rng.integers(1, 2**31, (2, 4), dtype=np.uint64))
    return m


CHAIN = [block("TADD", 1, (1, 1, 11)), block("TMUL", 1, (11, 1, 12)), block("TSUB", 1, (12, 11, 11)),
         block("TDIV", 16, (2, 2, 13)), block("TADD", 16, (13, 2, 14)), block("TMUL", 1, (11, 12, 1))]


def test_an_admitted_chain_runs_as_one_pass_and_commits_what_the_blocks_commit():
    result = assert_fused_matches_reference([clean(s) for s in range(4)], CHAIN)
    assert result.fused == [(0, 6)]
    assert result.ok


def test_a_fault_inside_a_fused_chain_commits_exactly_what_the_unfused_run_commits():
    machines = [clean(s) for s in range(6)]
    machines[2].write_tile(3, 2, "S32", np.array([[5, 0, 7, 9], [1, 2, 3, 4]], np.uint64))   # zero divisor, block 3
    bits = machines[4].read_tile(1, 1).bits
    machines[4].write_tile(1, 1, "FP32", bits, defined=np.array([[1, 1, 1, 1], [1, 1, 0, 1]], bool))  # block 0
    result = assert_fused_matches_reference(machines, CHAIN)
    assert result.fused == [(0, 6)]              # the members without a fault still ran fused
    assert [result.executed[k] for k in (2, 4)] == [3, 0]
    assert (result.errors[2].reason, result.errors[4].reason) == ("INT_DIVIDE_BY_ZERO", "SOURCE_UNDEFINED")


def test_textract_and_tinsert_with_offsets_never_fuse_and_check_plan_says_why():
    m = clean(0)
    for p in range(4):
        m.set_gpr(p, 1, 1)
    textract = block("TEXTRACT", 1, (11, 12), dim=BDim(1, 2), ior=BIor(1, 0, 0, 0))
    # the calculus's own verdict on fusing an offset read: a dependence crosses element points
    v = fusion.verdict([block("TADD", 1, (1, 1, 11)), textract], m)
    assert not v and v.obligation == "Dep ⊆ diagonal"
    stream = [block("TADD", 1, (1, 1, 11)), block("TMUL", 1, (11, 1, 11)), textract,
              block("TADD", 1, (1, 1, 13)), block("TMUL", 1, (13, 1, 14))]
    assert fusion.chains([resolve(b) for b in stream]) == [(0, 2), (3, 5)]
    result = assert_fused_matches_reference([m, clean(1)], stream)
    assert all(not (a <= 2 < z) for a, z in result.fused)


def test_the_planner_asks_check_plan_once_per_chain_and_shape_and_obeys_a_rejection(monkeypatch):
    calls = []
    real = fusion.check_plan

    def spy(program, plan, **kw):
        calls.append(plan)
        return real(program, plan, **kw)
    monkeypatch.setattr(fusion, "check_plan", spy)
    fusion._admitted.cache_clear()               # no verdict cached yet
    machines = [clean(s) for s in range(3)]
    assert_fused_matches_reference(machines, CHAIN)
    assert len(calls) == 1 and [s.kind for s in calls[0].steps] == ["fused"]
    assert_fused_matches_reference(machines, CHAIN)
    assert len(calls) == 1                       # the verdict is cached per (chain, shape)

    monkeypatch.setattr(fusion, "check_plan", lambda *a, **kw: Verdict("Plan", False, "Dep ⊆ diagonal", "spy"))
    fusion._admitted.cache_clear()               # no verdict cached yet
    result = assert_fused_matches_reference(machines, CHAIN)
    assert result.fused == []                    # rejected: block by block


def test_chains_are_cut_at_the_bound_and_split_where_masks_or_rectangles_differ():
    add = lambda mask=15, dim=BDim(4, 2): resolve(block("TADD", 1, (1, 1, 11), mask, dim))  # noqa: E731
    rbs = [add()] * (fusion.MAX_CHAIN + 3) + [add(3), add(3), add(3, BDim(4, 1)), None, add(), add()]
    n = fusion.MAX_CHAIN
    assert fusion.chains(rbs) == [(0, n), (n, n + 3), (n + 3, n + 5), (n + 7, n + 9)]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=4), streams)
def test_a_fused_run_on_a_device_array_module_matches_the_reference(seeds, stream):
    with device_stand_in():
        assert_fused_matches_reference([machine(s) for s in seeds], stream, backend="gpu")


def test_tile_emu_run_fuse_writes_the_states_the_unfused_run_writes(tmp_path, capsys):
    from emulator.batchio import save_machines
    from emulator.cli import main
    from emulator.machine import load_machines
    machines = [clean(s) for s in range(3)]
    machines[1].write_tile(0, 2, "S32", np.zeros((2, 4), np.uint64))       # TDIV faults at block 3
    save_machines(machines, tmp_path / "init.arrow")
    (tmp_path / "prog.tbs").write_bytes(encoding.encode(CHAIN))
    runs = {}
    # relative names: a message cuts a long path (pytest-xdist's base folders are longer)
    with contextlib.chdir(tmp_path):
        for flags in ([], ["--fuse"]):
            out = f"out{len(flags)}.arrow"
            rc = main(["run", "prog.tbs", "--init", "init.arrow", "--out", out] + flags)
            err = capsys.readouterr().err.replace(out, "OUT")
            runs[len(flags)] = (rc, err, [m.digest() for m in load_machines(out)])
    assert runs[0] == runs[1] and runs[1][0] == 1 and "machine 1: block 3" in runs[1][1]
    assert main(["run", str(tmp_path / "prog.tbs"), "--fuse", "--backend", "reference"]) == 2
    assert "--fuse needs a batch backend" in capsys.readouterr().err


def test_a_chain_stays_within_the_points_one_check_may_cover():
    big = resolve(block("TADD", 1, (1, 1, 11), dim=BDim(128, 64)))        # 4 PEs x 64 x 128 points
    per_block = 4 * 64 * 128
    n = fusion.CHECK_POINTS // per_block
    got = fusion.chains([big] * 5)
    assert all(z - a <= n for a, z in got) and (n >= 2) == bool(got)


def test_a_fused_chain_pads_outside_the_valid_rectangle_as_each_block_does():
    datr = BDatr(PadValueOrByteId=2)                           # PadValue 2 outside the valid rectangle
    part = dict(dim=BDim(3, 1, 4), cap=32, datr=datr)          # 1x3 valid in 2x4 tiles (tile 9)
    stream = [block("TADD", 1, (9, 9, 11), **part), block("TMUL", 1, (11, 9, 12), **part),
              block("TSUB", 1, (12, 11, 11), **{**part, "datr": None})]
    result = assert_fused_matches_reference([machine(s) for s in range(4)], stream)
    assert result.fused == [(0, 3)] and result.ok


def test_a_tcmp_ends_a_fused_chain_with_its_predicate():
    cmp_ = block("TCMP", 1, (11, 1, 13), datr=BDatr(CMode=2))
    stream = CHAIN[:3] + [cmp_]
    result = assert_fused_matches_reference([clean(s) for s in range(3)], stream)
    assert result.fused == [(0, 4)] and result.ok
