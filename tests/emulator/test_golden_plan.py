"""`golden ... --plan` (docs/golden-format.md, "Planning a run"): the partitions, files and cases
the run would make -- exactly the chunk plan's, as the format defines it (files of at most
65,536 cases, 4,096 streams) -- and estimates of its bytes and CPU time from a measured sample;
nothing is written.  (The estimates' accuracy is a measurement, docs/performance.md, not a test.)"""
from __future__ import annotations

import re

import pytest

from emulator.cli import main


def _plan(capsys, *argv) -> tuple[int, list[str]]:
    rc = main(["golden", *argv, "--plan"])
    out = capsys.readouterr()
    return rc, out.out.splitlines() + out.err.splitlines()


def _row(lines, name) -> list[str]:
    # " ~" after a name marks a partition priced by the ones measured; which ones get measured
    # depends on the sampling's time budget, hence on the machine's load, so it is not compared
    line = next(x for x in lines if x.split()[0] == name)
    return [w for w in line.split() if w != "~"]


def test_the_plan_counts_partitions_files_and_cases_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "never"
    rc, lines = _plan(capsys, "--ops", "TADD,TCVT", "--dtypes", "FP16", "--dst-dtypes", "FP32", "--rmodes", "RNE,RTZ",
                      "--sat", "1", "--cases", "70000", "--seed", "3", "--out", str(out))
    assert rc == 0, lines
    assert not out.exists()
    # 70,000 cases a partition: a file of 65,536 and one of 4,464; TADD and TCVT x 2 rounding modes
    assert lines[0] == "golden --plan: 3 partition(s), 6 data file(s), 210,000 cases"
    for name in ("op=TADD/dtype=FP16", "op=TCVT/dtype=FP16/dst=FP32/rmode=RNE/sat=1",
                 "op=TCVT/dtype=FP16/dst=FP32/rmode=RTZ/sat=1"):
        row = _row(lines, name)
        assert row[1:3] == ["2", "70,000"], row
    total = _row(lines, "total")
    assert total[1:3] == ["6", "210,000"]
    size, cpu = re.fullmatch(r"([\d.,]+) (?:B|kB|MB|GB|TB)", " ".join(total[3:5])), " ".join(total[5:7])
    assert size and float(size.group(1).replace(",", "")) > 0 and re.fullmatch(r"[\d.,]+ (s|min|h|days)", cpu)
    assert "bytes a case on disk" in lines[-2] and "nothing was written" in lines[-1]


def test_a_shards_plan_counts_its_files(capsys):
    rc, lines = _plan(capsys, "--ops", "TADD", "--dtypes", "FP16,FP32,E4M3", "--cases", "100", "--shard", "1/2")
    assert rc == 0, lines
    # files 0, 1, 2 (FP16, FP32, E4M3): shard 1 of 2 holds file 1
    assert lines[0].endswith("; shard 1/2: 1 of the 3 files")
    assert _row(lines, "op=TADD/dtype=FP32")[1:3] == ["1", "100"]
    assert not any(x.startswith("op=TADD/dtype=FP16") for x in lines)


def test_a_stream_plan_counts_streams(capsys):
    rc, lines = _plan(capsys, "--streams", "--blocks", "2", "--cases", "5000", "--shapes", "r1c8,r3c1",
                      "--group-cases", "8")
    assert rc == 0, lines
    assert lines[0] == "golden --plan: 2 partition(s), 4 data file(s), 10,000 streams of 2 blocks"
    assert _row(lines, "blocks=2/shape=r3c1")[1:3] == ["2", "5,000"]


@pytest.mark.parametrize("argv, rc, words", [
    (["--ops", "TADD", "--dtypes", "FP32", "--cases", "0"], 2, "--cases must be positive"),
    (["--ops", "TADD", "--dtypes", "FP32,FP16,E4M3", "--cases", str(2 ** 32)], 1, "a dataset holds at most 65,536"),
    (["--ops", "TADD", "--dtypes", "FP32", "--cases", "5", "--shard", "0/2"], 1, "N is at most 1"),
])
def test_a_plan_refuses_what_the_run_refuses(argv, rc, words, capsys):
    got, lines = _plan(capsys, *argv)
    assert got == rc and len(lines) == 1 and words in lines[0], lines
