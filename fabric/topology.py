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

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property

from .capability import FabricOp
from .errors import Diagnostic, DiagnosticCode as C
from .types import PortType, adapt_segment

FU_INPUT = "in"


def first_by_name(items) -> dict:
    """name -> item; a repeated name (a verifier diagnostic) resolves to its first item."""
    index: dict = {}
    for x in items:
        index.setdefault(x.name, x)
    return index


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


class _Routing:
    """fabric.mux / fabric.demux: every input and result has the node's one port type."""

    def result_type(self, k):
        return self.type

    def operand_type(self, i):
        return self.type


@dataclass(frozen=True)
class MuxNode(_Routing):
    name: str
    operands: tuple[str, ...]
    type: PortType

    n_results = 1


@dataclass(frozen=True)
class DemuxNode(_Routing):
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


@dataclass(frozen=True)
class Template:
    name: str
    nodes: tuple[str, ...]            # active resources
    selects: tuple = ()               # ((routing node, selected ordinal), ...) sorted

    def select(self, node: str):
        return dict(self.selects).get(node)

    @cached_property
    def active(self) -> frozenset:
        return frozenset(self.nodes)


@dataclass(frozen=True)
class FU:
    name: str
    inputs: tuple[PortType, ...]
    outputs: tuple[PortType, ...]
    nodes: tuple
    yields: tuple[str, ...]
    templates: tuple[Template, ...] = ()
    path: str = ""

    @cached_property
    def _by_name(self) -> dict:
        return first_by_name(self.nodes)

    def node(self, name: str):
        return self._by_name.get(name)

    def template(self, name: str):
        return self._templates_by_name.get(name)

    @cached_property
    def _templates_by_name(self) -> dict:
        return first_by_name(self.templates)

    def ops(self) -> list[OpNode]:
        return [n for n in self.nodes if isinstance(n, OpNode)]


@dataclass(frozen=True)
class RegisterFile:
    """A temporal PE's register file: `registers` registers of `width` payload bits each."""
    registers: int
    width: int


GRANT_POLICIES = ("round_robin", "fixed_priority")


@dataclass(frozen=True)
class PE:
    """A processing element grouping FUs.  A spatial PE has one sole instruction context; a
    temporal PE has `contexts` resident InstructionContextRefs (0 .. contexts-1) and may own a
    register file through which one context's result reaches another context's operand.  Each
    operation resource of a temporal PE grants one acceptance per `initiation_interval` cycles
    to a requesting context chosen by `grant_policy` (None: not declared, i.e. 1 and round
    robin; a spatial PE declares neither)."""
    name: str
    kind: str                                  # "spatial" | "temporal"
    fus: tuple[str, ...]
    contexts: int = 1
    register_file: RegisterFile | None = None
    path: str = ""
    initiation_interval: int | None = None
    grant_policy: str | None = None


@dataclass(frozen=True)
class Memory:
    """A configured memory: `slots` configurable relations of `width` payload bits, written from
    the FU outputs `writers` and read into the FU inputs `readers` (each "fu.k")."""
    name: str
    width: int
    slots: int
    writers: tuple[tuple[str, int], ...]
    readers: tuple[tuple[str, int], ...]
    path: str = ""


@dataclass(frozen=True)
class Fabric:
    name: str
    fus: tuple[FU, ...]
    mapping: object = None
    pes: tuple[PE, ...] = ()
    memories: tuple[Memory, ...] = ()

    def pe_of(self, fu_name: str):
        """The PE an FU belongs to (None: an FU no PE declares)."""
        return self._pe_by_fu.get(fu_name)

    @cached_property
    def _pe_by_fu(self) -> dict:
        index: dict = {}
        for pe in self.pes:
            for f in pe.fus:
                index.setdefault(f, pe)
        return index

    def memory(self, name: str):
        return first_by_name(self.memories).get(name)

    def fu(self, name: str):
        return self._fus_by_name.get(name)

    @cached_property
    def _fus_by_name(self) -> dict:
        return first_by_name(self.fus)

    def op(self, ref: str):
        """Resolve "fu/node" to (FU, OpNode) or None."""
        fu_name, _, node = ref.partition("/")
        fu = self.fu(fu_name)
        n = fu.node(node) if fu else None
        return (fu, n) if isinstance(n, OpNode) else None

    def all_ops(self) -> list[FabricOp]:
        return [n.op for fu in self.fus for n in fu.ops()]


