"""The seed's Validation Anchors, one (or more) tests per bullet, named after the anchor."""
import dataclasses
import struct

import pytest

from fabric.capability import Rejection, supports
from fabric.config import Mapping, MappedEdge, RefinementAssignment, Use, derive_fields, materialize
from fabric.contract import (adapter_contract, decode_contract, encode_contract, match_adapter_contract,
                             one_cycle_elastic)
from fabric.elastic import (CarryResource, ParallelizeAdapter, ScalarElasticResource, SerializeAdapter,
                            create_adapter_use)
from fabric.errors import DiagnosticCode as C, FabricError
from fabric.families import families_for
from fabric.io import load_document
from fabric.relation import UnsupportedActor, derive_relation
from fabric.schemas import ActorInvalid, check_actor
from fabric.topology import check_fu
from fabric.verify import verify_op
from fabric.view import check_fabric, resolve_view
from fabric_fixtures import actor, corr, make_op, profile


def addsub(op_list=("arith.addi", "arith.subi"), widths=(8, 16, 32)):
    return make_op("ScalarIntegerAddSub", op_list, {"integer_widths": list(widths), "pointer_formats": []},
                   ["bits<32>", "bits<32>"], ["bits<32>"])


def op_node(name, family, op_list, hw, operands, ins, outs, extra=()):
    return {"kind": "op", "name": name, "implementation_family": family, "op_list": list(op_list), "hw_params": hw,
            "operands": list(operands), "ports": {"inputs": list(ins), "results": list(outs)},
            "constraints": [{"resource_contract": "one_cycle_elastic"}, *extra]}


def fu_doc(nodes, yields, templates, inputs=("bits<32>", "bits<32>"), outputs=("bits<32>",), name="fu"):
    return {"name": name, "inputs": list(inputs), "outputs": list(outputs), "nodes": nodes, "yield": list(yields),
            "templates": templates}


def doc(fus, mapping=None):
    d = {"format": "tile-emu-fabric/1", "name": "t", "fus": fus}
    if mapping is not None:
        d["mapping"] = mapping
    return d


ADD = lambda operands: op_node("add", "ScalarIntegerAddSub", ["arith.addi"],  # noqa: E731
                               {"integer_widths": [32], "pointer_formats": []}, operands, ["bits<32>"] * 2, ["bits<32>"])
MUL = lambda operands: op_node("mul", "ScalarIntegerMultiply", ["arith.muli"], {"integer_widths": [32]},  # noqa: E731
                               operands, ["bits<32>"] * 2, ["bits<32>"])


def use(name, op, a, operands, results, index_width=None):
    return {"name": name, "op": op, "actor": a, "operands": operands, "results": results,
            **({"index_width": index_width} if index_width else {})}


def jactor(schema, ins, outs, **attrs):
    return {"schema": schema, "inputs": ins, "results": outs, "attributes": attrs}


# --- anchor 1 --------------------------------------------------------------------------------

def test_anchor_one_schema_projection_consumed_unchanged_by_admission_matching_and_interpretation():
    op = make_op("ScalarSignedIntegerDivRem", ["arith.divsi", "arith.remsi"], {"integer_widths": [16, 32]},
                 ["bits<32>", "bits<32>"], ["bits<32>"])
    a = actor("arith.divsi", ["i16", "i16"], ["i16"], exact=True)
    before = a.canonical_bytes()
    check_actor(a)                                  # Canonical Dataflow admission
    assert supports(op, a)                          # Configured Function matching
    key = derive_relation(op).project(a)            # Fabric capability interpretation
    use_ = Use("q", "fu/div", a, corr([0, 1], [0]))
    fn = materialize(Mapping((("fu", "t"),), (use_,)))
    assert fn.nodes[0][2] is a                      # the configured function holds the same object
    assert a.canonical_bytes() == before and key.endswith(b"Quotient" + struct.pack(">I", 16))
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.schema = "arith.divui"


def test_anchor_one_schema_projection_rejected_uniformly_when_invalid():
    op = addsub()
    bad = actor("arith.addi", ["i32", "i16"], ["i32"])  # not a valid instance of the schema
    with pytest.raises(ActorInvalid):
        check_actor(bad)
    assert supports(op, bad).rejection is Rejection.ActorInvalid
    with pytest.raises(UnsupportedActor):
        derive_relation(op).project(bad)


