"""Temporal PE contexts (issue 19): several actors on one operation resource, each in its own
resident InstructionContextRef, take turns as the resource's initiation interval and grant
policy permit; each context keeps its own state and its own fire/stall counters.  Cycle counts
are derived by hand in each test."""
import json

import pytest

from fabric.io import load_document
from fabric.sim.engine import Simulator
from fabric.sim.graph import GraphCode, GraphError, load_graph_document
from fabric.sim.synth import configured_fabric, graph_document, share_op, temporal_pe
from sim_fixtures import Recorder

ADD = ("add", "arith.addi", ["i16", "i16"], ["i16"], {})
# a second actor of the same configured function: the fabric verifier checks one configuration
# per physical field (it has no per-context configuration), so both contexts run arith.addi
SUB = ("sub", "arith.addi", ["i16", "i16"], ["i16"], {})


def one_fu(actors):
    """A fabric description whose first actor's op also runs the others (op_list extended), the
    other FUs gone; and that op's reference."""
    fab = configured_fabric("fab", actors)
    return fab, share_op(fab, [a[0] for a in actors])


def shared(actors, temporal, inputs, outputs, edges=()):
    """The one-FU fabric and the graph (with the graph's own temporal entry, when given)."""
    fab, first = one_fu(actors)
    doc = graph_document("g", "fab", actors, list(edges), inputs, outputs)
    if temporal is not None:
        doc["temporal"] = [dict(temporal, op=first)]
    return doc, load_document(fab)


def load(actors, temporal, inputs, outputs, edges=()):
    doc, fab = shared(actors, temporal, inputs, outputs, edges)
    return load_graph_document(doc, fab)


def two(n, **kw):
    xs = list(range(1, n + 1))
    return load([ADD, SUB], {"contexts": 2, "actors": {"add": 0, "sub": 1}, **kw},
                [("a", ["add.0"], [10 * x for x in xs]), ("b", ["add.1"], xs),
                 ("c", ["sub.0"], [100 * x for x in xs]), ("e", ["sub.1"], xs)],
                [("s", "add.0"), ("d", "sub.0")])


@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_round_robin_contexts_interleave_one_acceptance_per_cycle(engine):
    """II 1, round robin: cycle 0 grants context 0 (add), cycle 1 context 1 (sub), ... each
    context fires every other cycle (its own holding slot frees on its output's handoff); the
    last sub fires at 2n - 1 and is delivered at 2n: 2n + 1 cycles.  Each context has its own
    counters: it loses the grant in the cycles in between (a stall, reason grant)."""
    n = 4
    g = two(n)
    sim = Simulator(g, engine)
    rec = Recorder(sim)
    res = sim.run(100, rec)
    assert res.status == "complete"
    assert res.outputs["s"] == [11 * x for x in range(1, n + 1)] and res.outputs["d"] == [101 * x for x in range(1, n + 1)]
    assert rec.cycles_firing("add") == [0, 2, 4, 6] and rec.cycles_firing("sub") == [1, 3, 5, 7]
    assert res.cycles == 2 * n + 1
    assert res.counters["add"].fires == n and res.counters["sub"].fires == n
    assert rec.stalls[0]["sub"] == "grant" and rec.stalls[1]["add"] == "grant"
    assert res.counters["sub"].stalls == n and res.counters["add"].stalls == n - 1


def test_fixed_priority_serves_the_first_context_while_it_requests():
    """Context 0 requests every cycle (its slot frees each cycle): it fires at 0..n-1, context 1
    only afterwards, at n..2n-1: again 2n + 1 cycles, in the other order."""
    n = 3
    sim = Simulator(two(n, grant_policy="fixed_priority"))
    rec = Recorder(sim)
    res = sim.run(100, rec)
    assert rec.cycles_firing("add") == [0, 1, 2] and rec.cycles_firing("sub") == [3, 4, 5]
    assert res.cycles == 2 * n + 1 and res.counters["sub"].stalls == n


