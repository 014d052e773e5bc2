"""Compiled reduce backend for the CPU (Numba, parallel over slices), and the scalar fold that
`gpu.py` compiles again for CUDA: one definition of the fold for both targets.  `reduce.py`
documents the contract and holds the NumPy reference backend.

Element types: all integer widths and float32/float64.  float16 has no Numba CPU arithmetic:
`reduce_numba` returns None for it and the caller runs the NumPy path.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

from .reduce import OP_CODES, ReducePlan, identity

ADDSAT, ADD, MIN, MAX = (OP_CODES[k] for k in ("AddSat", "Add", "Min", "Max"))


# ----------------------------------------------------------------------------- scalar ops
# One signature for every element kind: f(op, a, b, lo, hi, witness) -> op(a, b).

def _comb_float(op, a, b, lo, hi, witness):
    if op == ADD:
        return a + b
    an, bn = a != a, b != b
    if an and bn:
        return lo                                         # floats pass the canonical NaN as lo
    if an:
        return b
    if bn:
        return a
    if op == MAX:
        if a > b:
            return a
        if b > a:
            return b
        return a if math.copysign(1.0, a) > 0 else b      # +0/-0 tie -> +0
    if a < b:
        return a
    if b < a:
        return b
    return a if math.copysign(1.0, a) < 0 else b          # +0/-0 tie -> -0


def _comb_small(op, a, b, lo, hi, witness):
    """Integers of 8..32 bits: exact in int64, then saturated (AddSat) or wrapped (Add) into
    [lo, hi] so every stored value is in range."""
    x, y = np.int64(a), np.int64(b)
    if op == MAX:
        return x if x > y else y
    if op == MIN:
        return x if x < y else y
    s = x + y
    if op == ADDSAT:
        if s > hi:
            return hi
        if s < lo:
            return lo
        return s
    return (s - lo) % (hi - lo + 1) + lo


def _comb_i64(op, a, b, lo, hi, witness):
    if op == MAX:
        return a if a > b else b
    if op == MIN:
        return a if a < b else b
    s = a + b                                             # wraps modulo 2**64
    if op == ADDSAT and (a >= 0) == (b >= 0) and (s >= 0) != (a >= 0):
        return hi if a >= 0 else lo
    return s


def _comb_u64(op, a, b, lo, hi, witness):
    if op == MAX:
        return a if a > b else b
    if op == MIN:
        return a if a < b else b
    s = a + b
    if op == ADDSAT and s < a:
        return hi
    return s


def comb(op, a, b, lo, hi, witness):
    """op(a, b).  `witness` is a zero of the element type and selects the arithmetic: this Python
    body serves the CUDA simulator; compiled targets pick the same function by type (overload)."""
    return _COMB[_comb_kind(np.asarray(witness).dtype)](op, a, b, lo, hi, witness)


def _comb_kind(dt) -> str:
    if dt.kind == "f":
        return "float"
    if dt.itemsize < 8:
        return "small"
    return "i64" if dt.kind == "i" else "u64"


_COMB = {"float": _comb_float, "small": _comb_small, "i64": _comb_i64, "u64": _comb_u64}


@overload(comb)
def _comb_typed(op, a, b, lo, hi, witness):
    if isinstance(witness, types.Float):
        return _comb_float
    if witness.bitwidth < 64:
        return _comb_small
    return _comb_i64 if witness.signed else _comb_u64


def cell(s, o, lane, x8, v8, fiber, split, r_in_packet, op, seed, lo, hi, witness, canon, qnan):
    """One output element: fold over the fiber of slot o (see reduce.py for the contract)."""
    acc = seed
    for j in range(fiber.shape[1]):
        t4 = fiber[o, j]
        if split:
            t, half = t4 // 2, t4 % 2
        else:
            t, half = t4, 0
        v = np.int64(v8[s, t])
        if half == 0:
            v4 = v if v < 4 else 4
        else:
            v4 = v - 4 if v > 4 else 0
            v4 = v4 if v4 < 4 else 4
        base = 4 * half
        if r_in_packet:
            if v4 == 0:
                continue
            x = x8[s, t, base]
            if v4 >= 2:
                x = comb(op, x, x8[s, t, base + 1], lo, hi, witness)
            if v4 >= 3:
                y = x8[s, t, base + 2]
                if v4 >= 4:
                    y = comb(op, y, x8[s, t, base + 3], lo, hi, witness)
                x = comb(op, x, y, lo, hi, witness)
            acc = comb(op, acc, x, lo, hi, witness)
        elif lane < v4:
            acc = comb(op, acc, x8[s, t, base + lane], lo, hi, witness)
    if canon and acc != acc:
        acc = qnan
    return acc


def _scalars(dt, op):
    """(seed, lo, hi, witness, qnan) for an element dtype."""
    dt = np.dtype(dt)
    seed, zero = identity(op, dt)[()], dt.type(0)
    if dt.kind == "f":
        qnan = dt.type(np.nan)                               # canonical quiet NaN
        return seed, qnan, qnan, zero, qnan
    info = np.iinfo(dt)
    wide = np.int64 if dt.itemsize < 8 else dt.type
    return seed, wide(info.min), wide(info.max), zero, zero


# ----------------------------------------------------------------------------- Numba CPU

_cell_cpu = numba.njit(cache=True)(cell)


@numba.njit(parallel=True, cache=True)
def _kernel_cpu(x8, v8, fiber, split, r_in_packet, op, seed, lo, hi, witness, canon, qnan, out):
    for s in numba.prange(out.shape[0]):
        for o in range(out.shape[1]):
            for lane in range(out.shape[2]):
                out[s, o, lane] = _cell_cpu(s, o, lane, x8, v8, fiber, split, r_in_packet,
                                            op, seed, lo, hi, witness, canon, qnan)


def _launch_args(x8, plan: ReducePlan, op: str):
    """Kernel arguments after (x8, v8): fiber, split, r_in_packet, op, seed, lo, hi, witness,
    canon, qnan."""
    seed, lo, hi, witness, qnan = _scalars(x8.dtype, op)
    canon = op == "Add" and x8.dtype.kind == "f"
    return (np.ascontiguousarray(plan.fiber), plan.narrow == "split", plan.r_in_packet,
            OP_CODES[op], seed, lo, hi, witness, canon, qnan)


def _finish(acc, plan: ReducePlan, xp=np):
    s, o = plan.num_slices, plan.out_steps
    if plan.r_in_packet:
        out = xp.zeros((s, o, 4), dtype=acc.dtype)
        out[..., 0] = acc[..., 0]
        return out
    return acc


def reduce_numba(x8, v8, plan: ReducePlan, op: str):
    """[S, T, 8], [S, T] -> out [S, O, 4]; None when the element type has no Numba arithmetic."""
    if x8.dtype == np.float16:
        return None
    acc = np.empty((plan.num_slices, plan.out_steps, plan.out_lanes), dtype=x8.dtype)
    _kernel_cpu(np.ascontiguousarray(x8), np.ascontiguousarray(v8), *_launch_args(x8, plan, op), acc)
    return _finish(acc, plan)
