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

import re

import pyarrow as pa

BATCH_ROWS = 1 << 16
ARROW_ROW_BYTES = 48            # generous per-row estimate (offsets, dictionary indices, strings)
VCD_SIGNAL_BYTES = 12           # per changed signal per cycle, plus its data width
MAX_TRACE_BYTES = 4 << 30

SCHEMA = pa.schema([("cycle", pa.uint64()), ("event", pa.dictionary(pa.int8(), pa.string())),
                    ("actor", pa.string()), ("edge", pa.string()), ("reason", pa.string())])


def estimate_bytes(kind: str, cycles: int, n_actors: int, edge_widths) -> int:
    """An upper bound on the bytes a trace of `cycles` cycles can take."""
    if kind == "arrow":
        return cycles * (2 * n_actors + len(edge_widths)) * ARROW_ROW_BYTES
    return 1024 + len(edge_widths) * 96 + cycles * (16 + sum(2 * VCD_SIGNAL_BYTES + w + 4 for w in edge_widths))


class ArrowTrace:
    def __init__(self, path: str, sim):
        self.sim = sim
        self.sink = pa.OSFile(path, "wb")
        self.writer = pa.ipc.new_file(self.sink, SCHEMA)
        self.rows: list = []

    def __call__(self, t, fired, handoffs, stalls, valid, R, data):
        names, labels = self.sim.names, self.sim.labels
        rows = self.rows
        rows += [(t, "fire", names[i], None, None) for i in fired]
        rows += [(t, "handoff", None, labels[e], None) for e in handoffs]
        rows += [(t, "stall", names[i], None, why) for i, why in stalls.items()]
        if len(rows) >= BATCH_ROWS:
            self.flush()

    def flush(self):
        if not self.rows:
            return
        cols = list(zip(*self.rows))
        batch = pa.record_batch([pa.array(cols[0], pa.uint64()),
                                 pa.array(cols[1], pa.string()).dictionary_encode().cast(SCHEMA.field("event").type),
                                 pa.array(cols[2], pa.string()), pa.array(cols[3], pa.string()),
                                 pa.array(cols[4], pa.string())], schema=SCHEMA)
        self.writer.write_batch(batch)
        self.rows = []

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

    def close(self):
        self.fh.write(f"#{getattr(self, 'last', -1) + 1}\n")
        self.fh.close()


def fan_out(*traces):
    live = [t for t in traces if t is not None]
    if not live:
        return None

    def call(*args):
        for tr in live:
            tr(*args)
    return call
