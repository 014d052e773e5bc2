"""TCVT against independent references: value-space oracles (tests/kernels/oracles.py), NumPy's
own IEEE casts, ml_dtypes (RNE from float32), softfloat (every mode it has), MPFR (gmpy2).

Exhaustive for every source of 16 bits or fewer (all codes) to every destination in every mode,
with and without Sat and ftz; random + edge samples for FP32/TF32/HF32/FP64 and 64-bit
integers (denser samples and the fast-table check over many low halves: `pytest -m slow`).
"""
from fractions import Fraction

import numpy as np
import pytest

from isa.datatypes import DATATYPES
from kernels import numeric
from kernels.numeric import flags as FL
from kernels.numeric.convert import InvalidEncoding

import oracles as O

ALL = [d.name for d in DATATYPES]
SMALL_SOURCES = [n for n in ALL if (n in O.SPECS and O.SPECS[n][6] == 8 or n in O.SPECS and O.SPECS[n][6] == 4)
                 or n in ("S8", "U8", "S4X2", "U4X2")]
MODES = ["RNE", "RTZ", "RTM", "RTP", "RNA", "RTO"]


def modes_for(dst):
    return MODES + (["RHB"] if dst == "HiF8" else [])


# ---------------------------------------------------------------------------------------------
# the test-side model of TCVT (docs/numerics.md, "Conversion"), built on the oracles
# ---------------------------------------------------------------------------------------------
def is_snan(name, code):
    fam, eb, t, bias, specials, shift, _ = O.SPECS[name]
    return fam == "ieee" and specials == "ieee" and ((code >> (t - 1)) & 1) == 0


def nan_payload(name, code):
    """(payload bits below the quiet bit, their count) of an IEEE-family NaN."""
    fam, eb, t, bias, specials, shift, _ = O.SPECS[name]
    if fam != "ieee" or specials != "ieee":
        return 0, 0
    return code & ((1 << (t - 1)) - 1), t - 1


def special_expect(kind, sign, src, code, dst, sat):
    """(bits, flags) the special-class table gives for an inf/NaN source element."""
    if dst in O.INTS:
        n, signed = O.INTS[dst]
        if kind == "nan":
            return 0, O.NV
        if sign:
            return ((-(1 << (n - 1))) & ((1 << n) - 1)) if signed else 0, O.NV
        return ((1 << (n - 1)) - 1) if signed else (1 << n) - 1, O.NV
    sp = O.SPEC[dst]
    fam, eb, t, bias, specials, shift, _ = O.SPECS[dst]
    if kind == "inf":
        if fam == "hif8" or specials == "ieee":
            return (sp.inf_code | (sp.sign_mask if sign else 0)) << shift, 0
        if fam == "e8m0":
            return (0xFF if sign or not sat else 0xFE), O.NV
        if specials == "fn":
            return ((sp.max_code | (0x80 if sign else 0)) if sat else 0x7F), O.NV
        return (sp.max_code | (sp.sign_mask if sign else 0)), O.NV
    nv = O.NV if is_snan(src, code) else 0
    if fam == "hif8":
        return 0x80, nv
    if fam == "e8m0":
        return 0xFF, nv
    if specials == "none":
        return sp.max_code, O.NV
    if specials == "fn":
        return 0x7F | (0x80 if sign else 0), nv
    pay, pbits = nan_payload(src, code)
    dpb = t - 1
    pay = pay << (dpb - pbits) if dpb >= pbits else pay >> (pbits - dpb)
    return ((sign << (sp.w - 1)) | (((1 << eb) - 1) << t) | (1 << (t - 1)) | pay) << shift, nv


def expected(src, codes, dst, mode, sat, ftz=False):
    """Reference (bits, flags) for every code (container layout) of a source of 16 bits or fewer,
    or for float64-exact values of FP32/TF32/HF32/FP64 codes."""
    codes = np.asarray(codes)
    if src in O.INTS:
        n, signed = O.INTS[src]
        u = codes.astype(np.int64) & ((1 << n) - 1)
        vals = np.where(signed & (u >= (1 << (n - 1))), u - (1 << n), u)
        kinds = np.full(len(u), "finite")
        signs = (vals < 0).astype(int)
        x = vals.astype(np.float64)
    else:
        x, kinds, signs = float_values(src, codes)
        if ftz:
            sub = (kinds == "finite") & (np.abs(x) < float(O.SPEC[src].min_normal))
            x = np.where(sub, np.copysign(0.0, x), x)
    fin = (kinds == "finite") | (kinds == "zero")
    if dst in O.INTS:
        if src in O.INTS:
            bits, fl = int_to_int(vals, dst, sat)
        else:
            bits, fl = O.round_int_f64(np.where(fin, x, 0.0), dst, mode)
    else:
        bits, fl = O.round_f64(np.where(fin, x, 0.0), dst, mode, sat, ftz)
    bits = bits.astype(np.uint64)
    fl = fl.astype(np.uint8)
    for i in np.nonzero(~fin)[0]:
        c = int(codes[i]) >> (O.SPECS[src][5] if src in O.SPECS else 0)
        b, f = special_expect(kinds[i], int(signs[i]), src, c, dst, sat)
        bits[i], fl[i] = b, f
    return bits, fl


