"""Arithmetic instructions through the machine, against references computed here with Python
integers (integers) and exact rationals (floating point).  The machine must hand the valid
rectangle to kernels.numeric, pad the rest, and report the OR of valid-element flags as status.
Every (instruction, DataType, profile) the legality rules admit is implemented by the numeric
layer, so the machine calls it directly."""
from fractions import Fraction

import numpy as np
import pytest

from emu_helpers import FMT, Machine, blk, fdecode, round_rne, run_binary
from isa.datatypes import datatype

rng = np.random.default_rng(2024)
INTS = ["S8", "S16", "S32", "S64", "U8", "U16", "U32", "U64"]


def to_int(bits, dt):
    v = int(bits)
    return v - (1 << dt.bits) if dt.signed and v >> (dt.bits - 1) else v


def enc(v, dt):
    return v % (1 << dt.bits)


def floor_div(a, b):
    return a // b          # Python floors


def trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


INT_REF = {
    "TADD": lambda a, b, w: a + b,
    "TSUB": lambda a, b, w: a - b,
    "TMUL": lambda a, b, w: a * b,
    "TDIV": lambda a, b, w: trunc_div(a, b),
    "TREM": lambda a, b, w: a - floor_div(a, b) * b,      # floor modulo: the divisor's sign
    "TAND": lambda a, b, w: a & b,
    "TOR": lambda a, b, w: a | b,
    "TXOR": lambda a, b, w: a ^ b,
    "TMAX": lambda a, b, w: max(a, b),
    "TMIN": lambda a, b, w: min(a, b),
}


def sample(dt, shape, nonzero=False):
    w = dt.bits
    edge = [0, 1, (1 << w) - 1, 1 << (w - 1), (1 << (w - 1)) - 1, 2, (1 << w) - 2]
    v = rng.integers(0, 1 << min(w, 63), size=shape, dtype=np.uint64)
    if w == 64:
        v |= rng.integers(0, 2, size=shape, dtype=np.uint64) << np.uint64(63)
    flat = v.reshape(-1)
    flat[: len(edge)] = edge[: flat.size]
    if nonzero:
        v[v == 0] = 3
    return v.astype(dt.raw_dtype)



@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("mn", sorted(INT_REF))
def test_integer_binary_ops_match_python_integers(mn, dtype):
    dt = datatype(dtype)
    a = sample(dt, (4, 9))
    b = sample(dt, (4, 9), nonzero=mn in ("TDIV", "TREM"))
    b = np.roll(b.reshape(-1), 3).reshape(4, 9)
    v, res = run_binary(mn, dtype, a, b)
    want = [[enc(INT_REF[mn](to_int(x, dt), to_int(y, dt), dt.bits), dt) for x, y in zip(ra, rb)]
            for ra, rb in zip(a, b)]
    assert v.bits.astype(object).tolist() == want
    assert v.defined.all()


@pytest.mark.parametrize("dtype", INTS)
def test_trem_nonzero_result_has_the_divisors_sign(dtype):
    dt = datatype(dtype)
    if not dt.signed:
        return
    a = np.array([[enc(x, dt) for x in (7, -7, 7, -7, 6)]], dt.raw_dtype)
    b = np.array([[enc(x, dt) for x in (3, 3, -3, -3, -3)]], dt.raw_dtype)
    v, _ = run_binary("TREM", dtype, a, b)
    assert [to_int(x, dt) for x in v.bits[0]] == [1, 2, -2, -1, 0]


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("mn", ["TSHL", "TSHR"])
def test_shift_count_is_the_low_log2_w_bits_of_source1(mn, dtype):
    dt = datatype(dtype)
    w = dt.bits
    a = sample(dt, (2, 8))
    counts = np.array([0, 1, w - 1, w, w + 1, 2 * w + 3, (1 << w) - 1, 5] * 2, dtype=object).reshape(2, 8)
    b = np.array([[c % (1 << w) for c in row] for row in counts], dt.raw_dtype)
    v, _ = run_binary(mn, dtype, a, b)
    for x, c, got in zip(a.ravel(), b.ravel(), v.bits.ravel()):
        n = int(c) % w
        if mn == "TSHL":
            want = (int(x) << n) % (1 << w)
        else:
            want = enc(to_int(x, dt) >> n, dt)       # arithmetic for signed, logical for unsigned
        assert int(got) == want, (x, c)


