"""The operation-schema registry and the implementation-family (HSG) registry."""
import struct

import pytest

from fabric import codec
from fabric.contract import adapter_contract, decode_contract, encode_contract
from fabric.families import FAMILIES, families_for
from fabric.params import RECORDS, ATOM_KINDS
from fabric.schemas import SCHEMAS, ActorInvalid, check_actor
from fabric_fixtures import actor

MATH = ["Sin", "Cos", "Tan", "Sinh", "Cosh", "Tanh", "Exp", "Exp2", "ExpM1", "Log", "Log2", "Log10", "Log1p",
        "Floor", "Ceil", "Round", "Trunc", "RoundEven", "Sqrt", "Rsqrt", "Erf", "Pow"]


def test_the_22_scalar_math_rows():
    rows = [k for k in FAMILIES if k.startswith("ScalarMath")]
    assert rows == [f"ScalarMath{m}" for m in MATH]
    for m in MATH:
        d = FAMILIES[f"ScalarMath{m}"]
        assert len(d.admitted) == 1 and d.params.__name__ == "ScalarSpecialMathParams"
        assert d.inventory == ("exact", 2 if m == "Pow" else 1, 1)
        n = 2 if m == "Pow" else 1
        check_actor(actor(d.admitted[0], ["f32"] * n, ["f32"], accuracy="correctly_rounded"))


def test_every_scalar_family_the_seed_names_is_registered_with_its_record():
    want = {
        "ScalarIntegerAddSub": "ScalarIntegerAddSubParams", "ScalarIntegerCompareMinMax": "ScalarIntegerCompareMinMaxParams",
        "ScalarIntegerCast": "ScalarIntegerCastParams", "ScalarIntegerToFloat": "ScalarIntegerFloatConversionParams",
        "ScalarFloatToInteger": "ScalarIntegerFloatConversionParams", "ScalarSignedIntegerDivRem": "ScalarIntegerParams",
        "ScalarUnsignedIntegerDivRem": "ScalarIntegerParams", "ScalarIntegerLogic": "ScalarIntegerParams",
        "ScalarIntegerShift": "ScalarIntegerParams", "ScalarIntegerCountZeros": "ScalarIntegerParams",
        "ScalarFloatAddSub": "ScalarFloatParams", "ScalarFloatCompareMinMax": "ScalarFloatCompareMinMaxParams",
        "TokenConstant": "PayloadCapacityParams", "TokenSync": "RoutedTokenParams", "TokenMux": "RoutedTokenParams",
        "TokenDemux": "RoutedTokenParams", "LoopStream": "LoopStreamParams", "LoopCarry": "TokenPlaneParams",
        "LoopInvariant": "TokenPlaneParams", "LoopGate": "TokenPlaneParams",
        "FixedVectorSliceAlignMerge": "FixedVectorSliceAlignMergeParams", "FixedVectorShuffle": "FixedVectorShuffleParams",
        "FixedVectorPack": "FixedVectorAdapterParams", "FixedVectorUnpack": "FixedVectorAdapterParams",
        "FixedVectorParallelize": "FixedVectorAdapterParams", "FixedVectorSerialize": "FixedVectorAdapterParams",
    }
    for fam, rec in want.items():
        assert FAMILIES[fam].params.__name__ == rec


def test_registry_is_closed_and_consistent():
    for k, d in FAMILIES.items():
        assert d.keyword == k and d.params in RECORDS.values()
        assert all(s in SCHEMAS for s in d.admitted) and len(set(d.admitted)) == len(d.admitted)
        for s in d.admitted:
            assert k in families_for(s)
    for rec in RECORDS.values():
        assert all(kind in ATOM_KINDS for kind in rec.FIELDS.values())
    assert FAMILIES["ScalarFloatToInteger"].admitted == ("arith.fptosi", "arith.fptoui", "llvm.fptosi.sat",
                                                         "llvm.fptoui.sat")
    assert "llvm.getelementptr" in FAMILIES["ScalarIntegerAddSub"].admitted


