"""Per-cycle records of a simulation, streamed to disk while it runs.

`ArrowTrace`: an Arrow IPC file, one row per event - `fire` (an actor's transition was
accepted), `handoff` (a token moved on an edge: valid && ready), `stall` (an actor could not
fire: `backpressure`, `next_state` or `operands`) - written in record batches of
`BATCH_ROWS` rows, so memory stays bounded however long the run.

`VcdTrace`: a VCD waveform (IEEE 1364 value change dump, written by pyvcd) with three signals
per edge, `<edge>_valid`, `<edge>_ready` (the consumer accepts this cycle) and `<edge>_data`
(x while not valid), one time unit per cycle; a time appears only when a signal changes.

Both are called once per simulated cycle and instance with the cycle's `CycleView`, and once
per idle stretch the engine skips (`repeat`).  Both write into the temporary path of
`isa.atomicio.atomic_path`, so a failed or interrupted run never leaves a partial file under
the final name.  `estimate_bytes` sizes a trace before a run starts so that a too-long run is
refused up front.
"""
from __future__ import annotations

import functools
import re

import numpy as np
import pyarrow as pa

from . import kernel as K

BATCH_ROWS = 1 << 16
ARROW_ROW_BYTES = 48            # generous per-row estimate (offsets, dictionary indices, strings)
VCD_SIGNAL_BYTES = 12           # per changed signal per cycle, plus its data width
MAX_TRACE_BYTES = 4 << 30

EVENTS = ("fire", "handoff", "stall")
SCHEMA = pa.schema([("cycle", pa.uint64()), ("instance", pa.uint32()), ("event", pa.dictionary(pa.int8(), pa.string())),
                    ("actor", pa.string()), ("edge", pa.string()), ("reason", pa.string())])
_EVENT_TYPE = SCHEMA.field("event").type
_REASON = np.array([None, "backpressure", "next_state", "operands", None, "grant"], dtype=object)


class TraceWriteError(Exception):
    """Writing the trace (`kind` "trace", the Arrow file) or the waveform ("waveform", the VCD)
    failed; `error` is the OS or Arrow exception, so the command can name the file and the reason."""

    def __init__(self, kind: str, error: BaseException):
        super().__init__(f"cannot write the {kind}: {error}")
        self.kind, self.error = kind, error


