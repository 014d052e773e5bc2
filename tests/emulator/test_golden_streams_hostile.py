"""Hostile stream golden datasets (docs/golden-format.md, "Stream goldens", "What verify checks").

A stream dataset that lies -- its checksums updated -- is refused by `verify` (both backends),
`verify --oracle`, `golden --coverage` and `golden export` alike with one line naming the file
and the case, or is a mismatch line of the replay; never a traceback, never a pass.  The
partition keys (`blocks=K`, `shape=S`) are checked against the rows as the single-block keys
are.  The fuzz tests at the end mutate a small real dataset at random (manifest, generation.json,
data file bytes and values, layout texts)."""
from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shutil
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from emulator.cli import main
from emulator.golden import dataset as D
from emulator.golden import streams as S
from emulator.golden import streams_dataset as SD
from mutate import byte_edits, row_edit
from test_golden_hostile import _mutate_manifest, copy, generated, manifest, one_line, resync, write_manifest
from test_golden_hostile import rewrite as _rewrite

ARGS = ["--blocks", "3", "--cases", "6", "--group-cases", "2", "--illegal-fraction", "0.5", "--seed", "3",
        "--quiet"]
R1C8 = "blocks=3/shape=r1c8/part-00000.parquet"
R4C8 = "blocks=3/shape=r4c8/part-00000.parquet"


def _generate(out, *argv) -> None:
    assert main(["golden", "--streams", *argv, "--out", str(out)]) == 0


@pytest.fixture(scope="module")
def two_shapes(tmp_path_factory):
    """The issue's dataset: shape classes r1c8 and r4c8 (the same classes applicable)."""
    out = tmp_path_factory.mktemp("streams-hostile") / "s"
    _generate(out, *ARGS, "--shapes", "r1c8,r4c8")
    return out


# ---------------------------------------------------------------------------- helpers

def rewrite(folder, rel, fn, counts: bool = False) -> None:
    """Rewrite one data file's rows (dicts, which fn edits in place), then resync the manifest."""
    _rewrite(folder, rel, fn, schema=SD.SCHEMA, counts=counts)


def set_layout(folder, rel, text: str) -> None:
    """Replace the first entry of the file's layout dictionary (the layout of the rows that use
    it) by `text`, keeping every other byte of the column."""
    path = folder / rel
    t = pq.read_table(path)
    col = t.column("layout").combine_chunks()
    texts = col.dictionary.to_pylist()
    texts[0] = text
    layout = pa.DictionaryArray.from_arrays(col.indices, pa.array(texts, pa.string()))
    pq.write_table(t.set_column(t.schema.get_field_index("layout"), "layout", layout), path)
    resync(folder)


def refused_everywhere(folder, capsys, *words) -> None:
    """verify on both backends, verify --oracle, golden --coverage and golden export each refuse
    the dataset in one line holding `words`; the export writes nothing.  The commands get the
    folder's relative name (a message cuts a long path short)."""
    folder = pathlib.Path(folder)
    with contextlib.chdir(folder.parent):
        x = folder.name
        for argv in (["verify", x, "--quiet"], ["verify", x, "--quiet", "--backend", "reference"],
                     ["verify", x, "--quiet", "--oracle"], ["golden", "--coverage", x],
                     ["golden", "export", x, "--format", "hex", "--out", "export-out"]):
            one_line(capsys, main(argv), *words)
        assert not pathlib.Path("export-out").exists()


# ---------------------------------------------------------------------------- the partition keys

def test_the_fixture_verifies(two_shapes, capsys):
    assert main(["verify", str(two_shapes), "--quiet"]) == 0
    assert "12 streams of 3 blocks match" in capsys.readouterr().out


def test_partitions_swapped_with_their_manifest_entries_are_refused_everywhere(two_shapes, tmp_path, capsys):
    """The issue's liar: the data files of shape=r1c8 and shape=r4c8 swapped, and their
    manifest records (sha256, bytes, classes) and not_applicable swapped to match.  Every tile
    of an r4c8 stream is 4 x 8, not the 1 x 8 its new folder promises."""
    x = copy(two_shapes, tmp_path)
    os.replace(x / R1C8, x / "tmp.parquet")
    os.replace(x / R4C8, x / R1C8)
    os.replace(x / "tmp.parquet", x / R4C8)
    m = manifest(x)
    a, b = m["partitions"]
    for key in ("sha256", "bytes", "classes"):
        a["files"][0][key], b["files"][0][key] = b["files"][0][key], a["files"][0][key]
    a["not_applicable"], b["not_applicable"] = b["not_applicable"], a["not_applicable"]
    write_manifest(x, m)
    refused_everywhere(x, capsys, R1C8, "case 0: layout.initial[0].valid_row: tile 1 has valid shape 4 x 8; "
                                        "the partition's shape class r1c8 is 1 x 8")


