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


@pytest.mark.parametrize("schema, attrs", [(s, {}) for s in ("arith.addi", "arith.subi", "arith.muli", "arith.andi",
                                                              "arith.ori", "arith.xori", "arith.minui", "arith.maxui",
                                                              "arith.minsi", "arith.maxsi", "arith.shli", "arith.shrui")]
                         + [("arith.cmpi", {"predicate": p}) for p in ("eq", "ne", "slt", "sle", "sgt", "sge",
                                                                       "ult", "ule", "ugt", "uge")])
def test_compiled_ops_equal_the_reference_kernels(schema, attrs):
    """Every 8-bit x against shift amounts, signs and extremes y: the compiled op table
    against the reference engine's kernels (themselves checked exhaustively in test_sim_semantics)."""
    from fabric.schemas import make_actor
    from fabric.sim.semantics import kernel_for
    from fabric.types import parse_type

    ys = [0, 1, 2, 3, 5, 7, 8, 9, 64, 126, 127, 128, 129, 200, 254, 255]
    xs = [x for x in range(256) for _ in ys]
    streams = {"a": xs, "b": ys * 256}
    out = "i1" if schema == "arith.cmpi" else "i8"
    g = load([("op", schema, ["i8", "i8"], [out], attrs)], [], [("a", ["op.0"], xs), ("b", ["op.1"], ys * 256)],
             [("y", "op.0")])
    f = kernel_for(make_actor(schema, [parse_type("i8")] * 2, [parse_type(out)], **attrs))
    want = [f(x, y)[0] for x, y in zip(xs, ys * 256)]
    assert run_batch(compile_graph(g), [streams], 5000).outputs["y"][0] == want
    assert run_batch(compile_graph(g), [streams] * 2, 5000).outputs["y"][1] == want


def test_select_on_the_compiled_engine():
    g = load([("s", "arith.select", ["i1", "i8", "i8"], ["i8"], {})], [],
             [("c", ["s.0"], [0, 1, 1]), ("x", ["s.1"], [1, 2, 3]), ("y", ["s.2"], [9, 8, 7])], [("o", "s.0")])
    res = run_batch(compile_graph(g), [{"c": [0, 1, 1], "x": [1, 2, 3], "y": [9, 8, 7]}] * 2, 100)
    assert res.outputs["o"] == [[9, 2, 3]] * 2
