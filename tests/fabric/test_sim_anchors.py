"""The execution bullets of the seed's Validation Anchors, checked on the wired simulator
(each resource stepped inside a graph, tokens moving only on valid && ready)."""
import pytest

from fabric.sim.graph import GraphCode, GraphError
from sim_fixtures import STREAM, load, run

ADD = ("add", "arith.addi", ["i32", "i32"], ["i32"], {})


def test_stateless_firing_publishes_at_t_plus_1_and_holds_under_a_multi_cycle_stall():
    """One semantically stateless scalar firing: accepted at t, published at t + 1; a
    downstream stall of several cycles keeps the complete tuple valid and stable and blocks a
    second firing; the final handoff lets the replacement be accepted in the same cycle."""
    res, rec = run([ADD], [], [("a", ["add.0"], [1, 2]), ("b", ["add.1"], [10, 20])], [("y", "add.0", 4)])
    assert res.outputs["y"] == [11, 22]
    assert 0 in rec.cycles_firing("add")
    assert not rec.valid[0]["add.0->y"] and rec.valid[1]["add.0->y"]          # publish at t + 1
    assert [rec.data[t]["add.0->y"] for t in (1, 2, 3)] == [11, 11, 11]       # held, stable
    assert rec.cycles_handing_off("add.0->y") == [3, 7]                       # ready every 4th cycle
    assert rec.cycles_firing("add") == [0, 3]    # no second firing before the handoff; then same cycle
    assert rec.stalls[1]["add"] == "backpressure"
    assert rec.data[4]["add.0->y"] == 22


def test_broadcast_every_consumer_takes_part_in_delivery_and_backpressure():
    """SSA multi-use: the result reaches both consumers; the slow one holds the producer."""
    res, rec = run([ADD], [], [("a", ["add.0"], [1, 2, 3]), ("b", ["add.1"], [1, 1, 1])],
                   [("fast", "add.0"), ("slow", "add.0", 3)])
    assert res.outputs["fast"] == res.outputs["slow"] == [2, 3, 4]
    assert rec.cycles_handing_off("add.0->fast") == [1, 3, 6]   # re-offered only after the slow take
    assert rec.cycles_handing_off("add.0->slow") == [2, 5, 8]
    assert rec.cycles_firing("add") == [0, 2, 5]


def test_logically_stateful_stream_follows_its_own_timing():
    """A multiply-step stream makes its next state available every 3 cycles although its
    consumers are always ready (next-state timing separate from publication)."""
    mul = {"step_kind": "mul", "predicate": "ult"}
    res, rec = run([("s", "dataflow.stream", ["i16"] * 3, ["i16", "i1"], mul)], [],
                   [("start", ["s.0"], [1]), ("limit", ["s.1"], [50]), ("step", ["s.2"], [3])],
                   [("i", "s.0"), ("c", "s.1")])
    assert res.outputs["i"] == [1, 3, 9, 27, 81]
    assert res.outputs["c"] == [1, 1, 1, 1, 0]
    assert rec.cycles_handing_off("s.0->i") == [1, 4, 7, 10, 13]
    assert any(st.get("s") == "next_state" for st in rec.stalls.values())


def test_add_stream_publishes_every_cycle():
    res, rec = run([("s", "dataflow.stream", ["i8"] * 3, ["i8", "i1"], STREAM)], [],
                   [("start", ["s.0"], [0]), ("limit", ["s.1"], [4]), ("step", ["s.2"], [1])],
                   [("i", "s.0"), ("c", "s.1")])
    assert rec.cycles_handing_off("s.0->i") == [1, 2, 3, 4, 5]


def test_blocked_transparent_transition_consumes_nothing_and_updates_no_state():
    """A carry whose consumer stalls keeps init (and its Init state): nothing partial."""
    carry = ("c", "dataflow.carry", ["i1", "i8", "i8"], ["i8"], {})
    res, rec = run([carry], [],
                   [("cond", ["c.0"], [1, 0]), ("init", ["c.1"], [7]), ("next", ["c.2"], [8])],
                   [("o", "c.0", 3)])
    assert res.outputs["o"] == [7, 8]
    assert rec.cycles_handing_off("init->c.1") == [2]       # taken only with its output
    assert rec.cycles_handing_off("cond->c.0") == [5, 6]     # Loop: true with next, then false
    assert rec.stalls[0]["c"] == "backpressure"


def test_gate_only_active_results_claim_capacity():
    """The head pair publishes only the value: a stalled cond' consumer does not block it."""
    gate = ("g", "dataflow.gate", ["i1", "i8"], ["i1", "i8"], {})
    res, rec = run([gate], [], [("c", ["g.0"], [1, 1, 0]), ("v", ["g.1"], [5, 6, 7])],
                   [("cond", "g.0", 5), ("val", "g.1")])
    assert res.outputs["val"] == [5, 6] and res.outputs["cond"] == [1, 0]
    assert rec.cycles_firing("g")[0] == 0


