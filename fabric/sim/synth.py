"""Build a configured fabric description for a dataflow graph: one FU per actor, each with one
`fabric.op` whose capability admits exactly that actor, and the mapping that configures it.

Used by the examples, the fuzz tests and the benchmark; the documents it returns are ordinary
descriptions (docs/fabric-format.md, docs/fabric-graph.md) that go through the same loaders.
An actor is `(name, schema, input types, result types, attributes)` with types spelled as in
the description format.
"""
from __future__ import annotations

from ..families import FAMILIES, families_for
from ..types import parse_type, payload_bits, VectorType

_CONTRACT = {"one_cycle_elastic": "one_cycle_elastic", "elastic_transparent": "elastic_transparent",
             "loop_stream": "loop_stream", "ordered_cardinality_adapter": "ordered_cardinality_adapter"}


def _w(t) -> int:
    return payload_bits(parse_type(t))


def _behavior(nan: str, attrs=None) -> dict:
    mode = (attrs or {}).get("rounding_mode") or "to_nearest_even"
    return {"rounding_modes": [mode], "nan_behaviors": [nan], "subnormal_behaviors": ["preserve"],
            "signed_zero_behaviors": ["preserve"], "required_fast_math": []}


def _fmt(t: str) -> str:
    p = parse_type(t)
    return (p.element if isinstance(p, VectorType) else p).format


def _float_hw(family: str, schema: str, ins, outs, attrs) -> dict | None:
    if family in ("ScalarFloatSign", "ScalarFloatAddSub", "ScalarFloatMultiply", "ScalarFloatFma",
                  "ScalarFloatDivide", "ScalarFloatRemainder"):
        return {"formats": [_fmt(ins[0])], "behavior": _behavior("ieee", attrs)}
    if family == "FixedVectorFloatSign":
        return {"formats": [_fmt(ins[0])], "behavior": _behavior("ieee"), "max_payload_bits": _w(ins[0])}
    if family == "ScalarFloatCompareMinMax":
        nan = "number_preferred" if schema in ("arith.minnumf", "arith.maxnumf") else "ieee"
        return {"formats": [_fmt(ins[0])], "comparison_predicates": [attrs["predicate"]] if "predicate" in attrs else [],
                "behavior": _behavior(nan)}
    if family == "ScalarFloatWidthCast":
        return {"format_pairs": [[_fmt(ins[0]), _fmt(outs[0])]], "behavior": _behavior("ieee", attrs)}
    if family == "ScalarIntegerToFloat":
        return {"format_pairs": [[_w(ins[0]), _fmt(outs[0])]]}
    if family == "ScalarFloatToInteger":
        return {"format_pairs": [[_w(outs[0]), _fmt(ins[0])]]}
    if family.startswith("ScalarMath"):
        return {"formats": [_fmt(ins[0])], "behavior": _behavior("ieee"), "accuracy_guarantee": "correctly_rounded"}
    return None


def _elements(vt) -> dict:
    e = vt.element
    return ({"integer_element_widths": [e.width], "float_element_formats": []} if not hasattr(e, "format")
            else {"integer_element_widths": [], "float_element_formats": [e.format]})


INDEX_WIDTH = 64          # the index width a synthesised use selects for index operands


