"""The normative implementation-family (HSG) registry.

One descriptor per ImplementationFamilyId owns exactly: the family keyword, the admitted
OperationSchemaIds (the HSG member relation, in canonical member order), the one closed
hw_params record schema FamilyCapabilityParams(F), and the typed admission provider.  The
remaining columns say how this model interprets a concrete resource of the family: its
physical role inventory, where bits_tag ports may appear, the resource contract it admits
and which semantic-field relation rule derives its FabricOpSemanticFieldRelation.

An HSG authorises physical sharing; it never enables a member on a concrete resource (op_list
does) and never proves resource-time exclusivity.
"""
from __future__ import annotations

from dataclasses import dataclass

from isa.instructions import ENGINES, INSTRUCTIONS

from . import params as P
from .schemas import tile_schema_id

MATH_FUNCTIONS = ("Sin", "Cos", "Tan", "Sinh", "Cosh", "Tanh", "Exp", "Exp2", "ExpM1", "Log",
                  "Log2", "Log10", "Log1p", "Floor", "Ceil", "Round", "Trunc", "RoundEven",
                  "Sqrt", "Rsqrt", "Erf", "Pow")
# A PE's tile engine per seed engine (ADR 0080 assigns each instruction to VEC or SFU); its
# members are that engine's rows of the instruction table, its inputs the widest arity there.
TILE_ENGINE_FAMILIES = {"VEC": "TileVecEngine", "SFU": "TileSfuEngine"}
MATH_SCHEMA = {"ExpM1": "math.expm1", "Log1p": "math.log1p", "RoundEven": "math.roundeven",
               "Pow": "math.powf"}


@dataclass(frozen=True)
class ImplementationFamilyDescriptor:
    keyword: str
    admitted: tuple[str, ...]          # HSG members, canonical member order
    params: type                       # FamilyCapabilityParams(F)
    admission: str                     # typed admission provider
    relation: str                      # semantic-field relation rule (fabric.relation)
    inventory: tuple                   # physical role inventory, see `inventory_error`
    contract: str                      # the ResourceContract kind the family's resources use
    shape: str = "scalar"              # actor shape class the family admits
    tagged: bool = False               # may data ports be bits_tag?


def _f(keyword, admitted, params, admission, relation, inventory, contract="one_cycle_elastic",
       shape="scalar", tagged=False):
    return ImplementationFamilyDescriptor(keyword, tuple(admitted), params, admission, relation,
                                          inventory, contract, shape, tagged)


_BIN = ("exact", 2, 1)
_UN = ("exact", 1, 1)

