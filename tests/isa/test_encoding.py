"""The `.tbs` encoding against docs/encoding.md: golden words derived by hand from the tables
there, omitted-vs-explicit presence bits, and one test per structural decode fault."""
import dataclasses
import struct

import pytest

from isa.block import BDatr, BDim, BIor, BIos, Block, BStart, TileBinding
from isa.encoding import block_words, decode, encode, iter_blocks, roundtrip
from isa.errors import DecodeError, EncodeError


def header(blocks: int, words: int) -> bytes:
    # docs/encoding.md: magic 7F 'T' 'B' 'S', u16 version 1, u16 flags 0, u32 blocks, u32 words
    return bytes([0x7F, 0x54, 0x42, 0x53, 1, 0, 0, 0]) + struct.pack("<II", blocks, words)


def stream(*blocks_of_words) -> bytes:
    words = [w for blk in blocks_of_words for w in blk]
    return header(len(blocks_of_words), len(words)) + b"".join(w.to_bytes(8, "little") for w in words)


def bstart(n, mode, function, dtype):
    # tag 0x01 [7:0], N [15:8], Mode [23:16], Function [31:24], DataType [36:32]
    return 0x01 | n << 8 | mode << 16 | function << 24 | dtype << 32


def iot(tile, mask, capacity=None):
    # tag 0x02, PE_MASK [11:8], capacity-present [12], tile [31:16], capacity [63:32]
    w = 0x02 | mask << 8 | tile << 16
    return w if capacity is None else w | 1 << 12 | capacity << 32


TADD_FP16 = Block(
    BStart(Mode=0, Function=0, DataType=4),
    (TileBinding(1, 0b0011), TileBinding(2, 0b0011), TileBinding(3, 0b0011, 4096)),
    BDim(LB0=64, LB1=4),
    BDatr(PadValueOrByteId=0),
)


def test_golden_tadd_block_matches_the_worked_example():
    expected = (header(1, 6)
                + bytes.fromhex("0105000004000000")       # BSTART N=5 Mode=0 Function=0 FP16
                + bytes.fromhex("0203010000000000")       # t1 @ 0b0011
                + bytes.fromhex("0203020000000000")       # t2 @ 0b0011
                + bytes.fromhex("0213030000100000")       # t3 @ 0b0011, capacity 4096
                + bytes.fromhex("0303400004000000")       # B.DIM LB0=64 LB1=4
                + bytes.fromhex("0401000000000000"))      # B.DATR PadValue present, 00
    assert encode([TADD_FP16]) == expected
    assert decode(expected) == [TADD_FP16]


def test_golden_tcvt_with_every_datr_field():
    # TCVT Mode 0 Function 27, source E4M3 (7); B.DATR all seven fields present.
    blk = Block(BStart(0, 27, 7), (TileBinding(5, 0b1111), TileBinding(6, 0b1111, 256)),
                BDim(LB0=16, LB1=2, LB2=32),
                BDatr(PadValueOrByteId=2, CMode=0, Sat=1, Canonicalize=0, DataType=0, RMode=3, Layout=2))
    datr = (0x04 | 0x7F << 8 | 2 << 16 | 0 << 20 | 1 << 24 | 0 << 28 | 0 << 32 | 3 << 40 | 2 << 44)
    dim = 0x03 | 0b111 << 8 | 16 << 16 | 2 << 32 | 32 << 48
    words = [bstart(4, 0, 27, 7), iot(5, 0xF), iot(6, 0xF, 256), dim, datr]
    assert encode([blk]) == stream(words)
    assert decode(stream(words)) == [blk]


def test_golden_textract_with_ior_and_an_ios_word():
    blk = Block(BStart(3, 2, 16), (TileBinding(7, 1), TileBinding(8, 1)), BDim(LB0=4),
                ior=BIor(RegSrc0=3, RegSrc1=4, RegSrc2=0, RegDst=31), ios=BIos(0xDEADBEEF))
    ior = 0x05 | 3 << 8 | 4 << 16 | 0 << 24 | 31 << 32
    ios = 0x06 | 0xDEADBEEF << 32
    words = [bstart(5, 3, 2, 16), iot(7, 1), iot(8, 1), 0x03 | 1 << 8 | 4 << 16, ior, ios]
    assert encode([blk]) == stream(words)
    assert decode(stream(words)) == [blk]


def test_empty_stream_is_just_the_header():
    assert encode([]) == header(0, 0)
    assert decode(header(0, 0)) == []


