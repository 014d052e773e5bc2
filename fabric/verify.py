"""The fabric.op verifier: one typed diagnostic per rejection class.

`verify_op` checks, in order: explicit family identity; op_list membership and duplicates;
the closed hw_params record (missing fields, duplicates, parameter domains no enabled schema
interprets, FloatBehaviorProfile and accuracy rules, the empty pointer-format relation);
physical ports (role inventory, bits vs bits_tag); typed constraints; and finally derives the
semantic-field relation, reporting orphan declarations no admitted actor can use.  Each
family-specific rule is one entry of `PARAM_RULES`, keyed by the admission provider.
"""
from __future__ import annotations

from .atoms import FLOAT_FORMATS
from .capability import (CONTRACT_KINDS, REFINEMENT_KINDS, FabricOp, InactivePortGuarantee,
                         PhysicalRefinementDomain, ResourceContractConstraint)
from .errors import Diagnostic, DiagnosticCode as C, FabricError
from .families import FAMILIES, families_for, inventory_error
from .params import ATOM_KINDS, FloatBehaviorProfile
from .refinement import REFINEMENTS
from .relation import ImageBudget, derive_relation, seal
from .schemas import SCHEMAS


def _s(x):
    return tuple(x) if x else ()


# --- hw_params rules per admission provider -----------------------------------------------

def _profile_rules(op, b: FloatBehaviorProfile, path: str, selects_rounding: bool, nan_roles: dict) -> list:
    out = []
    p = path + ".behavior"
    if _s(b.subnormal_behaviors) and _s(b.subnormal_behaviors) != ("preserve",):
        out.append(Diagnostic(C.InvalidFloatBehaviorProfile, p + ".subnormal_behaviors",
                              "no registered actor selects subnormal handling: the profile must be [preserve]"))
    if b.signed_zero_behaviors is not None and len(set(b.signed_zero_behaviors)) != 1:
        out.append(Diagnostic(C.InvalidFloatBehaviorProfile, p + ".signed_zero_behaviors",
                              "one concrete profile identifies exactly one signed-zero hardware behaviour"))
    if _s(b.signed_zero_behaviors) == ("relaxed",) and "nsz" not in _s(b.required_fast_math):
        out.append(Diagnostic(C.InvalidFloatBehaviorProfile, p + ".required_fast_math",
                              "a relaxed signed-zero circuit must require nsz"))
    rm = _s(b.rounding_modes)
    if rm and not selects_rounding and rm != ("to_nearest_even",):
        out.append(Diagnostic(C.UninterpretedParameterDomain, p + ".rounding_modes",
                              "no enabled schema selects rounding: the profile must be [to_nearest_even]"))
    for nan in _s(b.nan_behaviors):
        if nan not in nan_roles:
            out.append(Diagnostic(C.UninterpretedParameterDomain, p + ".nan_behaviors",
                                  f"NaN behaviour {nan} is observed by no enabled compare or min/max role"))
    if len(set(_s(b.nan_behaviors))) > 1 and "nnan" in _s(b.required_fast_math):
        out.append(Diagnostic(C.InvalidFloatBehaviorProfile, p + ".nan_behaviors",
                              "several NaN behaviours have no observable distinction when nnan is required"))
    return out


def _rounding_selected(op) -> bool:
    return any("rounding_mode" in SCHEMAS[s].attributes for s in op.op_list if s in SCHEMAS)


def r_float_uniform(op, rec, path):
    return _profile_rules(op, rec.behavior, path, _rounding_selected(op), {"ieee": 1})


def r_float_width_cast(op, rec, path):
    return _profile_rules(op, rec.behavior, path, "arith.truncf" in op.op_list, {"ieee": 1})


