"""The derived FabricOpSemanticFieldRelation = None | Finite | Direct of one concrete fabric.op.

Finite relations follow the seed's procedure:
  1. enumerate the complete admitted image: every enabled schema at every point of the typed
     parameter domains (never a product of configuration fields), kept when Supports()
     accepts it on the physical ports;
  2. describe each admitted point by the physical behaviour it requires (a role plus
     role-local components: the family rows in `ROLES` / the describers below; they are
     written out in docs/fabric-families.md);
  3. build the deterministic refinement cover: total behaviours first (larger defined domain
     first, canonical actor and correspondence bytes break ties); a weaker behaviour reuses a
     compatible representative (same unrefined role and endpoint formats first, then the
     lexicographically smallest canonical key), and only an uncovered one adds its
     normalised representative;
  4. quotient: within one role, a component equal across the complete reachable image is
     omitted; one behaviour in total means None.
The projector re-runs steps 2-3 for one actor, so the relation and the projector cannot
disagree.  Direct relations live in `fabric.direct`.  `seal` derives each distinct capability
once (the derivation never reads where a resource sits) and charges a description's
`ImageBudget` for the points it enumerates (docs/fabric-format.md section 6).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace

from . import codec
from .atoms import (CONSTANT_FLOAT_PREDICATES, FLOAT_FORMATS, NNAN_NORMAL_FLOAT_PREDICATE,
                    SIGNED_INTEGER_PREDICATES)
from .capability import (FabricOp, PortCorrespondence, Rejection, default_correspondence, lane_class,
                         supports)
from .direct import derive_direct
from .errors import Diagnostic, DiagnosticCode, FabricError, UnsupportedActor
from .families import FAIL_CLOSED_MEMBERS, FAMILIES
from .schemas import Actor, effective_rounding, fastmath, make_actor
from .tile_engine import gen_tile_engine, tile_roles
from .types import (I1, FloatType, IndexType, IntegerType, NoneType, VectorType, element_of)


# --- behaviours ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Behavior:
    role: str
    components: tuple  # ((slot, kind, value), ...)

    def full_key(self, family: str) -> bytes:
        return codec.encode_behavior_key(family, self.role, [(k, v) for _, k, v in self.components])

    def value(self, slot):
        for s, _, v in self.components:
            if s == slot:
                return v
        return None


@dataclass(frozen=True)
class Described:
    raw: Behavior
    weak: str | None = None          # refinement class of a partial behaviour
    normal: Behavior | None = None   # its canonical normalised representative
    strength: int = 1                # larger defined domain first


def _w(t, corr) -> int:
    if isinstance(t, IndexType):
        return corr.index_width
    return element_of(t).width


def _group_vector(a: Actor) -> VectorType:
    return next(t for t in a.inputs + a.results if isinstance(t, VectorType))


SLOTS = {
    "active_width": ("width", lambda a, c: _w(a.inputs[0], c)),
    "active_element_width": ("width", lambda a, c: _group_vector(a).element.width),
    "active_representation_width": ("width", lambda a, c: element_of(a.inputs[0]).width),
    "active_integer_width": ("width", lambda a, c: a.inputs[0].width),
    "lane_count": ("width", lambda a, c: _group_vector(a).shape[0]),
    "source_width": ("width", lambda a, c: _w(a.inputs[0], c)),
    "destination_width": ("width", lambda a, c: _w(a.results[0], c)),
    "numeric_format": ("float_format", lambda a, c: element_of(a.inputs[0]).format),
    "source_format": ("float_format", lambda a, c: a.inputs[0].format),
    "destination_format": ("float_format", lambda a, c: a.results[0].format),
    "rounding_mode": ("rounding", lambda a, c: effective_rounding(a)),
    "integer_predicate": ("int_predicate", lambda a, c: a.attr("predicate")),
    "float_predicate": ("float_predicate", lambda a, c: a.attr("predicate")),
    "datatype": ("datatype", lambda a, c: a.attr("datatype")),
    "destination_datatype": ("datatype", lambda a, c: a.attr("destination_datatype") or a.attr("datatype")),
}


def _b(role: str, slots, a: Actor, corr) -> Behavior:
    return Behavior(role, tuple((s, SLOTS[s][0], SLOTS[s][1](a, corr)) for s in slots))


W, EW, RW = ("active_width",), ("active_element_width",), ("active_representation_width",)
FMT, FMT_RND = ("numeric_format",), ("numeric_format", "rounding_mode")

# family -> schema -> (role spelling, role-local component slots in key order)
ROLES: dict[str, dict[str, tuple[str, tuple]]] = {
    "ScalarIntegerAddSub": {"arith.addi": ("Add", ()), "arith.subi": ("Sub", ())},
    "ScalarIntegerSaturatingAddSub": {"llvm.intr.sadd.sat": ("SignedAdd", W), "llvm.intr.uadd.sat": ("UnsignedAdd", W),
                                      "llvm.intr.ssub.sat": ("SignedSub", W), "llvm.intr.usub.sat": ("UnsignedSub", W)},
    "ScalarIntegerCountZeros": {"math.ctlz": ("Leading", W), "llvm.intr.ctlz": ("Leading", W),
                                "math.cttz": ("Trailing", W), "llvm.intr.cttz": ("Trailing", W)},
    "ScalarIntegerLogic": {"arith.andi": ("And", ()), "arith.ori": ("Or", ()), "llvm.or": ("Or", ()),
                           "arith.xori": ("Xor", ())},
    "ScalarIntegerShift": {"arith.shli": ("Left", ()), "arith.shrui": ("LogicalRight", ()),
                           "arith.shrsi": ("ArithmeticRight", W)},
    "ScalarSignedIntegerDivRem": {"arith.divsi": ("Quotient", W), "arith.remsi": ("Remainder", W)},
    "ScalarUnsignedIntegerDivRem": {"arith.divui": ("Quotient", W), "arith.remui": ("Remainder", W)},
    "ScalarIntegerMultiply": {"arith.muli": ("", ())},
    "FixedVectorIntegerAddSub": {"arith.addi": ("Add", EW), "arith.subi": ("Sub", EW)},
    "FixedVectorIntegerLogic": {"arith.andi": ("And", ()), "arith.ori": ("Or", ()), "llvm.or": ("Or", ()),
                                "arith.xori": ("Xor", ())},
    "ScalarFloatSign": {"arith.negf": ("Negate", RW), "math.absf": ("Absolute", RW)},
    "FixedVectorFloatSign": {"arith.negf": ("Negate", RW), "math.absf": ("Absolute", RW)},
    "ScalarFloatAddSub": {"arith.addf": ("Add", FMT_RND), "arith.subf": ("Sub", FMT_RND)},
    "ScalarFloatMultiply": {"arith.mulf": ("", FMT_RND)},
    "ScalarFloatFma": {"math.fma": ("", FMT_RND)},
    "ScalarFloatDivide": {"arith.divf": ("", FMT_RND)},
    "ScalarFloatRemainder": {"arith.remf": ("", FMT)},
    **{k: {d.admitted[0]: ("", FMT)} for k, d in FAMILIES.items() if d.admission == "special_math"},
    **{k: tile_roles(d) for k, d in FAMILIES.items() if d.admission == "tile_engine"},
}

MINMAX_INT = {"arith.minsi": ("SignedMin", W), "arith.maxsi": ("SignedMax", W),
              "arith.minui": ("UnsignedMin", ()), "arith.maxui": ("UnsignedMax", ())}
MINMAX_FLOAT = {"arith.minimumf": "Minimum", "arith.maximumf": "Maximum",
                "arith.minnumf": "MinNumber", "arith.maxnumf": "MaxNumber"}
CAST_ROLE_SIGNED = {"arith.extsi", "arith.index_cast"}


def _describe_table(op, a, corr) -> Described:
    role, slots = ROLES[op.family][a.schema]
    return Described(_b(role, slots, a, corr))


def _describe_int_compare(op, a, corr) -> Described:
    if a.schema == "arith.cmpi":
        slots = ("integer_predicate",) + (W if a.attr("predicate") in SIGNED_INTEGER_PREDICATES else ())
        return Described(_b("Compare", slots, a, corr))
    role, slots = MINMAX_INT[a.schema]
    return Described(_b(role, slots, a, corr))


def _describe_int_cast(op, a, corr) -> Described:
    s, d = _w(a.inputs[0], corr), _w(a.results[0], corr)
    if s == d:
        role = "Identity"
    elif s > d:
        role = "Truncate"
    else:
        role = "SignExtend" if a.schema in CAST_ROLE_SIGNED else "ZeroExtend"
    return Described(_b(role, ("source_width", "destination_width"), a, corr))


def _describe_float_compare(op, a, corr) -> Described:
    nnan = "nnan" in fastmath(a)
    if a.schema == "arith.cmpf":
        p = a.attr("predicate")
        raw = _b("Compare", ("float_predicate",) + (() if p in CONSTANT_FLOAT_PREDICATES else FMT), a, corr)
        if not nnan:
            return Described(raw)
        q = NNAN_NORMAL_FLOAT_PREDICATE[p]
        comps = (("float_predicate", "float_predicate", q),)
        if q not in CONSTANT_FLOAT_PREDICATES:
            comps += (("numeric_format", "float_format", a.inputs[0].format),)
        return Described(raw, "nnan", Behavior("Compare", comps), 0)
    raw = _b(MINMAX_FLOAT[a.schema], FMT, a, corr)
    if not nnan:
        return Described(raw)
    normal_role = "Minimum" if "min" in a.schema else "Maximum"
    return Described(raw, "nnan", Behavior(normal_role, raw.components), 0)


def _describe_float_width_cast(op, a, corr) -> Described:
    slots = ("source_format", "destination_format") + (("rounding_mode",) if a.schema == "arith.truncf" else ())
    return Described(_b("", slots, a, corr))


def _describe_int_to_float(op, a, corr) -> Described:
    slots = ("source_width", "destination_format")
    if a.schema == "arith.sitofp":
        return Described(_b("Signed", slots, a, corr))
    raw = _b("Unsigned", slots, a, corr)
    if a.attr("nneg"):
        return Described(raw, "nneg", Behavior("Signed", raw.components), 0)
    return Described(raw)


def _describe_float_to_int(op, a, corr) -> Described:
    role = "Signed" if "fptosi" in a.schema else "Unsigned"
    # the saturating schema's defined clamp refines the ordinary schema's poison: one key
    return Described(_b(role, ("source_format", "destination_width"), a, corr),
                     strength=2 if a.schema.endswith(".sat") else 1)


def _describe_loop_stream(op, a, corr) -> Described:
    return Described(_b("", ("active_integer_width", "integer_predicate"), a, corr))


def _describe_adapter(op, a, corr) -> Described:
    return Described(_b("", ("active_element_width", "lane_count"), a, corr))


def _describe_routed(op, a, corr) -> Described:
    if op.family == "TokenSync":  # no lane-order selector: the sorted active lane set
        img = codec.LaneImage(tuple(sorted(corr.operands)), len(op.inputs))
    elif op.family == "TokenMux":  # data inputs after the selector, in actor order
        img = codec.LaneImage(tuple(corr.operands[1:]), len(op.inputs))
    else:  # data results, in actor order
        img = codec.LaneImage(tuple(corr.results), len(op.results))
    return Described(Behavior("", (("lanes", "lanes", img),)))


DESCRIBE = {
    "int_uniform": _describe_table, "vector_int": _describe_table, "float_uniform": _describe_table,
    "vector_float": _describe_table, "special_math": _describe_table, "int_compare": _describe_int_compare,
    "int_cast": _describe_int_cast, "float_compare": _describe_float_compare,
    "float_width_cast": _describe_float_width_cast, "int_to_float": _describe_int_to_float,
    "float_to_int": _describe_float_to_int, "loop_stream": _describe_loop_stream,
    "adapter": _describe_adapter, "routed_token": _describe_routed, "tile_engine": _describe_table,
}


def _formats(b: Behavior) -> tuple:
    return tuple(v for _, k, v in b.components if k == "float_format")


def refines(rep: Behavior, d: Described) -> bool:
    """Does total representative `rep` implement every defined result of weak actor `d`?"""
    raw = d.raw
    if d.weak == "nnan" and raw.role == "Compare":
        if rep.role != "Compare":
            return False
        q = NNAN_NORMAL_FLOAT_PREDICATE[rep.value("float_predicate")]
        if q != NNAN_NORMAL_FLOAT_PREDICATE[raw.value("float_predicate")]:
            return False
        return q in CONSTANT_FLOAT_PREDICATES or rep.value("numeric_format") == raw.value("numeric_format")
    if d.weak == "nnan":
        family = {"Minimum", "MinNumber"} if raw.role in ("Minimum", "MinNumber") else {"Maximum", "MaxNumber"}
        return rep.role in family and _formats(rep) == _formats(raw)
    if d.weak == "nneg":
        return rep.role in ("Signed", "Unsigned") and rep.components == raw.components
    return rep == raw


def choose_representative(family: str, cover, d: Described) -> Behavior | None:
    """Same unrefined role and endpoint formats first, then the smallest canonical key."""
    if d.weak is None:
        return d.raw if d.raw in cover else None
    compatible = [r for r in cover if refines(r, d)]
    if not compatible:
        return None

    def pref(r):
        same = r == d.raw
        same_role = r.role == d.raw.role and _formats(r) == _formats(d.raw)
        return (not same, not same_role, r.full_key(family))
    return min(compatible, key=pref)


# --- candidate enumeration: the complete admitted image -----------------------------------

@dataclass(frozen=True)
class Candidate:
    actor: Actor
    corr: PortCorrespondence
    atoms: tuple  # ((field, value), ...) parameter points this admitted actor exercises


def _s(x):
    return tuple(x) if x else ()


def _it(w):
    return IntegerType(w)


def _ordered(op: FabricOp):
    """Enabled schemas in the family's canonical member order (never op_list order)."""
    return [s for s in op.descriptor.admitted if s in op.op_list]