@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_initiation_interval_spaces_the_grants(engine):
    """II 3: a grant at t blocks the resource until t + 3; round robin alternates: add at 0, 6,
    sub at 3, 9 (n = 2): the last result is delivered at 10, 11 cycles; idle stretches between
    grants are skipped and counted."""
    sim = Simulator(two(2, initiation_interval=3), engine)
    rec = Recorder(sim)
    res = sim.run(100, rec)
    assert rec.cycles_firing("add") == [0, 6] and rec.cycles_firing("sub") == [3, 9]
    assert res.cycles == 11 and res.outputs["d"] == [101, 202]


def test_each_context_keeps_its_own_logical_state():
    """Two streams in two contexts of one LoopStream resource: each counts its own loop."""
    st = {"step_kind": "add", "predicate": "slt"}
    s1 = ("c1", "dataflow.stream", ["i8"] * 3, ["i8", "i1"], st)
    s2 = ("c2", "dataflow.stream", ["i8"] * 3, ["i8", "i1"], st)
    g = load([s1, s2], {"contexts": 2, "actors": {"c1": 0, "c2": 1}},
             [("a", ["c1.0"], [0]), ("l", ["c1.1"], [3]), ("s", ["c1.2"], [1]),
              ("b", ["c2.0"], [10]), ("m", ["c2.1"], [12]), ("t", ["c2.2"], [1])],
             [("i1", "c1.0"), ("k1", "c1.1"), ("i2", "c2.0"), ("k2", "c2.1")])
    for engine in ("reference", "compiled"):
        res = Simulator(g, engine).run(200)
        assert res.status == "complete"
        assert res.outputs["i1"] == [0, 1, 2, 3] and res.outputs["k1"] == [1, 1, 1, 0]
        assert res.outputs["i2"] == [10, 11, 12] and res.outputs["k2"] == [1, 1, 0]


def _codes(actors, temporal, inputs, outputs):
    with pytest.raises(GraphError) as exc:
        load(actors, temporal, inputs, outputs)
    return exc.value.diagnostics


IO = ([("a", ["add.0", "sub.0"], [1]), ("b", ["add.1", "sub.1"], [1])], [("s", "add.0"), ("d", "sub.0")])


def test_sharing_without_contexts_is_one_diagnostic():
    d = _codes([ADD, SUB], None, *IO)
    assert d[0].code is GraphCode.SharedResource and "InstructionContextRef" in str(d[0])


@pytest.mark.parametrize("temporal, code, words", [
    ({"contexts": 1, "actors": {"add": 0, "sub": 1}}, GraphCode.ContextCapacity, "beyond the 1 resident context"),
    ({"contexts": 2, "actors": {"add": 0, "sub": 0}}, GraphCode.ContextCapacity, "already resident"),
    ({"contexts": 2, "actors": {"add": 0}}, GraphCode.SharedResource, "without an InstructionContextRef"),
    ({"contexts": 2, "actors": {"add": 0, "sub": 1, "ghost": 1}}, GraphCode.TemporalInvalid, "does not run on"),
])
def test_bad_context_assignments_are_typed_diagnostics(temporal, code, words):
    d = _codes([ADD, SUB], temporal, *IO)
    assert d[0].code is code and words in str(d[0]) and "\n" not in str(d[0])


def test_a_transparent_resource_cannot_be_shared():
    c1 = ("c1", "dataflow.carry", ["i1", "i8", "i8"], ["i8"], {})
    c2 = ("c2", "dataflow.carry", ["i1", "i8", "i8"], ["i8"], {})
    d = _codes([c1, c2], {"contexts": 2, "actors": {"c1": 0, "c2": 1}},
               [("k", ["c1.0", "c2.0"], [0]), ("i", ["c1.1", "c2.1"], [1]), ("n", ["c1.2", "c2.2"], [1])],
               [("o1", "c1.0"), ("o2", "c2.0")])
    assert d[0].code is GraphCode.TemporalInvalid and "elastic-transparent" in str(d[0])


