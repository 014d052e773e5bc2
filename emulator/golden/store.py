"""Where a golden dataset (or a shard) lives: a local folder, or an fsspec URL (docs/golden-format.md,
"Object storage").

`location(text)` gives a `pathlib.Path` for a local path and for a `file://` URL (the local code
paths, unchanged: `os.replace` publishes a file), and a `RemotePath` for any other URL
(`s3://bucket/prefix`, ...) through fsspec.  A RemotePath answers the part of pathlib's API the
dataset code uses (`/`, exists, is_file, is_dir, iterdir, stat().st_size, read_text, read_bytes,
open, unlink, relative_to, name, parent); what pathlib cannot express goes through the helpers
here, for both kinds:

- `staged(dest)`: a local temporary file to write; on normal exit it is published under the final
  name -- locally renamed (isa.atomicio), remotely uploaded under a temporary name beside the final
  one (`.NAME.xxxxxxxx.tmp`, the local temporaries' pattern) and then moved onto it -- so an
  interrupted run never leaves a partial object under a final name;
- `local_copy(path)`: a local file holding `path`'s bytes (the path itself when local; a download
  to a temporary file, removed afterwards, when remote), so every check reads a remote file as it
  reads a local one;
- `files(folder)`: the relative paths of every file below a folder.

A URL whose fsspec implementation is not installed is refused before anything is read or written
(`Unavailable`, exit 3 naming the package and, for s3, tile-emu's `s3` extra); any error of the
store itself (unreachable, no such bucket, no permission) is one GoldenError line naming the URL.
"""
from __future__ import annotations

import contextlib
import os
import pathlib
import re
import secrets
import shutil
import tempfile
from typing import Iterator

from isa.atomicio import atomic_path, shown

from .errors import GoldenError

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# protocol -> tile-emu's extra that installs its fsspec implementation
EXTRAS = {"s3": "s3", "s3a": "s3"}
READ_BLOCK = 8 << 20


class Unavailable(Exception):
    """An fsspec URL whose implementation is not installed (exit 3)."""


def protocol(text) -> str | None:
    m = _URL.match(str(text))
    return m.group(1).lower() if m else None


def location(text) -> "pathlib.Path | RemotePath":
    """The place `text` names: a Path (local paths, file:// URLs) or a RemotePath (other URLs)."""
    if isinstance(text, (pathlib.PurePath, RemotePath)):
        return text
    text = os.fspath(text)
    proto = protocol(text)
    if proto is None:
        return pathlib.Path(text)
    if proto in ("file", "local"):
        return pathlib.Path(text[len(proto) + 3:] or "/")
    return RemotePath(_filesystem(proto, text), text)


def is_remote(path) -> bool:
    return isinstance(path, RemotePath)


def _filesystem(proto: str, url: str):
    try:
        import fsspec
    except ImportError:
        raise Unavailable(f"{shown(url)}: URLs need fsspec: pip install fsspec") from None
    try:
        cls = fsspec.get_filesystem_class(proto)
    except ImportError as exc:
        extra = EXTRAS.get(proto)
        how = f"pip install 'tile-emu[{extra}]'" if extra else "install the fsspec implementation it names"
        raise Unavailable(f"{shown(url)}: {proto}:// needs a library that is not installed ({str(exc).strip()}); "
                          f"{how}") from None
    except ValueError:
        raise GoldenError(f"{shown(url)}: no fsspec implementation knows {proto}:// (a local path, file://, s3://, "
                          "...)") from None
    try:
        # no instance or listing caches: other processes (the workers, a resumed run) write the same
        # place, and a cached listing would not see them
        return cls(skip_instance_cache=True, use_listings_cache=False)
    except Exception as exc:         # the implementation's own configuration errors, of any type
        raise GoldenError(f"{shown(url)}: cannot open the store ({_why(exc)})") from None