def _flags(behavior, extra=()) -> frozenset:
    f = set(_s(behavior.required_fast_math)) | set(extra)
    if _s(behavior.signed_zero_behaviors) == ("relaxed",):
        f.add("nsz")
    return frozenset(f)


def _roundings(rec, schema_selects: bool):
    if not schema_selects:
        return [None]
    return [None if r == "to_nearest_even" else r for r in _s(rec.behavior.rounding_modes)]


def gen_int_uniform(op, rec):
    for s in _ordered(op):
        if (op.family, s) in FAIL_CLOSED_MEMBERS:
            continue
        unary = s in ("math.ctlz", "math.cttz", "llvm.intr.ctlz", "llvm.intr.cttz")
        for w in _s(rec.integer_widths):
            t = _it(w)
            a = make_actor(s, [t] if unary else [t, t], [t])
            yield a, None, (("integer_widths", w),)


def gen_int_compare(op, rec):
    for s in _ordered(op):
        for w in _s(rec.operand_widths):
            t = _it(w)
            if s == "arith.cmpi":
                for p in _s(rec.comparison_predicates):
                    yield (make_actor(s, [t, t], [I1], predicate=p), None,
                           (("operand_widths", w), ("comparison_predicates", p)))
            else:
                yield make_actor(s, [t, t], [t]), None, (("operand_widths", w),)


