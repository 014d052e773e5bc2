"""The `.tbs` binary block stream: a 16-byte header, then little-endian 64-bit words.

The layout is specified in docs/encoding.md; this module reads it off one table (`WORDS`), so a
field's position lives in exactly one row.  Every block is a BSTART word that declares how many
descriptor words follow it, then those words in the canonical order
BSTART, B.IOT..., B.DIM, B.DATR, B.IOR, B.IOS.  An optional field has a presence bit, so
"omitted" (None) and "explicitly encoded zero" stay distinct.  The encoding of a block is
unique: absent values and reserved bits are zero, descriptors come in canonical order, counts
are derived.  The decoder rejects everything else, so `encode(decode(b)) == b` for every byte
string `b` that decodes.

Decoding is structural only: semantically illegal blocks (unassigned Mode/Function, reserved
DataType codes, nonzero RegDst, ...) decode, and `isa.legality.resolve` rejects them later.
Any byte string either decodes or raises DecodeError(offset, reason); counts are checked
against the bytes actually present before anything is allocated.
"""
from __future__ import annotations

import operator
import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Iterator

import numpy as np

from . import fields as F
from .block import BDatr, BDim, BIor, BIos, Block, BStart, TileBinding
from .datatypes import DATATYPE_FIELD_BITS
from .errors import DecodeError, EncodeError
from .instructions import by_carrier
from .memo import MEMO, memo

MAGIC = b"\x7fTBS"
VERSION = 1
HEADER = struct.Struct("<4sHHII")      # magic, version, flags, block_count, word_count
HEADER_BYTES = HEADER.size             # 16
WORD_BYTES = 8
TAG_BITS = 8
COUNT_LSB, COUNT_BITS = 8, 8           # BSTART: number of descriptor words that follow
MAX_DESCRIPTORS = (1 << COUNT_BITS) - 1
PAD_FIELD_BITS = max(F.PAD_VALUES).bit_length()
MODE_BITS = FUNCTION_BITS = 8
TILE_BITS = 16
CAPACITY_BITS = 32
LB_BITS = 16
IOS_BITS = 32
_CHUNK_WORDS = 1 << 16                 # words converted to Python ints at a time
# A decoded block keeps the words it was decoded from (isa.memo rule 1): the decoder accepts only
# canonical encodings (encode(decode(b)) == b), so they are its block_words, and encoding it again
# (disassemble's offsets, a stream's next byte offset) reads them back.
WORDS_MEMO = "words"


@dataclass(frozen=True)
class Field:
    """One field of a word: bits [lsb, lsb+width); `present` is the bit that marks an optional
    field as encoded (None when the field is mandatory)."""
    name: str
    lsb: int
    width: int
    present: int | None = None


@dataclass(frozen=True)
class WordSpec:
    tag: int
    name: str           # seed spelling of the descriptor
    cls: type
    attr: str           # Block attribute the descriptor fills
    rank: int           # canonical position inside a block
    repeatable: bool
    fields: tuple[Field, ...]

    @property
    def used_mask(self) -> int:
        m = (1 << TAG_BITS) - 1
        if self.tag == TAG_BSTART:
            m |= ((1 << COUNT_BITS) - 1) << COUNT_LSB
        for f in self.fields:
            m |= ((1 << f.width) - 1) << f.lsb
            if f.present is not None:
                m |= 1 << f.present
        return m


TAG_BSTART, TAG_IOT, TAG_DIM, TAG_DATR, TAG_IOR, TAG_IOS = 0x01, 0x02, 0x03, 0x04, 0x05, 0x06

# B.DATR: presence bits 8..14 in seed field order, values on nibble boundaries (hexdump-readable).
_DATR_LAYOUT = {"PadValueOrByteId": (16, PAD_FIELD_BITS), "CMode": (20, F.CMODE_FIELD_BITS),
                "Sat": (24, 1), "Canonicalize": (28, 1), "DataType": (32, DATATYPE_FIELD_BITS),
                "RMode": (40, F.RMODE_FIELD_BITS), "Layout": (44, F.LAYOUT_FIELD_BITS)}

