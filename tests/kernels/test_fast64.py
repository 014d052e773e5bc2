"""The compiled FP64 TADD, TSUB, TMUL, TFMA, TDIV, TRECIP, TSQRT (kernels/numeric/fast64.py) give
the correctly rounded result and flags, settle nothing near binary64's overflow threshold (issue 12), and the fma-free
TwoProduct the GPU runs (Dekker) is exact wherever the kernel relies on it.

Independent references: Berkeley SoftFloat (softfloatpy) and exact rationals (op_reference.py,
and Fractions for the product errors), on random codes over the whole range (NaN payloads,
infinities, subnormals) and on operands chosen around each limit of the settled range: sums
with an operand at 2^1022 and above, products near 2^-1022, 2^-960, 2^1020 and the largest
finite value, operands near 2^995 and subnormal operands.
"""
import functools
from fractions import Fraction

import gmpy2

import numpy as np
import pytest

import op_reference as R
import tier_helpers as TH
from kernels import numeric
from kernels.numeric import fast, fast64, ops_float, transcendental
from kernels.numeric.flags import DZ, NV, NX, OF, UF
from kernels.numeric.profiles import PROFILES
from test_ops_float import assert_same, edge_and_random, fma64_hard_cases, operand_sets, softfloat

IEEE = PROFILES["ieee"]
SUMS_PRODUCTS = ("TADD", "TSUB", "TMUL")
QUOTIENTS = ("TDIV", "TRECIP", "TSQRT")


def run(op, *ops):
    with np.errstate(all="ignore"):
        return TH.run("fast64", op, "FP64", *ops)


def tier(op, *ops):
    """The compiled loop alone: (bits, flags) with 0xFF marks."""
    return TH.marked("fast64", op, "FP64", *ops)


def independent(op, *ops):
    """SoftFloat; TRECIP as 1 / x."""
    if op == "TRECIP":
        return softfloat("TDIV", "FP64", np.full_like(ops[0], 0x3FF0000000000000), ops[0])
    return softfloat(op, "FP64", *ops)


def f64(x):
    return np.asarray(x, np.float64).view(np.uint64)


def limits(n, seed):
    """Operand pairs whose products or sums sit at the limits of the settled range."""
    rng = np.random.default_rng(seed)
    target = rng.choice([-1074, -1060, -1022, -1000, -961, -960, -959, 1019, 1020, 1021, 1023, 0], n)
    ea = rng.integers(-1074, 1024, n)
    ea = np.where(rng.random(n) < 0.3, rng.choice([995, 996, -1022, -1023, -1050, 1022, 1023], n), ea)
    eb = np.clip(target - ea, -1074, 1023)
    a = rng.uniform(1, 2, n) * np.exp2(ea.astype(float))
    b = rng.uniform(1, 2, n) * np.exp2(eb.astype(float))
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    with np.errstate(over="ignore", under="ignore"):
        return f64(np.nan_to_num(a * sign, posinf=1.7976931348623157e308)), f64(np.nan_to_num(b, posinf=1e308))


@pytest.mark.parametrize("op", SUMS_PRODUCTS)
def test_random_and_edge_codes_match_softfloat(op):
    a = edge_and_random("FP64", 4000, 3)
    b = a[np.random.default_rng(4).permutation(a.size)]
    assert_same(f"{op}.FP64", run(op, a, b), softfloat(op, "FP64", a, b), (a, b))


@pytest.mark.parametrize("op", SUMS_PRODUCTS)
def test_edge_cross_product_matches_exact_rationals(op):
    e = edge_and_random("FP64", 0, 0)
    a, b = (g.ravel() for g in np.meshgrid(e, e, indexing="ij"))
    assert_same(f"{op}.FP64", run(op, a, b), R.reference(op, "FP64", a, b), (a, b))


@pytest.mark.parametrize("op", SUMS_PRODUCTS)
def test_limits_of_the_settled_range_match_softfloat_and_the_loop_settles_only_correct_results(op):
    a, b = limits(6000, 5)
    want = softfloat(op, "FP64", a, b)
    assert_same(f"{op}.FP64 limits", run(op, a, b), want, (a, b))
    bits, flags = tier(op, a, b)
    done = flags != fast64.FALLBACK
    # products: what the SIMD routine leaves (subnormal operands, results near the range's ends)
    # its fix routine settles in the same call; sums near the top go to the reference
    assert done.all() if op == "TMUL" else done.any() and (~done).any()
    assert_same(f"{op}.FP64 settled", (bits[done], flags[done]), (want[0][done], want[1][done]), (a[done], b[done]))


@pytest.mark.parametrize("op", ("TADD", "TSUB"))
def test_sums_with_an_operand_at_or_above_2_to_1022_are_never_settled(op):
    """Issue 12: TwoSum's s - x can overflow while s is finite; such sums go to the reference."""
    rng = np.random.default_rng(6)
    big = rng.uniform(1, 2, 3000) * 2.0 ** 1022 * np.where(rng.random(3000) < 0.5, -1, 1)
    other = rng.uniform(-1, 1, 3000) * np.exp2(rng.integers(900, 1024, 3000).astype(float))
    a, b = f64(np.concatenate([big, other])), f64(np.concatenate([other, big]))
    assert (tier(op, a, b)[1] == fast64.FALLBACK).all()
    assert_same(f"{op}.FP64 big", run(op, a, b), softfloat(op, "FP64", a, b), (a, b))


