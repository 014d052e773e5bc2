"""Seed 000, "Exact Realization Projection" and "Edge Realization Boundary" (issue 19):

* "TechMapping owns one exact realization by selecting a capability template and binding those
  exact actors ... through ordered actor-to-operation port and software-to-FU-boundary
  correspondence"; Materialize(...) contains "ordered operand and result edges, real fanout,
  and exact FU boundary correspondence".
* "A Canonical Dataflow edge becomes realization-internal only when an explicit configured-FU
  relation, configured-memory relation, or temporal-PE register-file realization proves the
  connection ... selectors or available local storage do not constitute an implicit witness."
* "A temporal PE instantiates the declared state for each resident InstructionContextRef; a
  spatial PE uses its sole context."
"""
import copy
import json

import pytest

from fabric.config import Boundary, materialize
from fabric.errors import DiagnosticCode as C, FormatError
from fabric.io import dump, load_document, load_text
from fabric.view import check_fabric
from test_fabric_anchors import ADD, doc, fu_doc, jactor, op_node, use

ADD32 = jactor("arith.addi", ["i32", "i32"], ["i32"])


def two_fus(extra=None, edges=(), uses=None, templates=None):
    """FU p: add(in.0, in.1) -> out 0.  FU c: add(in.0, in.1) -> out 0.  Use a on p/add, b on c/add."""
    fus = [fu_doc([ADD(["in.0", "in.1"])], ["add.0"], [{"name": "t", "nodes": ["add"]}], name=n) for n in ("p", "c")]
    d = doc(fus, {"templates": templates or {"p": "t", "c": "t"},
                  "uses": uses or [use("a", "p/add", ADD32, [0, 1], [0]), use("b", "c/add", ADD32, [0, 1], [0])],
                  "edges": list(edges)})
    d.update(extra or {})
    return d


def diags(d):
    return [(x.code, x.path) for x in check_fabric(load_document(d)).diagnostics]


def edge(realization="internal", witness=None, src="a.0", dst="b.0"):
    e = {"from": src, "to": dst, "realization": realization}
    if witness is not None:
        e["witness"] = witness
    return e


MEMORY = {"memories": [{"name": "buf", "width": 32, "slots": 4, "writers": ["p.0"], "readers": ["c.0"]}]}
TEMPORAL = {"pes": [{"name": "pe0", "kind": "temporal", "fus": ["p", "c"], "contexts": 2,
                     "register_file": {"registers": 4, "width": 32}}]}


# --- software-to-FU-boundary correspondence ------------------------------------------------

def _branchy():
    """in.0 -> demux d -> add.0 / mul.0; add and mul -> mux m -> out 0; in.1 feeds both."""
    from test_fabric_anchors import MUL
    fu = fu_doc([{"kind": "demux", "name": "d", "operand": "in.0", "results": 2, "type": "bits<32>"},
                 {"kind": "demux", "name": "e", "operand": "in.1", "results": 2, "type": "bits<32>"},
                 ADD(["d.0", "e.0"]), MUL(["d.1", "e.1"]),
                 {"kind": "mux", "name": "m", "operands": ["add.0", "mul.0"], "type": "bits<32>"}],
                ["m.0"], [{"name": "add", "nodes": ["d", "e", "add", "m"], "selects": {"d": 0, "e": 0, "m": 0}},
                          {"name": "mul", "nodes": ["d", "e", "mul", "m"], "selects": {"d": 1, "e": 1, "m": 1}}])
    return fu


def test_the_boundary_correspondence_follows_the_selected_template_routes():
    f = load_document(doc([_branchy()], {"templates": {"fu": "add"},
                                         "uses": [use("s", "fu/add", ADD32, [0, 1], [0])]}))
    (b,) = materialize(f.mapping, f).boundaries
    assert b == Boundary("fu", "add", ((("s", 0),), (("s", 1),)), ((("s", 0),),), ())
    mul = jactor("arith.muli", ["i32", "i32"], ["i32"])
    g = load_document(doc([_branchy()], {"templates": {"fu": "mul"},
                                         "uses": [use("x", "fu/mul", mul, [0, 1], [0])]}))
    assert materialize(g.mapping, g).boundaries[0].outputs == ((("x", 0),),)