def _writes(kind: str):
    def wrap(fn):
        @functools.wraps(fn)
        def method(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except (OSError, pa.ArrowException) as exc:
                raise TraceWriteError(kind, exc) from exc
        return method
    return wrap


def estimate_bytes(kind: str, cycles: int, n_actors: int, edge_widths, instances: int = 1) -> int:
    """An upper bound on the bytes a trace of `cycles` cycles of `instances` instances can take."""
    if kind == "arrow":
        return instances * cycles * (2 * n_actors + len(edge_widths)) * ARROW_ROW_BYTES
    return 1024 + instances * (len(edge_widths) * 96
                               + cycles * (16 + sum(2 * VCD_SIGNAL_BYTES + w + 4 for w in edge_widths)))


class ArrowTrace:
    """Rows are buffered as column chunks and written once BATCH_ROWS have collected, at a
    cycle boundary.  The event column's dictionary is the fixed EVENTS list in every batch:
    an Arrow IPC file holds one dictionary per field."""

    @_writes("trace")
    def __init__(self, path: str, sim):
        self.names = np.array(sim.names, dtype=object)
        self.labels = np.array(sim.labels, dtype=object)
        self.sink = pa.OSFile(path, "wb")
        self.writer = pa.ipc.new_file(self.sink, SCHEMA)
        self.chunks: list = []
        self.n = 0

    @staticmethod
    def _rows(t, view):
        f = np.flatnonzero(view.fire)
        h = np.flatnonzero(view.hand)
        r = view.reason
        s = np.flatnonzero(~view.fire & (r > K.R_FIRE) & (r != K.R_IDLE))
        return f, h, s, r[s]

    def _add(self, cycles, instance, f, h, s, rs, reps=1):
        nf, nh, ns = len(f), len(h), len(s)
        k = nf + nh + ns
        if not k:
            return
        codes = np.concatenate([np.zeros(nf, np.int8), np.ones(nh, np.int8), np.full(ns, 2, np.int8)])
        actor = np.concatenate([self.names[f], np.full(nh, None, object), self.names[s]])
        edge = np.concatenate([np.full(nf, None, object), self.labels[h], np.full(ns, None, object)])
        reason = np.concatenate([np.full(nf + nh, None, object), _REASON[rs]])
        if reps > 1:
            codes, actor, edge, reason = (np.tile(x, reps) for x in (codes, actor, edge, reason))
        self.chunks.append((np.repeat(np.asarray(cycles, np.uint64), k), np.full(k * reps, instance, np.uint32),
                            codes, actor, edge, reason))
        self.n += k * reps

    @_writes("trace")
    def __call__(self, t, view):
        self._add([t], view.b, *self._rows(t, view))
        if self.n >= BATCH_ROWS:
            self.flush()

    @_writes("trace")
    def repeat(self, first, last, view):
        """Idle cycles first..last, each with the stall rows of `view`: the rows, and the batch
        boundaries, that calling this trace once per cycle would give."""
        f, h, s, rs = self._rows(first, view)
        k = len(s)
        if not k:
            return
        u = first
        while u <= last:
            c = min(-(-(BATCH_ROWS - self.n) // k), last - u + 1)   # cycles until the batch is full
            self._add(np.arange(u, u + c, dtype=np.uint64), view.b, f[:0], h[:0], s, rs, reps=c)
            u += c
            if self.n >= BATCH_ROWS:
                self.flush()

    @_writes("trace")
    def flush(self):
        if not self.n:
            return

        def col(j):
            parts = [ch[j] for ch in self.chunks]
            return np.concatenate(parts) if len(parts) > 1 else parts[0]
        events = pa.DictionaryArray.from_arrays(pa.array(col(2), pa.int8()), pa.array(EVENTS, pa.string()))
        batch = pa.record_batch([pa.array(col(0), pa.uint64()), pa.array(col(1), pa.uint32()), events.cast(_EVENT_TYPE),
                                 pa.array(col(3), pa.string()), pa.array(col(4), pa.string()),
                                 pa.array(col(5), pa.string())], schema=SCHEMA)
        self.writer.write_batch(batch)
        self.chunks, self.n = [], 0

    @_writes("trace")
    def close(self):
        self.flush()
        self.writer.close()
        self.sink.close()


def _ident(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


class VcdTrace:
    @_writes("waveform")
    def __init__(self, path: str, sim, timescale: str = "1 ns"):
        from vcd import VCDWriter

        self.sim = sim
        self.fh = open(path, "w", encoding="ascii", newline="\n")
        self.w = VCDWriter(self.fh, timescale=timescale, date="tile-emu fabric sim", version="tile-emu fabric.sim")
        top = _ident(sim.g.name) or "graph"
        B = sim.p.B
        self.widths = [max(1, w) for w in sim.widths]
        self.vars = []
        for b in range(B):
            scope = top if B == 1 else f"{top}.i{b}"
            taken, row = set(), []
            for e, label in enumerate(sim.labels):
                base = _ident(label)
                name, k = base, 1
                while name in taken:                  # two labels may spell one identifier
                    k += 1
                    name = f"{base}_{k}"
                taken.add(name)
                row.append((self.w.register_var(scope, f"{name}_valid", "wire", size=1, init=0),
                            self.w.register_var(scope, f"{name}_ready", "wire", size=1, init=0),
                            self.w.register_var(scope, f"{name}_data", "wire", size=self.widths[e], init="x")))
            self.vars.append(row)
        E = len(sim.labels)
        self.prev_valid = np.zeros((B, E), np.bool_)
        self.prev_ready = np.zeros((B, E), np.bool_)
        self.prev_data = np.zeros((B, E, sim.p.NW), np.uint64)
        self.last = -1

    @_writes("waveform")
    def __call__(self, t, view):
        b, w = view.b, self.w
        v, r, d = view.valid_bits, view.ready_bits, view.words
        pv, pr, pd = self.prev_valid[b], self.prev_ready[b], self.prev_data[b]
        dchg = (v != pv) | (v & (d != pd).any(axis=1))
        row = self.vars[b]
        for e in np.flatnonzero((v != pv) | (r != pr) | dchg):
            var_v, var_r, var_d = row[e]
            if v[e] != pv[e]:
                w.change(var_v, t, int(v[e]))
            if r[e] != pr[e]:
                w.change(var_r, t, int(r[e]))
            if dchg[e]:
                w.change(var_d, t, self._value(d[e], self.widths[e]) if v[e] else "x")
        pv[:], pr[:], pd[:] = v, r, d
        self.last = max(self.last, t)

    @staticmethod
    def _value(wd, width):
        x = 0
        for k in range(len(wd) - 1, -1, -1):
            x = (x << 64) | int(wd[k])
        return x & ((1 << width) - 1)

    @_writes("waveform")
    def repeat(self, first, last, view):
        """Idle cycles first..last: no signal changes."""
        self.last = max(self.last, last)

    @_writes("waveform")
    def close(self):
        self.w.close(self.last + 1)
        self.fh.close()


class _FanOut:
    def __init__(self, traces):
        self.traces = traces

    def __call__(self, *args):
        for tr in self.traces:
            tr(*args)

    def repeat(self, *args):
        for tr in self.traces:
            tr.repeat(*args)


def fan_out(*traces):
    live = [t for t in traces if t is not None]
    return _FanOut(live) if live else None
