"""The compiled TRSQRT and TLOG on FP32, TF32 and HF32 and TREM on FP32, TF32, HF32, BF16 and
FP16 (kernels/numeric/fastfn.py) give the correctly rounded result with its flags in both profiles,
settle nothing they cannot prove, and hand the rest to the reference.

TREM's independent references: the exact-rational floor modulo of op_reference.py (Fractions,
both profiles) on random and edge codes, their cross product, operand pairs 2^250 apart and
every FP16/BF16 dividend over chosen divisors; the integer fmod alone against Fractions.

TLOG's: MPFR (gmpy2.log rounded once to p bits) for every positive finite TF32 and HF32 input,
FP32 samples (every input within 2^-8 of 1 among them) and, behind `slow`, every FP32 input in
[1/2, 2); the polynomial's error bound (2^-50.8) against MPFR; ln2's two parts recomputed.

TRSQRT's independent reference: MPFR (gmpy2.rec_sqrt rounded once to the format's precision), for every
positive finite TF32 and HF32 input, for FP32 samples over the whole range (subnormals
included) and, behind `slow`, for every FP32 input in [1, 4): 1/sqrt(4x) = 1/sqrt(x) / 2 and
the kernel's binary64 steps scale exactly too (checked below), so those 2^24 inputs stand for
every positive FP32 input.  Specials (zeros, negatives, infinities, NaNs) follow the seed's
table (Decision 077), checked by value.  The proof's two parts are also checked alone: the
binary64 value's error bound (2.01 ulps) against MPFR, and the rounding test's window.
"""
import functools

import gmpy2
import numba as nb
import numpy as np
import pytest

from fractions import Fraction

import op_reference as R
import tier_helpers as TH
from kernels import numeric
from kernels.numeric import fast, fastfn, ops_float, transcendental
from kernels.numeric import flags as F
from kernels.numeric.profiles import PROFILES
from test_ops_float import assert_same, edge_and_random

SHIFT = {"FP32": 0, "TF32": 13, "HF32": 12}
PREC = {"FP32": 24, "TF32": 11, "HF32": 12}
HARD_FP32 = 0x403A18E3        # the one input in [1, 4) whose binary64 value is within 4 ulps of a midpoint


def run(name, codes, profile="ieee"):
    with np.errstate(all="ignore"):
        return TH.run("fastfn", "TRSQRT", name, codes, profile=profile)


def mpfr(name, codes):
    """(bits, flags) of 1/sqrt(x) for positive finite codes: one MPFR rounding to p bits (the
    results are normal binary32 values, so the binary32 pattern of that value is the code);
    NX unless x = 4^k."""
    vals = codes.view(np.float32).astype(np.float64)
    out = np.empty(vals.shape[0])
    with gmpy2.context(gmpy2.get_context(), precision=PREC[name], emin=-1000, emax=1000):
        for i, v in enumerate(vals.tolist()):
            out[i] = float(gmpy2.rec_sqrt(gmpy2.mpfr(v)))
    m, e = np.frexp(vals)
    power4 = (m == 0.5) & ((e - 1) % 2 == 0)
    return out.astype(np.float32).view(np.uint32), np.where(power4, 0, F.NX).astype(np.uint8)


def positive_codes(name):
    step = 1 << SHIFT[name]
    return np.arange(step, 0x7F800000, step, dtype=np.uint32)


@pytest.mark.parametrize("name", ("TF32", "HF32"))
def test_every_positive_finite_input_matches_mpfr(name):
    codes = positive_codes(name)
    assert_same(f"TRSQRT.{name}", run(name, codes), mpfr(name, codes), (codes,))


