"""Canonical byte codecs: atoms, types, actors, finite behaviour keys, direct carriers.

Framing shared by every canonical value: the exact ASCII domain, one zero byte, u32be(1)
(major), u32be(0) (minor), then the body.  Integers are big-endian (u32be / u64be); a frame
is u32be(length) followed by that many bytes.  Decoders are exact: every byte is checked,
re-encoding the decoded value must give the input back, and trailing bytes are an error.
The normative description is docs/fabric-format.md ("Canonical codecs").
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterable, Sequence

from isa.datatypes import UnknownDataType, datatype as tile_datatype

from .atoms import FLOAT_FORMATS, FLOAT_PREDICATES, INTEGER_PREDICATES, ROUNDING_MODES
from .errors import CodecError
from .types import (FloatType, IndexType, IntegerType, NoneType, PointerType, TaggedType,
                    VectorType)

U32_MAX = (1 << 32) - 1
U64_MAX = (1 << 64) - 1
VERSION = (1, 0)

BEHAVIOR_KEY_DOMAIN = "loom.fabric.operation-behavior-key"
INTEGER_PREDICATE_DOMAIN = "loom.dataflow.integer-compare-predicate"
FLOAT_PREDICATE_DOMAIN = "loom.dataflow.float-compare-predicate"
ROUNDING_MODE_DOMAIN = "loom.dataflow.rounding-mode"
TYPE_DOMAIN = "loom.dataflow.canonical-type"
ACTOR_DOMAIN = "loom.dataflow.canonical-actor"


# --- primitive writer / reader ---------------------------------------------------------------

def u32(v: int) -> bytes:
    if not 0 <= v <= U32_MAX:
        raise CodecError(f"{v} does not fit u32")
    return struct.pack(">I", v)


def u64(v: int) -> bytes:
    if not 0 <= v <= U64_MAX:
        raise CodecError(f"{v} does not fit u64")
    return struct.pack(">Q", v)


def frame(data: bytes) -> bytes:
    return u32(len(data)) + data


def header(domain: str) -> bytes:
    return domain.encode("ascii") + b"\x00" + u32(VERSION[0]) + u32(VERSION[1])


class Reader:
    def __init__(self, data: bytes, what: str):
        self.data = bytes(data)
        self.pos = 0
        self.what = what

    def take(self, n: int, field: str) -> bytes:
        if n > len(self.data) - self.pos:
            raise CodecError(f"{self.what}: truncated in {field} at byte {self.pos}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u32(self, field: str) -> int:
        return struct.unpack(">I", self.take(4, field))[0]

    def u64(self, field: str) -> int:
        return struct.unpack(">Q", self.take(8, field))[0]

    def frame(self, field: str) -> bytes:
        return self.take(self.u32(field + " length"), field)

    def header(self, domain: str) -> None:
        want = header(domain)
        got = self.data[:len(want)]
        if got != want:
            if want.startswith(got):
                raise CodecError(f"{self.what}: truncated in the domain header")
            raise CodecError(f"{self.what}: not in domain {domain!r} version 1.0")
        self.pos = len(want)

    def end(self) -> None:
        if self.pos != len(self.data):
            raise CodecError(f"{self.what}: {len(self.data) - self.pos} trailing bytes")


# --- atoms -----------------------------------------------------------------------------------

_ATOMS = {
    "int_predicate": (INTEGER_PREDICATE_DOMAIN, INTEGER_PREDICATES),
    "float_predicate": (FLOAT_PREDICATE_DOMAIN, FLOAT_PREDICATES),
    "rounding": (ROUNDING_MODE_DOMAIN, ROUNDING_MODES),
}


def encode_atom(kind: str, spelling: str) -> bytes:
    domain, table = _ATOMS[kind]
    if spelling not in table:
        raise CodecError(f"{spelling!r} is not a {kind}")
    return header(domain) + u32(table[spelling])


def decode_atom(kind: str, data: bytes) -> str:
    domain, table = _ATOMS[kind]
    r = Reader(data, kind)
    r.header(domain)
    tag = r.u32("wire tag")
    r.end()
    return spelling_of(table, tag, kind)


def spelling_of(table: dict, tag: int, what: str) -> str:
    """The spelling whose wire tag is `tag` in a closed vocabulary (CodecError when none is)."""
    for spelling, t in table.items():
        if t == tag:
            return spelling
    raise CodecError(f"{what}: unknown wire tag {tag}")


# --- canonical types ---------------------------------------------------------------------------

def _type_body(t) -> bytes:
    if isinstance(t, IntegerType):
        return u32(1) + u32(t.width)
    if isinstance(t, FloatType):
        return u32(2) + frame(t.format.encode("ascii"))
    if isinstance(t, IndexType):
        return u32(3)
    if isinstance(t, NoneType):
        return u32(4)
    if isinstance(t, VectorType):
        return u32(5) + u32(len(t.shape)) + b"".join(u64(d) for d in t.shape) + _type_body(t.element)
    if isinstance(t, TaggedType):
        return u32(6) + _type_body(t.value) + u32(t.tag_width)
    if isinstance(t, PointerType):
        return u32(7) + u32(t.address_space)
    raise CodecError(f"no canonical encoding for {t!r}")


def encode_type(t) -> bytes:
    """encodeCanonicalType: the project's canonical type bytes (used for floating formats)."""
    return header(TYPE_DOMAIN) + _type_body(t)


