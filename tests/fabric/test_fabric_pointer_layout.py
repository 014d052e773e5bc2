"""Seed 000, Loop Control Resource Contracts: "LoopCarry, LoopInvariant, and LoopGate are
bit-preserving token-plane resources.  Their concrete port capacities may admit ... scalar
!llvm.ptr<AS> actor types whose semantic payload fits the selected same-kind physical path ...
A pointer payload also requires the exact module-derived stable-integral PointerLayout(AS) and
port capacity for all representation_bits; the token resource does not acquire pointer
arithmetic or dereference capability merely by transporting those bits."  And: "Endpoint
capacity, representation_bits, address_bits, and selected index width remain independent facts
and must never be inferred from one another." """
import json

import pytest

from fabric.capability import Rejection, supports
from fabric.errors import DiagnosticCode as C, FormatError
from fabric.io import dump, load_document, load_text
from fabric.schemas import make_actor
from fabric.types import I1, PointerLayout, PointerType, TaggedType, bits, payload_bits
from fabric.view import check_fabric
from fabric_fixtures import make_op
from test_fabric_anchors import doc, fu_doc, jactor, op_node, use

LAYOUT = PointerLayout(1, 64, 48)


def carry(width=64, cap=64, tag=None):
    port = f"bits<{width}>" if tag is None else f"bits_tag<{width},{tag}>"
    return make_op("LoopCarry", ["dataflow.carry"], {"max_payload_bits": cap}, ["bits<1>", port, port], [port])


def ptr(layout=LAYOUT, space=1):
    return PointerType(space, layout)


def carry_actor(t):
    return make_actor("dataflow.carry", [I1, t, t], [t])


def test_a_pointer_payload_with_its_module_layout_is_carried_as_all_representation_bits():
    assert payload_bits(ptr()) == 64
    assert supports(carry(), carry_actor(ptr())).accepted


def test_without_the_modules_pointer_layout_the_payload_is_not_admitted():
    v = supports(carry(), carry_actor(ptr(None)))
    assert v.rejection is Rejection.ShapeNotAdmitted and "PointerLayout(1)" in v.message


def test_the_port_and_the_capacity_must_carry_all_representation_bits_not_the_address_bits():
    # a 48-bit path would carry the address bits but not the 64-bit representation
    assert supports(carry(width=48), carry_actor(ptr())).rejection is Rejection.PortWidthInsufficient
    assert supports(carry(cap=48), carry_actor(ptr())).rejection is Rejection.CapacityExceeded
    narrow = PointerLayout(1, 32, 32)
    assert supports(carry(width=32, cap=32), carry_actor(ptr(narrow))).accepted


def test_invariant_and_gate_carry_pointers_and_a_tagged_pointer_uses_a_tagged_path():
    inv = make_op("LoopInvariant", ["dataflow.invariant"], {"max_payload_bits": 64}, ["bits<1>", "bits<64>"],
                  ["bits<64>"])
    assert supports(inv, make_actor("dataflow.invariant", [I1, ptr()], [ptr()])).accepted
    gate = make_op("LoopGate", ["dataflow.gate"], {"max_payload_bits": 64}, ["bits<1>", "bits<64>"],
                   ["bits<1>", "bits<64>"])
    assert supports(gate, make_actor("dataflow.gate", [I1, ptr()], [I1, ptr()])).accepted
    tagged = TaggedType(ptr(), 2)
    assert supports(carry(tag=2), carry_actor(tagged)).accepted
    assert supports(carry(), carry_actor(tagged)).rejection is Rejection.PortKindMismatch


def test_routed_tokens_and_index_payloads_stay_fail_closed():
    sync = make_op("TokenSync", ["dataflow.sync"], {"max_payload_bits": 64, "max_fan": 1}, ["bits<64>"], ["bits<64>"])
    assert supports(sync, make_actor("dataflow.sync", [ptr()], [ptr()])).rejection is Rejection.ShapeNotAdmitted
    from fabric.types import IndexType
    assert supports(carry(), carry_actor(IndexType())).rejection is Rejection.ActorInvalid   # not a token payload


def test_the_layout_is_module_metadata_not_part_of_the_type_identity():
    assert ptr() == PointerType(1) and hash(ptr()) == hash(PointerType(1)) and str(ptr()) == "ptr<1>"
    assert carry_actor(ptr()).canonical_bytes() == carry_actor(PointerType(1)).canonical_bytes()


# --- the module's layouts in a mapping ---------------------------------------------------------

def _fabric(layouts, width=64):
    node = op_node("c", "LoopCarry", ["dataflow.carry"], {"max_payload_bits": 64}, ["in.0", "in.1", "in.1"],
                   ["bits<1>", f"bits<{width}>", f"bits<{width}>"], [f"bits<{width}>"])
    node["constraints"] = [{"resource_contract": "elastic_transparent"}]
    fu = fu_doc([node], ["c.0"], [{"name": "t", "nodes": ["c"]}], inputs=("bits<1>", f"bits<{width}>"),
                outputs=(f"bits<{width}>",))
    a = jactor("dataflow.carry", ["i1", "ptr<1>", "ptr<1>"], ["ptr<1>"])
    return doc([fu], {"templates": {"fu": "t"}, "uses": [use("p", "fu/c", a, [0, 1, 2], [0])],
                      "pointer_layouts": layouts})


L64 = {"address_space": 1, "representation_bits": 64, "address_bits": 48, "kind": "stable_integral"}


def test_a_mapping_binds_each_pointer_to_its_modules_layout():
    f = load_document(_fabric([L64]))
    assert f.mapping.uses[0].actor.inputs[1].layout == LAYOUT
    assert check_fabric(f).ok


def test_a_pointer_whose_space_has_no_layout_is_an_unsupported_actor():
    rep = check_fabric(load_document(_fabric([dict(L64, address_space=0)])))
    assert [d.code for d in rep.diagnostics] == [C.UnsupportedActor]
    assert "PointerLayout(1)" in rep.diagnostics[0].message


def test_layouts_are_checked_once_per_address_space_and_stable_integral():
    dup = check_fabric(load_document(_fabric([L64, L64])))
    assert [(d.code, d.path) for d in dup.diagnostics] == [(C.DuplicateDeclaration, "mapping.pointer_layouts[1]")]
    bad = check_fabric(load_document(_fabric([dict(L64, address_bits=80)])))
    assert [d.code for d in bad.diagnostics] == [C.InvalidPointerLayout]
    with pytest.raises(FormatError, match="stable_integral"):
        load_text(json.dumps(_fabric([dict(L64, kind="segmented")])))


def test_pointer_layouts_print_canonically_and_round_trip():
    f = load_document(_fabric([L64]))
    text = dump(f)
    assert '"pointer_layouts"' in text and dump(load_text(text)) == text
    assert load_text(text).mapping.uses[0].actor.results[0].layout == LAYOUT


def test_bits_helper_is_only_transport():
    # a 64-bit port is transport capacity: it does not say the value is a pointer
    assert bits(64).kind == "bits"
