"""Compiled reduce backend for the CPU (Numba, parallel over slices), and the scalar fold that
`gpu.py` compiles again for CUDA: one definition of the fold for both targets.  `reduce.py`
documents the contract and holds the NumPy reference backend; `fold.py` the shared pieces.

Element types: all integer widths, float32/float64, and the 16-bit floats float16/bfloat16,
which the kernels read as raw uint16 bits, decode exactly to binary64 (`load`), fold in binary64
with one rounding to the 16-bit format per Add (`round16`), and hand back as binary64 values the
host encodes (fold.encode_narrow): the same arithmetic as fold.py's array functions.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

from .fold import (CANONICAL_NAN_BITS, NARROW, NOT_NARROW, OP_CODES, ReducePlan, encode_narrow,
                   fold_dtype, identity, raw_dtype)

ADDSAT, ADD, MIN, MAX = (OP_CODES[k] for k in ("AddSat", "Add", "Min", "Max"))


# ----------------------------------------------------------------------------- 16-bit floats
# fmt = (t, emin, emax, ebits, bias) of the 16-bit format; every other element type gets the
# 1-tuple NOT_NARROW, so compiled code picks the arithmetic by fmt's *type* (tuple length) and
# float32/float64 folds never see a binary64-widening branch.  Scaling by a power of two is a
# multiplication by an entry of _POW2 (exact; a 6 KB constant, small enough for CUDA constant
# memory), which measured several times faster than math.ldexp in these loops.

_POW2_OFF = 400
_POW2 = np.ldexp(1.0, np.arange(-_POW2_OFF, _POW2_OFF + 1))      # 2^-400 .. 2^400, all normal

def decode16(c, fmt):
    """Exact binary64 value of a 16-bit encoding (NaN payloads dropped: results are canonical)."""
    t, emin, emax, ebits, bias = fmt
    c = np.int64(c)
    emask = (np.int64(1) << ebits) - 1
    E = (c >> t) & emask
    T = c & ((np.int64(1) << t) - 1)
    if E == emask:
        v = math.inf if T == 0 else math.nan
    elif E == 0:
        v = np.float64(T) * _POW2[_POW2_OFF + emin - t]
    else:
        v = np.float64(T + (np.int64(1) << t)) * _POW2[_POW2_OFF + E - bias - t]
    if (c >> (t + ebits)) & 1:
        v = -v
    return v


def round16(s, d, fmt):
    """x = s + delta (delta of sign d, below half an ulp of s) rounded to nearest even in the
    16-bit format, as binary64 (fold.round_narrow, one element)."""
    t, emin, emax, ebits, bias = fmt
    if s != s or s == 0.0 or math.isinf(s):
        return s
    a = abs(s)
    _, ex = math.frexp(a)
    E = ex - 1
    q = (E if E > emin else emin) - t
    y = a * _POW2[_POW2_OFF - q]                          # exact, below 2^(t + 2)
    m = np.int64(math.floor(y))
    frac = y - m
    dm = -d if s < 0 else d
    if frac > 0.5 or (frac == 0.5 and (dm > 0 or (dm == 0 and (m & 1) == 1))):
        m += 1
    r = np.float64(m) * _POW2[_POW2_OFF + q]
    if r > np.float64((np.int64(1) << (t + 1)) - 1) * _POW2[_POW2_OFF + emax - t]:   # above max
        r = math.inf
    return -r if s < 0 else r


def _add16(a, b, fmt):
    s = a + b                                             # TwoSum: exact error e = a + b - s
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return round16(s, np.int64(e > 0) - np.int64(e < 0), fmt)


def _narrow(fmt) -> bool:
    return len(fmt) == 5


def load(x, fmt, witness):
    """An element as the fold computes with it: 16-bit float bits decoded, anything else as is."""
    if _narrow(fmt):
        return decode16(x, fmt)
    return x


def _is_narrow_type(fmt) -> bool:
    return isinstance(fmt, types.BaseTuple) and len(fmt) == 5


@overload(load)
def _load_typed(x, fmt, witness):
    if _is_narrow_type(fmt):
        return lambda x, fmt, witness: decode16(x, fmt)
    return lambda x, fmt, witness: x


@overload(decode16)
def _decode16_typed(c, fmt):
    return decode16


@overload(round16)
def _round16_typed(s, d, fmt):
    return round16


@overload(_add16)
def _add16_typed(a, b, fmt):
    return _add16


# ----------------------------------------------------------------------------- scalar ops
# One signature for every element kind: f(op, a, b, lo, hi, witness, fmt) -> op(a, b).

def _comb_float(op, a, b, lo, hi, witness, fmt):
    if op == ADD:
        return a + b
    return _minmax_float(op, a, b, lo)


def _comb_f16(op, a, b, lo, hi, witness, fmt):
    """float16/bfloat16 as exact binary64 values: Add rounds once to the format."""
    if op == ADD:
        return _add16(a, b, fmt)
    return _minmax_float(op, a, b, lo)


def _minmax_float(op, a, b, lo):
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


def _comb_small(op, a, b, lo, hi, witness, fmt):
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


def _comb_i64(op, a, b, lo, hi, witness, fmt):
    if op == MAX:
        return a if a > b else b
    if op == MIN:
        return a if a < b else b
    s = a + b                                             # wraps modulo 2**64
    if op == ADDSAT and (a >= 0) == (b >= 0) and (s >= 0) != (a >= 0):
        return hi if a >= 0 else lo
    return s


def _comb_u64(op, a, b, lo, hi, witness, fmt):
    if op == MAX:
        return a if a > b else b
    if op == MIN:
        return a if a < b else b
    s = a + b
    if op == ADDSAT and s < a:
        return hi
    return s


def comb(op, a, b, lo, hi, witness, fmt):
    """op(a, b).  `witness` is a zero of the type the fold computes in and selects the arithmetic:
    this Python body serves the CUDA simulator; compiled targets pick the same function by type
    (overload)."""
    return _COMB[_comb_kind(np.asarray(witness).dtype, _narrow(fmt))](op, a, b, lo, hi, witness, fmt)


def _comb_kind(dt, narrow: bool = False) -> str:
    if dt.kind == "f":
        return "f16" if narrow else "float"
    if dt.itemsize < 8:
        return "small"
    return "i64" if dt.kind == "i" else "u64"


_COMB = {"float": _comb_float, "f16": _comb_f16, "small": _comb_small, "i64": _comb_i64, "u64": _comb_u64}


@overload(_minmax_float)
def _minmax_float_typed(op, a, b, lo):
    return _minmax_float


@overload(comb)
def _comb_typed(op, a, b, lo, hi, witness, fmt):
    if isinstance(witness, types.Float):
        return _comb_f16 if _is_narrow_type(fmt) else _comb_float
    if witness.bitwidth < 64:
        return _comb_small
    return _comb_i64 if witness.signed else _comb_u64


def cell(s, o, lane, x8, v8, fiber, split, r_in_packet, op, seed, lo, hi, witness, fmt, canon, qnan):
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
            x = load(x8[s, t, base], fmt, witness)
            if v4 >= 2:
                x = comb(op, x, load(x8[s, t, base + 1], fmt, witness), lo, hi, witness, fmt)
            if v4 >= 3:
                y = load(x8[s, t, base + 2], fmt, witness)
                if v4 >= 4:
                    y = comb(op, y, load(x8[s, t, base + 3], fmt, witness), lo, hi, witness, fmt)
                x = comb(op, x, y, lo, hi, witness, fmt)
            acc = comb(op, acc, x, lo, hi, witness, fmt)
        elif lane < v4:
            acc = comb(op, acc, load(x8[s, t, base + lane], fmt, witness), lo, hi, witness, fmt)
    if canon and acc != acc:
        acc = qnan
    return acc


def _scalars(dt, op):
    """(seed, lo, hi, witness, qnan) for an element dtype (16-bit floats: binary64 values)."""
    dt = fold_dtype(dt)
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
def _kernel_cpu(x8, v8, fiber, split, r_in_packet, op, seed, lo, hi, witness, fmt, canon, qnan, out):
    for s in numba.prange(out.shape[0]):
        for o in range(out.shape[1]):
            for lane in range(out.shape[2]):
                out[s, o, lane] = _cell_cpu(s, o, lane, x8, v8, fiber, split, r_in_packet,
                                            op, seed, lo, hi, witness, fmt, canon, qnan)


def kernel_input(x8):
    """The flits as the kernels read them: 16-bit floats as their raw uint16 bits."""
    return x8.view(raw_dtype(x8.dtype)) if x8.dtype in NARROW else x8


def _launch_args(x8, plan: ReducePlan, op: str):
    """Kernel arguments after (x8, v8): fiber, split, r_in_packet, op, seed, lo, hi, witness,
    fmt, canon, qnan."""
    seed, lo, hi, witness, qnan = _scalars(x8.dtype, op)
    canon = op == "Add" and fold_dtype(x8.dtype).kind == "f"
    nf = NARROW.get(x8.dtype)
    fmt = NOT_NARROW if nf is None else nf.params
    return (np.ascontiguousarray(plan.fiber), plan.narrow == "split", plan.r_in_packet,
            OP_CODES[op], seed, lo, hi, witness, tuple(np.int64(v) for v in fmt), canon, qnan)


def _finish(acc, plan: ReducePlan, dtype, xp=np):
    """The kernels' accumulator [S, O, out_lanes] (binary64 for 16-bit floats) -> out [S, O, 4]."""
    dt = np.dtype(dtype)
    nf = NARROW.get(dt)
    if nf is not None:
        with np.errstate(all="ignore"):
            acc = encode_narrow(acc, nf, CANONICAL_NAN_BITS[dt], xp).view(dt)
    s, o = plan.num_slices, plan.out_steps
    if plan.r_in_packet:
        out = xp.zeros((s, o, 4), dtype=acc.dtype)
        out[..., 0] = acc[..., 0]
        return out
    return acc


def reduce_numba(x8, v8, plan: ReducePlan, op: str):
    """[S, T, 8], [S, T] -> out [S, O, 4] of x8's dtype."""
    acc = np.empty((plan.num_slices, plan.out_steps, plan.out_lanes), dtype=fold_dtype(x8.dtype))
    _kernel_cpu(np.ascontiguousarray(kernel_input(x8)), np.ascontiguousarray(v8),
                *_launch_args(x8, plan, op), acc)
    return _finish(acc, plan, x8.dtype)