def _read_type_body(r: Reader, depth: int = 0):
    if depth > 2:
        raise CodecError("canonical type nests too deeply")
    kind = r.u32("type kind")
    if kind == 1:
        w = r.u32("integer width")
        if w == 0:
            raise CodecError("canonical type: zero integer width")
        return IntegerType(w)
    if kind == 2:
        name = r.frame("float format")
        fmt = name.decode("ascii", "replace")
        if fmt not in FLOAT_FORMATS:
            raise CodecError(f"canonical type: unknown float format {name!r}")
        return FloatType(fmt)
    if kind == 3:
        return IndexType()
    if kind == 4:
        return NoneType()
    if kind == 5:
        rank = r.u32("vector rank")
        if rank == 0 or rank > 64:
            raise CodecError("canonical type: vector rank out of range")
        dims = tuple(r.u64("vector dim") for _ in range(rank))
        if 0 in dims:
            raise CodecError("canonical type: zero vector dimension")
        elem = _read_type_body(r, depth + 1)
        if not isinstance(elem, (IntegerType, FloatType)):
            raise CodecError("canonical type: vector element is not integer or float")
        return VectorType(dims, elem)
    if kind == 6:
        value = _read_type_body(r, depth + 1)
        return TaggedType(value, r.u32("tag width"))
    if kind == 7:
        return PointerType(r.u32("address space"))
    raise CodecError(f"canonical type: unknown kind {kind}")


def decode_type(data: bytes):
    r = Reader(data, "canonical type")
    r.header(TYPE_DOMAIN)
    t = _read_type_body(r)
    r.end()
    if encode_type(t) != bytes(data):
        raise CodecError("canonical type: noncanonical bytes")
    return t


# --- canonical actor bytes (identity and deterministic tie-breaking) ---------------------------

def _attr_value(v) -> bytes:
    if isinstance(v, bool):
        return u32(1) + u32(int(v))
    if isinstance(v, int):
        return u32(2) + u64(v & U64_MAX)
    if isinstance(v, str):
        return u32(3) + frame(v.encode("utf-8"))
    if isinstance(v, (tuple, list)):
        return u32(4) + u32(len(v)) + b"".join(_attr_value(x) for x in v)
    if isinstance(v, frozenset):
        return u32(5) + u32(len(v)) + b"".join(_attr_value(x) for x in sorted(v))
    raise CodecError(f"no canonical attribute encoding for {v!r}")


def encode_actor(schema: str, inputs: Sequence, results: Sequence, attributes: dict) -> bytes:
    """The canonical actor projection bytes: schema, exact function type, closed attributes."""
    out = [header(ACTOR_DOMAIN), frame(schema.encode("ascii")), u32(len(inputs))]
    out += [frame(_type_body(t)) for t in inputs]
    out.append(u32(len(results)))
    out += [frame(_type_body(t)) for t in results]
    items = sorted((k, v) for k, v in attributes.items() if v is not None)
    out.append(u32(len(items)))
    for k, v in items:
        out.append(frame(k.encode("ascii")) + frame(_attr_value(v)))
    return b"".join(out)


# --- finite behaviour keys ---------------------------------------------------------------------

@dataclass(frozen=True)
class LaneImage:
    """An ordered image of direction-local physical port ordinals, each below `bound`."""
    ordinals: tuple[int, ...]
    bound: int


# A component is (slot_kind, value): ("width", int) | ("int_predicate", str) |
# ("float_predicate", str) | ("rounding", str) | ("float_format", str) | ("lanes", LaneImage)
# | ("datatype", str): a tile DataType as u32be(its isa field code)
SLOT_KINDS = ("width", "int_predicate", "float_predicate", "rounding", "float_format", "lanes", "datatype")


def encode_component(kind: str, value) -> bytes:
    if kind == "width":
        if not isinstance(value, int) or value <= 0:
            raise CodecError(f"behaviour key width must be a positive u32, not {value!r}")
        return u32(value)
    if kind in _ATOMS:
        return frame(encode_atom(kind, value))
    if kind == "float_format":
        if value not in FLOAT_FORMATS:
            raise CodecError(f"{value!r} is not a floating format")
        return frame(encode_type(FloatType(value)))
    if kind == "datatype":
        try:
            if not isinstance(value, str):
                raise TypeError
            return u32(tile_datatype(value).code)
        except (UnknownDataType, TypeError):
            raise CodecError(f"{value!r} is not a tile DataType name") from None
    if kind == "lanes":
        img: LaneImage = value
        seen = set()
        for o in img.ordinals:
            if not 0 <= o < img.bound:
                raise CodecError(f"lane ordinal {o} is out of range [0, {img.bound})")
            if o in seen:
                raise CodecError(f"lane image repeats ordinal {o}")
            seen.add(o)
        return u32(len(img.ordinals)) + b"".join(u64(o) for o in img.ordinals)
    raise CodecError(f"unknown behaviour-key component kind {kind!r}")


