"""The compiled TDIV, TRECIP and TSQRT (kernels/numeric/fastdiv.py: FP32, TF32, HF32, FP16, BF16,
profiles ieee and ftz) give the correctly rounded result and flags; each tier's settled elements
are right on their own, and small inputs stay out of parallel regions.

Independent references: the exact-rational reference of op_reference.py (every format, both
profiles), Berkeley SoftFloat (softfloatpy) for FP32 and FP16, and MPFR (gmpy2) for FP32
quotients, on random codes over the whole range (NaN payloads, infinities, subnormals) and on
the cases the shortcuts must get right or mark: quotients rounding to a tie in the subnormal
range, quotients around the tininess threshold 2^-126 and the overflow threshold, exact
quotients and perfect squares (no NX), zeros of both signs and zero divisors.
"""
import gmpy2
import numpy as np
import pytest

import op_reference as R
import tier_helpers as TH
from kernels import numeric
from kernels.numeric import fast, fastdiv, ops_float, tiers
from kernels.numeric import flags as F
from kernels.numeric.profiles import PROFILES
from test_ops_float import assert_same, edge_and_random, softfloat

REF = {"TDIV": ops_float.tdiv, "TRECIP": ops_float.trecip, "TSQRT": ops_float.tsqrt}
ARITY = {"TDIV": 2, "TRECIP": 1, "TSQRT": 1}
CASES = sorted((op, name) for name, op in fast.rows("fastdiv"))     # tier 2: every format and op


def run(op, name, *ops, profile="ieee"):
    with np.errstate(all="ignore"):
        return TH.run("fastdiv", op, name, *ops, profile=profile)


def f32(x):
    with np.errstate(over="ignore", under="ignore"):
        return np.asarray(x, np.float32).view(np.uint32)


def operands(op, name, n, seed):
    base = edge_and_random(name, n, seed)
    rng = np.random.default_rng(seed + 1)
    return [base] + [base[rng.permutation(len(base))] for _ in range(ARITY[op] - 1)]


@pytest.mark.parametrize("profile", ("ieee", "ftz"))
@pytest.mark.parametrize("op,name", CASES)
def test_random_and_edge_codes_match_exact_rationals(op, name, profile):
    ops = operands(op, name, 3000, 7)
    assert_same(f"{op}.{name}.{profile}", run(op, name, *ops, profile=profile),
                R.reference(op, name, *ops, ftz=profile == "ftz"), ops)


@pytest.mark.parametrize("op,name", [(op, n) for op in ("TDIV", "TSQRT") for n in ("FP32", "FP16")])
def test_edge_cross_product_matches_softfloat(op, name):
    e = edge_and_random(name, 0, 0)
    grids = [g.ravel() for g in np.meshgrid(*([e] * ARITY[op]), indexing="ij")]
    assert_same(f"{op}.{name}", run(op, name, *grids), softfloat(op, name, *grids), grids)


def subnormal_ties(n, seed):
    """x / 2^k landing in binary32's subnormal range: exact, exactly halfway between two
    subnormals (odd x significands), or just off halfway (neighbouring divisors)."""
    rng = np.random.default_rng(seed)
    m = rng.integers(1, 1 << 24, n).astype(np.float64)
    x = m * np.exp2(rng.integers(-149, -100, n).astype(float))
    k = rng.integers(1, 30, n).astype(float)
    y = np.exp2(k) * np.where(rng.random(n) < 0.3, 1 + 2.0 ** -23 * rng.integers(-1, 2, n), 1.0)
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return f32(x * sign), f32(y)


def thresholds(n, seed, target):
    """Quotients within a few ulps of `target` (2^-126, the max): x = target*y*(1 + tiny)."""
    rng = np.random.default_rng(seed)
    y = (rng.uniform(1, 2, n) * np.exp2(rng.integers(-20, 20, n).astype(float))).astype(np.float32)
    x64 = target * y.astype(np.float64) * (1 + rng.integers(-8, 9, n) * 2.0 ** -24)
    x = np.clip(x64, -3.4028234663852886e38, 3.4028234663852886e38).astype(np.float32)
    return f32(x), f32(y)


def mpfr_div32(a, b):
    """(bits, flags) of binary32 a / b by MPFR at 24 bits with binary32's exponent range and
    subnormals; flags from MPFR's own.  MPFR signals underflow for every tiny result, exact or
    not; IEEE 754's default (the profile's) raises UF only with NX."""
    ctx = gmpy2.ieee(32)
    bits, flags = [], []
    xs, ys = a.view(np.float32).astype(np.float64), b.view(np.float32).astype(np.float64)
    for x, y in zip(xs, ys):
        with gmpy2.context(ctx) as c:
            u, v = gmpy2.mpfr(float(x)), gmpy2.mpfr(float(y))      # (reading a subnormal flags it)
            c.clear_flags()
            r = c.div(u, v)
            f = (F.NX if c.inexact else 0) | (F.OF if c.overflow else 0) | (F.UF if c.underflow and c.inexact else 0)
            f |= F.DZ if c.divzero else 0
            bits.append(np.float32(float(r)).view(np.uint32))
            flags.append(f)
    return np.array(bits, np.uint32), np.array(flags, np.uint8)


