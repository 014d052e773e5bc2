"""The canonical behaviour quotient and the deterministic refinement cover, rule by rule."""
import itertools

from fabric.relation import Behavior, Described, _words, build_cover, derive_relation
from fabric_fixtures import actor, corr, make_op, profile

I32x2 = ["bits<32>", "bits<32>"]


def keys(op):
    rel = derive_relation(op)
    return [rel.decode_key(k) for k in rel.keys] if rel.kind == "Finite" else rel.kind


def fcmp(op_list, preds, formats=("f16", "f32"), nan=("ieee",)):
    return make_op("ScalarFloatCompareMinMax", op_list,
                   {"formats": list(formats), "comparison_predicates": list(preds),
                    "behavior": profile(nan_behaviors=list(nan))}, I32x2, ["bits<32>"])


def test_relaxed_nnan_compare_reuses_the_strict_representative():
    op = fcmp(["arith.cmpf"], ["ueq", "oeq"])
    rel = derive_relation(op)
    strict = rel.project(actor("arith.cmpf", ["f32", "f32"], ["i1"], predicate="ueq"))
    relaxed = rel.project(actor("arith.cmpf", ["f32", "f32"], ["i1"], predicate="ueq", fastmath={"nnan"}))
    assert strict == relaxed and len(rel.keys) == 4  # {oeq, ueq} x {f16, f32}: no extra key for nnan


def test_uncovered_nnan_compare_normalises_to_ordered_and_constants_drop_the_format():
    # IEEE NaN handling is not implemented here, so cmpf is admitted only with nnan (uncovered)
    op = fcmp(["arith.cmpf", "arith.minnumf"], ["ueq", "ult", "ord", "uno", "olt"], nan=("number_preferred",))
    got = keys(op)
    assert ("Compare", (("float_predicate", "true"),)) in got         # ord -> AlwaysTrue, no numeric_format
    assert ("Compare", (("float_predicate", "false"),)) in got        # uno -> AlwaysFalse
    assert ("Compare", (("float_predicate", "oeq"), ("float_format", "f16"))) in got   # ueq -> oeq
    assert not any(c and c[0][1] in ("ueq", "ult", "ord", "uno") for r, c in got if r == "Compare")
    assert ("MinNumber", (("float_format", "f32"),)) in got
    rel = derive_relation(op)
    ult = rel.project(actor("arith.cmpf", ["f16", "f16"], ["i1"], predicate="ult", fastmath={"nnan"}))
    olt = rel.project(actor("arith.cmpf", ["f16", "f16"], ["i1"], predicate="olt", fastmath={"nnan"}))
    assert ult == olt


def test_uncovered_nnan_minnum_normalises_to_minimum():
    op = fcmp(["arith.cmpf", "arith.minnumf", "arith.maxnumf"], ["olt"])  # number-preferred NaN not implemented
    got = keys(op)
    assert ("Minimum", (("float_format", "f16"),)) in got and ("Maximum", (("float_format", "f32"),)) in got
    assert not any(r in ("MinNumber", "MaxNumber") for r, _ in got)


def test_relaxed_minnum_prefers_its_own_strict_role_when_reachable():
    op = fcmp(["arith.minimumf", "arith.minnumf"], [], nan=("ieee", "number_preferred"))
    rel = derive_relation(op)
    relaxed = rel.project(actor("arith.minnumf", ["f32", "f32"], ["f32"], fastmath={"nnan"}))
    assert rel.decode_key(relaxed)[0] == "MinNumber"


def test_uitofp_nneg_reuses_unsigned_else_normalises_to_signed():
    op = make_op("ScalarIntegerToFloat", ["arith.sitofp", "arith.uitofp"], {"format_pairs": [[16, "f32"], [32, "f32"]]},
                 ["bits<32>"], ["bits<32>"])
    rel = derive_relation(op)
    nneg = rel.project(actor("arith.uitofp", ["i16"], ["f32"], nneg=True))
    assert rel.decode_key(nneg) == ("Unsigned", (("width", 16),))
    # the cover procedure itself: an uncovered nneg actor adds the Signed representative
    comps = (("source_width", "width", 16), ("destination_format", "float_format", "f32"))
    weak = Described(Behavior("Unsigned", comps), "nneg", Behavior("Signed", comps), 0)
    assert build_cover("ScalarIntegerToFloat", [(weak, b"")]) == [Behavior("Signed", comps)]


