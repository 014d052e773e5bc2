"""The compiled engine against the reference engine: the same cycle kernel and semantic kernels,
compiled by Numba or run as plain Python, must give identical outputs, statuses, cycle counts,
counters, Arrow traces and VCD waveforms - on random graphs of every family, on rings with
initial tokens and slow consumers, and on batches of instances with their own input streams
(each instance of a batch equal to that instance run alone on the reference engine)."""
from __future__ import annotations

import random

import pyarrow as pa
import pytest

from fabric.sim.engine import Simulator
from fabric.sim.trace import ArrowTrace, VcdTrace, fan_out
from sim_fixtures import branch, invariant_loop, load, load_random, sum_loop, vector_pipeline
from test_sim_fuzz import random_dag, random_graph


def outcome(res):
    return (res.status, res.cycles, res.outputs, {n: vars(c) for n, c in res.counters.items()}, res.message,
            res.waiting)


def traced(g, engine, tmp, cycles=600, tag=""):
    sim = Simulator(g, engine)
    a, v = tmp / f"{engine}{tag}.arrow", tmp / f"{engine}{tag}.vcd"
    arrow, vcd = ArrowTrace(str(a), sim), VcdTrace(str(v), sim)
    res = sim.run(cycles, fan_out(arrow, vcd))
    arrow.close()
    vcd.close()
    return outcome(res), pa.ipc.open_file(str(a)).read_all(), v.read_bytes()


def same_on_both(g, tmp, cycles=600):
    ref, cmp = traced(g, "reference", tmp, cycles), traced(g, "compiled", tmp, cycles)
    assert ref[0] == cmp[0]
    assert ref[1].equals(cmp[1])
    assert ref[2] == cmp[2]
    return ref[0]


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


@pytest.mark.parametrize("seed", range(40))
def test_random_graphs_are_identical_on_both_engines(seed, tmp_path):
    g = load_random(random_graph, random.Random(1000 + seed))
    if g is not None:
        same_on_both(g, tmp_path, 400)


@pytest.mark.parametrize("seed", range(10))
def test_random_dags_and_rings_are_identical_on_both_engines(seed, tmp_path):
    rng = random.Random(seed)
    a, e, i, o, _ = random_dag(rng, rng.randint(1, 10), rng.randint(1, 5))
    same_on_both(load(a, e, i, o), tmp_path)
    same_on_both(load(*_ring(random.Random(100 + seed))), tmp_path)


@pytest.mark.parametrize("prog", [sum_loop([3, 1, 4, 1, 5, 9, 2, 6]), branch([0, 1, 1, 0], [2, 3, 4, 5]),
                                  invariant_loop(10, [1, 2, 3, 4, 5]), vector_pipeline([1, 2, 3, 4, 5, 6])],
                         ids=["sum_loop", "branch", "invariant_loop", "vector_pipeline"])
def test_programs_are_identical_on_both_engines(prog, tmp_path):
    assert same_on_both(load(*prog), tmp_path)[0] == "complete"


def test_a_fault_is_identical_on_both_engines(tmp_path):
    mux = ("m", "dataflow.mux", ["i2", "i8", "i8", "i8"], ["i8"], {})
    g = load([mux], [], [("s", ["m.0"], [1, 3]), ("a", ["m.1"], [1]), ("b", ["m.2"], [2]), ("c", ["m.3"], [3])],
             [("y", "m.0")])
    assert same_on_both(g, tmp_path)[0] == "fault"


def test_a_batch_runs_each_instance_as_the_reference_runs_it_alone():
    """Instances with their own input streams (different lengths: they end at different
    cycles) in one compiled batch: each equals its own reference run."""
    rng = random.Random(5)
    prog = sum_loop([1])
    g = load(*prog)
    streams = []
    for k in range(70):                       # more than one 64-instance group
        xs = [rng.randrange(1 << 31) for _ in range(rng.randint(0, 9))]
        streams.append({"limit": [len(xs)], "x": xs})
    batch = Simulator(g, "compiled", streams=streams).run_all(500)
    for k, st in enumerate(streams):
        alone = Simulator(g, "reference", streams=[st]).run(500)
        assert outcome(batch[k]) == outcome(alone), k
        assert batch[k].outputs["sum"] == ([sum(st["x"]) % (1 << 32)] if st["x"] else [])


