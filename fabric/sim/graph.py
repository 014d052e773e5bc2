"""Dataflow graphs mapped onto a configured fabric (docs/fabric-graph.md): load and validate.

`load_graph_text(text, fabric)` returns a `Graph` or raises `FormatError(path, why)` for a
malformed document and `GraphError` (one typed `GraphDiagnostic` per problem) for a
well-formed graph that does not fit its fabric: an unmapped actor, a mismatched fabric,
a family with no cycle model, an unbound operand, a dangling result, a type mismatch, a
cycle with no initial token, a combinational loop.  No Python exception escapes.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ..elastic import DEFINEDNESS_REQUIRED
from ..errors import FormatError
from ..io import parse_json as parse_document
from ..jsonread import SchemaReader, dollar_path, enum as one_of, integer, lst, obj, register_format, string
from ..refinement import REFINEMENTS
from ..topology import GRANT_POLICIES, split_ref
from ..types import NoneType, TaggedType, TypeWidthError, VectorType, payload_bits
from .models import CYCLE_MODELS, NO_CYCLE_MODEL, no_kernel_reason

FORMAT = "tile-emu-fabric-graph/1"
MAX_BYTES = 8 << 20
MAX_ITEMS = 1 << 16
MAX_TOKENS = 1 << 20          # tokens per input stream
MAX_INSTANCE_STREAMS = 1 << 16  # per-instance token lists of one input
MAX_READY_EVERY = 1 << 20
MAX_CONTEXTS = 1 << 10        # resident InstructionContextRefs of one temporal resource
MAX_VALUE_BITS = 4096         # widest token this model carries


class GraphCode(enum.Enum):
    FabricInvalid = "the fabric description does not verify"
    MismatchedFabric = "the graph names another fabric, or the fabric has no mapping"
    UnmappedActor = "a graph actor has no use in the fabric's mapping"
    UnusedMapping = "a configured use or internal edge of the mapping is absent from the graph"
    NoCycleModel = "the actor's implementation family (or exact type) has no cycle model"
    UnknownEndpoint = "an endpoint names no actor, operand or result"
    UnboundOperand = "an operand has no driver"
    MultipleDrivers = "an operand has more than one driver"
    DanglingResult = "a result has no consumer, so its token would never be delivered"
    TypeMismatch = "an edge joins values of different types"
    BadToken = "a token is not a value of its type"
    CycleWithoutInitialToken = "a cycle on which no actor can ever fire first"
    CombinationalLoop = "a cycle of elastic-transparent resources with no registered stage"
    CapabilityInadmissible = "a required activity-definedness proof is missing"
    DuplicateName = "two actors, inputs or outputs share a name"
    SharedResource = "two actors are mapped onto one fabric.op without a temporal declaration giving each a context"
    ContextCapacity = "an InstructionContextRef beyond the temporal resource's resident contexts, or one used twice"
    TemporalInvalid = "a temporal declaration that names no resource of the actors, or a resource that cannot be shared"
    ContractCasesUncovered = "a resource contract's per-case use patterns do not cover the schema's cases"


@dataclass(frozen=True)
class GraphDiagnostic:
    code: GraphCode
    path: str
    message: str

    def __str__(self):
        return f"{self.path}: {self.code.name}: {self.message}"


class GraphError(Exception):
    def __init__(self, diagnostics):
        self.diagnostics = list(diagnostics)
        super().__init__("; ".join(map(str, self.diagnostics)))


@dataclass
class Actor:
    name: str
    use: object                      # fabric.config.Use
    family: str
    fabric_op: object                # fabric.capability.FabricOp
    in_types: tuple
    out_types: tuple
    widths_in: tuple
    widths_out: tuple

    @property
    def actor(self):
        return self.use.actor

    @property
    def corr(self):
        return self.use.corr


@dataclass
class Edge:
    src: tuple                       # (actor name, result) or ("@input", input index)
    dst: tuple                       # (actor name, operand) or ("@output", output index)
    width: int
    initial: object = None
    realization: str = "external"
    label: str = ""


@dataclass(frozen=True)
class Temporal:
    """One operation resource of a temporal PE shared by several actors, each in its own resident
    InstructionContextRef: `members` are the actors in context order; the resource grants one
    acceptance per `initiation_interval` cycles to a requesting context by `grant_policy`."""
    op: str
    contexts: int
    initiation_interval: int
    grant_policy: str
    members: tuple            # ((context, actor name), ...) sorted by context


@dataclass
class Graph:
    name: str
    fabric: object
    actors: list
    edges: list
    inputs: list = field(default_factory=list)    # [(name, [tokens], type)]
    outputs: list = field(default_factory=list)   # [(name, ready_every, type)]
    instance_inputs: dict = field(default_factory=dict)   # input index -> [[tokens] per instance list]
    temporal: list = field(default_factory=list)          # [Temporal]

    def streams(self, instances: int):
        """Each instance's input tokens: an input with instance_tokens gives instance i its list
        i mod K, every other input its tokens to every instance."""
        if not self.instance_inputs:
            return None
        return [{self.inputs[s][0]: lists[i % len(lists)] for s, lists in self.instance_inputs.items() if lists}
                for i in range(instances)]


def _d(code, path, msg):
    return GraphDiagnostic(code, path, msg)


# --- the document: a closed JSON Schema (fabric.jsonread, as the fabric description's) -----------

register_format("endpoint", lambda v: split_ref(v) is not None)
_REF = string({"format": "endpoint", "x-message": "{value!r} is not an endpoint (actor.K)"})


def _list(items: dict | None = None, limit: int = MAX_ITEMS, **extra) -> dict:
    """A list of at most `limit` entries (of any JSON values where `items` is None)."""
    return lst(items, limit, **extra) if items is not None else {"type": "array", "maxItems": limit, **extra}


def _input() -> dict:
    # an input's own checks in reading order: unknown fields, missing ones, then which token form
    s = obj({"name": string(), "to": _list(_REF),
             "tokens": _list(None, MAX_TOKENS),
             "instance_tokens": _list(_list(None, MAX_TOKENS), MAX_INSTANCE_STREAMS, minItems=1)},
            required=("name", "to"))
    s["allOf"] += [{"required": s["required"]},
                   {"oneOf": [{"required": ["tokens"]}, {"required": ["instance_tokens"]}],
                    "x-message": "an input has exactly one of tokens (every instance) and instance_tokens "
                                 "(one list per instance)"}]
    return s


GRAPH_SCHEMA = obj({
    "format": {"const": FORMAT, "x-message": f"expected {FORMAT!r}, found {{value!r}}"},
    "name": string(),
    "fabric": string(),
    "actors": _list(string()),
    "edges": _list(obj({"from": _REF, "to": _REF, "initial": {}}, required=("from", "to"))),
    "inputs": _list(_input()),
    "outputs": _list(obj({"name": string(), "from": _REF, "ready_every": integer(1, MAX_READY_EVERY)},
                         required=("name", "from"))),
    "activity_defined": _list(_REF),
    "temporal": _list(obj({
        "op": string(), "contexts": integer(1, MAX_CONTEXTS), "actors": {
            "type": "object", "maxProperties": MAX_CONTEXTS, "additionalProperties": integer(0, MAX_CONTEXTS - 1)},
        "initiation_interval": integer(1, MAX_READY_EVERY),
        "grant_policy": one_of(GRANT_POLICIES, f"{{value!r}} is not one of {', '.join(map(repr, GRANT_POLICIES))}")},
        required=("op", "contexts", "actors"))),
}, required=("format", "name", "fabric", "actors", "edges"))
_READER = SchemaReader(GRAPH_SCHEMA, dollar_path)


def token_value(v, t, width: int, path: str):
    """A JSON token as the raw value the simulator carries for type `t`, or a BadToken diagnostic."""
    if isinstance(t, NoneType):
        if v != 0 or isinstance(v, bool):
            return _d(GraphCode.BadToken, path, "a none token is written 0")
        return 0
    if isinstance(t, VectorType):
        ew = t.element.width
        if not isinstance(v, list) or len(v) != t.num_elements or not all(
                isinstance(x, int) and not isinstance(x, bool) and 0 <= x < (1 << ew) for x in v):
            return _d(GraphCode.BadToken, path, f"a {t} token is a list of {t.num_elements} raw {ew}-bit lanes")
        return tuple(v)
    if isinstance(t, TaggedType):
        tw = t.tag.width
        if not (isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
                and 0 <= v[0] < (1 << width) and 0 <= v[1] < (1 << tw)):
            return _d(GraphCode.BadToken, path, f"a {t} token is [raw {width}-bit value, raw {tw}-bit tag]")
        return (v[0], v[1])
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < (1 << width):
        return _d(GraphCode.BadToken, path, f"a {t} token is a raw integer in [0, 2^{width})")
    return v


def _width(t, iw, path, diags):
    try:
        w = payload_bits(t, iw)
    except TypeWidthError as exc:
        diags.append(_d(GraphCode.NoCycleModel, path, str(exc)))
        return 0
    if w > MAX_VALUE_BITS:
        diags.append(_d(GraphCode.NoCycleModel, path, f"{t} is wider than the {MAX_VALUE_BITS} bits this model carries"))
    return w


# --- document -> graph ---------------------------------------------------------------------------

def parse_json(text) -> object:
    return parse_document(text, "the graph", MAX_BYTES)


def load_graph_text(text, fabric) -> Graph:
    return load_graph_document(parse_json(text), fabric)


def load_graph(path, fabric) -> Graph:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise FormatError(str(path), f"cannot read: {exc.strerror}") from None
    return load_graph_text(data, fabric)


def load_graph_document(doc, fabric) -> Graph:
    from ..view import check_fabric

    _READER.check(doc)
    name, fname, actor_names = doc["name"], doc["fabric"], doc["actors"]
    raw_edges = [(split_ref(e["from"]), split_ref(e["to"]), e.get("initial"), f"$.edges[{i}]")
                 for i, e in enumerate(doc["edges"])]
    raw_inputs = [(x["name"], [split_ref(r) for r in x["to"]], x.get("tokens"), x.get("instance_tokens"),
                   f"$.inputs[{i}]") for i, x in enumerate(doc.get("inputs", []))]
    raw_outputs = [(x["name"], split_ref(x["from"]), x.get("ready_every", 1), f"$.outputs[{i}]")
                   for i, x in enumerate(doc.get("outputs", []))]
    proofs = {split_ref(r) for r in doc.get("activity_defined", [])}

    # --- the fabric: verified, named, mapped ---
    if fabric.name != fname:
        raise GraphError([_d(GraphCode.MismatchedFabric, "$.fabric",
                             f"the graph runs on fabric {fname!r}, the description is {fabric.name!r}")])
    if fabric.mapping is None:
        raise GraphError([_d(GraphCode.MismatchedFabric, "$.fabric",
                             f"fabric {fabric.name!r} has no mapping to configure it")])
    rep = check_fabric(fabric)
    if not rep.ok:
        raise GraphError([_d(GraphCode.FabricInvalid, "fabric", str(d)) for d in rep.diagnostics])

    diags: list = [_d(GraphCode.NoCycleModel, f"mapping.physical_refinements[{i}]",
                      f"{r.op} selects {r.kind} {r.value!r}, which retimes the resource; the cycle models run "
                      f"the unrefined timing only, so this run is refused rather than mistimed")
                   for i, r in enumerate(fabric.mapping.refinements) if REFINEMENTS[r.kind].retimes(r.value)]
    uses = {u.name: u for u in fabric.mapping.uses}
    actors, seen = {}, set()
    for i, a in enumerate(actor_names):
        p = f"$.actors[{i}]"
        if a in seen:
            diags.append(_d(GraphCode.DuplicateName, p, f"actor {a!r} is listed twice"))
            continue
        seen.add(a)
        u = uses.get(a)
        if u is None:
            diags.append(_d(GraphCode.UnmappedActor, p, f"actor {a!r} has no use in fabric {fabric.name!r}'s mapping"))
            continue
        _, node = fabric.op(u.op)
        op = node.op
        if op.family not in CYCLE_MODELS:
            why = NO_CYCLE_MODEL.get(op.family, "unregistered family")
            diags.append(_d(GraphCode.NoCycleModel, p, f"{u.actor.schema} on {op.family}: no cycle model ({why})"))
            continue
        iw = u.corr.index_width
        win = tuple(_width(t, iw, p, diags) for t in u.actor.inputs)
        wout = tuple(_width(t, iw, p, diags) for t in u.actor.results)
        actors[a] = Actor(a, u, op.family, op, u.actor.inputs, u.actor.results, win, wout)
        u_ext = actors[a]
        why = no_kernel_reason(_UseView(u_ext))
        if why:
            diags.append(_d(GraphCode.NoCycleModel, p, why))
            del actors[a]
        elif op.family in DEFINEDNESS_REQUIRED:
            missing = [k for k in DEFINEDNESS_REQUIRED[op.family] if (a, k) not in proofs]
            if missing:
                diags.append(_d(GraphCode.CapabilityInadmissible, p,
                                f"{u.actor.schema} {a!r}: no activity-definedness proof for operand(s) "
                                f"{', '.join(f'{a}.{k}' for k in missing)} (list them in activity_defined)"))
    temporal = _temporal(doc.get("temporal", []), actors, fabric, diags)
    shared = {t.op for t in temporal} | {a.use.op for a in actors.values() if _in_temporal_pe(fabric, a.use.op)}
    owner: dict = {}
    for a in actors.values():
        if a.use.op in owner and a.use.op not in shared:
            diags.append(_d(GraphCode.SharedResource, "$.actors",
                            f"actors {owner[a.use.op]!r} and {a.name!r} both run on {a.use.op}: a spatial PE has one "
                            f"context per resource; put its FU in a temporal PE (pes[], kind temporal) and give each "
                            f"use its own context, to give each actor its own InstructionContextRef"))
        owner.setdefault(a.use.op, a.name)
    for u in fabric.mapping.uses:
        if u.name not in seen:
            diags.append(_d(GraphCode.UnusedMapping, "$.actors",
                            f"use {u.name!r} is configured on {u.op} but is not an actor of the graph"))
    if diags:
        raise GraphError(diags)

    drivers: dict = {}
    consumers: dict = {}
    edges = []

    def operand(ref, path):
        a, k = ref
        if a not in actors or k >= len(actors[a].in_types):
            diags.append(_d(GraphCode.UnknownEndpoint, path, f"{a}.{k} is not an operand of a graph actor"))
            return None
        if ref in drivers:
            diags.append(_d(GraphCode.MultipleDrivers, path, f"{a}.{k} is already driven by {drivers[ref]}"))
            return None
        drivers[ref] = path
        return actors[a].in_types[k]

    def result(ref, path):
        a, k = ref
        if a not in actors or k >= len(actors[a].out_types):
            diags.append(_d(GraphCode.UnknownEndpoint, path, f"{a}.{k} is not a result of a graph actor"))
            return None
        consumers.setdefault(ref, []).append(path)
        return actors[a].out_types[k]

    internal = {(e.src, e.dst): e.realization for e in fabric.mapping.edges}
    for src, dst, init, p in raw_edges:
        ts, td = result(src, p + ".from"), operand(dst, p + ".to")
        if ts is None or td is None:
            continue
        if ts != td:
            diags.append(_d(GraphCode.TypeMismatch, p, f"{src[0]}.{src[1]} is {ts}, {dst[0]}.{dst[1]} takes {td}"))
            continue
        w = actors[src[0]].widths_out[src[1]]
        iv = None
        if init is not None:
            iv = token_value(init, ts, w, p + ".initial")
            if isinstance(iv, GraphDiagnostic):
                diags.append(iv)
                continue
        edges.append(Edge(src, dst, w, iv, internal.pop((src, dst), "external"),
                          f"{src[0]}.{src[1]}->{dst[0]}.{dst[1]}"))
    for (src, dst), _ in internal.items():
        diags.append(_d(GraphCode.UnusedMapping, "mapping.edges",
                        f"the mapping realizes edge {src[0]}.{src[1]} -> {dst[0]}.{dst[1]}, which the graph lacks"))
    names = set()
    inputs = []
    instance_inputs = {}
    for ii, (nm, tos, toks, per, p) in enumerate(raw_inputs):
        if nm in names:
            diags.append(_d(GraphCode.DuplicateName, p + ".name", f"{nm!r} is taken"))
        names.add(nm)
        types = [operand(r, f"{p}.to[{k}]") for k, r in enumerate(tos)]
        if not tos:
            diags.append(_d(GraphCode.DanglingResult, p + ".to", f"input {nm!r} drives no operand"))
            continue
        if None in types:       # an unknown or doubly driven operand: operand() said which
            continue
        if any(t != types[0] for t in types):
            diags.append(_d(GraphCode.TypeMismatch, p + ".to", f"input {nm!r} drives operands of different types"))
            continue
        a, k = tos[0]
        w = actors[a].widths_in[k]
        lists = [(toks, p + ".tokens")] if per is None else [(x, f"{p}.instance_tokens[{j}]") for j, x in enumerate(per)]
        converted = []
        for xs, where in lists:
            vals = []
            for j, v in enumerate(xs):
                tv = token_value(v, types[0], w, f"{where}[{j}]")
                if isinstance(tv, GraphDiagnostic):
                    diags.append(tv)
                    break
                vals.append(tv)
            converted.append(vals)
        inputs.append((nm, converted[0] if converted else [], types[0]))
        if per is not None:
            instance_inputs[len(inputs) - 1] = converted
        for r in tos:
            edges.append(Edge(("@input", ii), r, w, None, "external", f"{nm}->{r[0]}.{r[1]}"))
    outputs = []
    for oi, (nm, src, every, p) in enumerate(raw_outputs):
        if nm in names:
            diags.append(_d(GraphCode.DuplicateName, p + ".name", f"{nm!r} is taken"))
        names.add(nm)
        t = result(src, p + ".from")
        if t is None:
            continue
        outputs.append((nm, every, t))
        edges.append(Edge(src, ("@output", len(outputs) - 1), actors[src[0]].widths_out[src[1]], None, "external",
                          f"{src[0]}.{src[1]}->{nm}"))
    for a in actors.values():
        for k in range(len(a.in_types)):
            if (a.name, k) not in drivers:
                diags.append(_d(GraphCode.UnboundOperand, "$.edges", f"operand {a.name}.{k} ({a.in_types[k]}) has no driver"))
        for k in range(len(a.out_types)):
            if (a.name, k) not in consumers:
                diags.append(_d(GraphCode.DanglingResult, "$.edges",
                                f"result {a.name}.{k} has no consumer (add an edge or an output)"))
    if diags:
        raise GraphError(diags)
    g = Graph(name, fabric, list(actors.values()), edges, inputs, outputs, instance_inputs, temporal)
    _check_cycles(g, diags)
    if diags:
        raise GraphError(diags)
    return g


_TRANSPARENT = ("LoopCarry", "LoopInvariant", "LoopGate")


def _temporal(entries, actors, fabric, diags) -> list:
    """The shared operation resources: those of the fabric's temporal PEs (each actor in its
    use's InstructionContextRef, the PE's initiation interval and grant policy), then the graph's
    `temporal` entries for fabrics that declare no PE around the resource.  Every actor of a
    shared resource is in its own context below the resident-context count; a transparent
    resource forwards within the cycle and is never shared."""
    out = _fabric_temporal(actors, fabric, diags)
    seen = set()
    for i, t in enumerate(entries):
        p = f"$.temporal[{i}]"
        op = t["op"]
        on_op = {a.name for a in actors.values() if a.use.op == op}
        if not on_op:
            diags.append(_d(GraphCode.TemporalInvalid, p + ".op", f"no actor of the graph runs on {op!r}"))
            continue
        if op in seen:
            diags.append(_d(GraphCode.TemporalInvalid, p + ".op", f"{op!r} is declared temporal twice"))
            continue
        seen.add(op)
        pe = fabric.pe_of(op.split("/")[0])
        if pe is not None:      # the fabric owns the resource's contexts and scheduler: one place
            why = ("which owns its contexts (the uses' context), initiation interval and grant policy; drop this "
                   "entry" if pe.kind == "temporal" else "which uses its sole context")
            diags.append(_d(GraphCode.TemporalInvalid, p + ".op", f"{op} is in {pe.kind} PE {pe.name} of the fabric, {why}"))
            continue
        fam = next(a.family for a in actors.values() if a.use.op == op)
        if fam in _TRANSPARENT:
            diags.append(_transparent(p + ".op", op, fam))
            continue
        ctx = t["actors"]
        bad = False
        for name in sorted(on_op - set(ctx)):
            diags.append(_d(GraphCode.SharedResource, p + ".actors",
                            f"actor {name!r} runs on temporal resource {op} without an InstructionContextRef"))
            bad = True
        for name in sorted(set(ctx) - on_op):
            diags.append(_d(GraphCode.TemporalInvalid, p + f".actors.{name}", f"actor {name!r} does not run on {op}"))
            bad = True
        by_ctx: dict = {}
        for name, c in ctx.items():
            if c >= t["contexts"]:
                diags.append(_d(GraphCode.ContextCapacity, p + f".actors.{name}",
                                f"context {c} of {name!r} is beyond the {t['contexts']} resident context(s) of {op}"))
                bad = True
            elif c in by_ctx:
                diags.append(_d(GraphCode.ContextCapacity, p + f".actors.{name}",
                                f"context {c} of {op} is already resident for {by_ctx[c]!r}"))
                bad = True
            by_ctx.setdefault(c, name)
        if not bad and CYCLE_MODELS.get(fam) is not None:
            out.append(Temporal(op, t["contexts"], t.get("initiation_interval", 1), t.get("grant_policy", "round_robin"),
                                tuple(sorted((c, n) for n, c in ctx.items()))))
    return out


def _in_temporal_pe(fabric, op) -> bool:
    pe = fabric.pe_of(op.split("/")[0])
    return pe is not None and pe.kind == "temporal"


def _transparent(path, op, fam):
    return _d(GraphCode.TemporalInvalid, path, f"{op} is an elastic-transparent {fam} resource: it forwards "
                                               f"within the cycle, so contexts cannot take turns on it")


def _fabric_temporal(actors, fabric, diags) -> list:
    """The operation resources of the fabric's temporal PEs that take turns: several actors (or
    one, when the PE spaces its grants), each in its use's resident context (the verifier keeps
    the context below the PE's count), one context per actor."""
    from .models import CYCLE_MODELS
    by_op: dict = {}
    for a in actors.values():
        by_op.setdefault(a.use.op, []).append(a)
    out = []
    for op, members in by_op.items():
        pe = fabric.pe_of(op.split("/")[0])
        if pe is None or pe.kind != "temporal":
            continue
        ii = pe.initiation_interval or 1
        if len(members) == 1 and ii == 1:
            continue            # one context granted every cycle: the resource runs as it would alone
        if members[0].family in _TRANSPARENT:
            diags.append(_transparent(f"pes[{fabric.pes.index(pe)}]", op, members[0].family))
            continue
        by_ctx: dict = {}
        for a in members:
            c = a.use.context or 0
            if c in by_ctx:
                diags.append(_d(GraphCode.ContextCapacity, f"mapping.uses[{fabric.mapping.uses.index(a.use)}].context",
                                f"context {c} of {op} is already resident for {by_ctx[c]!r} (give each use of "
                                f"temporal PE {pe.name} its own context)"))
            by_ctx.setdefault(c, a.name)
        if len(by_ctx) == len(members) and CYCLE_MODELS.get(members[0].family) is not None:
            out.append(Temporal(op, pe.contexts, ii, pe.grant_policy or GRANT_POLICIES[0],
                                tuple(sorted((c, n) for c, n in by_ctx.items()))))
    return out


