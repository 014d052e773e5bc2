"""DESIGN.md, "The batched engine": the single-machine reference is the oracle and stays simple;
dependencies point one way -- the batch engine uses the reference's rules, the reference never
reaches the engine, and nothing reaches it by a string import.  Read from the modules' own
import statements (module level and inside functions alike)."""
import ast
import pathlib

import numpy as np

from emu_helpers import blk
from emulator import Machine, MachineConfig
from emulator.reference import ReferenceMachine

EMULATOR = pathlib.Path(__file__).resolve().parents[2] / "emulator"


def imported(module: str) -> set[str]:
    """The emulator modules `module` (a file of emulator/) imports, anywhere in it."""
    tree = ast.parse((EMULATOR / f"{module}.py").read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names |= {node.module} if node.module else {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("emulator."):
            names.add(node.module.split(".")[1])
    return names


def test_the_reference_imports_no_engine_and_no_public_face():
    assert not imported("reference") & {"engine", "machine", "batch", "backends", "fusion", "calculus"}
    assert not imported("semantics") & {"reference", "engine", "machine", "batch"}
    assert not imported("preflight") & {"reference", "engine", "machine", "batch", "semantics"}


def test_the_engine_uses_the_reference_and_imports_neither_public_face():
    assert "reference" in imported("engine")
    assert not imported("engine") & {"machine", "batch"}
    assert not imported("backends") & {"reference", "engine", "machine", "batch"}


def test_no_module_of_the_machine_imports_a_project_module_by_name_in_a_string():
    for module in ("reference", "engine", "machine", "batch", "backends", "semantics", "preflight"):
        tree = ast.parse((EMULATOR / f"{module}.py").read_text())
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and getattr(n.func, "attr", getattr(n.func, "id", None)) in ("import_module", "__import__")]
        assert not calls, module


def test_a_public_machine_on_the_reference_is_the_reference_machine_itself():
    m = Machine()
    assert isinstance(m, ReferenceMachine) and m.backend == "reference" and m._runner().planner is None


def test_the_reference_reads_its_tiles_as_they_are_and_keeps_no_plan():
    """The reference stacks a block's sources afresh each time (no tile re-pointed, nothing
    kept); the engine's host path (backend cpu) re-points them at one stack, same state."""
    data = (np.random.default_rng(0).random((4, 2, 2, 8), dtype=np.float32) + 1).view(np.uint32)
    ref, fast = Machine(MachineConfig()), Machine(MachineConfig(), backend="cpu")
    for m in (ref, fast):
        for p in range(4):
            for t in (1, 2):
                m.write_tile(p, t, "FP32", data[p, t - 1])
    before = [dict(pe.tiles) for pe in ref.pes]
    block = blk("TADD", "FP32", [1, 2], 3, mask=15, vc=8, vr=2)
    for _ in range(2):
        ref.execute(block)
        fast.execute(block)
    assert all(ref.pes[p].tiles[t] is before[p][t] for p in range(4) for t in (1, 2))
    assert all(fast.pes[p].tiles[1].stack is not None for p in range(4))
    assert not hasattr(ref, "_last") and not hasattr(ref, "_plan")
    for p in range(4):
        for t in (1, 2, 3):
            a, b = ref.read_tile(p, t), fast.read_tile(p, t)
            assert a.payload == b.payload and np.array_equal(a.defined, b.defined)
