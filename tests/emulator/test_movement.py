"""Data-movement semantics: TSEL, TEXTRACT, TINSERT, TIMG2COL (Decisions 079, 126-128), PadValue,
aliasing and partial PE masks.  References are built element by element in the tests."""
import numpy as np
import pytest

from emu_helpers import BIor, Machine, blk, everywhere
from emulator import FeatureMap
from emulator.padding import pad_encodings
from isa.datatypes import datatype
from isa.fields import LAYOUTS

rng = np.random.default_rng(7)


def rand(shape, bits=32):
    return rng.integers(0, 1 << bits, size=shape, dtype=np.uint64)


# ---------------------------------------------------------------- TSEL

def test_tsel_mask_bit_i_selects_true_or_false_source_encoding_exactly():
    m = Machine()
    t, f = rand((3, 5)), rand((3, 5))
    mask = rng.integers(0, 2, (3, 5))
    m.write_tile(0, 1, None, mask, kind="predicate")
    m.write_tile(0, 2, "FP32", t)
    m.write_tile(0, 3, "FP32", f)
    m.execute(blk("TSEL", "FP32", [1, 2, 3], 4, vc=5, vr=3))
    v = m.read_tile(0, 4)
    assert np.array_equal(v.bits, np.where(mask == 1, t, f)) and v.defined.all()


def test_tsel_packed_mask_bit_order_lower_index_lower_bit():
    m = Machine()
    mask = np.zeros((2, 8), int)
    mask[0, 0] = mask[1, 7] = 1               # logical 0 -> byte 0 bit 0, logical 15 -> byte 1 bit 7
    v = m.write_tile(0, 1, None, mask, kind="predicate")
    assert v.payload == bytes([0b00000001, 0b10000000])


def test_tsel_data_sources_may_be_identical_and_alias_the_destination():
    m = Machine()
    a = rand((2, 4), 16)
    m.write_tile(0, 1, None, np.ones((2, 4), int), kind="predicate")
    m.write_tile(0, 2, "FP16", a)
    m.execute(blk("TSEL", "FP16", [1, 2, 2], 2, vc=4, vr=2))
    assert np.array_equal(m.read_tile(0, 2).bits, a)


# ---------------------------------------------------------------- PadValue

@pytest.mark.parametrize("pad,idx", [(0, 0), (1, 1), (2, 2)])
@pytest.mark.parametrize("dtype", ["FP32", "FP16", "BF16", "E4M3", "S8", "U16", "S64", "E8M0", "U4X2"])
def test_padvalue_zero_max_min_fill_outside_the_valid_rectangle(dtype, pad, idx):
    m = Machine()
    from isa.datatypes import datatype
    bits = datatype(dtype).container
    src = rand((4, 6), min(bits, 8))
    m.write_tile(0, 1, dtype, src)
    m.execute(blk("TEXTRACT", dtype, [1], 2, vc=3, vr=2, col=6, cap=datatype(dtype).payload_bytes(4 * 6),
                  PadValueOrByteId=pad))
    v = m.read_tile(0, 2)
    assert (v.Row, v.Col) == (4, 6)
    assert np.array_equal(v.bits[:2, :3], src[:2, :3])
    outside = np.ones((4, 6), bool)
    outside[:2, :3] = False
    assert v.defined.all() and (v.bits[outside] == pad_encodings()[dtype][idx]).all()


@pytest.mark.parametrize("pad", [None, 3])
def test_padvalue_omitted_or_null_leaves_padding_undefined(pad):
    m = Machine()
    m.write_tile(0, 1, "FP32", rand((4, 4)))
    m.execute(blk("TEXTRACT", "FP32", [1], 2, vc=2, vr=1, col=4, cap=64, PadValueOrByteId=pad))
    v = m.read_tile(0, 2)
    assert v.defined[:1, :2].all() and v.defined.sum() == 2