def gen_int_cast(op, rec):
    for s in _ordered(op):
        for sw, dw in _s(rec.width_pairs):
            pair = (("width_pairs", (sw, dw)),)
            if s.startswith("arith.index_cast"):
                for r in _s(rec.resolved_index_widths):
                    atoms = pair + (("resolved_index_widths", r),)
                    if sw == r:
                        yield make_actor(s, [IndexType()], [_it(dw)]), r, atoms
                    if dw == r:
                        yield make_actor(s, [_it(sw)], [IndexType()]), r, atoms
            elif (s == "arith.trunci") == (sw > dw) and sw != dw:
                yield make_actor(s, [_it(sw)], [_it(dw)]), None, pair


def _scalar_domain(rec):
    return ([(_it(w), ("integer_widths", w)) for w in _s(rec.integer_widths)]
            + [(FloatType(f), ("float_formats", f)) for f in _s(rec.float_formats)])


def gen_select(op, rec):
    for t, atom in _scalar_domain(rec):
        yield make_actor("arith.select", [I1, t, t], [t]), None, (atom,)


def gen_bitcast(op, rec):
    dom = _scalar_domain(rec)
    for t, at in dom:
        for u, au in dom:
            if t.width == u.width:
                yield make_actor("arith.bitcast", [t], [u]), None, (at, au)


def _profile_atoms(b, nan=None, rounding="to_nearest_even"):
    atoms = [("behavior.subnormal_behaviors", x) for x in _s(b.subnormal_behaviors)]
    atoms.append(("behavior.rounding_modes", rounding))
    atoms += [("behavior.signed_zero_behaviors", x) for x in _s(b.signed_zero_behaviors)]
    atoms += [("behavior.required_fast_math", x) for x in _s(b.required_fast_math)]
    if nan:
        atoms.append(("behavior.nan_behaviors", nan))
    return tuple(atoms)


