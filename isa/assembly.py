"""Block text <-> Block: the assembler and the canonical disassembler (docs/assembly.md).

One statement per line; a block is a BSTART line and the descriptor lines after it:

    saxpy:                                   # optional label, names the next block
    BSTART.VEC TADD, FP16
        B.IOT t1@0b0011, t2@0b0011 -> t3@0b0011 CAP=4096
        B.DIM LB0=64, LB1=4
        B.DATR PAD=ZERO

Every name comes from the tables (isa/instructions.py, isa/datatypes.py, isa/fields.py) and
every field width from isa/encoding.py; any enumerated field also takes a raw integer, which is
how unassigned opcodes (`M0.F14`) and reserved codes (`DTYPE=27`, `CMODE=6`) are written.  The
assembler checks syntax and field widths only; legality is `isa.legality.resolve`'s job, so
every decodable stream disassembles and reassembles to the same bytes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from . import datatypes as dt
from . import encoding as enc
from . import fields as F
from .atomicio import quote, shown
from .block import BDatr, BDim, BIor, BIos, Block, BStart, TileBinding
from .errors import AsmError
from .instructions import CARRIER, by_carrier, BY_MNEMONIC, ENGINES

SPELLINGS = (*ENGINES, CARRIER)          # BSTART.VEC, BSTART.SFU, BSTART.TEPL

# Short text keys of the B.DATR fields (seed names are accepted too), in encoding order.
DATR_KEYS = {"PadValueOrByteId": "PAD", "CMode": "CMODE", "Sat": "SAT", "Canonicalize": "CANON",
             "DataType": "DTYPE", "RMode": "RMODE", "Layout": "LAYOUT"}
assert tuple(DATR_KEYS) == F.DATR_FIELDS

_DTYPE_NAMES = {d.code: d.name for d in dt.DATATYPES}
# Code tables whose names a field accepts; fields absent here take integers only.
VALUE_NAMES: dict[str, dict[int, str]] = {
    "PadValueOrByteId": F.PAD_VALUES, "CMode": F.CMODES, "RMode": F.RMODES,
    "Layout": F.LAYOUTS, "DataType": _DTYPE_NAMES,
}
IOR_FIELDS = ("RegSrc0", "RegSrc1", "RegSrc2", "RegDst")
IOS_KEY = "IMM"

_SPEC = {w.name: w for w in enc.WORDS}
_WIDTH = {(w.name, f.name): f.width for w in enc.WORDS for f in w.fields}
_RAW_OPCODE = re.compile(r"M(\d+)\.F(\d+)\Z", re.IGNORECASE)
_NUMBER = re.compile(r"(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|[0-9]+)\Z")
_BASES = {"0x": 16, "0b": 2, "0o": 8}
_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_TOKEN = re.compile(r"(?P<ws>\s+)|(?P<arrow>->)|(?P<num>[0-9][0-9A-Za-z_]*)"
                    r"|(?P<word>[A-Za-z_][A-Za-z0-9_.]*)|(?P<punct>[,=@:])|(?P<bad>.)", re.S)
_COMMENT = re.compile(r"[#;]")


@dataclass(frozen=True)
class AsmBlock:
    """One assembled block with where it came from (for error messages and listings)."""
    block: Block
    line: int                 # line of its BSTART
    name: str | None = None   # label naming the block, if any


class _Tok(NamedTuple):
    kind: str                 # num | word | arrow | punct | end
    text: str
    col: int


class _Line:
    """The tokens of one source line and a cursor over them."""

    def __init__(self, text: str, lineno: int, source: str | None):
        self.lineno, self.source = lineno, source
        self.toks: list[_Tok] = []
        cut = _COMMENT.search(text)
        body = text if cut is None else text[:cut.start()]
        for m in _TOKEN.finditer(body):
            kind = m.lastgroup
            if kind == "bad":
                self.fail(m.start() + 1, f"unexpected character {quote(m.group())}")
            if kind != "ws":
                self.toks.append(_Tok(kind, m.group(), m.start() + 1))
        pos = len(body)
        self.toks.append(_Tok("end", "", pos + 1))
        self.i = 0

    def fail(self, col: int, reason: str):
        raise AsmError(self.lineno, col, reason, self.source)

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def next(self) -> _Tok:
        tok = self.toks[self.i]
        if tok.kind != "end":
            self.i += 1
        return tok

    def accept(self, text: str) -> bool:
        if self.peek().text == text:
            self.i += 1
            return True
        return False

    def expect(self, text: str, what: str) -> _Tok:
        tok = self.next()
        if tok.text != text:
            self.fail(tok.col, f"expected {what}, found {_show(tok)}")
        return tok

    def end(self):
        tok = self.peek()
        if tok.kind != "end":
            self.fail(tok.col, f"unexpected {_show(tok)} at the end of the statement")

    # values -------------------------------------------------------------------------------

    def integer(self, what: str, width: int, tok: _Tok | None = None) -> int:
        tok = tok or self.next()
        if tok.kind != "num" or not _NUMBER.match(tok.text):
            self.fail(tok.col, f"expected an integer for {what}, found {_show(tok)}")
        base = _BASES.get(tok.text[:2].lower(), 10)
        # A value of `width` bits has at most `width` significant digits in any base; a longer
        # literal cannot fit, and is refused before int() spends time on (or refuses) it.
        digits = (tok.text if base == 10 else tok.text[2:]).lstrip("0") or "0"
        if len(digits) > width or (value := int(digits, base)) >= 1 << width:
            self.fail(tok.col, f"{what} {shown(tok.text, 24)} does not fit its {width}-bit field")
        return value

    def prefixed(self, prefix: str, what: str, width: int) -> int:
        """`t12` / `r3` style operand (or a bare integer)."""
        tok = self.next()
        if tok.kind == "word" and tok.text[:1].lower() == prefix and tok.text[1:].isdigit():
            return self.integer(what, width, _Tok("num", tok.text[1:], tok.col))
        if tok.kind == "num":
            return self.integer(what, width, tok)
        self.fail(tok.col, f"expected {what} as {prefix}<n>, found {_show(tok)}")

    def code(self, what: str, width: int, names: dict[int, str] | None) -> int:
        """A name from a code table, or a raw integer of the field's width."""
        tok = self.peek()
        if tok.kind == "word" and names:
            self.next()
            upper = tok.text.upper()
            for code, name in names.items():
                if name.upper() == upper:
                    return code
            self.fail(tok.col, f"unknown {what} {quote(tok.text)} (one of {', '.join(names.values())}, "
                               f"or a raw integer)")
        return self.integer(what, width)


