"""Profile a5 (docs/numerics.md "Profile a5"): every recipe gives the bits and flags of a model the
test builds from the A5 sources' steps with exact rationals (a5_model.py: each IEEE step by
op_reference.py, rounded by oracles.py), on every backend path: the tier the table selects
(compiled kernels, compositions, tables), the NumPy reference recipe itself, and the device
glue under the CUDA simulator (test_cuda_sim.py runs every (op, DataType, profile)).

Inputs: every FP16 code for TRSQRT/TRECIP, every FP16 dividend over chosen divisors for TREM,
the FP16 subnormal-quotient boundary (exponent differences -9 and below, 0x03FF operands) for
TDIV, FP32 samples with edges (quotients of 2^24 and more, ties, subnormals, zeros, infinities,
NaNs) for TRSQRT/TREM; TCVT against integer arithmetic on the rounded value in every RMode.
The issue's examples (measured on the public A5 sources) are checked as they are.
"""
import numpy as np
import pytest

import a5_model as M
from isa.datatypes import datatype
from kernels import numeric
from kernels.numeric import tiers
from kernels.numeric.profiles import PROFILES, UnknownProfile, lookup
from test_ops_float import assert_same, edge_and_random

A5 = PROFILES["a5"]
ALL16 = np.arange(1 << 16, dtype=np.uint16)


def a5(op, name, *ops):
    return numeric.elementwise(op, name, *ops, profile="a5")


def reference(op, name, *ops):
    """The NumPy reference recipe alone (what the compiled tiers hand their marked elements)."""
    with np.errstate(all="ignore"):
        return tiers.reference(op)(name, *[np.asarray(x) for x in ops], prof=A5)


def assert_a5_and_its_reference(op, name, want, *ops):
    """The a5 profile's bits and flags, and those of its NumPy reference recipe alone, are `want`."""
    assert_same(f"{op}.{name} a5", a5(op, name, *ops), want, ops)
    assert_same(f"{op}.{name} a5 reference", reference(op, name, *ops), want, ops)


def fp32(values):
    with np.errstate(over="ignore"):
        return np.asarray(values, np.float32).view(np.uint32)


def fp32_samples(n, seed):
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([edge_and_random("FP32", 0, 0), raw])


# ---------------------------------------------------------------- the issue's examples

@pytest.mark.parametrize("op,name,operands,want,ieee", [
    ("TRSQRT", "FP32", (0x3E0D7265,), 0x402C3338, 0x402C3337),
    ("TREM", "FP32", (0x491AF7BE, 0xB77FEB1D), 0x00000000, 0xB778271C),
    ("TREM", "FP16", (0x8001, 0x3C00), 0x3BFF, 0x3C00),
    ("TDIV", "FP16", (0x96DC, 0x7959), 0x8000, 0x8001),
])
def test_the_issues_examples(op, name, operands, want, ieee):
    raw = np.dtype(datatype(name).raw_dtype)
    ops = [np.array([x], raw) for x in operands]
    assert int(a5(op, name, *ops)[0][0]) == want
    assert int(numeric.elementwise(op, name, *ops)[0][0]) == ieee


@pytest.mark.parametrize("src,dst,value,want", [
    ("FP16", "U8", np.float16(-45), 0xD3), ("FP32", "S16", np.float32(40000), 0x9C40),
    ("FP16", "S8", np.float16(200), 0xC8)])
def test_the_issues_non_saturating_conversions(src, dst, value, want):
    bits = np.array([value]).view(np.dtype(datatype(src).raw_dtype))
    got, flags = numeric.convert(bits, src, dst, rmode="RNE", sat=False, profile="a5")
    assert int(got[0]) == want and int(flags[0]) == M.NV
    sat_bits, _ = numeric.convert(bits, src, dst, rmode="RNE", sat=True, profile="a5")
    assert int(sat_bits[0]) == int(numeric.convert(bits, src, dst, rmode="RNE", sat=True)[0][0])


def test_same_type_fp32_rounds_to_an_integral_value():
    x = np.array([0x42970754], np.uint32)                       # 75.51
    assert int(numeric.convert(x, "FP32", "FP32", rmode="RNE", profile="a5")[0][0]) == 0x42980000
    assert int(numeric.convert(x, "FP32", "FP32", rmode="RNE")[0][0]) == 0x42970754   # ieee: identity


# ---------------------------------------------------------------- TRSQRT, TRECIP