def encode_behavior_key(family: str, role: str, components: Iterable[tuple[str, object]]) -> bytes:
    out = [header(BEHAVIOR_KEY_DOMAIN), frame(family.encode("ascii")), frame(role.encode("ascii"))]
    out += [encode_component(k, v) for k, v in components]
    return b"".join(out)


def decode_behavior_key(data: bytes, family: str, layouts: dict[str, tuple]) -> tuple[str, tuple]:
    """Decode a key against its relation's layout: role -> ((slot_kind, lane_bound|None), ...).

    Rejects unknown roles, noncanonical component bytes, zero widths, duplicate or
    out-of-range lane ordinals, truncation and trailing bytes.
    """
    r = Reader(data, "operation behaviour key")
    r.header(BEHAVIOR_KEY_DOMAIN)
    fam = r.frame("implementation family")
    if fam != family.encode("ascii"):
        raise CodecError(f"operation behaviour key names family {fam!r}, expected {family!r}")
    role_bytes = r.frame("role")
    role = role_bytes.decode("ascii", "replace")
    if role not in layouts or role.encode("ascii", "replace") != role_bytes:
        raise CodecError(f"operation behaviour key: unknown role {role_bytes!r} for {family}")
    comps = []
    for kind, bound in layouts[role]:
        if kind == "width":
            w = r.u32("width")
            if w == 0:
                raise CodecError("operation behaviour key: zero width component")
            comps.append((kind, w))
        elif kind in _ATOMS:
            comps.append((kind, decode_atom(kind, r.frame(kind))))
        elif kind == "float_format":
            t = decode_type(r.frame("float format"))
            if not isinstance(t, FloatType):
                raise CodecError("operation behaviour key: format component is not a float type")
            comps.append((kind, t.format))
        elif kind == "datatype":
            code = r.u32("DataType code")
            try:
                comps.append((kind, tile_datatype(code).name))
            except UnknownDataType:
                raise CodecError(f"operation behaviour key: DataType code {code} is not assigned") from None
        elif kind == "lanes":
            n = r.u32("lane count")
            if n > bound:
                raise CodecError(f"operation behaviour key: {n} lanes exceed the {bound} ports")
            ords = tuple(r.u64("lane ordinal") for _ in range(n))
            img = LaneImage(ords, bound)
            encode_component("lanes", img)  # range and duplicate checks
            comps.append((kind, img))
        else:
            raise CodecError(f"unknown slot kind {kind!r}")
    r.end()
    return role, tuple(comps)


# --- direct carriers -----------------------------------------------------------------------------

def cardinality_bits(m: int) -> int:
    """Bits that encode [0, M): 0 when M <= 1, else ceil(log2(M))."""
    return 0 if m <= 1 else (m - 1).bit_length()


def inclusive_bits(m: int) -> int:
    """Bits that encode [0, M]: 0 when M = 0, else ceil(log2(M + 1))."""
    return 0 if m == 0 else m.bit_length()


class CheckedOverflow(CodecError):
    pass


def checked(v: int, limit: int = U64_MAX, what: str = "value") -> int:
    """Unsigned checked arithmetic: a result outside [0, limit] is invalid, never wrapped."""
    if v < 0 or v > limit:
        raise CheckedOverflow(f"{what} {v} overflows checked arithmetic (limit {limit})")
    return v


def pack_fields(fields: Sequence[tuple[int, int]]) -> int:
    """LSB-first packing: field 0 occupies the lowest bits, each next field follows it."""
    value, shift = 0, 0
    for v, w in fields:
        if not 0 <= v < (1 << w) or (w == 0 and v != 0):
            raise CodecError(f"field value {v} does not fit {w} bits")
        value |= v << shift
        shift += w
    return value


def unpack_fields(value: int, widths: Sequence[int]) -> list[int]:
    out, shift = [], 0
    for w in widths:
        out.append((value >> shift) & ((1 << w) - 1))
        shift += w
    return out


def encode_carrier(value: int, nbits: int) -> bytes:
    """Carrier bit k -> bit k % 8 of byte k // 8; unused high bits of the last byte are zero."""
    if not 0 <= value < (1 << nbits) and not (nbits == 0 and value == 0):
        raise CodecError(f"carrier value does not fit {nbits} bits")
    return value.to_bytes((nbits + 7) // 8, "little")


def decode_carrier(data: bytes, nbits: int) -> int:
    want = (nbits + 7) // 8
    if len(data) != want:
        raise CodecError(f"direct carrier of {nbits} bits needs exactly {want} bytes, got {len(data)}")
    value = int.from_bytes(data, "little")
    if value >> nbits:
        raise CodecError("direct carrier: nonzero unused high bits in the last byte")
    return value
