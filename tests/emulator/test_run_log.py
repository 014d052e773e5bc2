"""`tile-emu run --log` and the lockstep API (issue 17 A and B, docs/commit-log.md): a run hands
each block's commit records and a fault to its log, in (machine, block, PE) order, the same on
every backend; Machine.step / MachineBatch.step return one block's records; the log's payloads
are the final state's; the log is written atomically and its path checked before anything runs."""
from __future__ import annotations

import os
import pathlib

import numpy as np
import pyarrow as pa
import pytest

import isa
from emulator import Machine, MachineBatch
from emulator import commitlog as CL
from emulator.batchio import save_machines
from emulator.cli import main
from emulator.cosim import compare
from emulator.machine import StreamError

from emu_helpers import blk, everywhere

ROOT = pathlib.Path(__file__).resolve().parents[2]
EX = ROOT / "examples"


def example(name):
    return isa.assemble_blocks((EX / f"{name}.s").read_text()), Machine.load(EX / f"{name}.init.arrow")


def logged(m, stream, **kw):
    log = CL.Collector()
    result = m.run(stream, log=log, **kw)
    return result, log.table()


def four_machines():
    """absdiff's machine, another with other data, one without t2 on PE1 (SOURCE_MISSING at
    block 0: a cohort of its own), one whose t1 on PE0 has an undefined element (an element
    rule fails on it alone: the reference path)."""
    blocks, m = example("absdiff")
    other = m.copy()
    v = other.read_tile(0, 1)
    other.write_tile(0, 1, "S32", v.bits.astype(np.uint64) * 3 % (1 << 32), valid_col=v.ValidCol, capacity=v.capacity)
    missing = m.copy()
    missing.delete_tile(1, 2)
    undefined = m.copy()
    holes = np.ones(v.bits.shape, bool)
    holes[1, 2] = False
    undefined.write_tile(0, 1, "S32", v.bits, valid_col=v.ValidCol, capacity=v.capacity, defined=holes)
    return blocks, [m, other, missing, undefined]


# ---------------------------------------------------------------- step and run

@pytest.mark.parametrize("name", ["saxpy", "absdiff", "window"])
def test_the_log_of_a_run_is_the_concatenation_of_its_step_records(name):
    blocks, m = example(name)
    data = isa.encode(blocks)
    result, table = logged(m.copy(), data)
    assert result.ok
    stepped = m.copy()
    records = CL.Records()
    for offset, b in isa.iter_blocks(data):
        records = records + stepped.step(b, offset=offset)
    assert records.to_pylist() == table.to_pylist()
    again = m.copy()
    again.run(data)
    assert stepped.digest() == again.digest()


def test_step_takes_a_block_or_the_bytes_of_a_one_block_stream():
    blocks, m = example("absdiff")
    a, b = m.copy(), m.copy()
    from_block = a.step(blocks[0], offset=16)
    from_bytes = b.step(isa.encode(blocks[:1]))          # its BSTART is at byte offset 16
    assert from_bytes.to_pylist() == from_block.to_pylist()
    assert {r["block"] for r in a.step(blocks[1]).to_pylist()} == {1}     # the next block's index
    with pytest.raises(ValueError, match="step executes one block; the stream holds 2"):
        m.copy().step(isa.encode(blocks[:2]))


def test_the_records_name_each_block_and_pe_as_the_machines_public_state_holds_them():
    """Records from the commit's own arrays equal commitlog.block_records, which reads the
    destination back through read_tile after the block -- also for a TCMP whose PEs form
    groups out of PE order (PEs 0 and 2 have 4-row sources, PE1 an 8-row one)."""
    m = Machine()
    for p, cap in ((0, 64), (1, 128), (2, 64)):
        for t in (1, 2):
            m.write_tile(p, t, "FP32", np.arange(4, dtype=np.uint32) * (t + p), capacity=cap)
    b = blk("TCMP", "FP32", [1, 2], 3, mask=0b0111, vr=1, CMode=2)
    before = m.copy()
    got = m.step(b, offset=40)
    want = CL.block_records(m, b, index=0, offset=40)
    assert [r["pe"] for r in got.to_pylist()] == [0, 1, 2]
    assert got.to_pylist() == want.to_pylist()
    assert {r["row"] for r in got.to_pylist()} == {4, 8}       # two destination descriptors
    assert compare(_collected(before, [b]).table(), got) is None


