"""Commit logs (docs/commit-log.md): a record per committed (block, PE) holding the destination
exactly as the state file holds it, a record per fault, Arrow and JSON lines, written in batches
and atomically, read back with every damage named."""
from __future__ import annotations

import contextlib
import json
import os
import pathlib

import numpy as np
import pyarrow as pa
import pytest

import isa
from emulator import Machine
from emulator import commitlog as CL
from emulator.stateio import state_table

from emu_helpers import blk, everywhere
from log_helpers import record_lines, sealed_jsonl

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def run_logged(name):
    """(records of every block of examples/NAME.s, the machine after each block)."""
    blocks = isa.assemble_blocks((EXAMPLES / f"{name}.s").read_text())
    m = Machine.load(EXAMPLES / f"{name}.init.arrow")
    out, states = [], []
    for i, b in enumerate(blocks):
        res = m.execute(b)
        out.append(CL.block_records(m, b, index=i, offset=100 + i, pes=res.pes))
        states.append(m.copy())
    return blocks, out, states


@pytest.mark.parametrize("name", ["saxpy", "absdiff", "window"])
def test_a_commit_record_is_the_destination_as_the_state_file_holds_it(name):
    blocks, records, states = run_logged(name)
    for i, (b, rec, m) in enumerate(zip(blocks, records, states)):
        dest = b.iot[-1]
        pes = [p for p in range(4) if dest.PE_MASK >> p & 1]
        state = state_table(m).to_pylist()
        want = [r for r in state if r["tile"] == dest.tile and r["pe"] in pes]
        got = rec.to_pylist()
        assert [r["pe"] for r in got] == pes
        for g, w in zip(got, want):
            assert {k: g[k] for k in CL.TILE_COLUMNS} == w
            assert g["status"] == m.status(w["pe"])
            assert (g["machine"], g["block"], g["offset"], g["record"]) == (0, i, 100 + i, "commit")
            assert g["mnemonic"] == isa.instructions.by_carrier(b.bstart.Mode, b.bstart.Function).mnemonic
            assert g["block_datatype"] == isa.datatypes.datatype(b.bstart.DataType).name
            assert (g["reason"], g["field"], g["message"]) == ("", "", "")


def test_a_strict_no_op_commits_nothing_and_has_no_record():
    m = Machine()
    everywhere(m, 1, "FP32", np.zeros(4, np.uint32))
    b = blk("TADD", "FP32", [1, 1], 2, mask=0)
    m.execute(b)
    assert CL.block_records(m, b, index=0).num_rows == 0


def test_a_fault_record_names_block_offset_reason_field_and_message():
    m = Machine()
    everywhere(m, 1, "FP32", np.zeros(4, np.uint32))
    blocks = [blk("TADD", "FP32", [1, 1], 2), blk("TADD", "FP32", [1, 7], 3)]
    res = m.run(isa.encode(blocks))
    rec = CL.fault_records(res.error, machine_index=5, block=blocks[1]).to_pylist()
    assert len(rec) == 1
    r = rec[0]
    assert (r["machine"], r["block"], r["record"], r["reason"], r["field"]) == (5, 1, "fault", "SOURCE_MISSING", "B.IOT[1]")
    assert r["offset"] == res.error.offset and r["message"] == res.error.cause.message
    assert (r["mnemonic"], r["block_datatype"], r["payload"], r["defined"]) == ("TADD", "FP32", b"", b"")


def test_an_undecodable_block_is_a_decode_error_record():
    data = bytearray(isa.encode([blk("TADD", "FP32", [1, 1], 2)]))
    data[16] = 0xEE                                    # the BSTART's tag: unknown
    res = Machine().run(bytes(data))
    r = CL.fault_records(res.error).to_pylist()[0]
    assert (r["reason"], r["block"], r["offset"], r["mnemonic"]) == ("DECODE_ERROR", 0, 16, "")
    assert "byte offset 16" in r["message"]


