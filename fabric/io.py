"""Fabric descriptions as text: a closed JSON format (docs/fabric-format.md) and its canonical
printer.  `load_text` turns any input into a `Fabric` or raises `FormatError(path, why)`;
it never lets a Python exception escape.  `dump` prints a description canonically, so
`dump(load_text(dump(f))) == dump(f)`.
"""
from __future__ import annotations

import json
from dataclasses import replace
from decimal import Decimal

from . import jsonread
from .capability import (CONTRACT_KINDS, REFINEMENT_KINDS, FabricOp, InactivePortGuarantee,
                         PhysicalRefinementDomain, PortCorrespondence, ResourceContractConstraint)
from .config import (FuWitness, Mapping, MappedEdge, MemoryWitness, RefinementAssignment, RegisterFileWitness,
                     Use)
from .errors import FormatError, json_kind as _kind
from .families import FAMILIES
from .jsonread import SchemaReader, description_path, enum, integer, lst, obj, pattern, string
from .params import build_pointer_format, parse_record, pointer_format_schema, record_to_json
from .refinement import parse_value
from .schemas import SCHEMAS, make_actor
from .topology import (FU, GRANT_POLICIES, PE, DemuxNode, Fabric, Memory, MuxNode, OpNode, RegisterFile, Template,
                       split_ref)
from .types import MAX_POINTER_BITS, MAX_PORT_WIDTH, bind_pointer_layouts, parse_port_type, parse_type

FORMAT = "tile-emu-fabric/1"
MAX_BYTES = 8 << 20
ALL_MEMBERS = "*"          # an op_list of just this enables every member of the implementation family
MAX_PORTS = 1024
MAX_ITEMS = 1 << 16
MAX_CONTEXTS = 1024       # resident InstructionContextRefs of one temporal PE
MAX_INITIATION_INTERVAL = 1 << 20   # cycles between two grants of one temporal-PE resource


# --- the schema: every structural rule of the format (docs/fabric-format.md) --------------------
# Checked first, over the whole document (fabric.jsonread); the builders below then only convert
# and parse what JSON Schema cannot say (port type and software type spellings, attribute kinds,
# refinement values, cross-field rules).  An op's hw_params record is checked against its
# family's own record schema (fabric.params.record_schema) when the op is built: one schema per
# family in use, compiled on first use, instead of one if/then per registered family here.

# Subschemas used in several places are definitions, referenced by `$ref`, so the compiled
# validator has one function each rather than a copy per use.
_DEFS: dict = {}


def _def(name: str, schema: dict) -> dict:
    _DEFS[name] = schema
    return {"$ref": f"#/definitions/{name}"}


_STRING = _def("string", string())
_PORT = _def("port", {"type": "string", "x-message": "a port type must be a string, not {pytype}"})
_STYPE = _def("stype", {"type": "string", "x-message": "a type spelling must be a string, not {pytype}"})
# `node.K` / `fu.K` with ASCII digits; the lookahead is a true end of text (`$` would also
# match before a final newline)
_REF_PATTERN = r"^[\s\S]+\.[0-9]+(?![\s\S])"
_REF = _def("ref", string(pattern(_REF_PATTERN, "{value!r} is not a value reference (node.K or in.K)")))
_U32 = _def("u32", integer())
_PORT_INDEX = _def("port_index", integer(0, MAX_PORTS))


def _when(kind: str, then: dict) -> dict:
    return {"if": {"required": ["kind"], "properties": {"kind": {"const": kind}}}, "then": then}


def _closed(*names) -> dict:
    """Only the `propertyNames` part of a closed object (its fields are checked elsewhere)."""
    return obj({n: {} for n in names})["allOf"][0]


