"""Registered operation schemas: the one owner of exact actor semantics.

An `Actor` is the closed canonical projection of one Canonical Dataflow actor instance:
OperationSchemaId, exact function type, closed semantic attributes.  The same immutable
value is consumed unchanged by graph admission (`check_actor`), by capability matching
(`capability.supports`) and by the semantic-field projector (`relation`): nobody copies an
attribute dictionary or infers an alias from a name.

`SCHEMAS` is the registry keyed by OperationSchemaId spelling.  Each row names the shape
rule (types and arity) and the closed attribute set with their kinds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Callable

from isa import datatypes as _dt
from isa.instructions import INSTRUCTIONS as _TILE_INSTRUCTIONS

from . import codec
from .atoms import (ACCURACY_TIERS, FAST_MATH_FLAGS, FLOAT_PREDICATES, INTEGER_PREDICATES,
                    ROUNDING_MODES, STEP_KINDS)
from .types import (I1, FloatType, IndexType, IntegerType, NoneType, PointerType, TaggedType,
                    VectorType, payload_bits)


class ActorInvalid(ValueError):
    """The actor is not a valid instance of its registered schema."""


@dataclass(frozen=True)
class Actor:
    schema: str
    inputs: tuple
    results: tuple
    attributes: tuple = ()  # sorted ((name, value), ...) with immutable values

    def attr(self, name: str, default=None):
        for k, v in self.attributes:
            if k == name:
                return v
        return default

    @property
    def attrs(self) -> dict:
        return dict(self.attributes)

    def canonical_bytes(self) -> bytes:
        return codec.encode_actor(self.schema, self.inputs, self.results, self.attrs)

    def __str__(self) -> str:
        a = ", ".join(f"{k}={_show(v)}" for k, v in self.attributes)
        sig = f"({', '.join(map(str, self.inputs))}) -> ({', '.join(map(str, self.results))})"
        return f"{self.schema}{{{a}}} : {sig}" if a else f"{self.schema} : {sig}"


def _show(v) -> str:
    if isinstance(v, frozenset):
        return "[" + ",".join(sorted(v)) + "]"
    if isinstance(v, tuple):
        return "[" + ",".join(_show(x) for x in v) + "]"
    return str(v).lower() if isinstance(v, bool) else str(v)


def _freeze(v):
    if isinstance(v, (set, frozenset)):
        return frozenset(v)
    if isinstance(v, list | tuple):
        return tuple(_freeze(x) for x in v)
    return v


def make_actor(schema: str, inputs, results, **attributes) -> Actor:
    """Build an actor with normalised immutable attributes (absent = None = omitted)."""
    attrs = tuple(sorted((k, _freeze(v)) for k, v in attributes.items() if v is not None))
    return Actor(schema, tuple(inputs), tuple(results), attrs)


# --- attribute kinds ---------------------------------------------------------------------

def _subset_of(universe):
    def check(v):
        if not isinstance(v, frozenset) or not v <= frozenset(universe):
            raise ActorInvalid(f"must be a subset of {sorted(universe)}")
    return check


def _member_of(table):
    def check(v):
        if v not in table:
            raise ActorInvalid(f"{v!r} is not one of {list(table)}")
    return check


def _boolean(v):
    if not isinstance(v, bool):
        raise ActorInvalid("must be a boolean")


def _raw_bits(v):
    if isinstance(v, bool) or not (isinstance(v, int) or (isinstance(v, tuple) and all(
            isinstance(x, int) and not isinstance(x, bool) for x in v))):
        raise ActorInvalid("must be raw bits: an integer, or a list of integers for a dense vector")


def _positions(v):
    if not isinstance(v, tuple) or not all(x == "dynamic" or (isinstance(x, int) and not isinstance(x, bool))
                                           for x in v):
        raise ActorInvalid("must be a list of integers and \"dynamic\"")


def _mask(v):
    if not isinstance(v, tuple) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        raise ActorInvalid("must be a list of integers (-1 = poison)")


ATTRIBUTE_KINDS: dict[str, Callable] = {
    "overflow": _subset_of({"nsw", "nuw"}),
    "exact": _boolean,
    "nneg": _boolean,
    "disjoint": _boolean,
    "zero_poison": _boolean,
    "predicate_int": _member_of(INTEGER_PREDICATES),
    "predicate_float": _member_of(FLOAT_PREDICATES),
    "fastmath": _subset_of(FAST_MATH_FLAGS),
    "rounding_mode": _member_of(ROUNDING_MODES),
    "accuracy": _member_of(ACCURACY_TIERS),
    "step_kind": _member_of(STEP_KINDS),
    "value": _raw_bits,
    "static_position": _positions,
    "mask": _mask,
    "tile_datatype": _member_of(tuple(d.name for d in _dt.DATATYPES)),
}

# attribute name -> (kind, required)
A_OVERFLOW = {"overflow": ("overflow", False)}
A_EXACT = {"exact": ("exact", False)}
A_FLOAT = {"fastmath": ("fastmath", False)}
A_FLOAT_ROUNDING = {"fastmath": ("fastmath", False), "rounding_mode": ("rounding_mode", False)}
A_CMPI = {"predicate": ("predicate_int", True)}
A_CMPF = {"predicate": ("predicate_float", True), "fastmath": ("fastmath", False)}
A_SPECIAL = {"fastmath": ("fastmath", False), "accuracy": ("accuracy", True)}


# --- shape rules ---------------------------------------------------------------------------

def _need(cond: bool, msg: str):
    if not cond:
        raise ActorInvalid(msg)


def _arity(a: Actor, n_in: int | None, n_out: int | None):
    if n_in is not None:
        _need(len(a.inputs) == n_in, f"{a.schema} takes {n_in} operands, not {len(a.inputs)}")
    if n_out is not None:
        _need(len(a.results) == n_out, f"{a.schema} has {n_out} results, not {len(a.results)}")


def _intlike(t) -> bool:
    e = t.element if isinstance(t, VectorType) else t
    return isinstance(e, IntegerType) or (isinstance(t, IndexType))


def _floatlike(t) -> bool:
    e = t.element if isinstance(t, VectorType) else t
    return isinstance(e, FloatType)


def _shape_of(t):
    return t.shape if isinstance(t, VectorType) else None


def _bool_like(t, like) -> bool:
    """i1 for a scalar, vector<same shape x i1> for a vector."""
    if isinstance(like, VectorType):
        return t == VectorType(like.shape, I1)
    return t == I1


def uniform(n_in: int, numeric: Callable) -> Callable:
    def rule(a: Actor):
        _arity(a, n_in, 1)
        t = a.inputs[0]
        _need(numeric(t), f"{a.schema} operands must be {numeric.__name__.strip('_')} types, not {t}")
        _need(all(x == t for x in a.inputs) and a.results[0] == t,
              f"{a.schema} requires every operand and the result to have one type")
    return rule


def compare(numeric: Callable) -> Callable:
    def rule(a: Actor):
        _arity(a, 2, 1)
        t = a.inputs[0]
        _need(numeric(t) and a.inputs[1] == t, f"{a.schema} compares two operands of one type")
        _need(_bool_like(a.results[0], t), f"{a.schema} produces i1 of the operand shape")
    return rule


def select_rule(a: Actor):
    _arity(a, 3, 1)
    _need(_bool_like(a.inputs[0], a.inputs[1]), "select condition must be i1 of the value shape")
    _need(a.inputs[1] == a.inputs[2] == a.results[0], "select values and result share one type")
    _need(isinstance(a.inputs[1], (IntegerType, FloatType, VectorType)), "select value must be numeric")


def cast(src_ok: Callable, dst_ok: Callable, relation: str | None) -> Callable:
    def rule(a: Actor):
        _arity(a, 1, 1)
        s, d = a.inputs[0], a.results[0]
        _need(src_ok(s) and dst_ok(d), f"{a.schema} does not convert {s} to {d}")
        _need(_shape_of(s) == _shape_of(d), f"{a.schema} keeps the operand shape")
        if relation is not None:
            ws, wd = _elem_width(s), _elem_width(d)
            ok = {"wider": wd > ws, "narrower": wd < ws, "equal": wd == ws}[relation]
            _need(ok, f"{a.schema} requires a {relation} destination ({s} -> {d})")
    return rule


def _elem_width(t) -> int:
    e = t.element if isinstance(t, VectorType) else t
    return e.width


def _int(t):
    return _intlike(t) and not isinstance(t, IndexType)


def _flt(t):
    return _floatlike(t)


def _num(t):
    return _int(t) or _flt(t)


def index_cast_rule(a: Actor):
    _arity(a, 1, 1)
    s, d = a.inputs[0], a.results[0]
    kinds = (isinstance(s, IndexType), isinstance(d, IndexType))
    _need(kinds.count(True) == 1, f"{a.schema} needs exactly one index endpoint")
    other = d if kinds[0] else s
    _need(isinstance(other, IntegerType), f"{a.schema} converts between index and an integer")


def unary_int(a: Actor):
    _arity(a, 1, 1)
    _need(_int(a.inputs[0]) and a.results[0] == a.inputs[0], f"{a.schema} maps an integer to its type")


def stream_rule(a: Actor):
    _arity(a, 3, 2)
    t = a.inputs[0]
    _need(isinstance(t, IntegerType) and a.inputs[1] == t == a.inputs[2],
          "dataflow.stream takes (start, limit, step) of one integer type")
    _need(a.results[0] == t and a.results[1] == I1, "dataflow.stream yields (index value, i1 continue)")


def _token_payload(t) -> bool:
    return isinstance(t, (IntegerType, FloatType, VectorType, NoneType, TaggedType, PointerType))


def carry_rule(a: Actor):
    _arity(a, 3, 1)
    _need(a.inputs[0] == I1, "dataflow.carry condition is i1")
    t = a.inputs[1]
    _need(_token_payload(t) and a.inputs[2] == t == a.results[0], "carry init, next and result share one type")


def invariant_rule(a: Actor):
    _arity(a, 2, 1)
    _need(a.inputs[0] == I1, "dataflow.invariant condition is i1")
    _need(_token_payload(a.inputs[1]) and a.results[0] == a.inputs[1], "invariant value and result share one type")


def gate_rule(a: Actor):
    _arity(a, 2, 2)
    _need(a.inputs[0] == I1 and a.results[0] == I1, "dataflow.gate condition in and out are i1")
    _need(_token_payload(a.inputs[1]) and a.results[1] == a.inputs[1], "gate value and result share one type")


def constant_rule(a: Actor):
    _arity(a, 1, 1)
    _need(isinstance(a.inputs[0], NoneType), "dataflow.constant is triggered by one none token")
    t = a.results[0]
    _need(isinstance(t, (IntegerType, FloatType, VectorType)),
          "the registered constant codec admits scalar and dense integer/floating constants only")
    v = a.attr("value")
    w = _elem_width(t)
    lanes = t.num_elements if isinstance(t, VectorType) else None
    if lanes is None:
        _need(isinstance(v, int) and 0 <= v < (1 << w), f"constant value must be raw bits of {t}")
    else:
        _need(isinstance(v, tuple) and len(v) == lanes and all(0 <= x < (1 << w) for x in v),
              f"dense constant needs {lanes} raw {w}-bit lanes")


def sync_rule(a: Actor):
    _need(len(a.inputs) >= 1 and a.results == a.inputs, "dataflow.sync passes n >= 1 lanes through unchanged")
    _need(all(_token_payload(t) for t in a.inputs), "sync lanes carry token payloads")


def _selector_ok(sel, fan: int) -> bool:
    if fan == 2 and sel == I1:
        return True
    if isinstance(sel, IndexType):
        return True
    return isinstance(sel, IntegerType) and (1 << sel.width) >= fan


def mux_rule(a: Actor):
    _need(len(a.inputs) >= 3 and len(a.results) == 1, "dataflow.mux takes a selector and >= 2 data inputs")
    data = a.inputs[1:]
    _need(all(t == a.results[0] for t in data) and _token_payload(a.results[0]), "mux data and result share one type")
    _need(_selector_ok(a.inputs[0], len(data)), "mux selector must address every data input")


def demux_rule(a: Actor):
    _need(len(a.inputs) == 2 and len(a.results) >= 2, "dataflow.demux takes (selector, data) and has >= 2 results")
    _need(all(t == a.inputs[1] for t in a.results) and _token_payload(a.inputs[1]), "demux data and results share one type")
    _need(_selector_ok(a.inputs[0], len(a.results)), "demux selector must address every result")


def _pack_pair(vec, packed) -> bool:
    return (isinstance(vec, VectorType) and isinstance(packed, IntegerType)
            and payload_bits(vec) == packed.width)


def pack_rule(a: Actor):
    _arity(a, 1, 1)
    _need(_pack_pair(a.inputs[0], a.results[0]), "dataflow.pack maps a fixed vector to an integer of equal total width")


def unpack_rule(a: Actor):
    _arity(a, 1, 1)
    _need(_pack_pair(a.results[0], a.inputs[0]), "dataflow.unpack maps an integer to a fixed vector of equal total width")


def _group(vec, mask, elem) -> bool:
    return (isinstance(vec, VectorType) and len(vec.shape) == 1 and vec.element == elem
            and mask == VectorType(vec.shape, I1))


def parallelize_rule(a: Actor):
    _arity(a, 2, 3)
    e = a.inputs[0]
    _need(isinstance(e, (IntegerType, FloatType)) and a.inputs[1] == I1, "parallelize takes (element, i1 phase)")
    _need(_group(a.results[0], a.results[1], e) and a.results[2] == I1,
          "parallelize yields (vector<L x E>, vector<L x i1> mask, i1 group_phase)")


def serialize_rule(a: Actor):
    _arity(a, 3, 2)
    vec = a.inputs[0]
    _need(isinstance(vec, VectorType) and _group(vec, a.inputs[1], vec.element) and a.inputs[2] == I1,
          "serialize takes (vector<L x E>, vector<L x i1> mask, i1 phase)")
    _need(a.results[0] == vec.element and a.results[1] == I1, "serialize yields (element, i1 phase)")


def slice_geometry(container: VectorType, positions: tuple):
    """Row-major geometry of a vector.extract/insert position: (slice type, slice bits,
    static offset bits with dynamic positions at zero, dynamic strides in operand order)."""
    k = len(positions)
    e = container.element.width
    strides = [prod(container.shape[i + 1:]) * e for i in range(k)]
    static = sum(p * s for p, s in zip(positions, strides) if p != "dynamic")
    dyn = tuple(s for p, s in zip(positions, strides) if p == "dynamic")
    tail = container.shape[k:]
    slice_t = container.element if not tail else VectorType(tail, container.element)
    return slice_t, payload_bits(slice_t), static, dyn


def _check_positions(a: Actor, container) -> tuple:
    pos = a.attr("static_position")
    _need(isinstance(container, VectorType), f"{a.schema} needs a fixed vector container")
    _need(pos is not None and 1 <= len(pos) <= len(container.shape),
          f"{a.schema} static_position has 1..rank entries")
    for p, d in zip(pos, container.shape):
        _need(p == "dynamic" or 0 <= p < d, f"static position {p} is outside dimension {d}")
    return pos


def _slice_operands(a: Actor, container: int):
    """The slice type of vector.extract (container operand 0) / vector.insert (operand 1), after
    checking one index operand per dynamic position follows the container."""
    pos = _check_positions(a, a.inputs[container])
    ndyn = sum(1 for p in pos if p == "dynamic")
    _need(len(a.inputs) == container + 1 + ndyn and all(isinstance(t, IndexType) for t in a.inputs[container + 1:]),
          f"{a.schema} takes one index operand per dynamic position")
    return slice_geometry(a.inputs[container], pos)[0]


def extract_rule(a: Actor):
    _need(len(a.inputs) >= 1 and len(a.results) == 1, "vector.extract takes (vector, positions...)")
    slice_t = _slice_operands(a, 0)
    _need(a.results[0] == slice_t, f"vector.extract result must be {slice_t}")


def insert_rule(a: Actor):
    _need(len(a.inputs) >= 2 and len(a.results) == 1, "vector.insert takes (value, vector, positions...)")
    slice_t = _slice_operands(a, 1)
    _need(a.inputs[0] == slice_t and a.results[0] == a.inputs[1], f"vector.insert inserts a {slice_t}")


def shuffle_rule(a: Actor):
    _arity(a, 2, 1)
    v1, v2, r = a.inputs[0], a.inputs[1], a.results[0]
    _need(all(isinstance(t, VectorType) for t in (v1, v2, r)), "vector.shuffle works on fixed vectors")
    _need(v1.element == v2.element == r.element and v1.shape[1:] == v2.shape[1:] == r.shape[1:],
          "vector.shuffle operands and result share the element type and trailing shape")
    mask = a.attr("mask")
    _need(mask is not None and len(mask) == r.shape[0], "vector.shuffle mask has one entry per result block")
    n = v1.shape[0] + v2.shape[0]
    _need(all(-1 <= m < n for m in mask), f"shuffle mask entries are -1 (poison) or in [0, {n})")


# --- tile instructions (isa.instructions): one schema per row, `tile.<MNEMONIC>` -----------------
# A tile actor is one element of a block: each operand and the result is the raw encoding of one
# element (i<container bits>; i1 for a packed-predicate mask or TCMP result), and the `datatype`
# attribute (BSTART's DataType) owns its interpretation, since Fabric's float formats cannot
# spell TF32, E4M3, ...  TCVT's optional `destination_datatype` is B.DATR.DataType (absent =
# inherit).  The instruction row owns the exact DataType set; the engine resource restricts it.

def tile_schema_id(instr) -> str:
    return f"tile.{instr.mnemonic}"


def tile_operand_types(instr, dtype: str, destination: str | None = None) -> tuple[tuple, tuple]:
    """(inputs, results) of the element actor of `instr` on `dtype` (TCVT: to `destination`)."""
    elem = IntegerType(_dt.datatype(dtype).container)
    ins = tuple(I1 if role == "mask" else elem for role in instr.sources)
    if instr.dest_kind == "predicate":
        out = I1
    elif destination is not None:
        out = IntegerType(_dt.datatype(destination).container)
    else:
        out = elem
    return ins, (out,)


def _tile_rule(instr):
    def rule(a: Actor):
        d, e = a.attr("datatype"), a.attr("destination_datatype")
        _need(d in instr.dtypes, f"{instr.mnemonic} does not support DataType {d}")
        _need(e is None or e in instr.dtypes, f"{instr.mnemonic} does not produce DataType {e}")
        ins, outs = tile_operand_types(instr, d, e)
        _need(a.inputs == ins and a.results == outs,
              f"{a.schema} on {d} is ({', '.join(map(str, ins))}) -> ({', '.join(map(str, outs))})")
    return rule


def _tile_attributes(instr) -> dict:
    a = {"datatype": ("tile_datatype", True)}
    if "DataType" in instr.datr:
        a["destination_datatype"] = ("tile_datatype", False)
    return a


def gep_rule(a: Actor):
    _need(len(a.inputs) >= 1 and isinstance(a.inputs[0], PointerType) and len(a.results) == 1
          and a.results[0] == a.inputs[0], "llvm.getelementptr maps (ptr, indices...) to ptr")
    _need(all(isinstance(t, IntegerType) for t in a.inputs[1:]), "GEP indices are integers")


# --- the registry ---------------------------------------------------------------------------

@dataclass(frozen=True)
class OperationSchema:
    id: str
    shape: Callable
    attributes: dict = field(default_factory=dict)
    signature: str = ""
    fixed: dict = field(default_factory=dict)  # attribute values the schema itself fixes


def _row(id, shape, attributes=None, signature="", fixed=None):
    return OperationSchema(id, shape, dict(attributes or {}), signature, dict(fixed or {}))


_U1F = uniform(1, _flt)
_U2F = uniform(2, _flt)
_U2I = uniform(2, _int)

SCHEMAS: dict[str, OperationSchema] = {s.id: s for s in [
    # rows alike but for their name, listed once (the order of SCHEMAS is the order written)
    *[_row(f"arith.{n}", _U2I, A_OVERFLOW, "(T, T) -> T") for n in ("addi", "subi", "muli")],
    *[_row(f"arith.{n}", _U2I, {}, "(T, T) -> T") for n in ("andi", "ori", "xori")],
    _row("llvm.or", _U2I, {}, "(T, T) -> T", fixed={"disjoint": True}),
    _row("arith.shli", _U2I, A_OVERFLOW, "(T, T) -> T"),
    *[_row(f"arith.{n}", _U2I, A_EXACT, "(T, T) -> T") for n in ("shrsi", "shrui", "divsi")],
    _row("arith.remsi", _U2I, {}, "(T, T) -> T"),
    _row("arith.divui", _U2I, A_EXACT, "(T, T) -> T"),
    _row("arith.remui", _U2I, {}, "(T, T) -> T"),
    *[_row(f"llvm.intr.{n}.sat", _U2I, {}, "(T, T) -> T") for n in ("sadd", "uadd", "ssub", "usub")],
    *[_row(f"math.{n}", unary_int, {}, "(T) -> T") for n in ("ctlz", "cttz")],
    *[_row(f"llvm.intr.{n}", unary_int, {}, "(T) -> T", fixed={"zero_poison": True}) for n in ("ctlz", "cttz")],
    _row("arith.cmpi", compare(_int), A_CMPI, "(T, T) -> i1"),
    *[_row(f"arith.{n}", _U2I, {}, "(T, T) -> T") for n in ("minsi", "maxsi", "minui", "maxui")],
    _row("arith.select", select_rule, {}, "(i1, T, T) -> T"),
    _row("arith.extsi", cast(_int, _int, "wider"), {}, "(iS) -> iD, S < D"),
    _row("arith.extui", cast(_int, _int, "wider"), {"nneg": ("nneg", False)}, "(iS) -> iD, S < D"),
    _row("arith.trunci", cast(_int, _int, "narrower"), A_OVERFLOW, "(iS) -> iD, S > D"),
    _row("arith.index_cast", index_cast_rule, {}, "(index) -> iN | (iN) -> index"),
    _row("arith.index_castui", index_cast_rule, {"nneg": ("nneg", False)}, "(index) -> iN | (iN) -> index"),
    _row("arith.bitcast", cast(_num, _num, "equal"), {}, "(S) -> D, |S| = |D|"),
    _row("llvm.getelementptr", gep_rule, {}, "(ptr, iK...) -> ptr"),
    *[_row(n, _U1F, A_FLOAT, "(F) -> F") for n in ("arith.negf", "math.absf")],
    *[_row(f"arith.{n}", _U2F, A_FLOAT_ROUNDING, "(F, F) -> F") for n in ("addf", "subf", "mulf", "divf")],
    _row("arith.remf", _U2F, A_FLOAT, "(F, F) -> F"),
    _row("math.fma", uniform(3, _flt), A_FLOAT_ROUNDING, "(F, F, F) -> F"),
    _row("arith.cmpf", compare(_flt), A_CMPF, "(F, F) -> i1"),
    *[_row(f"arith.{n}", _U2F, A_FLOAT, "(F, F) -> F") for n in ("minimumf", "maximumf", "minnumf", "maxnumf")],
    _row("arith.extf", cast(_flt, _flt, "wider"), A_FLOAT, "(FS) -> FD, |FS| < |FD|"),
    _row("arith.truncf", cast(_flt, _flt, "narrower"), A_FLOAT_ROUNDING, "(FS) -> FD, |FS| > |FD|"),
    _row("arith.sitofp", cast(_int, _flt, None), {}, "(iN) -> F"),
    _row("arith.uitofp", cast(_int, _flt, None), {"nneg": ("nneg", False)}, "(iN) -> F"),
    _row("arith.fptosi", cast(_flt, _int, None), {}, "(F) -> iN"),
    _row("arith.fptoui", cast(_flt, _int, None), {}, "(F) -> iN"),
    _row("llvm.fptosi.sat", cast(_flt, _int, None), {}, "(F) -> iN"),
    _row("llvm.fptoui.sat", cast(_flt, _int, None), {}, "(F) -> iN"),
    *[_row(f"math.{n}", _U1F, A_SPECIAL, "(F) -> F") for n in (
        "sin", "cos", "tan", "sinh", "cosh", "tanh", "exp", "exp2", "expm1", "log", "log2",
        "log10", "log1p", "floor", "ceil", "round", "trunc", "roundeven", "sqrt", "rsqrt", "erf")],
    _row("math.powf", _U2F, A_SPECIAL, "(F, F) -> F"),
    _row("dataflow.stream", stream_rule, {"step_kind": ("step_kind", True), "predicate": ("predicate_int", True)},
         "(iN start, iN limit, iN step) -> (iN, i1)"),
    _row("dataflow.carry", carry_rule, {}, "(i1, T, T) -> T"),
    _row("dataflow.invariant", invariant_rule, {}, "(i1, T) -> T"),
    _row("dataflow.gate", gate_rule, {}, "(i1, T) -> (i1, T)"),
    _row("dataflow.constant", constant_rule, {"value": ("value", True)}, "(none) -> T"),
    _row("dataflow.sync", sync_rule, {}, "(T0..Tn-1) -> (T0..Tn-1)"),
    _row("dataflow.mux", mux_rule, {}, "(sel, T x n) -> T, n >= 2"),
    _row("dataflow.demux", demux_rule, {}, "(sel, T) -> T x n, n >= 2"),
    _row("dataflow.pack", pack_rule, {}, "(vector<..xE>) -> iN"),
    _row("dataflow.unpack", unpack_rule, {}, "(iN) -> vector<..xE>"),
    _row("dataflow.parallelize", parallelize_rule, {}, "(E, i1) -> (vector<LxE>, vector<Lxi1>, i1)"),
    _row("dataflow.serialize", serialize_rule, {}, "(vector<LxE>, vector<Lxi1>, i1) -> (E, i1)"),
    _row("vector.extract", extract_rule, {"static_position": ("static_position", True)},
         "(vector, index x d) -> slice"),
    _row("vector.insert", insert_rule, {"static_position": ("static_position", True)},
         "(slice, vector, index x d) -> vector"),
    _row("vector.shuffle", shuffle_rule, {"mask": ("mask", True)}, "(vector<L..>, vector<M..>) -> vector<R..>"),
    *[_row(tile_schema_id(i), _tile_rule(i), _tile_attributes(i), f"tile block element, {i.engine} engine")
      for i in _TILE_INSTRUCTIONS],
]}


def check_actor(a: Actor) -> None:
    """Canonical Dataflow admission: the actor is a valid instance of its registered schema."""
    row = SCHEMAS.get(a.schema)
    if row is None:
        raise ActorInvalid(f"{a.schema!r} is not a registered operation schema")
    names = {k for k, _ in a.attributes}
    for name in names - set(row.attributes):
        raise ActorInvalid(f"{a.schema} has no semantic attribute {name!r} "
                           f"(closed set: {sorted(row.attributes) or 'none'})")
    for name, (kind, required) in row.attributes.items():
        v = a.attr(name)
        if v is None:
            if required:
                raise ActorInvalid(f"{a.schema} requires attribute {name!r}")
            continue
        try:
            ATTRIBUTE_KINDS[kind](v)
        except ActorInvalid as exc:
            raise ActorInvalid(f"{a.schema} attribute {name!r}: {exc}") from None
    row.shape(a)
    if row.attributes.get("accuracy"):
        # Fast-math proves permission to approximate: accepting a non-correctly-rounded tier
        # is only a valid actor when it also grants afn.
        if a.attr("accuracy") != "correctly_rounded" and "afn" not in (a.attr("fastmath") or frozenset()):
            raise ActorInvalid(f"{a.schema} accepting {a.attr('accuracy')} must grant afn")


def fastmath(a: Actor) -> frozenset:
    return a.attr("fastmath") or frozenset()


def effective_rounding(a: Actor) -> str:
    """An absent rounding attribute canonicalises to to_nearest_even."""
    return a.attr("rounding_mode") or "to_nearest_even"