@pytest.mark.parametrize("shapes, words", [
    ("r2c3w8,r4c8", "blocks=3/shape=r2c3w8/part-00000.parquet: case 0: layout.initial[0].valid_row: tile 1 has "
                    "valid shape 1 x 8; the partition's shape class r2c3w8 is 2 x 3"),
    ("r1c8,r2c3w8", "blocks=3/shape=r2c3w8/part-00000.parquet: case 0: layout.initial[0].valid_row: tile 1 has "
                    "valid shape 4 x 8; the partition's shape class r2c3w8 is 2 x 3"),
])
def test_files_relabelled_to_another_shape_class_are_refused(two_shapes, tmp_path, capsys, shapes, words):
    """A thorough liar: the generator's shapes changed, a partition's folder renamed to match,
    the manifest's keys and not_applicable recomputed (r2c3w8 can carry every class r1c8 and
    r4c8 can: only the tiles' valid shape tells)."""
    x = copy(two_shapes, tmp_path)
    m = manifest(x)
    m["generator"]["shapes"] = shapes.split(",")
    new = SD.partitions(SD.StreamParams.from_json(m["generator"]))
    for entry, part in zip(m["partitions"], new):
        old = entry["files"][0]["path"].split("/")[1]
        if old != f"shape={part.shape}":
            os.replace(x / "blocks=3" / old, x / "blocks=3" / f"shape={part.shape}")
            entry["files"][0]["path"] = f"{part.path}/part-00000.parquet"
        entry.update(shape=part.shape, not_applicable=SD.classes_for(part.shape)[1])
    write_manifest(x, m)
    refused_everywhere(x, capsys, words)


def test_files_relabelled_to_another_block_count_are_refused(two_shapes, tmp_path, capsys):
    """blocks=K: the generator's blocks, the folders and the manifest keys all say 4; the rows'
    `blocks` column and streams say 3."""
    x = copy(two_shapes, tmp_path)
    relabel_blocks(x, 4)
    refused_everywhere(x, capsys, "blocks=4/shape=r1c8/part-00000.parquet: case 0: blocks is not the partition's 4")


def relabel_blocks(x, k: int) -> None:
    """The generator's blocks, the folder and every manifest key and path made to say k."""
    m = manifest(x)
    m["generator"]["blocks"] = k
    os.replace(x / "blocks=3", x / f"blocks={k}")
    for entry in m["partitions"]:
        entry["blocks"] = k
        entry["files"][0]["path"] = entry["files"][0]["path"].replace("blocks=3", f"blocks={k}")
    write_manifest(x, m)


def test_a_block_count_column_that_lies_with_the_streams_is_refused(two_shapes, tmp_path, capsys):
    """The `blocks` column made to agree with a relabelled partition: the streams still decode
    to 3 blocks."""
    x = copy(two_shapes, tmp_path)
    rewrite(x, R1C8, lambda rows: [r.update(blocks=4) for r in rows])
    relabel_blocks(x, 4)
    refused_everywhere(x, capsys, "blocks=4/shape=r1c8/part-00000.parquet: case 0: the stream holds 3 blocks; the "
                                  "partition's streams hold 4")


def test_a_committed_destination_of_another_valid_shape_is_refused(two_shapes, tmp_path, capsys):
    """The records are tiles of the stream too: a commit's destination of another valid shape
    (its sizes made to agree, so only the shape rule is left) is refused before the replay."""
    x = copy(two_shapes, tmp_path)
    rows = pq.read_table(x / R1C8).to_pylist()
    lay = json.loads(rows[0]["layout"])
    i = next(i for i, r in enumerate(lay["records"]) if r["record"] == "commit")
    lay["records"][i]["valid_col"] = 4
    set_layout(x, R1C8, json.dumps(lay, separators=(",", ":")))
    tile = lay["records"][i]["tile"]
    refused_everywhere(x, capsys, f"{R1C8}: case 0: layout.records[{i}].valid_col: tile {tile} has valid shape "
                                  "1 x 4; the partition's shape class r1c8 is 1 x 8")


def test_a_committed_block_whose_source_is_not_there_is_refused_everywhere(two_shapes, tmp_path, capsys):
    """The stream form of the single-block `inputs` rule: the initial tiles put under other ids
    (window sources kept), so the first committed block that reads one finds nothing; the
    replay would reject it (SOURCE_MISSING), the open refuses it before any consumer reads it."""
    x = copy(two_shapes, tmp_path)
    rows = pq.read_table(x / R1C8).to_pylist()
    lay = json.loads(rows[0]["layout"])
    for e in lay["initial"]:
        e["tile"] += 0 if e["tile"] in S.WINDOW_SOURCES else 1000
    set_layout(x, R1C8, json.dumps(lay, separators=(",", ":")))
    refused_everywhere(x, capsys, f"{R1C8}: case 0: block ", "commits, but its source tile ",
                       "is in neither the initial state nor an earlier block's commit")


