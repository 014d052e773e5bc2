"""Cycle-level execution of the Fabric resource contracts.

A token moves only on valid && ready.  Each resource is stepped once per local cycle t with
the valid operand tokens it sees (None = no token) and the ready of each result; `step`
returns what it consumed, which results were valid (with payloads) and which handed off.
Within one cycle the order is: present held results, hand off on ready, release the claim
on the final handoff, then test capacity for an acquisition at the same coordinate (so a
final handoff and the acceptance of a replacement may happen together).

  * `ScalarElasticResource`  one-cycle elastic contract of a stateless scalar op
  * `CarryResource`          LoopCarry: elastic-transparent, operation-specific states
  * `ParallelizeAdapter` / `SerializeAdapter`  the ordered-cardinality adapter contract
The one semantic kernel (`fn`) is shared with any functional model; timing lives here only.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from .contract import ResourceContractRecord, adapter_contract, match_adapter_contract, one_cycle_elastic
from .errors import Diagnostic, DiagnosticCode, FabricError


@dataclass
class Step:
    consumed: tuple           # per operand: was its token consumed this cycle
    outputs: tuple            # per result: payload valid this cycle, or None
    handoffs: tuple           # per result: valid && ready this cycle
    accepted: bool = False


@dataclass
class Counters:
    fires: int = 0
    stalls: int = 0           # cycles with every operand valid but no acceptance


class ScalarElasticResource:
    """Accept at t, publish the complete active tuple at t + 1, hold it in the one result
    slot until every active result has handed off; no hidden queue, II = 1 under progress."""

    def __init__(self, fn: Callable, n_operands: int, n_results: int,
                 contract: ResourceContractRecord | None = None):
        if contract is not None and contract != one_cycle_elastic():
            raise FabricError(Diagnostic(DiagnosticCode.Unsupported, "contract",
                                         "the stateless scalar baseline needs the one-cycle elastic record"))
        self.fn, self.n_in, self.n_out = fn, n_operands, n_results
        self.held: tuple | None = None
        self.pending: set[int] = set()
        self.publish_at = 0
        self.counters = Counters()

    def step(self, t: int, operands: Sequence, ready: Sequence[bool]) -> Step:
        visible = tuple(self.held[j] if self.held is not None and j in self.pending and t >= self.publish_at
                        else None for j in range(self.n_out))
        handoffs = tuple(v is not None and bool(ready[j]) for j, v in enumerate(visible))
        self.pending -= {j for j, h in enumerate(handoffs) if h}
        if self.held is not None and not self.pending:
            self.held = None  # the final required handoff releases the claim first
        accepted = False
        if all(x is not None for x in operands):
            if self.held is None:
                out = self.fn(*operands)
                self.held = tuple(out) if isinstance(out, tuple) else (out,)
                self.pending = set(range(self.n_out))
                self.publish_at = t + 1
                accepted = True
                self.counters.fires += 1
            else:
                self.counters.stalls += 1
        return Step(tuple(accepted for _ in operands), visible, handoffs, accepted)

    def reset(self):
        self.held, self.pending = None, set()


class CarryResource:
    """dataflow.carry on an elastic-transparent LoopCarry resource.

    Logical states: Init (waiting for the initial value) and Loop.  Init consumes `init` and
    forwards it; Loop consumes the condition and, when true, `next` (forwarded); a false
    condition consumes only the condition, produces nothing and returns to Init.  A
    result-producing transition commits only when its output is ready; forwarding adds no
    registered cycle."""

    def __init__(self):
        self.state = "Init"

    def step(self, t: int, cond, init, nxt, ready: bool) -> Step:
        none = (False, False, False)
        if self.state == "Init":
            if init is not None and ready:
                self.state = "Loop"
                return Step((False, True, False), (init,), (True,), True)
            return Step(none, (None,), (False,))
        if cond is None:
            return Step(none, (None,), (False,))
        if not cond:
            self.state = "Init"
            return Step((True, False, False), (None,), (False,), True)
        if nxt is not None and ready:
            return Step((True, False, True), (nxt,), (True,), True)
        return Step(none, (None,), (False,))


@dataclass
class _Claim:
    groups: list
    commit_at: int
    visible_at: int
    index: int = 0
    pending: set = field(default_factory=set)


class _Adapter:
    n_out = 0

    def __init__(self, family: str, contract: ResourceContractRecord, max_lanes: int):
        self.contract = match_adapter_contract(family, contract, max_lanes)
        self.claim: _Claim | None = None
        self.counters = Counters()

    def _present(self, t: int, ready: Sequence[bool]):
        c = self.claim
        if c is None or not c.groups or t < c.visible_at:
            return (None,) * self.n_out, (False,) * self.n_out
        g = c.groups[c.index]
        visible = tuple(g[j] if j in c.pending else None for j in range(self.n_out))
        handoffs = tuple(v is not None and bool(ready[j]) for j, v in enumerate(visible))
        c.pending -= {j for j, h in enumerate(handoffs) if h}
        if not c.pending:
            c.index += 1
            if c.index == len(c.groups):
                self.claim = None  # the final group handoff releases the one claim envelope
            else:  # the following group replaces it at this coordinate, visible next cycle
                c.pending = set(range(self.n_out))
                c.visible_at = t + 1
        return visible, handoffs

    def _retire_empty(self, t: int):
        c = self.claim
        if c is not None and not c.groups and t >= c.commit_at:
            self.claim = None  # no production group: commit and retire at t + 1

    def _open(self, t: int, groups: list):
        self.claim = _Claim(groups, t + 1, t + 1, 0, set(range(self.n_out)))
        self.counters.fires += 1

    def reset(self):
        """Reset discards durable adapter state and any active-use-local production state."""
        self.claim = None


class ParallelizeAdapter(_Adapter):
    """dataflow.parallelize(element, phase) -> (vector<L x E>, vector<L x i1> mask, group_phase).

    Cases: accumulate (store, no group), full (store; emit the full group), empty_close
    (emit the terminating false group), partial_close (emit the partial true group, then the
    false group, under one claim)."""
    n_out = 3

    def __init__(self, lanes: int, contract: ResourceContractRecord | None = None, zero=0):
        super().__init__("FixedVectorParallelize", contract or adapter_contract("FixedVectorParallelize"), 1)
        self.lanes, self.zero = lanes, zero
        self.buffer: list = []

    def _group(self, values):
        vec = tuple(values) + (self.zero,) * (self.lanes - len(values))
        mask = tuple(i < len(values) for i in range(self.lanes))
        return vec, mask, True

    def step(self, t: int, element, phase, ready: Sequence[bool]) -> Step:
        visible, handoffs = self._present(t, ready)
        self._retire_empty(t)
        consumed = (False, False)
        case = None
        if self.claim is None and phase is not None and (not phase or element is not None):
            end = ((self.zero,) * self.lanes, (False,) * self.lanes, False)
            if phase:
                self.buffer.append(element)
                if len(self.buffer) == self.lanes:
                    case, groups = "full", [self._group(self.buffer)]
                    self.buffer = []
                else:
                    case, groups = "accumulate", []
                consumed = (True, True)
            else:
                case = "partial_close" if self.buffer else "empty_close"
                groups = ([self._group(self.buffer)] if self.buffer else []) + [end]
                self.buffer = []
                consumed = (False, True)
            self._open(t, groups)
        self.last_case = case
        return Step(consumed, visible, handoffs, case is not None)

    def reset(self):
        super().reset()
        self.buffer = []


class SerializeAdapter(_Adapter):
    """dataflow.serialize(vector, mask, phase) -> (element, phase).

    active_group (phase true): transaction i activates exactly when i < L and mask lane i is
    a defined one, in ascending i; an all-zero mask commits and retires without publishing.
    close (phase false): one (zero element, false) group.  Lanes at or above the actor's
    logical L are never read, so physical padding bits are never observed."""
    n_out = 2

    def __init__(self, max_lanes: int, logical_lanes: int, contract: ResourceContractRecord | None = None, zero=0):
        if not 1 <= logical_lanes <= max_lanes:
            raise ValueError("a serialize actor has 1 <= L <= M lanes")
        super().__init__("FixedVectorSerialize", contract or adapter_contract("FixedVectorSerialize", max_lanes),
                         max_lanes)
        self.m, self.l, self.zero = max_lanes, logical_lanes, zero

    def step(self, t: int, vector, mask, phase, ready: Sequence[bool]) -> Step:
        visible, handoffs = self._present(t, ready)
        self._retire_empty(t)
        consumed = (False, False, False)
        case = None
        if self.claim is None and phase is not None:
            if phase and vector is not None and mask is not None:
                case = "active_group"
                groups = [(vector[i], True) for i in range(self.l) if mask[i]]
                consumed = (True, True, True)
                self._open(t, groups)
            elif not phase:
                case = "close"
                consumed = (False, False, True)
                self._open(t, [(self.zero, False)])
        self.last_case = case
        return Step(consumed, visible, handoffs, case is not None)


ADAPTERS = {"FixedVectorParallelize": ParallelizeAdapter, "FixedVectorSerialize": SerializeAdapter}
# Dataflow-owned activity-definedness proof each adapter needs: actor operand ordinals
DEFINEDNESS_REQUIRED = {"FixedVectorParallelize": (1,), "FixedVectorSerialize": (1, 2)}


def create_adapter_use(family: str, proved_defined: set[int], *args, **kwargs):
    """Create a Fabric use of a portable adapter; a missing activity-definedness proof for the
    phase (and, for serialize, mask) operand rejects before any use exists."""
    missing = [i for i in DEFINEDNESS_REQUIRED[family] if i not in proved_defined]
    if missing:
        raise FabricError(Diagnostic(DiagnosticCode.CapabilityInadmissible, family,
                                     f"no activity-definedness proof for operand(s) {missing}"))
    return ADAPTERS[family](*args, **kwargs)
