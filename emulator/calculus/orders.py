"""Strength is a product order, not an enum order (seed 002).

Over one fixed set of events (0..n-1), an ordering constraint set H is a set of edges (a, b):
a before b.  Schedules are compared by the inclusion of their transitive closures:

    H1 <=order H2  iff  closure(H1) subset closure(H2)
    then: linear_extensions(H2) subset linear_extensions(H1)

so more order admits fewer schedules, an unordered domain is weakest, a total order maximal, and
two partial orders (two pipeline orders, say) may be incomparable.  `compare` gives the relation;
`check_strengthening` checks that adding order to a source's required order keeps it a valid
schedule: acyclic, keeping every observable edge of the source (the order relation "is not
permission to erase observable edges"), and implementable on the given placement (a participant
runs its events one at a time, in its local order; an edge between participants needs the
target's synchronization).

Closures come from one pass in topological order (graphlib, which also names a cycle), with
Python integers as bitsets (n <= MAX_EVENTS).
"""
from __future__ import annotations

import graphlib
from dataclasses import dataclass, field

import numpy as np

from isa.atomicio import shown

from .errors import UndecidedError
from .witnesses import Verdict, _Fail, _verdict

MAX_EVENTS = 1 << 12        # closure matrices up to 4096 x 4096 booleans (16 MiB)
_RULE = "Strength order"