def test_trsqrt_fp16_every_code():
    want = M.trsqrt("FP16", ALL16)
    assert_same("TRSQRT.FP16 a5", a5("TRSQRT", "FP16", ALL16), want, (ALL16,))
    differ = a5("TRSQRT", "FP16", ALL16)[0] != numeric.elementwise("TRSQRT", "FP16", ALL16)[0]
    assert 0.05 < differ.mean() < 0.3                  # the issue measured about 23 % of the inputs


def test_trsqrt_fp32_samples_and_edges():
    rng = np.random.default_rng(3)
    x = np.concatenate([fp32_samples(3000, 4), fp32(rng.uniform(0, 4, 2000)),
                        fp32(4.0 ** np.arange(-74, 64)), np.array([0x3E0D7265, 1, 0x007FFFFF], np.uint32)])
    want = M.trsqrt("FP32", x)
    assert_a5_and_its_reference("TRSQRT", "FP32", want, x)


def test_trecip_fp16_every_code():
    want = M.trecip_fp16(ALL16)
    assert_same("TRECIP.FP16 a5", a5("TRECIP", "FP16", ALL16), want, (ALL16,))


# ---------------------------------------------------------------- TREM

DIVISORS16 = (0x3C00, 0xBC00, 0x0001, 0x8401, 0x7BFF, 0x3555, 0xC248, 0x1C00, 0x0000, 0x7C00)


@pytest.mark.parametrize("d", DIVISORS16[:4])
def test_trem_fp16_every_dividend_over_a_divisor(d):
    b = np.full(ALL16.size, d, np.uint16)
    want = M.trem_fp16(ALL16, b)
    assert_same(f"TREM.FP16 a5 / {d:#x}", a5("TREM", "FP16", ALL16, b), want, (ALL16, b))


@pytest.mark.slow
@pytest.mark.parametrize("d", DIVISORS16[4:])
def test_trem_fp16_every_dividend_over_more_divisors(d):
    b = np.full(ALL16.size, d, np.uint16)
    assert_same(f"TREM.FP16 a5 / {d:#x}", a5("TREM", "FP16", ALL16, b), M.trem_fp16(ALL16, b), (ALL16, b))


def test_trem_fp16_random_pairs_specials_and_the_reference():
    a = edge_and_random("FP16", 6000, 5)
    b = np.concatenate([a[::-1], np.array(DIVISORS16, np.uint16)])
    a = np.concatenate([a, np.full(len(DIVISORS16), 0x5640, np.uint16)])
    want = M.trem_fp16(a, b)
    assert_a5_and_its_reference("TREM", "FP16", want, a, b)


def trem32_cases():
    rng = np.random.default_rng(7)
    n = 3000
    x = fp32_samples(n, 8)
    y = fp32_samples(n, 9)
    # quotients of 2^24 and more: the unfused steps collapse
    big_x = fp32(rng.uniform(1, 2, 1000) * np.exp2(rng.integers(0, 60, 1000)))
    big_y = fp32(rng.uniform(1, 2, 1000) * np.exp2(rng.integers(-40, 0, 1000)) * rng.choice([-1, 1], 1000))
    # quotients at ties of the binary32 grid and just around integers
    k = rng.integers(1, 1 << 20, 1000)
    tie_y = fp32(rng.uniform(1, 2, 1000))
    tie_x = fp32((k + 0.5) * tie_y.view(np.float32).astype(np.float64))
    # subnormal operands and results
    sub_x = rng.integers(1, 1 << 23, 500, dtype=np.uint64).astype(np.uint32)
    sub_y = rng.integers(1, 1 << 23, 500, dtype=np.uint64).astype(np.uint32) | np.uint32(0x80000000)
    xs = np.concatenate([x, big_x, tie_x, sub_x, np.array([0x491AF7BE], np.uint32)])
    ys = np.concatenate([y, big_y, tie_y, sub_y, np.array([0xB77FEB1D], np.uint32)])
    return xs, ys


def test_trem_fp32_samples_with_edges():
    x, y = trem32_cases()
    want = M.trem_fp32(x, y)
    assert_a5_and_its_reference("TREM", "FP32", want, x, y)
    with np.errstate(all="ignore"):
        big = np.abs(x.view(np.float32).astype(np.float64) / y.view(np.float32).astype(np.float64)) >= 2.0 ** 24
    assert big.sum() > 300


# ---------------------------------------------------------------- TDIV FP16