def test_ordinary_and_saturating_fptosi_share_one_key():
    op = make_op("ScalarFloatToInteger", ["arith.fptosi", "arith.fptoui", "llvm.fptosi.sat"],
                 {"format_pairs": [[32, "f32"]]}, ["bits<32>"], ["bits<32>"])
    rel = derive_relation(op)
    sat = rel.project(actor("llvm.fptosi.sat", ["f32"], ["i32"]))
    assert sat == rel.project(actor("arith.fptosi", ["f32"], ["i32"]))
    assert [rel.decode_key(k)[0] for k in rel.keys] == ["Signed", "Unsigned"]


def test_aliases_collapse_before_quotienting():
    logic = make_op("ScalarIntegerLogic", ["arith.ori", "llvm.or"], {"integer_widths": [32]}, I32x2, ["bits<32>"])
    assert keys(logic) == "None"  # disjoint OR and OR: one behaviour
    logic2 = make_op("ScalarIntegerLogic", ["arith.andi", "arith.ori", "llvm.or"], {"integer_widths": [32]},
                     I32x2, ["bits<32>"])
    rel = derive_relation(logic2)
    assert rel.project(actor("llvm.or", ["i32", "i32"], ["i32"])) == rel.project(actor("arith.ori", ["i32", "i32"], ["i32"]))
    cz = make_op("ScalarIntegerCountZeros", ["math.ctlz", "llvm.intr.ctlz", "math.cttz"], {"integer_widths": [32]},
                 ["bits<32>"], ["bits<32>"])
    rel = derive_relation(cz)
    assert [rel.decode_key(k)[0] for k in rel.keys] == ["Leading", "Trailing"]
    assert rel.project(actor("llvm.intr.ctlz", ["i32"], ["i32"])) == rel.project(actor("math.ctlz", ["i32"], ["i32"]))


def test_integer_and_index_casts_map_to_the_resolved_width_transform():
    op = make_op("ScalarIntegerCast", ["arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast"],
                 {"width_pairs": [[8, 32], [32, 8], [64, 64]], "resolved_index_widths": [64]}, ["bits<64>"], ["bits<64>"])
    rel = derive_relation(op)
    roles = {rel.decode_key(k)[0] for k in rel.keys}
    assert roles == {"SignExtend", "ZeroExtend", "Truncate", "Identity"}
    ident = rel.project(actor("arith.index_cast", ["index"], ["i64"]), corr([0], [0], 64))
    assert rel.decode_key(ident)[0] == "Identity"


def test_one_behavior_after_admission_is_none_even_for_a_nominal_finite_row():
    op = make_op("ScalarSignedIntegerDivRem", ["arith.divsi", "arith.remsi"], {"integer_widths": [8, 32]},
                 ["bits<8>", "bits<8>"], ["bits<8>"])  # only i8 reaches the ports
    assert keys(op) != "None"  # divsi and remsi still differ
    single = make_op("ScalarSignedIntegerDivRem", ["arith.divsi"], {"integer_widths": [8]},
                     ["bits<32>", "bits<32>"], ["bits<32>"])
    assert keys(single) == "None"


def test_rounding_component_only_when_it_varies_and_absent_means_to_nearest_even():
    one = make_op("ScalarFloatAddSub", ["arith.addf", "arith.subf"], {"formats": ["f32"], "behavior": profile()},
                  I32x2, ["bits<32>"])
    assert keys(one) == [("Add", ()), ("Sub", ())]
    two = make_op("ScalarFloatAddSub", ["arith.addf"],
                  {"formats": ["f32"], "behavior": profile(rounding_modes=["to_nearest_even", "toward_zero"])},
                  I32x2, ["bits<32>"])
    rel = derive_relation(two)
    absent = rel.project(actor("arith.addf", ["f32", "f32"], ["f32"]))
    explicit = rel.project(actor("arith.addf", ["f32", "f32"], ["f32"], rounding_mode="to_nearest_even"))
    assert absent == explicit and rel.decode_key(absent) == ("Add", (("rounding", "to_nearest_even"),))


def test_special_math_key_ignores_accuracy_and_fast_math():
    op = make_op("ScalarMathPow", ["math.powf"],
                 {"formats": ["f16", "f32"], "accuracy_guarantee": "correctly_rounded", "behavior": profile()},
                 I32x2, ["bits<32>"])
    rel = derive_relation(op)
    a = rel.project(actor("math.powf", ["f32", "f32"], ["f32"], accuracy="correctly_rounded"))
    b = rel.project(actor("math.powf", ["f32", "f32"], ["f32"], accuracy="max_4ulp", fastmath={"afn", "nsz"}))
    assert a == b and rel.decode_key(a) == ("", (("float_format", "f32"),))