def _edges(n, edges, what: str) -> np.ndarray:
    """Untrusted edges as an (m, 2) int64 array, or the obligation 'well-typed witness'."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise _Fail("well-typed witness", f"the number of events must be a nonnegative integer, got {n!r}")
    if n > MAX_EVENTS:
        raise UndecidedError(f"{n} events; closures are computed for at most {MAX_EVENTS}")
    try:
        pairs = [tuple(x) for x in edges]
    except TypeError:
        raise _Fail("well-typed witness", f"{what} must be a list of (before, after) event pairs") from None
    for p in pairs:
        if len(p) != 2 or not all(isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))
                                  for x in p) or not (0 <= p[0] < n and 0 <= p[1] < n):
            raise _Fail("well-typed witness", f"{what}: {shown(repr(p))} is not a pair of events 0..{n - 1}")
    return np.array(pairs, np.int64).reshape(-1, 2)


def _reach(n: int, edges: np.ndarray) -> list[int]:
    """reach[v]: the events after v (a bitset), by one pass in reverse topological order --
    graphlib finds the order, or the cycle (CycleError names it)."""
    succ: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges.tolist():
        succ[a].append(b)
    ts = graphlib.TopologicalSorter({v: succ[v] for v in range(n)})   # v after its successors
    reach = [0] * n
    for v in ts.static_order():
        r = 0
        for w in succ[v]:
            r |= reach[w] | (1 << w)
        reach[v] = r
    return reach


def closure(n: int, edges) -> np.ndarray:
    """The transitive closure of `edges` over n events, as an (n, n) boolean matrix (raises
    graphlib.CycleError when they have a cycle)."""
    reach = _reach(n, np.asarray(edges, np.int64).reshape(-1, 2))
    width = (n + 7) // 8
    raw = b"".join(r.to_bytes(width, "little") for r in reach)
    bits = np.unpackbits(np.frombuffer(raw, np.uint8).reshape(n, width), axis=1, bitorder="little")
    return bits[:, :n].astype(bool)


def compare(n: int, h1, h2) -> str:
    """How H1 relates to H2: "equal", "weaker" (closure(H1) strictly inside closure(H2)),
    "stronger", or "incomparable"."""
    c1, c2 = _reach(n, _edges(n, h1, "H1")), _reach(n, _edges(n, h2, "H2"))
    le = all(a & ~b == 0 for a, b in zip(c1, c2))
    ge = all(b & ~a == 0 for a, b in zip(c1, c2))
    return "equal" if le and ge else "weaker" if le else "stronger" if ge else "incomparable"


@dataclass
class StrengthWitness:
    """Adding order: `source` is the required order (the program's observable edges), `schedule`
    the new constraint set over the same `events` (count).  `participant[e]` and `time[e]`
    (optional) place event e (with `time`, a participant runs its events one at a time in that
    order; without it, only the schedule's own edges on one participant are checked); `sync` says which edges between participants the target can
    enforce: "barrier" (any), "none" (none)."""
    events: int
    source: list
    schedule: list
    participant: list | None = None
    time: list | None = None
    sync: str = "barrier"
    labels: list = field(default_factory=list)


def _strength(w: StrengthWitness) -> str:
    n = w.events
    src, new = _edges(n, w.source, "source"), _edges(n, w.schedule, "schedule")
    name = (lambda e: w.labels[e]) if len(w.labels) == n else (lambda e: f"event {e}")
    try:
        cn = closure(n, new)
    except graphlib.CycleError as exc:
        cyc = list(reversed(exc.args[1]))             # graphlib lists it successor-first
        raise _Fail("acyclic", "the schedule orders " + " before ".join(name(e) for e in cyc) + ": a cycle") from None
    try:
        cs = closure(n, src)
    except graphlib.CycleError:
        raise _Fail("well-typed witness", "the source order has a cycle") from None
    lost = np.argwhere(cs & ~cn)
    if len(lost):
        a, b = map(int, lost[0])
        raise _Fail("observable edges kept", f"the source orders {name(a)} before {name(b)}; the schedule "
                                             f"does not (adding order never erases an observable edge)")
    if w.participant is not None:
        part = np.asarray(w.participant)
        tm = np.asarray(w.time if w.time is not None else np.zeros(n, np.int64))
        if part.shape != (n,) or tm.shape != (n,) or part.dtype.kind not in "iu" or tm.dtype.kind not in "iu":
            raise _Fail("well-typed witness", f"participant and time must give one integer per event ({n})")
        a, b = np.nonzero(cn)
        same = part[a] == part[b]
        bad = np.nonzero(same & (tm[a] >= tm[b]))[0]
        if len(bad):
            i, j = int(a[bad[0]]), int(b[bad[0]])
            raise _Fail("implementable", f"{name(i)} must precede {name(j)}, but participant {int(part[i])} runs "
                                         f"them at local times {int(tm[i])} and {int(tm[j])}")
        cross = np.nonzero(~same)[0]
        if len(cross) and w.sync != "barrier":
            i, j = int(a[cross[0]]), int(b[cross[0]])
            raise _Fail("implementable", f"{name(i)} (participant {int(part[i])}) must precede {name(j)} "
                                         f"(participant {int(part[j])}); the target synchronizes no participants "
                                         f"(sync {w.sync!r})")
        if w.time is not None:
            _one_at_a_time(n, new, part, tm, name)
    extra = int((cn & ~cs).sum())
    return "the schedule is the source order" if not extra else \
        f"the schedule strengthens the source order by {extra} ordered pair(s) (fewer linear extensions)"


def _one_at_a_time(n: int, schedule: np.ndarray, part: np.ndarray, tm: np.ndarray, name) -> None:
    """A participant runs its events one at a time in local time order, so that order is part of
    the realized schedule: two events at one local time are not implementable, and the schedule's
    edges between participants together with every participant's local order must stay acyclic
    (p0 runs a then b, p1 runs c then d, the schedule asks b before c and d before a: each edge is
    fine alone, together the participants wait on each other for ever)."""
    by = np.lexsort((tm, part))
    same = part[by[1:]] == part[by[:-1]]
    tie = np.nonzero(same & (tm[by[1:]] == tm[by[:-1]]))[0]
    if len(tie):
        i, j = sorted((int(by[tie[0]]), int(by[tie[0] + 1])))
        raise _Fail("implementable", f"participant {int(part[i])} runs {name(i)} and {name(j)} both at local time "
                                     f"{int(tm[i])}: a participant runs its events one at a time")
    local = np.stack([by[:-1][same], by[1:][same]], axis=1)
    try:
        _reach(n, np.concatenate([schedule, local]).astype(np.int64))
    except graphlib.CycleError as exc:
        cyc = list(reversed(exc.args[1]))
        raise _Fail("implementable", "with each participant's local order the schedule orders "
                    + " before ".join(f"{name(e)} (participant {int(part[e])})" for e in cyc)
                    + ": the participants would wait on each other for ever") from None


def check_strengthening(w: StrengthWitness) -> Verdict:
    return _verdict(_RULE, _strength, w)