def test_iter_blocks_reports_the_byte_offset_of_each_bstart():
    one = Block(BStart(0, 0, 4))
    data = encode([TADD_FP16, one, TADD_FP16])
    assert [off for off, _ in iter_blocks(data)] == [16, 16 + 6 * 8, 16 + 7 * 8]


def test_decoded_block_spells_its_canonical_engine():
    (tdiv,) = decode(encode([Block(BStart(0, 3, 1, spelling="TEPL"))]))
    (unassigned,) = decode(encode([Block(BStart(0, 5, 1))]))
    assert tdiv.bstart.spelling == "SFU" and unassigned.bstart.spelling == "TEPL"


# ---- omitted vs explicitly encoded zero: every optional field, through the bytes

OPTIONAL_FIELDS = [(BDatr, name) for name in
                   ("PadValueOrByteId", "CMode", "Sat", "Canonicalize", "DataType", "RMode", "Layout")]
OPTIONAL_FIELDS += [(BDim, name) for name in ("LB0", "LB1", "LB2")]


@pytest.mark.parametrize("cls,name", OPTIONAL_FIELDS)
def test_omitted_and_explicit_zero_encode_differently_and_survive_decoding(cls, name):
    attr = "datr" if cls is BDatr else "dim"
    omitted = Block(BStart(0, 27, 1), **{attr: cls()})
    explicit = Block(BStart(0, 27, 1), **{attr: cls(**{name: 0})})
    a, b = encode([omitted]), encode([explicit])
    assert a != b
    assert decode(a) == [omitted] and getattr(decode(a)[0], attr) == cls()
    assert getattr(getattr(decode(b)[0], attr), name) == 0


def test_omitted_descriptor_differs_from_an_empty_one():
    blocks = [Block(BStart(0, 0, 4)), Block(BStart(0, 0, 4), dim=BDim()),
              Block(BStart(0, 0, 4), datr=BDatr()), Block(BStart(0, 0, 4), ior=BIor())]
    encoded = [encode([b]) for b in blocks]
    assert len(set(encoded)) == len(blocks)
    assert [decode(e)[0] for e in encoded] == blocks


def test_capacity_omitted_vs_zero():
    a = Block(BStart(0, 0, 4), (TileBinding(1, 1),))
    b = Block(BStart(0, 0, 4), (TileBinding(1, 1, 0),))
    assert encode([a]) != encode([b])
    assert decode(encode([b]))[0].iot[0].capacity == 0


# ---- semantically illegal but well formed: decodes (legality rejects it later)

@pytest.mark.parametrize("blk", [
    Block(BStart(Mode=0, Function=5, DataType=4)),                       # unassigned Function
    Block(BStart(Mode=255, Function=255, DataType=31)),                  # unassigned, reserved DataType
    Block(BStart(0, 0, 25), datr=BDatr(CMode=7, Layout=15, DataType=31)),  # reserved codes
    Block(BStart(3, 2, 1), ior=BIor(RegDst=5, RegSrc2=31)),              # nonzero RegDst/RegSrc2
    Block(BStart(0, 0, 4), ios=BIos(7)),                                 # B.IOS on TADD
    Block(BStart(0, 0, 4), tuple(TileBinding(i, 15, i) for i in range(9))),  # wrong binding count
])
def test_well_formed_illegal_blocks_decode(blk):
    assert decode(encode([blk])) == [blk]


# ---- encode rejects what the format cannot carry

@pytest.mark.parametrize("blk,field", [
    (Block(BStart(256, 0, 4)), "BSTART.Mode"),
    (Block(BStart(0, 0, 32)), "BSTART.DataType"),
    (Block(BStart(0, 0, 4), (TileBinding(1 << 16, 1),)), "B.IOT[0].tile"),
    (Block(BStart(0, 0, 4), (TileBinding(1, 16),)), "B.IOT[0].PE_MASK"),
    (Block(BStart(0, 0, 4), (TileBinding(1, 1, 1 << 32),)), "B.IOT[0].capacity"),
    (Block(BStart(0, 0, 4), dim=BDim(LB0=1 << 16)), "B.DIM.LB0"),
    (Block(BStart(0, 0, 4), datr=BDatr(PadValueOrByteId=4)), "B.DATR.PadValueOrByteId"),
    (Block(BStart(0, 0, 4), datr=BDatr(Sat=2)), "B.DATR.Sat"),
    (Block(BStart(0, 0, 4), ior=BIor(RegSrc0=32)), "B.IOR.RegSrc0"),
    (Block(BStart(0, 0, 4), ior=BIor(RegSrc0=-1)), "B.IOR.RegSrc0"),
    (Block(BStart(0, 0, 4), ios=BIos(1 << 32)), "B.IOS.value"),
    (Block(BStart(0, 0, 4), datr=BDatr(Layout="NZ")), "B.DATR.Layout"),
    (Block(BStart(0, 0, 4), (TileBinding(1, 1),) * 256), "BSTART"),
])
def test_encode_rejects_unrepresentable_blocks(blk, field):
    with pytest.raises(EncodeError) as e:
        encode([Block(BStart(0, 0, 4)), blk])
    assert e.value.index == 1 and e.value.field == field


