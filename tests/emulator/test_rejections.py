"""Every stateful MUST-reject rule, table-driven: the block raises IllegalBlockException with the
rule's reason code and leaves the machine's digest (all tiles, GPRs, status) unchanged."""
from dataclasses import replace

import numpy as np
import pytest

from emu_helpers import BIor, BIos, Machine, blk, everywhere
from emulator import FeatureMap, MachineConfig
from isa.datatypes import datatype
from isa.errors import IllegalBlockException
from isa.instructions import BY_MNEMONIC
from kernels.numeric.flags import NX

FM = FeatureMap("NC1HWC0", N=1, C1=1, H=4, W=4, C0=4, filterH=2, filterW=2, channels=4)


def base() -> Machine:
    """Tiles 1, 2: FP32 2x4; 3: FP32 2x4 NZ layout; 4: predicate 2x4; 5: FP16 2x4; 6: cube FP32;
    7: Matrix feature map (FP16); 8: FP32 4x4 with undefined [3,3]; 9: S32 2x4 divisor with a
    zero outside a 2x2 valid region; on PEs 0 and 1."""
    m = Machine()
    for p in (0, 1):
        m.write_tile(p, 1, "FP32", np.full((2, 4), 0x3F800000))
        m.write_tile(p, 2, "FP32", np.full((2, 4), 0x40000000))
        m.write_tile(p, 3, "FP32", np.zeros((2, 4)), layout=2)
        m.write_tile(p, 4, None, np.ones((2, 4)), kind="predicate")
        m.write_tile(p, 5, "FP16", np.zeros((2, 4)))
        m.write_tile(p, 6, "FP32", np.zeros((2, 4)), representation="cube")
        m.write_tile(p, 7, "FP16", np.zeros((16, 4)), location="Matrix", fmap=FM)
        d = np.ones((4, 4), bool)
        d[3, 3] = False
        m.write_tile(p, 8, "FP32", np.zeros((4, 4)), defined=d)
        div = np.ones((2, 4))
        div[1, 3] = 0
        m.write_tile(p, 9, "S32", div)
        m.write_tile(p, 10, "S32", np.ones((2, 4)))
    m.write_tile(0, 11, "U8", np.zeros((2, 2)))       # only on PE0
    return m


def with_fmap(**kw):
    def setup(m):
        for p in (0, 1):
            m.delete_tile(p, 7)
            fm = replace(FM, **kw)
            rows = fm.N * fm.D * fm.C1 * fm.H * fm.W
            m.write_tile(p, 7, "FP16", np.zeros((max(rows, 1), max(fm.C0, 1))), location="Matrix", fmap=fm)
    return setup


def gprs(**regs):
    def setup(m):
        for p in (0, 1):
            for r, v in regs.items():
                m.set_gpr(p, int(r[1:]), v)
    return setup