def test_dekker_two_product_is_exact_over_the_settled_range():
    """The CUDA kernel's TwoProduct (no fma), run on the CPU from the same IR builder, equals
    the exact error x*y - RN(x*y) computed with Fractions, at every corner the kernel settles."""
    rng = np.random.default_rng(7)
    n = 4000
    ea = rng.integers(-1022, 996, n)
    lo, hi = np.maximum(-960 - ea, -1022), np.minimum(1019 - ea, 995)
    eb = lo + (rng.random(n) * (hi - lo + 1)).astype(np.int64)
    corner = rng.random(n) < 0.3
    eb = np.where(corner & (rng.random(n) < 0.5), lo, np.where(corner, hi, eb))
    x = rng.uniform(1, 2, n) * np.exp2(ea.astype(float))
    y = rng.uniform(1, 2, n) * np.exp2(eb.astype(float)) * np.where(rng.random(n) < 0.5, -1, 1)
    x[:4] = [2.0 ** 995 * (2 - 2.0 ** -52), 2.0 ** -1022, 2.0 ** 995, 1 + 2.0 ** -52]
    y[:4] = [2.0 ** 24 * (2 - 2.0 ** -52), 2.0 ** 62 * (1 + 2.0 ** -52), -(2 - 2.0 ** -52) * 2.0 ** 24, 1 - 2.0 ** -53]
    r, e = fast64.dekker_errors(x, y)
    settled = tier("TMUL", f64(x), f64(y))[1] != fast64.FALLBACK
    assert settled.mean() > 0.75
    for xi, yi, ri, ei in zip(x[settled], y[settled], r[settled], e[settled]):
        assert Fraction(float(ei)) == Fraction(float(xi)) * Fraction(float(yi)) - Fraction(float(ri)), (xi, yi)


def test_zero_products_and_sums_keep_ieee_signs_and_raise_nothing():
    z, nz, one, big = 0.0, -0.0, 1.0, 2.0 ** 1000
    a = f64([z, nz, nz, z, one, big, nz])
    b = f64([nz, nz, one, big, -one, z, big])
    for op in SUMS_PRODUCTS:
        assert_same(f"{op}.FP64 zeros", run(op, a, b), softfloat(op, "FP64", a, b), (a, b))
    assert not tier("TMUL", a, b)[1].any()


def test_elementwise_serves_fp64_compiled_and_small_inputs_stay_serial():
    a, b = limits(500, 8)
    before = dict(fast.Twin.calls)
    for op in SUMS_PRODUCTS:
        assert_same(f"{op}.FP64", numeric.elementwise(op, "FP64", a, b), softfloat(op, "FP64", a, b), (a, b))
    assert fast.Twin.calls["serial"] >= before["serial"] + 3
    assert fast.Twin.calls["parallel"] == before["parallel"]


# ---------------------------------------------------------------- division, reciprocal, root

def quotient_limits(n, seed):
    """Dividend/divisor pairs whose quotients sit near 2^-1074, 2^-1022, 2^-960, 1, 2^1020 and
    the max, divisors near 2^995 and subnormal divisors, and exact quotients of small integers."""
    rng = np.random.default_rng(seed)
    target = rng.choice([-1074, -1023, -1022, -961, -960, 0, 1019, 1020, 1023], n)
    ey = np.where(rng.random(n) < 0.3, rng.choice([995, 996, -1023, -1040], n), rng.integers(-1000, 1000, n))
    ex = np.clip(target + ey, -1074, 1023)
    x = rng.uniform(1, 2, n) * np.exp2(ex.astype(float)) * np.where(rng.random(n) < 0.5, -1, 1)
    y = rng.uniform(1, 2, n) * np.exp2(ey.astype(float))
    k = n // 4
    qi, yi = rng.integers(1, 1 << 26, k).astype(float), rng.integers(1, 1 << 26, k).astype(float)
    x[:k], y[:k] = qi * yi, yi                             # exact quotients qi
    with np.errstate(over="ignore", under="ignore"):
        return f64(np.nan_to_num(x, posinf=1e308, neginf=-1e308)), f64(np.nan_to_num(y, posinf=1e308))


def root_limits(n, seed):
    rng = np.random.default_rng(seed)
    e = rng.choice([-1074, -1060, -1022, -961, -960, -959, 0, 1019, 1020, 1021, 1023], n)
    x = rng.uniform(1, 2, n) * np.exp2(e.astype(float))
    k = n // 4
    r = rng.integers(1, 1 << 26, k).astype(float) * np.exp2(rng.integers(-400, 400, k).astype(float))
    x[:k] = r * r                                          # perfect squares: exact roots
    with np.errstate(over="ignore"):
        return (f64(np.nan_to_num(x, posinf=1e308)),)


