"""Distributions, resource maps and value placement (seed 002, "Typed mapping witness" and "Plan
phases before value placement").

A plan may say where values live.  The records, as the seed names them:

- `Distribution` -- delta_v: active (participant, local slot) occurrences -> logical elements of
  value v (an array).  Its relation L_v = {(e, p, s) | delta_v(p, s) = e, (p, s) active} keeps
  every replica (`relation`); a functional inverse would lose them.
- `ResourceMap` -- mu_s: (owner participant, version) -> resource instance, and addr_s: local
  slot -> address; physical access = (mu_s(owner, version), addr_s(slot)).  The version of a
  slot is how many times it has been (re)written, so mu can double-buffer.
- `Phase` -- E_p: the events of a scope (by path) -> the participant that runs them, from their
  coordinates.
- `Transfer` -- C_(v,p): copies of v's slots, issued after one plan step and readable from a
  later one; `kind="shuffle"` is a collective whose source participants must be converged (run
  in the issuing step).

`check_placement` (called by plan.check_plan when a plan has a `placement`) simulates the plan's
steps in order over the slots and checks, for every access of a distributed value:

| obligation | what |
|---|---|
| well-typed placement | records of the right types; maps evaluate on their domains; elements in range |
| phase placement | every event that touches a distributed value is placed by a phase |
| owner computes | a write lands in a local slot of the writing participant (delta_v gives it the element) |
| transfer delivers its element | a copy moves a slot of element e into a slot of element e |
| copies published before use | a copy reads its source after the producer wrote it and is read only once it landed |
| converged participants | a shuffle's sources run in the step that issues it (a ragged phase must not predicate a source away) |
| each use observes its reaching value | the participant's slot holds the reaching definition's version (the last write before it in source order), per read: an op reading one array at several places has one reaching value per read |
| lifetimes do not collide | two contents live at once never share (mu_s(owner, version), addr_s(slot)) |

Each failure names the events, participants, slots and steps involved.  `check_bridge` checks an
adapter to a destination's storage interface against L_v as a relation: the same active pairs,
replicas kept, and (given resource maps) the same resource instance and offset per pair.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .domains import FiniteDomain, IndexMap, fmt
from .expr import EvalError
from .witnesses import Verdict, _Fail, _verdict


@dataclass
class Distribution:
    value: str                       # the array (logical value) it distributes
    domain: FiniteDomain             # (participant axes..., slot axes...)
    delta: IndexMap                  # domain coordinates -> element coordinates of `value`
    participant_axes: int = 1        # the leading axes naming the participant context


@dataclass
class Phase:
    path: str                        # the events of this node (and its descendants)
    participant: IndexMap            # the event's coordinates (by name) -> participant coordinates


@dataclass
class ResourceMap:
    name: str
    values: tuple                    # arrays whose slots live in this resource
    mu: IndexMap                     # (participant coordinates..., version) -> resource instance
    addr: IndexMap                   # (slot coordinates...) -> address
    capacity: int | None = None      # addresses per instance


@dataclass
class Transfer:
    value: str
    after: int                       # issued once plan step `after` has completed
    lands: int                       # readable from plan step `lands` on
    pairs: list = field(default_factory=list)   # ((src participant, src slot), (dst participant, dst slot))
    kind: str = "copy"               # "copy" or "shuffle" (a collective: its sources must be converged)


@dataclass
class Placement:
    distributions: list = field(default_factory=list)
    phases: list = field(default_factory=list)
    resources: list = field(default_factory=list)
    transfers: list = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Relations: finite sets of tuples with the closure operations the seed names (composition,
# projection, restriction); islpy gives their symbolic counterparts (symbolic.py).

class Relation:
    """A finite relation: a set of equal-length integer tuples (columns named by position)."""

    def __init__(self, rows=()):
        self.rows = frozenset(tuple(int(x) for x in r) for r in rows)

    def __eq__(self, other) -> bool:
        return isinstance(other, Relation) and self.rows == other.rows

    def __hash__(self):
        return hash(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def project(self, cols) -> "Relation":
        return Relation(tuple(r[c] for c in cols) for r in self.rows)

    def restrict(self, pred) -> "Relation":
        return Relation(r for r in self.rows if pred(r))

    def compose(self, other: "Relation", left: int, right: int) -> "Relation":
        """{(a, c) | (a, b) in self, (b, c) in other}, b being self's last `left` columns and
        other's first `right` (left == right)."""
        if left != right:
            raise ValueError("the joined columns must have the same arity")
        by: dict = {}
        for r in other.rows:
            by.setdefault(r[:right], []).append(r[right:])
        return Relation(a[:-left] + c for a in self.rows for c in by.get(a[-left:], ()))

    def image(self, key: tuple, width: int) -> set:
        return {r[width:] for r in self.rows if r[:width] == key}


