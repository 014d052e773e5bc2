"""Property tests: every encodable Block list round-trips through bytes and through text, and no
byte string -- random, bit-flipped, truncated, spliced -- makes the decoder do anything but
return blocks or raise DecodeError.  Whatever decodes re-encodes to the identical bytes (the
canonical encoding is unique) and survives disassemble -> assemble.

The widths below are transcribed from docs/encoding.md, not read from isa.encoding."""
import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isa.assembly import assemble, disassemble
from isa.block import BDatr, BDim, BIor, BIos, Block, BStart, TileBinding
from isa.encoding import decode, encode, iter_blocks
from isa.errors import DecodeError

# No deadlines: a loaded 2-core CI machine must not turn a slow example into a failure.
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ROUND = settings(deadline=None)


def bits(n):
    return st.integers(0, (1 << n) - 1)


def optional(s):
    return st.none() | s


# Mode/Function biased towards the assigned pairs (Mode 0 and 3, small Function) so both the
# mnemonic and the raw M<mode>.F<function> forms are exercised.
modes = st.sampled_from([0, 3]) | bits(8)
functions = st.integers(0, 31) | bits(8)

bindings = st.builds(TileBinding, tile=bits(16), PE_MASK=bits(4), capacity=optional(bits(32)))
blocks = st.builds(
    Block,
    bstart=st.builds(BStart, Mode=modes, Function=functions, DataType=bits(5)),
    iot=st.lists(bindings, max_size=6).map(tuple),
    dim=optional(st.builds(BDim, LB0=optional(bits(16)), LB1=optional(bits(16)), LB2=optional(bits(16)))),
    datr=optional(st.builds(BDatr, PadValueOrByteId=optional(bits(2)), CMode=optional(bits(3)),
                            Sat=optional(bits(1)), Canonicalize=optional(bits(1)),
                            DataType=optional(bits(5)), RMode=optional(bits(3)), Layout=optional(bits(4)))),
    ior=optional(st.builds(BIor, RegSrc0=bits(5), RegSrc1=bits(5), RegSrc2=bits(5), RegDst=bits(5))),
    ios=optional(st.builds(BIos, value=bits(32))),
)
streams = st.lists(blocks, max_size=5)


@ROUND
@given(streams)
def test_blocks_round_trip_through_bytes(bs):
    data = encode(bs)
    assert decode(data) == bs
    assert encode(decode(data)) == data
    # every block's offset is where its BSTART word sits
    for off, blk in iter_blocks(data):
        assert data[off] == 0x01


@ROUND
@given(streams)
def test_blocks_round_trip_through_text(bs):
    text = disassemble(bs)
    assert assemble(text) == encode(bs)
    assert disassemble(assemble(text)) == text


def decodes_canonically_or_raises(data: bytes):
    """The decoder's whole contract on arbitrary input."""
    try:
        bs = decode(data)
    except DecodeError as e:
        assert 0 <= e.offset <= len(data), e
        return None
    assert encode(bs) == data, "a second encoding of the same blocks decoded"
    assert assemble(disassemble(data)) == data
    return bs


def header(blocks, words, version=1, flags=0):
    return b"\x7fTBS" + struct.pack("<HHII", version, flags, blocks, words)



@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes(data):
    decodes_canonically_or_raises(data)


@FUZZ
@given(st.lists(st.integers(0, (1 << 64) - 1) | st.sampled_from([1, 2, 3, 4, 5, 6]).flatmap(
    lambda tag: st.integers(0, (1 << 56) - 1).map(lambda hi: hi << 8 | tag)), max_size=12),
       st.integers(0, 13))
def test_random_words_behind_a_valid_header(words, nblocks):
    # Tags are mostly valid here so the decoder gets past the first word.
    data = header(nblocks, len(words)) + b"".join(w.to_bytes(8, "little") for w in words)
    decodes_canonically_or_raises(data)