@pytest.mark.parametrize("suffix", [".arrow", ".jsonl"])
def test_both_formats_read_back_the_same_records(tmp_path, suffix):
    _, records, _ = run_logged("absdiff")
    path = tmp_path / f"log{suffix}"
    assert CL.write_log(path, records) == sum(r.num_rows for r in records)
    t = CL.read_log(path)
    assert t.to_pylist() == [r for rec in records for r in rec.to_pylist()]
    if suffix == ".jsonl":
        first = json.loads(path.read_text().splitlines()[1])        # line 1 is the header
        assert first["payload"] == records[0].groups[0].payload[0].tobytes().hex()


def test_records_are_written_in_batches_as_the_run_goes(tmp_path, monkeypatch):
    monkeypatch.setattr(CL, "BATCH_ROWS", 2)
    _, records, _ = run_logged("saxpy")
    path = tmp_path / "log.arrow"
    with CL.open_log(path) as log:
        for _ in range(3):
            log.write(records[0])                      # 4 rows each
            assert log._pending_rows < 2               # flushed: nothing held back
    with pa.memory_map(str(path)) as src:
        assert pa.ipc.open_file(src).num_record_batches == 6 + 1       # and the closing batch


def test_a_write_failing_on_the_writer_thread_is_raised_and_leaves_no_log(tmp_path, monkeypatch):
    """Record batches are written on a thread of the log's own; a failed write surfaces from
    close() as the OSError it was, the old log stays as it was and no temporary is left."""
    monkeypatch.setattr(CL, "BATCH_ROWS", 2)
    _, records, _ = run_logged("saxpy")
    real = pa.ipc.new_file

    class Failing:
        def __init__(self, sink, schema):
            self.w = real(sink, schema)

        def write_batch(self, b, custom_metadata=None):
            raise OSError(28, "No space left on device")

        def close(self):
            self.w.close()

    monkeypatch.setattr(pa.ipc, "new_file", Failing)
    path = tmp_path / "log.arrow"
    path.write_bytes(b"an older log")
    with pytest.raises(OSError, match="No space left"):
        with CL.open_log(path) as log:
            for _ in range(3):
                log.write(records[0])
    assert path.read_bytes() == b"an older log" and os.listdir(tmp_path) == ["log.arrow"]
    assert log._pool is None                            # the writer thread is gone


def test_a_many_machine_log_is_written_machine_by_machine(tmp_path, monkeypatch):
    """Blocks arrive for every machine at once; the file is ordered (machine, block, PE)."""
    monkeypatch.setattr(CL, "REORDER_BYTES", 1)         # one machine per pass over the spill
    m = Machine()
    everywhere(m, 1, "U8", np.arange(4, dtype=np.uint8))
    blocks = [blk("TADD", "U8", [1, 1], 2, mask=0b0101), blk("TSUB", "U8", [2, 1], 3, mask=0b0101)]
    for b in blocks:
        m.execute(b)
    path = tmp_path / "log.jsonl"
    with CL.open_log(path, machines=3) as log:
        for i, b in enumerate(blocks):
            for k in range(3):
                log.write(CL.block_records(m, b, index=i, machine_index=k))
    keys = [(r["machine"], r["block"], r["pe"]) for r in CL.read_log(path).to_pylist()]
    assert keys == sorted(keys) and len(keys) == 3 * 2 * 2
    assert not [p for p in tmp_path.iterdir() if p.name != "log.jsonl"]     # no spill left


def test_a_failed_run_leaves_no_log_and_an_existing_log_untouched(tmp_path):
    path = tmp_path / "log.arrow"
    path.write_bytes(b"old")
    _, records, _ = run_logged("saxpy")
    with pytest.raises(RuntimeError):
        with CL.open_log(path, machines=2) as log:
            log.write(records[0])
            raise RuntimeError("interrupted")
    assert path.read_bytes() == b"old" and sorted(os.listdir(tmp_path)) == ["log.arrow"]


@pytest.mark.parametrize("name,message", [("log.txt", "must end in .arrow"),
                                          ("missing/log.arrow", "does not exist"),
                                          (".", "must end in")])
def test_an_unusable_log_path_is_one_line_before_anything_runs(tmp_path, name, message):
    with pytest.raises(CL.CommitLogError, match=message):
        CL.check_log_path(tmp_path / name if name != "." else tmp_path)