@pytest.mark.parametrize("op", QUOTIENTS)
def test_quotients_and_roots_of_random_and_edge_codes_match_softfloat(op):
    a = edge_and_random("FP64", 4000, 13)
    ops = (a, a[np.random.default_rng(14).permutation(a.size)])[: 2 if op == "TDIV" else 1]
    assert_same(f"{op}.FP64", run(op, *ops), independent(op, *ops), ops)


@pytest.mark.parametrize("op", ("TDIV", "TRECIP"))
def test_quotient_edge_cross_product_matches_exact_rationals(op):
    e = edge_and_random("FP64", 0, 0)
    ops = [g.ravel() for g in np.meshgrid(e, e, indexing="ij")] if op == "TDIV" else [e]
    assert_same(f"{op}.FP64", run(op, *ops), R.reference(op, "FP64", *ops), ops)


@pytest.mark.parametrize("op", QUOTIENTS)
def test_quotients_and_roots_at_the_limits_and_the_loop_settles_only_correct_results(op):
    ops = {"TDIV": quotient_limits(6000, 15), "TRECIP": quotient_limits(6000, 16)[1:],
           "TSQRT": root_limits(6000, 17)}[op]
    want = independent(op, *ops)
    assert_same(f"{op}.FP64 limits", run(op, *ops), want, ops)
    bits, flags = tier(op, *ops)
    done = flags != fast64.FALLBACK
    assert done.all()                       # the fix routines settle the ends of the range
    assert_same(f"{op}.FP64 settled", (bits[done], flags[done]), (want[0][done], want[1][done]),
                [x[done] for x in ops])
    if op != "TRECIP":
        assert (want[1][done][: 1500] == 0).any()              # exact quotients/roots among them


def test_fp64_quotients_and_roots_through_elementwise():
    a, b = quotient_limits(400, 18)
    for op, ops in (("TDIV", (a, b)), ("TRECIP", (b,)), ("TSQRT", root_limits(400, 19))):
        assert_same(f"{op}.FP64", numeric.elementwise(op, "FP64", *ops), independent(op, *ops), ops)


# ---------------------------------------------------------------- fused multiply-add

def fma_limits(n, seed):
    """Triples whose product, addend and result sit at the limits of the settled range (2^-900,
    2^1020, the underflow and overflow thresholds), with the addend cancelling the product
    exactly, to a few ulps, or not at all, and zero operands."""
    rng = np.random.default_rng(seed)
    target = rng.choice([-1074, -1022, -1000, -902, -901, -900, -899, 0, 1019, 1020, 1021, 1023], n)
    ea = rng.integers(-1000, 996, n)
    ea = np.where(rng.random(n) < 0.2, rng.choice([995, 996, -1022, -1023], n), ea)
    eb = np.clip(target - ea, -1074, 1023)
    x = rng.uniform(1, 2, n) * np.exp2(ea.astype(float)) * np.where(rng.random(n) < 0.5, -1, 1)
    y = rng.uniform(1, 2, n) * np.exp2(eb.astype(float))
    with np.errstate(all="ignore"):
        p = x * y
        kind = rng.integers(0, 6, n)
        ez = rng.choice([-1074, -960, -901, -900, -899, -500, 0, 500, 1019, 1020, 1021, 1023], n)
        z = np.select([kind == 0, kind == 1, kind == 2, kind == 3],
                      [-p, -p + np.spacing(p) * rng.integers(-3, 4, n), -np.nextafter(p, 0.0) * 0.5,
                       np.zeros(n)],
                      rng.uniform(-2, 2, n) * np.exp2(ez.astype(float)))
        x[:50] = 0.0
        x = np.nan_to_num(x, posinf=1e308, neginf=-1e308)
        y = np.nan_to_num(y, posinf=1e308, neginf=-1e308)
        z = np.nan_to_num(z, nan=1.0, posinf=1e308, neginf=-1e308)
    return f64(x), f64(y), f64(z)


def test_fma_random_and_edge_codes_match_softfloat():
    ops = operand_sets("FP64", 3, 4000, 21)
    assert_same("TFMA.FP64", run("TFMA", *ops), softfloat("TFMA", "FP64", *ops), ops)


def test_fma_edge_cross_product_matches_exact_rationals():
    e = edge_and_random("FP64", 0, 0)
    ops = [g.ravel() for g in np.meshgrid(e, e, e, indexing="ij")]
    assert_same("TFMA.FP64", run("TFMA", *ops), R.reference("TFMA", "FP64", *ops), ops)


@pytest.mark.parametrize("cases", ("hard", "limits"))
def test_fma_at_the_limits_and_the_loop_settles_only_correct_results(cases):
    """Cancellations (ErrFma's hard cases: exact results, errors of one ulp and less) and the
    edges of the settled range: every settled element is SoftFloat's, exact ones included."""
    ops = fma64_hard_cases(6000, 22) if cases == "hard" else fma_limits(6000, 23)
    want = softfloat("TFMA", "FP64", *ops)
    assert_same(f"TFMA.FP64 {cases}", run("TFMA", *ops), want, ops)
    bits, flags = tier("TFMA", *ops)
    done = flags != fast64.FALLBACK
    assert done.mean() > 0.1 and (~done).any()
    assert_same(f"TFMA.FP64 settled {cases}", (bits[done], flags[done]), (want[0][done], want[1][done]),
                [x[done] for x in ops])
    assert (want[1][done] == 0).sum() > 100 and (want[1][done] != 0).sum() > 100