def relation(dist: Distribution, program=None) -> Relation:
    """L_v = {(e, p..., s...)}: e the element's row-major index (coordinates without a program)."""
    rows = []
    shape = None if program is None else program.arrays[dist.value].shape
    for pt in dist.domain.points():
        e = dist.delta(pt)
        key = (int(np.ravel_multi_index(e, shape)),) if shape is not None else tuple(e)
        rows.append(key + tuple(pt))
    return Relation(rows)


# ---------------------------------------------------------------------------------------------
# The placement check

INFLIGHT = -1


class _Slots:
    """Every active (participant, slot) of one distribution: its element, current version (the
    writing event's ordinal + 1; 0 the initial value; INFLIGHT while a copy lands), write count,
    birth step and last use, plus an index (participant, element) -> slots."""

    def __init__(self, dist: Distribution, program):
        if not isinstance(dist, Distribution) or dist.value not in program.arrays:
            raise _Fail("well-typed placement", f"{getattr(dist, 'value', dist)!r} is not a Distribution of an array")
        shape = program.arrays[dist.value].shape
        pts = dist.domain.points()
        k = dist.participant_axes
        if not isinstance(k, int) or not 0 <= k <= len(dist.domain.axes):
            raise _Fail("well-typed placement", f"{dist.value}: participant_axes {k!r} exceeds the domain's axes")
        self.value, self.dist = dist.value, dist
        self.part = [p[:k] for p in pts]
        self.slot = [p[k:] for p in pts]
        self.elem = []
        for p in pts:
            try:
                e = tuple(dist.delta(p))
            except (EvalError, TypeError, ValueError) as exc:
                raise _Fail("well-typed placement", f"delta_{dist.value}{fmt(dist.domain.names, p)} cannot be "
                                                    f"evaluated: {exc}")
            if len(e) != len(shape) or any(not 0 <= x < n for x, n in zip(e, shape)):
                raise _Fail("well-typed placement", f"delta_{dist.value}{fmt(dist.domain.names, p)} = {list(e)} is not "
                                                    f"an element of {dist.value} (shape {list(shape)})")
            self.elem.append(int(np.ravel_multi_index(e, shape)))
        n = len(pts)
        self.version = np.zeros(n, np.int64)
        self.writes = np.zeros(n, np.int64)
        self.born = np.zeros(n, np.int64)
        self.last = np.zeros(n, np.int64)
        self.used = np.zeros(n, bool)          # the current content has been read
        self.at: dict = {}
        for i, (p, e) in enumerate(zip(self.part, self.elem)):
            self.at.setdefault((p, e), []).append(i)
        self.by_ps = {(p, s): i for i, (p, s) in enumerate(zip(self.part, self.slot))}
        self.lifetimes: list = []              # (slot index, write count, born, last)

    def name(self, i) -> str:
        return f"participant {list(self.part[i])} slot {list(self.slot[i])}"

    def close(self, i) -> None:
        """The current content's lifetime ends: from its write (or copy) to its last read; an
        initial value nobody reads is dead from the start and occupies nothing."""
        if self.version[i] == 0 and self.writes[i] == 0 and not self.used[i]:
            return
        self.lifetimes.append((i, int(self.writes[i]), int(self.born[i]), int(max(self.last[i], self.born[i]))))

    def put(self, i, version, step) -> None:
        self.close(i)
        self.version[i], self.writes[i], self.born[i], self.last[i] = version, self.writes[i] + 1, step, step
        self.used[i] = False


def participant_of(phases, ev):
    """E_p on one event: the participant of the first phase that holds it, or None."""
    for ph in phases:
        if ev.path == ph.path or ev.path.startswith(ph.path + ".") or ev.path.startswith(ph.path + "#"):
            names = ph.participant.inputs
            try:
                return tuple(ph.participant(tuple(ev.coords[n] for n in names)))
            except KeyError as exc:
                raise _Fail("phase placement", f"phase {ph.path}'s participant map reads {exc}, which {ev.label} "
                                               f"does not bind") from None
            except (EvalError, TypeError, ValueError) as exc:
                raise _Fail("phase placement", f"the participant of {ev.label} cannot be evaluated: {exc}") from None
    return None


