"""The mapping notation of the VCG seed: axis declarations and m![...] expressions.

    axes = parse_axes("A = 8, R = 12, X = 128")
    m = Mapping.parse(axes, slice="X, A / 4", time="R # 16", packet="A % 4 # 8")

A mapping expression is a comma list of terms, major first (m![A, B]: B varies fastest).  A term
is an atom (an axis name, or `1`) followed by postfix operators applied left to right:

    e # n   padding.  Before any split it pads the axis itself (R # 16: index 12..15 of a
            12-element axis is padding; n is the axis' PADDED_SIZE).  After a split it pads the
            dimension (A % 4 # 8: positions 4..7 of the dimension hold no element at all).
    e / n   stride: the quotient digit, size(e) / n positions, each worth n of e.
    e % m   modulo: the remainder digit, m positions.

Every term therefore normalises to one *factor* of its axis: a digit with `stride` (its weight
in the padded axis index), `size` (positions that carry the digit) and `dim` (positions the
term occupies, `dim >= size`).  The padded axis index is the sum of stride x digit over the
axis' factors; an element is real when every digit is below its `size` and the index is below
the axis' declared SIZE.  `/` and `%` must divide the size exactly (pad first: X # 12 / 3).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from isa.atomicio import quote, shown

from .errors import MappingError

MAX_INT = 1 << 40            # literal bound: keeps every derived size a small exact integer
MAX_INT_DIGITS = len(str(MAX_INT))   # longer literals are refused before int() sees them
MAX_NAME = 64                # axis-name bound: every message that names an axis stays one short line
FLIT_LANES = 8               # elements per 8-way flit (the Packet dimension)

_TOKEN = re.compile(r"\s*(?:(?P<op>m!\[|axes!\[|[#/%,=\]\[])|(?P<int>\d+)|(?P<ident>[A-Za-z_][A-Za-z0-9_]*))")


@dataclass(frozen=True)
class Token:
    kind: str     # 'int', 'ident', 'op', 'end'
    text: str
    pos: int


def _tokens(text: str, where: str) -> list[Token]:
    out, i = [], 0
    while i < len(text):
        if text[i:].strip() == "":
            break
        m = _TOKEN.match(text, i)
        if not m:
            j = i + len(text[i:]) - len(text[i:].lstrip())
            raise MappingError(f"unexpected character {text[j]!r}", text, j, 1, where)
        kind = m.lastgroup
        out.append(Token(kind, m.group(kind), m.start(kind)))
        i = m.end()
    out.append(Token("end", "", len(text.rstrip())))
    return out


def _found(t: Token) -> str:
    return "end of input" if t.kind == "end" else quote(t.text)


class _Cursor:
    def __init__(self, text: str, where: str):
        self.text, self.where = text, where
        self.toks = _tokens(text, where)
        self.i = 0

    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def next(self) -> Token:
        t = self.toks[self.i]
        self.i += 1
        return t

    def error(self, message: str, tok: Token | None = None) -> MappingError:
        tok = tok or self.tok
        return MappingError(message, self.text, tok.pos, max(1, len(tok.text)), self.where)

    def expect_int(self, what: str) -> tuple[int, Token]:
        t = self.tok
        if t.kind != "int":
            raise self.error(f"expected {what} (an integer), found {_found(t)}")
        self.next()
        # Length first: int() refuses (or is slow on) literals of thousands of digits.
        if len(t.text.lstrip("0")) > MAX_INT_DIGITS or int(t.text) > MAX_INT:
            raise self.error(f"{what} {shown(t.text, 24)} is too large (limit 2**40)", t)
        return int(t.text), t

    def strip_wrapper(self, prefix: str) -> bool:
        """Accept an optional `m![ ... ]` / `axes![ ... ]` wrapper around the whole list."""
        if self.tok.kind == "op" and self.tok.text == prefix:
            self.next()
            return True
        return False

    def close_wrapper(self, opened: bool) -> None:
        if opened:
            if not (self.tok.kind == "op" and self.tok.text == "]"):
                raise self.error("expected ']' closing the list")
            self.next()
        if self.tok.kind != "end":
            raise self.error(f"unexpected {_found(self.tok)} after the end of the list")


# ----------------------------------------------------------------------------- axes

def parse_axes(text: str) -> dict[str, int]:
    """'A = 8, R = 12' (optionally wrapped in axes![...]) -> {'A': 8, 'R': 12}, order kept."""
    cur = _Cursor(text, "axes")
    opened = cur.strip_wrapper("axes![")
    axes: dict[str, int] = {}
    if cur.tok.kind == "end" or (cur.tok.kind == "op" and cur.tok.text == "]"):
        raise cur.error("expected at least one axis declaration NAME = SIZE")
    while True:
        t = cur.tok
        if t.kind != "ident":
            raise cur.error("expected an axis name")
        cur.next()
        if len(t.text) > MAX_NAME:
            raise cur.error(f"axis name {quote(t.text, 24)} is longer than {MAX_NAME} characters", t)
        if t.text in axes:
            raise cur.error(f"axis {shown(t.text)} is declared twice", t)
        if not (cur.tok.kind == "op" and cur.tok.text == "="):
            raise cur.error(f"expected '=' after axis name {shown(t.text)}")
        cur.next()
        size, st = cur.expect_int(f"size of axis {shown(t.text)}")
        if size < 1:
            raise cur.error(f"axis {shown(t.text)} must have size >= 1", st)
        axes[t.text] = size
        if cur.tok.kind == "op" and cur.tok.text == ",":
            cur.next()
            continue
        break
    cur.close_wrapper(opened)
    return axes


def format_axes(axes: dict[str, int]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in axes.items())


# ----------------------------------------------------------------------------- terms

@dataclass(frozen=True)
class Op:
    kind: str     # '#', '/', '%'
    value: int
    pos: int = field(default=0, compare=False)   # column of the operator in the source text
    end: int = field(default=0, compare=False)   # column after its operand


@dataclass(frozen=True)
class Term:
    """One sub-expression, normalised to a factor of its axis (axis None: the identity `1`)."""
    axis: str | None
    ops: tuple[Op, ...]
    stride: int           # weight of this digit in the padded axis index
    size: int             # positions carrying the digit
    dim: int              # positions the term occupies in its dimension (>= size)
    padded: int           # PADDED_SIZE of the axis as this term sees it
    # where it came from, for diagnostics (not part of its meaning)
    pos: int = field(default=0, compare=False)
    end: int = field(default=0, compare=False)
    where: str = field(default="", compare=False)     # 'Slice' / 'Time' / 'Packet'
    source: str = field(default="", compare=False)

    def __str__(self) -> str:
        s = self.axis if self.axis is not None else "1"
        for op in self.ops:
            s += f" {op.kind} {op.value}"
        return s

    @property
    def split(self) -> bool:
        return any(op.kind in "/%" for op in self.ops)

    @property
    def dim_padded(self) -> bool:
        return self.dim > self.size


def _parse_term(cur: _Cursor, axes: dict[str, int], where: str) -> Term:
    t = cur.tok
    if t.kind == "ident":
        if t.text not in axes:
            known = shown(", ".join(axes)) or "none declared"
            raise cur.error(f"unknown axis {quote(t.text)} (declared: {known})")
        axis, n = t.text, axes[t.text]
    elif t.kind == "int":
        if t.text != "1":
            raise cur.error(f"the only numeric atom is the identity 1, found {shown(t.text, 24)}")
        axis, n = None, 1
    else:
        raise cur.error(f"expected an axis name or 1, found {_found(t)}")
    cur.next()
    stride, size, dim, padded, split = 1, n, None, n, False
    ops: list[Op] = []
    while cur.tok.kind == "op" and cur.tok.text in "#/%" and cur.tok.text:
        ot = cur.next()
        label = {"#": "padding", "/": "stride", "%": "modulo"}[ot.text]
        v, vt = cur.expect_int(f"{label} operand")
        op = Op(ot.text, v, ot.pos, vt.pos + len(vt.text))
        span = (ot.pos, op.end - ot.pos)
        if ot.text == "#":
            cur_size = dim if dim is not None else size
            if v < cur_size:
                raise MappingError(f"padding to {v} is smaller than the size {cur_size} it pads",
                                   cur.text, *span, where)
            if split or dim is not None or axis is None:
                dim = v                       # pads the dimension: positions >= size hold nothing
            else:
                padded = size = v             # pads the axis itself: PADDED_SIZE
        else:
            if axis is None:
                raise MappingError("the identity 1 cannot be split", cur.text, *span, where)
            if dim is not None:
                raise MappingError("cannot split a term after padding its dimension",
                                   cur.text, *span, where)
            if v < 1:
                raise MappingError(f"{label} operand must be >= 1", cur.text, *span, where)
            if size % v:
                hint = f"pad first, e.g. {axis} # {-(-padded // v) * v}" if not split else "pad the axis so it divides"
                raise MappingError(f"{label} {v} does not divide the size {size} ({hint})",
                                   cur.text, *span, where)
            if ot.text == "/":
                stride, size = stride * v, size // v
            else:
                size = v
            split = True
        ops.append(op)
    if cur.tok.kind == "op" and cur.tok.text == "=":
        raise cur.error("resize 'e = n' is not part of the VCG notation")
    end = ops[-1].end if ops else t.pos + len(t.text)
    if axis is None:
        # `1 # n`: one real position (the empty index) in a dimension of n.
        return Term(None, tuple(ops), 1, 1, dim if dim is not None else size if size > 1 else 1,
                    1, t.pos, end, where, cur.text)
    return Term(axis, tuple(ops), stride, size, dim if dim is not None else size, padded,
                t.pos, end, where, cur.text)


def parse_terms(text: str, axes: dict[str, int], where: str = "") -> tuple[Term, ...]:
    """'m![R # 12 / 4, A, R # 12 % 4]' or 'R # 12 / 4, A, R # 12 % 4' -> terms, major first."""
    cur = _Cursor(text, where)
    opened = cur.strip_wrapper("m![")
    if cur.tok.kind == "end" or (cur.tok.kind == "op" and cur.tok.text == "]"):
        if not opened and cur.tok.kind == "end":
            return ()                                      # empty text: m![1]
        raise cur.error("expected at least one term (use 1 for an empty dimension)")
    terms = [_parse_term(cur, axes, where)]
    while cur.tok.kind == "op" and cur.tok.text == ",":
        cur.next()
        terms.append(_parse_term(cur, axes, where))
    cur.close_wrapper(opened)
    return tuple(terms)


def format_terms(terms: tuple[Term, ...]) -> str:
    return "m![" + (", ".join(str(t) for t in terms) if terms else "1") + "]"


# ----------------------------------------------------------------------------- mapping

DIMS = ("Slice", "Time", "Packet")


@dataclass(frozen=True)
class Mapping:
    """Axis sizes and the Slice / Time / Packet expressions of one VE input."""
    axes: tuple[tuple[str, int], ...]
    slice: tuple[Term, ...]
    time: tuple[Term, ...]
    packet: tuple[Term, ...]

    @classmethod
    def parse(cls, axes: dict[str, int] | str, slice: str = "", time: str = "", packet: str = "") -> "Mapping":
        if isinstance(axes, str):
            axes = parse_axes(axes)
        m = cls(tuple(axes.items()),
                parse_terms(slice, axes, "Slice"),
                parse_terms(time, axes, "Time"),
                parse_terms(packet, axes, "Packet"))
        m.validate()
        return m

    # -- sizes and digits
    @property
    def axis_sizes(self) -> dict[str, int]:
        return dict(self.axes)

    def dim_terms(self, dim: str) -> tuple[Term, ...]:
        return {"Slice": self.slice, "Time": self.time, "Packet": self.packet}[dim]

    @property
    def num_slices(self) -> int:
        return math.prod(t.dim for t in self.slice)

    @property
    def num_steps(self) -> int:
        return math.prod(t.dim for t in self.time)

    @property
    def packet_size(self) -> int:
        return math.prod(t.dim for t in self.packet)

    def factors(self, axis: str) -> list[tuple[str, int, Term]]:
        """(dimension, position in it, term) for every term of `axis`."""
        return [(d, i, t) for d in DIMS for i, t in enumerate(self.dim_terms(d)) if t.axis == axis]

    def padded_size(self, axis: str) -> int:
        fs = self.factors(axis)
        return fs[0][2].padded if fs else self.axis_sizes[axis]

    def is_complete(self, axis: str) -> bool:
        """Every digit of `axis # PADDED_SIZE` placed exactly once (validate() excludes overlap)."""
        fs = self.factors(axis)
        return bool(fs) and math.prod(t.size for _, _, t in fs) == self.padded_size(axis)

    def is_padded(self, axis: str) -> bool:
        """Some placed position of `axis` is padding (axis padding or dimension padding)."""
        fs = self.factors(axis)
        return bool(fs) and (self.padded_size(axis) > self.axis_sizes[axis]
                             or any(t.dim_padded for _, _, t in fs))

    def __str__(self) -> str:
        return (f"axes![{format_axes(self.axis_sizes)}] Slice={format_terms(self.slice)} "
                f"Time={format_terms(self.time)} Packet={format_terms(self.packet)}")

    def to_dict(self) -> dict:
        return {"axes": self.axis_sizes,
                "slice": ", ".join(map(str, self.slice)) or "1",
                "time": ", ".join(map(str, self.time)) or "1",
                "packet": ", ".join(map(str, self.packet)) or "1"}

    # -- well-formedness that needs the whole mapping
    def validate(self) -> None:
        for name in self.axis_sizes:
            fs = self.factors(name)
            if not fs:
                continue
            first = fs[0][2]
            for _, _, t in fs[1:]:
                if t.padded != first.padded:
                    raise MappingError(
                        f"{shown(name)} is padded to {t.padded} here but to {first.padded} in "
                        f"{first.where} term {quote(str(first))}", t.source, t.pos, t.end - t.pos, t.where)
            # digits must not overlap: sorted by stride, each starts at or above the previous end
            # Sorted by (stride, size) only: two terms with equal keys overlap, and a Term
            # itself has no order.
            digits = sorted(((t.stride, t.size, t) for _, _, t in fs if t.size > 1), key=lambda d: d[:2])
            for (s0, k0, t0), (s1, _, t1) in zip(digits, digits[1:]):
                if s1 < s0 * k0 or s1 % (s0 * k0):
                    raise MappingError(
                        f"{quote(str(t1))} (stride {s1}) overlaps {quote(str(t0))} (stride {s0}, size {k0}): "
                        f"a digit of {shown(name)} would be placed twice", t1.source, t1.pos, t1.end - t1.pos, t1.where)
        if self.packet_size > FLIT_LANES:
            t = self.packet[-1] if self.packet else None
            raise MappingError(f"Packet holds {self.packet_size} positions; a flit has {FLIT_LANES}",
                               t.source if t else "", 0, t.end if t else 1, "Packet")


def dim_digits(terms: tuple[Term, ...], x):
    """Mixed-radix digits of position(s) x over `terms` (major first); works on ints and arrays."""
    out, w = [], 1
    for t in reversed(terms):
        out.append((x // w) % t.dim)
        w *= t.dim
    return out[::-1]