def r_special_math(op, rec, path):
    out = _profile_rules(op, rec.behavior, path, False, {"ieee": 1})
    if rec.accuracy_guarantee not in (None, "correctly_rounded") and "afn" not in _s(rec.behavior.required_fast_math):
        out.append(Diagnostic(C.InvalidAccuracyContract, path + ".accuracy_guarantee",
                              f"a {rec.accuracy_guarantee} circuit approximates: required_fast_math must contain afn"))
    return out


def r_float_compare(op, rec, path):
    roles = {}
    if any(s in op.op_list for s in ("arith.cmpf", "arith.minimumf", "arith.maximumf")):
        roles["ieee"] = 1
    if any(s in op.op_list for s in ("arith.minnumf", "arith.maxnumf")):
        roles["number_preferred"] = 1
    out = _profile_rules(op, rec.behavior, path, False, roles)
    out += _predicates_interpreted(op, rec.comparison_predicates, "arith.cmpf", path + ".comparison_predicates")
    return out


def _predicates_interpreted(op, preds, schema, path):
    if schema in op.op_list and not _s(preds):
        return [Diagnostic(C.IncompleteRelation, path, f"{schema} is enabled but no predicate is admitted")]
    if schema not in op.op_list and _s(preds):
        return [Diagnostic(C.UninterpretedParameterDomain, path, f"no enabled schema interprets predicates ({schema} is not enabled)")]
    return []


def r_int_uniform(op, rec, path):
    if op.family == "ScalarIntegerAddSub" and _s(rec.pointer_formats):
        return [Diagnostic(C.PointerFormatRelationNotEmpty, path + ".pointer_formats",
                           "the reconfigurable-operation relation requires an empty pointer-format relation")]
    return []


def r_int_compare(op, rec, path):
    return _predicates_interpreted(op, rec.comparison_predicates, "arith.cmpi", path + ".comparison_predicates")


def r_int_cast(op, rec, path):
    out = []
    index = any(s.startswith("arith.index_cast") for s in op.op_list)
    if _s(rec.resolved_index_widths) and not index:
        out.append(Diagnostic(C.UninterpretedParameterDomain, path + ".resolved_index_widths",
                              "no enabled index cast interprets resolved index widths"))
    if index and not _s(rec.resolved_index_widths):
        out.append(Diagnostic(C.IncompleteRelation, path + ".resolved_index_widths",
                              "an enabled index cast needs at least one resolved index width"))
    for i, (s, d) in enumerate(_s(rec.width_pairs)):
        interp = ((s < d and ("arith.extsi" in op.op_list or "arith.extui" in op.op_list))
                  or (s > d and "arith.trunci" in op.op_list)
                  or (index and (s in _s(rec.resolved_index_widths) or d in _s(rec.resolved_index_widths))))
        if not interp:
            out.append(Diagnostic(C.UninterpretedParameterDomain, f"{path}.width_pairs[{i}]",
                                  f"no enabled cast schema interprets the directed pair [{s}, {d}]"))
    return out


def r_loop_stream(op, rec, path):
    return []


def r_elements(op, rec, path):
    if not _s(rec.integer_element_widths) and not _s(rec.float_element_formats):
        return [Diagnostic(C.IncompleteRelation, path, "the element domain is empty")]
    return []


def r_slice(op, rec, path):
    out = r_elements(op, rec, path)
    rank = rec.max_dynamic_position_rank or 0
    if rank == 0 and _s(rec.resolved_index_widths):
        out.append(Diagnostic(C.UninterpretedParameterDomain, path + ".resolved_index_widths",
                              "max_dynamic_position_rank is 0: no dynamic position interprets index widths"))
    if rank > 0 and not _s(rec.resolved_index_widths):
        out.append(Diagnostic(C.IncompleteRelation, path + ".resolved_index_widths",
                              "dynamic positions need at least one resolved index width"))
    return out


def r_select_bitcast(op, rec, path):
    if not _s(rec.integer_widths) and not _s(rec.float_formats):
        return [Diagnostic(C.IncompleteRelation, path, "the type domain is empty")]
    return []


