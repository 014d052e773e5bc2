"""Compiled reduce backend for the CPU (Numba, parallel over slices when large), and the scalar
fold that `gpu.py` compiles again for CUDA: one definition of the fold for both targets.
`reduce.py` documents the contract and holds the NumPy reference backend; `fold.py` the shared
pieces.

Element types: all integer widths, float32/float64, and the 16-bit floats float16/bfloat16,
which the kernels read as raw uint16 bits, decode exactly (`load`: float16 to binary64,
bfloat16 to binary32), fold with one rounding to the 16-bit format per Add (`_add16`,
`_add_bf16`: the format's IEEE add, TADD), and hand back as values the host encodes
(kernels.numeric.encode).  Every format parameter and special encoding the compiled code uses is
read from the format table (kernels/numeric/formats.py) at import: the float16 fold's `fmt`
tuple, binary64's fields, bfloat16's place in binary32 -- constants of the compiled code, so no
slower than literals -- and bfloat16's decoding and rounding are fastvec.py's own (`_bf16`,
`_rne_bf16`, the carry trick).
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

from kernels.numeric import formats
from kernels.numeric.convert import encode
from kernels.numeric.fast import PARALLEL_MIN, Twin, idle_core
from kernels.numeric.fastvec import _bf16 as bf16_value, _rne_bf16

from .fold import BF16, DATATYPE, NARROW, OP_CODES, ReducePlan, fold_dtype, identity, raw_dtype

ADDSAT, ADD, MIN, MAX = (OP_CODES[k] for k in ("AddSat", "Add", "Min", "Max"))


# ----------------------------------------------------------------------------- 16-bit floats
# fmt = (t, emin, emax, ebits, bias) of float16 (its format row), which folds in binary64;
# bfloat16 gets the 2-tuple BF16_FMT and folds in binary32 (whose encoding it truncates); every
# other element type gets the 1-tuple NOT_NARROW, so compiled code picks the arithmetic by fmt's
# *type* (tuple length) and float32/float64 folds never see a widening branch.  Scaling by a power of two is a
# multiplication by an entry of _POW2 (exact; a 6 KB constant, small enough for CUDA constant
# memory), which measured several times faster than math.ldexp in these loops.

_POW2_OFF = 400
_POW2 = np.ldexp(1.0, np.arange(-_POW2_OFF, _POW2_OFF + 1))      # 2^-400 .. 2^400, all normal

# Both routines work on the binary64 encoding (a scalar `view`, which Numba compiles for the CPU
# and CUDA alike) rather than through frexp/floor and data-dependent branches: the sign and the
# round-up decision of random data are coin flips the CPU mispredicts, which made these folds
# 5-10x slower than NumPy's float16 arithmetic.  The rare cases (zero, subnormal, Inf/NaN) keep
# their branches, which are well predicted.

_F64 = formats.FORMATS["FP64"]
_F64_BIAS, _F64_T = _F64.bias, _F64.t
_F64_MAG = _F64.mag_mask
_F64_INF = formats.inf_bits("FP64")
_F64_QNAN = formats.nan_bits("FP64")
_F64_TOP = (1 << _F64.ebits) - 1                       # the all-ones exponent field (Inf/NaN)


def decode16(c, fmt):
    """Exact binary64 value of a 16-bit encoding (NaN payloads dropped: results are canonical)."""
    t, emin, emax, ebits, bias = fmt
    c = np.int64(c)
    emask = (np.int64(1) << ebits) - 1
    E = (c >> t) & emask
    T = c & ((np.int64(1) << t) - 1)
    if E == 0:
        v = np.float64(T) * _POW2[_POW2_OFF + emin - t]
    elif E == emask:
        v = np.int64(_F64_INF if T == 0 else _F64_QNAN).view(np.float64)
    else:                                                  # a normal number: place its fields
        v = np.int64(((E - bias + _F64_BIAS) << _F64_T) | (T << (_F64_T - t))).view(np.float64)
    return v * np.float64(1 - 2 * ((c >> (t + ebits)) & 1))   # the sign, exactly, without a branch


def round16(s, fmt):
    """A binary64 value rounded to nearest even in the 16-bit format, as binary64 (overflow
    gives infinity, as IEEE RNE does)."""
    t, emin, emax, ebits, bias = fmt
    b = np.float64(s).view(np.int64)
    a = b & _F64_MAG
    # one unsigned compare: the exponent field outside [emin + bias, 0x7FE] is 0, a value below
    # 2^emin, Inf or NaN
    if np.uint64((a >> _F64_T) - (emin + _F64_BIAS)) >= np.uint64(_F64_TOP - (emin + _F64_BIAS)):
        return _round16_rare(s, fmt)
    # RNE to t fraction bits on the encoding: add just under half of the dropped part, plus the
    # kept part's last bit (ties to even), then truncate; a carry out of the fraction bumps the
    # exponent, as rounding up to the next binade does
    sh = _F64_T - t
    r = ((a + ((np.int64(1) << (sh - 1)) - 1) + ((a >> sh) & 1)) >> sh) << sh
    top = ((emax + _F64_BIAS) << _F64_T) | (((np.int64(1) << t) - 1) << sh)   # the format's max
    r = r if r <= top else np.int64(_F64_INF)
    return np.int64(r | (b ^ a)).view(np.float64)          # b ^ a: s's sign bit


def _round16_rare(s, fmt):
    """round16 of 0, Inf, NaN (themselves) and of |s| < 2^emin, where the quantum is fixed at
    2^(emin - t)."""
    t, emin, emax, ebits, bias = fmt
    if s != s or s == 0.0 or math.isinf(s):
        return s
    q = emin - t
    y = abs(s) * _POW2[_POW2_OFF - q]                     # exact, below 2^t
    m = np.int64(math.floor(y))
    frac = y - m
    if frac > 0.5 or (frac == 0.5 and (m & 1) == 1):
        m += 1
    r = np.float64(m) * _POW2[_POW2_OFF + q]
    return -r if s < 0 else r


def _add16(a, b, fmt):
    """IEEE add in the 16-bit format (RNE) of two of its values, given as binary64: the binary64
    sum rounded once more.  That double rounding is innocuous -- binary64 has p = 53 >= 2p + 2
    for both formats (Figueroa, 1995; reduce_xp relies on the same for binary32) -- and here
    plainly so: an FP16 sum is always exact in binary64 (its values span 2^-24..2^16), and an
    inexact BF16 sum has |smaller| < 2^-44 |larger|, so neither it nor its binary64 rounding is
    near a midpoint of the format.  So no TwoSum error term is needed (fold.round_narrow, the
    array twin, still takes one; the tests hold both to an exact-rational fold).  The compiled
    fold uses it for float16; bfloat16 takes the shorter `_add_bf16`."""
    return round16(a + b, fmt)


BF16_FMT = (-2, -2)            # bfloat16's fmt: a 2-tuple, folded in binary32
NOT_NARROW = (-1,)             # the fmt of every other element type


def decode_bf16(c):
    """Exact binary32 value of a bfloat16 encoding (fastvec's: the top half of a binary32 one)."""
    return bf16_value(c)


def _add_bf16(a, b):
    """bfloat16 add of two of its values held as binary32: the binary32 sum (operands exact;
    p = 24 >= 2 * 8 + 2, so rounding twice is innocuous, subnormals and overflow included)
    rounded to nearest even by fastvec's carry trick on the encoding (`_rne_bf16`), a carry
    running into the exponent -- binary32 overflow and the bfloat16 max + half an ulp both become
    infinity, as IEEE RNE does.  A binary32 accumulator keeps the fold's dependent chain short."""
    s = a + b
    if s != s:
        return s
    code, _, _ = _rne_bf16(np.float32(s).view(np.uint32))
    return bf16_value(code)


def _narrow(fmt) -> bool:
    return len(fmt) == 5


def _bf16(fmt) -> bool:
    return len(fmt) == 2


def load(x, fmt, witness):
    """An element as the fold computes with it: 16-bit float bits decoded, anything else as is."""
    if _narrow(fmt):
        return decode16(x, fmt)
    if _bf16(fmt):
        return decode_bf16(x)
    return x


def _is_narrow_type(fmt) -> bool:
    return isinstance(fmt, types.BaseTuple) and len(fmt) == 5


def _is_bf16_type(fmt) -> bool:
    return isinstance(fmt, types.BaseTuple) and len(fmt) == 2


@overload(load)
def _load_typed(x, fmt, witness):
    if _is_narrow_type(fmt):
        return lambda x, fmt, witness: decode16(x, fmt)
    if _is_bf16_type(fmt):
        return lambda x, fmt, witness: decode_bf16(x)
    return lambda x, fmt, witness: x


@overload(decode_bf16)
def _decode_bf16_typed(c):
    return decode_bf16


@overload(decode16)
def _decode16_typed(c, fmt):
    return decode16


@overload(round16)
def _round16_typed(s, fmt):
    return round16


@overload(_round16_rare)
def _round16_rare_typed(s, fmt):
    return _round16_rare


@overload(_add16)
def _add16_typed(a, b, fmt):
    return _add16


@overload(_add_bf16)
def _add_bf16_typed(a, b):
    return _add_bf16


# ----------------------------------------------------------------------------- scalar ops
# One signature for every element kind: f(op, a, b, lo, hi, witness, fmt) -> op(a, b).

def _comb_float(op, a, b, lo, hi, witness, fmt):
    if op == ADD:
        return a + b
    return _minmax_float(op, a, b, lo)


def _comb_bf16(op, a, b, lo, hi, witness, fmt):
    """bfloat16 as binary32 values: Add rounds once to the format."""
    if op == ADD:
        return _add_bf16(a, b)
    return _minmax_float(op, a, b, lo)


def _comb_f16(op, a, b, lo, hi, witness, fmt):
    """float16 as exact binary64 values: Add rounds once to the format."""
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
    kind = "bf16" if _bf16(fmt) else _comb_kind(np.asarray(witness).dtype, _narrow(fmt))
    return _COMB[kind](op, a, b, lo, hi, witness, fmt)


def _comb_kind(dt, narrow: bool = False) -> str:
    if dt.kind == "f":
        return "f16" if narrow else "float"
    if dt.itemsize < 8:
        return "small"
    return "i64" if dt.kind == "i" else "u64"


_COMB = {"float": _comb_float, "f16": _comb_f16, "bf16": _comb_bf16, "small": _comb_small,
         "i64": _comb_i64, "u64": _comb_u64}


@overload(_minmax_float)
def _minmax_float_typed(op, a, b, lo):
    return _minmax_float


@overload(comb)
def _comb_typed(op, a, b, lo, hi, witness, fmt):
    if isinstance(witness, types.Float):
        if _is_bf16_type(fmt):
            return _comb_bf16
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
    """(seed, lo, hi, witness, qnan) for an element dtype, of the type the fold computes in."""
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


def _kernel_cpu(x8, v8, fiber, split, r_in_packet, op, seed, lo, hi, witness, fmt, canon, qnan, out):
    for s in numba.prange(out.shape[0]):
        for o in range(out.shape[1]):
            for lane in range(out.shape[2]):
                out[s, o, lane] = _cell_cpu(s, o, lane, x8, v8, fiber, split, r_in_packet,
                                            op, seed, lo, hi, witness, fmt, canon, qnan)


# built serial and parallel; a small reduce, or one on a machine without an idle core, never
# enters the parallel region (kernels.numeric.fast's rule: on a busy 2-core box the second
# thread's wait made a 2^14-element reduce 40x slower than the serial loop)
_kernel_twin = Twin(_kernel_cpu)


def _use_parallel(fold_steps: int) -> bool:
    return fold_steps >= PARALLEL_MIN and numba.get_num_threads() > 1 and idle_core()


def kernel_input(x8):
    """The flits as the kernels read them: 16-bit floats as their raw uint16 bits."""
    return x8.view(raw_dtype(x8.dtype)) if x8.dtype in NARROW else x8


def _launch_args(x8, plan: ReducePlan, op: str):
    """Kernel arguments after (x8, v8): fiber, split, r_in_packet, op, seed, lo, hi, witness,
    fmt, canon, qnan."""
    seed, lo, hi, witness, qnan = _scalars(x8.dtype, op)
    canon = op == "Add" and fold_dtype(x8.dtype).kind == "f"
    return (np.ascontiguousarray(plan.fiber), plan.narrow == "split", plan.r_in_packet,
            OP_CODES[op], seed, lo, hi, witness, kernel_fmt(x8.dtype), canon, qnan)


def kernel_fmt(dtype) -> tuple:
    """The fmt argument of the compiled fold for an element dtype (see the 16-bit floats above)."""
    dt = np.dtype(dtype)
    if dt == BF16:
        fmt = BF16_FMT
    elif dt in NARROW:
        f = formats.FORMATS[DATATYPE[dt]]
        fmt = (f.t, f.emin, f.emax, f.ebits, f.bias)
    else:
        fmt = NOT_NARROW
    return tuple(np.int64(v) for v in fmt)


def _finish(acc, plan: ReducePlan, dtype, xp=np):
    """The kernels' accumulator [S, O, out_lanes] (float16: binary64, bfloat16: binary32 values)
    -> out [S, O, 4]."""
    dt = np.dtype(dtype)
    if dt in NARROW:                  # values of the format: encoded exactly (NaN: the canonical one)
        acc = encode(acc.astype(np.float64), DATATYPE[dt]).view(dt)
    s, o = plan.num_slices, plan.out_steps
    if plan.r_in_packet:
        out = xp.zeros((s, o, 4), dtype=acc.dtype)
        out[..., 0] = acc[..., 0]
        return out
    return acc


def reduce_numba(x8, v8, plan: ReducePlan, op: str):
    """[S, T, 8], [S, T] -> out [S, O, 4] of x8's dtype."""
    acc = np.empty((plan.num_slices, plan.out_steps, plan.out_lanes), dtype=fold_dtype(x8.dtype))
    twin = _kernel_twin
    kernel = twin.parallel if _use_parallel(acc.size * plan.fiber.shape[1]) else twin.serial
    kernel(np.ascontiguousarray(kernel_input(x8)), np.ascontiguousarray(v8),
           *_launch_args(x8, plan, op), acc)
    return _finish(acc, plan, x8.dtype)
