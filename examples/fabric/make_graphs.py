"""Regenerate the example dataflow graphs and their configured fabrics (docs/fabric-graph.md):
`python examples/fabric/make_graphs.py` writes <name>.fabric.json and <name>.graph.json here."""
from __future__ import annotations

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from fabric.io import dump, load_document  # noqa: E402
from fabric.sim.synth import configured_fabric, graph_document  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
STREAM = {"step_kind": "add", "predicate": "slt"}


def sum_loop():
    """sum = x0 + ... + x(n-1): one recurrence per cycle (carry -> gate -> add -> carry)."""
    actors = [("cnt", "dataflow.stream", ["i32"] * 3, ["i32", "i1"], STREAM),
              ("cnt2", "dataflow.stream", ["i32"] * 3, ["i32", "i1"], STREAM),
              ("acc", "dataflow.carry", ["i1", "i32", "i32"], ["i32"], {}),
              ("gate", "dataflow.gate", ["i1", "i32"], ["i1", "i32"], {}),
              ("add", "arith.addi", ["i32", "i32"], ["i32"], {}),
              ("split", "dataflow.demux", ["i1", "i32"], ["i32", "i32"], {})]
    edges = [("cnt.1", "gate.0"), ("cnt2.1", "acc.0"), ("acc.0", "gate.1"), ("gate.1", "add.0"),
             ("add.0", "acc.2"), ("add.0", "split.1"), ("gate.0", "split.0")]
    inputs = [("start", ["cnt.0", "cnt2.0"], [0]), ("limit", ["cnt.1", "cnt2.1"], [8]),
              ("step", ["cnt.2", "cnt2.2"], [1]), ("zero", ["acc.1"], [0]), ("x", ["add.1"], [3, 1, 4, 1, 5, 9, 2, 6])]
    outputs = [("sum", "split.0"), ("partial", "split.1"), ("i", "cnt.0"), ("i2", "cnt2.0")]
    return actors, edges, inputs, outputs


def branch():
    """y = x * x where s is 0, x + x where s is 1: a runtime demux, two ops, a runtime mux."""
    actors = [("split", "dataflow.demux", ["i1", "i16"], ["i16", "i16"], {}),
              ("sq", "arith.muli", ["i16", "i16"], ["i16"], {}),
              ("dbl", "arith.addi", ["i16", "i16"], ["i16"], {}),
              ("join", "dataflow.mux", ["i1", "i16", "i16"], ["i16"], {})]
    edges = [("split.0", "sq.0"), ("split.0", "sq.1"), ("split.1", "dbl.0"), ("split.1", "dbl.1"),
             ("sq.0", "join.1"), ("dbl.0", "join.2")]
    inputs = [("s", ["split.0", "join.0"], [0, 1, 1, 0]), ("x", ["split.1"], [2, 3, 4, 5])]
    return actors, edges, inputs, [("y", "join.0")]


def vector_pipeline():
    """parallelize -> vector add -> serialize, with a consumer that accepts every third cycle."""
    v, m = "vector<4xi16>", "vector<4xi1>"
    actors = [("par", "dataflow.parallelize", ["i16", "i1"], [v, m, "i1"], {}),
              ("vadd", "arith.addi", [v, v], [v], {}),
              ("dv", "dataflow.demux", ["i1", v], [v, v], {}),
              ("dm", "dataflow.demux", ["i1", m], [m, m], {}),
              ("ser", "dataflow.serialize", [v, m, "i1"], ["i16", "i1"], {})]
    edges = [("par.0", "vadd.0"), ("par.0", "vadd.1"), ("vadd.0", "dv.1"), ("par.1", "dm.1"),
             ("par.2", "dv.0"), ("par.2", "dm.0"), ("par.2", "ser.2"), ("dv.1", "ser.0"), ("dm.1", "ser.1")]
    inputs = [("e", ["par.0"], [1, 2, 3, 4, 5, 6]), ("phase", ["par.1"], [1, 1, 1, 1, 1, 1, 0])]
    outputs = [("out", "ser.0", 3), ("out_phase", "ser.1", 3), ("drop_v", "dv.0"), ("drop_m", "dm.0")]
    return actors, edges, inputs, outputs, ["par.1", "ser.1", "ser.2"]


def write(name, actors, edges, inputs, outputs, activity_defined=()):
    fab = configured_fabric(f"{name}-fabric", actors)
    (HERE / f"{name}.fabric.json").write_text(dump(load_document(fab)))
    g = graph_document(name, f"{name}-fabric", actors, edges, inputs, outputs, activity_defined)
    (HERE / f"{name}.graph.json").write_text(json.dumps(g, indent=1) + "\n")


if __name__ == "__main__":
    write("sum-loop", *sum_loop())
    write("branch", *branch())
    write("vector-pipeline", *vector_pipeline())