def _show(tok: _Tok) -> str:
    return "end of line" if tok.kind == "end" else quote(tok.text)


def _fields(line: _Line, keys: dict[str, str], parse_value, descriptor: str) -> dict[str, int]:
    """Parse `KEY=value {, KEY=value}` (possibly empty); `keys` maps upper-case key -> field."""
    out: dict[str, int] = {}
    if line.peek().kind == "end":
        return out
    while True:
        tok = line.next()
        field = keys.get(tok.text.upper()) if tok.kind == "word" else None
        if field is None:
            line.fail(tok.col, f"expected a {descriptor} field ({', '.join(sorted(set(keys)))}), "
                               f"found {_show(tok)}")
        if field in out:
            line.fail(tok.col, f"{descriptor}.{field} given twice")
        line.expect("=", f"'=' after {shown(tok.text)}")
        out[field] = parse_value(field)
        if not line.accept(","):
            line.end()
            return out


# ------------------------------------------------------------------------------- statements

def _bstart(line: _Line, head: _Tok) -> BStart:
    spelling = head.text.split(".", 1)[1].upper() if "." in head.text else ""
    eng_col = head.col + len("BSTART.")
    if spelling not in SPELLINGS:
        line.fail(eng_col, f"unknown engine spelling {quote('BSTART.' + (spelling or '?'))} (one of "
                           f"{', '.join('BSTART.' + s for s in SPELLINGS)})")
    op = line.next()
    if op.kind != "word":
        line.fail(op.col, f"expected an instruction mnemonic or raw M<mode>.F<function>, found {_show(op)}")
    raw = _RAW_OPCODE.match(op.text)
    if raw:
        mode = line.integer("Mode", _WIDTH["BSTART", "Mode"], _Tok("num", raw.group(1), op.col))
        function = line.integer("Function", _WIDTH["BSTART", "Function"], _Tok("num", raw.group(2), op.col))
        row = by_carrier(mode, function)
    else:
        row = BY_MNEMONIC.get(op.text.upper())
        if row is None:
            line.fail(op.col, f"unknown instruction {quote(op.text)} (write an unassigned carrier "
                              f"opcode as M<mode>.F<function>)")
        mode, function = row.mode, row.function
    if row is None and spelling != CARRIER:
        line.fail(eng_col, f"TEPL Mode={mode}, Function={function} is unassigned and has no semantic "
                           f"engine; spell it BSTART.{CARRIER}")
    if row is not None and spelling not in (row.engine, CARRIER):
        line.fail(eng_col, f"{row.mnemonic} executes on the {row.engine} engine: the canonical "
                           f"spelling is BSTART.{row.engine} {row.mnemonic} (BSTART.{CARRIER} "
                           f"{row.mnemonic} is the carrier-compatible spelling)")
    line.expect(",", "',' before the DataType")
    dtype = line.code("DataType", _WIDTH["BSTART", "DataType"], _DTYPE_NAMES)
    line.end()
    return BStart(Mode=mode, Function=function, DataType=dtype, spelling=spelling)


