"""Block text (docs/assembly.md): spelling, raw forms, canonical output, and AsmError positions."""
import pytest

from isa.assembly import assemble, assemble_blocks, disassemble, parse
from isa.block import BDatr, BDim, BIor, BIos, Block, BStart, TileBinding
from isa.encoding import encode
from isa.errors import AsmError

TADD = """\
BSTART.VEC TADD, FP16
    B.IOT t1@0b0011, t2@0b0011 -> t3@0b0011 CAP=4096
    B.DIM LB0=64, LB1=4
    B.DATR PAD=ZERO
"""
TADD_BLOCK = Block(BStart(0, 0, 4), (TileBinding(1, 3), TileBinding(2, 3), TileBinding(3, 3, 4096)),
                   BDim(LB0=64, LB1=4), BDatr(PadValueOrByteId=0))


def test_the_seed_spelling_assembles_to_the_block():
    assert assemble_blocks(TADD) == [TADD_BLOCK]
    assert assemble(TADD) == encode([TADD_BLOCK])


def test_every_datr_name_from_the_brief():
    (b,) = assemble_blocks("BSTART.VEC TCVT, FP32\n"
                           "B.DATR PAD=ZERO, RMODE=RNE, DTYPE=E4M3, LAYOUT=NZ, CMODE=LT, SAT=1, CANON=0")
    # Decision 069: CMode 2 = LT; Decision 080: RMode 1 = RNE; DataType 7 = E4M3 (TCVT list order).
    assert b.datr == BDatr(PadValueOrByteId=0, CMode=2, Sat=1, Canonicalize=0, DataType=7, RMode=1,
                           Layout=2)


def test_seed_field_names_are_accepted_as_keys():
    a = assemble_blocks("BSTART.VEC TCVT, FP32\nB.DATR PadValueOrByteId=MAX, DataType=FP64, RMode=RTZ")
    b = assemble_blocks("BSTART.VEC TCVT, FP32\nB.DATR PAD=MAX, DTYPE=FP64, RMODE=RTZ")
    assert a == b and a[0].datr == BDatr(PadValueOrByteId=1, DataType=0, RMode=2)


def test_sfu_is_canonical_and_tepl_is_accepted_for_tdiv():
    sfu = assemble("BSTART.SFU TDIV, FP32")
    assert assemble("BSTART.TEPL TDIV, FP32") == sfu
    assert disassemble(sfu).splitlines()[2].startswith("BSTART.SFU TDIV, FP32")


@pytest.mark.parametrize("text,col,canonical", [
    ("BSTART.VEC TDIV, FP32", 8, "BSTART.SFU TDIV"),
    ("BSTART.SFU TADD, FP32", 8, "BSTART.VEC TADD"),
    ("BSTART.VEC TEXTRACT, FP32", 8, "BSTART.SFU TEXTRACT"),
])
def test_wrong_engine_spelling_names_the_canonical_one(text, col, canonical):
    with pytest.raises(AsmError) as e:
        assemble(text)
    assert (e.value.line, e.value.column) == (1, col) and canonical in e.value.reason


def test_raw_forms_for_unassigned_and_reserved_values():
    text = ("BSTART.TEPL M0.F14, 27\n"
            "B.DATR CMODE=6, LAYOUT=13, DTYPE=31, RMODE=7\n"
            "B.IOR RegSrc2=r1, RegDst=r31\nB.IOS IMM=0xFFFFFFFF")
    (b,) = assemble_blocks(text)
    assert b == Block(BStart(0, 14, 27), datr=BDatr(CMode=6, Layout=13, DataType=31, RMode=7),
                      ior=BIor(RegSrc2=1, RegDst=31), ios=BIos(0xFFFFFFFF))
    out = disassemble([b])
    assert "BSTART.TEPL M0.F14, 27" in out and "CMODE=6" in out and "LAYOUT=13" in out
    assert "DTYPE=31" in out and "RMODE=RHB" in out and "RegDst=r31" in out


def test_raw_opcode_of_an_assigned_pair_disassembles_to_its_mnemonic():
    assert assemble("BSTART.TEPL M0.F3, FP32") == assemble("BSTART.SFU TDIV, FP32")
    assert "BSTART.SFU TDIV" in disassemble(assemble("BSTART.SFU M0.F3, FP32"))


def test_unassigned_opcode_must_be_spelled_tepl():
    with pytest.raises(AsmError) as e:
        assemble("BSTART.VEC M0.F5, FP32")
    assert e.value.column == 8 and "BSTART.TEPL" in e.value.reason


