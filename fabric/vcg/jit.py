"""Compiled reduce backend for the CPU (Numba, parallel over slices), and the scalar fold that
`gpu.py` compiles again for CUDA: one definition of the fold for both targets.  `reduce.py`
documents the contract and holds the NumPy reference backend.

Element types: all integer widths and float32/float64.  float16 has no Numba CPU arithmetic:
`reduce_numba` returns None for it and the caller runs the NumPy path.
"""
from __future__ import annotations

import math

import numpy as np

from .reduce import OP_CODES, ReducePlan, identity

ADDSAT, ADD, MIN, MAX = (OP_CODES[k] for k in ("AddSat", "Add", "Min", "Max"))


# ----------------------------------------------------------------------------- scalar ops
# One signature for every element kind: comb(op, a, b, lo, hi, qnan) -> op(a, b).

def _comb_float(op, a, b, lo, hi, qnan):
    if op == ADD:
        return a + b
    an, bn = a != a, b != b
    if an and bn:
        return qnan
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


def _comb_small(op, a, b, lo, hi, qnan):
    """Integers of 8..32 bits: exact in int64; the caller's store wraps (Add) to the width."""
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


def _comb_i64(op, a, b, lo, hi, qnan):
    if op == MAX:
        return a if a > b else b
    if op == MIN:
        return a if a < b else b
    s = a + b                                             # wraps modulo 2**64
    if op == ADDSAT and (a >= 0) == (b >= 0) and (s >= 0) != (a >= 0):
        return hi if a >= 0 else lo
    return s


def _comb_u64(op, a, b, lo, hi, qnan):
    if op == MAX:
        return a if a > b else b
    if op == MIN:
        return a if a < b else b
    s = a + b
    if op == ADDSAT and s < a:
        return hi
    return s


def _make_cell(jit, comb):
    """One output element: fold over the fiber of slot o (see reduce.py for the contract)."""
    @jit
    def cell(s, o, lane, x8, v8, fiber, split, r_in_packet, op, seed, lo, hi, qnan, canon):
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
                    x = comb(op, x, x8[s, t, base + 1], lo, hi, qnan)
                if v4 >= 3:
                    y = x8[s, t, base + 2]
                    if v4 >= 4:
                        y = comb(op, y, x8[s, t, base + 3], lo, hi, qnan)
                    x = comb(op, x, y, lo, hi, qnan)
                acc = comb(op, acc, x, lo, hi, qnan)
            elif lane < v4:
                acc = comb(op, acc, x8[s, t, base + lane], lo, hi, qnan)
        if canon and acc != acc:
            acc = qnan
        return acc
    return cell


def _comb_for(dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return "float", _comb_float
    if dt.itemsize < 8:
        return "small", _comb_small
    return ("i64", _comb_i64) if dt.kind == "i" else ("u64", _comb_u64)


def _scalars(dt, op):
    dt = np.dtype(dt)
    if dt.kind == "f":
        return identity(op, dt)[()], dt.type(0), dt.type(0), dt.type(np.nan)
    info = np.iinfo(dt)
    if dt.itemsize < 8:
        return identity(op, dt)[()], np.int64(info.min), np.int64(info.max), dt.type(0)
    return identity(op, dt)[()], dt.type(info.min), dt.type(info.max), dt.type(0)


# ----------------------------------------------------------------------------- Numba CPU

_CPU: dict[str, object] = {}


def _cpu_kernel(name: str, comb):
    if name not in _CPU:
        import numba
        cell = _make_cell(numba.njit, numba.njit(comb))

        @numba.njit(parallel=True)
        def kernel(x8, v8, fiber, split, r_in_packet, op, seed, lo, hi, qnan, canon, out):
            for s in numba.prange(out.shape[0]):
                for o in range(out.shape[1]):
                    for lane in range(out.shape[2]):
                        out[s, o, lane] = cell(s, o, lane, x8, v8, fiber, split, r_in_packet,
                                               op, seed, lo, hi, qnan, canon)
        _CPU[name] = kernel
    return _CPU[name]


def _launch_args(x8, plan: ReducePlan, op: str):
    seed, lo, hi, qnan = _scalars(x8.dtype, op)
    canon = op == "Add" and x8.dtype.kind == "f"
    return (np.ascontiguousarray(plan.fiber), plan.narrow == "split", plan.r_in_packet,
            OP_CODES[op], seed, lo, hi, qnan, canon)


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
    name, comb = _comb_for(x8.dtype)
    kernel = _cpu_kernel(name, comb)
    acc = np.empty((plan.num_slices, plan.out_steps, plan.out_lanes), dtype=x8.dtype)
    kernel(np.ascontiguousarray(x8), np.ascontiguousarray(v8), *_launch_args(x8, plan, op), acc)
    return _finish(acc, plan)