def _reaching(evs, arrays: dict) -> dict:
    """(event ordinal, access index) -> per cell of that read, the version it observes in source
    order: the last earlier writer's ordinal + 1, or 0 (the initial value).  Keyed by the use,
    not the array: one event may read one array at several places (`y[p] * 100 + y[p + 2]`),
    and each read has its own reaching values."""
    last = {name: np.zeros(program_size, np.int64) for name, program_size in arrays.items()}
    out: dict = {}
    for e in evs:
        for k, a in enumerate(e.accesses):
            if a.key in last and not a.write:
                out[(e.ordinal, k)] = last[a.key][a.cells].copy()
        for a in e.accesses:
            if a.key in last and a.write:
                last[a.key][a.cells] = e.ordinal + 1
    return out


def check_placement(program, plan, steps, evs) -> str:
    """Raises _Fail at the first broken obligation (see the module docstring); `steps` are the
    plan's resolved member events per step."""
    pl = plan.placement
    if not isinstance(pl, Placement):
        raise _Fail("well-typed placement", f"a plan's placement is a Placement, got {type(pl).__name__}")
    slots: dict[str, _Slots] = {}
    for d in pl.distributions:
        s = _Slots(d, program)
        if s.value in slots:
            raise _Fail("well-typed placement", f"{s.value} has two distributions (one relation L_v holds every replica)")
        slots[s.value] = s
    for ph in pl.phases:
        if not isinstance(ph, Phase) or not isinstance(ph.participant, IndexMap):
            raise _Fail("well-typed placement", f"{ph!r} is not a Phase(path, participant IndexMap)")
    issues = _transfers(pl, slots, len(steps))
    reach = _reaching(evs, {v: program.arrays[v].size for v in slots})
    where = {}
    for e in evs:
        if any(a.key in slots for a in e.accesses):
            p = participant_of(pl.phases, e)
            if p is None:
                raise _Fail("phase placement", f"{e.label} accesses a distributed value but no phase places it "
                                               f"(E_p is undefined on it)")
            where[e.ordinal] = p
    landing: dict[int, list] = {}
    for t, ids in enumerate(steps):
        for S, j, version in landing.pop(t, ()):
            S.put(j, version, t)
        for i in ids:
            if i in where:
                _event(evs[i], where[i], slots, reach, t, program)
        active = {where[i] for i in ids if i in where}
        for n, tr, pairs in issues.get(t, ()):
            S = slots[tr.value]
            for i, j in pairs:
                if S.version[i] == INFLIGHT:
                    raise _Fail("copies published before use", f"transfer {n} after step {t} copies {S.name(i)}, whose "
                                                               f"own copy has not landed")
                if tr.kind == "shuffle" and S.part[i] not in active:
                    raise _Fail("converged participants", f"the shuffle after step {t} (transfer {n}) reads from "
                                                          f"participant {list(S.part[i])}, which runs nothing in that "
                                                          f"step: a collective needs its sources converged (guard their "
                                                          f"reads and writes, do not predicate them away)")
                S.last[i], S.used[i] = t, True
            moved = [(S, j, int(S.version[i])) for i, j in pairs]
            for _, j, _ in moved:
                S.close(j)
                S.version[j], S.born[j], S.last[j] = INFLIGHT, t, t
            landing.setdefault(tr.lands, []).extend(moved)
    for S, j, version in landing.pop(len(steps), ()):
        S.put(j, version, len(steps))
    for S in slots.values():
        for i in range(len(S.elem)):
            S.close(i)
    _lifetimes(pl, slots, program)
    n = sum(len(S.elem) for S in slots.values())
    return f"placement: {len(slots)} distributed value(s), {n} slot(s), {len(pl.transfers)} transfer(s)"


def _event(e, p, slots, reach, t, program) -> None:
    """One event on participant p in step t: its reads of distributed values, then its writes."""
    for k, a in enumerate(e.accesses):
        S = slots.get(a.key)
        if S is not None and not a.write:
            for c, want in zip(a.cells.tolist(), reach[(e.ordinal, k)].tolist()):
                _use(S, e, p, c, want, t, program)
    for a in e.accesses:
        S = slots.get(a.key)
        if S is None or not a.write:
            continue
        for c in a.cells.tolist():
            ks = S.at.get((p, c))
            if not ks:
                raise _Fail("owner computes", f"{e.label} on participant {list(p)} writes {_cell(program, S, c)}, "
                                              f"which delta_{S.value} gives it no slot for (a remote write needs a "
                                              f"copy or an explicit combine)")
            for k in ks:
                S.put(k, e.ordinal + 1, t)


def _cell(program, S, c) -> str:
    from .cells import describe
    return describe(program, S.value, c)


