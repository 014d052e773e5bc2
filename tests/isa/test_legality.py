"""Stateless legality (isa.legality.resolve): one table row per MUST-reject rule, each with the
seed sentence it checks, and the omitted-vs-explicit defaults of every optional field."""
import pytest

from isa.assembly import assemble_blocks
from isa.block import BDatr, BDim, BIor, Block, BStart, TileBinding
from isa.encoding import decode, encode
from isa.errors import REASONS, IllegalBlockException
from isa.legality import resolve

# (engine, arity) per instruction, transcribed from the seed (see test_tables.SEED).
SHAPE = {"TADD": ("VEC", 2), "TSUB": ("VEC", 2), "TMUL": ("VEC", 2), "TDIV": ("SFU", 2),
         "TREM": ("SFU", 2), "TAND": ("VEC", 2), "TOR": ("VEC", 2), "TXOR": ("VEC", 2),
         "TSHL": ("VEC", 2), "TSHR": ("VEC", 2), "TMAX": ("VEC", 2), "TMIN": ("VEC", 2),
         "TCMP": ("VEC", 2), "TABS": ("VEC", 1), "TNOT": ("VEC", 1), "TNEG": ("VEC", 1),
         "TEXP": ("SFU", 1), "TLOG": ("SFU", 1), "TRECIP": ("SFU", 1), "TSQRT": ("SFU", 1),
         "TRSQRT": ("SFU", 1), "TRELU": ("VEC", 1), "TSEL": ("VEC", 3), "TCVT": ("VEC", 1),
         "TFMA": ("VEC", 3), "TEXTRACT": ("SFU", 1), "TINSERT": ("SFU", 2), "TIMG2COL": ("SFU", 1)}
INTEGER_ONLY = {"TAND", "TOR", "TXOR", "TSHL", "TSHR", "TNOT"}


def legal_text(mn: str, dtype: str | None = None, mask: str = "0b0101", extra: str = "") -> str:
    engine, arity = SHAPE[mn]
    dtype = dtype or ("S32" if mn in INTEGER_ONLY else "FP32")
    srcs = ", ".join(f"t{i}@{mask}" for i in range(1, arity + 1))
    return (f"BSTART.{engine} {mn}, {dtype}\n  B.IOT {srcs} -> t9@{mask} CAP=4096\n"
            f"  B.DIM LB0=8\n{extra}")


def one(text: str) -> Block:
    (block,) = assemble_blocks(text)
    return block


def reject(block: Block) -> IllegalBlockException:
    with pytest.raises(IllegalBlockException) as e:
        resolve(block)
    return e.value


@pytest.mark.parametrize("mn", sorted(SHAPE))
def test_a_minimal_block_of_every_instruction_is_legal(mn):
    r = resolve(one(legal_text(mn)))
    assert r.instr.mnemonic == mn and (r.ValidRow, r.ValidCol, r.Col) == (1, 8, 8)


# ---- one row per MUST-reject rule: (reason, field, block, the seed sentence) --------------

def with_(mn, **changes):
    """The minimal legal block of `mn` with some parts replaced."""
    b = one(legal_text(mn))
    return Block(**{**b.__dict__, **changes})