# --- anchor 2 --------------------------------------------------------------------------------

def test_anchor_hsg_member_unavailable_until_capability_and_configuration_accept():
    only_add = addsub(op_list=["arith.addi"], widths=[32])
    sub = actor("arith.subi", ["i32", "i32"], ["i32"])
    assert supports(only_add, sub).rejection is Rejection.MemberNotEnabled
    both = addsub(widths=[32])
    assert supports(both, actor("arith.subi", ["i16", "i16"], ["i16"])).rejection is Rejection.ParameterNotAdmitted
    assert supports(both, sub)
    # GEP is an HSG member of ScalarIntegerAddSub, yet never available on this relation
    gep = actor("llvm.getelementptr", ["ptr<0>", "i64"], ["ptr<0>"])
    assert supports(addsub(op_list=["arith.addi", "llvm.getelementptr"]), gep).rejection is \
        Rejection.GepRequiresNormalization
    # the mapping that uses a member the op_list does not enable is rejected with the typed code
    f = load_document(doc([fu_doc([ADD(["in.0", "in.1"])], ["add.0"], [{"name": "t", "nodes": ["add"]}])],
                          {"templates": {"fu": "t"},
                           "uses": [use("s", "fu/add", jactor("arith.subi", ["i32", "i32"], ["i32"]), [0, 1], [0])]}))
    rep = check_fabric(f)
    assert [d.code for d in rep.diagnostics] == [C.MemberNotEnabled]


# --- anchor 3 --------------------------------------------------------------------------------

def test_anchor_one_schema_in_two_families_each_resource_accepts_only_its_explicit_family():
    assert set(families_for("arith.addi")) == {"ScalarIntegerAddSub", "FixedVectorIntegerAddSub"}
    scalar = addsub(widths=[8])
    vector = make_op("FixedVectorIntegerAddSub", ["arith.addi"], {"integer_element_widths": [8], "max_payload_bits": 32},
                     ["bits<32>", "bits<32>"], ["bits<32>"])
    s_actor = actor("arith.addi", ["i8", "i8"], ["i8"])
    v_actor = actor("arith.addi", ["vector<4xi8>", "vector<4xi8>"], ["vector<4xi8>"])
    assert supports(scalar, s_actor) and supports(vector, v_actor)
    assert supports(scalar, v_actor).rejection is Rejection.ShapeNotAdmitted
    assert supports(vector, s_actor).rejection is Rejection.ShapeNotAdmitted  # equal flattened width is no licence
    # the family binding is explicit: never inferred from op_list or ports
    unbound = dataclasses.replace(scalar, family=None)
    assert [d.code for d in verify_op(unbound)] == [C.MissingImplementationFamily]
    mul_on_add = addsub(op_list=["arith.addi", "arith.muli"])
    assert C.OpListMemberOutsideFamily in [d.code for d in verify_op(mul_on_add)]


# --- anchor 4 --------------------------------------------------------------------------------

def test_anchor_multi_member_op_list_is_capability_selected_member_derived_singleton_has_no_selector():
    multi = addsub(widths=[8, 16, 32])
    rel = derive_relation(multi)
    assert rel.kind == "Finite" and [rel.decode_key(k)[0] for k in rel.keys] == ["Add", "Sub"]
    # the workload's member is derived, never stored in the canonical op
    assert rel.project(actor("arith.subi", ["i16", "i16"], ["i16"])) == rel.keys[1]
    assert "sw_configs" not in {f.name for f in dataclasses.fields(multi)}
    single = addsub(op_list=["arith.addi"])
    view = resolve_view(single)
    assert view.semantic_field_relation.kind == "None" and view.semantic_config_fields == ()
    # a singleton with another necessary parameter keeps only that parameter in its key
    div = make_op("ScalarSignedIntegerDivRem", ["arith.divsi"], {"integer_widths": [16, 32]},
                  ["bits<32>", "bits<32>"], ["bits<32>"])
    keys = derive_relation(div).keys
    assert [derive_relation(div).decode_key(k) for k in keys] == [("Quotient", (("width", 16),)),
                                                                 ("Quotient", (("width", 32),))]


