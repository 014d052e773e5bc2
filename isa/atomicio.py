"""Atomic output files: every writer of the project goes through `atomic_path`.

A file is written under a temporary name in its destination's folder and renamed over the
destination only once the writer has finished without error, so a failed or interrupted run
(a full disk, a file-size limit, an exception, Ctrl-C) never leaves a truncated file under the
final name and never damages an existing one.  `os.replace` is atomic within one file system,
which the same-folder temporary guarantees.

Messages that name user text go through `quote` (escaped, cut to about 80 characters),
`shown` (a file name as it is when harmless, else quoted) and `why` (an exception's reason
without the file name pyarrow and the OS repeat in it).

It lives in `isa`, the bottom package, only because every layer above writes files.
"""
from __future__ import annotations

import contextlib
import os
import pathlib
import secrets
import stat
import threading
from typing import Iterator

# A replaced file at least this large is closed (its blocks freed) on a thread of its own
RELEASE_IN_BACKGROUND = 1 << 20


class OutputPathError(ValueError):
    """An output path that cannot be written (empty, a folder, a missing parent folder)."""


def check_output_path(path) -> pathlib.Path:
    """The path as a Path, or OutputPathError saying in one line why it cannot be an output."""
    text = os.fspath(path) if path is not None else ""
    if text == "":
        raise OutputPathError("output path is empty")
    p = pathlib.Path(text)
    if p.is_dir():
        raise OutputPathError(f"output path {quote(text)} is a folder")
    parent = p.parent if str(p.parent) else pathlib.Path(".")
    if not parent.is_dir():
        raise OutputPathError(f"output folder {quote(str(parent))} does not exist")
    return p


def _create_temporary(dest: pathlib.Path) -> str:
    """An empty new file beside `dest`, created with mode 0o666 less the umask (as open() would
    create `dest`; tempfile.mkstemp's 0o600 would make every output private)."""
    folder = dest.parent if str(dest.parent) else pathlib.Path(".")
    for _ in range(100):
        tmp = folder / f".{dest.name}.{secrets.token_hex(4)}.tmp"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return str(tmp)
    raise FileExistsError(f"no free temporary name beside {quote(str(dest))}")


@contextlib.contextmanager
def atomic_path(path, devices: bool = True) -> Iterator[str]:
    """Yield a temporary path beside `path`; on normal exit rename it onto `path`, on any
    exception (including KeyboardInterrupt) delete it and leave `path` untouched.

    An existing device or FIFO (/dev/stdout, /dev/null) has nothing to rename over (renaming
    would replace the device node itself): it is yielded to be written in place, or refused
    with OutputPathError when `devices` is false (formats that need a seekable file)."""
    dest = check_output_path(path)
    if dest.exists() and not dest.is_file():
        if not devices:
            raise OutputPathError(f"output path {quote(str(dest))} is not a regular file")
        yield str(dest)
        return
    dest = pathlib.Path(os.path.realpath(dest))   # a symlink keeps pointing at the new file
    tmp = _create_temporary(dest)
    try:
        yield tmp
        old = _hold(dest)
        try:
            os.replace(tmp, dest)
        finally:
            _release(old)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _hold(dest: pathlib.Path) -> int | None:
    """A descriptor of the regular file that a rename is about to replace, or None.  The rename
    frees a replaced file's blocks itself (tens of milliseconds for a 100 MB commit log) unless
    the file is still open elsewhere; then the last close frees them (`_release`)."""
    try:
        fd = os.open(dest, os.O_RDONLY | os.O_NONBLOCK)     # never blocks, whatever dest became
    except OSError:
        return None                 # none there, or unreadable: the rename frees it as before
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def _release(fd: int | None) -> None:
    """Close a held replaced file: a large one on a background thread, so that freeing its blocks
    overlaps whatever the caller does next (the new file is in place already either way)."""
    if fd is None:
        return
    try:
        large = os.fstat(fd).st_size >= RELEASE_IN_BACKGROUND
    except OSError:
        large = False
    if large:
        threading.Thread(target=os.close, args=(fd,), name="atomicio-release", daemon=True).start()
    else:
        os.close(fd)


@contextlib.contextmanager
def atomic_open(path, mode: str = "wb", **kwargs):
    """`open()` for writing, atomically (see `atomic_path`)."""
    if not any(m in mode for m in "wx"):
        raise ValueError("atomic_open is for writing ('w' or 'x' modes)")
    with atomic_path(path) as tmp:
        with open(tmp, mode.replace("x", "w"), **kwargs) as f:
            yield f
            f.flush()
            if stat.S_ISREG(os.fstat(f.fileno()).st_mode):   # devices (/dev/null) refuse fsync
                os.fsync(f.fileno())


def quote(text: str, limit: int = 80) -> str:
    """`text` for an error message: escaped (no control bytes reach the terminal) and cut to
    about `limit` characters with the total length named, so a 1 MB input never floods a message."""
    r = repr(str(text))
    if len(r) <= limit:
        return r
    return f"{r[: limit - 1]}...' ({len(text)} characters)"


class Shown(str):
    """Text already made safe for a message (e.g. `shown(path) + ": machine 3"`): shown() passes
    it through unchanged, so a label built from a long path keeps its suffix."""


def shown(text, limit: int = 80) -> str:
    """A file name or token for a message: as it is when it is printable, has no surrounding
    space and fits in `limit` characters (so `examples/x.s:3:1:` stays editor-clickable),
    else `quote(text)`."""
    if isinstance(text, Shown):
        return text
    text = str(text)
    if len(text) <= limit and text.isprintable() and text == text.strip() and text:
        return text
    return quote(text, limit)


def why(exc: BaseException, limit: int = 160) -> str:
    """The reason an exception gives, for a message: the OS's words when it carries an errno
    (pyarrow's and Python's texts repeat the whole file name), else its text via `shown`."""
    errno = getattr(exc, "errno", None)
    if isinstance(errno, int) and errno > 0:
        return os.strerror(errno)
    return shown(str(exc), limit)