_CONSTRAINT = _def("constraint", {
    "type": "object",
    "allOf": [_closed("resource_contract", "inactive_ports", "physical_refinement"),
              {"minProperties": 1, "maxProperties": 1,
               "x-message": "a constraint has exactly one of resource_contract, inactive_ports, physical_refinement"}],
    "properties": {
        "resource_contract": enum(CONTRACT_KINDS, "{value!r} is not a resource contract (" + ", ".join(CONTRACT_KINDS) + ")"),
        "inactive_ports": obj({"inputs": lst(_U32), "results": lst(_U32)}),
        "physical_refinement": obj({"kind": enum(REFINEMENT_KINDS, "{value!r} is not a physical refinement kind ("
                                                 + ", ".join(REFINEMENT_KINDS) + ")"),
                                    "values": lst({})}, required=("kind", "values"))}})

# implementation_family may be null (read as absent: MissingImplementationFamily); hw_params is
# the family's record, checked when the op is built (the family decides its schema)
_OP = _def("op", obj({"kind": {}, "name": _STRING,
                      "implementation_family": {"type": ["string", "null"], "minLength": 1,
                                                "x-message": "expected a nonempty string, found {kind}"},
                      "op_list": lst(_STRING), "hw_params": {},
                      "ports": obj({"inputs": lst(_PORT, MAX_PORTS), "results": lst(_PORT, MAX_PORTS)},
                                   required=("inputs", "results")),
                      "constraints": lst(_CONSTRAINT), "operands": lst(_REF, MAX_PORTS)},
                     required=("kind", "name", "op_list", "hw_params", "operands", "ports")))
_MUX = _def("mux", obj({"kind": {}, "name": _STRING, "operands": lst(_REF, MAX_PORTS), "type": _PORT},
                       required=("kind", "name", "operands", "type")))
_DEMUX = _def("demux", obj({"kind": {}, "name": _STRING, "operand": _REF, "results": _PORT_INDEX, "type": _PORT},
                           required=("kind", "name", "operand", "results", "type")))
_NODE = _def("node", {"type": "object", "allOf": [_when("op", _OP), _when("mux", _MUX), _when("demux", _DEMUX)],
                      "required": ["kind"], "x-required": {"kind": "None is not a node kind (op, mux, demux)"},
                      "properties": {"kind": enum(("op", "mux", "demux"),
                                                  "{value!r} is not a node kind (op, mux, demux)")}})
_TEMPLATE = _def("template", obj({"selects": {"type": "object", "additionalProperties": _PORT_INDEX},
                                  "name": _STRING, "nodes": lst(_STRING)}, required=("name", "nodes")))
_FU = _def("fu", obj({"name": string(pattern("^[^/]*$", "an FU name cannot contain '/'")),
                      "inputs": lst(_PORT, MAX_PORTS), "outputs": lst(_PORT, MAX_PORTS), "nodes": lst(_NODE),
                      "yield": lst(_REF, MAX_PORTS), "templates": lst(_TEMPLATE)},
                     required=("name", "inputs", "outputs", "nodes", "yield")))

_WITNESS = _def("witness", {
    "type": "object",
    "allOf": [_closed("kind", "memory", "slot", "pe", "register"),
              _when("fu", obj({"kind": {}}, required=("kind",))),
              _when("memory", obj({"kind": {}, "memory": _STRING, "slot": _U32}, required=("kind", "memory", "slot"))),
              _when("register_file", obj({"kind": {}, "pe": _STRING, "register": _U32},
                                         required=("kind", "pe", "register")))],
    "required": ["kind"],
    "properties": {"kind": enum(("fu", "memory", "register_file"),
                                "{value!r} is not a witness kind (fu, memory, register_file)")}})
_ACTOR = _def("actor", obj({"schema": _STRING, "attributes": {"type": "object"},
                            "inputs": lst(_STYPE, MAX_PORTS), "results": lst(_STYPE, MAX_PORTS)},
                           required=("schema", "inputs", "results")))
_USE = _def("use", obj({"name": _STRING, "op": _STRING, "actor": _ACTOR,
                        "operands": lst(_PORT_INDEX, MAX_PORTS), "results": lst(_PORT_INDEX, MAX_PORTS),
                        "index_width": integer(1, 64), "context": integer(0, MAX_CONTEXTS - 1)},
                       required=("name", "op", "actor", "operands", "results")))