UNARY_REF = {
    "TABS": lambda a, dt: abs(a),
    "TNEG": lambda a, dt: -a,
    "TNOT": lambda a, dt: ~a,
    "TRELU": lambda a, dt: max(a, 0),
}


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("mn", sorted(UNARY_REF))
def test_integer_unary_ops_wrap_at_the_element_width(mn, dtype):
    dt = datatype(dtype)
    a = sample(dt, (3, 7))
    m = Machine()
    m.write_tile(0, 1, dtype, a)
    m.execute(blk(mn, dtype, [1], 2, vc=7, vr=3))
    got = m.read_tile(0, 2).bits.astype(object).tolist()
    assert got == [[enc(UNARY_REF[mn](to_int(x, dt), dt), dt) for x in row] for row in a]


def test_tabs_and_tneg_keep_the_most_negative_bit_pattern():
    m = Machine()
    m.write_tile(0, 1, "S16", np.array([[0x8000]]))
    for mn in ("TABS", "TNEG"):
        m.execute(blk(mn, "S16", [1], 2, vc=1))
        assert m.read_tile(0, 2).bits[0, 0] == 0x8000


@pytest.mark.parametrize("dtype", INTS)
def test_integer_tfma_is_modulo_the_element_width(dtype):
    dt = datatype(dtype)
    a, b, c = sample(dt, (2, 5)), np.roll(sample(dt, (2, 5)), 1), np.roll(sample(dt, (2, 5)), 2)
    m = Machine()
    for t, x in ((1, a), (2, b), (3, c)):
        m.write_tile(0, t, dtype, x)
    m.execute(blk("TFMA", dtype, [1, 2, 3], 4, vc=5, vr=2))
    want = [[enc(to_int(x, dt) * to_int(y, dt) + to_int(z, dt), dt) for x, y, z in zip(*rows)]
            for rows in zip(a, b, c)]
    assert m.read_tile(0, 4).bits.astype(object).tolist() == want


CMP = {0: "EQ", 1: "NE", 2: "LT", 3: "GT", 4: "LE", 5: "GE"}
CMP_REF = {"EQ": lambda a, b: a == b, "NE": lambda a, b: a != b, "LT": lambda a, b: a < b,
           "GT": lambda a, b: a > b, "LE": lambda a, b: a <= b, "GE": lambda a, b: a >= b}


@pytest.mark.parametrize("dtype", ["S8", "U8", "S32", "U64"])
@pytest.mark.parametrize("cmode", [None, 0, 1, 2, 3, 4, 5])
def test_tcmp_writes_packed_predicate_bits_with_typed_ordering(dtype, cmode):
    dt = datatype(dtype)
    a = sample(dt, (3, 6))
    b = a.copy()
    b.reshape(-1)[::2] = np.roll(a.reshape(-1), 1)[::2]
    v, res = run_binary("TCMP", dtype, a, b, CMode=cmode)
    rel = CMP_REF[CMP[cmode or 0]]                          # omitted CMode is EQ
    want = [[int(rel(to_int(x, dt), to_int(y, dt))) for x, y in zip(ra, rb)] for ra, rb in zip(a, b)]
    assert v.kind == "predicate" and v.bits.tolist() == want
    bits = np.array(want).ravel()
    assert v.payload == np.packbits(bits.astype(np.uint8), bitorder="little").tobytes()
    assert res.status == {0: 0}