def test_encode_accepts_the_largest_block():
    blk = Block(BStart(0, 0, 4), (TileBinding(65535, 15, (1 << 32) - 1),) * 251,
                BDim(1, 2, 3), BDatr(1), BIor(), BIos(0))
    assert decode(encode([blk])) == [blk]


def test_a_decoded_block_encodes_to_the_words_it_was_decoded_from():
    # a decoded block keeps its words (isa.memo); a block rebuilt from its fields keeps none
    words = [[bstart(3, 0, 0, 4), iot(1, 0b0011), iot(2, 0b0011), iot(3, 0b0011, 4096)],
             [bstart(2, 0, 27, 7), iot(5, 0xF), iot(6, 0xF, 256)]]
    decoded = decode(stream(*words))
    assert [block_words(b) for b in decoded] == words
    rebuilt = [dataclasses.replace(b) for b in decoded]
    assert [block_words(b) for b in rebuilt] == words and encode(rebuilt) == stream(*words)
    block_words(decoded[0]).append(0)              # a caller's list, not the kept words
    assert block_words(decoded[0]) == words[0]


def test_roundtrip_is_decode_of_encode_without_the_bytes():
    blk = Block(BStart(0, 27, 7, spelling="TEPL"), (TileBinding(5, 0b1111), TileBinding(6, 0b1111, 256)),
                BDim(LB0=16, LB1=2, LB2=32), BDatr(Sat=True, RMode=3))
    got, words = roundtrip(blk)
    assert got == decode(encode([blk]))[0] and got.bstart.spelling == "VEC" and type(got.datr.Sat) is int
    assert stream(words) == encode([blk])
    with pytest.raises(EncodeError) as e:
        roundtrip(Block(BStart(0, 0, 4), dim=BDim(LB0=1 << 16)), 3)
    assert e.value.index == 3 and e.value.field == "B.DIM.LB0"


# ---- structural faults: DecodeError with the documented offset

GOOD = stream([bstart(1, 0, 0, 4), iot(1, 1)], [bstart(0, 0, 1, 4)])


def fault(data: bytes) -> DecodeError:
    with pytest.raises(DecodeError) as e:
        decode(data)
    return e.value


def test_fault_bad_magic():
    assert fault(b"TBS\x00" + GOOD[4:]).offset == 0
    empty = fault(b"")
    assert empty.offset == 0 and "truncated header" in empty.reason
    assert fault(b"\x7fTBX").offset == 0


def test_fault_truncated_header():
    e = fault(GOOD[:10])
    assert e.offset == 10 and "truncated header" in e.reason


def test_fault_version_and_flags():
    assert fault(GOOD[:4] + b"\x02\x00" + GOOD[6:]).offset == 4
    assert fault(GOOD[:6] + b"\x01\x00" + GOOD[8:]).offset == 6


@pytest.mark.parametrize("cut", [1, 7, 8, 9, 23])
def test_fault_truncation_anywhere_in_the_words(cut):
    e = fault(GOOD[:-cut])
    assert e.offset == len(GOOD) - cut and "truncated" in e.reason


def test_fault_trailing_garbage():
    e = fault(GOOD + b"\x00")
    assert e.offset == len(GOOD) and "trailing" in e.reason


def test_fault_huge_declared_counts_fail_before_reading():
    assert fault(header(0xFFFFFFFF, 0)).offset == 8
    e = fault(header(1, 0xFFFFFFFF) + bytes.fromhex("0100000004000000"))
    assert "truncated" in e.reason


