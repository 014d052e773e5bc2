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


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("size", [100, 3 << 20])
def test_replacing_a_file_of_any_size_leaves_the_new_bytes_and_no_descriptor_open(tmp_path, size):
    # a large replaced file is closed on a background thread (its blocks freed off the caller's path)
    import threading
    p = tmp_path / "out.bin"
    p.write_bytes(b"o" * size)
    before = _open_fds()
    with open(p, "rb") as reader:           # a reader of the old file keeps reading the old bytes
        with atomic_open(p) as f:
            f.write(b"new contents")
        assert reader.read(3) == b"ooo"
    for t in threading.enumerate():
        if t.name == "atomicio-release":
            t.join()
    assert p.read_bytes() == b"new contents"
    assert os.listdir(tmp_path) == ["out.bin"]
    assert _open_fds() == before


def test_a_replaced_path_that_is_a_fifo_is_never_opened(tmp_path):
    # atomic_path yields a FIFO to be written in place; _hold must not block on one either
    from isa.atomicio import _hold
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert _hold(fifo) is None
    assert _hold(tmp_path / "missing") is None