def _use(S, e, p, c, want, t, program) -> None:
    ks = S.at.get((p, c))
    what = _cell(program, S, c)
    if not ks:
        raise _Fail("each use observes its reaching value",
                    f"{e.label} on participant {list(p)} reads {what}, which L_{S.value} places nowhere on it (no "
                    f"(element, participant, slot) pair): a copy or a replica is needed")
    for k in ks:
        if S.version[k] == want:
            S.last[k], S.used[k] = t, True
            return
    k = ks[0]
    if S.version[k] == INFLIGHT:
        raise _Fail("copies published before use", f"{e.label} reads {what} in step {t} from {S.name(k)}, whose copy "
                                                    f"has not landed yet")
    have = "the initial value" if S.version[k] == 0 else f"the value of event {int(S.version[k]) - 1}"
    need = "the initial value" if want == 0 else f"that of event {want - 1}"
    raise _Fail("each use observes its reaching value",
                f"{e.label} on participant {list(p)} reads {what} in step {t}: {S.name(k)} holds {have}, but its "
                f"reaching definition is {need} (a copy after it is missing)")


def _transfers(pl, slots, nsteps) -> dict:
    """Transfers by the step after which they issue: (number, transfer, [(source slot,
    destination slot)])."""
    out: dict = {}
    for n, tr in enumerate(pl.transfers):
        if not isinstance(tr, Transfer) or tr.value not in slots:
            raise _Fail("well-typed placement", f"transfer {n} is not a Transfer of a distributed value")
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in (tr.after, tr.lands)) or \
                not 0 <= tr.after < tr.lands <= nsteps or tr.kind not in ("copy", "shuffle"):
            raise _Fail("well-typed placement", f"transfer {n}: after {tr.after!r} < lands {tr.lands!r} must be steps "
                                                f"of the plan (0..{nsteps}), kind copy or shuffle")
        S = slots[tr.value]
        pairs = []
        try:
            for src, dst in tr.pairs:
                (sp, ss), (dp, ds) = src, dst
                key_s, key_d = (tuple(sp), tuple(ss)), (tuple(dp), tuple(ds))
                if key_s not in S.by_ps or key_d not in S.by_ps:
                    raise _Fail("well-typed placement", f"transfer {n}: {src!r} -> {dst!r} names a slot outside "
                                                        f"delta_{tr.value}'s domain")
                i, j = S.by_ps[key_s], S.by_ps[key_d]
                if S.elem[i] != S.elem[j]:
                    raise _Fail("transfer delivers its element", f"transfer {n} copies {S.name(i)} (element "
                                                                 f"{S.elem[i]}) into {S.name(j)}, which holds element "
                                                                 f"{S.elem[j]}")
                pairs.append((i, j))
        except (TypeError, ValueError):
            raise _Fail("well-typed placement", f"transfer {n}: pairs are ((participant, slot), (participant, slot))") from None
        out.setdefault(tr.after, []).append((n, tr, pairs))
    return out


def _lifetimes(pl, slots, program) -> None:
    """Contents live at once never share a physical location (mu(owner, version), addr(slot))."""
    for r in pl.resources:
        if not isinstance(r, ResourceMap) or not isinstance(r.mu, IndexMap) or not isinstance(r.addr, IndexMap):
            raise _Fail("well-typed placement", f"{r!r} is not a ResourceMap(name, values, mu, addr)")
        by_loc: dict = {}
        count: dict = {}
        for v in r.values:
            S = slots.get(v)
            if S is None:
                raise _Fail("well-typed placement", f"resource {r.name} holds {v!r}, which has no distribution")
            for i, writes, born, last in S.lifetimes:
                try:
                    loc = (tuple(r.mu(tuple(S.part[i]) + (writes,))), tuple(r.addr(tuple(S.slot[i]))))
                except (EvalError, TypeError, ValueError) as exc:
                    raise _Fail("well-typed placement", f"resource {r.name}: mu/addr of {S.name(i)} cannot be "
                                                        f"evaluated: {exc}") from None
                count.setdefault(loc[0], set()).add(loc[1])
                for other in by_loc.get(loc, ()):
                    ov, oi, ow, ob, ol = other
                    # one slot's successive contents follow each other; two slots sharing a
                    # location must not be live in one step
                    if (ov, oi) != (v, i) and born <= ol and ob <= last:
                        raise _Fail("lifetimes do not collide",
                                    f"resource {r.name} instance {list(loc[0])} address {list(loc[1])} holds {ov} "
                                    f"{slots[ov].name(oi)} (steps {ob}..{ol}) and {v} {S.name(i)} (steps {born}..{last}) "
                                    f"at once")
                by_loc.setdefault(loc, []).append((v, i, writes, born, last))
        if r.capacity is not None:
            for inst, addrs in count.items():
                if len(addrs) > r.capacity:
                    raise _Fail("lifetimes do not collide", f"resource {r.name} instance {list(inst)} needs "
                                                            f"{len(addrs)} addresses; its capacity is {r.capacity}")