def test_padding_table_rule_for_floats():
    # Max = +inf where the format has one, else the largest finite value (docs/machine.md).
    assert pad_encodings()["FP16"] == (0, 0x7C00, 0xFC00)
    assert pad_encodings()["E4M3"] == (0, 0x7E, 0xFE)
    assert pad_encodings()["S8"] == (0, 0x7F, 0x80) and pad_encodings()["U8"] == (0, 0xFF, 0)
    assert pad_encodings()["S4X2"] == (0, 0x7, 0x8)


def test_padding_table_for_every_floating_datatype():
    """docs/machine.md's PadValue table, written out: +-infinity where the format has one, else
    +-largest finite; E8M0 (no sign, no zero) pads Zero and Min with 0x00 = 2^-127."""
    assert {k: v for k, v in pad_encodings().items() if not datatype(k).is_int} == {
        "FP64": (0, 0x7FF0000000000000, 0xFFF0000000000000),
        "FP32": (0, 0x7F800000, 0xFF800000),
        "TF32": (0, 0x7F800000, 0xFF800000),      # 1-8-10 in the high bits of 32
        "HF32": (0, 0x7F800000, 0xFF800000),      # 1-8-11 in the high bits of 32
        "FP16": (0, 0x7C00, 0xFC00),
        "BF16": (0, 0x7F80, 0xFF80),
        "HiF8": (0, 0x6F, 0xEF),                  # HiFloat8 +-infinity
        "E4M3": (0, 0x7E, 0xFE),                  # no infinity: +-448
        "E5M2": (0, 0x7C, 0xFC),
        "E3M2": (0, 0x1F, 0x3F),                  # +-28
        "E2M3": (0, 0x1F, 0x3F),                  # +-7.5
        "E2M1X2": (0, 0x7, 0xF),                  # +-6
        "E1M2X2": (0, 0x7, 0xF),                  # +-1.75
        "HiF4X2": (0, 0x7, 0xF),
        "E8M0": (0x00, 0xFE, 0x00),               # 2^-127 .. 2^127; 0xFF is NaN
    }


# ---------------------------------------------------------------- TEXTRACT

def test_textract_reads_offsets_from_the_selected_pes_private_gprs_low_16_bits():
    m = Machine()
    src = rand((6, 8))
    everywhere(m, 1, "U32", src)
    offsets = {0: (0, 0), 1: (1, 2), 2: (4, 5), 3: (2, 1)}
    for p, (r, c) in offsets.items():
        m.set_gpr(p, 3, (0xABCD << 16) | r)     # bits above 16 are ignored
        m.set_gpr(p, 4, (1 << 40) | c)
    m.execute(blk("TEXTRACT", "U32", [1], 2, mask=0b1111, vc=3, vr=2, ior=BIor(3, 4)))
    for p, (r, c) in offsets.items():
        assert np.array_equal(m.read_tile(p, 2).bits, src[r:r + 2, c:c + 3])


def test_textract_without_ior_uses_offset_zero():
    m = Machine()
    src = rand((3, 3))
    m.write_tile(0, 1, "U32", src)
    m.execute(blk("TEXTRACT", "U32", [1], 2, vc=2, vr=2))
    assert np.array_equal(m.read_tile(0, 2).bits, src[:2, :2])


@pytest.mark.parametrize("dst_layout", sorted(LAYOUTS))
@pytest.mark.parametrize("src_layout", [0, 1, 2, 6, 11])
def test_textract_reads_any_source_layout_and_places_by_the_layout_field(src_layout, dst_layout):
    m = Machine()
    src = rand((20, 18), 16)
    m.write_tile(0, 1, "FP16", src, layout=src_layout)
    m.set_gpr(0, 5, 3)
    m.set_gpr(0, 1, 1)
    m.execute(blk("TEXTRACT", "FP16", [1], 2, vc=17, vr=17, ior=BIor(5, 1), Layout=dst_layout))
    v = m.read_tile(0, 2)
    assert v.Layout == dst_layout and np.array_equal(v.bits, src[3:20, 1:18])
    from isa import layouts
    phys = np.frombuffer(v.payload, "<u2")
    grid = layouts.index_grid(dst_layout, 17, 17, 16)
    assert np.array_equal(phys[grid], src[3:20, 1:18])