class _UseView:
    """A mapped use with its family and fabric.op attached, as `models.build` expects."""

    def __init__(self, a: Actor):
        self.name, self.actor, self.corr, self.family, self.fabric_op = a.name, a.actor, a.corr, a.family, a.fabric_op


# --- static liveness: cycles ------------------------------------------------------------------------

def _cycle(succ) -> list | None:
    """One directed cycle of the graph `succ` (node -> successors), as graphlib reports it, or None."""
    import graphlib
    ts = graphlib.TopologicalSorter()
    for n in sorted(succ):
        ts.add(n)
        for m in sorted(succ[n]):
            ts.add(m, n)
    try:
        ts.prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return None


def _check_cycles(g: Graph, diags: list):
    from .program import ProgramError, models_of
    try:
        models = dict(zip((a.name for a in g.actors), models_of(g)))
    except ProgramError as exc:
        diags.append(_d(GraphCode[exc.code], f"actor {exc.actor}", str(exc)))
        return
    dead, comb = {}, {}
    for e in g.edges:
        s, d = e.src[0], e.dst[0]
        if s.startswith("@") or d.startswith("@"):
            continue
        # an operand every transition needs, with no initial token: its producer must fire first
        if all(e.dst[1] in c.need for c in models[d].cases) and e.initial is None:
            dead.setdefault(s, set()).add(d)
        if not models[s].registered and not models[d].registered:
            comb.setdefault(s, set()).add(d)
    for succ, code, why in ((dead, GraphCode.CycleWithoutInitialToken,
                             "every actor on it waits for a token only the cycle can produce; put an initial "
                             "token on one of its edges"),
                            (comb, GraphCode.CombinationalLoop,
                             "forwarding adds no registered cycle, so valid would depend on itself")):
        cyc = _cycle(succ)
        if cyc:
            diags.append(_d(code, "$.edges", f"{' -> '.join(cyc)}: {why}"))