PARAM_RULES = {
    "int_uniform": r_int_uniform, "int_compare": r_int_compare, "int_cast": r_int_cast,
    "select": r_select_bitcast, "bitcast": r_select_bitcast, "float_uniform": r_float_uniform,
    "vector_float": r_float_uniform, "float_compare": r_float_compare,
    "float_width_cast": r_float_width_cast, "special_math": r_special_math,
    "loop_stream": r_loop_stream, "adapter": r_elements, "slice": r_slice, "shuffle": r_elements,
}

# fields legitimately empty for some resources (their emptiness is checked by a rule)
MAY_BE_EMPTY = {"pointer_formats", "resolved_index_widths", "comparison_predicates", "required_fast_math",
                "integer_widths", "float_formats", "integer_element_widths", "float_element_formats"}


def _record_shape(rec, path: str) -> list:
    out = []
    for name, kind in type(rec).FIELDS.items():
        v = getattr(rec, name)
        p = f"{path}.{name}"
        if v is None:
            out.append(Diagnostic(C.IncompleteRelation, p, f"{type(rec).__name__} requires field {name!r}"))
            continue
        if kind == "behavior":
            out += _record_shape(v, p)
            continue
        if ATOM_KINDS[kind][0]:
            seen = set()
            for i, x in enumerate(v):
                if x in seen:
                    out.append(Diagnostic(C.DuplicateDeclaration, f"{p}[{i}]", f"{x!r} is declared twice"))
                seen.add(x)
            if not v and name not in MAY_BE_EMPTY and not name.startswith("required"):
                out.append(Diagnostic(C.IncompleteRelation, p, f"{name} must not be empty"))
    return out


# --- ports and constraints --------------------------------------------------------------------

# tied physical port groups (same software value) and control ports, per family
def _port_groups(op) -> tuple[list, list]:
    n_in, n_out = len(op.inputs), len(op.results)
    fam = op.family
    if fam == "LoopCarry":
        return [[("in", 1), ("in", 2), ("out", 0)]], [("in", 0)]
    if fam == "LoopInvariant":
        return [[("in", 1), ("out", 0)]], [("in", 0)]
    if fam == "LoopGate":
        return [[("in", 1), ("out", 1)]], [("in", 0), ("out", 0)]
    if fam == "TokenSync":
        return [[("in", p), ("out", p)] for p in range(min(n_in, n_out))], []
    if fam == "TokenMux":
        return [[("in", p) for p in range(1, n_in)] + [("out", 0)]], [("in", 0)]
    if fam == "TokenDemux":
        return [[("in", 1)] + [("out", p) for p in range(n_out)]], [("in", 0)]
    return [], []


def _port(op, side, p):
    return (op.inputs if side == "in" else op.results)[p]


def _ports_rules(op, desc, path) -> list:
    out = []
    err = inventory_error(desc, op.hw_params, len(op.inputs), len(op.results))
    if err:
        out.append(Diagnostic(C.IncompleteRelation, path + ".ports", err))
        return out
    if not desc.tagged:
        for side, ports in (("inputs", op.inputs), ("results", op.results)):
            for i, t in enumerate(ports):
                if t.tagged:
                    out.append(Diagnostic(C.PortKindMismatch, f"{path}.ports.{side}[{i}]",
                                          f"{desc.keyword} carries untagged values only: {t} is bits_tag"))
        return out
    groups, control = _port_groups(op)
    for side, p in control:
        if _port(op, side, p).tagged:
            out.append(Diagnostic(C.PortKindMismatch, f"{path}.ports.{'inputs' if side == 'in' else 'results'}[{p}]",
                                  "condition and selector ports carry untagged bits"))
    for g in groups:
        kinds = {(_port(op, s, p).kind) for s, p in g}
        if len(kinds) > 1:
            desc_ = ", ".join(f"{'input' if s == 'in' else 'result'} {p}: {_port(op, s, p)}" for s, p in g)
            out.append(Diagnostic(C.PortKindMismatch, path + ".ports",
                                  f"ports carrying one value mix bits and bits_tag ({desc_})"))
    return out


