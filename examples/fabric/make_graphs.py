"""Regenerate the example dataflow graphs and their configured fabrics (docs/fabric-graph.md):
`python examples/fabric/make_graphs.py` writes <name>.fabric.json and <name>.graph.json here."""
from __future__ import annotations

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from fabric.io import dump, load_document  # noqa: E402
from fabric.sim.synth import configured_fabric, graph_document, temporal_pe  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests" / "fabric"))
# The example graphs are four of the simulator tests' programs, written once there.
from sim_fixtures import add_sub, branch, sum_loop, vector_pipeline  # noqa: E402


def write(name, actors, edges, inputs, outputs, activity_defined=(), temporal=False):
    """temporal: every actor on one operation resource of a temporal PE, actor i in context i."""
    fab = configured_fabric(f"{name}-fabric", actors)
    if temporal:
        temporal_pe(fab, [a[0] for a in actors])
    (HERE / f"{name}.fabric.json").write_text(dump(load_document(fab)))
    g = graph_document(name, f"{name}-fabric", actors, edges, inputs, outputs, activity_defined)
    (HERE / f"{name}.graph.json").write_text(json.dumps(g, indent=1) + "\n")


if __name__ == "__main__":
    write("sum-loop", *sum_loop([3, 1, 4, 1, 5, 9, 2, 6]))
    write("branch", *branch([0, 1, 1, 0], [2, 3, 4, 5]))
    write("vector-pipeline", *vector_pipeline([1, 2, 3, 4, 5, 6]))
    write("temporal", *add_sub([10, 20, 30, 40], [1, 2, 3, 4]), temporal=True)
