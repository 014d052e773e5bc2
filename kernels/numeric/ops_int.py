"""Integer element-wise operations on raw W-bit encodings (W = 8, 16, 32, 64).

Every function takes the operands as unsigned container arrays (uint8 .. uint64, already
broadcast to one shape) plus `signed`, and returns the result encodings in the same container
dtype.  Unsigned container arithmetic wraps modulo 2^W, which is exactly the two's-complement
result for signed types too, so only division, remainder, right shift, ordering, absolute value
and ReLU look at signedness (Decisions 059-072, 078, 081).

Zero divisors are rejected by the emulator's preflight (INT_DIVIDE_BY_ZERO) before these run;
called directly, TDIV by zero gives all ones (-1 signed, the maximum unsigned) and TREM by zero
gives the dividend, each with the DZ flag (the RISC-V convention).  Signed TDIV of the most
negative value by -1 wraps to the most negative value; the matching TREM is 0.

Array code uses only operations NumPy and CuPy share, and only the operands' memory: NumPy
functions reach CuPy arrays through __array_function__/__array_ufunc__, constants are NumPy
scalars, new arrays are made `*_like` an operand.  So the gpu backend runs these functions
unchanged on device arrays (kernels/numeric/cuda.py, placement "xp").
"""
from __future__ import annotations

import numpy as np

from .flags import DZ


def _signed_view(x):
    return x.view(np.dtype(f"i{x.dtype.itemsize}"))


def _ones(x):
    """All-ones value of x's container (the -1 / unsigned-max encoding)."""
    return ~x.dtype.type(0)


def _zero(x):
    return x.dtype.type(0)


def _negative(x, signed):
    """True where a signed element is negative (always False for unsigned)."""
    if not signed:
        return np.zeros_like(x, dtype=bool)          # on x's device, as every array here
    return _signed_view(x) < 0


# ---------------------------------------------------------------- bitwise and modular arithmetic

def tadd(a, b, signed):
    return a + b


def tsub(a, b, signed):
    return a - b


def tmul(a, b, signed):
    return a * b


def tfma(a, b, c, signed):
    return a * b + c


def tand(a, b, signed):
    return a & b


def tor(a, b, signed):
    return a | b


def txor(a, b, signed):
    return a ^ b


def tnot(a, signed):
    return ~a


def tneg(a, signed):
    return _zero(a) - a


def tabs(a, signed):
    # negation modulo 2^W: the most negative value keeps its bit pattern (Decision 070)
    return np.where(_negative(a, signed), _zero(a) - a, a)


def trelu(a, signed):
    return np.where(_negative(a, signed), _zero(a), a)


def _count(b):
    """Shift count: the unsigned value of the low log2(W) bits of the count element."""
    return b & b.dtype.type(b.dtype.itemsize * 8 - 1)


def tshl(a, b, signed):
    return a << _count(b)


def tshr(a, b, signed):
    if signed:   # arithmetic shift, sign fill (Decision 066)
        return (_signed_view(a) >> _signed_view(_count(b))).view(a.dtype)
    return a >> _count(b)


# ---------------------------------------------------------------- ordering

def _ordered(a, signed):
    return _signed_view(a) if signed else a


def tmax(a, b, signed):
    return np.where(_ordered(a, signed) >= _ordered(b, signed), a, b)


def tmin(a, b, signed):
    return np.where(_ordered(a, signed) <= _ordered(b, signed), a, b)


_COMPARE = {
    "EQ": lambda x, y: x == y, "NE": lambda x, y: x != y,
    "LT": lambda x, y: x < y, "GT": lambda x, y: x > y,
    "LE": lambda x, y: x <= y, "GE": lambda x, y: x >= y,
}


def tcmp(a, b, signed, cmode):
    return _COMPARE[cmode](_ordered(a, signed), _ordered(b, signed)).astype(np.uint8)


# ---------------------------------------------------------------- division

def _magnitude(x, signed):
    """|x| as an unsigned container value (2^(W-1) for the most negative signed value)."""
    return tabs(x, signed)


def tdiv(a, b, signed):
    """Quotient truncated toward zero; (all ones, DZ) for a zero divisor."""
    zero = b == 0
    safe = np.where(zero, b.dtype.type(1), b)
    q = _magnitude(a, signed) // _magnitude(safe, signed)
    if signed:
        q = np.where(_negative(a, True) != _negative(safe, True), _zero(q) - q, q)
    return np.where(zero, _ones(a), q), np.where(zero, np.uint8(DZ), np.uint8(0))


def trem(a, b, signed):
    """Floor modulo (Decision 061): a nonzero result has the divisor's sign and a smaller
    magnitude; unsigned is the ordinary remainder.  (dividend, DZ) for a zero divisor."""
    zero = b == 0
    safe = np.where(zero, b.dtype.type(1), b)
    r = _magnitude(a, signed) % _magnitude(safe, signed)      # |a| mod |b|
    if signed:
        r = np.where(_negative(a, True), _zero(r) - r, r)   # truncated remainder
        adjust = (r != 0) & (_negative(r, True) != _negative(safe, True))
        r = np.where(adjust, r + safe, r)                      # floor: move into the divisor's sign
    return np.where(zero, a, r), np.where(zero, np.uint8(DZ), np.uint8(0))


# mnemonic -> function; functions returning (bits, flags) are marked in WITH_FLAGS
OPS = {
    "TADD": tadd, "TSUB": tsub, "TMUL": tmul, "TDIV": tdiv, "TREM": trem, "TFMA": tfma,
    "TAND": tand, "TOR": tor, "TXOR": txor, "TNOT": tnot, "TSHL": tshl, "TSHR": tshr,
    "TMAX": tmax, "TMIN": tmin, "TABS": tabs, "TNEG": tneg, "TRELU": trelu, "TCMP": tcmp,
}
WITH_FLAGS = frozenset({"TDIV", "TREM"})
