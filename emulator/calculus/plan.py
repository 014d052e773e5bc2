"""The planner-facing check: is a proposed execution plan a refinement of the source program?

The source program's events (effects.events: every leaf instance in source order -- a tile
block on one PE, an op instance, a GPR write, a reduction contribution or result) are the
semantic occurrences.  A plan lists steps run one after another; each step groups events:

| kind       | meaning                                                   | obligations                           |
|------------|-----------------------------------------------------------|---------------------------------------|
| `serial`   | the events in the listed order                            | source order of dependent events      |
| `parallel` | one batch (one kernel call): the events concurrently      | noninterference W(i)∩(R(j)∪W(j))=∅    |
| `fused`    | one fused scope: per element point, the events in listed  | source order; every dependence between|
|            | order; distinct points concurrently                       | members stays on one point (diagonal) |
| `merge`    | a reduction's final merge, realized as the merge `tree`   | the policy admits the tree            |
| `scan`     | a scan's prefix results, realized as `tree`: "serial",    | every prefix's tree is one the policy |
|            | "blelloch", "hillis_steele" or a list of per-prefix trees | admits                                |

and across steps every dependence (RAW, WAR, WAW on a cell) keeps its direction.  Storage:
with `renamed=False` (default) tiles are named storage, as on the machine, so WAR and WAW on a
tile constrain order like RAW; with `renamed=True` the realization keeps every destination
version in its own buffer (the architecture renames destinations), cells are versioned, and
only true (RAW) dependences link blocks -- admit that only for a realization that really
addresses versions (e.g. a fused kernel writing fresh buffers).  The checker returns admitted
or the first failed obligation, in plain terms (which events, which cell, which step).

Obligations, in order: events exist; exact coverage; step kinds; dependences preserved (which
also finds interference inside a parallel step); pointwise fusion (Dep ⊆ diagonal per fused
step); reduction policy (merge steps).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from isa.atomicio import shown

from .effects import CELL_MASK, KEY_SHIFT, Event, Keys, describe, events as source_events_of
from .budget import BudgetError
from .errors import RegionError, UndecidedError
from .program import Program, Scan
from .tilelaws import merge_laws
from .witnesses import MergeTreeWitness, Verdict, _Fail, _verdict, check_merge_tree

STEP_KINDS = ("serial", "parallel", "fused", "merge", "scan", "pipeline", "group", "atom")
MAX_TICKS = 1 << 30             # pipeline issue ticks and latencies
SCAN_REALIZATIONS = ("serial", "blelloch", "hillis_steele")
MAX_SCAN_LEAVES = 1 << 16       # per-prefix trees checked one by one up to this many leaves in all


@dataclass
class Step:
    kind: str
    events: tuple                       # event ordinals (ints) or event labels (strings)
    tree: object = None                 # merge: a merge tree, or {group: tree}; scan: a realization
    times: tuple | None = None          # pipeline: each member's issue tick
    latency: object = 1                 # pipeline: ticks until a member's writes land (int, or one per member)
    final: tuple = ()                   # merge: events run once after the merge (its final stage)
    phases: tuple | None = None         # group: each member's phase (complete barriers between phases)
    group_size: int | None = None       # group: participants of the one group
    complete: bool = True               # group: every participant reaches every barrier
    atom: object = None                 # atom: the atoms.AtomContract that replaces the members

    def __post_init__(self):
        try:
            self.events = tuple(self.events)
        except TypeError:
            pass                        # an untrusted step: _resolve names it


@dataclass
class Plan:
    steps: list = field(default_factory=list)
    renamed: bool = False               # True: every tile version has its own storage
    placement: object = None            # a placement.Placement: where values live, copies, resources


def source_events(program: Program, *, machines: list | None = None, renamed: bool = False) -> list[Event]:
    """The program's events in source order (what a plan's steps refer to)."""
    return source_events_of(program, machines=machines, renamed=renamed)


def serial_plan(evs: list[Event]) -> Plan:
    """The reference plan: every event alone, in source order (always admitted)."""
    return Plan([Step("serial", (e.ordinal,)) for e in evs])


def _resolve(plan: Plan, evs: list[Event]) -> tuple[list[list[int]], list[list[int]]]:
    """Each step's member events and its final-stage events (a merge's `final`), as ordinals."""
    by_label: dict[str, int] = {}
    for e in evs:
        by_label.setdefault(e.label, e.ordinal)

    def refs(s, v, what):
        try:
            v = list(v)
        except TypeError:
            raise _Fail("step kinds", f"step {s}: {what} must be a list of events, got {type(v).__name__}") from None
        ids = []
        for ref in v:
            if isinstance(ref, (int, np.integer)) and not isinstance(ref, (bool, np.bool_)):
                if not 0 <= ref < len(evs):
                    raise _Fail("events exist", f"step {s} names event {ref}; the program has events 0..{len(evs) - 1}")
                ids.append(int(ref))
            elif isinstance(ref, str) and ref in by_label:
                ids.append(by_label[ref])
            else:
                raise _Fail("events exist", f"step {s} names {shown(repr(ref))}, which is not an event of the program")
        return ids
    out, finals = [], []
    if not isinstance(plan.steps, (list, tuple)):
        raise _Fail("step kinds", f"a plan's steps are a list, got {type(plan.steps).__name__}")
    for s, step in enumerate(plan.steps):
        if not isinstance(step, Step):
            raise _Fail("step kinds", f"step {s} is not a Step, got {type(step).__name__}")
        if step.kind not in STEP_KINDS:
            raise _Fail("step kinds", f"step {s} has kind {shown(repr(step.kind))}; one of {', '.join(STEP_KINDS)}")
        out.append(refs(s, step.events, "events"))
        finals.append(refs(s, step.final, "final"))
        if finals[-1] and step.kind != "merge":
            raise _Fail("step kinds", f"step {s}: only a merge step has a final stage")
    return out, finals


def _coverage(steps: list[list[int]], evs: list[Event]) -> np.ndarray:
    where = np.full(len(evs), -1, dtype=np.int64)
    for s, ids in enumerate(steps):
        for i in ids:
            if where[i] >= 0:
                raise _Fail("exact coverage", f"{evs[i].label} appears in step {where[i]} and step {s}: "
                                              f"it would run twice")
            where[i] = s
    missing = np.nonzero(where < 0)[0]
    if len(missing):
        raise _Fail("exact coverage", f"{evs[missing[0]].label} is in no step: it would not run")
    return where


def _kinds(plan: Plan, steps, evs, finals) -> None:
    for s, (step, ids) in enumerate(zip(plan.steps, steps)):
        if not ids:
            raise _Fail("step kinds", f"step {s} is empty")
        if step.kind == "group":
            ph = step.phases
            if not isinstance(ph, (list, tuple)) or len(ph) != len(ids) or \
                    not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= MAX_TICKS for x in ph):
                raise _Fail("step kinds", f"group step {s}: phases must give each member a phase 0..{MAX_TICKS}")
        for i in finals[s]:
            if evs[i].kind in ("result", "contribution", "seed", "snapshot"):
                raise _Fail("final stage", f"merge step {s}'s final stage holds {evs[i].label}; the final stage runs "
                                           f"the merge's consumers once, after every contribution is merged")
        results = [i for i in ids if evs[i].kind == "result"]
        if step.kind in ("merge", "scan"):
            if len(results) != len(ids):
                other = next(i for i in ids if evs[i].kind != "result")
                raise _Fail("step kinds", f"{step.kind} step {s} holds {evs[other].label}, which is not a "
                                          f"{'reduction' if step.kind == 'merge' else 'scan'}'s final merge")
            for i in ids:
                is_scan = isinstance(evs[i].extra.get("node"), Scan)
                if step.kind == "merge" and is_scan:
                    raise _Fail("prefix results", f"merge step {s} replaces the scan {evs[i].label} by a final-result "
                                                  f"reduction; a scan exposes every prefix result (give it a scan step)")
                if step.kind == "scan" and not is_scan:
                    raise _Fail("step kinds", f"scan step {s} holds {evs[i].label}, a reduction's result (give it a "
                                              f"merge step)")
        elif step.kind in ("parallel", "fused") and results:
            raise _Fail("step kinds", f"{step.kind} step {s} holds the reduction result {evs[results[0]].label}; "
                                      f"give it its own merge (or serial) step")


class _Rows:
    """Every (event, cell) access once, with the event's write flag, element point and plan key."""

    def __init__(self, evs: list[Event], keys: Keys):
        ev, loc, wr, pt = [], [], [], []
        for e in evs:
            for a in e.accesses:
                n = len(a.cells)
                if not n:
                    continue
                code = np.int64(keys(a.key)) << np.int64(KEY_SHIFT)
                ev.append(np.full(n, e.ordinal, np.int64))
                loc.append(code | a.cells.astype(np.int64))
                wr.append(np.full(n, a.write, bool))
                pt.append(a.points.astype(np.int64) if a.points is not None
                          else np.full(n, -(e.ordinal + 1), np.int64))
        if ev:
            self.ev, self.loc, self.wr, self.pt = (np.concatenate(x) for x in (ev, loc, wr, pt))
        else:
            self.ev = self.loc = self.pt = np.zeros(0, np.int64)
            self.wr = np.zeros(0, bool)


