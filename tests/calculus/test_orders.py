"""Strength is a product order, witnesses compose (law 2), and re-homing across an identity cut
(seed 002).  Linear extensions are enumerated here by brute force over permutations, the
reference the closure inclusion is checked against."""
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator.calculus.domains import FiniteDomain, IndexMap
from emulator.calculus.orders import StrengthWitness, check_strengthening, compare
from emulator.calculus.refine import (Contract, Refinement, RehomeWitness, Resource, check_composition,
                                      check_rehome, compose_reindex)
from emulator.calculus.witnesses import Cut, ReindexWitness, check_reindex, split


def extensions(n, edges):
    return {p for p in itertools.permutations(range(n))
            if all(p.index(a) < p.index(b) for a, b in edges)}


dags = st.integers(2, 6).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda e: e[0] < e[1]), max_size=8),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda e: e[0] < e[1]), max_size=8)))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(dags)
def test_closure_inclusion_is_linear_extension_reverse_inclusion(case):
    n, h1, h2 = case
    rel = compare(n, h1, h2)
    e1, e2 = extensions(n, h1), extensions(n, h2)
    assert rel == {(True, True): "equal", (True, False): "weaker", (False, True): "stronger",
                   (False, False): "incomparable"}[(e2 <= e1, e1 <= e2)]


def test_unordered_is_weakest_total_is_maximal_and_pipeline_orders_may_be_incomparable():
    n = 4
    total = [(0, 1), (1, 2), (2, 3)]
    assert compare(n, [], total) == "weaker" and compare(n, total, []) == "stronger"
    # a two-stage pipeline of two iterations: events A0 B0 A1 B1 = 0 1 2 3; required A_i -> B_i.
    # One schedule also orders B0 -> A1 (no overlap), another A1 -> B0 (overlap): incomparable
    no_overlap, overlap = [(0, 1), (2, 3), (1, 2)], [(0, 1), (2, 3), (2, 1)]
    assert compare(n, no_overlap, overlap) == "incomparable"
    assert extensions(n, no_overlap) & extensions(n, overlap) == set()


def test_adding_order_must_stay_acyclic_keep_observable_edges_and_be_implementable():
    src = [(0, 1), (2, 3)]
    assert check_strengthening(StrengthWitness(4, src, src + [(1, 2)]))
    v = check_strengthening(StrengthWitness(4, src, src + [(1, 2), (3, 0)]))
    assert v.obligation == "acyclic" and "event 0 before event 1 before event 2 before event 3 before event 0" in v.detail
    v = check_strengthening(StrengthWitness(4, src, [(0, 1)]))
    assert v.obligation == "observable edges kept" and "event 2 before event 3" in v.detail
    # on one participant the local order must agree; across participants the target must synchronize
    one = dict(participant=[0, 0, 0, 0])
    assert check_strengthening(StrengthWitness(4, src, src + [(1, 2)], time=[0, 1, 2, 3], **one))
    v = check_strengthening(StrengthWitness(4, src, src + [(1, 2)], time=[0, 1, 3, 2], **one))
    assert v.obligation == "implementable" and "local times 3 and 2" in v.detail
    two = dict(participant=[0, 0, 1, 1], time=[0, 1, 0, 1])
    assert check_strengthening(StrengthWitness(4, src, src + [(1, 2)], **two))
    v = check_strengthening(StrengthWitness(4, src, src + [(1, 2)], sync="none", **two))
    assert v.obligation == "implementable" and "synchronizes no participants" in v.detail


def test_two_participants_waiting_on_each_other_are_not_implementable():
    # p0 runs 0 then 1, p1 runs 2 then 3; the schedule asks 1 before 2 and 3 before 0: acyclic as
    # a schedule, a deadlock once each participant's local order is added
    two = dict(participant=[0, 0, 1, 1], time=[0, 1, 0, 1])
    v = check_strengthening(StrengthWitness(4, [], [(1, 2), (3, 0)], **two))
    assert v.obligation == "implementable" and "wait on each other" in v.detail
    assert extensions(4, [(1, 2), (3, 0), (0, 1), (2, 3)]) == set()
    v = check_strengthening(StrengthWitness(3, [], [], participant=[0, 0, 1], time=[4, 4, 0]))
    assert v.obligation == "implementable" and "event 0 and event 1 both at local time 4" in v.detail