def test_comments_labels_blank_lines_and_case():
    text = """
    # a comment line
    ; another
    first: bstart.vec tadd, fp16   # trailing comment
        b.iot t1@3, t2@0b11 -> t3@0x3 cap=4096 ; comment
        b.dim lb0=64, LB1=4
        b.datr pad=zero
    second:
    BSTART.SFU TDIV, FP32
    """
    blocks = parse(text, "x.s")
    assert [(b.name, b.line) for b in blocks] == [("first", 4), ("second", 9)]
    assert blocks[0].block == TADD_BLOCK


def test_iot_with_only_a_destination_and_with_source_capacity():
    (b,) = assemble_blocks("BSTART.VEC TADD, FP16\nB.IOT -> t9@0b1000")
    assert b.iot == (TileBinding(9, 8),)
    (c,) = assemble_blocks("BSTART.VEC TADD, FP16\nB.IOT t1@1 CAP=0, t2@1 -> t3@1")
    assert c.iot[0].capacity == 0
    assert assemble(disassemble([c])) == encode([c])


def test_canonical_text_is_a_fixed_point():
    text = disassemble(assemble(TADD + "BSTART.SFU TREM, S32\n  B.IOT t4@1,t5@1->t6@1\n B.DIM LB0=3"))
    assert disassemble(assemble(text)) == text
    assert text.splitlines()[2:6] == [
        "BSTART.VEC TADD, FP16                   # block 0, byte 16",
        "    B.IOT t1@0b0011, t2@0b0011 -> t3@0b0011 CAP=4096",
        "    B.DIM LB0=64, LB1=4",
        "    B.DATR PAD=ZERO",
    ]


def test_descriptors_in_any_text_order_give_the_canonical_block():
    a = assemble("BSTART.VEC TADD, FP16\nB.DATR PAD=ZERO\nB.DIM LB0=64, LB1=4\n"
                 "B.IOT t1@0b0011, t2@0b0011 -> t3@0b0011 CAP=4096")
    assert a == assemble(TADD)


def test_empty_descriptors_and_empty_text():
    (b,) = assemble_blocks("BSTART.VEC TADD, FP16\nB.DIM\nB.DATR\nB.IOR\nB.IOS")
    assert b == Block(BStart(0, 0, 4), dim=BDim(), datr=BDatr(), ior=BIor(), ios=BIos())
    assert assemble_blocks("") == [] and assemble_blocks("# nothing\n") == []


