"""Per-cycle records of a simulation, streamed to disk while it runs.

`ArrowTrace`: an Arrow IPC file, one row per event - `fire` (an actor's transition was
accepted), `handoff` (a token moved on an edge: valid && ready), `stall` (an actor could not
fire: `backpressure`, `next_state` or `operands`) - written in record batches of
`BATCH_ROWS` rows, so memory stays bounded however long the run.

`VcdTrace`: a VCD waveform (IEEE 1364 value change dump) with three signals per edge,
`<edge>_valid`, `<edge>_ready` (the consumer accepts this cycle) and `<edge>_data` (x while
not valid), one time step per cycle; only changes are written.

Both write into the temporary path of `isa.atomicio.atomic_path`, so a failed or interrupted
run never leaves a partial file under the final name.  `estimate_bytes` sizes a trace before
a run starts so that a too-long run is refused up front.
"""
from __future__ import annotations

import functools
import re

import pyarrow as pa

BATCH_ROWS = 1 << 16
ARROW_ROW_BYTES = 48            # generous per-row estimate (offsets, dictionary indices, strings)
VCD_SIGNAL_BYTES = 12           # per changed signal per cycle, plus its data width
MAX_TRACE_BYTES = 4 << 30

SCHEMA = pa.schema([("cycle", pa.uint64()), ("event", pa.dictionary(pa.int8(), pa.string())),
                    ("actor", pa.string()), ("edge", pa.string()), ("reason", pa.string())])


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


def estimate_bytes(kind: str, cycles: int, n_actors: int, edge_widths) -> int:
    """An upper bound on the bytes a trace of `cycles` cycles can take."""
    if kind == "arrow":
        return cycles * (2 * n_actors + len(edge_widths)) * ARROW_ROW_BYTES
    return 1024 + len(edge_widths) * 96 + cycles * (16 + sum(2 * VCD_SIGNAL_BYTES + w + 4 for w in edge_widths))


EVENTS = ("fire", "handoff", "stall")
_EVENT_TYPE = SCHEMA.field("event").type
_CODE = {name: k for k, name in enumerate(EVENTS)}