def _binding(line: _Line) -> TileBinding:
    tile = line.prefixed("t", "tile", _WIDTH["B.IOT", "tile"])
    line.expect("@", "'@' and the binding's PE_MASK (e.g. t1@0b0011)")
    mask = line.integer("PE_MASK", _WIDTH["B.IOT", "PE_MASK"])
    capacity = None
    if line.peek().text.upper() == "CAP":
        line.next()
        line.expect("=", "'=' after CAP")
        capacity = line.integer("capacity", _WIDTH["B.IOT", "capacity"])
    return TileBinding(tile=tile, PE_MASK=mask, capacity=capacity)


def _iot(line: _Line) -> tuple[TileBinding, ...]:
    sources = []
    if not line.accept("->"):
        while True:
            sources.append(_binding(line))
            if line.accept("->"):
                break
            tok = line.next()
            if tok.text != ",":
                line.fail(tok.col, f"expected ',' or '->' between bindings, found {_show(tok)}")
    dest = _binding(line)
    line.end()
    return (*sources, dest)


def _dim(line: _Line) -> BDim:
    keys = {k: k for k in ("LB0", "LB1", "LB2")}
    return BDim(**_fields(line, keys, lambda f: line.integer(f, _WIDTH["B.DIM", f]), "B.DIM"))


def _datr(line: _Line) -> BDatr:
    keys = {k.upper(): f for f, k in DATR_KEYS.items()} | {f.upper(): f for f in DATR_KEYS}

    def value(field: str) -> int:
        return line.code(DATR_KEYS[field], _WIDTH["B.DATR", field], VALUE_NAMES.get(field))
    return BDatr(**_fields(line, keys, value, "B.DATR"))


def _ior(line: _Line) -> BIor:
    keys = {f.upper(): f for f in IOR_FIELDS}
    return BIor(**_fields(line, keys, lambda f: line.prefixed("r", f, _WIDTH["B.IOR", f]), "B.IOR"))


def _ios(line: _Line) -> BIos:
    got = _fields(line, {IOS_KEY: "value"}, lambda f: line.integer(IOS_KEY, _WIDTH["B.IOS", f]), "B.IOS")
    return BIos(**got)


# Descriptor statement -> (Block attribute, parser).
_DESCRIPTORS = {"B.IOT": ("iot", _iot), "B.DIM": ("dim", _dim), "B.DATR": ("datr", _datr),
                "B.IOR": ("ior", _ior), "B.IOS": ("ios", _ios)}
assert set(_DESCRIPTORS) == {w.name for w in enc.DESCRIPTORS}


class _Builder:
    def __init__(self, source: str | None):
        self.source = source
        self.out: list[AsmBlock] = []
        self.current: dict | None = None
        self.labels: dict[str, int] = {}
        self.pending_label: tuple[str, int, int] | None = None
        self._seen: dict[str, int] = {}       # descriptor -> line, within the current block

    def finish(self):
        cur, self.current = self.current, None
        if cur is None:
            return
        line, name = cur.pop("_line"), cur.pop("_name")
        block = Block(**cur)
        # Field widths were checked token by token; the block's descriptor count is the one
        # encoding limit left.
        count = len(block.iot) + sum(getattr(block, a) is not None for a in ("dim", "datr", "ior", "ios"))
        if count > enc.MAX_DESCRIPTORS:
            raise AsmError(line, 1, f"BSTART: {count} descriptor words exceed the {enc.COUNT_BITS}-bit "
                                    f"count (at most {enc.MAX_DESCRIPTORS})", self.source)
        self.out.append(AsmBlock(block, line, name))

    def statement(self, line: _Line):
        tok = line.next()
        if tok.kind == "end":
            return
        if tok.kind == "word" and line.peek().text == ":":
            line.next()
            if not _LABEL.match(tok.text):
                line.fail(tok.col, f"label {quote(tok.text)} must be a plain identifier")
            if tok.text in self.labels:
                line.fail(tok.col, f"label {quote(tok.text)} already names the block on line {self.labels[tok.text]}")
            if self.pending_label:
                line.fail(tok.col, f"label {quote(tok.text)} follows label {quote(self.pending_label[0])} "
                                   f"with no block between them")
            self.labels[tok.text] = line.lineno
            self.pending_label = (tok.text, line.lineno, tok.col)
            return self.statement(line)
        word = tok.text.upper() if tok.kind == "word" else ""
        if word == "BSTART" or word.startswith("BSTART."):
            self.finish()
            bstart = _bstart(line, tok)
            name = self.pending_label[0] if self.pending_label else None
            self.pending_label = None
            self.current = {"bstart": bstart, "_line": line.lineno, "_name": name, "iot": ()}
            self._seen = {}
            return
        if word not in _DESCRIPTORS:
            line.fail(tok.col, f"expected BSTART.<engine>, a descriptor ({', '.join(_DESCRIPTORS)}) "
                               f"or a label, found {_show(tok)}")
        if self.current is None:
            line.fail(tok.col, f"{word} before any BSTART: a descriptor belongs to the block above it")
        if self.pending_label:
            name, lno, col = self.pending_label
            raise AsmError(lno, col, f"label {quote(name)} must be followed by a BSTART, not {word}", self.source)
        if word in self._seen:
            line.fail(tok.col, f"{word} given twice in the block starting on line "
                               f"{self.current['_line']} (first on line {self._seen[word]})")
        self._seen[word] = line.lineno
        attr, parse = _DESCRIPTORS[word]
        self.current[attr] = parse(line)