def split_ref(ref: str) -> tuple[str, int] | None:
    """`node.K` as (node, K); K is ASCII digits (str.isdigit admits '²', which int() refuses)."""
    node, dot, k = ref.rpartition(".")
    if not dot or not (k.isascii() and k.isdigit()) or not node:
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


# Per-template checking costs time in proportion to what the template activates: for each
# listed node, the operands it consumes and the results it delivers (a mux or demux: one of
# each; an op: all of them), plus the FU inputs that are both yielded and wired to a node
# (live in every template).  `template_work` is that sum; the verifier refuses a description
# whose total exceeds MAX_TEMPLATE_WORK (docs/fabric-format.md, "Implementation limits").
MAX_TEMPLATE_WORK = 1 << 22
# An invalid FU can be wrong in every template; past this many diagnostics its remaining
# templates are not checked (one CapacityLimit diagnostic says so).
MAX_FU_DIAGNOSTICS = 1000


def _node_work(n) -> int:
    if isinstance(n, OpNode):
        return len(n.operands) + n.n_results
    return 2


class _Sinks:
    """Template-independent facts the per-template checks share (built once per FU)."""

    def __init__(self, fu: FU, w: _Wiring):
        self.rank = {ref: r for r, ref in enumerate(w.consumers)}     # diagnostics in wiring order
        self.slots: dict = {}                  # node name -> {operand ordinal: [ref]} over same-named nodes
        self.yielded: Counter = Counter()      # ref -> number of FU outputs it feeds
        for ref, uses in w.consumers.items():
            for c, i in uses:
                if c == "yield":
                    self.yielded[ref] += 1
                else:
                    self.slots.setdefault(c, {}).setdefault(i, []).append(ref)
        # One value may be spelled several ways (`m.0`, `m.00`): uses are per spelling.
        self.spellings: dict = {}              # (node, k) -> [ref, ...]
        for ref in w.consumers:
            self.spellings.setdefault(split_ref(ref), []).append(ref)
        # FU inputs that feed an output are live in every template; only those that also feed a
        # node can be sunk somewhere.
        self.always_live = [ref for ref in self.yielded
                            if split_ref(ref)[0] == FU_INPUT and len(w.consumers[ref]) > self.yielded[ref]]


def template_work(fu: FU) -> int:
    """The per-template checking cost of `fu` (see MAX_TEMPLATE_WORK), from sizes alone."""
    yielded_inputs = {r for r in fu.yields if r.startswith(FU_INPUT + ".")}
    work = 0
    for t in fu.templates:
        work += 1 + len(t.nodes) + len(yielded_inputs)
        for name in t.nodes:
            n = fu.node(name)
            if n is not None:
                work += _node_work(n)
    return work


