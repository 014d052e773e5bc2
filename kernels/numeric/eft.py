"""Error-free transformations in binary64 (round-to-nearest-even hardware arithmetic).

Each function returns a pair (s, e) of float64 arrays with s the rounded result and e the
exact rounding error, so that the operation's exact result equals s + e.  They are the
classical algorithms (Knuth's TwoSum, Dekker's FastTwoSum and TwoProduct with Veltkamp's
split), exact under these conditions, which every caller in this package guarantees:

- two_sum(a, b): exact whenever no intermediate overflows (subnormals included).  A finite
  a + b is not enough in binary64: s - a can overflow (a = -max/2, b = max) and e is then NaN;
  ops_float._two_sum_scaled detects a non-finite e and repeats on halved operands.  Operands
  below 2^1022 in magnitude (every format narrower than FP64) never overflow.
- two_prod(a, b): exact when |a|, |b| < 2^995 and the product's low part does not underflow,
  i.e. e_a + e_b >= -1022 + 53 (callers pass frexp-normalised significands or values of the
  narrow formats, whose products stay far inside the normal range).

Plain arithmetic only, so the same code runs on NumPy and CuPy arrays and compiles with Numba.
"""
from __future__ import annotations

_SPLITTER = 134217729.0   # 2^27 + 1: Veltkamp's constant for binary64


def two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def fast_two_sum(a, b):
    """Requires |a| >= |b| (or a == 0)."""
    s = a + b
    return s, b - (s - a)


def split(a):
    """a = hi + lo with hi, lo of at most 26 significant bits each."""
    c = _SPLITTER * a
    hi = c - (c - a)
    return hi, a - hi


def two_prod(a, b):
    p = a * b
    ah, al = split(a)
    bh, bl = split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def sign(x):
    """-1, 0 or +1 as float64 (NaN never reaches here)."""
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)