def test_err_fma_gives_the_exact_error_wherever_the_kernel_settles():
    """r + r2 + r3 = x*y + z exactly (Fractions), on hard cancellations and at the limits."""
    for ops in (fma64_hard_cases(3000, 26), fma_limits(3000, 27)):
        x, y, z = (v.view(np.float64) for v in ops)
        settled = tier("TFMA", *ops)[1] != fast64.FALLBACK
        zero_factor = (x == 0) | (y == 0)
        finite = np.isfinite(x) & np.isfinite(y) & np.isfinite(z)   # the others: specials.py
        r, r2, r3 = _err_fma(x, y, z)
        idx = np.flatnonzero(settled & ~zero_factor & finite)
        assert idx.size > 300
        for i in idx:
            exact = Fraction(float(x[i])) * Fraction(float(y[i])) + Fraction(float(z[i]))
            assert Fraction(float(r[i])) + Fraction(float(r2[i])) + Fraction(float(r3[i])) == exact, i


_fma_hook = {}


def _err_fma(x, y, z):
    import numba as nb
    if "fn" not in _fma_hook:
        @nb.njit
        def loop(x, y, z):
            out = np.empty((3, x.shape[0]))
            for i in range(x.shape[0]):
                out[0, i], out[1, i], out[2, i] = fast64.err_fma(x[i], y[i], z[i])
            return out
        _fma_hook["fn"] = loop
    return _fma_hook["fn"](x, y, z)


def test_fma_settles_nothing_tiny_or_near_overflow():
    """No settled element is tiny (UF) or overflows, and unless the product is an exact zero
    (then the result is z), its product, addend and result are 0 or in [2^-900, 2^1020]."""
    ops = fma_limits(6000, 24)
    want = softfloat("TFMA", "FP64", *ops)
    bits, flags = tier("TFMA", *ops)
    done = flags != fast64.FALLBACK
    assert not (want[1][done] & (UF | OF)).any()
    x, y, z = (v.view(np.float64) for v in ops)
    nonzero = done & (x != 0) & (y != 0)
    assert nonzero.sum() > 300
    with np.errstate(all="ignore"):
        p = x * y
    for w in (p, z, bits.view(np.float64)):
        aw = np.abs(w[nonzero])
        assert ((aw == 0) | ((aw >= 2.0 ** -900) & (aw <= 2.0 ** 1020))).all()


def test_fp64_fma_through_elementwise_stays_serial_for_small_inputs():
    ops = fma_limits(400, 25)
    before = dict(fast.Twin.calls)
    assert_same("TFMA.FP64", numeric.elementwise("TFMA", "FP64", *ops), softfloat("TFMA", "FP64", *ops), ops)
    assert fast.Twin.calls["parallel"] == before["parallel"] and fast.Twin.calls["serial"] > before["serial"]


# ---------------------------------------------------------------- floor modulo

def rem_cases(n, seed):
    """Dividend/divisor pairs 0..200 binades apart, dividends a
    few divisors away from a multiple (results near 0 and near the divisor), small dividends
    of the divisor's opposite sign (r + y rounded), either sign,
    divisors near 2^-1022 (subnormal results) and near 2^1022 (marked).  The SIMD routine settles
    operands up to 176 binades apart, its fix routine the rest."""
    rng = np.random.default_rng(seed)
    ey = rng.integers(-1022, 1022, n)
    ey = np.where(rng.random(n) < 0.2, rng.choice([-1022, -1021, -1000, 1020, 1021, 1022], n), ey)
    ex = np.clip(ey + rng.integers(-3, 200, n), -1074, 1023)
    x = rng.uniform(1, 2, n) * np.exp2(ex.astype(float)) * np.where(rng.random(n) < 0.5, -1, 1)
    y = rng.uniform(1, 2, n) * np.exp2(ey.astype(float)) * np.where(rng.random(n) < 0.5, -1, 1)
    k = n // 4
    with np.errstate(all="ignore"):
        mult = y[:k] * rng.integers(-(1 << 20), 1 << 20, k)
        x[:k] = mult + y[:k] * rng.choice([0.0, 2.0 ** -52, -(2.0 ** -40), 0.5], k)
        # small dividends of the other sign: r + y keeps only y's last bits (inexact)
        x[k:2 * k] = -y[k:2 * k] * rng.uniform(0.5, 1, k) * np.exp2(-rng.integers(1, 80, k).astype(float))
        x = np.nan_to_num(x, posinf=1e308, neginf=-1e308)
        y = np.nan_to_num(y, posinf=1e308, neginf=-1e308)
    return f64(x), f64(y)


def test_rem_random_and_edge_codes_match_exact_rationals():
    a = edge_and_random("FP64", 4000, 51)
    b = a[np.random.default_rng(52).permutation(a.size)]
    assert_same("TREM.FP64", run("TREM", a, b), R.reference("TREM", "FP64", a, b), (a, b))
    e = edge_and_random("FP64", 0, 0)
    x, y = (g.ravel() for g in np.meshgrid(e, e, indexing="ij"))
    assert_same("TREM.FP64 edges", run("TREM", x, y), R.reference("TREM", "FP64", x, y), (x, y))


