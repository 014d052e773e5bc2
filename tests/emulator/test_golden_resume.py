"""`golden --resume` of every dataset kind (docs/golden-format.md): a run that had finished is
left byte for byte as it was, exit 0; an interrupted one (no manifest yet, a data file not
written, a temporary file left behind) ends with exactly the bytes of an uninterrupted run."""
from __future__ import annotations

import pathlib
import shutil

import pytest

from emulator.cli import main

KINDS = {
    "single-block": ["--ops", "TADD,TCVT", "--dtypes", "FP16", "--dst-dtypes", "FP32", "--rmodes", "RNE", "--sat", "0",
                     "--cases", "12"],
    "streams": ["--streams", "--blocks", "2", "--cases", "3", "--group-cases", "1", "--shapes", "r1c8,r3c1"],
}


def _tree(folder: pathlib.Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _golden(kind, out, *extra) -> int:
    return main(["golden", *KINDS[kind], "--seed", "6", "--quiet", "--out", str(out), *extra])


@pytest.fixture(scope="module", params=sorted(KINDS))
def finished(request, tmp_path_factory):
    out = tmp_path_factory.mktemp("resume") / request.param
    assert _golden(request.param, out) == 0
    return request.param, out


def test_resuming_a_finished_run_exits_0_and_changes_nothing(finished, tmp_path, capsys):
    kind, done = finished
    x = shutil.copytree(done, tmp_path / "x")
    assert _golden(kind, x, "--resume") == 0, capsys.readouterr().err
    assert _tree(x) == _tree(done)
    assert main(["verify", str(x), "--quiet"]) == 0


def test_resuming_an_interrupted_run_gives_the_bytes_of_an_uninterrupted_one(finished, tmp_path):
    kind, done = finished
    x = shutil.copytree(done, tmp_path / "x")
    (x / "manifest.json").unlink()
    first = sorted(x.rglob("part-*.parquet"))[0]
    first.unlink()
    (first.parent / f".{first.name}.0123abcd.tmp").write_bytes(b"half")
    assert _golden(kind, x, "--resume") == 0
    assert _tree(x) == _tree(done)


def test_resuming_with_other_parameters_is_one_line_and_changes_nothing(finished, tmp_path, capsys):
    kind, done = finished
    x = shutil.copytree(done, tmp_path / "x")
    assert main(["golden", *KINDS[kind], "--seed", "7", "--quiet", "--out", str(x), "--resume"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "was generated with other parameters" in err, err
    assert _tree(x) == _tree(done)
