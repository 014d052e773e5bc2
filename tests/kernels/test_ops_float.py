"""Floating element-wise operations, profile `ieee`, against independent references.

- every 8-bit format, every binary operation: all 65536 operand pairs (exact rationals);
- TSQRT/TRECIP/TABS/TNEG/TRELU: all 2^16 FP16 and BF16 inputs and all 8-bit inputs;
- TFMA: sampled triples (8-bit, BF16, TF32, HF32) and the known double-rounding traps;
- FP16/FP32/FP64 add/sub/mul/div/sqrt/mulAdd against Berkeley SoftFloat (softfloatpy) on edge
  and random operands, flags included (tininess after rounding).
References: tests/kernels/op_reference.py (exact rationals + oracles.round_f64) and softfloatpy.
"""
import numpy as np
import pytest
import softfloatpy as sf

from kernels import numeric
from kernels.numeric import flags as F

import op_reference as R

EIGHT = ("E4M3", "E5M2")
ARITH = ("TADD", "TSUB", "TMUL", "TDIV", "TREM")


def all_pairs(n=256, dtype=np.uint8):
    a, b = np.meshgrid(np.arange(n, dtype=dtype), np.arange(n, dtype=dtype), indexing="ij")
    return a.ravel(), b.ravel()


def assert_same(name, got, want, inputs):
    (gb, gf), (wb, wf) = got, want
    bad = np.flatnonzero((gb != wb) | (gf != wf))
    if bad.size:
        i = bad[0]
        ops = ", ".join(hex(int(x[i])) for x in inputs)
        raise AssertionError(f"{name}({ops}): got {int(gb[i]):#x} {F.describe(int(gf[i]))}, "
                             f"want {int(wb[i]):#x} {F.describe(int(wf[i]))} ({bad.size} mismatches)")


# ---------------------------------------------------------------- exhaustive 8-bit binary

@pytest.mark.parametrize("name", EIGHT)
@pytest.mark.parametrize("op", ARITH)
def test_8bit_arithmetic_all_pairs(op, name):
    a, b = all_pairs()
    assert_same(f"{op}.{name}", numeric.elementwise(op, name, a, b), R.reference(op, name, a, b), (a, b))


@pytest.mark.parametrize("name", EIGHT)
@pytest.mark.parametrize("op", ("TMAX", "TMIN"))
def test_8bit_max_min_all_pairs(op, name):
    a, b = all_pairs()
    assert_same(f"{op}.{name}", numeric.elementwise(op, name, a, b), R.select_reference(op, name, a, b), (a, b))


@pytest.mark.parametrize("name", EIGHT)
@pytest.mark.parametrize("cmode", ("EQ", "NE", "LT", "GT", "LE", "GE"))
def test_8bit_compare_all_pairs(cmode, name):
    a, b = all_pairs()
    got = numeric.elementwise("TCMP", name, a, b, cmode=cmode)
    assert_same(f"TCMP.{cmode}.{name}", got, R.compare_reference(cmode, name, a, b), (a, b))


@pytest.mark.parametrize("name", EIGHT)
def test_8bit_fma_sampled_triples(name):
    rng = np.random.default_rng(81)
    a, b, c = (rng.integers(0, 256, 60000).astype(np.uint8) for _ in range(3))
    c[:20000] = a[:20000] ^ 0x80          # addend = -multiplicand: many exact cancellations
    assert_same(f"TFMA.{name}", numeric.elementwise("TFMA", name, a, b, c), R.reference("TFMA", name, a, b, c), (a, b, c))


# ---------------------------------------------------------------- exhaustive unary

UNARY_FORMATS = {"FP16": np.uint16, "BF16": np.uint16, "E4M3": np.uint8, "E5M2": np.uint8}


def every_code(name):
    dt = UNARY_FORMATS[name]
    return np.arange(1 << (8 * np.dtype(dt).itemsize), dtype=np.uint64).astype(dt)


