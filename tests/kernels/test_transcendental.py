"""TEXP, TLOG, TRSQRT: correctly rounded for every floating format, against MPFR (gmpy2).

Exhaustive over every FP16, BF16, E4M3 and E5M2 input; edge + random samples for TF32, HF32,
FP32 and FP64.  The reference evaluates f(x) with MPFR at 300 bits (2200 for FP64 inputs, whose
exp(x) - 1 can be as small as 2^-1074), then rounds it by the test-side rounding of
tests/kernels/oracles.py: through a round-to-odd 53-bit stand-in (valid for every destination of
at most 51 bits, see op_reference.py) or, for FP64, the exact rational of the MPFR value.  These
functions are irrational away from the exact cases (exp 0, log 1, rsqrt 4^k), so NX is always set
there and the MPFR value never sits on a rounding boundary.
"""
from fractions import Fraction

import gmpy2
import numpy as np
import pytest

from kernels import numeric
from kernels.numeric import flags as F
from kernels.numeric import transcendental as T
from kernels.numeric.profiles import PROFILES

import op_reference as R
from test_ops_float import edge_and_random
import oracles as O

MPFR = {"TEXP": gmpy2.exp, "TLOG": gmpy2.log, "TRSQRT": gmpy2.rec_sqrt}
OPS = tuple(MPFR)


def as_fraction(m) -> Fraction:
    n, d = m.as_integer_ratio()
    return Fraction(int(n), int(d))


def mpfr_value(op, v, bits):
    if op == "TEXP":       # beyond +-1100 every destination overflows / underflows alike
        v = min(max(float(v), -1100.0), 1100.0)
    with gmpy2.context(gmpy2.get_context(), precision=bits, emin=-(1 << 30), emax=1 << 30):
        return MPFR[op](gmpy2.mpfr(float(v)))


def trunc_odd53(fr: Fraction) -> float:
    """Round-to-odd at 53 bits of an irrational value known through a much finer fraction:
    truncate, then set the sticky (odd) bit."""
    neg = fr < 0
    a = -fr if neg else fr
    # far outside every destination of <= 32 bits: any value there rounds the same
    a = min(max(a, Fraction(2) ** -1000), Fraction(2) ** 1000)
    n, d = a.numerator, a.denominator
    k = 53 - (n.bit_length() - d.bit_length())
    q = (n << k) // d if k >= 0 else n // (d << -k)
    while q >= 1 << 53:
        k -= 1
        q = (n << k) // d if k >= 0 else n // (d << -k)
    while q < 1 << 52:
        k += 1
        q = (n << k) // d if k >= 0 else n // (d << -k)
    v = float(np.ldexp(float(q | 1), -k))
    return -v if neg else v


def reference(op, name, codes):
    """(bits, flags) from the definitions: specials per Decisions 073/074/077, MPFR otherwise."""
    x, snan = R.values(name, codes)
    n = len(x)
    bits = np.zeros(n, R.raw(name))
    flags = np.zeros(n, np.uint8)
    NAN = R.nan_code(name)
    nan = np.isnan(x)
    if op == "TEXP":
        exact = {0.0: 1.0}
        invalid = np.zeros(n, bool)
        inf_pos, zero_res = np.isposinf(x), np.isneginf(x)
        dz = np.zeros(n, bool)
        regular = np.isfinite(x) & (x != 0)
    elif op == "TLOG":
        exact = {1.0: 0.0}
        invalid = (x < 0)
        inf_pos, zero_res = np.isposinf(x), np.zeros(n, bool)
        dz = x == 0
        regular = np.isfinite(x) & (x > 0) & (x != 1)
    else:
        m, e = np.frexp(np.where(np.isfinite(x) & (x > 0), x, 1.0))
        exact = {}
        invalid = x < 0
        inf_pos, zero_res = np.zeros(n, bool), np.isposinf(x)
        dz = x == 0
        p4 = (x > 0) & np.isfinite(x) & (m == 0.5) & ((e - 1) % 2 == 0)
        regular = np.isfinite(x) & (x > 0) & ~p4
    finite_idx = np.flatnonzero(regular)
    if finite_idx.size:
        if name == "FP64":
            out = [O.round_exact(as_fraction(mpfr_value(op, x[i], 2200)), "FP64") for i in finite_idx]
            bits[finite_idx] = [b for b, _ in out]
            flags[finite_idx] = [f | F.NX for _, f in out]
        else:
            standins = [trunc_odd53(as_fraction(mpfr_value(op, x[i], 300))) for i in finite_idx]
            b, f = O.round_f64(np.array(standins), name)
            bits[finite_idx], flags[finite_idx] = b, f
    for v, r in exact.items():
        m_ = x == v
        bits[m_] = O.round_f64(np.full(int(m_.sum()), r), name)[0]
        flags[m_] = 0
    if op == "TRSQRT":
        idx = np.flatnonzero(p4)
        if idx.size:
            bits[idx] = O.round_f64(1.0 / np.sqrt(x[idx]), name)[0]      # exact powers of two
            flags[idx] = 0
    bits[inf_pos], flags[inf_pos] = R.inf_code(name, False), 0
    bits[zero_res], flags[zero_res] = 0, 0
    if op == "TLOG":
        bits[dz], flags[dz] = R.inf_code(name, True), F.DZ
    if op == "TRSQRT":
        for i in np.flatnonzero(dz):
            bits[i], flags[i] = R.inf_code(name, bool(np.signbit(x[i]))), F.DZ
    bits[invalid], flags[invalid] = NAN, F.NV
    bits[nan], flags[nan] = NAN, 0
    return bits, flags | np.where(snan, F.NV, 0).astype(np.uint8)