def gen_float_uniform(op, rec):
    from .schemas import SCHEMAS
    b = rec.behavior
    for s in _ordered(op):
        n_in = {"arith.negf": 1, "math.absf": 1, "math.fma": 3}.get(s, 2)
        selects = "rounding_mode" in SCHEMAS[s].attributes
        for f in _s(rec.formats):
            for r in _roundings(rec, selects):
                t = FloatType(f)
                atoms = (("formats", f),) + _profile_atoms(b, "ieee", r or "to_nearest_even")
                yield make_actor(s, [t] * n_in, [t], fastmath=_flags(b), rounding_mode=r), None, atoms


def gen_float_compare(op, rec):
    from .capability import RAW_NAN
    b = rec.behavior
    for s in _ordered(op):
        raw_nan = RAW_NAN[s]
        preds = _s(rec.comparison_predicates) if s == "arith.cmpf" else [None]
        for f in _s(rec.formats):
            t = FloatType(f)
            for p in preds:
                for nnan in (False, True):
                    if not nnan and raw_nan not in _s(b.nan_behaviors):
                        continue
                    flags = _flags(b, ("nnan",) if nnan else ())
                    atoms = (("formats", f),) + _profile_atoms(b, None if nnan else raw_nan)
                    atoms += ((("comparison_predicates", p),) if p else ())
                    res = [I1] if p else [t]
                    yield make_actor(s, [t, t], res, fastmath=flags, predicate=p), None, atoms


def gen_float_width_cast(op, rec):
    b = rec.behavior
    for s in _ordered(op):
        for sf, df in _s(rec.format_pairs):
            if (s == "arith.truncf") != (FLOAT_FORMATS[sf] > FLOAT_FORMATS[df]) or FLOAT_FORMATS[sf] == FLOAT_FORMATS[df]:
                continue
            for r in _roundings(rec, s == "arith.truncf"):
                atoms = (("format_pairs", (sf, df)),) + _profile_atoms(b, "ieee", r or "to_nearest_even")
                yield (make_actor(s, [FloatType(sf)], [FloatType(df)], fastmath=_flags(b), rounding_mode=r),
                       None, atoms)


def gen_int_to_float(op, rec):
    for s in _ordered(op):
        for w, f in _s(rec.format_pairs):
            atoms = (("format_pairs", (w, f)),)
            yield make_actor(s, [_it(w)], [FloatType(f)]), None, atoms
            if s == "arith.uitofp":
                yield make_actor(s, [_it(w)], [FloatType(f)], nneg=True), None, atoms


def gen_float_to_int(op, rec):
    for s in _ordered(op):
        for w, f in _s(rec.format_pairs):
            yield make_actor(s, [FloatType(f)], [_it(w)]), None, (("format_pairs", (w, f)),)


def gen_special_math(op, rec):
    b = rec.behavior
    s = op.descriptor.admitted[0]
    g = rec.accuracy_guarantee
    for f in _s(rec.formats):
        t = FloatType(f)
        flags = _flags(b, () if g == "correctly_rounded" else ("afn",))
        n_in = 2 if s == "math.powf" else 1
        yield (make_actor(s, [t] * n_in, [t], fastmath=flags, accuracy=g), None,
               (("formats", f),) + _profile_atoms(b, "ieee"))


def gen_vector_int(op, rec):
    for s in _ordered(op):
        for w in _s(rec.integer_element_widths):
            t = VectorType((1,), _it(w))
            yield make_actor(s, [t, t], [t]), None, (("integer_element_widths", w),)


def gen_vector_float(op, rec):
    b = rec.behavior
    for s in _ordered(op):
        for f in _s(rec.formats):
            t = VectorType((1,), FloatType(f))
            yield make_actor(s, [t], [t], fastmath=_flags(b)), None, (("formats", f),) + _profile_atoms(b, "ieee")


def gen_loop_stream(op, rec):
    for w in _s(rec.integer_widths):
        t = _it(w)
        for p in _s(rec.continuation_predicates):
            yield (make_actor("dataflow.stream", [t, t, t], [t, I1], step_kind=rec.step_kind, predicate=p), None,
                   (("integer_widths", w), ("continuation_predicates", p)))


def _adapter_elements(rec):
    return ([(_it(w), ("integer_element_widths", w)) for w in _s(rec.integer_element_widths)]
            + [(FloatType(f), ("float_element_formats", f)) for f in _s(rec.float_element_formats)])