def _check_template(fu: FU, w: _Wiring, t: Template, p: str, diags: list, sinks: _Sinks):
    before = len(diags)
    for name in t.nodes:
        if fu.node(name) is None:
            diags.append(Diagnostic(C.UnknownReference, p + ".nodes", f"template names no node {name!r}"))
            return
    active = set(t.nodes)
    sel = dict(t.selects)
    for name, s in t.selects:
        n = fu.node(name)
        if not isinstance(n, (MuxNode, DemuxNode)):
            diags.append(Diagnostic(C.UnknownReference, f"{p}.selects.{name}", f"{name!r} is not a mux or demux"))
        elif name not in active:
            diags.append(Diagnostic(C.IncoherentRoute, f"{p}.selects.{name}",
                                    f"{name} is inactive: an irrelevant route selection is not canonical"))
        elif not 0 <= s < (len(n.operands) if isinstance(n, MuxNode) else n.results):
            diags.append(Diagnostic(C.IncoherentRoute, f"{p}.selects.{name}", f"route {s} does not exist"))
    for name in t.nodes:
        n = fu.node(name)
        if isinstance(n, (MuxNode, DemuxNode)) and name not in sel:
            diags.append(Diagnostic(C.IncoherentRoute, f"{p}.selects", f"active {name} has no selected route"))
    if len(diags) > before:
        return  # route selections are malformed: coherence is not decidable

    def is_delivered(ref):
        node, k = split_ref(ref)
        if node == FU_INPUT:
            return True
        if node not in active:
            return False
        return not isinstance(fu.node(node), DemuxNode) or sel[node] == k

    # coherence: what an active resource consumes must be delivered in this template
    for name in t.nodes:
        n = fu.node(name)
        consumed = ((sel[name], n.operands[sel[name]]),) if isinstance(n, MuxNode) else enumerate(n.operands)
        for _, ref in consumed:
            if not is_delivered(ref):
                diags.append(Diagnostic(C.IncoherentRoute, p, f"active {name} consumes {ref}, which the template "
                                                              "does not deliver"))
    # no implicit token sink: every consumer of a live value takes its tokens.  Count the uses
    # that do take tokens (yields, and the consumed operand slots of active nodes); a live value
    # with fewer than all its uses counted is sunk somewhere, and only then are its uses listed.
    taking: Counter = Counter()
    live = set(sinks.always_live)
    for name in active:
        n = fu.node(name)
        slots = sinks.slots.get(name, {})
        for refs in ((slots.get(sel[name], ()),) if isinstance(n, MuxNode) else slots.values()):
            for ref in refs:
                taking[ref] += 1
                if split_ref(ref)[0] == FU_INPUT:
                    live.add(ref)                  # an FU input an active node consumes is live
        for k in ((sel[name],) if isinstance(n, DemuxNode) else range(n.n_results)):
            live.update(sinks.spellings.get((name, k), ()))    # what an active node delivers is live
    sunk = [ref for ref in live if taking[ref] + sinks.yielded[ref] < len(w.consumers[ref])]
    for ref in sorted(sunk, key=sinks.rank.__getitem__):
        for c, i in w.consumers[ref]:
            if c != "yield" and not (c in active and (not isinstance(fu.node(c), MuxNode) or sel[c] == i)):
                what = (f"unselected input {i} of mux {c}" if c in active else f"inactive {c}")
                diags.append(Diagnostic(C.ImplicitTokenSink, p,
                                        f"{ref} is live and broadcast to {what}: route mutually exclusive "
                                        "datapaths through explicit fabric.demux/fabric.mux"))


def check_fu(fu: FU, templates: bool = True) -> list[Diagnostic]:
    """Wiring, port kinds and (unless `templates` is False) every capability template of `fu`."""
    diags: list[Diagnostic] = []
    w = _wire(fu, diags)
    if w is None:
        return diags
    _edge_kinds(fu, w, diags)
    if fu.nodes and not fu.templates:
        diags.append(Diagnostic(C.IncompleteRelation, fu.path + ".templates",
                                "an FU exposes a finite, nonempty inventory of capability templates"))
    if not templates:
        return diags
    sinks = _Sinks(fu, w)
    seen_keys, seen_names = set(), set()
    for j, t in enumerate(fu.templates):
        p = f"{fu.path}.templates[{j}]"
        key = (frozenset(t.nodes), t.selects)
        if key in seen_keys or t.name in seen_names:
            diags.append(Diagnostic(C.DuplicateDeclaration, p, f"template {t.name!r} repeats another template"))
            seen_names.add(t.name)
            continue
        seen_keys.add(key)
        seen_names.add(t.name)
        _check_template(fu, w, t, p, diags, sinks)
        if len(diags) >= MAX_FU_DIAGNOSTICS and j + 1 < len(fu.templates):
            diags.append(Diagnostic(C.CapacityLimit, f"{fu.path}.templates",
                                    f"{len(diags)} diagnostics by template {j}; the remaining "
                                    f"{len(fu.templates) - j - 1} templates are not checked"))
            break
    return diags