M2 = 0b0011
CASES = [
    # (id, setup, block, reason)
    ("source missing", None, blk("TEXTRACT", "FP32", [99], 20, mask=M2), "SOURCE_MISSING"),
    ("source missing on one selected PE", None, blk("TEXTRACT", "U8", [11], 20, mask=M2, vc=2), "SOURCE_MISSING"),
    ("numeric tile as TSEL mask", None, blk("TSEL", "FP32", [1, 1, 2], 20, mask=M2), "SOURCE_KIND"),
    ("predicate tile as data", None, blk("TEXTRACT", "FP32", [4], 20, mask=M2), "SOURCE_KIND"),
    ("Matrix tile read by a Local instruction", None, blk("TEXTRACT", "FP16", [7], 20, mask=M2), "SOURCE_KIND"),
    ("Local tile as TIMG2COL feature map", None, blk("TIMG2COL", "FP32", [1], 20, mask=M2), "SOURCE_KIND"),
    ("private CUBE tile outside TCVT", None, blk("TEXTRACT", "FP32", [6], 20, mask=M2), "REPRESENTATION"),
    ("CUBE source needs Canonicalize=1", None, blk("TCVT", "FP32", [6], 20, mask=M2, vr=2), "REPRESENTATION"),
    ("Canonicalize=1 needs a CUBE source", None,
     blk("TCVT", "FP32", [1], 20, mask=M2, vr=2, Canonicalize=1), "REPRESENTATION"),
    ("source DataType differs", None, blk("TSEL", "FP32", [4, 1, 5], 20, mask=M2, vr=2), "SOURCE_DATATYPE"),
    ("source ValidRow differs from B.DIM", None, blk("TSEL", "FP32", [4, 1, 2], 20, mask=M2, vr=1, cap=32),
     "SHAPE_MISMATCH"),
    ("source Row differs from the capacity-derived rows", None,
     blk("TSEL", "FP32", [4, 1, 2], 20, mask=M2, vr=2, cap=48), "SHAPE_MISMATCH"),
    ("source Col differs", None, blk("TSEL", "FP32", [4, 1, 2], 20, mask=M2, vc=2, vr=2, col=2), "SHAPE_MISMATCH"),
    ("source not row-major", None, blk("TSEL", "FP32", [4, 1, 3], 20, mask=M2, vr=2), "SHAPE_MISMATCH"),
    ("TINSERT old destination geometry differs from B.DIM", None,
     blk("TINSERT", "FP32", [1, 2], 20, mask=M2, vr=1, cap=16), "SHAPE_MISMATCH"),
    ("TCVT source logical shape differs", None, blk("TCVT", "FP32", [1], 20, mask=M2, vr=2, vc=3), "SHAPE_MISMATCH"),
    ("destination capacity below ValidRow rows", None, blk("TEXTRACT", "FP32", [1], 20, mask=M2, vr=2, cap=31),
     "CAPACITY"),
    ("predicate capacity below ceil(Row*Col/8)", None, blk("TCMP", "FP32", [1, 2], 20, mask=M2, vr=2, cap=0),
     "CAPACITY"),
    ("destination does not fit the store", None, blk("TEXTRACT", "FP32", [1], 20, mask=M2, cap=1 << 20),
     "ALLOCATION"),
    ("TSEL data source undefined in the valid rectangle", None,
     blk("TSEL", "FP32", [4, 1, 2], 20, mask=M2, vr=2, **{}), None),
    ("TEXTRACT window reads an undefined element", gprs(r2=2, r1=2),
     blk("TEXTRACT", "FP32", [8], 20, mask=M2, vc=2, vr=2, ior=BIor(2, 1)), "SOURCE_UNDEFINED"),
    ("TINSERT insertion element undefined", None, blk("TINSERT", "FP32", [8, 8], 20, mask=M2, vr=4),
     "SOURCE_UNDEFINED"),
    ("integer zero divisor in the valid rectangle", None,
     blk("TDIV", "S32", [10, 9], 20, mask=M2, vr=2), "INT_DIVIDE_BY_ZERO"),
    ("integer zero divisor for TREM", None, blk("TREM", "S32", [10, 9], 20, mask=M2, vr=2), "INT_DIVIDE_BY_ZERO"),
    ("TEXTRACT row offset + ValidRow beyond source ValidRow", gprs(r2=1),
     blk("TEXTRACT", "FP32", [1], 20, mask=M2, vr=2, ior=BIor(2, 1)), "OFFSET_RANGE"),
    ("TEXTRACT column offset beyond source ValidCol", gprs(r1=0x10001),
     blk("TEXTRACT", "FP32", [1], 20, mask=M2, vc=4, ior=BIor(2, 1)), "OFFSET_RANGE"),
    ("TINSERT window beyond result ValidCol", gprs(r1=1),
     blk("TINSERT", "FP32", [1, 2], 20, mask=M2, vr=2, ior=BIor(2, 1)), "OFFSET_RANGE"),
    ("TIMG2COL posM window beyond N*D*outH*outW", gprs(r2=8),
     blk("TIMG2COL", "FP16", [7], 20, mask=M2, vc=4, vr=2, ior=BIor(2, 1)), "OFFSET_RANGE"),
    ("TIMG2COL posK window beyond C1*fh*fw*C0", gprs(r1=13),
     blk("TIMG2COL", "FP16", [7], 20, mask=M2, vc=4, ior=BIor(2, 1)), "OFFSET_RANGE"),
    ("feature map missing its descriptor",
     lambda m: [m.write_tile(p, 7, "FP16", np.zeros((16, 4)), location="Matrix") for p in (0, 1)],
     blk("TIMG2COL", "FP16", [7], 20, mask=M2), "DESCRIPTOR_INVALID"),
    ("transposed IMG2COL", with_fmap(transposed=True), blk("TIMG2COL", "FP16", [7], 20, mask=M2),
     "DESCRIPTOR_INVALID"),
    ("zero stride", with_fmap(strideW=0), blk("TIMG2COL", "FP16", [7], 20, mask=M2), "DESCRIPTOR_INVALID"),
    ("zero dilation", with_fmap(dilationH=0), blk("TIMG2COL", "FP16", [7], 20, mask=M2), "DESCRIPTOR_INVALID"),
    ("zero filter", with_fmap(filterW=0), blk("TIMG2COL", "FP16", [7], 20, mask=M2), "DESCRIPTOR_INVALID"),
    ("channels above C1*C0", with_fmap(channels=5), blk("TIMG2COL", "FP16", [7], 20, mask=M2),
     "DESCRIPTOR_INVALID"),
    ("negative padding", with_fmap(padTop=-1), blk("TIMG2COL", "FP16", [7], 20, mask=M2), "DESCRIPTOR_INVALID"),
    ("nonpositive output extent", with_fmap(filterH=3, dilationH=2), blk("TIMG2COL", "FP16", [7], 20, mask=M2),
     "DESCRIPTOR_INVALID"),
    ("NC1HWC0 with a D dimension", with_fmap(D=2), blk("TIMG2COL", "FP16", [7], 20, mask=M2),
     "DESCRIPTOR_INVALID"),
    ("descriptor field beyond 31 bits", with_fmap(strideH=1 << 62), blk("TIMG2COL", "FP16", [7], 20, mask=M2),
     "DESCRIPTOR_INVALID"),
    ("padding value wider than the DataType", with_fmap(pad_bits=1 << 16), blk("TIMG2COL", "FP16", [7], 20, mask=M2),
     "DESCRIPTOR_INVALID"),
]
# The TSEL row above has all sources defined: replace it by a genuinely undefined source.
CASES[19] = ("TSEL data source undefined in the valid rectangle",
             lambda m: [m.write_tile(p, 2, "FP32", np.zeros((2, 4)), defined=np.eye(2, 4, dtype=bool) == 0)
                        for p in (0, 1)],
             blk("TSEL", "FP32", [4, 1, 2], 20, mask=M2, vr=2), "SOURCE_UNDEFINED")