ERRORS = [
    # text, line, column, phrase in the reason
    ("B.DIM LB0=1", 1, 1, "before any BSTART"),
    ("BSTART.VEC TADD, FP17", 1, 18, "unknown DataType"),
    ("BSTART.VEC TFOO, FP16", 1, 12, "unknown instruction"),
    ("BSTART.XYZ TADD, FP16", 1, 8, "unknown engine spelling"),
    ("BSTART.VEC TADD FP16", 1, 17, "expected ','"),
    ("BSTART.VEC TADD, 32", 1, 18, "5-bit"),
    ("BSTART.TEPL M256.F0, FP16", 1, 13, "8-bit"),
    ("BSTART.VEC TADD, FP16 x", 1, 23, "unexpected 'x'"),
    ("BSTART.VEC TADD, FP16 $", 1, 23, "unexpected character"),
    ("BSTART.VEC TADD, FP16\n  B.DIM LB0=65536", 2, 13, "16-bit"),
    ("BSTART.VEC TADD, FP16\n  B.DIM LB3=1", 2, 9, "expected a B.DIM field"),
    ("BSTART.VEC TADD, FP16\n  B.DIM LB0=1, LB0=2", 2, 16, "given twice"),
    ("BSTART.VEC TADD, FP16\n  B.DIM LB0=0x", 2, 13, "expected an integer"),
    ("BSTART.VEC TADD, FP16\n  B.DIM\n  B.DIM", 3, 3, "given twice"),
    ("BSTART.VEC TADD, FP16\n  B.IOT t1@16 -> t2@1", 2, 12, "4-bit"),
    ("BSTART.VEC TADD, FP16\n  B.IOT t1@1 t2@1 -> t3@1", 2, 14, "expected ',' or '->'"),
    ("BSTART.VEC TADD, FP16\n  B.IOT t1@1, t2@1", 2, 19, "expected ',' or '->'"),
    ("BSTART.VEC TADD, FP16\n  B.IOT t1 -> t2@1", 2, 12, "'@'"),
    ("BSTART.VEC TADD, FP16\n  B.IOT x1@1 -> t2@1", 2, 9, "tile as t<n>"),
    ("BSTART.VEC TADD, FP16\n  B.IOT t65536@1 -> t2@1", 2, 9, "16-bit"),
    ("BSTART.VEC TADD, FP16\n  B.IOT -> t2@1 CAP=4294967296", 2, 21, "32-bit"),
    ("BSTART.VEC TADD, FP16\n  B.DATR PAD=FOO", 2, 14, "unknown PAD"),
    ("BSTART.VEC TADD, FP16\n  B.DATR PAD=4", 2, 14, "2-bit"),
    ("BSTART.VEC TADD, FP16\n  B.DATR SAT=2", 2, 14, "1-bit"),
    ("BSTART.VEC TADD, FP16\n  B.DATR SAT=ON", 2, 14, "expected an integer"),
    ("BSTART.VEC TADD, FP16\n  B.DATR LAYOUT=16", 2, 17, "4-bit"),
    ("BSTART.VEC TADD, FP16\n  B.DATR PAD ZERO", 2, 14, "'='"),
    ("BSTART.VEC TADD, FP16\n  B.IOR RegSrc0=r32", 2, 17, "5-bit"),
    ("BSTART.VEC TADD, FP16\n  B.IOR RegSrc0=x3", 2, 17, "as r<n>"),
    ("BSTART.VEC TADD, FP16\n  B.IOS IMM=4294967296", 2, 13, "32-bit"),
    ("BSTART.VEC TADD, FP16\n  B.FOO", 2, 3, "expected BSTART"),
    ("x:\n", 1, 1, "names no block"),
    ("x:\ny:\nBSTART.VEC TADD, FP16", 2, 1, "no block between"),
    ("x: BSTART.VEC TADD, FP16\nx: BSTART.VEC TADD, FP16", 2, 1, "already names"),
    ("BSTART.VEC TADD, FP16\nx:\nB.DIM LB0=1", 2, 1, "must be followed by a BSTART"),
    ("a.b: BSTART.VEC TADD, FP16", 1, 1, "plain identifier"),
    ("BSTART.VEC TADD, FP16\nB.IOT " + ", ".join(f"t{i}@1" for i in range(255)) + " -> t0@1",
     1, 1, "descriptor words exceed"),
]


@pytest.mark.parametrize("text,line,col,phrase", ERRORS)
def test_asm_errors_point_at_the_offending_token(text, line, col, phrase):
    with pytest.raises(AsmError) as e:
        assemble(text, source="prog.s")
    err = e.value
    assert (err.line, err.column) == (line, col), err
    assert phrase in err.reason, err
    assert str(err).startswith(f"prog.s:{line}:{col}: ")


def test_every_example_in_docs_assembly_md_assembles_legally_and_round_trips():
    import pathlib
    import re

    from isa.legality import resolve
    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "assembly.md").read_text()
    examples = re.findall(r"```asm\n(.*?)```", doc, re.S)
    schemas = set()
    for text in examples:
        data = assemble(text)
        for block in assemble_blocks(text):
            schemas.add(resolve(block).instr.schema)
        assert assemble(disassemble(data)) == data
    from isa.instructions import INSTRUCTIONS
    assert schemas == {row.schema for row in INSTRUCTIONS}      # one example per schema at least


def test_gpr_index_0_spelled_or_omitted_is_one_block_and_disassembles_as_omitted():
    """r0 is the hard-wired zero (docs/assembly.md "GPR index 0"): an unwritten RegSrc0, `r0`
    and `0` are the same field value, decode to it, and canonical text leaves it out."""
    from isa.encoding import decode
    from isa.fields import ZERO_GPR
    from isa.legality import resolve
    head = "BSTART.SFU TEXTRACT, FP32\n    B.IOT t1@0b0001 -> t2@0b0001\n    B.DIM LB0=2\n"
    spellings = ["B.IOR RegSrc1=r4", "B.IOR RegSrc0=r0, RegSrc1=r4",
                 "B.IOR RegSrc0=0, RegSrc1=4, RegSrc2=r0, RegDst=0"]
    blocks = [assemble_blocks(head + "    " + s)[0] for s in spellings]
    assert ZERO_GPR == 0 and all(b == blocks[0] for b in blocks)
    assert blocks[0].ior == BIor(RegSrc0=ZERO_GPR, RegSrc1=4)
    assert decode(encode(blocks)) == blocks[:1] * 3
    assert "B.IOR RegSrc1=r4" in disassemble(encode(blocks[:1])).splitlines()[-1]
    assert resolve(blocks[0]).offset_regs == (ZERO_GPR, 4)
