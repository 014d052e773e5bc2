"""Hostile hex exports of both kinds -- single-block (`golden export D --format hex`) and stream
(`golden export STREAMS --format hex`) -- as `tile-emu verify H` meets them (docs/golden-format.md,
"Hex export" and "Hex export of stream datasets").

An export's manifest is checked, not trusted: a partition path outside the export (`..`, an
absolute path, a link out), a count or size that is not the files' (`bytes`, `lines`, `cases`),
keys, widths or a file list that are not the partition's, a file the manifest does not list, a
listed file that is missing or not a regular file: each is one line naming the file and what is
wrong, exit 1, at once (no read of a FIFO or of /dev/zero, no read past the manifest's size).
The fuzz tests at the end mutate small real exports of both kinds at random."""
from __future__ import annotations

import contextlib
import json
import os
import pathlib
import resource
import shutil
import subprocess
import sys
import tempfile
import zlib

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from emulator.cli import main
from emulator.golden import hexport as H
from mutate import byte_edits, json_edits

ROOT = pathlib.Path(__file__).resolve().parents[2]
PART = {"single": "op=TADD/dtype=FP16", "stream": "blocks=2/shape=r4c8"}
INDEX = {"single": ("cases.txt",), "stream": ("cases.txt", "tiles.txt", "records.txt")}
DATA = {"single": "left.hex", "stream": "commit.hex"}


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """One small export of each kind."""
    root = tmp_path_factory.mktemp("hexhostile")
    assert main(["golden", "--ops", "TADD,TCVT", "--dtypes", "FP16", "--dst-dtypes", "FP32", "--rmodes", "RNE",
                 "--sat", "0", "--cases", "12", "--seed", "2", "--quiet", "--out", str(root / "d")]) == 0
    assert main(["golden", "export", str(root / "d"), "--format", "hex", "--out", str(root / "single")]) == 0
    assert main(["golden", "--streams", "--blocks", "2", "--shapes", "r1c8,r4c8", "--cases", "6", "--seed", "5",
                 "--quiet", "--out", str(root / "s")]) == 0
    assert main(["golden", "export", str(root / "s"), "--format", "hex", "--out", str(root / "stream")]) == 0
    return root


def fresh(exports, kind, tmp_path) -> tuple[pathlib.Path, pathlib.Path]:
    """A copy of the `kind` export (its folder, its partition PART[kind])."""
    h = tmp_path / "h"
    shutil.copytree(exports / kind, h)
    return h, h / PART[kind]


def manifest(h) -> dict:
    return json.loads((h / "manifest.json").read_text())


def write_manifest(h, m) -> None:
    (h / "manifest.json").write_text(json.dumps(m, indent=1, sort_keys=True))


def entry(m, kind) -> dict:
    return next(p for p in m["partitions"] if p["path"] == PART[kind])


def refused(h, capsys, *words) -> str:
    """verify H: exit 1, one line on stderr holding every one of `words`.  H is named by its short
    relative name: a message cuts a long path, and pytest's temporary paths grow with -n."""
    with contextlib.chdir(h.parent):
        rc = main(["verify", h.name])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert "Traceback" not in err and err.count("\n") == 1 and len(err) < 600, err
    for w in words:
        assert w in err, (w, err)
    return err


def resync(h, kind, rel: str) -> None:
    """Update the manifest's record of file `rel` (bytes, lines, sha256) to the file as it is."""
    m = manifest(h)
    part, name = rel.rsplit("/", 1)
    rec = next(p for p in m["partitions"] if p["path"] == part)["files"][name]
    raw = (h / rel).read_bytes()
    rec.update(bytes=len(raw), sha256=H.hashlib.sha256(raw).hexdigest(),
               lines=raw.count(b"\n") - (name in INDEX[kind]))
    write_manifest(h, m)


@pytest.mark.parametrize("kind", sorted(PART))
def test_the_fixtures_verify(exports, kind, capsys):
    assert main(["verify", str(exports / kind)]) == 0
    assert "export intact" in capsys.readouterr().out


# ---------------------------------------------------------------------------- paths

@pytest.mark.parametrize("kind", sorted(PART))
@pytest.mark.parametrize("form", ["relative", "absolute"])
def test_a_partition_path_out_of_the_export_is_refused_with_its_own_folder_deleted(exports, kind, form, tmp_path,
                                                                                     capsys):
    h, part = fresh(exports, kind, tmp_path)
    elsewhere = tmp_path / "elsewhere" / PART[kind]
    shutil.copytree(part, elsewhere)
    shutil.rmtree(part)
    m = manifest(h)
    entry(m, kind)["path"] = f"../elsewhere/{PART[kind]}" if form == "relative" else str(elsewhere)
    write_manifest(h, m)
    refused(h, capsys, "manifest.json: partitions[", ".path", "is not a path inside the export")


