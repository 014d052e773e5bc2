"""`tile-emu` command line: a table of subcommands, each loaded only when it runs.

Each command module exposes `add_arguments(parser)` and `run(args) -> int`.  User errors are
reported as one line on stderr with exit status 2 (usage) or 1 (the input was rejected); a
traceback means a bug in tile-emu.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# name: (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "asm": ("emulator.commands.asm", "assemble block text (.s) into a binary block stream (.tbs)"),
    "disasm": ("emulator.commands.disasm", "print a binary block stream as canonical block text"),
    "run": ("emulator.commands.run", "run a .tbs stream (or a .regions.json program) from an initial state"),
    "show": ("emulator.commands.show", "print a state file (.arrow): tiles, definedness, GPRs, status"),
    "diff": ("emulator.commands.diff", "compare two state files tile by tile"),
    "fabric": ("emulator.commands.fabric", "check a fabric description and print resolved capabilities"),
    "vcg": ("emulator.commands.vcg", "compile a VCG mapping: config, valid_size matrix, heatmap"),
    "reduce": ("emulator.commands.reduce", "run a VCG-tagged intra-slice reduction over an Arrow flit file"),
    "bench": ("emulator.commands.bench", "measure throughput against a plain-library baseline"),
    "golden": ("emulator.commands.golden", "generate golden vectors (Parquet), print coverage, export TestFloat"),
    "verify": ("emulator.commands.verify", "replay a golden dataset and compare every case"),
}


class CommandError(Exception):
    """A user-facing failure: printed as one line, exit status `status`."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


def _top_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tile-emu", description="Bit-exact tile ISA emulator.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_) in COMMANDS.items():
        sub.add_parser(name, help=help_, add_help=False)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        top = _top_parser()
        if argv and argv[0] not in ("-h", "--help"):
            top.print_usage(sys.stderr)
            print(f"tile-emu: error: unknown command {argv[0]!r}", file=sys.stderr)
            return 2
        top.print_help()
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    module_name, help_ = COMMANDS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            print(f"tile-emu {name}: not available in this build", file=sys.stderr)
            return 2
        raise
    parser = argparse.ArgumentParser(prog=f"tile-emu {name}", description=help_)
    module.add_arguments(parser)
    args = parser.parse_args(rest)
    try:
        return int(module.run(args) or 0)
    except CommandError as exc:
        print(f"tile-emu {name}: {exc}", file=sys.stderr)
        return exc.status
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
