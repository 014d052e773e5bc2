"""Fabric-owned resource contracts (ResourceState, UsePattern, timing) and their canonical codec.

A concrete fabric.op's contract owns its pipeline/holding ResourceStates, capacity
dimensions, atomic UsePatterns, requester order and GrantPolicy.  This module provides the
records, the canonical byte codec (docs/fabric-format.md, "Resource-contract codec"), the
normalised records every family uses, and `match_adapter_contract`, which admits only the
exact two-state ordered-cardinality shape for parallelize/serialize (anything else is typed
Unsupported).
"""
from __future__ import annotations

from dataclasses import dataclass

from .atoms import STEP_KINDS
from .codec import CodecError, Reader, frame, header, u32
from .errors import Diagnostic, DiagnosticCode, FabricError

CONTRACT_DOMAIN = "loom.fabric.resource-contract-record"


@dataclass(frozen=True)
class ResourceState:
    capacity_dimension_key: int
    capacity: int
    initial_occupancy: int


@dataclass(frozen=True)
class Claim:
    claim: int
    state: int
    dimension: int
    amount: int


@dataclass(frozen=True)
class UsePattern:
    key: int
    requester: int
    eligibility: int
    transition: int
    timing: int
    acquire_event: int
    commit_event: int
    release_event: int
    claims: tuple[Claim, ...]
    transactions: tuple[int, ...] = ()  # one entry per internal transaction slot: the claim it selects


@dataclass(frozen=True)
class TimingContract:
    key: int
    ranks: tuple[int, ...]  # one rank per event


@dataclass(frozen=True)
class ResourceContractRecord:
    states: tuple[ResourceState, ...]
    requesters: tuple[int, ...]
    grant_policy: str | None
    events: tuple[str, ...]
    timings: tuple[TimingContract, ...]
    eligibility_keys: tuple[int, ...]
    transition_keys: tuple[int, ...]
    use_patterns: tuple[UsePattern, ...]


# --- codec ---------------------------------------------------------------------------------

def _keys(ks) -> bytes:
    return u32(len(ks)) + b"".join(u32(k) for k in ks)


def encode_contract(r: ResourceContractRecord) -> bytes:
    validate_contract(r)
    out = [header(CONTRACT_DOMAIN), u32(len(r.states))]
    out += [u32(s.capacity_dimension_key) + u32(s.capacity) + u32(s.initial_occupancy) for s in r.states]
    out.append(_keys(r.requesters))
    out.append(u32(0) if r.grant_policy is None else u32(1) + frame(r.grant_policy.encode("ascii")))
    out.append(u32(len(r.events)) + b"".join(frame(e.encode("ascii")) for e in r.events))
    out.append(u32(len(r.timings)))
    out += [u32(t.key) + _keys(t.ranks) for t in r.timings]
    out.append(_keys(r.eligibility_keys))
    out.append(_keys(r.transition_keys))
    out.append(u32(len(r.use_patterns)))
    for p in r.use_patterns:
        out.append(b"".join(u32(x) for x in (p.key, p.requester, p.eligibility, p.transition, p.timing,
                                             p.acquire_event, p.commit_event, p.release_event)))
        out.append(u32(len(p.claims)) + b"".join(u32(c.claim) + u32(c.state) + u32(c.dimension) + u32(c.amount)
                                                 for c in p.claims))
        out.append(_keys(p.transactions))
        out.append(u32(0) + u32(0))  # empty parameter schema, empty sharing-assignment schema
    return b"".join(out)


MAX_ENTRIES = 1 << 16


def _count(r: Reader, what: str) -> int:
    n = r.u32(what)
    if n > MAX_ENTRIES or n * 4 > len(r.data) - r.pos:
        raise CodecError(f"resource contract: {what} {n} exceeds the remaining bytes")
    return n


def _read_keys(r: Reader, what: str) -> tuple[int, ...]:
    return tuple(r.u32(what) for _ in range(_count(r, what + " count")))