def _collected(m, stream):
    log = CL.Collector()
    m.run(stream, log=log)
    return log


def test_a_rejected_step_raises_what_run_reports_and_leaves_the_state_byte_identical():
    m = Machine()
    everywhere(m, 1, "FP32", np.zeros(4, np.uint32))
    good, bad = blk("TADD", "FP32", [1, 1], 2), blk("TADD", "FP32", [1, 7], 3)
    m.step(good)
    digest = m.digest()
    with pytest.raises(StreamError) as caught:
        m.step(bad, offset=56)
    err = caught.value
    assert m.digest() == digest
    assert (err.index, err.offset, err.reason) == (1, 56, "SOURCE_MISSING")
    fault = CL.fault_records(err, block=bad).to_pylist()
    run_log = _collected(_fresh_with(1), [good, bad]).table().to_pylist()
    assert fault == [dict(run_log[-1], offset=56)]
    assert m.step(good).to_pylist()[0]["block"] == 1     # a rejection does not take an index


def _fresh_with(tile):
    m = Machine()
    everywhere(m, tile, "FP32", np.zeros(4, np.uint32))
    return m


def test_step_on_the_cpu_backend_gives_the_references_records():
    blocks, m = example("window")
    ref, cpu = m.copy(), m.copy("cpu")
    for b in blocks:
        assert cpu.step(b).to_pylist() == ref.step(b).to_pylist()
    assert cpu.digest() == ref.digest()


# ---------------------------------------------------------------- backends and batches

def _batch_table(machines, stream, backend, fuse=False):
    batch = MachineBatch(machines, backend)
    log = CL.Collector()
    result = batch.run(stream, fuse=fuse, log=log)
    return result, log.table(), batch


def test_a_batch_logs_what_each_member_logs_alone_on_every_backend():
    blocks, machines = four_machines()
    data = isa.encode(blocks)
    alone = []
    for k, m in enumerate(machines):
        _, t = logged(m.copy(), data)
        alone += [dict(r, machine=k) for r in t.to_pylist()]
    for backend in ("cpu", "reference"):
        result, table, _ = _batch_table(machines, data, backend)
        assert result.faulted == [2, 3]
        assert table.to_pylist() == alone, backend
    keys = [(r["machine"], r["block"], r["pe"]) for r in alone]
    assert keys == sorted(keys)


def test_the_same_log_file_bytes_on_cpu_reference_and_fused_runs(tmp_path):
    import emulator.commands.bench as bench
    from emulator import MachineConfig
    rng = np.random.default_rng(5)
    machines = [bench._log_machine(rng, MachineConfig()) for _ in range(3)]
    data = bench._log_stream(6)
    files = []
    for backend, fuse in (("reference", False), ("cpu", False), ("cpu", True)):
        path = tmp_path / f"{backend}-{fuse}.arrow"
        batch = MachineBatch(machines, backend)
        with CL.open_log(path, len(batch)) as log:
            result = batch.run(data, fuse=fuse, log=log)
        assert result.ok and bool(result.fused) == fuse
        files.append(path.read_bytes())
    assert files[0] == files[1] == files[2]
    one = tmp_path / "one.arrow"
    with CL.open_log(one) as log:
        Machine.run(machines[1].copy(), data, log=log)
    member = [r for r in CL.read_log(tmp_path / "cpu-True.arrow").to_pylist() if r["machine"] == 1]
    assert member == [dict(r, machine=1) for r in CL.read_log(one).to_pylist()]


