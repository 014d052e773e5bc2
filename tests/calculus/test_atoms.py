"""Atom refinement (seed 002): an atom replaces a matching semantic subgraph under its value,
layout, convergence, effect and arithmetic contract; a collective atom refines a whole subgraph
(here: every per-PE multiply and the cross-PE reduction, as one all-reduce)."""
import numpy as np
import pytest

from emulator import Machine
from emulator.calculus import builder as B
from emulator.calculus.atoms import AtomContract, tile_cells
from emulator.calculus.domains import FiniteDomain, IndexMap
from emulator.calculus.plan import Plan, Step, check_plan, source_events

F32 = np.float32


def allreduce_program(policy):
    prog = B.program(B.seq(
        B.parallel([("pe", 4)], B.block("BSTART.VEC TMUL, FP32\n B.IOT t1@${1 << pe}, t2@${1 << pe} -> t5@${1 << pe}\n"
                                        " B.DIM LB0=4, LB1=2")),
        B.reduce([("pe", 4)], B.tile(0, 9), B.tile("pe", 5), "TADD", policy=policy)))
    m = Machine()
    for p in range(4):
        for t in (1, 2):
            m.write_tile(p, t, "FP32", np.full((2, 4), p + t, F32).view(np.uint32))
    m.write_tile(0, 9, "FP32", np.zeros((2, 4), np.uint32))
    return prog, m


def atom(**kw):
    reads = {f"tile:m0:pe{p}:t{t}": tile_cells(2, 4) for p in range(4) for t in (1, 2)}
    reads["tile:m0:pe0:t9"] = tile_cells(2, 4)
    writes = {f"tile:m0:pe{p}:t5": tile_cells(2, 4) for p in range(4)}
    writes["tile:m0:pe0:t9"] = tile_cells(2, 4)
    spec = dict(name="allreduce", reads=reads, writes=writes, participants=[0, 1, 2, 3],
                arithmetic={"$.body.seq[1]": "unordered_tree"})
    spec.update(kw)
    return AtomContract(**spec)


def whole(prog, m, a):
    evs = source_events(prog, machines=[m])
    return check_plan(prog, Plan([Step("atom", [e.ordinal for e in evs], atom=a)]), machines=[m])


def test_a_collective_atom_refines_the_whole_subgraph():
    prog, m = allreduce_program("unordered_tree")
    assert whole(prog, m, atom())


@pytest.mark.parametrize("policy,realized,ok", [
    ("unordered_tree", "unordered_tree", True), ("unordered_tree", "fold_left", True),
    ("ordered_tree", "unordered_tree", False), ("fold_left", "unordered_tree", False),
    ("fold_left", "fold_left", True), ("fold_right", "ordered_tree", False),
])
def test_its_arithmetic_must_stay_within_the_source_policy(policy, realized, ok):
    prog, m = allreduce_program(policy)
    v = whole(prog, m, atom(arithmetic={"$.body.seq[1]": realized}))
    assert bool(v) == ok, v
    if not ok:
        assert v.obligation == "arithmetic contract" and f"admits computations its {policy} policy does not" in v.detail


def test_atom_contract_obligations():
    prog, m = allreduce_program("unordered_tree")
    a = atom()
    partial = dict(a.writes)
    partial["tile:m0:pe0:t9"] = tile_cells(1, 4)
    v = whole(prog, m, atom(writes=partial))
    assert v.obligation == "effect contract" and "PE0 tile t9 element [1, 0]" in v.detail
    more = dict(a.writes)
    more["tile:m0:pe1:t9"] = tile_cells(2, 4)
    v = whole(prog, m, atom(writes=more))
    assert v.obligation == "effect contract" and "also writes" in v.detail
    fewer = {k: v_ for k, v_ in a.reads.items() if k != "tile:m0:pe3:t2"}
    v = whole(prog, m, atom(reads=fewer))
    assert v.obligation == "value contract" and "PE3 tile t2" in v.detail
    v = whole(prog, m, atom(participants=[0, 1, 2]))
    assert v.obligation == "convergence" and "participant [3] runs a member" in v.detail
    v = whole(prog, m, atom(participants=[0, 1, 2, 3, 4]))
    assert v.obligation == "convergence" and "needs participant [4] converged" in v.detail
    assert whole(prog, m, atom(converged=False)).obligation == "convergence"
    v = whole(prog, m, atom(arithmetic={}))
    assert v.obligation == "arithmetic contract" and "says nothing of how it merges" in v.detail
    assert whole(prog, m, atom(arithmetic={"$.body.seq[1]": "unordered_tree", "exact": False})).obligation == \
        "arithmetic contract"
    assert whole(prog, m, "allreduce").obligation == "well-typed atom"
    assert whole(prog, m, atom(reads={"tile:m0:pe0:t1": [-1]})).obligation == "well-typed atom"