def _constraint_rules(op, desc, path) -> list:
    out = []
    contracts = op.constraints_of(ResourceContractConstraint)
    if not contracts:
        out.append(Diagnostic(C.IncompleteRelation, path + ".constraints",
                              f"no resource_contract constraint (a {desc.keyword} resource uses {desc.contract})"))
    for i, c in enumerate(op.constraints):
        p = f"{path}.constraints[{i}]"
        if op.constraints.index(c) != i:
            out.append(Diagnostic(C.DuplicateDeclaration, p, "this constraint is declared twice"))
            continue
        if isinstance(c, ResourceContractConstraint):
            if contracts.index(c) > 0:
                out.append(Diagnostic(C.DuplicateDeclaration, p, "a resource has exactly one resource contract"))
            elif c.contract != desc.contract:
                out.append(Diagnostic(C.IncompleteRelation, p, f"{desc.keyword} resources use the {desc.contract} "
                                                               f"contract, not {c.contract}"))
        elif isinstance(c, InactivePortGuarantee):
            if desc.keyword not in ("TokenSync", "TokenMux", "TokenDemux"):
                out.append(Diagnostic(C.UninterpretedParameterDomain, p,
                                      f"{desc.keyword}'s schema cannot guarantee an inactive port"))
            for side, ports, phys in (("inputs", c.inputs, op.inputs), ("results", c.results, op.results)):
                for q in ports:
                    if not 0 <= q < len(phys):
                        out.append(Diagnostic(C.OrphanDeclaration, p, f"{side} port {q} does not exist"))
        elif isinstance(c, PhysicalRefinementDomain):
            if len(set(c.values)) != len(c.values):
                out.append(Diagnostic(C.DuplicateDeclaration, p, "a refinement value is declared twice"))
            if len(c.values) < 2:
                out.append(Diagnostic(C.OrphanDeclaration, p, "a refinement domain needs at least two values"))
            first = next(d for d in op.constraints_of(PhysicalRefinementDomain) if d.kind == c.kind)
            if first is not c:
                out.append(Diagnostic(C.DuplicateDeclaration, p, f"a second {c.kind} refinement domain"))
            why = REFINEMENTS[c.kind].proof(op)
            if why is not None:
                out.append(Diagnostic(C.UnprovenRefinement, p, why))
    return out


# --- orphans --------------------------------------------------------------------------------

def _declared_atoms(rec, path):
    for name, kind in type(rec).FIELDS.items():
        v = getattr(rec, name)
        if kind == "behavior" and v is not None:
            for sub, p, val in _declared_atoms(v, path + ".behavior"):
                yield "behavior." + sub, p, val
        elif v is not None and ATOM_KINDS[kind][0] and name != "pointer_formats":
            for i, x in enumerate(v):
                yield name, f"{path}.{name}[{i}]", x


def _orphans(op, used: frozenset, path) -> list:
    """Declarations outside `used`, the (field, value) atoms the admitted image exercises."""
    out = []
    for name, p, v in _declared_atoms(op.hw_params, path):
        if (name, v) not in used:
            out.append(Diagnostic(C.OrphanDeclaration, p,
                                  f"{v!r} is used by no admitted actor on this resource's physical ports"))
    return out


