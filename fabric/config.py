"""Configuration handoff: ConfiguredHardwareProjection = DeriveFields(Dataflow, TechMapping,
Fabric, SpatialMapping), a cold deterministic derivation that performs no search.

Mapping owns the authoritative selections (`Use`: one exact actor bound to one fabric.op
under an ordered port correspondence, inside one selected FU template).  The relation's
projector mechanically derives the selected semantic value of each use; several uses of one
physical slot collapse when their values are equal and make the Mapping invalid otherwise.

  OperationConfiguration = Disabled | Active{semantic_configuration, physical_refinements}

No generic refinement value type exists: an assignment is admitted only to a refinement domain
the concrete op declares (`PhysicalRefinementDomain`) whose kind has a typed owner in
`fabric.refinement` (value type, canonical codec, semantic-preservation proof) and whose proof
holds for the op; strict import rejects a kind without an owner (NonemptyPhysicalRefinement).
A refinement never enters the configured software function (`materialize`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .capability import (FabricOp, InactivePortGuarantee, PhysicalRefinementDomain,
                         PortCorrespondence, Rejection, supports)
from .errors import Diagnostic, DiagnosticCode as C, FabricError
from .refinement import REFINEMENTS
from .relation import UnsupportedActor
from .schemas import Actor
from .topology import Fabric, Router, first_by_name
from .types import payload_bits
from .verify import resolve_op


@dataclass(frozen=True)
class Use:
    name: str
    op: str                    # "fu/node"
    actor: Actor
    corr: PortCorrespondence
    context: int | None = None  # InstructionContextRef in a temporal PE (None: the sole context)


# --- edge witnesses: what proves a Canonical Dataflow edge realization-internal -------------

@dataclass(frozen=True)
class FuWitness:
    """The configured-FU relation: the selected template routes the producer's op result to
    the consumer's op input (following the exact actor/op/port correspondence)."""
    kind = "fu"


@dataclass(frozen=True)
class MemoryWitness:
    """A configured-memory relation: configured relation `slot` of `memory` takes the
    producer's result from an FU output the memory is written from and delivers it to an FU
    input the memory is read into."""
    memory: str
    slot: int
    kind = "memory"


@dataclass(frozen=True)
class RegisterFileWitness:
    """A temporal-PE register-file realization: the producer writes `register` of the PE's
    register file and the consumer reads it; both run in FUs of that temporal PE."""
    pe: str
    register: int
    kind = "register_file"


Witness = FuWitness | MemoryWitness | RegisterFileWitness


@dataclass(frozen=True)
class MappedEdge:
    src: tuple[str, int]       # (use, result ordinal)
    dst: tuple[str, int]       # (use, operand ordinal)
    realization: str           # "internal" | "external"
    witness: Witness | None = None   # internal edges only; None = the configured-FU relation


@dataclass(frozen=True)
class RefinementAssignment:
    op: str
    kind: str
    value: int


@dataclass(frozen=True)
class Mapping:
    templates: tuple = ()      # ((fu, template), ...)
    uses: tuple[Use, ...] = ()
    edges: tuple[MappedEdge, ...] = ()
    refinements: tuple[RefinementAssignment, ...] = ()
    path: str = "mapping"
    pointer_layouts: tuple = ()   # the module's PointerLayout(AS) records (fabric.types.PointerLayout)


@dataclass(frozen=True)
class Disabled:
    """No operation selection, parameter, mask or refinement: ConfigurationABI owns the bits."""

    def __str__(self):
        return "Disabled"


@dataclass(frozen=True)
class Active:
    semantic_configuration: object          # None | finite key bytes | direct carrier int
    physical_refinements: tuple = ()

    def __str__(self):
        v = self.semantic_configuration
        sem = ("none (no semantic field)" if v is None else
               f"key {v.hex()}" if isinstance(v, bytes) else f"direct 0x{v:x}")
        ref = "".join(f", {k}={x}" for k, x in self.physical_refinements)
        return f"Active({sem}{ref})"


