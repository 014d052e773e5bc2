"""Seed 000, Configuration Handoff: "No generic refinement value type exists.  A concrete Fabric
resource that exposes a non-singleton refinement domain must own its exact typed value codec,
legal set, and semantic-preservation proof ... the configured-hardware projection ... must not
treat opaque bytes as a value"; SpatialMapping "may select only closed, Fabric-declared physical
refinements such as a semantic-preserving pipeline, bypass, latency, power, or QoR choice"."""
import json
import struct

import pytest

from fabric.config import derive_fields, materialize
from fabric.errors import CodecError, DiagnosticCode as C, FormatError
from fabric.io import dump, load_document, load_text
from fabric.refinement import REFINEMENTS, decode_refinement, encode_refinement
from fabric.view import check_fabric
from test_fabric_anchors import doc, fu_doc, jactor, op_node, use


def golden(kind: str, body: int) -> bytes:
    """The codec written out by hand: domain, NUL, u32be(1), u32be(0), frame(kind), u32be(value)."""
    return (b"loom.fabric.physical-refinement\x00" + struct.pack(">II", 1, 0)
            + struct.pack(">I", len(kind)) + kind.encode() + struct.pack(">I", body))


@pytest.mark.parametrize("kind, value, body", [
    ("pipeline_depth", 1, 1), ("pipeline_depth", 8, 8), ("pipeline_depth", 2 ** 32 - 1, 2 ** 32 - 1),
    ("result_bypass", False, 0), ("result_bypass", True, 1),
    ("power_mode", "nominal", 1), ("power_mode", "low_power", 2),
])
def test_each_refinement_kind_owns_an_exact_canonical_codec(kind, value, body):
    data = encode_refinement(kind, value)
    assert data == golden(kind, body)
    assert decode_refinement(data) == (kind, value)
    for cut in range(len(data)):                      # truncation at any byte
        with pytest.raises(CodecError):
            decode_refinement(data[:cut])
    with pytest.raises(CodecError):
        decode_refinement(data + b"\x00")             # trailing bytes


@pytest.mark.parametrize("data", [
    golden("pipeline_depth", 0),                      # a cycle count is >= 1
    golden("result_bypass", 2),                       # a boolean is 0 or 1
    golden("power_mode", 9),                          # no such power mode
    golden("opaque_bytes", 1),                        # a kind without a typed owner
    golden("pipeline_depth", 4).replace(b"physical", b"phusical"),
])
def test_values_outside_their_type_and_kinds_without_an_owner_do_not_decode(data):
    with pytest.raises(CodecError):
        decode_refinement(data)


def test_encoding_checks_the_typed_value():
    for kind, bad in (("pipeline_depth", 0), ("pipeline_depth", True), ("result_bypass", 1), ("power_mode", "turbo")):
        with pytest.raises(CodecError):
            encode_refinement(kind, bad)


def _fabric(family="ScalarSignedIntegerDivRem", refinement=None, assignments=(), contract="one_cycle_elastic"):
    refinement = refinement or {"kind": "pipeline_depth", "values": [4, 8]}
    if family == "LoopCarry":
        node = op_node("r", "LoopCarry", ["dataflow.carry"], {"max_payload_bits": 32}, ["in.0", "in.1", "in.1"],
                       ["bits<1>", "bits<32>", "bits<32>"], ["bits<32>"], [{"physical_refinement": refinement}])
        node["constraints"][0] = {"resource_contract": "elastic_transparent"}
        fu = fu_doc([node], ["r.0"], [{"name": "t", "nodes": ["r"]}], inputs=("bits<1>", "bits<32>"))
        return doc([fu])
    node = op_node("r", family, ["arith.divsi", "arith.remsi"], {"integer_widths": [16, 32]}, ["in.0", "in.1"],
                   ["bits<32>"] * 2, ["bits<32>"], [{"physical_refinement": refinement}])
    fu = fu_doc([node], ["r.0"], [{"name": "t", "nodes": ["r"]}])
    q16 = jactor("arith.divsi", ["i16", "i16"], ["i16"])
    return doc([fu], {"templates": {"fu": "t"}, "uses": [use("a", "fu/r", q16, [0, 1], [0])],
                      "physical_refinements": list(assignments)})


def codes(d):
    return [(x.code, x.path.split(".")[-1]) for x in check_fabric(load_document(d)).diagnostics]


def test_a_pipeline_refinement_of_an_elastic_stateless_resource_is_admitted_as_a_typed_value():
    d = _fabric(assignments=[{"op": "fu/r", "kind": "pipeline_depth", "value": 8}])
    rep = check_fabric(load_document(d))
    assert rep.ok, rep.diagnostics
    cfg = rep.projection.configurations["fu/r"]
    assert cfg.physical_refinements == (("pipeline_depth", 8),)
    assert encode_refinement(*cfg.physical_refinements[0]) == golden("pipeline_depth", 8)