def gen_adapter(op, rec):
    s = op.descriptor.admitted[0]
    cap = rec.max_payload_bits or 0
    for e, atom in _adapter_elements(rec):
        lanes = range(1, cap // e.width + 1) if s in ("dataflow.parallelize", "dataflow.serialize") else [1]
        for n in lanes:
            v, m = VectorType((n,), e), VectorType((n,), I1)
            a = {"dataflow.pack": lambda: make_actor(s, [v], [_it(n * e.width)]),
                 "dataflow.unpack": lambda: make_actor(s, [_it(n * e.width)], [v]),
                 "dataflow.parallelize": lambda: make_actor(s, [e, I1], [v, m, I1]),
                 "dataflow.serialize": lambda: make_actor(s, [v, m, I1], [e, I1])}[s]()
            yield a, None, (atom, ("max_payload_bits", cap))


def gen_token_plane(op, rec):
    from .types import TaggedType
    s = op.descriptor.admitted[0]
    t = NoneType()  # Fabric's zero-payload control-token convention always fits
    data = op.inputs[1]
    if data.tagged:
        t = TaggedType(t, data.tag_width)
    sig = {"dataflow.carry": ([I1, t, t], [t]), "dataflow.invariant": ([I1, t], [t]),
           "dataflow.gate": ([I1, t], [I1, t])}[s]
    yield make_actor(s, *sig), None, ()


def _payload_type(width: int, kind: str, tag: int):
    base = NoneType() if width == 0 else _it(width)
    if kind == "bits_tag":
        from .types import TaggedType
        return TaggedType(base, tag)
    return base


def _class_sequences(classes, k):
    """Ordered sequences of k lanes drawn from classes with bounded multiplicity."""
    keys = sorted(classes)
    def rec(prefix, counts):
        if len(prefix) == k:
            yield tuple(prefix)
            return
        for c in keys:
            if counts.get(c, 0) < len(classes[c]):
                counts[c] = counts.get(c, 0) + 1
                yield from rec(prefix + [c], counts)
                counts[c] -= 1
    yield from rec([], {})


def gen_routed_token(op, rec):
    fam = op.family
    if fam == "TokenSync":
        ports, direction = range(min(len(op.inputs), len(op.results))), "inputs"
    elif fam == "TokenMux":
        ports, direction = range(1, len(op.inputs)), "inputs"
    else:
        ports, direction = range(len(op.results)), "results"
    classes: dict = {}
    for p in ports:
        classes.setdefault(lane_class(op, direction, p), []).append(p)
    fan = rec.max_fan or 0
    lo = 1 if fam == "TokenSync" else 2
    for k in range(lo, min(fan, len(ports)) + 1):
        for seq in _class_sequences(classes, k):
            used = []
            for c in seq:
                used.append(next(q for q in classes[c] if q not in used))
            if fam == "TokenSync":
                lanes = [_payload_type(c[2], c[0], c[1]) for c in seq]
                a = make_actor("dataflow.sync", lanes, lanes)
                corr = PortCorrespondence(tuple(used), tuple(used))
            else:
                if len({c[0] for c in seq}) != 1:
                    continue  # one payload type cannot use both port kinds
                # every data lane carries one type: the narrowest class of the sequence
                payload = _payload_type(min(c[2] for c in seq), seq[0][0], min(c[1] for c in seq))
                sel = I1 if k == 2 else _it(max(1, (k - 1).bit_length()))
                if fam == "TokenMux":
                    a = make_actor("dataflow.mux", [sel] + [payload] * k, [payload])
                    corr = PortCorrespondence((0,) + tuple(used), (0,))
                else:
                    a = make_actor("dataflow.demux", [sel, payload], [payload] * k)
                    corr = PortCorrespondence((0, 1), tuple(used))
            yield a, corr, (("max_fan", fan),)


GENERATE = {
    "int_uniform": gen_int_uniform, "int_compare": gen_int_compare, "int_cast": gen_int_cast,
    "select": gen_select, "bitcast": gen_bitcast, "float_uniform": gen_float_uniform,
    "float_compare": gen_float_compare, "float_width_cast": gen_float_width_cast,
    "int_to_float": gen_int_to_float, "float_to_int": gen_float_to_int,
    "special_math": gen_special_math, "vector_int": gen_vector_int, "vector_float": gen_vector_float,
    "loop_stream": gen_loop_stream, "adapter": gen_adapter, "token_plane": gen_token_plane,
    "routed_token": gen_routed_token, "tile_engine": gen_tile_engine,
}


class InternalInconsistency(AssertionError):
    """A generated parameter point was rejected for a reason other than physical reach."""


UNREACHABLE = {Rejection.PortWidthInsufficient, Rejection.PortKindMismatch, Rejection.IndexWidthNotAdmitted}


MAX_IMAGE = 1 << 16  # implementation limit on one resource's enumerated admitted image


def _words(limits, k) -> int:
    """Ordered sequences of length k drawing at most limits[i] lanes of class i."""
    from math import comb
    dp = [1] + [0] * k
    for c in limits:
        new = [0] * (k + 1)
        for n, ways in enumerate(dp):
            for j in range(0, min(c, k - n) + 1):
                new[n + j] += ways * comb(n + j, j)
        dp = new
    return dp[k]


def image_bound(op: FabricOp) -> int:
    """Upper bound of the enumerated image, computed before enumerating it."""
    rec, kind = op.hw_params, op.descriptor.admission
    if kind == "adapter" and op.family in ("FixedVectorParallelize", "FixedVectorSerialize"):
        return sum((rec.max_payload_bits or 0) // e.width for e, _ in _adapter_elements(rec))
    if kind == "routed_token":
        if op.family == "TokenSync":
            ports, direction = range(min(len(op.inputs), len(op.results))), "inputs"
        elif op.family == "TokenMux":
            ports, direction = range(1, len(op.inputs)), "inputs"
        else:
            ports, direction = range(len(op.results)), "results"
        sizes: dict = {}
        for p in ports:
            c = lane_class(op, direction, p)
            sizes[c] = sizes.get(c, 0) + 1
        top = min(rec.max_fan or 0, len(ports))
        return sum(_words(list(sizes.values()), k) for k in range(1, top + 1))
    return 0


# A whole description enumerates at most this many generated points over its distinct
# capabilities (equal resources are enumerated once): beyond it, `fabric check` reports one
# CapacityLimit per resource it could not derive instead of running for minutes.
MAX_DESCRIPTION_IMAGE = 1 << 16


class ImageBudget:
    """The generated points a description may still enumerate (docs/fabric-format.md section 6).

    Each distinct capability is charged once per description for the points its enumeration
    generates, whether it is enumerated now or found in the `seal` cache, so the verdict never
    depends on what the process derived before."""

    def __init__(self, points: int | None = None):
        self.total = MAX_DESCRIPTION_IMAGE if points is None else points   # read at call time
        self.left: int | None = self.total
        self.used = 0
        self.seen: set = set()        # capability keys already charged in this description

    @classmethod
    def meter(cls) -> "ImageBudget":
        """An unlimited budget that only counts (a derivation outside any description)."""
        b = cls(0)
        b.total = b.left = None
        return b

    def _exhausted(self, op: FabricOp) -> "BudgetExhausted":
        self.left = 0
        return BudgetExhausted(Diagnostic(
            DiagnosticCode.CapacityLimit, op.path,
            f"the description's distinct resources enumerate more than {self.total} admitted-image "
            "parameter points in total; this resource was not derived"))

    def take(self, op: FabricOp) -> None:
        if self.left is not None:
            if self.left <= 0:
                raise self._exhausted(op)
            self.left -= 1
        self.used += 1

    def charge(self, op: FabricOp, work: int) -> None:
        """Charge a cached derivation's `work` points exactly as enumerating them would."""
        if self.left is not None:
            if work > self.left:
                raise self._exhausted(op)
            self.left -= work
        self.used += work


class BudgetExhausted(FabricError):
    """A description-wide limit, not a property of the capability: never cached."""


def enumerate_image(op: FabricOp, budget: ImageBudget | None = None) -> list[Candidate]:
    """Every admitted, physically reachable point of the typed parameter relation: one
    Supports() per generated point, the expensive step (`seal` runs it once per capability)."""
    rec = op.hw_params
    if image_bound(op) > MAX_IMAGE:
        raise FabricError(Diagnostic(DiagnosticCode.CapacityLimit, op.path,
                                     f"the admitted image exceeds {MAX_IMAGE} parameter points"))
    out = []
    for n, (a, extra, atoms) in enumerate(GENERATE[op.descriptor.admission](op, rec)):
        if n >= MAX_IMAGE:
            raise FabricError(Diagnostic(DiagnosticCode.CapacityLimit, op.path,
                                         f"the admitted image exceeds {MAX_IMAGE} parameter points"))
        if budget is not None:
            budget.take(op)
        if isinstance(extra, PortCorrespondence):
            corr = extra
        else:
            corr = default_correspondence(op, a, extra)
        v = supports(op, a, corr)
        if v.accepted:
            out.append(Candidate(a, corr, atoms))
        elif v.rejection not in UNREACHABLE:
            raise InternalInconsistency(f"{op.path}: generated {a} rejected: {v.rejection.name}: {v.message}")
    return out


admitted_image = enumerate_image   # the public name (tests enumerate it on their own)


# --- relations ----------------------------------------------------------------------------

@dataclass
class NoneRelation:
    op: FabricOp
    kind: str = "None"

    def project(self, a: Actor, corr: PortCorrespondence | None = None):
        v = supports(self.op, a, corr)
        if not v:
            raise UnsupportedActor(v)
        return None

    def summary(self, full: bool = False) -> list[str]:
        return ["every admitted actor has one physical behaviour: no semantic configuration field"]


@dataclass
class FiniteRelation:
    op: FabricOp
    family: str
    cover: tuple            # representative behaviours, sorted by canonical key
    keys: tuple             # canonical_behavior_keys[], sorted, duplicate-free
    present: dict           # role -> tuple of slot names kept by the quotient
    kind: str = "Finite"
    _index: dict = field(default_factory=dict, repr=False, compare=False)   # derived lookups, lazily

    def _lookup(self, what: str):
        """key -> cover behaviour and role -> layouts, built once per relation (keys and cover
        are sealed by `_derive`), so decoding or describing every key is linear, not quadratic."""
        if what not in self._index:
            if what == "behavior":
                self._index[what] = {self.key_of(b): b for b in self.cover}
            else:
                out: dict = {}
                for b in self.cover:
                    lay = tuple((k, v.bound if k == "lanes" else None)
                                for s, k, v in b.components if s in self.present[b.role])
                    mine = out.setdefault(b.role, [])
                    if lay not in mine:
                        mine.append(lay)
                self._index[what] = out
        return self._index[what]

    def key_of(self, b: Behavior) -> bytes:
        slots = self.present[b.role]
        return codec.encode_behavior_key(self.family, b.role,
                                         [(k, v) for s, k, v in b.components if s in slots])

    def layouts(self) -> dict:
        """role -> list of component layouts ((kind, lane bound), ...) present in the domain."""
        return self._lookup("layouts")

    def behavior_of(self, key: bytes) -> Behavior | None:
        """The cover behaviour whose canonical key is `key` (None outside the domain)."""
        return self._lookup("behavior").get(bytes(key))

    def project(self, a: Actor, corr: PortCorrespondence | None = None) -> bytes:
        """admitted_actor_projection_to_key: total over admitted actors, deterministic."""
        v = supports(self.op, a, corr)
        if not v:
            raise UnsupportedActor(v)
        corr = corr or default_correspondence(self.op, a)
        rep = choose_representative(self.family, self.cover, DESCRIBE[self.op.descriptor.admission](self.op, a, corr))
        if rep is None:
            raise FabricError(Diagnostic(DiagnosticCode.EmptyBehaviorImage, self.op.path,
                                         f"admitted actor {a} has no total projection"))
        return self.key_of(rep)

    def decode_key(self, data: bytes) -> tuple[str, tuple]:
        """The canonical key codec: structural decoding, then exact domain membership."""
        layouts = self.layouts()
        errors = []
        for lay in _variants(layouts):
            try:
                role, comps = codec.decode_behavior_key(data, self.family, lay)
            except codec.CodecError as exc:
                errors.append(exc)
                continue
            if codec.encode_behavior_key(self.family, role, comps) != bytes(data):
                errors.append(codec.CodecError("operation behaviour key: noncanonical bytes"))
                continue
            if self.behavior_of(data) is None:
                raise codec.CodecError("operation behaviour key is canonical but outside this relation's domain")
            return role, comps
        # report the structural error of the variant that read furthest (all share the prefix)
        raise max(errors, key=lambda e: len(str(e))) if errors else codec.CodecError("no key layout")

    def summary(self, full: bool = False) -> list[str]:
        """One line per key; op-independent, so equal resources share one rendering."""
        if ("summary", full) not in self._index:
            self._index[("summary", full)] = [describe_key(self, k, full) for k in self.keys]
        return list(self._index[("summary", full)])


def _variants(layouts: dict):
    """Layout dictionaries trying each per-role component variant (variants of one role
    differ only where a component is defined for some behaviours of that role)."""
    n = max((len(v) for v in layouts.values()), default=0)
    for i in range(n):
        yield {role: vs[min(i, len(vs) - 1)] for role, vs in layouts.items()}


def describe_key(rel: FiniteRelation, key: bytes, full: bool = False) -> str:
    """Human-readable key: role, kept components, and the key bytes (role-local part unless full)."""
    role, comps = rel.decode_key(key)
    b = rel.behavior_of(key)
    slots = [s for s, _, _ in b.components if s in rel.present[b.role]]
    parts = [f"{s}={list(v.ordinals) if kind == 'lanes' else v}" for (kind, v), s in zip(comps, slots)]
    prefix = len(codec.header(codec.BEHAVIOR_KEY_DOMAIN)) + 4 + len(rel.family)
    shown = key.hex() if full else "..." + key[prefix:].hex()
    return f"{role or '(empty role)'}" + (f" [{', '.join(parts)}]" if parts else "") + f"  key={shown}"


def build_cover(family: str, described: list[tuple[Described, bytes]]) -> list[Behavior]:
    """Deterministic refinement cover of the complete reachable image."""
    order = sorted(described, key=lambda x: (-x[0].strength, x[0].weak is not None, x[1]))
    cover: list[Behavior] = []
    members: set = set()             # the cover as a set: membership in O(1), order kept in `cover`
    for d, _ in order:
        b = d.raw if d.weak is None else None
        if b is None and choose_representative(family, cover, d) is None:
            b = d.normal
        if b is not None and b not in members:
            members.add(b)
            cover.append(b)
    return cover


def quotient(cover: list[Behavior]) -> dict:
    """role -> slots whose value is not equal across that role's reachable behaviours."""
    present: dict = {}
    for role in {b.role for b in cover}:
        mine = [b for b in cover if b.role == role]
        slots = []
        for b in mine:
            for s, _, _ in b.components:
                if s not in slots:
                    slots.append(s)
        present[role] = tuple(s for s in slots
                              if len({repr(b.value(s)) for b in mine if any(x == s for x, _, _ in b.components)}) > 1)
    return present


def _derive(op: FabricOp, keep: list, budget: ImageBudget | None):
    """The derivation itself; the enumerated image is appended to `keep`."""
    desc = op.descriptor
    if any((desc.keyword, s) in FAIL_CLOSED_MEMBERS for s in op.op_list):
        raise FabricError(Diagnostic(DiagnosticCode.GepFailClosed, op.path + ".op_list",
                                     "llvm.getelementptr has no bounded address-generation carrier: "
                                     "finalisation stays fail-closed"))
    if desc.relation.startswith("direct_"):
        return derive_direct(op)
    image = enumerate_image(op, budget)
    keep.append(image)
    if not image:
        raise FabricError(Diagnostic(DiagnosticCode.EmptyBehaviorImage, op.path,
                                     "no admitted actor reaches this resource's physical ports"))
    if desc.relation == "none":
        return NoneRelation(op)
    describe = DESCRIBE[desc.admission]
    # The canonical actor and correspondence bytes only break ties between two weaker
    # behaviours: totals join the cover as a set (their order is immaterial) and a total and a
    # weak point are ordered by strength and weakness alone.  So only weak points are encoded.
    described = []
    for c in image:
        d = describe(op, c.actor, c.corr)
        described.append((d, b"" if d.weak is None else c.actor.canonical_bytes() + c.corr.canonical_bytes()))
    cover = build_cover(desc.keyword, described)
    if len(cover) == 1:
        return NoneRelation(op)  # one behaviour: no selector for a hardwired value
    present = quotient(cover)
    rel = FiniteRelation(op, desc.keyword, (), (), present)
    pairs = sorted((rel.key_of(b), b) for b in cover)
    keys = tuple(k for k, _ in pairs)
    if len(set(keys)) != len(keys):
        raise FabricError(Diagnostic(DiagnosticCode.EmptyBehaviorImage, op.path,
                                     "two behaviours share one canonical key (ambiguous projection)"))
    rel.cover = tuple(b for _, b in pairs)
    rel.keys = keys
    check_injective(rel, image, [d for d, _ in described])
    return rel


def check_injective(rel: FiniteRelation, image, described) -> None:
    """Seed: "Within one selected template and one exact actor/op/port correspondence, the
    normalized semantic assignment is injective ... Two valid assignments must not materialize
    isomorphic configured functions; such a duplicate is a Fabric schema or verifier error."

    The assignments of one resource are its canonical keys; the configured function an
    assignment materializes on this resource is the set of exact admitted actors, each under
    its exact port correspondence, that project to it.  Every key must materialize at least
    one admitted actor (else it is no valid assignment), and no actor under one
    correspondence may be materialized by two keys.  Equal exact actors are equal frozen
    values, so the check hashes them rather than encoding each one."""
    key_of = {b: k for k, b in rel._lookup("behavior").items()}
    owner: dict = {}
    materialized: set = set()
    for c, d in zip(image, described):
        rep = d.raw if d.weak is None else choose_representative(rel.family, rel.cover, d)   # a total: itself
        key = key_of.get(rep)
        if key is None:
            raise FabricError(Diagnostic(DiagnosticCode.EmptyBehaviorImage, rel.op.path,
                                         f"admitted actor {c.actor} has no total projection"))
        fn = (c.actor, c.corr)
        prior = owner.setdefault(fn, key)
        if prior != key:
            raise FabricError(Diagnostic(DiagnosticCode.DuplicateConfiguredFunction, rel.op.path,
                                         f"{c.actor} under {list(c.corr.operands)} -> {list(c.corr.results)} is "
                                         f"materialized by two semantic assignments ({describe_key(rel, prior)} "
                                         f"and {describe_key(rel, key)})"))
        materialized.add(key)
    for k in rel.keys:
        if k not in materialized:
            raise FabricError(Diagnostic(DiagnosticCode.EmptyBehaviorImage, rel.op.path,
                                         f"semantic assignment {describe_key(rel, k)} materializes no admitted "
                                         "actor"))


# --- one derivation per distinct capability ------------------------------------------------
# Everything above depends on the op's family, op_list, hw_params, ports and constraints,
# never on where it sits (name, path).  A description with many equal resources (a PE per
# FU, a fuzzer's copies) therefore derives each distinct capability once; the relation is
# rebound to each occurrence and the diagnostics are re-rooted at its path.

@dataclass(frozen=True)
class Sealed:
    """The outcome of deriving one concrete capability: the relation (bound to the op it was
    derived for) and what verification needs of its admitted image (the parameter atoms it
    exercises), or the diagnostics / internal inconsistency."""
    path: str                        # the occurrence path the derivation ran under
    relation: object = None
    atoms: frozenset | None = None   # (field, value) points the admitted image uses; None: not enumerated
    diagnostics: tuple = ()
    inconsistency: str | None = None
    work: int = 0                    # generated points the enumeration took (what a budget is charged)
    max_lane_count: int = 0          # adapters: the exact maximum reachable lane count M of the image

    def weight(self) -> int:
        return 1 + len(self.atoms or ()) + len(getattr(self.relation, "cover", ()) or ())


SEAL_BUDGET = 1 << 18                 # cached atoms + cover behaviours over all entries
_SEALED: "OrderedDict[tuple, Sealed]" = OrderedDict()
_sealed_weight = 0


def clear_seal_cache() -> None:
    """Forget every cached derivation (tests that count enumerations start from here)."""
    global _sealed_weight
    _SEALED.clear()
    _sealed_weight = 0


def capability_key(op: FabricOp) -> tuple | None:
    """What a derivation reads from `op`; None when a field is not hashable (never cached)."""
    key = (op.family, op.op_list, op.hw_params, op.inputs, op.results, op.constraints)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _compute_seal(op: FabricOp, meter: ImageBudget) -> tuple[Sealed, bool]:
    """(the derivation, whether it is a property of the capability and may be cached)."""
    keep: list = []
    path, before = op.path, meter.used
    try:
        rel = _derive(op, keep, meter)
    except BudgetExhausted as exc:
        return Sealed(path, diagnostics=tuple(exc.diagnostics)), False
    except FabricError as exc:
        return Sealed(path, diagnostics=tuple(exc.diagnostics), work=meter.used - before), True
    except InternalInconsistency as exc:
        return Sealed(path, inconsistency=str(exc), work=meter.used - before), True
    image = keep[0] if keep else ()
    atoms = frozenset(a for c in image for a in c.atoms) if keep else None
    lanes = max((_group_vector(c.actor).shape[0] for c in image), default=0) \
        if op.descriptor.admission == "adapter" else 0
    return Sealed(path, rel, atoms, work=meter.used - before, max_lane_count=lanes), True


def seal(op: FabricOp, budget: ImageBudget | None = None) -> Sealed:
    """The derivation of `op`'s capability, computed once per distinct capability and rebound
    to `op`'s occurrence.  `budget`, a whole description's, is charged once per distinct
    capability."""
    global _sealed_weight
    key = capability_key(op)
    charge = budget is not None and (key is None or key not in budget.seen)
    meter = budget if charge else ImageBudget.meter()
    s = _SEALED.get(key) if key is not None else None
    if s is None:
        s, cacheable = _compute_seal(op, meter)
        if not cacheable:             # the description's budget ran out: not the capability's fault
            return s
        if key is not None and s.weight() <= SEAL_BUDGET:
            _SEALED[key] = s
            _sealed_weight += s.weight()
            while _sealed_weight > SEAL_BUDGET:
                _sealed_weight -= _SEALED.popitem(last=False)[1].weight()
    else:
        _SEALED.move_to_end(key)
        if charge:
            try:
                budget.charge(op, s.work)
            except BudgetExhausted as exc:
                return Sealed(op.path, diagnostics=tuple(exc.diagnostics))
    if charge and key is not None:
        budget.seen.add(key)
    if s.path == op.path and getattr(s.relation, "op", op) is op:
        return s
    return _rebind(s, op)


def _reroot(path: str, old: str, new: str) -> str:
    """Every derivation diagnostic is rooted at the op's path (`op.path + ...`)."""
    return new + path[len(old):] if path.startswith(old) else path


def _rebind(s: Sealed, op: FabricOp) -> Sealed:
    old, new = s.path, op.path
    rel = s.relation
    if rel is not None:
        rel = replace(rel, op=op)       # shares the sealed cover, keys and lookups
    diags = tuple(Diagnostic(d.code, _reroot(d.path, old, new), d.message) for d in s.diagnostics)
    why = s.inconsistency
    if why is not None:
        why = _reroot(why, old, new)
    return Sealed(new, rel, s.atoms, diags, why, s.work, s.max_lane_count)


def derive_relation(op: FabricOp, budget: ImageBudget | None = None):
    """FabricOpSemanticFieldRelation of one verified concrete op (raises FabricError)."""
    s = seal(op, budget)
    if s.diagnostics:
        raise FabricError(list(s.diagnostics))
    if s.inconsistency is not None:
        raise InternalInconsistency(s.inconsistency)
    return s.relation
