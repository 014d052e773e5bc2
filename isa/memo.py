"""The tree's one cache policy (docs/machine.md, "Caches"), and the helper for its first rule.

1. A fact derived from one immutable object alone is kept on that object: a
   `functools.cached_property` of its class, or `memo(obj)` for a function outside it (a Block's
   resolution, a resolved block's destination descriptors).  It lives exactly as long as the
   object, so it needs neither a bound nor an `id()` key, and pickles and copies of the object
   leave it out (`Memoised`).
2. A pure function of small hashable values is a `functools.lru_cache` whose bound is stated
   where it is defined (decoded words, layout index grids, fusion verdicts).
3. Interned immutable values (emulator.tiles.intern) are a `weakref.WeakValueDictionary`: one
   object per distinct value while something still holds it.

Only successes are kept: a rejection is computed afresh, identically, every time.
"""
from __future__ import annotations

MEMO = "_memo"


def memo(obj) -> dict:
    """The dict of facts kept on immutable `obj` (created on first use; see rule 1)."""
    d = obj.__dict__
    m = d.get(MEMO)
    if m is None:
        m = d[MEMO] = {}
    return m


class Memoised:
    """Base of the frozen dataclasses that carry a `memo`: pickling and copying leave it out,
    since it is derived, not state."""

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop(MEMO, None)
        return state