OperationConfiguration = Disabled | Active


@dataclass(frozen=True)
class Boundary:
    """The ordered software-to-FU-boundary correspondence of one selected FU, derived from its
    template and the uses' actor/op/port correspondences: `inputs[i]` are the (use, operand)
    endpoints FU input i delivers to (SSA broadcast may feed several), `outputs[j]` the
    (use, result) endpoints FU output j carries (several uses of one op share its result port)."""
    fu: str
    template: str
    inputs: tuple
    outputs: tuple
    wired: tuple = ()          # ((use, operand), (use, result)) fed inside the FU by the template

    def input_of(self, operand: tuple[str, int]) -> int | None:
        return next((i for i, ends in enumerate(self.inputs) if operand in ends), None)

    def outputs_of(self, result: tuple[str, int]) -> tuple[int, ...]:
        return tuple(j for j, ends in enumerate(self.outputs) if result in ends)


def selected_templates(fabric: Fabric, mapping: Mapping) -> dict:
    """FU name -> (FU, its selected Template), or (FU or None, None) when the mapping names an
    FU or template the fabric lacks; in mapping order."""
    out: dict = {}
    for fu_name, tname in mapping.templates:
        fu = fabric.fu(fu_name)
        out[fu_name] = (fu, fu.template(tname) if fu else None)
    return out


def boundaries(fabric: Fabric, mapping: Mapping) -> dict:
    """FU name -> Boundary for every FU the mapping selects a (known) template of."""
    out: dict = {}
    by_op: dict = {}
    for u in mapping.uses:
        by_op.setdefault(u.op, []).append(u)
    for fu_name, (fu, t) in selected_templates(fabric, mapping).items():
        if t is None:
            continue
        tname = t.name
        router = Router(fu, t)
        inputs = [[] for _ in fu.inputs]
        wired = []
        for node in fu.ops():
            if node.name not in t.active:
                continue
            for u in by_op.get(f"{fu.name}/{node.name}", ()):
                for k, p in enumerate(u.corr.operands):
                    if not 0 <= p < len(node.operands):
                        continue                      # a malformed correspondence is diagnosed by Supports()
                    o = router.origin(node.operands[p])
                    if o is None:
                        continue
                    if o[0] == "in":
                        inputs[o[1]].append((u.name, k))
                    else:
                        for v in by_op.get(f"{fu.name}/{o[1]}", ()):
                            if o[2] in v.corr.results:
                                wired.append(((u.name, k), (v.name, v.corr.results.index(o[2]))))
        outputs = []
        for ref in fu.yields:
            o = router.origin(ref)
            ends = []
            if o is not None and o[0] == "op":
                for v in by_op.get(f"{fu.name}/{o[1]}", ()):
                    if o[2] in v.corr.results:
                        ends.append((v.name, v.corr.results.index(o[2])))
            outputs.append(tuple(ends))
        out[fu_name] = Boundary(fu_name, tname, tuple(tuple(x) for x in inputs), tuple(outputs), tuple(wired))
    return out


@dataclass(frozen=True)
class ConfiguredFunction:
    """The exact configured software function, Materialize(FU, template, actors, correspondence):
    actors (unchanged objects) with the operation, ordered port correspondence and context each
    runs on, ordered edges with their realization, and the exact FU-boundary correspondence.
    Physical refinements are deliberately absent."""
    nodes: tuple       # ((use name, op ref, actor, operand ports, result ports, context), ...)
    edges: tuple       # (((src use, k), (dst use, i), realization, witness), ...)
    boundaries: tuple = ()   # (Boundary, ...) in mapping template order; () without a fabric


def materialize(mapping: Mapping, fabric: Fabric | None = None) -> ConfiguredFunction:
    nodes = tuple((u.name, u.op, u.actor, u.corr.operands, u.corr.results, u.context) for u in mapping.uses)
    edges = tuple((e.src, e.dst, e.realization, e.witness) for e in mapping.edges)
    if fabric is None:
        return ConfiguredFunction(nodes, edges)
    b = boundaries(fabric, mapping)
    return ConfiguredFunction(nodes, edges, tuple(b[f] for f, _ in mapping.templates if f in b))