def _direct_orphans(op, path) -> list:
    rec, out = op.hw_params, []
    if op.family == "TokenConstant":
        return out
    widths = [(w, f"integer_element_widths[{i}]") for i, w in enumerate(_s(rec.integer_element_widths))]
    widths += [(FLOAT_FORMATS[f], f"float_element_formats[{i}]") for i, f in enumerate(_s(rec.float_element_formats))]
    if op.family == "FixedVectorSliceAlignMerge":
        room = min(rec.max_slice_payload_bits, rec.max_container_payload_bits, op.inputs[0].width, op.results[0].width)
        for w, p in widths:
            if w > room:
                out.append(Diagnostic(C.OrphanDeclaration, f"{path}.{p}", f"a {w}-bit element fits no slice"))
        pos = [q.width for q in op.inputs[2:]]
        for i, w in enumerate(_s(rec.resolved_index_widths)):
            if pos and w > max(pos):
                out.append(Diagnostic(C.OrphanDeclaration, f"{path}.resolved_index_widths[{i}]",
                                      f"index width {w} fits no position port"))
    if op.family == "FixedVectorShuffle":
        room = min(rec.max_block_payload_bits, rec.max_operand_payload_bits, rec.max_result_payload_bits,
                   op.inputs[0].width, op.inputs[1].width, op.results[0].width)
        for w, p in widths:
            if w > room:
                out.append(Diagnostic(C.OrphanDeclaration, f"{path}.{p}", f"a {w}-bit element fits no block"))
    return out


# --- entry points ---------------------------------------------------------------------------

def verify_op(op: FabricOp, budget: ImageBudget | None = None) -> list[Diagnostic]:
    """Every diagnostic of one concrete op.  The relation and admitted image are derived once
    per distinct capability (`relation.seal`); `budget` is the description's image budget."""
    path = op.path or op.name
    if not op.family:
        return [Diagnostic(C.MissingImplementationFamily, path + ".implementation_family",
                           "every fabric.op names exactly one ImplementationFamilyId; it is never inferred")]
    desc = FAMILIES.get(op.family)
    if desc is None:
        return [Diagnostic(C.UnknownImplementationFamily, path + ".implementation_family",
                           f"{op.family!r} is not a registered implementation family")]
    out = []
    if not op.op_list:
        out.append(Diagnostic(C.IncompleteRelation, path + ".op_list", "op_list enables no operation schema"))
    for i, s in enumerate(op.op_list):
        p = f"{path}.op_list[{i}]"
        if op.op_list.index(s) != i:
            out.append(Diagnostic(C.DuplicateDeclaration, p, f"{s} is enabled twice"))
        elif s not in SCHEMAS:
            out.append(Diagnostic(C.UnknownOperationSchema, p, f"{s!r} is not a registered operation schema"))
        elif s not in desc.admitted:
            out.append(Diagnostic(C.OpListMemberOutsideFamily, p,
                                  f"{s} is not a {desc.keyword} member (admitted by: "
                                  f"{', '.join(families_for(s)) or 'no family'})"))
    hp = path + ".hw_params"
    if not isinstance(op.hw_params, desc.params):
        out.append(Diagnostic(C.IncompleteRelation, hp, f"{desc.keyword} uses {desc.params.__name__}"))
        return out
    shape = _record_shape(op.hw_params, hp)
    out += shape
    if not shape and desc.admission in PARAM_RULES:
        out += PARAM_RULES[desc.admission](op, op.hw_params, hp)
    out += _ports_rules(op, desc, path)
    out += _constraint_rules(op, desc, path)
    if out:
        return out
    sealed = seal(op, budget)
    if sealed.diagnostics:
        return list(sealed.diagnostics)
    if sealed.inconsistency is not None:  # a bug, reported precisely rather than as a traceback
        return [Diagnostic(C.IncompleteRelation, path, f"internal inconsistency: {sealed.inconsistency}")]
    if sealed.relation.kind == "Direct":
        return _direct_orphans(op, hp)
    return _orphans(op, sealed.atoms, hp)


def resolve_op(op: FabricOp):
    """Verify then derive the relation; raises FabricError with every diagnostic."""
    diags = verify_op(op)
    if diags:
        raise FabricError(diags)
    return derive_relation(op)


__all__ = ["verify_op", "resolve_op", "PARAM_RULES", "CONTRACT_KINDS", "REFINEMENT_KINDS", "FAMILIES"]
