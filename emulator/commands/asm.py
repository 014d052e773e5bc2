"""`tile-emu asm IN.s -o OUT.tbs`: block text -> binary block stream (docs/assembly.md)."""
from __future__ import annotations

import sys

from emulator.cli import CommandError
from emulator.commands import cannot_write, distinct_paths, output_path
from isa.atomicio import OutputPathError, atomic_open, shown, why
from isa import encoding
from isa.assembly import parse
from isa.errors import AsmError, IllegalBlockException
from isa.legality import resolve


def add_arguments(parser):
    parser.add_argument("input", help="block text file, or - for stdin")
    parser.add_argument("-o", "--output", required=True, type=output_path, help=".tbs file to write, or - for stdout")
    parser.add_argument("--check", action="store_true",
                        help="also apply the stateless legality rules (isa.legality.resolve) to every block")


def _read_text(path: str) -> tuple[str, str]:
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(), shown(path)
    except OSError as exc:
        raise CommandError(f"{shown(path)}: cannot read: {why(exc)}") from None
    except UnicodeDecodeError as exc:
        raise CommandError(f"{shown(path)}: cannot read: not UTF-8 text (byte {exc.start})") from None


def run(args) -> int:
    distinct_paths({"IN.s": args.input}, {"-o": args.output})
    text, name = _read_text(args.input)
    try:
        program = parse(text, name)
    except AsmError as exc:
        raise CommandError(str(exc)) from None
    if args.check:
        for index, item in enumerate(program):
            try:
                resolve(item.block)
            except IllegalBlockException as exc:
                raise CommandError(f"{name}:{item.line}:1: block {index} is illegal: {exc}") from None
    data = encoding.encode([item.block for item in program])
    try:
        if args.output == "-":
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        else:
            with atomic_open(args.output, "wb") as f:
                f.write(data)
    except (OSError, OutputPathError) as exc:
        raise CommandError(cannot_write(args.output, exc)) from None
    return 0