def test_materialize_keeps_port_correspondence_and_boundary_so_equal_topology_is_not_equal_function():
    # "topology alone does not establish function equality": the same FU and template with the
    # FU outputs bound to different software results are different configured functions
    fu = fu_doc([ADD(["in.0", "in.1"]), op_node("add2", "ScalarIntegerAddSub", ["arith.addi"],
                                                 {"integer_widths": [32], "pointer_formats": []},
                                                 ["in.1", "in.0"], ["bits<32>"] * 2, ["bits<32>"])],
                ["add.0", "add2.0"], [{"name": "t", "nodes": ["add", "add2"]}], outputs=("bits<32>", "bits<32>"))
    m1 = {"templates": {"fu": "t"}, "uses": [use("x", "fu/add", ADD32, [0, 1], [0]),
                                            use("y", "fu/add2", ADD32, [0, 1], [0])]}
    m2 = {"templates": {"fu": "t"}, "uses": [use("x", "fu/add2", ADD32, [0, 1], [0]),
                                            use("y", "fu/add", ADD32, [0, 1], [0])]}
    f1, f2 = load_document(doc([fu], m1)), load_document(doc([fu], m2))
    b1, b2 = materialize(f1.mapping, f1).boundaries[0], materialize(f2.mapping, f2).boundaries[0]
    assert b1.outputs == ((("x", 0),), (("y", 0),)) and b2.outputs == ((("y", 0),), (("x", 0),))
    assert b1.inputs == ((("x", 0), ("y", 1)), (("x", 1), ("y", 0)))
    assert materialize(f1.mapping, f1) != materialize(f2.mapping, f2)
    assert materialize(f1.mapping, f1).nodes[0][3:5] == ((0, 1), (0,))      # ordered op port correspondence


def test_an_external_edge_must_leave_where_an_fu_output_carries_the_value():
    # p yields nothing of a's add when its only output is wired to something else
    d = two_fus(edges=[edge("external")])
    assert diags(d) == []
    d["fus"][0]["nodes"].append(op_node("k", "ScalarIntegerAddSub", ["arith.addi"],
                                        {"integer_widths": [32], "pointer_formats": []}, ["add.0", "in.1"],
                                        ["bits<32>"] * 2, ["bits<32>"]))
    d["fus"][0]["yield"] = ["k.0"]
    d["fus"][0]["templates"] = [{"name": "t", "nodes": ["add", "k"]}]
    d["mapping"]["uses"].append(use("k", "p/k", ADD32, [0, 1], [0]))
    assert diags(d) == [(C.BoundaryMismatch, "mapping.edges[0]")]


def test_an_external_edge_cannot_enter_an_operand_the_template_wires_inside_the_fu():
    d = two_fus(edges=[edge("external", src="a.0", dst="k.0")])
    d["fus"][0]["nodes"].append(op_node("k", "ScalarIntegerAddSub", ["arith.addi"],
                                        {"integer_widths": [32], "pointer_formats": []}, ["add.0", "in.1"],
                                        ["bits<32>"] * 2, ["bits<32>"]))
    d["fus"][0]["templates"] = [{"name": "t", "nodes": ["add", "k"]}]
    d["fus"][0]["yield"] = ["add.0"]
    d["fus"][0]["outputs"] = ["bits<32>"]
    d["fus"][0]["nodes"][0]["operands"] = ["in.0", "in.1"]
    d["mapping"]["uses"].append(use("k", "p/k", ADD32, [0, 1], [0]))
    # k's operand 0 is add.0 by SSA wiring (and add.0 is broadcast to the FU output too)
    assert diags(d) == [(C.BoundaryMismatch, "mapping.edges[0]")]
    d["mapping"]["edges"] = [edge("internal", src="a.0", dst="k.0")]
    assert diags(d) == []


# --- witnesses ---------------------------------------------------------------------------------

def test_an_edge_between_two_fus_is_internal_only_with_an_explicit_witness():
    assert diags(two_fus(edges=[edge()])) == [(C.EdgeAbsorbedByColocation, "mapping.edges[0]")]
    # available local storage is no implicit witness: a memory both FUs reach, a register file they share
    assert diags(two_fus(MEMORY, [edge()])) == [(C.EdgeAbsorbedByColocation, "mapping.edges[0]")]
    assert diags(two_fus(TEMPORAL, [edge()])) == [(C.EdgeAbsorbedByColocation, "mapping.edges[0]")]


def test_a_configured_memory_relation_proves_an_edge_from_a_writer_output_to_a_reader_input():
    assert diags(two_fus(MEMORY, [edge(witness={"kind": "memory", "memory": "buf", "slot": 2})])) == []