def test_a_declared_semantic_preserving_refinement_leaves_the_software_function_unchanged():
    plain = load_document(_fabric())
    for a in ({"op": "fu/r", "kind": "pipeline_depth", "value": 4}, {"op": "fu/r", "kind": "pipeline_depth", "value": 8}):
        refined = load_document(_fabric(assignments=[a]))
        assert materialize(refined.mapping, refined) == materialize(plain.mapping, plain)
        p0, _ = derive_fields(plain, plain.mapping)
        p1, _ = derive_fields(refined, refined.mapping)
        assert p0.configurations["fu/r"].semantic_configuration == p1.configurations["fu/r"].semantic_configuration


def test_the_legal_set_is_the_declared_domain():
    out = _fabric(assignments=[{"op": "fu/r", "kind": "pipeline_depth", "value": 5}])
    assert codes(out) == [(C.UnknownReference, "physical_refinements[0]")]
    other = _fabric(assignments=[{"op": "fu/r", "kind": "power_mode", "value": "low_power"}])
    assert codes(other) == [(C.UnknownReference, "physical_refinements[0]")]    # not declared by fu/r
    single = _fabric(refinement={"kind": "pipeline_depth", "values": [4]})
    assert codes(single) == [(C.OrphanDeclaration, "constraints[1]")]           # a singleton is no domain


def test_equal_refinement_assignments_collapse_and_unequal_ones_conflict():
    a4, a8 = ({"op": "fu/r", "kind": "pipeline_depth", "value": v} for v in (4, 8))
    assert codes(_fabric(assignments=[a4, a4])) == []
    assert codes(_fabric(assignments=[a4, a8])) == [(C.ConflictingAssignment, "physical_refinements[1]")]


def test_a_refinement_whose_preservation_proof_fails_is_invalid_fabric():
    # the carry's exact elastic-transparent contract is its one-cycle recurrence: no retiming
    assert codes(_fabric("LoopCarry")) == [(C.UnprovenRefinement, "constraints[1]")]
    assert REFINEMENTS["pipeline_depth"].proof(load_document(_fabric("LoopCarry")).all_ops()[0]) is not None
    # a power mode never changes a result or its timing: it is admitted on the carry too
    power = {"kind": "power_mode", "values": ["nominal", "low_power"]}
    assert codes(_fabric("LoopCarry", power)) == []


def test_a_bypass_is_a_boolean_domain_of_the_one_cycle_result_slot():
    bypass = {"kind": "result_bypass", "values": [False, True]}
    d = _fabric(refinement=bypass, assignments=[{"op": "fu/r", "kind": "result_bypass", "value": True}])
    rep = check_fabric(load_document(d))
    assert rep.ok and rep.projection.configurations["fu/r"].physical_refinements == (("result_bypass", True),)
    assert codes(_fabric("LoopCarry", bypass)) == [(C.UnprovenRefinement, "constraints[1]")]


@pytest.mark.parametrize("edit, where", [
    (lambda d: d["fus"][0]["nodes"][0]["constraints"][1]["physical_refinement"].update(values=[4, "x"]), "values[1]"),
    (lambda d: d["fus"][0]["nodes"][0]["constraints"][1]["physical_refinement"].update(values=[True, 4]), "values[0]"),
    (lambda d: d["mapping"]["physical_refinements"].append({"op": "fu/r", "kind": "pipeline_depth", "value": True}),
     "physical_refinements[0].value"),
    (lambda d: d["mapping"]["physical_refinements"].append({"op": "fu/r", "kind": "result_bypass", "value": 1}),
     "physical_refinements[0].value"),
])
def test_a_value_of_the_wrong_type_is_a_load_error(edit, where):
    d = _fabric()
    edit(d)
    with pytest.raises(FormatError) as e:
        load_text(json.dumps(d))
    assert where in str(e.value)


def test_a_kind_without_a_typed_owner_never_reaches_the_projection():
    d = _fabric(assignments=[{"op": "fu/r", "kind": "qor_bits", "value": "0xff"}])
    assert codes(d) == [(C.NonemptyPhysicalRefinement, "physical_refinements[0]")]


def test_typed_refinements_print_canonically():
    d = _fabric(refinement={"kind": "result_bypass", "values": [True, False]},
                assignments=[{"op": "fu/r", "kind": "result_bypass", "value": False}])
    text = dump(load_document(d))
    assert '"values": [true, false]' in text and dump(load_text(text)) == text
