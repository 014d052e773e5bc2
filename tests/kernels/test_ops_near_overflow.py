"""Arithmetic next to the largest finite value, in both operand orders (issue 12, item 1).

TwoSum's intermediate s - a can overflow while the sum s itself is finite; the error term then
is NaN.  These tests sweep one operand within 16 ulps of the largest finite value against
operands of every size (most in the top binades, where the hazard lives), in both orders,
for every floating format whose add/sub/rem/fma goes through TwoSum (the NumPy reference and
the compiled fast path both), and compare with Berkeley SoftFloat (FP64, FP32, FP16) or with
exact rationals (tests/kernels/op_reference.py) for the rest.
"""
import numpy as np
import pytest

from isa import datatypes
from kernels import numeric
from kernels.numeric import flags as F
from kernels.numeric import fast, ops_float

import oracles as O
import op_reference as R
from test_ops_float import SF, assert_same, softfloat

FORMATS = ("FP64", "FP32", "TF32", "HF32", "FP16", "BF16", "E4M3", "E5M2")


def near_max(name):
    """The 16 largest finite magnitudes, both signs (container codes)."""
    sp = O.SPEC[name]
    mags = [sp.max_code - k for k in range(16)]
    codes = [m | s for m in mags for s in (0, sp.sign_mask)]
    return (np.array(codes, np.uint64) << np.uint64(sp.shift)).astype(R.raw(name))


def partners(name, n, seed):
    """Random codes, three quarters with an exponent in the top four binades, both signs; plus
    zero, the smallest subnormal and the near-max codes themselves."""
    sp = O.SPEC[name]
    eb, t, *_ = R.fields(name)
    rng = np.random.default_rng(seed)
    top = sp.max_code >> t                     # exponent field of the largest finite value
    exps = np.where(rng.random(n) < 0.75, rng.integers(max(top - 3, 0), top + 1, n),
                    rng.integers(0, top + 1, n)).astype(np.uint64)
    mags = (exps << np.uint64(t)) | rng.integers(0, 1 << t, n, dtype=np.uint64)
    mags = np.minimum(mags, np.uint64(sp.max_code))
    signs = rng.integers(0, 2, n).astype(np.uint64) * np.uint64(sp.sign_mask)
    codes = np.concatenate([(mags | signs) << np.uint64(sp.shift),
                            np.array([0, 1, sp.sign_mask, sp.sign_mask | 1], np.uint64) << np.uint64(sp.shift),
                            near_max(name).astype(np.uint64)])
    return codes.astype(R.raw(name))


def both_orders(name, n=96, seed=5):
    a, b = np.meshgrid(near_max(name), partners(name, n, seed), indexing="ij")
    a, b = a.ravel(), b.ravel()
    return np.concatenate([a, b]), np.concatenate([b, a])


def reference(op, name, *ops):
    if name in SF and op != "TREM":            # SoftFloat's rem is IEEE remainder, not floor modulo
        return softfloat(op, name, *ops)
    return R.reference(op, name, *ops)


def f64(code):
    return np.array([code], np.uint64)


def test_the_two_fp64_subtractions_of_the_report():
    """0xFFDFFFFFFFFDFFFF - 0xFFEFFFFFFFFFFFFF = 0x7FE0000000010000 (NX) and
    0x7FDFFFBEFFFFFFFF - 0x7FEFFFFFFFFFFFFF = 0xFFE0002080000000 (exact sum of a half and a
    whole max-sized operand: the intermediate s - a is max + ulp/2 and overflowed)."""
    for a, b, want in ((0xFFDFFFFFFFFDFFFF, 0xFFEFFFFFFFFFFFFF, 0x7FE0000000010000),
                       (0x7FDFFFBEFFFFFFFF, 0x7FEFFFFFFFFFFFFF, 0xFFE0002080000000)):
        bits, flags = numeric.elementwise("TSUB", "FP64", f64(a), f64(b))
        sbits, sflags = softfloat("TSUB", "FP64", f64(a), f64(b))
        assert int(bits[0]) == want == int(sbits[0])
        assert int(flags[0]) == int(sflags[0])
    bits, flags = numeric.elementwise("TSUB", "FP64", f64(0xFFDFFFFFFFFDFFFF), f64(0xFFEFFFFFFFFFFFFF))
    assert int(flags[0]) == F.NX
    # the same sums written as additions, in both orders
    for a, b in ((0xFFDFFFFFFFFDFFFF, 0x7FEFFFFFFFFFFFFF), (0x7FEFFFFFFFFFFFFF, 0xFFDFFFFFFFFDFFFF)):
        assert int(numeric.elementwise("TADD", "FP64", f64(a), f64(b))[0][0]) == 0x7FE0000000010000


def test_fp64_floor_modulo_whose_adjustment_overflows_inside_twosum():
    """3*2^970 mod -max = -max + 3*2^970, a tie that rounds up in magnitude to
    -0x7FEFFFFFFFFFFFFE; TwoSum's s - r is then -(max + 2^970), which overflows."""
    x = np.array([3 * 2.0 ** 970]).view(np.uint64)
    bits, flags = numeric.elementwise("TREM", "FP64", x, f64(0xFFEFFFFFFFFFFFFF))
    assert (int(bits[0]), int(flags[0])) == (0xFFEFFFFFFFFFFFFE, F.NX)
    assert_same("TREM.FP64", (bits, flags), R.reference("TREM", "FP64", x, f64(0xFFEFFFFFFFFFFFFF)),
                (x, f64(0xFFEFFFFFFFFFFFFF)))


@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("op", ("TADD", "TSUB", "TREM"))
def test_one_operand_near_max_in_both_orders(op, name):
    a, b = both_orders(name)
    want = reference(op, name, a, b)
    assert_same(f"{op}.{name}", numeric.elementwise(op, name, a, b), want, (a, b))
    # the NumPy reference itself (the compiled fast path and the 8-bit tables sit in front of it)
    with np.errstate(all="ignore"):
        got = ops_float.OPS[op](datatypes.datatype(name), a, b, prof=numeric.profile("ieee"))
    assert_same(f"{op}.{name} (reference path)", got, want, (a, b))


@pytest.mark.parametrize("name", FORMATS)
def test_fma_with_one_operand_near_max_in_each_position(name):
    near = near_max(name)
    other = partners(name, 24, 9)
    rng = np.random.default_rng(3)
    ops = []
    for pos in range(3):
        a, b = np.meshgrid(near, other, indexing="ij")
        a, b = a.ravel(), b.ravel()
        c = other[rng.integers(0, other.size, a.size)]
        trio = [b, c]
        trio.insert(pos, a)
        ops.append(trio)
    ops = [np.concatenate([t[i] for t in ops]) for i in range(3)]
    want = reference("TFMA", name, *ops)
    assert_same(f"TFMA.{name}", numeric.elementwise("TFMA", name, *ops), want, ops)


def test_compiled_fast_paths_only_serve_formats_whose_twosum_cannot_overflow():
    """fast.py's TwoSum has no overflow guard: it is exact only while |x*y| + |z| stays far below
    binary64's largest value, which holds for every format it serves (max < 2^129)."""
    served = {name for name in FORMATS for op in ("TADD", "TSUB", "TFMA") if (name, op) in fast.rows("fast")}
    assert served and "FP64" not in served
    for name in served:
        top = float(O.SPEC[name].max)
        assert 2 * top * top < 2.0 ** 1022