def flipped(bs, data, most: int) -> bytes:
    """The stream of blocks `bs` with 1..most of its bits flipped."""
    raw = bytearray(encode(bs))
    for _ in range(data.draw(st.integers(1, most))):
        pos = data.draw(st.integers(0, len(raw) * 8 - 1))
        raw[pos // 8] ^= 1 << (pos % 8)
    return bytes(raw)


@FUZZ
@given(streams.filter(bool), st.data())
def test_bit_flips_of_valid_streams(bs, data):
    decodes_canonically_or_raises(flipped(bs, data, 3))


@FUZZ
@given(streams, st.data())
def test_truncations_of_valid_streams_fail(bs, data):
    raw = encode(bs)
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(DecodeError):
        decode(raw[:cut])


@FUZZ
@given(streams, streams, st.data())
def test_splices_of_valid_streams(a, b, data):
    ra, rb = encode(a), encode(b)
    i = data.draw(st.integers(0, len(ra)))
    j = data.draw(st.integers(0, len(rb)))
    decodes_canonically_or_raises(ra[:i] + rb[j:])
    # splicing whole words (after a patched header) keeps the stream well framed more often
    wa, wb = ra[16:], rb[16:]
    k = data.draw(st.integers(0, len(wa) // 8)) * 8
    m = data.draw(st.integers(0, len(wb) // 8)) * 8
    body = wa[:k] + wb[m:]
    nblocks = sum(1 for w in range(0, len(body), 8) if body[w] == 0x01)
    decodes_canonically_or_raises(header(nblocks, len(body) // 8) + body)


@FUZZ
@given(streams, st.data())
def test_inserted_or_deleted_bytes(bs, data):
    raw = bytearray(encode(bs))
    pos = data.draw(st.integers(0, len(raw)))
    if data.draw(st.booleans()) and pos < len(raw):
        del raw[pos:pos + data.draw(st.integers(1, 9))]
    else:
        raw[pos:pos] = data.draw(st.binary(min_size=1, max_size=9))
    decodes_canonically_or_raises(bytes(raw))


@pytest.mark.parametrize("blocks_,words", [(0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 1), (1, 0xFFFFFFFF),
                                           (0x7FFFFFFF, 2)])
def test_huge_declared_counts_fail_without_allocating(blocks_, words):
    data = header(blocks_, words) + bytes.fromhex("0100000004000000") * 2
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError):
            decode(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024


@pytest.mark.slow
@settings(max_examples=20000, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(streams.filter(bool), st.data())
def test_bit_flips_of_valid_streams_many(bs, data):
    decodes_canonically_or_raises(flipped(bs, data, 4))


@pytest.mark.slow
@settings(max_examples=5000, deadline=None)
@given(st.lists(blocks, max_size=20))
def test_round_trips_many(bs):
    data = encode(bs)
    assert decode(data) == bs and assemble(disassemble(data)) == data


# ---- the assembler's contract on arbitrary text: bytes or AsmError, never anything else

TOKENS = ["BSTART.VEC", "BSTART.SFU", "BSTART.TEPL", "BSTART.", "B.IOT", "B.DIM", "B.DATR", "B.IOR",
          "B.IOS", "TADD", "TDIV", "M0.F14", "M999.F1", "FP16", "S32", "27", "99", ",", "=", "@", "->",
          ":", "t1", "t70000", "r3", "r40", "0b0011", "0x", "0b2", "CAP", "LB0", "LB1", "PAD", "ZERO",
          "CMODE", "LAYOUT", "IMM", "lbl", "#", ";", " ", "\n", "\t", "é", "$"]


def assembles_or_asm_error(text: str):
    from isa.errors import AsmError
    try:
        data = assemble(text)
    except AsmError as e:
        assert e.line >= 1 and e.column >= 1
        return
    assert assemble(disassemble(data)) == data


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=40).map(" ".join))
def test_random_token_soup(text):
    assembles_or_asm_error(text)


@FUZZ
@given(streams.filter(bool), st.data())
def test_mutated_canonical_text(bs, data):
    text = disassemble(bs)
    pos = data.draw(st.integers(0, len(text)))
    if data.draw(st.booleans()):
        text = text[:pos] + text[pos + data.draw(st.integers(1, 6)):]
    else:
        text = text[:pos] + data.draw(st.sampled_from(TOKENS)) + text[pos:]
    assembles_or_asm_error(text)