@pytest.fixture
def logs(tmp_path):
    _, records, _ = run_logged("absdiff")
    for s in (".arrow", ".jsonl"):
        CL.write_log(tmp_path / f"log{s}", records)
    return tmp_path


def test_a_truncated_arrow_log_is_named(logs):
    p = logs / "log.arrow"
    p.write_bytes(p.read_bytes()[:-40])
    # the relative name: a message cuts a long path (pytest-xdist's base folders are longer)
    with contextlib.chdir(logs), pytest.raises(CL.CommitLogError, match="log.arrow: not an Arrow IPC file, or truncated"):
        CL.read_log(p.name)


def test_a_truncated_jsonl_log_names_the_record(logs):
    p = logs / "log.jsonl"
    text = p.read_text()
    p.write_text(text[: text.index("\n", 100) + 30])
    with contextlib.chdir(logs), pytest.raises(CL.CommitLogError, match=r"log.jsonl: record 1 \(line 3\): truncated"):
        CL.read_log(p.name)


@pytest.mark.parametrize("edit,message", [
    (lambda r: r.update(payload=r["payload"][:-2]), "record 2 .*'payload' holds a number of bytes"),
    (lambda r: r.update(pe=7), "record 2 .*'pe' is not a PE"),
    (lambda r: r.update(datatype="FP99"), "record 2 .*'datatype' is not a DataType"),
    (lambda r: r.update(payload="zz"), "record 2 .*'payload' is not a hex string"),
    (lambda r: r.update(status="high"), r"record 2 \(line 4\): a value has the wrong type"),
    (lambda r: r.pop("status"), "record 2 .*keys differ"),
])
def test_an_altered_jsonl_record_is_named(logs, edit, message):
    """Each edit with the checksums made again (log_helpers), so the record check finds it."""
    p = logs / "log.jsonl"
    lines = record_lines(p.read_text())
    r = json.loads(lines[2])
    edit(r)
    lines[2] = json.dumps(r)
    p.write_text(sealed_jsonl(lines))
    with pytest.raises(CL.CommitLogError, match=message):
        CL.read_log(p)


def test_an_arrow_log_of_another_schema_is_refused(logs):
    t = CL.read_log(logs / "log.arrow").drop_columns(["status"])
    with pa.OSFile(str(logs / "other.arrow"), "wb") as f, pa.ipc.new_file(f, t.schema) as w:
        w.write_table(t)
    with pytest.raises(CL.CommitLogError, match="columns differ; missing status"):
        CL.read_log(logs / "other.arrow")


@pytest.mark.parametrize("name", ["absdiff", "window"])
def test_records_from_committed_arrays_equal_those_read_through_the_machine(name):
    """commit_records from (M, elements) physical arrays -- what a commit holds -- packs the
    same tile-store images as the state file (4-bit and 1-bit containers included)."""
    blocks, records, states = run_logged(name)
    for i, (b, rec, m) in enumerate(zip(blocks, records, states)):
        pes = [p for p in range(4) if b.iot[-1].PE_MASK >> p & 1]
        views = [m.read_tile(p, b.iot[-1].tile) for p in pes]
        d = views[0].desc
        from emulator.tiles import to_physical
        again = CL.commit_records(block=i, offset=100 + i, mnemonic=rec.to_pylist()[0]["mnemonic"],
                                  block_datatype=rec.to_pylist()[0]["block_datatype"], tile=b.iot[-1].tile, desc=d,
                                  machine=0, pe=pes, status=[m.status(p) for p in pes],
                                  elems=np.stack([to_physical(d, v.bits) for v in views]),
                                  defined=np.stack([to_physical(d, v.defined, fill=False) for v in views]))
        assert again.to_pylist() == rec.to_pylist()


@pytest.mark.parametrize("container,n", [(4, 7), (1, 13), (8, 3), (64, 2)])
def test_the_batched_pack_is_the_tile_store_image(container, n):
    from emulator.tiles import pack_elements
    rng = np.random.default_rng(container)
    top = 1 << min(container, 63)
    elems = rng.integers(0, top, (3, n), dtype=np.uint64)
    packed = CL._pack(elems, container)
    assert [row.tobytes() for row in packed] == [pack_elements(e, container) for e in elems]