def _hw(family: str, schema: str, ins, outs, attrs) -> dict:
    if family == "FixedVectorSliceAlignMerge":
        container = parse_type(ins[0] if schema == "vector.extract" else ins[1])
        sl = outs[0] if schema == "vector.extract" else ins[0]
        rank = sum(1 for t in ins if t == "index")
        return {**_elements(container), "max_container_payload_bits": payload_bits(container),
                "max_slice_payload_bits": _w(sl), "max_dynamic_position_rank": rank,
                "resolved_index_widths": [INDEX_WIDTH] if rank else []}
    if family == "FixedVectorShuffle":
        v1, v2, r = (parse_type(t) for t in (ins[0], ins[1], outs[0]))
        return {**_elements(v1), "max_operand_payload_bits": max(payload_bits(v1), payload_bits(v2)),
                "max_result_payload_bits": payload_bits(r), "max_block_payload_bits": payload_bits(v1) // v1.shape[0],
                "max_source_blocks": v1.shape[0] + v2.shape[0], "max_result_blocks": r.shape[0]}
    fl = _float_hw(family, schema, ins, outs, attrs)
    if fl is not None:
        return fl
    t0 = parse_type(ins[0]) if ins else None
    w = _w(ins[0]) if ins else _w(outs[0])
    if family == "ScalarIntegerAddSub":
        return {"integer_widths": [w], "pointer_formats": []}
    if family == "ScalarIntegerCompareMinMax":
        return {"operand_widths": [w], "comparison_predicates": [attrs["predicate"]] if "predicate" in attrs else []}
    if family in ("ScalarValueSelect", "ScalarBitReinterpret"):
        ts = [parse_type(t) for t in list(ins[-1:]) + list(outs)]
        return {"integer_widths": sorted({t.width for t in ts if not hasattr(t, "format")}),
                "float_formats": sorted({t.format for t in ts if hasattr(t, "format")})}
    if family == "ScalarIntegerCast":
        return {"width_pairs": [[w, _w(outs[0])]], "resolved_index_widths": []}
    if family == "LoopStream":
        return {"step_kind": attrs["step_kind"], "integer_widths": [w], "continuation_predicates": [attrs["predicate"]]}
    if family in ("LoopCarry", "LoopInvariant", "LoopGate"):
        return {"max_payload_bits": _w(outs[-1])}
    if family in ("TokenMux", "TokenDemux", "TokenSync"):
        fan = max(len(ins), len(outs))
        return {"max_payload_bits": max(_w(t) for t in list(ins[1:] if family != "TokenSync" else ins) + list(outs)),
                "max_fan": fan}
    if family == "TokenConstant":
        return {"max_payload_bits": _w(outs[0])}
    if family in ("FixedVectorIntegerAddSub", "FixedVectorIntegerLogic"):
        return {"integer_element_widths": [t0.element.width], "max_payload_bits": w}
    if family.startswith("FixedVector") and family in ("FixedVectorPack", "FixedVectorUnpack",
                                                        "FixedVectorParallelize", "FixedVectorSerialize"):
        vt = next(parse_type(t) for t in list(ins) + list(outs) if isinstance(parse_type(t), VectorType))
        return {"integer_element_widths": [vt.element.width], "float_element_formats": [],
                "max_payload_bits": payload_bits(vt)}
    return {"integer_widths": [w]}


def _port(t) -> str:
    return f"bits<{INDEX_WIDTH if t == 'index' else _w(t)}>"


def _physical(schema: str, ins, outs):
    """(physical input types, actor operand -> physical input): vector.extract leaves physical
    input 1 (the insert's container role) unbound - the schema guarantees it inactive."""
    if schema == "vector.extract":
        phys = [ins[0], outs[0]] + list(ins[1:])
        return phys, [0] + [2 + k for k in range(len(ins) - 1)]
    return list(ins), list(range(len(ins)))


def family_for(schema: str) -> str:
    fams = [f for f in families_for(schema) if not f.startswith("FixedVector") or schema.startswith("dataflow.")]
    return (fams or families_for(schema))[0]