def _serialize(mask_tokens, lanes=4, elem="i16", port_lanes=None):
    v, m = f"vector<{lanes}x{elem}>", f"vector<{lanes}xi1>"
    ser = ("ser", "dataflow.serialize", [v, m, "i1"], [elem, "i1"], {})
    n = len(mask_tokens)
    vecs = [[10 * k + i for i in range(lanes)] for k in range(n)]
    return run([ser], [], [("v", ["ser.0"], vecs), ("m", ["ser.1"], mask_tokens), ("p", ["ser.2"], [1] * n)],
               [("e", "ser.0"), ("ph", "ser.1")], defined=["ser.1", "ser.2"])


def test_sparse_serialize_keeps_one_claim_across_its_groups_and_all_zero_retires_at_commit():
    res, rec = _serialize([[1, 0, 1, 0], [0, 0, 0, 0], [0, 1, 0, 0]])
    assert res.outputs["e"] == [0, 2, 21]        # lanes 0 and 2 of vector 0, lane 1 of vector 2
    # vector 0 accepted at 0: lane 0 at 1, lane 2 at 2 (one claim; no new firing in between)
    assert rec.cycles_firing("ser")[:2] == [0, 2]
    # the all-zero group was accepted at 2 (replacing on the final handoff), retires at commit 3,
    # and vector 2 is accepted at 3 without publishing anything for the all-zero one
    assert rec.cycles_firing("ser")[2] == 3
    assert rec.cycles_handing_off("ser.0->e") == [1, 2, 4]


def test_serialize_with_fewer_logical_lanes_never_observes_padding():
    """vector<2xi16> on a 64-bit resource: M = 4, L = 2; lanes at or above L are never read."""
    res, _ = _serialize([[1, 1]], lanes=2)
    assert res.outputs["e"] == [0, 1]


def test_parallelize_partial_close_emits_both_groups_under_one_claim():
    v, m = "vector<4xi8>", "vector<4xi1>"
    par = ("par", "dataflow.parallelize", ["i8", "i1"], [v, m, "i1"], {})
    res, rec = run([par], [], [("e", ["par.0"], [5, 6]), ("p", ["par.1"], [1, 1, 0])],
                   [("vec", "par.0"), ("mask", "par.1", 3), ("gp", "par.2")], defined=["par.1"])
    assert res.outputs["vec"] == [(5, 6, 0, 0), (0, 0, 0, 0)]
    assert res.outputs["gp"] == [True, False]
    # the partial group waits for the slow mask consumer; the false group follows it
    assert rec.cycles_handing_off("par.1->mask") == [5, 8]
    assert rec.cycles_firing("par") == [0, 1, 2]


def test_missing_activity_definedness_rejects_before_a_fabric_use_exists():
    v, m = "vector<4xi8>", "vector<4xi1>"
    par = ("par", "dataflow.parallelize", ["i8", "i1"], [v, m, "i1"], {})
    with pytest.raises(GraphError) as exc:
        load([par], [], [("e", ["par.0"], [5]), ("p", ["par.1"], [0])],
             [("vec", "par.0"), ("mask", "par.1"), ("gp", "par.2")])
    assert exc.value.diagnostics[0].code is GraphCode.CapabilityInadmissible


def test_reset_during_drain_clears_the_slot_and_the_continuation():
    """A partial close holds its claim while the slow consumer drains the true group; a reset
    then drops both the held group and the pending false group, and the adapter accepts anew."""
    from fabric.sim.engine import Simulator

    v, m = "vector<4xi8>", "vector<4xi1>"
    par = ("par", "dataflow.parallelize", ["i8", "i1"], [v, m, "i1"], {})
    g = load([par], [], [("e", ["par.0"], [5, 6, 7]), ("p", ["par.1"], [1, 1, 0, 1])],
             [("vec", "par.0", 10), ("mask", "par.1", 10), ("gp", "par.2", 10)], defined=["par.1"])
    sim = Simulator(g)
    for _ in range(4):   # 5, 6 accumulated; close accepted at 2; partial group visible, stalled
        sim.step()
    assert sim.busy("par")
    sim.reset()
    assert not sim.busy("par")
    res = sim.run(200)
    assert res.outputs["vec"] == []          # neither the partial group nor the false group
    assert res.status == "starved"            # 7 accumulated: the adapter is mid-transaction again
    assert sim.parallelize_buffer("par") == [7]
