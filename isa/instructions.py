"""The instruction table: one row per decision of the seed (ADR 0080, Decisions 056-081, 126-128).

Legality that needs no machine state is read from these rows; nothing elsewhere branches on a
mnemonic to decide what is legal.  `engine` is the semantic engine (canonical spelling
`BSTART.<engine>`); the raw carrier is TEPL Mode/Function for every row, so `BSTART.TEPL` is
the carrier-compatible spelling.  Unassigned (Mode, Function) pairs are illegal.

The last columns are the facts other layers need of an instruction, so that a new row needs no
edit elsewhere: the golden value family (emulator/golden/coverage.py), the laws of a binary
instruction as a reduction merge (emulator/calculus/tilelaws.py), its Berkeley TestFloat
function (emulator/golden/export.py) and the fabric floating operation schema it implements
(fabric/sim/semantics.py).  Each engine's op list (emulator/pe.json) is its rows.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import datatypes as dt

CARRIER = "TEPL"
ENGINES = ("VEC", "SFU")

# Schemas group rows that share a block shape; the emulator maps each schema to one executor.
BINARY, UNARY, TERNARY, COMPARE, SELECT, CONVERT, EXTRACT, INSERT, IMG2COL = (
    "binary", "unary", "ternary", "compare", "select", "convert", "extract", "insert", "img2col")


@dataclass(frozen=True)
class Instruction:
    mnemonic: str
    decision: int
    mode: int                     # TEPL carrier Mode
    function: int                 # TEPL carrier Function
    engine: str                   # semantic engine: VEC or SFU
    schema: str
    sources: tuple[str, ...]      # operand roles, in B.IOT binding order
    dest: str                     # role of the one destination binding (last in B.IOT)
    dtypes: frozenset[str]        # exact DataType set of BSTART's DataType
    datr: frozenset[str]          # applicable B.DATR fields; others must be omitted or default
    uses_ior: bool = False        # B.IOR optional (offsets from private GPRs); else illegal
    int_zero_check: bool = False  # integer zero divisor in the valid rectangle rejects
    dest_kind: str = "numeric"    # numeric | predicate
    location: str = "Local"       # location of sources and destination
    # Golden value construction: which arithmetic the value classes aim at (add, sub, mul, div,
    # fma, minmax, bitwise, shift; None: the schema's own name -- unary, select, ... -- or
    # "move" for the copies through GPR offsets).
    family: str | None = None
    # As the merge of a tile reduction, per DataType class ("int", "float"): (associative,
    # commutative, regroup -- whether a tree policy may regroup it).  Absent: strict folds only.
    merge_laws: tuple[tuple[str, tuple[bool, bool, bool]], ...] = ()
    testfloat: str | None = None      # Berkeley TestFloat's operation name (f32_<name>)
    float_schema: str | None = None   # the fabric operation schema with its floating semantics (ieee)

    @property
    def arity(self) -> int:
        return len(self.sources)

    @property
    def golden_family(self) -> str:
        """The golden value family: `family`, else "move" for the GPR-offset copies, else the schema."""
        if self.family is not None:
            return self.family
        return "move" if self.uses_ior else self.schema

    @property
    def canonical_spelling(self) -> str:
        return f"BSTART.{self.engine} {self.mnemonic}"


_PAD = frozenset({"PadValueOrByteId"})
_BIN = ("left", "right")
# merge laws: integer arithmetic wraps modulo 2^W (an exact commutative monoid: no regrouping
# needed); floating TADD/TMUL/TMAX/TMIN are commutative, not associative, and a tree may regroup
_INT_MONOID = ("int", (True, True, False))
_FLOAT_COMMUTATIVE = ("float", (False, True, True))
_MONOID = (_INT_MONOID, _FLOAT_COMMUTATIVE)


def _row(mn, dec, mode, fn, eng, schema, srcs, dtypes, datr=_PAD, dest="dst", **kw):
    return Instruction(mn, dec, mode, fn, eng, schema, tuple(srcs), dest, dtypes, frozenset(datr), **kw)


INSTRUCTIONS: tuple[Instruction, ...] = (
    _row("TADD", 57, 0, 0, "VEC", BINARY, _BIN, dt.ELEMENTWISE, family="add", merge_laws=_MONOID,
         testfloat="add", float_schema="arith.addf"),
    _row("TSUB", 58, 0, 1, "VEC", BINARY, _BIN, dt.ELEMENTWISE, family="sub", testfloat="sub",
         float_schema="arith.subf"),
    _row("TMUL", 59, 0, 2, "VEC", BINARY, _BIN, dt.ELEMENTWISE, family="mul", merge_laws=_MONOID,
         testfloat="mul", float_schema="arith.mulf"),
    _row("TDIV", 60, 0, 3, "SFU", BINARY, ("numerator", "denominator"), dt.ELEMENTWISE, int_zero_check=True,
         family="div", testfloat="div", float_schema="arith.divf"),
    _row("TREM", 61, 0, 4, "SFU", BINARY, ("dividend", "divisor"), dt.ELEMENTWISE, int_zero_check=True,
         family="div"),
    _row("TAND", 62, 0, 6, "VEC", BINARY, _BIN, dt.INTEGER, family="bitwise", merge_laws=(_INT_MONOID,)),
    _row("TOR", 63, 0, 7, "VEC", BINARY, _BIN, dt.INTEGER, family="bitwise", merge_laws=(_INT_MONOID,)),
    _row("TXOR", 64, 0, 8, "VEC", BINARY, _BIN, dt.INTEGER, family="bitwise", merge_laws=(_INT_MONOID,)),
    _row("TSHL", 65, 0, 9, "VEC", BINARY, ("value", "count"), dt.INTEGER, family="shift"),
    _row("TSHR", 66, 0, 10, "VEC", BINARY, ("value", "count"), dt.INTEGER, family="shift"),
    _row("TMAX", 67, 0, 11, "VEC", BINARY, _BIN, dt.ELEMENTWISE, family="minmax", merge_laws=_MONOID,
         float_schema="arith.maxnumf"),
    _row("TMIN", 68, 0, 12, "VEC", BINARY, _BIN, dt.ELEMENTWISE, family="minmax", merge_laws=_MONOID,
         float_schema="arith.minnumf"),
    _row("TCMP", 69, 0, 13, "VEC", COMPARE, _BIN, dt.ELEMENTWISE,
         datr={"PadValueOrByteId", "CMode"}, dest_kind="predicate", family="minmax"),
    _row("TABS", 70, 0, 15, "VEC", UNARY, ("src",), dt.ELEMENTWISE, float_schema="math.absf"),
    _row("TNOT", 71, 0, 16, "VEC", UNARY, ("src",), dt.INTEGER, family="bitwise"),
    _row("TNEG", 72, 0, 17, "VEC", UNARY, ("src",), dt.ELEMENTWISE, float_schema="arith.negf"),
    _row("TEXP", 73, 0, 18, "SFU", UNARY, ("src",), dt.FLOATING, float_schema="math.exp"),
    _row("TLOG", 74, 0, 19, "SFU", UNARY, ("src",), dt.FLOATING, float_schema="math.log"),
    _row("TRECIP", 75, 0, 20, "SFU", UNARY, ("src",), dt.FLOATING),
    _row("TSQRT", 76, 0, 21, "SFU", UNARY, ("src",), dt.FLOATING, testfloat="sqrt", float_schema="math.sqrt"),
    _row("TRSQRT", 77, 0, 22, "SFU", UNARY, ("src",), dt.FLOATING, float_schema="math.rsqrt"),
    _row("TRELU", 78, 0, 23, "VEC", UNARY, ("src",), dt.ELEMENTWISE),
    _row("TSEL", 79, 0, 26, "VEC", SELECT, ("mask", "true", "false"), dt.ELEMENTWISE),
    _row("TCVT", 80, 0, 27, "VEC", CONVERT, ("src",), dt.ALL,
         datr={"PadValueOrByteId", "Sat", "Canonicalize", "DataType", "RMode", "Layout"}),
    _row("TFMA", 81, 0, 28, "VEC", TERNARY, ("left", "right", "addend"), dt.ELEMENTWISE, family="fma",
         testfloat="mulAdd", float_schema="math.fma"),
    _row("TEXTRACT", 126, 3, 2, "SFU", EXTRACT, ("src",), dt.ALL_BUT_HIF4,
         datr={"PadValueOrByteId", "Layout"}, uses_ior=True),
    _row("TINSERT", 127, 3, 3, "SFU", INSERT, ("old_dst", "insertion"), dt.ALL_BUT_HIF4,
         datr={"Layout"}, uses_ior=True),
    _row("TIMG2COL", 128, 3, 4, "SFU", IMG2COL, ("feature_map",), dt.IMG2COL,
         datr=(), uses_ior=True, location="Matrix"),
)

BY_MNEMONIC: dict[str, Instruction] = {i.mnemonic: i for i in INSTRUCTIONS}
BY_CARRIER: dict[tuple[int, int], Instruction] = {(i.mode, i.function): i for i in INSTRUCTIONS}

assert len(BY_CARRIER) == len(BY_MNEMONIC) == len(INSTRUCTIONS), "two rows share a mnemonic or a carrier"


def by_carrier(mode: int, function: int) -> Instruction | None:
    """The row a TEPL (Mode, Function) pair selects, or None when the pair is unassigned."""
    return BY_CARRIER.get((mode, function))


def lookup(mnemonic: str) -> Instruction:
    try:
        return BY_MNEMONIC[mnemonic.upper()]
    except KeyError:
        raise KeyError(f"unknown tile instruction {mnemonic!r}") from None
