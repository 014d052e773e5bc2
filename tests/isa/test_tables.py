"""The ISA tables against seed 004 (ADR 0080).  Every expectation here is transcribed from the
seed's sentences, never read from isa/instructions.py or isa/datatypes.py."""
import pytest

from isa import fields as F
from isa.block import Block, BStart
from isa.datatypes import BY_CODE, DATATYPES, datatype
from isa.errors import IllegalBlockException
from isa.instructions import BY_MNEMONIC, INSTRUCTIONS, by_carrier
from isa.legality import resolve

# Decision 080: "Every assigned Tile DataType may be a TCVT source or destination: FP64, FP32,
# TF32, HF32, FP16, BF16, HiF8, E4M3, E5M2, E3M2, E2M3, E2M1X2, E1M2X2, E8M0, HiF4X2, S64, S32,
# S16, S8, S4X2, U64, U32, U16, U8, and U4X2."  Codes follow this order; "an explicitly encoded
# zero selects destination FP64".
TCVT_LIST = ("FP64 FP32 TF32 HF32 FP16 BF16 HiF8 E4M3 E5M2 E3M2 E2M3 E2M1X2 E1M2X2 E8M0 HiF4X2 "
             "S64 S32 S16 S8 S4X2 U64 U32 U16 U8 U4X2").split()

# "The TADD DataType set is exactly FP64, FP32, TF32, HF32, FP16, BF16, E4M3, E5M2, S64, S32,
# S16, S8, U64, U32, U16, and U8."  (same sentence for TSUB ... TFMA)
ELEM = set("FP64 FP32 TF32 HF32 FP16 BF16 E4M3 E5M2 S64 S32 S16 S8 U64 U32 U16 U8".split())
# "The exact supported DataType set is S64, S32, S16, S8, U64, U32, U16, and U8." (TAND ...)
INT = set("S64 S32 S16 S8 U64 U32 U16 U8".split())
# "TEXP supports exactly FP64, FP32, TF32, HF32, FP16, BF16, E4M3, and E5M2."
FLT = set("FP64 FP32 TF32 HF32 FP16 BF16 E4M3 E5M2".split())
# Decisions 126/127: "Every assigned Tile DataType except HiF4X2 is supported".
NO_HIF4 = set(TCVT_LIST) - {"HiF4X2"}
# Decision 128: "This form supports exactly FP32, FP16, BF16, S32, S16, S8, U32, U16, and U8".
IMG2COL = set("FP32 FP16 BF16 S32 S16 S8 U32 U16 U8".split())

PAD = {"PadValueOrByteId"}
# mnemonic: (decision, Mode, Function, engine, DataType set, sources, applicable B.DATR fields, B.IOR)
SEED = {
    "TADD": (57, 0, 0, "VEC", ELEM, 2, PAD, False),
    "TSUB": (58, 0, 1, "VEC", ELEM, 2, PAD, False),
    "TMUL": (59, 0, 2, "VEC", ELEM, 2, PAD, False),
    "TDIV": (60, 0, 3, "SFU", ELEM, 2, PAD, False),
    "TREM": (61, 0, 4, "SFU", ELEM, 2, PAD, False),
    "TAND": (62, 0, 6, "VEC", INT, 2, PAD, False),
    "TOR": (63, 0, 7, "VEC", INT, 2, PAD, False),
    "TXOR": (64, 0, 8, "VEC", INT, 2, PAD, False),
    "TSHL": (65, 0, 9, "VEC", INT, 2, PAD, False),
    "TSHR": (66, 0, 10, "VEC", INT, 2, PAD, False),
    "TMAX": (67, 0, 11, "VEC", ELEM, 2, PAD, False),
    "TMIN": (68, 0, 12, "VEC", ELEM, 2, PAD, False),
    # "CMode and PadValueOrByteId are the only applicable B.DATR fields."
    "TCMP": (69, 0, 13, "VEC", ELEM, 2, PAD | {"CMode"}, False),
    "TABS": (70, 0, 15, "VEC", ELEM, 1, PAD, False),
    "TNOT": (71, 0, 16, "VEC", INT, 1, PAD, False),
    "TNEG": (72, 0, 17, "VEC", ELEM, 1, PAD, False),
    "TEXP": (73, 0, 18, "SFU", FLT, 1, PAD, False),
    "TLOG": (74, 0, 19, "SFU", FLT, 1, PAD, False),
    "TRECIP": (75, 0, 20, "SFU", FLT, 1, PAD, False),
    "TSQRT": (76, 0, 21, "SFU", FLT, 1, PAD, False),
    "TRSQRT": (77, 0, 22, "SFU", FLT, 1, PAD, False),
    "TRELU": (78, 0, 23, "VEC", ELEM, 1, PAD, False),
    # "one Local predicate mask Tile and two Local numeric data Tiles"
    "TSEL": (79, 0, 26, "VEC", ELEM, 3, PAD, False),
    # RMode, Sat, Canonicalize, Layout, secondary DataType and PadValue; "CMode is not applicable"
    "TCVT": (80, 0, 27, "VEC", set(TCVT_LIST), 1,
             PAD | {"RMode", "Sat", "Canonicalize", "Layout", "DataType"}, False),
    # "multiplicand-left, multiplicand-right, and addend Tiles"
    "TFMA": (81, 0, 28, "VEC", ELEM, 3, PAD, False),
    # "The selected assigned Layout transformation governs destination placement.
    #  PadValueOrByteId applies to destination physical elements outside its valid rectangle"
    "TEXTRACT": (126, 3, 2, "SFU", NO_HIF4, 1, PAD | {"Layout"}, True),
    # "an old-destination source, an insertion source"; "PadValueOrByteId is not applicable";
    # "An assigned Layout value may select the defined source-to-result layout transformation"
    "TINSERT": (127, 3, 3, "SFU", NO_HIF4, 2, {"Layout"}, True),
    # "B.DATR ... supplies no secondary DataType, layout conversion, numeric mode, or padding
    #  override, and every nondefault contribution is illegal"
    "TIMG2COL": (128, 3, 4, "SFU", IMG2COL, 1, set(), True),
}