def test_malformed_temporal_declarations_are_format_errors():
    from fabric.errors import FormatError
    doc, fab = shared([ADD, SUB], {"contexts": 2, "actors": {"add": 0, "sub": 1}}, *IO)
    for bad, where in ((lambda t: t.update(grant_policy="lottery"), "grant_policy"),
                       (lambda t: t.update(contexts=0), "contexts"),
                       (lambda t: t["actors"].update(add=-1), "actors.add")):
        d = json.loads(json.dumps(doc))
        bad(d["temporal"][0])
        with pytest.raises(FormatError) as exc:
            load_graph_document(d, fab)
        assert where in exc.value.path + str(exc.value)


@pytest.mark.parametrize("seed", range(8))
def test_temporal_sharing_is_identical_on_both_engines(seed, tmp_path):
    import random

    from test_sim_engines import outcome, same_on_both
    rng = random.Random(seed)
    k = rng.randint(2, 4)
    actors = [(f"a{i}", "arith.addi", ["i16", "i16"], ["i16"], {}) for i in range(k)]
    order = list(range(k))
    rng.shuffle(order)
    temporal = {"contexts": k + rng.randint(0, 2), "actors": {f"a{i}": order[i] for i in range(k)},
                "initiation_interval": rng.randint(1, 3), "grant_policy": rng.choice(["round_robin", "fixed_priority"])}
    inputs = [(f"x{i}{j}", [f"a{i}.{j}"], [rng.randrange(1 << 16) for _ in range(rng.randint(0, 6))])
              for i in range(k) for j in range(2)]
    outputs = [(f"y{i}", f"a{i}.0", rng.choice([1, 2, 5])) for i in range(k)]
    g = load(actors, temporal, inputs, outputs)
    same_on_both(g, tmp_path, 300)
    streams = [{n: [rng.randrange(1 << 16) for _ in range(rng.randint(0, 5))] for n, _, _ in inputs} for _ in range(3)]
    batch = Simulator(g, "compiled", streams=streams).run_all(300)
    for b in range(3):
        assert outcome(batch[b]) == outcome(Simulator(g, "reference", streams=[streams[b]]).run(300))


# --- the fabric's temporal PE owns the contexts and the scheduler -------------------------------
# (seed: "A temporal PE instantiates the declared state for each resident InstructionContextRef";
# the fabric.op owns its "exact GrantPolicy"; mapping "cannot ... define another scheduler")

SUBI = ("sub", "arith.subi", ["i16", "i16"], ["i16"], {})


def pe_fabric(actors, contexts, pe_extra=None, uses_contexts=None):
    """One FU in a temporal PE of `contexts` contexts running every actor, use i in context i."""
    fab = configured_fabric("fab", actors)
    return fab, temporal_pe(fab, [a[0] for a in actors], "pe0", contexts, uses_contexts, **(pe_extra or {}))


def add_sub(n, pe_extra=None, uses_contexts=None, temporal=None):
    xs = list(range(1, n + 1))
    fab, first = pe_fabric([ADD, SUBI], 2, pe_extra, uses_contexts)
    doc = graph_document("g", "fab", [ADD, SUBI], [], [("a", ["add.0"], [10 * x for x in xs]), ("b", ["add.1"], xs),
                                                       ("c", ["sub.0"], [x for x in xs]), ("e", ["sub.1"], [3 * x for x in xs])],
                         [("s", "add.0"), ("d", "sub.0")])
    if temporal is not None:
        doc["temporal"] = [dict(temporal, op=first)]
    return load_graph_document(doc, load_document(fab))