# --- anchor 5 --------------------------------------------------------------------------------

def test_anchor_joint_relation_none_finite_direct_with_exact_divrem_keys():
    mul = make_op("ScalarIntegerMultiply", ["arith.muli"], {"integer_widths": [8, 32]}, ["bits<32>"] * 2, ["bits<32>"])
    assert derive_relation(mul).kind == "None"
    for fam in ("ScalarSignedIntegerDivRem", "ScalarUnsignedIntegerDivRem"):
        schemas = ["arith.divsi", "arith.remsi"] if "Signed" in fam and "Unsigned" not in fam else ["arith.divui", "arith.remui"]
        op = make_op(fam, schemas, {"integer_widths": [8, 32]}, ["bits<32>"] * 2, ["bits<32>"])
        rel = derive_relation(op)
        head = b"loom.fabric.operation-behavior-key\x00" + struct.pack(">II", 1, 0) + struct.pack(">I", len(fam)) + fam.encode()
        want = [head + struct.pack(">I", len(r)) + r + struct.pack(">I", w)
                for r in (b"Quotient", b"Remainder") for w in (8, 32)]
        assert list(rel.keys) == want
        a = actor(schemas[1], ["i8", "i8"], ["i8"])
        assert rel.project(a) == want[2]
    const = make_op("TokenConstant", ["dataflow.constant"], {"max_payload_bits": 8}, ["bits<0>"], ["bits<32>"])
    direct = derive_relation(const)
    assert direct.kind == "Direct" and direct.encoded_bit_count == 8


def test_anchor_joint_relation_is_not_a_cartesian_product_of_fields():
    # compare keys: eq needs no width (unsigned equality is width-agnostic on zero-filled lanes),
    # slt needs the active width: 3 joint keys, not |predicates| x |widths| = 4
    op = make_op("ScalarIntegerCompareMinMax", ["arith.cmpi"], {"operand_widths": [8, 32],
                                                              "comparison_predicates": ["eq", "slt"]},
                 ["bits<32>"] * 2, ["bits<1>"])
    rel = derive_relation(op)
    decoded = [rel.decode_key(k) for k in rel.keys]
    assert decoded == [("Compare", (("int_predicate", "eq"),)),
                       ("Compare", (("int_predicate", "slt"), ("width", 8))),
                       ("Compare", (("int_predicate", "slt"), ("width", 32)))]


# --- anchor 6 --------------------------------------------------------------------------------

def _exclusive_fu(with_demux: bool):
    if with_demux:
        nodes = [{"kind": "demux", "name": "da", "operand": "in.0", "results": 2, "type": "bits<32>"},
                 {"kind": "demux", "name": "db", "operand": "in.1", "results": 2, "type": "bits<32>"},
                 ADD(["da.0", "db.0"]), MUL(["da.1", "db.1"]),
                 {"kind": "mux", "name": "m", "operands": ["add.0", "mul.0"], "type": "bits<32>"}]
        templates = [{"name": "add", "nodes": ["da", "db", "add", "m"], "selects": {"da": 0, "db": 0, "m": 0}},
                     {"name": "mul", "nodes": ["da", "db", "mul", "m"], "selects": {"da": 1, "db": 1, "m": 1}}]
    else:  # output mux only: both datapaths consume the FU inputs directly (broadcast)
        nodes = [ADD(["in.0", "in.1"]), MUL(["in.0", "in.1"]),
                 {"kind": "mux", "name": "m", "operands": ["add.0", "mul.0"], "type": "bits<32>"}]
        templates = [{"name": "add", "nodes": ["add", "m"], "selects": {"m": 0}},
                     {"name": "mul", "nodes": ["mul", "m"], "selects": {"m": 1}}]
    return fu_doc(nodes, ["m.0"], templates)


