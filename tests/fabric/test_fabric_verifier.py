"""The verifier rejects each class with one typed diagnostic at the offending element's path."""
import dataclasses

import pytest

from fabric.capability import InactivePortGuarantee, ResourceContractConstraint
from fabric.errors import DiagnosticCode as C
from fabric.verify import verify_op
from fabric_fixtures import make_op, profile

I32x2 = ["bits<32>", "bits<32>"]


def codes(op):
    return [d.code for d in verify_op(op)]


def paths(op):
    return [d.path for d in verify_op(op)]


def addsub(**kw):
    base = dict(family="ScalarIntegerAddSub", op_list=["arith.addi", "arith.subi"],
                params={"integer_widths": [8, 32], "pointer_formats": []}, ins=I32x2, outs=["bits<32>"])
    base.update(kw)
    return make_op(base["family"], base["op_list"], base["params"], base["ins"], base["outs"],
                   base.get("constraints"))


def test_valid_op_has_no_diagnostics():
    assert verify_op(addsub()) == []


def test_missing_and_unknown_family():
    assert codes(dataclasses.replace(addsub(), family=None)) == [C.MissingImplementationFamily]
    assert codes(dataclasses.replace(addsub(), family="ScalarIntegerAlu")) == [C.UnknownImplementationFamily]


def test_op_list_member_outside_family_unknown_schema_and_duplicates():
    op = addsub(op_list=["arith.addi", "arith.muli", "arith.frobnicate", "arith.addi"])
    assert codes(op) == [C.OpListMemberOutsideFamily, C.UnknownOperationSchema, C.DuplicateDeclaration]
    assert paths(op) == ["op.op_list[1]", "op.op_list[2]", "op.op_list[3]"]
    assert codes(addsub(op_list=[])) == [C.IncompleteRelation]


def test_duplicate_parameter_declaration():
    op = addsub(params={"integer_widths": [8, 32, 8], "pointer_formats": []})
    assert codes(op) == [C.DuplicateDeclaration] and paths(op) == ["op.hw_params.integer_widths[2]"]


def test_missing_parameter_field_is_an_incomplete_relation():
    op = addsub(params={"integer_widths": [8]})
    assert codes(op) == [C.IncompleteRelation] and paths(op) == ["op.hw_params.pointer_formats"]


def test_orphan_parameter_no_admitted_actor_can_use():
    op = addsub(params={"integer_widths": [8, 64], "pointer_formats": []})  # 64 fits no bits<32> port
    assert codes(op) == [C.OrphanDeclaration] and paths(op) == ["op.hw_params.integer_widths[1]"]


@pytest.mark.parametrize("family, op_list, params, why", [
    ("ScalarIntegerCompareMinMax", ["arith.minsi"], {"operand_widths": [32], "comparison_predicates": ["eq"]},
     "comparison_predicates"),
    ("ScalarIntegerCast", ["arith.extsi"], {"width_pairs": [[8, 32]], "resolved_index_widths": [32]},
     "resolved_index_widths"),
    ("ScalarIntegerCast", ["arith.extsi"], {"width_pairs": [[32, 8]], "resolved_index_widths": []}, "width_pairs[0]"),
    ("ScalarFloatAddSub", ["arith.addf"],
     {"formats": ["f32"], "behavior": profile(nan_behaviors=["ieee", "number_preferred"])}, "nan_behaviors"),
    ("ScalarFloatSign", ["arith.negf"],
     {"formats": ["f32"], "behavior": profile(rounding_modes=["to_nearest_even", "upward"])}, "rounding_modes"),
    ("ScalarFloatCompareMinMax", ["arith.minnumf"],
     {"formats": ["f32"], "comparison_predicates": [], "behavior": profile(nan_behaviors=["ieee", "number_preferred"])},
     "nan_behaviors"),
])
def test_parameter_domain_no_listed_schema_interprets(family, op_list, params, why):
    ins = ["bits<32>"] * (1 if family in ("ScalarIntegerCast", "ScalarFloatSign") else 2)
    op = make_op(family, op_list, params, ins, ["bits<32>"])
    assert C.UninterpretedParameterDomain in codes(op)
    assert any(p.endswith(why) for d, p in zip(codes(op), paths(op)) if d is C.UninterpretedParameterDomain)


def test_incomplete_relation_between_family_ports_and_constraints():
    assert codes(addsub(ins=["bits<32>"])) == [C.IncompleteRelation]                       # role inventory
    assert codes(addsub(constraints=[])) == [C.IncompleteRelation]                          # no contract
    wrong = [ResourceContractConstraint("elastic_transparent")]
    assert codes(addsub(constraints=wrong)) == [C.IncompleteRelation]
    twice = [ResourceContractConstraint("one_cycle_elastic")] * 2
    assert codes(addsub(constraints=twice)) == [C.DuplicateDeclaration]
    guarantee = [ResourceContractConstraint("one_cycle_elastic"), InactivePortGuarantee((0,), ())]
    assert codes(addsub(constraints=guarantee)) == [C.UninterpretedParameterDomain]  # add/sub guarantees nothing


