"""Cycle-level fabric simulator throughput: simulated actor-cycles per second.

    python -m pytest benchmarks/bench_fabric_sim.py -q --benchmark-only
    python benchmarks/bench_fabric_sim.py            # the table of docs/performance.md

Graph: 1,000 one-cycle elastic actors in 125 layers of 8 (op j of layer L combines ops j and
j+1 of layer L - 1, so every result is broadcast to two consumers), fed by 8 input streams; in
steady state every actor fires every cycle.  Two kinds: i32 add/xor and f32 add/mul.  Rates
exclude start-up: the slope between two runs of different cycle counts, so graph loading,
table building and (for the compiled engine) loading its Numba build cancel out.  Measured in
the same run: the reference engine, the compiled engine on one instance, and the compiled
engine on a batch of BATCH instances with their own input streams.
"""
from __future__ import annotations

import time

import numpy as np

from fabric.io import load_document
from fabric.sim.engine import Simulator
from fabric.sim.graph import load_graph_document
from fabric.sim.synth import configured_fabric, graph_document

LAYERS, WIDTH = 125, 8
BATCH = 256
# (short, long) cycle counts of the slope per engine
SPANS = {"reference": (10, 30), "compiled": (200, 1200), "batch": (20, 120)}
TARGETS = {("compiled", "i32"): 1e6, ("compiled", "f32"): 1e6, ("batch", "i32"): 20e6, ("batch", "f32"): 5e6}
_G: dict = {}


def _tokens(kind, rng, n):
    if kind == "i32":
        return rng.integers(0, 1 << 32, n).tolist()
    return rng.uniform(0.5, 2.0, n).astype(np.float32).view(np.uint32).tolist()


def layered_graph(kind="i32", layers=LAYERS, width=WIDTH, length=2000):
    ops = ("arith.addi", "arith.xori") if kind == "i32" else ("arith.addf", "arith.mulf")
    actors, edges = [], []
    for L in range(layers):
        for j in range(width):
            actors.append((f"n{L}_{j}", ops[(L + j) % 2 == 0], [kind, kind], [kind], {}))
            if L:
                edges += [(f"n{L - 1}_{j}.0", f"n{L}_{j}.0"), (f"n{L - 1}_{(j + 1) % width}.0", f"n{L}_{j}.1")]
    rng = np.random.default_rng(0)
    inputs = [(f"x{j}", [f"n0_{j}.0", f"n0_{(j - 1) % width}.1"], _tokens(kind, rng, length)) for j in range(width)]
    outputs = [(f"y{j}", f"n{layers - 1}_{j}.0") for j in range(width)]
    fab = load_document(configured_fabric("layered-fabric", actors))
    return load_graph_document(graph_document("layered", "layered-fabric", actors, edges, inputs, outputs), fab)


def graph(kind):
    if kind not in _G:
        _G[kind] = layered_graph(kind)
    return _G[kind]


def _streams(g, kind, B, length):
    return [{n: _tokens(kind, np.random.default_rng(b + 1), length) for n, _, _ in g.inputs} for b in range(B)]


def _timed(g, engine, cycles, streams=None):
    sim = Simulator(g, engine, streams=streams)
    t0 = time.perf_counter()
    sim.run_all(cycles)
    return time.perf_counter() - t0


def rate(kind: str, how: str) -> float:
    """Actor-cycles per second of `how` ("reference", "compiled", "batch") on the `kind` graph."""
    g = graph(kind)
    engine = "reference" if how == "reference" else "compiled"
    B = BATCH if how == "batch" else 1
    n1, n2 = SPANS[how]
    streams = _streams(g, kind, B, n2 + 10) if how == "batch" else None
    _timed(g, engine, 3, streams)                       # load the compiled build
    t1, t2 = _timed(g, engine, n1, streams), _timed(g, engine, n2, streams)
    return len(g.actors) * B * (n2 - n1) / max(t2 - t1, 1e-9)


def test_compiled_single_instance(benchmark):
    out = {k: rate(k, "compiled") for k in ("i32", "f32")}
    ref = {k: rate(k, "reference") for k in ("i32", "f32")}
    benchmark.pedantic(lambda: None, rounds=1)
    benchmark.extra_info.update(**{f"compiled_{k}": v for k, v in out.items()},
                                **{f"reference_{k}": v for k, v in ref.items()})


def test_compiled_batch(benchmark):
    out = {k: rate(k, "batch") for k in ("i32", "f32")}
    benchmark.pedantic(lambda: None, rounds=1)
    benchmark.extra_info.update(**{f"batch_{k}": v for k, v in out.items()}, instances=BATCH)


if __name__ == "__main__":
    for how in ("reference", "compiled", "batch"):
        for kind in ("i32", "f32"):
            r = rate(kind, how)
            t = TARGETS.get((how, kind))
            print(f"{how:9} {kind}: {r / 1e6:8.3f} M actor-cycles/s" + (f"  (target {t / 1e6:g} M)" if t else ""))