T = legal_text
CASES = [
    ("UNASSIGNED_OPCODE", "BSTART", one("BSTART.TEPL M0.F5, FP32"),
     "Unassigned carrier Mode/Function pairs are illegal (issue 2)"),
    ("UNASSIGNED_OPCODE", "BSTART", one("BSTART.TEPL M3.F0, FP32"), "Mode 3 assigns Functions 2..4 only"),
    ("ENGINE_SPELLING", "BSTART", Block(BStart(0, 3, 1, spelling="VEC")),
     "Canonical block assembly uses BSTART.SFU TDIV ... BSTART.TEPL remains only the carrier-compatible spelling"),
    ("DATATYPE_RESERVED", "BSTART.DataType", one(T("TCVT", "25")), "Globally reserved DataType codes reject"),
    ("DATATYPE_RESERVED", "B.DATR.DataType", one(T("TCVT", extra="B.DATR DTYPE=31")),
     "Globally reserved DataType codes reject before effects"),
    ("DATATYPE_UNSUPPORTED", "BSTART.DataType", one(T("TADD", "HiF8")),
     "Every other DataType encoding is unsupported by TADD"),
    ("DATATYPE_UNSUPPORTED", "BSTART.DataType", one(T("TAND", "FP32")), "TAND is integer-only"),
    ("DATATYPE_UNSUPPORTED", "BSTART.DataType", one(T("TEXP", "S32")), "TEXP is floating-only"),
    ("DATATYPE_UNSUPPORTED", "BSTART.DataType", one(T("TEXTRACT", "HiF4X2")), "HiF4X2 is supported only by TCVT"),
    ("DATATYPE_UNSUPPORTED", "BSTART.DataType", one(T("TIMG2COL", "FP64")), "This form supports exactly FP32, ..."),
    ("BINDING_COUNT", "B.IOT", with_("TADD", iot=(TileBinding(1, 5), TileBinding(9, 5))),
     "reads two Local source Tiles ... and writes one explicit new Local destination"),
    ("BINDING_COUNT", "B.IOT", with_("TFMA", iot=()), "reads ... three Tiles and writes one destination"),
    ("PE_MASK_MISMATCH", "B.IOT[2].PE_MASK",
     one(T("TADD").replace("t9@0b0101", "t9@0b0001")), "All participating B.IOT bindings MUST carry the same PE_MASK"),
    ("PE_MASK_RANGE", "B.IOT[0].PE_MASK", with_("TABS", iot=(TileBinding(1, 16), TileBinding(9, 16))),
     "PE_MASK is 4 bits (4 PEs)"),
    ("SOURCE_CAPACITY", "B.IOT[0].capacity", one(T("TADD").replace("t1@0b0101", "t1@0b0101 CAP=64")),
     "sources persist; only the new destination is allocated"),
    ("DIM_MISSING", "B.DIM.LB0", with_("TADD", dim=None), "LB0 specifies ValidCol and MUST resolve"),
    ("DIM_MISSING", "B.DIM.LB0", with_("TADD", dim=BDim(LB1=2)), "LB0 ... MUST resolve to a nonzero 16-bit value"),
    ("DIM_ZERO", "B.DIM.LB0", with_("TADD", dim=BDim(LB0=0)), "LB0 ... MUST resolve to a nonzero 16-bit value"),
    ("DIM_ZERO", "B.DIM.LB1", with_("TADD", dim=BDim(LB0=4, LB1=0)), "ValidRow is nonzero"),
    ("DIM_RANGE", "B.DIM.LB0", with_("TADD", dim=BDim(LB0=8, LB2=4)), "ValidCol MUST NOT exceed Col"),
    ("DIM_RANGE", "B.DIM.LB0", with_("TADD", dim=BDim(LB0=1 << 16)), "a nonzero 16-bit value"),
    ("FIELD_NOT_APPLICABLE", "B.DATR.CMode", one(T("TADD", extra="B.DATR CMODE=NE")),
     "TADD does not consume CMode ... any explicit nondefault value in those fields is illegal"),
    ("FIELD_NOT_APPLICABLE", "B.DATR.Sat", one(T("TADD", extra="B.DATR SAT=1")), "... Sat ..."),
    ("FIELD_NOT_APPLICABLE", "B.DATR.Canonicalize", one(T("TADD", extra="B.DATR CANON=1")), "... Canonicalize ..."),
    ("FIELD_NOT_APPLICABLE", "B.DATR.DataType", one(T("TADD", extra="B.DATR DTYPE=FP16")), "... secondary DataType ..."),
    ("FIELD_NOT_APPLICABLE", "B.DATR.RMode", one(T("TADD", extra="B.DATR RMODE=RTZ")), "... RMode ..."),
    ("FIELD_NOT_APPLICABLE", "B.DATR.Layout", one(T("TADD", extra="B.DATR LAYOUT=DN")), "... or Layout"),
    ("FIELD_NOT_APPLICABLE", "B.DATR.CMode", one(T("TCVT", extra="B.DATR CMODE=1")),
     "CMode is not applicable and every explicit nonzero CMode is illegal"),
    ("FIELD_NOT_APPLICABLE", "B.DATR.PadValueOrByteId", one(T("TINSERT", extra="B.DATR PAD=ZERO")),
     "PadValueOrByteId is not applicable because no uncovered region is synthesized"),
    ("FIELD_NOT_APPLICABLE", "B.DATR.PadValueOrByteId", one(T("TIMG2COL", extra="B.DATR PAD=MAX")),
     "it supplies no ... padding override, and every nondefault contribution is illegal"),
    ("FIELD_RESERVED", "B.DATR.CMode", one(T("TCMP", extra="B.DATR CMODE=6")), "encodings 6 and 7 are reserved"),
    ("FIELD_RESERVED", "B.DATR.CMode", one(T("TCMP", extra="B.DATR CMODE=7")), "encodings 6 and 7 are reserved"),
    ("FIELD_RESERVED", "B.DATR.Layout", one(T("TCVT", extra="B.DATR LAYOUT=13")), "Every reserved Layout value rejects"),
    ("FIELD_RESERVED", "B.DATR.Layout", one(T("TINSERT", extra="B.DATR LAYOUT=15")), "reserved values reject"),
    ("FIELD_RESERVED", "B.DATR.Sat", with_("TCVT", datr=BDatr(Sat=2)), "Sat is one bit"),
    ("FIELD_RESERVED", "B.IOR.RegSrc0", with_("TEXTRACT", ior=BIor(RegSrc0=32)), "32 private GPRs"),
    ("CANONICALIZE_LAYOUT", "B.DATR.Layout", one(T("TCVT", extra="B.DATR CANON=1, LAYOUT=NZ")),
     "Canonicalize=1 ... requires Layout=NORM"),
    ("IOR_NOT_ALLOWED", "B.IOR", one(T("TADD", extra="B.IOR RegSrc0=r1")), "B.IOS and B.IOR are illegal for this operation"),
    ("IOR_NONZERO", "B.IOR.RegSrc2", one(T("TEXTRACT", extra="B.IOR RegSrc2=r1")),
     "When B.IOR is present, RegSrc2 and RegDst MUST be zero"),
    ("IOR_NONZERO", "B.IOR.RegDst", one(T("TINSERT", extra="B.IOR RegDst=r7")),
     "When B.IOR is present, RegSrc2 and RegDst MUST be zero"),
    ("IOR_NONZERO", "B.IOR.RegDst", one(T("TIMG2COL", extra="B.IOR RegSrc0=r1, RegDst=r2")),
     "When present, RegSrc2 and RegDst MUST be zero"),
    ("IOS_NOT_ALLOWED", "B.IOS", one(T("TADD", extra="B.IOS IMM=1")), "B.IOS and B.IOR are illegal"),
    ("IOS_NOT_ALLOWED", "B.IOS", one(T("TIMG2COL", extra="B.IOS")), "TIMG2COL ... takes no B.IOS"),
]