WORDS: tuple[WordSpec, ...] = (
    WordSpec(TAG_BSTART, "BSTART", BStart, "bstart", 0, False, (
        Field("Mode", 16, MODE_BITS), Field("Function", 24, FUNCTION_BITS),
        Field("DataType", 32, DATATYPE_FIELD_BITS))),
    WordSpec(TAG_IOT, "B.IOT", TileBinding, "iot", 1, True, (
        Field("PE_MASK", 8, F.PE_MASK_BITS), Field("tile", 16, TILE_BITS),
        Field("capacity", 32, CAPACITY_BITS, present=12))),
    WordSpec(TAG_DIM, "B.DIM", BDim, "dim", 2, False, (
        Field("LB0", 16, LB_BITS, present=8), Field("LB1", 32, LB_BITS, present=9),
        Field("LB2", 48, LB_BITS, present=10))),
    WordSpec(TAG_DATR, "B.DATR", BDatr, "datr", 3, False, tuple(
        Field(name, *_DATR_LAYOUT[name], present=8 + i) for i, name in enumerate(F.DATR_FIELDS))),
    WordSpec(TAG_IOR, "B.IOR", BIor, "ior", 4, False, tuple(
        Field(name, 8 * (i + 1), F.GPR_INDEX_BITS)
        for i, name in enumerate(("RegSrc0", "RegSrc1", "RegSrc2", "RegDst")))),
    WordSpec(TAG_IOS, "B.IOS", BIos, "ios", 5, False, (Field("value", 32, IOS_BITS),)),
)
BY_TAG: dict[int, WordSpec] = {w.tag: w for w in WORDS}
DESCRIPTORS: tuple[WordSpec, ...] = WORDS[1:]
_WORD_MASK = (1 << 64) - 1
_CANONICAL_ORDER = ", ".join(w.name + ("..." if w.repeatable else "") for w in WORDS)


# ---------------------------------------------------------------------------------- encoding

def _int(value, index: int, where: str) -> int:
    if isinstance(value, bool):
        return int(value)
    try:
        return operator.index(value)
    except TypeError:
        raise EncodeError(index, where, f"{value!r} is not an integer") from None


# Per tag: ((field, attribute, lsb, 1 << width, presence bit or -1), ...) -- WORDS read once, for _pack.
_PACK = {w.tag: tuple((f, f.name, f.lsb, 1 << f.width, -1 if f.present is None else f.present) for f in w.fields)
         for w in WORDS}


def _pack(spec: WordSpec, obj, index: int, where: str) -> int:
    word = spec.tag
    for f, name, lsb, limit, present in _PACK[spec.tag]:
        value = getattr(obj, name)
        if value is None:
            if present < 0:
                raise EncodeError(index, f"{where}.{name}", "is mandatory and cannot be omitted")
            continue
        if type(value) is not int:              # bool, NumPy and other integers: operator.index
            value = _int(value, index, f"{where}.{name}")
        if not 0 <= value < limit:
            raise EncodeError(index, f"{where}.{name}", f"{value} does not fit its {f.width}-bit field")
        word |= value << lsb
        if present >= 0:
            word |= 1 << present
    return word


def block_words(block: Block, index: int = 0) -> list[int]:
    """The canonical words of one block (BSTART first), as unsigned 64-bit integers."""
    if not isinstance(block, Block):
        raise EncodeError(index, "Block", f"expected isa.block.Block, got {type(block).__name__}")
    kept = block.__dict__.get(MEMO)
    if kept is not None and WORDS_MEMO in kept:           # a decoded block: the words it came from
        return list(kept[WORDS_MEMO])
    words = []
    for spec in DESCRIPTORS:
        value = getattr(block, spec.attr)
        items = tuple(value) if spec.repeatable else (() if value is None else (value,))
        for k, item in enumerate(items):
            where = f"{spec.name}[{k}]" if spec.repeatable else spec.name
            if not isinstance(item, spec.cls):
                raise EncodeError(index, where, f"expected {spec.cls.__name__}, got {type(item).__name__}")
            words.append(_pack(spec, item, index, where))
    if len(words) > MAX_DESCRIPTORS:
        raise EncodeError(index, "BSTART", f"{len(words)} descriptor words exceed the {COUNT_BITS}-bit count "
                          f"(at most {MAX_DESCRIPTORS})")
    if not isinstance(block.bstart, BStart):
        raise EncodeError(index, "BSTART", f"expected BStart, got {type(block.bstart).__name__}")
    head = _pack(WORDS[0], block.bstart, index, "BSTART") | (len(words) << COUNT_LSB)
    return [head, *words]


def encode(blocks: Iterable[Block]) -> bytes:
    """The canonical `.tbs` stream of `blocks`; EncodeError names a block field that does not fit."""
    return stream_of_words([block_words(block, i) for i, block in enumerate(blocks)])