_EDGE = _def("edge", obj({"realization": enum(("internal", "external"), 'realization is "internal" or "external"'),
                          "witness": _WITNESS, "from": _REF, "to": _REF}, required=("from", "to", "realization")))
_MAPPING = _def("mapping", obj({"templates": {"type": "object", "additionalProperties": _STRING},
                "edges": lst(_EDGE),
                "physical_refinements": lst(obj({"op": _STRING, "kind": _STRING, "value": {}},
                                                required=("op", "kind", "value"))),
                "uses": lst(_USE),
                "pointer_layouts": lst(pointer_format_schema("PointerLayout", MAX_POINTER_BITS))},
               required=("templates", "uses")))
_PE = _def("pe", obj({"name": _STRING, "kind": enum(("spatial", "temporal"), "{value!r} is not a PE kind (spatial, temporal)"),
                      "fus": lst(_STRING), "contexts": integer(1, MAX_CONTEXTS),
                      "register_file": obj({"registers": integer(1, MAX_PORTS), "width": integer(1, MAX_PORT_WIDTH)},
                                           required=("registers", "width")),
                      "initiation_interval": integer(1, MAX_INITIATION_INTERVAL),
                      "grant_policy": enum(GRANT_POLICIES, "{value!r} is not a grant policy ("
                                           + ", ".join(GRANT_POLICIES) + ")")},
                     required=("name", "kind", "fus")))
_FU_PORT = _def("fu_port", string(pattern(_REF_PATTERN, "{value!r} is not an FU port reference (fu.K)")))
_MEMORY = _def("memory", obj({"name": _STRING, "width": integer(1, MAX_PORT_WIDTH), "slots": integer(1, MAX_ITEMS),
                              "writers": lst(_FU_PORT, MAX_PORTS), "readers": lst(_FU_PORT, MAX_PORTS)},
                             required=("name", "width", "slots", "writers", "readers")))

SCHEMA = obj({"format": {"const": FORMAT, "x-message": f"expected {FORMAT!r}, found {{value!r}}"},
              "fus": lst(_FU), "pes": lst(_PE), "memories": lst(_MEMORY), "mapping": _MAPPING,
              "name": _STRING},
             required=("format", "name", "fus"))

_READER = SchemaReader(SCHEMA, description_path, _DEFS)


# --- builders: the checked document as a Fabric ---------------------------------------------------

def _spelled(parse, v, path):
    """A port or software type spelling parsed by its owner (fabric.types), as a FormatError."""
    try:
        return parse(v)
    except ValueError as exc:
        raise FormatError(path, str(exc)) from None


def _ptype(v, path):
    return _spelled(parse_port_type, v, path)


def _parse_stype(v, path):
    return _spelled(parse_type, v, path)


def _ports(values, path):
    return tuple(_ptype(t, f"{path}[{i}]") for i, t in enumerate(values))


def _constraint(v, path):
    (k, x), = v.items()
    p = f"{path}.{k}"
    if k == "resource_contract":
        return ResourceContractConstraint(x)
    if k == "inactive_ports":
        return InactivePortGuarantee(tuple(x.get("inputs", [])), tuple(x.get("results", [])))
    return PhysicalRefinementDomain(x["kind"], tuple(parse_value(x["kind"], q, f"{p}.values[{i}]")
                                                     for i, q in enumerate(x["values"])))


def _op_node(v, path, fu_name):
    name, family = v["name"], v.get("implementation_family")
    desc = FAMILIES.get(family) if family else None
    # an unknown or missing family keeps the raw record (an object): the verifier reports the family
    hw = v["hw_params"]
    op_list = tuple(v["op_list"])
    if op_list == (ALL_MEMBERS,) and desc is not None:   # every member, e.g. a tile engine's instruction-table rows
        op_list = desc.admitted
    if desc is not None:
        hw = parse_record(desc.params, hw, path + ".hw_params")
    elif not isinstance(hw, dict):
        raise FormatError(path + ".hw_params", f"expected an object, found {_kind(hw)}")
    ins = _ports(v["ports"]["inputs"], path + ".ports.inputs")
    outs = _ports(v["ports"]["results"], path + ".ports.results")
    cons = tuple(_constraint(c, f"{path}.constraints[{i}]") for i, c in enumerate(v.get("constraints", [])))
    op = FabricOp(f"{fu_name}/{name}", family, op_list, hw, ins, outs, cons, path)
    return OpNode(name, op, tuple(v["operands"]))