@pytest.mark.parametrize("memory, witness, code, where", [
    ({}, {"kind": "memory", "memory": "nope", "slot": 0}, C.UnknownReference, "mapping.edges[0].witness.memory"),
    ({"writers": ["c.0"]}, None, C.InvalidWitness, "mapping.edges[0].witness"),       # not written from p's output
    ({"readers": ["c.1"]}, None, C.InvalidWitness, "mapping.edges[0].witness"),       # read into the wrong input
    ({"slots": 2}, None, C.InvalidWitness, "mapping.edges[0].witness.slot"),          # relation 2 does not exist
    ({"width": 16}, None, C.PortWidthInsufficient, "mapping.edges[0].witness"),       # narrower than i32
])
def test_a_memory_witness_that_does_not_prove_the_edge_is_one_typed_diagnostic(memory, witness, code, where):
    m = copy.deepcopy(MEMORY)
    m["memories"][0].update(memory)
    w = witness or {"kind": "memory", "memory": "buf", "slot": 2}
    assert diags(two_fus(m, [edge(witness=w)])) == [(code, where)]


def test_one_memory_relation_holds_one_producer_value():
    uses = [use("a", "p/add", ADD32, [0, 1], [0]), use("b", "c/add", ADD32, [0, 1], [0]),
            use("b2", "c/add", ADD32, [0, 1], [0])]
    w = {"kind": "memory", "memory": "buf", "slot": 1}
    same = two_fus(MEMORY, [edge(witness=w), edge(witness=w, dst="b2.0")], uses)
    assert diags(same) == []                          # equal repeated claims collapse
    m = copy.deepcopy(MEMORY)
    m["memories"][0]["writers"] = ["p.0", "c.0"]
    m["memories"][0]["readers"] = ["c.0", "p.0"]
    other = two_fus(m, [edge(witness=w), edge(witness=w, src="b.0", dst="a.0")])
    assert diags(other) == [(C.ConflictingAssignment, "mapping.edges[1]")]


def test_a_temporal_pe_register_file_proves_an_edge_between_its_fus():
    assert diags(two_fus(TEMPORAL, [edge(witness={"kind": "register_file", "pe": "pe0", "register": 3})])) == []


@pytest.mark.parametrize("pes, witness, code, where", [
    (TEMPORAL["pes"], {"pe": "pe9"}, C.UnknownReference, "mapping.edges[0].witness.pe"),
    ([{"name": "pe0", "kind": "spatial", "fus": ["p", "c"]}], {}, C.InvalidWitness, "mapping.edges[0].witness.pe"),
    ([dict(TEMPORAL["pes"][0], fus=["p"]), {"name": "pe1", "kind": "spatial", "fus": ["c"]}], {},
     C.InvalidWitness, "mapping.edges[0].witness.pe"),                                # c is outside the temporal PE
    ([dict(TEMPORAL["pes"][0], register_file={"registers": 3, "width": 32})], {},
     C.InvalidWitness, "mapping.edges[0].witness.register"),
    ([dict(TEMPORAL["pes"][0], register_file={"registers": 4, "width": 8})], {},
     C.PortWidthInsufficient, "mapping.edges[0].witness"),
])
def test_a_register_file_witness_that_does_not_prove_the_edge_is_one_typed_diagnostic(pes, witness, code, where):
    w = {"kind": "register_file", "pe": "pe0", "register": 3, **witness}
    assert diags(two_fus({"pes": pes}, [edge(witness=w)])) == [(code, where)]


def test_one_register_holds_one_producer_value():
    w = {"kind": "register_file", "pe": "pe0", "register": 0}
    d = two_fus(TEMPORAL, [edge(witness=w), edge(witness=w, src="b.0", dst="a.1")])
    assert diags(d) == [(C.ConflictingAssignment, "mapping.edges[1]")]


# --- instruction contexts ----------------------------------------------------------------------

def _contexts(ctx_a, ctx_b, pes=TEMPORAL):
    cmp = lambda p: jactor("arith.cmpi", ["i32", "i32"], ["i1"], predicate=p)   # noqa: E731
    node = op_node("cmp", "ScalarIntegerCompareMinMax", ["arith.cmpi"],
                   {"operand_widths": [32], "comparison_predicates": ["eq", "slt"]}, ["in.0", "in.1"],
                   ["bits<32>"] * 2, ["bits<1>"])
    fus = [fu_doc([node], ["cmp.0"], [{"name": "t", "nodes": ["cmp"]}], outputs=("bits<1>",), name="p"),
           fu_doc([ADD(["in.0", "in.1"])], ["add.0"], [{"name": "t", "nodes": ["add"]}], name="c")]
    ua, ub = use("x", "p/cmp", cmp("eq"), [0, 1], [0]), use("y", "p/cmp", cmp("slt"), [0, 1], [0])
    for u, c in ((ua, ctx_a), (ub, ctx_b)):
        if c is not None:
            u["context"] = c
    d = doc(fus, {"templates": {"p": "t", "c": "t"}, "uses": [ua, ub]})
    d.update(pes)
    return d


