"""Typed physical-refinement domains: SpatialMapping's Fabric-declared, semantic-preserving choices.

Seed 000: "No generic refinement value type exists.  A concrete Fabric resource that exposes a
non-singleton refinement domain must own its exact typed value codec, legal set, and
semantic-preservation proof."  Each row of `REFINEMENTS` is one such owner:

* the value type (`VALUE_TYPES`: how a JSON value is read, printed and canonically encoded);
* the legal set is the resource's declared `PhysicalRefinementDomain` (>= 2 distinct values of
  that type, checked by the verifier);
* the semantic-preservation proof, a predicate over the concrete resource: it holds exactly
  when the refinement cannot change which results the resource produces or their bits, only
  when or at what power they appear (the statement says why).

A mapping assignment is admitted only to a declared domain whose proof holds, and reaches the
configured-hardware projection as a typed value (`Active.physical_refinements`), never as
opaque bytes; `encode_refinement` / `decode_refinement` are its canonical codec
(docs/fabric-format.md section 5).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .codec import Reader, frame, header, spelling_of, u32
from .errors import CodecError, FormatError, json_kind

REFINEMENT_DOMAIN = "loom.fabric.physical-refinement"
U32_MAX = (1 << 32) - 1
POWER_MODES = {"nominal": 1, "low_power": 2}       # wire tags


@dataclass(frozen=True)
class ValueType:
    name: str
    parse: Callable            # (JSON value, path) -> typed value, FormatError otherwise
    encode: Callable           # typed value -> body bytes
    decode: Callable           # Reader -> typed value (CodecError on a value outside the type)


def _parse_cycles(v, path):
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= U32_MAX:
        raise FormatError(path, f"a cycle count is an integer in [1, {U32_MAX}], not {json_kind(v)} {v!r}")
    return v


def _decode_cycles(r: Reader):
    v = r.u32("cycles")
    if v < 1:
        raise CodecError("physical refinement: a cycle count is at least 1")
    return v


def _parse_boolean(v, path):
    if not isinstance(v, bool):
        raise FormatError(path, f"expected a boolean, found {json_kind(v)}")
    return v


def _decode_boolean(r: Reader):
    v = r.u32("boolean")
    if v > 1:
        raise CodecError(f"physical refinement: boolean {v} is neither 0 nor 1")
    return bool(v)


def _parse_power(v, path):
    if v not in POWER_MODES:
        raise FormatError(path, f"{v!r} is not a power mode ({', '.join(POWER_MODES)})")
    return v


def _decode_power(r: Reader):
    return spelling_of(POWER_MODES, r.u32("power mode"), "physical refinement: power mode")


VALUE_TYPES = {
    "cycles": ValueType("cycles", _parse_cycles, u32, _decode_cycles),
    "boolean": ValueType("boolean", _parse_boolean, lambda v: u32(int(v)), _decode_boolean),
    "power_mode": ValueType("power_mode", _parse_power, lambda v: u32(POWER_MODES[v]), _decode_power),
}


# --- semantic-preservation proofs ------------------------------------------------------------
# A stateless elastic compute resource holds every accepted tuple until each active result
# has handed off (one_cycle_elastic, pipelined_beats): registers before publication, or
# removing the holding register's cycle, change only when results publish.  A logically
# stateful or exactly-shaped contract (loop control, the ordered-cardinality adapters) owns
# its exact timing (the carry's one-cycle recurrence, the adapter's two-state record), so no
# timing refinement preserves it.
ELASTIC_COMPUTE = ("one_cycle_elastic", "pipelined_beats")


def _elastic_compute(op) -> str | None:
    contract = op.descriptor.contract if op.descriptor is not None else None
    if contract in ELASTIC_COMPUTE:
        return None
    return (f"{op.family} uses the exact {contract} contract, whose timing is part of its semantics: "
            "only a stateless elastic compute resource (one_cycle_elastic, pipelined_beats) may be retimed")


def _holding_bypass(op) -> str | None:
    contract = op.descriptor.contract if op.descriptor is not None else None
    if contract == "one_cycle_elastic":
        return None
    return (f"{op.family} uses the {contract} contract: only the one-cycle elastic result slot can be "
            "bypassed (publication at t instead of t + 1, the tuple still held until its handoffs)")


def _any_resource(op) -> str | None:
    return None


@dataclass(frozen=True)
class RefinementKind:
    kind: str
    value: ValueType
    proof: Callable            # (FabricOp) -> None when the refinement preserves semantics, else why not
    statement: str             # what the proof establishes
    retimes: Callable = lambda value: False   # (value) -> whether it moves a publication or an acceptance


REFINEMENTS: dict[str, RefinementKind] = {r.kind: r for r in (
    RefinementKind("pipeline_depth", VALUE_TYPES["cycles"], _elastic_compute,
                   "extra pipeline registers of an elastic stateless resource delay publication only",
                   lambda cycles: True),
    RefinementKind("result_bypass", VALUE_TYPES["boolean"], _holding_bypass,
                   "bypassing the one-cycle result register publishes the same held tuple one cycle earlier",
                   lambda bypass: bypass is True),
    RefinementKind("power_mode", VALUE_TYPES["power_mode"], _any_resource,
                   "a power mode changes leakage and clocking of idle state, never a result or its timing"),
)}
REFINEMENT_KINDS = tuple(REFINEMENTS)


def parse_value(kind: str, v, path: str):
    """A JSON refinement value read by its kind's owner (FormatError when it is not one)."""
    return REFINEMENTS[kind].value.parse(v, path)


def encode_refinement(kind: str, value) -> bytes:
    """Canonical bytes: header, frame(kind), the value body (u32be)."""
    owner = REFINEMENTS.get(kind)
    if owner is None:
        raise CodecError(f"physical refinement: {kind!r} has no typed owner")
    try:
        owner.value.parse(value, kind)    # the typed value must be one of its type
    except FormatError as exc:
        raise CodecError(f"physical refinement: {exc.reason}") from None
    return header(REFINEMENT_DOMAIN) + frame(kind.encode("ascii")) + owner.value.encode(value)


def decode_refinement(data: bytes) -> tuple[str, object]:
    r = Reader(data, "physical refinement")
    r.header(REFINEMENT_DOMAIN)
    kind = r.frame("refinement kind").decode("ascii", "replace")
    owner = REFINEMENTS.get(kind)
    if owner is None:
        raise CodecError(f"physical refinement: {kind!r} has no typed owner")
    value = owner.value.decode(r)
    r.end()
    if encode_refinement(kind, value) != bytes(data):
        raise CodecError("physical refinement: noncanonical bytes")
    return kind, value
