"""The cycle-level simulator: every resource of a configured fabric stepped together, wired by
the graph's realized edges, with a valid/ready handshake on every edge, for one instance of the
graph or a batch of independent instances with their own input streams.

Two engines run the one cycle kernel (fabric/sim/kernel.py) and the one set of semantic kernels
(fabric/sim/semantics.py): `reference` runs the kernel as plain Python, `compiled` runs the
Numba build of the same functions.  They differ in speed only; the tests compare their outputs,
counters, traces and waveforms over random graphs of every family.  `auto` is the compiled
engine (every graph the loader accepts is within it).

Per cycle t: the kernel settles the handshakes of every live instance, the engine evaluates the
semantic kernels of the firings with computed results (all firings of one kernel in one call,
across the batch), and the kernel applies the cycle.  An instance in which nothing fired and no
token moved sleeps until the next cycle that can differ (docs/fabric-graph.md, "Limits"): its
repeated cycles are counted and traced as repeats, with identical outputs, counters, trace and
waveform to stepping every one.

A run ends, per instance, when nothing has happened for a quiet window longer than any latency
or consumer period: complete with no token waiting and no resource mid-transaction; otherwise a
deadlock (with its cycle, the edges whose valid token is not accepted and the operands the
blocked resources wait for) or starvation (a resource mid-transaction that nothing can feed).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import kernel as K
from .graph import Graph, GraphCode, GraphDiagnostic, GraphError
from .program import ProgramError, build_program, decode, grow_outputs, new_state

# The budget of one run (docs/fabric-graph.md, "Limits"), checked by `tile-emu fabric sim`
# before it starts: idle stretches cost nothing (they are skipped), but a graph can stay busy
# for ever (a stream with step 0), so the work a run may do is bounded too.
MAX_CYCLES = 1 << 32                 # --cycles
MAX_ACTOR_CYCLES = 1 << 30           # --cycles x actors, the reference engine: hours at its rate
MAX_COMPILED_ACTOR_CYCLES = 1 << 38  # --cycles x actors x --instances, the compiled engine
MAX_INSTANCES = 1 << 16              # --instances
ENGINES = ("auto", "reference", "compiled")

_COMPILED = None


def kernel_for(engine: str):
    """The kernel namespace an engine runs."""
    global _COMPILED
    if engine == "reference":
        return K.REFERENCE
    if _COMPILED is None:
        _COMPILED = K.compiled()
    return _COMPILED


def resolve_engine(engine: str) -> str:
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r} (one of {', '.join(ENGINES)})")
    return "compiled" if engine == "auto" else engine


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


REASONS = {K.R_BACKPRESSURE: "backpressure", K.R_NEXT_STATE: "next_state", K.R_OPERANDS: "operands"}


class CycleView:
    """What one cycle of one instance looked like, for traces: fired actors, handoff edges,
    stall reasons, and every edge's valid, ready and data."""

    def __init__(self, sim, t, b=0):
        self.sim, self.t, self.b = sim, t, b
        st = sim.st
        self.fire, self.reason = st.sa[b, :, K.FIRE] != 0, st.sa[b, :, K.REASON]
        self.hand, self.valid_bits, self.ready_bits = st.eb[b, :, K.HAND], st.eb[b, :, K.VALID], st.eb[b, :, K.READY]
        self.words = st.data[b]

    @property
    def fired(self):
        return np.flatnonzero(self.fire).tolist()

    @property
    def handoffs(self):
        return np.flatnonzero(self.hand).tolist()

    @property
    def stalls(self):
        r = self.reason
        return {int(i): REASONS[int(r[i])] for i in np.flatnonzero(~self.fire & (r != K.R_IDLE) & (r != K.R_FIRE))}

    @property
    def valid(self):
        return self.valid_bits.tolist()

    @property
    def R(self):
        return self.ready_bits.tolist()

    @property
    def data(self):
        p = self.sim.p
        return [decode(p, self.words[e], p.edge_types[e], p.widths[e]) if v else None
                for e, v in enumerate(self.valid_bits)]


