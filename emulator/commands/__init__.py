"""tile-emu subcommands (one module each; see emulator/cli.py) and their shared argument types."""
from __future__ import annotations

import argparse
import os
import stat

from isa.atomicio import quote, shown, why


def count(text: str) -> int:
    """argparse type: a nonnegative integer (a negative limit is a usage error, exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{quote(text)} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


def output_path(text: str) -> str:
    """argparse type of every output option: an empty path is a usage error (exit 2), not a
    silently skipped output.  The file itself is written through isa.atomicio."""
    if text == "":
        raise argparse.ArgumentTypeError("the output path is empty")
    return text


def cannot_write(path, exc) -> str:
    """One line for a failed write: the path (escaped when it needs it) and why."""
    return f"{shown(path)}: cannot write: {why(exc)}"


def _file_key(path: str):
    """What identifies the file `path` names, or would create: (device, inode) of an existing
    regular file (so hard links and symlinks to one file agree), else the resolved location
    (symlinks followed, a dangling one included).  None for '-' (stdin/stdout) and for an
    existing device, FIFO or folder: an output is written into those in place or refused, never
    renamed over, so naming one twice loses nothing."""
    if path == "-":
        return None
    try:
        st = os.stat(path)
    except OSError:                  # missing: where it would be created
        return ("path", os.path.realpath(path))
    except ValueError:               # a NUL byte: no file; the read or write says so itself
        return None
    return ("file", st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def distinct_paths(inputs: dict, outputs: dict) -> None:
    """The one check of every command that takes several paths, called before it reads or writes
    anything: an output naming the same file as an input, or as another output (after resolving
    links, also for files that do not exist yet), is a usage error, exit 2.  Otherwise the
    atomic rename of one output would silently replace the input it was computed from, or the
    other output.  `inputs` and `outputs` map each option's label (`--out`, `GRAPH`) to its path
    (None or '' when not given)."""
    from emulator.cli import CommandError

    seen: dict = {}                  # file key -> (what names it, whether it is an input)
    for label, path in inputs.items():
        key = _file_key(path) if path else None
        if key is not None:
            seen.setdefault(key, (f"the input {label} {shown(path)}", True))
    for label, path in outputs.items():
        key = _file_key(path) if path else None
        if key is None:
            continue
        if key in seen:
            other, is_input = seen[key]
            why_not = "an output must not overwrite an input" if is_input else "each output needs a file of its own"
            raise CommandError(f"{label} {shown(path)} is the same file as {other}: {why_not}", 2)
        seen[key] = (f"{label} {shown(path)}", False)