def test_fp32_quotients_that_tie_in_the_subnormal_range():
    a, b = subnormal_ties(3000, 1)
    assert_same("TDIV.FP32 subnormal ties", run("TDIV", "FP32", a, b), softfloat("TDIV", "FP32", a, b), (a, b))
    assert_same("TDIV.FP32 subnormal ties (MPFR)", run("TDIV", "FP32", a, b), mpfr_div32(a, b), (a, b))


@pytest.mark.parametrize("target", (2.0 ** -126, 3.4028234663852886e38))
def test_fp32_quotients_around_the_tininess_and_overflow_thresholds(target):
    a, b = thresholds(3000, 2, target)
    want = softfloat("TDIV", "FP32", a, b)
    assert_same("TDIV.FP32 thresholds", run("TDIV", "FP32", a, b), want, (a, b))
    assert_same("TDIV.FP32 thresholds (MPFR)", want, mpfr_div32(a, b), (a, b))
    assert ((want[1] & F.UF) != 0).any() or ((want[1] & F.OF) != 0).any()     # the cases are hit


def test_exact_quotients_and_perfect_squares_raise_nothing():
    rng = np.random.default_rng(4)
    q = rng.integers(1, 1 << 12, 2000) * np.exp2(rng.integers(-40, 40, 2000).astype(float))
    y = rng.integers(1, 1 << 12, 2000) * np.exp2(rng.integers(-40, 40, 2000).astype(float))
    a, b = f32(q * y), f32(y)
    got = run("TDIV", "FP32", a, b)
    assert np.array_equal(got[0], f32(q)) and not got[1].any()
    got = run("TSQRT", "FP32", f32(q * q))
    assert np.array_equal(got[0], f32(q)) and not got[1].any()


def test_specials_follow_the_operations_table():
    inf, nan, snan = 0x7F800000, 0x7FC00000, 0x7F800001
    a = np.array([0, 0x80000000, 0x3F800000, 0, inf, inf, 0x3F800000, snan, 0x7FC12345, 0x80000000], np.uint32)
    b = np.array([0x3F800000, 0x3F800000, 0, 0, 0x3F800000, inf, inf | 0x80000000, 0x3F800000, 0x3F800000, 0x80000000], np.uint32)
    bits, flags = run("TDIV", "FP32", a, b)
    assert [hex(int(v)) for v in bits] == ["0x0", "0x80000000", hex(inf), hex(nan), hex(inf), hex(nan),
                                           "0x80000000", hex(nan), hex(nan), hex(nan)]
    assert list(flags) == [0, 0, F.DZ, F.NV, 0, F.NV, 0, F.NV, 0, F.NV]
    x = np.array([0, 0x80000000, inf, inf | 0x80000000, 0xBF800000, snan, 0x40800000], np.uint32)
    bits, flags = run("TSQRT", "FP32", x)
    assert [hex(int(v)) for v in bits] == ["0x0", "0x80000000", hex(inf), hex(nan), hex(nan), hex(nan), "0x40000000"]
    assert list(flags) == [0, 0, 0, F.NV, F.NV, F.NV, 0]


@pytest.mark.parametrize("op", sorted(REF))
def test_each_tier_settles_only_correct_results(op):
    """Tier 1 (SIMD binary32) and tier 2 (round_rne) on their own: every element each one does
    not mark equals SoftFloat, and together they mark only what must go further."""
    ops = operands(op, "FP32", 20000, 9)
    if op == "TDIV":
        ops = [np.concatenate([x, y]) for x, y in zip(ops, subnormal_ties(5000, 3))]
    sf_op = "TSQRT" if op == "TSQRT" else "TDIV"
    sf_ops = ops if op != "TRECIP" else [np.full_like(ops[0], 0x3F800000), ops[0]]
    want = softfloat(sf_op, "FP32", *sf_ops)
    with np.errstate(all="ignore"):
        tier1 = tiers.run_kernels(tiers.BY_NAME["fastdiv-simd"], op, "FP32", ops, PROFILES["ieee"])
        tier2 = tiers.run_kernels(tiers.BY_NAME["fastdiv"], op, "FP32", ops, PROFILES["ieee"])
    for what, (bits, fl) in (("tier 1", tier1), ("tier 2", tier2)):
        done = fl != fastdiv.FALLBACK
        assert done.mean() > 0.5, what
        assert_same(f"{op}.FP32 {what}", (bits[done], fl[done]), (want[0][done], want[1][done]),
                    [x[done] for x in ops])
    marked2 = tier2[1] == fastdiv.FALLBACK
    v = [x.view(np.float32) for x in ops]
    must = ~np.isfinite(v[0]) | ~np.isfinite(v[-1])
    must |= (v[-1] == 0) if op != "TSQRT" else (v[0] < 0)
    assert np.array_equal(marked2, must)                       # tier 2 marks exactly the specials


