"""`tile-emu golden extract` and `emulator.golden.extract` (docs/golden-format.md, "Extracting a
case"): any golden case, single-block or stream (or a stream's prefix), becomes a `.tbs` stream,
an initial state, an expected final state and an expected commit log; replaying the files with
`tile-emu run` gives that final state (`tile-emu diff`: equal) and that log, byte for byte.

The expectations are checked against the dataset's own rows here, read with pyarrow: the
stream bytes are the row's `stream` (or its first B+1 blocks), the initial tiles the row's
`inputs` / layout, the logged payloads the row's `outputs` / record binaries."""
from __future__ import annotations

import contextlib
import io
import json
import pathlib

import pyarrow.parquet as pq
import pytest

from emulator import Machine
from emulator.cli import main
from emulator.commitlog import read_log
from emulator.golden import extract
from isa import encoding


def cli(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    out = tmp_path_factory.mktemp("x") / "single"
    assert cli("golden", "--ops", "TADD,TEXTRACT,TIMG2COL", "--dtypes", "FP16", "--per-class", "1", "--seed", "3",
               "--quiet", "--out", out)[0] == 0
    return out


@pytest.fixture(scope="module")
def streams(tmp_path_factory):
    out = tmp_path_factory.mktemp("x") / "streams"
    assert cli("golden", "--streams", "--blocks", "6", "--cases", "8", "--group-cases", "2", "--shapes", "r4c8",
               "--illegal-fraction", "0.5", "--ops", "TADD,TMUL,TCVT,TEXTRACT,TINSERT,TIMG2COL",
               "--dtypes", "FP16,FP32,S8", "--seed", "5", "--quiet", "--out", out)[0] == 0
    return out


def rows(folder, part):
    return pq.read_table(pathlib.Path(folder) / part / "part-00000.parquet").to_pylist()


def replay(d: pathlib.Path) -> tuple[int, int, bool]:
    """(run's status, diff's status, logs byte-identical) of the printed commands."""
    rc = cli("run", d / "stream.tbs", "--init", d / "init.arrow", "--out", d / "final.arrow",
             "--log", d / "commits.jsonl")[0]
    same = cli("diff", d / "expected.arrow", d / "final.arrow")[0]
    return rc, same, (d / "expected.jsonl").read_bytes() == (d / "commits.jsonl").read_bytes()


def test_single_block_cases_replay_to_their_stored_outcome(single, tmp_path):
    part = "op=TADD/dtype=FP16"
    table = rows(single, part)
    picks = [next(r for r in table if r["outcome"] == "commit"), next(r for r in table if r["outcome"] == "reject")]
    windows = [(p, next(r for r in rows(single, p) if r["outcome"] == "commit"))
               for p in ("op=TEXTRACT/dtype=FP16", "op=TIMG2COL/dtype=FP16")]
    for p, row in [(part, r) for r in picks] + windows:
        d = tmp_path / f"{p.replace('/', '_')}-{row['case']}"
        rc, out, err = cli("golden", "extract", single, "--case", f"{p}/part-00000.parquet:{row['case']}", "--out", d)
        assert rc == 0, err
        assert f"tile-emu run {d}/stream.tbs --init {d}/init.arrow" in out and f"cmp {d}/expected.jsonl" in out
        assert (d / "stream.tbs").read_bytes() == row["stream"]
        m = Machine.load(d / "init.arrow")
        assert m.config.local_bytes == row["local_bytes"] and m.config.matrix_bytes == row["matrix_bytes"]
        for t in row["inputs"]:
            assert m.read_tile(t["pe"], t["tile"]).payload == t["payload"]
        for g in row["gprs"]:
            assert m.gpr(g["pe"], g["index"]) == g["value"]
        log = read_log(d / "expected.jsonl").to_pylist()
        if row["outcome"] == "commit":
            assert [(r["pe"], r["payload"], r["defined"], r["status"]) for r in log] == \
                [(t["pe"], t["payload"], t["defined"], t["status"]) for t in row["outputs"]]
        else:
            assert [(r["record"], r["reason"], r["field"]) for r in log] == [("fault", row["reason"], row["field"])]
        assert replay(d) == ((0 if row["outcome"] == "commit" else 1), 0, True)
        assert json.loads((d / "case.json").read_text())["case"] == row["case"]


def test_stream_cases_and_prefixes_replay_to_their_stored_records(streams, tmp_path):
    part = "blocks=6/shape=r4c8"
    table = rows(streams, part)
    seen = set()
    for row in table:
        blocks = encoding.decode(row["stream"])
        seen |= {r["mnemonic"] for r in json.loads(row["layout"])["records"] if r["record"] == "commit"}
        for block in (None, 1):
            d = tmp_path / f"s{row['case']}-{block}"
            args = [] if block is None else ["--block", block]
            rc, out, err = cli("golden", "extract", streams, "--case", f"{part}:{row['case']}", *args, "--out", d)
            assert rc == 0, err
            last = len(blocks) - 1 if block is None else block
            assert encoding.decode((d / "stream.tbs").read_bytes()) == blocks[:last + 1]
            layout = json.loads(row["layout"])
            want = [r for r in layout["records"] if r["block"] <= last]
            log = read_log(d / "expected.jsonl").to_pylist()
            assert [(r["block"], r["record"], r["pe"], r["tile"]) for r in log] == \
                [(r["block"], r["record"], r["pe"] if r["record"] == "commit" else 0, r["tile"]) for r in want]
            at = 0
            for r, w in zip(log, layout["records"]):
                assert r["payload"] == row["record_payload"][at: at + w["payload_bytes"]]
                at += w["payload_bytes"]
            faulted = any(r["record"] == "fault" for r in want)
            assert replay(d) == ((1 if faulted else 0), 0, True), (row["case"], block)
    assert {"TEXTRACT", "TINSERT", "TIMG2COL", "TCVT"} <= seen, seen        # the streams commit window blocks


def test_python_api_gives_a_machine_its_blocks_and_the_expected_results(streams):
    r = extract(streams, "blocks=6/shape=r4c8:1", block=2)
    m = r.machine
    from emulator import commitlog
    log = commitlog.Collector()
    m.run(r.blocks, log=log)
    from emulator.cosim import compare, compare_states
    assert compare(r.log.to_batch(), log.table()) is None
    assert compare_states([r.expected], [m]) is None
    assert len(r.blocks) == 3 and r.spec == "blocks=6/shape=r4c8:1"
    assert extract(streams, 1).spec == r.spec              # one partition: K alone names the case


def test_bad_input_is_one_line_with_its_exit_status(single, streams, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)         # "none" below is tmp_path/none, named short
    cases = [
        (2, ["golden", "extract", single, "--case", "3", "--out", tmp_path / "a"], "partitions"),
        (2, ["golden", "extract", single, "--case", "op=TADD/dtype=FP16:99999", "--out", tmp_path / "a"], "no case 99999"),
        (2, ["golden", "extract", single, "--case", "op=TMUL/dtype=FP16:1", "--out", tmp_path / "a"], "no partition"),
        (2, ["golden", "extract", streams, "--case", "blocks=6/shape=r4c8:1", "--block", "6", "--out", tmp_path / "a"],
         "--block 6 does not exist"),
        (2, ["golden", "extract", single, "--case", "op=TADD/dtype=FP16:1", "--block", "1", "--out", tmp_path / "a"],
         "single-block"),
        (1, ["golden", "extract", "none", "--case", "1", "--out", tmp_path / "a"], "manifest.json"),   # relative: messages cut long paths
        (2, ["golden", "extract", single, "--case", "op=TADD/dtype=FP16:1", "--out", single], "is the dataset"),
        (2, ["golden", "extract", single, "--case", "op=TADD/dtype=FP16:1", "--out", single / "x"], "lies in"),
        (2, ["golden", "extract", single, "--case", "op=TADD/dtype=FP16:1", "--out", single.parent], "holds the dataset"),
    ]
    for status, argv, words in cases:
        rc, out, err = cli(*argv)
        assert (rc, len(err.strip().splitlines())) == (status, 1) and words in err, (argv, err)
        assert not (tmp_path / "a").exists() and not (single / "x").exists()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("")
    rc, _, err = cli("golden", "extract", single, "--case", "op=TADD/dtype=FP16:1", "--out", tmp_path / "full")
    assert rc == 2 and "exists" in err


def test_a_damaged_dataset_is_refused_and_nothing_is_written(single, tmp_path):
    import shutil
    bad = tmp_path / "bad"
    shutil.copytree(single, bad)
    f = bad / "op=TADD/dtype=FP16/part-00000.parquet"
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 1
    f.write_bytes(bytes(data))
    rc, _, err = cli("golden", "extract", bad, "--case", "op=TADD/dtype=FP16:1", "--out", tmp_path / "o")
    assert rc == 1 and "part-00000.parquet" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad"]


def test_a_state_no_state_file_can_hold_is_one_line_and_python_replays_it(single, tmp_path):
    # TIMG2COL's SOURCE_KIND case reads a Local tile carrying a feature-map descriptor, which
    # docs/state-format.md refuses (only Matrix tiles carry one): no files, the API replays it
    row = next(r for r in rows(single, "op=TIMG2COL/dtype=FP16") if r["class"] == "illegal_source_kind")
    spec = f"op=TIMG2COL/dtype=FP16:{row['case']}"
    rc, _, err = cli("golden", "extract", single, "--case", spec, "--out", tmp_path / "o")
    assert rc == 1 and len(err.strip().splitlines()) == 1 and "Matrix" in err and "emulator.golden.extract" in err
    assert list(tmp_path.iterdir()) == []
    r = extract(single, spec)
    result = r.machine.run(r.blocks)
    assert result.error.reason == row["reason"] == "SOURCE_KIND"