FAMILIES: dict[str, ImplementationFamilyDescriptor] = {d.keyword: d for d in [
    # scalar integer
    _f("ScalarIntegerAddSub", ["arith.addi", "arith.subi", "llvm.getelementptr"],
       P.ScalarIntegerAddSubParams, "int_uniform", "finite", _BIN),
    _f("ScalarIntegerSaturatingAddSub", ["llvm.intr.sadd.sat", "llvm.intr.uadd.sat",
                                         "llvm.intr.ssub.sat", "llvm.intr.usub.sat"],
       P.ScalarIntegerParams, "int_uniform", "finite", _BIN),
    _f("ScalarIntegerCountZeros", ["math.ctlz", "math.cttz", "llvm.intr.ctlz", "llvm.intr.cttz"],
       P.ScalarIntegerParams, "int_uniform", "finite", _UN),
    _f("ScalarIntegerLogic", ["arith.andi", "arith.ori", "arith.xori", "llvm.or"],
       P.ScalarIntegerParams, "int_uniform", "finite", _BIN),
    _f("ScalarIntegerShift", ["arith.shli", "arith.shrsi", "arith.shrui"],
       P.ScalarIntegerParams, "int_uniform", "finite", _BIN),
    _f("ScalarIntegerCompareMinMax", ["arith.cmpi", "arith.minsi", "arith.maxsi", "arith.minui", "arith.maxui"],
       P.ScalarIntegerCompareMinMaxParams, "int_compare", "finite", _BIN),
    _f("ScalarValueSelect", ["arith.select"], P.ScalarValueSelectParams, "select", "none", ("exact", 3, 1)),
    _f("ScalarIntegerCast", ["arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui"],
       P.ScalarIntegerCastParams, "int_cast", "finite", _UN),
    _f("ScalarBitReinterpret", ["arith.bitcast"], P.ScalarBitReinterpretParams, "bitcast", "none", _UN),
    _f("ScalarIntegerMultiply", ["arith.muli"], P.ScalarIntegerParams, "int_uniform", "none", _BIN),
    _f("ScalarSignedIntegerDivRem", ["arith.divsi", "arith.remsi"], P.ScalarIntegerParams,
       "int_uniform", "finite", _BIN),
    _f("ScalarUnsignedIntegerDivRem", ["arith.divui", "arith.remui"], P.ScalarIntegerParams,
       "int_uniform", "finite", _BIN),
    # scalar floating point
    _f("ScalarFloatSign", ["arith.negf", "math.absf"], P.ScalarFloatParams, "float_uniform", "finite", _UN),
    _f("ScalarFloatAddSub", ["arith.addf", "arith.subf"], P.ScalarFloatParams, "float_uniform", "finite", _BIN),
    _f("ScalarFloatCompareMinMax", ["arith.cmpf", "arith.minimumf", "arith.maximumf", "arith.minnumf", "arith.maxnumf"],
       P.ScalarFloatCompareMinMaxParams, "float_compare", "finite", _BIN),
    _f("ScalarFloatWidthCast", ["arith.extf", "arith.truncf"], P.ScalarFloatWidthCastParams,
       "float_width_cast", "finite", _UN),
    _f("ScalarIntegerToFloat", ["arith.sitofp", "arith.uitofp"], P.ScalarIntegerFloatConversionParams,
       "int_to_float", "finite", _UN),
    _f("ScalarFloatToInteger", ["arith.fptosi", "arith.fptoui", "llvm.fptosi.sat", "llvm.fptoui.sat"],
       P.ScalarIntegerFloatConversionParams, "float_to_int", "finite", _UN),
    _f("ScalarFloatMultiply", ["arith.mulf"], P.ScalarFloatParams, "float_uniform", "finite", _BIN),
    _f("ScalarFloatFma", ["math.fma"], P.ScalarFloatParams, "float_uniform", "finite", ("exact", 3, 1)),
    _f("ScalarFloatDivide", ["arith.divf"], P.ScalarFloatParams, "float_uniform", "finite", _BIN),
    _f("ScalarFloatRemainder", ["arith.remf"], P.ScalarFloatParams, "float_uniform", "finite", _BIN),
    *[_f(f"ScalarMath{fn}", [MATH_SCHEMA.get(fn, f"math.{fn.lower()}")], P.ScalarSpecialMathParams,
         "special_math", "finite", _BIN if fn == "Pow" else _UN) for fn in MATH_FUNCTIONS],
    # fixed-vector compute (elementwise; distinct families from the scalar ones)
    _f("FixedVectorIntegerAddSub", ["arith.addi", "arith.subi"], P.FixedVectorIntegerParams,
       "vector_int", "finite", _BIN, shape="vector"),
    _f("FixedVectorIntegerLogic", ["arith.andi", "arith.ori", "arith.xori", "llvm.or"], P.FixedVectorIntegerParams,
       "vector_int", "finite", _BIN, shape="vector"),
    _f("FixedVectorFloatSign", ["arith.negf", "math.absf"], P.FixedVectorFloatParams,
       "vector_float", "finite", _UN, shape="vector"),
    # fixed-vector structure (Direct carriers)
    _f("FixedVectorSliceAlignMerge", ["vector.extract", "vector.insert"], P.FixedVectorSliceAlignMergeParams,
       "slice", "direct_slice", ("slice",), shape="vector"),
    _f("FixedVectorShuffle", ["vector.shuffle"], P.FixedVectorShuffleParams, "shuffle", "direct_shuffle",
       _BIN, shape="vector"),
    # loop control
    _f("LoopStream", ["dataflow.stream"], P.LoopStreamParams, "loop_stream", "finite", ("exact", 3, 2),
       contract="loop_stream"),
    _f("LoopCarry", ["dataflow.carry"], P.TokenPlaneParams, "token_plane", "none", ("exact", 3, 1),
       contract="elastic_transparent", shape="token", tagged=True),
    _f("LoopInvariant", ["dataflow.invariant"], P.TokenPlaneParams, "token_plane", "none", ("exact", 2, 1),
       contract="elastic_transparent", shape="token", tagged=True),
    _f("LoopGate", ["dataflow.gate"], P.TokenPlaneParams, "token_plane", "none", ("exact", 2, 2),
       contract="elastic_transparent", shape="token", tagged=True),
    # adapters and tokens
    _f("FixedVectorPack", ["dataflow.pack"], P.FixedVectorAdapterParams, "adapter", "none", _UN, shape="adapter"),
    _f("FixedVectorUnpack", ["dataflow.unpack"], P.FixedVectorAdapterParams, "adapter", "none", _UN, shape="adapter"),
    _f("FixedVectorParallelize", ["dataflow.parallelize"], P.FixedVectorAdapterParams, "adapter", "finite",
       ("exact", 2, 3), contract="ordered_cardinality_adapter", shape="adapter"),
    _f("FixedVectorSerialize", ["dataflow.serialize"], P.FixedVectorAdapterParams, "adapter", "finite",
       ("exact", 3, 2), contract="ordered_cardinality_adapter", shape="adapter"),
    _f("TokenConstant", ["dataflow.constant"], P.PayloadCapacityParams, "token_constant", "direct_constant",
       _UN, shape="token"),
    _f("TokenSync", ["dataflow.sync"], P.RoutedTokenParams, "routed_token", "finite", ("sync",),
       shape="token", tagged=True),
    _f("TokenMux", ["dataflow.mux"], P.RoutedTokenParams, "routed_token", "finite", ("mux",),
       shape="token", tagged=True),
    _f("TokenDemux", ["dataflow.demux"], P.RoutedTokenParams, "routed_token", "finite", ("demux",),
       shape="token", tagged=True),
    # tile engines: one block beat per cycle through a fixed-latency pipeline (docs/timing.md)
    *[_f(TILE_ENGINE_FAMILIES[e], [tile_schema_id(i) for i in INSTRUCTIONS if i.engine == e],
         P.TileEngineParams, "tile_engine", "finite",
         ("exact", max(i.arity for i in INSTRUCTIONS if i.engine == e), 1),
         contract="pipelined_beats", shape="tile") for e in ENGINES],
]}