def test_a_batch_log_whose_machines_straddle_its_record_batches_holds_each_members_records(tmp_path):
    # 3 blocks x 4 PEs = 12 records a machine: 4,096-record batches end inside a machine
    import emulator.commands.bench as bench
    from emulator import MachineConfig
    rng = np.random.default_rng(9)
    machines = [bench._log_machine(rng, MachineConfig()) for _ in range(400)]
    data = bench._log_stream(3)
    path = tmp_path / "batch.arrow"
    with CL.open_log(path, len(machines)) as log:
        assert MachineBatch(machines, "cpu").run(data, log=log).ok
    alone = []
    for k, m in enumerate(machines):
        _, t = logged(m.copy(), data)
        alone += [dict(r, machine=k) for r in t.to_pylist()]
    assert len(alone) == 4800 and CL.read_log(path).to_pylist() == alone


def test_a_fault_record_names_block_machine_reason_field_and_message_and_ends_the_machine():
    blocks, machines = four_machines()
    result, table, _ = _batch_table(machines, isa.encode(blocks), "cpu")
    for k, reason, field in ((2, "SOURCE_MISSING", "B.IOT[1]"), (3, "SOURCE_UNDEFINED", "B.IOT[0]")):
        rows = [r for r in table.to_pylist() if r["machine"] == k]
        err = result.errors[k]
        assert len(rows) == 1 and rows[0]["record"] == "fault"
        r = rows[0]
        assert (r["block"], r["offset"], r["mnemonic"], r["block_datatype"]) == (0, 16, "TSUB", "S32")
        assert (r["reason"], r["field"], r["message"]) == (reason, field, err.cause.message)
        assert (r["payload"], r["defined"], r["status"]) == (b"", b"", 0)


def test_a_batch_step_returns_the_blocks_records_and_stops_a_machine_that_rejects_it():
    blocks, machines = four_machines()
    _, table, _ = _batch_table(machines, isa.encode(blocks), "cpu")
    for backend in ("cpu", "reference"):
        batch = MachineBatch(machines, backend)
        stepped = CL.Collector()
        for offset, b in isa.iter_blocks(isa.encode(blocks)):
            stepped.write(batch.step(b, offset=offset))
        assert stepped.table().to_pylist() == table.to_pylist(), backend
        errors = batch.step_errors()
        assert [e is None for e in errors] == [True, True, False, False]
        assert batch.machine(2).digest() == machines[2].digest()     # its last commit: none


def test_a_decode_fault_is_a_record_for_every_live_machine():
    blocks, m = example("absdiff")
    data = bytearray(isa.encode(blocks))
    data[16 + 8 * 4] = 0xEE                  # a tag inside the second block: unknown
    result, table, _ = _batch_table([m, m.copy()], bytes(data), "cpu")
    faults = [r for r in table.to_pylist() if r["record"] == "fault"]
    assert [(r["machine"], r["block"], r["reason"]) for r in faults] == \
        [(k, result.errors[k].index, "DECODE_ERROR") for k in (0, 1)]
    _, alone = logged(m.copy(), bytes(data))
    assert [r for r in table.to_pylist() if r["machine"] == 0] == alone.to_pylist()


# ---------------------------------------------------------------- the CLI

@pytest.fixture
def batch_files(tmp_path):
    blocks, machines = four_machines()
    (tmp_path / "s.tbs").write_bytes(isa.encode(blocks))
    save_machines(machines, tmp_path / "init.arrow")
    return tmp_path


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_the_logs_last_commits_are_the_final_state_file_read_with_plain_pyarrow(batch_files, backend):
    d = batch_files
    rc = main(["run", str(d / "s.tbs"), "--init", str(d / "init.arrow"), "--out", str(d / "final.arrow"),
               "--log", str(d / "commits.arrow"), "--backend", backend, "-q"])
    assert rc == 1                                  # machines 2 and 3 faulted
    log = pa.ipc.open_file(pa.memory_map(str(d / "commits.arrow"))).read_all().to_pylist()
    final = pa.ipc.open_file(pa.memory_map(str(d / "final.arrow"))).read_all().to_pylist()
    init = pa.ipc.open_file(pa.memory_map(str(d / "init.arrow"))).read_all().to_pylist()
    last = {}
    for r in log:
        if r["record"] == "commit":
            last[(r["machine"], r["pe"], r["tile"])] = {k: r[k] for k in CL.TILE_COLUMNS}
    state = {(r["machine"], r["pe"], r["tile"]): {k: r[k] for k in CL.TILE_COLUMNS} for r in final}
    before = {(r["machine"], r["pe"], r["tile"]): {k: r[k] for k in CL.TILE_COLUMNS} for r in init}
    assert last and all(state[k] == v for k, v in last.items())
    assert {k: v for k, v in state.items() if k not in last} == before      # untouched tiles as they were
    assert {k[0] for k in last} == {0, 1}


