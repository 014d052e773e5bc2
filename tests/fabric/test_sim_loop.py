"""The compiled cycle loop (kernel.run_cycles, fabric/sim/loop.py) runs the cycles of a
one-instance run exactly as the compiled engine's per-cycle path does: the same outputs,
statuses, cycle counts, counters, messages and complete final state, and the same state after
every single cycle - on random graphs, on graphs of every operation the loop evaluates itself
with operands full of special values (NaNs with payloads, infinities, signed zeros, subnormals,
the integer extremes), on streams of every step kind and predicate, and on the benchmark's
layered graphs.  The reference engine (plain Python, the NumPy semantic kernels) checks the
outcomes independently."""
from __future__ import annotations

import random

import numpy as np
import pytest

from fabric.sim.engine import Simulator
from fabric.sim.loop import FLOAT_OPS, INT_OPS, PREDICATES
from sim_fixtures import Recorder, invariant_loop, load, load_random, sum_loop
from test_sim_engines import _ring, outcome
from test_sim_fuzz import random_dag, random_graph


def same_snapshot(a, b):
    (ta, enda, endeda, sa), (tb, endb, endedb, sb) = a.snapshot(), b.snapshot()
    assert (ta, enda) == (tb, endb) and np.array_equal(endeda, endedb)
    for name, x, y in zip(a.st._fields, sa, sb):
        assert x.shape == y.shape and np.array_equal(x, y), name


def pair(g):
    return Simulator(g, "compiled"), Simulator(g, "compiled", cycle_loop=False)


def same_runs(g, cycles, per_cycle=0):
    """The loop against the per-cycle path: one whole run (and the reference engine's outcome),
    then, on fresh simulators, the first `per_cycle` cycles one call per cycle, state compared
    after each.  Returns whether the loop covered the graph."""
    fast, slow = pair(g)
    res = outcome(fast.run(cycles))
    assert res == outcome(slow.run(cycles))
    same_snapshot(fast, slow)
    assert res == outcome(Simulator(g, "reference").run(cycles))
    fast, slow = pair(g)
    for c in range(1, per_cycle + 1):
        assert outcome(fast.run(c)) == outcome(slow.run(c)), c
        same_snapshot(fast, slow)
    return fast._sem is not None


@pytest.mark.parametrize("seed", range(60))
def test_random_graphs_run_alike_in_the_loop(seed):
    g = load_random(random_graph, random.Random(1000 + seed))
    if g is not None:
        same_runs(g, 400, per_cycle=40)


def test_the_loop_covers_every_random_graph_of_the_fuzz_menu():
    graphs = [g for g in (load_random(random_graph, random.Random(1000 + s)) for s in range(60)) if g is not None]
    assert len(graphs) >= 10 and all(Simulator(g, "compiled")._sem is not None for g in graphs)


@pytest.mark.parametrize("sel", [[1, 3], [0, 2, 1, 3, 0], [2, 2, 0]])
def test_a_fault_ends_the_run_alike_in_the_loop(sel):
    """A mux's selector addressing none of its 3 ports ends the run in that cycle."""
    mux = ("m", "dataflow.mux", ["i2", "i8", "i8", "i8"], ["i8"], {})
    g = load([mux], [], [("s", ["m.0"], sel), ("a", ["m.1"], [1, 4]), ("b", ["m.2"], [2, 5]),
                         ("c", ["m.3"], [3, 6])], [("y", "m.0", 2)])
    assert same_runs(g, 100, per_cycle=12)


@pytest.mark.parametrize("seed", range(15))
def test_random_dags_and_rings_run_alike_in_the_loop(seed):
    rng = random.Random(seed)
    a, e, i, o, _ = random_dag(rng, rng.randint(1, 10), rng.randint(1, 5))
    assert same_runs(load(a, e, i, o), 600, per_cycle=30)
    assert same_runs(load(*_ring(random.Random(100 + seed))), 600, per_cycle=30)