def test_a_temporal_pe_configures_each_resident_context_on_its_own():
    rep = check_fabric(load_document(_contexts(0, 1)))
    assert rep.ok, rep.diagnostics
    cfg = rep.projection.configurations
    assert set(cfg) >= {"p/cmp@0", "p/cmp@1", "c/add@0", "c/add@1"}
    assert cfg["p/cmp@0"].semantic_configuration != cfg["p/cmp@1"].semantic_configuration
    assert str(cfg["c/add@0"]) == "Disabled"


def test_one_context_of_one_resource_holds_one_configuration():
    assert diags(_contexts(1, 1)) == [(C.ConflictingAssignment, "mapping.uses[1]")]
    assert diags(_contexts(None, 0)) == [(C.ConflictingAssignment, "mapping.uses[1]")]   # absent = context 0


def test_a_context_beyond_the_resident_ones_or_on_a_spatial_pe_is_rejected():
    assert diags(_contexts(0, 2)) == [(C.InvalidContext, "mapping.uses[1].context")]
    spatial = {"pes": [{"name": "pe0", "kind": "spatial", "fus": ["p", "c"]}]}
    assert diags(_contexts(0, 1, spatial)) == [(C.InvalidContext, "mapping.uses[1].context")]
    assert diags(_contexts(0, 1, {})) == [(C.InvalidContext, "mapping.uses[1].context")]   # in no PE: sole context
    # a spatial PE (or no PE): two uses of one resource in its sole context must agree
    assert diags(_contexts(None, None, spatial)) == [(C.ConflictingAssignment, "mapping.uses[1]")]


@pytest.mark.parametrize("pes, code, where", [
    ([{"name": "a", "kind": "temporal", "fus": ["p"]}, {"name": "b", "kind": "temporal", "fus": ["p"]}],
     C.DuplicateDeclaration, "pes[1].fus[0]"),
    ([{"name": "a", "kind": "spatial", "fus": ["nope"]}], C.UnknownReference, "pes[0].fus[0]"),
    ([{"name": "a", "kind": "spatial", "fus": ["p"], "contexts": 2}], C.InvalidContext, "pes[0]"),
    ([{"name": "a", "kind": "spatial", "fus": ["p"]}, {"name": "a", "kind": "spatial", "fus": ["c"]}],
     C.DuplicateName, "pes[1].name"),
])
def test_pe_declarations_are_checked(pes, code, where):
    assert (code, where) in diags(two_fus({"pes": pes}))


def test_memory_declarations_name_existing_fu_ports():
    m = copy.deepcopy(MEMORY)
    m["memories"][0]["writers"] = ["p.3"]
    assert diags(two_fus(m)) == [(C.UnknownReference, "memories[0].writers[0]")]


# --- the format ------------------------------------------------------------------------------------

def test_pes_memories_witnesses_and_contexts_print_canonically_and_round_trip():
    d = two_fus({**MEMORY, **TEMPORAL}, [edge(witness={"kind": "memory", "memory": "buf", "slot": 0}),
                                          edge(witness={"kind": "register_file", "pe": "pe0", "register": 1},
                                               dst="b.1")])
    d["mapping"]["uses"][0]["context"] = 1
    text = dump(load_document(d))
    assert dump(load_text(text)) == text
    assert load_text(text) == load_document(d)


@pytest.mark.parametrize("edit, where, why", [
    (lambda d: d["mapping"]["edges"].append(edge("external", {"kind": "fu"})), "edges[0].witness", "only an internal"),
    (lambda d: d["mapping"]["edges"].append(edge(witness={"kind": "wire"})), "witness.kind", "not a witness kind"),
    (lambda d: d["mapping"]["edges"].append(edge(witness={"kind": "memory", "memory": "buf"})), "witness",
     "missing required field 'slot'"),
    (lambda d: d.update(pes=[{"name": "x", "kind": "systolic", "fus": []}]), "pes[0].kind", "not a PE kind"),
    (lambda d: d["mapping"]["uses"][0].update(context=-1), "uses[0].context", "outside"),
    (lambda d: d.update(memories=[dict(MEMORY["memories"][0], writers=["p"])]), "writers[0]", "FU port reference"),
])
def test_malformed_realization_records_are_load_errors(edit, where, why):
    d = two_fus()
    edit(d)
    with pytest.raises(FormatError) as e:
        load_text(json.dumps(d))
    assert where in str(e.value) and why in str(e.value)
