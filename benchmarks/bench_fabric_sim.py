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

from fabric.sim.engine import Simulator
from fabric.sim.layered import layered_graph, streams as _streams_of

BATCH = 256
# (short, long) cycle counts of the slope per engine
SPANS = {"reference": (10, 30), "compiled": (200, 1200), "batch": (20, 120)}
TARGETS = {("compiled", "i32"): 1e6, ("compiled", "f32"): 1e6, ("batch", "i32"): 20e6, ("batch", "f32"): 5e6}
_G: dict = {}


def graph(kind):
    if kind not in _G:
        _G[kind] = layered_graph(kind)
    return _G[kind]


def _streams(g, kind, B, length):
    return _streams_of(g, kind, B, length)


def _timed(g, engine, cycles, streams=None, clock=time.perf_counter):
    sim = Simulator(g, engine, streams=streams)
    t0 = clock()
    sim.run_all(cycles)
    return clock() - t0


def rate(kind: str, how: str, clock=time.perf_counter) -> float:
    """Actor-cycles per second of `how` ("reference", "compiled", "batch") on the `kind` graph.
    `clock=time.process_time` counts this process's CPU time only: on a shared machine the wall
    clock also counts the time other jobs hold the cores."""
    g = graph(kind)
    engine = "reference" if how == "reference" else "compiled"
    B = BATCH if how == "batch" else 1
    n1, n2 = SPANS[how]
    streams = _streams(g, kind, B, n2 + 10) if how == "batch" else None
    _timed(g, engine, 3, streams)                       # load the compiled build
    t1, t2 = _timed(g, engine, n1, streams, clock), _timed(g, engine, n2, streams, clock)
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
    import os
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for how in ("reference", "compiled", "batch"):
        for kind in ("i32", "f32"):
            r, c = rate(kind, how), rate(kind, how, time.process_time)
            t = TARGETS.get((how, kind))
            print(f"{how:9} {kind}: {r / 1e6:8.3f} M actor-cycles/s wall, {c / 1e6:8.3f} M per CPU second"
                  + (f"  (target {t / 1e6:g} M)" if t else ""))
