"""The fold every reduce backend shares: element types, ops, identities, the plan's shape and the
16-bit float arithmetic.  The bottom layer of the reduce: `reduce.py` (NumPy/CuPy backend and
dispatch), `jit.py` (the compiled scalar fold) and `gpu.py` (its CUDA kernel) import from here
and never from each other upward.  docs/vcg.md "Reduction order" is the contract.

16-bit floats (FP16 = float16, BF16 = ml_dtypes.bfloat16) have no native arithmetic on every
backend, so every backend gives the bits of one rule: each Add is the exact sum rounded to
nearest even in the 16-bit format, as IEEE add in that format.  The array functions here
decode each encoding exactly to a binary64 value and round each Add once to the format, TwoSum
giving the sign of the binary64 sum's exact error for a sum exactly on a midpoint; the compiled
kernels (jit.py) fold float16 in binary64 and bfloat16 in binary32 without that term, which
cannot change the result (jit._add16 says why).  Max/Min compare the exact values.  Results
are encoded back; NaN results are the format's canonical quiet NaN.
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
SUPPORTED_DTYPES = tuple(np.dtype(t) for t in (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", BF16, "float32", "float64"))
# op name -> element kinds it is defined for (seed: IntraSliceReduceOpI32 / OpF32, plus integer Add)
OPS: dict[str, tuple[str, ...]] = {"AddSat": ("int",), "Add": ("int", "float"),
                                   "Min": ("int", "float"), "Max": ("int", "float")}
OP_CODES = {"AddSat": 0, "Add": 1, "Min": 2, "Max": 3}
CANONICAL_NAN_BITS = {np.dtype(np.float16): 0x7E00, BF16: 0x7FC0,
                      np.dtype(np.float32): 0x7FC00000, np.dtype(np.float64): 0x7FF8000000000000}


@dataclass(frozen=True)
class NarrowFloat:
    """A 16-bit binary format: t trailing significand bits, ebits exponent bits, bias."""
    t: int
    ebits: int
    bias: int

    @property
    def emin(self) -> int:
        return 1 - self.bias

    @property
    def emax(self) -> int:
        return (1 << self.ebits) - 2 - self.bias

    @property
    def max(self) -> float:
        return float((2 - 2.0 ** -self.t) * 2.0 ** self.emax)

    @property
    def params(self) -> tuple[int, int, int, int, int]:
        """(t, emin, emax, ebits, bias): the int tuple the compiled fold takes."""
        return (self.t, self.emin, self.emax, self.ebits, self.bias)


NARROW: dict[np.dtype, NarrowFloat] = {np.dtype(np.float16): NarrowFloat(10, 5, 15), BF16: NarrowFloat(7, 8, 127)}
NOT_NARROW = (-1,)            # the compiled fold's fmt for every other element type


def is_float(dt) -> bool:
    dt = np.dtype(dt)
    return dt.kind == "f" or dt == BF16


def kind(dtype) -> str:
    dt = np.dtype(dtype)
    if dt not in SUPPORTED_DTYPES:
        raise TypeError(f"element type {dt} is not supported; use one of "
                        f"{', '.join(map(str, SUPPORTED_DTYPES))}")
    return "float" if is_float(dt) else "int"


def check_op(op: str, dtype) -> None:
    if op not in OPS:
        raise ValueError(f"unknown reduce op {op!r}; known: {', '.join(OPS)}")
    if kind(dtype) not in OPS[op]:
        raise ValueError(f"reduce op {op} is not defined for {np.dtype(dtype)} "
                         f"(float ops: Add, Min, Max; integer ops: AddSat, Add, Min, Max)")


def identity(op: str, dtype):
    """The seed of the fold: the op's identity element as a 0-d array of `dtype`."""
    dt = np.dtype(dtype)
    if is_float(dt):
        return np.array({"Add": -0.0, "Max": -np.inf, "Min": np.inf}[op], dtype=dt)
    info = np.iinfo(dt)
    return np.array({"AddSat": 0, "Add": 0, "Max": info.min, "Min": info.max}[op], dtype=dt)


def raw_dtype(dt) -> np.dtype:
    """The unsigned integer dtype of the same width (the storage of an element's bits)."""
    return np.dtype(f"u{np.dtype(dt).itemsize}")


