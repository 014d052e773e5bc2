"""MachineBatch, multi-machine state files and the CLI on them: focused cases of the batch
rules in docs/machine.md ("Batches") and docs/state-format.md ("Many machines")."""
import json

import numpy as np
import pyarrow as pa
import pytest
from emu_helpers import BIor, blk
from test_batch_differential import assert_batch_matches_reference, device_stand_in

from emulator import Machine, MachineBatch, MachineConfig
from emulator.backends import BackendError
from emulator.batchio import machine_count, save_machines
from emulator.machine import load_machines
from emulator.cli import main
from emulator.stateio import META_KEY, StateFileError
from isa import encoding

CONFIG = MachineConfig(local_bytes=1 << 14)


def s32_machine(divisor, gprs=(0, 0)) -> Machine:
    m = Machine(CONFIG)
    for p in range(4):
        m.write_tile(p, 1, "S32", np.arange(8).reshape(2, 4) + 10 * p)
        m.write_tile(p, 2, "S32", np.full((2, 4), divisor))
        m.set_gpr(p, 1, gprs[0])             # r0 is the hard-wired zero: offsets live in r1, r2
        m.set_gpr(p, 2, gprs[1])
    return m


STREAM = [blk("TADD", "S32", [1, 2], 3, mask=15, vr=2),
          blk("TDIV", "S32", [1, 2], 4, mask=15, vr=2),
          blk("TMUL", "S32", [3, 4], 5, mask=0b0011, vr=2)]


def run_alone(m, stream):
    alone = m.copy()
    return alone, alone.run(stream)


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_one_machine_faulting_mid_stream_stops_alone_and_keeps_its_last_commit(backend):
    machines = [s32_machine(d) for d in (3, 1, 0, 7)]          # machine 2 divides by zero at block 1
    batch = MachineBatch(machines, backend)
    result = batch.run(STREAM)
    assert result.executed == [3, 3, 1, 3]
    assert result.faulted == [2]
    err = result.errors[2]
    assert (err.index, err.reason) == (1, "INT_DIVIDE_BY_ZERO")
    after_block0, _ = run_alone(machines[2], STREAM[:1])
    assert batch.machine(2).digest() == after_block0.digest()
    for k in (0, 1, 3):
        alone, _ = run_alone(machines[k], STREAM)
        assert batch.machine(k).digest() == alone.digest()


def test_the_faulting_machine_gets_the_reference_error_exactly():
    machines = [s32_machine(1), s32_machine(0)]
    batch = MachineBatch(machines, "cpu")
    data = encoding.encode(STREAM)
    got = batch.run(data).errors[1]
    _, ref = run_alone(machines[1], data)
    assert (got.index, got.offset, got.where, str(got.cause)) == \
        (ref.error.index, ref.error.offset, ref.error.where, str(ref.error.cause))


def test_many_machines_a_few_faulting_are_isolated():
    machines = [s32_machine(0 if k in (5, 6, 40) else 1 + k % 3) for k in range(64)]
    batch = MachineBatch(machines, "cpu")
    result = batch.run(STREAM)
    assert result.faulted == [5, 6, 40]
    for k in (0, 5, 39, 40, 63):
        alone, ref = run_alone(machines[k], STREAM)
        assert batch.machine(k).digest() == alone.digest()
        assert result.executed[k] == ref.executed


def test_offset_windows_are_checked_per_machine():
    # TEXTRACT of a 1x2 window at (row r1, column r2): machine 1's column offset 3 leaves the source
    machines = [s32_machine(1, (1, 2)), s32_machine(1, (0, 3)), s32_machine(1, (1, 0))]
    stream = [blk("TEXTRACT", "S32", [1], 6, mask=15, vc=2, vr=1, ior=BIor(1, 2)),
              blk("TADD", "S32", [1, 2], 7, mask=15, vr=2)]
    batch = MachineBatch(machines, "cpu")
    result = batch.run(stream)
    assert result.faulted == [1]
    assert result.errors[1].reason == "OFFSET_RANGE"
    for k, m in enumerate(machines):
        alone, ref = run_alone(m, stream)
        assert batch.machine(k).digest() == alone.digest()
        assert str(result.errors[k]) == str(ref.error)