def float_values(src, codes):
    """float64 values, kinds, signs of float encodings (test-side decoders)."""
    shift, cont = O.SPECS[src][5], O.SPECS[src][6]
    if cont <= 16:
        kinds, signs, vals = O.value_table(src)
        c = np.asarray(codes).astype(np.int64)
        return vals[c], kinds[c], signs[c]
    u = np.asarray(codes).astype(np.uint64)
    with np.errstate(invalid="ignore"):
        x = u.view(np.float64) if src == "FP64" else u.astype(np.uint32).view(np.float32).astype(np.float64)
    kinds = np.where(np.isnan(x), "nan", np.where(np.isinf(x), "inf", np.where(x == 0, "zero", "finite")))
    return x, kinds, np.signbit(x).astype(int)


def int_to_int(vals, dst, sat):
    n, signed = O.INTS[dst]
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if signed else (0, (1 << n) - 1)
    out, fl = [], []
    for v in vals.tolist():
        if sat and (v < lo or v > hi):
            v2, f = min(max(v, lo), hi), O.NV
        else:
            v2, f = v, 0
        out.append(v2 % (1 << n))
        fl.append(f)
    return np.array(out, dtype=np.uint64), np.array(fl, dtype=np.uint8)


def check(src, codes, dst, mode, sat, ftz=False):
    got_b, got_f = numeric.convert(codes, src, dst, rmode=mode, sat=sat, profile="ftz" if ftz else "ieee")
    want_b, want_f = expected(src, codes, dst, mode, sat, ftz)
    bad = np.nonzero((got_b.astype(np.uint64) != want_b) | (got_f != want_f))[0]
    if len(bad):
        i = bad[0]
        raise AssertionError(
            f"{src}->{dst} {mode} sat={sat} ftz={ftz}: {len(bad)} mismatches; first code {int(codes[i]):#x}: "
            f"got {int(got_b[i]):#x}/{FL.describe(int(got_f[i]))} want {int(want_b[i]):#x}/{FL.describe(int(want_f[i]))}")


def all_codes(src):
    from isa.datatypes import datatype
    d = datatype(src)
    shift = O.SPECS[src][5] if src in O.SPECS else 0
    return (np.arange(1 << d.bits, dtype=np.uint64) << np.uint64(shift)).astype(d.raw_dtype)


# ---------------------------------------------------------------------------------------------
# exhaustive: every source of 8 bits or fewer, every destination, every mode, Sat on and off
# ---------------------------------------------------------------------------------------------
def check_every_destination(src, ftz_modes):
    """Every code of `src` to every destination in every mode, Sat on and off, and under ftz in
    the modes `ftz_modes(dst)` gives."""
    codes = all_codes(src)
    for dst in ALL:
        for mode in modes_for(dst):
            for sat in (False, True):
                check(src, codes, dst, mode, sat)
        for mode in ftz_modes(dst):
            check(src, codes, dst, mode, False, ftz=True)


@pytest.mark.parametrize("src", SMALL_SOURCES)
def test_every_small_source_code_to_every_destination(src):
    check_every_destination(src, lambda dst: ["RNE"])


@pytest.mark.parametrize("src", ["FP16", "BF16", "S16", "U16"])
def test_all_16_bit_inputs_every_mode(src):
    check_every_destination(src, modes_for)