def decode_contract(data: bytes) -> ResourceContractRecord:
    r = Reader(data, "resource contract record")
    r.header(CONTRACT_DOMAIN)
    states = tuple(ResourceState(r.u32("dimension key"), r.u32("capacity"), r.u32("initial occupancy"))
                   for _ in range(_count(r, "state count")))
    requesters = _read_keys(r, "requester")
    tag = r.u32("grant policy tag")
    if tag not in (0, 1):
        raise CodecError(f"resource contract: grant policy tag {tag}")
    grant = r.frame("grant policy").decode("ascii", "replace") if tag else None
    events = tuple(r.frame("event").decode("ascii", "replace") for _ in range(_count(r, "event count")))
    timings = tuple(TimingContract(r.u32("timing key"), _read_keys(r, "rank")) for _ in range(_count(r, "timing count")))
    elig = _read_keys(r, "eligibility")
    trans = _read_keys(r, "transition")
    patterns = []
    for _ in range(_count(r, "use pattern count")):
        head = [r.u32("use pattern field") for _ in range(8)]
        claims = tuple(Claim(r.u32("claim"), r.u32("claim state"), r.u32("claim dimension"), r.u32("claim amount"))
                       for _ in range(_count(r, "claim count")))
        tx = _read_keys(r, "transaction")
        if r.u32("parameter schema") or r.u32("sharing schema"):
            raise CodecError("resource contract: use patterns have empty parameter and sharing schemas")
        patterns.append(UsePattern(*head, claims, tx))
    r.end()
    rec = ResourceContractRecord(states, requesters, grant, events, timings, elig, trans, tuple(patterns))
    validate_contract(rec)
    if encode_contract(rec) != bytes(data):
        raise CodecError("resource contract: noncanonical bytes")
    return rec


def _dense(keys, what):
    if tuple(keys) != tuple(range(len(keys))):
        raise CodecError(f"resource contract: {what} keys must be 0..n-1 in order")


def validate_contract(r: ResourceContractRecord) -> None:
    """Structural well-formedness: dense ordered keys, resolvable references, legal amounts."""
    if not r.states or not r.events:
        raise CodecError("resource contract: needs states and events")
    _dense(r.requesters, "requester")
    _dense(r.eligibility_keys, "eligibility")
    _dense(r.transition_keys, "transition")
    _dense([t.key for t in r.timings], "timing")
    _dense([p.key for p in r.use_patterns], "use pattern")
    if len(set(r.events)) != len(r.events):
        raise CodecError("resource contract: events repeat")
    for s in r.states:
        if s.initial_occupancy > s.capacity:
            raise CodecError("resource contract: initial occupancy exceeds capacity")
    for t in r.timings:
        if len(t.ranks) != len(r.events):
            raise CodecError("resource contract: one timing rank per event")
    for p in r.use_patterns:
        refs = ((p.requester, r.requesters), (p.eligibility, r.eligibility_keys), (p.transition, r.transition_keys),
                (p.timing, [t.key for t in r.timings]))
        if any(x not in keys for x, keys in refs):
            raise CodecError(f"resource contract: use pattern {p.key} references an undeclared key")
        if any(e >= len(r.events) for e in (p.acquire_event, p.commit_event, p.release_event)):
            raise CodecError(f"resource contract: use pattern {p.key} names an undeclared event")
        _dense([c.claim for c in p.claims], f"claim of pattern {p.key}")
        for c in p.claims:
            if c.state >= len(r.states) or c.dimension != r.states[c.state].capacity_dimension_key \
                    or not 0 < c.amount <= r.states[c.state].capacity:
                raise CodecError(f"resource contract: claim {c.claim} of pattern {p.key} is not satisfiable")
        if any(x >= len(p.claims) for x in p.transactions):
            raise CodecError(f"resource contract: a transaction of pattern {p.key} selects an undeclared claim")


# --- normalised records ---------------------------------------------------------------------

def one_cycle_elastic() -> ResourceContractRecord:
    """One elastic ResourceState = the sole result holding slot; Accept/Publish/Release at {0,1,1}."""
    return ResourceContractRecord(
        (ResourceState(0, 1, 0),), (0,), None, ("Accept", "Publish", "Release"), (TimingContract(0, (0, 1, 1)),),
        (0,), (0,), (UsePattern(0, 0, 0, 0, 0, 0, 1, 2, (Claim(0, 0, 0, 1),)),))


