"""Output files are written atomically: a failed write never damages an existing file."""
import os

import pytest

from isa.atomicio import OutputPathError, atomic_open, atomic_path, quote


def test_complete_write_replaces_the_file(tmp_path):
    p = tmp_path / "out.bin"
    p.write_bytes(b"old")
    with atomic_open(p) as f:
        f.write(b"new contents")
    assert p.read_bytes() == b"new contents"
    assert os.listdir(tmp_path) == ["out.bin"]


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    p = tmp_path / "out.bin"
    p.write_bytes(b"good")
    with pytest.raises(RuntimeError):
        with atomic_path(p) as tmp:
            with open(tmp, "wb") as f:
                f.write(b"half")
            raise RuntimeError("disk full")
    assert p.read_bytes() == b"good"
    assert os.listdir(tmp_path) == ["out.bin"]


@pytest.mark.parametrize("bad", ["", None])
def test_empty_output_path_is_refused(bad):
    with pytest.raises(OutputPathError, match="empty"):
        with atomic_path(bad):
            pass


def test_folder_and_missing_parent_are_refused(tmp_path):
    with pytest.raises(OutputPathError, match="is a folder"):
        with atomic_path(tmp_path):
            pass
    with pytest.raises(OutputPathError, match="does not exist"):
        with atomic_path(tmp_path / "nope" / "x.arrow"):
            pass


def test_quote_escapes_and_truncates():
    assert quote("a\x1b[2Jb") == repr("a\x1b[2Jb")
    long = quote("x" * 1_000_000)
    assert len(long) < 120 and "1000000 characters" in long