@pytest.mark.parametrize("name,setup,block,reason", CASES, ids=[c[0] for c in CASES])
def test_stateful_rule_rejects_before_any_effect(name, setup, block, reason):
    m = base() if "ALLOCATION" != reason else Machine(MachineConfig(local_bytes=4096))
    if reason == "ALLOCATION":
        everywhere(m, 1, "FP32", np.zeros((2, 4)), pes=(0, 1))
    if setup:
        setup(m)
    before = m.digest()
    with pytest.raises(IllegalBlockException) as exc:
        m.execute(block)
    assert exc.value.reason == reason, exc.value
    assert m.digest() == before


def test_allocation_counts_the_old_destination_until_commit():
    m = Machine(MachineConfig(local_bytes=64))
    m.write_tile(0, 1, "FP32", np.zeros((2, 4)))           # 32 bytes
    with pytest.raises(IllegalBlockException) as exc:     # 32 + 48 > 64 although tile 1 is replaced
        m.execute(blk("TEXTRACT", "FP32", [1], 1, vr=2, cap=48))
    assert exc.value.reason == "ALLOCATION"
    m.execute(blk("TEXTRACT", "FP32", [1], 1, vr=2, cap=32))
    assert m.used_bytes(0, "Local") == 32


def test_zero_divisor_outside_the_valid_rectangle_is_not_read():
    # The divisor's zero sits at [1, 3], outside its 2 x 2 valid rectangle: preflight and the
    # snapshot never see it (the division itself is kernels.numeric's, tested in test_numeric_ops).
    m = Machine()
    div = np.ones((2, 4))
    div[1, 3] = 0
    m.write_tile(0, 1, "S32", np.ones((2, 4)), valid_col=2)
    m.write_tile(0, 2, "S32", div, valid_col=2)
    from emulator import preflight
    from emulator.semantics import read_valid
    from isa.legality import resolve
    plan = preflight.plan(m, resolve(blk("TDIV", "S32", [1, 2], 3, vc=2, vr=2, col=4, cap=32)), (0,))
    bits, defined = read_valid(plan, 1)
    assert defined.all() and (bits != 0).all() and bits.shape == (1, 2, 2)


@pytest.mark.parametrize("mask", [0b0001, 0b0010, 0b0011])
def test_a_fault_on_any_selected_pe_rejects_the_whole_block(mask):
    m = base()
    m.delete_tile(1, 1)
    m.write_tile(0, 20, "U8", np.zeros((1, 1)))
    before = m.digest()
    if mask == 0b0001:
        m.execute(blk("TEXTRACT", "FP32", [1], 20, mask=mask))
        assert m.digest() != before
    else:
        with pytest.raises(IllegalBlockException):
            m.execute(blk("TEXTRACT", "FP32", [1], 20, mask=mask))
        assert m.digest() == before


# ---------------------------------------------------------------- PE_MASK = 0000

def test_pe_mask_zero_is_a_strict_noop_even_with_missing_sources():
    m = base()
    before = m.digest()
    for b in [blk("TEXTRACT", "FP32", [99], 20, mask=0), blk("TSEL", "FP32", [1, 1, 1], 20, mask=0),
              blk("TEXTRACT", "FP32", [1], 20, mask=0, cap=1 << 30), blk("TDIV", "S32", [10, 9], 20, mask=0, vr=2)]:
        r = m.execute(b)
        assert r.noop and r.pes == () and r.status == {}
    assert m.digest() == before


