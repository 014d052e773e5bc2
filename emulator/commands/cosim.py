"""`tile-emu cosim build --out DIR`: the C library and SystemVerilog package (docs/cosim-c.md).

Writes DIR/libtile_emu.so (built from this installation with cffi's embedding mode),
DIR/tile_emu.h and DIR/tile_emu_pkg.sv.  Exit status: 0 built, 1 the compiler failed (its
last line), 2 usage, 3 a tool is missing (cffi, a C compiler, the Python headers, a shared
libpython: the line says what to install).
"""
from __future__ import annotations

from emulator.cli import UNAVAILABLE, CommandError


def add_arguments(p) -> None:
    p.add_argument("action", choices=["build"], help="build: compile libtile_emu into --out")
    p.add_argument("--out", required=True, help="the folder for libtile_emu, tile_emu.h and tile_emu_pkg.sv")
    p.add_argument("--verbose", action="store_true", help="show the compiler's commands")


def run(args) -> int:
    from emulator.dpi import build as B
    from isa.atomicio import OutputPathError
    try:
        made = B.build(args.out, verbose=args.verbose)
    except B.Unavailable as exc:
        raise CommandError(str(exc), UNAVAILABLE) from None
    except (OSError, OutputPathError) as exc:
        raise CommandError(f"--out {args.out}: {exc}") from None
    except Exception as exc:            # cffi's VerificationError / CompileError: the compiler's verdict
        if type(exc).__module__.split(".")[0] not in ("cffi", "distutils", "setuptools"):
            raise
        raise CommandError(f"the C compiler failed: {str(exc).splitlines()[-1] if str(exc) else type(exc).__name__} "
                           f"(run again with --verbose)") from None
    for path in made:
        print(path)
    return 0