# --- derivation ---------------------------------------------------------------------------

@dataclass
class Projection:
    configurations: dict = field(default_factory=dict)   # slot -> OperationConfiguration
    values: dict = field(default_factory=dict)           # use name -> projected value
    ops: dict = field(default_factory=dict)              # slot -> the op ref whose semantic field it is


def _inactive_ok(op: FabricOp, side: str, port: int, actor: Actor) -> bool:
    for g in op.constraints_of(InactivePortGuarantee):
        if port in (g.inputs if side == "inputs" else g.results):
            return True
    # the slice family's registered extract schema guarantees its merge input is inactive
    return op.family == "FixedVectorSliceAlignMerge" and actor.schema == "vector.extract" and side == "inputs" and port == 1


def derive_fields(fabric: Fabric, mapping: Mapping, strict: bool = True) -> tuple[Projection, list[Diagnostic]]:
    """The cold derivation.  Returns the projection and every diagnostic (empty when valid)."""
    diags: list[Diagnostic] = []
    proj = Projection()
    mp = mapping.path
    templates = {}
    for (fu_name, tname), (_, t) in zip(mapping.templates, selected_templates(fabric, mapping).values()):
        if t is None:
            diags.append(Diagnostic(C.UnknownReference, f"{mp}.templates.{fu_name}",
                                    f"no FU {fu_name!r} with template {tname!r}"))
        templates[fu_name] = t
    _check_layouts(mapping, diags)
    relations: dict = {}
    slot_values: dict = {}
    uses = {}
    for i, u in enumerate(mapping.uses):
        p = f"{mp}.uses[{i}]"
        if u.name in uses:
            diags.append(Diagnostic(C.DuplicateName, p + ".name", f"use {u.name!r} is named twice"))
        uses[u.name] = u
        found = fabric.op(u.op)
        if found is None:
            diags.append(Diagnostic(C.UnknownReference, p + ".op", f"{u.op!r} names no fabric.op"))
            continue
        fu, node = found
        op = node.op
        ctx = _context(fabric.pe_of(fu.name), u, p, diags)
        if ctx is False:
            continue
        t = templates.get(fu.name)
        if t is None:
            diags.append(Diagnostic(C.UnknownReference, p + ".op", f"FU {fu.name} has no selected template"))
            continue
        if node.name not in t.active:
            diags.append(Diagnostic(C.IncoherentRoute, p + ".op", f"{u.op} is inactive in template {t.name}"))
            continue
        if u.op not in relations:
            try:
                relations[u.op] = resolve_op(op)
            except FabricError as exc:
                diags.append(Diagnostic(C.UnsupportedActor, p + ".op", f"{u.op} is invalid Fabric: {exc}"))
                relations[u.op] = None
        rel = relations[u.op]
        if rel is None:
            continue
        v = supports(op, u.actor, u.corr)
        if not v:
            code = C.MemberNotEnabled if v.rejection is Rejection.MemberNotEnabled else C.UnsupportedActor
            diags.append(Diagnostic(code, p, f"{u.op} rejects {u.actor}: {v.rejection.name}: {v.message}"))
            continue
        for side, phys, bound in (("inputs", op.inputs, u.corr.operands), ("results", op.results, u.corr.results)):
            for q in sorted(set(range(len(phys))).difference(bound)):     # one set operation, not a scan per port
                if not _inactive_ok(op, side, q, u.actor):
                    diags.append(Diagnostic(C.ImplicitTokenSink, p, f"{u.op} {side[:-1]} port {q} is unbound and "
                                                                    "the capability guarantees no inactivity"))
        try:
            value = rel.project(u.actor, u.corr)
        except UnsupportedActor as exc:
            diags.append(Diagnostic(C.UnsupportedActor, p, str(exc)))
            continue
        proj.values[u.name] = value
        slot = u.op if ctx is None else f"{u.op}@{ctx}"   # a temporal PE: one slot per resident context
        prior = slot_values.setdefault(slot, (value, u.name))
        if prior[0] != value:  # equal repeated derivations collapse; unequal ones reject
            diags.append(Diagnostic(C.ConflictingAssignment, p, f"{u.name} projects a value into {slot}'s semantic "
                                                                f"field that differs from {prior[1]}'s"))
    refinements: dict = {}
    for i, r in enumerate(mapping.refinements):
        p = f"{mp}.physical_refinements[{i}]"
        owner = REFINEMENTS.get(r.kind)
        if owner is None and strict:     # no typed value: never an opaque value in the projection
            diags.append(Diagnostic(C.NonemptyPhysicalRefinement, p,
                                    f"{r.kind!r} has no typed refinement owner: strict import rejects it"))
            continue
        found = fabric.op(r.op)
        dom = [d for d in found[1].op.constraints_of(PhysicalRefinementDomain) if d.kind == r.kind] if found else []
        if owner is None or not dom or not any(_same_value(r.value, v) for v in dom[0].values):
            diags.append(Diagnostic(C.UnknownReference, p, f"{r.op} declares no {r.kind} refinement admitting {r.value}"))
            continue
        why = owner.proof(found[1].op)
        if why is not None:
            diags.append(Diagnostic(C.UnprovenRefinement, p, why))
            continue
        prior = refinements.setdefault((r.op, r.kind), r.value)
        if prior != r.value:
            diags.append(Diagnostic(C.ConflictingAssignment, p, f"two {r.kind} refinements of {r.op} disagree"))
    _check_edges(fabric, mapping, uses, templates, diags, set(proj.values))
    by_op: dict = {}
    for (o, k), v in refinements.items():
        by_op.setdefault(o, []).append((k, v))
    for fu in fabric.fus:
        pe = fabric.pe_of(fu.name)
        temporal = pe is not None and pe.kind == "temporal"
        for node in fu.ops():
            ref = f"{fu.name}/{node.name}"
            for slot in ([f"{ref}@{c}" for c in range(pe.contexts)] if temporal else [ref]):
                proj.ops[slot] = ref
                if slot in slot_values:
                    refs = tuple(sorted(by_op.get(ref, ())))
                    proj.configurations[slot] = Active(slot_values[slot][0], refs)
                else:
                    proj.configurations[slot] = Disabled()
    return proj, diags