placed = st.integers(2, 5).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda e: e[0] < e[1]), max_size=5),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda e: e[0] != e[1]), max_size=6),
    st.lists(st.integers(0, 1), min_size=n, max_size=n), st.lists(st.integers(0, 3), min_size=n, max_size=n),
    st.sampled_from(["barrier", "none"])))


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(placed)
def test_strengthening_agrees_with_brute_force_linear_extensions(case):
    """The reference, from the seed's sentences and permutations enumerated here: the schedule
    has a linear extension (acyclic); each of its extensions is one of the source's (observable
    edges kept); some extension runs every participant's events in their local time order, no
    participant runs two events at one time, and with sync "none" no two events of different
    participants are ordered in every extension (implementable)."""
    n, src, sched, part, time, sync = case
    ext, ext_src = extensions(n, sched), extensions(n, src)
    local = [(a, b) for a in range(n) for b in range(n) if part[a] == part[b] and time[a] < time[b]]
    always = lambda a, b: all(p.index(a) < p.index(b) for p in ext)             # noqa: E731
    if not ext:
        want = "acyclic"
    elif not ext <= ext_src:
        want = "observable edges kept"
    elif (any(part[a] == part[b] and time[a] == time[b] for a in range(n) for b in range(a + 1, n))
          or not extensions(n, sched + local)
          or (sync == "none" and any(part[a] != part[b] and always(a, b) for a in range(n) for b in range(n)))):
        want = "implementable"
    else:
        want = None
    v = check_strengthening(StrengthWitness(n, src, sched, participant=part, time=time, sync=sync))
    assert (v.obligation if not v else None) == want, (v, want)


@pytest.mark.parametrize("events,source,schedule", [
    (3, None, []), (3, [(0, 5)], []), (3, [(0,)], []), (3, [("a", 1)], []), (-1, [], []), (True, [], []),
    (3, [], 7), (3, [], [(True, 1)]), (3, [(0, 1), (1, 0)], []),
])
def test_malformed_strength_witnesses_are_verdicts(events, source, schedule):
    v = check_strengthening(StrengthWitness(events, source, schedule))
    assert not v and v.obligation == "well-typed witness"


def test_huge_event_counts_are_unknown_not_false():
    v = check_strengthening(StrengthWitness(1 << 20, [], []))
    assert not v.decided and "unknown" in str(v)


# ---- composition (law 2) ---------------------------------------------------------------------

OLD = FiniteDomain([("b", 2), ("t", 6)])
MID = FiniteDomain([("b", 2), ("w", 2), ("l", 3)])
NEW = FiniteDomain([("b", 2), ("l", 3), ("w", 2)])
SPLIT = ReindexWitness(OLD, MID, IndexMap(("b", "w", "l"), ["b", "w * 3 + l"]), (Cut(1, 1),))
SWAP = ReindexWitness(MID, NEW, IndexMap(("b", "l", "w"), ["b", "w", "l"]), (Cut(1, 1),))
C = Contract(frozenset({"y"}), (("$.body.seq[1]", "unordered_tree"),))


def test_two_remaps_compose_by_map_composition():
    assert check_reindex(SPLIT) and check_reindex(SWAP)
    both = compose_reindex(SPLIT, SWAP)
    assert both.tau((1, 2, 1)) == (1, 5)                  # (b, l, w) -> (b, w*3 + l)
    assert check_reindex(both)
    v = check_composition([Refinement(SPLIT, C, C), Refinement(SWAP, C, C)])
    assert v and "1 composite remap(s) checked" in v.detail