def configured_fabric(name: str, actors, family_override: dict | None = None) -> dict:
    """A fabric description document with one FU per actor and its mapping."""
    fus, uses = [], []
    for (an, schema, ins, outs, attrs) in actors:
        fam = (family_override or {}).get(an) or family_for(schema)
        if schema in ("arith.negf", "math.absf") and isinstance(parse_type(ins[0]), VectorType):
            fam = "FixedVectorFloatSign"
        elif any(isinstance(parse_type(t), VectorType) for t in ins) and schema.startswith("arith."):
            fam = {"arith.addi": "FixedVectorIntegerAddSub", "arith.subi": "FixedVectorIntegerAddSub"}.get(
                schema, "FixedVectorIntegerLogic")
        d = FAMILIES[fam]
        phys, operands = _physical(schema, ins, outs)
        op = {"kind": "op", "name": "op", "implementation_family": fam, "op_list": [schema],
              "hw_params": _hw(fam, schema, ins, outs, attrs),
              "operands": [f"in.{k}" for k in range(len(phys))],
              "ports": {"inputs": [_port(t) for t in phys], "results": [_port(t) for t in outs]},
              "constraints": [{"resource_contract": _CONTRACT[d.contract]}]}
        fus.append({"name": an, "inputs": [_port(t) for t in phys], "outputs": [_port(t) for t in outs],
                    "nodes": [op], "yield": [f"op.{k}" for k in range(len(outs))],
                    "templates": [{"name": "t", "nodes": ["op"]}]})
        use = {"name": an, "op": f"{an}/op",
               "actor": {"schema": schema, "inputs": list(ins), "results": list(outs), "attributes": dict(attrs)},
               "operands": operands, "results": list(range(len(outs)))}
        if "index" in ins:
            use["index_width"] = INDEX_WIDTH
        uses.append(use)
    return {"format": "tile-emu-fabric/1", "name": name, "fus": fus,
            "mapping": {"templates": {a[0]: "t" for a in actors}, "uses": uses, "edges": []}}


def graph_document(name: str, fabric_name: str, actors, edges, inputs=(), outputs=(), activity_defined=()) -> dict:
    """edges: (from "a.K", to "b.K"[, initial]); inputs: (name, [to...], tokens); outputs: (name, from[, every])."""
    doc = {"format": "tile-emu-fabric-graph/1", "name": name, "fabric": fabric_name,
           "actors": [a[0] for a in actors],
           "edges": [{"from": e[0], "to": e[1], **({"initial": e[2]} if len(e) > 2 else {})} for e in edges],
           "inputs": [{"name": n, "to": list(to), "tokens": list(toks)} for n, to, toks in inputs],
           "outputs": [{"name": o[0], "from": o[1], **({"ready_every": o[2]} if len(o) > 2 else {})} for o in outputs]}
    if activity_defined:
        doc["activity_defined"] = list(activity_defined)
    return doc


def share_op(doc: dict, names) -> str:
    """Map the actors `names` of a `configured_fabric` document onto the first one's fabric.op,
    in place: that op also runs the others' schemas (its op_list extended, its list-valued
    hw_params joined with theirs), and the others' FUs and templates are gone.  Returns the
    shared op's reference.  The members should share an implementation family and port types;
    otherwise the description is still written and the verifier says what is wrong."""
    fus = {f["name"]: f for f in doc["fus"]}
    uses = {u["name"]: u for u in doc["mapping"]["uses"]}
    node = fus[names[0]]["nodes"][0]
    for n in names[1:]:
        other = fus[n]["nodes"][0]
        node["op_list"] += [s for s in other["op_list"] if s not in node["op_list"]]
        for k, v in other["hw_params"].items():
            mine = node["hw_params"].get(k)
            if isinstance(v, list) and isinstance(mine, list):
                node["hw_params"][k] = mine + [x for x in v if x not in mine]
        uses[n]["op"] = uses[names[0]]["op"]
    gone = set(names[1:])
    doc["fus"] = [f for f in doc["fus"] if f["name"] not in gone]
    doc["mapping"]["templates"] = {k: v for k, v in doc["mapping"]["templates"].items() if k not in gone}
    return uses[names[0]]["op"]


def temporal_pe(doc: dict, names, pe: str = "pe0", contexts: int | None = None, uses_contexts=None,
                **fields) -> str:
    """`share_op(doc, names)`, with the shared op's FU in a temporal PE `pe` (appended to the
    document's `pes`) of `contexts` resident InstructionContextRefs (default one per actor);
    actor i runs in context i (or uses_contexts[i]).  `fields`: the PE's initiation_interval,
    grant_policy or register_file.  Returns the shared op's reference."""
    ref = share_op(doc, names)
    ctx = list(range(len(names))) if uses_contexts is None else list(uses_contexts)
    for u in doc["mapping"]["uses"]:
        if u["name"] in names:
            u["context"] = ctx[list(names).index(u["name"])]
    doc.setdefault("pes", []).append({"name": pe, "kind": "temporal", "fus": [ref.split("/")[0]],
                                      "contexts": len(names) if contexts is None else contexts, **fields})
    return ref