def _node(v, path, fu_name):
    if v["kind"] == "op":
        return _op_node(v, path, fu_name)
    if v["kind"] == "mux":
        return MuxNode(v["name"], tuple(v["operands"]), _ptype(v["type"], path + ".type"))
    return DemuxNode(v["name"], v["operand"], v["results"], _ptype(v["type"], path + ".type"))


def _fu(v, path):
    name = v["name"]
    return FU(name, _ports(v["inputs"], path + ".inputs"), _ports(v["outputs"], path + ".outputs"),
              tuple(_node(n, f"{path}.nodes[{i}]", name) for i, n in enumerate(v["nodes"])),
              tuple(v["yield"]),
              tuple(Template(t["name"], tuple(t["nodes"]), tuple(sorted(t.get("selects", {}).items())))
                    for t in v.get("templates", [])),
              path)


def _attr_value(schema: str, name: str, v, path):
    row = SCHEMAS.get(schema)
    kind = row.attributes.get(name, (None,))[0] if row else None
    if isinstance(v, list):
        if len(v) > MAX_ITEMS:
            raise FormatError(path, f"{len(v)} entries exceed the limit of {MAX_ITEMS}")
        items = [_attr_scalar(x, f"{path}[{i}]") for i, x in enumerate(v)]
        return frozenset(items) if kind in ("fastmath", "overflow") else tuple(items)
    return _attr_scalar(v, path)


def _attr_scalar(v, path):
    if isinstance(v, (bool, str)) or (isinstance(v, int) and -(1 << 63) <= v < (1 << 4096)):
        return v
    raise FormatError(path, f"an attribute value is a boolean, string, integer or list, not {_kind(v)}")


def _actor(v, path):
    schema = v["schema"]
    return make_actor(schema,
                      [_parse_stype(t, f"{path}.inputs[{i}]") for i, t in enumerate(v["inputs"])],
                      [_parse_stype(t, f"{path}.results[{i}]") for i, t in enumerate(v["results"])],
                      **{k: _attr_value(schema, k, x, f"{path}.attributes.{k}")
                         for k, x in v.get("attributes", {}).items()})


def _use(v, path):
    return Use(v["name"], v["op"], _actor(v["actor"], path + ".actor"),
               PortCorrespondence(tuple(v["operands"]), tuple(v["results"]), v.get("index_width")),
               v.get("context"))


def _witness(v):
    if v["kind"] == "fu":
        return FuWitness()
    if v["kind"] == "memory":
        return MemoryWitness(v["memory"], v["slot"])
    return RegisterFileWitness(v["pe"], v["register"])


def _mapping(v, path):
    edges = []
    for i, e in enumerate(v.get("edges", [])):
        if "witness" in e and e["realization"] != "internal":
            raise FormatError(f"{path}.edges[{i}].witness", "only an internal edge names a witness")
        edges.append(MappedEdge(split_ref(e["from"]), split_ref(e["to"]), e["realization"],
                                _witness(e["witness"]) if "witness" in e else None))
    refs = []
    for i, r in enumerate(v.get("physical_refinements", [])):
        p = f"{path}.physical_refinements[{i}]"
        # a kind with a typed owner reads its value by that type; any other is kept only to be
        # rejected (no opaque value ever reaches the projection)
        value = parse_value(r["kind"], r["value"], p + ".value") if r["kind"] in REFINEMENT_KINDS else \
            _attr_scalar(r["value"], p + ".value")
        refs.append(RefinementAssignment(r["op"], r["kind"], value))
    layouts = tuple(build_pointer_format(x) for x in v.get("pointer_layouts", []))
    by_space = {}
    for lay in layouts:
        by_space.setdefault(lay.address_space, lay)    # a repeated space is a verifier diagnostic
    uses = tuple(_bind(_use(u, f"{path}.uses[{i}]"), by_space) for i, u in enumerate(v["uses"]))
    return Mapping(tuple(sorted(v["templates"].items())), uses, tuple(edges), tuple(refs), path, layouts)


