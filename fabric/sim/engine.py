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

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from . import kernel as K
from .graph import Graph, GraphCode, GraphDiagnostic, GraphError
from .program import ProgramError, build_program, decode, grow_outputs, lanes, new_state

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


class CounterTable(Mapping):
    """Actor name -> Counters, built on access (a batch of 256 instances of a 1,000-actor graph
    would otherwise build 256,000 objects nobody reads)."""

    def __init__(self, index, fires, stalls, waits):
        self._index = index                       # name -> actor index, one dict for every instance
        self._cols = (fires, stalls, waits)

    def __getitem__(self, name):
        i = self._index[name]
        return Counters(*(int(c[i]) for c in self._cols))

    def __iter__(self):
        return iter(self._index)

    def __len__(self):
        return len(self._index)


@dataclass
class Result:
    status: str                                   # "complete" | "deadlock" | "starved" | "cycle_limit" | "fault"
    cycles: int                                   # cycles simulated up to the last activity
    outputs: dict = field(default_factory=dict)   # output name -> [token, ...]
    counters: dict = field(default_factory=dict)  # actor name -> Counters
    message: str = ""
    waiting: list = field(default_factory=list)   # edge labels stuck at the end


REASONS = {K.R_BACKPRESSURE: "backpressure", K.R_NEXT_STATE: "next_state", K.R_OPERANDS: "operands",
           K.R_GRANT: "grant"}


def _bit(x, l):
    return ((x >> np.uint64(l)) & np.uint64(1)).astype(np.bool_)