def test_window_sources_keep_their_own_shapes(two_shapes):
    """docs/golden-format.md: every tile has the shape class's valid shape but the window
    sources; the generator's data agree (read here with plain json)."""
    for rel, (vr, vc) in ((R1C8, (1, 8)), (R4C8, (4, 8))):
        for text in set(pq.read_table(two_shapes / rel).column("layout").to_pylist()):
            lay = json.loads(text)
            shaped = [e for e in lay["initial"] if e["tile"] not in S.WINDOW_SOURCES] + \
                [e for e in lay["records"] if e["record"] == "commit"]
            assert shaped and all((e["valid_row"], e["valid_col"]) == (vr, vc) for e in shaped)
            assert {e["tile"] for e in lay["initial"]} & S.WINDOW_SOURCES


# ---------------------------------------------------------------------------- both kinds alike

@pytest.fixture(scope="module")
def single(tmp_path_factory):
    return generated(tmp_path_factory, "single-hostile", "t", "--ops", "TADD", "--dtypes", "FP32", "--cases", "8",
                     seed=["--seed", "1", "--quiet"])


@pytest.mark.parametrize("kind, path", [
    ("single", ("generator", "cases")), ("single", ("generator", "chunk_cases")), ("single", ("generator", "seed")),
    ("streams", ("generator", "cases")), ("streams", ("generator", "blocks")), ("streams", ("generator", "seed")),
    ("streams", ("generator", "group_cases")), ("streams", ("partitions", 0, "blocks")),
])
def test_an_integer_written_as_a_float_is_refused_in_either_kind(two_shapes, single, tmp_path, capsys, kind, path):
    """JSON Schema's "integer" takes 8.0; a dataset's counts, sizes and keys are integer literals
    in both kinds (8.0 reached range(): a TypeError traceback; a partition's blocks 3.0 passed)."""
    x = copy(two_shapes if kind == "streams" else single, tmp_path)
    m = manifest(x)
    parent = m
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = float(parent[path[-1]])
    write_manifest(x, m)
    where = ".".join(str(k) for k in path).replace(".0.", "[0].")
    with contextlib.chdir(x.parent):
        for argv in (["verify", x.name, "--quiet"], ["golden", "--coverage", x.name]):
            one_line(capsys, main(argv), f"{where}: {float(parent[path[-1]])!r} is not of type 'integer'")


# ---------------------------------------------------------------------------- nested JSON

def test_a_deeply_nested_layout_is_one_line_everywhere(two_shapes, tmp_path, capsys):
    """A layout of 100,000 `[` (the issue's RecursionError): one line naming file and case."""
    x = copy(two_shapes, tmp_path)
    set_layout(x, R4C8, "[" * 100_000)
    refused_everywhere(x, capsys, f"{R4C8}: case ", "layout is not JSON (the JSON nests too deeply)")


@pytest.mark.parametrize("name", [D.MANIFEST, D.PARAMS])
def test_a_deeply_nested_manifest_or_generation_json_is_one_line(two_shapes, tmp_path, capsys, name):
    """A stream manifest is recognised by its format name; one that then nests 100,000 deep
    (or a generation.json that does, with no manifest) is one line, exit 1."""
    x = copy(two_shapes, tmp_path)
    if name == D.PARAMS:
        (x / D.MANIFEST).unlink()
    (x / name).write_text('{"format": "tile-emu stream golden dataset", "streams": true, "x": ' + "[" * 100_000)
    for argv in (["verify", str(x), "--quiet"], ["verify", str(x), "--quiet", "--oracle"],
                 ["golden", "--coverage", str(x)]):
        one_line(capsys, main(argv))


# ---------------------------------------------------------------------------- fuzzing

FUZZ = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
FUZZ_SLOW = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """Two shape classes of four streams each, legal and illegal: the seed of every fuzzed dataset."""
    out = tmp_path_factory.mktemp("streams-fuzz") / "small"
    _generate(out, "--blocks", "3", "--cases", "4", "--group-cases", "2", "--illegal-fraction", "0.5",
              "--shapes", "r1c8,r3c1", "--seed", "3", "--quiet")
    return out


