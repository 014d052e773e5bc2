"""FU-local topology: fabric.op, fabric.mux and fabric.demux resources and their SSA wiring.

Fabric SSA multi-use is real token broadcast: every consumer of a value takes part in
delivery and backpressure.  Mutually exclusive datapaths that share FU inputs therefore need
explicit fabric.demux routes in, and a matching fabric.mux out; fabric.mux/demux are static
configurable routing resources selected by an FU capability template, not software actors.

A template (FabricFuCapabilityTemplateRecord) selects the active resources and the route of
every active mux/demux.  `check_fu` verifies the wiring and, per template, that the active
datapath is coherent and that no inactive op, unselected mux input or inactive demux acts as
an implicit token sink.  `route` proves (or refuses) an internal edge between two op ports.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .capability import FabricOp
from .errors import Diagnostic, DiagnosticCode as C
from .types import PortType

FU_INPUT = "in"


@dataclass(frozen=True)
class OpNode:
    name: str
    op: FabricOp
    operands: tuple[str, ...]

    @property
    def n_results(self) -> int:
        return len(self.op.results)

    def result_type(self, k: int) -> PortType:
        return self.op.results[k]

    def operand_type(self, i: int) -> PortType:
        return self.op.inputs[i]


@dataclass(frozen=True)
class MuxNode:
    name: str
    operands: tuple[str, ...]
    type: PortType

    n_results = 1

    def result_type(self, k):
        return self.type

    def operand_type(self, i):
        return self.type


@dataclass(frozen=True)
class DemuxNode:
    name: str
    operand: str
    results: int
    type: PortType

    @property
    def operands(self):
        return (self.operand,)

    @property
    def n_results(self):
        return self.results

    def result_type(self, k):
        return self.type

    def operand_type(self, i):
        return self.type


@dataclass(frozen=True)
class Template:
    name: str
    nodes: tuple[str, ...]            # active resources
    selects: tuple = ()               # ((routing node, selected ordinal), ...) sorted

    def select(self, node: str):
        return dict(self.selects).get(node)


@dataclass(frozen=True)
class FU:
    name: str
    inputs: tuple[PortType, ...]
    outputs: tuple[PortType, ...]
    nodes: tuple
    yields: tuple[str, ...]
    templates: tuple[Template, ...] = ()
    path: str = ""

    def node(self, name: str):
        return next((n for n in self.nodes if n.name == name), None)

    def template(self, name: str):
        return next((t for t in self.templates if t.name == name), None)

    def ops(self) -> list[OpNode]:
        return [n for n in self.nodes if isinstance(n, OpNode)]


@dataclass(frozen=True)
class Fabric:
    name: str
    fus: tuple[FU, ...]
    mapping: object = None

    def fu(self, name: str):
        return next((f for f in self.fus if f.name == name), None)

    def op(self, ref: str):
        """Resolve "fu/node" to (FU, OpNode) or None."""
        fu_name, _, node = ref.partition("/")
        fu = self.fu(fu_name)
        n = fu.node(node) if fu else None
        return (fu, n) if isinstance(n, OpNode) else None

    def all_ops(self) -> list[FabricOp]:
        return [n.op for fu in self.fus for n in fu.ops()]


def split_ref(ref: str) -> tuple[str, int] | None:
    node, dot, k = ref.rpartition(".")
    if not dot or not k.isdigit() or not node:
        return None
    return node, int(k)


@dataclass
class _Wiring:
    fu: FU
    consumers: dict = field(default_factory=dict)  # value ref -> [(node name | "yield", operand ordinal)]

    def value_type(self, ref: str):
        node, k = split_ref(ref)
        if node == FU_INPUT:
            return self.fu.inputs[k]
        return self.fu.node(node).result_type(k)


def _wire(fu: FU, diags: list) -> _Wiring | None:
    w = _Wiring(fu)
    names = set()
    for j, n in enumerate(fu.nodes):
        p = f"{fu.path}.nodes[{j}]"
        if n.name in names or n.name == FU_INPUT:
            diags.append(Diagnostic(C.DuplicateName, p + ".name", f"node name {n.name!r} is taken"))
        names.add(n.name)
    ok = True

    def resolve(ref, p):
        nonlocal ok
        s = split_ref(ref)
        if s is None:
            diags.append(Diagnostic(C.UnknownValue, p, f"{ref!r} is not a value reference (node.K or in.K)"))
            ok = False
            return False
        node, k = s
        if node == FU_INPUT:
            good = k < len(fu.inputs)
        else:
            producer = fu.node(node)
            good = producer is not None and k < producer.n_results
        if not good:
            diags.append(Diagnostic(C.UnknownValue, p, f"{ref!r} names no value of FU {fu.name}"))
            ok = False
        return good

    for j, n in enumerate(fu.nodes):
        p = f"{fu.path}.nodes[{j}]"
        if isinstance(n, OpNode) and len(n.operands) != len(n.op.inputs):
            diags.append(Diagnostic(C.IncompleteRelation, p + ".operands",
                                    f"{len(n.operands)} operands wired to {len(n.op.inputs)} physical inputs"))
            ok = False
        if isinstance(n, MuxNode) and len(n.operands) < 2:
            diags.append(Diagnostic(C.IncompleteRelation, p + ".operands", "a fabric.mux selects among >= 2 inputs"))
        if isinstance(n, DemuxNode) and n.results < 2:
            diags.append(Diagnostic(C.IncompleteRelation, p + ".results", "a fabric.demux routes to >= 2 results"))
        for i, ref in enumerate(n.operands):
            if resolve(ref, f"{p}.operands[{i}]"):
                w.consumers.setdefault(ref, []).append((n.name, i))
    if len(fu.yields) != len(fu.outputs):
        diags.append(Diagnostic(C.IncompleteRelation, fu.path + ".yield",
                                f"{len(fu.yields)} yielded values for {len(fu.outputs)} FU outputs"))
        ok = False
    for i, ref in enumerate(fu.yields):
        if resolve(ref, f"{fu.path}.yield[{i}]"):
            w.consumers.setdefault(ref, []).append(("yield", i))
    return w if ok else None


def _edge_kinds(fu: FU, w: _Wiring, diags: list):
    for ref, uses in w.consumers.items():
        t = w.value_type(ref)
        for node, i in uses:
            dst = fu.outputs[i] if node == "yield" else fu.node(node).operand_type(i)
            if dst.kind != t.kind:
                where = f"FU output {i}" if node == "yield" else f"{node} operand {i}"
                diags.append(Diagnostic(C.PortKindMismatch, f"{fu.path}.nodes",
                                        f"{ref} ({t}) feeds {where} ({dst}): bits and bits_tag are never "
                                        "exchanged implicitly"))


def delivered(fu: FU, t: Template, ref: str) -> bool:
    """Does value `ref` carry tokens in template `t`?"""
    node, k = split_ref(ref)
    if node == FU_INPUT:
        return True
    if node not in t.nodes:
        return False
    n = fu.node(node)
    return not isinstance(n, DemuxNode) or t.select(node) == k


def consumes(fu: FU, t: Template, node: str, i: int) -> bool:
    """Does consumer (node, operand i) take tokens in template `t`?"""
    if node == "yield":
        return True
    if node not in t.nodes:
        return False
    n = fu.node(node)
    return not isinstance(n, MuxNode) or t.select(node) == i


def _check_template(fu: FU, w: _Wiring, t: Template, p: str, diags: list):
    before = len(diags)
    for name in t.nodes:
        if fu.node(name) is None:
            diags.append(Diagnostic(C.UnknownReference, p + ".nodes", f"template names no node {name!r}"))
            return
    routing = {n.name for n in fu.nodes if isinstance(n, (MuxNode, DemuxNode))}
    for name, s in t.selects:
        n = fu.node(name)
        if name not in routing:
            diags.append(Diagnostic(C.UnknownReference, f"{p}.selects.{name}", f"{name!r} is not a mux or demux"))
        elif name not in t.nodes:
            diags.append(Diagnostic(C.IncoherentRoute, f"{p}.selects.{name}",
                                    f"{name} is inactive: an irrelevant route selection is not canonical"))
        elif not 0 <= s < (len(n.operands) if isinstance(n, MuxNode) else n.results):
            diags.append(Diagnostic(C.IncoherentRoute, f"{p}.selects.{name}", f"route {s} does not exist"))
    for name in t.nodes:
        n = fu.node(name)
        if isinstance(n, (MuxNode, DemuxNode)) and t.select(name) is None:
            diags.append(Diagnostic(C.IncoherentRoute, f"{p}.selects", f"active {name} has no selected route"))
    if len(diags) > before:
        return  # route selections are malformed: coherence is not decidable
    # coherence: what an active resource consumes must be delivered in this template
    for name in t.nodes:
        n = fu.node(name)
        for i, ref in enumerate(n.operands):
            if consumes(fu, t, name, i) and not delivered(fu, t, ref):
                diags.append(Diagnostic(C.IncoherentRoute, p, f"active {name} consumes {ref}, which the template "
                                                              "does not deliver"))
    # no implicit token sink: every consumer of a live value takes its tokens
    for ref, uses in w.consumers.items():
        node, _ = split_ref(ref)
        live = delivered(fu, t, ref) and (node != FU_INPUT or any(consumes(fu, t, c, i) for c, i in uses))
        if not live:
            continue
        for c, i in uses:
            if not consumes(fu, t, c, i):
                what = (f"unselected input {i} of mux {c}" if c in t.nodes else f"inactive {c}")
                diags.append(Diagnostic(C.ImplicitTokenSink, p,
                                        f"{ref} is live and broadcast to {what}: route mutually exclusive "
                                        "datapaths through explicit fabric.demux/fabric.mux"))


def check_fu(fu: FU) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    w = _wire(fu, diags)
    if w is None:
        return diags
    _edge_kinds(fu, w, diags)
    if fu.nodes and not fu.templates:
        diags.append(Diagnostic(C.IncompleteRelation, fu.path + ".templates",
                                "an FU exposes a finite, nonempty inventory of capability templates"))
    seen = []
    for j, t in enumerate(fu.templates):
        p = f"{fu.path}.templates[{j}]"
        key = (frozenset(t.nodes), t.selects)
        if key in seen or t.name in [x.name for x in fu.templates[:j]]:
            diags.append(Diagnostic(C.DuplicateDeclaration, p, f"template {t.name!r} repeats another template"))
            continue
        seen.append(key)
        _check_template(fu, w, t, p, diags)
    return diags


def route(fu: FU, t: Template, src: tuple[str, int], dst: tuple[str, int]):
    """Follow the selected routes from op input `dst` = (node, port) back to a producer;
    returns the port types along the path when it starts at op result `src`, else None."""
    node, port = dst
    n = fu.node(node)
    ref = n.operands[port]
    segments = [n.operand_type(port)]
    for _ in range(len(fu.nodes) + 1):
        pn, k = split_ref(ref)
        if pn == FU_INPUT or pn not in t.nodes:
            return None
        producer = fu.node(pn)
        segments.append(producer.result_type(k))
        if isinstance(producer, OpNode):
            return segments if (pn, k) == src else None
        if isinstance(producer, MuxNode):
            ref = producer.operands[t.select(pn)]
        elif t.select(pn) == k:
            ref = producer.operand
        else:
            return None
        segments.append(producer.operand_type(0))
    return None