def _bind(u: Use, layouts: dict) -> Use:
    """The use's actor with each ptr<AS> carrying the module's PointerLayout(AS)."""
    if not layouts:
        return u
    a = u.actor
    bound = replace(a, inputs=tuple(bind_pointer_layouts(t, layouts) for t in a.inputs),
                    results=tuple(bind_pointer_layouts(t, layouts) for t in a.results))
    return replace(u, actor=bound)


def _pe(v, path):
    rf = v.get("register_file")
    return PE(v["name"], v["kind"], tuple(v["fus"]), v.get("contexts", 1),
              None if rf is None else RegisterFile(rf["registers"], rf["width"]), path,
              v.get("initiation_interval"), v.get("grant_policy"))


def _memory(v, path):
    return Memory(v["name"], v["width"], v["slots"], tuple(split_ref(x) for x in v["writers"]),
                  tuple(split_ref(x) for x in v["readers"]), path)


# --- entry points ----------------------------------------------------------------------------------

def parse_json(text, what: str = "the description", max_bytes: int = MAX_BYTES, floats=float) -> object:
    """fabric.jsonread.parse_json with the description's size limit (kept here for callers)."""
    return jsonread.parse_json(text, what, max_bytes, floats)


def load_text(text) -> Fabric:
    # numbers with a fraction or exponent stay Decimal: no integer field accepts them
    return load_document(parse_json(text, floats=Decimal))


def load_document(doc) -> Fabric:
    _READER.check(doc)
    fus = tuple(_fu(f, f"fus[{i}]") for i, f in enumerate(doc["fus"]))
    pes = tuple(_pe(x, f"pes[{i}]") for i, x in enumerate(doc.get("pes", [])))
    mems = tuple(_memory(x, f"memories[{i}]") for i, x in enumerate(doc.get("memories", [])))
    mapping = _mapping(doc["mapping"], "mapping") if "mapping" in doc else None
    return Fabric(doc["name"], fus, mapping, pes, mems)


def load(path) -> Fabric:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise FormatError(str(path), f"cannot read: {exc.strerror}") from None
    return load_text(data)


# --- canonical printing ----------------------------------------------------------------------------

def _op_json(n: OpNode) -> dict:
    op = n.op
    hw = record_to_json(op.hw_params) if not isinstance(op.hw_params, dict) else op.hw_params
    out = {"kind": "op", "name": n.name}
    if op.family is not None:
        out["implementation_family"] = op.family
    out.update({"op_list": list(op.op_list), "hw_params": hw, "operands": list(n.operands),
                "ports": {"inputs": [str(t) for t in op.inputs], "results": [str(t) for t in op.results]}})
    cons = []
    for c in op.constraints:
        if isinstance(c, ResourceContractConstraint):
            cons.append({"resource_contract": c.contract})
        elif isinstance(c, InactivePortGuarantee):
            cons.append({"inactive_ports": {"inputs": list(c.inputs), "results": list(c.results)}})
        else:
            cons.append({"physical_refinement": {"kind": c.kind, "values": list(c.values)}})
    out["constraints"] = cons
    return out


def _node_json(n) -> dict:
    if isinstance(n, OpNode):
        return _op_json(n)
    if isinstance(n, MuxNode):
        return {"kind": "mux", "name": n.name, "operands": list(n.operands), "type": str(n.type)}
    return {"kind": "demux", "name": n.name, "operand": n.operand, "results": n.results, "type": str(n.type)}


