"""The compiled engine (single instance and 64-instances-per-word batch) against the reference
engine: identical outputs, fire counts and cycle counts on random elastic graphs, including
rings with initial tokens and slow consumers."""
import random

import pytest

from fabric.sim.engine import Simulator
from fabric.sim.fast import FastUnsupported, compile_graph, run_batch
from sim_fixtures import load, sum_loop
from test_sim_fuzz import random_dag


def _ring(rng):
    """A counter ring (add with its own result as an operand, initial token) feeding a DAG."""
    init = rng.randrange(256)
    actors = [("acc", "arith.addi", ["i8", "i8"], ["i8"], {}), ("sq", "arith.muli", ["i8", "i8"], ["i8"], {}),
              ("c", "arith.cmpi", ["i8", "i8"], ["i1"], {"predicate": rng.choice(["slt", "ugt", "ne"])}),
              ("s", "arith.select", ["i1", "i8", "i8"], ["i8"], {})]
    edges = [("acc.0", "acc.0", init), ("acc.0", "sq.0"), ("acc.0", "sq.1"), ("sq.0", "c.0"), ("acc.0", "s.1"),
             ("c.0", "s.0"), ("sq.0", "s.2")]
    n = rng.randint(1, 8)
    inputs = [("d", ["acc.1"], [rng.randrange(256) for _ in range(n)]),
              ("k", ["c.1"], [rng.randrange(256) for _ in range(n + 1)])]
    outputs = [("y", "s.0", rng.choice([1, 2, 3]))]
    return actors, edges, inputs, outputs


def _cases():
    for seed in range(12):
        rng = random.Random(seed)
        a, e, i, o, _ = random_dag(rng, rng.randint(1, 10), rng.randint(1, 5))
        yield f"dag{seed}", (a, e, i, o)
    for seed in range(6):
        yield f"ring{seed}", _ring(random.Random(100 + seed))


@pytest.mark.parametrize("name, prog", list(_cases()))
def test_compiled_engine_matches_the_reference(name, prog):
    actors, edges, inputs, outputs = prog
    g = load(actors, edges, inputs, outputs)
    ref = Simulator(g).run(1000)
    fg = compile_graph(g)
    streams = {n: toks for n, _, toks in inputs}
    for res, lanes in ((run_batch(fg, [streams], 1000), 1), (run_batch(fg, [streams] * 3, 1000), 3),
                       (run_batch(fg, [streams], 1000, bitsliced=True), 1)):
        for b in range(lanes):
            assert {n: res.outputs[n][b] for n in ref.outputs} == ref.outputs
            assert int(res.cycles[b]) == ref.cycles
            assert bool(res.complete[b]) == (ref.status == "complete")
            assert [int(res.fires[k, b]) for k in range(len(fg.names))] == [ref.counters[n].fires for n in fg.names]


def test_batch_instances_are_independent():
    actors = [("add", "arith.addi", ["i16", "i16"], ["i16"], {})]
    g = load(actors, [], [("a", ["add.0"], [1]), ("b", ["add.1"], [1])], [("y", "add.0")])
    fg = compile_graph(g)
    streams = [{"a": list(range(k + 1)), "b": [k] * (k + 1)} for k in range(70)]   # two words
    res = run_batch(fg, streams, 500)
    for k in range(70):
        assert res.outputs["y"][k] == [i + k for i in range(k + 1)]
        assert int(res.cycles[k]) == k + 2


def test_graphs_with_other_actor_kinds_stay_on_the_reference_engine():
    with pytest.raises(FastUnsupported):
        compile_graph(load(*sum_loop([1, 2])))
