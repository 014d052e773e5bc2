"""The format table and codec against test-side decoders written from each format's definition."""
from fractions import Fraction

import numpy as np
import pytest

from kernels import numeric
from kernels.numeric import formats as F

import oracles as O

CLS = {"zero": F.ZERO, "finite": F.FINITE, "inf": F.INF, "nan": None}


@pytest.mark.parametrize("name", O.SMALL)
def test_unpack_every_code(name):
    """unpack's (class, sign, value) equals the written definition for every encoding."""
    sp = O.SPEC[name]
    n = 1 << O.width(name)
    codes = np.arange(n, dtype=np.uint64) << np.uint64(sp.shift)
    cls, sign, exp, sig = F.unpack(codes.astype(O.RAW[sp.container]), name)
    for c in range(n):
        kind, s, v = O.decode_code(name, c)
        if kind == "nan":
            assert cls[c] in (F.QNAN, F.SNAN), (name, hex(c))
            continue
        assert cls[c] == CLS[kind], (name, hex(c))
        if kind != "nan" and name not in ("HiF8", "E8M0"):
            assert sign[c] == s, (name, hex(c))
        if kind in ("zero", "finite"):
            got = Fraction(int(sig[c])) * Fraction(2) ** int(exp[c])
            assert (-got if sign[c] else got) == v, (name, hex(c))
        if kind == "inf":
            assert sign[c] == s