@pytest.mark.slow
@pytest.mark.parametrize("dst", ["E4M3", "E5M2", "HiF8", "E3M2", "E2M3", "E2M1X2", "E1M2X2", "HiF4X2", "E8M0"])
def test_fp32_high_half_tables_against_the_oracle_for_many_low_halves(dst):
    """The 2^17-entry fast table is exact: every high half with 40 random low halves, all modes."""
    rng = np.random.default_rng(99)
    hi = np.arange(1 << 16, dtype=np.uint32) << np.uint32(16)
    for mode in modes_for(dst):
        for sat in (False, True):
            lows = rng.integers(0, 1 << 16, 40).astype(np.uint32)
            u = (hi[:, None] | lows[None, :]).ravel()
            check("FP32", u, dst, mode, sat)


@pytest.mark.slow
def test_fp32_dense_random_every_destination_every_mode():
    rng = np.random.default_rng(2024)
    u = edge_fp32(rng, 1 << 20)
    for dst in ALL:
        for mode in modes_for(dst):
            for sat in (False, True):
                check("FP32", u, dst, mode, sat)
            check("FP32", u, dst, mode, False, ftz=True)


def edge_fp32(rng, n):
    """Random FP32 codes plus every exponent's boundary, tie and near-tie patterns."""
    r = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    e = np.arange(256, dtype=np.uint32) << np.uint32(23)
    mants = np.array([0, 1, 0x7FFFFF, 0x400000, 0x400001, 0x3FFFFF, 0x100000, 0x080000, 0x0FFFFF,
                      0x180000, 0x040000, 0x020000, 0x010000, 0x00FFFF, 0x008000, 0x7FC000, 0x7FBFFF], np.uint32)
    grid = (e[:, None] | mants[None, :]).ravel()
    grid = np.concatenate([grid, grid | np.uint32(0x80000000)])
    return np.concatenate([r, grid])


@pytest.mark.parametrize("src", ["FP32", "TF32", "HF32"])
def test_fp32_family_sources_random_and_edges(src):
    rng = np.random.default_rng(32)
    u = edge_fp32(rng, 30000)
    shift = O.SPECS[src][5]
    u = u & np.uint32((0xFFFFFFFF >> shift) << shift)
    for dst in ALL:
        for mode in (modes_for(dst) if src == "FP32" else ["RNE", "RTZ"]):
            check(src, u, dst, mode, False)
        check(src, u, dst, "RNE", True)
        check(src, u, dst, "RTP", False, ftz=True)


def edge_fp64(rng, n):
    r = rng.integers(0, 1 << 64, n, dtype=np.uint64)
    # exponents near every destination's range, random mantissas
    e = rng.integers(1023 - 160, 1023 + 140, n).astype(np.uint64)
    m = rng.integers(0, 1 << 52, n, dtype=np.uint64)
    near = (e << np.uint64(52)) | m
    # mantissas that are ties / near-ties at 2..24 kept bits
    k = rng.integers(2, 25, n).astype(np.uint64)
    tie = (near & ~((np.uint64(1) << (np.uint64(52) - k)) - np.uint64(1))) | (np.uint64(1) << (np.uint64(51) - k))
    sgn = rng.integers(0, 2, 3 * n).astype(np.uint64) << np.uint64(63)
    specials = np.array([0, 1, 0x7FF0000000000000, 0x7FF8000000000001, 0x7FF0000000000001,
                         0x7FEFFFFFFFFFFFFF, 0x0010000000000000, 0x000FFFFFFFFFFFFF], np.uint64)
    return np.concatenate([np.concatenate([r, near, tie]) | sgn, specials, specials | np.uint64(1 << 63)])


def test_fp64_sources_random_and_edges():
    rng = np.random.default_rng(64)
    u = edge_fp64(rng, 8000)
    for dst in ALL:
        for mode in modes_for(dst):
            check("FP64", u, dst, mode, False)
        check("FP64", u, dst, "RNE", True)
        check("FP64", u, dst, "RNE", False, ftz=True)