@pytest.mark.parametrize("name", ("BF16", "FP16"))
def test_16_bit_quotients_settled_by_the_simd_tier_are_correct(name):
    """BF16/FP16 TDIV's binary32 shortcut alone, on random codes and on quotients near the
    normal threshold and the overflow threshold of the format (exact rationals)."""
    a, b = operands("TDIV", name, 20000, 12)
    rng = np.random.default_rng(13)
    top = {"BF16": 0x7F7F, "FP16": 0x7BFF}[name]
    big = (top - rng.integers(0, 64, 4000)).astype(np.uint16)
    near1 = (0x3F80 if name == "BF16" else 0x3C00) + rng.integers(-8, 8, 4000)
    small = {"BF16": 0x0080, "FP16": 0x0400}[name] + rng.integers(-4, 64, 4000)
    a = np.concatenate([a, big, small.astype(np.uint16)])
    b = np.concatenate([b, near1.astype(np.uint16), near1.astype(np.uint16)])
    want = R.reference("TDIV", name, a, b)
    with np.errstate(all="ignore"):
        bits, flags = tiers.run_kernels(tiers.BY_NAME["fastdiv-simd"], "TDIV", name, [a, b], PROFILES["ieee"])
    done = flags != fastdiv.FALLBACK
    assert done.mean() > 0.5 and ((flags[done] & F.OF) != 0).any()
    assert_same(f"TDIV.{name} tier 1", (bits[done], flags[done]), (want[0][done], want[1][done]), (a[done], b[done]))
    assert_same(f"TDIV.{name}", run("TDIV", name, a, b), want, (a, b))


def test_an_fp16_quotient_of_exactly_2_to_16_overflows_inexactly():
    """1 / 2^-16 = 65536 is exact but above the max: OF|NX, +inf (the stand-in value of the
    infinite code times y must not make it look exact)."""
    bits, flags = run("TDIV", "FP16", np.array([0x3C00], np.uint16), np.array([0x0100], np.uint16))
    assert (int(bits[0]), int(flags[0])) == (0x7C00, F.OF | F.NX)


@pytest.mark.parametrize("op", ("TRECIP", "TSQRT"))
@pytest.mark.parametrize("name", ("FP16", "BF16"))
@pytest.mark.parametrize("profile", ("ieee", "ftz"))
def test_every_16_bit_input_of_the_unary_operations(op, name, profile):
    x = np.arange(1 << 16, dtype=np.uint16)
    assert_same(f"{op}.{name}.{profile}", run(op, name, x, profile=profile),
                R.reference(op, name, x, ftz=profile == "ftz"), (x,))


def fp16_dividends_over(divisors):
    x = np.arange(1 << 16, dtype=np.uint16)
    a, b = (g.ravel() for g in np.meshgrid(x, np.asarray(divisors, np.uint16), indexing="ij"))
    assert_same("TDIV.FP16", run("TDIV", "FP16", a, b), R.reference("TDIV", "FP16", a, b), (a, b))


def test_every_fp16_dividend_over_chosen_divisors():
    """1, 3, ~1/3, -1.5, the smallest subnormal, the largest subnormal, the smallest normal, max."""
    fp16_dividends_over([0x3C00, 0x4200, 0x3555, 0xBE00, 0x0001, 0x03FF, 0x0400, 0x7BFF])


@pytest.mark.slow
def test_every_fp16_dividend_over_every_256th_divisor():
    """All 2^16 dividends times 256 divisors spread over every binade of both signs (all 2^32
    pairs would keep the rational reference busy for hours); 3-5 minutes on the 2-core dev box."""
    for k in range(0, 256, 16):
        fp16_dividends_over((np.arange(k, k + 16) * 256 + 0x5B) & 0xFFFF)


def test_elementwise_serves_them_compiled_and_small_inputs_stay_serial():
    a, b = operands("TDIV", "FP32", 500, 5)
    before = dict(fast.Twin.calls)
    got = numeric.elementwise("TDIV", "FP32", a, b)
    assert fast.Twin.calls["serial"] > before["serial"] and fast.Twin.calls["parallel"] == before["parallel"]
    assert_same("TDIV.FP32", got, R.reference("TDIV", "FP32", a, b), (a, b))
    for name in fastdiv.FORMATS:
        x = edge_and_random(name, 100, 2)
        for op in ("TRECIP", "TSQRT"):
            assert_same(f"{op}.{name}", numeric.elementwise(op, name, x), R.reference(op, name, x), (x,))
