"""TCVT plumbing (typing, RMode/Sat, Layout, Canonicalize of the private CUBE representation,
PadValue in the destination type) and floating-point rules the seed fixes (TABS/TNEG sign bit,
TMAX/TMIN NaN and signed-zero ties, TCMP NaN rules, status = OR of valid-element flags).
References are computed here, independently of kernels.numeric."""
from fractions import Fraction

import numpy as np
import pytest

from emu_helpers import FMT, Machine, blk, fdecode, round_rne
from emulator import preflight
from emulator.padding import pad_encodings
from emulator.semantics import read_valid
from isa import layouts
from isa.errors import IllegalBlockException
from isa.legality import resolve

rng = np.random.default_rng(99)


def s(v, w):
    return v % (1 << w)


# ---------------------------------------------------------------- CUBE snapshot (no numerics)

def test_canonicalize_reads_the_cube_representation_logically():
    m = Machine()
    logical = rng.integers(0, 2**32, (20, 18), dtype=np.uint64)
    v = m.write_tile(0, 1, "FP32", logical, representation="cube")
    assert len(v.payload) == 32 * 32 * 4                          # whole 16 x 16 blocks
    phys = np.frombuffer(v.payload, "<u4")
    r, c = np.meshgrid(np.arange(20), np.arange(18), indexing="ij")
    assert np.array_equal(phys[layouts.cube_index(r, c, 20, 18)], logical)
    rb = resolve(blk("TCVT", "FP32", [1], 2, vc=18, vr=20, Canonicalize=1, DataType=4))
    bits, defined = read_valid(preflight.plan(m, rb, (0,)), 0)
    assert np.array_equal(bits[0], logical) and defined.all()


def test_canonicalize_converts_to_standard_norm():
    m = Machine()
    vals = np.array([[1.5, -2.0, 0.25, 65504.0]] * 3, np.float32)
    m.write_tile(0, 1, "FP32", vals.view(np.uint32), representation="cube")
    m.execute(blk("TCVT", "FP32", [1], 2, vc=4, vr=3, Canonicalize=1, DataType=4))
    v = m.read_tile(0, 2)
    assert v.representation == "standard" and v.Layout == 0 and v.dtype == "FP16"
    assert np.array_equal(v.bits.astype(np.uint16).view(np.float16).astype(np.float32), vals)


# ---------------------------------------------------------------- TCVT typing and rounding

def test_tcvt_integer_narrowing_is_modulo_without_sat_and_clamps_with_sat():
    vals = [0, 127, 128, 255, 256, -1, -128, -129, 2**31 - 1, -2**31, 1000, -1000]
    a = np.array([[s(v, 32) for v in vals]], np.uint64)
    for sat in (None, 0, 1):
        m = Machine()
        m.write_tile(0, 1, "S32", a)
        m.execute(blk("TCVT", "S32", [1], 2, vc=len(vals), DataType=18, Sat=sat))
        got = m.read_tile(0, 2).bits[0].tolist()
        want = [s(max(-128, min(127, v)) if sat else v, 8) for v in vals]
        assert got == want, sat


def test_tcvt_omitted_datatype_inherits_but_explicit_zero_is_fp64():
    m = Machine()
    m.write_tile(0, 1, "S16", np.array([[5, 65535]]))
    m.execute(blk("TCVT", "S16", [1], 2, vc=2))
    assert m.read_tile(0, 2).dtype == "S16" and m.read_tile(0, 2).bits.tolist() == [[5, 65535]]
    m.execute(blk("TCVT", "S16", [1], 3, vc=2, DataType=0))
    v = m.read_tile(0, 3)
    assert v.dtype == "FP64" and [fdecode(x, FMT["FP64"]) for x in v.bits[0]] == [5, -1]


def _fp32(xs):
    return np.array(xs, np.float32).view(np.uint32).astype(np.uint64).reshape(1, -1)


def test_tcvt_float_to_int_default_is_rtz_and_rne_when_asked():
    xs = [2.5, -2.5, 3.5, -0.75, 1e9, 7.999]
    for rmode, fn in ((None, lambda q: int(q)), (1, lambda q: round(q))):   # Python round = ties-even
        m = Machine()
        m.write_tile(0, 1, "FP32", _fp32(xs))
        m.execute(blk("TCVT", "FP32", [1], 2, vc=len(xs), DataType=16, RMode=rmode))
        got = [x - 2**32 if x >= 2**31 else x for x in m.read_tile(0, 2).bits[0].tolist()]
        assert got == [fn(Fraction(float(np.float32(x)))) for x in xs], rmode


