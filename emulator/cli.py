"""`tile-emu` command line: a table of subcommands, each loaded only when it runs.

Each command module exposes `add_arguments(parser)` and `run(args) -> int`.  User errors are
reported as one line on stderr; a traceback means a bug in tile-emu.  Exit status (EXIT_CODES,
also in `tile-emu --help` and the README): 0 success; 1 the command's negative answer (the input
was rejected, a block faulted, the states differ); 2 the command could not run as asked (usage
errors, an unknown backend name; `diff` also uses 2 for any error, so that its 1 always means "the
states differ"); 3 this machine cannot run the backend asked for (UNAVAILABLE: a GPU backend without
a usable GPU, a batch larger than the device's free memory, a library the run needs that is not
installed), so scripts can tell "no GPU here" from a mistake.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from isa.atomicio import quote, shown

# name: one-line help; the command is the module emulator.commands.NAME (add_arguments, run)
_HELP = {
    "asm": "assemble block text (.s) into a binary block stream (.tbs)",
    "disasm": "print a binary block stream as canonical block text",
    "run": "run a .tbs stream (or a .regions.json program) from an initial state",
    "show": "print a state file (.arrow): tiles, definedness, GPRs, status",
    "diff": "compare two state files tile by tile",
    "fabric": "check a fabric description and print resolved capabilities",
    "vcg": "compile a VCG mapping: config, valid_size matrix, heatmap",
    "reduce": "run a VCG-tagged intra-slice reduction over an Arrow flit file",
    "bench": "measure throughput against a plain-library baseline",
    "golden": "generate golden vectors (Parquet), print coverage, export TestFloat",
    "verify": "replay a golden dataset and compare every case",
    "cosim": "build libtile_emu and its SystemVerilog DPI-C package (docs/cosim-c.md)",
    "compile": "compile every numeric kernel into Numba's on-disk cache (once after install)",
}
COMMANDS: dict[str, tuple[str, str]] = {name: (f"emulator.commands.{name}", text) for name, text in _HELP.items()}


EXIT_CODES = {
    0: "success (diff: the states are equal)",
    1: "the command's negative answer: the input was rejected (one line says what, where, why), "
       "a block faulted, a fabric description is invalid, the states differ",
    2: "the command could not run as asked: unknown command or option, bad or conflicting option "
       "values (an unknown backend name included, an output path that names an input or another "
       "output); diff: any error (an unreadable or invalid state file)",
    3: "this machine cannot run the backend asked for: a GPU backend (run/verify/bench --backend gpu, "
       "reduce --backend cuda|cupy) without a usable GPU, a batch larger than the device's free memory, "
       "a library the run needs that is not installed (e.g. gmpy2); nothing is written",
}
UNAVAILABLE = 3           # EXIT_CODES[3]: the backend is known, this machine cannot run it
OWN_PACKAGES = frozenset({"isa", "kernels", "fabric", "emulator"})   # an ImportError naming these is a bug


def version() -> str:
    """The installed distribution's version; from a source tree without one, pyproject's."""
    from importlib import metadata
    try:
        return metadata.version("tile-emu")
    except metadata.PackageNotFoundError:
        import tomllib
        with open(Path(__file__).resolve().parents[1] / "pyproject.toml", "rb") as f:
            return tomllib.load(f)["project"]["version"]


class CommandError(Exception):
    """A user-facing failure: printed as one line, exit status `status`."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """argparse whose error line is bounded: an invalid 1 MB argument (argparse echoes it whole,
    control bytes included) is escaped and cut like every other message."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {shown(message, 240)}\n")


def _top_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="tile-emu", description="Bit-exact tile ISA emulator.",
        epilog="exit status: " + "; ".join(f"{k} {v}" for k, v in EXIT_CODES.items()))
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_) in COMMANDS.items():
        sub.add_parser(name, help=help_, add_help=False)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--version"]:
        print(f"tile-emu {version()}")
        return 0
    if not argv or argv[0] not in COMMANDS:
        top = _top_parser()
        if argv and argv[0] not in ("-h", "--help"):
            top.print_usage(sys.stderr)
            print(f"tile-emu: error: unknown command {quote(argv[0])}", file=sys.stderr)
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
    parser = _Parser(prog=f"tile-emu {name}", description=help_)
    module.add_arguments(parser)
    args = parser.parse_args(rest)
    try:
        return int(module.run(args) or 0)
    except CommandError as exc:
        print(f"tile-emu {name}: {exc}", file=sys.stderr)
        return exc.status
    except BrokenPipeError:
        return 0
    except ImportError as exc:     # an optional library this run needs (gmpy2, cupy, distributed)
        if (exc.name or "").partition(".")[0] in OWN_PACKAGES:
            raise                  # a broken import inside tile-emu is a bug, not a missing library
        print(f"tile-emu {name}: cannot run: {str(exc).splitlines()[0] if str(exc) else exc!r}", file=sys.stderr)
        return UNAVAILABLE


if __name__ == "__main__":
    # `python -m emulator.cli`: run the importable module's main, so that the CommandError the
    # commands raise (emulator.cli.CommandError) is the class main catches, not __main__'s twin
    from emulator.cli import main as _main
    sys.exit(_main())