def test_anchor_mutually_exclusive_branches_require_explicit_demux_and_mux():
    ok = load_document(doc([_exclusive_fu(True)]))
    assert check_fu(ok.fus[0]) == []
    bad = load_document(doc([_exclusive_fu(False)]))
    diags = check_fu(bad.fus[0])
    assert {d.code for d in diags} == {C.ImplicitTokenSink}
    assert any("inactive mul" in d.message for d in diags) and any("inactive add" in d.message for d in diags)
    # an incoherent branch: demuxes route to add while the mux selects mul
    incoherent = _exclusive_fu(True)
    incoherent["templates"] = [{"name": "x", "nodes": ["da", "db", "add", "m"], "selects": {"da": 0, "db": 0, "m": 1}}]
    codes = {d.code for d in check_fu(load_document(doc([incoherent])).fus[0])}
    assert codes == {C.IncoherentRoute, C.ImplicitTokenSink}


def test_anchor_colocation_does_not_absorb_an_external_edge():
    # add.0 also leaves the FU (output 1), so an external edge from it can re-enter at in.0
    fu = fu_doc([ADD(["in.0", "in.1"]), op_node("add2", "ScalarIntegerAddSub", ["arith.addi"],
                                                 {"integer_widths": [32], "pointer_formats": []},
                                                 ["in.0", "add.0"], ["bits<32>"] * 2, ["bits<32>"])],
                ["add2.0", "add.0"], [{"name": "t", "nodes": ["add", "add2"]}], outputs=("bits<32>", "bits<32>"))
    add32 = jactor("arith.addi", ["i32", "i32"], ["i32"])
    mapping = {"templates": {"fu": "t"},
               "uses": [use("a", "fu/add", add32, [0, 1], [0]), use("b", "fu/add2", add32, [0, 1], [0])],
               "edges": [{"from": "a.0", "to": "b.1", "realization": "internal"}]}
    assert check_fabric(load_document(doc([fu], mapping))).ok  # add.0 -> add2 operand 1 is an SSA edge
    mapping["edges"] = [{"from": "a.0", "to": "b.0", "realization": "internal"}]  # co-located, no witness
    rep = check_fabric(load_document(doc([fu], mapping)))
    assert [d.code for d in rep.diagnostics] == [C.EdgeAbsorbedByColocation]
    mapping["edges"] = [{"from": "a.0", "to": "b.0", "realization": "external"}]
    assert check_fabric(load_document(doc([fu], mapping))).ok


# --- anchor 7 --------------------------------------------------------------------------------

def _slice(op_list=("vector.extract", "vector.insert"), rank=2):
    return make_op("FixedVectorSliceAlignMerge", op_list,
                   {"integer_element_widths": [8], "float_element_formats": ["f16"], "max_container_payload_bits": 128,
                    "max_slice_payload_bits": 64, "max_dynamic_position_rank": rank,
                    "resolved_index_widths": [32, 64] if rank else []},
                   ["bits<128>", "bits<128>"] + ["bits<64>"] * rank, ["bits<128>"])


def test_anchor_static_and_dynamic_slices_and_poison_shuffle_derive_exact_fields():
    rel = derive_relation(_slice())
    # mode 1, offset cardinality_bits(128)=7, slice cardinality_bits(64)=6, 2 strides inclusive_bits(128)=8
    assert [w for _, w in rel.fields] == [1, 7, 6, 8, 8]

    def fields(v):
        out, shift = [], 0
        for w in (1, 7, 6, 8, 8):
            out.append((v >> shift) & ((1 << w) - 1))
            shift += w
        return out
    static = actor("vector.extract", ["vector<2x4x2xi8>"], ["vector<2xi8>"], static_position=[1, 3])
    assert fields(rel.project(static)) == [0, 64 + 48, 16 - 1, 0, 0]  # row-major offset 1*64 + 3*16 bits
    dyn = actor("vector.insert", ["f16", "vector<4x2xf16>", "index", "index"], ["vector<4x2xf16>"],
                static_position=["dynamic", "dynamic"])
    assert fields(rel.project(dyn, corr([0, 1, 2, 3], [0], 64))) == [1, 0, 16 - 1, 32, 16]
    mixed = actor("vector.extract", ["vector<2x4xf16>", "index"], ["f16"], static_position=["dynamic", 2])
    assert fields(rel.project(mixed, corr([0, 2], [0], 32))) == [0, 32, 15, 64, 0]  # unused stride slot is zero
    shuffle = make_op("FixedVectorShuffle", ["vector.shuffle"],
                      {"integer_element_widths": [8], "float_element_formats": [], "max_operand_payload_bits": 32,
                       "max_result_payload_bits": 32, "max_block_payload_bits": 8, "max_source_blocks": 8,
                       "max_result_blocks": 4}, ["bits<32>"] * 2, ["bits<32>"])
    srel = derive_relation(shuffle)
    assert [w for _, w in srel.fields] == [3, 3, 2, 3, 3, 3, 3]  # fixed by capability maxima, no mask table
    a = actor("vector.shuffle", ["vector<4xi8>", "vector<3xi8>"], ["vector<3xi8>"], mask=[-1, 6, 2])
    v = srel.project(a)
    assert [(v >> s) & ((1 << w) - 1) for s, w in ((0, 3), (3, 3), (6, 2), (8, 3), (11, 3), (14, 3), (17, 3))] == \
        [7, 3, 2, 0, 6, 2, 0]