def elastic_transparent() -> ResourceContractRecord:
    """Forwarding adds no registered cycle: accept, publish and release share one coordinate."""
    return ResourceContractRecord(
        (ResourceState(0, 1, 0),), (0,), None, ("Accept", "Publish", "Release"), (TimingContract(0, (0, 0, 0)),),
        (0,), (0,), (UsePattern(0, 0, 0, 0, 0, 0, 1, 2, (Claim(0, 0, 0, 1),)),))


def loop_stream(step_kind: str) -> ResourceContractRecord:
    """Result publication one cycle after acceptance; next state after the step's latency."""
    n = STEP_KINDS[step_kind]
    return ResourceContractRecord(
        (ResourceState(0, 1, 0),), (0,), None, ("Accept", "Publish", "NextState"),
        (TimingContract(0, (0, 1, n)),), (0,), (0,), (UsePattern(0, 0, 0, 0, 0, 0, 1, 2, (Claim(0, 0, 0, 1),)),))


def pipelined_beats(latency: int) -> ResourceContractRecord:
    """A tile engine: each beat (`lanes` elements of one block) is accepted at 0, frees the
    issue slot at 1 and publishes at the pipeline latency; `latency` beats are in flight."""
    return ResourceContractRecord(
        (ResourceState(0, latency, 0),), (0,), None, ("Accept", "Release", "Publish"),
        (TimingContract(0, (0, 1, latency)),), (0,), (0,), (UsePattern(0, 0, 0, 0, 0, 0, 2, 1, (Claim(0, 0, 0, 1),)),))


# canonical ActorHandshakeCases: (case name, internal transaction slots as a function of M)
PARALLELIZE_CASES = (("accumulate", 0), ("full", 1), ("empty_close", 1), ("partial_close", 2))
SERIALIZE_CASES = (("active_group", None), ("close", 1))


def adapter_contract(family: str, max_lanes: int = 1) -> ResourceContractRecord:
    """The exact normalised two-state record of FixedVectorParallelize / FixedVectorSerialize.

    State 0 is the outer-use state, state 1 the claim-local group slot; one requester, no
    grant policy; events Accept/Commit/Release at ranks {0,1,1}; case c owns eligibility,
    transition and pattern key c; claim 1 exists exactly when the case can emit a group."""
    cases = PARALLELIZE_CASES if family == "FixedVectorParallelize" else SERIALIZE_CASES
    patterns = []
    for c, (_, slots) in enumerate(cases):
        n = max_lanes if slots is None else slots
        claims = (Claim(0, 0, 0, 1),) + ((Claim(1, 1, 0, 1),) if n > 0 else ())
        patterns.append(UsePattern(c, 0, c, c, 0, 0, 1, 2, claims, (1,) * n))
    keys = tuple(range(len(cases)))
    return ResourceContractRecord(
        (ResourceState(0, 1, 0), ResourceState(0, 1, 0)), (0,), None, ("Accept", "Commit", "Release"),
        (TimingContract(0, (0, 1, 1)),), keys, keys, tuple(patterns))


# --- loop control: one UsePattern per logical transition case -----------------------------------
#
# The operation schemas own the logical transition cases (the seed: "the operation schema owns the
# logical transition cases"); each case names the context state it applies in, the condition value
# that selects it, the operands it consumes, the results it produces and what they carry, and the
# next logical state.  The concrete Fabric resource maps each case c to one exact atomic UsePattern
# c over its ResourceStates, in this fixed order:
#
#   state 0                   the context-state entry (the logical state of the resident context)
#   states 1 .. n_in          the operand heads, in operand order
#   states n_in+1 .. +n_out   the active result capacity, in result order
#   state n_in+n_out+1        LoopStream only: the in-flight next-state update
#
# Pattern c claims state 0, the heads its case consumes, the capacity of the results its case
# produces (an inactive result claims nothing, so it never backpressures the transition) and, for
# a stream, the in-flight update.  Events are Accept, Publish and (Release | NextState); timing 0
# gives their ranks: {0, 0, 0} for the elastic-transparent carry, invariant and gate (forwarding
# adds no registered cycle: a transition commits only in a cycle in which every active output
# accepts), {0, 1, n} for a stream with step latency n (published at t + 1; the in-flight update
# is released, and the next transition may start, n cycles after acceptance).  The simulator's
# engines read consumption, active results, publication offset and next-state availability from
# these records (fabric.sim.models); `case_cover_error` is the loader's check that a record covers
# its schema's cases.