@pytest.mark.parametrize("src", ["S64", "U64", "S32", "U32"])
def test_wide_integer_sources_round_once(src):
    """No detour through float64: every 64-bit integer is rounded once, exactly."""
    rng = np.random.default_rng(len(src))
    n, signed = O.INTS[src]
    r = [int(v) for v in rng.integers(0, 1 << 63, 300, dtype=np.uint64)]
    r += [int(v) >> int(k) for v, k in zip(rng.integers(0, 1 << 63, 300, dtype=np.uint64), rng.integers(0, 62, 300))]
    r += [(1 << k) + d for k in range(0, n) for d in (-1, 0, 1)] + [(1 << 53) + 1, (1 << 54) + 3, (1 << 24) + 1]
    r += [(1 << 63) | (1 << 40) | 1, (1 << 64) - 1, (1 << 63) + (1 << 39)]
    codes = np.array([v % (1 << n) for v in r], dtype=np.uint64).astype(O.RAW[n])
    vals = [int(c) - (1 << n) if signed and int(c) >= 1 << (n - 1) else int(c) for c in codes]
    for dst in ("FP64", "FP32", "TF32", "HF32", "FP16", "BF16", "E4M3", "E5M2", "HiF8", "E8M0", "E2M1X2"):
        for mode in modes_for(dst):
            gb, gf = numeric.convert(codes, src, dst, rmode=mode)
            for i, v in enumerate(vals):
                want = O.round_exact(Fraction(v), dst, mode)
                assert (int(gb[i]), int(gf[i])) == want, (src, dst, mode, v)
    for dst in ("S64", "S32", "S8", "U64", "U16", "S4X2", "U4X2"):
        for sat in (False, True):
            gb, gf = numeric.convert(codes, src, dst, sat=sat)
            wb, wf = int_to_int(np.array(vals, dtype=object), dst, sat)
            assert np.array_equal(gb.astype(np.uint64), wb) and np.array_equal(gf, wf), (src, dst, sat)


# ---------------------------------------------------------------------------------------------
# external references
# ---------------------------------------------------------------------------------------------
def test_numpy_ieee_casts_agree():
    rng = np.random.default_rng(5)
    u = edge_fp64(rng, 20000)
    x = u.view(np.float64)
    fin = np.isfinite(x)
    with np.errstate(over="ignore", invalid="ignore"):
        want32 = x.astype(np.float32).view(np.uint32)
        want16 = x.astype(np.float16).view(np.uint16)
    b32, _ = numeric.convert(u, "FP64", "FP32")
    b16, _ = numeric.convert(u, "FP64", "FP16")
    assert np.array_equal(b32[fin], want32[fin])
    assert np.array_equal(b16[fin], want16[fin])
    u32 = edge_fp32(rng, 50000)
    y = u32.view(np.float32)
    b, _ = numeric.convert(u32, "FP32", "FP16")
    with np.errstate(over="ignore"):
        w = y.astype(np.float16).view(np.uint16)
    ok = np.isfinite(y)
    assert np.array_equal(b[ok], w[ok])
    b, f = numeric.convert(u32, "FP32", "FP64")
    assert np.array_equal(b[ok], y[ok].astype(np.float64).view(np.uint64)) and not f[ok].any()


ML = {"E4M3": "float8_e4m3fn", "E5M2": "float8_e5m2", "E3M2": "float6_e3m2fn", "E2M3": "float6_e2m3fn",
      "E2M1X2": "float4_e2m1fn", "BF16": "bfloat16", "FP16": "float16"}