def tdiv16_boundary():
    """Pairs whose exponent fields differ by 24 (scale -9: +-0x0001 or +-0 by |m0| > |m1|),
    by 23..25 and 38..41, subnormal dividends and divisors (0x03FF, which the source does not
    scale, included), and quotients rounding near the subnormal range."""
    rng = np.random.default_rng(11)
    out_a, out_b = [], []
    for e0 in range(1, 31):
        for diff in (22, 23, 24, 25, 26):
            e1 = e0 + diff
            if e1 > 30:
                continue
            t0 = rng.integers(0, 1024, 12)
            t1 = rng.integers(0, 1024, 12)
            out_a.append((e0 << 10) | t0 | (rng.integers(0, 2, 12) << 15))
            out_b.append((e1 << 10) | t1 | (rng.integers(0, 2, 12) << 15))
    sub = rng.integers(1, 0x400, 3000)
    out_a += [sub, rng.integers(0, 1 << 16, 3000), np.array([0x03FF, 0x03FE, 0x03FF, 0x0001, 0x3C00, 0x96DC])]
    out_b += [rng.integers(0, 1 << 16, 3000), sub, np.array([0x3C00, 0x3C00, 0x03FF, 0x03FF, 0x03FF, 0x7959])]
    a = np.concatenate(out_a).astype(np.uint16)
    b = np.concatenate(out_b).astype(np.uint16)
    return a, b


def test_tdiv_fp16_at_the_subnormal_quotient_boundary():
    a, b = tdiv16_boundary()
    want = M.tdiv_fp16(a, b)
    assert_a5_and_its_reference("TDIV", "FP16", want, a, b)
    ieee = numeric.elementwise("TDIV", "FP16", a, b)[0]
    assert (ieee != want[0]).sum() > 100


def test_tdiv_fp16_random_and_special_operands():
    a = edge_and_random("FP16", 8000, 13)
    b = np.roll(a, 17)
    assert_same("TDIV.FP16 a5", a5("TDIV", "FP16", a, b), M.tdiv_fp16(a, b), (a, b))


# ---------------------------------------------------------------- TCVT

RMODES = ("RNE", "RTZ", "RTM", "RTP", "RNA", "RTO", "RHB")


@pytest.mark.parametrize("dst", ("U8", "S8", "S16"))
@pytest.mark.parametrize("mode", RMODES)
def test_fp16_to_integer_without_sat_wraps_every_code(dst, mode):
    got, flags = numeric.convert(ALL16, "FP16", dst, rmode=mode, sat=False, profile="a5")
    want_b, want_f = M.wrap_convert("FP16", dst, ALL16, mode)
    finite = np.array([b is not None for b in want_b])
    assert np.array_equal(got[finite].astype(np.int64), np.array([b for b in want_b if b is not None]))
    assert np.array_equal(flags[finite], np.array([f for f in want_f if f is not None], np.uint8))
    ieee = numeric.convert(ALL16, "FP16", dst, rmode=mode, sat=False)       # inf/NaN: as ieee (assumed)
    assert np.array_equal(got[~finite], ieee[0][~finite]) and np.array_equal(flags[~finite], ieee[1][~finite])


@pytest.mark.parametrize("mode", RMODES)
def test_fp32_to_s16_without_sat_wraps(mode):
    rng = np.random.default_rng(17)
    x = np.concatenate([fp32_samples(4000, 18), fp32(rng.uniform(-2 ** 40, 2 ** 40, 2000)),
                        fp32(np.arange(-70000, 70000, 37) + 0.5), fp32([32767.5, -32768.5, 65535.5, 2.0 ** 31,
                                                                        -2.0 ** 63, 2.0 ** 100, 3e38])])
    got, flags = numeric.convert(x, "FP32", "S16", rmode=mode, sat=False, profile="a5")
    want_b, want_f = M.wrap_convert("FP32", "S16", x, mode)
    finite = np.array([b is not None for b in want_b])
    assert np.array_equal(got[finite].astype(np.int64), np.array([b for b in want_b if b is not None]))
    assert np.array_equal(flags[finite], np.array([f for f in want_f if f is not None], np.uint8))
    ieee = numeric.convert(x, "FP32", "S16", rmode=mode, sat=False)
    assert np.array_equal(got[~finite], ieee[0][~finite])