# llvm.getelementptr is an optional ScalarIntegerAddSub member: eligible by HSG, but its
# semantic-field relation is fail-closed (no bounded address-generation carrier exists).
FAIL_CLOSED_MEMBERS = {("ScalarIntegerAddSub", "llvm.getelementptr")}


def families_for(schema: str) -> list[str]:
    """Every implementation family admitting `schema` (a projection of the one table)."""
    return [k for k, d in FAMILIES.items() if schema in d.admitted]


def inventory_error(desc: ImplementationFamilyDescriptor, rec, n_in: int, n_out: int) -> str | None:
    """None when the physical port counts match the family's role inventory."""
    kind = desc.inventory[0]
    if kind == "exact":
        _, want_in, want_out = desc.inventory
        if (n_in, n_out) != (want_in, want_out):
            return f"{desc.keyword} has {want_in} input and {want_out} result roles, not {n_in} and {n_out}"
        return None
    if kind == "sync":
        if n_in < 1 or n_in != n_out:
            return "TokenSync lanes pair input p with result p: equal, positive port counts"
        return None
    if kind == "mux":
        if n_in < 3 or n_out != 1:
            return "TokenMux has a selector input, >= 2 data inputs and one result"
        return None
    if kind == "demux":
        if n_in != 2 or n_out < 2:
            return "TokenDemux has (selector, data) inputs and >= 2 results"
        return None
    if kind == "slice":
        rank = getattr(rec, "max_dynamic_position_rank", None)
        if rank is None:
            return None  # the missing field is reported on its own
        if (n_in, n_out) != (2 + rank, 1):
            return (f"FixedVectorSliceAlignMerge has input roles 0, 1 and one position role per "
                    f"dynamic rank ({2 + rank} inputs) and one result, not {n_in} and {n_out}")
        return None
    raise AssertionError(kind)