def stream_of_words(words: list[list[int]]) -> bytes:
    """The canonical `.tbs` stream whose blocks packed to `words` (one block_words list each):
    the header and the packing, for a caller that already holds the words."""
    flat = [x for w in words for x in w]
    if len(flat) >= 1 << 32:
        raise EncodeError(len(words) - 1, "stream", "more than 2**32-1 words")
    return HEADER.pack(MAGIC, VERSION, 0, len(words), len(flat)) + np.array(flat, dtype="<u8").tobytes()


# ---------------------------------------------------------------------------------- decoding

def _fail(offset: int, reason: str, block_offset: int | None = None):
    raise DecodeError(offset, reason, block_offset)


def _header(data: memoryview) -> tuple[int, int]:
    """Validate the header and the stream length against it; returns (block_count, word_count)."""
    n = len(data)
    if bytes(data[:min(n, len(MAGIC))]) != MAGIC[:min(n, len(MAGIC))]:
        _fail(0, f"bad magic {bytes(data[:len(MAGIC)])!r}: a .tbs stream starts with {MAGIC!r}")
    if n < HEADER_BYTES:
        _fail(n, f"truncated header: {n} of {HEADER_BYTES} bytes present")
    _, version, flags, blocks, nwords = HEADER.unpack_from(data)
    if version != VERSION:
        _fail(4, f"unsupported format version {version} (this decoder reads version {VERSION})")
    if flags:
        _fail(6, f"reserved header flags {flags:#06x} are set")
    end = HEADER_BYTES + WORD_BYTES * nwords
    if n < end:
        _fail(n, f"stream truncated: header declares {nwords} words ({end} bytes), only {n} bytes present")
    if n > end:
        _fail(end, f"{n - end} trailing bytes after the {nwords} words the header declares")
    if blocks > nwords:
        _fail(8, f"header declares {blocks} blocks but only {nwords} words follow (a block is at least one word)")
    return blocks, nwords


def _chunks(data: memoryview, nwords: int) -> Iterator[list[int]]:
    """The stream's words as lists of Python ints, _CHUNK_WORDS at a time."""
    for start in range(0, nwords, _CHUNK_WORDS):
        count = min(_CHUNK_WORDS, nwords - start)
        yield np.frombuffer(data, dtype="<u8", count=count, offset=HEADER_BYTES + WORD_BYTES * start).tolist()


# Per tag: (spec, reserved-bit mask, ((attr, shift, value mask, presence bit or -1), ...)).
_DECODE = {
    w.tag: (w, _WORD_MASK & ~w.used_mask,
            tuple((f.name, f.lsb, (1 << f.width) - 1, -1 if f.present is None else f.present)
                  for f in w.fields))
    for w in WORDS
}


class _Malformed(Exception):
    """A word that is no valid word of any descriptor (the caller adds where it stands)."""


def _unpack(word: int):
    tag = word & 0xFF
    entry = _DECODE.get(tag)
    if entry is None:
        raise _Malformed(f"unknown word tag {tag:#04x} (word {word:#018x})")
    spec, reserved, fields = entry
    if word & reserved:
        raise _Malformed(f"reserved bits {word & reserved:#018x} set in {spec.name} word")
    kw = {}
    for name, shift, mask, present in fields:
        value = (word >> shift) & mask
        if present >= 0 and not (word >> present) & 1:
            if value:
                raise _Malformed(f"{spec.name}.{name} is omitted (presence bit {present} clear) but its value "
                                 f"bits hold {value:#x}; omitted fields encode as zero")
            value = None
        kw[name] = value
    return spec, kw


def _bstart(kw: dict) -> BStart:
    row = by_carrier(kw["Mode"], kw["Function"])
    return BStart(**kw, spelling=row.engine if row is not None else "TEPL")


# Decoded words are immutable values, and streams repeat words a lot (same bindings, same
# B.DIM), so valid words are memoised (isa.memo rule 2); the bound keeps memory flat on
# adversarial streams, and a malformed word raises afresh every time.
@lru_cache(maxsize=1 << 16)
def _word(word: int) -> tuple[WordSpec, object]:
    spec, kw = _unpack(word)
    return spec, (_bstart(kw) if spec.tag == TAG_BSTART else spec.cls(**kw))


def check_header(data) -> tuple[int, int]:
    """(block_count, word_count) of a `.tbs` stream whose header and total length are sound;
    DecodeError otherwise.  A fault here concerns the whole stream, not any one block."""
    return _header(memoryview(data).cast("B"))


def iter_blocks(data) -> Iterator[tuple[int, Block]]:
    """Yield (byte offset of BSTART, Block) for each block of a `.tbs` stream, in order.

    The header and total length are checked before the first block is yielded; a structural
    fault inside the words raises DecodeError when the iteration reaches it (blocks before it
    have been yielded).  Use `decode` to validate the whole stream first.
    """
    data = memoryview(data).cast("B")
    blocks, nwords = _header(data)
    yield from _blocks(_chunks(data, nwords), blocks)