def test_the_table_has_one_row_per_instruction_of_the_seed():
    assert len(INSTRUCTIONS) == len(SEED)
    assert set(BY_MNEMONIC) == set(SEED)


@pytest.mark.parametrize("mnemonic", sorted(SEED))
def test_row_matches_the_seed(mnemonic):
    decision, mode, function, engine, dtypes, arity, datr, ior = SEED[mnemonic]
    row = BY_MNEMONIC[mnemonic]
    assert (row.decision, row.mode, row.function, row.engine) == (decision, mode, function, engine)
    assert set(row.dtypes) == dtypes
    assert row.arity == arity
    assert set(row.datr) == datr
    assert row.uses_ior == ior
    assert by_carrier(mode, function) is row
    assert row.canonical_spelling == f"BSTART.{engine} {mnemonic}"


def test_seed_only_details_of_some_rows():
    # TDIV/TREM: "Integer division by zero in any element of the valid denominator rectangle
    # causes Illegal Block Exception"; TCMP writes "a packed one-bit Local predicate Tile";
    # TIMG2COL reads "one Local Matrix-location feature-map Tile".
    assert {m for m, r in BY_MNEMONIC.items() if r.int_zero_check} == {"TDIV", "TREM"}
    assert {m for m, r in BY_MNEMONIC.items() if r.dest_kind == "predicate"} == {"TCMP"}
    assert BY_MNEMONIC["TIMG2COL"].location == "Matrix"


def test_hif4x2_is_supported_only_by_tcvt():
    # Decision 080: "HiF4X2 is supported only by TCVT".
    assert {m for m, r in BY_MNEMONIC.items() if "HiF4X2" in r.dtypes} == {"TCVT"}


def test_datatype_codes_follow_the_tcvt_list_and_the_rest_are_reserved():
    assert [BY_CODE[c].name for c in range(25)] == TCVT_LIST
    assert len(DATATYPES) == 25
    for code in range(25, 32):                      # the rest of the 5-bit field
        with pytest.raises(ValueError):
            datatype(code)
    assert datatype(0).name == "FP64"


def test_every_unassigned_mode_function_pair_is_illegal():
    assigned = {(m, f) for _, m, f, *_ in SEED.values()}
    for mode in range(256):
        for function in range(256):
            if (mode, function) in assigned:
                continue
            with pytest.raises(IllegalBlockException) as e:
                resolve(Block(BStart(mode, function, 1)))
            assert e.value.reason == "UNASSIGNED_OPCODE"


def test_field_code_tables_match_the_seed():
    # Decision 069: "B.DATR.CMode maps 0=EQ, 1=NE, 2=LT, 3=GT, 4=LE, and 5=GE; encodings 6 and 7
    # are reserved."
    assert F.CMODES == {0: "EQ", 1: "NE", 2: "LT", 3: "GT", 4: "LE", 5: "GE"}
    # Decision 058: "explicit 00 selects Zero, 01 selects Max, 10 selects Min, and 11 selects Null"
    assert F.PAD_VALUES == {0: "ZERO", 1: "MAX", 2: "MIN", 3: "NULL"}
    # Decision 080: "code one explicitly selects RNE; codes two through seven select RTZ, RTM,
    # RTP, RNA, RTO, and RHB respectively"; zero is the operation default.
    assert [F.RMODES[c] for c in range(1, 8)] == ["RNE", "RTZ", "RTM", "RTP", "RNA", "RTO", "RHB"]
    # "Layout=NORM ... each of the other twelve assigned Layout codes"
    assert F.LAYOUTS[F.LAYOUT_NORM] == "NORM" and len(F.LAYOUTS) == 13
    assert F.NUM_PES == 4       # "PE_MASK=0000"