def test_textract_heterogeneous_sources_per_pe():
    m = Machine()
    a, b = rand((4, 4), 8), rand((7, 9), 8)
    m.write_tile(0, 1, "S8", a)
    m.write_tile(1, 1, "S8", b, layout=3)
    m.set_gpr(1, 3, 5)
    m.execute(blk("TEXTRACT", "S8", [1], 2, mask=0b0011, vc=2, vr=2, ior=BIor(3, 3)))
    assert np.array_equal(m.read_tile(0, 2).bits, a[:2, :2])
    assert np.array_equal(m.read_tile(1, 2).bits, b[5:7, 5:7])


def test_textract_packed_x2_types():
    m = Machine()
    src = rand((3, 7), 4)
    m.write_tile(0, 1, "E2M1X2", src)
    m.execute(blk("TEXTRACT", "E2M1X2", [1], 2, vc=5, vr=3, col=7, cap=11))
    v = m.read_tile(0, 2)
    assert np.array_equal(v.bits[:, :5], src[:, :5])
    lo = np.frombuffer(v.payload, np.uint8) & 0xF
    assert lo[0] == src[0, 0]          # even logical index in the low nibble


def test_textract_needs_only_the_window_defined():
    m = Machine()
    d = np.ones((4, 4), bool)
    d[3, 3] = False
    m.write_tile(0, 1, "U8", rand((4, 4), 8), defined=d)
    m.execute(blk("TEXTRACT", "U8", [1], 2, vc=3, vr=3))
    assert m.read_tile(0, 2).defined.all()


# ---------------------------------------------------------------- TINSERT

def test_tinsert_copies_old_destination_and_replaces_the_window():
    m = Machine()
    old, ins = rand((5, 6), 16), rand((2, 3), 16)
    od = rng.random((5, 6)) > 0.3
    m.write_tile(0, 1, "BF16", old, defined=od)
    m.write_tile(0, 2, "BF16", ins)
    m.set_gpr(0, 7, 2)
    m.set_gpr(0, 8, 3)
    m.execute(blk("TINSERT", "BF16", [1, 2], 1, vc=6, vr=5, ior=BIor(7, 8)))
    v = m.read_tile(0, 1)
    want, wdef = old.copy(), od.copy()
    want[2:4, 3:6] = ins
    wdef[2:4, 3:6] = True
    assert np.array_equal(v.bits[v.defined], want[wdef]) and np.array_equal(v.defined, wdef)


def test_tinsert_result_layout_and_old_layout_may_differ():
    m = Machine()
    old, ins = rand((16, 16), 8), rand((3, 4), 8)
    m.write_tile(0, 1, "U8", old, layout=2)
    m.write_tile(0, 2, "U8", ins, layout=1)
    m.execute(blk("TINSERT", "U8", [1, 2], 3, vc=16, vr=16, Layout=7))
    v = m.read_tile(0, 3)
    want = old.copy()
    want[:3, :4] = ins
    assert v.Layout == 7 and np.array_equal(v.bits, want)


def test_tinsert_padding_outside_valid_is_preserved_not_synthesised():
    m = Machine()
    old = rand((4, 4), 32)
    m.write_tile(0, 1, "FP32", old, valid_row=2, valid_col=2)
    m.write_tile(0, 2, "FP32", rand((1, 1), 32))
    m.execute(blk("TINSERT", "FP32", [1, 2], 3, vc=2, vr=2, col=4, cap=64))
    v = m.read_tile(0, 3)
    assert np.array_equal(v.bits[2:], old[2:]) and np.array_equal(v.bits[:, 2:], old[:, 2:])


# ---------------------------------------------------------------- TIMG2COL

