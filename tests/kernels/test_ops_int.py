"""Integer element-wise operations against Python-int references (Decisions 057-072, 078, 081).

8-bit types are checked exhaustively over all operand pairs; 16/32/64-bit types over edge values
plus random samples.  The reference is written from the seed's sentences with Python's unbounded
integers, independently of kernels.numeric.ops_int.
"""
import itertools

import numpy as np
import pytest

from kernels import numeric
from kernels.numeric import flags as F

INT_TYPES = {"S8": (8, True), "S16": (16, True), "S32": (32, True), "S64": (64, True),
             "U8": (8, False), "U16": (16, False), "U32": (32, False), "U64": (64, False)}


def value(code, w, signed):
    return code - (1 << w) if signed and code >> (w - 1) else code


def wrap(x, w):
    return x % (1 << w)


def trunc_div(a, b):
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


# op -> reference(a, b, w, signed) on numeric values; returns the W-bit result code
BINARY = {
    "TADD": lambda a, b, w, s: wrap(a + b, w),
    "TSUB": lambda a, b, w, s: wrap(a - b, w),
    "TMUL": lambda a, b, w, s: wrap(a * b, w),
    "TDIV": lambda a, b, w, s: wrap(-1, w) if b == 0 else wrap(trunc_div(a, b), w),
    # Decision 061: floor modulo, result takes the divisor's sign (Python's % is exactly that)
    "TREM": lambda a, b, w, s: wrap(a, w) if b == 0 else wrap(a % b, w),
    "TAND": lambda a, b, w, s: wrap(a, w) & wrap(b, w),
    "TOR": lambda a, b, w, s: wrap(a, w) | wrap(b, w),
    "TXOR": lambda a, b, w, s: wrap(a, w) ^ wrap(b, w),
    # Decisions 065/066: count = low log2(W) bits of the count element, unsigned
    "TSHL": lambda a, b, w, s: wrap(a << (wrap(b, w) % w), w),
    "TSHR": lambda a, b, w, s: wrap(a >> (wrap(b, w) % w), w),   # Python >> is arithmetic on negatives
    "TMAX": lambda a, b, w, s: wrap(max(a, b), w),
    "TMIN": lambda a, b, w, s: wrap(min(a, b), w),
}
UNARY = {
    "TABS": lambda a, w, s: wrap(abs(a), w),
    "TNEG": lambda a, w, s: wrap(-a, w),
    "TNOT": lambda a, w, s: wrap(~a, w),
    "TRELU": lambda a, w, s: wrap(max(a, 0), w),
}
CMP = {"EQ": lambda a, b: a == b, "NE": lambda a, b: a != b, "LT": lambda a, b: a < b,
       "GT": lambda a, b: a > b, "LE": lambda a, b: a <= b, "GE": lambda a, b: a >= b}


def samples(w, n=3000, seed=1):
    edges = {0, 1, 2, 3, (1 << w) - 1, (1 << w) - 2, 1 << (w - 1), (1 << (w - 1)) - 1, (1 << (w - 1)) + 1,
             w - 1, w, w + 1, 2 * w - 1}
    rng = np.random.default_rng(seed + w)
    rnd = rng.integers(0, 1 << 63, n, dtype=np.uint64).astype(object) * 2 + rng.integers(0, 2, n).astype(object)
    return sorted(edges) + [int(x) % (1 << w) for x in rnd]


def operand_grid(w):
    """All pairs for 8 bits; otherwise edge x edge plus random pairs."""
    if w == 8:
        codes = np.arange(256, dtype=np.uint64)
        a, b = np.meshgrid(codes, codes, indexing="ij")
        return a.ravel(), b.ravel()
    s = samples(w)
    edge = s[:13]
    pairs = list(itertools.product(edge, edge)) + list(zip(s[13:], reversed(s[13:])))
    return np.array([p[0] for p in pairs], np.uint64), np.array([p[1] for p in pairs], np.uint64)


def raw(x, w):
    return np.asarray(x, np.uint64).astype(f"u{w // 8}")