def check(op, name, codes):
    got = numeric.elementwise(op, name, codes)
    want = reference(op, name, codes)
    bad = np.flatnonzero((got[0] != want[0]) | (got[1] != want[1]))
    assert not bad.size, (f"{op}.{name}({int(codes[bad[0]]):#x}): got {int(got[0][bad[0]]):#x} "
                          f"{F.describe(int(got[1][bad[0]]))}, want {int(want[0][bad[0]]):#x} "
                          f"{F.describe(int(want[1][bad[0]]))}; {bad.size} mismatches")


@pytest.mark.parametrize("name", ("FP16", "BF16", "E4M3", "E5M2"))
@pytest.mark.parametrize("op", OPS)
def test_every_input(op, name):
    w = 16 if name in ("FP16", "BF16") else 8
    check(op, name, np.arange(1 << w, dtype=np.uint64).astype(f"u{w // 8}"))


def samples(name, n, seed):
    base = edge_and_random(name, n, seed)
    # add inputs across each function's whole interesting range
    rng = np.random.default_rng(seed)
    vals = np.concatenate([rng.uniform(-120, 100, n), np.exp(rng.uniform(-100, 100, n)), 1 + rng.uniform(-1e-3, 1e-3, n)])
    if name == "FP64":
        vals = np.concatenate([vals, rng.uniform(-745.2, 709.8, n), np.exp(rng.uniform(-744, 709, n))])
        extra = vals.view(np.uint64)
    else:
        extra = O.round_f64(vals, name)[0]
    return np.concatenate([base, extra.astype(base.dtype)])


@pytest.mark.parametrize("name", ("TF32", "HF32", "FP32"))
@pytest.mark.parametrize("op", OPS)
def test_single_precision_samples(op, name):
    check(op, name, samples(name, 2000, 3))


@pytest.mark.parametrize("op", OPS)
def test_fp64_samples(op):
    check(op, "FP64", samples("FP64", 300, 4))


def test_seed_special_values():
    fp32 = lambda *v: np.array(v, np.float32).view(np.uint32)
    bits, flags = numeric.elementwise("TEXP", "FP32", fp32(0.0, -0.0, np.inf, -np.inf))
    assert bits.view(np.float32).tolist() == [1.0, 1.0, np.inf, 0.0] and not flags.any()
    assert not np.signbit(bits.view(np.float32)[3])
    bits, flags = numeric.elementwise("TLOG", "FP32", fp32(1.0, 0.0, -0.0, np.inf, -1.0, -np.inf))
    assert bits.view(np.float32)[:4].tolist() == [0.0, -np.inf, -np.inf, np.inf]
    assert bits[4] == bits[5] == 0x7FC00000
    assert flags.tolist() == [0, F.DZ, F.DZ, 0, F.NV, F.NV]
    bits, flags = numeric.elementwise("TRSQRT", "FP32", fp32(0.0, -0.0, np.inf, -2.0, 4.0, 0.25))
    assert bits.view(np.float32)[:3].tolist() == [np.inf, -np.inf, 0.0] and bits[3] == 0x7FC00000
    assert bits.view(np.float32)[4:].tolist() == [0.5, 2.0]
    assert flags.tolist() == [F.DZ, F.DZ, 0, F.NV, 0, 0]