def test_fault_block_count_disagrees_with_the_words():
    w = [bstart(0, 0, 0, 4), bstart(0, 0, 0, 4)]
    body = b"".join(x.to_bytes(8, "little") for x in w)
    e = fault(header(1, 2) + body)
    assert e.offset == 24 and "more blocks" in e.reason
    w = [bstart(1, 0, 0, 4), iot(1, 1)]
    e = fault(header(2, 2) + b"".join(x.to_bytes(8, "little") for x in w))
    assert e.offset == 32 and "header declares 2" in e.reason


@pytest.mark.parametrize("tag", [0x00, 0x07, 0x80, 0xFF])
def test_fault_unknown_tag(tag):
    e = fault(stream([bstart(1, 0, 0, 4), tag]))
    assert e.offset == 24 and "unknown word tag" in e.reason


@pytest.mark.parametrize("word", [
    bstart(0, 0, 0, 4) | 1 << 37,                  # BSTART above DataType
    iot(1, 1) | 1 << 13,                           # B.IOT bits 13..15
    0x03 | 1 << 8 | 1 << 16 | 1 << 11,             # B.DIM bits 11..15
    0x04 | 1 << 15,                                # B.DATR bit 15
    0x04 | 1 << 18,                                # B.DATR between PadValue and CMode
    0x05 | 1 << 13,                                # B.IOR above RegSrc0
    0x06 | 1 << 8,                                 # B.IOS below the value
])
def test_fault_reserved_bits(word):
    blk = [word] if word & 0xFF == 1 else [bstart(1, 0, 0, 4), word]
    e = fault(stream(blk))
    assert e.offset == 16 + 8 * (len(blk) - 1) and "reserved bits" in e.reason


@pytest.mark.parametrize("word", [
    iot(1, 1) | 5 << 32,                     # capacity value without its presence bit
    0x03 | 1 << 8 | 1 << 16 | 7 << 32,       # LB1 value, LB1 omitted
    0x04 | 1 << 16,                          # PadValue value, PadValue omitted
])
def test_fault_value_bits_of_an_omitted_field(word):
    e = fault(stream([bstart(1, 0, 0, 4), word]))
    assert e.offset == 24 and "omitted" in e.reason


def test_fault_descriptor_before_bstart():
    e = fault(stream([iot(1, 1)]))
    assert e.offset == 16 and "outside a block" in e.reason


def test_fault_descriptor_after_the_block_ended():
    body = [bstart(1, 0, 0, 4), iot(1, 1), iot(2, 1)]
    data = header(1, 3) + b"".join(x.to_bytes(8, "little") for x in body)
    e = fault(data)
    assert e.offset == 32 and "outside a block" in e.reason


def test_fault_bstart_inside_a_block():
    e = fault(stream([bstart(2, 0, 0, 4), iot(1, 1), bstart(0, 0, 0, 4)]))
    assert e.offset == 32 and "BSTART inside" in e.reason


def test_fault_duplicate_singleton():
    dim = 0x03 | 1 << 8 | 1 << 16
    e = fault(stream([bstart(2, 0, 0, 4), dim, dim]))
    assert e.offset == 32 and "duplicate" in e.reason


@pytest.mark.parametrize("first,second", [
    (0x03, iot(1, 1)),        # B.IOT after B.DIM
    (0x04, 0x03),             # B.DIM after B.DATR
    (0x06, 0x05),             # B.IOR after B.IOS
])
def test_fault_out_of_canonical_order(first, second):
    e = fault(stream([bstart(2, 0, 0, 4), first, second]))
    assert e.offset == 32 and "canonical order" in e.reason


def test_fault_stream_ends_inside_a_block():
    body = [bstart(3, 0, 0, 4), iot(1, 1)]
    e = fault(header(1, 2) + b"".join(x.to_bytes(8, "little") for x in body))
    assert e.offset == 32 and "ends inside" in e.reason


# ---- which block a fault belongs to: DecodeError.block_offset is that block's BSTART offset

def _words(*words) -> bytes:
    return b"".join(w.to_bytes(8, "little") for w in words)


TWO_BLOCKS = [bstart(1, 0, 0, 4), iot(1, 1)]          # block 0 at byte 16, block 1 starts at byte 32


