"""Exact software types of actors and physical port types of fabric resources.

A software type is what an actor computes on; a port type (`bits<N>` or `bits_tag<N,T>`) is
transport capacity only.  The same `bits<32>` may carry an i32, an f32, a vector<4xi8> or an
i16: physical width never identifies a software type.

Spellings (parse/print are exact inverses on canonical text):
  i<W>  index  f16 bf16 f32 f64  none  vector<D0x...xDkx E>  tagged<V,i<T>>  ptr<AS>
  bits<N>  bits_tag<N,T>
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from math import prod

from .atoms import FLOAT_FORMATS

MAX_INTEGER_WIDTH = 1 << 16  # widest exact integer type a description may spell


@dataclass(frozen=True)
class IntegerType:
    width: int

    def __str__(self) -> str:
        return f"i{self.width}"


@dataclass(frozen=True)
class IndexType:
    def __str__(self) -> str:
        return "index"


@dataclass(frozen=True)
class FloatType:
    format: str

    @property
    def width(self) -> int:
        return FLOAT_FORMATS[self.format]

    def __str__(self) -> str:
        return self.format


@dataclass(frozen=True)
class NoneType:
    """Fabric's zero-payload control token."""

    def __str__(self) -> str:
        return "none"


@dataclass(frozen=True)
class VectorType:
    shape: tuple[int, ...]
    element: IntegerType | FloatType

    def __str__(self) -> str:
        return "vector<" + "".join(f"{d}x" for d in self.shape) + f"{self.element}>"

    @property
    def num_elements(self) -> int:
        return prod(self.shape)


@dataclass(frozen=True)
class TaggedType:
    value: "SoftwareType"
    tag_width: int

    def __str__(self) -> str:
        return f"tagged<{self.value},i{self.tag_width}>"


MAX_POINTER_BITS = 1 << 16        # widest pointer representation a layout may declare


@dataclass(frozen=True)
class PointerLayout:
    """The module-derived stable-integral PointerLayout(AS) of one address space: a pointer
    value of that space is `representation_bits` raw bits, of which `address_bits` address.
    Endpoint capacity, representation_bits, address_bits and index widths are independent
    facts, never inferred from one another.  (The same four fields form a ScalarIntegerAddSub
    PointerFormat, whose relation must stay empty.)"""
    address_space: int
    representation_bits: int
    address_bits: int
    kind: str = "stable_integral"


@dataclass(frozen=True)
class PointerType:
    """!llvm.ptr<AS>.  `layout` is the module's PointerLayout(AS) when the actor's module
    declares one: it gives the payload width and is not part of the type's identity (equality,
    hash, spelling and canonical bytes are those of ptr<AS>)."""
    address_space: int
    layout: PointerLayout | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return f"ptr<{self.address_space}>"


SoftwareType = IntegerType | IndexType | FloatType | NoneType | VectorType | TaggedType | PointerType

I1 = IntegerType(1)


def is_int(t) -> bool:
    return isinstance(t, IntegerType)


def is_float(t) -> bool:
    return isinstance(t, FloatType)


def element_of(t):
    """Element type of a vector, the type itself for a scalar."""
    return t.element if isinstance(t, VectorType) else t


class TypeWidthError(ValueError):
    pass


def payload_bits(t, index_width: int | None = None) -> int:
    """Exact semantic payload width N of a value of type `t` (tag bits excluded).

    `index` has no width of its own: the candidate's selected canonical index width supplies
    it.  A pointer is the representation_bits of its module's PointerLayout(AS) and has no
    width without one.
    """
    if isinstance(t, (IntegerType, FloatType)):
        return t.width
    if isinstance(t, NoneType):
        return 0
    if isinstance(t, VectorType):
        return t.num_elements * t.element.width
    if isinstance(t, TaggedType):
        return payload_bits(t.value, index_width)
    if isinstance(t, IndexType):
        if index_width is None:
            raise TypeWidthError("an index value needs a selected canonical index width")
        return index_width
    if isinstance(t, PointerType) and t.layout is not None:
        return t.layout.representation_bits
    raise TypeWidthError(f"{t} has no payload width without the module's PointerLayout({t.address_space})")


def bind_pointer_layouts(t, layouts: dict):
    """`t` with every ptr<AS> (also inside a tagged value) carrying the module's
    PointerLayout(AS) from `layouts` (address space -> layout); unknown spaces stay unbound."""
    if isinstance(t, PointerType):
        return PointerType(t.address_space, layouts.get(t.address_space))
    if isinstance(t, TaggedType) and isinstance(t.value, PointerType):
        return TaggedType(bind_pointer_layouts(t.value, layouts), t.tag_width)
    return t


# --- physical ports --------------------------------------------------------------------------

@dataclass(frozen=True)
class PortType:
    kind: str  # "bits" | "bits_tag"
    width: int
    tag_width: int = 0

    def __str__(self) -> str:
        if self.kind == "bits":
            return f"bits<{self.width}>"
        return f"bits_tag<{self.width},{self.tag_width}>"

    @property
    def tagged(self) -> bool:
        return self.kind == "bits_tag"


class SegmentTooNarrow(ValueError):
    """A legal narrowing never crosses below the exact semantic width."""