def test_tcvt_rhb_is_accepted_for_every_destination_ties_away_where_it_rounds():
    """Decision 080: RMode code 7 selects RHB, for every destination.  docs/numerics.md: ties
    away from zero where the conversion rounds; an exact conversion ignores the mode."""
    xs = [2.5, -2.5, 3.5, -0.75, 1e9, 7.999]
    m = Machine()
    m.write_tile(0, 1, "FP32", _fp32(xs))
    m.execute(blk("TCVT", "FP32", [1], 2, vc=len(xs), DataType=16, RMode=7))      # -> S32
    got = [x - 2**32 if x >= 2**31 else x for x in m.read_tile(0, 2).bits[0].tolist()]
    away = [int(Fraction(float(np.float32(x))) + (Fraction(1, 2) if x > 0 else -Fraction(1, 2))) for x in xs]
    assert got == away == [3, -3, 4, -1, 1000000000, 8]
    r = m.execute(blk("TCVT", "FP32", [1], 3, vc=len(xs), RMode=7))                # FP32 -> FP32
    assert m.read_tile(0, 3).bits.tolist() == _fp32(xs).tolist() and r.status == {0: 0}
    m.write_tile(0, 4, "S32", np.array([[5, 2**32 - 7, 2**31 - 1, 0]], np.uint64))
    r = m.execute(blk("TCVT", "S32", [4], 5, vc=4, RMode=7))                       # S32 -> S32
    assert m.read_tile(0, 5).bits.tolist() == m.read_tile(0, 4).bits.tolist() and r.status == {0: 0}
    m.write_tile(0, 6, "FP32", np.array([[0x3F801000, 0xBF803000]], np.uint64))    # FP16 ties
    m.execute(blk("TCVT", "FP32", [6], 7, vc=2, DataType=4, RMode=7))
    assert m.read_tile(0, 7).bits.tolist() == [[0x3C01, 0xBC02]]


def test_tcvt_fp32_to_fp16_rounds_to_nearest_even_once():
    bits = rng.integers(0x33000000, 0x47800000, 64, dtype=np.uint64)      # FP16 range incl. subnormals
    bits[:4] = [0x3F801000, 0x3F803000, 0x33000000, 0x477FF000]            # ties and the edges
    m = Machine()
    m.write_tile(0, 1, "FP32", bits.reshape(4, 16))
    r = m.execute(blk("TCVT", "FP32", [1], 2, vc=16, vr=4, DataType=4))
    got = m.read_tile(0, 2).bits.ravel()
    want = [round_rne(fdecode(b, FMT["FP32"]), FMT["FP16"]) for b in bits]
    assert got.tolist() == want
    assert r.status[0] & 16                                               # something was inexact


@pytest.mark.parametrize("layout", [1, 2, 7, 12])
def test_tcvt_places_the_destination_by_the_layout_code(layout):
    m = Machine()
    src = rng.integers(0, 256, (20, 40), dtype=np.uint64)
    m.write_tile(0, 1, "U8", src)
    m.execute(blk("TCVT", "U8", [1], 2, vc=40, vr=20, Layout=layout))
    v = m.read_tile(0, 2)
    assert v.Layout == layout and np.array_equal(v.bits, src)
    phys = np.frombuffer(v.payload, np.uint8)
    assert np.array_equal(phys[layouts.index_grid(layout, 20, 40, 8)], src)


def test_tcvt_padding_uses_the_destination_datatype():
    m = Machine()
    m.write_tile(0, 1, "S32", np.ones((2, 4)), valid_col=2)
    m.execute(blk("TCVT", "S32", [1], 2, vc=2, vr=2, col=4, cap=16, DataType=22, PadValueOrByteId=1))
    v = m.read_tile(0, 2)
    assert v.dtype == "U16" and (v.bits[:, 2:] == pad_encodings()["U16"][1]).all() and (v.bits[:, :2] == 1).all()


# ---------------------------------------------------------------- floating rules of the seed

QNAN32, SNAN32 = 0x7FC01234, 0x7F805678


def _binary(mn, dtype, a, b, **kw):
    m = Machine()
    m.write_tile(0, 1, dtype, np.array([a], np.uint64))
    m.write_tile(0, 2, dtype, np.array([b], np.uint64))
    r = m.execute(blk(mn, dtype, [1, 2], 3, vc=len(a), **kw))
    return m.read_tile(0, 3).bits[0].tolist(), r.status[0]