@pytest.mark.parametrize("data,word,block", [
    # a fault inside block 1 (BSTART at 32): the word's offset, and block 1's BSTART
    (stream(TWO_BLOCKS, [bstart(2, 0, 0, 4), iot(1, 1), 0x07]), 48, 32),             # unknown tag
    (stream(TWO_BLOCKS, [bstart(2, 0, 0, 4), iot(1, 1) | 1 << 13, iot(2, 1)]), 40, 32),  # reserved bit
    (stream(TWO_BLOCKS, [bstart(2, 0, 0, 4), 0x04, 0x03]), 48, 32),                  # canonical order
    (stream(TWO_BLOCKS, [bstart(2, 0, 0, 4), iot(1, 1), bstart(0, 0, 0, 4)]), 48, 32),  # BSTART inside
    (header(2, 4) + _words(*TWO_BLOCKS, bstart(3, 0, 0, 4), iot(1, 1)), 48, 32),     # ends inside
    # between blocks: where the next block would start
    (header(1, 3) + _words(*TWO_BLOCKS, iot(2, 1)), 32, 32),                         # word after the end
    (header(1, 3) + _words(*TWO_BLOCKS, bstart(0, 0, 0, 4)), 32, 32),                # an extra BSTART
    (header(2, 2) + _words(*TWO_BLOCKS), 32, 32),                                    # too few blocks
])
def test_a_decode_fault_names_the_word_and_the_block_it_lies_in(data, word, block):
    e = fault(data)
    assert (e.offset, e.block_offset) == (word, block)


def test_a_header_fault_belongs_to_no_block():
    assert fault(GOOD[:4] + b"\x02\x00" + GOOD[6:]).block_offset is None
    assert fault(GOOD[:-1]).block_offset is None


def test_iter_blocks_yields_the_blocks_before_a_fault():
    body = [bstart(0, 0, 0, 4), bstart(0, 0, 1, 4), 0x07]
    data = header(3, 3) + b"".join(x.to_bytes(8, "little") for x in body)
    seen = []
    with pytest.raises(DecodeError) as e:
        for off, blk in iter_blocks(data):
            seen.append(off)
    assert seen == [16, 24] and e.value.offset == 32


def test_decode_accepts_bytearray_and_memoryview():
    assert decode(bytearray(GOOD)) == decode(memoryview(GOOD)) == decode(GOOD)


# ---------------------------------------------------------------- known blocks at once
# iter_blocks takes a block whose words were decoded before (isa.encoding._DECODED) at once,
# without going word by word.  What it yields, or the DecodeError it raises (offset, reason,
# owning block), must be exactly what word by word gives: with nothing known, with every block
# known, and with the words handed over in chunks of any size (a block spanning two).

def _outcome(data):
    got = []
    try:
        for off, blk in iter_blocks(data):
            got.append((off, blk))
    except DecodeError as exc:
        return got, (exc.offset, exc.reason, exc.block_offset)
    return got, None


def _streams():
    import random
    rng = random.Random(32)
    known = [block_words(TADD_FP16, 0), block_words(dataclasses.replace(TADD_FP16, datr=None), 0),
             [bstart(0, 0, 0, 4)]]
    out = []
    for _ in range(60):
        blocks = [list(rng.choice(known)) for _ in range(rng.randrange(1, 6))]
        words = [w for b in blocks for w in b]
        declared = len(blocks) + rng.choice((0, 0, 0, -1, 1))
        cut = rng.random()
        if cut < 0.2 and words:           # a word changed: another valid word, or a malformed one
            k = rng.randrange(len(words))
            words[k] = rng.choice((iot(5, 0b1111), bstart(2, 0, 0, 4), words[k] ^ (1 << rng.randrange(64)),
                                   0x03 | 7 << 8))
        elif cut < 0.35 and words:        # words missing at the end (the header says so)
            del words[rng.randrange(len(words)):]
        elif cut < 0.45:                  # a word between blocks
            words.insert(rng.randrange(len(words) + 1), iot(1, 0b0001))
        out.append(header(max(0, declared), len(words)) + b"".join(w.to_bytes(8, "little") for w in words))
    return out


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 1 << 16])
def test_known_blocks_decode_exactly_as_word_by_word(monkeypatch, chunk):
    import isa.encoding as E
    monkeypatch.setattr(E, "_CHUNK_WORDS", chunk)
    for data in _streams():
        monkeypatch.setattr(E, "_DECODED", {})
        monkeypatch.setattr(E, "DECODED_LIMIT", 0)        # nothing known: word by word throughout
        slow_blocks, slow_err = _outcome(data)
        monkeypatch.setattr(E, "DECODED_LIMIT", 4096)
        _outcome(data)                                    # every valid block of the stream now known
        _outcome(data[:16] + data[16:])
        fast_blocks, fast_err = _outcome(data)
        assert fast_err == slow_err
        assert [(o, b) for o, b in fast_blocks] == [(o, b) for o, b in slow_blocks]