@pytest.mark.parametrize("kind", sorted(PART))
def test_a_partition_folder_linked_out_of_the_export_is_refused(exports, kind, tmp_path, capsys):
    h, part = fresh(exports, kind, tmp_path)
    shutil.move(part, tmp_path / "outside")
    part.symlink_to(tmp_path / "outside", target_is_directory=True)
    refused(h, capsys, ".path", "leads out of the export through a link")


@pytest.mark.parametrize("kind", sorted(PART))
def test_a_listed_file_linked_out_of_the_export_is_refused(exports, kind, tmp_path, capsys):
    h, part = fresh(exports, kind, tmp_path)
    shutil.move(part / DATA[kind], tmp_path / "outside.hex")       # the same bytes, outside H
    (part / DATA[kind]).symlink_to(tmp_path / "outside.hex")
    refused(h, capsys, f"{PART[kind]}/{DATA[kind]}: a link out of the export folder")


@pytest.mark.parametrize("kind", sorted(PART))
def test_a_deleted_partition_folder_is_named(exports, kind, tmp_path, capsys):
    h, part = fresh(exports, kind, tmp_path)
    shutil.rmtree(part)
    refused(h, capsys, f"{PART[kind]}/", "listed in the manifest but missing")


@pytest.mark.parametrize("kind", sorted(PART))
@pytest.mark.parametrize("where", ["partition", "top"])
def test_a_file_the_manifest_does_not_list_is_refused(exports, kind, where, tmp_path, capsys):
    h, part = fresh(exports, kind, tmp_path)
    (part if where == "partition" else h).joinpath("notes.txt").write_text("hello\n")
    err = refused(h, capsys, "notes.txt: in the export folder but not listed in the manifest")
    assert "more)" not in err


# ---------------------------------------------------------------------------- counts and sizes

COUNTS = [  # (kind, the manifest member, its path below the partition entry)
    ("single", "stream.hex bytes", ("files", "stream.hex", "bytes")),
    ("stream", "stream.hex bytes", ("files", "stream.hex", "bytes")),
    ("single", "left.hex lines", ("files", "left.hex", "lines")),
    ("stream", "commit.hex lines", ("files", "commit.hex", "lines")),
    ("single", "cases.txt lines", ("files", "cases.txt", "lines")),
    ("stream", "records.txt lines", ("files", "records.txt", "lines")),
    ("single", "cases", ("cases",)),
    ("stream", "cases", ("cases",)),
]


@pytest.mark.parametrize("kind,what,path", COUNTS, ids=[f"{k}-{w}" for k, w, _ in COUNTS])
@pytest.mark.parametrize("value", [2 ** 40, "minus one"])
def test_every_count_and_size_in_the_manifest_is_compared_with_the_files(exports, kind, what, path, value, tmp_path,
                                                                         capsys):
    h, _ = fresh(exports, kind, tmp_path)
    m = manifest(h)
    target = entry(m, kind)
    for k in path[:-1]:
        target = target[k]
    target[path[-1]] = target[path[-1]] - 1 if value == "minus one" else value
    write_manifest(h, m)
    file = path[1] if path[0] == "files" else "cases.txt"
    refused(h, capsys, f"{PART[kind]}/{file}", "the manifest says")


LIES = [  # (kind, what, a change of the partition entry)
    ("single", "dtype", lambda e: e.update(dtype="FP32")),
    ("single", "op", lambda e: e.update(op="TSUB")),
    ("single", "sat on TADD", lambda e: e.update(sat=False)),
    ("single", "roles", lambda e: e["roles"]["dst"].update(bits=32)),
    ("single", "digits", lambda e: e["files"]["dst.hex"].update(digits=8)),
    ("single", "a file fewer", lambda e: e["files"].pop("right.def.hex")),
    ("single", "a file more", lambda e: e["files"].update({"notes.txt": e["files"]["status.hex"]})),
    ("stream", "shape", lambda e: e.update(shape="r1c8")),
    ("stream", "blocks", lambda e: e.update(blocks=3)),
    ("stream", "an unknown shape", lambda e: e.update(shape="r9c9")),
    ("stream", "a file fewer", lambda e: e["files"].pop("gprs.hex")),
]