def test_float_sign_keys_on_representation_width_not_port_width():
    op = make_op("ScalarFloatSign", ["arith.negf", "math.absf"], {"formats": ["f16", "bf16", "f32"],
                                                                  "behavior": profile()}, ["bits<64>"], ["bits<64>"])
    # f16 and bf16 collapse (both 16 bits); the 64-bit ports never enter the key
    assert sorted(keys(op)) == [("Absolute", (("width", 16),)), ("Absolute", (("width", 32),)),
                                ("Negate", (("width", 16),)), ("Negate", (("width", 32),))]


def test_adapter_keys_collapse_equal_width_integer_and_float_elements():
    op = make_op("FixedVectorParallelize", ["dataflow.parallelize"],
                 {"integer_element_widths": [16], "float_element_formats": ["f16", "bf16"], "max_payload_bits": 32},
                 ["bits<16>", "bits<1>"], ["bits<32>", "bits<2>", "bits<1>"], )
    assert keys(op) == [("", (("width", 1),)), ("", (("width", 2),))]  # element width constant: lane_count only
    rel = derive_relation(op)
    assert rel.project(actor("dataflow.parallelize", ["i16", "i1"], ["vector<2xi16>", "vector<2xi1>", "i1"])) == \
        rel.project(actor("dataflow.parallelize", ["bf16", "i1"], ["vector<2xbf16>", "vector<2xi1>", "i1"]))


def test_sync_permutations_share_one_active_lane_set_mux_order_stays_observable():
    sync = make_op("TokenSync", ["dataflow.sync"], {"max_payload_bits": 32, "max_fan": 2},
                   ["bits<32>", "bits<16>"], ["bits<32>", "bits<16>"])
    rel = derive_relation(sync)
    ab = rel.project(actor("dataflow.sync", ["i32", "i16"], ["i32", "i16"]), corr([0, 1], [0, 1]))
    ba = rel.project(actor("dataflow.sync", ["i16", "i32"], ["i16", "i32"]), corr([1, 0], [1, 0]))
    assert ab == ba
    mux = make_op("TokenMux", ["dataflow.mux"], {"max_payload_bits": 32, "max_fan": 2},
                  ["bits<1>", "bits<32>", "bits<16>"], ["bits<32>"])
    rel = derive_relation(mux)
    a = actor("dataflow.mux", ["i1", "i16", "i16"], ["i16"])
    assert rel.project(a, corr([0, 1, 2], [0])) != rel.project(a, corr([0, 2, 1], [0]))


def test_loop_stream_keys_are_width_and_predicate_step_kind_is_capability():
    op = make_op("LoopStream", ["dataflow.stream"], {"step_kind": "add", "integer_widths": [32],
                                                   "continuation_predicates": ["slt", "ne"]},
                 ["bits<32>"] * 3, ["bits<32>", "bits<1>"])
    assert [r for r, _ in keys(op)] == ["", ""]
    rel = derive_relation(op)
    from fabric.capability import Rejection, supports
    mul = actor("dataflow.stream", ["i32"] * 3, ["i32", "i1"], step_kind="mul", predicate="slt")
    assert supports(op, mul).rejection is Rejection.ParameterNotAdmitted
    assert rel.decode_key(rel.project(actor("dataflow.stream", ["i32"] * 3, ["i32", "i1"], step_kind="add",
                                            predicate="ne")))[1] == (("int_predicate", "ne"),)


def test_derivation_is_deterministic_and_independent_of_op_list_order():
    a = fcmp(["arith.cmpf", "arith.maximumf", "arith.minnumf"], ["oeq", "uno"], nan=("ieee", "number_preferred"))
    b = fcmp(["arith.minnumf", "arith.cmpf", "arith.maximumf"], ["uno", "oeq"], nan=("number_preferred", "ieee"))
    assert derive_relation(a).keys == derive_relation(b).keys == derive_relation(a).keys


def test_lane_sequence_count_matches_brute_force():
    for limits in ([1], [2], [1, 1], [2, 1], [3, 2, 1]):
        pool = [c for c, n in enumerate(limits) for _ in range(n)]
        for k in range(0, len(pool) + 1):
            brute = len(set(itertools.permutations(pool, k)))
            assert _words(limits, k) == brute