@pytest.mark.parametrize("pad,bit", [(0, 0), (1, 1), (2, 0)])
def test_tcmp_padding_zero_min_write_0_bits_and_max_writes_1_bits(pad, bit):
    m = Machine()
    m.write_tile(0, 1, "U8", np.zeros((4, 4)), valid_row=2, valid_col=3)
    m.execute(blk("TCMP", "U8", [1, 1], 2, vc=3, vr=2, col=4, PadValueOrByteId=pad))
    v = m.read_tile(0, 2)
    assert (v.Row, v.Col, v.ValidRow, v.ValidCol) == (4, 4, 2, 3)    # retains the sources' Row
    assert (v.bits[:2, :3] == 1).all() and v.defined.all()
    assert (v.bits[2:] == bit).all() and (v.bits[:, 3] == bit).all()


def test_tcmp_null_padding_is_undefined():
    m = Machine()
    m.write_tile(0, 1, "U8", np.zeros((4, 4)), valid_row=2)
    m.execute(blk("TCMP", "U8", [1, 1], 2, vc=4, vr=2))
    assert m.read_tile(0, 2).defined.sum() == 8


def test_tcmp_then_tsel_round_trip():
    m = Machine()
    a = np.arange(16, dtype=np.uint64).reshape(2, 8)
    b = np.full((2, 8), 7)
    m.write_tile(0, 1, "S32", a)
    m.write_tile(0, 2, "S32", b)
    m.execute(blk("TCMP", "S32", [1, 2], 3, vc=8, vr=2, CMode=3))          # a > b
    m.execute(blk("TSEL", "S32", [3, 1, 2], 4, vc=8, vr=2))                # max(a, b)
    assert m.read_tile(0, 4).bits.tolist() == np.maximum(a, 7).tolist()


def test_integer_padding_and_multi_pe_vectorised_execution():
    m = Machine()
    data = {p: sample(datatype("S16"), (4, 4)) for p in range(4)}
    for p in range(4):
        m.write_tile(p, 1, "S16", data[p], valid_row=2, valid_col=3)
    res = m.execute(blk("TADD", "S16", [1, 1], 2, mask=0b1011, vc=3, vr=2, col=4, cap=32, PadValueOrByteId=2))
    assert res.pes == (0, 1, 3)
    for p in (0, 1, 3):
        v = m.read_tile(p, 2)
        assert np.array_equal(v.bits[:2, :3], (data[p][:2, :3].astype(np.uint32) * 2 % 65536))
        assert (v.bits[2:] == 0x8000).all() and (v.bits[:, 3] == 0x8000).all()
    assert 2 not in m.tiles(2)


def test_both_sources_same_tile_and_aliasing_destination():
    m = Machine()
    a = sample(datatype("U32"), (2, 4))
    m.write_tile(0, 1, "U32", a)
    m.execute(blk("TMUL", "U32", [1, 1], 1, vc=4, vr=2))
    assert m.read_tile(0, 1).bits.astype(object).tolist() == [[(int(x) ** 2) % 2**32 for x in r] for r in a]


# ---------------------------------------------------------------- floating point

def finite_sample(f, n):
    bits = rng.integers(0, 1 << min(f["bits"], 63), size=n, dtype=np.uint64)
    if f["bits"] == 64:
        bits |= rng.integers(0, 2, size=n, dtype=np.uint64) << np.uint64(63)
    e = (bits >> np.uint64(f["p"] - 1)) & np.uint64((1 << f["ebits"]) - 1)
    bits[e == (1 << f["ebits"]) - 1] &= ~np.uint64(1 << (f["bits"] - 2))    # no inf/NaN
    return bits


FP_REF = {
    "TADD": lambda a, b: a + b,
    "TSUB": lambda a, b: a - b,
    "TMUL": lambda a, b: a * b,
}


