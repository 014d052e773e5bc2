"""tile-emu subcommands (one module each; see emulator/cli.py) and their shared argument types."""
from __future__ import annotations

import argparse

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