def fp32_samples(n, seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(1, 0x7F800000, n, dtype=np.uint32)
    codes[: n // 8] = rng.integers(1, 1 << 23, n // 8, dtype=np.uint32)           # subnormals
    powers = (np.arange(1, 254, dtype=np.uint32) << np.uint32(23))                 # 2^-126 .. 2^127
    tiny = np.uint32(1) << np.arange(23, dtype=np.uint32)                           # 2^-149 .. 2^-127
    hard = (np.uint32(HARD_FP32) + (np.arange(-60, 61, 2, dtype=np.int64) << 23)).astype(np.uint32)  # x 4^k
    return np.concatenate([codes, powers, tiny, hard, np.uint32([0x7F7FFFFF, 1, 0x00800000])])


def test_fp32_samples_match_mpfr_exact_powers_of_4_included():
    codes = fp32_samples(100_000, 1)
    want = mpfr("FP32", codes)
    assert_same("TRSQRT.FP32", run("FP32", codes), want, (codes,))
    assert (want[1] == 0).sum() >= 127 + 11          # 4^k: 2^-148 .. 2^126


@pytest.mark.parametrize("name", ("FP32", "TF32", "HF32"))
def test_profile_ftz_reads_subnormals_as_zero_and_matches_mpfr_elsewhere(name):
    codes = fp32_samples(20_000, 2) & np.uint32((0xFFFFFFFF << SHIFT[name]) & 0xFFFFFFFF)
    codes = codes[codes != 0]
    bits, flags = run(name, codes, "ftz")
    sub = codes < 0x00800000
    assert (bits[sub] == 0x7F800000).all() and (flags[sub] == F.DZ).all()     # +0 -> +inf, DZ
    want = mpfr(name, codes[~sub])
    assert_same(f"TRSQRT.{name}.ftz", (bits[~sub], flags[~sub]), want, (codes[~sub],))


@pytest.mark.parametrize("profile", ("ieee", "ftz"))
def test_specials_follow_decision_077(profile):
    """+-0 -> +-inf with DZ, +inf -> +0, negative or -inf -> NaN with NV, a quiet NaN passes
    without a flag, a signalling one raises NV; in ftz a negative subnormal is -0."""
    pinf, ninf, qnan, snan = 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001
    codes = np.uint32([0, 0x80000000, pinf, ninf, 0xBF800000, 0x80000001, qnan, snan])
    bits, flags = run("FP32", codes, profile)
    is_nan = ((bits & 0x7F800000) == 0x7F800000) & ((bits & 0x7FFFFF) != 0)
    assert list(bits[:3]) == [pinf, ninf, 0] and list(flags[:3]) == [F.DZ, F.DZ, 0]
    assert is_nan[[3, 4, 6, 7]].all() and list(flags[[3, 4, 6, 7]]) == [F.NV, F.NV, 0, F.NV]
    if profile == "ftz":
        assert bits[5] == ninf and flags[5] == F.DZ
    else:
        assert is_nan[5] and flags[5] == F.NV


@functools.cache
def _values_loop(fn):
    @nb.njit
    def values(x):
        out = np.empty(x.shape[0])
        for i in range(x.shape[0]):
            out[i] = fn(x[i])
        return out
    return values


def values_of(fn, x):
    """The compiled element function `fn` (rsqrt_approx, log_approx) over a float64 array, by one
    compiled loop it is inlined into."""
    return _values_loop(fn)(x)


def test_the_binary64_value_is_within_2_01_ulps_of_the_true_reciprocal_root():
    codes = fp32_samples(20_000, 3)
    x = codes.view(np.float32).astype(np.float64)
    y = values_of(fastfn.rsqrt_approx, x)
    assert np.array_equal(y, 1.0 / np.sqrt(x))       # RN(1 / RN(sqrt x)), as analysed
    worst = 0.0
    with gmpy2.context(gmpy2.get_context(), precision=200):
        for xi, yi in zip(x.tolist(), y.tolist()):
            v = gmpy2.rec_sqrt(gmpy2.mpfr(xi))
            ulp = 2.0 ** (np.frexp(yi)[1] - 53)
            worst = max(worst, float(abs(gmpy2.mpfr(yi) - v) / ulp))
    assert worst <= 2.01, worst


@nb.njit
def _near(ys, t):
    out = np.empty(ys.shape[0], np.bool_)
    for i in range(ys.shape[0]):
        out[i] = fastfn.near_boundary(ys[i], t)
    return out


@pytest.mark.parametrize("t", (23, 11, 10))
def test_the_rounding_test_marks_values_within_4_ulps_of_a_midpoint(t):
    """y = a midpoint of the t-bit grid plus j binary64 ulps: marked exactly for |j| <= 4;
    grid points and values between them are not."""
    rng = np.random.default_rng(t)
    base = 1 + rng.integers(0, 1 << t, 200) * 2.0 ** -t
    j = np.arange(-8, 9)
    ys = (base[:, None] + 2.0 ** -(t + 1)) + j[None, :] * 2.0 ** -52
    ys = ys * np.exp2(rng.integers(-60, 60, 200))[:, None]
    near = _near(ys.ravel(), t).reshape(ys.shape)
    assert (near == (np.abs(j) <= fastfn.NEAR_ULPS)[None, :]).all()
    assert not _near(base, t).any()


def test_a_value_near_a_midpoint_is_marked_and_settled_by_the_reference():
    codes = (np.uint32(HARD_FP32) + (np.arange(-60, 61, 2, dtype=np.int64) << 23)).astype(np.uint32)
    bits, flags = TH.marked("fastfn", "TRSQRT", "FP32", codes)
    assert (flags == fastfn.FALLBACK).all()
    assert_same("TRSQRT.FP32 hard", run("FP32", codes), mpfr("FP32", codes), (codes,))


def test_results_scale_exactly_by_powers_of_4():
    """The slow test's coverage argument: the kernel's result for 4^k x is its result for x
    with the exponent lowered by k (and the same flags), subnormal inputs included (every
    subnormal is 4^k times an FP32 value in [1, 4))."""
    rng = np.random.default_rng(4)
    x = rng.integers(0x3F800000, 0x40800000, 2000, dtype=np.uint32)       # [1, 4)
    x[:1000] &= np.uint32(0xFFFFC000)                   # 10 bits: exact as subnormals down to 2^-140
    base = TH.marked("fastfn", "TRSQRT", "FP32", x)
    for k in (-70, -66, -63, -20, 1, 30, 63):
        v = x.view(np.float32).astype(np.float64) * 4.0 ** k
        exact = v.astype(np.float32) == v                 # 4^k x is an FP32 value (subnormal or not)
        assert exact.sum() >= 1000
        scaled = v[exact].astype(np.float32).view(np.uint32)
        got = TH.marked("fastfn", "TRSQRT", "FP32", scaled)
        want = (base[0][exact].view(np.float32) * np.float32(2.0 ** -k)).view(np.uint32)
        assert np.array_equal(got[0], want) and np.array_equal(got[1], base[1][exact]), k


def test_elementwise_serves_trsqrt_compiled_and_small_inputs_stay_serial():
    codes = fp32_samples(300, 5)
    before = dict(fast.Twin.calls)
    for name in ("FP32", "TF32", "HF32"):
        c = codes & np.uint32((0xFFFFFFFF << SHIFT[name]) & 0xFFFFFFFF)
        c = c[c != 0]
        assert_same(f"TRSQRT.{name}", numeric.elementwise("TRSQRT", name, c), mpfr(name, c), (c,))
    assert fast.Twin.calls["serial"] >= before["serial"] + 3
    assert fast.Twin.calls["parallel"] == before["parallel"]


@pytest.mark.slow
def test_every_fp32_input_in_1_to_4_matches_mpfr():
    codes = np.arange(0x3F800000, 0x40800000, dtype=np.uint32)
    assert_same("TRSQRT.FP32 [1,4)", run("FP32", codes), mpfr("FP32", codes), (codes,))


# ---------------------------------------------------------------- TREM

REM_FORMATS = [name for name, op in fast.rows("fastfn") if op == "TREM"]


def rem(name, a, b, profile="ieee"):
    with np.errstate(all="ignore"):
        return TH.run("fastfn", "TREM", name, a, b, profile=profile)


@pytest.mark.parametrize("profile", ("ieee", "ftz"))
@pytest.mark.parametrize("name", REM_FORMATS)
def test_trem_random_and_edge_codes_match_exact_rationals(name, profile):
    a = edge_and_random(name, 6000, 31)
    b = a[np.random.default_rng(32).permutation(a.size)]
    assert_same(f"TREM.{name}.{profile}", rem(name, a, b, profile), R.reference("TREM", name, a, b, ftz=profile == "ftz"),
                (a, b))
    e = edge_and_random(name, 0, 0)
    x, y = (g.ravel() for g in np.meshgrid(e, e, indexing="ij"))
    assert_same(f"TREM.{name}.{profile} edges", rem(name, x, y, profile),
                R.reference("TREM", name, x, y, ftz=profile == "ftz"), (x, y))


def f32(v):
    with np.errstate(over="ignore", under="ignore"):
        return np.asarray(v, np.float32).view(np.uint32)


def far_apart(n, seed):
    """Dividends up to 2^250 times the divisor (up to 276 binades apart: the integer loop's
    longest), either sign, subnormal divisors included."""
    rng = np.random.default_rng(seed)
    ex = rng.integers(-149, 128, n)
    ey = np.maximum(ex - rng.integers(0, 277, n), -149)
    x = rng.uniform(1, 2, n) * np.exp2(ex.astype(float)) * np.where(rng.random(n) < 0.5, -1, 1)
    y = rng.uniform(1, 2, n) * np.exp2(ey.astype(float)) * np.where(rng.random(n) < 0.5, -1, 1)
    return f32(np.clip(x, -3.4e38, 3.4e38)), f32(y)


@nb.njit
def _fmod24(x, y):
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = fastfn.fmod24(x[i], y[i])
    return out


def test_the_integer_fmod_is_exact_far_apart_and_near():
    a, b = far_apart(3000, 33)
    x, y = (v.view(np.float32).astype(np.float64) for v in (a, b))
    near = y[:500] * np.random.default_rng(34).integers(-1000, 1000, 500) + y[:500] * 0.25
    x[:500] = near.astype(np.float32).astype(np.float64)        # binary32 values, a few y apart
    got = _fmod24(x, y)
    for xi, yi, gi in zip(x.tolist(), y.tolist(), got.tolist()):
        fx, fy = Fraction(xi), Fraction(yi)
        q = fx / fy
        trunc = q.numerator // q.denominator if q >= 0 else -((-q.numerator) // q.denominator)
        want = fx - trunc * fy
        assert Fraction(gi) == want and (gi != 0 or np.signbit(gi) == np.signbit(xi)), (xi, yi)


@pytest.mark.parametrize("profile", ("ieee", "ftz"))
def test_trem_operands_far_apart_match_exact_rationals(profile):
    a, b = far_apart(3000, 35)
    assert_same(f"TREM.FP32.{profile} far", rem("FP32", a, b, profile), R.reference("TREM", "FP32", a, b, ftz=profile == "ftz"),
                (a, b))


def test_trem_rounds_minus_tiny_mod_1_up_to_the_divisor():
    """The operations table's example: -1e-30 mod 1 = 1 - 1e-30, which rounds to 1.0 (NX); the
    zero result takes the divisor's sign; a result of the divisor's sign is exact."""
    a = f32([-1e-30, 6.0, -6.0, 7.5, -7.5])
    b = f32([1.0, -3.0, 3.0, -2.0, 2.0])
    bits, flags = rem("FP32", a, b)
    assert list(bits) == list(f32([1.0, -0.0, 0.0, -0.5, 0.5]))
    assert list(flags) == [F.NX, 0, 0, 0, 0]


@pytest.mark.parametrize("name", ("FP16", "BF16"))
def test_trem_every_16_bit_dividend_over_two_divisors(name):
    a = np.arange(1 << 16, dtype=np.uint16)
    for d in (0x3C01 if name == "FP16" else 0x3F81, 0x8003):       # ~1 + ulp, a negative subnormal
        b = np.full(a.size, d, np.uint16)
        assert_same(f"TREM.{name} / {d:#x}", rem(name, a, b), R.reference("TREM", name, a, b), (a, b))


@pytest.mark.slow
@pytest.mark.parametrize("profile", ("ieee", "ftz"))
@pytest.mark.parametrize("name", ("FP16", "BF16"))
def test_trem_every_16_bit_dividend_over_every_4096th_divisor(name, profile):
    a = np.arange(1 << 16, dtype=np.uint16)
    for d in range(3, 1 << 16, 4096):
        b = np.full(a.size, d, np.uint16)
        assert_same(f"TREM.{name}.{profile} / {d:#x}", rem(name, a, b, profile),
                    R.reference("TREM", name, a, b, ftz=profile == "ftz"), (a, b))


def test_elementwise_serves_trem_compiled_and_small_inputs_stay_serial():
    before = dict(fast.Twin.calls)
    for name in REM_FORMATS:
        a = edge_and_random(name, 300, 36)
        b = a[::-1].copy()
        assert_same(f"TREM.{name}", numeric.elementwise("TREM", name, a, b), R.reference("TREM", name, a, b), (a, b))
    assert fast.Twin.calls["serial"] >= before["serial"] + len(REM_FORMATS)
    assert fast.Twin.calls["parallel"] == before["parallel"]


# ---------------------------------------------------------------- TLOG

HARD_LOG = np.uint32([0x3FC55379, 0x3FD364D7, 0x3FDC4750])   # FP32 inputs in [1/2, 2) the window marks


def run_log(name, codes, profile="ieee"):
    with np.errstate(all="ignore"):
        return TH.run("fastfn", "TLOG", name, codes, profile=profile)


def mpfr_log(name, codes):
    """(bits, flags) of log(x), x > 0 finite and != 1: one MPFR rounding to p bits (a normal
    binary32 value), NX."""
    vals = codes.view(np.float32).astype(np.float64)
    out = np.empty(vals.shape[0])
    with gmpy2.context(gmpy2.get_context(), precision=PREC[name], emin=-1000, emax=1000):
        for i, v in enumerate(vals.tolist()):
            out[i] = float(gmpy2.log(gmpy2.mpfr(v)))
    return out.astype(np.float32).view(np.uint32), np.full(vals.shape[0], F.NX, np.uint8)


def without_one(name, codes):
    one = np.uint32(0x3F800000)
    mask = np.uint32((0xFFFFFFFF << SHIFT[name]) & 0xFFFFFFFF)
    return codes[(codes & mask) != one]


@pytest.mark.parametrize("name", ("TF32", "HF32"))
def test_log_of_every_positive_finite_input_matches_mpfr(name):
    codes = without_one(name, positive_codes(name))
    assert_same(f"TLOG.{name}", run_log(name, codes), mpfr_log(name, codes), (codes,))


def log_samples(n, seed):
    near_one = np.arange(0x3F7F0000, 0x3F810000, 7, dtype=np.uint32)          # within 2^-8 of 1
    return without_one("FP32", np.concatenate([fp32_samples(n, seed), near_one, HARD_LOG]))


@pytest.mark.parametrize("profile", ("ieee", "ftz"))
def test_log_fp32_samples_match_mpfr(profile):
    codes = log_samples(60_000, 41)
    bits, flags = run_log("FP32", codes, profile)
    sub = codes < 0x00800000
    want = mpfr_log("FP32", codes[~sub])
    assert_same(f"TLOG.FP32.{profile}", (bits[~sub], flags[~sub]), want, (codes[~sub],))
    if profile == "ftz":                                                        # read as +0
        assert (bits[sub] == 0xFF800000).all() and (flags[sub] == F.DZ).all()
    else:
        assert_same("TLOG.FP32 subnormal", (bits[sub], flags[sub]), mpfr_log("FP32", codes[sub]), (codes[sub],))


def test_log_values_near_a_midpoint_are_marked_and_settled_by_the_reference():
    bits, flags = TH.marked("fastfn", "TLOG", "FP32", HARD_LOG)
    assert (flags == fastfn.FALLBACK).all()
    assert_same("TLOG.FP32 hard", run_log("FP32", HARD_LOG), mpfr_log("FP32", HARD_LOG), (HARD_LOG,))


def test_log_specials_follow_decision_074():
    """+1 -> +0 exactly, +-0 -> -inf with DZ, +inf -> +inf, negative -> NaN with NV."""
    codes = np.uint32([0x3F800000, 0, 0x80000000, 0x7F800000, 0xBF800000, 0xFF800000])
    bits, flags = run_log("FP32", codes)
    assert list(bits[:4]) == [0, 0xFF800000, 0xFF800000, 0x7F800000]
    assert list(flags) == [0, F.DZ, F.DZ, 0, F.NV, F.NV]
    assert ((bits[4:] & 0x7F800000) == 0x7F800000).all() and ((bits[4:] & 0x7FFFFF) != 0).all()


def test_the_log_polynomial_is_within_2_to_minus_50_8_of_the_true_log():
    codes = log_samples(20_000, 42)
    x = codes.view(np.float32).astype(np.float64)
    y = values_of(fastfn.log_approx, x)
    worst = 0.0
    with gmpy2.context(gmpy2.get_context(), precision=200):
        for xi, yi in zip(x.tolist(), y.tolist()):
            v = gmpy2.log(gmpy2.mpfr(xi))
            worst = max(worst, float(abs((gmpy2.mpfr(yi) - v) / v)))
    assert worst < 2.0 ** -50.8, np.log2(worst)


def test_ln2_parts_and_series_coefficients():
    with gmpy2.context(gmpy2.get_context(), precision=300):
        ln2 = gmpy2.log(2)
        hi = gmpy2.mpfr(int(gmpy2.floor(ln2 * 2 ** 21))) / 2 ** 21
        assert fastfn._LN2_HI == float(hi) and fastfn._LN2_LO == float(ln2 - hi)
        assert abs(ln2 - gmpy2.mpfr(fastfn._LN2_HI) - gmpy2.mpfr(fastfn._LN2_LO)) <= gmpy2.mpfr(2) ** -75
    assert fastfn._INV == tuple(float(Fraction(1, 2 * j + 1)) for j in range(1, 11))


def test_elementwise_serves_tlog_compiled():
    codes = log_samples(300, 43)
    for name in ("FP32", "TF32", "HF32"):
        c = without_one(name, codes & np.uint32((0xFFFFFFFF << SHIFT[name]) & 0xFFFFFFFF))
        c = c[c >= 0x00800000]
        assert_same(f"TLOG.{name}", numeric.elementwise("TLOG", name, c), mpfr_log(name, c), (c,))


@pytest.mark.slow
def test_log_of_every_fp32_input_in_half_to_2_matches_mpfr():
    codes = without_one("FP32", np.arange(0x3F000000, 0x40000000, dtype=np.uint32))
    assert_same("TLOG.FP32 [1/2,2)", run_log("FP32", codes), mpfr_log("FP32", codes), (codes,))