def fold_dtype(dt) -> np.dtype:
    """The dtype the compiled fold computes in: binary64 for float16, binary32 for bfloat16 (its
    truncation), else the element type."""
    dt = np.dtype(dt)
    return np.dtype(np.float32) if dt == BF16 else np.dtype(np.float64) if dt in NARROW else dt


# ----------------------------------------------------------------------------- plan

@dataclass(frozen=True)
class ReducePlan:
    num_slices: int
    num_steps: int            # 8-way time steps per slice
    narrow: str               # 'trim' | 'split'
    r_in_packet: bool         # True: tree-reduce lanes, OutPacket = m![1 # 4]
    fiber: np.ndarray         # int64[O, J]: 4-way time steps folded into slot o, in order

    @property
    def out_steps(self) -> int:
        return self.fiber.shape[0]

    @property
    def out_lanes(self) -> int:
        """Valid lanes of each output 4-way flit."""
        return 1 if self.r_in_packet else 4


# ----------------------------------------------------------------------------- 16-bit floats (arrays)
# Written against the API NumPy and CuPy share.  jit.py holds the scalar twins.

def decode_narrow(bits, nf: NarrowFloat, xp=np):
    """Exact binary64 values of 16-bit encodings (NaN payloads are not kept: results are canonical)."""
    c = bits.astype(np.int64)
    emask, tmask = (1 << nf.ebits) - 1, (1 << nf.t) - 1
    E = (c >> nf.t) & emask
    T = (c & tmask).astype(np.float64)
    mag = xp.where(E == 0, xp.ldexp(T, nf.emin - nf.t),
                   xp.ldexp(T + float(1 << nf.t), (E - nf.bias - nf.t).astype(np.int32)))
    mag = xp.where(E == emask, xp.where(T == 0, np.inf, np.nan), mag)
    return xp.where((c >> (nf.t + nf.ebits)) != 0, -mag, mag)


def two_sum_dir(a, b, xp=np):
    """(s, d): s = RN(a + b) in binary64 and d the sign (-1, 0, +1) of the exact error a + b - s
    (Knuth's TwoSum; no intermediate overflows below 2^1023, and 16-bit values stay below 2^129)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, (e > 0).astype(np.int8) - (e < 0).astype(np.int8)


def round_narrow(s, d, nf: NarrowFloat, xp=np):
    """The exact value x = s + delta (delta of sign d, below half an ulp of s) rounded to nearest
    even in the 16-bit format, as binary64; overflow gives infinity, as IEEE RNE does.

    With q the quantum of x's binade, y = |s| / 2^q is exact; its fraction decides the rounding,
    and only a fraction of exactly 1/2 needs delta: above the midpoint, below it, or a tie."""
    a = xp.abs(s)
    _, ex = xp.frexp(a)
    q = xp.maximum(ex.astype(np.int32) - 1, nf.emin) - nf.t
    y = xp.ldexp(a, -q)
    fl = xp.floor(y)
    frac = y - fl
    dm = xp.where(s < 0, -d, d)
    odd = xp.fmod(fl, 2.0) == 1.0
    up = (frac > 0.5) | ((frac == 0.5) & ((dm > 0) | ((dm == 0) & odd)))
    r = xp.ldexp(fl + up, q)
    r = xp.where(r > nf.max, np.inf, r)
    return xp.where(xp.isfinite(s) & (s != 0), xp.copysign(r, s), s)


def encode_narrow(v, nf: NarrowFloat, nan_bits: int, xp=np):
    """16-bit encodings (uint16) of binary64 values the format represents exactly; NaN -> nan_bits."""
    a = xp.abs(v)
    _, ex = xp.frexp(a)
    E = ex.astype(np.int64) - 1
    normal = E >= nf.emin
    sig = xp.where(normal, xp.ldexp(a, (nf.t - E).astype(np.int32)), xp.ldexp(a, nf.t - nf.emin))
    code = xp.where(normal, ((E + nf.bias) << nf.t) + (sig.astype(np.int64) - (1 << nf.t)), sig.astype(np.int64))
    code = xp.where(xp.isinf(v), ((1 << nf.ebits) - 1) << nf.t, xp.where(a == 0, 0, code))
    code = code | (xp.signbit(v).astype(np.int64) << (nf.t + nf.ebits))
    return xp.where(xp.isnan(v), nan_bits, code).astype(np.uint16)