def test_composition_refuses_what_does_not_compose():
    mix = ReindexWitness(MID, NEW, IndexMap(("b", "l", "w"), ["(b + l) % 2", "w", "l"]))   # scrambles b
    assert check_reindex(mix)                                     # alone: nothing observed
    v = check_composition([Refinement(SPLIT, C, C), Refinement(mix, C, C)])
    assert v.obligation == "chain" and "does not observe" in v.detail
    tol = Contract(C.effects, C.numerics, tolerance=1e-6)
    v = check_composition([Refinement(SPLIT, C, tol), Refinement(SWAP, tol, tol)])
    assert v.obligation == "no tolerance" and "not a transitive contextual equivalence" in v.detail
    weaker = Contract(C.effects, (("$.body.seq[1]", "unordered_tree"),))
    strict = Contract(C.effects, (("$.body.seq[1]", "fold_left"),))
    v = check_composition([Refinement(split(8, 4), strict, weaker)])
    assert v.obligation == "numerical contract preserved" and "fold_left into unordered_tree" in v.detail
    assert check_composition([Refinement(split(8, 4), weaker, strict)])       # restricting is refinement
    v = check_composition([Refinement(split(8, 4), C, Contract(frozenset(), C.numerics))])
    assert v.obligation == "effect contract preserved" and "loses the observable effect y" in v.detail
    v = check_composition([Refinement(SPLIT, C, C), Refinement(SWAP, strict, strict)])
    assert v.obligation == "chain"
    v = check_composition([Refinement(SPLIT, C, C), Refinement(split(10, 4, guard=False), C, C)])
    assert v.obligation == "steps admitted" and "exact active coverage" in v.detail
    v = check_composition([Refinement(SPLIT, C, C), Refinement(ReindexWitness(OLD, OLD, IndexMap(("b", "t"), ["b", "t"])), C, C)])
    assert v.obligation == "chain" and "old domain" in v.detail
    assert check_composition([]).obligation == "well-typed witness"
    assert check_composition([SPLIT]).obligation == "well-typed witness"


SHAPES = [(("a", 2), ("b", 3)), (("c", 3), ("d", 2)), (("e", 6),), (("f", 2), ("g", 3))]


def points(shape):
    return list(itertools.product(*(range(n) for _, n in shape)))


def remap_is_sound(old, new, table, cuts):
    """The Reindex obligations by enumeration, restated here: the table is a bijection of the
    points, and per observed cut (j, rho) the new rho-prefix determines the old j-prefix,
    distinct new prefixes giving distinct old ones."""
    if sorted(table.values()) != sorted(points(old)) or sorted(table) != sorted(points(new)):
        return False
    for j, rho in cuts:
        pre = {}
        for n, o in table.items():
            if pre.setdefault(n[:rho], o[:j]) != o[:j]:
                return False
        if len(set(pre.values())) != len(pre):
            return False
    return True