@pytest.mark.parametrize("mn,flip", [("TABS", 0x7FFFFFFF), ("TNEG", 0x80000000)])
def test_tabs_tneg_touch_only_the_sign_bit_even_for_signalling_nans(mn, flip):
    vals = [0x00000000, 0x80000000, 0xFF800000, QNAN32, SNAN32, 0x80000001, 0xC0490FDB]
    m = Machine()
    m.write_tile(0, 1, "FP32", np.array([vals], np.uint64))
    r = m.execute(blk(mn, "FP32", [1], 2, vc=len(vals)))
    got = m.read_tile(0, 2).bits[0].tolist()
    want = [v & flip if mn == "TABS" else v ^ flip for v in vals]
    assert got == want and r.status[0] == 0            # no invalid for the signalling NaN


@pytest.mark.parametrize("mn", ["TMAX", "TMIN"])
def test_tmax_tmin_nan_and_signed_zero_rules(mn):
    one, two = 0x3F800000, 0x40000000
    a = [QNAN32, one, QNAN32, 0x00000000, 0x80000000, 0x80000000, two]
    b = [one, QNAN32, QNAN32, 0x80000000, 0x00000000, 0x80000000, one]
    res = _binary(mn, "FP32", a, b)
    got, _ = res
    assert got[0] == one and got[1] == one                 # one NaN selects the other operand unchanged
    assert got[2] & 0x7F800000 == 0x7F800000 and got[2] & 0x7FFFFF    # two NaNs: a NaN
    tie = 0x00000000 if mn == "TMAX" else 0x80000000       # mixed-sign zero: +0 for max, -0 for min
    assert got[3] == tie and got[4] == tie and got[5] == 0x80000000
    assert got[6] == (two if mn == "TMAX" else one)
    res_rev = _binary(mn, "FP32", b, a)
    assert res_rev[0][:2] == got[:2] and res_rev[0][3:] == [got[4], got[3], got[5], got[6]]   # order-free


def test_tmax_signalling_nan_reports_invalid():
    res = _binary("TMAX", "FP32", [SNAN32], [0x3F800000])
    assert res[1] & 1


@pytest.mark.parametrize("cmode,nan_result", [(0, 0), (1, 1), (2, 0), (3, 0), (4, 0), (5, 0)])
def test_tcmp_with_a_nan_is_false_except_ne(cmode, nan_result):
    res = _binary("TCMP", "FP32", [QNAN32, 0x3F800000, 0x00000000], [0x3F800000, QNAN32, 0x80000000], CMode=cmode)
    got, status = res
    assert got[0] == got[1] == nan_result and status & 1 == 0           # quiet NaN: no invalid
    zero_equal = {0: 1, 1: 0, 2: 0, 3: 0, 4: 1, 5: 1}[cmode]            # +0 and -0 compare equal
    assert got[2] == zero_equal


def test_status_is_the_or_of_valid_element_flags_only():
    # FP32 1/0 in the valid rectangle gives DZ; the padding column holds 0/0 but is not read.
    m = Machine()
    m.write_tile(0, 1, "FP32", np.array([[0x3F800000, 0]]), valid_col=1)
    m.write_tile(0, 2, "FP32", np.array([[0, 0]]), valid_col=1)
    r = m.execute(blk("TDIV", "FP32", [1, 2], 3, vc=1, col=2, cap=8))
    assert r.status == {0: 2} and m.status(0) == 2
    assert m.read_tile(0, 3).bits[0, 0] == 0x7F800000


def test_invalid_source_encoding_rejects_before_effects():
    m = Machine()
    m.write_tile(0, 1, "TF32", np.array([[0x3F800000, 0x3F800001]]))   # TF32: low 13 bits must be 0
    before = m.digest()
    with pytest.raises(IllegalBlockException) as exc:
        m.execute(blk("TADD", "TF32", [1, 1], 2, vc=2))
    assert exc.value.reason == "INVALID_ENCODING" and "[0,1]" in exc.value.message and m.digest() == before
    m.write_tile(0, 3, "TF32", np.array([[0x3F800000, 0x3F800001]]), valid_col=1)
    # outside the valid rectangle the bad encoding is not read
    m.execute(blk("TABS", "TF32", [3], 4, vc=1, col=2, cap=8))
    assert m.read_tile(0, 4).bits[0, 0] == 0x3F800000
    # copies move encodings exactly without interpreting them
    m.execute(blk("TEXTRACT", "TF32", [1], 5, vc=2))
    assert m.read_tile(0, 5).bits.tolist() == [[0x3F800000, 0x3F800001]]


