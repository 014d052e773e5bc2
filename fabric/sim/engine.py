"""The cycle-level simulator: every resource of a configured fabric stepped together, wired by
the graph's realized edges, with a valid/ready handshake on every edge.

One cycle t:
  1. Registered resources present their held results; input streams present their current
     token; an edge with an initial token presents it first.
  2. Transparent resources (LoopCarry/Invariant/Gate) forward in topological order.
  3. The handshakes settle: starting from "every valid edge is taken", each resource decides
     from its operands and from whether its results are discharged; an edge whose consumer
     will not take it, or whose transparent producer cannot commit, is withdrawn and its
     neighbours decide again.  Valid and taken only ever fall, so this reaches the greatest
     consistent set of handoffs: a registered add feeding a carry that feeds the add back
     (a ring of simultaneous handoffs) advances one recurrence per cycle, as the seed requires.
  4. Every resource applies its decision once; tokens move on valid && ready.

Fan-out is real broadcast.  A registered result (or an input-stream token) is offered on all
its consumer edges; each edge hands off when its consumer takes it, one pending bit per edge
remembers it, and the result is discharged - the holding slot may be released - only when
every consumer has taken it (eager fork: the pending bits are the claim-local obligation bits,
not payload storage).  A transparent result has no holding slot, so it commits only in a cycle
in which every consumer takes it.  No edge stores more than the one token in flight.

The run ends when nothing has happened for a quiet window longer than any latency or consumer
period: with no token waiting and no resource mid-transaction it is complete; otherwise it is
a deadlock, reported with its cycle, the edges whose valid token is not accepted and the
operands the blocked resources wait for.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .graph import Graph, build_resources
from .resources import SimFault

# The budget of one run (docs/fabric-graph.md, "Limits"), checked by `tile-emu fabric sim`
# before it starts: idle stretches cost nothing (they are skipped), but a graph can stay busy
# for ever (a stream with step 0), so the work a run may do is bounded too.
MAX_CYCLES = 1 << 32                 # --cycles
MAX_ACTOR_CYCLES = 1 << 30           # --cycles x actors: hours at the reference engine's rate


@dataclass
class Counters:
    fires: int = 0
    stalls: int = 0        # a transition was possible but blocked: backpressure or next-state timing
    waits: int = 0         # some but not all operands of a transition were valid


@dataclass
class Result:
    status: str                                   # "complete" | "deadlock" | "starved" | "cycle_limit" | "fault"
    cycles: int                                   # cycles simulated up to the last activity
    outputs: dict = field(default_factory=dict)   # output name -> [token, ...]
    counters: dict = field(default_factory=dict)  # actor name -> Counters
    message: str = ""
    waiting: list = field(default_factory=list)   # edge labels stuck at the end


class Simulator:
    def __init__(self, g: Graph):
        self.g = g
        self.res = build_resources(g)
        A = len(g.actors)
        self.names = [a.name for a in g.actors]
        index = {a.name: i for i, a in enumerate(g.actors)}
        self.n_in = [r.n_in for r in self.res]
        self.n_out = [r.n_out for r in self.res]
        E = len(g.edges)
        self.src = []            # (kind, node, port): kind "a" actor, "i" input
        self.dst = []            # (kind, node, port): kind "a" actor, "o" output
        self.in_edge = [[None] * self.n_in[i] for i in range(A)]
        self.out_edges = [[[] for _ in range(self.n_out[i])] for i in range(A)]
        self.input_edges = [[] for _ in g.inputs]
        for e, ed in enumerate(g.edges):
            s, d = ed.src, ed.dst
            if s[0] == "@input":
                self.src.append(("i", s[1], 0))
                self.input_edges[s[1]].append(e)
            else:
                self.src.append(("a", index[s[0]], s[1]))
                self.out_edges[index[s[0]]][s[1]].append(e)
            if d[0] == "@output":
                self.dst.append(("o", d[1], 0))
            else:
                self.dst.append(("a", index[d[0]], d[1]))
                self.in_edge[index[d[0]]][d[1]] = e
        self.labels = [ed.label for ed in g.edges]
        self.widths = [ed.width for ed in g.edges]
        self.initial = [ed.initial for ed in g.edges]
        self.taken = [False] * E
        self.transparent = [r.transparent for r in self.res]
        self.topo = self._transparent_order()
        self.src_pos = [0] * len(g.inputs)
        self.src_at = [0] * len(g.inputs)
        self.outputs = {name: [] for name, _, _ in g.outputs}
        self.counters = {n: Counters() for n in self.names}
        self.every = [ev for _, ev, _ in g.outputs]
        self.t = 0

    def _transparent_order(self):
        """Transparent actors, each after the transparent actors feeding it (acyclic by load)."""
        order, seen = [], set()

        def visit(i):
            if i in seen:
                return
            seen.add(i)
            for e in self.in_edge[i]:
                k, n, _ = self.src[e]
                if k == "a" and self.transparent[n]:
                    visit(n)
            order.append(i)
        for i, tr in enumerate(self.transparent):
            if tr:
                visit(i)
        return order

    # --- one cycle ---------------------------------------------------------------------------------

    def _ins(self, i, valid, data):
        return tuple(data[e] if valid[e] else None for e in self.in_edge[i])

    def _done(self, i, R):
        """Per result: is the obligation discharged this cycle (see the module docstring)."""
        out = []
        tr = self.transparent[i]
        for edges in self.out_edges[i]:
            ok = True
            for e in edges:
                if self.initial[e] is not None or not (R[e] or (self.taken[e] and not tr)):
                    ok = False
                    break
            out.append(ok)
        return out

    def step(self):
        """Simulate cycle self.t; return (fired actors, handoff edges, {actor: stall reason}, valid, R, data)."""
        t = self.t
        E = len(self.labels)
        valid, data = [False] * E, [None] * E
        for i, r in enumerate(self.res):
            if r.transparent:
                continue
            pres = r.present(t)
            for j, edges in enumerate(self.out_edges[i]):
                for e in edges:
                    if self.initial[e] is not None:
                        valid[e], data[e] = True, self.initial[e]
                    elif pres[j] is not None and not self.taken[e]:
                        valid[e], data[e] = True, pres[j]
        for s, edges in enumerate(self.input_edges):
            toks = self.g.inputs[s][1]
            tok = toks[self.src_pos[s]] if self.src_pos[s] < len(toks) and t >= self.src_at[s] else None
            for e in edges:
                if tok is not None and not self.taken[e]:
                    valid[e], data[e] = True, tok
        everyone = [True] * max([0] + self.n_out)
        for i in self.topo:
            d = self.res[i].decide(t, self._ins(i, valid, data), everyone)
            for j, edges in enumerate(self.out_edges[i]):
                for e in edges:
                    if self.initial[e] is not None:
                        valid[e], data[e] = True, self.initial[e]
                    elif d.fire and d.publish[j] is not None:
                        valid[e], data[e] = True, d.publish[j]
        R = list(valid)
        for e in range(E):
            k, n, _ = self.dst[e]
            if k == "o" and valid[e]:
                R[e] = (t % self.every[n]) == self.every[n] - 1
        # settle the handshakes: valid and R only fall
        decisions = [None] * len(self.res)
        work = list(range(len(self.res)))
        queued = [True] * len(self.res)
        while work:
            i = work.pop()
            queued[i] = False
            d = self.res[i].decide(t, self._ins(i, valid, data), self._done(i, R))
            decisions[i] = d
            for k, e in enumerate(self.in_edge[i]):
                if R[e] and not d.consume[k]:
                    R[e] = False
                    sk, n, _ = self.src[e]
                    if sk == "a" and not queued[n]:
                        queued[n] = True
                        work.append(n)
            if self.transparent[i]:
                for j, edges in enumerate(self.out_edges[i]):
                    live = d.fire and d.publish[j] is not None
                    for e in edges:
                        if valid[e] and self.initial[e] is None and not live:
                            valid[e] = R[e] = False
                            dk, n, _ = self.dst[e]
                            if dk == "a" and not queued[n]:
                                queued[n] = True
                                work.append(n)
        # apply
        fired, stalls, discharged = [], {}, []
        done_all = [self._done(i, R) for i in range(len(self.res))]
        for i, r in enumerate(self.res):
            ins = self._ins(i, valid, data)
            d = decisions[i]
            pres = None if r.transparent else r.present(t)
            f = r.apply(t, ins, done_all[i])
            if bool(f) != d.fire:
                raise AssertionError(f"{self.names[i]}: applied {f}, decided {d.fire} at cycle {t}")
            c = self.counters[self.names[i]]
            if d.fire:
                fired.append(i)
                c.fires += 1
            elif d.reason in ("backpressure", "next_state"):
                c.stalls += 1
                stalls[i] = d.reason
            elif d.reason == "operands" and any(x is not None for x in ins):
                c.waits += 1
                stalls[i] = "operands"
            if not r.transparent:
                discharged.extend(e for j, edges in enumerate(self.out_edges[i])
                                  if pres[j] is not None and done_all[i][j] for e in edges)
        handoffs = [e for e in range(E) if valid[e] and R[e]]
        for e in handoffs:
            if self.initial[e] is not None:
                self.initial[e] = None
                continue
            sk, n, _ = self.src[e]
            dk, m, _ = self.dst[e]
            if dk == "o":
                self.outputs[self.g.outputs[m][0]].append(data[e])
            if sk == "i" or not self.transparent[n]:
                self.taken[e] = True
        for e in discharged:
            self.taken[e] = False
        for s, edges in enumerate(self.input_edges):
            if edges and all(self.taken[e] for e in edges):
                for e in edges:
                    self.taken[e] = False
                self.src_pos[s] += 1
                self.src_at[s] = t + 1
        self.t += 1
        return fired, handoffs, stalls, valid, R, data

    def reset(self):
        """Reset every resource: held results, claims, pending groups and loop state are dropped
        and every pending handoff bit is cleared.  Input streams are outside the fabric and
        continue from their position; initial tokens are not re-created."""
        for r in self.res:
            r.reset()
        self.taken = [False] * len(self.taken)

    # --- a whole run ---------------------------------------------------------------------------------

    def quiet_window(self) -> int:
        """Cycles without any event after which nothing can happen any more: longer than every
        step latency and every consumer period."""
        lat = max([getattr(r, "latency", 1) for r in self.res] + [1])
        return max([lat] + self.every) + 2

    def _busy(self):
        return [self.names[i] for i, r in enumerate(self.res) if r.busy]

    def next_event(self, t, valid):
        """The first cycle after an idle cycle t that can differ from it, or None when none can.

        In a cycle in which nothing fired and no token moved, no state changed; the next
        cycle repeats it exactly unless a time-dependent coordinate is reached: a resource's
        publication, next-state or commit coordinate, an input stream presenting its next
        token, or a slow output becoming ready for the token waiting on it."""
        ev = [r.next_event(t) for r in self.res]
        ev += [at for s, at in enumerate(self.src_at)
               if at > t and self.input_edges[s] and self.src_pos[s] < len(self.g.inputs[s][1])]
        # a slow output's next ready cycle (also when its token is withdrawn in settling: a
        # transparent producer commits only in a cycle in which the output takes it)
        ev += [t + 1 + (k - 1 - (t + 1)) % k for k in set(self.every) if k > 1]
        return min((x for x in ev if x is not None), default=None)

    def _repeat(self, t, first, last, stalls, valid, R, data, trace):
        """Cycles first..last repeat idle cycle t: count them and trace them without stepping."""
        n = last - first + 1
        if n <= 0:
            return
        for i, why in stalls.items():
            c = self.counters[self.names[i]]
            if why == "operands":
                c.waits += n
            else:
                c.stalls += n
        if trace is not None:
            rep = getattr(trace, "repeat", None)
            if rep is not None:
                rep(first, last, stalls, valid, R, data)
            else:
                for u in range(first, last + 1):
                    trace(u, [], [], stalls, valid, R, data)
        self.t = last + 1

    def run(self, max_cycles: int, trace=None, skip_idle: bool = True) -> Result:
        """Run up to max_cycles cycles.  `skip_idle=False` steps every idle cycle one by one
        (the tests compare both: skipping changes no output, counter or trace row)."""
        quiet, last = 0, -1
        window = self.quiet_window()
        try:
            while self.t < max_cycles:
                t = self.t
                fired, handoffs, stalls, valid, R, data = self.step()
                if trace is not None:
                    trace(t, fired, handoffs, stalls, valid, R, data)
                if fired or handoffs:
                    quiet, last = 0, t
                    continue
                quiet += 1
                if quiet >= window:
                    return self._finish(last, valid, R)
                if not skip_idle:
                    continue
                # idle: skip to the next cycle that can differ, or to the end of the quiet window
                nxt = self.next_event(t, valid)
                end = t + window - quiet          # the cycle after which the window is complete
                upto = min(end if nxt is None else min(nxt - 1, end), max_cycles - 1)
                self._repeat(t, t + 1, upto, stalls, valid, R, data, trace)
                quiet += max(0, upto - t)
                if quiet >= window:
                    return self._finish(last, valid, R)
        except SimFault as exc:
            return Result("fault", self.t, self.outputs, self.counters, f"cycle {self.t}: {exc}")
        return Result("cycle_limit", self.t, self.outputs, self.counters,
                      f"stopped at the cycle limit {max_cycles} with work pending" if self._pending(valid)
                      else f"reached the cycle limit {max_cycles}")

    def _pending(self, valid):
        return any(valid) or bool(self._busy())

    def _finish(self, last, valid, R) -> Result:
        cycles = last + 1
        stuck = [self.labels[e] for e in range(len(valid)) if valid[e] and not R[e]]
        busy = self._busy()
        if not stuck and not busy:
            return Result("complete", cycles, self.outputs, self.counters)
        waiting_ops = []
        for i, r in enumerate(self.res):
            if r.busy or any(valid[e] for e in self.in_edge[i]):
                waiting_ops += [self.labels[e] for e in self.in_edge[i] if not valid[e]]
        if stuck:
            msg = (f"deadlock at cycle {cycles}: valid tokens never accepted on {', '.join(stuck)}"
                   + (f"; their consumers wait for {', '.join(waiting_ops)}" if waiting_ops else ""))
            return Result("deadlock", cycles, self.outputs, self.counters, msg, stuck)
        msg = (f"starved at cycle {cycles}: {', '.join(busy)} mid-transaction, waiting for "
               f"{', '.join(waiting_ops) or 'nothing that can arrive'}")
        return Result("starved", cycles, self.outputs, self.counters, msg, waiting_ops)


def simulate(g: Graph, max_cycles: int, trace=None, skip_idle: bool = True) -> Result:
    return Simulator(g).run(max_cycles, trace, skip_idle)
