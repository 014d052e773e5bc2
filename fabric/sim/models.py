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


def _stateless(use):
    a = use.actor
    if a.schema in ("arith.index_cast", "arith.index_castui"):
        fn = _index_cast(use)
    elif isinstance(a.inputs[0], VectorType) and a.schema in ("arith.addi", "arith.subi", "arith.andi",
                                                              "arith.ori", "arith.xori", "llvm.or"):
        fn = _vector_elementwise(use)
    else:
        fn = kernel_for(a)
    if fn is None:
        return None
    return R.Elastic(fn, len(a.inputs), len(a.results))


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

CYCLE_MODELS = {
    **{f: _stateless for f in _SCALAR_INTEGER},
    "LoopStream": _stream,
    "LoopCarry": lambda use: R.Carry(),
    "LoopInvariant": lambda use: R.Invariant(),
    "LoopGate": lambda use: R.Gate(),
    "TokenMux": _routed("mux"),
    "TokenDemux": _routed("demux"),
    "FixedVectorParallelize": _parallelize,
    "FixedVectorSerialize": _serialize,
}

_FLOAT = "no bit-exact floating-point kernel is wired into the cycle model yet"
NO_CYCLE_MODEL = {
    **{f: _FLOAT for f in FAMILIES if f.startswith(("ScalarFloat", "ScalarMath")) or f in (
        "ScalarIntegerToFloat", "ScalarFloatToInteger", "FixedVectorFloatSign")},
    "FixedVectorSliceAlignMerge": "vector.extract/insert have no cycle model yet",
    "FixedVectorShuffle": "vector.shuffle has no cycle model yet",
}


def no_kernel_reason(use) -> str | None:
    """Why a use of a family with a cycle model still cannot run (its exact types), or None."""
    a = use.actor
    if use.family in ("ScalarBitReinterpret",) or a.schema in ("arith.index_cast", "arith.index_castui"):
        return None
    if use.family in _SCALAR_INTEGER and use.family not in ("TokenConstant", "TokenSync", "FixedVectorPack",
                                                            "FixedVectorUnpack", "ScalarValueSelect"):
        t = a.inputs[0]
        ok = isinstance(t, IntegerType) or (isinstance(t, VectorType) and isinstance(t.element, IntegerType))
        if not ok or isinstance(t, IndexType):
            return f"{a.schema} on {t} has no cycle model (integer kernels only)"
    return None


def build(use):
    """The resource running `use` (a mapped use, with .family and .fabric_op attached)."""
    return CYCLE_MODELS[use.family](use)