# operands: the values where the operations' rules change, and random bits
INT_EDGES = [0, 1, 2, 3, 7, 8, 31, 32, 63, 64, 65]
F32_SPECIAL = [0x0, 0x80000000, 0x1, 0x80000001, 0x7FFFFF, 0x807FFFFF, 0x800000, 0x80800000, 0x7F7FFFFF,
               0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7FA00001, 0xFFC00123, 0x7FFFFFFF,
               0x3F800000, 0xBF800000, 0x3F800001, 0x33800000, 0x34000000, 0x4B800000, 0x00400000]
F64_SPECIAL = [0x0, 1 << 63, 0x1, (1 << 63) | 1, 0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF,
               0xFFEFFFFFFFFFFFFF, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
               0x7FF4000000000001, 0xFFF8000000000123, 0x3FF0000000000000, 0x3FF0000000000001,
               0x3CA0000000000000, 0x3CB0000000000000, 0x4340000000000000, 0xBFF0000000000000]


def int_tokens(rng, w, n):
    top = (1 << w) - 1
    edges = [x & top for x in INT_EDGES + [top, top - 1, 1 << (w - 1), (1 << (w - 1)) - 1, (1 << (w - 1)) + 1]]
    return [rng.choice(edges) if rng.random() < 0.6 else rng.getrandbits(w) for _ in range(n)]


def float_tokens(rng, fmt, n):
    special, bits = (F32_SPECIAL, 32) if fmt == "f32" else (F64_SPECIAL, 64)
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.5:
            out.append(rng.choice(special))
        elif r < 0.75:                             # subnormals
            out.append(rng.getrandbits(bits - 9 if fmt == "f32" else bits - 12))
        else:
            out.append(rng.getrandbits(bits))
    return out


def every_op(t, ops, n, rng, tokens):
    """One actor per operation on operands x, y (shared by all), each result an output, one of
    them read every other cycle (backpressure in the loop)."""
    actors, outputs = [], []
    for i, (schema, attrs, res) in enumerate(ops):
        actors.append((f"a{i}", schema, [t, t], [res], attrs))
        outputs.append((f"y{i}", f"a{i}.0", 2 if i == 0 else 1))
    inputs = [("x", [f"a{i}.0" for i in range(len(ops))], tokens(rng, n)),
              ("y", [f"a{i}.1" for i in range(len(ops))], tokens(rng, n))]
    return load(actors, [], inputs, outputs)


@pytest.mark.parametrize("width", [1, 8, 16, 32, 64])
@pytest.mark.parametrize("seed", range(3))
def test_every_integer_operation_of_the_loop_is_exact(width, seed):
    rng = random.Random(width * 100 + seed)
    t = f"i{width}"
    ops = [(s, {}, t) for s in sorted(INT_OPS) if s != "llvm.or"]
    ops += [("arith.cmpi", {"predicate": p}, "i1") for p in sorted(PREDICATES)]
    g = every_op(t, ops, 64, rng, lambda r, n: int_tokens(r, width, n))
    assert same_runs(g, 400, per_cycle=8)


@pytest.mark.parametrize("fmt", ["f32", "f64"])
@pytest.mark.parametrize("seed", range(4))
def test_every_float_operation_of_the_loop_is_exact(fmt, seed):
    """Round to nearest even, canonical NaN results, subnormals kept: as kernels.numeric."""
    rng = random.Random(seed)
    ops = [(s, {}, fmt) for s, f in sorted(FLOAT_OPS) if f == fmt]
    ops += [(s, {"rounding_mode": "to_nearest_even"}, fmt) for s, f in sorted(FLOAT_OPS) if f == fmt]
    g = every_op(fmt, ops, 200, rng, lambda r, n: float_tokens(r, fmt, n))
    assert same_runs(g, 600, per_cycle=6)


def test_a_directed_rounding_mode_keeps_the_per_cycle_path():
    g = every_op("f32", [("arith.addf", {"rounding_mode": "upward"}, "f32")], 4, random.Random(0),
                 lambda r, n: float_tokens(r, "f32", n))
    assert not same_runs(g, 100)