def _kind(w_first: bool, w_second: bool) -> str:
    return "WAW" if w_first and w_second else ("RAW" if w_first else "WAR")


def _ticks(step: Step, ids, s: int):
    """(issue tick, latency) per member of a pipeline step, from untrusted fields."""
    def ints(v, what):
        vals = list(v) if isinstance(v, (list, tuple)) else [v] * len(ids)
        if len(vals) != len(ids) or not all(isinstance(x, int) and not isinstance(x, bool) for x in vals):
            raise _Fail("step kinds", f"pipeline step {s}: {what} must be an integer per member ({len(ids)})")
        return vals
    if step.times is None:
        raise _Fail("step kinds", f"pipeline step {s} gives no issue times")
    t, lat = ints(step.times, "times"), ints(step.latency, "latency")
    if min(t, default=0) < 0 or max(t, default=0) > MAX_TICKS or min(lat, default=1) < 1 or max(lat, default=1) > MAX_TICKS:
        raise _Fail("step kinds", f"pipeline step {s}: issue times are 0..{MAX_TICKS}, latencies 1..{MAX_TICKS}")
    return t, lat


def _order(plan: Plan, steps, evs, rows: _Rows, keys: Keys, program, finals) -> None:
    """Cross-step (and in-step) order of every dependent pair; interference inside parallel
    steps.  Each event has an issue tick (step * width + its position, its pipeline tick, or 0 in
    a concurrent step) and a last tick: a write lands `latency` ticks after issue (a pipeline
    step's completion model; a step completes at its end), so for a dependent pair (a before b
    in source order, one of them writing) b must issue after a's last tick."""
    ticks = {s: _ticks(step, ids, s) for s, (step, ids) in enumerate(zip(plan.steps, steps)) if step.kind == "pipeline"}
    groups = [max(step.phases) + 1 for step in plan.steps if step.kind == "group" and step.phases]
    width = max([len(ids) + len(f) + 1 for ids, f in zip(steps, finals)]
                + [max(t) + max(l) for t, l in ticks.values() if t] + groups) + 1
    pkey = np.zeros(len(evs), np.int64)
    lat = np.ones(len(evs), np.int64)
    for s, (step, ids) in enumerate(zip(plan.steps, steps)):
        for pos, i in enumerate(ids):
            if step.kind == "pipeline":
                pkey[i], lat[i] = s * width + ticks[s][0][pos], ticks[s][1][pos]
            elif step.kind == "group":
                pkey[i] = s * width + step.phases[pos]
            else:
                pkey[i] = s * width + (0 if step.kind in ("parallel", "merge", "scan") else pos)
        for pos, i in enumerate(finals[s]):          # after the merge, in listed order
            pkey[i] = s * width + 1 + pos
    if len(rows.ev) == 0:
        return
    # one row per (loc, event): write = any.  Rows are built in event order, so a stable sort
    # by cell keeps source order inside each cell.
    order = np.argsort(rows.loc, kind="stable")
    loc, ev, wr = rows.loc[order], rows.ev[order], rows.wr[order]
    first = np.ones(len(loc), bool)
    first[1:] = (loc[1:] != loc[:-1]) | (ev[1:] != ev[:-1])
    idx = np.nonzero(first)[0]
    wr_any = np.logical_or.reduceat(wr, idx)
    loc, ev = loc[idx], ev[idx]
    # segments by loc; within a segment rows are in source (event ordinal) order
    seg_start = np.ones(len(loc), bool)
    seg_start[1:] = loc[1:] != loc[:-1]
    seg = np.cumsum(seg_start) - 1
    k = pkey[ev]
    last = np.where(wr_any, np.minimum(k + lat[ev] - 1, (k // width) * width + width - 1), k)
    big = np.int64(last.max() + 2)
    shifted = seg * big + last
    cm = np.maximum.accumulate(shifted)
    prev_max = np.empty_like(cm)
    prev_max[0] = -1
    prev_max[1:] = cm[:-1]
    has_prev = prev_max >= seg * big
    # exclusive suffix min of k per segment: a prefix max of (big-1-k) over the reversed rows
    seg_r = (seg.max() - seg)[::-1]
    k_r = k[::-1]
    acc = np.maximum.accumulate(seg_r * big + (big - 1 - k_r))
    nxt = np.empty_like(acc)
    nxt[0] = -1
    nxt[1:] = acc[:-1]
    has_next_r = nxt >= seg_r * big
    next_min_r = (big - 1) - (nxt - seg_r * big)
    has_next = has_next_r[::-1]
    next_min = next_min_r[::-1]
    prev_bad = wr_any & has_prev & ((prev_max - seg * big) >= k)
    next_bad = wr_any & has_next & (next_min <= last)
    bad = np.nonzero(prev_bad | next_bad)[0]
    if len(bad) == 0:
        return
    # Name one concrete pair: the earliest write (source order) whose order is broken, its partner.
    b = int(bad[np.lexsort((loc[bad], ev[bad]))[0]])
    s0 = b
    while s0 > 0 and seg[s0 - 1] == seg[b]:
        s0 -= 1
    s1 = b
    while s1 + 1 < len(seg) and seg[s1 + 1] == seg[b]:
        s1 += 1
    if prev_bad[b]:
        cand = [x for x in range(s0, b) if last[x] >= k[b]]
        a, c = cand[0], b
    else:
        cand = [x for x in range(b + 1, s1 + 1) if k[x] <= last[b]]
        a, c = b, cand[0]
    ea, ec = evs[int(ev[a])], evs[int(ev[c])]
    cell = describe(program, keys.names[int(loc[b]) >> KEY_SHIFT], int(loc[b]) & CELL_MASK)
    kind = _kind(bool(wr_any[a]), bool(wr_any[c]))
    sa, sc = int(pkey[ea.ordinal] // width), int(pkey[ec.ordinal] // width)
    if sa == sc and plan.steps[sa].kind in ("parallel", "merge", "scan", "group") and pkey[ea.ordinal] == pkey[ec.ordinal]:
        raise _Fail("parallel noninterference",
                    f"{ea.label} and {ec.label} run together in {plan.steps[sa].kind} step {sa} but interfere: "
                    f"{kind} on {cell}")
    def at(e, lands=False):
        st = int(pkey[e.ordinal] // width)
        where = plan.steps[st].kind
        if where in ("parallel", "merge", "scan"):
            return f"step {st}" + (" (its final stage)" if pkey[e.ordinal] % width else "")
        pos = int(pkey[e.ordinal] % width)
        if where == "group":
            return f"step {st} phase {pos}"
        if where != "pipeline":
            return f"step {st} position {pos}"
        done = f", landing at tick {pos + int(lat[e.ordinal]) - 1}" if lands and lat[e.ordinal] > 1 else ""
        return f"step {st} tick {pos}{done}"
    hint = "" if ea.kind != "result" else (
        "; a consumer of a reduction waits for every contribution: it may run in the merge step's final stage, "
        "not with the producers")
    raise _Fail("dependences preserved",
                f"{kind} edge {ea.label} -> {ec.label} (cell {cell}) is reversed: the plan runs the first at "
                f"{at(ea, bool(wr_any[a]))}, not before the second at {at(ec)}{hint}")


def _pointwise(plan: Plan, steps, evs, rows: _Rows, keys: Keys, program) -> None:
    """In a fused step every dependence between two member events stays on one element point."""
    for s, (step, ids) in enumerate(zip(plan.steps, steps)):
        if step.kind != "fused" or len(ids) < 2:
            continue
        sel = np.isin(rows.ev, np.array(ids, np.int64))
        loc, ev, wr, pt = rows.loc[sel], rows.ev[sel], rows.wr[sel], rows.pt[sel]
        if not len(loc):
            continue
        order = np.argsort(loc, kind="stable")          # rows are in event order already
        loc, ev, wr, pt = loc[order], ev[order], wr[order], pt[order]
        uniq, start = np.unique(loc, return_index=True)
        has_w = np.logical_or.reduceat(wr, start)
        emin, emax = np.minimum.reduceat(ev, start), np.maximum.reduceat(ev, start)
        pmin, pmax = np.minimum.reduceat(pt, start), np.maximum.reduceat(pt, start)
        flagged = np.nonzero(has_w & (emin != emax) & (pmin != pmax))[0]
        ends = np.append(start[1:], len(loc))
        for g in flagged:
            lo, hi = start[g], ends[g]
            gev, gwr, gpt = ev[lo:hi], wr[lo:hi], pt[lo:hi]
            pos = {int(e): ids.index(int(e)) for e in np.unique(gev)}
            for wi in np.nonzero(gwr)[0]:
                other = np.nonzero((gev != gev[wi]) & (gpt != gpt[wi]))[0]
                if len(other):
                    y = other[0]
                    a, c = (wi, y) if pos[int(gev[wi])] < pos[int(gev[y])] else (y, wi)
                    ea, ec = evs[int(gev[a])], evs[int(gev[c])]
                    cell = describe(program, keys.names[int(uniq[g]) >> KEY_SHIFT], int(uniq[g]) & CELL_MASK)
                    raise _Fail("Dep ⊆ diagonal",
                                f"fused step {s}: crossing {_kind(bool(gwr[a]), bool(gwr[c]))} edge "
                                f"{ea.label} at {_point(int(gpt[a]))} -> {ec.label} at {_point(int(gpt[c]))} "
                                f"(cell {cell}); per-element fusion would lose it")


def _point(p: int) -> str:
    if p < 0:
        return "the whole block"
    return f"element [{(p >> 16) & 0xFFFF}, {p & 0xFFFF}] of PE{p >> 32}"


def _results(plan: Plan, steps, evs, kind: str):
    """(step number, step, result event) for every member of the plan's `kind` steps."""
    for s, (step, ids) in enumerate(zip(plan.steps, steps)):
        if step.kind == kind:
            for i in ids:
                yield s, step, evs[i]


def _scans(plan: Plan, steps, evs, program) -> None:
    """Each scan step's realization gives every prefix result a merge tree the policy admits."""
    for s, step, res in _results(plan, steps, evs, "scan"):
        node = res.extra["node"]
        f = program.function(node.combine)
        seeded = node.seed is not None
        for g, n in res.extra["groups"].items():
            real = step.tree.get(g, step.tree.get(str(g))) if isinstance(step.tree, dict) else step.tree
            if real is None:
                raise _Fail("scan realization", f"scan step {s} gives no realization for group {g} of {node.path}")
            where = f"scan step {s}, {node.path} group {g}"
            if isinstance(real, str) and real in SCAN_REALIZATIONS and (n + 1) * n // 2 > MAX_SCAN_LEAVES:
                v = _scan_by_laws(node, f, real, n)
            else:
                v = _scan_trees(node, f, scan_trees(real, n, seeded, node.exclusive, where), seeded)
            if v is not None:
                raise _Fail("scan realization", f"{where}: {v}")


def scan_trees(real, n: int, seeded: bool, exclusive: bool, where: str = "scan") -> list:
    """Per-prefix merge trees of a scan of n contributions: result k's tree over "seed" and the
    contribution indices.  `real`: "serial" (the left update chain), "blelloch" (work-efficient
    up-sweep/down-sweep), "hillis_steele" (log-step doubling), or an explicit list of n trees.
    The named ones are simulated on symbolic terms; an absent partner (past the end, where a
    power-of-two formulation pads with the identity) is skipped, not merged, so no identity law
    is needed."""
    if isinstance(real, (list, tuple)):
        if len(real) != n:
            raise _Fail("scan realization", f"{where}: {len(real)} prefix tree(s) for {n} prefix results")
        return list(real)
    if real not in SCAN_REALIZATIONS:
        raise _Fail("scan realization", f"{where}: realization {real!r} is none of {', '.join(SCAN_REALIZATIONS)} "
                                        f"or a list of per-prefix trees")
    seq = (["seed"] if seeded else []) + list(range(n))
    m = len(seq)
    if real == "serial":
        pre, acc = [], None
        for x in seq:
            acc = _m(acc, x)
            pre.append(acc)
    elif real == "hillis_steele":
        pre, d = list(seq), 1
        while d < m:
            pre = [pre[i] if i < d else _m(pre[i - d], pre[i]) for i in range(m)]
            d *= 2
    else:
        size = 1
        while size < m:
            size *= 2
        a = seq + [None] * (size - m)
        d = 1
        while d < size:                                     # up-sweep
            for i in range(2 * d - 1, size, 2 * d):
                a[i] = _m(a[i - d], a[i])
            d *= 2
        a[size - 1] = None
        d = size // 2
        while d >= 1:                                       # down-sweep
            for i in range(2 * d - 1, size, 2 * d):
                a[i - d], a[i] = a[i], _m(a[i], a[i - d])
            d //= 2
        pre = [_m(a[j], seq[j]) for j in range(m)]          # inclusive from exclusive
    # pre[j] covers seq[0..j]; result k: inclusive [seed?, 0..k], exclusive [seed, 0..k-1]
    off = 0 if exclusive or not seeded else 1
    return [pre[k + off] for k in range(n)]


def _m(a, b):
    return b if a is None else (a if b is None else [a, b])


def _scan_trees(node, f, trees, seeded) -> str | None:
    for k, tree in enumerate(trees):
        count = k if node.exclusive else k + 1
        v = check_merge_tree(MergeTreeWitness(node.policy, f, count, tree, "left", seed=seeded))
        if not v:
            return f"prefix result {k}: {v.obligation}: {v.detail}"
    return None


def _scan_by_laws(node, f, real, n) -> str | None:
    """A named realization too large to check tree by tree: "serial" is the left chain; the tree
    scans regroup while keeping the order, which exactly the merges that may regroup allow."""
    from .witnesses import may_regroup
    if real == "serial":
        return None if node.policy != "fold_right" else \
            (None if may_regroup(node.policy, f) else f"fold_right fixes the right update chain; '{real}' is the left one")
    if node.policy == "fold_right" or not may_regroup(node.policy, f):
        return (f"{real} regroups the prefixes in order; {node.policy} with '{f.name}' does not allow that "
                f"(it needs an associative merge: ordered_tree or unordered_tree, or an exactly associative one)")
    return None


def _groups(plan: Plan, steps, evs) -> None:
    """A group step: one group of participants runs its phases with complete barriers between
    them ("a shared group with a complete barrier"; a group barrier is no device-wide phase
    boundary).  Participants: the placement's phases (E_p), else an event's coordinates and PE."""
    from .placement import participant_of
    phases = getattr(plan.placement, "phases", None) or []
    for s, (step, ids) in enumerate(zip(plan.steps, steps)):
        if step.kind != "group":
            continue
        if not isinstance(step.group_size, int) or isinstance(step.group_size, bool) or step.group_size < 1:
            raise _Fail("one group", f"group step {s} needs the group's size (a positive integer), got {step.group_size!r}")
        if step.complete is not True:
            raise _Fail("complete barrier", f"group step {s}: a barrier not reached by every participant (predicated or "
                                            f"partial) does not order its phases")
        parts = set()
        for i in ids:
            e = evs[i]
            p = participant_of(phases, e)
            parts.add(p if p is not None else tuple(e.coords.values()) + (e.pe,))
        if len(parts) > step.group_size:
            raise _Fail("one group", f"group step {s} runs on {len(parts)} participants, more than one group of "
                                     f"{step.group_size}: a group barrier is not a device-wide phase boundary (use "
                                     f"separate steps)")


def _merges(plan: Plan, steps, evs, program) -> None:
    for s, step, res in _results(plan, steps, evs, "merge"):
        node = res.extra.get("node")
        contribs = [e for e in evs if e.kind == "contribution" and e.path == node.path
                    and e.ordinal < res.ordinal and (not res.coords or all(e.coords.get(k) == v for k, v in res.coords.items()))]
        groups: dict = {}
        for e in contribs:
            groups.setdefault(e.extra.get("group"), []).append(e)
        trees = step.tree if isinstance(step.tree, dict) else {g: step.tree for g in groups}
        for g, members in groups.items():
            if g not in trees:
                raise _Fail("reduction policy", f"merge step {s} gives no tree for group {g} of {node.path}")
            f = _combine(program, node, res, g)
            v = check_merge_tree(MergeTreeWitness(node.policy, f, len(members), trees[g], node.seed_side))
            if not v:
                raise _Fail("reduction policy", f"merge step {s}, {node.path} group {g}: {v.obligation}: {v.detail}")


def _combine(program, node, res, group):
    from .functions import Function
    if not node.tiles:
        return program.function(node.combine)
    from isa.datatypes import datatype
    dt = res.extra.get("dtypes", {}).get(group)
    kind = "int" if dt is not None and datatype(dt).is_int else "float"
    a, c, g = merge_laws(node.combine, kind)
    return Function(node.combine, 2, "merge", None, a, c, g)


def _check(program: Program, plan: Plan, machines, evs) -> str:
    if evs is None:
        try:
            evs = source_events(program, machines=machines, renamed=plan.renamed)
        except BudgetError as exc:              # too large to enumerate: unknown, not false (seed 002)
            raise UndecidedError(f"effects too large to enumerate: {exc}") from None
        except RegionError as exc:
            raise _Fail("effects known", str(exc))
    if [e.ordinal for e in evs] != list(range(len(evs))):
        raise _Fail("events exist", "the events given are not a program's events in source order")
    if not plan.steps:
        raise _Fail("exact coverage", "the plan has no steps")
    steps, finals = _resolve(plan, evs)
    _coverage([a + b for a, b in zip(steps, finals)], evs)
    _kinds(plan, steps, evs, finals)
    keys = Keys()
    atoms = any(step.kind == "atom" for step in plan.steps)
    if atoms:
        from .atoms import substitute
        rows = _Rows(substitute(program, plan, steps, evs), keys)   # the atoms' own effects
    else:
        rows = _Rows(evs, keys)
    _order(plan, steps, evs, rows, keys, program, finals)
    _pointwise(plan, steps, evs, rows, keys, program)
    _merges(plan, steps, evs, program)
    _scans(plan, steps, evs, program)
    _groups(plan, steps, evs)
    if atoms:
        from .atoms import check_atoms
        check_atoms(program, plan, steps, evs)
    placed = ""
    if plan.placement is not None:
        from .placement import check_placement
        placed = "; " + check_placement(program, plan, [a + b for a, b in zip(steps, finals)], evs)
    inexact = [e for e in evs if not e.exact]
    note = f"; {len(inexact)} event(s) with over-approximated effects" if inexact else ""
    return f"{len(evs)} event(s) in {len(plan.steps)} step(s){placed}{note}"


def check_plan(program: Program, plan: Plan, *, machines: list | None = None,
               events: list[Event] | None = None) -> Verdict:
    """Admitted, or the first failed obligation of `plan` against `program` (plain terms).
    `machines` are the initial states (tile descriptors, GPR offsets); `events` may be passed
    when the caller already enumerated them (with the same `renamed` setting)."""
    return _verdict("Plan", _check, program, plan, machines, events)      # a plan is untrusted input too


def stream_program(blocks) -> Program:
    """A block stream (Blocks or block text) as a region program: a seq of block leaves."""
    from .loader import load
    if isinstance(blocks, str):
        return load({"body": {"seq": blocks}})
    return load({"body": {"seq": [{"block": b} for b in blocks]}})
