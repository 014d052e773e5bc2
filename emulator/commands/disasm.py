"""`tile-emu disasm IN.tbs [-o OUT.s]`: binary block stream -> canonical block text."""
from __future__ import annotations

import sys

from emulator.cli import CommandError
from emulator.commands import cannot_write, distinct_paths, output_path
from isa.atomicio import OutputPathError, atomic_open, shown, why
from isa.assembly import disassemble
from isa.errors import DecodeError


def add_arguments(parser):
    parser.add_argument("input", help=".tbs file, or - for stdin")
    parser.add_argument("-o", "--output", default="-", type=output_path, help="text file to write (default: stdout)")


def run(args) -> int:
    distinct_paths({"IN.tbs": args.input}, {"-o": args.output})
    name = "<stdin>" if args.input == "-" else shown(args.input)
    try:
        if args.input == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(args.input, "rb") as f:
                data = f.read()
    except OSError as exc:
        raise CommandError(f"{name}: cannot read: {why(exc)}") from None
    try:
        text = disassemble(data)
    except DecodeError as exc:
        raise CommandError(f"{name}: byte offset {exc.offset}: {exc.reason}") from None
    try:
        if args.output == "-":
            sys.stdout.write(text)
        else:
            with atomic_open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
    except (OSError, OutputPathError) as exc:
        raise CommandError(cannot_write(args.output, exc)) from None
    return 0