def test_select_runs_alike_in_the_loop():
    rng = random.Random(3)
    actors = [("s", "arith.select", ["i1", "i64", "i64"], ["i64"], {})]
    inputs = [("c", ["s.0"], [rng.randrange(2) for _ in range(50)]),
              ("x", ["s.1"], int_tokens(rng, 64, 50)), ("y", ["s.2"], int_tokens(rng, 64, 50))]
    assert same_runs(load(actors, [], inputs, [("o", "s.0", 3)]), 300, per_cycle=20)


@pytest.mark.parametrize("kind", ["add", "sub", "mul", "shl", "shr", "div"])
@pytest.mark.parametrize("predicate", sorted(PREDICATES))
def test_streams_of_every_step_kind_and_predicate_run_alike_in_the_loop(kind, predicate):
    rng = random.Random(f"{kind}{predicate}")
    t = "i16"
    actors = [("s", "dataflow.stream", [t] * 3, [t, "i1"], {"step_kind": kind, "predicate": predicate})]
    inputs = [(f"in{k}", [f"s.{k}"], int_tokens(rng, 16, 4)) for k in range(3)]
    outputs = [("i", "s.0", 1), ("more", "s.1", 2)]
    assert same_runs(load(actors, [], inputs, outputs), 300, per_cycle=25)


@pytest.mark.parametrize("prog", [sum_loop([3, 1, 4, 1, 5, 9, 2, 6]), invariant_loop(10, [1, 2, 3, 4, 5])],
                         ids=["sum_loop", "invariant_loop"])
def test_loop_programs_run_alike_in_the_loop(prog):
    assert same_runs(load(*prog), 500, per_cycle=40)


@pytest.mark.parametrize("kind", ["i32", "f32"])
def test_the_layered_graph_runs_alike_in_the_loop_growing_its_output_buffer(kind):
    """A few hundred tokens per output: the output buffer grows several times inside the run."""
    from fabric.sim.layered import layered_graph
    g = layered_graph(kind, layers=6, width=4, length=300)
    fast, slow = pair(g)
    assert fast._sem is not None
    assert outcome(fast.run(2000)) == outcome(slow.run(2000))
    same_snapshot(fast, slow)
    assert fast.st.out_i.shape[0] > Simulator(g, "compiled").st.out_i.shape[0]


def test_a_restored_snapshot_runs_on_alike():
    """The benchmark's pattern: run, snapshot, run on, restore, run on again."""
    from fabric.sim.layered import layered_graph
    g = layered_graph("i32", layers=5, width=4, length=100)
    fast, slow = pair(g)
    for sim in (fast, slow):
        sim.run_all(20)
    snap = fast.snapshot()
    for upto in (60, 90):
        fast.run_all(upto)
        fast.restore(snap)
    assert outcome(fast.run(150)) == outcome(slow.run(150))
    same_snapshot(fast, slow)


def test_batches_traces_and_the_reference_engine_keep_the_per_cycle_path():
    g = load(*sum_loop([1, 2]))
    assert Simulator(g, "compiled")._sem is not None
    assert Simulator(g, "compiled", cycle_loop=False)._sem is None
    assert Simulator(g, "compiled", instances=2)._sem is None
    assert Simulator(g, "reference")._sem is None
    calls = []
    sim = Simulator(g, "compiled")
    sim._run_loop = lambda *a: calls.append(a)
    sim.run(100, trace=Recorder(sim))
    assert not calls


@pytest.mark.parametrize("seed", range(6))
def test_steps_then_a_run_without_idle_skipping_run_alike_in_the_loop(seed):
    """`step` (always the per-cycle path) for a few cycles, then a run stepping every idle cycle."""
    g = load_random(random_graph, random.Random(2000 + seed))
    if g is None:
        return
    fast, slow = pair(g)
    for sim in (fast, slow):
        for _ in range(seed):
            sim.step()
    assert outcome(fast.run(300, skip_idle=False)) == outcome(slow.run(300, skip_idle=False))
    same_snapshot(fast, slow)