@pytest.mark.parametrize("name", UNARY_FORMATS)
@pytest.mark.parametrize("op", ("TSQRT", "TRECIP"))
def test_unary_every_input(op, name):
    x = every_code(name)
    assert_same(f"{op}.{name}", numeric.elementwise(op, name, x), R.reference(op, name, x), (x,))


@pytest.mark.parametrize("name", UNARY_FORMATS)
def test_abs_neg_touch_only_the_sign_bit_and_never_flag(name):
    x = every_code(name)
    sign = x.dtype.type(1 << (8 * x.dtype.itemsize - 1))
    bits, flags = numeric.elementwise("TABS", name, x)
    assert np.array_equal(bits, x & ~sign) and not flags.any()      # sNaN too: no NV (Decision 070)
    bits, flags = numeric.elementwise("TNEG", name, x)
    assert np.array_equal(bits, x ^ sign) and not flags.any()


@pytest.mark.parametrize("name", UNARY_FORMATS)
def test_relu_every_input(name):
    x = every_code(name)
    v, snan = R.values(name, x)
    want = np.where(np.isnan(v), R.nan_code(name), np.where(v > 0, x, 0)).astype(x.dtype)
    bits, flags = numeric.elementwise("TRELU", name, x)
    assert np.array_equal(bits, want)
    assert np.array_equal(flags, np.where(snan, F.NV, 0))


# ---------------------------------------------------------------- sampled wide formats