# a flat permutation of 6 points: arbitrary, or blocked (block q of 3 to block sigma(q), each
# block permuted within), which keeps a 2 x 3 shape's first coordinate an identity
flat_perms = st.one_of(
    st.permutations(range(6)),
    st.tuples(st.permutations(range(2)), st.permutations(range(3)), st.permutations(range(3))).map(
        lambda t: [3 * t[0][k // 3] + t[1 + k // 3][k % 3] for k in range(6)]))
remaps = st.tuples(st.sampled_from(range(len(SHAPES))), st.sampled_from(range(len(SHAPES))), flat_perms, flat_perms,
                   st.sampled_from([0, 1, 2]), st.sampled_from([0, 1, 2]), st.booleans())


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(remaps)
def test_law_2_remaps_compose_by_map_composition(case):
    """Random bijections old -> mid -> new of 6 points (tables), the first observing old cut j
    (j = 0, 1 or the whole occurrence) at mid prefix rho1, the second observing it (or not) at
    new prefix rho2: each step's verdict, the chain's, and the composite's tau and soundness are
    computed here by enumeration."""
    mi, ni, p1, p2, j, rho2, observe = case
    old, mid, new = SHAPES[0], SHAPES[mi], SHAPES[ni]
    rho1 = min(j, len(mid)) if j < 2 else len(mid)
    rho2 = len(new) if rho1 == len(mid) and rho2 == 2 else min(rho2, len(new))
    t1 = {m: points(old)[p1[k]] for k, m in enumerate(points(mid))}         # tau1: mid -> old
    t2 = {n: points(mid)[p2[k]] for k, n in enumerate(points(new))}         # tau2: new -> mid
    dom = lambda sh: FiniteDomain(list(sh))                                   # noqa: E731
    cut2 = (Cut(rho1, rho2),) if observe else ()
    first = ReindexWitness(dom(old), dom(mid), IndexMap(tuple(a for a, _ in mid), lambda *c: t1[c]), (Cut(j, rho1),))
    second = ReindexWitness(dom(mid), dom(new), IndexMap(tuple(a for a, _ in new), lambda *c: t2[c]), cut2)
    ok1 = remap_is_sound(old, mid, t1, [(j, rho1)])
    ok2 = remap_is_sound(mid, new, t2, [(rho1, rho2)] if observe else [])
    assert bool(check_reindex(first)) == ok1 and bool(check_reindex(second)) == ok2
    v = check_composition([Refinement(first, C, C), Refinement(second, C, C)])
    composite = {n: t1[t2[n]] for n in points(new)}
    if not (ok1 and ok2):
        assert v.obligation == "steps admitted"
    elif not observe:
        assert v.obligation == "chain" and "does not observe" in v.detail
    else:
        # the law's conclusion: the composite is a bijection whose prefix equations commute
        assert remap_is_sound(old, new, composite, [(j, rho2)])
        assert v, v
        both = compose_reindex(first, second)
        assert {n: both.tau(n) for n in points(new)} == composite and [(c.j, c.rho) for c in both.cuts] == [(j, rho2)]


# ---- re-homing across an identity cut ----------------------------------------------------------

# 2 blocks x 6 threads re-laid as 3 rows x 4: rows straddle blocks, so the reindex alone fails
FLAT = FiniteDomain([("u", 3), ("v", 4)])
TAU = IndexMap(("u", "v"), ["(u * 4 + v) // 6", "(u * 4 + v) % 6"])
HOME = IndexMap(("b",), ["b * 2"])                     # block 0 lives on row 0, block 1 on row 2


def test_crossing_an_identity_cut_needs_its_own_refinement():
    v = check_reindex(ReindexWitness(OLD, FLAT, TAU, (Cut(1, 1),)))
    assert v.obligation == "observed-cut factorisation (cut 1)"
    shared = Resource("smem")
    v = check_rehome(RehomeWitness(OLD, FLAT, TAU, 1, 1, HOME, (shared,)))
    assert v.obligation == "resource access served" and "owner (b=0)'s smem from (u=1)" in v.detail
    ok = RehomeWitness(OLD, FLAT, TAU, 1, 1, HOME, (shared,), transfers=(((0,), (1,)), ((1,), (1,))))
    assert check_rehome(ok), check_rehome(ok)


def test_rehoming_obligations():
    written = Resource("acc", written=True)
    v = check_rehome(RehomeWitness(OLD, FLAT, TAU, 1, 1, HOME, (written,), transfers=(((0,), (1,)), ((1,), (1,)))))
    assert v.obligation == "resource effects" and "needs a declared combine" in v.detail
    atomic = Resource("acc", written=True, combine="atomic add")
    assert check_rehome(RehomeWitness(OLD, FLAT, TAU, 1, 1, HOME, (atomic,), transfers=(((0,), (1,)), ((1,), (1,)))))
    v = check_rehome(RehomeWitness(OLD, FLAT, TAU, 1, 1, IndexMap(("b",), ["0"]), ()))
    assert v.obligation == "re-homing map" and "both homed at (u=0)" in v.detail
    v = check_rehome(RehomeWitness(OLD, FLAT, TAU, 1, 1, IndexMap(("b",), ["b * 7"]), ()))
    assert v.obligation == "re-homing map" and "runs no occurrence" in v.detail
    v = check_rehome(RehomeWitness(OLD, FLAT, IndexMap(("u", "v"), ["0", "v"]), 1, 1, HOME, ()))
    assert v.obligation == "active-domain bijection"
    assert check_rehome(RehomeWitness(OLD, FLAT, TAU, 9, 1, HOME, ())).obligation == "well-typed witness"
    v = check_rehome(RehomeWitness(OLD, FLAT, TAU, 1, 1, HOME, (shared_bad := 3,)))
    assert v.obligation == "well-typed witness" and shared_bad == 3