def test_pe_mask_zero_still_runs_stateless_legality():
    m = Machine()
    with pytest.raises(IllegalBlockException) as exc:
        m.execute(blk("TEXTRACT", "FP32", [1], 2, mask=0, ios=BIos(1)))
    assert exc.value.reason == "IOS_NOT_ALLOWED"
    with pytest.raises(IllegalBlockException) as exc:
        m.execute(blk("TEXTRACT", "HiF4X2", [1], 2, mask=0))
    assert exc.value.reason == "DATATYPE_UNSUPPORTED"


# Decision 079: TSEL "performs no numeric conversion, rounding, saturation, NaN canonicalization,
# or floating-status update"; TEXTRACT, TINSERT and TIMG2COL copy encodings and commit
# "destination contents, padding definedness, and descriptor" (Decisions 126-128), no status.
# Every other instruction evaluates: "result, numeric status, ...".
SEED_COPIES = {"TSEL", "TEXTRACT", "TINSERT", "TIMG2COL"}
ALL_FLAGS = 0b11111                # NV DZ OF UF NX


def ones_machine() -> Machine:
    """On every PE: 1: FP32 2x4 of 1.0; 2: S32 2x4 of 1; 3: predicate 2x4 of 1 bits; 4: a Matrix
    FP32 feature map of 1.0; every PE's status all five flags."""
    m = Machine()
    for p in range(4):
        m.write_tile(p, 1, "FP32", np.full((2, 4), 0x3F800000))
        m.write_tile(p, 2, "S32", np.ones((2, 4)))
        m.write_tile(p, 3, None, np.ones((2, 4)), kind="predicate")
        m.write_tile(p, 4, "FP32", np.full((16, 4), 0x3F800000), location="Matrix", fmap=FM)
        m.pes[p].status = ALL_FLAGS
    return m


@pytest.mark.parametrize("mnemonic", sorted(BY_MNEMONIC))
def test_every_instruction_executes_and_only_the_seeds_copies_keep_the_status(mnemonic):
    """A block of each instruction, every operand one, on PEs 0 and 2 commits its destination there
    alone.  The seed's four copies leave each PE's status as it was; every instruction that
    evaluates publishes its own flags: none, as every result of ones is exact (TCVT to FP16 too)
    -- except TEXP's, e = 2.718..., inexact."""
    row = BY_MNEMONIC[mnemonic]
    dtype = "FP32" if "FP32" in row.dtypes else "S32"
    src = 1 if dtype == "FP32" else 2
    srcs = {"TSEL": [3, src, src], "TIMG2COL": [4]}.get(mnemonic, [src] * row.arity)
    convert = {"DataType": datatype("FP16").code} if mnemonic == "TCVT" else {}
    m = ones_machine()
    res = m.execute(blk(mnemonic, dtype, srcs, 9, mask=0b0101, vc=4, vr=2, **convert))
    want = ALL_FLAGS if mnemonic in SEED_COPIES else (NX if mnemonic == "TEXP" else 0)
    assert res.pes == (0, 2) and res.status == {0: want, 2: want}
    assert [9 in m.tiles(p) for p in range(4)] == [True, False, True, False]
    assert [m.status(p) for p in range(4)] == [want, ALL_FLAGS, want, ALL_FLAGS]


@pytest.mark.parametrize("omitted,explicit", [
    (dict(), dict(Layout=0)),                       # Layout omitted = NORM
    (dict(cap=None), dict(cap=32)),                 # capacity omitted = ValidRow rows
    (dict(ior=None), dict(ior=BIor(5, 6))),         # B.IOR omitted = offsets 0 (r5 = r6 = 0)
])
def test_omitted_fields_resolve_like_their_explicit_defaults(omitted, explicit):
    results = []
    for kw in (omitted, explicit):
        m = base()
        m.execute(blk("TEXTRACT", "FP32", [1], 20, mask=M2, vr=2, **kw))
        results.append(m.digest())
    assert results[0] == results[1]


def test_explicit_pad_zero_differs_from_omitted_pad():
    a, b = base(), base()
    a.execute(blk("TEXTRACT", "FP32", [1], 20, mask=M2, vc=2, col=4, cap=16))
    b.execute(blk("TEXTRACT", "FP32", [1], 20, mask=M2, vc=2, col=4, cap=16, PadValueOrByteId=0))
    assert a.read_tile(0, 20).defined.sum() == 2 and b.read_tile(0, 20).defined.all()
