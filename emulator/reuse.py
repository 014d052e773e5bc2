"""Result arrays handed out again once nothing holds them: the one pool of the compiled block
programs (emulator/blockprog.py: a block's result array becomes its destination tiles' storage)
and of the batch engine's fused pass (emulator/batchfuse.py: a 16 MB result a 4,096-machine
block).  A fresh large array a block costs page faults and the kernel's zeroing whenever the
allocator has handed the last one back to the system (a 256 KiB one cost as much as a 4 x 128x128
TADD loop), and its memory is cold.

An array is free when its reference count shows the pool's own references only: the tiles a
block committed, a cohort's slots, the engine's caches, an array handed to a caller, a buffer
export and every NumPy view of it (a view keeps its base array alive) hold one, so a free array
belongs to no state, tile or caller and may be overwritten.  The pools are per thread, so no
other thread can take the same array between the test and the write.  A free-threaded CPython
(3.13t) counts references per thread and defers some: there no count can show that nothing else
holds an array, and every call gets a fresh one."""
from __future__ import annotations

import sys
import threading

import numpy as np

POOL_MIN_BYTES = 1 << 16        # below this, np.empty is cheap (the allocator's free lists)
POOL_DEPTH = 4                  # arrays kept per (shape, dtype): a block's result and the one it replaces, ...
POOL_KEYS = 32                  # (shape, dtype) pairs kept per thread; beyond, the pools start afresh
_POOLS = threading.local()
_getrefcount = sys.getrefcount


def _first_free(pool: list, free: int):
    """The first array of `pool` whose reference count is `free` (what an array referenced by
    the pool alone reads here), or None."""
    for buf in pool:
        if _getrefcount(buf) == free:
            return buf
    return None


def _calibrated() -> int:
    """The reference count _first_free reads for a kept array nothing else references (3 on
    CPython 3.11: the pool's, the loop variable's, the argument's), measured once rather than
    assumed, so that an interpreter counting otherwise finds nothing free instead of reusing
    a held array (a held array always reads more)."""
    for free in range(1, 16):
        if _first_free([np.empty(0)], free) is not None:
            return free
    return -1                       # never matches: no reuse


REUSE = getattr(sys, "_is_gil_enabled", lambda: True)()
_FREE = _calibrated() if REUSE else -1


def destination(shape: tuple, dtype, nbytes: int) -> np.ndarray:
    """A writable array of `shape` and `dtype` that nothing else references (contents arbitrary):
    one of this thread's kept arrays when one is free, else a new one (kept if there is room)."""
    if nbytes < POOL_MIN_BYTES:
        return np.empty(shape, dtype)
    pools = _POOLS.__dict__
    key = (shape, dtype)
    pool = pools.get(key)
    if pool is None:
        if len(pools) >= POOL_KEYS:
            pools.clear()
        pool = pools[key] = []
    buf = _first_free(pool, _FREE)
    if buf is not None:
        buf.setflags(write=True)        # stacked_tiles made it read-only; it owns its memory
        return buf
    buf = np.empty(shape, dtype)
    if len(pool) < POOL_DEPTH:
        pool.append(buf)
    return buf


def kept(arr: np.ndarray) -> bool:
    """Whether this thread's pools keep `arr` (then the pool holds one reference to it beyond
    its other holders': the batch engine's count of who holds a spent destination needs it)."""
    return any(b is arr for pool in _POOLS.__dict__.values() for b in pool)
