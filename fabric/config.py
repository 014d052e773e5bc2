"""Configuration handoff: ConfiguredHardwareProjection = DeriveFields(Dataflow, TechMapping,
Fabric, SpatialMapping), a cold deterministic derivation that performs no search.

Mapping owns the authoritative selections (`Use`: one exact actor bound to one fabric.op
under an ordered port correspondence, inside one selected FU template).  The relation's
projector mechanically derives the selected semantic value of each use; several uses of one
physical slot collapse when their values are equal and make the Mapping invalid otherwise.

  OperationConfiguration = Disabled | Active{semantic_configuration, physical_refinements}

Strict import rejects every nonempty physical-refinement assignment (no generic refinement
value type exists).  Non-strict import admits only assignments to a refinement domain the
concrete op declares (`PhysicalRefinementDomain`); such a refinement never enters the
configured software function (`materialize`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .capability import (FabricOp, InactivePortGuarantee, PhysicalRefinementDomain,
                         PortCorrespondence, Rejection, supports)
from .errors import Diagnostic, DiagnosticCode as C, FabricError
from .relation import UnsupportedActor
from .schemas import Actor
from .topology import Fabric, Router
from .types import payload_bits
from .verify import resolve_op


@dataclass(frozen=True)
class Use:
    name: str
    op: str                    # "fu/node"
    actor: Actor
    corr: PortCorrespondence


@dataclass(frozen=True)
class MappedEdge:
    src: tuple[str, int]       # (use, result ordinal)
    dst: tuple[str, int]       # (use, operand ordinal)
    realization: str           # "internal" | "external"


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
class ConfiguredFunction:
    """The exact configured software function: actors (unchanged objects), ordered edges and
    the operation each one runs on.  Physical refinements are deliberately absent."""
    nodes: tuple  # ((use name, op ref, actor), ...)
    edges: tuple  # ((src use, k), (dst use, i))


def materialize(mapping: Mapping) -> ConfiguredFunction:
    return ConfiguredFunction(tuple((u.name, u.op, u.actor) for u in mapping.uses),
                              tuple((e.src, e.dst) for e in mapping.edges))


# --- derivation ---------------------------------------------------------------------------

@dataclass
class Projection:
    configurations: dict = field(default_factory=dict)   # op ref -> OperationConfiguration
    values: dict = field(default_factory=dict)           # use name -> projected value


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
    for fu_name, tname in mapping.templates:
        fu = fabric.fu(fu_name)
        t = fu.template(tname) if fu else None
        if t is None:
            diags.append(Diagnostic(C.UnknownReference, f"{mp}.templates.{fu_name}",
                                    f"no FU {fu_name!r} with template {tname!r}"))
        templates[fu_name] = t
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
        prior = slot_values.setdefault(u.op, (value, u.name))
        if prior[0] != value:  # equal repeated derivations collapse; unequal ones reject
            diags.append(Diagnostic(C.ConflictingAssignment, p, f"{u.name} projects a value into {u.op}'s semantic "
                                                                f"field that differs from {prior[1]}'s"))
    refinements: dict = {}
    for i, r in enumerate(mapping.refinements):
        p = f"{mp}.physical_refinements[{i}]"
        if strict:
            diags.append(Diagnostic(C.NonemptyPhysicalRefinement, p,
                                    "strict import rejects every nonempty physical-refinement assignment"))
            continue
        found = fabric.op(r.op)
        dom = [d for d in found[1].op.constraints_of(PhysicalRefinementDomain) if d.kind == r.kind] if found else []
        if not dom or r.value not in dom[0].values:
            diags.append(Diagnostic(C.UnknownReference, p, f"{r.op} declares no {r.kind} refinement admitting {r.value}"))
            continue
        prior = refinements.setdefault((r.op, r.kind), r.value)
        if prior != r.value:
            diags.append(Diagnostic(C.ConflictingAssignment, p, f"two {r.kind} refinements of {r.op} disagree"))
    _check_edges(fabric, mapping, uses, templates, diags, set(proj.values))
    by_op: dict = {}
    for (o, k), v in refinements.items():
        by_op.setdefault(o, []).append((k, v))
    for fu in fabric.fus:
        for node in fu.ops():
            ref = f"{fu.name}/{node.name}"
            if ref in slot_values:
                refs = tuple(sorted(by_op.get(ref, ())))
                proj.configurations[ref] = Active(slot_values[ref][0], refs)
            else:
                proj.configurations[ref] = Disabled()
    return proj, diags


def _check_edges(fabric, mapping, uses, templates, diags, admitted):
    routers: dict = {}                    # FU name -> Router of its selected template
    for i, e in enumerate(mapping.edges):
        p = f"{mapping.path}.edges[{i}]"
        a, b = uses.get(e.src[0]), uses.get(e.dst[0])
        if a is None or b is None or e.src[1] >= len(a.actor.results) or e.dst[1] >= len(b.actor.inputs):
            diags.append(Diagnostic(C.UnknownReference, p, "the edge names a missing use, result or operand"))
            continue
        if a.actor.results[e.src[1]] != b.actor.inputs[e.dst[1]]:
            diags.append(Diagnostic(C.IncoherentRoute, p, "the edge connects values of different exact types"))
            continue
        if e.realization != "internal" or not {e.src[0], e.dst[0]} <= admitted:
            continue  # a rejected use is already diagnosed
        fa, fb = a.op.split("/")[0], b.op.split("/")[0]
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
            continue
        need = payload_bits(a.actor.results[e.src[1]], a.corr.index_width)
        narrow = router.first_narrower(segs, need)
        if narrow is not None:
            diags.append(Diagnostic(C.PortWidthInsufficient, p, f"segment {narrow} is narrower than the "
                                                                f"{need}-bit semantic value"))


def import_mapping(fabric: Fabric, mapping: Mapping, strict: bool = True) -> Projection:
    """Strict entry point: raises FabricError unless the whole Mapping is valid."""
    proj, diags = derive_fields(fabric, mapping, strict)
    if diags:
        raise FabricError(diags)
    return proj