class Simulator:
    def __init__(self, g: Graph, engine: str = "reference", instances: int = 1, streams=None):
        try:
            self.p = build_program(g, streams, instances)
        except ProgramError as exc:
            raise GraphError([GraphDiagnostic(GraphCode[exc.code], f"actor {exc.actor}", str(exc))]) from None
        self.g = g
        self.engine = resolve_engine(engine)
        self.k = kernel_for(self.engine)
        self.names, self.labels, self.widths = self.p.names, self.p.labels, self.p.widths
        self.st = new_state(self.p)
        B, A = self.p.B, len(self.names)
        self._op = self.p.T.c_out.shape[1] + 3           # vals slot of operand 0
        self._stack, self._queued = np.zeros(max(1, A), np.int64), np.zeros(max(1, A), np.bool_)
        self.t = 0
        self._outputs_to = int((self.p.T.ei[:, K.E_CK] == 1).sum())
        self._end = [None] * B

    # --- one cycle -------------------------------------------------------------------------------

    def _compute(self, live):
        st = self.st
        for g in self.p.groups:
            F = (st.sa[:, g.actors, K.FIRE] != 0) & live[:, None]
            bb, kk = np.nonzero(F)
            if not len(bb):
                continue
            aa = g.actors[kk]
            op = self._op
            ops = [st.vals[bb, aa, op + k, 0] if nw == 1 else st.vals[bb, aa, op + k, :nw]
                   for k, nw in enumerate(g.in_words)]
            with np.errstate(all="ignore"):
                res = g.fn(*ops)
            for j, (r, nw) in enumerate(zip(res, g.out_words)):
                r = np.asarray(r, np.uint64)
                if nw == 1:
                    st.vals[bb, aa, j, 0] = r.reshape(len(bb))
                else:
                    st.vals[bb, aa, j, :nw] = r.reshape(len(bb), -1)[:, :nw]

    def _cycle(self, t, live):
        """Settle, compute and apply cycle t of the live instances; faulted ones end here."""
        k, p = self.k, self.p
        self.st = grow_outputs(self.st, int(self.st.out_n[0]) + self._outputs_to * p.B + 1)
        st = self.st
        k.settle(p.T, st, t, live, self._stack, self._queued)
        bad = live & (st.bi[:, K.FAULT] >= 0)
        if bad.any():
            for b in np.flatnonzero(bad):
                a = int(st.bi[b, K.FAULT])
                m = p.models[a]
                sel = int(np.int64(st.bi[b, K.FAULT_VALUE]).view(np.uint64))
                self._end[b] = ("fault", t, f"cycle {t}: {self.names[a]}: selector value {sel} "
                                            f"addresses none of {m.extra['fan']} {m.extra['routed']} ports")
            live = live & ~bad
        self._compute(live)
        k.apply(p.T, st, t, live)
        return live

    def step(self):
        """Simulate cycle self.t of every instance (no idle skipping); return its CycleView."""
        live = np.array([e is None for e in self._end], np.bool_)
        self._cycle(self.t, live)
        view = CycleView(self, self.t)
        self.t += 1
        return view

    def reset(self):
        """Reset every resource: held results, claims, pending groups and loop state are dropped
        and every pending handoff bit is cleared.  Input streams are outside the fabric and
        continue from their position; initial tokens are not re-created."""
        st = self.st
        st.sa[:, :, [K.HELD, K.NOGROUP, K.GLEFT, K.LSTATE, K.AUX, K.NEXTAT]] = 0
        st.pend[...] = False
        st.eb[:, :, K.TAKEN] = False
        mo = self.p.T.c_out.shape[1]
        st.vals[:, :, mo:mo + 3] = 0

    def busy(self, name: str, b: int = 0) -> bool:
        """A resource is mid-transaction: a held claim, or a logical state other than the initial one."""
        a = self.names.index(name)
        return bool(self.st.sa[b, a, K.HELD] or self.st.sa[b, a, K.LSTATE] != 0)

    def parallelize_buffer(self, name: str, b: int = 0) -> list:
        """The elements a parallelize adapter has accumulated (lane 0 first)."""
        from .semantics import field
        a = self.names.index(name)
        m = self.p.models[a]
        wd = self.st.vals[b, a, self.p.T.c_out.shape[1]][None, :]
        return [int(field(wd, i * m.element_width, m.element_width)[0]) for i in range(int(self.st.sa[b, a, K.LSTATE]))]

    def _busy(self, b):
        sa = self.st.sa
        return [n for a, n in enumerate(self.names) if sa[b, a, K.HELD] or sa[b, a, K.LSTATE] != 0]

    # --- a whole run ---------------------------------------------------------------------------------

    def quiet_window(self) -> int:
        """Cycles without any event after which nothing can happen any more: longer than every
        step latency and every consumer period."""
        return self.p.window

    def run(self, max_cycles: int, trace=None, skip_idle: bool = True) -> Result:
        """Run up to max_cycles cycles; the result of instance 0 (`run_all` gives every instance's).
        `skip_idle=False` steps every idle cycle one by one (the tests compare both)."""
        return self.run_all(max_cycles, trace, skip_idle)[0]

    def run_all(self, max_cycles: int, trace=None, skip_idle: bool = True) -> list:
        p, k = self.p, self.k
        B = p.B
        quiet = np.zeros(B, np.int64)
        last = -np.ones(B, np.int64)
        wake = np.full(B, self.t, np.int64)
        done = np.array([e is not None for e in self._end], np.bool_)
        skip = bool(skip_idle) and (trace is None or B == 1)
        t = self.t
        while t < max_cycles:
            live = ~done & (wake <= t)
            if not live.any():
                if done.all():
                    break
                t = int(wake[~done].min())
                continue
            live = self._cycle(t, live)
            done |= np.array([e is not None for e in self._end], np.bool_)
            if trace is not None:
                for b in np.flatnonzero(live):
                    trace(t, CycleView(self, t, int(b)))
            was_done = done.copy()
            rep0 = k.pace(p.T, self.st, t, live, quiet, last, wake, done, p.window, max_cycles, skip)
            if trace is not None and rep0 > 0:
                trace.repeat(t + 1, t + rep0, CycleView(self, t, 0))
            for b in np.flatnonzero(done & ~was_done):
                self._end[b] = self._finish(int(b), int(last[b]))
            t += 1
        self.t = t
        out = []
        outputs = self._outputs()
        for b in range(B):
            e = self._end[b]
            sa = self.st.sa
            counters = {n: Counters(int(sa[b, a, K.FIRES]), int(sa[b, a, K.STALLS]), int(sa[b, a, K.WAITS]))
                        for a, n in enumerate(self.names)}
            if e is None:
                pending = bool(self.st.eb[b, :, K.VALID].any()) or bool(self._busy(b))
                msg = (f"stopped at the cycle limit {max_cycles} with work pending" if pending
                       else f"reached the cycle limit {max_cycles}")
                out.append(Result("cycle_limit", t, outputs[b], counters, msg))
            else:
                status, cycles, msg, *waiting = e
                out.append(Result(status, cycles, outputs[b], counters, msg, waiting[0] if waiting else []))
        return out

    def _finish(self, b, last):
        cycles = last + 1
        st, T = self.st, self.p.T
        valid, R = st.eb[b, :, K.VALID], st.eb[b, :, K.READY]
        stuck = [self.labels[e] for e in np.flatnonzero(valid & ~R)]
        busy = self._busy(b)
        if not stuck and not busy:
            return ("complete", cycles, "")
        waiting_ops = []
        for a in range(len(self.names)):
            ins = [int(e) for e in T.a_in[a, :T.ai[a, K.A_NIN]]]
            if st.sa[b, a, K.HELD] or st.sa[b, a, K.LSTATE] != 0 or any(valid[e] for e in ins):
                waiting_ops += [self.labels[e] for e in ins if not valid[e]]
        if stuck:
            msg = (f"deadlock at cycle {cycles}: valid tokens never accepted on {', '.join(stuck)}"
                   + (f"; their consumers wait for {', '.join(waiting_ops)}" if waiting_ops else ""))
            return ("deadlock", cycles, msg, stuck)
        msg = (f"starved at cycle {cycles}: {', '.join(busy)} mid-transaction, waiting for "
               f"{', '.join(waiting_ops) or 'nothing that can arrive'}")
        return ("starved", cycles, msg, waiting_ops)

    def _outputs(self):
        """Every instance's collected tokens, per output, in the order they were taken."""
        p, st = self.p, self.st
        n = int(st.out_n[0])
        o, b, v = st.out_i[:n, 0], st.out_i[:n, 1], st.out_v[:n]
        names = [name for name, _, _ in self.g.outputs]
        types = [t for _, _, t in self.g.outputs]
        widths = {}
        for e, ed in enumerate(self.g.edges):
            if ed.dst[0] == "@output":
                widths[ed.dst[1]] = ed.width
        res = [{name: [] for name in names} for _ in range(p.B)]
        for oi, name in enumerate(names):
            sel = o == oi
            t, w = types[oi], widths[oi]
            scalar = p.NW == 1 and not hasattr(t, "shape") and not hasattr(t, "tag")
            for bi in range(p.B):
                rows = v[sel & (b == bi)]
                if scalar:
                    res[bi][name] = rows[:, 0].tolist()
                else:
                    res[bi][name] = [decode(p, r, t, w) for r in rows]
        return res

    def output_counts(self):
        """[B, O] tokens each output collected (without decoding them)."""
        st = self.st
        n = int(st.out_n[0])
        out = np.zeros((self.p.B, len(self.g.outputs)), np.int64)
        np.add.at(out, (st.out_i[:n, 1], st.out_i[:n, 0]), 1)
        return out


def simulate(g: Graph, max_cycles: int, trace=None, skip_idle: bool = True, engine: str = "reference") -> Result:
    return Simulator(g, engine).run(max_cycles, trace, skip_idle)
