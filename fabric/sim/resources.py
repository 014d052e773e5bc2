"""Every executable resource behind one small interface the engine drives.

A resource is either *registered* (its results come from a holding slot: they are visible in
a cycle independently of that cycle's inputs) or *transparent* (LoopCarry, LoopInvariant,
LoopGate: forwarding adds no registered cycle, so a result exists in the cycle its transition
commits).  Per cycle t the engine calls, any number of times while it settles the handshakes:

  present(t)            registered only: the result values visible at t (None = no token)
  decide(t, ins, done)  pure: which operands the resource would consume, which results a
                        transparent transition would publish, whether it fires, and if it
                        does not, why.  `ins` is one value-or-None per operand; `done[j]` says
                        result j's obligation is discharged this cycle (registered: every
                        consumer edge has taken, or takes now, the visible token; transparent:
                        every consumer edge can accept now)
  apply(t, ins, done)   once, with the settled values: the state transition
  reset()               back to the initial state (held results, claims, loop state dropped)
  next_event(t)         the first cycle after t at which `present` or `decide` can change by
                        time alone (a publication, next-state or commit coordinate), or None:
                        the engine skips idle stretches up to it (docs/fabric-graph.md)

The wrapped `fabric.elastic` classes (one-cycle elastic scalar resource, LoopCarry, the
parallelize/serialize adapters) run unchanged: `decide` predicts exactly what their `step`
will do and `apply` calls `step`; the engine checks the two agree every cycle.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import elastic
from ..atoms import STEP_KINDS
from .semantics import compare, stream_step


@dataclass(frozen=True)
class Decision:
    consume: tuple            # per operand
    publish: tuple = ()       # transparent: per result, the value published on commit (None = inactive)
    fire: bool = False
    reason: str = ""          # why it did not fire: "operands", "backpressure", "next_state", ""


class SimFault(Exception):
    """A run-time condition the registered semantics leaves without a defined transition."""


def _none(n):
    return (None,) * n


def _no(n):
    return (False,) * n


def _later(t, *coords):
    """The earliest of the coordinates after t, or None."""
    return min((c for c in coords if c > t), default=None)


# --- registered: one-cycle elastic ---------------------------------------------------------------

class Elastic:
    """`elastic.ScalarElasticResource` unchanged: stateless scalar ops, sync, constant, pack,
    unpack.  Every operand is required; the complete result tuple is one holding slot."""
    transparent = False

    def __init__(self, fn, n_in: int, n_out: int):
        self.r = elastic.ScalarElasticResource(fn, n_in, n_out)
        self.n_in, self.n_out = n_in, n_out
        self.required = (True,) * n_in

    def present(self, t):
        r = self.r
        if r.held is None or t < r.publish_at:
            return _none(self.n_out)
        return tuple(r.held[j] if j in r.pending else None for j in range(self.n_out))

    def _free(self, t, done) -> bool:
        r = self.r
        return r.held is None or (t >= r.publish_at and all(done[j] for j in r.pending))

    def decide(self, t, ins, done):
        if any(x is None for x in ins):
            return Decision(_no(self.n_in), reason="operands")
        if not self._free(t, done):
            return Decision(_no(self.n_in), reason="backpressure")
        return Decision((True,) * self.n_in, fire=True)

    def apply(self, t, ins, done):
        return self.r.step(t, ins, done).accepted

    def next_event(self, t):
        return _later(t, self.r.publish_at) if self.r.held is not None else None

    def reset(self):
        self.r.reset()

    @property
    def busy(self):
        return self.r.held is not None


class Routed:
    """TokenMux / TokenDemux on the one-cycle elastic contract with condition-dependent use
    patterns: the runtime selector picks the one data input a mux consumes, or the one result
    a demux publishes.  Only that result is active, so only it claims capacity."""
    transparent = False

    def __init__(self, kind: str, n_in: int, n_out: int, name: str):
        self.kind, self.n_in, self.n_out, self.name = kind, n_in, n_out, name
        self.required = (True,) + (False,) * (n_in - 1) if kind == "mux" else (True, True)
        self.held = None          # (result ordinal, value)
        self.publish_at = 0

    def present(self, t):
        out = [None] * self.n_out
        if self.held is not None and t >= self.publish_at:
            out[self.held[0]] = self.held[1]
        return tuple(out)

    def _selected(self, sel, fan):
        if sel >= fan:
            raise SimFault(f"{self.name}: selector value {sel} addresses none of {fan} {self.kind} ports")
        return sel

    def decide(self, t, ins, done):
        sel = ins[0]
        need = None
        if sel is not None:
            need = 1 + self._selected(sel, self.n_in - 1) if self.kind == "mux" else 1
        if sel is None or ins[need] is None:
            return Decision(_no(self.n_in), reason="operands")
        free = self.held is None or (t >= self.publish_at and done[self.held[0]])
        if not free:
            return Decision(_no(self.n_in), reason="backpressure")
        return Decision(tuple(i in (0, need) for i in range(self.n_in)), fire=True)

    def apply(self, t, ins, done):
        d = self.decide(t, ins, done)
        if self.held is not None and t >= self.publish_at and done[self.held[0]]:
            self.held = None
        if d.fire:
            sel = ins[0]
            self.held = (0, ins[1 + sel]) if self.kind == "mux" else (self._selected(sel, self.n_out), ins[1])
            self.publish_at = t + 1
        return d.fire

    def next_event(self, t):
        return _later(t, self.publish_at) if self.held is not None else None

    def reset(self):
        self.held = None

    @property
    def busy(self):
        return self.held is not None


class Stream:
    """dataflow.stream(start, limit, step) -> (index, continue) on a LoopStream resource.

    Init consumes all three operands and publishes (start, pred(start, limit)) one cycle
    later.  While the published continue flag is true, the next element cur' = cur step step
    is published once the held element has handed off (same coordinate) and the next state
    is available: the step kind's latency L (add, sub, shl, shr: 1; mul: 3; div: 8) after the
    previous transition.  After the element with continue = false hands off the resource is
    back in Init.  Operands are never consumed outside Init."""
    transparent = False

    def __init__(self, step_kind: str, predicate: str, width: int):
        self.n_in, self.n_out, self.required = 3, 2, (True, True, True)
        self.latency = STEP_KINDS[step_kind]
        self.step_fn, self.pred = stream_step(step_kind, width), compare(predicate, width)
        self.running = False
        self.cur = self.limit = self.step = 0
        self.held = None            # (index, continue) tuple being delivered
        self.pending: set = set()
        self.publish_at = 0
        self.next_at = 0            # cycle from which the next state is available

    def present(self, t):
        if self.held is None or t < self.publish_at:
            return (None, None)
        return tuple(self.held[j] if j in self.pending else None for j in range(2))

    def _free(self, t, done):
        return self.held is None or (t >= self.publish_at and all(done[j] for j in self.pending))

    def decide(self, t, ins, done):
        free = self._free(t, done)
        if self.running:
            if not free:
                return Decision(_no(3), reason="backpressure")
            if t < self.next_at:
                return Decision(_no(3), reason="next_state")
            return Decision(_no(3), fire=True)
        if any(x is None for x in ins):
            return Decision(_no(3), reason="operands")
        if not free:
            return Decision(_no(3), reason="backpressure")
        return Decision((True, True, True), fire=True)

    def _publish(self, t, value):
        self.cur = value
        cont = self.pred(value, self.limit)
        self.held, self.pending, self.publish_at, self.next_at = (value, cont), {0, 1}, t + 1, t + self.latency
        self.running = bool(cont)

    def apply(self, t, ins, done):
        d = self.decide(t, ins, done)
        if self.held is not None and t >= self.publish_at:
            self.pending -= {j for j in (0, 1) if done[j]}
            if not self.pending:
                self.held = None
        if d.fire:
            if self.running:
                self._publish(t, self.step_fn(self.cur, self.step))
            else:
                start, self.limit, self.step = ins
                self._publish(t, start)
        return d.fire

    def next_event(self, t):
        return _later(t, self.publish_at, self.next_at)

    def reset(self):
        self.running, self.held, self.pending = False, None, set()

    @property
    def busy(self):
        return self.held is not None or self.running


# --- transparent: LoopCarry, LoopInvariant, LoopGate --------------------------------------------

class Carry:
    """`elastic.CarryResource` unchanged: Init forwards `init`; Loop consumes the condition
    and, when true, forwards `next`; a false condition returns to Init publishing nothing."""
    transparent = True

    def __init__(self):
        self.r = elastic.CarryResource()
        self.n_in, self.n_out = 3, 1
        self.required = (False, False, False)  # Init needs only init, Loop never needs init

    def decide(self, t, ins, done):
        cond, init, nxt = ins
        if self.r.state == "Init":
            if init is None:
                return Decision(_no(3), reason="operands")
            return (Decision((False, True, False), (init,), True) if done[0]
                    else Decision(_no(3), (init,), reason="backpressure"))
        if cond is None:
            return Decision(_no(3), reason="operands")
        if not cond:
            return Decision((True, False, False), (None,), True)
        if nxt is None:
            return Decision(_no(3), reason="operands")
        return (Decision((True, False, True), (nxt,), True) if done[0]
                else Decision(_no(3), (nxt,), reason="backpressure"))

    def apply(self, t, ins, done):
        return self.r.step(t, *ins, ready=done[0]).accepted

    def next_event(self, t):
        return None  # no time-dependent coordinate: it changes only when a token moves

    def reset(self):
        self.r.state = "Init"

    @property
    def busy(self):
        return self.r.state != "Init"


class Invariant:
    """dataflow.invariant(cond, value) -> out on a LoopInvariant resource.

    Init consumes `value`, stores it and forwards it; Loop consumes the condition: true
    forwards the stored value again, false returns to Init publishing nothing.  A loop
    instance with conditions T^n F therefore yields n + 1 copies, aligned with a carry."""
    transparent = True

    def __init__(self):
        self.n_in, self.n_out, self.required = 2, 1, (False, True)
        self.state, self.stored = "Init", None

    def decide(self, t, ins, done):
        cond, value = ins
        if self.state == "Init":
            if value is None:
                return Decision(_no(2), reason="operands")
            return (Decision((False, True), (value,), True) if done[0]
                    else Decision(_no(2), (value,), reason="backpressure"))
        if cond is None:
            return Decision(_no(2), reason="operands")
        if not cond:
            return Decision((True, False), (None,), True)
        return (Decision((True, False), (self.stored,), True) if done[0]
                else Decision(_no(2), (self.stored,), reason="backpressure"))

    def apply(self, t, ins, done):
        d = self.decide(t, ins, done)
        if d.fire:
            if self.state == "Init":
                self.state, self.stored = "Loop", ins[1]
            elif not ins[0]:
                self.state, self.stored = "Init", None
        return d.fire

    def next_event(self, t):
        return None  # no time-dependent coordinate: it changes only when a token moves

    def reset(self):
        self.state, self.stored = "Init", None

    @property
    def busy(self):
        return self.state != "Init"


class Gate:
    """dataflow.gate(cond, value) -> (cond', value') on a LoopGate resource.

    after_value[i] = value[i] (the tail is cut) and after_cond[i] = cond[i + 1] (the head is
    cut).  Head consumes (c0, v0): true publishes v0 only and enters Body; false (a zero-trip
    instance) publishes nothing.  Body consumes (ck, vk): true publishes (true, vk); false
    publishes only cond' = false, drops vk and returns to Head.  Only the active results of
    the selected case must be able to accept."""
    transparent = True

    def __init__(self):
        self.n_in, self.n_out, self.required = 2, 2, (True, True)
        self.body = False

    def decide(self, t, ins, done):
        cond, value = ins
        if cond is None or value is None:
            return Decision(_no(2), reason="operands")
        if not self.body:
            out = (None, value) if cond else (None, None)
        else:
            out = (1, value) if cond else (0, None)
        ok = all(done[j] for j in (0, 1) if out[j] is not None)
        return Decision((True, True), out, True) if ok else Decision(_no(2), out, reason="backpressure")

    def apply(self, t, ins, done):
        d = self.decide(t, ins, done)
        if d.fire:
            self.body = bool(ins[0])
        return d.fire

    def next_event(self, t):
        return None  # no time-dependent coordinate: it changes only when a token moves

    def reset(self):
        self.body = False

    @property
    def busy(self):
        return self.body


# --- registered: the ordered-cardinality adapters -------------------------------------------------

class _AdapterBase:
    transparent = False

    def present(self, t):
        c = self.r.claim
        if c is None or not c.groups or t < c.visible_at:
            return _none(self.n_out)
        g = c.groups[c.index]
        return tuple(g[j] if j in c.pending else None for j in range(self.n_out))

    def _free(self, t, done) -> bool:
        c = self.r.claim
        if c is None:
            return True
        if not c.groups:
            return t >= c.commit_at
        last = c.index == len(c.groups) - 1
        return last and t >= c.visible_at and all(done[j] for j in c.pending)

    def next_event(self, t):
        c = self.r.claim
        return None if c is None else _later(t, c.visible_at, c.commit_at)

    def reset(self):
        self.r.reset()

    @property
    def busy(self):
        return self.r.claim is not None or bool(getattr(self.r, "buffer", None))


class Parallelize(_AdapterBase):
    """`elastic.ParallelizeAdapter` unchanged: (element, phase) -> (vector, mask, group_phase)."""

    def __init__(self, lanes: int, zero=0):
        self.r = elastic.create_adapter_use("FixedVectorParallelize", {1}, lanes, zero=zero)
        self.n_in, self.n_out, self.required = 2, 3, (False, True)

    def decide(self, t, ins, done):
        element, phase = ins
        if phase is None or (phase and element is None):
            return Decision(_no(2), reason="operands")
        if not self._free(t, done):
            return Decision(_no(2), reason="backpressure")
        return Decision((True, True) if phase else (False, True), fire=True)

    def apply(self, t, ins, done):
        return self.r.step(t, ins[0], ins[1], done).accepted


class Serialize(_AdapterBase):
    """`elastic.SerializeAdapter` unchanged: (vector, mask, phase) -> (element, phase)."""

    def __init__(self, max_lanes: int, lanes: int, zero=0):
        self.r = elastic.create_adapter_use("FixedVectorSerialize", {1, 2}, max_lanes, lanes, zero=zero)
        self.n_in, self.n_out, self.required = 3, 2, (False, False, True)

    def decide(self, t, ins, done):
        vector, mask, phase = ins
        if phase is None or (phase and (vector is None or mask is None)):
            return Decision(_no(3), reason="operands")
        if not self._free(t, done):
            return Decision(_no(3), reason="backpressure")
        return Decision((True, True, True) if phase else (False, False, True), fire=True)

    def apply(self, t, ins, done):
        return self.r.step(t, ins[0], ins[1], ins[2], done).accepted