def _img2col_reference(fm_vals, fm: FeatureMap, pos_m, pos_k, vr, vc):
    oh_n = (fm.H + fm.padTop + fm.padBottom - fm.dilationH * (fm.filterH - 1) - 1) // fm.strideH + 1
    ow_n = (fm.W + fm.padLeft + fm.padRight - fm.dilationW * (fm.filterW - 1) - 1) // fm.strideW + 1
    x = fm_vals.reshape(fm.N, fm.D, fm.C1, fm.H, fm.W, fm.C0)
    out = np.zeros((vr, vc), np.uint64)
    for r in range(vr):
        for c in range(vc):
            m_, k_ = pos_m + r, pos_k + c
            ow, m_ = m_ % ow_n, m_ // ow_n
            oh, m_ = m_ % oh_n, m_ // oh_n
            d, n = m_ % fm.D, m_ // fm.D
            c0, k_ = k_ % fm.C0, k_ // fm.C0
            kc, k_ = k_ % fm.filterW, k_ // fm.filterW
            kr, c1 = k_ % fm.filterH, k_ // fm.filterH
            ih = oh * fm.strideH + kr * fm.dilationH - fm.padTop
            iw = ow * fm.strideW + kc * fm.dilationW - fm.padLeft
            if 0 <= ih < fm.H and 0 <= iw < fm.W and c1 * fm.C0 + c0 < fm.channels:
                out[r, c] = x[n, d, c1, ih, iw, c0]
            else:
                out[r, c] = fm.pad_bits
    return out, oh_n * ow_n * fm.N * fm.D, fm.C1 * fm.filterH * fm.filterW * fm.C0


def write_fmap(m, pe, tile, dtype, fm, vals):
    rows = fm.N * fm.D * fm.C1 * fm.H * fm.W
    return m.write_tile(pe, tile, dtype, vals.reshape(rows, fm.C0), location="Matrix", fmap=fm)


FMAPS = [
    FeatureMap("NC1HWC0", N=1, C1=2, H=5, W=6, C0=4, filterH=3, filterW=2, strideH=1, strideW=2,
               dilationH=1, dilationW=1, padLeft=1, padRight=0, padTop=1, padBottom=1, channels=7, pad_bits=0x3C00),
    FeatureMap("NDC1HWC0", N=2, D=2, C1=1, H=4, W=4, C0=8, filterH=2, filterW=2, strideH=2, strideW=1,
               dilationH=2, dilationW=1, padLeft=0, padRight=1, padTop=2, padBottom=0, channels=8, pad_bits=0x1234),
]