@pytest.mark.parametrize("dst", list(ML))
def test_ml_dtypes_rne_from_float32(dst):
    """ml_dtypes' RNE conversions from float32 agree on every finite input that stays in range
    (ml_dtypes' overflow/NaN conventions differ for formats without infinity; those are
    pinned by the special-class tests instead)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(11)
    u = edge_fp32(rng, 200000)
    x = u.view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(getattr(ml_dtypes, ML[dst]) if dst != "FP16" else np.float16)
    w = want.view(np.uint8 if want.dtype.itemsize == 1 else np.uint16).astype(np.uint64)
    got, fl = numeric.convert(u, "FP32", dst)
    ok = np.isfinite(x) & ((fl & FL.OF) == 0)
    assert ok.sum() > 1000
    assert np.array_equal(got[ok].astype(np.uint64), w[ok])
    if dst in ("E5M2", "BF16", "FP16"):       # IEEE-style overflow to infinity agrees too
        o = np.isfinite(x) & ((fl & FL.OF) != 0)
        assert np.array_equal(got[o].astype(np.uint64), w[o])


def test_ml_dtypes_e8m0_powers_of_two():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    if not hasattr(ml_dtypes, "float8_e8m0fnu"):
        pytest.skip("ml_dtypes without float8_e8m0fnu")
    x = np.ldexp(np.ones(254, np.float32), np.arange(-127, 127))
    want = x.astype(ml_dtypes.float8_e8m0fnu).view(np.uint8)
    got, fl = numeric.convert(x.view(np.uint32), "FP32", "E8M0")
    assert np.array_equal(got, want) and not fl.any()


SF_MODES = {"RNE": "NEAR_EVEN", "RTZ": "MIN_MAG", "RTM": "MIN", "RTP": "MAX", "RNA": "NEAR_MAX_MAG"}
SF_FLAGS = [("INEXACT", FL.NX), ("UNDERFLOW", FL.UF), ("OVERFLOW", FL.OF), ("INVALID", FL.NV)]


def sf_flags(sf):
    f = 0
    for name, bit in SF_FLAGS:
        if sf.test_exception_flags(getattr(sf.ExceptionFlag, name)):
            f |= bit
    return f


@pytest.mark.parametrize("pair", [("FP64", "FP32"), ("FP64", "FP16"), ("FP32", "FP16"), ("S64", "FP32"),
                                  ("U64", "FP64"), ("S64", "FP16"), ("FP32", "S32"), ("FP64", "U64"),
                                  ("FP64", "S64"), ("FP32", "U32")])
def test_softfloat_conversions_every_mode_with_flags(pair):
    """Berkeley SoftFloat (tininess after rounding) in its five modes, bits and flags."""
    sf = pytest.importorskip("softfloatpy")
    src, dst = pair
    rng = np.random.default_rng(3)
    if src == "FP64":
        u = edge_fp64(rng, 500)
    elif src == "FP32":
        u = edge_fp32(rng, 1500)[::3]
    else:
        u = rng.integers(0, 1 << 64, 800, dtype=np.uint64) >> rng.integers(0, 63, 800).astype(np.uint64)
        if src == "S64":
            u = u | (rng.integers(0, 2, 800).astype(np.uint64) << np.uint64(63))
    width = {"FP64": 64, "FP32": 32, "FP16": 16, "S64": 64, "U64": 64, "S32": 32, "U32": 32}
    u = u.astype(O.RAW[width[src]])
    names = {"FP64": "f64", "FP32": "f32", "FP16": "f16", "S64": "i64", "U64": "ui64", "S32": "i32", "U32": "ui32"}
    fn = getattr(sf, f"{names[src]}_to_{names[dst]}")
    wrap = {"FP64": sf.Float64, "FP32": sf.Float32, "S64": sf.Int64, "U64": sf.UInt64}
    to_int = dst in O.INTS
    sf.set_tininess_mode(sf.TininessMode.AFTER_ROUNDING)
    for mode, sfm in SF_MODES.items():
        got_b, got_f = numeric.convert(u, src, dst, rmode=mode)
        for i in range(len(u)):
            v = int(u[i])
            if src == "S64" and v >= 1 << 63:
                v -= 1 << 64
            a = (wrap[src].from_bytes(int(u[i]).to_bytes(width[src] // 8, "big")) if src.startswith("FP")
                 else wrap[src].from_int(v))
            sf.set_exception_flags(0)
            if to_int:
                sf.set_rounding_mode(sf.RoundingMode.NEAR_EVEN)
                r = fn(a, getattr(sf.RoundingMode, sfm), True)
                f = sf_flags(sf)
                if f & FL.NV:              # SoftFloat's invalid results are its own convention
                    assert got_f[i] == FL.NV
                    continue
                want = r.to_int() % (1 << width[dst])
            else:
                sf.set_rounding_mode(getattr(sf.RoundingMode, sfm))
                r = fn(a)
                f = sf_flags(sf)
                want = int.from_bytes(r.to_bytes(), "big")
                if src.startswith("FP") and np.isnan(numeric.decode(u[i:i + 1], src)[0]):
                    continue             # NaN payload conventions are pinned by test_nan_*
            assert (int(got_b[i]), int(got_f[i])) == (want, f), (src, dst, mode, hex(int(u[i])))


def test_mpfr_fp64_to_fp32_directed_modes():
    gmpy2 = pytest.importorskip("gmpy2")
    rng = np.random.default_rng(9)
    u = edge_fp64(rng, 1500)
    x = u.view(np.float64)
    fin = np.isfinite(x) & (np.abs(x) < 3e38) & (x != 0)
    modes = {"RNE": gmpy2.RoundToNearest, "RTZ": gmpy2.RoundToZero, "RTP": gmpy2.RoundUp, "RTM": gmpy2.RoundDown}
    for mode, rnd in modes.items():
        got, _ = numeric.convert(u[fin], "FP64", "FP32", rmode=mode)
        with gmpy2.context(precision=24, emin=-148, emax=128, subnormalize=True, round=rnd):
            want = [float(gmpy2.mpfr(float(v))) for v in x[fin]]
        w = np.array(want, dtype=np.float32).view(np.uint32)
        assert np.array_equal(got, w), mode


# ---------------------------------------------------------------------------------------------
# known traps
# ---------------------------------------------------------------------------------------------
def f64(*vals):
    return np.array(vals, dtype=np.float64).view(np.uint64)


def test_trap_rna_to_int_is_not_floor_of_x_plus_half():
    x = 0.49999999999999994                      # the largest double below 1/2
    assert np.floor(x + 0.5) == 1.0              # the naive formula is wrong here
    bits, fl = numeric.convert(f64(x, -x, 0.5, -0.5, 2.5), "FP64", "S32", rmode="RNA")
    assert list(bits.view(np.int32)) == [0, 0, 1, -1, 3] and list(fl) == [FL.NX] * 5


def test_trap_no_double_rounding_through_float32():
    # 1 + 2^-11 + 2^-30 is just above the FP16 tie 1 + 2^-11; via float32 the 2^-30 is lost and
    # the tie rounds to even (1.0): the direct conversion must give 1 + 2^-10
    x = 1 + 2.0 ** -11 + 2.0 ** -30
    assert np.float16(np.float32(x)) == 1.0
    bits, fl = numeric.convert(f64(x), "FP64", "FP16")
    assert int(bits[0]) == 0x3C01 and int(fl[0]) == FL.NX
    # same for BF16 and E4M3 (tie + 2^-40 above the 8- and 4-bit grids)
    assert int(numeric.convert(f64(1 + 2.0 ** -8 + 2.0 ** -40), "FP64", "BF16")[0][0]) == 0x3F81
    assert int(numeric.convert(f64(1 + 2.0 ** -4 + 2.0 ** -40), "FP64", "E4M3")[0][0]) == 0x39
    # and 64-bit integers: 2^53 + 1 must not be rounded to 2^53 first
    b, _ = numeric.convert(np.array([(1 << 62) + (1 << 38) + 1], np.uint64), "U64", "FP32", rmode="RTP")
    assert int(b[0]) == 0x5E800001


def test_round_to_odd_makes_two_step_rounding_exact():
    """RTO to p >= q + 2 bits, then RNE to q bits, equals one RNE rounding (for every sample);
    RNE twice does not (on the constructed ties)."""
    rng = np.random.default_rng(17)
    u = edge_fp64(rng, 20000)
    x = u.view(np.float64)
    u = u[np.isfinite(x) & (np.abs(x) < 1e30) & (np.abs(x) > 1e-30)]
    # plus ties of the BF16 grid nudged up by less than half an FP32 ulp (RNE twice breaks these)
    m = rng.integers(1 << 7, 1 << 8, 500).astype(np.float64)
    ties = np.ldexp(m + 0.5 + 2.0 ** -30, rng.integers(-100, 100, 500))
    u = np.concatenate([u, ties.view(np.uint64)])
    odd, _ = numeric.convert(u, "FP64", "FP32", rmode="RTO")
    two, _ = numeric.convert(odd, "FP32", "BF16")
    one, _ = numeric.convert(u, "FP64", "BF16")
    assert np.array_equal(two, one)
    rne, _ = numeric.convert(u, "FP64", "FP32")
    naive, _ = numeric.convert(rne, "FP32", "BF16")
    assert (naive != one).any()


# ---------------------------------------------------------------------------------------------
# the special-class and integer rules, one sentence each
# ---------------------------------------------------------------------------------------------
def test_nan_to_integer_is_zero_and_infinities_saturate_with_nv():
    b, f = numeric.convert(np.array([0x7FC00000, 0xFF800000, 0x7F800000, 0x4F000000], np.uint32), "FP32", "S32")
    assert list(b.view(np.int32)) == [0, -(1 << 31), (1 << 31) - 1, (1 << 31) - 1] and list(f) == [FL.NV] * 4


def test_nan_payload_propagates_left_aligned_and_signalling_nans_are_quieted():
    b, f = numeric.convert(np.array([0x7C01, 0xFE3F], np.uint16), "FP16", "FP32")
    assert [hex(int(v)) for v in b] == ["0x7fc02000", "0xffc7e000"] and list(f) == [FL.NV, 0]
    b, f = numeric.convert(np.array([0x7F800001, 0xFFC00100], np.uint32), "FP32", "FP16")
    assert [hex(int(v)) for v in b] == ["0x7e00", "0xfe00"] and list(f) == [FL.NV, 0]
    b, f = numeric.convert(np.array([0x7F800001, 0xFFC00000], np.uint32), "FP32", "E4M3")
    assert list(b) == [0x7F, 0xFF] and list(f) == [FL.NV, 0]
    b, f = numeric.convert(np.array([0x7FC00000, 0xFFC00000], np.uint32), "FP32", "HiF8")
    assert list(b) == [0x80, 0x80] and list(f) == [0, 0]


def test_formats_without_nan_or_infinity():
    b, f = numeric.convert(np.array([0x7FC00000, 0xFF800000, 0x7F800000], np.uint32), "FP32", "E2M1X2")
    assert list(b) == [0x7, 0xF, 0x7] and list(f) == [FL.NV] * 3
    b, f = numeric.convert(np.array([0xFF800000, 0x7F800000], np.uint32), "FP32", "E4M3")
    assert list(b) == [0x7F, 0x7F] and list(f) == [FL.NV] * 2
    b, f = numeric.convert(np.array([0xFF800000, 0x7F800000], np.uint32), "FP32", "E4M3", sat=True)
    assert list(b) == [0xFE, 0x7E] and list(f) == [FL.NV] * 2
    b, f = numeric.convert(np.array([0xFF800000, 0x7F800000], np.uint32), "FP32", "FP16", sat=True)
    assert list(b) == [0xFC00, 0x7C00] and list(f) == [0, 0]        # Sat clamps finite results only


def test_hif8_and_e8m0_signed_zero_and_sign_rules():
    b, f = numeric.convert(np.array([0x8000, 0x0000], np.uint16), "FP16", "HiF8")
    assert list(b) == [0x00, 0x00] and list(f) == [0, 0]
    b, f = numeric.convert(np.array([0x0000, 0x8000, 0xBC00, 0x3C00], np.uint16), "FP16", "E8M0")
    assert list(b) == [0xFF, 0xFF, 0xFF, 127] and list(f) == [FL.NV, FL.NV, FL.NV, 0]
    b, f = numeric.convert(np.array([0x00, 0xFE, 0xFF], np.uint8), "E8M0", "FP32")
    assert [hex(int(v)) for v in b] == ["0x400000", "0x7f000000", "0x7fc00000"] and list(f) == [0, 0, 0]


def test_integer_narrowing_is_modulo_without_sat_and_clamps_with_sat():
    src = np.array([300, -129 & 0xFFFF, 0x7FFF, 0x8000], np.uint16)
    b, f = numeric.convert(src, "S16", "S8")
    assert list(b.view(np.int8)) == [44, 127, -1, 0] and not f.any()
    b, f = numeric.convert(src, "S16", "S8", sat=True)
    assert list(b.view(np.int8)) == [127, -128, 127, -128] and list(f) == [FL.NV] * 4
    b, f = numeric.convert(np.array([(1 << 64) - 1], np.uint64), "U64", "S64", sat=True)
    assert int(b[0]) == (1 << 63) - 1 and int(f[0]) == FL.NV
    b, f = numeric.convert(np.array([0xF], np.uint8), "S4X2", "U8", sat=True)
    assert int(b[0]) == 0 and int(f[0]) == FL.NV


def test_64_bit_integer_to_float_is_exact_rounding():
    b, _ = numeric.convert(np.array([(1 << 63) - 1], np.uint64), "S64", "FP32", rmode="RTZ")
    assert int(b[0]) == 0x5EFFFFFF
    b, f = numeric.convert(np.array([(1 << 63) - 1], np.uint64), "S64", "FP32")
    assert int(b[0]) == 0x5F000000 and int(f[0]) == FL.NX
    b, _ = numeric.convert(np.array([(1 << 64) - 1], np.uint64), "U64", "FP64", rmode="RTZ")
    assert int(b[0]) == 0x43EFFFFFFFFFFFFF


def test_default_rmode_is_rtz_for_float_to_int_and_rne_otherwise():
    x = f64(2.5, -2.7)
    assert list(numeric.convert(x, "FP64", "S8")[0].view(np.int8)) == [2, -2]
    assert list(numeric.convert(x, "FP64", "S8", rmode=1)[0].view(np.int8)) == [2, -3]
    assert int(numeric.convert(f64(1 + 2.0 ** -11), "FP64", "FP16")[0][0]) == 0x3C00
    assert list(numeric.convert(np.array([0x90, 0x7E], np.uint8), "E8M0", "S32")[0]) == [2 ** 17, 0]


def test_ftz_profile_reads_subnormals_as_zero_and_flushes_results():
    b, f = numeric.convert(np.array([0x0001, 0x8001, 0x0400], np.uint16), "FP16", "FP32", profile="ftz")
    assert [hex(int(v)) for v in b] == ["0x0", "0x80000000", "0x38800000"] and not f.any()
    b, f = numeric.convert(f64(2.0 ** -20, -(2.0 ** -20)), "FP64", "FP16", profile="ftz")
    assert list(b) == [0, 0x8000] and list(f) == [FL.UF | FL.NX] * 2


def test_rhb_on_hif8_is_ties_away():
    x = f64(1.0625, 15.5, 40960.0, -1.0625)
    assert list(numeric.convert(x, "FP64", "HiF8", rmode="RHB")[0]) == [0x09, 0x40, 0x6F, 0x89]


@pytest.mark.parametrize("src", SMALL_SOURCES + ["FP16", "BF16", "S16", "U16"])
def test_rhb_is_accepted_for_every_destination_and_rounds_ties_away(src):
    """Decision 080 assigns RMode 7 (RHB) with no destination restriction; docs/numerics.md
    defines it as round to nearest, ties away, for every format: the oracle's RNA rule."""
    codes = all_codes(src)
    for dst in ALL:
        for sat in ((False, True) if len(codes) <= 256 else (False,)):
            got_b, got_f = numeric.convert(codes, src, dst, rmode="RHB", sat=sat)
            want_b, want_f = expected(src, codes, dst, "RNA", sat)
            bad = np.flatnonzero((got_b.astype(np.uint64) != want_b) | (got_f != want_f))
            assert bad.size == 0, (src, dst, sat, hex(int(codes[bad[0]])))
        assert np.array_equal(numeric.convert(codes, src, dst, rmode=7)[0], want_b if not sat else
                              expected(src, codes, dst, "RNA", False)[0])