@pytest.mark.parametrize("mode", RMODES + ("DEFAULT",))
def test_fp32_to_fp32_rounds_to_integral_values(mode):
    rng = np.random.default_rng(19)
    x = np.concatenate([fp32_samples(4000, 20), fp32(rng.uniform(-300, 300, 2000)),
                        fp32(np.arange(-8, 8, 0.25)), fp32([-0.0, -0.3, 0.3, 2.0 ** 23 - 0.5, 1e-45])])
    got, flags = numeric.convert(x, "FP32", "FP32", rmode=mode, profile="a5")
    want = M.integral_fp32(x, "RNE" if mode == "DEFAULT" else mode)
    finite = np.array([w is not None for w in want])
    assert np.array_equal(got[finite], np.array([w for w in want if w is not None], np.uint32))
    assert not flags[finite].any()                               # roundToIntegral: no inexact
    ieee = numeric.convert(x, "FP32", "FP32", rmode=mode)        # inf/NaN: as ieee
    assert np.array_equal(got[~finite], ieee[0][~finite]) and np.array_equal(flags[~finite], ieee[1][~finite])


@pytest.mark.parametrize("src,dst", [("FP32", "S32"), ("FP64", "S16"), ("BF16", "U8"), ("FP16", "U16"),
                                     ("FP16", "FP16"), ("BF16", "BF16"), ("FP32", "FP16")])
def test_pairs_the_sources_do_not_spell_out_follow_ieee(src, dst):
    raw = np.dtype(datatype(src).raw_dtype)
    x = edge_and_random(src, 3000, 21)
    for mode in ("RNE", "RTZ"):
        got = numeric.convert(x, src, dst, rmode=mode, profile="a5")
        want = numeric.convert(x, src, dst, rmode=mode)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), (src, dst, mode, raw)


# ---------------------------------------------------------------- the profile as data

def test_everything_else_follows_ieee():
    """Every (op, DataType) a5 does not name gives ieee's bits and flags."""
    from isa import instructions as instrs
    for op in ("TADD", "TMUL", "TFMA", "TSQRT", "TEXP", "TDIV", "TREM", "TRSQRT", "TMAX", "TCMP", "TNEG"):
        ins = instrs.lookup(op)
        for name in ("FP64", "TF32", "HF32", "BF16", "E4M3", "FP32", "FP16", "S32", "U8"):
            if name not in ins.dtypes or A5.rule(op, name) != "ieee":
                continue
            raw = np.dtype(datatype(name).raw_dtype)
            ops = [edge_and_random(name, 300, i).astype(raw) if datatype(name).is_float
                   else np.random.default_rng(i).integers(1, 100, 400).astype(raw) for i in range(ins.arity)]
            n = min(len(o) for o in ops)
            ops = [o[:n] for o in ops]
            kw = {"cmode": "LT"} if op == "TCMP" else {}
            got = numeric.elementwise(op, name, *ops, profile="a5", **kw)
            want = numeric.elementwise(op, name, *ops, **kw)
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), (op, name)


def test_profiles_are_named_versioned_rows():
    assert {p: (PROFILES[p].name, PROFILES[p].version) for p in PROFILES} == {
        "ieee": ("ieee", "1.0"), "ftz": ("ftz", "1.0"), "a5": ("a5", "1.0")}
    assert lookup("a5", "1.0") is A5 and A5.rule("TREM", "BF16") == "ieee" and A5.rule("TREM", "FP16") != "ieee"
    with pytest.raises(UnknownProfile, match="known: ieee 1.0, ftz 1.0, a5 1.0"):
        lookup("a5", "0.9")
    with pytest.raises(UnknownProfile, match="known"):
        lookup("a6")


def test_every_rule_a_profile_names_is_implemented_and_supported():
    from kernels.numeric.convert import RULES
    for p in PROFILES.values():
        for op, cls, rule in p.rules:
            if op == "TCVT":
                assert rule in RULES
                continue
            assert rule in tiers.RECIPES, (p.name, op, cls, rule)
            assert numeric.supports(op, cls, p.name)


def test_no_a5_case_is_placed_on_the_host_on_the_device():
    from isa import datatypes as dts, instructions as instrs
    from kernels.numeric import cuda as C
    for op in sorted({op for op, _, _ in A5.rules if op != "TCVT"}):
        ins = instrs.lookup(op)
        for dt in dts.DATATYPES:
            if dt.name in ins.dtypes:
                assert C.placement(op, dt, A5, ins.arity) != "host", (op, dt.name)


def test_the_compiled_a5_tier_and_the_composition_serve_the_a5_rules():
    placed = {(op, name): tiers.select(op, datatype(name), A5, 1 if op in ("TRSQRT", "TRECIP") else 2).name
              for op, name, _ in A5.rules if op != "TCVT"}
    assert placed == {("TRSQRT", "FP32"): "compose", ("TRSQRT", "FP16"): "table", ("TREM", "FP32"): "a5",
                      ("TREM", "FP16"): "a5", ("TDIV", "FP16"): "a5", ("TRECIP", "FP16"): "table"}
