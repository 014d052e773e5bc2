"""Supports(R, actor, port_correspondence): each admission rule of the seed, accept and reject."""
import pytest

from fabric.capability import Rejection, canonical_embedding, supports
from fabric.errors import DiagnosticCode as C
from fabric.verify import verify_op
from fabric_fixtures import actor, corr, make_op, profile


def sqrt(guarantee, required=("afn",)):
    return make_op("ScalarMathSqrt", ["math.sqrt"],
                   {"formats": ["f32"], "accuracy_guarantee": guarantee,
                    "behavior": profile(required_fast_math=list(required))}, ["bits<32>"], ["bits<32>"])


def sqrt_actor(tier, flags=("afn",)):
    return actor("math.sqrt", ["f32"], ["f32"], accuracy=tier, fastmath=set(flags))


@pytest.mark.parametrize("guarantee, tier, ok", [
    ("correctly_rounded", "correctly_rounded", True),
    ("correctly_rounded", "max_2ulp", True),        # a correctly-rounded circuit implements a 2-ULP actor
    ("max_2ulp", "max_2ulp", True),
    ("max_2ulp", "max_4ulp", True),
    ("max_2ulp", "max_1ulp", False),                # a 2-ULP circuit cannot implement a 1-ULP actor
    ("max_2ulp", "correctly_rounded", False),
])
def test_accuracy_guarantee_at_least_as_strong_as_actor_accepted_maximum(guarantee, tier, ok):
    op = sqrt(guarantee, () if guarantee == "correctly_rounded" else ("afn",))
    flags = () if tier == "correctly_rounded" else ("afn",)
    v = supports(op, sqrt_actor(tier, flags + (("afn",) if guarantee != "correctly_rounded" else ())))
    assert v.accepted == ok
    if not ok:
        assert v.rejection is Rejection.AccuracyNotAdmitted


def test_non_correctly_rounded_guarantee_requires_afn_in_required_fast_math():
    assert [d.code for d in verify_op(sqrt("max_1ulp", required=()))] == [C.InvalidAccuracyContract]
    assert verify_op(sqrt("max_1ulp")) == []
    assert verify_op(sqrt("correctly_rounded", required=())) == []


def test_required_fast_math_is_a_subset_of_the_actor_mask():
    strict = make_op("ScalarFloatAddSub", ["arith.addf"], {"formats": ["f32"], "behavior": profile()},
                     ["bits<32>"] * 2, ["bits<32>"])
    relaxed = make_op("ScalarFloatAddSub", ["arith.addf"],
                      {"formats": ["f32"], "behavior": profile(required_fast_math=["nnan", "ninf"])},
                      ["bits<32>"] * 2, ["bits<32>"])
    everything = {"reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn"}
    assert supports(strict, actor("arith.addf", ["f32", "f32"], ["f32"], fastmath=everything))  # strict refines
    assert supports(strict, actor("arith.addf", ["f32", "f32"], ["f32"]))
    v = supports(relaxed, actor("arith.addf", ["f32", "f32"], ["f32"], fastmath={"nnan"}))
    assert v.rejection is Rejection.FastMathNotGranted
    assert supports(relaxed, actor("arith.addf", ["f32", "f32"], ["f32"], fastmath={"nnan", "ninf", "nsz"}))


def test_untagged_segment_width_at_least_semantic_width():
    op = make_op("ScalarIntegerAddSub", ["arith.addi"], {"integer_widths": [16, 32], "pointer_formats": []},
                 ["bits<32>", "bits<16>"], ["bits<32>"])
    assert supports(op, actor("arith.addi", ["i16", "i16"], ["i16"]))   # W >= N, not W = N
    v = supports(op, actor("arith.addi", ["i32", "i32"], ["i32"]))
    assert v.rejection is Rejection.PortWidthInsufficient and "input 1" in v.message


def test_bits_and_bits_tag_are_never_exchanged():
    sync = make_op("TokenSync", ["dataflow.sync"], {"max_payload_bits": 32, "max_fan": 2},
                   ["bits_tag<32,4>", "bits<32>"], ["bits_tag<32,4>", "bits<32>"])
    tagged = actor("dataflow.sync", ["tagged<i32,i4>"], ["tagged<i32,i4>"])
    plain = actor("dataflow.sync", ["i32"], ["i32"])
    assert supports(sync, tagged, corr([0], [0]))
    assert supports(sync, plain, corr([1], [1]))
    assert supports(sync, plain, corr([0], [0])).rejection is Rejection.PortKindMismatch
    assert supports(sync, tagged, corr([1], [1])).rejection is Rejection.PortKindMismatch
    wide_tag = actor("dataflow.sync", ["tagged<i32,i8>"], ["tagged<i32,i8>"])
    assert supports(sync, wide_tag, corr([0], [0])).rejection is Rejection.PortWidthInsufficient


def cast_op(pairs, resolved, op_list=("arith.index_cast", "arith.extsi")):
    return make_op("ScalarIntegerCast", list(op_list), {"width_pairs": pairs, "resolved_index_widths": resolved},
                   ["bits<64>"], ["bits<64>"])