@pytest.mark.parametrize("kind,what,change", LIES, ids=[f"{k}-{w}" for k, w, _ in LIES])
def test_keys_widths_and_files_that_are_not_the_partitions_are_refused(exports, kind, what, change, tmp_path,
                                                                      capsys):
    h, _ = fresh(exports, kind, tmp_path)
    m = manifest(h)
    change(entry(m, kind))
    write_manifest(h, m)
    refused(h, capsys, "manifest.json: partitions[")


@pytest.mark.parametrize("kind", sorted(PART))
def test_a_partition_listed_twice_is_refused(exports, kind, tmp_path, capsys):
    h, _ = fresh(exports, kind, tmp_path)
    m = manifest(h)
    m["partitions"].append(entry(m, kind))
    write_manifest(h, m)
    refused(h, capsys, "is listed twice")


def _relabel(h, rel, row, edit) -> None:
    """Rewrite line `row` of index file `rel` by edit(fields) and give it a matching checksum: a
    lie no checksum catches."""
    p = h / rel
    lines = p.read_text().split("\n")
    k = _crcs(h, rel)
    f = lines[row].split(" ")
    body, crcs = edit(f[:-k]), f[-k:]
    crcs[0] = format(zlib.crc32(" ".join(body).encode()), "08x")
    lines[row] = " ".join(body + crcs)
    p.write_text("\n".join(lines))


def _crcs(h, rel) -> int:
    """The number of checksum columns of index file `rel`."""
    head = (h / rel).read_text().split("\n", 1)[0][2:].split(" ")
    return sum(c.startswith("crc_") for c in head)


def _set(cols_of, name, value):
    def edit(f):
        f[cols_of.index(name)] = str(value)
        return f
    return edit


@pytest.mark.parametrize("kind,rel,row,column,value,words", [
    ("single", "cases.txt", 3, "dst_n", 7, "dst_n 7 is not dst_row x dst_col"),
    ("single", "cases.txt", 3, "case", 9, "expected case 2"),
    ("single", "cases.txt", 3, "outcome", "maybe", "outcome maybe is not commit or reject"),
    ("stream", "tiles.txt", 2, "digits", 3, "are not those of a"),
    ("stream", "tiles.txt", 2, "n", 31, "are not those of a"),
    ("stream", "cases.txt", 2, "case", 0, "expected case 1"),
])
def test_an_index_line_that_lies_with_its_checksum_updated_is_refused(exports, tmp_path, capsys, kind, rel, row, column,
                                                                      value, words):
    h, _ = fresh(exports, kind, tmp_path)
    rel = f"{PART[kind]}/{rel}"
    cols = (h / rel).read_text().split("\n", 1)[0][2:].split(" ")
    _relabel(h, rel, row, _set(cols, column, value))
    resync(h, kind, rel)
    refused(h, capsys, words)


# ---------------------------------------------------------------------------- file kinds

