"""Golden shards for job arrays (docs/golden-format.md, "Shards and merge"): `golden ... --shard
I/N --out part-I` writes the files j of the dataset's file list with j mod N = I, `golden merge
part-* --out D` joins them into a dataset whose every file (manifest and generation.json
included) is byte for byte the unsharded run's, and `verify` passes it.  Shards that overlap,
are missing, come from other parameters or another version, are unfinished or damaged are
refused by merge in one line naming the shard, and nothing is written."""
from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shutil

import pytest

from emulator.cli import main

KINDS = {
    "single-block": ["--ops", "TADD,TCVT", "--dtypes", "FP16", "--dst-dtypes", "FP32", "--rmodes", "RNE,RTZ",
                     "--sat", "0", "--cases", "12"],
    "streams": ["--streams", "--blocks", "2", "--cases", "3", "--group-cases", "1", "--shapes", "r1c8,r3c1,r4c8"],
}
N = 2


def _tree(folder: pathlib.Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _golden(kind, out, *extra, seed="6") -> int:
    return main(["golden", *KINDS[kind], "--seed", seed, "--quiet", "--out", str(out), *extra])


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


@pytest.fixture(scope="module", params=sorted(KINDS))
def runs(request, tmp_path_factory):
    """(kind, the unsharded dataset, its N shards)."""
    root = tmp_path_factory.mktemp("shards") / request.param
    assert _golden(request.param, root / "whole") == 0
    parts = [root / f"part-{i}" for i in range(N)]
    for i, part in enumerate(parts):
        assert _golden(request.param, part, "--shard", f"{i}/{N}") == 0
    return request.param, root / "whole", parts


def _listed(folder: pathlib.Path) -> list[str]:
    m = json.loads((folder / "manifest.json").read_text())
    return [f["path"] for p in m["partitions"] for f in p["files"]]


def test_shard_i_holds_the_files_j_with_j_mod_n_equal_to_i_byte_for_byte(runs):
    _, whole, parts = runs
    files = _listed(whole)
    assert len(files) >= 3
    for i, part in enumerate(parts):
        mine = _tree(part)
        data = sorted(k for k in mine if k.endswith(".parquet"))
        assert data == sorted(f for j, f in enumerate(files) if j % N == i)
        assert all(mine[k] == (whole / k).read_bytes() for k in data)
        assert mine["generation.json"] == (whole / "generation.json").read_bytes()
        s = json.loads(mine["shard.json"])
        assert s["shard"] == {"index": i, "count": N} and [r["path"] for r in s["files"]] == data


def test_merge_gives_the_unsharded_dataset_byte_for_byte_and_verify_passes(runs, tmp_path, capsys):
    kind, whole, parts = runs
    out = tmp_path / "merged"
    assert main(["golden", "merge", *map(str, reversed(parts)), "--out", str(out)]) == 0, capsys.readouterr().err
    assert _tree(out) == _tree(whole)
    assert main(["verify", str(out), "--quiet"]) == 0


def test_a_shard_resumed_after_an_interruption_ends_with_the_bytes_of_an_uninterrupted_one(runs, tmp_path):
    kind, _, parts = runs
    x = shutil.copytree(parts[0], tmp_path / "x")
    first = sorted(x.rglob("part-*.parquet"))[0]
    first.unlink()
    (x / "shard.json").write_text(json.dumps({**json.loads((x / "shard.json").read_text()), "files": None}))
    assert _golden(kind, x, "--shard", f"0/{N}", "--resume") == 0
    assert _tree(x) == _tree(parts[0])


def _refused(capsys, tmp_path, parts, *words, out=None, relative=False):
    """golden merge PARTS refused with one line holding `words`, nothing written; `relative`: the
    paths given relative to tmp_path (a message cuts a long path, and pytest's temporary paths
    grow with -n)."""
    out = out or tmp_path / "merged"
    before = _tree(out) if out.exists() else None
    name = (lambda p: os.path.relpath(p, tmp_path)) if relative else str
    with contextlib.chdir(tmp_path):
        rc = main(["golden", "merge", *map(name, parts), "--out", name(out)])
    err = _one_line(capsys)
    assert rc == 1, err
    for w in words:
        assert w in err, err
    assert (_tree(out) if out.exists() else None) == before          # nothing written
    return err


def test_a_missing_shard_is_named(runs, tmp_path, capsys):
    _refused(capsys, tmp_path, runs[2][:1], f"shard 1/{N} missing")


def test_overlapping_shards_are_named(runs, tmp_path, capsys):
    _, _, parts = runs
    again = shutil.copytree(parts[1], tmp_path / "again")
    _refused(capsys, tmp_path, [*parts, again], str(again), f"shard 1/{N} again", "overlap")


def test_a_shard_of_other_parameters_is_named(runs, tmp_path, capsys):
    kind, _, parts = runs
    other = tmp_path / "other"
    assert _golden(kind, other, "--shard", f"1/{N}", seed="7") == 0
    _refused(capsys, tmp_path, [parts[0], other], str(other), "other parameters")


def test_a_shard_of_another_shard_count_is_named(runs, tmp_path, capsys):
    kind, _, parts = runs
    other = tmp_path / "of3"
    assert _golden(kind, other, "--shard", "1/3") == 0
    _refused(capsys, tmp_path, [parts[0], other], str(other), "one of 3 shards")


def _edit_shard(folder: pathlib.Path, **change) -> None:
    s = json.loads((folder / "shard.json").read_text())
    s.update(change)
    (folder / "shard.json").write_text(json.dumps(s))


def test_a_shard_of_another_tile_emu_version_is_named(runs, tmp_path, capsys):
    _, _, parts = runs
    old = shutil.copytree(parts[1], tmp_path / "old")
    _edit_shard(old, tile_emu_version="0.0.1")
    _refused(capsys, tmp_path, [parts[0], old], str(old), "tile-emu '0.0.1'")


def test_an_unfinished_shard_is_named(runs, tmp_path, capsys):
    _, _, parts = runs
    half = shutil.copytree(parts[1], tmp_path / "half")
    _edit_shard(half, files=None)
    _refused(capsys, tmp_path, [parts[0], half], str(half), "unfinished", "--resume")


def test_a_damaged_data_file_is_named_with_its_shard(runs, tmp_path, capsys):
    _, _, parts = runs
    bad = shutil.copytree(parts[1], tmp_path / "bad")
    victim = sorted(bad.rglob("part-*.parquet"))[0]
    raw = bytearray(victim.read_bytes())
    raw[len(raw) // 2] ^= 0x40
    victim.write_bytes(bytes(raw))
    _refused(capsys, tmp_path, [parts[0], bad], str(bad), victim.relative_to(bad).as_posix(), "SHA-256")


def test_a_truncated_data_file_is_named_with_its_shard(runs, tmp_path, capsys):
    _, _, parts = runs
    bad = shutil.copytree(parts[0], tmp_path / "cut")
    victim = sorted(bad.rglob("part-*.parquet"))[-1]
    victim.write_bytes(victim.read_bytes()[:100])
    _refused(capsys, tmp_path, [bad, parts[1]], str(bad), "bytes, shard.json says")


def test_a_shard_lacking_a_file_or_holding_a_stray_one_is_named(runs, tmp_path, capsys):
    _, _, parts = runs
    lack = shutil.copytree(parts[0], tmp_path / "lack")
    sorted(lack.rglob("part-*.parquet"))[0].unlink()
    _refused(capsys, tmp_path, [lack, parts[1]], str(lack), "missing")
    stray = shutil.copytree(parts[0], tmp_path / "stray")
    (stray / ".part-00000.parquet.0123abcd.tmp").write_bytes(b"half")
    _refused(capsys, tmp_path, [stray, parts[1]], str(stray), ".part-00000.parquet.0123abcd.tmp")


def test_a_damaged_shard_json_is_named(runs, tmp_path, capsys):
    _, _, parts = runs
    bad = shutil.copytree(parts[1], tmp_path / "json")
    (bad / "shard.json").write_text("{\"format\": ")
    _refused(capsys, tmp_path, [parts[0], bad], "json/shard.json", "not valid JSON", relative=True)
    (bad / "shard.json").write_text(json.dumps({**json.loads((parts[1] / "shard.json").read_text()),
                                                "shard": {"index": 5, "count": N}}))
    _refused(capsys, tmp_path, [parts[0], bad], "json/shard.json", "index is not below the count", relative=True)
    (bad / "shard.json").unlink()
    _refused(capsys, tmp_path, [parts[0], bad], "not a golden shard")


def test_merge_refuses_a_non_empty_out_and_an_out_inside_a_shard(runs, tmp_path, capsys):
    _, _, parts = runs
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    _refused(capsys, tmp_path, parts, "not an empty folder", out=full)
    assert (full / "keep.txt").read_text() == "mine"
    inside = parts[0] / "merged"
    _refused(capsys, tmp_path, parts, "overlap", out=inside)
    assert not inside.exists()


@pytest.mark.parametrize("spec, words", [("0/0", "N from 1"), ("3/2", "I from 0 to N - 1 = 1"), ("1", "I/N"),
                                         ("-1/2", "I/N"), ("a/b", "I/N"), ("0/99999999", "I/N")])
def test_bad_shard_specifications_are_usage_errors(spec, words, tmp_path, capsys):
    out = tmp_path / "o"
    assert _golden("single-block", out, f"--shard={spec}") == 2
    assert words in _one_line(capsys)
    assert not out.exists()


def test_more_shards_than_data_files_is_refused(tmp_path, capsys):
    out = tmp_path / "o"
    assert _golden("single-block", out, "--shard", "0/5") == 1
    assert "the dataset has 3 data file(s)" in _one_line(capsys)
    assert not out.exists()


def test_resume_keeps_a_run_what_it_was(runs, tmp_path, capsys):
    kind, whole, parts = runs
    x = shutil.copytree(parts[0], tmp_path / "x")
    for extra, words in (([], f"holds shard 0/{N}; resume it with --shard 0/{N}"),
                         (["--shard", f"1/{N}"], f"holds shard 0/{N}, not 1/{N}")):
        assert _golden(kind, x, "--resume", *extra) == 1
        assert words in _one_line(capsys)
        assert _tree(x) == _tree(parts[0])
    y = shutil.copytree(whole, tmp_path / "y")
    assert _golden(kind, y, "--resume", "--shard", f"0/{N}") == 1
    assert "holds a run without --shard" in _one_line(capsys)
    assert _tree(y) == _tree(whole)


def test_a_shard_is_not_a_dataset_verify_says_to_merge_it(runs, capsys):
    _, _, parts = runs
    assert main(["verify", str(parts[0]), "--quiet"]) == 1
    assert "golden merge" in _one_line(capsys)


def test_golden_backend_gpu_without_a_usable_gpu_is_exit_3_and_writes_nothing(tmp_path, capsys, monkeypatch):
    from kernels import device
    monkeypatch.setattr(device, "gpu_status", lambda: (False, "no CUDA device"))
    out = tmp_path / "o"
    assert _golden("single-block", out, "--backend", "gpu") == 3
    assert "--backend gpu: no usable GPU (no CUDA device)" in _one_line(capsys)
    assert not out.exists()
