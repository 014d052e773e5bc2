"""tile-emu subcommands (one module each; see emulator/cli.py) and their shared argument types."""
from __future__ import annotations

import argparse


def count(text: str) -> int:
    """argparse type: a nonnegative integer (a negative limit is a usage error, exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value