class ArrowTrace:
    """Rows are buffered as column chunks and written once BATCH_ROWS have collected, at a
    cycle boundary.  The event column's dictionary is the fixed EVENTS list in every batch:
    an Arrow IPC file holds one dictionary per field, so a batch whose own dictionary were
    built from its rows (a batch of stalls only) could not follow the first one."""

    @_writes("trace")
    def __init__(self, path: str, sim):
        self.sim = sim
        self.path = path
        self.sink = pa.OSFile(path, "wb")
        self.writer = pa.ipc.new_file(self.sink, SCHEMA)
        self.chunks: list = []       # (cycle, event code, actor, edge, reason) column chunks
        self.n = 0

    def _add(self, cycles, codes, actors, edges, reasons):
        self.chunks.append((cycles, codes, actors, edges, reasons))
        self.n += len(cycles)

    @_writes("trace")
    def __call__(self, t, fired, handoffs, stalls, valid, R, data):
        names, labels = self.sim.names, self.sim.labels
        nf, nh, ns = len(fired), len(handoffs), len(stalls)
        if not nf + nh + ns:
            return
        self._add([t] * (nf + nh + ns), [0] * nf + [1] * nh + [2] * ns,
                  [names[i] for i in fired] + [None] * nh + [names[i] for i in stalls],
                  [None] * nf + [labels[e] for e in handoffs] + [None] * ns,
                  [None] * (nf + nh) + list(stalls.values()))
        if self.n >= BATCH_ROWS:
            self.flush()

    @_writes("trace")
    def repeat(self, first, last, stalls, valid, R, data):
        """Idle cycles first..last, each with the stall rows `stalls`: the rows, and the batch
        boundaries, that calling this trace once per cycle would give."""
        import numpy as np

        k = len(stalls)
        if not k:
            return
        actors = np.array([self.sim.names[i] for i in stalls], dtype=object)
        reasons = np.array(list(stalls.values()), dtype=object)
        u = first
        while u <= last:
            c = min(-(-(BATCH_ROWS - self.n) // k), last - u + 1)   # cycles until the batch is full
            self._add(np.repeat(np.arange(u, u + c, dtype=np.uint64), k), np.full(c * k, 2, np.int8),
                      np.tile(actors, c), np.full(c * k, None, dtype=object), np.tile(reasons, c))
            u += c
            if self.n >= BATCH_ROWS:
                self.flush()

    @_writes("trace")
    def flush(self):
        if not self.n:
            return
        import numpy as np

        def col(j, dtype=None):
            parts = [np.asarray(ch[j], dtype=dtype if dtype is not None else object) for ch in self.chunks]
            return np.concatenate(parts) if len(parts) > 1 else parts[0]
        events = pa.DictionaryArray.from_arrays(pa.array(col(1, np.int8), pa.int8()), pa.array(EVENTS, pa.string()))
        batch = pa.record_batch([pa.array(col(0, np.uint64), pa.uint64()), events.cast(_EVENT_TYPE),
                                 pa.array(col(2), pa.string()), pa.array(col(3), pa.string()),
                                 pa.array(col(4), pa.string())], schema=SCHEMA)
        self.writer.write_batch(batch)
        self.chunks, self.n = [], 0

    @_writes("trace")
    def close(self):
        self.flush()
        self.writer.close()
        self.sink.close()


def _vcd_id(k: int) -> str:
    chars = [chr(c) for c in range(33, 127)]
    out = ""
    k += 1
    while k:
        k -= 1
        out += chars[k % len(chars)]
        k //= len(chars)
    return out


def _bits(v, w: int, lane_bits: int) -> int:
    if isinstance(v, tuple):
        if len(v) == 2 and lane_bits == 0:  # tagged [value, tag]
            return v[0] | (v[1] << w)
        return sum(int(x) << (i * lane_bits) for i, x in enumerate(v))
    return int(v)


class VcdTrace:
    @_writes("waveform")
    def __init__(self, path: str, sim, timescale: str = "1ns"):
        self.sim = sim
        self.fh = open(path, "w", encoding="ascii", newline="\n")
        self.prev: list = []
        self.vars = []
        name = re.sub(r"[^A-Za-z0-9_]", "_", sim.g.name) or "graph"
        out = [f"$date tile-emu fabric sim $end", f"$version tile-emu fabric.sim $end",
               f"$timescale {timescale} $end", f"$scope module {name} $end"]
        for e, label in enumerate(sim.labels):
            base = re.sub(r"[^A-Za-z0-9_]", "_", label)
            w = max(1, sim.widths[e])
            ids = (_vcd_id(3 * e), _vcd_id(3 * e + 1), _vcd_id(3 * e + 2))
            out += [f"$var wire 1 {ids[0]} {base}_valid $end", f"$var wire 1 {ids[1]} {base}_ready $end",
                    f"$var wire {w} {ids[2]} {base}_data $end"]
            self.vars.append((ids, w, self._lane_bits(e)))
            self.prev.append([None, None, None])
        out += ["$upscope $end", "$enddefinitions $end"]
        self.fh.write("\n".join(out) + "\n")

    def _lane_bits(self, e):
        g = self.sim.g
        s = g.edges[e].src
        if s[0] == "@input":
            t = g.inputs[s[1]][2]
        else:
            t = next(a for a in g.actors if a.name == s[0]).out_types[s[1]]
        el = getattr(t, "element", None)
        return el.width if el is not None and hasattr(t, "shape") else 0

    @_writes("waveform")
    def __call__(self, t, fired, handoffs, stalls, valid, R, data):
        lines = [f"#{t}"]
        for e, (ids, w, lb) in enumerate(self.vars):
            v, r = "1" if valid[e] else "0", "1" if R[e] else "0"
            d = "b" + format(_bits(data[e], w, lb) & ((1 << w) - 1), "b") if valid[e] else "bx"
            p = self.prev[e]
            if p[0] != v:
                lines.append(v + ids[0])
            if p[1] != r:
                lines.append(r + ids[1])
            if p[2] != d:
                lines.append(f"{d} {ids[2]}")
            self.prev[e] = [v, r, d]
        self.fh.write("\n".join(lines) + "\n")
        self.last = t

    @_writes("waveform")
    def repeat(self, first, last, stalls, valid, R, data):
        """Idle cycles first..last: no signal changes, one time stamp each."""
        self.fh.write("".join(f"#{u}\n" for u in range(first, last + 1)))
        self.last = last

    @_writes("waveform")
    def close(self):
        self.fh.write(f"#{getattr(self, 'last', -1) + 1}\n")
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
