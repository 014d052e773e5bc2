"""A compiled batch of 256 instances (four full 64-lane words) with distinct input streams against
the reference engine run on each instance alone: outputs, status, cycle count, counters and the
cycle-by-cycle trace (fired actors, handoffs, stall reasons, every edge's valid, ready and data
bits, and the Arrow trace rows) must be identical, instance by instance.

Most instances of a batch here run in lock step (equal stream lengths), so every lane of a word
fires together and the kernel takes its whole-row paths; the last word's instances have streams
of different lengths, so its lanes fall out of step and take the per-lane paths."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from fabric.sim.engine import Simulator
from fabric.sim.layered import layered_graph, tokens
from fabric.sim.trace import ArrowTrace, fan_out
from test_sim_engines import _ring, outcome
from sim_fixtures import load

B = 256


class Cycles:
    """Every traced cycle of every instance, as raw bits (an idle stretch the engine skips is
    expanded into its cycles)."""

    def __init__(self):
        self.rows: dict = {}

    def __call__(self, t, view):
        valid = view.valid_bits.copy()
        words = np.where(valid[:, None], view.words, np.uint64(0))
        self.rows.setdefault(view.b, []).append((t, view.fire.copy(), view.hand.copy(), view.reason.copy(), valid,
                                                 view.ready_bits.copy(), words))

    def repeat(self, first, last, view):
        for u in range(first, last + 1):
            self(u, view)


def _same_rows(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x[0] == y[0]
        for u, v in zip(x[1:], y[1:]):
            assert np.array_equal(u, v), x[0]


def _arrow(path):
    return pa.ipc.open_file(str(path)).read_all()


def batch_equals_each_instance_alone(g, streams, cycles, tmp):
    sim = Simulator(g, "compiled", streams=streams)
    rec, arrow = Cycles(), ArrowTrace(str(tmp / "batch.arrow"), sim)
    batch = sim.run_all(cycles, fan_out(rec, arrow))
    arrow.close()
    assert all(np.array_equal(x[1], y[1]) for x, y in zip(rec.rows[0], rec.rows[63]))   # word 0 in lock step
    stalls = sum(c.stalls + c.waits for r in batch for c in r.counters.values())
    table = _arrow(tmp / "batch.arrow")
    inst = table.column("instance").to_numpy()
    statuses = set()
    for b, st in enumerate(streams):
        one = Simulator(g, "reference", streams=[st])
        rec1, arrow1 = Cycles(), ArrowTrace(str(tmp / f"alone{b}.arrow"), one)
        alone = one.run(cycles, fan_out(rec1, arrow1))
        arrow1.close()
        assert outcome(batch[b]) == outcome(alone), b
        _same_rows(rec.rows.get(b, []), rec1.rows.get(0, []))
        mine = table.filter(pa.array(inst == b)).drop_columns(["instance"])
        assert mine.equals(_arrow(tmp / f"alone{b}.arrow").drop_columns(["instance"])), b
        statuses.add(batch[b].status)
    return statuses, stalls


def _lengths(rng, n):
    """192 instances in lock step (n tokens each), the last 64 of their own lengths 0 .. n + 3."""
    return [n] * (B - 64) + [rng.randint(0, n + 3) for _ in range(64)]


@pytest.mark.parametrize("kind", ["i32", pytest.param("f32", marks=pytest.mark.slow)])
def test_a_batch_of_256_layered_instances_equals_each_instance_alone(kind, tmp_path):
    """The benchmark graph's shape (layers of ops, every result broadcast to two consumers), small.
    (f32 runs the same kernel paths with the numeric kernels' operations: in the slow set.)"""
    g = layered_graph(kind, layers=3, width=4, length=4)
    rng = random.Random(kind)
    streams = [{name: tokens(kind, np.random.default_rng(b + 7), n) for name, _, _ in g.inputs}
               for b, n in enumerate(_lengths(rng, 5))]
    assert len({tuple(s["x0"]) for s in streams}) > B - 70          # distinct inputs
    assert batch_equals_each_instance_alone(g, streams, 60, tmp_path)[0] == {"complete"}


def test_a_batch_of_256_rings_with_slow_consumers_equals_each_instance_alone(tmp_path):
    """A counter ring with an initial token, a compare and a select feeding an output that takes
    one token every few cycles: stalls, backpressure and idle stretches, per instance."""
    g = load(*_ring(random.Random(1)))                        # its output takes a token every 3 cycles
    rng = random.Random(11)
    streams = []
    for n in _lengths(rng, 5):
        streams.append({"d": [rng.randrange(256) for _ in range(n)], "k": [rng.randrange(256) for _ in range(n + 1)]})
    statuses, stalls = batch_equals_each_instance_alone(g, streams, 200, tmp_path)
    assert statuses == {"deadlock"} and stalls > 0            # the ring keeps its token; the output is slow