def _check_layouts(mapping: Mapping, diags: list) -> None:
    """The module's PointerLayout(AS) records: one per address space, stable-integral, with
    1 <= address_bits <= representation_bits (the bits that address lie within the value)."""
    seen: set = set()
    for i, lay in enumerate(mapping.pointer_layouts):
        p = f"{mapping.path}.pointer_layouts[{i}]"
        if lay.address_space in seen:
            diags.append(Diagnostic(C.DuplicateDeclaration, p, f"address space {lay.address_space} has a layout already"))
        seen.add(lay.address_space)
        if not 1 <= lay.address_bits <= lay.representation_bits:
            diags.append(Diagnostic(C.InvalidPointerLayout, p, f"{lay.address_bits} address bits do not lie within "
                                                               f"a {lay.representation_bits}-bit representation"))


def _same_value(a, b) -> bool:
    """Typed equality: True is not the cycle count 1."""
    return type(a) is type(b) and a == b


def _context(pe, u: Use, p: str, diags: list):
    """The use's InstructionContextRef in a temporal PE, None for the sole context of a spatial
    PE (or an FU no PE declares), False after a diagnostic."""
    if pe is not None and pe.kind == "temporal":
        c = 0 if u.context is None else u.context
        if c >= pe.contexts:
            diags.append(Diagnostic(C.InvalidContext, p + ".context", f"temporal PE {pe.name} has resident "
                                                                      f"contexts 0..{pe.contexts - 1}, not {c}"))
            return False
        return c
    if u.context not in (None, 0):
        where = f"spatial PE {pe.name}" if pe is not None else f"{u.op.split('/')[0]} (in no temporal PE)"
        diags.append(Diagnostic(C.InvalidContext, p + ".context", f"{where} uses its sole context; "
                                                                  f"{u.context} is not resident"))
        return False
    return None