@pytest.mark.parametrize("name", O.SMALL)
def test_decode_every_code_is_exact(name):
    sp = O.SPEC[name]
    codes = (np.arange(1 << O.width(name), dtype=np.uint64) << np.uint64(sp.shift)).astype(O.RAW[sp.container])
    got = numeric.decode(codes, name)
    _, _, want = O.value_table(name)
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got[~np.isnan(want)]), np.signbit(want[~np.isnan(want)]))


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast")
def test_decode_wide_formats_random_codes():
    rng = np.random.default_rng(1)
    u32 = rng.integers(0, 1 << 32, 100000, dtype=np.uint64).astype(np.uint32)
    got = numeric.decode(u32, "FP32")
    want = u32.view(np.float32).astype(np.float64)
    assert np.array_equal(got, want, equal_nan=True)
    tf = u32 & np.uint32(0xFFFFE000)
    assert np.array_equal(numeric.decode(tf, "TF32"), tf.view(np.float32).astype(np.float64), equal_nan=True)
    hf = u32 & np.uint32(0xFFFFF000)
    assert np.array_equal(numeric.decode(hf, "HF32"), hf.view(np.float32).astype(np.float64), equal_nan=True)
    u64 = rng.integers(0, 1 << 63, 1000, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    assert np.array_equal(numeric.decode(u64, "FP64").view(np.uint64), u64)
    c, s, e, m = F.unpack(u64, "FP64")
    fin = c == F.FINITE
    v = np.ldexp(m[fin].astype(np.float64), e[fin].astype(np.int32))
    assert np.array_equal(np.where(s[fin] == 1, -v, v), u64[fin].view(np.float64))


def test_nan_classes_quiet_bit():
    c = F.unpack(np.array([0x7FC00000, 0x7F800001, 0xFFA00000, 0x7F800000], np.uint32), "FP32")[0]
    assert list(c) == [F.QNAN, F.SNAN, F.SNAN, F.INF]
    c = F.unpack(np.array([0x7D, 0x7E, 0x7F, 0x7C], np.uint8), "E5M2")[0]
    assert list(c) == [F.SNAN, F.QNAN, F.QNAN, F.INF]
    assert list(F.unpack(np.array([0x7F, 0xFF, 0x7E], np.uint8), "E4M3")[0]) == [F.QNAN, F.QNAN, F.FINITE]


def test_ftz_reads_subnormal_inputs_as_signed_zero():
    cls, sign, _, sig = F.unpack(np.array([0x0001, 0x8200, 0x0400], np.uint16), "FP16", ftz=True)
    assert list(cls) == [F.ZERO, F.ZERO, F.FINITE] and list(sign) == [0, 1, 0] and int(sig[0]) == 0
    cls, sign, _, _ = F.unpack(np.array([0x01, 0x87, 0x7E], np.uint8), "HiF8", ftz=True)
    assert list(cls) == [F.ZERO, F.ZERO, F.FINITE]
    cls = F.unpack(np.array([0x00000001, 0x00800000], np.uint32), "FP32", ftz=True)[0]
    assert list(cls) == [F.ZERO, F.FINITE]


def test_special_encodings_and_substitutes():
    assert F.nan_bits("FP32") == 0x7FC00000 and F.nan_bits("FP16") == 0x7E00 and F.nan_bits("BF16") == 0x7FC0
    assert F.nan_bits("TF32") == 0x7FC00000 and F.nan_bits("FP64") == 0x7FF8000000000000
    assert F.nan_bits("E4M3") == 0x7F and F.nan_bits("E5M2") == 0x7E and F.nan_bits("HiF8") == 0x80
    assert F.nan_bits("E8M0") == 0xFF
    assert F.nan_bits("E3M2") == 0x1F and F.nan_bits("E2M1X2") == 0x7 and F.nan_bits("HiF4X2") == 0x7
    assert F.inf_bits("FP16", 1) == 0xFC00 and F.inf_bits("HiF8") == 0x6F and F.inf_bits("HiF8", 1) == 0xEF
    assert F.inf_bits("E4M3", 1) == 0x7F and F.inf_bits("E8M0") == 0xFF
    assert F.inf_bits("E2M3", 1) == 0x3F and F.inf_bits("E1M2X2", 1) == 0xF
    assert F.max_bits("E4M3", 1) == 0xFE and F.max_bits("HiF8") == 0x6E and F.max_bits("E8M0") == 0xFE
    assert F.zero_bits("HiF8", 1) == 0 and F.zero_bits("FP32", 1) == 0x80000000
    with pytest.raises(ValueError):
        F.zero_bits("E8M0")


def test_valid_encoding_rejects_bits_outside_the_format():
    assert list(numeric.valid_encoding(np.array([0x3F, 0x40, 0x80], np.uint8), "E3M2")) == [True, False, False]
    assert list(numeric.valid_encoding(np.array([0x0F, 0x10], np.uint8), "E2M1X2")) == [True, False]
    assert list(numeric.valid_encoding(np.array([0x3F800000, 0x3F801000, 0x3F802000], np.uint32), "TF32")) == [True, False, True]
    assert list(numeric.valid_encoding(np.array([0x3F800800, 0x3F801000], np.uint32), "HF32")) == [False, True]
    assert list(numeric.valid_encoding(np.array([255, 256], np.uint16), "U8")) == [True, False]
    assert list(numeric.valid_encoding(np.array([-1, 7], np.int64), "S4X2")) == [False, True]
    assert numeric.valid_encoding(np.array([0xFFFFFFFFFFFFFFFF], np.uint64), "FP64").all()


def test_info_matches_the_definitions():
    for name in O.FLOATS:
        sp, i = O.SPEC[name], numeric.info(name)
        assert i.max_finite == float(sp.max), name
        assert i.min_normal == float(sp.min_normal), name
        assert i.max_bits == (sp.max_code | 0) << sp.shift, name
    h = numeric.info("HiF8")
    assert (h.max_finite, h.min_normal, h.min_subnormal) == (2.0 ** 15, 2.0 ** -15, 2.0 ** -22)
    assert h.inf_bits == (0x6F, 0xEF) and h.nan_bits == 0x80 and not h.has_neg_zero
    e = numeric.info("E8M0")
    assert (e.max_finite, e.min_finite, e.has_nan, e.has_inf) == (2.0 ** 127, 2.0 ** -127, True, False)
    assert numeric.info("E4M3").max_finite == 448 and numeric.info("E5M2").max_finite == 57344
    assert numeric.info("S4X2").min_finite == -8 and numeric.info("U64").max_finite == 2 ** 64 - 1


def test_hif8_binade_structure_matches_the_paper():
    """7 exponents with 3 mantissa bits, 8 with 2, 16 with 1, 7 denormal binades (38 in all)."""
    _, _, vals = O.value_table("HiF8")
    fin = vals[np.isfinite(vals) & (vals > 0)]
    exps, counts = np.unique(np.floor(np.log2(fin)).astype(int), return_counts=True)
    per = dict(zip(exps.tolist(), counts.tolist()))
    assert sorted(per) == list(range(-22, 16))
    assert [e for e in per if per[e] == 8] == list(range(-3, 4))
    assert [e for e in per if per[e] == 4] == [-7, -6, -5, -4, 4, 5, 6, 7]
    assert [e for e in per if per[e] == 2] == list(range(-15, -7)) + list(range(8, 15))
    assert per[15] == 1                                   # 1.5 * 2^15 is the infinity code
    assert [e for e in per if e < -15] == list(range(-22, -15)) and all(per[e] == 1 for e in range(-22, -15))


def test_integer_decode():
    assert list(numeric.decode(np.array([0x7, 0x8, 0xF], np.uint8), "S4X2")) == [7, -8, -1]
    assert list(numeric.decode(np.array([0x80, 0x7F], np.uint8), "S8")) == [-128, 127]
    assert numeric.decode(np.array([1 << 63], np.uint64), "S64")[0] == -(1 << 63)
    assert numeric.decode(np.array([(1 << 64) - 1], np.uint64), "U64")[0] == (1 << 64) - 1