def test_resolved_index_width_must_be_admitted_and_its_pair_present():
    op = cast_op([[32, 64], [8, 32]], [32])
    a = actor("arith.index_cast", ["index"], ["i64"])
    assert supports(op, a, corr([0], [0], 32))                         # index resolves to 32: pair (32, 64)
    assert supports(op, a, corr([0], [0], 64)).rejection is Rejection.IndexWidthNotAdmitted
    assert supports(op, a, corr([0], [0])).rejection is Rejection.IndexWidthNotAdmitted  # Fabric never selects it
    assert supports(op, actor("arith.index_cast", ["i8"], ["index"]), corr([0], [0], 32))  # pair (8, 32)
    assert supports(op, actor("arith.index_cast", ["i8"], ["index"]), corr([0], [0], 64)).rejection is \
        Rejection.IndexWidthNotAdmitted
    # the physical payload width never selects an index width: only the candidate's selection does
    assert supports(op, actor("arith.index_cast", ["i64"], ["index"]), corr([0], [0], 32)).rejection is \
        Rejection.IndexWidthNotAdmitted


def test_pointer_format_relation_must_be_empty_and_gep_fails_closed():
    with_ptr = make_op("ScalarIntegerAddSub", ["arith.addi"],
                       {"integer_widths": [64], "pointer_formats": [
                           {"address_space": 0, "representation_bits": 64, "address_bits": 64, "kind": "stable_integral"}]},
                       ["bits<64>"] * 2, ["bits<64>"])
    assert [d.code for d in verify_op(with_ptr)] == [C.PointerFormatRelationNotEmpty]
    gep = make_op("ScalarIntegerAddSub", ["arith.addi", "llvm.getelementptr"],
                  {"integer_widths": [64], "pointer_formats": []}, ["bits<64>"] * 2, ["bits<64>"])
    assert [d.code for d in verify_op(gep)] == [C.GepFailClosed]
    v = supports(gep, actor("llvm.getelementptr", ["ptr<0>", "i64"], ["ptr<0>"]))
    assert v.rejection is Rejection.GepRequiresNormalization


def test_not_a_family_member_names_the_families_that_admit_it():
    add = make_op("ScalarIntegerAddSub", ["arith.addi"], {"integer_widths": [32], "pointer_formats": []},
                  ["bits<32>"] * 2, ["bits<32>"])
    v = supports(add, actor("arith.muli", ["i32", "i32"], ["i32"]))
    assert v.rejection is Rejection.NotFamilyMember and "ScalarIntegerMultiply" in v.message


def test_ordinals_are_preserved_for_fixed_role_families():
    sub = make_op("ScalarIntegerAddSub", ["arith.subi"], {"integer_widths": [32], "pointer_formats": []},
                  ["bits<32>"] * 2, ["bits<32>"])
    a = actor("arith.subi", ["i32", "i32"], ["i32"])
    assert supports(sub, a, corr([0, 1], [0]))
    assert supports(sub, a, corr([1, 0], [0])).rejection is Rejection.PortCorrespondenceInvalid


def test_routed_lanes_use_the_canonical_ordered_embedding():
    mux = make_op("TokenMux", ["dataflow.mux"], {"max_payload_bits": 32, "max_fan": 3},
                  ["bits<2>", "bits<32>", "bits<32>", "bits<16>"], ["bits<32>"])
    a = actor("dataflow.mux", ["i1", "i16", "i16"], ["i16"])
    assert supports(mux, a, corr([0, 1, 2], [0]))
    assert supports(mux, a, corr([0, 1, 3], [0]))          # classes (32, 16): lowest of each
    assert supports(mux, a, corr([0, 3, 1], [0]))          # order observable and legal
    assert supports(mux, a, corr([0, 2, 1], [0])).rejection is Rejection.NonCanonicalLaneEmbedding
    assert canonical_embedding(mux, "inputs", (2, 3), first=1) == (1, 3)
    too_many = actor("dataflow.mux", ["i2", "i16", "i16", "i16", "i16"], ["i16"])
    assert supports(mux, too_many, corr([0, 1, 2, 3, 4], [0])).rejection is Rejection.CapacityExceeded


def test_integer_float_conversion_has_no_floating_behavior_profile():
    conv = make_op("ScalarFloatToInteger", ["arith.fptosi", "llvm.fptosi.sat"], {"format_pairs": [[32, "f32"]]},
                   ["bits<32>"], ["bits<32>"])
    assert verify_op(conv) == []
    assert supports(conv, actor("llvm.fptosi.sat", ["f32"], ["i32"]))
    assert supports(conv, actor("arith.fptosi", ["f16"], ["i32"])).rejection is Rejection.ParameterNotAdmitted
    ordinary = make_op("ScalarFloatToInteger", ["arith.fptosi"], {"format_pairs": [[32, "f32"]]},
                       ["bits<32>"], ["bits<32>"])
    assert supports(ordinary, actor("llvm.fptosi.sat", ["f32"], ["i32"])).rejection is Rejection.MemberNotEnabled
