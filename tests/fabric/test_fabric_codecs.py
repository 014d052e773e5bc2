"""Canonical codecs, byte-exact.  Every golden byte string is written out here from the
seed's rules (ASCII domain, one zero byte, u32be(1), u32be(0), length-prefixed frames,
u64be lane ordinals, LSB-first carriers), never produced by the code under test."""
import struct

import pytest

from fabric import codec
from fabric.codec import CodecError
from fabric.contract import (adapter_contract, decode_contract, encode_contract, one_cycle_elastic)
from fabric.relation import derive_relation
from fabric_fixtures import actor, corr, make_op, profile


def u32(v):
    return struct.pack(">I", v)


def u64(v):
    return struct.pack(">Q", v)


def fr(b):
    return u32(len(b)) + b


HEAD = b"loom.fabric.operation-behavior-key" + b"\x00" + u32(1) + u32(0)


def divrem():
    return make_op("ScalarSignedIntegerDivRem", ["arith.divsi", "arith.remsi"], {"integer_widths": [16, 32]},
                   ["bits<32>", "bits<32>"], ["bits<32>"])


# --- finite behaviour keys ---------------------------------------------------------------

def test_divrem_keys_are_role_and_active_width_golden():
    rel = derive_relation(divrem())
    fam = fr(b"ScalarSignedIntegerDivRem")
    want = [HEAD + fam + fr(b"Quotient") + u32(16), HEAD + fam + fr(b"Quotient") + u32(32),
            HEAD + fam + fr(b"Remainder") + u32(16), HEAD + fam + fr(b"Remainder") + u32(32)]
    assert list(rel.keys) == want
    assert rel.project(actor("arith.remsi", ["i32", "i32"], ["i32"])) == want[3]


def test_float_compare_key_frames_predicate_and_format_golden():
    op = make_op("ScalarFloatCompareMinMax", ["arith.cmpf"],
                 {"formats": ["f16", "f32"], "comparison_predicates": ["oeq", "ueq"], "behavior": profile()},
                 ["bits<32>", "bits<32>"], ["bits<1>"])
    rel = derive_relation(op)
    pred = b"loom.dataflow.float-compare-predicate\x00" + u32(1) + u32(0) + u32(9)  # ueq = wire tag 9
    fmt = b"loom.dataflow.canonical-type\x00" + u32(1) + u32(0) + u32(2) + fr(b"f32")  # float kind 2
    key = HEAD + fr(b"ScalarFloatCompareMinMax") + fr(b"Compare") + fr(pred) + fr(fmt)
    assert rel.project(actor("arith.cmpf", ["f32", "f32"], ["i1"], predicate="ueq")) == key
    assert key in rel.keys and len(rel.keys) == 4


def test_token_mux_lane_image_key_golden():
    op = make_op("TokenMux", ["dataflow.mux"], {"max_payload_bits": 32, "max_fan": 2},
                 ["bits<1>", "bits<32>", "bits<16>"], ["bits<32>"])
    rel = derive_relation(op)
    a = actor("dataflow.mux", ["i1", "i16", "i16"], ["i16"])
    # actor lane order observable: data lanes (2, 1) = physical inputs 2 then 1
    key = HEAD + fr(b"TokenMux") + fr(b"") + u32(2) + u64(2) + u64(1)
    assert rel.project(a, corr([0, 2, 1], [0])) == key
    assert rel.project(a, corr([0, 1, 2], [0])) == HEAD + fr(b"TokenMux") + fr(b"") + u32(2) + u64(1) + u64(2)


def test_keys_are_sorted_by_lexicographic_canonical_bytes():
    for op in (divrem(), make_op("ScalarIntegerCompareMinMax", ["arith.cmpi", "arith.minsi", "arith.maxui"],
                                 {"operand_widths": [8, 32], "comparison_predicates": ["eq", "slt", "ugt"]},
                                 ["bits<32>", "bits<32>"], ["bits<32>"])):
        keys = list(derive_relation(op).keys)
        assert keys == sorted(keys) and len(set(keys)) == len(keys)


def test_key_round_trip_every_key():
    rel = derive_relation(divrem())
    for k in rel.keys:
        role, comps = rel.decode_key(k)
        assert codec.encode_behavior_key(rel.family, role, comps) == k


