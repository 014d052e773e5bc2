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


def write(name, actors, edges, inputs, outputs, activity_defined=()):
    fab = configured_fabric(f"{name}-fabric", actors)
    (HERE / f"{name}.fabric.json").write_text(dump(load_document(fab)))
    g = graph_document(name, f"{name}-fabric", actors, edges, inputs, outputs, activity_defined)
    (HERE / f"{name}.graph.json").write_text(json.dumps(g, indent=1) + "\n")


if __name__ == "__main__":
    write("sum-loop", *sum_loop())