def parse(text: str, source: str | None = None) -> list[AsmBlock]:
    """Assemble block text into AsmBlocks (block, BSTART line, label); AsmError on bad text."""
    builder = _Builder(source)
    lineno = 0
    for lineno, raw in enumerate(text.splitlines(), 1):
        builder.statement(_Line(raw, lineno, source))
    if builder.pending_label:
        name, lno, col = builder.pending_label
        raise AsmError(lno, col, f"label {quote(name)} names no block", source)
    builder.finish()
    return builder.out


def assemble_blocks(text: str, source: str | None = None) -> list[Block]:
    return [b.block for b in parse(text, source)]


def assemble(text: str, source: str | None = None) -> bytes:
    """Block text -> `.tbs` bytes.  `source` (a file name) prefixes AsmError messages."""
    return enc.encode(assemble_blocks(text, source))


# ----------------------------------------------------------------------------- disassembly

def _name_or_code(code: int, names: dict[int, str] | None) -> str:
    return names[code] if names and code in names else str(code)


def _bstart_text(b: BStart) -> str:
    row = by_carrier(b.Mode, b.Function)
    opcode = f"{row.engine} {row.mnemonic}" if row else f"{CARRIER} M{b.Mode}.F{b.Function}"
    return f"BSTART.{opcode}, {_name_or_code(b.DataType, _DTYPE_NAMES)}"


def _binding_text(t: TileBinding) -> str:
    cap = "" if t.capacity is None else f" CAP={t.capacity}"
    return f"t{t.tile}@0b{t.PE_MASK:0{F.PE_MASK_BITS}b}{cap}"


def _descriptor_lines(block: Block) -> list[str]:
    lines = []
    if block.iot:
        *srcs, dst = block.iot
        sources = ", ".join(_binding_text(t) for t in srcs)
        lines.append(f"B.IOT {sources + ' ' if sources else ''}-> {_binding_text(dst)}")
    if block.dim is not None:
        parts = [f"{k}={getattr(block.dim, k)}" for k in ("LB0", "LB1", "LB2") if getattr(block.dim, k) is not None]
        lines.append(" ".join(["B.DIM", ", ".join(parts)]).rstrip())
    if block.datr is not None:
        parts = [f"{key}={_name_or_code(getattr(block.datr, f), VALUE_NAMES.get(f))}"
                 for f, key in DATR_KEYS.items() if getattr(block.datr, f) is not None]
        lines.append(" ".join(["B.DATR", ", ".join(parts)]).rstrip())
    if block.ior is not None:
        parts = [f"{f}=r{getattr(block.ior, f)}" for f in IOR_FIELDS if getattr(block.ior, f)]
        lines.append(" ".join(["B.IOR", ", ".join(parts)]).rstrip())
    if block.ios is not None:
        lines.append(f"B.IOS {IOS_KEY}={block.ios.value}" if block.ios.value else "B.IOS")
    return lines


def disassemble(data_or_blocks) -> str:
    """Canonical block text for a `.tbs` byte string (decoded first) or a sequence of Blocks.

    Each block is headed by a comment with its index and the byte offset of its BSTART in the
    canonical encoding, so emulator messages ("block 3 at byte 112") can be found in the text.
    """
    if isinstance(data_or_blocks, (bytes, bytearray, memoryview)):
        blocks = enc.decode(data_or_blocks)
    else:
        blocks = list(data_or_blocks)
    out = [f"# tile-emu block stream, .tbs format version {enc.VERSION}: {len(blocks)} block(s)"]
    offset = enc.HEADER_BYTES
    for i, block in enumerate(blocks):
        words = enc.block_words(block, i)
        out.append("")
        out.append(f"{_bstart_text(block.bstart):<40}# block {i}, byte {offset}")
        out.extend("    " + s for s in _descriptor_lines(block))
        offset += enc.WORD_BYTES * len(words)
    return "\n".join(out) + "\n"