@pytest.mark.parametrize("bad, why", [
    (HEAD + fr(b"ScalarSignedIntegerDivRem") + fr(b"Product") + u32(16), "unknown role"),
    (HEAD + fr(b"ScalarSignedIntegerDivRem") + fr(b"Quotient") + u32(0), "zero width"),
    (HEAD + fr(b"ScalarSignedIntegerDivRem") + fr(b"Quotient") + u32(16) + b"\x00", "trailing"),
    (HEAD + fr(b"ScalarUnsignedIntegerDivRem") + fr(b"Quotient") + u32(16), "family"),
    (HEAD + fr(b"ScalarSignedIntegerDivRem") + fr(b"Quotient") + u32(64), "outside"),
    (b"loom.fabric.operation-behavior-kez\x00" + u32(1) + u32(0), "domain"),
    (b"loom.fabric.operation-behavior-key\x00" + u32(2) + u32(0), "domain"),
])
def test_key_codec_rejections(bad, why):
    with pytest.raises(CodecError, match=why):
        derive_relation(divrem()).decode_key(bad)


def test_key_codec_rejects_every_truncation():
    rel = derive_relation(divrem())
    for k in rel.keys:
        for n in range(len(k)):
            with pytest.raises(CodecError):
                rel.decode_key(k[:n])


def _sync_rel():
    op = make_op("TokenSync", ["dataflow.sync"], {"max_payload_bits": 32, "max_fan": 3},
                 ["bits<32>"] * 3, ["bits<32>"] * 3)
    return derive_relation(op)


@pytest.mark.parametrize("lanes, why", [((1, 1), "repeats"), ((0, 7), "out of range"), ((0, 1, 2, 0), "exceed")])
def test_lane_image_rejects_duplicates_and_out_of_range(lanes, why):
    bad = HEAD + fr(b"TokenSync") + fr(b"") + u32(len(lanes)) + b"".join(u64(o) for o in lanes)
    with pytest.raises(CodecError, match=why):
        _sync_rel().decode_key(bad)


def test_noncanonical_component_bytes_rejected():
    op = make_op("ScalarFloatCompareMinMax", ["arith.cmpf"],
                 {"formats": ["f32"], "comparison_predicates": ["oeq", "ueq"], "behavior": profile()},
                 ["bits<32>", "bits<32>"], ["bits<1>"])
    rel = derive_relation(op)
    good = b"loom.dataflow.float-compare-predicate\x00" + u32(1) + u32(0) + u32(9)
    for atom in (good + b"\x00",                                          # trailing byte inside the frame
                 good[:-4] + u32(17),                                      # unknown wire tag
                 b"loom.dataflow.integer-compare-predicate\x00" + u32(1) + u32(0) + u32(1)):  # wrong domain
        with pytest.raises(CodecError):
            rel.decode_key(HEAD + fr(b"ScalarFloatCompareMinMax") + fr(b"Compare") + fr(atom))
    assert rel.decode_key(HEAD + fr(b"ScalarFloatCompareMinMax") + fr(b"Compare") + fr(good)) == (
        "Compare", (("float_predicate", "ueq"),))


def test_atom_codecs_golden_and_rejections():
    assert codec.encode_atom("int_predicate", "sge") == b"loom.dataflow.integer-compare-predicate\x00" + u32(1) + u32(0) + u32(6)
    assert codec.encode_atom("rounding", "toward_zero") == b"loom.dataflow.rounding-mode\x00" + u32(1) + u32(0) + u32(4)
    assert codec.decode_atom("rounding", b"loom.dataflow.rounding-mode\x00" + u32(1) + u32(0) + u32(5)) == "to_nearest_away"
    for bad in (b"loom.dataflow.rounding-mode\x00" + u32(1) + u32(0) + u32(6),
                b"loom.dataflow.rounding-mode\x00" + u32(1) + u32(0) + u32(1) + b"\x00",
                b"loom.dataflow.rounding-mode\x00" + u32(1) + u32(0) + b"\x00\x00"):
        with pytest.raises(CodecError):
            codec.decode_atom("rounding", bad)


def test_canonical_type_golden_and_round_trip():
    from fabric.types import parse_type
    t = parse_type("vector<2x3xbf16>")
    want = (b"loom.dataflow.canonical-type\x00" + u32(1) + u32(0) + u32(5) + u32(2) + u64(2) + u64(3)
            + u32(2) + fr(b"bf16"))
    assert codec.encode_type(t) == want
    assert codec.decode_type(want) == t
    with pytest.raises(CodecError):
        codec.decode_type(want + b"\x00")
    with pytest.raises(CodecError):
        codec.decode_type(want[:-2] + b"64")  # "bf64" is no format