def _why(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{exc.__class__.__name__}: {shown(text, 120)}" if text else exc.__class__.__name__


@contextlib.contextmanager
def _store_errors(where) -> Iterator[None]:
    """The store's exceptions (of whatever type its library raises: network, permissions, a missing
    bucket) as one GoldenError line naming `where`; FileNotFoundError passes (callers test it)."""
    try:
        yield
    except (GoldenError, FileNotFoundError, Unavailable):
        raise
    except Exception as exc:
        raise GoldenError(f"{shown(where)}: the store failed ({_why(exc)})") from None


class _Stat:
    def __init__(self, size: int):
        self.st_size = size


class RemotePath:
    """A file or folder of an fsspec store, addressed by its URL (see the module docstring)."""

    def __init__(self, fs, url: str):
        self.fs = fs
        self.url = url.rstrip("/") if not url.endswith("://") else url
        self.key = fs._strip_protocol(self.url)

    def __str__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"RemotePath({self.url!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, RemotePath) and other.url == self.url

    def __hash__(self) -> int:
        return hash(self.url)

    def __truediv__(self, rel) -> "RemotePath":
        rel = str(rel).strip("/")
        return RemotePath(self.fs, f"{self.url}/{rel}") if rel else self

    @property
    def name(self) -> str:
        return self.url.rsplit("/", 1)[-1]

    @property
    def parent(self) -> "RemotePath":
        return RemotePath(self.fs, self.url.rsplit("/", 1)[0])

    def as_posix(self) -> str:
        return self.url

    def relative_to(self, other) -> pathlib.PurePosixPath:
        base = str(other).rstrip("/") + "/"
        if not self.url.startswith(base):
            raise ValueError(f"{self.url} is not below {other}")
        return pathlib.PurePosixPath(self.url[len(base):])

    def exists(self) -> bool:
        with _store_errors(self):
            return bool(self.fs.exists(self.key))

    def is_file(self) -> bool:
        with _store_errors(self):
            return bool(self.fs.isfile(self.key))

    def is_dir(self) -> bool:
        with _store_errors(self):
            return bool(self.fs.isdir(self.key))

    def is_symlink(self) -> bool:
        return False

    def iterdir(self) -> Iterator["RemotePath"]:
        with _store_errors(self):
            names = self.fs.ls(self.key, detail=False) if self.fs.isdir(self.key) else []
        for n in names:
            yield RemotePath(self.fs, f"{self.url}/{n.rstrip('/').rsplit('/', 1)[-1]}")

    def stat(self) -> _Stat:
        with _store_errors(self):
            return _Stat(int(self.fs.size(self.key)))

    def read_bytes(self) -> bytes:
        with _store_errors(self):
            return self.fs.cat_file(self.key)

    def read_text(self, encoding: str = "utf-8") -> str:
        return self.read_bytes().decode(encoding)

    def head(self, n: int) -> bytes:
        with _store_errors(self):
            return self.fs.cat_file(self.key, start=0, end=n)

    def open(self, mode: str = "rb"):
        if mode != "rb":
            raise ValueError("a RemotePath is opened for reading; writes go through store.staged")
        with _store_errors(self):
            return self.fs.open(self.key, "rb", block_size=READ_BLOCK)

    def unlink(self) -> None:
        with _store_errors(self):
            self.fs.rm_file(self.key)

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        """An object store has no folders to make: a file's key makes its folders (and a bucket
        that does not exist is the first write's error, not created here)."""

    def files(self) -> list[str]:
        """The relative paths of every file below this folder."""
        with _store_errors(self):
            if not self.fs.isdir(self.key):
                return []
            base = self.key.rstrip("/") + "/"
            return sorted(k[len(base):] for k in self.fs.find(self.key, withdirs=False) if k.startswith(base))


def files(folder) -> list[str]:
    """The relative (posix) paths of every file below `folder`, local or remote; a local symlink to
    a folder is listed as an entry of its own, not followed."""
    if is_remote(folder):
        return folder.files()
    out = []
    for root, dirs, names in os.walk(folder):
        rel = pathlib.Path(root).relative_to(folder)
        for d in list(dirs):
            if os.path.islink(os.path.join(root, d)):
                names.append(d)
                dirs.remove(d)
        out += [(rel / n).as_posix() for n in names]
    return out


@contextlib.contextmanager
def staged(dest) -> Iterator[str]:
    """A local path to write `dest` into; published under `dest` on normal exit, removed on any
    exception (see the module docstring)."""
    if not is_remote(dest):
        with atomic_path(dest) as tmp:
            yield tmp
        return
    fd, tmp = tempfile.mkstemp(prefix="tile-emu-", suffix=".tmp")
    os.close(fd)
    try:
        yield tmp
        publish(tmp, dest)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def publish(local: str, dest: "RemotePath") -> None:
    """Upload a local file under a temporary name beside `dest`, then move it onto `dest`."""
    temp = dest.parent / f".{dest.name}.{secrets.token_hex(4)}.tmp"
    try:
        with _store_errors(dest):
            dest.fs.put_file(local, temp.key)
            dest.fs.mv(temp.key, dest.key)
    except BaseException:
        with contextlib.suppress(Exception):
            temp.fs.rm_file(temp.key)
        raise


@contextlib.contextmanager
def local_copy(path) -> Iterator[pathlib.Path]:
    """A local file with `path`'s bytes: `path` itself when local, else a temporary download
    (removed on exit).  FileNotFoundError when there is none."""
    if not is_remote(path):
        yield pathlib.Path(path)
        return
    fd, tmp = tempfile.mkstemp(prefix="tile-emu-", suffix=".get")
    try:
        with os.fdopen(fd, "wb") as out, path.open("rb") as src:
            with _store_errors(path):
                shutil.copyfileobj(src, out, READ_BLOCK)
        yield pathlib.Path(tmp)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def head(path, n: int) -> bytes:
    """The first n bytes of a file (OSError when it cannot be read)."""
    if is_remote(path):
        return path.head(n)
    with open(path, "rb") as f:
        return f.read(n)