class CycleView:
    """What one cycle of one instance looked like, for traces: fired actors, handoff edges,
    stall reasons, and every edge's valid, ready and data."""

    def __init__(self, sim, t, b=0):
        self.sim, self.t, self.b = sim, t, b
        st = sim.st
        w, l = divmod(b, 64)
        am, em = st.am[w], st.em[w]
        self.fire = _bit(am[:, K.FIRE], l)
        reason = np.full(len(self.fire), K.R_IDLE, np.int64)
        reason[_bit(am[:, K.ROP], l)] = K.R_OPERANDS
        reason[_bit(am[:, K.RNS], l)] = K.R_NEXT_STATE
        reason[_bit(am[:, K.RBP], l)] = K.R_BACKPRESSURE
        reason[_bit(am[:, K.RGR], l)] = K.R_GRANT
        reason[self.fire] = K.R_FIRE
        self.reason = reason
        self.hand, self.valid_bits, self.ready_bits = _bit(em[:, K.HAND], l), _bit(em[:, K.VALID], l), \
            _bit(em[:, K.READY], l)
        self.words = st.data[w, :, l]

    @property
    def fired(self):
        return np.flatnonzero(self.fire).tolist()

    @property
    def handoffs(self):
        return np.flatnonzero(self.hand).tolist()

    @property
    def stalls(self):
        r = self.reason
        return {int(i): REASONS[int(r[i])] for i in np.flatnonzero((r != K.R_IDLE) & (r != K.R_FIRE))}

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
    def __init__(self, g: Graph, engine: str = "reference", instances: int = 1, streams=None,
                 cycle_loop: bool = True):
        try:
            self.p = build_program(g, streams, instances)
        except ProgramError as exc:
            raise GraphError([GraphDiagnostic(GraphCode[exc.code], f"actor {exc.actor}", str(exc))]) from None
        self.g = g
        self.engine = resolve_engine(engine)
        self.k = kernel_for(self.engine)
        self.names, self.labels, self.widths = self.p.names, self.p.labels, self.p.widths
        self._index = {n: i for i, n in enumerate(self.names)}
        self.st = new_state(self.p)
        self._jit = self.engine == "compiled"
        if self._jit:
            from . import jit
            self._P, self._S = jit.tables(self.p.T), jit.state(self.st)
        else:
            self._P, self._S = self.p.T, self.st
        T = self.p.T
        B, A = self.p.B, len(self.names)
        self.W, self.LW = lanes(B)
        self._scratch = (np.zeros(max(1, A), np.int64), np.zeros(max(1, A), np.bool_),
                         np.zeros(T.a_in.shape[1], np.uint64), np.zeros(T.c_out.shape[1], np.uint64))
        self._op = T.c_out.shape[1] + 3           # vals slot of operand 0
        self._buffers = {}
        self.t = 0
        self._outputs_to = int((T.ei[:, K.E_CK] == 1).sum())
        self._end = [None] * B
        self._ended = np.zeros(B, np.bool_)
        # per-cycle shortcuts (a cycle of a small graph is a few hundred microseconds, of which
        # each NumPy call on these small arrays costs one or two): only a routed resource's
        # runtime selector can fault an instance, and every instance live is the usual cycle
        self._can_fault = bool((T.ai[:, K.A_KIND] == K.K_ROUTED).any())
        self._all_words = self._words(np.ones(B, np.bool_))
        # the compiled cycle loop (fabric/sim/loop.py): the semantic table of a run it covers
        self._sem = None
        if self._jit and cycle_loop:
            from .loop import semantic_table
            self._sem = semantic_table(self.p)

    def _set_state(self, st):
        """Make `st` the state, and the compiled engine's view of it."""
        self.st = st
        if self._jit:
            from . import jit
            self._S = jit.state(st)
        else:
            self._S = st

    def _reserve_outputs(self):
        """Room in the output buffer for every token one cycle can collect."""
        need = int(self.st.out_n[0]) + self._outputs_to * self.p.B + 1
        if need > self.st.out_i.shape[0]:
            self._set_state(grow_outputs(self.st, need))

    def rewind(self):
        """Back to cycle 0 with the initial state (the same graph, streams and engine)."""
        self._set_state(new_state(self.p))
        self.t = 0
        self._end = [None] * self.p.B
        self._ended = np.zeros(self.p.B, np.bool_)

    def snapshot(self):
        """The complete simulation state, to `restore` later (a copy)."""
        return (self.t, list(self._end), self._ended.copy(), [a.copy() for a in self.st])

    def restore(self, snap):
        """Back to a `snapshot` of this simulator (in place: the compiled engine's view stays valid)."""
        self.t, end, ended, arrays = snap
        self._end, self._ended = list(end), ended.copy()
        if any(a.shape != b.shape for a, b in zip(self.st, arrays)):
            self._set_state(type(self.st)(*(a.copy() for a in arrays)))
            return
        for a, b in zip(self.st, arrays):
            np.copyto(a, b)

    def _words(self, live):
        """A bool per instance as a mask per word (read-only to its users: every instance live
        returns one shared array)."""
        if getattr(self, "_all_words", None) is not None and live.all():
            return self._all_words
        x = np.zeros(self.W * 64, np.bool_)
        x[:len(live)] = live
        return np.packbits(x.reshape(self.W, 64), axis=1, bitorder="little").view(np.uint64).reshape(self.W)

    # --- one cycle -------------------------------------------------------------------------------

    def _compute(self):
        """Every semantic kernel once, on all its firings of the cycle (across the batch)."""
        st, k = self.st, self.k
        for gi, g in enumerate(self.p.groups):
            buf = self._buffers.get(gi)
            if buf is None:
                n_max = self.W * self.LW * len(g.actors)
                nw = max(g.in_words)
                segs = self.W * len(g.actors)
                buf = self._buffers[gi] = (np.zeros((len(g.in_words), n_max, nw), np.uint64), nw,
                                           self.p.models[int(g.actors[0])].kind == "stream",
                                           np.zeros((segs, 3), np.int64), np.zeros(segs, np.uint64))
            ops, nw, stream, where, wmask = buf
            n, segments = k.gather(st.am, g.actors, st.vals, self._op, st.data, self.p.T.a_in, not stream,
                                   len(g.in_words), nw, ops, where, wmask)
            if not n:
                continue
            args = [ops[i, :n, 0] if w == 1 else ops[i, :n, :w] for i, w in enumerate(g.in_words)]
            res = g.fn(*args)
            for j, (r, w) in enumerate(zip(res, g.out_words)):
                r = np.ascontiguousarray(np.asarray(r, np.uint64).reshape(n, -1)[:, :w])
                k.scatter(where, wmask, segments, st.vals, j, r)

    def _cycle(self, t, live):
        """Settle, compute and apply cycle t of the live instances; faulted ones end here."""
        k, p = self.k, self.p
        self._reserve_outputs()
        st = self.st
        words = self._words(live)
        k.settle(self._P, self._S, t, words, *self._scratch)
        bad = live & (st.bi[:, K.FAULT] >= 0) if self._can_fault else None
        if bad is not None and bad.any():
            for b in np.flatnonzero(bad):
                self._fault(int(b), t)
            live = live & ~bad
            words = self._words(live)
            st.am[:, :, K.FIRE] &= words[:, None]
        with np.errstate(all="ignore"):
            self._compute()
        k.apply(self._P, self._S, t, words)
        return live, words

    def _fault(self, b, t):
        """Instance b ends at cycle t: a routed resource's selector addressed none of its ports."""
        st, p = self.st, self.p
        a = int(st.bi[b, K.FAULT])
        m = p.models[a]
        sel = int(np.int64(st.bi[b, K.FAULT_VALUE]).view(np.uint64))
        self._ended[b] = True
        self._end[b] = ("fault", t, f"cycle {t}: {self.names[a]}: selector value {sel} "
                                    f"addresses none of {m.extra['fan']} {m.extra['routed']} ports")

    def step(self):
        """Simulate cycle self.t of every instance (no idle skipping); return its CycleView."""
        self._cycle(self.t, ~self._ended)
        view = CycleView(self, self.t)
        self.t += 1
        return view

    def reset(self):
        """Reset every resource: held results, claims, pending groups and loop state are dropped
        and every pending handoff bit is cleared.  Input streams are outside the fabric and
        continue from their position; initial tokens are not re-created."""
        st = self.st
        st.am[:, :, [K.HELD, K.MORE]] = 0
        st.pend[...] = 0
        st.la[:, :, [K.GLEFT, K.LSTATE, K.AUX, K.NEXTAT], :] = 0
        st.em[:, :, K.TAKEN] = 0
        st.rs[:, :, :, K.NEXT_GRANT] = 0
        st.rs[:, :, :, K.LAST_GRANT] = -1
        mo = self.p.T.c_out.shape[1]
        st.vals[:, :, mo:mo + 3] = 0

    def _held(self, b, a):
        w, l = divmod(b, 64)
        return bool((int(self.st.am[w, a, K.HELD]) >> l) & 1) or int(self.st.la[w, a, K.LSTATE, l]) != 0

    def busy(self, name: str, b: int = 0) -> bool:
        """A resource is mid-transaction: a held claim, or a logical state other than the initial one."""
        return self._held(b, self.names.index(name))

    def parallelize_buffer(self, name: str, b: int = 0) -> list:
        """The elements a parallelize adapter has accumulated (lane 0 first)."""
        from .semantics import field
        a = self.names.index(name)
        m = self.p.models[a]
        w, l = divmod(b, 64)
        wd = self.st.vals[w, a, self.p.T.c_out.shape[1], l][None, :]
        return [int(field(wd, i * m.element_width, m.element_width)[0])
                for i in range(int(self.st.la[w, a, K.LSTATE, l]))]

    def _busy(self, b):
        return [n for a, n in enumerate(self.names) if self._held(b, a)]

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
        done = self._ended.copy()
        # done before this cycle's pace, and its count: `pace` ends instances rarely, so a cycle
        # asks one count instead of copying and comparing masks
        was_done, ndone = done.copy(), int(np.count_nonzero(done))
        skip = bool(skip_idle) and (trace is None or B == 1)
        t = self.t
        if self._sem is not None and trace is None:
            t = self._run_loop(t, max_cycles, quiet, last, wake, done, skip)
        while t < max_cycles:
            live = ~done & (wake <= t)
            if not live.any():
                if done.all():
                    break
                t = int(wake[~done].min())
                continue
            live, words = self._cycle(t, live)
            if self._can_fault:
                done |= self._ended
                was_done[:] = done
                ndone = int(np.count_nonzero(done))
            if trace is not None:
                for b in np.flatnonzero(live):
                    trace(t, CycleView(self, t, int(b)))
            rep0 = k.pace(self._P, self._S, t, words, quiet, last, wake, done, p.window, max_cycles, skip)
            if trace is not None and rep0 > 0:
                trace.repeat(t + 1, t + rep0, CycleView(self, t, 0))
            n = int(np.count_nonzero(done))
            if n != ndone:
                for b in np.flatnonzero(done & ~was_done):
                    self._end[b] = self._finish(int(b), int(last[b]))
                was_done[:] = done
                ndone = n
            t += 1
        self.t = t
        out = []
        outputs = self._outputs()
        st = self.st
        cnt = st.la[:, :, [K.FIRES, K.STALLS, K.WAITS], :]         # one copy for every instance: [W, A, 3, LW]
        # per instance: a valid token somewhere, or a resource mid-transaction (`_held`)
        lanes_ = np.arange(self.LW, dtype=np.uint64)
        valid_any = _bit(np.bitwise_or.reduce(st.em[:, :, K.VALID], axis=1)[:, None], lanes_).reshape(-1)
        held_any = (_bit(np.bitwise_or.reduce(st.am[:, :, K.HELD], axis=1)[:, None], lanes_)
                    | (st.la[:, :, K.LSTATE, :] != 0).any(axis=1)).reshape(-1)
        for b in range(B):
            e = self._end[b]
            w, l = divmod(b, 64)
            counters = CounterTable(self._index, cnt[w, :, 0, l], cnt[w, :, 1, l], cnt[w, :, 2, l])
            if e is None:
                pending = bool(valid_any[b]) or bool(held_any[b])
                msg = (f"stopped at the cycle limit {max_cycles} with work pending" if pending
                       else f"reached the cycle limit {max_cycles}")
                out.append(Result("cycle_limit", t, outputs[b], counters, msg))
            else:
                status, cycles, msg, *waiting = e
                out.append(Result(status, cycles, outputs[b], counters, msg, waiting[0] if waiting else []))
        return out

    def _run_loop(self, t, max_cycles, quiet, last, wake, done, skip):
        """The cycles of a one-instance run in the compiled loop, called again whenever the
        output buffer must grow; the instance's end worded as `run_all` words it."""
        p, k = self.p, self.k
        was_done = bool(done[0])
        while t < max_cycles and not done[0]:
            self._reserve_outputs()
            t = int(k.run_cycles(self._P, self._S, t, max_cycles, quiet, last, wake, done, p.window, skip,
                                 self._sem, self._outputs_to * p.B + 1, self._scratch))
        if done[0] and not was_done:
            if self.st.bi[0, K.FAULT] >= 0 and not self._ended[0]:
                self._fault(0, t - 1)
            elif not self._ended[0]:
                self._end[0] = self._finish(0, int(last[0]))
        return t

    def _finish(self, b, last):
        cycles = last + 1
        st, T = self.st, self.p.T
        w, l = divmod(b, 64)
        valid, R = _bit(st.em[w, :, K.VALID], l), _bit(st.em[w, :, K.READY], l)
        stuck = [self.labels[e] for e in np.flatnonzero(valid & ~R)]
        busy = self._busy(b)
        if not stuck and not busy:
            return ("complete", cycles, "")
        waiting_ops = []
        for a in range(len(self.names)):
            ins = [int(e) for e in T.a_in[a, :T.ai[a, K.A_NIN]]]
            if self._held(b, a) or any(valid[e] for e in ins):
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
        for ed in self.g.edges:
            if ed.dst[0] == "@output":
                widths[ed.dst[1]] = ed.width
        res = [{name: [] for name in names} for _ in range(p.B)]
        if not n:
            return res
        key = o * p.B + b
        order = np.argsort(key, kind="stable")            # by output, then instance, then time
        key = key[order]
        bounds = np.concatenate(([0], np.flatnonzero(np.diff(key)) + 1, [n])).tolist()
        heads = key[bounds[:-1]].tolist()
        sorted_v = v[order]
        # a plain value of one word is its token; one conversion for every such output
        plain = [p.NW == 1 and not hasattr(t, "shape") and not hasattr(t, "tag") for t in types]
        flat = sorted_v[:, 0].tolist() if any(plain) else None
        for i, h in enumerate(heads):
            oi, bi = divmod(h, p.B)
            lo, hi = bounds[i], bounds[i + 1]
            if plain[oi]:
                res[bi][names[oi]] = flat[lo:hi]
            else:
                res[bi][names[oi]] = [decode(p, r, types[oi], widths[oi]) for r in sorted_v[lo:hi]]
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