@pytest.mark.parametrize("kind", ["i32", "f32"])
def test_the_benchmark_graph_computes_numpys_layer_by_layer_values(kind):
    """1,000 actors in 125 layers, 3 instances with their own streams: every output token equals
    NumPy's evaluation of the 125 layers (int32 wrap-around, float32 rounded once per op), and
    the pipeline delivers one token per cycle after filling: n tokens in n + 125 cycles."""
    import numpy as np

    from fabric.sim.layered import functional, layered_graph, streams

    g = layered_graph(kind, length=8)
    st = streams(g, kind, 3, 30)
    res = Simulator(g, "compiled", streams=st).run_all(400)
    for b in range(3):
        xs = np.array([st[b][n] for n, _, _ in g.inputs], np.uint64)
        want = functional(kind, xs).view(np.uint32)
        assert res[b].status == "complete" and res[b].cycles == 30 + 125
        assert [res[b].outputs[f"y{j}"] for j in range(8)] == want.tolist()


# one actor per family with a cycle model: (schema, inputs, results, attributes)
V4 = "vector<4xi16>"
FAMILY_ACTORS = {
    "ScalarIntegerAddSub": ("arith.subi", ["i16", "i16"], ["i16"], {}),
    "ScalarIntegerSaturatingAddSub": ("llvm.intr.sadd.sat", ["i8", "i8"], ["i8"], {}),
    "ScalarIntegerCountZeros": ("math.ctlz", ["i32"], ["i32"], {}),
    "ScalarIntegerLogic": ("arith.ori", ["i64", "i64"], ["i64"], {}),
    "ScalarIntegerShift": ("arith.shrsi", ["i16", "i16"], ["i16"], {}),
    "ScalarIntegerCompareMinMax": ("arith.cmpi", ["i32", "i32"], ["i1"], {"predicate": "sle"}),
    "ScalarValueSelect": ("arith.select", ["i1", "i32", "i32"], ["i32"], {}),
    "ScalarIntegerCast": ("arith.extsi", ["i8"], ["i32"], {}),
    "ScalarBitReinterpret": ("arith.bitcast", ["i32"], ["f32"], {}),
    "ScalarIntegerMultiply": ("arith.muli", ["i32", "i32"], ["i32"], {}),
    "ScalarSignedIntegerDivRem": ("arith.remsi", ["i16", "i16"], ["i16"], {}),
    "ScalarUnsignedIntegerDivRem": ("arith.divui", ["i16", "i16"], ["i16"], {}),
    "FixedVectorIntegerAddSub": ("arith.addi", [V4, V4], [V4], {}),
    "FixedVectorIntegerLogic": ("arith.xori", [V4, V4], [V4], {}),
    "FixedVectorPack": ("dataflow.pack", [V4], ["i64"], {}),
    "FixedVectorUnpack": ("dataflow.unpack", ["i64"], [V4], {}),
    "TokenConstant": ("dataflow.constant", ["none"], ["i16"], {"value": 1234}),
    "TokenSync": ("dataflow.sync", ["i16", "i1"], ["i16", "i1"], {}),
    "TokenMux": ("dataflow.mux", ["i1", "i16", "i16"], ["i16"], {}),
    "TokenDemux": ("dataflow.demux", ["i1", "i16"], ["i16", "i16"], {}),
    "LoopStream": ("dataflow.stream", ["i16"] * 3, ["i16", "i1"], {"step_kind": "mul", "predicate": "ult"}),
    "LoopCarry": ("dataflow.carry", ["i1", "i16", "i16"], ["i16"], {}),
    "LoopInvariant": ("dataflow.invariant", ["i1", "i16"], ["i16"], {}),
    "LoopGate": ("dataflow.gate", ["i1", "i16"], ["i1", "i16"], {}),
    "FixedVectorParallelize": ("dataflow.parallelize", ["i16", "i1"], [V4, "vector<4xi1>", "i1"], {}),
    "FixedVectorSerialize": ("dataflow.serialize", [V4, "vector<4xi1>", "i1"], ["i16", "i1"], {}),
    "ScalarFloatSign": ("arith.negf", ["f16"], ["f16"], {}),
    "ScalarFloatAddSub": ("arith.addf", ["f32", "f32"], ["f32"], {"rounding_mode": "upward"}),
    "ScalarFloatMultiply": ("arith.mulf", ["bf16", "bf16"], ["bf16"], {"rounding_mode": "toward_zero"}),
    "ScalarFloatFma": ("math.fma", ["f64"] * 3, ["f64"], {"rounding_mode": "downward"}),
    "ScalarFloatDivide": ("arith.divf", ["f16", "f16"], ["f16"], {"rounding_mode": "to_nearest_away"}),
    "ScalarFloatRemainder": ("arith.remf", ["f32", "f32"], ["f32"], {}),
    "ScalarFloatCompareMinMax": ("arith.cmpf", ["f32", "f32"], ["i1"], {"predicate": "ult"}),
    "ScalarFloatWidthCast": ("arith.truncf", ["f32"], ["f16"], {"rounding_mode": "upward"}),
    "ScalarIntegerToFloat": ("arith.sitofp", ["i32"], ["f32"], {}),
    "ScalarFloatToInteger": ("arith.fptosi", ["f32"], ["i16"], {}),
    "FixedVectorFloatSign": ("math.absf", ["vector<4xf16>"], ["vector<4xf16>"], {}),
    "FixedVectorSliceAlignMerge": ("vector.extract", ["vector<2x4xi16>", "index"], [V4], {"static_position": ["dynamic"]}),
    "FixedVectorShuffle": ("vector.shuffle", [V4, V4], ["vector<3xi16>"], {"mask": [7, -1, 2]}),
    **{f"ScalarMath{n}": (s, ["f32"] * (2 if n == "Pow" else 1), ["f32"], {"accuracy": "correctly_rounded"})
       for n, s in (("Sin", "math.sin"), ("Cos", "math.cos"), ("Tan", "math.tan"), ("Sinh", "math.sinh"),
                    ("Cosh", "math.cosh"), ("Tanh", "math.tanh"), ("Exp", "math.exp"), ("Exp2", "math.exp2"),
                    ("ExpM1", "math.expm1"), ("Log", "math.log"), ("Log2", "math.log2"), ("Log10", "math.log10"),
                    ("Log1p", "math.log1p"), ("Floor", "math.floor"), ("Ceil", "math.ceil"), ("Round", "math.round"),
                    ("Trunc", "math.trunc"), ("RoundEven", "math.roundeven"), ("Sqrt", "math.sqrt"),
                    ("Rsqrt", "math.rsqrt"), ("Erf", "math.erf"), ("Pow", "math.powf"))},
}
DEFINED = {"FixedVectorParallelize": ["a.1"], "FixedVectorSerialize": ["a.1", "a.2"]}