def test_rem_near_multiples_and_far_apart_and_the_loop_settles_only_correct_results():
    a, b = rem_cases(6000, 53)
    want = R.reference("TREM", "FP64", a, b)
    assert_same("TREM.FP64 cases", run("TREM", a, b), want, (a, b))
    bits, flags = tier("TREM", a, b)
    done = flags != fast64.FALLBACK
    assert done.mean() > 0.6 and (~done).any()
    assert_same("TREM.FP64 settled", (bits[done], flags[done]), (want[0][done], want[1][done]), (a[done], b[done]))
    assert (want[1][done] == 0).sum() > 1000 and (want[1][done] != 0).sum() > 100
    gap = np.frexp(a.view(np.float64))[1] - np.frexp(b.view(np.float64))[1]
    nonzero = a.view(np.float64) != 0
    # operands far apart and subnormal ones: the fix routine; only divisors at or above 2^1022
    # (r + y may overflow) go to the reference
    assert (done & nonzero & (gap > 178)).any() and (done & (gap > 150)).any()
    assert (np.abs(b.view(np.float64)[~done]) >= 2.0 ** 1022).all()


def test_the_fp64_integer_fmod_is_exact():
    a, b = rem_cases(3000, 54)
    x, y = a.view(np.float64), b.view(np.float64)
    r, ok = _fmod53(x, y)
    normal = (np.abs(x) >= 2.0 ** -1022) & (np.abs(y) >= 2.0 ** -1022)
    assert ok[normal].mean() > 0.8
    for xi, yi, ri in zip(x[normal & ok].tolist(), y[normal & ok].tolist(), r[normal & ok].tolist()):
        q = Fraction(xi) / Fraction(yi)
        trunc = q.numerator // q.denominator if q >= 0 else -((-q.numerator) // q.denominator)
        assert Fraction(ri) == Fraction(xi) - trunc * Fraction(yi), (xi, yi)


_fmod53_cache = {}


def _fmod53(x, y):
    import numba as nb
    if "fn" not in _fmod53_cache:
        @nb.njit
        def loop(x, y):
            r = np.empty(x.shape[0])
            ok = np.empty(x.shape[0], np.bool_)
            for i in range(x.shape[0]):
                r[i], ok[i] = fast64.fmod53(x[i], y[i])
            return r, ok
        _fmod53_cache["fn"] = loop
    return _fmod53_cache["fn"](x, y)


def test_rem_zero_results_take_the_divisor_sign_and_opposite_signs_round_once():
    a = f64([6.0, -6.0, -1e-300, 7.5, -7.5, 0.0, -0.0])
    b = f64([-3.0, 3.0, 1.0, -2.0, 2.0, -5.0, 5.0])
    bits, flags = run("TREM", a, b)
    assert list(bits) == list(f64([-0.0, 0.0, 1.0, -0.5, 0.5, -0.0, 0.0]))
    assert list(flags) == [0, 0, NX, 0, 0, 0, 0]


# ---------------------------------------------------------------- reciprocal square root

def mpfr53(fn, codes):
    """The binary64 codes of fn(x) for binary64 codes x by MPFR: 53 bits, one rounding, an
    exponent range wide enough that every result here is normal."""
    out = np.empty(codes.shape[0])
    with gmpy2.context(gmpy2.get_context(), precision=53, emin=-2000, emax=2000):
        for i, v in enumerate(codes.view(np.float64).tolist()):
            out[i] = float(fn(gmpy2.mpfr(v)))
    return out.view(np.uint64)


def rsqrt_mpfr(codes):
    """(bits, flags) of 1/sqrt(x) for positive finite binary64 codes by MPFR (53 bits, one
    rounding; every result is normal), NX unless x = 4^k."""
    m, e = np.frexp(codes.view(np.float64))
    power4 = (m == 0.5) & ((e - 1) % 2 == 0)
    return mpfr53(gmpy2.rec_sqrt, codes), np.where(power4, 0, NX).astype(np.uint8)