def test_run_log_writes_jsonl_with_the_same_records(batch_files, capsys):
    d = batch_files
    for name in ("c.arrow", "c.jsonl"):
        main(["run", str(d / "s.tbs"), "--init", str(d / "init.arrow"), "--log", str(d / name), "-q"])
    assert CL.read_log(d / "c.jsonl").to_pylist() == CL.read_log(d / "c.arrow").to_pylist()
    out = capsys.readouterr()
    assert "machine 2: block 0 (byte offset 16): SOURCE_MISSING" in out.err


def test_the_summary_names_the_log(tmp_path, capsys):
    blocks, m = example("saxpy")
    (tmp_path / "s.tbs").write_bytes(isa.encode(blocks))
    m.save(tmp_path / "i.arrow")
    assert main(["run", str(tmp_path / "s.tbs"), "--init", str(tmp_path / "i.arrow"),
                 "--log", str(tmp_path / "c.arrow")]) == 0
    assert capsys.readouterr().out.rstrip().endswith(f"; commit log {tmp_path / 'c.arrow'} (4 record(s))")


@pytest.mark.parametrize("log,message", [("/proc/tile-emu-commits.arrow", "cannot write"),
                                         ("missing/commits.arrow", "does not exist"),
                                         ("commits.txt", "must end in .arrow"),
                                         ("s.tbs", "is the same file as the input STREAM"),
                                         ("final.arrow", "is the same file as --out")])
def test_an_unusable_log_path_is_one_line_exit_2_before_anything_runs(batch_files, capsys, log, message):
    d = batch_files
    before = sorted(os.listdir(d))
    path = log if log.startswith("/") else str(d / log)
    rc = main(["run", str(d / "s.tbs"), "--init", str(d / "init.arrow"), "--out", str(d / "final.arrow"),
               "--log", path])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert sorted(os.listdir(d)) == before          # no --out: nothing ran