def adapt_segment(payload: int, src: PortType, dst: PortType, semantic_bits: int) -> int:
    """The payload of an untagged segment `dst` fed from segment `src` carrying an exact value
    of `semantic_bits` bits (seed: "Low-bit-aligned widening zero-fills high bits and legal
    narrowing truncates high bits without crossing below the exact semantic width").

    The value is low-bit aligned, so widening keeps the integer (the new high bits are zero)
    and narrowing keeps its low `dst.width` bits; `dst.width < semantic_bits` is illegal."""
    if src.tagged or dst.tagged:
        raise ValueError("zero-fill and truncation apply to untagged bits<W> segments only")
    if dst.width < semantic_bits:
        raise SegmentTooNarrow(f"{dst} is narrower than the {semantic_bits}-bit semantic value")
    if not 0 <= payload < (1 << src.width):
        raise ValueError(f"payload {payload:#x} does not fit {src}")
    return payload if dst.width >= src.width else payload & ((1 << dst.width) - 1)


def adapt_segment_array(payloads, src: PortType, dst: PortType, semantic_bits: int):
    """`adapt_segment` over a NumPy uint64 array of payloads (segments of at most 64 bits)."""
    import numpy as np
    if src.tagged or dst.tagged:
        raise ValueError("zero-fill and truncation apply to untagged bits<W> segments only")
    if dst.width < semantic_bits:
        raise SegmentTooNarrow(f"{dst} is narrower than the {semantic_bits}-bit semantic value")
    if src.width > 64 or dst.width > 64:
        raise ValueError("the array form carries segments of at most 64 bits")
    a = np.asarray(payloads, dtype=np.uint64)
    if src.width < 64 and (a >> np.uint64(src.width)).any():
        raise ValueError(f"a payload does not fit {src}")
    if dst.width >= src.width:
        return a.copy()
    return a & np.uint64((1 << dst.width) - 1)


def bits(n: int) -> PortType:
    return PortType("bits", n)


def bits_tag(n: int, t: int) -> PortType:
    return PortType("bits_tag", n, t)


# --- parsing ---------------------------------------------------------------------------------

_INT = re.compile(r"i([1-9][0-9]*)")
_VECTOR = re.compile(r"vector<((?:[1-9][0-9]*x)+)(.+)>")
_TAGGED = re.compile(r"tagged<(.+),i([1-9][0-9]*)>")
_PTR = re.compile(r"ptr<(0|[1-9][0-9]*)>")
_BITS = re.compile(r"bits<(0|[1-9][0-9]*)>")
_BITS_TAG = re.compile(r"bits_tag<(0|[1-9][0-9]*),([1-9][0-9]*)>")
MAX_PORT_WIDTH = 1 << 20
MAX_VECTOR_ELEMENTS = 1 << 20


def parse_type(text: str) -> SoftwareType:
    """Parse one canonical software type spelling; ValueError says why it is not one."""
    if not isinstance(text, str):
        raise ValueError(f"a type spelling must be a string, not {type(text).__name__}")
    s = text.replace(" ", "")
    if s == "index":
        return IndexType()
    if s == "none":
        return NoneType()
    if s in FLOAT_FORMATS:
        return FloatType(s)
    m = _INT.fullmatch(s)
    if m:
        w = int(m.group(1))
        if w > MAX_INTEGER_WIDTH:
            raise ValueError(f"integer width {w} exceeds {MAX_INTEGER_WIDTH}")
        return IntegerType(w)
    m = _VECTOR.fullmatch(s)
    if m:
        dims = tuple(int(d) for d in m.group(1).split("x")[:-1])
        if prod(dims) > MAX_VECTOR_ELEMENTS:
            raise ValueError(f"vector {text!r} has more than {MAX_VECTOR_ELEMENTS} elements")
        elem = parse_type(m.group(2))
        if not isinstance(elem, (IntegerType, FloatType)):
            raise ValueError(f"vector element must be an integer or floating type, not {elem}")
        return VectorType(dims, elem)
    m = _TAGGED.fullmatch(s)
    if m:
        value = parse_type(m.group(1))
        if isinstance(value, TaggedType):
            raise ValueError("a tagged type cannot nest another tagged type")
        return TaggedType(value, int(m.group(2)))
    m = _PTR.fullmatch(s)
    if m:
        return PointerType(int(m.group(1)))
    raise ValueError(f"{text!r} is not a software type (i<W>, index, f16, bf16, f32, f64, none, "
                     "vector<..xE>, tagged<V,i<T>>, ptr<AS>)")


def parse_port_type(text: str) -> PortType:
    if not isinstance(text, str):
        raise ValueError(f"a port type must be a string, not {type(text).__name__}")
    s = text.replace(" ", "")
    m = _BITS.fullmatch(s)
    if m:
        n = int(m.group(1))
        if n > MAX_PORT_WIDTH:
            raise ValueError(f"port width {n} exceeds {MAX_PORT_WIDTH}")
        return PortType("bits", n)
    m = _BITS_TAG.fullmatch(s)
    if m:
        n, t = int(m.group(1)), int(m.group(2))
        if n > MAX_PORT_WIDTH or t > 64:
            raise ValueError(f"port type {text!r} exceeds the supported widths")
        return PortType("bits_tag", n, t)
    raise ValueError(f"{text!r} is not a port type (bits<N> or bits_tag<N,T>)")