@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_a_fabric_temporal_pe_runs_distinct_functions_in_its_contexts(engine):
    """add in context 0 and subi in context 1 of one resource (each context its own configured
    function): round robin grants add at 0, 2, 4 and sub at 1, 3, 5; sub wraps modulo 2^16."""
    n = 3
    sim = Simulator(add_sub(n), engine)
    rec = Recorder(sim)
    res = sim.run(100, rec)
    assert res.status == "complete" and res.cycles == 2 * n + 1
    assert res.outputs["s"] == [11 * x for x in range(1, n + 1)]
    assert res.outputs["d"] == [(x - 3 * x) % (1 << 16) for x in range(1, n + 1)]
    assert rec.cycles_firing("add") == [0, 2, 4] and rec.cycles_firing("sub") == [1, 3, 5]


@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_the_pe_declares_initiation_interval_and_grant_policy(engine):
    """II 3, fixed priority: grants at 0, 3, 6, 9; context 0 (add) requests again by 3 (its result
    left at 1), so add takes 0 and 3, sub 6 and 9; the last result is delivered at 10."""
    sim = Simulator(add_sub(2, {"initiation_interval": 3, "grant_policy": "fixed_priority"}), engine)
    rec = Recorder(sim)
    res = sim.run(100, rec)
    assert rec.cycles_firing("add") == [0, 3] and rec.cycles_firing("sub") == [6, 9] and res.cycles == 11


def test_two_uses_in_one_context_of_the_pe_is_one_diagnostic():
    """Two functions in one context are two values in one configuration slot (the verifier's
    ConflictingAssignment); two uses of one function there are two actors in one context."""
    with pytest.raises(GraphError) as exc:
        add_sub(1, uses_contexts=[1, 1])
    assert exc.value.diagnostics[0].code is GraphCode.FabricInvalid and "ConflictingAssignment" in str(exc.value)
    fab, _ = pe_fabric([ADD, SUB], 2, uses_contexts=[1, 1])
    doc = graph_document("g", "fab", [ADD, SUB], [], *IO)
    with pytest.raises(GraphError) as exc:
        load_graph_document(doc, load_document(fab))
    (d,) = exc.value.diagnostics
    assert d.code is GraphCode.ContextCapacity and "already resident" in str(d) and "\n" not in str(d)
    assert d.path == "mapping.uses[1].context"


def test_the_graph_cannot_declare_again_what_the_pe_declares():
    with pytest.raises(GraphError) as exc:
        add_sub(1, temporal={"contexts": 2, "actors": {"add": 1, "sub": 0}})
    d = exc.value.diagnostics[0]
    assert d.code is GraphCode.TemporalInvalid and "temporal PE pe0" in str(d)


def test_a_use_context_beyond_the_pe_is_a_fabric_diagnostic():
    with pytest.raises(GraphError) as exc:
        add_sub(1, uses_contexts=[0, 2])
    assert exc.value.diagnostics[0].code is GraphCode.FabricInvalid and "InvalidContext" in str(exc.value)


def test_pe_scheduler_fields_round_trip_and_a_spatial_pe_has_none():
    from fabric.io import dump, load_text
    from fabric.view import check_fabric
    fab, _ = pe_fabric([ADD, SUBI], 2, {"initiation_interval": 3, "grant_policy": "fixed_priority"})
    f = load_document(fab)
    assert (f.pes[0].initiation_interval, f.pes[0].grant_policy) == (3, "fixed_priority")
    assert load_text(dump(f)).pes == f.pes
    fab["pes"][0].update(kind="spatial", contexts=1)
    rep = check_fabric(load_document(fab))
    assert any(d.code.name == "InvalidContext" and "grant_policy" in str(d) for d in rep.diagnostics)
    fab["pes"][0]["grant_policy"] = "lottery"
    from fabric.errors import FormatError
    with pytest.raises(FormatError) as exc:
        load_document(fab)
    assert "pes[0].grant_policy" in str(exc.value) and "not a grant policy" in str(exc.value)