def _blocks(chunks: Iterable[list[int]], blocks: int) -> Iterator[tuple[int, Block]]:
    """iter_blocks after the header: the words of a stream whose header declares `blocks`, as
    lists of ints (a block may span two).  At a block boundary, a BSTART whose block lies whole
    in the chunk and whose words are a block decoded before (_DECODED: a valid, complete block)
    is that Block at once: word by word it would decode to the same Block with no fault (its
    words alone decide that, and the header's block count is checked here too).  Anything else
    goes word by word."""
    seen = 0
    offset = HEADER_BYTES
    pending = 0                 # descriptor words still owed to the current block
    block_off = 0
    head: BStart | None = None
    parts: dict = {}
    rank = 0
    words: list[int] = []        # the current block's words
    for chunk in chunks:
        n = len(chunk)
        i = 0
        while i < n:
            word = chunk[i]
            if not pending and word & 0xFF == TAG_BSTART and seen < blocks:
                end = i + 1 + ((word >> COUNT_LSB) & MAX_DESCRIPTORS)
                if end <= n:
                    block = _DECODED.get(tuple(chunk[i:end]))
                    if block is not None:       # the known block, exactly as word by word
                        head, block_off, seen = block.bstart, offset, seen + 1
                        offset += WORD_BYTES * (end - i)
                        i = end
                        yield block_off, block
                        continue
            i += 1
            owner = block_off if pending else offset     # the BSTART of the block this word is in
            try:
                spec, obj = _word(word)
            except _Malformed as exc:
                raise DecodeError(offset, str(exc), owner) from None
            if spec.tag == TAG_BSTART:
                if pending:
                    _fail(offset, f"BSTART inside the block at byte {block_off}, which declares "
                                  f"{pending} more descriptor word(s)", owner)
                if seen == blocks:
                    _fail(offset, f"more blocks than the {blocks} the header declares", owner)
                pending = (word >> COUNT_LSB) & MAX_DESCRIPTORS
                head, parts, rank, block_off = obj, {"iot": []}, 0, offset
                words = [word]
                seen += 1
            else:
                if not pending:
                    _fail(offset, f"{spec.name} word outside a block (expected BSTART"
                                  + (f"; the block at byte {block_off} has ended)" if head else ")"), owner)
                if spec.rank < rank or (spec.rank == rank and not spec.repeatable):
                    what = "duplicate" if spec.rank == rank else "out of canonical order"
                    _fail(offset, f"{spec.name} {what} in the block at byte {block_off} "
                                  f"(canonical order: {_CANONICAL_ORDER})", owner)
                rank = spec.rank
                if spec.repeatable:
                    parts[spec.attr].append(obj)
                else:
                    parts[spec.attr] = obj
                words.append(word)
                pending -= 1
            offset += WORD_BYTES
            if not pending:
                key = tuple(words)
                block = _DECODED.get(key)
                if block is None:
                    parts["iot"] = tuple(parts["iot"])
                    block = Block(head, **parts)
                    memo(block)[WORDS_MEMO] = key
                    if len(_DECODED) < DECODED_LIMIT:
                        _DECODED[key] = block
                yield block_off, block
    if pending:
        _fail(offset, f"stream ends inside the block at byte {block_off}, "
                      f"{pending} declared descriptor word(s) missing", block_off)
    if seen != blocks:
        _fail(offset, f"stream ends after {seen} blocks, header declares {blocks}", offset)


# A block's words -> the Block they decode to (isa.memo rule 2): a stream repeats a few distinct
# blocks, and one Block object per distinct block keeps its resolution and what the engine derives
# from it (isa.memo rule 1) from being recomputed for every copy.  Blocks are immutable, so every
# occurrence can be the same object.  Bound: DECODED_LIMIT distinct blocks, then unkept.
_DECODED: dict = {}
DECODED_LIMIT = 4096


def decode(data) -> list[Block]:
    """All blocks of a `.tbs` stream, or DecodeError for the first structural fault."""
    return [block for _, block in iter_blocks(data)]


def roundtrip(block: Block, index: int = 0) -> tuple[Block, list[int]]:
    """(the block exactly as a stream carries it, its words): decode(encode([block]))[0] and
    block_words(block, index), without the stream's bytes.  EncodeError for a block no stream
    can carry."""
    words = block_words(block, index)
    (_, out), = _blocks([list(words)], 1)
    return out, words