def test_a_stateless_rejection_stops_every_machine_at_that_block():
    bad = blk("TADD", "S32", [1, 2], 3, mask=15, vr=2, dim=None)   # no B.DIM
    batch = MachineBatch([s32_machine(1), s32_machine(2)], "cpu")
    result = batch.run([STREAM[0], bad, STREAM[1]])
    assert result.executed == [1, 1]
    assert {e.index for e in result.errors} == {1}


def test_machines_of_different_shapes_run_in_one_batch():
    odd = s32_machine(1)
    odd.delete_tile(3, 2)                                # PE3 lacks the divisor: SOURCE_MISSING
    machines = [s32_machine(2), odd, s32_machine(5)]
    batch = MachineBatch(machines, "cpu")
    result = batch.run(STREAM)
    assert result.faulted == [1] and result.errors[1].reason == "SOURCE_MISSING"
    for k, m in enumerate(machines):
        alone, _ = run_alone(m, STREAM)
        assert batch.machine(k).digest() == alone.digest()


def test_machine_k_is_a_copy():
    batch = MachineBatch([s32_machine(1)], "cpu")
    m = batch.machine(0)
    m.set_gpr(0, 5, 99)
    assert batch.machine(0).gpr(0, 5) == 0
    with pytest.raises(IndexError):
        batch.machine(1)


def test_bad_backends_and_mixed_configurations_are_one_line_errors():
    with pytest.raises(BackendError, match="unknown backend 'tpu'"):
        MachineBatch([Machine()], "tpu")
    try:
        MachineBatch([Machine()], "gpu")
    except BackendError as exc:
        assert "no usable GPU" in str(exc) and "\n" not in str(exc)
    with pytest.raises(ValueError, match="machine 1: configuration"):
        MachineBatch([Machine(), Machine(CONFIG)], "cpu")
    assert MachineBatch([Machine()], "auto").backend in ("cpu", "gpu")


# ---------------------------------------------------------------- files

def test_multi_machine_files_round_trip_byte_for_byte(tmp_path):
    machines = [s32_machine(d, (d, 2 * d)) for d in (1, 2, 3)]
    machines[1].delete_tile(2, 1)
    save_machines(machines, tmp_path / "a.arrow")
    back = load_machines(tmp_path / "a.arrow")
    assert [m.digest() for m in back] == [m.digest() for m in machines]
    assert machine_count(tmp_path / "a.arrow") == 3
    batch = MachineBatch.load(tmp_path / "a.arrow")
    batch.save(tmp_path / "b.arrow")
    assert (tmp_path / "a.arrow").read_bytes() == (tmp_path / "b.arrow").read_bytes()


def test_single_machine_files_are_a_batch_of_one(tmp_path):
    m = s32_machine(1)
    m.save(tmp_path / "one.arrow")
    batch = MachineBatch.load(tmp_path / "one.arrow")
    assert len(batch) == 1 and batch.machine(0).digest() == m.digest()
    batch.save(tmp_path / "again.arrow")
    assert (tmp_path / "again.arrow").read_bytes() == (tmp_path / "one.arrow").read_bytes()


def test_machine_load_of_a_multi_machine_file_says_to_load_a_batch(tmp_path):
    save_machines([Machine(), Machine()], tmp_path / "two.arrow")
    with pytest.raises(StateFileError, match="holds 2 machines; load it with MachineBatch.load"):
        Machine.load(tmp_path / "two.arrow")


def _rewrite(src, dst, meta_edit=None, table_edit=None):
    t = pa.ipc.open_file(pa.memory_map(str(src))).read_all()
    meta = json.loads(t.schema.metadata[META_KEY])
    if meta_edit:
        meta_edit(meta)
    if table_edit:
        t = table_edit(t)
    t = t.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
    with pa.OSFile(str(dst), "wb") as sink, pa.ipc.new_file(sink, t.schema) as w:
        w.write_table(t)


def _set_column(name, values, type_=None):
    def edit(t):
        i = t.column_names.index(name)
        type_of = type_ or t.schema.field(name).type
        return t.set_column(i, pa.field(name, type_of), pa.array(values, type_of))
    return edit


