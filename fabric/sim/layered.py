"""The simulator's benchmark graph (benchmarks/bench_fabric_sim.py, `tile-emu bench --case fabric`):
1,000 one-cycle elastic actors in 125 layers of 8, op j of layer L combining ops j and j+1 of
layer L - 1 (every result broadcast to two consumers), fed by 8 input streams; in steady state
every actor fires every cycle.  Two kinds: i32 add/xor and f32 add/mul.

`functional(kind, streams)` is the plain-NumPy baseline: the values the graph's outputs carry,
computed layer by layer without any timing (float32 arithmetic rounds once to nearest even, as
the simulator's kernels.numeric operations do).
"""
from __future__ import annotations

import numpy as np

LAYERS, WIDTH = 125, 8
OPS = {"i32": ("arith.xori", "arith.addi"), "f32": ("arith.mulf", "arith.addf")}


def tokens(kind: str, rng, n: int) -> list:
    """i32: uniform raw bits.  f32: values in [2^-61, 2^-60), which keep every sum and product of
    the 125 layers finite (about half of them become zero): a non-finite operand sends its
    element to kernels.numeric's reference path, whose fixed cost per call would be measured
    instead of the simulator."""
    if kind == "i32":
        return rng.integers(0, 1 << 32, n).tolist()
    return rng.uniform(2.0 ** -61, 2.0 ** -60, n).astype(np.float32).view(np.uint32).tolist()


def layered_graph(kind: str = "i32", layers: int = LAYERS, width: int = WIDTH, length: int = 2000):
    from ..io import load_document
    from .graph import load_graph_document

    fab_doc, graph_doc = layered_documents(kind, layers, width, length)
    return load_graph_document(graph_doc, load_document(fab_doc))


def layered_documents(kind: str = "i32", layers: int = LAYERS, width: int = WIDTH, length: int = 2000):
    """(the configured fabric's document, the graph's document) of `layered_graph`: what
    `tile-emu fabric sim GRAPH --fabric FABRIC` reads, once written as JSON."""
    from .synth import configured_fabric, graph_document

    actors, edges = [], []
    for L in range(layers):
        for j in range(width):
            actors.append((f"n{L}_{j}", OPS[kind][(L + j) % 2], [kind, kind], [kind], {}))
            if L:
                edges += [(f"n{L - 1}_{j}.0", f"n{L}_{j}.0"), (f"n{L - 1}_{(j + 1) % width}.0", f"n{L}_{j}.1")]
    rng = np.random.default_rng(0)
    inputs = [(f"x{j}", [f"n0_{j}.0", f"n0_{(j - 1) % width}.1"], tokens(kind, rng, length)) for j in range(width)]
    outputs = [(f"y{j}", f"n{layers - 1}_{j}.0") for j in range(width)]
    return (configured_fabric("layered-fabric", actors),
            graph_document("layered", "layered-fabric", actors, edges, inputs, outputs))


def streams(g, kind: str, instances: int, length: int) -> list:
    """Each instance's own input tokens."""
    return [{n: tokens(kind, np.random.default_rng(b + 1), length) for n, _, _ in g.inputs} for b in range(instances)]


def functional(kind: str, xs: np.ndarray, layers: int = LAYERS) -> np.ndarray:
    """The output values for input rows xs [width, n] (raw bits), layer by layer in NumPy."""
    width = xs.shape[0]
    if kind == "i32":
        v = xs.astype(np.uint32)
        ops = (np.bitwise_xor, np.add)
    else:
        v = xs.astype(np.uint32).view(np.float32)
        ops = (np.multiply, np.add)
    for L in range(layers):
        a, b = v, np.roll(v, -1, axis=0)             # op j takes ops j and j + 1 of the layer before
        odd = np.array([(L + j) % 2 for j in range(width)], bool)[:, None]
        v = np.where(odd, ops[1](a, b), ops[0](a, b))
    return v


def bench_setup(kind: str, instances: int = 1):
    """A `tile-emu bench` case: n actor-cycles (rounded down to whole cycles of every instance,
    at least one) of the compiled engine in steady state - from a snapshot taken once the
    pipeline has filled - against NumPy computing the same outputs layer by layer (no timing)."""
    def setup(n: int):
        from .engine import Simulator
        g = layered_graph(kind, length=16)
        cycles = max(1, n // (len(g.actors) * instances))
        st = streams(g, kind, instances, cycles + 2 * LAYERS)
        xs = np.array([[s[name] for name, _, _ in g.inputs] for s in st], np.uint64)   # [B, width, length]
        sim = Simulator(g, "compiled", streams=st)
        sim.run_all(LAYERS + 2)
        full = sim.snapshot()

        def ours():
            sim.restore(full)
            sim.run_all(full[0] + cycles)

        def base():
            for b in range(instances):
                functional(kind, xs[b][:, :cycles])
        return ours, base
    return setup
