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


def contract_for(op) -> ResourceContractRecord:
    kind = op.descriptor.contract
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