@pytest.mark.parametrize("meta_edit, table_edit, words", [
    (lambda m: m.update(machines=5), None, "'machines' must list"),
    (lambda m: m["machines"][1].update(pes=[]), None, "machine 1: metadata 'pes' must list 4 PEs"),
    (lambda m: m["machines"][0]["pes"][2].update(status=99), None, "machine 0: metadata pes[2].status"),
    (lambda m: m.update(pes=[]), None, "both 'pes'"),
    (None, lambda t: t.drop_columns(["machine"]), "column 'machine' is missing"),
    (None, _set_column("machine", [0, 0, 7, 1]), "row 2 column 'machine': machine 7 is not among the 2"),
    (None, _set_column("machine", [0, 0, 1, 1], pa.int64()), "column 'machine' has type int64"),
    (None, _set_column("datatype", ["FP32", "S32", "S32", "bogus"]), "machine 1: row 1 column 'datatype'"),
])
def test_hostile_multi_machine_files_fail_in_one_line_naming_the_machine(tmp_path, meta_edit, table_edit, words):
    a, b = Machine(CONFIG), Machine(CONFIG)
    a.write_tile(0, 1, "FP32", np.zeros((1, 4), np.uint32))
    a.write_tile(1, 1, "S32", np.zeros((1, 4), np.uint32))
    b.write_tile(0, 1, "S32", np.zeros((1, 4), np.uint32))
    b.write_tile(1, 2, "S32", np.zeros((1, 4), np.uint32))
    save_machines([a, b], tmp_path / "ok.arrow")
    _rewrite(tmp_path / "ok.arrow", tmp_path / "bad.arrow", meta_edit, table_edit)
    with pytest.raises(StateFileError) as info:
        load_machines(tmp_path / "bad.arrow")
    assert words in str(info.value) and "\n" not in str(info.value)


# ---------------------------------------------------------------- CLI

@pytest.fixture
def batch_files(tmp_path):
    save_machines([s32_machine(d) for d in (3, 0, 5)], tmp_path / "init.arrow")
    (tmp_path / "prog.tbs").write_bytes(encoding.encode(STREAM))
    return tmp_path


@pytest.mark.parametrize("backend", ["reference", "cpu", "auto"])
def test_run_names_the_faulting_machine_exits_1_and_writes_every_state(batch_files, capsys, backend):
    d = batch_files
    rc = main(["run", str(d / "prog.tbs"), "--init", str(d / "init.arrow"), "--out", str(d / "out.arrow"),
               "--backend", backend])
    err = capsys.readouterr().err
    assert rc == 1
    assert "machine 1: block 1 (byte offset" in err and "INT_DIVIDE_BY_ZERO" in err
    assert "machine 0:" not in err and "machine 2:" not in err
    if backend == "auto":
        assert "backend" in err.splitlines()[0]
    out = load_machines(d / "out.arrow")
    machines = load_machines(d / "init.arrow")
    for k in range(3):
        alone, _ = run_alone(machines[k], STREAM)
        assert out[k].digest() == alone.digest()