def edge_and_random(name, n, seed):
    """Codes: zeros, subnormal/normal boundaries, max, infinities, NaNs, then random codes
    (half with exponents near the bias so sums and products interact)."""
    eb, t, specials, shift, cont = R.fields(name)
    w = 1 + eb + t
    bias = (1 << (eb - 1)) - 1
    top = (1 << eb) - 1
    mags = [0, 1, 2, (1 << t) - 1, 1 << t, (1 << t) + 1, bias << t, (bias << t) + 1, ((bias + 1) << t) - 1,
            (top << t) - 1, (top - 1) << t, top << t, (top << t) | 1, (top << t) | (1 << (t - 1))]
    edges = [m | s for m in mags for s in (0, 1 << (w - 1))]
    rng = np.random.default_rng(seed)
    r = rng.integers(0, 1 << 62, n, dtype=np.int64).astype(np.uint64) * np.uint64(4) + rng.integers(0, 4, n).astype(np.uint64)
    r = r >> np.uint64(64 - w)
    near = rng.integers(bias - 4, bias + 4, n // 2).astype(np.uint64)
    r[: n // 2] = (r[: n // 2] & np.uint64((1 << t) - 1 | (1 << (w - 1)))) | (near << np.uint64(t))
    codes = np.concatenate([np.array(edges, np.uint64), r]) << np.uint64(shift)
    return codes.astype(R.raw(name))


def operand_sets(name, arity, n, seed):
    base = edge_and_random(name, n, seed)
    k = len(base)
    rng = np.random.default_rng(seed + 1)
    return [base] + [base[rng.permutation(k)] for _ in range(arity - 1)]


@pytest.mark.parametrize("name", ("BF16", "TF32", "HF32", "FP16", "FP32"))
@pytest.mark.parametrize("op", ARITH + ("TFMA",))
def test_narrow_and_fp32_samples_against_exact_rationals(op, name):
    ops = operand_sets(name, 3 if op == "TFMA" else 2, 3000, 7)
    assert_same(f"{op}.{name}", numeric.elementwise(op, name, *ops), R.reference(op, name, *ops), ops)


@pytest.mark.parametrize("name", ("TF32", "HF32", "FP32"))
@pytest.mark.parametrize("op", ("TSQRT", "TRECIP"))
def test_unary_samples_against_exact_rationals(op, name):
    (x,) = operand_sets(name, 1, 20000, 11)
    assert_same(f"{op}.{name}", numeric.elementwise(op, name, x), R.reference(op, name, x), (x,))


def test_fp64_remainder_against_exact_rationals():
    a, b = operand_sets("FP64", 2, 3000, 5)
    assert_same("TREM.FP64", numeric.elementwise("TREM", "FP64", a, b), R.reference("TREM", "FP64", a, b), (a, b))


# ---------------------------------------------------------------- SoftFloat cross-check

SF = {"FP16": (sf.Float16, "f16", 2), "FP32": (sf.Float32, "f32", 4), "FP64": (sf.Float64, "f64", 8)}
SF_FLAGS = [(sf.ExceptionFlag.INVALID, F.NV), (sf.ExceptionFlag.INFINITE, F.DZ), (sf.ExceptionFlag.OVERFLOW, F.OF),
            (sf.ExceptionFlag.UNDERFLOW, F.UF), (sf.ExceptionFlag.INEXACT, F.NX)]
SF_OPS = {"TADD": "add", "TSUB": "sub", "TMUL": "mul", "TDIV": "div", "TSQRT": "sqrt", "TFMA": "mul_add"}


def softfloat(op, name, *codes):
    cls, pre, nbytes = SF[name]
    fn = getattr(sf, f"{pre}_{SF_OPS[op]}")
    is_nan = getattr(sf, f"{pre}_is_nan")
    sf.set_tininess_mode(sf.TininessMode.AFTER_ROUNDING)
    sf.set_rounding_mode(sf.RoundingMode.NEAR_EVEN)
    bits, flags = [], []
    for vals in zip(*codes):
        sf.set_exception_flags(0)
        r = fn(*(cls.from_bytes(int(v).to_bytes(nbytes, "big")) for v in vals))
        raised = sf.get_exception_flags()
        # the profile's NaN is canonical (SoftFloat's default NaN differs in sign/payload)
        bits.append(R.nan_code(name) if is_nan(r) else int.from_bytes(r.to_bytes(), "big"))
        flags.append(sum(ours for theirs, ours in SF_FLAGS if raised & theirs))
    return np.array(bits, np.uint64).astype(R.raw(name)), np.array(flags, np.uint8)


@pytest.mark.parametrize("name", SF)
@pytest.mark.parametrize("op", SF_OPS)
def test_ieee_formats_match_softfloat(op, name):
    arity = {"TSQRT": 1, "TFMA": 3}.get(op, 2)
    ops = operand_sets(name, arity, 4000, 3)
    assert_same(f"{op}.{name}", numeric.elementwise(op, name, *ops), softfloat(op, name, *ops), ops)


def fma64_hard_cases(n, seed):
    """Products cancelled by the addend, addends far above/below, subnormal results."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n) * np.exp2(rng.integers(-600, 600, n))
    b = rng.standard_normal(n) * np.exp2(rng.integers(-600, 600, n))
    with np.errstate(all="ignore"):
        p = a * b
        kind = rng.integers(0, 6, n)
        c = np.select(
            [kind == 0, kind == 1, kind == 2, kind == 3, kind == 4],
            [-p, -np.nextafter(p, np.inf), p * np.exp2(rng.integers(-130, 130, n)),
             -p + np.spacing(p) * rng.integers(-3, 4, n) * 0.5, np.exp2(rng.integers(-1074, -1000, n).astype(float))],
            rng.standard_normal(n) * np.exp2(rng.integers(-1074, 1000, n).astype(float)))
        tiny = rng.random(n) < 0.25
        a[tiny] *= 2.0 ** -500
        b[tiny] *= 2.0 ** -500
        c[tiny & (kind == 0)] = -(a * b)[tiny & (kind == 0)]
    return [v.view(np.uint64) for v in (a, b, c)]


def test_fp64_fma_hard_cases_match_softfloat():
    ops = fma64_hard_cases(6000, 17)
    assert_same("TFMA.FP64", numeric.elementwise("TFMA", "FP64", *ops), softfloat("TFMA", "FP64", *ops), ops)


# ---------------------------------------------------------------- the traps the issue names

def f32(x):
    return np.array([x], np.float32).view(np.uint32)


def test_fp32_fma_is_not_float64_fma_then_rounding():
    # a*b + c = (1 + 2^-23 + 2^-24) - 2^-70: just below an FP32 midpoint; binary64 rounds it onto
    # the midpoint and a second rounding would tie to even (1 + 2^-22).  One rounding: 1 + 2^-23.
    a, b, c = f32(2.0 ** -24 * (1 + 2.0 ** -23)), f32(1 - 2.0 ** -23), f32(1 + 2.0 ** -23)
    bits, flags = numeric.elementwise("TFMA", "FP32", a, b, c)
    assert int(bits[0]) == 0x3F800001 and int(flags[0]) == F.NX
    naive = np.float32(np.float64(a.view(np.float32)[0]) * np.float64(b.view(np.float32)[0]) + np.float64(c.view(np.float32)[0]))
    assert naive.view(np.uint32) == 0x3F800002        # what the trap would give


def test_bf16_results_below_a_midpoint_are_not_double_rounded():
    # BF16 TFMA: 1 + 2^-8 - 2^-40 must round down to 1.0 (binary32 would round to the tie)
    one, tiny = np.uint16(0x3F80), np.uint16(0x3F81)  # 1.0, 1 + 2^-7
    a = np.array([0x3B80], np.uint16)                 # 2^-8
    b = np.array([0x3F7F], np.uint16)                 # 1 - 2^-8
    bits, flags = numeric.elementwise("TFMA", "BF16", a, b, np.array([one], np.uint16))
    # 1 + 2^-8 (1 - 2^-8) = 1 + 2^-8 - 2^-16: below the midpoint 1 + 2^-8 -> 1.0
    assert int(bits[0]) == 0x3F80 and int(flags[0]) == F.NX
    del tiny


# ---------------------------------------------------------------- special-value rules (seed sentences)

def e4m3(*codes):
    return np.array(codes, np.uint8)


def test_e4m3_infinite_results_become_the_canonical_nan_with_dz_and_no_of():
    bits, flags = numeric.elementwise("TRECIP", "E4M3", e4m3(0x00, 0x80))
    assert bits.tolist() == [0x7F, 0x7F] and flags.tolist() == [F.DZ, F.DZ]
    bits, flags = numeric.elementwise("TDIV", "E4M3", e4m3(0x38, 0xB8), e4m3(0x80, 0x00))
    assert bits.tolist() == [0x7F, 0x7F] and flags.tolist() == [F.DZ, F.DZ]


def test_e4m3_overflow_is_nan_with_of_nx():
    bits, flags = numeric.elementwise("TMUL", "E4M3", e4m3(0x7E, 0xFE), e4m3(0x48, 0x48))   # 448 * 4
    assert bits.tolist() == [0x7F, 0x7F] and flags.tolist() == [F.OF | F.NX] * 2


def test_nan_results_are_canonical_and_only_snan_or_invalid_raise_nv():
    qnan_payload, snan = np.uint32(0xFFC01234), np.uint32(0x7F800001)
    one = np.uint32(0x3F800000)
    bits, flags = numeric.elementwise("TADD", "FP32", np.array([qnan_payload, snan], np.uint32), one)
    assert bits.tolist() == [0x7FC00000, 0x7FC00000] and flags.tolist() == [0, F.NV]
    inf, ninf = np.uint32(0x7F800000), np.uint32(0xFF800000)
    bits, flags = numeric.elementwise("TADD", "FP32", inf, ninf)
    assert int(bits) == 0x7FC00000 and int(flags) == F.NV


def test_fma_invalid_cases_of_decision_081():
    z, inf, ninf, one, qnan = (np.uint32(v) for v in (0, 0x7F800000, 0xFF800000, 0x3F800000, 0x7FC00000))
    cases = [((z, inf, one), F.NV), ((inf, z, qnan), F.NV), ((inf, one, ninf), F.NV),
             ((inf, one, inf), 0), ((one, one, qnan), 0)]
    for (a, b, c), fl in cases:
        bits, flags = numeric.elementwise("TFMA", "FP32", a, b, c)
        assert int(flags) == fl, (hex(a), hex(b), hex(c))
        assert int(bits) == (0x7F800000 if fl == 0 and c == inf else 0x7FC00000)


def test_max_min_nan_and_signed_zero_rules():
    nan, snan, one, pz, nz = (np.uint16(v) for v in (0x7E00, 0x7C01, 0x3C00, 0x0000, 0x8000))
    for op in ("TMAX", "TMIN"):
        for x, y in ((nan, one), (one, nan)):
            assert numeric.elementwise(op, "FP16", x, y)[0] == one             # the non-NaN, unchanged
        bits, flags = numeric.elementwise(op, "FP16", snan, one)
        assert bits == one and flags == F.NV
        bits, flags = numeric.elementwise(op, "FP16", np.uint16(0x7E01), nan)
        assert bits == 0x7E00 and flags == 0                                   # two NaNs: canonical
        for x, y in ((pz, nz), (nz, pz)):                                      # order never matters
            assert numeric.elementwise(op, "FP16", x, y)[0] == (pz if op == "TMAX" else nz)
        assert numeric.elementwise(op, "FP16", nz, nz)[0] == nz


def test_compare_nan_and_zero_rules():
    nan, snan, pz, nz = (np.uint16(v) for v in (0x7E00, 0x7C01, 0x0000, 0x8000))
    for mode, want in (("EQ", 0), ("NE", 1), ("LT", 0), ("GT", 0), ("LE", 0), ("GE", 0)):
        assert numeric.elementwise("TCMP", "FP16", nan, pz, cmode=mode) == (want, 0)
        assert numeric.elementwise("TCMP", "FP16", pz, snan, cmode=mode) == (want, F.NV)
    for mode, want in (("EQ", 1), ("NE", 0), ("LT", 0), ("GT", 0), ("LE", 1), ("GE", 1)):
        assert numeric.elementwise("TCMP", "FP16", pz, nz, cmode=mode)[0] == want


def test_remainder_takes_the_divisors_sign():
    v = np.array([7.0, -7.0, 7.0, -7.0, 6.0, -6.0, 1e-30, -1e-30], np.float32).view(np.uint32)
    d = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 1.0, 1.0], np.float32).view(np.uint32)
    bits, flags = numeric.elementwise("TREM", "FP32", v, d)
    assert bits.view(np.float32).tolist() == [1.0, 1.0, -1.0, -1.0, 0.0, 0.0, 1e-30 * np.float32(1), 1.0]
    assert np.signbit(bits.view(np.float32)).tolist() == [False, False, True, True, False, False, False, False]
    assert flags.tolist() == [0] * 7 + [F.NX]        # 1 - 1e-30 rounds to the divisor itself
    bits, flags = numeric.elementwise("TREM", "FP32", v[:1], np.float32(0).view(np.uint32))
    assert int(bits[0]) == 0x7FC00000 and int(flags[0]) == F.NV


@pytest.mark.parametrize("name", ("FP64", "FP32", "TF32", "HF32", "FP16", "BF16"))
def test_max_min_compare_samples(name):
    a, b = operand_sets(name, 2, 1500, 13)
    for op in ("TMAX", "TMIN"):
        assert_same(f"{op}.{name}", numeric.elementwise(op, name, a, b), R.select_reference(op, name, a, b), (a, b))
    for mode in ("EQ", "NE", "LT", "GT", "LE", "GE"):
        got = numeric.elementwise("TCMP", name, a, b, cmode=mode)
        assert_same(f"TCMP.{mode}.{name}", got, R.compare_reference(mode, name, a, b), (a, b))