class Router:
    """The selected routes of one template, for many edges: each value's way back to the op
    result that produces it is followed once and shared (a linked list of port types, each cell
    knowing the narrowest width behind it), so E edges over routes of length L cost about
    E + L, not E x L."""

    def __init__(self, fu: FU, t: Template):
        self.fu, self.t = fu, t
        self.sel = dict(t.selects)
        self.memo: dict = {}          # ref -> (producing op result | None, cell | None)
        self.narrow: dict = {}        # (id(cell), need) -> first segment narrower than need | None

    def _hop(self, ref):
        """(port types of this hop, the next ref, the op result ending the route); a dead end
        (inactive, unselected, an FU input) is (None, None, None)."""
        pn, k = split_ref(ref)
        if pn == FU_INPUT or pn not in self.t.active:
            return None, None, None
        producer = self.fu.node(pn)
        if isinstance(producer, OpNode):
            return [producer.result_type(k)], None, (pn, k)
        s = self.sel.get(pn)
        if isinstance(producer, MuxNode):
            nxt = producer.operands[s] if s is not None and 0 <= s < len(producer.operands) else None
        else:
            nxt = producer.operand if s == k else None
        if nxt is None:
            return None, None, None
        return [producer.result_type(k), producer.operand_type(0)], nxt, None

    def trace(self, ref):
        """(the op result that `ref` comes from along the selected routes, or None; its cells)."""
        chain, seen, r = [], set(), ref
        while r not in self.memo and r not in seen:
            seen.add(r)
            segs, nxt, end = self._hop(r)
            if segs is None:
                self.memo[r] = (None, None)
                break
            chain.append((r, segs, nxt, end))
            if nxt is None:
                break
            r = nxt
        for r, segs, nxt, end in reversed(chain):      # a cycle of routes never reaches an op
            producer, cell = (end, None) if nxt is None else self.memo.get(nxt, (None, None))
            if producer is None:
                self.memo[r] = (None, None)
                continue
            for seg in reversed(segs):
                cell = (seg, cell, seg.width if cell is None else min(seg.width, cell[2]))
            self.memo[r] = (producer, cell)
        return self.memo.get(ref, (None, None))

    def cells(self, src: tuple[str, int], dst: tuple[str, int]):
        """The route from op result `src` to op input `dst` as a cell list starting at dst's own
        port type, or None when the selected routes do not lead from src to dst."""
        node, port = dst
        n = self.fu.node(node)
        producer, cell = self.trace(n.operands[port])
        if producer != src:
            return None
        seg = n.operand_type(port)
        return (seg, cell, seg.width if cell is None else min(seg.width, cell[2]))

    def path(self, src: tuple[str, int], dst: tuple[str, int]):
        """The port types along the route from op result `src` to op input `dst`, dst's own
        port type first, or None when the selected routes do not lead from src to dst."""
        cell = self.cells(src, dst)
        if cell is None:
            return None
        out = []
        while cell is not None:
            out.append(cell[0])
            cell = cell[1]
        return out

    def first_narrower(self, cell, need: int):
        """The first port type along `cell` narrower than `need` bits, or None (memoised per
        width asked, so each cell is walked once per distinct width)."""
        walked, found = [], None
        while cell is not None and cell[2] < need:
            key = (id(cell), need)
            if key in self.narrow:
                found = self.narrow[key][0]
                break
            walked.append((key, cell))
            if cell[0].width < need:
                found = cell[0]
                break
            cell = cell[1]
        for key, c in walked:
            self.narrow[key] = (found, c)         # the cell is kept alive, so its id stays its own
        return found


    def origin(self, ref: str):
        """Where the value `ref` comes from along the selected routes: ("in", i) for FU input i,
        ("op", node, k) for op result k of an active op, None when the routes deliver nothing."""
        seen = set()
        while ref not in seen:
            seen.add(ref)
            pn, k = split_ref(ref)
            if pn == FU_INPUT:
                return ("in", k)
            if pn not in self.t.active:
                return None
            producer = self.fu.node(pn)
            if isinstance(producer, OpNode):
                return ("op", pn, k)
            s = self.sel.get(pn)
            if isinstance(producer, MuxNode):
                if s is None or not 0 <= s < len(producer.operands):
                    return None
                ref = producer.operands[s]
            elif s == k:
                ref = producer.operand
            else:
                return None
        return None                      # a cycle of routes reaches no producer


    def transport(self, src: tuple[str, int], dst: tuple[str, int], payload: int, semantic_bits: int):
        """The payload op input `dst` receives when op result `src` publishes `payload` (an exact
        `semantic_bits`-bit value) along the selected routes: every segment zero-fills when it
        widens and truncates when it narrows (`types.adapt_segment`); None when the routes do
        not lead from src to dst.  Raises SegmentTooNarrow on a segment below the value."""
        segs = self.path(src, dst)
        if segs is None:
            return None
        segs.reverse()                          # producer's result port first, dst's input port last
        for a, b in zip(segs, segs[1:]):
            payload = adapt_segment(payload, a, b, semantic_bits)
        return payload