def test_tcvt_to_and_from_packed_x2_types_keeps_one_element_per_nibble():
    m = Machine()
    vals = np.array([[0, 1, 15, 16, 17, 255, 128]], np.uint64)
    m.write_tile(0, 1, "U8", vals)
    m.execute(blk("TCVT", "U8", [1], 2, vc=7, DataType=24))
    v = m.read_tile(0, 2)
    narrowed = [int(x) % 16 for x in vals[0]]                   # modulo the destination width
    assert v.dtype == "U4X2" and v.bits[0].tolist() == narrowed and v.capacity == 4
    assert v.payload == bytes([narrowed[0] | narrowed[1] << 4, narrowed[2] | narrowed[3] << 4,
                               narrowed[4] | narrowed[5] << 4, narrowed[6]])
    m.execute(blk("TCVT", "U4X2", [2], 3, vc=7, DataType=23))
    assert m.read_tile(0, 3).bits[0].tolist() == narrowed


# ---------------------------------------------------------------- TCVT into packed X2 types

# Exactly representable values and their codes, from the formats' definitions (docs/numerics.md):
# E2M1 = {0, 0.5, 1, 1.5, 2, 3, 4, 6}; E1M2 and HiF4 (1-1-2, bias 1, no specials) = k/4 for
# k = 0..3 (subnormal) then 1 + k/4; integers: the nibble is the two's-complement value.
_X2_VALUES = {
    "E2M1X2": ("FP32", [0, 0.5, 1, 1.5, 2, 3, 4, 6]),
    "E1M2X2": ("FP32", [0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75]),
    "HiF4X2": ("FP32", [0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75]),
    "U4X2": ("U8", list(range(16))),
    "S4X2": ("S8", list(range(-8, 8))),
}


def _x2_case(dst, n):
    """(source DataType, source bits (n,), expected destination nibbles (n,))."""
    src, vals = _X2_VALUES[dst]
    idx = rng.integers(0, len(vals), n)
    if src == "FP32":
        signs = rng.integers(0, 2, n)
        v = np.array([vals[i] * (-1.0 if s else 1.0) for i, s in zip(idx, signs)])
        bits = v.astype(np.float32).view(np.uint32).astype(np.uint64)
        return src, bits, idx | (signs << 3)                   # the sign bit is the nibble's top bit
    v = np.array([vals[i] for i in idx])
    return src, (v % 256).astype(np.uint64), v % 16


@pytest.mark.parametrize("dst", list(_X2_VALUES))
@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 1), (5, 1), (7, 1), (3, 3)])
def test_tcvt_into_x2_keeps_the_sources_odd_row(dst, rows, cols):
    """Decision 080: source and destination have equal logical Row, Col, ValidRow, ValidCol;
    capacity need only contain the representation (ceil(Row*Col/2) bytes for X2).  A
    capacity-derived Row would always be even for Col=1."""
    from isa.datatypes import datatype
    src, bits, want = _x2_case(dst, rows * cols)
    need = (rows * cols + 1) // 2
    for cap in (None, need, need + 5):
        m = Machine()
        m.write_tile(0, 1, src, bits.reshape(rows, cols))
        assert m.read_tile(0, 1).Row == rows
        m.execute(blk("TCVT", src, [1], 2, vc=cols, vr=rows, cap=cap, DataType=datatype(dst).code))
        v = m.read_tile(0, 2)
        assert (v.Row, v.Col, v.ValidRow, v.ValidCol, v.capacity) == (rows, cols, rows, cols, need if cap is None else cap)
        assert v.bits.ravel().tolist() == want.tolist() and v.defined.all()
    m.execute(blk("TCVT", dst, [2], 3, vc=cols, vr=rows, DataType=datatype(src).code))   # and back
    assert m.read_tile(0, 3).bits.ravel().tolist() == bits.tolist()


@pytest.mark.parametrize("dst", list(_X2_VALUES))
def test_tcvt_x2_capacity_below_the_representation_rejects(dst):
    from isa.datatypes import datatype
    src, bits, _ = _x2_case(dst, 5)
    m = Machine()
    m.write_tile(0, 1, src, bits.reshape(5, 1))
    before = m.digest()
    with pytest.raises(IllegalBlockException) as e:
        m.execute(blk("TCVT", src, [1], 2, vc=1, vr=5, cap=2, DataType=datatype(dst).code))
    assert e.value.reason == "CAPACITY" and m.digest() == before


def test_odd_row_x2_tile_round_trips_through_a_state_file(tmp_path):
    m = Machine()
    m.write_tile(0, 1, "U8", np.arange(3, dtype=np.uint64).reshape(3, 1))
    m.execute(blk("TCVT", "U8", [1], 2, vc=1, vr=3, DataType=24))
    m.save(tmp_path / "s.arrow")
    m2 = Machine.load(tmp_path / "s.arrow")
    assert m2.digest() == m.digest() and m2.read_tile(0, 2).Row == 3