def _check_edges(fabric, mapping, uses, templates, diags, admitted):
    """Each mapped edge: equal exact types at both ends; an external edge leaves its producer's
    FU through an FU output and enters its consumer's FU through an FU input (the derived
    boundary correspondence); an internal edge is proved by its witness."""
    routers: dict = {}                    # FU name -> Router of its selected template
    bounds = boundaries(fabric, mapping)
    claims: dict = {}                     # (memory|register file, slot) -> (producer, edge path)
    for i, e in enumerate(mapping.edges):
        p = f"{mapping.path}.edges[{i}]"
        a, b = uses.get(e.src[0]), uses.get(e.dst[0])
        if a is None or b is None or e.src[1] >= len(a.actor.results) or e.dst[1] >= len(b.actor.inputs):
            diags.append(Diagnostic(C.UnknownReference, p, "the edge names a missing use, result or operand"))
            continue
        if a.actor.results[e.src[1]] != b.actor.inputs[e.dst[1]]:
            diags.append(Diagnostic(C.IncoherentRoute, p, "the edge connects values of different exact types"))
            continue
        if not {e.src[0], e.dst[0]} <= admitted:
            continue  # a rejected use is already diagnosed
        fa, fb = a.op.split("/")[0], b.op.split("/")[0]
        need = payload_bits(a.actor.results[e.src[1]], a.corr.index_width)
        src, dst = f"{e.src[0]}.{e.src[1]}", f"{e.dst[0]}.{e.dst[1]}"
        if e.realization != "internal" or isinstance(e.witness, MemoryWitness):
            # the value crosses both FU boundaries: it must leave and enter where the templates wire it
            ba, bb = bounds.get(fa), bounds.get(fb)
            if ba is not None and not ba.outputs_of(e.src):
                diags.append(Diagnostic(C.BoundaryMismatch, p, f"{src} leaves FU {fa}, but no FU output carries "
                                                               f"{a.op} result {a.corr.results[e.src[1]]} in "
                                                               f"template {ba.template}"))
                continue
            if bb is not None and bb.input_of(e.dst) is None:
                diags.append(Diagnostic(C.BoundaryMismatch, p, f"{dst} enters FU {fb}, but template {bb.template} "
                                                               f"feeds {b.op} input {b.corr.operands[e.dst[1]]} "
                                                               "inside the FU, not from an FU input"))
                continue
        if e.realization != "internal":
            continue
        w = e.witness
        if isinstance(w, MemoryWitness):
            if fa in bounds and fb in bounds:     # an unknown template is diagnosed with its uses
                _memory_witness(fabric, w, e, a, b, bounds[fa], bounds[fb], need, p, diags, claims)
        elif isinstance(w, RegisterFileWitness):
            _register_witness(fabric, w, e, a, b, fa, fb, need, p, diags, claims)
        else:
            _fu_witness(fabric, e, a, b, fa, fb, templates, routers, need, p, diags)


def _fu_witness(fabric, e, a, b, fa, fb, templates, routers, need, p, diags):
    t = templates.get(fa)
    segs = None
    if fa == fb and t is not None and fabric.op(a.op) and fabric.op(b.op):
        if fa not in routers:
            routers[fa] = Router(fabric.fu(fa), t)
        router = routers[fa]
        segs = router.cells((a.op.split("/", 1)[1], a.corr.results[e.src[1]]),
                            (b.op.split("/", 1)[1], b.corr.operands[e.dst[1]]))
    if segs is None:
        diags.append(Diagnostic(C.EdgeAbsorbedByColocation, p,
                                f"{e.src[0]} -> {e.dst[0]} is claimed internal, but no selected configured-FU "
                                "route witnesses it; co-location never absorbs an edge"))
        return
    narrow = router.first_narrower(segs, need)
    if narrow is not None:
        diags.append(Diagnostic(C.PortWidthInsufficient, p, f"segment {narrow} is narrower than the "
                                                            f"{need}-bit semantic value"))