# The stateless part of isa.errors.REASONS (the emulator's preflight owns the rest).
STATELESS = ["UNASSIGNED_OPCODE", "ENGINE_SPELLING", "DATATYPE_RESERVED", "DATATYPE_UNSUPPORTED",
             "BINDING_COUNT", "PE_MASK_MISMATCH", "PE_MASK_RANGE", "SOURCE_CAPACITY", "DIM_MISSING",
             "DIM_ZERO", "DIM_RANGE", "FIELD_NOT_APPLICABLE", "FIELD_RESERVED",
             "CANONICALIZE_LAYOUT", "IOR_NOT_ALLOWED", "IOR_NONZERO", "IOS_NOT_ALLOWED"]


def test_every_stateless_reason_has_a_case():
    assert set(STATELESS) <= set(REASONS)
    assert {c[0] for c in CASES} == set(STATELESS)


@pytest.mark.parametrize("reason,field,block,sentence", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_must_reject(reason, field, block, sentence):
    e = reject(block)
    assert (e.reason, e.field) == (reason, field), e


@pytest.mark.parametrize("reason,field,block,sentence", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_stateless_rules_hold_with_pe_mask_zero_too(reason, field, block, sentence):
    # The checks are facts about the encoded block, not PE faults (isa/legality.py docstring).
    iot = tuple(TileBinding(t.tile, 0 if t.PE_MASK < 16 and reason != "PE_MASK_MISMATCH" else t.PE_MASK,
                            t.capacity) for t in block.iot)
    assert reject(Block(**{**block.__dict__, "iot": iot})).reason == reason


def representable(b: Block) -> bool:
    """Fits the field widths of docs/encoding.md."""
    return all(t.PE_MASK < 16 for t in b.iot) \
        and all(v is None or v < 1 << 16 for v in (b.dim.__dict__.values() if b.dim else ())) \
        and (b.datr is None or b.datr.Sat in (None, 0, 1)) \
        and (b.ior is None or max(b.ior.__dict__.values()) < 32)


@pytest.mark.parametrize("reason,field,block,sentence", [c for c in CASES if representable(c[2]) and c[0] != "ENGINE_SPELLING"])  # spelling is not encoded
def test_rejected_blocks_still_encode_and_decode(reason, field, block, sentence):
    # Semantically illegal but well formed: the bytes carry it; legality rejects it later.
    (back,) = decode(encode([block]))
    assert back == block and reject(back).reason == reason


@pytest.mark.parametrize("extra", ["B.DATR CMODE=EQ, SAT=0, CANON=0, RMODE=DEFAULT, LAYOUT=NORM, DTYPE=FP32",
                                   "B.DATR PAD=NULL"])
def test_explicit_default_values_of_unconsumed_fields_are_legal(extra):
    # "any explicit nondefault value in those fields is illegal" -- so explicit defaults are not.
    resolve(one(legal_text("TADD", extra=extra)))


# ---- omitted vs explicit: the defaults resolve() applies -------------------------------------

PAD_ROWS = sorted(set(SHAPE) - {"TINSERT", "TIMG2COL"})


@pytest.mark.parametrize("mn", PAD_ROWS)
def test_padvalue_omitted_is_null_and_explicit_00_is_zero(mn):
    # "Omission resolves to Null. An explicitly present code 00 selects Zero"
    assert resolve(one(legal_text(mn))).PadValue == "NULL"
    got = [resolve(one(legal_text(mn, extra=f"B.DATR PAD={c}"))).PadValue for c in range(4)]
    assert got == ["ZERO", "MAX", "MIN", "NULL"]


@pytest.mark.parametrize("mn", ["TINSERT", "TIMG2COL"])
def test_padvalue_not_applicable_resolves_to_none(mn):
    assert resolve(one(legal_text(mn, dtype="FP32"))).PadValue is None


def test_tcvt_secondary_datatype_omitted_inherits_and_explicit_zero_is_fp64():
    # "when that field is omitted, the destination type inherits the source type. An explicitly
    #  encoded zero selects destination FP64 and never means inheritance."
    assert resolve(one(legal_text("TCVT", "FP16"))).dst_dtype.name == "FP16"
    assert resolve(one(legal_text("TCVT", "FP16", extra="B.DATR DTYPE=0"))).dst_dtype.name == "FP64"


def test_tcmp_cmode_omitted_is_eq():
    # "Omission retains encoded zero and therefore selects EQ."
    assert resolve(one(legal_text("TCMP"))).CMode == "EQ"
    got = [resolve(one(legal_text("TCMP", extra=f"B.DATR CMODE={c}"))).CMode for c in range(6)]
    assert got == ["EQ", "NE", "LT", "GT", "LE", "GE"]


def test_dim_defaults_lb1_is_one_and_lb2_is_validcol():
    # "omitted LB1 gives ValidRow=1, omitted LB2 gives Col=ValidCol"
    base = legal_text("TADD").replace("B.DIM LB0=8", "B.DIM LB0=6")
    assert (lambda r: (r.ValidRow, r.ValidCol, r.Col))(resolve(one(base))) == (1, 6, 6)
    r = resolve(one(base.replace("LB0=6", "LB0=6, LB1=3, LB2=10")))
    assert (r.ValidRow, r.ValidCol, r.Col) == (3, 6, 10)


@pytest.mark.parametrize("src,dst,rmode", [("FP32", "S32", "RTZ"), ("FP16", "U8", "RTZ"), ("FP32", "FP16", "RNE"),
                                           ("S32", "FP16", "RNE"), ("S64", "S8", "RNE")])
def test_tcvt_rmode_zero_or_omitted_is_the_operation_default(src, dst, rmode):
    # "The operation default is RTZ for floating-to-integer conversion and RNE for every other"
    for extra in (f"B.DATR DTYPE={dst}", f"B.DATR DTYPE={dst}, RMODE=0"):
        assert resolve(one(legal_text("TCVT", src, extra=extra))).RMode == rmode
    assert resolve(one(legal_text("TCVT", src, extra=f"B.DATR DTYPE={dst}, RMODE=RTP"))).RMode == "RTP"


@pytest.mark.parametrize("src", ["FP32", "FP16", "S32", "U8", "HiF8"])
def test_tcvt_every_rmode_code_is_legal_for_every_destination(src):
    # "codes two through seven select RTZ, RTM, RTP, RNA, RTO, and RHB respectively" -- for every
    # destination, exact conversions (FP32 -> FP32, S32 -> S32) included
    from isa.datatypes import DATATYPES
    for d in DATATYPES:
        for code, name in ((1, "RNE"), (5, "RNA"), (7, "RHB")):
            r = resolve(one(legal_text("TCVT", src, extra=f"B.DATR DTYPE={d.name}, RMODE={code}")))
            assert (r.dst_dtype.name, r.RMode) == (d.name, name)


def test_tcvt_sat_omitted_or_zero_disables_saturation():
    assert resolve(one(legal_text("TCVT"))).Sat is False
    assert resolve(one(legal_text("TCVT", extra="B.DATR SAT=0"))).Sat is False
    assert resolve(one(legal_text("TCVT", extra="B.DATR SAT=1"))).Sat is True


@pytest.mark.parametrize("mn", ["TEXTRACT", "TINSERT", "TIMG2COL"])
def test_omitted_ior_supplies_zero_offsets(mn):
    # "An omitted B.IOR supplies zero for both offsets."
    assert resolve(one(legal_text(mn, "FP32"))).offset_regs is None
    r = resolve(one(legal_text(mn, "FP32", extra="B.IOR RegSrc0=r3, RegSrc1=r4")))
    assert r.offset_regs == (3, 4)


def test_pe_mask_zero_block_resolves():
    # "PE_MASK=0000 is a strict no-op" -- a legal block with mask zero resolves, the emulator skips it.
    assert resolve(one(legal_text("TADD", mask="0b0000"))).PE_MASK == 0
