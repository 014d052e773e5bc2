"""Fabric descriptions as text: a closed JSON format (docs/fabric-format.md) and its canonical
printer.  `load_text` turns any input into a `Fabric` or raises `FormatError(path, why)`;
it never lets a Python exception escape.  `dump` prints a description canonically, so
`dump(load_text(dump(f))) == dump(f)`.
"""
from __future__ import annotations

import json

from isa import jsontext

from .capability import (CONTRACT_KINDS, REFINEMENT_KINDS, FabricOp, InactivePortGuarantee,
                         PhysicalRefinementDomain, PortCorrespondence, ResourceContractConstraint)
from .config import Mapping, MappedEdge, RefinementAssignment, Use
from .errors import FormatError, closed_object as _obj, json_kind as _kind
from .families import FAMILIES
from .params import parse_record, record_to_json
from .schemas import SCHEMAS, make_actor
from .topology import FU, DemuxNode, Fabric, MuxNode, OpNode, Template, split_ref
from .types import parse_port_type, parse_type

FORMAT = "tile-emu-fabric/1"
MAX_BYTES = 8 << 20
ALL_MEMBERS = "*"          # an op_list of just this enables every member of the implementation family
MAX_PORTS = 1024
MAX_ITEMS = 1 << 16


# --- small typed readers ------------------------------------------------------------------------

def _str(v, path) -> str:
    if not isinstance(v, str) or not v:
        raise FormatError(path, f"expected a nonempty string, found {_kind(v)}")
    return v


