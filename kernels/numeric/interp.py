"""Whether the numeric layer's compiled paths are off (`interpreted`): a module of its own so that
the tier table (tiers.py) and the conversions (convert.py) read one flag without importing each
other or Numba."""
from __future__ import annotations

from contextlib import contextmanager

INTERPRETED = [False]          # a list: read as INTERPRETED[0] on hot paths, set by `interpreted`


@contextmanager
def interpreted():
    """Within the block, no compiled path serves -- neither the tiers of kind 'kernels' nor the
    8-bit tables, whose lookups are compiled loops, nor the compiled conversions -- so every
    floating operation and conversion runs the NumPy reference (or, for the other profiles'
    rules, its compositions) and nothing imports Numba.  The bits and flags are the same by
    construction: every compiled path computes the reference's results (docs/numerics.md;
    tests/kernels compare them).  For work smaller than loading the compiled kernels: `tile-emu
    run` of a short stream on one machine."""
    before = INTERPRETED[0]
    INTERPRETED[0] = True
    try:
        yield
    finally:
        INTERPRETED[0] = before