def test_an_atom_on_a_non_convex_subgraph_breaks_an_order():
    """Members around an outside event: the atom cannot run both before and after it."""
    prog = B.program(B.seq(B.op("a[0] = x[0] + 1"), B.op("b[0] = a[0] * 2"), B.op("c[0] = b[0] + a[0]")),
                     arrays={"x": B.array([1], init=[1]), "a": B.array([1]), "b": B.array([1]), "c": B.array([1])})
    convex = AtomContract("fma", reads={"x": [0]}, writes={"a": [0], "b": [0]})
    assert check_plan(prog, Plan([Step("atom", [0, 1], atom=convex), Step("serial", [2])]))
    around = AtomContract("two", reads={"x": [0], "b": [0]}, writes={"a": [0], "c": [0]})
    v = check_plan(prog, Plan([Step("atom", [0, 2], atom=around), Step("serial", [1])]))
    assert v.obligation == "dependences preserved"


def test_layout_contract():
    prog = B.program(B.parallel([("i", 4)], B.op("y[i] = x[i] * 2")),
                     arrays={"x": B.array([4], init=[1, 2, 3, 4]), "y": B.array([4])})
    lanes = FiniteDomain([("l", 4)])
    good = AtomContract("vmul", reads={"x": range(4)}, writes={"y": range(4)},
                        layout={"y": (lanes, IndexMap(("l",), ["3 - l"])), "x": (lanes, IndexMap(("l",), ["l"]))})
    assert check_plan(prog, Plan([Step("atom", [0, 1, 2, 3], atom=good)]))
    twice = AtomContract("vmul", reads={"x": range(4)}, writes={"y": range(4)},
                         layout={"y": (lanes, IndexMap(("l",), ["l // 2"]))})
    v = check_plan(prog, Plan([Step("atom", [0, 1, 2, 3], atom=twice)]))
    assert v.obligation == "layout contract" and "written by 2 lanes" in v.detail
    short = AtomContract("vmul", reads={"x": range(4)}, writes={"y": range(4)},
                         layout={"x": (FiniteDomain([("l", 3)]), IndexMap(("l",), ["l"]))})
    v = check_plan(prog, Plan([Step("atom", [0, 1, 2, 3], atom=short)]))
    assert v.obligation == "layout contract" and "no lane of the input layout reads x[3]" in v.detail
    replicated = AtomContract("vmul", reads={"x": range(4)}, writes={"y": range(4)},
                              layout={"x": (FiniteDomain([("l", 8)]), IndexMap(("l",), ["l % 4"]))})
    assert check_plan(prog, Plan([Step("atom", [0, 1, 2, 3], atom=replicated)]))     # input replicas are fine
    diverged = B.program(B.parallel([("i", 4)], B.if_("x[i] > 2", B.op("y[i] = x[i] * 2"))),
                         arrays={"x": B.array([4], init=[1, 2, 3, 4]), "y": B.array([4], fill=0)})
    evs = source_events(diverged)
    ids = [e.ordinal for e in evs]
    v = check_plan(diverged, Plan([Step("atom", ids, atom=AtomContract("v", reads={"x": range(4), "y": range(4)},
                                                                       writes={"y": range(4)}))]))
    assert v.obligation == "convergence" and "data-dependent predicate" in v.detail


def test_an_atoms_extra_reads_join_the_order():
    prog = B.program(B.seq(B.op("a[0] = 1"), B.op("b[0] = 2"), B.op("a[0] = 3")),
                     arrays={"a": B.array([1]), "b": B.array([1])})
    plain = AtomContract("store", writes={"b": [0]})
    assert check_plan(prog, Plan([Step("serial", [0]), Step("serial", [2]), Step("atom", [1], atom=plain)]))
    peeks = AtomContract("store", reads={"a": [0]}, writes={"b": [0]})         # reads a where op 1 stood
    v = check_plan(prog, Plan([Step("serial", [0]), Step("serial", [2]), Step("atom", [1], atom=peeks)]))
    assert v.obligation == "dependences preserved" and "WAR edge $.body.seq[1]" in v.detail
