"""FU topology validation and configuration-handoff rules beyond the anchor scenarios."""
import copy

from fabric.config import derive_fields, import_mapping
from fabric.errors import DiagnosticCode as C, FabricError
from fabric.io import load_document
from fabric.topology import check_fu
from fabric.view import check_fabric
from test_fabric_anchors import ADD, MUL, doc, fu_doc, jactor, op_node, use

import pytest


def codes(diags):
    return [d.code for d in diags]


def _routed(mux_type="bits<32>"):
    return fu_doc([ADD(["in.0", "in.1"]),
                   {"kind": "mux", "name": "m", "operands": ["add.0", "in.2"], "type": mux_type},
                   op_node("add2", "ScalarIntegerAddSub", ["arith.addi"], {"integer_widths": [16, 32], "pointer_formats": []},
                           ["m.0", "in.1"], ["bits<32>"] * 2, ["bits<32>"])],
                  ["add2.0"], [{"name": "t", "nodes": ["add", "m", "add2"], "selects": {"m": 0}}],
                  inputs=("bits<32>", "bits<32>", "bits<32>"))


def test_internal_edge_through_a_selected_mux_and_every_segment_wide_enough():
    m = {"templates": {"fu": "t"},
         "uses": [use("a", "fu/add", jactor("arith.addi", ["i32", "i32"], ["i32"]), [0, 1], [0]),
                  use("b", "fu/add2", jactor("arith.addi", ["i32", "i32"], ["i32"]), [0, 1], [0])],
         "edges": [{"from": "a.0", "to": "b.0", "realization": "internal"}]}
    assert check_fabric(load_document(doc([_routed()], m))).ok
    narrow = check_fabric(load_document(doc([_routed("bits<16>")], m)))
    assert codes(narrow.diagnostics) == [C.PortWidthInsufficient]


def test_template_rules():
    fu = fu_doc([{"kind": "demux", "name": "d", "operand": "in.0", "results": 2, "type": "bits<32>"},
                 ADD(["d.0", "in.1"]), MUL(["d.1", "in.1"])], ["add.0"], [])
    assert codes(check_fu(load_document(doc([fu])).fus[0])) == [C.IncompleteRelation]  # no template at all
    cases = [
        ({"name": "t", "nodes": ["add", "d", "mul"], "selects": {"d": 2}}, C.IncoherentRoute),       # no route 2
        ({"name": "t", "nodes": ["add", "d", "mul"]}, C.IncoherentRoute),                           # unselected
        ({"name": "t", "nodes": ["add"], "selects": {"d": 0}}, C.IncoherentRoute),                   # irrelevant
        ({"name": "t", "nodes": ["add", "ghost"]}, C.UnknownReference),
    ]
    for t, code in cases:
        f = copy.deepcopy(fu)
        f["templates"] = [t]
        assert code in codes(check_fu(load_document(doc([f])).fus[0])), t
    f = copy.deepcopy(fu)
    f["templates"] = [{"name": "t", "nodes": ["d", "add", "mul"], "selects": {"d": 0}}]
    # in.1 is broadcast to both active ops (legal); mul consumes d.1, which is not delivered
    assert codes(check_fu(load_document(doc([f])).fus[0])) == [C.IncoherentRoute]
    f["templates"] = [{"name": "a", "nodes": ["d", "add"], "selects": {"d": 0}},
                      {"name": "b", "nodes": ["add", "d"], "selects": {"d": 0}}]
    assert C.DuplicateDeclaration in codes(check_fu(load_document(doc([f])).fus[0]))


def test_wiring_rules():
    fu = fu_doc([ADD(["in.0", "nope.0"])], ["add.0"], [{"name": "t", "nodes": ["add"]}])
    assert codes(check_fu(load_document(doc([fu])).fus[0])) == [C.UnknownValue]
    fu = fu_doc([ADD(["in.0", "in.1"])], ["add.0", "add.0"], [{"name": "t", "nodes": ["add"]}])
    assert codes(check_fu(load_document(doc([fu])).fus[0])) == [C.IncompleteRelation]
    fu = fu_doc([ADD(["in.0", "in.1"])], ["add.0"], [{"name": "t", "nodes": ["add"]}],
                inputs=("bits_tag<32,2>", "bits<32>"))
    assert codes(check_fu(load_document(doc([fu])).fus[0])) == [C.PortKindMismatch]


def _sync_fabric(constraints, operands):
    node = op_node("s", "TokenSync", ["dataflow.sync"], {"max_payload_bits": 32, "max_fan": 2}, ["in.0", "in.1"],
                   ["bits<32>"] * 2, ["bits<32>"] * 2, constraints)
    fu = fu_doc([node], ["s.0", "s.1"], [{"name": "t", "nodes": ["s"]}], outputs=("bits<32>", "bits<32>"))
    m = {"templates": {"fu": "t"},
         "uses": [use("u", "fu/s", jactor("dataflow.sync", ["i32"], ["i32"]), operands, operands)]}
    return load_document(doc([fu], m))


def test_unbound_lane_needs_an_explicit_inactivity_guarantee():
    bare = _sync_fabric([], [0])
    assert codes(check_fabric(bare).diagnostics) == [C.ImplicitTokenSink, C.ImplicitTokenSink]
    guaranteed = _sync_fabric([{"inactive_ports": {"inputs": [1], "results": [1]}}], [0])
    assert check_fabric(guaranteed).ok


def test_strict_import_raises_with_every_diagnostic():
    f = _sync_fabric([], [0])
    with pytest.raises(FabricError) as e:
        import_mapping(f, f.mapping)
    assert len(e.value.diagnostics) == 2
    ok = _sync_fabric([{"inactive_ports": {"inputs": [1], "results": [1]}}], [0])
    proj = import_mapping(ok, ok.mapping)
    key = proj.configurations["fu/s"].semantic_configuration
    assert key.endswith(b"\x00\x00\x00\x01" + b"\x00" * 8)  # active lane set {0}: u32be(1) u64be(0)


def test_uses_must_name_existing_ops_and_active_templates():
    f = _sync_fabric([{"inactive_ports": {"inputs": [1], "results": [1]}}], [0])
    bad = load_document(doc([fu_doc([ADD(["in.0", "in.1"])], ["add.0"], [{"name": "t", "nodes": ["add"]}])],
                            {"templates": {"fu": "zzz"}, "uses": [use("u", "fu/ghost", jactor(
                                "arith.addi", ["i32", "i32"], ["i32"]), [0, 1], [0])]}))
    assert codes(derive_fields(bad, bad.mapping)[1]) == [C.UnknownReference, C.UnknownReference]
    assert derive_fields(f, f.mapping)[1] == []
