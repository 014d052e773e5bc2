"""Concrete fabric.op resources and Supports(R, actor, port_correspondence).

Capability(R) = Interpret(registered schemas, HSG(R.family), R.op_list, R.hw_params,
R.physical ports, R.typed constraints).  `supports` decides whether that capability accepts
exact actor semantics under one ordered software-to-physical port correspondence; it returns
a `Verdict` whose rejection code names the first failing rule.  The admission providers are
one table (`ADMISSION`), keyed by the family descriptor's provider id.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from .atoms import accuracy_rank
from .families import FAIL_CLOSED_MEMBERS, FAMILIES, families_for
from .refinement import REFINEMENT_KINDS  # the kinds with a typed owner (value type, codec, proof)
from .schemas import SCHEMAS, Actor, ActorInvalid, check_actor, effective_rounding, fastmath
from .types import (FloatType, IndexType, IntegerType, PointerType, PortType,
                    TaggedType, TypeWidthError, VectorType, payload_bits)


# --- typed constraints ------------------------------------------------------------------------

CONTRACT_KINDS = ("one_cycle_elastic", "elastic_transparent", "loop_stream", "ordered_cardinality_adapter",
                  "pipelined_beats")


@dataclass(frozen=True)
class ResourceContractConstraint:
    """Which Fabric-owned ResourceState/UsePattern/timing contract this resource uses."""
    contract: str


@dataclass(frozen=True)
class InactivePortGuarantee:
    """The capability explicitly guarantees that these ports, when unbound by a selection,
    create no token, consumption or backpressure obligation."""
    inputs: tuple[int, ...] = ()
    results: tuple[int, ...] = ()


@dataclass(frozen=True)
class PhysicalRefinementDomain:
    """A declared physical refinement domain: the legal set of one typed refinement kind
    (`fabric.refinement.REFINEMENTS` owns its value type, codec and preservation proof)."""
    kind: str
    values: tuple


Constraint = ResourceContractConstraint | InactivePortGuarantee | PhysicalRefinementDomain


@dataclass(frozen=True)
class FabricOp:
    name: str
    family: str | None
    op_list: tuple[str, ...]
    hw_params: object
    inputs: tuple[PortType, ...]
    results: tuple[PortType, ...]
    constraints: tuple = ()
    path: str = ""  # occurrence: where the resource sits in its fabric description

    @property
    def descriptor(self):
        return FAMILIES.get(self.family) if self.family else None

    def constraints_of(self, cls) -> list:
        return [c for c in self.constraints if isinstance(c, cls)]


@dataclass(frozen=True)
class PortCorrespondence:
    """Ordered software-to-physical correspondence: operand i -> physical input operands[i],
    result j -> physical result results[j].  `index_width` is the candidate's selected
    canonical index width when an endpoint has MLIR index type (Fabric never selects it)."""
    operands: tuple[int, ...]
    results: tuple[int, ...]
    index_width: int | None = None

    def canonical_bytes(self) -> bytes:
        from .codec import u32, u64
        return (u32(len(self.operands)) + b"".join(u64(p) for p in self.operands) + u32(len(self.results))
                + b"".join(u64(p) for p in self.results) + u32(self.index_width or 0))


class Rejection(enum.Enum):
    ActorInvalid = "the actor is not a valid instance of its registered schema"
    InvalidCapability = "the concrete resource names no registered implementation family"
    NotFamilyMember = "the schema is not a member of the resource's implementation family"
    MemberNotEnabled = "the HSG member is not enabled by this resource's op_list"
    GepRequiresNormalization = "GEP must be normalised to integer address arithmetic first"
    ShapeNotAdmitted = "the actor's shape class is not admitted by the family"
    ParameterNotAdmitted = "a type, width, format or predicate outside the typed parameter domain"
    AccuracyNotAdmitted = "the hardware accuracy guarantee is weaker than the actor accepts"
    FastMathNotGranted = "required_fast_math is not a subset of the actor's fast-math mask"
    RoundingNotAdmitted = "the actor's rounding mode is outside the profile"
    NaNBehaviorNotAdmitted = "the actor's NaN behaviour is not implemented and it grants no nnan"
    IndexWidthNotAdmitted = "the selected index width is not in resolved_index_widths / width_pairs"
    CapacityExceeded = "the actor exceeds a typed payload, fan or block capacity"
    PortCorrespondenceInvalid = "the ordered port correspondence is malformed for this family"
    NonCanonicalLaneEmbedding = "routed lanes must use the lowest unused port of their class"
    PortKindMismatch = "bits and bits_tag cannot be exchanged implicitly"
    PortWidthInsufficient = "a physical segment is narrower than the exact semantic width"


@dataclass(frozen=True)
class Verdict:
    rejection: Rejection | None = None
    message: str = ""

    @property
    def accepted(self) -> bool:
        return self.rejection is None

    def __bool__(self) -> bool:
        return self.accepted


ACCEPT = Verdict()


class _Reject(Exception):
    def __init__(self, code: Rejection, message: str):
        self.verdict = Verdict(code, message)


def _need(cond, code: Rejection, message):
    """Reject with `message` unless `cond`; a callable message is formatted only on rejection
    (the admitted-image enumeration runs these checks for every generated point)."""
    if not cond:
        raise _Reject(code, message() if callable(message) else message)


def _s(x) -> tuple:
    return tuple(x) if x else ()


# --- admission providers --------------------------------------------------------------------------

def _scalar_ints(a: Actor, allow_index=False):
    for t in a.inputs + a.results:
        _need(not isinstance(t, VectorType), Rejection.ShapeNotAdmitted, f"scalar family rejects vector {t}")
        _need(isinstance(t, IntegerType) or (allow_index and isinstance(t, IndexType)),
              Rejection.ShapeNotAdmitted, f"{t} is not a scalar signless integer")


def _width_in(w: int, domain, field: str):
    _need(w in _s(domain), Rejection.ParameterNotAdmitted, f"width {w} is not in {field} {list(_s(domain))}")


def adm_int_uniform(op, rec, a, corr):
    _scalar_ints(a)
    _width_in(a.inputs[0].width, rec.integer_widths, "integer_widths")


def adm_int_compare(op, rec, a, corr):
    _scalar_ints(a)
    _width_in(a.inputs[0].width, rec.operand_widths, "operand_widths")
    if a.schema == "arith.cmpi":
        p = a.attr("predicate")
        _need(p in _s(rec.comparison_predicates), Rejection.ParameterNotAdmitted,
              f"predicate {p} is not in comparison_predicates")


def _index_width(corr, rec):
    w = corr.index_width
    _need(w is not None, Rejection.IndexWidthNotAdmitted, "an index endpoint needs a selected canonical index width")
    _need(w in _s(rec.resolved_index_widths), Rejection.IndexWidthNotAdmitted,
          f"index width {w} is not in resolved_index_widths {list(_s(rec.resolved_index_widths))}")
    return w


def adm_int_cast(op, rec, a, corr):
    _scalar_ints(a, allow_index=a.schema.startswith("arith.index_cast"))
    s, d = a.inputs[0], a.results[0]
    if isinstance(s, IndexType) or isinstance(d, IndexType):
        w = _index_width(corr, rec)
        pair = (w if isinstance(s, IndexType) else s.width, w if isinstance(d, IndexType) else d.width)
        _need(pair in _s(rec.width_pairs), Rejection.IndexWidthNotAdmitted,
              f"the resolved pair {list(pair)} is not in width_pairs")
        return
    _need((s.width, d.width) in _s(rec.width_pairs), Rejection.ParameterNotAdmitted,
          f"width pair [{s.width}, {d.width}] is not in width_pairs")


def _scalar_value_in(t, rec):
    if isinstance(t, IntegerType):
        _width_in(t.width, rec.integer_widths, "integer_widths")
    elif isinstance(t, FloatType):
        _need(t.format in _s(rec.float_formats), Rejection.ParameterNotAdmitted,
              f"format {t.format} is not in float_formats")
    else:
        raise _Reject(Rejection.ShapeNotAdmitted, f"{t} is not a scalar integer or floating type")


def adm_select(op, rec, a, corr):
    _need(not isinstance(a.inputs[1], VectorType), Rejection.ShapeNotAdmitted, "scalar family rejects vectors")
    _scalar_value_in(a.inputs[1], rec)


def adm_bitcast(op, rec, a, corr):
    for t in (a.inputs[0], a.results[0]):
        _need(not isinstance(t, VectorType), Rejection.ShapeNotAdmitted, "scalar family rejects vectors")
        _scalar_value_in(t, rec)


def _float_profile(rec_behavior, a: Actor, raw_nan: str | None, selects_rounding: bool):
    b = rec_behavior
    req = frozenset(_s(b.required_fast_math))
    _need(req <= fastmath(a), Rejection.FastMathNotGranted,
          f"the circuit requires {sorted(req)}; the actor grants {sorted(fastmath(a))}")
    if selects_rounding:
        r = effective_rounding(a)
        _need(r in _s(b.rounding_modes), Rejection.RoundingNotAdmitted, f"rounding {r} is not in rounding_modes")
    if raw_nan is not None and raw_nan not in _s(b.nan_behaviors):
        _need("nnan" in fastmath(a), Rejection.NaNBehaviorNotAdmitted,
              f"{raw_nan} NaN behaviour is not implemented and the actor grants no nnan")
    if _s(b.signed_zero_behaviors) == ("relaxed",):
        _need("nsz" in fastmath(a), Rejection.FastMathNotGranted, "relaxed signed zero needs nsz")


def _scalar_floats(a: Actor):
    for t in a.inputs + a.results:
        _need(not isinstance(t, VectorType), Rejection.ShapeNotAdmitted, f"scalar family rejects vector {t}")


def _format_in(fmt: str, domain, field="formats"):
    _need(fmt in _s(domain), Rejection.ParameterNotAdmitted, f"format {fmt} is not in {field} {list(_s(domain))}")


def adm_float_uniform(op, rec, a, corr):
    _scalar_floats(a)
    _format_in(a.inputs[0].format, rec.formats)
    _float_profile(rec.behavior, a, "ieee", "rounding_mode" in SCHEMAS[a.schema].attributes)


RAW_NAN = {"arith.cmpf": "ieee", "arith.minimumf": "ieee", "arith.maximumf": "ieee",
           "arith.minnumf": "number_preferred", "arith.maxnumf": "number_preferred"}


def adm_float_compare(op, rec, a, corr):
    _scalar_floats(a)
    _format_in(a.inputs[0].format, rec.formats)
    if a.schema == "arith.cmpf":
        p = a.attr("predicate")
        _need(p in _s(rec.comparison_predicates), Rejection.ParameterNotAdmitted,
              f"predicate {p} is not in comparison_predicates")
    _float_profile(rec.behavior, a, RAW_NAN[a.schema], False)


def adm_float_width_cast(op, rec, a, corr):
    _scalar_floats(a)
    pair = (a.inputs[0].format, a.results[0].format)
    _need(pair in _s(rec.format_pairs), Rejection.ParameterNotAdmitted, f"format pair {list(pair)} is not in format_pairs")
    _float_profile(rec.behavior, a, "ieee", a.schema == "arith.truncf")


def _conversion(rec, a, integer, floating):
    """ScalarIntegerFloatConversionParams: the (integer width, float format) endpoint pair."""
    _scalar_floats(a)
    pair = (integer.width, floating.format)
    _need(pair in _s(rec.format_pairs), Rejection.ParameterNotAdmitted, f"pair {list(pair)} is not in format_pairs")


def adm_int_to_float(op, rec, a, corr):
    _conversion(rec, a, a.inputs[0], a.results[0])


def adm_float_to_int(op, rec, a, corr):
    _conversion(rec, a, a.results[0], a.inputs[0])


def adm_special_math(op, rec, a, corr):
    _scalar_floats(a)
    _format_in(a.inputs[0].format, rec.formats)
    _float_profile(rec.behavior, a, "ieee", False)
    # hardware accuracy guarantee <= actor accepted maximum, stronger-to-weaker order
    _need(accuracy_rank(rec.accuracy_guarantee) <= accuracy_rank(a.attr("accuracy")),
          Rejection.AccuracyNotAdmitted,
          f"a {rec.accuracy_guarantee} circuit cannot implement an actor accepting {a.attr('accuracy')}")


def _vector_payload(a: Actor, cap: int | None):
    for t in a.inputs + a.results:
        if isinstance(t, VectorType):
            _need(cap is not None and payload_bits(t) <= cap, Rejection.CapacityExceeded,
                  f"{t} exceeds max_payload_bits {cap}")


def _elements_in(elems, rec):
    for e in elems:
        if isinstance(e, IntegerType):
            _width_in(e.width, rec.integer_element_widths, "integer_element_widths")
        else:
            _format_in(e.format, rec.float_element_formats, "float_element_formats")


def adm_vector_int(op, rec, a, corr):
    for t in a.inputs + a.results:
        _need(isinstance(t, VectorType) and isinstance(t.element, IntegerType), Rejection.ShapeNotAdmitted,
              f"fixed-vector integer family rejects {t}")
        _width_in(t.element.width, rec.integer_element_widths, "integer_element_widths")
    _vector_payload(a, rec.max_payload_bits)


def adm_vector_float(op, rec, a, corr):
    for t in a.inputs + a.results:
        _need(isinstance(t, VectorType) and isinstance(t.element, FloatType), Rejection.ShapeNotAdmitted,
              f"fixed-vector floating family rejects {t}")
    _format_in(a.inputs[0].element.format, rec.formats)
    _vector_payload(a, rec.max_payload_bits)
    _float_profile(rec.behavior, a, "ieee", False)


def adm_loop_stream(op, rec, a, corr):
    _width_in(a.inputs[0].width, rec.integer_widths, "integer_widths")
    p = a.attr("predicate")
    _need(p in _s(rec.continuation_predicates), Rejection.ParameterNotAdmitted,
          f"predicate {p} is not in continuation_predicates")
    _need(a.attr("step_kind") == rec.step_kind, Rejection.ParameterNotAdmitted,
          f"step kind {a.attr('step_kind')} differs from the fixed hardware step kind {rec.step_kind}")


def _token_payloads(types, cap, pointers: bool = False):
    """Bit-preserving token payloads within `cap`.  With `pointers` (the token-plane loop
    families), a scalar ptr<AS> is admitted when its module's PointerLayout(AS) is bound: its
    payload is all representation_bits, which the capacity and the port must carry; the
    resource still performs no pointer arithmetic or dereference."""
    for t in types:
        v = t.value if isinstance(t, TaggedType) else t
        _need(not isinstance(v, IndexType) and (pointers or not isinstance(v, PointerType)),
              Rejection.ShapeNotAdmitted,
              lambda: f"{t} needs a module PointerLayout or index resolution this resource does not own")
        if isinstance(v, PointerType):
            _need(v.layout is not None, Rejection.ShapeNotAdmitted,
                  lambda: f"{t} needs the module's PointerLayout({v.address_space})")
        _need(cap is not None and payload_bits(t) <= cap, Rejection.CapacityExceeded,
              lambda: f"{t} exceeds max_payload_bits {cap}")


def adm_token_plane(op, rec, a, corr):
    _token_payloads(a.inputs[1:], rec.max_payload_bits, pointers=True)


def adm_adapter(op, rec, a, corr):
    vec = next(t for t in a.inputs + a.results if isinstance(t, VectorType))
    _elements_in([vec.element], rec)
    _need(rec.max_payload_bits is not None and payload_bits(vec) <= rec.max_payload_bits, Rejection.CapacityExceeded,
          f"{vec} exceeds max_payload_bits {rec.max_payload_bits}")


def adm_token_constant(op, rec, a, corr):
    n = constant_carrier_bits(op)
    w = payload_bits(a.results[0])
    _need(w <= n, Rejection.CapacityExceeded, f"a {w}-bit constant exceeds the {n}-bit carrier")


def constant_carrier_bits(op) -> int:
    """N = min(PayloadCapacityParams.max_payload_bits, physical result role 0 width)."""
    cap = op.hw_params.max_payload_bits or 0
    return min(cap, op.results[0].width) if op.results else 0


def adm_routed_token(op, rec, a, corr):
    payloads = {"dataflow.sync": a.inputs, "dataflow.mux": a.inputs[1:], "dataflow.demux": a.results}[a.schema]
    _token_payloads(payloads, rec.max_payload_bits)
    _need(rec.max_fan is not None and len(payloads) <= rec.max_fan, Rejection.CapacityExceeded,
          f"{len(payloads)} lanes exceed max_fan {rec.max_fan}")


def adm_slice(op, rec, a, corr):
    from .schemas import slice_geometry
    container = a.inputs[0] if a.schema == "vector.extract" else a.inputs[1]
    _elements_in([container.element], rec)
    pos = a.attr("static_position")
    _, b, _, dyn = slice_geometry(container, pos)
    _need(payload_bits(container) <= (rec.max_container_payload_bits or 0), Rejection.CapacityExceeded,
          f"container {container} exceeds max_container_payload_bits")
    _need(b <= (rec.max_slice_payload_bits or 0), Rejection.CapacityExceeded, "slice exceeds max_slice_payload_bits")
    _need(len(dyn) <= (rec.max_dynamic_position_rank or 0), Rejection.CapacityExceeded,
          f"{len(dyn)} dynamic positions exceed max_dynamic_position_rank")
    if dyn:
        _index_width(corr, rec)


def adm_shuffle(op, rec, a, corr):
    v1, v2, r = a.inputs[0], a.inputs[1], a.results[0]
    _elements_in([v1.element], rec)
    b = payload_bits(v1) // v1.shape[0]
    _need(b <= (rec.max_block_payload_bits or 0), Rejection.CapacityExceeded, "block exceeds max_block_payload_bits")
    for t, cap, f in ((v1, rec.max_operand_payload_bits, "max_operand_payload_bits"),
                      (v2, rec.max_operand_payload_bits, "max_operand_payload_bits"),
                      (r, rec.max_result_payload_bits, "max_result_payload_bits")):
        _need(payload_bits(t) <= (cap or 0), Rejection.CapacityExceeded, f"{t} exceeds {f}")
    _need(v1.shape[0] + v2.shape[0] <= (rec.max_source_blocks or 0), Rejection.CapacityExceeded,
          "source blocks exceed max_source_blocks")
    _need(r.shape[0] <= (rec.max_result_blocks or 0), Rejection.CapacityExceeded, "result blocks exceed max_result_blocks")


def adm_tile_engine(op, rec, a, corr):
    for role, d in (("datatype", a.attr("datatype")), ("destination_datatype", a.attr("destination_datatype"))):
        _need(d is None or d in _s(rec.datatypes), Rejection.ParameterNotAdmitted,
              lambda: f"{a.schema} {role} {d} is not in this engine's datatypes")
    # one beat moves `lanes` elements of every operand and of the result through its port at once
    for t, port in list(zip(a.inputs, op.inputs)) + list(zip(a.results, op.results)):
        need = (rec.lanes or 0) * payload_bits(t)
        _need(need <= port.width, Rejection.PortWidthInsufficient,
              lambda: f"a beat of {rec.lanes} x {t} needs {need} bits; {port} carries {port.width}")


ADMISSION = {
    "int_uniform": adm_int_uniform, "int_compare": adm_int_compare, "int_cast": adm_int_cast,
    "select": adm_select, "bitcast": adm_bitcast, "float_uniform": adm_float_uniform,
    "float_compare": adm_float_compare, "float_width_cast": adm_float_width_cast,
    "int_to_float": adm_int_to_float, "float_to_int": adm_float_to_int,
    "special_math": adm_special_math, "vector_int": adm_vector_int, "vector_float": adm_vector_float,
    "loop_stream": adm_loop_stream, "token_plane": adm_token_plane, "adapter": adm_adapter,
    "token_constant": adm_token_constant, "routed_token": adm_routed_token,
    "slice": adm_slice, "shuffle": adm_shuffle, "tile_engine": adm_tile_engine,
}


# --- port correspondence ---------------------------------------------------------------------------

def lane_class(op: FabricOp, direction: str, p: int):
    """Equivalence class of a routed lane: its port kind, tag width and effective payload
    capacity observable through the family (min of the lane's ports and the family cap)."""
    rec = op.hw_params
    cap = rec.max_payload_bits if rec.max_payload_bits is not None else 0
    if op.family == "TokenSync":
        ports = (op.inputs[p], op.results[p])
    elif op.family == "TokenMux":
        ports = (op.inputs[p], op.results[0])
    else:
        ports = (op.inputs[1], op.results[p])
    return (ports[0].kind, min(q.tag_width for q in ports), min(min(q.width for q in ports), cap))


def canonical_embedding(op: FabricOp, direction: str, ports: tuple[int, ...], first: int = 0) -> tuple[int, ...]:
    """The unique canonical ordered embedding for the class sequence of `ports`: each logical
    lane uses the lowest unused physical ordinal of its class."""
    n = len(op.inputs) if direction == "inputs" else len(op.results)
    used: list[int] = []
    for p in ports:
        cls = lane_class(op, direction, p)
        used.append(next(q for q in range(first, n) if q not in used and lane_class(op, direction, q) == cls))
    return tuple(used)


def default_correspondence(op: FabricOp, a: Actor, index_width: int | None = None) -> PortCorrespondence:
    """The fixed role correspondence of non-routed families (identity, or the slice roles)."""
    if op.family == "FixedVectorSliceAlignMerge":
        if a.schema == "vector.extract":
            return PortCorrespondence((0,) + tuple(range(2, 1 + len(a.inputs))), (0,), index_width)
        return PortCorrespondence(tuple(range(len(a.inputs))), (0,), index_width)
    return PortCorrespondence(tuple(range(len(a.inputs))), tuple(range(len(a.results))), index_width)


def _check_correspondence(op: FabricOp, a: Actor, corr: PortCorrespondence):
    _need(len(corr.operands) == len(a.inputs) and len(corr.results) == len(a.results),
          Rejection.PortCorrespondenceInvalid, "the correspondence must map every operand and result once")
    for ports, phys, what in ((corr.operands, op.inputs, "input"), (corr.results, op.results, "result")):
        _need(all(0 <= p < len(phys) for p in ports), Rejection.PortCorrespondenceInvalid,
              lambda: f"a {what} ordinal is outside the {len(phys)} physical {what} ports")
        _need(len(set(ports)) == len(ports), Rejection.PortCorrespondenceInvalid,
              lambda: f"two values share one {what} port")
    fam = op.family
    if fam == "TokenSync":
        _need(corr.operands == corr.results, Rejection.PortCorrespondenceInvalid,
              "sync lane i enters and leaves on one physical lane")
        _need(canonical_embedding(op, "inputs", corr.operands) == corr.operands,
              Rejection.NonCanonicalLaneEmbedding, f"lanes {list(corr.operands)} are not the canonical embedding")
    elif fam == "TokenMux":
        _need(corr.operands[0] == 0 and corr.results == (0,), Rejection.PortCorrespondenceInvalid,
              "the mux selector is physical input 0 and the result physical result 0")
        data = corr.operands[1:]
        _need(0 not in data, Rejection.PortCorrespondenceInvalid, "mux data uses inputs after the selector")
        _need(canonical_embedding(op, "inputs", data, first=1) == data, Rejection.NonCanonicalLaneEmbedding,
              f"data lanes {list(data)} are not the canonical embedding")
    elif fam == "TokenDemux":
        _need(corr.operands == (0, 1), Rejection.PortCorrespondenceInvalid,
              "the demux selector and data are physical inputs 0 and 1")
        _need(canonical_embedding(op, "results", corr.results) == corr.results, Rejection.NonCanonicalLaneEmbedding,
              f"result lanes {list(corr.results)} are not the canonical embedding")
    else:
        want = default_correspondence(op, a, corr.index_width)
        _need((corr.operands, corr.results) == (want.operands, want.results), Rejection.PortCorrespondenceInvalid,
              lambda: f"{fam} preserves ordinals: operands -> {list(want.operands)}, results -> {list(want.results)}")


def _check_port(t, port: PortType, corr: PortCorrespondence, side: str, i: int, p: int):
    """Operand/result `i` of type `t` on physical port `p` (side "operand" or "result")."""
    def where():
        return f"operand {i} -> input {p}" if side == "operand" else f"result {i} -> result port {p}"
    tagged = isinstance(t, TaggedType)
    _need(tagged == port.tagged, Rejection.PortKindMismatch,
          lambda: f"{where()}: {'tagged' if tagged else 'untagged'} value {t} cannot use {port}")
    if tagged:
        _need(t.tag_width <= port.tag_width, Rejection.PortWidthInsufficient,
              lambda: f"{where()}: tag i{t.tag_width} does not fit {port}")
    try:
        n = payload_bits(t, corr.index_width)
    except TypeWidthError as exc:
        raise _Reject(Rejection.IndexWidthNotAdmitted, f"{where()}: {exc}") from None
    _need(n <= port.width, Rejection.PortWidthInsufficient,
          lambda: f"{where()}: {t} needs {n} bits, {port} carries {port.width}")


def supports(op: FabricOp, a: Actor, corr: PortCorrespondence | None = None) -> Verdict:
    """Supports(R, A, P): does Capability(R) accept exact actor semantics A under P?"""
    try:
        check_actor(a)
    except ActorInvalid as exc:
        return Verdict(Rejection.ActorInvalid, str(exc))
    desc = op.descriptor
    if desc is None:
        return Verdict(Rejection.InvalidCapability, f"family {op.family!r} is not registered")
    try:
        if a.schema not in desc.admitted:   # the family list is built only for the message
            raise _Reject(Rejection.NotFamilyMember,
                          f"{a.schema} is not a {desc.keyword} member (families admitting it: {families_for(a.schema)})")
        _need(a.schema in op.op_list, Rejection.MemberNotEnabled,
              lambda: f"{a.schema} is a {desc.keyword} member but this resource's op_list does not enable it")
        _need((desc.keyword, a.schema) not in FAIL_CLOSED_MEMBERS, Rejection.GepRequiresNormalization,
              "the pointer-format relation is empty: normalise GEP to integer address arithmetic")
        if corr is None:
            corr = default_correspondence(op, a)
        ADMISSION[desc.admission](op, op.hw_params, a, corr)
        _check_correspondence(op, a, corr)
        for i, (t, p) in enumerate(zip(a.inputs, corr.operands)):
            _check_port(t, op.inputs[p], corr, "operand", i, p)
        for j, (t, p) in enumerate(zip(a.results, corr.results)):
            _check_port(t, op.results[p], corr, "result", j, p)
    except _Reject as r:
        return r.verdict
    return ACCEPT


Supports = supports  # the seed's spelling

__all__ = ["FabricOp", "PortCorrespondence", "Rejection", "Verdict", "supports", "Supports",
           "ResourceContractConstraint", "InactivePortGuarantee", "PhysicalRefinementDomain",
           "default_correspondence", "canonical_embedding", "lane_class", "constant_carrier_bits",
           "CONTRACT_KINDS", "REFINEMENT_KINDS"]