def rsqrt_samples(n, seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(1, 0x7FF0000000000000, n, dtype=np.uint64)
    codes[: n // 8] = rng.integers(1, 1 << 52, n // 8, dtype=np.uint64)                 # subnormals
    powers = np.arange(1, 2047, dtype=np.uint64) << np.uint64(52)                       # 2^-1022 .. 2^1023
    tiny = np.uint64(1) << np.arange(52, dtype=np.uint64)                               # 2^-1074 ..
    return np.concatenate([codes, powers, tiny, np.uint64([0x7FEFFFFFFFFFFFFF, 0x3FEFFFFFFFFFFFFF, 0x4010000000000001])])


def test_rsqrt_samples_match_mpfr_powers_of_4_exact():
    codes = rsqrt_samples(20_000, 61)
    want = rsqrt_mpfr(codes)
    got = run("TRSQRT", codes)
    assert_same("TRSQRT.FP64", got, want, (codes,))
    assert (want[1] == 0).sum() >= 1023 + 26
    bits, flags = tier("TRSQRT", codes)
    assert (flags != fast64.FALLBACK).all()                 # no positive finite input was undecided here


def test_rsqrt_specials_follow_decision_077():
    codes = np.uint64([0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000, 0xBFF0000000000000, 0x7FF8000000000000])
    bits, flags = run("TRSQRT", codes)
    assert list(bits[:3]) == [0x7FF0000000000000, 0xFFF0000000000000, 0]
    assert list(flags) == [DZ, DZ, 0, NV, NV, 0]
    assert ((bits[3:] & 0x7FF0000000000000) == 0x7FF0000000000000).all() and ((bits[3:] & ((1 << 52) - 1)) != 0).all()


def test_the_double_double_reciprocal_root_is_within_2_to_minus_100_9():
    rng = np.random.default_rng(62)
    m = np.concatenate([rng.uniform(1, 4, 3000), [1.0, 4 - 2.0 ** -50, 2.0, 2 - 2.0 ** -52, 1 + 2.0 ** -52]])
    r, e = _rsqrt_parts(m)
    with gmpy2.context(gmpy2.get_context(), precision=300):
        for mi, ri, ei in zip(m.tolist(), r.tolist(), e.tolist()):
            v = gmpy2.rec_sqrt(gmpy2.mpfr(mi))
            assert abs(gmpy2.mpfr(ri) + gmpy2.mpfr(ei) - v) <= v * gmpy2.mpfr(2) ** -100.9, mi
            assert float(gmpy2.mpfr(ri) + gmpy2.mpfr(ei)) == ri           # r = RN(r + e)


def test_the_rounding_test_refuses_rests_near_a_midpoint():
    """r + e with e at a fraction f of ulp(r): settled exactly for f < 1/2 - 2^-40 (1/4 - 2^-40
    when r is a power of two and e points toward zero), for either sign of r."""
    rng = np.random.default_rng(63)
    r = rng.uniform(0.5, 1, 400)
    r[:100] = 1.0
    r[100:200] = 0.5
    ulp = np.spacing(r)
    f = np.array([0.1, 0.2, 0.25 - 2.0 ** -38, 0.25 - 2.0 ** -41, 0.3, 0.5 - 2.0 ** -38, 0.5 - 2.0 ** -41, 0.5])
    for rsign in (1, -1):
        for sign in (1, -1):
            e = sign * f[None, :] * ulp[:, None]
            got = _rounds_to_r(np.repeat(rsign * r, f.size), e.ravel()).reshape(e.shape)
            lim = np.where(((r == 1.0) | (r == 0.5))[:, None] & (sign != rsign), 0.25, 0.5)
            assert (got == (f[None, :] < lim - 2.0 ** -40)).all()


_hooks = {}


def _rsqrt_parts(m):
    import numba as nb
    if "parts" not in _hooks:
        @nb.njit
        def parts(m):
            r = np.empty(m.shape[0])
            e = np.empty(m.shape[0])
            for i in range(m.shape[0]):
                r[i], e[i] = fast64.rsqrt_parts(m[i])
            return r, e
        _hooks["parts"] = parts
    return _hooks["parts"](m)


def _rounds_to_r(r, e):
    import numba as nb
    if "round" not in _hooks:
        @nb.njit
        def rounds(r, e):
            out = np.empty(r.shape[0], np.bool_)
            for i in range(r.shape[0]):
                out[i] = fast64.rounds_to_r(r[i], e[i])
            return out
        _hooks["round"] = rounds
    return _hooks["round"](r, e)


# ---------------------------------------------------------------- exp

def inexact_mpfr(fn, codes):
    """(bits, NX) of fn(x) by MPFR (`mpfr53`), for samples where no result is exact."""
    return mpfr53(fn, codes), np.full(codes.shape[0], NX, np.uint8)


exp_mpfr = functools.partial(inexact_mpfr, gmpy2.exp)      # normal results only


def exp_samples(n, seed):
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(-708, 709, n), rng.uniform(-1, 1, n // 4) * np.exp2(rng.integers(-60, 0, n // 4)),
                        np.arange(-708, 710, dtype=float), [-708.0, 709.0, 2.0 ** -60, -(2.0 ** -60), 1e-3, -1e-3]])
    return f64(x[x != 0])                                  # exp(0) = 1 exactly: the reference's


def test_exp_samples_match_mpfr_and_the_loop_settles_every_nonzero_sample():
    """The samples reach 2^-60 and below; 0 < |x| < 2^-60 gives 1 with NX (exp(x) is closer to 1
    than to either midpoint around it)."""
    codes = exp_samples(20_000, 71)
    want = exp_mpfr(codes)
    assert_same("TEXP.FP64", run("TEXP", codes), want, (codes,))
    assert (tier("TEXP", codes)[1] != fast64.FALLBACK).all()
    tiny = f64([2.0 ** -61, -(2.0 ** -61), 5e-324, -1e-300, 2.0 ** -60 * 0.75])
    assert_same("TEXP.FP64 tiny", tier("TEXP", tiny), exp_mpfr(tiny), (tiny,))


def test_exp_outside_the_settled_range_goes_to_the_reference():
    """0 (exactly 1), x > 709 (overflow near), x < -708 (subnormal results), specials (the class
    table of specials.py settles 0 and the specials)."""
    x = [0.0, -0.0, 2.0 ** -61, -1e-300, 709.5, 709.8, 800.0, -708.5, -745.0, -746.0, np.inf, -np.inf, np.nan]
    codes = f64(x)
    assert (tier("TEXP", codes[[0, 1] + list(range(4, 13))])[1] == fast64.FALLBACK).all()
    bits, flags = run("TEXP", codes)
    assert list(bits[:2]) == list(f64([1.0, 1.0])) and list(flags[:2]) == [0, 0]
    assert bits[6] == 0x7FF0000000000000 and flags[6] == OF | NX
    assert bits[9] == 0 and flags[9] == UF | NX
    assert list(bits[10:12]) == list(f64([np.inf, 0.0])) and list(flags[10:12]) == [0, 0]
    finite = codes[2:9]
    w = exp_mpfr(finite)
    assert_same("TEXP.FP64 edges", (bits[2:9][:3], flags[2:9][:3]), (w[0][:3], w[1][:3]), (finite[:3],))


def test_the_compiled_double_double_exp_is_within_2_to_minus_98():
    x = exp_samples(3000, 72).view(np.float64)
    h, l, scale = _exp_parts(x)
    with gmpy2.context(gmpy2.get_context(), precision=300):
        for xi, hi, li, si in zip(x.tolist(), h.tolist(), l.tolist(), scale.tolist()):
            v = gmpy2.exp(gmpy2.mpfr(xi)) * gmpy2.mpfr(2) ** -si
            assert abs(gmpy2.mpfr(hi) + gmpy2.mpfr(li) - v) <= v * gmpy2.mpfr(2) ** -98, xi
            assert float(gmpy2.mpfr(hi) + gmpy2.mpfr(li)) == hi


def test_exp_constants_are_mpfrs():
    with gmpy2.context(gmpy2.get_context(), precision=400):
        for j in range(64):
            t = gmpy2.exp2(gmpy2.mpfr(j) / 64)
            assert fast.EXP2_64[j] == float(t) and fast64.EXP2_64_LO[j] == float(t - fast.EXP2_64[j])
        for k in range(12):
            f = 1 / gmpy2.fac(k)
            assert tuple(fast64.INV_FACT[k]) == (float(f), float(f - float(f)))
        ln2_64 = gmpy2.log(2) / 64
        assert fast.C1 + fast.C2 + fast.C3 == float(ln2_64)
        assert abs(ln2_64 - fast.C1 - fast.C2 - fast.C3) < gmpy2.mpfr(2) ** -138
        assert fast.INV_LN2_64 == float(1 / ln2_64)
    for c in (fast.C1, fast.C2):
        assert float(np.ldexp(np.frexp(c)[0], 36)).is_integer()          # 36 bits: k*c exact


@functools.cache
def _loop3(fn, error_model):
    """A compiled loop storing the three results of the compiled element function `fn`
    (inlined, so under this loop's `error_model`)."""
    import numba as nb

    @nb.njit(error_model=error_model)
    def loop(x, a, b, c):
        for i in range(x.shape[0]):
            a[i], b[i], c[i] = fn(x[i])
    return loop


def _three_parts(fn, x, third=np.float64, error_model="python"):
    """fn's three results (float64, float64, `third`) for every element of x."""
    out = np.empty(x.shape[0]), np.empty(x.shape[0]), np.empty(x.shape[0], third)
    _loop3(fn, error_model)(x, *out)
    return out


def _exp_parts(x):
    return _three_parts(fast64.exp_parts, x, np.int64)


# ---------------------------------------------------------------- log

log_mpfr = functools.partial(inexact_mpfr, gmpy2.log)


def log_samples(n, seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(1, 0x7FF0000000000000, n, dtype=np.uint64)
    codes[: n // 8] = rng.integers(1, 1 << 52, n // 8, dtype=np.uint64)                    # subnormals
    near_one = (np.uint64(0x3FF0000000000000) + rng.integers(-(1 << 20), 1 << 20, n // 4)).astype(np.uint64)
    edges = np.uint64([1, 0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0x3FEFFFFFFFFFFFFF,
                       0x3FF0000000000001, 0x3FE6A09E667F3BCC, 0x3FE6A09E667F3BCD, 0x3FF6A09E667F3BCD])
    codes = np.concatenate([codes, near_one, edges])
    return codes[codes != 0x3FF0000000000000]                                               # log 1 = +0: the reference's


def test_log_samples_match_mpfr_and_the_loop_settles_them_all():
    codes = log_samples(20_000, 81)
    assert_same("TLOG.FP64", run("TLOG", codes), log_mpfr(codes), (codes,))
    assert (tier("TLOG", codes)[1] != fast64.FALLBACK).all()


def test_log_specials_follow_decision_074():
    codes = np.uint64([0x3FF0000000000000, 0, 1 << 63, 0x7FF0000000000000, 0xBFF0000000000000, 0xFFF0000000000000])
    assert (tier("TLOG", codes)[1] == fast64.FALLBACK).all()
    bits, flags = run("TLOG", codes)
    assert list(bits[:4]) == [0, 0xFFF0000000000000, 0xFFF0000000000000, 0x7FF0000000000000]
    assert list(flags) == [0, DZ, DZ, 0, NV, NV]


def test_the_compiled_double_double_log_is_within_its_per_element_bound():
    codes = log_samples(3000, 82)
    x = codes.view(np.float64)
    h, l, eps = _log_parts(x)
    assert (eps <= 2.0 ** -93).all()
    with gmpy2.context(gmpy2.get_context(), precision=300):
        for xi, hi, li, ei in zip(x.tolist(), h.tolist(), l.tolist(), eps.tolist()):
            v = gmpy2.log(gmpy2.mpfr(xi))
            assert abs(gmpy2.mpfr(hi) + gmpy2.mpfr(li) - v) <= abs(v) * gmpy2.mpfr(ei), xi
            assert float(gmpy2.mpfr(hi) + gmpy2.mpfr(li)) == hi


def test_ln2_parts():
    with gmpy2.context(gmpy2.get_context(), precision=400):
        ln2 = gmpy2.log(2)
        parts = (fast64._LN2_1, fast64._LN2_2, fast64._LN2_3)
        assert abs(ln2 - sum(gmpy2.mpfr(p) for p in parts)) < gmpy2.mpfr(2) ** -140
    for c in parts[:2]:
        assert float(np.ldexp(np.frexp(c)[0], 42)).is_integer()         # 42 bits: e*c exact, |e| < 2^11


def _log_parts(x):
    return _three_parts(fast64.log_parts, x, error_model="numpy")


@pytest.mark.parametrize("op,samples,mpfr,seed", [("TRSQRT", rsqrt_samples, rsqrt_mpfr, 64),
                                                   ("TEXP", exp_samples, exp_mpfr, 73),
                                                   ("TLOG", log_samples, log_mpfr, 83)])
def test_fp64_special_math_through_elementwise(op, samples, mpfr, seed):
    codes = samples(300, seed)
    assert_same(f"{op}.FP64", numeric.elementwise(op, "FP64", codes), mpfr(codes), (codes,))


# ---------------------------------------------------------------- profile ftz

FTZ = PROFILES["ftz"]


def near_min_normal(n, seed):
    """FP64 codes around 2^-1022 (subnormals, the smallest normals) and ordinary values, both
    signs: sums, differences, quotients and products land on both sides of the ftz boundary."""
    rng = np.random.default_rng(seed)
    sub = rng.integers(1, 1 << 52, n, dtype=np.int64).astype(np.uint64)               # subnormals
    low = (rng.integers(1, 4, n).astype(np.uint64) << np.uint64(52)) | rng.integers(0, 1 << 52, n).astype(np.uint64)
    mid = np.float64(rng.uniform(0.5, 2.0, n)).view(np.uint64)
    tiny = (rng.integers(1, 60, n).astype(np.uint64) << np.uint64(52)) | rng.integers(0, 1 << 52, n).astype(np.uint64)
    codes = np.concatenate([sub, low, mid, tiny])
    sign = rng.integers(0, 2, codes.size).astype(np.uint64) << np.uint64(63)
    return codes | sign


@pytest.mark.parametrize("op", ("TADD", "TSUB", "TMUL", "TDIV", "TREM", "TFMA", "TSQRT", "TRECIP"))
def test_ftz_is_served_by_the_same_kernels_with_subnormal_elements_marked(op):
    """Profile ftz: a subnormal operand reads as zero and a subnormal result flushes with UF|NX;
    fast64 runs its ieee kernels and hands every element with a subnormal operand or result to
    the reference, so the bits are ftz's (checked against exact rationals; TSQRT against the
    NumPy reference), and every element
    it keeps has only normal-or-zero operands and a normal-or-zero result."""
    arity = {"TFMA": 3, "TSQRT": 1, "TRECIP": 1}.get(op, 2)
    base = near_min_normal(400, 5)
    rng = np.random.default_rng(6)
    ops = [base] + [base[rng.permutation(base.size)] for _ in range(arity - 1)]
    assert TH.tier_of("fast64", op, "FP64", arity, FTZ).name == "fast64"
    got = TH.run("fast64", op, "FP64", *ops, profile=FTZ)
    if op == "TSQRT":      # the rational reference has no FP64 root: the NumPy reference (itself
        with np.errstate(all="ignore"):     # checked against SoftFloat) in profile ftz
            want = ops_float.OPS[op]("FP64", *ops, prof=FTZ)
    else:
        want = R.reference(op, "FP64", *ops, ftz=True)
    assert_same(f"ftz {op}.FP64", got, want, ops)
    bits, flags = tier(op, *ops)
    fast64.mark_for_ftz(bits, flags, ops)
    kept = flags != fast64.FALLBACK
    subnormal = lambda u: ((u >> np.uint64(52)) & np.uint64(0x7FF) == 0) & (u << np.uint64(12) != 0)  # noqa: E731
    assert not (kept & (subnormal(bits) | np.any([subnormal(x) for x in ops], axis=0))).any()
    assert kept.any()          # the kernels still settle the ordinary elements under ftz