@pytest.mark.parametrize("src,dst", [("FP32", "FP32"), ("FP16", "FP32"), ("BF16", "FP64"), ("FP64", "FP64"),
                                     ("S8", "S32"), ("S32", "S8"), ("U64", "S16"), ("S16", "FP32"), ("E4M3", "FP16"),
                                     ("HiF8", "FP32"), ("U4X2", "FP16")])
def test_exact_conversions_ignore_the_mode_rhb_included(src, dst):
    rng = np.random.default_rng(5)
    from isa.datatypes import datatype
    s = datatype(src)
    codes = (all_codes(src) if s.bits <= 16 else
             rng.integers(0, 1 << 62, 4000, dtype=np.uint64).astype(s.raw_dtype) if s.bits == 64 else
             rng.integers(0, 1 << s.bits, 4000, dtype=np.uint64).astype(s.raw_dtype))
    if src == "FP32":
        codes = codes[~np.isnan(codes.view(np.float32))]       # NaN payload rules are tested elsewhere
    results = [numeric.convert(codes, src, dst, rmode=m) for m in ("RHB", "RNE", "RTZ", "RTM", "RTO")]
    for b, f in results[1:]:
        assert np.array_equal(b, results[0][0]) and np.array_equal(f, results[0][1])
    assert not (results[0][1] & FL.NX).any()


def test_invalid_source_encodings_are_rejected():
    with pytest.raises(InvalidEncoding):
        numeric.convert(np.array([0x40], np.uint8), "E3M2", "FP32")
    with pytest.raises(InvalidEncoding):
        numeric.convert(np.array([0x3F801000], np.uint32), "TF32", "FP32")
    with pytest.raises(InvalidEncoding):
        numeric.convert(np.array([16], np.uint8), "U4X2", "U8")
    with pytest.raises(TypeError):
        numeric.convert(np.array([1.0]), "FP64", "FP32")
    with pytest.raises(InvalidEncoding):
        numeric.convert(np.array([-1]), "FP16", "FP32")
    assert int(numeric.convert(np.array([0x3C00]), "FP16", "FP32")[0][0]) == 0x3F800000


def test_shapes_broadcast_and_encode_decode_round_trip():
    x = np.array([[0, 0.5, 1, 1.5], [-0.5, -1, -1.5, -0.0]])
    for name in ("FP16", "E4M3", "HiF8", "E2M1X2", "E1M2X2"):
        b = numeric.encode(x, name)
        assert b.shape == (2, 4)
        assert np.array_equal(numeric.decode(b, name), x), name