@pytest.mark.parametrize("dtype", ["FP16", "FP32", "FP64"])
@pytest.mark.parametrize("mn", sorted(FP_REF))
def test_floating_binary_ops_are_correctly_rounded(mn, dtype):
    f = FMT[dtype]
    a = finite_sample(f, 40).reshape(4, 10).astype(datatype(dtype).raw_dtype)
    b = np.roll(finite_sample(f, 40), 7).reshape(4, 10).astype(datatype(dtype).raw_dtype)
    m = Machine()
    m.write_tile(0, 1, dtype, a)
    m.write_tile(0, 2, dtype, b)
    block = blk(mn, dtype, [1, 2], 3, vc=10, vr=4)
    res = m.execute(block)
    got = m.read_tile(0, 3).bits
    for x, y, g in zip(a.ravel(), b.ravel(), got.ravel()):
        exact = FP_REF[mn](fdecode(x, f), fdecode(y, f))
        want = round_rne(exact, f)
        if exact == 0:   # exact zero sums: +0 unless both operands are -0 (RNE)
            continue
        assert int(g) == want, (mn, hex(int(x)), hex(int(y)))
    assert res.status[0] & 16   # random operands: some result is inexact (NX)


def test_every_admitted_instruction_datatype_and_profile_is_implemented():
    """The numeric layer implements the whole DataType table of isa.instructions, so nothing the
    legality rules admit can fail for lack of an implementation (no UNSUPPORTED_IN_BUILD)."""
    from isa import instructions as I
    from isa.errors import REASONS
    from kernels import numeric
    from emulator.schemas import EXECUTORS, ex_compare, ex_numeric
    missing = [(row.mnemonic, dt, prof) for row in I.INSTRUCTIONS
               if EXECUTORS[row.mnemonic] in (ex_numeric, ex_compare)
               for dt in row.dtypes for prof in ("ieee", "ftz")
               if not numeric.supports(row.mnemonic, dt, prof)]
    assert not missing and "UNSUPPORTED_IN_BUILD" not in REASONS