def check_pes(fabric: "Fabric") -> list[Diagnostic]:
    """PE and memory declarations: unique names, existing FUs and ports, one PE per FU, a
    spatial PE with its sole context and no register file."""
    diags: list[Diagnostic] = []
    owner: dict = {}
    names: set = set()
    for pe in fabric.pes:
        if pe.name in names:
            diags.append(Diagnostic(C.DuplicateName, pe.path + ".name", f"PE name {pe.name!r} is taken"))
        names.add(pe.name)
        if pe.kind == "spatial" and (pe.contexts != 1 or pe.register_file is not None):
            diags.append(Diagnostic(C.InvalidContext, pe.path, "a spatial PE uses its sole context: contexts is 1 "
                                                               "and it has no register file"))
        elif pe.kind == "spatial" and (pe.initiation_interval, pe.grant_policy) != (None, None):
            diags.append(Diagnostic(C.InvalidContext, pe.path, "a spatial PE uses its sole context: no contexts "
                                                               "take turns, so it has no initiation_interval or grant_policy"))
        for i, f in enumerate(pe.fus):
            p = f"{pe.path}.fus[{i}]"
            if fabric.fu(f) is None:
                diags.append(Diagnostic(C.UnknownReference, p, f"{f!r} names no FU"))
            elif f in owner:
                diags.append(Diagnostic(C.DuplicateDeclaration, p, f"FU {f} already belongs to PE {owner[f]}"))
            else:
                owner[f] = pe.name
    mem_names: set = set()
    for m in fabric.memories:
        if m.name in mem_names:
            diags.append(Diagnostic(C.DuplicateName, m.path + ".name", f"memory name {m.name!r} is taken"))
        mem_names.add(m.name)
        for what, ends, side in (("writers", m.writers, "outputs"), ("readers", m.readers, "inputs")):
            for i, (f, k) in enumerate(ends):
                fu = fabric.fu(f)
                if fu is None or k >= len(getattr(fu, side)):
                    diags.append(Diagnostic(C.UnknownReference, f"{m.path}.{what}[{i}]",
                                            f"{f}.{k} names no FU {side[:-1]}"))
    return diags


def route(fu: FU, t: Template, src: tuple[str, int], dst: tuple[str, int]):
    """Follow the selected routes from op input `dst` = (node, port) back to a producer;
    returns the port types along the path when it starts at op result `src`, else None."""
    return Router(fu, t).path(src, dst)