# --- direct carriers ---------------------------------------------------------------------

def test_cardinality_and_inclusive_bits_table():
    def smallest_k(n):  # independent: the least k with 2**k >= n
        k = 0
        while (1 << k) < n:
            k += 1
        return k
    for m in range(0, 300):
        assert codec.cardinality_bits(m) == (0 if m <= 1 else smallest_k(m))
        assert codec.inclusive_bits(m) == (0 if m == 0 else smallest_k(m + 1))
    assert [codec.cardinality_bits(m) for m in (0, 1, 2, 3, 4, 5, 8, 9)] == [0, 0, 1, 2, 2, 3, 3, 4]
    assert [codec.inclusive_bits(m) for m in (0, 1, 2, 3, 4, 7, 8)] == [0, 1, 2, 2, 3, 3, 4]


def test_carrier_bytes_are_lsb_first_with_zero_high_bits():
    # carrier bit k lives at bit k % 8 of byte k // 8
    assert codec.encode_carrier((1 << 10) | 1, 11) == bytes([0b0000_0001, 0b0000_0100])
    assert codec.decode_carrier(bytes([0x80, 0x0F, 0x02]), 19) == 0x20F80
    for bad, n in ((bytes([0x00, 0x08]), 11), (bytes([0x01]), 11), (bytes([0, 0, 0]), 11)):
        with pytest.raises(CodecError):
            codec.decode_carrier(bad, n)


def test_token_constant_carrier_golden():
    op = make_op("TokenConstant", ["dataflow.constant"], {"max_payload_bits": 32}, ["bits<0>"], ["bits<16>"])
    rel = derive_relation(op)
    assert rel.encoded_bit_count == 16  # min(max_payload_bits 32, result port 16)
    f16_one = actor("dataflow.constant", ["none"], ["f16"], value=0x3C00)
    assert rel.encode(rel.project(f16_one)) == b"\x00\x3c"
    neg_zero = actor("dataflow.constant", ["none"], ["f16"], value=0x8000)  # signed zero retained
    assert rel.encode(rel.project(neg_zero)) == b"\x00\x80"
    dense = actor("dataflow.constant", ["none"], ["vector<2xi8>"], value=[0x01, 0x80])  # lane 0 least significant
    assert rel.encode(rel.project(dense)) == b"\x01\x80"
    narrow = actor("dataflow.constant", ["none"], ["i4"], value=0xF)  # never sign-extended: bits [4,16) zero
    assert rel.encode(rel.project(narrow)) == b"\x0f\x00"
    assert rel.decode(b"\xff\xff") == 0xFFFF  # complete N-bit domain
    with pytest.raises(CodecError):
        rel.decode(b"\xff\xff\x00")


def _vec_ops():
    slice_op = make_op("FixedVectorSliceAlignMerge", ["vector.extract", "vector.insert"],
                       {"integer_element_widths": [8, 16], "float_element_formats": [],
                        "max_container_payload_bits": 64, "max_slice_payload_bits": 32,
                        "max_dynamic_position_rank": 1, "resolved_index_widths": [32]},
                       ["bits<64>", "bits<64>", "bits<32>"], ["bits<64>"])
    shuffle_op = make_op("FixedVectorShuffle", ["vector.shuffle"],
                         {"integer_element_widths": [8, 16], "float_element_formats": ["f16"],
                          "max_operand_payload_bits": 64, "max_result_payload_bits": 64,
                          "max_block_payload_bits": 16, "max_source_blocks": 6, "max_result_blocks": 4},
                         ["bits<64>", "bits<64>"], ["bits<64>"])
    return derive_relation(slice_op), derive_relation(shuffle_op)


def test_slice_carrier_golden():
    rel, _ = _vec_ops()
    # mode(1) + static_offset cardinality_bits(64)=6 + slice-1 cardinality_bits(32)=5 + stride inclusive_bits(64)=7
    assert [w for _, w in rel.fields] == [1, 6, 5, 7] and rel.encoded_bit_count == 19
    a = actor("vector.extract", ["vector<2x4xi8>", "index"], ["vector<4xi8>"], static_position=["dynamic"])
    value = 0 | (0 << 1) | ((32 - 1) << 7) | (32 << 12)  # extract, O=0, B=32, stride 32
    assert rel.project(a, corr([0, 2], [0], 32)) == value
    assert rel.encode(value) == bytes([value & 0xFF, (value >> 8) & 0xFF, value >> 16])
    ins = actor("vector.insert", ["i8", "vector<2x4xi8>"], ["vector<2x4xi8>"], static_position=[1, 2])
    assert rel.project(ins) == 1 | ((1 * 32 + 2 * 8) << 1) | ((8 - 1) << 7)  # insert, O=48, B=8, no stride


