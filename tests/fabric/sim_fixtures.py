"""Small complete programs for the simulator tests: each returns (actors, edges, inputs, outputs,
activity_defined) in the form of fabric.sim.synth, and `run` configures, loads and simulates one."""
from __future__ import annotations

from fabric.io import load_document
from fabric.sim.engine import Simulator
from fabric.sim.graph import GraphError, load_graph_document
from fabric.sim.synth import configured_fabric, graph_document

STREAM = {"step_kind": "add", "predicate": "slt"}


def load(actors, edges, inputs=(), outputs=(), defined=(), name="g"):
    fab = load_document(configured_fabric(f"{name}-fabric", actors))
    return load_graph_document(graph_document(name, f"{name}-fabric", actors, edges, inputs, outputs, defined), fab)


def load_random(program, rng):
    """The loaded graph of the random program `program(rng)`, or None where the loader refuses
    it (a random program may be ill-formed; the refusals are tested on their own)."""
    try:
        return load(*program(rng))
    except GraphError:
        return None


class Recorder:
    """Collects per-cycle events: fired actor names, handoff edge labels, stall reasons, edge signals."""

    def __init__(self, sim):
        self.sim = sim
        self.fires, self.handoffs, self.stalls, self.valid, self.data = {}, {}, {}, {}, {}

    def __call__(self, t, view):
        s = self.sim
        valid, data = view.valid, view.data
        self.fires[t] = {s.names[i] for i in view.fired}
        self.handoffs[t] = {s.labels[e] for e in view.handoffs}
        self.stalls[t] = {s.names[i]: why for i, why in view.stalls.items()}
        self.valid[t] = {s.labels[e]: valid[e] for e in range(len(valid))}
        self.data[t] = {s.labels[e]: data[e] for e in range(len(valid)) if valid[e]}

    def repeat(self, first, last, view):
        for u in range(first, last + 1):
            self(u, view)

    def cycles_firing(self, actor):
        return sorted(t for t, f in self.fires.items() if actor in f)

    def cycles_handing_off(self, label):
        return sorted(t for t, h in self.handoffs.items() if label in h)


def run(actors, edges, inputs=(), outputs=(), defined=(), cycles=1000, engine="reference"):
    g = load(actors, edges, inputs, outputs, defined)
    sim = Simulator(g, engine)
    rec = Recorder(sim)
    return sim.run(cycles, rec), rec


def sum_loop(xs):
    """sum(xs) by carry -> gate -> add -> carry; two equal streams provide the carry's and the
    gate's conditions, which each consumes one cycle apart."""
    actors = [("cnt", "dataflow.stream", ["i32"] * 3, ["i32", "i1"], STREAM),
              ("cnt2", "dataflow.stream", ["i32"] * 3, ["i32", "i1"], STREAM),
              ("acc", "dataflow.carry", ["i1", "i32", "i32"], ["i32"], {}),
              ("gate", "dataflow.gate", ["i1", "i32"], ["i1", "i32"], {}),
              ("add", "arith.addi", ["i32", "i32"], ["i32"], {}),
              ("split", "dataflow.demux", ["i1", "i32"], ["i32", "i32"], {})]
    edges = [("cnt.1", "gate.0"), ("cnt2.1", "acc.0"), ("acc.0", "gate.1"), ("gate.1", "add.0"),
             ("add.0", "acc.2"), ("add.0", "split.1"), ("gate.0", "split.0")]
    inputs = [("start", ["cnt.0", "cnt2.0"], [0]), ("limit", ["cnt.1", "cnt2.1"], [len(xs)]),
              ("step", ["cnt.2", "cnt2.2"], [1]), ("zero", ["acc.1"], [0]), ("x", ["add.1"], list(xs))]
    outputs = [("sum", "split.0"), ("partial", "split.1"), ("i", "cnt.0"), ("i2", "cnt2.0")]
    return actors, edges, inputs, outputs