@pytest.mark.parametrize("fm", FMAPS, ids=["NC1HWC0", "NDC1HWC0"])
def test_timg2col_matches_the_decision_128_index_formulas(fm):
    m = Machine()
    vals = rand(fm.N * fm.D * fm.C1 * fm.H * fm.W * fm.C0, 16)
    write_fmap(m, 0, 1, "FP16", fm, vals)
    _, M, K = _img2col_reference(vals, fm, 0, 0, 1, 1)
    vr, vc = min(M, 9), min(K, 10)
    for pos_m, pos_k in [(0, 0), (M - vr, K - vc), (M // 3, 1)]:
        m.set_gpr(0, 1, pos_m)
        m.set_gpr(0, 2, pos_k)
        m.execute(blk("TIMG2COL", "FP16", [1], 2, vc=vc, vr=vr, ior=BIor(1, 2)))
        want, _, _ = _img2col_reference(vals, fm, pos_m, pos_k, vr, vc)
        v = m.read_tile(0, 2)
        assert v.location == "Matrix" and v.Layout == 0
        assert np.array_equal(v.bits, want), (pos_m, pos_k)


def test_timg2col_only_referenced_source_elements_must_be_defined():
    fm = FeatureMap("NC1HWC0", N=1, C1=1, H=4, W=4, C0=2, filterH=1, filterW=1, channels=2)
    m = Machine()
    d = np.ones((16, 2), bool)
    d[15] = False                   # the last pixel is never referenced by rows 0..3
    m.write_tile(0, 1, "S16", rand((16, 2), 16), location="Matrix", fmap=fm, defined=d)
    m.execute(blk("TIMG2COL", "S16", [1], 2, vc=2, vr=4))
    assert m.read_tile(0, 2).defined.all()


def test_timg2col_partial_mask_and_per_pe_descriptors():
    m = Machine()
    fa = FMAPS[0]
    fb = FeatureMap("NC1HWC0", N=1, C1=1, H=3, W=3, C0=16, filterH=1, filterW=1, channels=16)
    va, vb = rand(2 * 5 * 6 * 4, 16), rand(9 * 16, 16)
    write_fmap(m, 1, 1, "FP16", fa, va)
    write_fmap(m, 3, 1, "FP16", fb, vb)
    m.execute(blk("TIMG2COL", "FP16", [1], 2, mask=0b1010, vc=4, vr=3))
    assert np.array_equal(m.read_tile(1, 2).bits, _img2col_reference(va, fa, 0, 0, 3, 4)[0])
    assert np.array_equal(m.read_tile(3, 2).bits, _img2col_reference(vb, fb, 0, 0, 3, 4)[0])
    assert 2 not in m.tiles(0) and 2 not in m.tiles(2)


# ---------------------------------------------------------------- rename, aliasing, masks

def test_destination_is_renamed_and_the_old_tile_released():
    m = Machine()
    m.write_tile(0, 1, "U8", rand((2, 2), 8))
    m.write_tile(0, 2, "FP64", rand((8, 8), 64))
    before = m.used_bytes(0, "Local")
    m.execute(blk("TEXTRACT", "U8", [1], 2, vc=2, vr=2))
    assert m.read_tile(0, 2).dtype == "U8" and m.used_bytes(0, "Local") == before - 512 + 4


def test_source_may_alias_the_destination_read_old_write_new():
    m = Machine()
    src = rand((4, 4), 8)
    m.write_tile(0, 1, "U8", src)
    m.set_gpr(0, 9, 1)
    m.execute(blk("TEXTRACT", "U8", [1], 1, vc=3, vr=3, ior=BIor(9, 9)))
    assert np.array_equal(m.read_tile(0, 1).bits, src[1:, 1:])


def test_partial_mask_leaves_unselected_pes_untouched():
    m = Machine()
    everywhere(m, 1, "U16", rand((2, 2), 16))
    snapshot = {p: m.read_tile(p, 1).payload for p in range(4)}
    m.execute(blk("TEXTRACT", "U16", [1], 1, mask=0b0101, vc=1, vr=1, cap=8))
    assert m.read_tile(0, 1).Row == 4 and m.read_tile(2, 1).Row == 4
    assert m.read_tile(1, 1).payload == snapshot[1] and m.read_tile(3, 1).payload == snapshot[3]


def test_tinsert_insertion_may_alias_the_old_destination_and_observes_old_values():
    # Aliased, the insertion rectangle is the result's whole valid rectangle, so only offset 0
    # fits (offset 1 rejects); the result is the old tile, padding and definedness included.
    m = Machine()
    old = rand((4, 4), 8)
    d = np.ones((4, 4), bool)
    d[3] = False
    m.write_tile(0, 1, "U8", old, valid_row=2, valid_col=2, defined=d)
    m.set_gpr(0, 9, 1)
    from isa.errors import IllegalBlockException
    with pytest.raises(IllegalBlockException, match="OFFSET_RANGE"):
        m.execute(blk("TINSERT", "U8", [1, 1], 1, vc=2, vr=2, col=4, cap=16, ior=BIor(9, 9)))
    m.execute(blk("TINSERT", "U8", [1, 1], 1, vc=2, vr=2, col=4, cap=16))
    v = m.read_tile(0, 1)
    assert np.array_equal(v.bits[:3], old[:3]) and np.array_equal(v.defined, d)


def test_write_tile_refuses_a_capacity_beyond_the_store_before_allocating():
    with pytest.raises(ValueError, match="does not fit"):
        Machine().write_tile(0, 1, "U8", np.zeros((1, 1), np.uint8), capacity=1 << 40)


# ---------------------------------------------------------------- numeric status

def _status_then(m, block):
    """Give PE0 and PE2 different nonzero statuses (FP32 1/3 is inexact, 1/0 divides by zero),
    then run `block` on both: the statuses they had must survive it unchanged."""
    one, three, zero = 0x3F800000, 0x40400000, 0
    for pe, den in ((0, three), (2, zero)):
        m.write_tile(pe, 90, "FP32", np.full((1, 4), one, np.uint64))
        m.write_tile(pe, 91, "FP32", np.full((1, 4), den, np.uint64))
    m.execute(blk("TDIV", "FP32", [90, 91], 92, mask=0b0101))
    before = {0: m.status(0), 2: m.status(2)}
    assert before == {0: 16, 2: 2}                         # NX, DZ
    r = m.execute(block)
    assert r.status == before and {0: m.status(0), 2: m.status(2)} == before
    return m


def test_tsel_performs_no_floating_status_update():
    """Decision 079: selection "performs no numeric conversion, rounding, saturation, NaN
    canonicalization, or floating-status update": each selected PE keeps its status."""
    m = Machine()
    everywhere(m, 1, None, np.ones((1, 4), int), pes=(0, 2), kind="predicate")
    everywhere(m, 2, "FP32", rand((1, 4)), pes=(0, 2))
    _status_then(m, blk("TSEL", "FP32", [1, 2, 2], 3, mask=0b0101))


def test_textract_tinsert_timg2col_copy_encodings_and_keep_the_status():
    """Decisions 126-128 copy source encodings exactly and publish contents, definedness and
    descriptor only -- no numeric status, unlike every evaluating instruction."""
    m = Machine()
    everywhere(m, 1, "FP16", rand((2, 4), 16), pes=(0, 2))
    _status_then(m, blk("TEXTRACT", "FP16", [1], 3, mask=0b0101, vc=2))
    _status_then(m, blk("TINSERT", "FP16", [1, 3], 4, mask=0b0101, vc=4, vr=2))
    fm = FeatureMap("NC1HWC0", N=1, C1=1, H=2, W=2, C0=2, filterH=1, filterW=1, channels=2)
    for pe in (0, 2):
        write_fmap(m, pe, 5, "FP16", fm, rand(8, 16))
    _status_then(m, blk("TIMG2COL", "FP16", [5], 6, mask=0b0101, vc=2, vr=4))


# ---------------------------------------------------------------- GPR index 0

def test_gpr_index_0_is_the_hard_wired_zero():
    """RegSrc2/RegDst "MUST be zero" and an omitted B.IOR "supplies zero": index 0 names no
    register and reads 0 (docs/assembly.md "GPR index 0")."""
    m = Machine()
    with pytest.raises(ValueError, match="hard-wired zero"):
        m.set_gpr(0, 0, 5)
    m.set_gpr(0, 0, 0)                                     # writing zero is harmless
    assert [m.gpr(p, 0) for p in range(4)] == [0, 0, 0, 0]


def test_a_state_file_with_a_nonzero_r0_is_rejected(tmp_path):
    from emulator.stateio import StateFileError
    m = Machine()
    m._pes[2].gprs[0] = 7                  # what a hand-made state file could hold
    m.save(tmp_path / "s.arrow")
    with pytest.raises(StateFileError, match=r"pes\[2\]\.gprs\[0\] = 0x7: r0 is the hard-wired zero"):
        Machine.load(tmp_path / "s.arrow")


def test_an_omitted_regsrc0_reads_offset_zero_like_an_omitted_ior():
    from isa.assembly import assemble_blocks
    m = Machine()
    src = rand((4, 6), 16)
    m.write_tile(0, 1, "FP16", src)
    m.set_gpr(0, 4, 2)
    m._pes[0].gprs[0] = 3             # even a stray stored value (e.g. an old state file) reads 0
    (b,) = assemble_blocks("BSTART.SFU TEXTRACT, FP16\n B.IOT t1@0b0001 -> t2@0b0001\n B.DIM LB0=3, LB1=2\n"
                           " B.IOR RegSrc1=r4")
    m.execute(b)
    assert np.array_equal(m.read_tile(0, 2).bits, src[0:2, 2:5])