def _claim(claims, key, producer, p, what, diags) -> None:
    """One producer value per configured slot: equal repeated claims collapse, others conflict."""
    prior = claims.setdefault(key, (producer, p))
    if prior[0] != producer:
        diags.append(Diagnostic(C.ConflictingAssignment, p, f"{what} already holds {prior[0][0]}.{prior[0][1]} "
                                                            f"({prior[1]})"))


def _memory_witness(fabric, w, e, a, b, ba, bb, need, p, diags, claims):
    m = fabric.memory(w.memory)
    if m is None:
        diags.append(Diagnostic(C.UnknownReference, p + ".witness.memory", f"{w.memory!r} names no memory"))
        return
    fa, fb = ba.fu, bb.fu
    outs = [j for j in ba.outputs_of(e.src) if (fa, j) in m.writers]
    if not outs:
        diags.append(Diagnostic(C.InvalidWitness, p + ".witness", f"memory {m.name} is written from no FU output "
                                                                  f"carrying {e.src[0]}.{e.src[1]}"))
        return
    if (fb, bb.input_of(e.dst)) not in m.readers:
        diags.append(Diagnostic(C.InvalidWitness, p + ".witness", f"memory {m.name} is not read into FU input "
                                                                  f"{fb}.{bb.input_of(e.dst)}, which feeds "
                                                                  f"{e.dst[0]}.{e.dst[1]}"))
        return
    if not w.slot < m.slots:
        diags.append(Diagnostic(C.InvalidWitness, p + ".witness.slot", f"memory {m.name} has configured "
                                                                       f"relations 0..{m.slots - 1}, not {w.slot}"))
        return
    if m.width < need:
        diags.append(Diagnostic(C.PortWidthInsufficient, p + ".witness", f"memory {m.name} holds {m.width} bits, "
                                                                         f"narrower than the {need}-bit value"))
        return
    _claim(claims, ("memory", m.name, w.slot), e.src, p, f"memory {m.name} relation {w.slot}", diags)


def _register_witness(fabric, w, e, a, b, fa, fb, need, p, diags, claims):
    pe = first_by_name(fabric.pes).get(w.pe)
    if pe is None:
        diags.append(Diagnostic(C.UnknownReference, p + ".witness.pe", f"{w.pe!r} names no PE"))
        return
    if pe.kind != "temporal" or pe.register_file is None:
        diags.append(Diagnostic(C.InvalidWitness, p + ".witness.pe", f"PE {pe.name} is {pe.kind} with no register "
                                                                     "file: it realizes no register edge"))
        return
    outside = [f for f in (fa, fb) if f not in pe.fus]
    if outside:
        diags.append(Diagnostic(C.InvalidWitness, p + ".witness.pe", f"FU {outside[0]} is not in temporal PE "
                                                                     f"{pe.name}; its register file cannot "
                                                                     "connect it"))
        return
    rf = pe.register_file
    if not w.register < rf.registers:
        diags.append(Diagnostic(C.InvalidWitness, p + ".witness.register", f"PE {pe.name} has registers "
                                                                           f"0..{rf.registers - 1}, not "
                                                                           f"{w.register}"))
        return
    if rf.width < need:
        diags.append(Diagnostic(C.PortWidthInsufficient, p + ".witness", f"PE {pe.name}'s registers hold "
                                                                         f"{rf.width} bits, narrower than the "
                                                                         f"{need}-bit value"))
        return
    _claim(claims, ("register", pe.name, w.register), e.src, p, f"PE {pe.name} register {w.register}", diags)


def import_mapping(fabric: Fabric, mapping: Mapping, strict: bool = True) -> Projection:
    """Strict entry point: raises FabricError unless the whole Mapping is valid."""
    proj, diags = derive_fields(fabric, mapping, strict)
    if diags:
        raise FabricError(diags)
    return proj
