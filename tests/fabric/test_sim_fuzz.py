"""Random graphs on random fabrics: each is rejected with a diagnostic or runs to a reported
end (complete, deadlock with its waiting edges, starved, cycle limit) - never a silent hang or
an internal error.  Random DAGs of elastic integer ops are also checked against a functional
evaluation the test does itself."""
import random

import pytest

from fabric.errors import FormatError
from fabric.io import load_document
from fabric.sim.engine import Simulator
from fabric.sim.graph import GraphError, load_graph_document
from fabric.sim.synth import configured_fabric, family_for, graph_document, temporal_pe
from sim_fixtures import STREAM, load

BIN = {"arith.addi": lambda x, y: (x + y) & 255, "arith.subi": lambda x, y: (x - y) & 255,
       "arith.xori": lambda x, y: x ^ y, "arith.muli": lambda x, y: (x * y) & 255,
       "arith.maxui": max, "arith.andi": lambda x, y: x & y}


def random_dag(rng, n_ops, length):
    actors, edges, values = [], [], []   # values: (producer ref, function of the input row)
    inputs = []
    for k in range(rng.randint(1, 3)):
        toks = [rng.randrange(256) for _ in range(length)]
        inputs.append((f"x{k}", [], toks))
        values.append(((None, k), (lambda k: lambda row: row[k])(k)))
    for i in range(n_ops):
        schema = rng.choice(sorted(BIN))
        name = f"n{i}"
        actors.append((name, schema, ["i8", "i8"], ["i8"], {}))
        fns = []
        for op in range(2):
            (src, f) = rng.choice(values)
            if src[0] is None:
                inputs[src[1]][1].append(f"{name}.{op}")
            else:
                edges.append((f"{src[0]}.{src[1]}", f"{name}.{op}"))
            fns.append(f)
        values.append(((name, 0), (lambda g, a, b: lambda row: g(a(row), b(row)))(BIN[schema], *fns)))
    consumed = {e[0] for e in edges}
    outputs = [(f"y{k}", f"{a[0]}.0", rng.choice([1, 1, 2, 3])) for k, a in enumerate(actors)
               if f"{a[0]}.0" not in consumed or rng.random() < 0.3]
    inputs = [x for x in inputs if x[1]]
    return actors, edges, inputs, outputs, dict(values)


@pytest.mark.parametrize("seed", range(25))
def test_random_elastic_dags_compute_their_function_and_complete(seed):
    rng = random.Random(seed)
    length = rng.randint(1, 6)
    actors, edges, inputs, outputs, fn = random_dag(rng, rng.randint(1, 12), length)
    g = load(actors, edges, inputs, outputs)
    res = Simulator(g).run(2000)
    assert res.status == "complete", res.message
    streams = {int(n[1:]): toks for n, _, toks in inputs}
    rows = list(zip(*[streams.get(k, [0] * length) for k in range(3)]))
    for name, src, _ in outputs:
        f = fn[(src.split(".")[0], 0)]
        assert res.outputs[name] == [f(r) for r in rows], name


MENU = [
    ("arith.addi", ["i8", "i8"], ["i8"], {}),
    ("arith.cmpi", ["i8", "i8"], ["i1"], {"predicate": "ult"}),
    ("arith.select", ["i1", "i8", "i8"], ["i8"], {}),
    ("dataflow.mux", ["i1", "i8", "i8"], ["i8"], {}),
    ("dataflow.demux", ["i1", "i8"], ["i8", "i8"], {}),
    ("dataflow.carry", ["i1", "i8", "i8"], ["i8"], {}),
    ("dataflow.invariant", ["i1", "i8"], ["i8"], {}),
    ("dataflow.gate", ["i1", "i8"], ["i1", "i8"], {}),
    ("dataflow.stream", ["i8", "i8", "i8"], ["i8", "i1"], STREAM),
    ("dataflow.sync", ["i8", "i1"], ["i8", "i1"], {}),
]


def random_graph(rng):
    actors = [(f"a{i}",) + rng.choice(MENU) for i in range(rng.randint(1, 10))]
    results = [(f"{a[0]}.{k}", t) for a in actors for k, t in enumerate(a[3])]
    edges, inputs, outputs, used = [], [], [], set()
    for i, a in enumerate(actors):
        for k, t in enumerate(a[2]):
            back = rng.random() < 0.1   # mostly forward edges; a few close cycles
            cands = [r for r, rt in results if rt == t and (back or int(r.split(".")[0][1:]) < i)]
            if cands and rng.random() < 0.7:
                src = rng.choice(cands)
                init = [] if rng.random() < 0.7 else [rng.randrange(2 if t == "i1" else 256)]
                edges.append((src, f"{a[0]}.{k}", *init))
                used.add(src)
            else:
                n = rng.randint(0, 5)
                inputs.append((f"in_{a[0]}_{k}", [f"{a[0]}.{k}"],
                               [rng.randrange(2 if t == "i1" else 256) for _ in range(n)]))
    for r, _ in results:
        if r not in used or rng.random() < 0.2:
            outputs.append((f"out_{r.replace('.', '_')}", r, rng.choice([1, 1, 2, 5])))
    return actors, edges, inputs, outputs