def test_e4m3_zero_into_log_recip_rsqrt_is_0x7f_with_dz_and_no_of():
    z = np.array([0x00, 0x80], np.uint8)
    for op in ("TLOG", "TRECIP", "TRSQRT"):
        bits, flags = numeric.elementwise(op, "E4M3", z)
        assert bits.tolist() == [0x7F, 0x7F] and flags.tolist() == [F.DZ, F.DZ], op


def test_signalling_nan_raises_nv_and_quiet_nan_does_not():
    x = np.array([0x7C01, 0x7E00, 0xFE00], np.uint16)
    for op in OPS:
        bits, flags = numeric.elementwise(op, "FP16", x)
        assert bits.tolist() == [0x7E00] * 3 and flags.tolist() == [F.NV, 0, 0], op


# ---------------------------------------------------------------- the fast path's error bounds

def rel_err(h, l, scale, ref):
    got = (gmpy2.mpfr(float(h)) + gmpy2.mpfr(float(l))) * gmpy2.mpfr(2) ** int(scale)
    return abs(got / ref - 1)


def test_double_double_error_bounds_hold_on_samples():
    """exp_dd within 2^-98 (the test uses 2^-90), log_dd and rsqrt_dd within their eps."""
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(-745, 709, 1500), rng.uniform(-1e-3, 1e-3, 200), -(2.0 ** -rng.integers(1, 1074, 100))])
    h, l, sc = T.exp_dd(x)
    with gmpy2.context(gmpy2.get_context(), precision=2200):
        assert max(rel_err(h[i], l[i], sc[i], gmpy2.exp(gmpy2.mpfr(x[i]))) for i in range(len(x))) < 2.0 ** -98
    y = np.concatenate([np.exp(rng.uniform(-744, 709, 1500)), 1 + rng.uniform(-1e-6, 1e-6, 200),
                        np.ldexp(1.0, rng.integers(-1074, 1023, 100)), rng.uniform(0.69, 1.42, 200)])
    y = y[y != 1.0]
    h, l, eps = T.log_dd(y)
    with gmpy2.context(gmpy2.get_context(), precision=400):
        assert all(rel_err(h[i], l[i], 0, gmpy2.log(gmpy2.mpfr(y[i]))) < eps[i] for i in range(len(y)))
    h, l, sc, eps = T.rsqrt_dd(y)
    with gmpy2.context(gmpy2.get_context(), precision=400):
        assert all(rel_err(h[i], l[i], sc[i], gmpy2.rec_sqrt(gmpy2.mpfr(y[i]))) < eps[i] for i in range(len(y)))


@pytest.mark.parametrize("name", ("BF16", "FP32", "FP64"))
@pytest.mark.parametrize("op", OPS)
def test_mpfr_fallback_settles_undecided_elements_exactly(op, name):
    """Widen the rounding test's interval so that most elements go to MPFR: same results."""
    codes = samples(name, 200, 9)
    x, _ = R.values(name, codes)
    ok = np.isfinite(x) & (x > 0) if op != "TEXP" else np.isfinite(x) & (x != 0) & (np.abs(x) < 700)
    x = x[ok]
    codes = codes[ok]
    if op == "TEXP":
        h, l, sc = T.exp_dd(x)
    elif op == "TLOG":
        x, codes = x[x != 1], codes[x != 1]
        h, l, _ = T.log_dd(x)
        sc = np.zeros(len(x), np.int64)
    else:
        m, e = np.frexp(x)
        inexact = ~((m == 0.5) & ((e - 1) % 2 == 0))      # 4^k is exact: not a fallback case
        x, codes = x[inexact], codes[inexact]
        h, l, sc, _ = T.rsqrt_dd(x)
    bits, flags = T._settle(op, name, PROFILES["ieee"], x, h, l, sc, 2.0 ** -12, np.ones(len(x), bool))
    want = reference(op, name, codes)
    assert np.array_equal(bits, want[0]) and np.array_equal(flags, want[1])