@dataclass(frozen=True)
class HandshakeCase:
    """One schema-owned logical transition case (an ActorHandshakeCase)."""
    name: str
    state: str                            # the logical state the case applies in
    condition: tuple | None               # (operand, value) that selects it, or None
    consumes: tuple[int, ...]             # operand heads
    produces: tuple[tuple[int, str], ...]  # (result, source): "operand K", "stored", "true", "false", "computed"
    next_state: str                       # a state name, or "by continue" (the published continue flag)
    store: str | None = None              # "operand K" to store, "clear", or None


@dataclass(frozen=True)
class LoopSchemaCases:
    states: tuple[str, ...]               # logical states, the initial one first
    n_in: int
    n_out: int
    cases: tuple[HandshakeCase, ...]


_C = HandshakeCase
LOOP_CASES: dict[str, LoopSchemaCases] = {
    # dataflow.carry(cond, init, next) -> value
    "LoopCarry": LoopSchemaCases(("Init", "Loop"), 3, 1, (
        _C("init", "Init", None, (1,), ((0, "operand 1"),), "Loop"),
        _C("loop_true", "Loop", (0, 1), (0, 2), ((0, "operand 2"),), "Loop"),
        _C("loop_false", "Loop", (0, 0), (0,), (), "Init"))),
    # dataflow.invariant(cond, value) -> value
    "LoopInvariant": LoopSchemaCases(("Init", "Loop"), 2, 1, (
        _C("init", "Init", None, (1,), ((0, "operand 1"),), "Loop", "operand 1"),
        _C("loop_true", "Loop", (0, 1), (0,), ((0, "stored"),), "Loop"),
        _C("loop_false", "Loop", (0, 0), (0,), (), "Init", "clear"))),
    # dataflow.gate(cond, value) -> (cond', value'): value'[i] = value[i] with the tail cut,
    # cond'[i] = cond[i + 1] with the head cut
    "LoopGate": LoopSchemaCases(("Head", "Body"), 2, 2, (
        _C("head_true", "Head", (0, 1), (0, 1), ((1, "operand 1"),), "Body"),
        _C("head_false", "Head", (0, 0), (0, 1), (), "Head"),
        _C("body_true", "Body", (0, 1), (0, 1), ((0, "true"), (1, "operand 1")), "Body"),
        _C("body_false", "Body", (0, 0), (0, 1), ((0, "false"),), "Head"))),
    # dataflow.stream(start, limit, step) -> (index, continue)
    "LoopStream": LoopSchemaCases(("Init", "Running"), 3, 2, (
        _C("init", "Init", None, (0, 1, 2), ((0, "computed"), (1, "computed")), "by continue"),
        _C("step", "Running", None, (), ((0, "computed"), (1, "computed")), "by continue"))),
}
del _C


def loop_control_contract(family: str, step_kind: str | None = None) -> ResourceContractRecord:
    """The normalised per-case record of a LoopCarry/LoopInvariant/LoopGate/LoopStream resource."""
    sc = LOOP_CASES[family]
    stream = family == "LoopStream"
    n_states = 1 + sc.n_in + sc.n_out + (1 if stream else 0)
    states = tuple(ResourceState(0, 1, 0) for _ in range(n_states))
    patterns = []
    for c, case in enumerate(sc.cases):
        held = [0] + [1 + k for k in case.consumes] + [1 + sc.n_in + j for j, _ in case.produces]
        if stream:
            held.append(n_states - 1)
        claims = tuple(Claim(i, st, 0, 1) for i, st in enumerate(held))
        patterns.append(UsePattern(c, 0, c, c, 0, 0, 1, 2, claims))
    ranks = (0, 1, STEP_KINDS[step_kind]) if stream else (0, 0, 0)
    events = ("Accept", "Publish", "NextState") if stream else ("Accept", "Publish", "Release")
    keys = tuple(range(len(sc.cases)))
    return ResourceContractRecord(states, (0,), None, events, (TimingContract(0, ranks),), keys, keys,
                                  tuple(patterns))


@dataclass(frozen=True)
class CaseUse:
    """What the engines read from pattern c of a loop-control record."""
    consumes: tuple[int, ...]       # operand heads claimed
    produces: tuple[int, ...]       # result capacity claimed
    publish_rank: int               # Publish relative to Accept: 0 transparent, 1 registered
    next_state_rank: int | None     # NextState relative to Accept (the in-flight update), or None
    in_flight: bool                 # the pattern claims the in-flight update