def test_anchor_no_redundant_field_for_a_hardwired_fact():
    assert [n for n, _ in derive_relation(_slice(op_list=["vector.extract"], rank=0)).fields] == \
        ["static_offset_bits", "slice_width_minus_one"]  # no mode, no stride slots
    one_result = make_op("FixedVectorShuffle", ["vector.shuffle"],
                         {"integer_element_widths": [8], "float_element_formats": [], "max_operand_payload_bits": 32,
                          "max_result_payload_bits": 32, "max_block_payload_bits": 8, "max_source_blocks": 4,
                          "max_result_blocks": 1}, ["bits<32>"] * 2, ["bits<32>"])
    widths = dict(derive_relation(one_result).fields)
    assert widths["result_block_count_minus_one"] == 0  # hardwired single result block: zero bits


# --- anchor 8 --------------------------------------------------------------------------------

def test_anchor_stateless_scalar_firing_one_cycle_contract():
    r = ScalarElasticResource(lambda a, b: (a + b, a - b), 2, 2, one_cycle_elastic())
    s0 = r.step(0, [5, 3], [True, True])
    assert s0.accepted and s0.outputs == (None, None)          # accepted at t, nothing visible yet
    s1 = r.step(1, [7, 1], [True, False])                      # publication at t + 1
    assert s1.outputs == (8, 2) and s1.handoffs == (True, False) and not s1.accepted
    for t in (2, 3):                                           # multi-cycle stall of result 1
        s = r.step(t, [7, 1], [True, False])
        assert s.outputs == (None, 2) and not s.accepted       # tuple retained; result 0 never re-published
    s4 = r.step(4, [7, 1], [False, True])                      # final handoff + same-coordinate replacement
    assert s4.handoffs == (False, True) and s4.accepted
    assert r.step(5, [None, None], [True, True]).outputs == (8, 6)
    assert r.counters.fires == 2 and r.counters.stalls == 3


def test_anchor_logically_stateful_transition_follows_its_own_state_and_use_pattern():
    c = CarryResource()
    s = c.step(0, None, 10, None, ready=True)          # Init: consumes init, forwards in the same cycle
    assert s.consumed == (False, True, False) and s.outputs == (10,)
    s = c.step(1, True, None, 11, ready=False)         # blocked output: nothing consumed, state unchanged
    assert s.consumed == (False, False, False) and c.state == "Loop"
    s = c.step(2, True, None, 11, ready=True)
    assert s.consumed == (True, False, True) and s.outputs == (11,)
    s = c.step(3, False, 99, 12, ready=True)           # false: consume the condition only, no result
    assert s.consumed == (True, False, False) and s.outputs == (None,) and c.state == "Init"


# --- anchor 9 --------------------------------------------------------------------------------

ALL = (True, True, True)