def test_bits_and_bits_tag_mixing():
    assert codes(addsub(ins=["bits_tag<32,4>", "bits<32>"])) == [C.PortKindMismatch]
    carry = make_op("LoopCarry", ["dataflow.carry"], {"max_payload_bits": 32},
                    ["bits<1>", "bits_tag<32,2>", "bits<32>"], ["bits_tag<32,2>"])
    assert codes(carry) == [C.PortKindMismatch]
    tagged_cond = make_op("LoopCarry", ["dataflow.carry"], {"max_payload_bits": 32},
                          ["bits_tag<1,2>", "bits_tag<32,2>", "bits_tag<32,2>"], ["bits_tag<32,2>"])
    assert codes(tagged_cond) == [C.PortKindMismatch]
    ok = make_op("LoopCarry", ["dataflow.carry"], {"max_payload_bits": 32},
                 ["bits<1>", "bits_tag<32,2>", "bits_tag<32,2>"], ["bits_tag<32,2>"])
    assert codes(ok) == []


def test_float_behavior_profile_rules():
    def fsign(**over):
        return make_op("ScalarFloatSign", ["arith.negf"], {"formats": ["f32"], "behavior": profile(**over)},
                       ["bits<32>"], ["bits<32>"])
    assert codes(fsign(subnormal_behaviors=["flush"])) == [C.InvalidFloatBehaviorProfile]
    assert codes(fsign(signed_zero_behaviors=["preserve", "relaxed"])) == [C.InvalidFloatBehaviorProfile]
    assert codes(fsign(signed_zero_behaviors=["relaxed"])) == [C.InvalidFloatBehaviorProfile]
    assert codes(fsign(signed_zero_behaviors=["relaxed"], required_fast_math=["nsz"])) == []
    both_nan = make_op("ScalarFloatCompareMinMax", ["arith.cmpf", "arith.minnumf"],
                       {"formats": ["f32"], "comparison_predicates": ["olt"],
                        "behavior": profile(nan_behaviors=["ieee", "number_preferred"], required_fast_math=["nnan"])},
                       I32x2, ["bits<32>"])
    assert codes(both_nan) == [C.InvalidFloatBehaviorProfile]


def test_gep_fails_closed_and_pointer_relation_must_be_empty():
    gep = addsub(op_list=["arith.addi", "llvm.getelementptr"])
    assert codes(gep) == [C.GepFailClosed]


def test_empty_behavior_image():
    const = make_op("TokenConstant", ["dataflow.constant"], {"max_payload_bits": 16}, ["bits<0>"], ["bits<0>"])
    assert codes(const) == [C.EmptyBehaviorImage]
    mux = make_op("TokenMux", ["dataflow.mux"], {"max_payload_bits": 32, "max_fan": 1},
                  ["bits<1>", "bits<32>", "bits<32>"], ["bits<32>"])
    assert codes(mux) == [C.EmptyBehaviorImage]


def test_slice_and_shuffle_record_rules():
    def slice_(rank, resolved, ins_extra=()):
        return make_op("FixedVectorSliceAlignMerge", ["vector.extract"],
                       {"integer_element_widths": [8], "float_element_formats": [], "max_container_payload_bits": 64,
                        "max_slice_payload_bits": 64, "max_dynamic_position_rank": rank,
                        "resolved_index_widths": resolved},
                       ["bits<64>", "bits<64>", *ins_extra], ["bits<64>"])
    assert codes(slice_(0, [])) == []
    assert codes(slice_(0, [32])) == [C.UninterpretedParameterDomain]
    assert codes(slice_(1, [], ["bits<32>"])) == [C.IncompleteRelation]
    assert codes(slice_(1, [32])) == [C.IncompleteRelation]                   # no position port
    assert codes(slice_(1, [32, 64], ["bits<32>"])) == [C.OrphanDeclaration]  # 64-bit index fits no port
    shuffle = make_op("FixedVectorShuffle", ["vector.shuffle"],
                      {"integer_element_widths": [8, 64], "float_element_formats": [], "max_operand_payload_bits": 32,
                       "max_result_payload_bits": 32, "max_block_payload_bits": 32, "max_source_blocks": 4,
                       "max_result_blocks": 4}, I32x2, ["bits<32>"])
    assert codes(shuffle) == [C.OrphanDeclaration]


def test_capacity_limits_are_diagnosed_not_exhausted():
    huge = make_op("FixedVectorShuffle", ["vector.shuffle"],
                   {"integer_element_widths": [8], "float_element_formats": [], "max_operand_payload_bits": 32,
                    "max_result_payload_bits": 32, "max_block_payload_bits": 32, "max_source_blocks": 4,
                    "max_result_blocks": 4_000_000_000}, I32x2, ["bits<32>"])
    assert codes(huge) == [C.CapacityLimit]
    lanes = make_op("FixedVectorParallelize", ["dataflow.parallelize"],
                    {"integer_element_widths": [1], "float_element_formats": [], "max_payload_bits": 1 << 20},
                    ["bits<1>", "bits<1>"], ["bits<1048576>", "bits<1048576>", "bits<1>"])
    assert codes(lanes) == [C.CapacityLimit]