def _token(t, rng):
    from fabric.types import parse_type, payload_bits
    pt = parse_type(t)
    if t == "none":
        return 0
    if t == "index":
        return rng.randrange(3)
    if t == "i1" or t.endswith("xi1>"):
        n = getattr(pt, "num_elements", None)
        return [rng.randrange(2) for _ in range(n)] if n else rng.randrange(2)
    if hasattr(pt, "num_elements"):
        return [rng.getrandbits(pt.element.width) for _ in range(pt.num_elements)]
    return rng.getrandbits(payload_bits(pt))


def test_every_family_with_a_cycle_model_has_a_differential_case():
    from fabric.sim.models import CYCLE_MODELS
    assert set(FAMILY_ACTORS) == set(CYCLE_MODELS)


@pytest.mark.parametrize("family", sorted(FAMILY_ACTORS))
def test_every_family_is_identical_on_both_engines(family, tmp_path):
    """One actor of the family, random input streams (a slow consumer on every other output),
    traced on both engines; then a batch of 3 instances with their own streams against each
    instance alone on the reference engine."""
    from fabric.sim.synth import family_for
    schema, ins, outs, attrs = FAMILY_ACTORS[family]
    rng = random.Random(family)
    n = 6
    inputs = []
    for k, t in enumerate(ins):
        toks = [_token(t, rng) for _ in range(n)]
        if family in ("FixedVectorParallelize", "FixedVectorSerialize") and k == len(ins) - 1:
            toks = [1, 1, 0, 1, 0, 0]                  # phases
        if family in ("LoopStream",) and k == 2:
            toks = [rng.randrange(2, 4) for _ in range(n)]
        inputs.append((f"in{k}", [f"a.{k}"], toks))
    outputs = [(f"out{j}", f"a.{j}", 1 + 2 * (j % 2)) for j in range(len(outs))]
    g = load([("a", schema, ins, outs, attrs)], [], inputs, outputs, DEFINED.get(family, ()))
    assert g.actors[0].family == family or family_for(schema) != family
    same_on_both(g, tmp_path, 200)
    streams = [{f"in{k}": [_token(t, random.Random(b * 10 + k)) for _ in range(n)] for k, t in enumerate(ins)
                if not (family in ("FixedVectorParallelize", "FixedVectorSerialize", "LoopStream")
                        and k == len(ins) - 1)} for b in range(3)]
    batch = Simulator(g, "compiled", streams=streams).run_all(200)
    for b in range(3):
        assert outcome(batch[b]) == outcome(Simulator(g, "reference", streams=[streams[b]]).run(200))
