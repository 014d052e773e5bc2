"""Complete small programs on the cycle-level simulator: outputs and cycle counts checked
against values derived by hand from the seed's timing contracts (derivations in each test)."""
from sim_fixtures import branch, invariant_loop, run, sum_loop, vector_pipeline


def test_counted_loop_sums_a_stream_at_one_recurrence_per_cycle():
    """Cycle 0: both streams accept (start, limit, step).  Cycle 1: element 0 is visible, the
    carry forwards init 0 through the gate into the add, which accepts (0, x0).  The add's
    result is visible one cycle later and the carry forwards it straight back through the gate
    (elastic-transparent: no registered cycle), so the add accepts again every cycle: at
    cycles 1..n.  Cycle n+1: the carry forwards the total, the gate drops it (continue false)
    and the demux accepts (false, total); cycle n+2: the total reaches the output and the carry
    consumes the final false condition.  n + 3 cycles."""
    xs = [3, 1, 4, 1, 5, 9, 2, 6]
    n = len(xs)
    res, rec = run(*sum_loop(xs))
    assert res.status == "complete"
    assert res.outputs["sum"] == [sum(xs)]
    assert res.outputs["partial"] == [sum(xs[:k]) for k in range(1, n)]
    assert res.outputs["i"] == list(range(n + 1))
    assert rec.cycles_firing("add") == list(range(1, n + 1))  # one recurrence per cycle
    assert res.cycles == n + 3


def test_sum_of_an_empty_stream_is_the_initial_value():
    res, _ = run(*sum_loop([]))
    assert res.status == "complete" and res.outputs["sum"] == [] and res.outputs["partial"] == []


def test_runtime_mux_demux_branch():
    """Item k: the demux accepts (s_k, x_k) at 3k, the selected op at 3k + 1, the mux at
    3k + 2, the output takes y_k at 3k + 3.  The selector stream is broadcast to the demux and
    the mux, so s_(k+1) is visible only after the mux took s_k: one item per 3 cycles, the
    last output at 3n, 3n + 1 cycles."""
    sel, xs = [0, 1, 1, 0], [2, 3, 4, 5]
    res, rec = run(*branch(sel, xs))
    assert res.status == "complete"
    assert res.outputs["y"] == [x * x if s == 0 else x + x for s, x in zip(sel, xs)]
    assert rec.cycles_firing("split") == [0, 3, 6, 9]
    assert res.counters["sq"].fires == 2 and res.counters["dbl"].fires == 2  # unselected ops never fire
    assert res.cycles == 3 * len(xs) + 1


def test_loop_with_invariant_and_gate():
    """Cycle 1: the invariant forwards s (Init), the gate's head pair (true, s) publishes s and
    the add accepts (s, x0).  From cycle 2 the invariant forwards the stored s once per true
    condition and the gate publishes (true, s): the add accepts at cycles 1..n.  Cycle n+1:
    the gate consumes the final (false, s) and publishes only cond' = false; cycle n+2: the
    invariant consumes its false condition and returns to Init.  n + 3 cycles."""
    s, xs = 10, [1, 2, 3, 4, 5]
    n = len(xs)
    res, rec = run(*invariant_loop(s, xs))
    assert res.status == "complete"
    assert res.outputs["y"] == [x + s for x in xs]
    assert res.outputs["more"] == [1] * (n - 1) + [0]  # cond'[i] = cond[i + 1]
    assert rec.cycles_firing("add") == list(range(1, n + 1))
    assert res.cycles == n + 3


def test_parallelize_op_serialize_with_a_slow_consumer():
    """The four-lane group (1, 2, 3, 4) is full when the fourth element is accepted at cycle 3
    and visible at 4; the vector add accepts at 4, the demux at 5, serialize at 6, so lane 0 is
    visible at 7.  The consumer accepts only in cycles 3j + 2, so token k hands off at 8 + 3k
    and everything upstream waits on it (serialize stalls, holding each lane stable): 6 lanes
    and the close token, the last at 26, 27 cycles."""
    elements = [1, 2, 3, 4, 5, 6]
    res, rec = run(*vector_pipeline(elements, every=3))
    assert res.status == "complete"
    assert res.outputs["out"] == [2 * e for e in elements] + [0]
    assert res.outputs["out_phase"] == [1] * len(elements) + [0]
    assert rec.cycles_handing_off("ser.0->out") == [8 + 3 * k for k in range(7)]
    assert res.counters["ser"].stalls > 0  # backpressure from the slow consumer
    assert res.cycles == 27