@pytest.mark.parametrize("seed", range(150))
def test_random_graphs_are_rejected_or_end_with_a_report(seed):
    rng = random.Random(1000 + seed)
    actors, edges, inputs, outputs = random_graph(rng)
    try:
        g = load(actors, edges, inputs, outputs)
    except (GraphError, FormatError) as exc:
        assert str(exc)
        return
    res = Simulator(g).run(400)
    assert res.status in ("complete", "deadlock", "starved", "cycle_limit", "fault")
    if res.status == "deadlock":
        assert res.message.startswith("deadlock at cycle ") and res.waiting
    if res.status in ("starved", "fault"):
        assert res.message


# --- temporal PEs: random groups of actors share one operation resource, each in its own context

def load_temporal(rng, actors, edges, inputs, outputs):
    """The graph on a configured fabric in which random groups of actors of one implementation
    family and port types share one op of a temporal PE (random spare contexts, context order,
    initiation interval and grant policy), and the groups."""
    fab = configured_fabric("g-fabric", actors)
    kinds: dict = {}
    for a in actors:
        kinds.setdefault((family_for(a[1]), tuple(a[2]), tuple(a[3])), []).append(a[0])
    groups = []
    for names in kinds.values():
        if len(names) > 1 and rng.random() < 0.8:
            group = rng.sample(names, rng.randint(2, len(names)))
            contexts = len(group) + rng.randint(0, 2)
            temporal_pe(fab, group, f"pe{len(groups)}", contexts, rng.sample(range(contexts), len(group)),
                        initiation_interval=rng.choice([1, 1, 2, 3]),
                        grant_policy=rng.choice(["round_robin", "fixed_priority"]))
            groups.append(group)
    g = load_graph_document(graph_document("g", "g-fabric", actors, edges, inputs, outputs), load_document(fab))
    return g, groups


def _temporal_dags(seed):
    rng = random.Random(5000 + seed)
    length = rng.randint(1, 6)
    actors, edges, inputs, outputs, fn = random_dag(rng, rng.randint(2, 12), length)
    g, groups = load_temporal(rng, actors, edges, inputs, outputs)
    res = Simulator(g, rng.choice(["reference", "compiled"])).run(4000)
    assert res.status == "complete", res.message
    streams = {int(n[1:]): toks for n, _, toks in inputs}
    rows = list(zip(*[streams.get(k, [0] * length) for k in range(3)]))
    for name, src, _ in outputs:
        assert res.outputs[name] == [fn[(src.split(".")[0], 0)](r) for r in rows], name
    return groups


@pytest.mark.parametrize("seed", range(12))
def test_random_dags_on_temporal_pes_compute_their_function_and_complete(seed):
    """Sharing a resource between contexts changes when each actor fires, never what it computes:
    each output is the function the test evaluates itself."""
    _temporal_dags(seed)


def test_the_random_dags_share_resources():
    assert sum(len(_temporal_dags(seed)) for seed in range(12)) >= 6


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12, 400))
def test_many_random_dags_on_temporal_pes(seed):
    _temporal_dags(seed)


def _temporal_graph(seed):
    rng = random.Random(7000 + seed)
    actors, edges, inputs, outputs = random_graph(rng)
    try:
        g, _ = load_temporal(rng, actors, edges, inputs, outputs)
    except (GraphError, FormatError) as exc:
        assert str(exc) and "\n" not in str(exc.diagnostics[0] if isinstance(exc, GraphError) else exc)
        return "refused"
    res = Simulator(g, rng.choice(["reference", "compiled"])).run(400)
    assert res.status in ("complete", "deadlock", "starved", "cycle_limit", "fault")
    if res.status == "deadlock":
        assert res.message.startswith("deadlock at cycle ") and res.waiting
    return res.status


@pytest.mark.parametrize("seed", range(40))
def test_random_graphs_on_temporal_pes_are_rejected_or_end_with_a_report(seed):
    _temporal_graph(seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(40, 1500))
def test_many_random_graphs_on_temporal_pes(seed):
    _temporal_graph(seed)
