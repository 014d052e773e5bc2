"""tile-emu compile: fill Numba's on-disk cache with every compiled loop before timed work.

The first run after install otherwise compiles each loop it meets inside its own work (issue 32
target 5; docs/performance.md, "First run after install").  Run it once after `pip install`
(and after an upgrade, which changes the sources the cache is keyed by); later processes load
the loops from the cache.  The cache is Numba's: `NUMBA_CACHE_DIR` when set, else __pycache__
beside the sources.
"""
from __future__ import annotations

import sys


def add_arguments(p) -> None:
    p.add_argument("--parallel", action="store_true",
                   help="also build the parallel twin of every loop (taken on inputs of 2^18 elements or more "
                        "when a core is idle); about doubles the time")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line and no summary")


def run(args) -> int:
    import numba

    from kernels.numeric.precompile import precompile

    def progress(what: str) -> None:
        print(f"\rcompile: {what:<48}", end="", file=sys.stderr, flush=True)

    rep = precompile(parallel=args.parallel, on_case=None if args.quiet else progress)
    if not args.quiet:
        print("\r" + " " * 60 + "\r", end="", file=sys.stderr)
        where = numba.config.CACHE_DIR or "__pycache__ beside the sources"
        print(f"compile: {rep.specialisations} specialisations of {rep.loops} compiled loops ready "
              f"({rep.cases} numeric cases run) in {rep.seconds:.1f} s; Numba's cache: {where}")
    return 0