def branch(sel, xs):
    """y = x * x where sel is 0, x + x where sel is 1: demux -> one of two ops -> mux."""
    actors = [("split", "dataflow.demux", ["i1", "i16"], ["i16", "i16"], {}),
              ("sq", "arith.muli", ["i16", "i16"], ["i16"], {}),
              ("dbl", "arith.addi", ["i16", "i16"], ["i16"], {}),
              ("join", "dataflow.mux", ["i1", "i16", "i16"], ["i16"], {})]
    edges = [("split.0", "sq.0"), ("split.0", "sq.1"), ("split.1", "dbl.0"), ("split.1", "dbl.1"),
             ("sq.0", "join.1"), ("dbl.0", "join.2")]
    inputs = [("s", ["split.0", "join.0"], list(sel)), ("x", ["split.1"], list(xs))]
    return actors, edges, inputs, [("y", "join.0")]


def invariant_loop(s, xs):
    """y_i = x_i + s for i < n, with s held by an invariant and cut to n copies by a gate."""
    actors = [("ca", "dataflow.stream", ["i32"] * 3, ["i32", "i1"], STREAM),
              ("cb", "dataflow.stream", ["i32"] * 3, ["i32", "i1"], STREAM),
              ("inv", "dataflow.invariant", ["i1", "i32"], ["i32"], {}),
              ("gate", "dataflow.gate", ["i1", "i32"], ["i1", "i32"], {}),
              ("add", "arith.addi", ["i32", "i32"], ["i32"], {})]
    edges = [("ca.1", "inv.0"), ("cb.1", "gate.0"), ("inv.0", "gate.1"), ("gate.1", "add.0")]
    inputs = [("start", ["ca.0", "cb.0"], [0]), ("limit", ["ca.1", "cb.1"], [len(xs)]),
              ("step", ["ca.2", "cb.2"], [1]), ("s", ["inv.1"], [s]), ("x", ["add.1"], list(xs))]
    outputs = [("y", "add.0"), ("more", "gate.0"), ("ia", "ca.0"), ("ib", "cb.0")]
    return actors, edges, inputs, outputs


def vector_pipeline(elements, lanes=4, every=3):
    """parallelize -> vector add (x + x) -> serialize into a consumer ready every `every` cycles.

    A serialize close consumes only its phase, so the terminating group's vector and mask are
    routed away by demuxes on group_phase (true: to serialize, false: to a drop output)."""
    v, m = f"vector<{lanes}xi16>", f"vector<{lanes}xi1>"
    actors = [("par", "dataflow.parallelize", ["i16", "i1"], [v, m, "i1"], {}),
              ("vadd", "arith.addi", [v, v], [v], {}),
              ("dv", "dataflow.demux", ["i1", v], [v, v], {}),
              ("dm", "dataflow.demux", ["i1", m], [m, m], {}),
              ("ser", "dataflow.serialize", [v, m, "i1"], ["i16", "i1"], {})]
    edges = [("par.0", "vadd.0"), ("par.0", "vadd.1"), ("vadd.0", "dv.1"), ("par.1", "dm.1"),
             ("par.2", "dv.0"), ("par.2", "dm.0"), ("par.2", "ser.2"), ("dv.1", "ser.0"), ("dm.1", "ser.1")]
    inputs = [("e", ["par.0"], list(elements)), ("phase", ["par.1"], [1] * len(elements) + [0])]
    outputs = [("out", "ser.0", every), ("out_phase", "ser.1", every), ("drop_v", "dv.0"), ("drop_m", "dm.0")]
    return actors, edges, inputs, outputs, ["par.1", "ser.1", "ser.2"]


def add_sub(xs, ys, width=16):
    """s = x + y and d = x - y (modulo 2^width): two actors of one ScalarIntegerAddSub family,
    which `fabric.sim.synth.temporal_pe` puts in contexts 0 and 1 of one temporal-PE resource."""
    t = f"i{width}"
    actors = [("add", "arith.addi", [t, t], [t], {}), ("sub", "arith.subi", [t, t], [t], {})]
    inputs = [("x", ["add.0", "sub.0"], list(xs)), ("y", ["add.1", "sub.1"], list(ys))]
    return actors, [], inputs, [("s", "add.0"), ("d", "sub.0")]