@pytest.mark.parametrize("schema, ins, outs, attrs", [
    ("arith.cmpi", ["i32", "i32"], ["i32"], {"predicate": "eq"}),              # result must be i1
    ("arith.cmpi", ["i32", "i32"], ["i1"], {}),                                 # predicate required
    ("arith.extsi", ["i32"], ["i16"], {}),                                      # must widen
    ("arith.index_cast", ["index"], ["index"], {}),                             # exactly one index endpoint
    ("arith.addf", ["f32", "f32"], ["f32"], {"predicate": "oeq"}),              # closed attribute set
    ("math.sin", ["f32"], ["f32"], {"accuracy": "max_2ulp"}),                   # approximating needs afn
    ("dataflow.constant", ["none"], ["i8"], {"value": 256}),                    # raw bits out of range
    ("vector.extract", ["vector<2x3xi8>"], ["i8"], {"static_position": [1]}),   # result is vector<3xi8>
    ("vector.shuffle", ["vector<2xi8>", "vector<2xi8>"], ["vector<2xi8>"], {"mask": [0, 4]}),  # mask range
    ("dataflow.mux", ["i1", "i8", "i8", "i8"], ["i8"], {}),                     # i1 cannot address 3 lanes
    ("dataflow.pack", ["vector<4xi8>"], ["i16"], {}),                           # equal total width
    ("arith.frob", ["i1"], ["i1"], {}),                                         # unregistered
])
def test_schema_instance_validity(schema, ins, outs, attrs):
    with pytest.raises(ActorInvalid):
        check_actor(actor(schema, ins, outs, **attrs))


def test_valid_instances():
    for a in (actor("arith.index_castui", ["i32"], ["index"]),
              actor("vector.extract", ["vector<2x3xi8>", "index"], ["vector<3xi8>"], static_position=["dynamic"]),
              actor("vector.insert", ["i8", "vector<4xi8>"], ["vector<4xi8>"], static_position=[3]),
              actor("dataflow.demux", ["i2", "f32"], ["f32", "f32", "f32"]),
              actor("dataflow.serialize", ["vector<4xf16>", "vector<4xi1>", "i1"], ["f16", "i1"]),
              actor("llvm.intr.ctlz", ["i16"], ["i16"]),
              actor("dataflow.constant", ["none"], ["vector<2xf16>"], value=[0x3C00, 0x8000])):
        check_actor(a)


def u32(v):
    return struct.pack(">I", v)


def test_canonical_actor_bytes_golden():
    a = actor("arith.cmpi", ["i8", "i8"], ["i1"], predicate="slt")
    body = lambda w: u32(1) + u32(w)  # noqa: E731  integer type body
    want = (b"loom.dataflow.canonical-actor\x00" + u32(1) + u32(0) + u32(10) + b"arith.cmpi"
            + u32(2) + u32(8) + body(8) + u32(8) + body(8) + u32(1) + u32(8) + body(1)
            + u32(1) + u32(9) + b"predicate" + u32(11) + u32(3) + u32(3) + b"slt")
    assert a.canonical_bytes() == want == codec.encode_actor("arith.cmpi", a.inputs, a.results, a.attrs)


def test_serialize_adapter_contract_golden_bytes():
    m = 2
    fr = lambda b: u32(len(b)) + b  # noqa: E731
    pattern = lambda c, n: (u32(c) + u32(0) + u32(c) + u32(c) + u32(0) + u32(0) + u32(1) + u32(2)  # noqa: E731
                            + u32(2) + u32(0) + u32(0) + u32(0) + u32(1) + u32(1) + u32(1) + u32(0) + u32(1)
                            + u32(n) + u32(1) * n + u32(0) + u32(0))
    want = (b"loom.fabric.resource-contract-record\x00" + u32(1) + u32(0)
            + u32(2) + (u32(0) + u32(1) + u32(0)) * 2 + u32(1) + u32(0) + u32(0)
            + u32(3) + fr(b"Accept") + fr(b"Commit") + fr(b"Release")
            + u32(1) + u32(0) + u32(3) + u32(0) + u32(1) + u32(1)
            + u32(2) + u32(0) + u32(1) + u32(2) + u32(0) + u32(1)
            + u32(2) + pattern(0, m) + pattern(1, 1))
    assert encode_contract(adapter_contract("FixedVectorSerialize", m)) == want
    assert decode_contract(want) == adapter_contract("FixedVectorSerialize", m)
    # keys that are not dense 0..n-1 are not canonical
    with pytest.raises(codec.CodecError):
        decode_contract(want.replace(u32(2) + u32(0) + u32(1) + u32(2) + u32(0) + u32(1),
                                     u32(2) + u32(1) + u32(0) + u32(2) + u32(0) + u32(1), 1))