def _verify_in_a_process(h) -> subprocess.CompletedProcess:
    """verify H in a child process limited to 60 s and 4 GiB of address space: a checker that
    reads a FIFO or /dev/zero fails the test instead of hanging it or exhausting the machine."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        return subprocess.run([sys.executable, "-m", "emulator.cli", "verify", str(h)], capture_output=True,
                              text=True, timeout=60, env=env, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        pytest.fail("verify did not answer within 60 s")


@pytest.mark.parametrize("kind", sorted(PART))
@pytest.mark.parametrize("what", ["/dev/zero", "fifo", "folder"])
def test_a_listed_file_that_is_not_a_regular_file_is_refused_at_once(exports, kind, what, tmp_path):
    h, part = fresh(exports, kind, tmp_path)
    f = part / "stream.hex"
    f.unlink()
    if what == "/dev/zero":
        f.symlink_to("/dev/zero")
    elif what == "fifo":
        os.mkfifo(f)
    else:
        f.mkdir()
    done = _verify_in_a_process(h)
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert f"{PART[kind]}/stream.hex: listed in the manifest but" in done.stderr
    assert "not a regular file" in done.stderr


@pytest.mark.parametrize("kind", sorted(PART))
@pytest.mark.parametrize("name", ["manifest.json", "generation.json"])
def test_a_manifest_that_is_a_fifo_is_refused_at_once(exports, kind, name, tmp_path):
    """verify H never waits on a FIFO named like a manifest: not in telling the export and dataset
    kinds apart, not in reading the manifest."""
    h, _ = fresh(exports, kind, tmp_path)
    (h / name).unlink(missing_ok=True)
    os.mkfifo(h / name)
    done = _verify_in_a_process(h)
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]


@pytest.mark.parametrize("kind", sorted(PART))
def test_a_file_replaced_by_a_fifo_after_the_folder_check_is_refused_without_waiting(exports, kind, tmp_path, capsys,
                                                                                     monkeypatch):
    # the reader opens without blocking and looks at what it opened (a race with the folder walk)
    h, part = fresh(exports, kind, tmp_path)
    real = H.check_listed

    def walk_then_swap(*args):
        real(*args)
        (part / "gprs.hex" if kind == "stream" else part / "status.hex").unlink()
        os.mkfifo(part / "gprs.hex" if kind == "stream" else part / "status.hex")
    monkeypatch.setattr(H, "check_listed", walk_then_swap)
    refused(h, capsys, "a FIFO, not a regular file")


@pytest.mark.parametrize("kind", sorted(PART))
def test_the_checker_reads_every_file_in_bounded_blocks_and_never_past_its_size(exports, kind, tmp_path, capsys,
                                                                               monkeypatch):
    reads = []
    real = H.open_regular

    class Spy:
        def __init__(self, f, label):
            self.f, self.label = f, label

        def read(self, n=-1):
            reads.append((self.label, n))
            return self.f.read(n)

        def fileno(self):
            return self.f.fileno()

        def close(self):
            self.f.close()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    monkeypatch.setattr(H, "open_regular", lambda path, label: Spy(real(path, label), label))
    monkeypatch.setattr(H, "READ_BYTES", 64)
    assert main(["verify", str(exports / kind)]) == 0
    capsys.readouterr()
    files = [(label, n) for label, n in reads if "manifest.json" not in label]
    assert files and all(0 <= n <= 64 for _, n in files)
    # a file longer than its manifest says is read only as far as that
    h, part = fresh(exports, kind, tmp_path)
    with open(part / "stream.hex", "ab") as f:
        f.write(b"0" * 16 + b"\n")
    reads.clear()
    refused(h, capsys, f"{PART[kind]}/stream.hex", "trailing lines after the last case")
    size = entry(manifest(h), kind)["files"]["stream.hex"]["bytes"]
    assert sum(n for label, n in reads if label.endswith(f"{PART[kind]}/stream.hex'")) <= size


@pytest.mark.parametrize("kind", sorted(PART))
def test_small_blocks_give_the_same_verdicts(exports, kind, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(H, "READ_BYTES", 7)
    assert main(["verify", str(exports / kind)]) == 0
    capsys.readouterr()
    h, part = fresh(exports, kind, tmp_path)
    lines = (part / DATA[kind]).read_text().split("\n")
    lines[5] = "G" + lines[5][1:]
    (part / DATA[kind]).write_text("\n".join(lines))
    refused(h, capsys, f"{PART[kind]}/{DATA[kind]}': line 6: not ")


@pytest.mark.parametrize("kind", sorted(PART))
def test_an_altered_checksum_in_an_index_line_names_the_index_file(exports, kind, tmp_path, capsys):
    # the data file is the manifest's, so the index line's checksum is what changed
    h, part = fresh(exports, kind, tmp_path)
    rel = "cases.txt"
    lines = (part / rel).read_text().split("\n")
    f = lines[2].split(" ")
    f[-1] = format(int(f[-1], 16) ^ 1, "08x")          # the last data file's checksum
    lines[2] = " ".join(f)
    (part / rel).write_text("\n".join(lines))
    refused(h, capsys, f"{PART[kind]}/cases.txt': line 3", "which match the manifest")


# ---------------------------------------------------------------------------- manifests

def test_a_deeply_nested_manifest_is_one_line(tmp_path, capsys):
    (tmp_path / "manifest.json").write_text("[" * 100_000)
    rc = main(["verify", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1 and "nests too deeply" in err, err


@pytest.mark.parametrize("kind", sorted(PART))
def test_a_deeply_nested_value_in_an_export_manifest_is_one_line(exports, kind, tmp_path, capsys):
    h, _ = fresh(exports, kind, tmp_path)
    text = (h / "manifest.json").read_text()
    (h / "manifest.json").write_text(text.replace('"partitions":', '"x": ' + "[" * 100_000 + ', "partitions":', 1))
    refused(h, capsys, "manifest.json")


@pytest.mark.parametrize("kind", sorted(PART))
def test_a_manifest_larger_than_the_limit_is_one_line(exports, kind, tmp_path, capsys, monkeypatch):
    h, _ = fresh(exports, kind, tmp_path)
    monkeypatch.setattr(H, "MAX_MANIFEST_BYTES", 100)
    refused(h, capsys, "manifest.json")


# ---------------------------------------------------------------------------- fuzzing

FUZZ = settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
FUZZ_SLOW = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
HOSTILE_JSON = st.one_of(
    st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.sampled_from([0, 1, 2 ** 40, -1]),
    st.text(max_size=20), st.sampled_from(["FP16", "TADD", "../x", "/etc", "blocks=2/shape=r1c8", "op=TADD/dtype=FP16",
                                           "0" * 64, "cases.txt"]),
    st.just({}), st.just([]))


def _without_dataset(m) -> dict:
    """A manifest less its informational `dataset` member (what verify cannot check without the dataset)."""
    if not isinstance(m, dict):
        return m
    return {k: v for k, v in m.items() if k != "dataset"}


def _mutate_manifest(h, data) -> bool:
    """A random edit of the manifest (as JSON, or its bytes); whether the edit changed it."""
    before = (h / "manifest.json").read_bytes()
    if data.draw(st.booleans()):
        write_manifest(h, json_edits(manifest(h), data, HOSTILE_JSON))
    else:
        raw = byte_edits(bytearray(before), data, data.draw(st.integers(1, 3)))
        (h / "manifest.json").write_bytes(bytes(raw))
    try:
        after = json.loads((h / "manifest.json").read_text())
    except ValueError:
        return True
    return _without_dataset(after) != _without_dataset(json.loads(before))


def _mutate_file(h, kind, data, tmp) -> bool:
    """A random edit of one listed file: its bytes (the manifest's record updated or not), or
    the file replaced by something else; whether it changed anything."""
    rel = data.draw(st.sampled_from(sorted(p.relative_to(h).as_posix() for p in h.rglob("*.*")
                                           if p.name != "manifest.json")))
    p = h / rel
    action = data.draw(st.sampled_from(["bytes", "bytes", "bytes", "truncate", "kind", "extra"]))
    if action == "extra":
        (p.parent / data.draw(st.sampled_from(["x.hex", ".tmp", "cases.txt.1"]))).write_bytes(b"00\n")
        return True
    if action == "kind":
        what = data.draw(st.sampled_from(["dev-zero", "fifo", "folder", "link-out", "empty"]))
        shutil.copy(p, tmp / "copy")
        p.unlink()
        if what == "dev-zero":
            p.symlink_to("/dev/zero")
        elif what == "fifo":
            os.mkfifo(p)
        elif what == "folder":
            p.mkdir()
        elif what == "link-out":
            p.symlink_to(tmp / "copy")
        else:
            p.write_bytes(b"")
        return True
    raw = p.read_bytes()
    if action == "truncate":
        new = raw[:data.draw(st.integers(0, max(len(raw) - 1, 0)))]
    else:
        new = bytes(byte_edits(bytearray(raw), data, data.draw(st.integers(1, 4))))
    p.write_bytes(new)
    if data.draw(st.booleans()):
        resync(h, kind, rel)
    return new != raw


def _fuzz(exports, kind, capsys, data) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        h = tmp / "h"
        shutil.copytree(exports / kind, h)
        target = data.draw(st.sampled_from(["manifest", "file", "file"]))
        changed = _mutate_manifest(h, data) if target == "manifest" else _mutate_file(h, kind, data, tmp)
        rc = main(["verify", str(h)])
        cap = capsys.readouterr()
        assert "Traceback" not in cap.err
        assert rc in (0, 1), (rc, cap.err[-1000:])
        if rc == 1:
            assert cap.err.count("\n") == 1 and len(cap.err) < 600, cap.err[-1000:]
        else:
            assert not changed, "verify accepted a changed export"
            assert "export intact" in cap.out


@pytest.mark.parametrize("kind", sorted(PART))
@FUZZ
@given(data=st.data())
def test_fuzzed_hex_exports_give_one_line_or_an_unchanged_export(exports, kind, capsys, data):
    _fuzz(exports, kind, capsys, data)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(PART))
@FUZZ_SLOW
@given(data=st.data())
def test_many_fuzzed_hex_exports_give_one_line_or_an_unchanged_export(exports, kind, capsys, data):
    _fuzz(exports, kind, capsys, data)