def test_the_reading_recipe_of_the_docs_runs(tmp_path, monkeypatch, capsys):
    """docs/commit-log.md's pyarrow recipe, as written, on a log with a commit and a fault."""
    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "commit-log.md").read_text()
    recipe = doc.split("## Reading a log (pyarrow)")[1].split("```python\n")[1].split("```")[0]
    _, records, _ = run_logged("saxpy")
    fault = CL.fault_group(0, 1, 56, "SOURCE_MISSING", "B.IOT[1]", "PE0 has no tile 7", "TADD", "FP32")
    CL.write_log(tmp_path / "commits.arrow", [records[0], fault])
    monkeypatch.chdir(tmp_path)
    exec(compile(recipe, "commit-log.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("0 0 TFMA PE0 t3 [") and out[-1] == (
        "machine 0 block 1: SOURCE_MISSING at B.IOT[1]: PE0 has no tile 7")


def test_verify_checks_a_commit_log_and_names_the_record_out_of_order(tmp_path, capsys, monkeypatch):
    from emulator.cli import main
    monkeypatch.chdir(tmp_path)                      # a short name: messages quote long paths cut
    m = Machine()
    everywhere(m, 1, "U8", np.arange(4, dtype=np.uint8))
    blocks = [blk("TADD", "U8", [1, 1], 2, mask=0b0101), blk("TSUB", "U8", [2, 1], 3, mask=0b0101)]
    for b in blocks:
        m.execute(b)
    path = pathlib.Path("log.jsonl")
    with CL.open_log(path, machines=2) as log:
        for i, b in enumerate(blocks):
            for k in range(2):
                log.write(CL.block_records(m, b, index=i, machine_index=k))
    assert main(["verify", str(path)]) == 0
    assert "commit log intact (8 records: 8 commits, 0 faults, 2 machine(s); 2 checksums match)" in \
        capsys.readouterr().out
    lines = record_lines(path.read_text())
    lines[1], lines[2] = lines[2], lines[1]          # machine 0: block 1's PE 0 before block 0's PE 2
    path.write_text(sealed_jsonl(lines))
    assert main(["verify", str(path)]) == 1
    err = capsys.readouterr().err
    assert "log.jsonl: record 2 (machine 0, block 0, line 4): out of order" in err and len(err.splitlines()) == 1
    path.write_text(path.read_text()[:-40])
    assert main(["verify", str(path)]) == 1
    assert "truncated" in capsys.readouterr().err


def test_every_commit_log_writer_is_a_log_writer(tmp_path):
    """commitlog.LogWriter is the one declared interface of `log=`: the file writer (both
    formats), the in-memory collector and the adapters that renumber records for a run inside
    another all satisfy it, with `write(records)` taking the records alone; and the records a
    run hands each of them are the same."""
    import inspect

    from emulator.commands.run import _Picked
    from emulator.engine import _Commits, _Machine

    blocks = isa.assemble_blocks((EXAMPLES / "saxpy.s").read_text())
    start = Machine.load(EXAMPLES / "saxpy.init.arrow")
    collected = CL.Collector()
    writers = [collected, _Picked(CL.Collector(), 3), _Machine(CL.Collector(), 3), _Commits(CL.Collector(), 7, 0)]
    with CL.open_log(tmp_path / "log.arrow") as arrow, CL.open_log(tmp_path / "log.jsonl") as jsonl:
        for log in writers + [arrow, jsonl]:
            assert isinstance(log, CL.LogWriter), type(log).__name__
            assert list(inspect.signature(log.write).parameters) == ["records"], type(log).__name__
            assert start.copy().run(blocks, log=log).ok
    expected = collected.records().to_pylist()
    assert CL.read_log(tmp_path / "log.arrow").to_pylist() == CL.read_log(tmp_path / "log.jsonl").to_pylist() \
        == expected
    assert [dict(r, machine=0) for r in writers[1].log.records().to_pylist()] == expected
    assert not isinstance(object(), CL.LogWriter)
