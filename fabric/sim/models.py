"""Which implementation families have a cycle model, and how a mapped use becomes a resource.

`CYCLE_MODELS` maps every ImplementationFamilyId of `fabric.families.FAMILIES` that runs in
the simulator to the factory building its resource from the exact mapped actor.
`NO_CYCLE_MODEL` lists, with the reason, every other registered family: the graph loader
rejects a use of one with a `NoCycleModel` diagnostic.  A test checks the two tables
partition the registry, so a new family cannot silently fall through.
"""
from __future__ import annotations

from ..families import FAMILIES
from ..types import IndexType, IntegerType, VectorType, payload_bits
from . import resources as R
from .semantics import _signed, kernel_for


def _width(t, iw):
    return payload_bits(t, iw)


def _index_cast(use):
    a, iw = use.actor, use.corr.index_width
    s, d = _width(a.inputs[0], iw), _width(a.results[0], iw)
    m = (1 << d) - 1
    if a.schema == "arith.index_cast":
        return lambda x: (_signed(x, s) & m,)
    return lambda x: (x & m,)


def _vector_elementwise(use):
    a = use.actor
    vt = a.inputs[0]
    from .semantics import INTEGER_BINARY
    f = INTEGER_BINARY[a.schema](vt.element.width)
    return lambda x, y: (tuple(f(p, q) for p, q in zip(x, y)),)


def _vector_float_sign(use):
    from ..schemas import make_actor
    vt = use.actor.inputs[0]
    f = kernel_for(make_actor(use.actor.schema, [vt.element], [vt.element]))
    return None if f is None else (lambda v: (tuple(f(x)[0] for x in v),))


def stateless_function(use):
    """The semantic kernel of a stateless use, or None when this model has none for its exact types."""
    a = use.actor
    if a.schema in ("arith.index_cast", "arith.index_castui"):
        return _index_cast(use)
    if use.family in ("FixedVectorIntegerAddSub", "FixedVectorIntegerLogic"):
        return _vector_elementwise(use)
    if use.family == "FixedVectorFloatSign":
        return _vector_float_sign(use)
    return kernel_for(a)


def _stateless(use):
    a = use.actor
    return R.Elastic(stateless_function(use), len(a.inputs), len(a.results))


def _stream(use):
    a = use.actor
    return R.Stream(a.attr("step_kind"), a.attr("predicate"), a.inputs[0].width)


def _routed(kind):
    return lambda use: R.Routed(kind, len(use.actor.inputs), len(use.actor.results), use.name)


def _parallelize(use):
    vt = use.actor.results[0]
    return R.Parallelize(vt.shape[0], zero=0)


def _serialize(use):
    from ..contract import contract_for
    vt = use.actor.inputs[0]
    m = len(contract_for(use.fabric_op).use_patterns[0].transactions)
    return R.Serialize(m, vt.shape[0], zero=0)


_SCALAR_INTEGER = ("ScalarIntegerAddSub", "ScalarIntegerSaturatingAddSub", "ScalarIntegerCountZeros",
                   "ScalarIntegerLogic", "ScalarIntegerShift", "ScalarIntegerCompareMinMax", "ScalarValueSelect",
                   "ScalarIntegerCast", "ScalarBitReinterpret", "ScalarIntegerMultiply",
                   "ScalarSignedIntegerDivRem", "ScalarUnsignedIntegerDivRem",
                   "FixedVectorIntegerAddSub", "FixedVectorIntegerLogic",
                   "FixedVectorPack", "FixedVectorUnpack", "TokenConstant", "TokenSync")
_FLOATING = ("ScalarFloatSign", "ScalarFloatAddSub", "ScalarFloatCompareMinMax", "ScalarFloatWidthCast",
             "ScalarIntegerToFloat", "ScalarFloatToInteger", "ScalarFloatMultiply", "ScalarFloatFma",
             "ScalarFloatDivide", "ScalarMathSqrt", "ScalarMathRsqrt", "ScalarMathExp", "ScalarMathLog",
             "FixedVectorFloatSign")

CYCLE_MODELS = {
    **{f: _stateless for f in _SCALAR_INTEGER + _FLOATING},
    "LoopStream": _stream,
    "LoopCarry": lambda use: R.Carry(),
    "LoopInvariant": lambda use: R.Invariant(),
    "LoopGate": lambda use: R.Gate(),
    "TokenMux": _routed("mux"),
    "TokenDemux": _routed("demux"),
    "FixedVectorParallelize": _parallelize,
    "FixedVectorSerialize": _serialize,
}

NO_CYCLE_MODEL = {
    **{f: "no correctly rounded kernel for this function is wired in" for f in FAMILIES
       if f.startswith("ScalarMath") and f not in _FLOATING},
    "ScalarFloatRemainder": "arith.remf is fmod; the ISA's TREM is floor modulo, so no kernel is wired in",
    "FixedVectorSliceAlignMerge": "vector.extract/insert have no cycle model yet",
    "FixedVectorShuffle": "vector.shuffle has no cycle model yet",
    # the PE's tile engines run whole blocks; their timing is the block-stream timing mode
    # (emulator timing, docs/timing.md), not a dataflow actor transition
    "TileVecEngine": "a PE tile engine is timed per block by `tile-emu run --timing`, not as a dataflow actor",
    "TileSfuEngine": "a PE tile engine is timed per block by `tile-emu run --timing`, not as a dataflow actor",
}


def no_kernel_reason(use) -> str | None:
    """Why a use of a family with a cycle model still cannot run (its exact types, its rounding
    mode), or None."""
    if CYCLE_MODELS.get(use.family) is not _stateless:
        return None
    a = use.actor
    if use.family in ("FixedVectorPack", "FixedVectorUnpack", "TokenConstant", "TokenSync", "ScalarBitReinterpret",
                      "ScalarValueSelect"):
        return None
    t = a.inputs[0]
    if isinstance(t, IndexType) or (use.family in _SCALAR_INTEGER and not (
            isinstance(t, IntegerType) or (isinstance(t, VectorType) and isinstance(t.element, IntegerType)))):
        if a.schema not in ("arith.index_cast", "arith.index_castui"):
            return f"{a.schema} on {t}: no cycle model (integer kernels take iN operands)"
    if stateless_function(use) is None:
        return (f"{a.schema} on {t}" + (f" with rounding {a.attr('rounding_mode')}" if a.attr("rounding_mode") else "")
                + ": no kernel in this model (ieee profile, round to nearest even; integer conversions of 8 to 64 bits)")
    return None


def build(use):
    """The resource running `use` (a mapped use, with .family and .fabric_op attached)."""
    return CYCLE_MODELS[use.family](use)
