"""Cases straight into a device under test (docs/golden-format.md, "Streaming cases into a DUT"):
`golden ... --format testfloat --out -` writes the TestFloat lines `golden export` writes of the
dataset the same command makes (each line checked here against SoftFloat), `--format arrow --out
-` an Arrow IPC stream of the dataset's rows with their partition, both as the chunks are
generated; a reader that closes the pipe ends the run with exit 0 and nothing on stderr."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import softfloatpy as sf

from emulator.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[2]
# TestFloat's flag bits: inexact 1, underflow 2, overflow 4, infinite 8, invalid 16
TF_FLAGS = ((sf.ExceptionFlag.INEXACT, 1), (sf.ExceptionFlag.UNDERFLOW, 2), (sf.ExceptionFlag.OVERFLOW, 4),
            (sf.ExceptionFlag.INFINITE, 8), (sf.ExceptionFlag.INVALID, 16))
TADD = ["--ops", "TADD", "--dtypes", "FP32", "--cases", "400", "--seed", "5", "--quiet"]


def _stdout(capsysbinary, *argv) -> bytes:
    assert main(["golden", *argv]) == 0
    return capsysbinary.readouterr().out


def test_testfloat_lines_are_the_export_of_the_same_dataset_and_softfloats_sums(tmp_path, capsysbinary):
    lines = _stdout(capsysbinary, *TADD, "--format", "testfloat", "--out", "-")
    assert main(["golden", *TADD, "--out", str(tmp_path / "d")]) == 0
    capsysbinary.readouterr()
    assert main(["golden", "export", str(tmp_path / "d"), "--format", "testfloat", "--op", "TADD",
                 "--dtype", "FP32"]) == 0
    assert lines == capsysbinary.readouterr().out
    rows = lines.decode().splitlines()
    assert len(rows) > 400
    sf.set_rounding_mode(sf.RoundingMode.NEAR_EVEN)
    sf.set_tininess_mode(sf.TininessMode.AFTER_ROUNDING)
    for row in rows:                  # TestFloat's line: a b a+b flags (its own flag bits)
        a, b, z, flags = (int(x, 16) for x in row.split())
        sf.set_exception_flags(0)
        s = sf.f32_add(*(sf.Float32.from_bytes(v.to_bytes(4, "big")) for v in (a, b)))
        raised = sf.get_exception_flags()
        assert flags == sum(t for flag, t in TF_FLAGS if raised & flag), row
        if not sf.f32_is_nan(s):
            assert z == int.from_bytes(s.to_bytes(), "big"), row


ARROW = {
    "single-block": ["--ops", "TADD,TCVT", "--dtypes", "FP16", "--dst-dtypes", "E4M3", "--rmodes", "RNE",
                     "--sat", "0", "--cases", "40", "--seed", "2", "--quiet"],
    "streams": ["--streams", "--blocks", "2", "--cases", "5", "--group-cases", "2", "--shapes", "r1c8,r3c1",
                "--seed", "2", "--quiet"],
}


@pytest.mark.parametrize("kind", sorted(ARROW))
def test_the_arrow_stream_holds_every_row_of_the_dataset_with_its_partition(kind, tmp_path, capsysbinary):
    raw = _stdout(capsysbinary, *ARROW[kind], "--format", "arrow", "--out", "-")
    got = pa.ipc.open_stream(pa.BufferReader(raw)).read_all()
    assert main(["golden", *ARROW[kind], "--out", str(tmp_path / "d")]) == 0
    files = sorted((tmp_path / "d").rglob("*.parquet"))
    assert len(files) == 2
    want = []
    for f in files:
        t = pq.read_table(f).combine_chunks()
        part = f.parent.relative_to(tmp_path / "d").as_posix()
        want.append(t.add_column(0, "partition", pa.array([part] * len(t))))
    order = [got.column("partition")[i].as_py() for i in range(len(got))]
    assert order == sorted(order, key=lambda x: [f.parent.relative_to(tmp_path / "d").as_posix()
                                                 for f in files].index(x))   # the manifest's file order
    expected = pa.concat_tables(want)
    got = got.cast(expected.schema) if kind == "streams" else got
    assert got.to_pylist() == expected.to_pylist()


def _run(args: list[str], reader: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(f"{sys.executable} -m emulator.cli golden {' '.join(args)} | {reader}", shell=True,
                          cwd=ROOT, env=env, capture_output=True, timeout=600, executable="/bin/bash")


def test_a_reader_that_stops_early_ends_the_run_quietly_with_exit_0():
    """2^32 cases of each of three partitions (more files than a dataset may hold: a stream has no
    manifest): the reader takes one line, the run ends at once, exit 0, nothing on stderr."""
    args = ["--ops", "TADD", "--dtypes", "FP32", "--cases", str(2 ** 32), "--quiet", "--format", "testfloat",
            "--out", "-"]
    done = _run(args, 'head -1; echo "rc=${PIPESTATUS[0]}"')
    out = done.stdout.decode().splitlines()
    assert len(out) == 2 and len(out[0].split()) == 4 and out[1] == "rc=0", done
    assert done.stderr == b"", done.stderr
    args = ["--ops", "TADD", "--dtypes", "FP32,FP16,E4M3", "--cases", str(2 ** 32), "--quiet", "--format", "arrow",
            "--out", "-"]
    done = _run(args, 'head -c 100000 | wc -c; echo "rc=${PIPESTATUS[0]}"')
    assert done.stdout.decode().split() == ["100000", "rc=0"] and done.stderr == b"", done


@pytest.mark.parametrize("argv, words", [
    (["--out", "-"], "--format testfloat"),
    (["--format", "arrow", "--out", "x"], "standard output (--out -)"),
    (["--format", "arrow", "--out", "-", "--workers", "2"], "--out - and --workers exclude each other"),
    (["--format", "arrow", "--out", "-", "--resume"], "--out - and --resume exclude each other"),
    (["--format", "testfloat", "--out", "-", "--dtypes", "FP32,FP16"], "2 partitions"),
    (["--format", "testfloat", "--out", "-", "--dtypes", "S8"], "FP16, FP32 and FP64"),
    (["--format", "testfloat", "--out", "-", "--profile", "ftz"], "--profile ieee"),
])
def test_bad_stream_options_are_usage_errors(argv, words, capsys):
    base = ["--ops", "TADD", "--dtypes", "FP32", "--cases", "5"]
    args = base + argv if "--dtypes" not in argv else ["--ops", "TADD", "--cases", "5"] + argv
    assert main(["golden", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err, err


def test_testfloat_of_streams_and_of_saturating_conversions_is_refused(capsys):
    assert main(["golden", "--streams", "--blocks", "2", "--cases", "3", "--format", "testfloat", "--out", "-"]) == 2
    assert "--format arrow" in capsys.readouterr().err
    assert main(["golden", "--ops", "TCVT", "--dtypes", "FP32", "--dst-dtypes", "FP16", "--rmodes", "RNE",
                 "--sat", "1", "--cases", "5", "--format", "testfloat", "--out", "-"]) == 2
    assert "--sat 0" in capsys.readouterr().err