def test_anchor_parallelize_partial_close_retains_one_claim_across_ordered_groups():
    p = create_adapter_use("FixedVectorParallelize", {1}, 4)
    assert p.step(0, 7, True, ALL).accepted and p.last_case == "accumulate"
    assert p.step(1, 8, True, ALL).accepted                    # accumulate retires at commit: II = 1
    s = p.step(2, None, False, ALL)
    assert p.last_case == "partial_close" and s.consumed == (False, True)
    stalled = (False, False, False)
    g1 = ((7, 8, 0, 0), (True, True, False, False), True)
    for t in (3, 4):
        s = p.step(t, None, False, stalled)
        assert s.outputs == g1 and not s.accepted              # stalled group stays stable; no new firing
    s = p.step(5, None, False, ALL)                            # handoff of the true group
    assert s.outputs == g1 and not s.accepted                  # claim still held for the false group
    end = ((0, 0, 0, 0), (False, False, False, False), False)
    s = p.step(6, 9, True, ALL)                                # final handoff + same-coordinate replacement
    assert s.outputs == end and s.accepted and p.last_case == "accumulate"


def test_anchor_sparse_serialize_and_all_zero_serialize():
    s = create_adapter_use("FixedVectorSerialize", {1, 2}, 4, 4)
    assert s.step(0, (10, 11, 12, 13), (True, False, True, False), True, (True, True)).accepted
    assert s.step(1, None, None, None, (False, False)).outputs == (10, True)
    assert s.step(2, None, None, None, (True, True)).outputs == (10, True)
    out = s.step(3, (20, 21, 22, 23), (True, True, True, True), True, (True, True))
    assert out.outputs == (12, True) and out.accepted           # last group handoff; replacement accepted
    zero = create_adapter_use("FixedVectorSerialize", {1, 2}, 4, 4)
    assert zero.step(0, (1, 2, 3, 4), (False,) * 4, True, (True, True)).accepted
    nxt = zero.step(1, (1, 2, 3, 4), (True, False, False, False), True, (True, True))
    assert nxt.outputs == (None, None) and nxt.accepted         # retired at commit without publishing


def test_anchor_reset_during_drain_clears_slot_and_continuation():
    p = ParallelizeAdapter(4)
    p.step(0, 1, True, ALL)
    p.step(1, None, False, ALL)                                # partial close: two groups pending
    p.step(2, None, None, (False,) * 3)
    p.reset()
    assert p.claim is None and p.buffer == []
    assert p.step(3, None, None, ALL).outputs == (None, None, None)
    assert p.step(4, 5, True, ALL).accepted                    # a fresh firing, fresh lane buffer


def test_anchor_missing_activity_definedness_rejects_before_creating_a_use():
    with pytest.raises(FabricError) as e:
        create_adapter_use("FixedVectorSerialize", {2}, 4, 4)  # mask proved, phase not
    assert e.value.diagnostics[0].code is C.CapabilityInadmissible
    with pytest.raises(FabricError):
        create_adapter_use("FixedVectorParallelize", set(), 4)


# --- anchor 10 ---------------------------------------------------------------------------------

def test_anchor_adapter_contracts_round_trip_to_the_exact_normalized_two_state_record():
    for fam, m in (("FixedVectorParallelize", 1), ("FixedVectorSerialize", 5)):
        rec = adapter_contract(fam, m)
        back = decode_contract(encode_contract(rec))
        assert back == rec
        assert [(s.capacity_dimension_key, s.capacity, s.initial_occupancy) for s in back.states] == [(0, 1, 0), (0, 1, 0)]
        assert back.requesters == (0,) and back.grant_policy is None
        assert back.events == ("Accept", "Commit", "Release") and back.timings[0].ranks == (0, 1, 1)
        c = len(back.use_patterns)
        assert back.eligibility_keys == back.transition_keys == tuple(range(c))
        for k, p in enumerate(back.use_patterns):
            assert (p.key, p.requester, p.eligibility, p.transition, p.timing) == (k, 0, k, k, 0)
            assert (p.acquire_event, p.commit_event, p.release_event) == (0, 1, 2)
            assert [(x.claim, x.state, x.dimension, x.amount) for x in p.claims][0] == (0, 0, 0, 1)
            assert all(t == 1 for t in p.transactions)          # transactions select exactly claim one
        slots = [len(p.transactions) for p in back.use_patterns]
        assert slots == ([0, 1, 1, 2] if fam == "FixedVectorParallelize" else [m, 1])
        assert [len(p.claims) for p in back.use_patterns] == [1 if n == 0 else 2 for n in slots]
    with pytest.raises(FabricError) as e:
        match_adapter_contract("FixedVectorSerialize", one_cycle_elastic())
    assert e.value.diagnostics[0].code is C.Unsupported


