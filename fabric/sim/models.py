"""Which implementation families have a cycle model, and how a mapped use becomes one.

A cycle model (`Model`) is data the engines interpret (fabric/sim/kernel.py): whether the
resource holds its results in a slot (registered: published at t + 1) or forwards them
(transparent: they exist in the cycle the transition commits), and its transition cases - per
case the logical state and condition value that select it, the operands it consumes, the
results it makes active and what each carries, the next logical state, and its timing.

The cases come from one place each: a stateless use has one case (every operand, every
result, the one-cycle elastic record's holding slot); a runtime mux or demux has one case per
selector value; the loop-control families read theirs from the per-case UsePatterns of their
resource-contract record (`fabric.contract.loop_control_contract`) together with the schema's
logical cases (`fabric.contract.LOOP_CASES`); the ordered-cardinality adapters use the
canonical ActorHandshakeCases of their record.

`CYCLE_MODELS` maps every ImplementationFamilyId of `fabric.families.FAMILIES` that runs to
its model builder, `NO_CYCLE_MODEL` names, with the reason, every other registered family; a
test checks the two partition the registry, so a new family cannot silently fall through.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..contract import LOOP_CASES, case_cover_error, case_uses, contract_for
from ..families import FAMILIES
from ..types import IndexType, IntegerType, VectorType, payload_bits
from .semantics import Kernel, constant_bits, select_kernel, stateless_kernel, stream_kernel

ANY_STATE = (0, 1 << 30)


@dataclass(frozen=True)
class Case:
    name: str
    state: tuple                  # (lo, hi): logical states it applies in
    cond: int = -1                # operand whose value selects it (-1: none)
    cval: int = 0                 # that value
    need: tuple = ()              # operands consumed (they must be valid)
    out: tuple = ()               # active results of the first group
    src: tuple = ()               # per result: "operand K", "computed", "stored", "true", "false", "const", "group"
    next: int = -1                # next logical state (-1 unchanged, -2 by the published continue flag)
    store: int = -1               # operand stored (-1 none, -2 clear)
    wait: bool = False            # needs the in-flight next-state update to be complete
    groups: int = 1               # production groups (0: retires at commit; -1: the serialize mask's lanes)
    adapter_case: int = -1        # ordinal of the adapter's ActorHandshakeCase


@dataclass
class Model:
    kind: str                      # "elastic" "routed" "stream" "transparent" "parallelize" "serialize"
    registered: bool
    cases: list
    kernel: Kernel | None = None   # the computed results' semantic kernel
    const: int = 0                 # TokenConstant: the constant's raw bits
    latency: int = 1               # LoopStream: next-state availability after acceptance
    lanes: int = 0                 # adapters: the actor's logical lane count L
    element_width: int = 0
    extra: dict = field(default_factory=dict)


class ModelError(ValueError):
    """A use whose contract or exact types this model cannot run; `code` names the loader's
    diagnostic (NoCycleModel, ContractCasesUncovered)."""

    def __init__(self, why: str, code: str = "NoCycleModel"):
        super().__init__(why)
        self.code = code


def _width(t, iw):
    return payload_bits(t, iw)


def _stateless(use) -> Model:
    a = use.actor
    n_in, n_out = len(a.inputs), len(a.results)
    src, kern, const = ("computed",) * n_out, None, 0
    if a.schema in ("dataflow.sync", "dataflow.pack", "dataflow.unpack", "arith.bitcast"):
        # raw bits pass unchanged: sync lane k, and a pack/unpack/bitcast reinterprets equal widths
        src = tuple(f"operand {j}" for j in range(n_out))
    elif a.schema == "dataflow.constant":
        src, const = ("const",), constant_bits(a)
    elif a.schema == "arith.select":
        kern = select_kernel(a)
    else:
        kern = stateless_kernel(a, use.family, use.corr.index_width)
        if kern is None:
            raise ModelError(_no_kernel(use))
    case = Case("fire", ANY_STATE, need=tuple(range(n_in)), out=tuple(range(n_out)), src=src)
    return Model("elastic", True, [case], kern, const)


def _slice(use) -> Model:
    """From the op's Direct carrier: mode, static offset, slice width and the strides of the
    dynamic positions (the projector's image of this actor); dimensions from the actor's type."""
    from ..direct import derive_direct
    from .semantics import slice_kernel
    a, rel = use.actor, derive_direct(use.fabric_op)
    mode, offset, width, strides = rel.decode_fields(rel.project(a, use.corr))
    container = a.inputs[0] if a.schema == "vector.extract" else a.inputs[1]
    pos = a.attr("static_position")
    dims = [d for p, d in zip(pos, container.shape) if p == "dynamic"]
    f = slice_kernel(mode, offset, width, list(strides[:len(dims)]), dims, payload_bits(container))
    n_in = len(a.inputs)
    return Model("elastic", True, [Case("fire", ANY_STATE, need=tuple(range(n_in)), out=(0,), src=("computed",))],
                 Kernel(("slice", a.schema, a.inputs, a.results, a.attributes, use.corr.index_width), f))


def _shuffle(use) -> Model:
    from ..direct import derive_direct
    from .semantics import shuffle_kernel
    a, rel = use.actor, derive_direct(use.fabric_op)
    block, left, count, sel = rel.decode_fields(rel.project(a, use.corr))
    v1, v2 = a.inputs
    right = v2.shape[0]
    f = shuffle_kernel(block, left, right, list(sel[:count]), payload_bits(v1), payload_bits(v2))
    return Model("elastic", True, [Case("fire", ANY_STATE, need=(0, 1), out=(0,), src=("computed",))],
                 Kernel(("shuffle", a.inputs, a.results, a.attributes), f))


def _no_kernel(use) -> str:
    a = use.actor
    t = a.inputs[0] if a.inputs else None
    mode = f" with rounding {a.attr('rounding_mode')}" if a.attr("rounding_mode") else ""
    return (f"{a.schema} on {t}{mode}: no kernel in this model (ieee profile; integer kernels take iN operands "
            f"of up to 64 bits; integer conversions of 8 to 64 bits)")


def _routed(kind: str):
    def build(use) -> Model:
        a = use.actor
        n_in, n_out = len(a.inputs), len(a.results)
        if kind == "mux":
            cases = [Case(f"select {k}", ANY_STATE, 0, k, (0, 1 + k), (0,), (f"operand {1 + k}",))
                     for k in range(n_in - 1)]
        else:
            cases = [Case(f"select {k}", ANY_STATE, 0, k, (0, 1), (k,),
                          tuple("operand 1" if j == k else "" for j in range(n_out))) for k in range(n_out)]
        return Model("routed", True, cases, extra={"routed": kind, "fan": n_in - 1 if kind == "mux" else n_out})
    return build


def _loop(use) -> Model:
    """LoopCarry/LoopInvariant/LoopGate/LoopStream: cases from the schema and the per-case record."""
    fam = use.family
    record = contract_for(use.fabric_op)
    why = case_cover_error(fam, record)
    if why:
        raise ModelError(why, "ContractCasesUncovered")
    sc = LOOP_CASES[fam]
    uses = case_uses(fam, record)
    registered = {u.publish_rank for u in uses}
    if len(registered) != 1 or registered - {0, 1}:
        raise ModelError(f"{fam}: this model runs publication at rank 0 (transparent) or 1 (registered), "
                         f"the record has {sorted(registered)}")
    cases = []
    for case, u in zip(sc.cases, uses):
        src = dict(case.produces)
        cond = case.condition or (-1, 0)
        nxt = -2 if case.next_state == "by continue" else sc.states.index(case.next_state)
        store = -1 if case.store is None else -2 if case.store == "clear" else int(case.store.split()[1])
        st = sc.states.index(case.state)
        cases.append(Case(case.name, (st, st), cond[0], cond[1], tuple(sorted(u.consumes)), tuple(sorted(u.produces)),
                          tuple(src.get(j, "") for j in range(sc.n_out)), nxt, store, u.in_flight))
    kind = "stream" if fam == "LoopStream" else "transparent"
    m = Model(kind, registered == {1}, cases)
    if fam == "LoopStream":
        a = use.actor
        lat = {u.next_state_rank for u in uses}
        m.latency = max(1, max(x for x in lat if x is not None))
        m.kernel = Kernel(("dataflow.stream", a.attributes, a.inputs),
                          stream_kernel(a.attr("step_kind"), a.attr("predicate"), a.inputs[0].width))
    return m


def _adapter_cases(family, n_lanes):
    """Cases from the canonical ActorHandshakeCases; `groups` as the production schema says."""
    if family == "FixedVectorParallelize":
        L = n_lanes
        # (element, phase): accumulate / full consume both; the closes consume the phase only
        return [Case("accumulate", (0, L - 2), 1, 1, (0, 1), (), (), groups=0, adapter_case=0),
                Case("full", (L - 1, L - 1), 1, 1, (0, 1), (0, 1, 2), ("group",) * 3, adapter_case=1),
                Case("empty_close", (0, 0), 1, 0, (1,), (0, 1, 2), ("group",) * 3, adapter_case=2),
                Case("partial_close", (1, L - 1), 1, 0, (1,), (0, 1, 2), ("group",) * 3, groups=2, adapter_case=3)]
    return [Case("active_group", ANY_STATE, 2, 1, (0, 1, 2), (0, 1), ("group",) * 2, groups=-1, adapter_case=0),
            Case("close", ANY_STATE, 2, 0, (2,), (0, 1), ("group",) * 2, adapter_case=1)]


def _parallelize(use) -> Model:
    from ..contract import match_adapter_contract
    match_adapter_contract(use.family, contract_for(use.fabric_op))
    vt = use.actor.results[0]
    L = vt.shape[0]
    cases = [c for c in _adapter_cases(use.family, L) if c.state[0] <= c.state[1]]   # L = 1: no accumulate
    return Model("parallelize", True, cases, lanes=L, element_width=payload_bits(vt.element))


def _serialize(use) -> Model:
    from ..contract import match_adapter_contract
    rec = contract_for(use.fabric_op)
    m = len(rec.use_patterns[0].transactions)
    match_adapter_contract(use.family, rec, m)
    vt = use.actor.inputs[0]
    L = vt.shape[0]
    if not 1 <= L <= m:
        raise ModelError(f"a serialize actor has 1 <= L <= M lanes (L = {L}, M = {m})")
    return Model("serialize", True, _adapter_cases(use.family, L), lanes=L, element_width=payload_bits(vt.element),
                 extra={"max_lanes": m})


_SCALAR_INTEGER = ("ScalarIntegerAddSub", "ScalarIntegerSaturatingAddSub", "ScalarIntegerCountZeros",
                   "ScalarIntegerLogic", "ScalarIntegerShift", "ScalarIntegerCompareMinMax", "ScalarValueSelect",
                   "ScalarIntegerCast", "ScalarBitReinterpret", "ScalarIntegerMultiply",
                   "ScalarSignedIntegerDivRem", "ScalarUnsignedIntegerDivRem",
                   "FixedVectorIntegerAddSub", "FixedVectorIntegerLogic",
                   "FixedVectorPack", "FixedVectorUnpack", "TokenConstant", "TokenSync")
_FLOATING = ("ScalarFloatSign", "ScalarFloatAddSub", "ScalarFloatCompareMinMax", "ScalarFloatWidthCast",
             "ScalarIntegerToFloat", "ScalarFloatToInteger", "ScalarFloatMultiply", "ScalarFloatFma",
             "ScalarFloatDivide", "ScalarFloatRemainder", "FixedVectorFloatSign",
             *(f for f in FAMILIES if f.startswith("ScalarMath")))

CYCLE_MODELS = {
    **{f: _stateless for f in _SCALAR_INTEGER + _FLOATING},
    "LoopStream": _loop,
    "LoopCarry": _loop,
    "LoopInvariant": _loop,
    "LoopGate": _loop,
    "TokenMux": _routed("mux"),
    "TokenDemux": _routed("demux"),
    "FixedVectorParallelize": _parallelize,
    "FixedVectorSerialize": _serialize,
    "FixedVectorSliceAlignMerge": _slice,
    "FixedVectorShuffle": _shuffle,
}

NO_CYCLE_MODEL = {
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
    if isinstance(t, IntegerType) and t.width > 64 and use.family in _SCALAR_INTEGER:
        return f"{a.schema} on {t}: no cycle model (integer kernels take operands of up to 64 bits)"
    try:
        _stateless(use)
    except ModelError as exc:
        return str(exc)
    return None


def build(use) -> Model:
    """The cycle model of `use` (a mapped use, with .family and .fabric_op attached)."""
    return CYCLE_MODELS[use.family](use)