@pytest.mark.parametrize("dtype", INT_TYPES)
@pytest.mark.parametrize("op", BINARY)
def test_binary_matches_python_integers(op, dtype):
    w, signed = INT_TYPES[dtype]
    a, b = operand_grid(w)
    bits, flags = numeric.elementwise(op, dtype, raw(a, w), raw(b, w))
    assert bits.dtype == np.dtype(f"u{w // 8}") and bits.shape == a.shape
    ref = BINARY[op]
    expect = [ref(value(int(x), w, signed), value(int(y), w, signed), w, signed) for x, y in zip(a, b)]
    assert bits.astype(np.uint64).tolist() == expect
    zero_div = (b == 0) & (op in ("TDIV", "TREM"))
    assert np.array_equal(flags, np.where(zero_div, F.DZ, 0).astype(np.uint8))


@pytest.mark.parametrize("dtype", INT_TYPES)
@pytest.mark.parametrize("op", UNARY)
def test_unary_matches_python_integers(op, dtype):
    w, signed = INT_TYPES[dtype]
    a = np.arange(256, dtype=np.uint64) if w == 8 else np.array(samples(w), np.uint64)
    bits, flags = numeric.elementwise(op, dtype, raw(a, w))
    expect = [UNARY[op](value(int(x), w, signed), w, signed) for x in a]
    assert bits.astype(np.uint64).tolist() == expect
    assert not flags.any()


@pytest.mark.parametrize("dtype", INT_TYPES)
def test_fma_is_the_expression_modulo_the_width(dtype):
    w, signed = INT_TYPES[dtype]
    s = samples(w, 400)
    a, b, c = (np.array(s[k:] + s[:k], np.uint64) for k in (0, 7, 19))
    bits, flags = numeric.elementwise("TFMA", dtype, raw(a, w), raw(b, w), raw(c, w))
    expect = [wrap(value(int(x), w, signed) * value(int(y), w, signed) + value(int(z), w, signed), w)
              for x, y, z in zip(a, b, c)]
    assert bits.astype(np.uint64).tolist() == expect and not flags.any()


@pytest.mark.parametrize("dtype", INT_TYPES)
@pytest.mark.parametrize("cmode", list(CMP))
def test_compare_uses_the_types_numeric_ordering(dtype, cmode):
    w, signed = INT_TYPES[dtype]
    a, b = operand_grid(w)
    bits, flags = numeric.elementwise("TCMP", dtype, raw(a, w), raw(b, w), cmode=cmode)
    assert bits.dtype == np.uint8
    expect = [int(CMP[cmode](value(int(x), w, signed), value(int(y), w, signed))) for x, y in zip(a, b)]
    assert bits.tolist() == expect and not flags.any()


def test_signed_division_edge_cases_wrap_and_flag():
    mn = np.uint8(0x80)
    q, f = numeric.elementwise("TDIV", "S8", mn, np.uint8(0xFF))
    assert int(q) == 0x80 and int(f) == 0                    # MIN / -1 wraps to MIN
    r, f = numeric.elementwise("TREM", "S8", mn, np.uint8(0xFF))
    assert int(r) == 0 and int(f) == 0
    q, f = numeric.elementwise("TDIV", "U32", np.uint32(7), np.uint32(0))
    assert int(q) == 0xFFFFFFFF and int(f) == F.DZ           # documented zero-divisor result
    r, f = numeric.elementwise("TREM", "S16", np.uint16(0xFFF9), np.uint16(0))
    assert int(r) == 0xFFF9 and int(f) == F.DZ


def test_most_negative_value_keeps_its_pattern_under_abs_and_neg():
    for dtype, (w, _) in INT_TYPES.items():
        if dtype.startswith("S"):
            mn = raw([1 << (w - 1)], w)
            assert numeric.elementwise("TABS", dtype, mn)[0][0] == mn[0]
            assert numeric.elementwise("TNEG", dtype, mn)[0][0] == mn[0]