def test_show_and_diff_name_the_machine(batch_files, capsys):
    d = batch_files
    main(["run", str(d / "prog.tbs"), "--init", str(d / "init.arrow"), "--out", str(d / "out.arrow"), "-q"])
    capsys.readouterr()
    assert main(["show", str(d / "out.arrow"), "--machine", "2", "--tile", "5"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("machine 2:") and "machine 0:" not in text and "tile 5" in text
    assert main(["show", str(d / "out.arrow"), "--machine", "3"]) == 2
    assert "no machine 3" in capsys.readouterr().err
    assert main(["diff", str(d / "init.arrow"), str(d / "out.arrow")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line.startswith("machine ") for line in lines)
    assert any(line.startswith("machine 1: PE0 tile 3: only in B") for line in lines)


def test_run_with_a_gpu_backend_and_no_gpu_is_one_line_and_writes_nothing(batch_files, capsys, monkeypatch):
    d = batch_files
    import emulator.backends as backends       # a machine without a usable GPU, here or on a GPU box
    monkeypatch.setattr(backends, "gpu_status", lambda: (False, "CuPy is not installed"))
    rc = main(["run", str(d / "prog.tbs"), "--init", str(d / "init.arrow"), "--out", str(d / "out.arrow"),
               "--backend", "gpu"])
    err = capsys.readouterr().err
    assert rc == 3 and "no usable GPU" in err and len(err.strip().splitlines()) == 1
    assert not (d / "out.arrow").exists()


# ---------------------------------------------------------------- the gpu engine's logic, on NumPy

def test_the_device_path_of_the_engine_matches_the_reference():
    import emulator.backends as backends
    asked = []
    machines = [s32_machine(d, (1, d)) for d in (3, 0, 5, 1)]
    stream = STREAM + [blk("TEXTRACT", "S32", [1], 6, mask=15, vc=2, vr=1, ior=BIor(1, 2))]
    with device_stand_in(), pytest.MonkeyPatch.context() as mp:
        mp.setattr(backends, "check_device_memory", lambda need: asked.append(need))
        batch = MachineBatch(machines, "gpu")
        result = batch.run(stream)
    assert batch.backend == "gpu" and asked and asked[0] > 0
    for k, m in enumerate(machines):
        alone, ref = run_alone(m, stream)
        assert batch.machine(k).digest() == alone.digest()
        assert str(result.errors[k]) == str(ref.error)


def test_a_batch_too_big_for_the_device_says_how_much_it_needs_and_has(monkeypatch):
    import sys
    import types
    from emulator.backends import check_device_memory
    monkeypatch.setitem(sys.modules, "kernels.device", types.SimpleNamespace(free_device_bytes=lambda: 1000))
    with pytest.raises(BackendError, match="needs 4096 bytes of device memory; 1000 bytes are free"):
        check_device_memory(4096)


@pytest.mark.parametrize("pad", [None, 0, 1, 2, 3])
@pytest.mark.parametrize("mnemonic", ["TCMP", "TADD"])
def test_padding_outside_a_partial_valid_rectangle_matches_the_reference(pad, mnemonic):
    machines = []
    for k in range(3):
        m = Machine(CONFIG)
        for p in range(4):
            m.write_tile(p, 1, "S32", (np.arange(8).reshape(2, 4) * (k + 1)) % 5, valid_row=1, valid_col=3)
            m.write_tile(p, 2, "S32", np.full((2, 4), 2), valid_row=1, valid_col=3)
        machines.append(m)
    extra = {"CMode": 2} if mnemonic == "TCMP" else {}
    stream = [blk(mnemonic, "S32", [1, 2], 3, mask=15, vc=3, vr=1, col=4, cap=32, PadValueOrByteId=pad, **extra)]
    batch = MachineBatch(machines, "cpu")
    result = batch.run(stream)
    assert result.ok
    for k, m in enumerate(machines):
        alone, ref = run_alone(m, stream)
        assert ref.ok and batch.machine(k).digest() == alone.digest()


@pytest.mark.parametrize("dst, sat, layout, cube", [
    ("E4M3", 1, 0, False), ("E4M3", 0, 0, False), ("FP16", 1, 3, False), ("BF16", 0, 5, False),
    ("E4M3", 1, 0, True), ("S8", 1, 0, False),
])
def test_conversions_with_sat_layouts_and_cube_sources_match_the_reference(dst, sat, layout, cube):
    from isa.datatypes import datatype
    rng = np.random.default_rng(7)
    machines = []
    for k in range(4):
        m = Machine(MachineConfig(local_bytes=1 << 16))
        for p in range(4):
            values = (rng.standard_normal((16, 16)) * 10.0 ** rng.integers(-3, 6)).astype(np.float32)
            m.write_tile(p, 1, "FP32", values.view(np.uint32), representation="cube" if cube else "standard")
        machines.append(m)
    stream = [blk("TCVT", "FP32", [1], 2, mask=15, vc=16, vr=16, DataType=datatype(dst).code, Sat=sat,
                  Layout=layout, Canonicalize=int(cube))]
    batch = MachineBatch(machines, "cpu")
    result = batch.run(stream)
    for k, m in enumerate(machines):
        alone, ref = run_alone(m, stream)
        assert str(result.errors[k]) == str(ref.error)
        assert batch.machine(k).digest() == alone.digest()
    assert result.executed == [1, 1, 1, 1]


def test_status_flags_on_the_device_path_match_the_reference():
    rng = np.random.default_rng(3)
    machines = []
    for k in range(3):
        m = Machine(CONFIG)
        for p in range(4):
            m.write_tile(p, 1, "FP32", (rng.standard_normal((2, 4)) * 1e30).astype(np.float32).view(np.uint32))
        machines.append(m)
    stream = [blk("TMUL", "FP32", [1, 1], 2, mask=15, vr=2),          # inexact, overflowing
              blk("TCVT", "FP32", [1], 3, mask=0b0101, vr=2, DataType=4, Sat=1)]   # to FP16
    with device_stand_in():
        batch = MachineBatch(machines, "gpu")
        assert batch.run(stream).ok
    for k, m in enumerate(machines):
        alone, _ = run_alone(m, stream)
        assert any(alone.status(p) for p in range(4))
        assert batch.machine(k).digest() == alone.digest()


def five_machines(fill) -> list[Machine]:
    """Five machines with 64 KiB Local stores; fill(m, k, p) writes PE p of machine k."""
    machines = [Machine(MachineConfig(local_bytes=1 << 16)) for _ in range(5)]
    for k, m in enumerate(machines):
        for p in range(4):
            fill(m, k, p)
    return machines


@pytest.mark.parametrize("src_layout, dst_layout", [(0, 0), (3, 0), (5, 6), (0, 9)])
def test_extraction_through_layouts_at_per_machine_offsets_matches_the_reference(src_layout, dst_layout):
    rng = np.random.default_rng(11)

    def fill(m, k, p):
        m.write_tile(p, 1, "U8", rng.integers(0, 256, (32, 32)), layout=src_layout,
                     defined=rng.random((32, 32)) > 0.0003)
        m.set_gpr(p, 1, int(rng.integers(0, 17)))
        m.set_gpr(p, 2, 17 if (k, p) == (4, 2) else int(rng.integers(0, 17)))   # machine 4 reaches past
    stream = [blk("TEXTRACT", "U8", [1], 2, mask=15, vc=16, vr=16, ior=BIor(1, 2), Layout=dst_layout)]
    _, result = assert_batch_matches_reference(five_machines(fill), stream)
    assert result.executed.count(1) >= 2 and result.errors[4].reason == "OFFSET_RANGE"


@pytest.mark.parametrize("old_layout, ins_layout, dst_layout", [(0, 0, 0), (3, 5, 0), (0, 3, 6)])
def test_insertion_through_layouts_at_per_machine_offsets_matches_the_reference(old_layout, ins_layout, dst_layout):
    rng = np.random.default_rng(5)

    def fill(m, k, p):
        m.write_tile(p, 1, "U8", rng.integers(0, 256, (32, 32)), layout=old_layout,
                     defined=rng.random((32, 32)) > 0.05)
        size = (8, 8) if p % 2 else (8, 4)                  # insertion rectangles differ by PE
        m.write_tile(p, 2, "U8", rng.integers(0, 256, (16, 16)), layout=ins_layout,
                     valid_row=size[0], valid_col=size[1], defined=rng.random((16, 16)) > 0.003 * k)
        m.set_gpr(p, 1, int(rng.integers(0, 25)))
        m.set_gpr(p, 2, 25 if (k, p) == (4, 1) else int(rng.integers(0, 25)))   # machine 4 reaches past
    stream = [blk("TINSERT", "U8", [1, 2], 1, mask=15, vc=32, vr=32, ior=BIor(1, 2), Layout=dst_layout)]
    _, result = assert_batch_matches_reference(five_machines(fill), stream)
    reasons = [e and e.reason for e in result.errors]
    assert reasons.count(None) >= 2 and "SOURCE_UNDEFINED" in reasons and reasons[4] == "OFFSET_RANGE"
