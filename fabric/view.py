"""ResolvedFabricOpCapabilityView and whole-description checking.

The view is a cold, immutable elaboration of one concrete resource derived only from the
registered schemas, the family registry and the exact fabric.op.  `check_fabric` verifies a
whole description (every op, every FU topology, then the optional mapping) and returns the
views plus every diagnostic; `render` prints them for `tile-emu fabric check`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .capability import FabricOp, PhysicalRefinementDomain
from .config import derive_fields
from .contract import ResourceContractRecord, contract_for, encode_contract
from .errors import Diagnostic, DiagnosticCode as C
from .params import record_to_json
from .relation import ImageBudget, derive_relation
from .topology import MAX_TEMPLATE_WORK, Fabric, check_fu, check_pes, template_work
from .verify import verify_op


@dataclass(frozen=True)
class ResolvedFabricOpCapabilityView:
    occurrence: str
    implementation_family: str
    enabled_operation_schemas: tuple
    parameterized_capability: object
    physical_ports: tuple
    semantic_field_relation: object
    resource_state_and_timing_contract: ResourceContractRecord
    physical_refinement_domains: tuple

    @property
    def semantic_config_fields(self) -> tuple:
        """FabricSemanticConfigFieldRef inventory: one composite field iff the relation is not None."""
        return () if self.semantic_field_relation.kind == "None" else (f"{self.occurrence}.semantic",)


def resolve_view(op: FabricOp) -> ResolvedFabricOpCapabilityView:
    return ResolvedFabricOpCapabilityView(
        op.name, op.family, tuple(s for s in op.descriptor.admitted if s in op.op_list), op.hw_params,
        (op.inputs, op.results), derive_relation(op), contract_for(op),
        tuple(op.constraints_of(PhysicalRefinementDomain)))


@dataclass
class Report:
    fabric: Fabric
    views: list = field(default_factory=list)
    diagnostics: list = field(default_factory=list)
    projection: object = None

    @property
    def ok(self) -> bool:
        return not self.diagnostics


def check_fabric(f: Fabric) -> Report:
    rep = Report(f)
    budget = ImageBudget()          # equal resources are derived once; distinct ones share this
    names = set()
    work = sum(template_work(fu) for fu in f.fus)
    templates = work <= MAX_TEMPLATE_WORK
    if not templates:
        rep.diagnostics.append(Diagnostic(C.CapacityLimit, "fus", f"checking the capability templates would take "
                                          f"{work} steps (the templates' active nodes with their ports); the "
                                          f"limit is {MAX_TEMPLATE_WORK}"))
    for i, fu in enumerate(f.fus):
        if fu.name in names:
            rep.diagnostics.append(Diagnostic(C.DuplicateName, f"fus[{i}].name", f"FU name {fu.name!r} is taken"))
        names.add(fu.name)
        rep.diagnostics += check_fu(fu, templates)
        for node in fu.ops():
            d = verify_op(node.op, budget)
            rep.diagnostics += d
            if not d:
                rep.views.append(resolve_view(node.op))
    rep.diagnostics += check_pes(f)
    if f.mapping is not None and rep.ok:
        rep.projection, d = derive_fields(f, f.mapping, strict=True)
        rep.diagnostics += d
    return rep


def render(rep: Report, full_keys: bool = False) -> list[str]:
    out = [f"fabric {rep.fabric.name}: {len(rep.fabric.fus)} FU(s), "
           f"{sum(len(fu.ops()) for fu in rep.fabric.fus)} fabric.op resource(s)"]
    for v in rep.views:
        rel = v.semantic_field_relation
        ins, outs = v.physical_ports
        out.append("")
        out.append(f"fabric.op {v.occurrence}")
        out.append(f"  implementation_family      {v.implementation_family}")
        out.append(f"  enabled_operation_schemas  {', '.join(v.enabled_operation_schemas)}")
        out.append(f"  parameterized_capability   {type(v.parameterized_capability).__name__} "
                   f"{record_to_json(v.parameterized_capability)}")
        out.append(f"  physical_ports             ({', '.join(map(str, ins))}) -> ({', '.join(map(str, outs))})")
        c = v.resource_state_and_timing_contract
        out.append(f"  resource_contract          {len(c.states)} state(s), {len(c.use_patterns)} use pattern(s), "
                   f"events {'/'.join(c.events)} at ranks {list(c.timings[0].ranks)}, "
                   f"{len(encode_contract(c))} canonical bytes")
        pe = rep.fabric.pe_of(v.occurrence.split("/")[0])
        if pe is not None and pe.kind == "temporal":
            out.append(f"  instruction_contexts       {pe.contexts} resident in temporal PE {pe.name} (state and "
                       f"semantic configuration per context), initiation interval {pe.initiation_interval or 1}, "
                       f"{pe.grant_policy or 'round_robin'}")
        if v.physical_refinement_domains:
            out.append("  physical_refinements       " + ", ".join(
                f"{d.kind} {list(d.values)}" for d in v.physical_refinement_domains))
        fields = len(v.semantic_config_fields)
        if rel.kind == "Finite":
            out.append(f"  semantic_field_relation    Finite: {len(rel.keys)} canonical behaviour key(s), "
                       f"{fields} semantic config field")
        elif rel.kind == "Direct":
            out.append(f"  semantic_field_relation    Direct: {rel.encoded_bit_count}-bit carrier, {fields} semantic "
                       "config field")
        else:
            out.append("  semantic_field_relation    None: no semantic config field")
        out += ["    " + line for line in rel.summary(full_keys)]
    if rep.projection is not None and rep.ok:
        out.append("")
        out.append("configuration (strict import)")
        rels = {v.occurrence: v.semantic_field_relation for v in rep.views}
        for slot, cfg in rep.projection.configurations.items():   # a temporal PE's op: one slot per context
            out.append(f"  {slot}: {cfg if full_keys else _short(cfg, rels.get(rep.projection.ops.get(slot)))}")
    return out


def _short(cfg, rel) -> str:
    v = getattr(cfg, "semantic_configuration", None)
    if isinstance(v, bytes) and getattr(rel, "kind", None) == "Finite":
        from .relation import describe_key
        return f"Active({describe_key(rel, v)}" + "".join(f", {k}={x}" for k, x in cfg.physical_refinements) + ")"
    return str(cfg)