def derivation(program, plan, events) -> dict:
    """The seed's derivation, as records: E_p {event ordinal: (program, participant, local
    time = step)}, L_v {value: Relation (element, participant..., slot...)}, C_(v,p) {value:
    [(source (p, s), destination (p, s), issued after step, readable from step)]}.  Events
    outside every phase are left out of E_p; a plan without a placement derives nothing."""
    pl = plan.placement
    out = {"E": {}, "L": {}, "C": {}}
    if not isinstance(pl, Placement):
        return out
    step_of = {}
    for t, step in enumerate(plan.steps):
        for ref in list(step.events) + list(step.final):
            step_of[ref if isinstance(ref, int) else next((e.ordinal for e in events if e.label == ref), None)] = t
    for e in events:
        p = participant_of(pl.phases, e)
        if p is not None:
            out["E"][e.ordinal] = ("main", p, step_of.get(e.ordinal))
    for d in pl.distributions:
        out["L"][d.value] = relation(d, program)
    for tr in pl.transfers:
        out["C"].setdefault(tr.value, []).extend(
            (tuple(map(tuple, src)), tuple(map(tuple, dst)), tr.after, tr.lands) for src, dst in tr.pairs)
    return out


# ---------------------------------------------------------------------------------------------
# Bridge compatibility

def check_bridge(dist: Distribution, adapter, program=None, resources=(), adapter_resources=None) -> Verdict:
    """An adapter to a destination's logical-to-physical interface, against L_v: `adapter` is
    a relation (an iterable of (element, participant..., slot...) rows) or a functional inverse
    {element: (participant..., slot...)}.  Obligations: **replicas kept** (a functional inverse
    cannot hold an element with several copies), **same active pairs**, and with
    `adapter_resources` {(participant, slot): (instance, offset)} and our `resources`, **resource
    instance and offset** per pair (version 0)."""
    return _verdict("Bridge", _bridge, dist, adapter, program, resources, adapter_resources)


def _bridge(dist, adapter, program, resources, adapter_resources) -> str:
    L = relation(dist, program)
    width = 1 if program is not None else len(dist.delta.exprs or ()) or 1
    if isinstance(adapter, dict):
        copies: dict = {}
        for r in L.rows:
            copies.setdefault(r[:width], []).append(r[width:])
        multi = next(((e, c) for e, c in sorted(copies.items()) if len(c) > 1), None)
        if multi is not None:
            raise _Fail("replicas kept", f"element {list(multi[0])} has {len(multi[1])} copies "
                                         f"({', '.join(str(list(x)) for x in multi[1][:3])}); a functional inverse keeps "
                                         f"one: adapt the relation L_{dist.value}")
        try:
            rows = [(tuple(e) if isinstance(e, tuple) else (e,)) + tuple(v) for e, v in adapter.items()]
        except TypeError:
            raise _Fail("well-typed witness", "a functional adapter maps elements to (participant..., slot...)") from None
    else:
        try:
            rows = [tuple(r) for r in adapter]
        except TypeError:
            raise _Fail("well-typed witness", "an adapter is a relation (rows) or {element: (participant, slot)}") from None
    A = Relation(rows)
    missing, extra = sorted(L.rows - A.rows), sorted(A.rows - L.rows)
    if missing or extra:
        what = f"misses {list(missing[0])}" if missing else f"adds {list(extra[0])}"
        raise _Fail("same active pairs", f"the adapter {what} of L_{dist.value} = {{(element, participant, slot)}}")
    if adapter_resources is not None:
        k = dist.participant_axes
        for res in resources:
            if dist.value not in res.values:
                continue
            for row in sorted(L.rows):
                ps = row[width:]
                p, s = ps[:k], ps[k:]
                ours = (tuple(res.mu(p + (0,))), tuple(res.addr(s)))
                theirs = adapter_resources.get((p, s))
                if theirs is None or (tuple(theirs[0]), tuple(theirs[1])) != ours:
                    raise _Fail("resource instance and offset", f"participant {list(p)} slot {list(s)}: the adapter "
                                                                f"gives {theirs}, the plan (instance {list(ours[0])}, "
                                                                f"offset {list(ours[1])}) in {res.name}")
    return f"L_{dist.value}: {len(L)} (element, participant, slot) pair(s) kept"
