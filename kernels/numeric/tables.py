"""Exact lookup tables for small formats: the reference operation evaluated once on every input.

    binary 8-bit formats (E4M3, E5M2): 256 x 256 entries per (op, format, profile[, cmode])
    unary formats of <= 16 bits:       2^16 (FP16, BF16) or 256 entries
(8-bit TFMA would need 2^24 entries, whose random gathers cost more than computing: fast.py.)

An entry holds the result encoding and its flags, both produced by the reference
implementation (ops_float / transcendental) applied to every code, so a table is a cache of the
reference, not a second definition.  Tables are plain NumPy arrays built vectorised at first use
and kept for the process (they can be copied to a device as they are); the index of a binary
entry is (a << 8) | b, of a ternary one (a << 16) | (b << 8) | c.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import formats

# operations that are pure bit manipulations: cheaper computed than looked up
DIRECT = frozenset({"TABS", "TNEG"})


def _codes(width: int, raw) -> np.ndarray:
    return np.arange(1 << width, dtype=np.uint64).astype(raw)


@lru_cache(maxsize=None)
def table(op: str, name: str, prof, cmode, fn, arity: int):
    """(bits, flags) arrays indexed by the packed operand codes (see module doc)."""
    f = formats.FORMATS[name]
    raw = np.dtype(f"u{max(1, f.width // 8)}")
    codes = _codes(f.width, raw)
    kw = {"prof": prof} if cmode is None else {"prof": prof, "cmode": cmode}
    with np.errstate(all="ignore"):
        if arity == 1:
            return fn(name, codes, **kw)
        a, b = np.meshgrid(codes, codes, indexing="ij")
        return fn(name, a.ravel(), b.ravel(), **kw)


def applies(op: str, name: str, arity: int) -> bool:
    """Whether (op, format) is served by a table: 8-bit formats for unary and binary operations,
    16-bit formats for unary ones, never the sign-bit operations."""
    if op in DIRECT or arity > 2:
        return False
    width = formats.FORMATS[name].width
    return width <= 8 or (arity == 1 and width <= 16)


def lookup(op: str, name: str, prof, cmode, fn, operands):
    """Gather the results of `op` for the operands from its table (compiled loop for NumPy
    arrays, array indexing otherwise)."""
    arity = len(operands)
    bits, flags = table(op, name, prof, cmode, fn, arity)
    if isinstance(operands[0], np.ndarray):
        from . import fast
        out_b = np.empty(operands[0].shape[0], bits.dtype)
        out_f = np.empty(operands[0].shape[0], np.uint8)
        (fast.lookup1 if arity == 1 else fast.lookup2)(bits, flags, *operands, out_b, out_f)
        return out_b, out_f
    if arity == 1:
        idx = operands[0]
    else:
        idx = (operands[0].astype(np.uint16) << np.uint16(8)) | operands[1]
    return bits[idx], flags[idx]
