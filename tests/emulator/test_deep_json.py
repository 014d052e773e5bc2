"""JSON nested close to Python's recursion limit, in every stored JSON the golden and state
readers take (isa/jsontext.py): golden manifests and generation.json of both dataset kinds, a
stream row's layout, state and batch file metadata, region programs.

Nesting the parser accepts could still be too deep for what a reader does next (a JSON Schema
error message printing the value, repr, json.dumps): a RecursionError traceback.  Each value is
swept through every depth from well below the limit to past it; every command answers with
its exit status and at most one line, never a traceback."""
from __future__ import annotations

import json
import pathlib
import shutil
import sys

import pyarrow as pa
import pytest

from emulator.cli import main
from emulator.golden import streams_dataset as SD

ROOT = pathlib.Path(__file__).resolve().parents[2]
EX = ROOT / "examples"
MARK = "\u0001deep"
# from well inside what the parser accepts (here, under pytest) to past it
DEPTHS = range(sys.getrecursionlimit() - 160, sys.getrecursionlimit() + 4, 2)


def nested(doc, path, depth: int) -> str:
    """`doc` as JSON text with the value at `path` replaced by `depth` nested empty arrays."""
    doc = json.loads(json.dumps(doc))
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = MARK
    return json.dumps(doc).replace(json.dumps(MARK), "[" * depth + "]" * depth)


def answers(capsys, argv) -> None:
    """argv exits 0 or 1 (2: a usage error) with no traceback and at most one stderr line."""
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    err = capsys.readouterr().err
    assert rc in (0, 1, 2) and "Traceback" not in err and err.count("\n") <= 1, (argv, rc, err[-800:])


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("deep")
    assert main(["golden", "--ops", "TADD", "--dtypes", "FP32", "--cases", "8", "--seed", "1", "--quiet",
                 "--out", str(root / "single")]) == 0
    assert main(["golden", "--streams", "--blocks", "2", "--cases", "2", "--group-cases", "2", "--shapes", "r1c8",
                 "--seed", "1", "--quiet", "--out", str(root / "streams")]) == 0
    return root


@pytest.mark.parametrize("kind, name, path", [
    ("single", "manifest.json", ("generator", "cases")),
    ("single", "manifest.json", ("partitions", 0, "files", 0)),
    ("single", "manifest.json", ("partitions", 0, "files", 0, "classes", "random")),
    ("single", "generation.json", ("ops",)),
    ("streams", "manifest.json", ("generator", "shapes", 0)),
    ("streams", "manifest.json", ("partitions", 0, "blocks")),
    ("streams", "generation.json", ("cases",)),
])
def test_a_golden_manifest_or_generation_json_nested_near_the_limit_is_one_line(datasets, tmp_path, capsys, kind,
                                                                               name, path):
    x = shutil.copytree(datasets / kind, tmp_path / "x")
    doc = json.loads((x / name).read_text())
    for depth in DEPTHS:
        (x / name).write_text(nested(doc, path, depth))
        answers(capsys, ["golden", "--coverage", x])
        answers(capsys, ["verify", x, "--quiet", "--oracle"])


@pytest.mark.parametrize("path", [("initial", 0, "pes"), ("records", 0, "fmap_params"), ("records",)])
def test_a_layout_nested_near_the_limit_is_refused(datasets, path):
    lay = {"initial": [{"pes": [0], "tile": 1}], "records": [{"fmap_params": []}]}
    for depth in [*DEPTHS, 100_000]:
        with pytest.raises(ValueError, match="layout"):
            SD.parse_layout(nested(lay, path, depth))


def _metadata(src: pathlib.Path, dst: pathlib.Path, text: str) -> None:
    with pa.OSFile(str(src)) as f:
        t = pa.ipc.open_file(f).read_all()
    t = t.replace_schema_metadata({**t.schema.metadata, b"tile-emu.state": text.encode()})
    with pa.OSFile(str(dst), "wb") as sink, pa.ipc.new_file(sink, t.schema) as w:
        w.write_table(t)


@pytest.mark.parametrize("src, path", [
    ("saxpy.init.arrow", ("config",)), ("saxpy.init.arrow", ("pes", 1, "gprs", 3)),
    ("saxpy.batch.arrow", ("config",)), ("saxpy.batch.arrow", ("machines", 1)),
    ("saxpy.batch.arrow", ("machines", 1, "pes", 0, "gprs")),
])
def test_state_file_metadata_nested_near_the_limit_is_one_line(tmp_path, capsys, src, path):
    with pa.OSFile(str(EX / src)) as f:
        meta = json.loads(pa.ipc.open_file(f).schema.metadata[b"tile-emu.state"])
    x = tmp_path / src
    for depth in DEPTHS:
        _metadata(EX / src, x, nested(meta, path, depth))
        answers(capsys, ["show", x, "--machine", "1"] if "batch" in src else ["show", x])


@pytest.mark.parametrize("path", [("params",), ("params", "N")])
def test_a_region_program_nested_near_the_limit_is_one_line(tmp_path, capsys, path):
    doc = json.loads((EX / "regions" / "pointwise.regions.json").read_text())
    x = tmp_path / "p.regions.json"
    for depth in DEPTHS:
        x.write_text(nested(doc, path, depth))
        answers(capsys, ["run", x])