# --- anchor 11 ---------------------------------------------------------------------------------

class _Padded(tuple):
    """A physical mask port: records every lane the adapter reads."""
    reads: list

    def __getitem__(self, i):
        self.reads.append(i)
        return tuple.__getitem__(self, i)


def test_anchor_serialize_with_l_below_m_never_activates_or_observes_padding():
    s = SerializeAdapter(max_lanes=4, logical_lanes=2)
    mask = _Padded((True, False, True, True))  # lanes 2 and 3 are physical padding set to one
    mask.reads = []
    s.step(0, (1, 2, 3, 4), mask, True, (True, True))
    assert max(mask.reads) < 2
    outs = [s.step(t, None, None, None, (True, True)).outputs for t in range(1, 4)]
    assert outs == [(1, True), (None, None), (None, None)]   # one transaction: lane 0 only


# --- anchor 12 ---------------------------------------------------------------------------------

def _div_fabric(uses, refinements=()):
    fu = fu_doc([op_node("div", "ScalarSignedIntegerDivRem", ["arith.divsi", "arith.remsi"], {"integer_widths": [16, 32]},
                         ["in.0", "in.1"], ["bits<32>"] * 2, ["bits<32>"],
                         [{"physical_refinement": {"kind": "pipeline_depth", "values": [4, 8]}}])],
                ["div.0"], [{"name": "t", "nodes": ["div"]}])
    return load_document(doc([fu], {"templates": {"fu": "t"}, "uses": uses,
                                    "physical_refinements": list(refinements)}))


def test_anchor_equal_repeated_assignments_collapse_conflicting_ones_reject():
    q16 = jactor("arith.divsi", ["i16", "i16"], ["i16"])
    q16_exact = jactor("arith.divsi", ["i16", "i16"], ["i16"], exact=True)
    f = _div_fabric([use("a", "fu/div", q16, [0, 1], [0]), use("b", "fu/div", q16_exact, [0, 1], [0])])
    proj, diags = derive_fields(f, f.mapping)
    assert diags == [] and proj.values["a"] == proj.values["b"]
    assert proj.configurations["fu/div"].semantic_configuration == proj.values["a"]
    r16 = jactor("arith.remsi", ["i16", "i16"], ["i16"])
    f = _div_fabric([use("a", "fu/div", q16, [0, 1], [0]), use("c", "fu/div", r16, [0, 1], [0])])
    _, diags = derive_fields(f, f.mapping)
    assert [d.code for d in diags] == [C.ConflictingAssignment]


def test_anchor_semantic_preserving_refinement_leaves_the_software_function_unchanged():
    q16 = jactor("arith.divsi", ["i16", "i16"], ["i16"])
    plain = _div_fabric([use("a", "fu/div", q16, [0, 1], [0])])
    refined = _div_fabric([use("a", "fu/div", q16, [0, 1], [0])],
                          [{"op": "fu/div", "kind": "pipeline_depth", "value": 8}])
    # pipeline_depth has a typed owner (value type, codec, preservation proof): strict import
    # admits it; a kind without one is still rejected (fabric/refinement.py)
    opaque = _div_fabric([use("a", "fu/div", q16, [0, 1], [0])], [{"op": "fu/div", "kind": "bits", "value": 8}])
    _, strict = derive_fields(opaque, opaque.mapping, strict=True)
    assert [d.code for d in strict] == [C.NonemptyPhysicalRefinement]
    p0, d0 = derive_fields(plain, plain.mapping)
    p1, d1 = derive_fields(refined, refined.mapping, strict=True)
    assert d0 == d1 == []
    assert materialize(plain.mapping) == materialize(refined.mapping)
    a0, a1 = p0.configurations["fu/div"], p1.configurations["fu/div"]
    assert a0.semantic_configuration == a1.semantic_configuration and a1.physical_refinements == (("pipeline_depth", 8),)
    undeclared = _div_fabric([use("a", "fu/div", q16, [0, 1], [0])],
                             [{"op": "fu/div", "kind": "pipeline_depth", "value": 5}])
    assert [d.code for d in derive_fields(undeclared, undeclared.mapping, strict=False)[1]] == [C.UnknownReference]
