"""Hostile golden datasets and manifests, and hostile `tile-emu golden` arguments
(docs/golden-format.md, "What verify checks" and "Limits").

A dataset is self-checking: a manifest or data file that lies -- even with its checksums
updated -- is refused by `verify`, `golden --coverage` and `golden export` alike with one line
naming the file, case and field, or is a mismatch line of the replay; never a traceback, never
a pass.  The fuzz tests at the end mutate a small real dataset at random."""
from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from emulator.cli import main
from emulator.golden import dataset as D
from emulator.golden.rows import SCHEMA
from mutate import byte_edits, json_edits, row_edit

SEED = ["--seed", "5", "--quiet"]
TADD_FP32 = "op=TADD/dtype=FP32/part-00000.parquet"
EXPORT_TADD = ["--format", "testfloat", "--op", "TADD", "--dtype", "FP32"]


def generated(tmp_path_factory, tag: str, name: str, *argv, seed=SEED):
    """A golden dataset generated (quietly) from `argv` into a fresh folder: the module fixtures
    of this file and of the files that borrow its helpers."""
    out = tmp_path_factory.mktemp(tag) / name
    assert main(["golden", *argv, *seed, "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def tadd(tmp_path_factory):
    """Two partitions of TADD, every class of each at least once."""
    return generated(tmp_path_factory, "hostile", "tadd", "--ops", "TADD", "--dtypes", "FP32,FP16", "--cases", "80")


@pytest.fixture(scope="module")
def tcvt(tmp_path_factory):
    return generated(tmp_path_factory, "hostile", "tcvt", "--ops", "TCVT", "--dtypes", "FP32", "--dst-dtypes", "FP16",
                     "--rmodes", "RNE", "--sat", "0", "--cases", "60")


# ---------------------------------------------------------------------------- helpers

def copy(src, tmp_path, name="x") -> pathlib.Path:
    dst = pathlib.Path(tmp_path) / name
    shutil.copytree(src, dst)
    return dst


def manifest(folder) -> dict:
    return json.loads((folder / D.MANIFEST).read_text())


def write_manifest(folder, m) -> None:
    """Write the manifest; generation.json follows its generator, as a careful liar would."""
    (folder / D.MANIFEST).write_text(json.dumps(m))
    if isinstance(m, dict) and isinstance(m.get("generator"), dict):
        (folder / D.PARAMS).write_text(json.dumps(m["generator"]))


def resync(folder, counts: bool = False) -> None:
    """Update every file record's sha256 and bytes (and rows and classes) to the files as they are."""
    m = manifest(folder)
    for part in m["partitions"]:
        for rec in part["files"]:
            path = folder / rec["path"]
            rec["sha256"], rec["bytes"] = D.sha256(path), path.stat().st_size
            if counts:
                t = pq.read_table(path)
                rec["rows"] = len(t)
                rec["classes"] = {str(c["values"]): c["counts"]            # str: a retyped column's values too
                                  for c in t.column("class").value_counts().to_pylist()}
    write_manifest(folder, m)


def rewrite(folder, path, fn, schema=SCHEMA, counts=False) -> None:
    """Rewrite one data file's rows (a list of dicts, which fn edits in place), then resync the manifest."""
    rows = pq.read_table(folder / path).to_pylist()
    fn(rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), folder / path)
    resync(folder, counts)


def one_line(capsys, rc, *words) -> str:
    cap = capsys.readouterr()
    assert rc == 1, (rc, cap.err[-500:])
    assert cap.err.count("\n") == 1 and "Traceback" not in cap.err, cap.err[-2000:]
    assert len(cap.err) < 600, cap.err
    for w in words:
        assert w in cap.err, cap.err
    return cap.err


def refused_everywhere(folder, capsys, *words, export=EXPORT_TADD) -> str:
    """verify (and verify --oracle), --coverage and both exports each refuse the dataset in one
    line holding `words`; the exports write nothing.  The commands are given the folder's
    relative name: a message cuts a long path (pytest-xdist's base folders are longer), and the
    words may name a file inside it."""
    with contextlib.chdir(pathlib.Path(folder).parent):
        return _refused_everywhere(pathlib.Path(pathlib.Path(folder).name), capsys, *words, export=export)


def _refused_everywhere(folder, capsys, *words, export=EXPORT_TADD) -> str:
    err = one_line(capsys, main(["verify", str(folder), "--quiet"]), *words)
    one_line(capsys, main(["verify", str(folder), "--oracle", "--quiet"]), *words)
    one_line(capsys, main(["golden", "--coverage", str(folder)]), *words)
    one_line(capsys, main(["golden", "export", str(folder), *export]), *words)
    out = pathlib.Path("export-out")
    one_line(capsys, main(["golden", "export", str(folder), *export, "--out", str(out / "f.txt")]), *words)
    one_line(capsys, main(["golden", "export", str(folder), "--format", "hex", "--out", str(out / "hex")]), *words)
    assert not out.exists() or not any(out.iterdir())
    return err


def mismatch(folder, capsys, *words) -> str:
    """verify replays and reports mismatch lines holding `words` (it stops after the group of the first)."""
    assert main(["verify", str(folder), "--quiet", "--max-report", "1"]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH" in out and "np." not in out, out
    for w in words:
        assert w in out, out
    return out


def relabel(folder, **generator) -> list[D.Partition]:
    """Move each partition's files to the partition new generator parameters give it, and
    rewrite the manifest to match (keys, paths, not_applicable recomputed): a thorough liar."""
    m = manifest(folder)
    m["generator"].update(generator)
    parts = D.partitions(D.Params.from_json(m["generator"]))
    staged = folder / "staged"
    for old, new in zip(m["partitions"], parts):
        for rec in old["files"]:
            name = rec["path"].rsplit("/", 1)[1]
            (staged / new.path).mkdir(parents=True, exist_ok=True)
            os.replace(folder / rec["path"], staged / new.path / name)
            rec["path"] = f"{new.path}/{name}"
        files, holes = old["files"], old["holes"]
        old.clear()
        old.update({**new.keys(), "not_applicable": D.classes_for(new)[1], "holes": holes, "files": files})
    for d in [p for p in folder.iterdir() if p.is_dir() and p != staged]:
        shutil.rmtree(d)
    for d in staged.iterdir():
        os.replace(d, folder / d.name)
    staged.rmdir()
    write_manifest(folder, m)
    return parts


def test_the_fixtures_verify(tadd, tcvt, capsys):
    for folder in (tadd, tcvt):
        assert main(["verify", str(folder), "--quiet"]) == 0
    assert "cases match" in capsys.readouterr().out


# ---------------------------------------------------------------------------- item 3: files

def test_a_manifest_listing_no_partitions_is_refused(tadd, tmp_path, capsys):
    x = copy(tadd, tmp_path)
    m = manifest(x)
    m["partitions"] = []
    write_manifest(x, m)
    refused_everywhere(x, capsys, "manifest: 0 partition(s); its generator parameters give 2")


def test_a_partition_whose_files_are_emptied_is_refused(tadd, tmp_path, capsys):
    x = copy(tadd, tmp_path)
    m = manifest(x)
    m["partitions"][0]["files"] = []
    write_manifest(x, m)
    refused_everywhere(x, capsys, f"files lack '{TADD_FP32}'")


def test_a_file_the_manifest_does_not_list_is_named(tadd, tmp_path, capsys):
    x = copy(tadd, tmp_path)
    shutil.copy(x / TADD_FP32, x / "op=TADD/dtype=FP32/part-00001.parquet")
    refused_everywhere(x, capsys, "op=TADD/dtype=FP32/part-00001.parquet: in the dataset folder but not listed")


def test_a_listed_file_that_is_missing_is_named(tadd, tmp_path, capsys):
    x = copy(tadd, tmp_path)
    (x / TADD_FP32).unlink()
    refused_everywhere(x, capsys, f"{TADD_FP32}: listed in the manifest but missing")


@pytest.mark.parametrize("what", ["/dev/zero", "folder", "link out"])
def test_a_listed_file_that_is_not_a_regular_file_or_links_out_of_the_dataset_is_named(tadd, tmp_path, capsys, what):
    # the folder check every dataset reader runs (emulator.golden.dataset.check_listed; hex exports share it)
    x = copy(tadd, tmp_path)
    shutil.move(x / TADD_FP32, tmp_path / "outside.parquet")
    if what == "/dev/zero":
        (x / TADD_FP32).symlink_to("/dev/zero")
    elif what == "folder":
        (x / TADD_FP32).mkdir()
    else:
        (x / TADD_FP32).symlink_to(tmp_path / "outside.parquet")
    words = "a link out of the dataset folder" if what == "link out" else "listed in the manifest but a"
    refused_everywhere(x, capsys, f"{TADD_FP32}: {words}")


def test_a_stray_temporary_file_is_named_and_resume_removes_it(tadd, tmp_path, capsys):
    x = copy(tadd, tmp_path)
    stray = x / "op=TADD/dtype=FP32/.part-00000.parquet.0123abcd.tmp"
    stray.write_bytes(b"PAR1 half")
    one_line(capsys, main(["verify", str(x), "--quiet"]), ".part-00000.parquet.0123abcd.tmp: in the dataset folder")
    assert main(["golden", "--ops", "TADD", "--dtypes", "FP32,FP16", "--cases", "80", *SEED, "--out", str(x),
                 "--resume"]) == 0
    assert not stray.exists()
    assert main(["verify", str(x), "--quiet"]) == 0


# ---------------------------------------------------------------------------- item 4: partition keys

@pytest.mark.parametrize("changes, block", [
    ({"ops": ["TSUB"]}, "the block is op=TADD dtype=FP32; the partition is op=TSUB/dtype=FP32"),
    ({"dtypes": ["BF16", "FP16"]}, "the block is op=TADD dtype=FP32; the partition is op=TADD/dtype=BF16"),
])
def test_a_partition_relabelled_with_every_checksum_updated_is_refused(tadd, tmp_path, capsys, changes, block):
    x = copy(tadd, tmp_path)
    relabel(x, **changes)
    export = ["--format", "testfloat", "--op", "TADD", "--dtype", "FP16"]
    refused_everywhere(x, capsys, block, export=export)


@pytest.mark.parametrize("changes, words", [
    ({"dst_dtypes": ["FP64"]}, "dst=FP16"),
    ({"rmodes": ["RTZ"]}, "rmode=RNE"),
    ({"sat": [1]}, "sat=False"),
])
def test_a_tcvt_partition_relabelled_to_another_destination_mode_or_sat_is_refused(tcvt, tmp_path, capsys,
                                                                                   changes, words):
    x = copy(tcvt, tmp_path)
    (new,) = relabel(x, **changes)
    export = ["--format", "testfloat", "--op", "TCVT", "--dtype", "FP32", "--dst", new.dst, "--rmode", new.rmode]
    err = refused_everywhere(x, capsys, "the block is op=TCVT dtype=FP32", words, export=export)
    assert f"the partition is {new.path}" in err


# ---------------------------------------------------------------------------- item 5: stored fields

def _on_first(key, value):
    def fn(rows):
        rows[0][key] = value(rows[0][key]) if callable(value) else value
    return fn


def _class_of_row0(name):
    return _on_first("class", name)


@pytest.mark.parametrize("fn, counts, words", [
    (_on_first("asm", lambda a: a.replace("TADD", "TSUB")), False, "case 0: asm is not the stream's canonical text"),
    (_on_first("pe_mask", lambda m: m ^ 0b0100), False, "case 0: pe_mask is not the destination binding's PE_MASK"),
    (_class_of_row0("bogus"), True, "case 0: class 'bogus' is unknown"),
    (_class_of_row0("int_bounds"), True, "case 0: class 'int_bounds' is not one the partition can have"),
    (_class_of_row0("illegal_dim_zero"), True, "case 0: class illegal_dim_zero expects reject with DIM_ZERO"),
    (lambda rows: rows[1].update(case=rows[0]["case"]), False, "row 1 holds case 0; this file holds cases 0 to 79"),
    (lambda rows: [rows.append(rows.pop(0))], False, "row 0 holds case 1"),
    (_on_first("outcome", "reject"), False, "case 0: class random expects commit"),
])
def test_a_lying_row_with_its_checksums_updated_is_refused(tadd, tmp_path, capsys, fn, counts, words):
    x = copy(tadd, tmp_path)
    rewrite(x, TADD_FP32, fn, counts=counts)
    refused_everywhere(x, capsys, TADD_FP32, words)


def _move_count(classes, a, b):
    classes[a] -= 1
    classes[b] += 1


def _swap_files(p, q):
    p["files"], q["files"] = q["files"], p["files"]


@pytest.mark.parametrize("edit, words", [
    (lambda m: _move_count(m["partitions"][0]["files"][0]["classes"], "random", "specials"),
     "class 'random': "),
    (lambda m: m["partitions"][0]["not_applicable"].append("random"),
     "not_applicable lists random, which the class table applies"),
    (lambda m: m["partitions"][0]["not_applicable"].remove("fma_straddle"),
     "not_applicable omits fma_straddle, which cannot occur there"),
    (lambda m: m["partitions"][0]["files"][0].update(bytes=m["partitions"][0]["files"][0]["bytes"] + 1),
     "bytes, the manifest says"),
    (lambda m: m["generator"].update(cases=81), "the generator parameters give 81 rows, the manifest says 80"),
    (lambda m: m.update(format_version=True), f"not a tile-emu golden dataset version {D.FORMAT_VERSION} manifest"),
    (lambda m: m.update(format_version=float(D.FORMAT_VERSION)),
     f"not a tile-emu golden dataset version {D.FORMAT_VERSION} manifest"),
    (lambda m: m["partitions"].reverse(), "manifest: partitions[0] has keys"),
    (lambda m: _swap_files(*m["partitions"]),
     "manifest: op=TADD/dtype=FP32: files lack 'op=TADD/dtype=FP32/part-00000.parquet'"),
    (lambda m: m["generator"].update(profile="ftz"), "generator profile 'ftz' is not the recorded profile ieee"),
    (lambda m: m["generator"].update(profile="tile-emu golden dataset"),       # no profile at all (was UnknownProfile)
     "generator profile 'tile-emu golden dataset' is not the recorded profile ieee"),
    (lambda m: m["generator"].update(chunk_cases=0), "generator.chunk_cases: 0 is less than the minimum of 1"),
    (lambda m: m["generator"].update(ops=["TADD", "TADD"]),
     "manifest: generator: --ops: 'TADD' is listed more than once"),
    (lambda m: m.update(comment="hi"), "Additional properties are not allowed ('comment' was unexpected)"),
    (lambda m: m["partitions"][0]["files"][0].update(rows=True), "files[0].rows: True is not a non-negative integer"),
])
def test_a_lying_manifest_is_refused(tadd, tmp_path, capsys, edit, words):
    x = copy(tadd, tmp_path)
    m = manifest(x)
    edit(m)
    write_manifest(x, m)
    refused_everywhere(x, capsys, words)


def test_a_manifest_larger_than_the_limit_is_refused_before_it_is_read(tadd, tmp_path, capsys, monkeypatch):
    x = copy(tadd, tmp_path)
    monkeypatch.setattr(D, "MAX_MANIFEST_BYTES", 1000)
    refused_everywhere(x, capsys, "manifest.json: ", "bytes; a manifest holds at most 1,000")


def test_a_generation_json_of_other_parameters_is_refused(tadd, tmp_path, capsys):
    x = copy(tadd, tmp_path)
    g = manifest(x)["generator"]
    (x / D.PARAMS).write_text(json.dumps({**g, "seed": 6}))
    refused_everywhere(x, capsys, "generation.json: other parameters than the manifest's generator")


def test_a_retyped_case_column_is_refused(tadd, tmp_path, capsys):
    x = copy(tadd, tmp_path)
    schema = SCHEMA.set(0, pa.field("case", pa.int64()))
    rewrite(x, TADD_FP32, lambda rows: None, schema=schema)
    refused_everywhere(x, capsys, TADD_FP32, "columns or column types differ from the golden schema")


def test_a_null_anywhere_is_refused(tadd, tmp_path, capsys):
    x = copy(tadd, tmp_path)
    rewrite(x, TADD_FP32, lambda rows: rows[3]["inputs"][0].update(payload=None))
    refused_everywhere(x, capsys, "column inputs.payload holds a null")


def _mutate_output(field, value, entry=0, cls="random"):
    def fn(rows):
        r = next(r for r in rows if r["class"] == cls)
        r["outputs"][entry][field] = value(r["outputs"][entry][field])
    return fn


@pytest.mark.parametrize("fn, words", [
    (_mutate_output("status", lambda s: s ^ 0x10), "outputs.status (entry 0): expected"),
    (_mutate_output("ValidRow", lambda v: v - 1, entry=3, cls="all_pes"),
     "outputs.ValidRow (entry 3): expected 1, got 2"),
    (_mutate_output("pe", lambda v: 3), "outputs.pe (entry 0): expected 3, got 0"),
    (lambda rows: rows[0].update(message="all fine"), "case 0: message: expected 'all fine', got ''"),
    (lambda rows: rows[0].update(gprs=[{"pe": 0, "index": 5, "value": 0}]), "case 0: gprs: expected 1 entries, got 0"),
    (lambda rows: rows[0]["status"].__setitem__(3, 1), "case 0: status: expected ["),
])
def test_a_lying_replayed_field_is_a_mismatch_line(tadd, tmp_path, capsys, fn, words):
    """Fields the replay recomputes: every field of every output entry, the message, the GPR
    list (exactly the nonzero GPRs), the status."""
    x = copy(tadd, tmp_path)
    rewrite(x, TADD_FP32, fn)
    mismatch(x, capsys, words)


def test_an_outcome_mismatch_names_both_outcomes_in_plain_words(tadd, tmp_path, capsys):
    """The cosmetic item: no np.True_ in a mismatch line.  An input element undefined inside the
    valid rectangle makes a committed case reject on replay."""
    x = copy(tadd, tmp_path)

    def undefine(rows):
        r = next(r for r in rows if r["class"] == "random")
        r["inputs"][0]["defined"] = bytes(len(r["inputs"][0]["defined"]))
    rewrite(x, TADD_FP32, undefine)
    mismatch(x, capsys, "case 0: outcome: expected 'commit', got 'reject'")


# ---------------------------------------------------------------------------- items 8, 9, 11

@pytest.mark.parametrize("edit, words", [
    (lambda m: m.update(partitions=None), "partitions: None is not of type 'array'"),
    (lambda m: m.pop("partitions"), "'partitions' is a required property"),
    (lambda m: m["partitions"][0].pop("files"), "partitions[0]: 'files' is a required property"),
    (lambda m: m["partitions"][0].update(files=None), "partitions[0].files: None is not of type 'array'"),
    (lambda m: m["partitions"][1]["files"][0].pop("sha256"), "'sha256' is a required property"),
    (lambda m: m["partitions"][0]["files"].append(7), "files[1]: 7 is not of type 'object'"),
])
def test_a_manifest_missing_its_structure_is_one_line(tadd, tmp_path, capsys, edit, words):
    x = copy(tadd, tmp_path)
    m = manifest(x)
    edit(m)
    write_manifest(x, m)
    refused_everywhere(x, capsys, "manifest.json", words)


def test_a_zero_row_data_file_with_a_matching_manifest_is_one_line(tadd, tmp_path, capsys):
    x = copy(tadd, tmp_path)
    rewrite(x, TADD_FP32, lambda rows: rows.clear(), counts=True)
    refused_everywhere(x, capsys, "the generator parameters give 80 rows, the manifest says 0")


def test_an_input_tile_of_2_31_rows_is_one_line_in_export_and_a_mismatch_in_verify(tadd, tmp_path, capsys):
    x = copy(tadd, tmp_path)
    rewrite(x, TADD_FP32, lambda rows: [t.update(Row=2 ** 31) for r in rows for t in r["inputs"]])
    one_line(capsys, main(["golden", "export", str(x), *EXPORT_TADD]), f"{TADD_FP32}: case 0: a malformed row")
    mismatch(x, capsys, f"{TADD_FP32}: case 0: inputs: expected well-formed tiles, got a malformed row")
    _other_consumers_refuse(x, tmp_path, capsys, f"{TADD_FP32}: case 0: a malformed row")


def _other_consumers_refuse(x, tmp_path, capsys, words):
    """The hex export (into a new or an empty folder) and verify --oracle refuse what verify
    refuses, and the export leaves its --out as it found it."""
    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "new", tmp_path / "empty"):
        one_line(capsys, main(["golden", "export", str(x), "--format", "hex", "--out", str(out)]), words)
    assert not (tmp_path / "new").exists() and not any((tmp_path / "empty").iterdir())
    one_line(capsys, main(["verify", str(x), "--oracle", "--quiet"]), words)


def test_feature_map_parameters_without_a_layout_are_one_line_in_export_and_verify(tadd, tmp_path, capsys):
    x = copy(tadd, tmp_path)
    rewrite(x, TADD_FP32, lambda rows: [t.update(fmap_params=[1] * 17) for r in rows for t in r["inputs"]])
    words = f"{TADD_FP32}: case 0: inputs: fmap_params, fmap_pad_bits or fmap_transposed set without fmap_layout"
    one_line(capsys, main(["golden", "export", str(x), *EXPORT_TADD]), words)
    one_line(capsys, main(["verify", str(x), "--quiet"]), words)
    _other_consumers_refuse(x, tmp_path, capsys, words)


# ---------------------------------------------------------------------------- generation arguments

def _gen(tmp_path, *argv, out="o"):
    return main(["golden", *argv, "--quiet", "--out", str(tmp_path / out)])


@pytest.mark.parametrize("argv, words", [
    (["--ops", "TADD,TADD", "--dtypes", "FP32"], "--ops: 'TADD' is listed more than once"),
    (["--ops", "tadd,TADD", "--dtypes", "FP32"], "--ops: 'TADD' is listed more than once"),
    (["--ops", "TADD", "--dtypes", "FP32,fp32"], "--dtypes: 'FP32' is listed more than once"),
    (["--ops", "TCVT", "--dtypes", "FP32", "--rmodes", "RNE,rne"], "--rmodes: 'RNE' is listed more than once"),
    (["--ops", "TCVT", "--dtypes", "FP32", "--sat", "0,0"], "--sat: '0' is listed more than once"),
])
def test_a_repeated_name_is_one_line_before_anything_is_written(tmp_path, capsys, argv, words):
    one_line(capsys, _gen(tmp_path, *argv, "--cases", "5"), words)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("out", ["/proc/tile-emu-golden", "afile/sub"])
def test_an_out_folder_that_cannot_be_created_is_one_line(tmp_path, capsys, monkeypatch, out):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("a file")
    rc = main(["golden", "--ops", "TADD", "--dtypes", "FP32", "--cases", "5", "--quiet", "--out", out])
    one_line(capsys, rc, "cannot create the folder")


@pytest.mark.parametrize("cases, status, words", [
    (2 ** 63, 2, "--cases 9223372036854775808: at most 4,294,967,296 (2^32) cases per partition"),
    (2 ** 40, 2, "at most 4,294,967,296"),
])
def test_an_unbounded_case_count_is_refused_before_any_work(tmp_path, capsys, cases, status, words):
    rc = _gen(tmp_path, "--ops", "TADD", "--dtypes", "FP32", "--cases", str(cases))
    err = capsys.readouterr().err
    assert rc == status and err.count("\n") == 1 and words in err
    assert not (tmp_path / "o").exists()


def test_a_run_of_more_data_files_than_a_dataset_holds_is_refused_before_any_work(tmp_path, capsys):
    """TCVT over 3 DataTypes: 3 sources x 3 destinations x 8 RMODEs x 2 Sat = 144 partitions;
    2^27 cases each are 2,048 files each, 294,912 in all."""
    rc = _gen(tmp_path, "--ops", "TCVT", "--dtypes", "FP32,FP16,BF16", "--cases", str(2 ** 27))
    one_line(capsys, rc, "144 partition(s) x 134,217,728 cases need 294,912 data files of at most 65,536 cases; "
             "a dataset holds at most 65,536 files")
    assert not (tmp_path / "o").exists()


def test_the_chunk_plan_is_lazy():
    p = D.Params(ops=("TADD",), dtypes=("FP32",), cases=D.MAX_CASES, seed=0)
    plan = D.chunks(p)
    assert len(plan) == D.MAX_FILES
    first = next(iter(plan))
    assert first[1:] == (0, D.CHUNK_CASES)
    *_, last = plan
    assert last[1] == D.MAX_FILES - 1


@pytest.mark.parametrize("workers", [100_000, 2 ** 31])
def test_an_unbounded_worker_count_is_refused_before_a_cluster_starts(tmp_path, capsys, monkeypatch, workers):
    distributed = pytest.importorskip("distributed")

    def no_cluster(*a, **k):
        raise AssertionError("a cluster was started")
    monkeypatch.setattr(distributed, "LocalCluster", no_cluster)
    rc = _gen(tmp_path, "--ops", "TADD", "--dtypes", "FP32", "--cases", "5", "--workers", str(workers))
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and f"--workers {workers}: at most " in err
    assert not (tmp_path / "o").exists()


def test_a_testfloat_export_to_out_is_the_stdout_text_written_whole(tadd, tmp_path, capsysbinary):
    assert main(["golden", "export", str(tadd), *EXPORT_TADD]) == 0
    stdout = capsysbinary.readouterr().out
    assert main(["golden", "export", str(tadd), *EXPORT_TADD, "--out", str(tmp_path / "f.txt")]) == 0
    assert capsysbinary.readouterr().out == b"" and (tmp_path / "f.txt").read_bytes() == stdout
    assert stdout.count(b"\n") > 100


@pytest.mark.parametrize("fmt, out", [("testfloat", "f.txt"), ("hex", "hex"), ("hex", "."), ("testfloat", "op=TADD")])
def test_an_export_into_its_own_dataset_folder_is_a_usage_error_and_writes_nothing(tadd, tmp_path, capsys, fmt, out):
    """Output in the dataset folder: that folder would hold a file its manifest does not list."""
    folder = copy(tadd, tmp_path)
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    argv = ["golden", "export", str(folder), "--format", fmt, "--op", "TADD", "--dtype", "FP32",
            "--out", str(folder / out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lies in the dataset folder" in err
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == before
    assert main(["verify", str(folder), "--quiet"]) == 0


@pytest.mark.parametrize("address", ["garbage", "tcp://", "tcp://host:notaport"])
def test_a_scheduler_address_that_is_no_address_is_one_line(tmp_path, capsys, address):
    pytest.importorskip("distributed")
    rc = _gen(tmp_path, "--ops", "TADD", "--dtypes", "FP32", "--cases", "5", "--scheduler", address)
    err = one_line(capsys, rc, f"--scheduler '{address}'")
    assert "not a Dask scheduler address" in err or "no Dask scheduler answered" in err


def test_a_data_file_write_over_the_file_size_limit_is_one_line_and_resume_recovers(tmp_path):
    """`prlimit --fsize`: the write fails with EFBIG (Python ignores SIGXFSZ)."""
    out = tmp_path / "ds"
    argv = ["golden", "--ops", "TADD", "--dtypes", "FP32", "--cases", "400", *SEED, "--out", str(out)]
    r = subprocess.run(["prlimit", "--fsize=8000", sys.executable, "-m", "emulator.cli", *argv],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert r.stderr.count("\n") == 1 and "cannot write (File too large)" in r.stderr, r.stderr
    assert not [p for p in out.rglob("*") if p.suffix in (".tmp", ".parquet")]
    assert main([*argv, "--resume"]) == 0
    assert main(["verify", str(out), "--quiet"]) == 0


# ---------------------------------------------------------------------------- fuzzing

FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
FUZZ_SLOW = settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """One small partition, every class once or twice: the seed of every fuzzed dataset."""
    return generated(tmp_path_factory, "fuzz", "small", "--ops", "TADD", "--dtypes", "FP32", "--cases", "50")


def _clean_or_one_line(folder, capsys) -> None:
    """verify, --coverage and export: a clean result or one line with exit 1, nothing else."""
    for argv in (["verify", str(folder), "--quiet", "--max-report", "1"], ["golden", "--coverage", str(folder)],
                 ["golden", "export", str(folder), *EXPORT_TADD]):
        rc = main(argv)
        cap = capsys.readouterr()
        assert "Traceback" not in cap.err
        assert rc in (0, 1), (argv[0], rc, cap.err[-1000:])
        if rc == 1:
            mismatch_lines = argv[0] == "verify" and "MISMATCH" in cap.out
            assert mismatch_lines or (cap.err.count("\n") == 1 and len(cap.err) < 600), (argv[0], cap.err[-1000:])
        elif argv[0] == "verify":
            assert "cases match" in cap.out


HOSTILE_JSON = st.one_of(
    st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.floats(allow_nan=False), st.text(max_size=20),
    st.sampled_from(["FP32", "TADD", "ieee", "ftz", "RNE", "random", "op=TADD/dtype=FP32/part-00000.parquet",
                     "../manifest.json", "0" * 64, "1.0"]),
    st.lists(st.integers(0, 3), max_size=3), st.just({}), st.just([]))


def _mutate_manifest(data, m):
    return json_edits(m, data, HOSTILE_JSON)


def _fuzz_manifest(small, capsys, data):
    with tempfile.TemporaryDirectory() as tmp:
        x = copy(small, tmp)
        if data.draw(st.booleans()):
            write_manifest(x, _mutate_manifest(data, manifest(x)))
        else:
            raw = byte_edits(bytearray((x / D.MANIFEST).read_bytes()), data, data.draw(st.integers(1, 4)))
            (x / D.MANIFEST).write_bytes(bytes(raw))
        _clean_or_one_line(x, capsys)




HOSTILE_VALUES = st.one_of(
    st.none(), st.integers(0, 3), st.sampled_from([2 ** 31, 2 ** 32 - 1, 2 ** 8 - 1, 2 ** 64 - 1, 2 ** 16]),
    st.binary(max_size=40), st.sampled_from(["", "commit", "reject", "FP16", "S8", "Matrix", "predicate",
                                             "NC1HWC0", "illegal_dim_zero", "zeros", "x" * 300]),
    st.booleans(), st.lists(st.integers(-2, 70), max_size=18))


def _set_value(rows, data):
    """Set one field (top-level, or of one list entry) of one row to a hostile value."""
    r = data.draw(st.sampled_from(rows))
    key = data.draw(st.sampled_from(sorted(r)))
    target, name = r, key
    if isinstance(r[key], list) and r[key] and isinstance(r[key][0], dict):
        target = data.draw(st.sampled_from(r[key]))
        name = data.draw(st.sampled_from(sorted(target)))
    elif isinstance(r[key], list) and r[key]:
        target, name = r[key], data.draw(st.integers(0, len(r[key]) - 1))
    target[name] = data.draw(HOSTILE_VALUES)


def _fuzz_data_file(small, capsys, data):
    with tempfile.TemporaryDirectory() as tmp:
        x = copy(small, tmp)
        path = x / TADD_FP32
        kind = data.draw(st.sampled_from(["bytes", "value", "value", "rows", "type", "truncate"]))
        if kind in ("bytes", "truncate"):
            raw = bytearray(path.read_bytes())
            if kind == "truncate":
                del raw[data.draw(st.integers(0, len(raw) - 1)):]
            for _ in range(data.draw(st.integers(1, 6)) if kind == "bytes" else 0):
                raw[data.draw(st.integers(0, len(raw) - 1))] ^= data.draw(st.integers(1, 255))
            path.write_bytes(bytes(raw))
            resync(x)
        else:
            rows = pq.read_table(path).to_pylist()
            schema = SCHEMA
            if kind == "value":
                for _ in range(data.draw(st.integers(1, 3))):
                    _set_value(rows, data)
            elif kind == "rows":
                row_edit(rows, data)
            else:
                i = data.draw(st.integers(0, len(SCHEMA) - 1))
                typ = data.draw(st.sampled_from([pa.int64(), pa.string(), pa.uint8(), pa.binary()]))
                schema = SCHEMA.set(i, pa.field(SCHEMA.field(i).name, typ))
            try:
                table = pa.Table.from_pylist(rows, schema=schema)
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                return                                    # not representable in Arrow: nothing to test
            pq.write_table(table, path)
            resync(x, counts=data.draw(st.booleans()))
        _clean_or_one_line(x, capsys)


FUZZERS = {"manifest": _fuzz_manifest, "data file": _fuzz_data_file}


@pytest.mark.parametrize("kind", sorted(FUZZERS))
@FUZZ
@given(data=st.data())
def test_fuzzed_manifests_and_data_files_give_one_line_a_mismatch_or_a_clean_result(small, capsys, kind, data):
    FUZZERS[kind](small, capsys, data)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(FUZZERS))
@FUZZ_SLOW
@given(data=st.data())
def test_many_fuzzed_manifests_and_data_files_give_one_line_a_mismatch_or_a_clean_result(small, capsys, kind, data):
    FUZZERS[kind](small, capsys, data)