def test_a_run_that_does_not_finish_leaves_no_log_and_an_older_log_as_it_was(batch_files, capsys, monkeypatch):
    d = batch_files
    (d / "commits.arrow").write_bytes(b"an older log")
    calls = []

    def interrupted(self, *a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, *a, **k)
    real = MachineBatch._step
    monkeypatch.setattr(MachineBatch, "_step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        main(["run", str(d / "s.tbs"), "--init", str(d / "init.arrow"), "--log", str(d / "commits.arrow"), "-q"])
    assert (d / "commits.arrow").read_bytes() == b"an older log"
    assert sorted(os.listdir(d)) == ["commits.arrow", "init.arrow", "s.tbs"]     # no temporary left


def test_an_out_that_cannot_be_written_discards_the_log(batch_files, capsys):
    d = batch_files
    rc = main(["run", str(d / "s.tbs"), "--init", str(d / "init.arrow"), "--out", "/proc/tile-emu-final.arrow",
               "--log", str(d / "commits.arrow"), "-q"])
    assert rc == 1 and "cannot write" in capsys.readouterr().err
    assert sorted(os.listdir(d)) == ["init.arrow", "s.tbs"]


# ---------------------------------------------------------------- bounded memory

def test_a_many_machine_log_beyond_its_memory_bound_spills_and_writes_the_same_records(tmp_path, monkeypatch):
    blocks, machines = four_machines()
    data = isa.encode(blocks)
    batch = MachineBatch(machines, "cpu")
    with CL.open_log(tmp_path / "held.arrow", 4) as log:
        batch.run(data, log=log)
    monkeypatch.setattr(CL, "HOLD_BYTES", 1)
    monkeypatch.setattr(CL, "REORDER_BYTES", 1)       # and reorder one machine at a time
    spilled = []
    real = CL.CommitLog._spill_held

    def spy(self):
        spilled.append(1)
        return real(self)
    monkeypatch.setattr(CL.CommitLog, "_spill_held", spy)
    batch = MachineBatch(machines, "cpu")
    with CL.open_log(tmp_path / "spilled.arrow", 4) as log:
        batch.run(data, log=log)
    assert spilled
    assert CL.read_log(tmp_path / "spilled.arrow").equals(CL.read_log(tmp_path / "held.arrow"))
    assert sorted(os.listdir(tmp_path)) == ["held.arrow", "spilled.arrow"]


# ---------------------------------------------------------------- compare

def test_compare_finds_a_planted_one_element_difference_in_a_log(batch_files):
    d = batch_files
    main(["run", str(d / "s.tbs"), "--init", str(d / "init.arrow"), "--log", str(d / "c.arrow"), "-q"])
    expected = CL.read_log(d / "c.arrow")
    rows = expected.to_pylist()
    k = next(i for i, r in enumerate(rows) if r["machine"] == 1 and r["block"] == 3 and r["pe"] == 1)
    r = rows[k]
    element = 9                                        # physical element 9: row 1, column 1 of 8
    payload = bytearray(r["payload"])
    want = int.from_bytes(payload[4 * element: 4 * element + 4], "little")
    payload[4 * element] ^= 0x01
    altered = [dict(x) for x in rows]
    altered[k]["payload"] = bytes(payload)
    diff = compare(expected, altered)
    assert (diff.machine, diff.block, diff.pe, diff.tile, diff.element, diff.row, diff.col) == \
        (1, 3, 1, r["tile"], element, 1, 1)
    assert (diff.expected, diff.actual) == (want, want ^ 0x01)
    signed = want - (1 << 32) if want >> 31 else want
    assert diff.expected_value == f"0x{want:08x} ({signed})"
    assert compare(expected, rows) is None


def test_compare_takes_what_step_returns():
    blocks, m = example("absdiff")
    a, b = m.copy(), m.copy("cpu")
    for blk_ in blocks:
        assert compare(a.step(blk_), b.step(blk_)) is None


def test_one_machines_log_file_has_the_same_bytes_on_every_backend(tmp_path):
    blocks, m = example("window")
    (tmp_path / "s.tbs").write_bytes(isa.encode(blocks))
    m.save(tmp_path / "i.arrow")
    got = {}
    for backend in ("reference", "cpu"):
        for suffix in (".arrow", ".jsonl"):
            log = tmp_path / f"{backend}{suffix}"
            assert main(["run", str(tmp_path / "s.tbs"), "--init", str(tmp_path / "i.arrow"), "--backend", backend,
                         "--log", str(log), "-q"]) == 0
            got[backend, suffix] = log.read_bytes()
    assert got["reference", ".arrow"] == got["cpu", ".arrow"] and got["reference", ".jsonl"] == got["cpu", ".jsonl"]


def test_the_lockstep_recipe_of_the_docs_runs(tmp_path, monkeypatch):
    doc = (ROOT / "docs" / "commit-log.md").read_text()
    recipe = doc.split("## Python: the run hook and lockstep stepping")[1].split("```python\n")[1].split("```")[0]
    blocks, m = example("absdiff")
    m.save(tmp_path / "s.arrow")
    (tmp_path / "prog.tbs").write_bytes(isa.encode(blocks))
    monkeypatch.chdir(tmp_path)
    exec(compile(recipe, "commit-log.md", "exec"), {})


def test_the_log_of_machine_k_run_alone_names_machine_k(batch_files):
    d = batch_files
    main(["run", str(d / "s.tbs"), "--init", str(d / "init.arrow"), "--log", str(d / "all.arrow"), "-q"])
    main(["run", str(d / "s.tbs"), "--init", str(d / "init.arrow"), "--machine", "1", "--log", str(d / "one.arrow"),
          "-q"])
    whole = [r for r in CL.read_log(d / "all.arrow").to_pylist() if r["machine"] == 1]
    assert CL.read_log(d / "one.arrow").to_pylist() == whole and whole