@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_one_context_of_a_pe_with_initiation_interval_two_fires_every_other_cycle(engine):
    """Grants at 0, 2, 4 for three tokens; the last result is delivered at 5: six cycles."""
    fab, _ = pe_fabric([ADD], 1, {"initiation_interval": 2})
    doc = graph_document("g", "fab", [ADD], [], [("a", ["add.0"], [1, 2, 3]), ("b", ["add.1"], [7, 8, 9])], [("s", "add.0")])
    sim = Simulator(load_graph_document(doc, load_document(fab)), engine)
    rec = Recorder(sim)
    res = sim.run(100, rec)
    assert rec.cycles_firing("add") == [0, 2, 4] and res.cycles == 6 and res.outputs["s"] == [8, 10, 12]


@pytest.mark.parametrize("seed", range(4))
def test_pe_declared_contexts_with_distinct_functions_are_identical_on_both_engines(seed, tmp_path):
    """addi and subi contexts (and a third addi) of one temporal PE resource, random II, policy
    and streams: equal outputs, Arrow trace and VCD from the reference and compiled engines, and
    the outputs are the plain modular sums and differences of the streams."""
    import random

    from test_sim_engines import same_on_both
    rng = random.Random(seed)
    actors = [ADD, SUBI, ("add2", "arith.addi", ["i16", "i16"], ["i16"], {})]
    order = rng.sample(range(4), 3)
    fab, _ = pe_fabric(actors, 4, {"initiation_interval": rng.randint(1, 3),
                                   "grant_policy": rng.choice(["round_robin", "fixed_priority"])}, order)
    xs = {(a[0], j): [rng.randrange(1 << 16) for _ in range(4)] for a in actors for j in range(2)}
    doc = graph_document("g", "fab", actors, [], [(f"{a}{j}", [f"{a}.{j}"], v) for (a, j), v in xs.items()],
                         [(f"y{a[0]}", f"{a[0]}.0", rng.choice([1, 2])) for a in actors])
    g = load_graph_document(doc, load_document(fab))
    same_on_both(g, tmp_path, 300)
    res = Simulator(g, "compiled").run(300)
    sign = {"add": 1, "sub": -1, "add2": 1}
    for a in sign:
        assert res.outputs[f"y{a}"] == [(x + sign[a] * y) % (1 << 16) for x, y in zip(xs[(a, 0)], xs[(a, 1)])]


@pytest.mark.parametrize("engine", ["reference", "compiled"])
@pytest.mark.parametrize("policy", ["fixed_priority", "round_robin"])
def test_a_context_feeding_another_context_of_its_resource_does_not_hold_the_grant(engine, policy):
    """add (context 0) computes s = x + y, sub (context 1) d = s - z, on one resource, II 1.
    Cycle 0: only add requests (sub has no s yet) and fires.  Cycle 1: add holds s0 and has new
    operands; its slot frees only if sub takes s0 this cycle, which sub does only if granted.
    Under fixed priority add came first and kept the grant it could not use: the resource idled
    forever (a deadlock reported at cycle 1).  A granted context that cannot fire was no
    requester: its grant is withdrawn and sub, the next in order, fires.  So add fires at 0, 2, 4
    and sub at 1, 3, 5 (under round robin too: it starts after add); the last d is delivered at
    6: 7 cycles, d = [11 - 1, 22 - 1, 33 - 1]."""
    fab, _ = pe_fabric([ADD, SUBI], 2, {"grant_policy": policy})
    doc = graph_document("g", "fab", [ADD, SUBI], [("add.0", "sub.0")],
                         [("x", ["add.0"], [1, 2, 3]), ("y", ["add.1"], [10, 20, 30]), ("z", ["sub.1"], [1, 1, 1])],
                         [("d", "sub.0")])
    sim = Simulator(load_graph_document(doc, load_document(fab)), engine)
    rec = Recorder(sim)
    res = sim.run(100, rec)
    assert res.status == "complete", res.message
    assert res.outputs["d"] == [10, 21, 32] and res.cycles == 7
    assert rec.cycles_firing("add") == [0, 2, 4] and rec.cycles_firing("sub") == [1, 3, 5]
    assert rec.stalls[1]["add"] == "grant" and rec.stalls[3]["add"] == "grant"