def _int(v, path, lo=0, hi=(1 << 32) - 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise FormatError(path, f"expected an integer, found {_kind(v)}")
    if not lo <= v <= hi:
        raise FormatError(path, f"{v} is outside [{lo}, {hi}]")
    return v


def _list(v, path, limit=MAX_ITEMS) -> list:
    if not isinstance(v, list):
        raise FormatError(path, f"expected a list, found {_kind(v)}")
    if len(v) > limit:
        raise FormatError(path, f"{len(v)} entries exceed the limit of {limit}")
    return v


def _ptype(v, path):
    try:
        return parse_port_type(v)
    except ValueError as exc:
        raise FormatError(path, str(exc)) from None


def _stype(v, path):
    try:
        return parse_type(v)
    except ValueError as exc:
        raise FormatError(path, str(exc)) from None


def _ref(v, path) -> str:
    s = _str(v, path)
    if split_ref(s) is None:
        raise FormatError(path, f"{s!r} is not a value reference (node.K or in.K)")
    return s


# --- nodes ----------------------------------------------------------------------------------------

def _constraint(v, path):
    _obj(v, path, optional=("resource_contract", "inactive_ports", "physical_refinement"))
    if len(v) != 1:
        raise FormatError(path, "a constraint has exactly one of resource_contract, inactive_ports, "
                                "physical_refinement")
    (k, x), = v.items()
    p = f"{path}.{k}"
    if k == "resource_contract":
        if x not in CONTRACT_KINDS:
            raise FormatError(p, f"{x!r} is not a resource contract ({', '.join(CONTRACT_KINDS)})")
        return ResourceContractConstraint(x)
    if k == "inactive_ports":
        _obj(x, p, optional=("inputs", "results"))
        return InactivePortGuarantee(
            tuple(_int(q, f"{p}.inputs[{i}]") for i, q in enumerate(_list(x.get("inputs", []), p + ".inputs"))),
            tuple(_int(q, f"{p}.results[{i}]") for i, q in enumerate(_list(x.get("results", []), p + ".results"))))
    _obj(x, p, required=("kind", "values"))
    if x["kind"] not in REFINEMENT_KINDS:
        raise FormatError(p + ".kind", f"{x['kind']!r} is not a physical refinement kind ({', '.join(REFINEMENT_KINDS)})")
    return PhysicalRefinementDomain(x["kind"], tuple(_int(q, f"{p}.values[{i}]", 1)
                                                     for i, q in enumerate(_list(x["values"], p + ".values"))))


def _op_node(v, path, fu_name):
    _obj(v, path, required=("kind", "name", "op_list", "hw_params", "operands", "ports"),
         optional=("implementation_family", "constraints"))
    name = _str(v["name"], path + ".name")
    family = v.get("implementation_family")
    if family is not None:
        family = _str(family, path + ".implementation_family")
    op_list = tuple(_str(s, f"{path}.op_list[{i}]") for i, s in enumerate(_list(v["op_list"], path + ".op_list")))
    desc = FAMILIES.get(family) if family else None
    if op_list == (ALL_MEMBERS,) and desc is not None:   # every member, e.g. a tile engine's instruction-table rows
        op_list = desc.admitted
    if desc is not None:
        hw = parse_record(desc.params, v["hw_params"], path + ".hw_params")
    else:  # the verifier reports the missing/unknown family; keep the raw record
        hw = _obj(v["hw_params"], path + ".hw_params", optional=tuple(v["hw_params"]) if isinstance(
            v["hw_params"], dict) else ())
    ports = _obj(v["ports"], path + ".ports", required=("inputs", "results"))
    ins = tuple(_ptype(t, f"{path}.ports.inputs[{i}]") for i, t in enumerate(_list(ports["inputs"], path + ".ports.inputs", MAX_PORTS)))
    outs = tuple(_ptype(t, f"{path}.ports.results[{i}]") for i, t in enumerate(_list(ports["results"], path + ".ports.results", MAX_PORTS)))
    cons = tuple(_constraint(c, f"{path}.constraints[{i}]") for i, c in enumerate(_list(v.get("constraints", []), path + ".constraints")))
    operands = tuple(_ref(r, f"{path}.operands[{i}]") for i, r in enumerate(_list(v["operands"], path + ".operands", MAX_PORTS)))
    op = FabricOp(f"{fu_name}/{name}", family, op_list, hw, ins, outs, cons, path)
    return OpNode(name, op, operands)


def _node(v, path, fu_name):
    if not isinstance(v, dict):
        raise FormatError(path, f"expected an object, found {_kind(v)}")
    kind = v.get("kind")
    if kind == "op":
        return _op_node(v, path, fu_name)
    if kind == "mux":
        _obj(v, path, required=("kind", "name", "operands", "type"))
        return MuxNode(_str(v["name"], path + ".name"),
                       tuple(_ref(r, f"{path}.operands[{i}]") for i, r in enumerate(_list(v["operands"], path + ".operands", MAX_PORTS))),
                       _ptype(v["type"], path + ".type"))
    if kind == "demux":
        _obj(v, path, required=("kind", "name", "operand", "results", "type"))
        return DemuxNode(_str(v["name"], path + ".name"), _ref(v["operand"], path + ".operand"),
                         _int(v["results"], path + ".results", 0, MAX_PORTS), _ptype(v["type"], path + ".type"))
    raise FormatError(path + ".kind", f"{kind!r} is not a node kind (op, mux, demux)")


def _template(v, path):
    _obj(v, path, required=("name", "nodes"), optional=("selects",))
    sel = _obj(v.get("selects", {}), path + ".selects", optional=tuple(v.get("selects", {}) or ()) if isinstance(
        v.get("selects", {}), dict) else ())
    return Template(_str(v["name"], path + ".name"),
                    tuple(_str(n, f"{path}.nodes[{i}]") for i, n in enumerate(_list(v["nodes"], path + ".nodes"))),
                    tuple(sorted((k, _int(x, f"{path}.selects.{k}", 0, MAX_PORTS)) for k, x in sel.items())))


def _fu(v, path):
    _obj(v, path, required=("name", "inputs", "outputs", "nodes", "yield"), optional=("templates",))
    name = _str(v["name"], path + ".name")
    if "/" in name:
        raise FormatError(path + ".name", "an FU name cannot contain '/'")
    return FU(name,
              tuple(_ptype(t, f"{path}.inputs[{i}]") for i, t in enumerate(_list(v["inputs"], path + ".inputs", MAX_PORTS))),
              tuple(_ptype(t, f"{path}.outputs[{i}]") for i, t in enumerate(_list(v["outputs"], path + ".outputs", MAX_PORTS))),
              tuple(_node(n, f"{path}.nodes[{i}]", name) for i, n in enumerate(_list(v["nodes"], path + ".nodes"))),
              tuple(_ref(r, f"{path}.yield[{i}]") for i, r in enumerate(_list(v["yield"], path + ".yield", MAX_PORTS))),
              tuple(_template(t, f"{path}.templates[{i}]") for i, t in enumerate(_list(v.get("templates", []), path + ".templates"))),
              path)


# --- mapping --------------------------------------------------------------------------------------

def _attr_value(schema: str, name: str, v, path):
    row = SCHEMAS.get(schema)
    kind = row.attributes.get(name, (None,))[0] if row else None
    if isinstance(v, list):
        items = [_attr_scalar(x, f"{path}[{i}]") for i, x in enumerate(_list(v, path))]
        return frozenset(items) if kind in ("fastmath", "overflow") else tuple(items)
    return _attr_scalar(v, path)


def _attr_scalar(v, path):
    if isinstance(v, (bool, str)) or (isinstance(v, int) and -(1 << 63) <= v < (1 << 4096)):
        return v
    raise FormatError(path, f"an attribute value is a boolean, string, integer or list, not {_kind(v)}")


def _actor(v, path):
    _obj(v, path, required=("schema", "inputs", "results"), optional=("attributes",))
    schema = _str(v["schema"], path + ".schema")
    attrs = _obj(v.get("attributes", {}), path + ".attributes",
                 optional=tuple(v.get("attributes", {})) if isinstance(v.get("attributes", {}), dict) else ())
    return make_actor(schema,
                      [_stype(t, f"{path}.inputs[{i}]") for i, t in enumerate(_list(v["inputs"], path + ".inputs", MAX_PORTS))],
                      [_stype(t, f"{path}.results[{i}]") for i, t in enumerate(_list(v["results"], path + ".results", MAX_PORTS))],
                      **{k: _attr_value(schema, k, x, f"{path}.attributes.{k}") for k, x in attrs.items()})


def _use(v, path):
    _obj(v, path, required=("name", "op", "actor", "operands", "results"), optional=("index_width",))
    iw = v.get("index_width")
    return Use(_str(v["name"], path + ".name"), _str(v["op"], path + ".op"), _actor(v["actor"], path + ".actor"),
               PortCorrespondence(
                   tuple(_int(p, f"{path}.operands[{i}]", 0, MAX_PORTS) for i, p in enumerate(_list(v["operands"], path + ".operands", MAX_PORTS))),
                   tuple(_int(p, f"{path}.results[{i}]", 0, MAX_PORTS) for i, p in enumerate(_list(v["results"], path + ".results", MAX_PORTS))),
                   None if iw is None else _int(iw, path + ".index_width", 1, 64)))


def _endpoint(v, path):
    s = _ref(v, path)
    node, k = split_ref(s)
    return node, k


def _mapping(v, path):
    _obj(v, path, required=("templates", "uses"), optional=("edges", "physical_refinements"))
    tm = _obj(v["templates"], path + ".templates", optional=tuple(v["templates"]) if isinstance(v["templates"], dict) else ())
    edges = []
    for i, e in enumerate(_list(v.get("edges", []), path + ".edges")):
        p = f"{path}.edges[{i}]"
        _obj(e, p, required=("from", "to", "realization"))
        if e["realization"] not in ("internal", "external"):
            raise FormatError(p + ".realization", "realization is \"internal\" or \"external\"")
        edges.append(MappedEdge(_endpoint(e["from"], p + ".from"), _endpoint(e["to"], p + ".to"), e["realization"]))
    refs = []
    for i, r in enumerate(_list(v.get("physical_refinements", []), path + ".physical_refinements")):
        p = f"{path}.physical_refinements[{i}]"
        _obj(r, p, required=("op", "kind", "value"))
        refs.append(RefinementAssignment(_str(r["op"], p + ".op"), _str(r["kind"], p + ".kind"), _int(r["value"], p + ".value")))
    return Mapping(tuple(sorted((k, _str(x, f"{path}.templates.{k}")) for k, x in tm.items())),
                   tuple(_use(u, f"{path}.uses[{i}]") for i, u in enumerate(_list(v["uses"], path + ".uses"))),
                   tuple(edges), tuple(refs), path)


# --- entry points ----------------------------------------------------------------------------------

def _no_duplicate_keys(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise FormatError("$", f"duplicate key {k!r} in one object")
        out[k] = v
    return out


def parse_json(text, what: str = "the description", max_bytes: int = MAX_BYTES) -> object:
    """A JSON document (str or UTF-8 bytes) of at most `max_bytes`, or FormatError: duplicate
    keys, NaN/Infinity constants, malformed text, deep nesting and over-long integers (through
    isa.jsontext) are all one-line errors.  Shared by fabric descriptions and dataflow graphs."""
    if isinstance(text, (bytes, bytearray)):
        if len(text) > max_bytes:
            raise FormatError("$", f"{what} exceeds {max_bytes} bytes")
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError("$", f"not UTF-8 text (byte {exc.start})") from None
    if len(text) > max_bytes:
        raise FormatError("$", f"{what} exceeds {max_bytes} bytes")
    try:
        return jsontext.loads(text, object_pairs_hook=_no_duplicate_keys,
                              parse_constant=lambda c: (_ for _ in ()).throw(FormatError("$", f"{c} is not JSON")))
    except FormatError:
        raise
    except jsontext.JsonTextError as exc:
        raise FormatError("$", f"malformed JSON: {exc}") from None


def load_text(text) -> Fabric:
    return load_document(parse_json(text))


def load_document(doc) -> Fabric:
    _obj(doc, "$", required=("format", "name", "fus"), optional=("mapping",))
    if doc["format"] != FORMAT:
        raise FormatError("$.format", f"expected {FORMAT!r}, found {doc['format']!r}")
    fus = tuple(_fu(f, f"fus[{i}]") for i, f in enumerate(_list(doc["fus"], "$.fus")))
    mapping = _mapping(doc["mapping"], "mapping") if "mapping" in doc else None
    return Fabric(_str(doc["name"], "$.name"), fus, mapping)


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


def to_document(f: Fabric) -> dict:
    doc = {"format": FORMAT, "name": f.name, "fus": [
        {"name": fu.name, "inputs": [str(t) for t in fu.inputs], "outputs": [str(t) for t in fu.outputs],
         "nodes": [_node_json(n) for n in fu.nodes], "yield": list(fu.yields),
         "templates": [{"name": t.name, "nodes": list(t.nodes), "selects": dict(t.selects)} for t in fu.templates]}
        for fu in f.fus]}
    m = f.mapping
    if m is not None:
        doc["mapping"] = {
            "templates": dict(m.templates),
            "uses": [{"name": u.name, "op": u.op, "actor": _actor_json(u.actor), "operands": list(u.corr.operands),
                      "results": list(u.corr.results), **({"index_width": u.corr.index_width}
                                                          if u.corr.index_width is not None else {})}
                     for u in m.uses],
            "edges": [{"from": f"{e.src[0]}.{e.src[1]}", "to": f"{e.dst[0]}.{e.dst[1]}", "realization": e.realization}
                      for e in m.edges],
            "physical_refinements": [{"op": r.op, "kind": r.kind, "value": r.value} for r in m.refinements]}
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
