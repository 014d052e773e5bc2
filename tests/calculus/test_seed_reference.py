"""The seed's finite reference tests: task-product associativity, exact coverage, prefix
preservation, fusion, reduction ordering and version lifetimes -- examples and counterexamples."""
import itertools

import pytest

from emulator.calculus import builder as B
from emulator.calculus import reduction as R
from emulator.calculus import InterferenceError, run
from emulator.calculus.domains import FiniteDomain, IndexMap
from emulator.calculus.functions import BUILTINS
from emulator.calculus.taskmap import TaskMapping, product, repeat, spatial
from emulator.calculus.witnesses import (BindWitness, Cut, FusionWitness, ReindexWitness, apply_fusion,
                                         check_bind, check_reindex, check_scope_fusion, check_split_fuse,
                                         check_versioning, fuse, pipeline_versions, split)

# ---- task product -----------------------------------------------------------------------------

ATOMS = [spatial(2), repeat(3), spatial(1, 2), repeat(2, 1), spatial(3)]


def reference_product(f: TaskMapping, h: TaskMapping):
    """(f ⊗ h)(w) = [x*d2 + y | x in f(w div n2), y in h(w mod n2)], written out independently."""
    table = []
    for w in range(f.workers * h.workers):
        tasks = []
        for x in f(w // h.workers):
            for y in h(w % h.workers):
                tasks.append(tuple(xi * di + yi for xi, di, yi in zip(x, h.shape, y)))
        table.append(tuple(tasks))
    return tuple(table)


def same_rank(*ms):
    return len({len(m.shape) for m in ms}) == 1


@pytest.mark.parametrize("f,h", [(f, h) for f in ATOMS for h in ATOMS if same_rank(f, h)])
def test_task_product_definition_shape_and_worker_laws(f, h):
    p = product(f, h)
    assert p.table() == reference_product(f, h)
    assert p.shape == tuple(a * b for a, b in zip(f.shape, h.shape))
    assert p.workers == f.workers * h.workers


@pytest.mark.parametrize("f,g,h", [t for t in itertools.product(ATOMS, repeat=3) if same_rank(*t)])
def test_task_product_is_associative(f, g, h):
    assert product(product(f, g), h) == product(f, product(g, h))


def test_task_product_is_not_commutative():
    a, b = spatial(2), repeat(3)
    assert product(a, b).table() == (((0,), (1,), (2,)), ((3,), (4,), (5,)))   # blocked
    assert product(b, a).table() == (((0,), (2,), (4,)), ((1,), (3,), (5,)))   # cyclic
    assert product(a, b) != product(b, a)


def test_products_of_spatial_and_repeat_cover_their_shape_exactly_once():
    for f, g, h in itertools.product([spatial(2), repeat(2), spatial(3), repeat(3)], repeat=3):
        missing, dup = product(product(f, g), h).coverage()
        assert missing == [] and dup == []


def test_a_task_product_is_a_bind_witness():
    # 12 independent instances on 4 workers, 3 ordered local tasks each
    dom = FiniteDomain([("t", 12)])
    assert check_bind(BindWitness(dom, spatial(4) * repeat(3), workers=4))
    v = check_bind(BindWitness(dom, spatial(4) * repeat(3), workers=2))
    assert v.obligation == "target containment"


# ---- exact coverage ---------------------------------------------------------------------------

@pytest.mark.parametrize("N,b", [(n, b) for n in range(0, 13) for b in range(1, 6)])
def test_split_covers_every_occurrence_exactly_once(N, b):
    w = split(N, b)
    assert check_split_fuse(w), check_split_fuse(w)
    # independent check: the guarded (q, r) box enumerates 0..N-1 once each
    hits = [q * b + r for q in range(-(-N // b)) for r in range(b) if q * b + r < N]
    assert sorted(hits) == list(range(N))


def test_split_counterexamples_lose_or_duplicate_occurrences():
    assert check_split_fuse(split(10, 4, guard=False)).obligation == "exact active coverage"   # i = 10, 11 run
    assert check_split_fuse(split(10, 4, Q=2)).obligation == "exact active coverage"          # i = 8, 9 lost
    assert check_split_fuse(split(10, 0)).obligation == "positive factor"
    # a generic (non-closed-form) map that is not injective
    w = split(8, 4)
    w.form, w.tau = None, IndexMap(("q", "r"), ["r * 2"])
    v = check_split_fuse(w)
    assert v.obligation == "exact active coverage" and "not injective" in v.detail


def test_fuse_coverage_and_integer_representability():
    assert check_split_fuse(fuse(1 << 15, 1 << 16))              # k < 2^31
    v = check_split_fuse(fuse(1 << 16, 1 << 16))
    assert v.obligation == "integer representability" and "int32" in v.detail
    assert check_split_fuse(fuse(1 << 16, 1 << 16, index_bits=64))


# ---- prefix preservation ----------------------------------------------------------------------

def test_identity_preserving_remaps_factor_through_observed_prefixes():
    old = FiniteDomain([("b", 2), ("t", 6)])                     # block b, thread t; the block is observed
    # split the thread axis: (b, w, l) -> (b, w*3 + l): the block prefix is untouched
    new = FiniteDomain([("b", 2), ("w", 2), ("l", 3)])
    tau = IndexMap(("b", "w", "l"), ["b", "w * 3 + l"])
    assert check_reindex(ReindexWitness(old, new, tau, (Cut(1, 1, IndexMap(("b",), ["b"])),)))
    # flattening (b, t) into one axis and re-splitting differently moves occurrences across blocks
    new2 = FiniteDomain([("u", 3), ("v", 4)])
    tau2 = IndexMap(("u", "v"), ["(u * 4 + v) // 6", "(u * 4 + v) % 6"])
    assert check_reindex(ReindexWitness(old, new2, tau2))        # a bijection: fine when nothing is observed
    v = check_reindex(ReindexWitness(old, new2, tau2, (Cut(1, 1),)))
    assert v.obligation == "observed-cut factorisation (cut 1)"
    # equal cardinalities are not enough: new rows u=0 and u=1 both land (partly) in block 0
    assert "new prefixes (u=0) and (u=1) both map to old prefix (b=0)" in v.detail


def test_a_permutation_of_an_observed_prefix_must_be_bijective_on_prefixes():
    old = FiniteDomain([("i", 3), ("j", 2)])
    new = FiniteDomain([("a", 3), ("j", 2)])
    perm = IndexMap(("a", "j"), ["perm[a]", "j"], params={"perm": (2, 0, 1)})
    assert check_reindex(ReindexWitness(old, new, perm, (Cut(1, 1, IndexMap(("a",), ["perm[a]"], {"perm": (2, 0, 1)})),)))
    wrong = IndexMap(("a",), ["a"])
    v = check_reindex(ReindexWitness(old, new, perm, (Cut(1, 1, wrong),)))
    assert v.obligation == "observed-cut factorisation (cut 1)" and "pi_1(tau" in v.detail


# ---- fusion -----------------------------------------------------------------------------------

def two_scopes(consumer_index: str):
    return B.program(
        B.seq(B.parallel([("i", "N")], B.op("tmp[i] = x[i] * 3")),
              B.parallel([("i", "N")], B.op(f"out[i] = tmp[{consumer_index}] + 1"))),
        params={"N": 5},
        arrays={"x": B.array([5], init=[1, 2, 3, 4, 5]), "tmp": B.array([5], fill=0), "out": B.array([5])})


def test_pointwise_fusion_is_admitted_and_preserves_results():
    prog = two_scopes("i")
    w = FusionWitness("$.body.seq[0]", "$.body.seq[1]", "parallel")
    assert check_scope_fusion(prog, w)
    fused = apply_fusion(prog, w)
    assert run(fused, validate=True).arrays == run(prog).arrays


def test_a_cross_instance_dependence_rejects_pointwise_fusion():
    prog = two_scopes("(i + 1) % N")
    w = FusionWitness("$.body.seq[0]", "$.body.seq[1]", "parallel")
    v = check_scope_fusion(prog, w)
    assert v.obligation == "Dep_AB ⊆ diagonal"
    assert "RAW edge $.body.seq[0] (i=1) -> $.body.seq[1] (i=0) on tmp[1]" in v.detail
    # both scopes are individually independent; the fused program is not
    assert run(prog, validate=True)
    fused = apply_fusion(prog, w)
    assert run(fused).arrays != run(prog).arrays
    with pytest.raises(InterferenceError):
        run(fused, validate=True)


def test_serial_fusion_needs_every_cross_edge_to_go_forward():
    def prog(idx):
        return B.program(
            B.seq(B.serial([("i", 4)], B.op("tmp[i] = x[i] + 1")),
                  B.serial([("i", 4)], B.op(f"out[i] = tmp[{idx}]"))),
            arrays={"x": B.array([4], init=[1, 2, 3, 4]), "tmp": B.array([4]), "out": B.array([4])})
    w = FusionWitness("$.body.seq[0]", "$.body.seq[1]", "serial")
    assert check_scope_fusion(prog("i"), w)
    assert check_scope_fusion(prog("(i + 3) % 4 * (i > 0)"), w)   # reads tmp[i-1] (or tmp[0]): i' <= i
    v = check_scope_fusion(prog("(i + 1) % 4"), w)                 # reads tmp[i+1]: produced later
    assert v.obligation == "cross edges i <= j"
    for idx in ("i", "(i + 3) % 4 * (i > 0)"):
        assert run(apply_fusion(prog(idx), w)).arrays == run(prog(idx)).arrays


# ---- reduction ordering -----------------------------------------------------------------------

def test_left_and_right_folds_differ_for_a_noncommutative_merge():
    concat = BUILTINS["concat"]
    assert R.fold_left(concat, "s", ["x", "y"]) == "sxy"
    assert R.fold_right(concat, "s", ["x", "y"]) == "xys"


def test_float_add_under_the_tree_policy_admits_reordered_results():
    fadd = BUILTINS["fadd"]
    xs = [1.0, 1e100, 1.0, -1e100]
    in_order = (((0.0 + 1.0) + 1e100) + 1.0) + -1e100           # 0.0
    reordered = ((0.0 + 1e100) + -1e100) + (1.0 + 1.0)          # 2.0
    assert in_order != reordered
    assert R.admits("unordered_tree", fadd, 0.0, xs, in_order)
    assert R.admits("unordered_tree", fadd, 0.0, xs, reordered)
    assert not R.admits("fold_left", fadd, 0.0, xs, reordered)


# ---- version lifetimes ------------------------------------------------------------------------

@pytest.mark.parametrize("distance,stages,versions,ok", [
    (0, 1, 1, False),   # produce at n, read at n+1 cycles later, one slot: overwritten at n+1
    (0, 1, 2, True),
    (0, 2, 2, False),
    (0, 2, 3, True),
    (1, 1, 2, False),   # read by the next iteration's stage 1
    (1, 1, 3, True),
])
def test_version_slots_must_outlive_every_use(distance, stages, versions, ok):
    w = pipeline_versions(8, producer_stage=0, consumer_stage=stages, distance=distance, versions=versions)
    v = check_versioning(w)
    assert bool(v) == ok, v
    if not ok:
        assert v.obligation == "version lifetimes"
    # independent reference: value i lives [i, i + distance + stages]; slot i mod V is rewritten at i + V
    assert ok == all(i + versions > i + distance + stages for i in range(8 - distance))