def test_shuffle_carrier_golden_poison_is_selector_zero():
    _, rel = _vec_ops()
    # block cardinality_bits(16)=4, left/selector cardinality_bits(6)=3, result cardinality_bits(4)=2
    assert [w for _, w in rel.fields] == [4, 3, 2, 3, 3, 3, 3]
    a = actor("vector.shuffle", ["vector<2xi16>", "vector<2xi16>"], ["vector<3xi16>"], mask=[3, -1, 0])
    value = 15 | (1 << 4) | (2 << 7) | (3 << 9) | (0 << 12) | (0 << 15) | (0 << 18)
    assert rel.project(a) == value == 0x71F
    assert rel.encode(value) == b"\x1f\x07\x00"
    assert rel.decode(b"\x1f\x07\x00") == value


@pytest.mark.parametrize("value, why", [
    (15 | (1 << 4) | (2 << 7) | (6 << 9), "over-codes"),          # selector 6 >= max_source_blocks
    (15 | (1 << 4) | (0 << 7) | (1 << 12), "after the result count"),  # padding slot nonzero
    (14 | (1 << 4) | (0 << 7), "divides"),                       # B = 15: no element width divides it
    (15 | (5 << 4) | (0 << 7), "max_source_blocks"),             # L = 6 leaves no right block
])
def test_shuffle_validator_rejections(value, why):
    _, rel = _vec_ops()
    with pytest.raises(CodecError, match=why):
        rel.validate(value)


@pytest.mark.parametrize("fields, why", [
    ((0, 4, 7, 0), "multiple"),          # O = 4 bits not a multiple of B = 8
    ((0, 0, 7, 12), "multiple"),         # stride 12 not a multiple of B = 8
    ((0, 0, 2, 0), "divides"),           # B = 3
    ((0, 48, 15, 0), "container"),       # extract: (48/16 + 1) * 16 = 64 fits; B = 16 ok -> see next
])
def test_slice_validator_rejections(fields, why):
    rel, _ = _vec_ops()
    value = codec.pack_fields(list(zip(fields, [1, 6, 5, 7])))
    if fields == (0, 48, 15, 0):
        rel.validate(value)  # the minimum container exactly fits: accepted
        value = codec.pack_fields(list(zip((0, 48, 31, 0), [1, 6, 5, 7])))  # B = 32: O not a multiple
        why = "multiple"
    with pytest.raises(CodecError, match=why):
        rel.validate(value)


# --- resource-contract codec -------------------------------------------------------------

def test_one_cycle_elastic_contract_golden():
    want = (b"loom.fabric.resource-contract-record\x00" + u32(1) + u32(0)
            + u32(1) + u32(0) + u32(1) + u32(0)                          # one state: dim 0, capacity 1, occupancy 0
            + u32(1) + u32(0)                                            # one requester, key 0
            + u32(0)                                                     # no grant policy
            + u32(3) + fr(b"Accept") + fr(b"Publish") + fr(b"Release")
            + u32(1) + u32(0) + u32(3) + u32(0) + u32(1) + u32(1)        # timing 0: ranks {0,1,1}
            + u32(1) + u32(0) + u32(1) + u32(0)                          # eligibility {0}, transition {0}
            + u32(1) + u32(0) + u32(0) + u32(0) + u32(0) + u32(0) + u32(0) + u32(1) + u32(2)
            + u32(1) + u32(0) + u32(0) + u32(0) + u32(1)                 # claim 0 over state 0, dim 0, amount 1
            + u32(0) + u32(0) + u32(0))                                  # no transactions, empty schemas
    assert encode_contract(one_cycle_elastic()) == want
    assert decode_contract(want) == one_cycle_elastic()


def test_contract_codec_rejections():
    good = encode_contract(adapter_contract("FixedVectorParallelize"))
    for n in range(len(good)):
        with pytest.raises(CodecError):
            decode_contract(good[:n])
    with pytest.raises(CodecError):
        decode_contract(good + b"\x00")
    # a claim amount above its state's capacity is not satisfiable
    bad = good.replace(u32(1) + u32(1) + u32(0) + u32(1), u32(1) + u32(1) + u32(0) + u32(2), 1)
    with pytest.raises(CodecError):
        decode_contract(bad)
