"""Cycle-level fabric simulator throughput: simulated actor-cycles per second.

    python -m pytest benchmarks/bench_fabric_sim.py -q --benchmark-only

Graph: 1,000 one-cycle elastic i32 actors in 125 layers of 8 (op j of layer L adds or xors
ops j and j+1 of layer L - 1, so every result is broadcast to two consumers), fed by 8 input
streams; in steady state every actor fires every cycle.  Measured: the reference engine
(fabric/sim/engine.py, Python objects, a few hundred cycles), the compiled engine on one
instance (CYCLES cycles) and on a batch of BATCH independent instances with their own input
streams (BATCH_CYCLES cycles each), all in the same run.  extra_info: actor-cycles/s of each
and the ratio to the reference engine.
"""
import time

import numpy as np

from fabric.io import load_document
from fabric.sim.engine import Simulator
from fabric.sim.fast import compile_graph, run_batch
from fabric.sim.graph import load_graph_document
from fabric.sim.synth import configured_fabric, graph_document

LAYERS, WIDTH = 125, 8
CYCLES, BATCH, BATCH_CYCLES, REF_CYCLES = 100_000, 256, 5_000, 200
_G: dict = {}


def layered_graph(layers=LAYERS, width=WIDTH, length=CYCLES):
    actors, edges = [], []
    for L in range(layers):
        for j in range(width):
            actors.append((f"n{L}_{j}", "arith.addi" if (L + j) % 2 else "arith.xori", ["i32", "i32"], ["i32"], {}))
            if L:
                edges += [(f"n{L - 1}_{j}.0", f"n{L}_{j}.0"), (f"n{L - 1}_{(j + 1) % width}.0", f"n{L}_{j}.1")]
    rng = np.random.default_rng(0)
    inputs = [(f"x{j}", [f"n0_{j}.0", f"n0_{(j - 1) % width}.1"], rng.integers(0, 1 << 32, length).tolist())
              for j in range(width)]
    outputs = [(f"y{j}", f"n{layers - 1}_{j}.0") for j in range(width)]
    fab = load_document(configured_fabric("layered-fabric", actors))
    return load_graph_document(graph_document("layered", "layered-fabric", actors, edges, inputs, outputs), fab)


def _graph():
    if "g" not in _G:
        _G["g"] = layered_graph()
        _G["fg"] = compile_graph(_G["g"])
    return _G["g"], _G["fg"]


def _streams(g, b, length):
    rng = np.random.default_rng(b)
    return {n: rng.integers(0, 1 << 32, length, dtype=np.uint64) for n, _, _ in g.inputs}


def _reference_rate(g):
    sim = Simulator(g)
    t0 = time.perf_counter()
    sim.run(REF_CYCLES)
    return len(g.actors) * REF_CYCLES / (time.perf_counter() - t0)


def test_single_instance(benchmark):
    g, fg = _graph()
    streams = [{n: np.asarray(toks, np.uint64) for n, toks, _ in g.inputs}]
    run_batch(fg, [{k: v[:10] for k, v in streams[0].items()}], 20, capacity=0)   # compile
    ref = _reference_rate(g)
    res = benchmark.pedantic(run_batch, args=(fg, streams, CYCLES), kwargs={"capacity": 0}, rounds=1, iterations=1)
    assert res.counts["y0"][0] == CYCLES - LAYERS     # full throughput: one token per cycle
    rate = len(g.actors) * int(res.simulated[0]) / benchmark.stats.stats.min
    benchmark.extra_info.update(actor_cycles_per_s=rate, reference_actor_cycles_per_s=ref, ratio=rate / ref)


def test_batch(benchmark):
    g, fg = _graph()
    streams = [_streams(g, b, BATCH_CYCLES) for b in range(BATCH)]
    run_batch(fg, streams[:2], 20, capacity=0)
    res = benchmark.pedantic(run_batch, args=(fg, streams, BATCH_CYCLES), kwargs={"capacity": 0},
                             rounds=1, iterations=1)
    assert (res.counts["y0"] == BATCH_CYCLES - LAYERS).all()
    rate = len(g.actors) * int(res.simulated.sum()) / benchmark.stats.stats.min
    benchmark.extra_info.update(actor_cycles_per_s=rate, instances=BATCH)