def test_same_pipeline_with_a_fast_consumer_is_bounded_by_the_groups():
    res, rec = run(*vector_pipeline([1, 2, 3, 4, 5, 6], every=1))
    assert res.status == "complete"
    assert rec.cycles_handing_off("ser.0->out")[:4] == [7, 8, 9, 10]  # one lane per cycle
    assert res.cycles < 27


def test_sync_constant_pack_and_unpack():
    """sync waits for both lanes and passes them on together; a constant answers each none
    trigger; pack/unpack reinterpret lanes as one integer, lane 0 least significant; each is
    one-cycle elastic, so the chain unpack(pack(v)) takes two cycles per stage."""
    actors = [("sy", "dataflow.sync", ["i8", "none"], ["i8", "none"], {}),
              ("k", "dataflow.constant", ["none"], ["i16"], {"value": 0x1234}),
              ("pk", "dataflow.pack", ["vector<2xi8>"], ["i16"], {}),
              ("up", "dataflow.unpack", ["i16"], ["vector<2xi8>"], {})]
    edges = [("sy.1", "k.0"), ("pk.0", "up.0")]
    inputs = [("a", ["sy.0"], [7, 8]), ("go", ["sy.1"], [0, 0]), ("v", ["pk.0"], [[0x34, 0x12], [1, 2]])]
    outputs = [("a_out", "sy.0"), ("c", "k.0"), ("lanes", "up.0"), ("packed", "pk.0")]
    res, rec = run(actors, edges, inputs, outputs)
    assert res.status == "complete"
    assert res.outputs["a_out"] == [7, 8] and res.outputs["c"] == [0x1234, 0x1234]
    assert res.outputs["packed"] == [0x1234, 0x0201]
    assert res.outputs["lanes"] == [(0x34, 0x12), (1, 2)]
    assert rec.cycles_handing_off("up.0->lanes") == [2, 3]
    assert rec.cycles_handing_off("k.0->c") == [2, 3]


def test_floating_point_actors_against_numpy_ieee_arithmetic():
    """f32 add, multiply, sqrt and maxnum, an unordered compare, conversions and a vector
    negate, checked against NumPy's IEEE single-rounding float32 arithmetic and the schemas'
    definitions (NaN: any NaN; fptosi: toward zero, saturating, NaN -> 0)."""
    import numpy as np

    def bits(x):
        return int(np.float32(x).view(np.uint32))

    def val(b):
        return np.uint32(b).view(np.float32)

    a = [1.5, float("nan"), -3.25, 1e30, 0.1]
    b = [2.25, 3.0, 0.5, 1e30, 0.2]
    actors = [("add", "arith.addf", ["f32", "f32"], ["f32"], {}),
              ("mul", "arith.mulf", ["f32", "f32"], ["f32"], {}),
              ("q", "math.sqrt", ["f32"], ["f32"], {"accuracy": "correctly_rounded"}),
              ("c", "arith.cmpf", ["f32", "f32"], ["i1"], {"predicate": "ult"}),
              ("mx", "arith.maxnumf", ["f32", "f32"], ["f32"], {}),
              ("i", "arith.fptosi", ["f32"], ["i8"], {}),
              ("n", "arith.negf", ["vector<2xf16>"], ["vector<2xf16>"], {})]
    edges = [("add.0", "mul.0"), ("mul.0", "q.0")]
    inputs = [("a", ["add.0", "c.0", "mx.0", "i.0"], [bits(x) for x in a]),
              ("b", ["add.1", "mul.1", "c.1", "mx.1"], [bits(x) for x in b]),
              ("v", ["n.0"], [[0x3C00, 0x8000]] * 5)]
    outputs = [("sq", "q.0"), ("lt", "c.0"), ("m", "mx.0"), ("ii", "i.0"), ("nn", "n.0")]
    res, _ = run(actors, edges, inputs, outputs)
    assert res.status == "complete"
    with np.errstate(all="ignore"):
        want_sq = [np.sqrt((np.float32(x) + np.float32(y)) * np.float32(y)) for x, y in zip(a, b)]
    for got, want in zip(res.outputs["sq"], want_sq):
        assert (np.isnan(want) and np.isnan(val(got))) or got == bits(want)
    assert res.outputs["lt"] == [int(not (x >= y)) for x, y in zip(a, b)]       # unordered or less
    assert res.outputs["m"] == [bits(y if np.isnan(x) else max(np.float32(x), np.float32(y))) for x, y in zip(a, b)]
    assert res.outputs["ii"] == [0 if np.isnan(x) else max(-128, min(127, int(x))) & 255 for x in a]
    assert res.outputs["nn"] == [(0xBC00, 0x0000)] * 5