def _actor_json(a) -> dict:
    attrs = {}
    for k, v in a.attributes:
        attrs[k] = sorted(v) if isinstance(v, frozenset) else list(v) if isinstance(v, tuple) else v
    return {"schema": a.schema, "inputs": [str(t) for t in a.inputs], "results": [str(t) for t in a.results],
            "attributes": attrs}


def _witness_json(w) -> dict:
    if isinstance(w, MemoryWitness):
        return {"kind": "memory", "memory": w.memory, "slot": w.slot}
    if isinstance(w, RegisterFileWitness):
        return {"kind": "register_file", "pe": w.pe, "register": w.register}
    return {"kind": "fu"}


def _pe_json(pe: PE) -> dict:
    out = {"name": pe.name, "kind": pe.kind, "fus": list(pe.fus), "contexts": pe.contexts}
    if pe.register_file is not None:
        out["register_file"] = {"registers": pe.register_file.registers, "width": pe.register_file.width}
    for k in ("initiation_interval", "grant_policy"):
        if getattr(pe, k) is not None:
            out[k] = getattr(pe, k)
    return out


def to_document(f: Fabric) -> dict:
    doc = {"format": FORMAT, "name": f.name, "fus": [
        {"name": fu.name, "inputs": [str(t) for t in fu.inputs], "outputs": [str(t) for t in fu.outputs],
         "nodes": [_node_json(n) for n in fu.nodes], "yield": list(fu.yields),
         "templates": [{"name": t.name, "nodes": list(t.nodes), "selects": dict(t.selects)} for t in fu.templates]}
        for fu in f.fus]}
    if f.pes:
        doc["pes"] = [_pe_json(pe) for pe in f.pes]
    if f.memories:
        doc["memories"] = [{"name": m.name, "width": m.width, "slots": m.slots,
                            "writers": [f"{x}.{k}" for x, k in m.writers],
                            "readers": [f"{x}.{k}" for x, k in m.readers]} for m in f.memories]
    m = f.mapping
    if m is not None:
        doc["mapping"] = {
            "templates": dict(m.templates),
            "uses": [{"name": u.name, "op": u.op, "actor": _actor_json(u.actor), "operands": list(u.corr.operands),
                      "results": list(u.corr.results), **({"index_width": u.corr.index_width}
                                                          if u.corr.index_width is not None else {}),
                      **({"context": u.context} if u.context is not None else {})}
                     for u in m.uses],
            "edges": [{"from": f"{e.src[0]}.{e.src[1]}", "to": f"{e.dst[0]}.{e.dst[1]}", "realization": e.realization,
                       **({"witness": _witness_json(e.witness)} if e.witness is not None else {})}
                      for e in m.edges],
            "physical_refinements": [{"op": r.op, "kind": r.kind, "value": r.value} for r in m.refinements]}
        if m.pointer_layouts:
            doc["mapping"]["pointer_layouts"] = [
                {"address_space": x.address_space, "representation_bits": x.representation_bits,
                 "address_bits": x.address_bits, "kind": x.kind} for x in m.pointer_layouts]
    return doc


def _fmt(v, indent: int) -> str:
    pad, inner = "  " * indent, "  " * (indent + 1)
    if isinstance(v, dict):
        if not v:
            return "{}"
        items = [f"{inner}{json.dumps(k)}: {_fmt(x, indent + 1)}" for k, x in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(v, list):
        if all(not isinstance(x, (dict, list)) or (isinstance(x, list) and all(
                not isinstance(y, (dict, list)) for y in x)) for x in v):
            return "[" + ", ".join(_fmt(x, indent) for x in v) + "]"
        return "[\n" + ",\n".join(inner + _fmt(x, indent + 1) for x in v) + "\n" + pad + "]"
    return json.dumps(v)


def dump(f: Fabric) -> str:
    """Canonical text: fixed field order, set-valued hw_params in domain order, two-space indent."""
    return _fmt(to_document(f), 0) + "\n"