def _tree(folder: pathlib.Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _clean_or_one_line(folder, capsys) -> None:
    """verify (both backends), --oracle, --coverage and the hex export: a clean result or one
    line with exit 1 (verify: or mismatch lines), nothing else; the dataset unchanged and a
    failed export's --out absent."""
    before = _tree(folder)
    out = folder.parent / "export-out"
    for argv in (["verify", str(folder), "--quiet", "--max-report", "1"],
                 ["verify", str(folder), "--quiet", "--max-report", "1", "--backend", "reference"],
                 ["verify", str(folder), "--quiet", "--oracle"], ["golden", "--coverage", str(folder)],
                 ["golden", "export", str(folder), "--format", "hex", "--out", str(out)]):
        rc = main(argv)
        cap = capsys.readouterr()
        assert "Traceback" not in cap.err
        assert rc in (0, 1), (argv, rc, cap.err[-1000:])
        if rc == 1:
            mismatch_lines = argv[0] == "verify" and "MISMATCH" in cap.out
            assert mismatch_lines or (cap.err.count("\n") == 1 and len(cap.err) < 600), (argv, cap.err[-1000:])
            assert not out.exists()
        shutil.rmtree(out, ignore_errors=True)
    assert _tree(folder) == before


def _fuzz_manifest(small, capsys, data):
    with tempfile.TemporaryDirectory() as tmp:
        x = shutil.copytree(small, pathlib.Path(tmp) / "x")
        name = data.draw(st.sampled_from([D.MANIFEST, D.PARAMS]))
        if data.draw(st.booleans()):
            doc = _mutate_manifest(data, json.loads((x / name).read_text()))
            (x / name).write_text(json.dumps(doc))
        else:
            raw = byte_edits(bytearray((x / name).read_bytes()), data, data.draw(st.integers(1, 4)))
            (x / name).write_bytes(bytes(raw))
        _clean_or_one_line(x, capsys)


HOSTILE_VALUES = st.one_of(
    st.none(), st.integers(0, 3), st.sampled_from([2 ** 31, 2 ** 32 - 1, 2 ** 8 - 1, 2 ** 16, -1]),
    st.binary(max_size=40), st.sampled_from(["", "commit", "fault", "legal", "illegal_source_missing", "FP16",
                                             "x" * 300, "[" * 5000]),
    st.booleans(), st.lists(st.integers(0, 255), min_size=4, max_size=4))
def _mutate_layout(data, text: str) -> str:
    """A layout text edited as JSON (values set, deleted or copied, as a fuzzed manifest is),
    or its text cut, or nested deep."""
    kind = data.draw(st.sampled_from(["json", "json", "json", "cut", "deep"]))
    if kind == "cut":
        return text[: data.draw(st.integers(0, len(text) - 1))]
    if kind == "deep":
        depth = data.draw(st.sampled_from([50, 65, 900, 990, 100_000]))
        return '{"initial":' + "[" * depth + "]" * depth + ',"records":[]}'
    return json.dumps(_mutate_manifest(data, json.loads(text)), separators=(",", ":"))


def _fuzz_data_file(small, capsys, data):
    with tempfile.TemporaryDirectory() as tmp:
        x = shutil.copytree(small, pathlib.Path(tmp) / "x")
        rel = data.draw(st.sampled_from(sorted(p.relative_to(x).as_posix() for p in x.rglob("*.parquet"))))
        path = x / rel
        kind = data.draw(st.sampled_from(["bytes", "truncate", "value", "value", "layout", "layout", "rows"]))
        if kind in ("bytes", "truncate"):
            raw = bytearray(path.read_bytes())
            if kind == "truncate":
                del raw[data.draw(st.integers(0, len(raw) - 1)):]
            else:
                byte_edits(raw, data, data.draw(st.integers(1, 6)))
            path.write_bytes(bytes(raw))
            resync(x)
        elif kind == "layout":
            texts = pq.read_table(path).column("layout").combine_chunks().dictionary.to_pylist()
            set_layout(x, rel, _mutate_layout(data, texts[0]))
        else:
            rows = pq.read_table(path).to_pylist()
            if kind == "value":
                for _ in range(data.draw(st.integers(1, 3))):
                    r = data.draw(st.sampled_from(rows))
                    r[data.draw(st.sampled_from(sorted(r)))] = data.draw(HOSTILE_VALUES)
            else:
                row_edit(rows, data)
            try:
                table = pa.Table.from_pylist(rows, schema=SD.SCHEMA)
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                return                                    # not representable in Arrow: nothing to test
            pq.write_table(table, path)
            resync(x, counts=data.draw(st.booleans()))
        _clean_or_one_line(x, capsys)


@pytest.mark.parametrize("fuzz", [_fuzz_manifest, _fuzz_data_file], ids=["manifest", "data file"])
@FUZZ
@given(data=st.data())
def test_fuzzed_stream_datasets_give_one_line_a_mismatch_or_a_clean_result(small, capsys, fuzz, data):
    fuzz(small, capsys, data)


@pytest.mark.slow
@pytest.mark.parametrize("fuzz", [_fuzz_manifest, _fuzz_data_file], ids=["manifest", "data file"])
@FUZZ_SLOW
@given(data=st.data())
def test_many_fuzzed_stream_datasets_give_one_line_a_mismatch_or_a_clean_result(small, capsys, fuzz, data):
    fuzz(small, capsys, data)