def _rne_sqrt(x: Fraction, f):
    """sqrt(x) rounded to nearest-even for a positive normal x (the result is normal)."""
    from math import isqrt
    mb = f["p"] - 1
    e = (x.numerator.bit_length() - x.denominator.bit_length()) // 2 + 1
    while Fraction(2) ** (2 * e) > x:
        e -= 1
    y = x / Fraction(2) ** (2 * (e - mb))              # sqrt(y) in [2^mb, 2^(mb+1))
    q = isqrt(y.numerator // y.denominator)
    half = (Fraction(2 * q + 1, 2)) ** 2
    if y > half or (y == half and q & 1):
        q += 1
    return round_rne(Fraction(q) * Fraction(2) ** (e - mb), f)


def _positive_normal(f, n):
    bits = finite_sample(f, n) & np.uint64((1 << (f["bits"] - 1)) - 1)
    e = bits >> np.uint64(f["p"] - 1)
    bits[e == 0] |= np.uint64(1 << (f["p"] - 1))
    return bits


@pytest.mark.parametrize("dtype", ["FP16", "FP32", "FP64"])
def test_floating_tdiv_trem_tfma_tsqrt_trecip_are_exact_results_rounded_once(dtype):
    """Each result is the exact rational result rounded once (RNE) -- or the op rejects as
    unsupported in this build without effect."""
    f = FMT[dtype]
    raw = datatype(dtype).raw_dtype
    a = finite_sample(f, 24).reshape(3, 8)
    b = np.roll(finite_sample(f, 24), 5).reshape(3, 8)
    b[b & np.uint64((1 << (f["bits"] - 1)) - 1) == 0] = 0x3C00 if dtype == "FP16" else 1   # no zero divisors
    c = np.roll(finite_sample(f, 24), 11).reshape(3, 8)
    pos = _positive_normal(f, 24).reshape(3, 8)
    m = Machine()
    for t, x in ((1, a), (2, b), (3, c), (4, pos)):
        m.write_tile(0, t, dtype, x.astype(raw))
    D = lambda x: fdecode(x, f)  # noqa: E731
    cases = {
        "TDIV": ([1, 2], lambda i: D(a.flat[i]) / D(b.flat[i])),
        "TREM": ([1, 2], lambda i: D(a.flat[i]) - (D(a.flat[i]) / D(b.flat[i])).__floor__() * D(b.flat[i])),
        "TFMA": ([1, 2, 3], lambda i: D(a.flat[i]) * D(b.flat[i]) + D(c.flat[i])),
        "TRECIP": ([2], lambda i: 1 / D(b.flat[i])),
        "TSQRT": ([4], None),
    }
    for mn, (srcs, exact) in cases.items():
        m.execute(blk(mn, dtype, srcs, 9, vc=8, vr=3))
        got = m.read_tile(0, 9).bits.ravel()
        for i in range(24):
            if mn == "TSQRT":
                want = _rne_sqrt(D(pos.flat[i]), f)
            else:
                x = exact(i)
                if x == 0:          # the sign of an exact zero is the profile's; checked elsewhere
                    continue
                want = round_rne(x, f)
            assert int(got[i]) == want, (mn, i, hex(int(got[i])), hex(want))


def test_tcmp_pes_whose_sources_differ_in_row_each_keep_their_own_row():
    m = Machine()
    m.write_tile(0, 1, "U8", np.arange(8).reshape(2, 4), valid_row=1)
    m.write_tile(1, 1, "U8", np.arange(12).reshape(3, 4), valid_row=1)
    m.execute(blk("TCMP", "U8", [1, 1], 2, mask=0b0011, vc=4, vr=1, PadValueOrByteId=1))
    a, b = m.read_tile(0, 2), m.read_tile(1, 2)
    assert (a.Row, b.Row) == (2, 3) and a.bits.all() and b.bits.all()
    assert (a.capacity, b.capacity) == (1, 2)


SPECIAL = {   # seed-fixed results: (op, input, expected result, required flags), FP32 encodings
    "TEXP": [(0x00000000, 0x3F800000, 0), (0x80000000, 0x3F800000, 0), (0x7F800000, 0x7F800000, 0),
             (0xFF800000, 0x00000000, 0)],
    "TLOG": [(0x3F800000, 0x00000000, 0), (0x00000000, 0xFF800000, 2), (0x80000000, 0xFF800000, 2),
             (0x7F800000, 0x7F800000, 0), (0xBF800000, "nan", 1)],
    "TRECIP": [(0x00000000, 0x7F800000, 2), (0x80000000, 0xFF800000, 2), (0x7F800000, 0x00000000, 0),
               (0xFF800000, 0x80000000, 0)],
    "TSQRT": [(0x00000000, 0x00000000, 0), (0x80000000, 0x80000000, 0), (0x7F800000, 0x7F800000, 0),
              (0xBF800000, "nan", 1), (0x40800000, 0x40000000, 0)],
    "TRSQRT": [(0x00000000, 0x7F800000, 2), (0x80000000, 0xFF800000, 2), (0x7F800000, 0x00000000, 0),
               (0xBF800000, "nan", 1)],
    "TRELU": [(0xBF800000, 0x00000000, 0), (0x80000000, 0x00000000, 0), (0x3F800000, 0x3F800000, 0),
              (0xFF800000, 0x00000000, 0), (0x7F800000, 0x7F800000, 0)],
}


@pytest.mark.parametrize("mn", sorted(SPECIAL))
def test_floating_unary_special_values_the_seed_fixes(mn):
    rows = SPECIAL[mn]
    for x, want, flags in rows:
        m = Machine()
        m.write_tile(0, 1, "FP32", np.array([[x]], np.uint64))
        r = m.execute(blk(mn, "FP32", [1], 2, vc=1))
        got = int(m.read_tile(0, 2).bits[0, 0])
        if want == "nan":
            assert got & 0x7F800000 == 0x7F800000 and got & 0x7FFFFF, (mn, hex(x), hex(got))
        else:
            assert got == want, (mn, hex(x), hex(got))
        assert r.status[0] & flags == flags, (mn, hex(x), r.status)