def case_uses(family: str, record: ResourceContractRecord) -> tuple[CaseUse, ...]:
    """Read each case's use from its pattern (the record's state layout above)."""
    sc = LOOP_CASES[family]
    last = 1 + sc.n_in + sc.n_out
    out = []
    for p in record.use_patterns:
        ranks = record.timings[p.timing].ranks
        states = [c.state for c in p.claims]
        nxt = dict(zip(record.events, ranks)).get("NextState")
        out.append(CaseUse(tuple(s - 1 for s in states if 1 <= s <= sc.n_in),
                           tuple(s - 1 - sc.n_in for s in states if sc.n_in < s < last),
                           ranks[p.commit_event] - ranks[p.acquire_event],
                           None if nxt is None else nxt - ranks[p.acquire_event], last in states))
    return tuple(out)


def case_cover_error(family: str, record: ResourceContractRecord) -> str | None:
    """Why `record` does not map every schema case of `family` to its one exact UsePattern
    (pattern c for case c, claiming the context state, exactly the case's operand heads and
    active results), or None."""
    sc = LOOP_CASES[family]
    try:
        validate_contract(record)
    except CodecError as exc:
        return str(exc)
    n = len(sc.cases)
    if len(record.use_patterns) != n or len(record.eligibility_keys) != n or len(record.transition_keys) != n:
        return (f"{family} has {n} logical transition case(s) ({', '.join(c.name for c in sc.cases)}) but its "
                f"contract declares {len(record.use_patterns)} use pattern(s): one exact UsePattern per case")
    if len(record.states) < 1 + sc.n_in + sc.n_out:
        return f"{family}'s contract declares {len(record.states)} state(s), fewer than its operand heads and results"
    for case, p, use in zip(sc.cases, record.use_patterns, case_uses(family, record)):
        if p.eligibility != p.key or p.transition != p.key:
            return f"pattern {p.key} of {family} is not owned by case {case.name} (eligibility and transition {p.key})"
        if not p.claims or p.claims[0].state != 0:
            return f"pattern {p.key} ({case.name}) of {family} does not claim the context-state entry"
        if set(use.consumes) != set(case.consumes):
            return (f"pattern {p.key} ({case.name}) of {family} claims operand heads {sorted(use.consumes)}, "
                    f"the case consumes {sorted(case.consumes)}")
        if set(use.produces) != {j for j, _ in case.produces}:
            return (f"pattern {p.key} ({case.name}) of {family} claims result capacity {sorted(use.produces)}, "
                    f"the case produces {sorted(j for j, _ in case.produces)}")
    return None


def contract_for(op) -> ResourceContractRecord:
    kind = op.descriptor.contract
    if op.family in LOOP_CASES:
        return loop_control_contract(op.family, op.hw_params.step_kind if op.family == "LoopStream" else None)
    if kind == "one_cycle_elastic":
        return one_cycle_elastic()
    if kind == "elastic_transparent":
        return elastic_transparent()
    if kind == "loop_stream":
        return loop_stream(op.hw_params.step_kind)
    if kind == "pipelined_beats":
        return pipelined_beats(op.hw_params.pipeline_latency)
    if op.family == "FixedVectorSerialize":
        # M: the exact maximum reachable lane count of the sealed capability, read from its
        # admitted image (payload capacity, the vector and mask ports and every element width
        # together decide which lane counts Supports() admits)
        from .relation import seal
        sealed = seal(op)
        if sealed.diagnostics:
            raise FabricError(list(sealed.diagnostics))
        return adapter_contract(op.family, sealed.max_lane_count)
    return adapter_contract(op.family)


def match_adapter_contract(family: str, record: ResourceContractRecord, max_lanes: int = 1) -> ResourceContractRecord:
    """Portable parallelize/serialize providers admit only the exact contract shape."""
    want = adapter_contract(family, max_lanes)
    if record != want:
        raise FabricError(Diagnostic(DiagnosticCode.Unsupported, family,
                                     "the portable adapter provider admits only the exact two-state "
                                     "ordered-cardinality ResourceContractRecord"))
    return want
