"""The witness checkers that had no test of their own: reduction factorisation (seed 002, law 3)
and the Bind/serialize obligations 'preserved identity' and 'serial order'.

Every admitted factorisation is checked against folding the pieces by hand here (Python's own
integer, string and binary64 arithmetic), every rejected one against a counterexample value."""
import itertools

import pytest

from emulator.calculus.domains import FiniteDomain, IndexMap
from emulator.calculus.witnesses import (BindWitness, MergeTreeWitness, ReductionWitness, check_bind, check_merge_tree,
                                         check_reduction)


def fold(op, seed, xs):
    for x in xs:
        seed = op(seed, x)
    return seed


def by_pieces(op, seed, fiber, pieces, order=None):
    """Fold each piece from its first element, then fold the partials onto the seed in `order`."""
    partials = [fold(op, fiber[p[0]], [fiber[i] for i in p[1:]]) for p in pieces]
    return fold(op, seed, [partials[k] for k in (order or range(len(pieces)))])


# ---- reduction factorisation ------------------------------------------------------------------

INTS = [3, -7, 11, 5, 2, 8]
WORDS = list("abcdef")


@pytest.mark.parametrize("pieces,order", [
    ([[0, 1, 2], [3, 4, 5]], None),
    ([[0, 3], [5, 1], [2, 4]], None),          # arbitrary subsets: add is an exact commutative monoid
    ([[4], [0, 1, 2, 3, 5]], [1, 0]),
])
def test_a_commutative_monoid_folds_any_partition_to_the_same_result(pieces, order):
    for policy in ("fold_left", "unordered_tree", "ordered_tree"):
        v = check_reduction(ReductionWitness(policy, "add", len(INTS), pieces, order))
        assert v, v
    assert by_pieces(lambda a, b: a + b, 10, INTS, pieces, order) == fold(lambda a, b: a + b, 10, INTS)


def test_a_noncommutative_monoid_needs_contiguous_ordered_pieces():
    cat = lambda a, b: a + b                              # noqa: E731
    whole = fold(cat, "", WORDS)
    ok = [[0, 1], [2, 3, 4], [5]]
    assert check_reduction(ReductionWitness("ordered_tree", "concat", 6, ok))
    assert by_pieces(cat, "", WORDS, ok) == whole
    strided = [[0, 2, 4], [1, 3, 5]]
    v = check_reduction(ReductionWitness("ordered_tree", "concat", 6, strided))
    assert v.obligation == "contiguous order-preserving pieces" and "piece 0 = [0, 2, 4]" in v.detail
    assert by_pieces(cat, "", WORDS, strided) == "acebdf" != whole
    swapped = check_reduction(ReductionWitness("ordered_tree", "concat", 6, ok, order=[1, 0, 2]))
    assert swapped.obligation == "contiguous order-preserving pieces" and "out of source order" in swapped.detail
    assert by_pieces(cat, "", WORDS, ok, [1, 0, 2]) == "cdeabf" != whole
    # a strict left fold of an exactly associative merge may regroup contiguous pieces too
    assert check_reduction(ReductionWitness("fold_left", "concat", 6, ok))


@pytest.mark.parametrize("pieces,words", [
    ([[0, 1, 2], [3, 4]], "contribution 5 is omitted"),
    ([[0, 1, 2], [2, 3, 4, 5]], "contribution 2 is merged twice"),
    ([[0, 1, 2, 3, 4, 5], []], "piece 1 is empty"),
    ([[0, 1, 2], [3, 4, 6]], "6 is not a contribution of this fiber (0..5)"),
    ([[0, 1, 2], [3, 4, True]], "True is not a contribution"),
])
def test_contribution_accounting_allows_no_omission_and_no_replica(pieces, words):
    v = check_reduction(ReductionWitness("unordered_tree", "add", 6, pieces))
    assert v.obligation == "contribution accounting" and words in v.detail


@pytest.mark.parametrize("fiber", [True, False, -1, 4.0, "4", None])
def test_the_fiber_is_a_count_of_contributions_never_a_boolean(fiber):
    """fiber(o) = [r0, ..., rn-1]: a witness names n, a nonnegative integer.  fiber=True was once
    read as a one-contribution fiber (Python's True == 1) and admitted."""
    for v in (check_reduction(ReductionWitness("unordered_tree", "add", fiber, [[0]])),
              check_merge_tree(MergeTreeWitness("fold_left", "add", fiber, ["seed", 0]))):
        assert v.obligation == "well-typed witness" and "fiber is the number of contributions" in v.detail, v
    # the one-contribution fiber is spelt 1, the empty fiber 0 (no pieces: the seed alone)
    assert check_reduction(ReductionWitness("unordered_tree", "add", 1, [[0]]))
    assert check_merge_tree(MergeTreeWitness("fold_left", "add", 1, ["seed", 0]))
    assert check_reduction(ReductionWitness("unordered_tree", "add", 0, []))


def test_pieces_of_another_fiber_are_refused():
    """"Partition a fiber into disjoint contribution subsets with no omissions": pieces over four
    contributions factor a fiber of four, not one of five (r4 is never folded) nor one of three
    (r3 is not in it)."""
    pieces = [[0, 1], [2, 3]]
    add = lambda a, b: a + b                              # noqa: E731
    assert check_reduction(ReductionWitness("unordered_tree", "add", 4, pieces))
    assert by_pieces(add, 0, INTS[:4], pieces) == fold(add, 0, INTS[:4])
    v = check_reduction(ReductionWitness("unordered_tree", "add", 5, pieces))
    assert v.obligation == "contribution accounting" and "contribution 4 is omitted" in v.detail
    assert by_pieces(add, 0, INTS[:5], pieces) != fold(add, 0, INTS[:5])       # 12 vs 14
    v = check_reduction(ReductionWitness("unordered_tree", "add", 3, pieces))
    assert v.obligation == "contribution accounting" and "3 is not a contribution of this fiber (0..2)" in v.detail
    # the same for an explicit merge tree
    assert check_merge_tree(MergeTreeWitness("fold_left", "add", 2, [["seed", 0], 1]))
    v = check_merge_tree(MergeTreeWitness("fold_left", "add", 3, [["seed", 0], 1]))
    assert v.obligation == "contribution accounting" and "contribution 2 is omitted" in v.detail


def test_a_merge_order_that_is_not_a_permutation_of_the_pieces_is_refused():
    v = check_reduction(ReductionWitness("unordered_tree", "add", 4, [[0, 1], [2, 3]], order=[0, 0]))
    assert v.obligation == "contribution accounting" and "not a permutation" in v.detail


def test_binary64_partials_need_the_tree_policy_not_a_strict_fold():
    xs = [1e16, 1.0, -1e16, 1.0]
    pieces = [[0, 1], [2, 3]]
    fadd = lambda a, b: a + b                             # noqa: E731
    assert by_pieces(fadd, 0.0, xs, pieces) != fold(fadd, 0.0, xs)   # 0.0 vs 1.0: regrouping changes it
    v = check_reduction(ReductionWitness("fold_left", "fadd", 4, pieces))
    assert v.obligation == "compatible merge" and "not an exactly associative merge" in v.detail
    # the default policy authorizes the regrouping (and a permutation) without claiming exactness
    assert check_reduction(ReductionWitness("unordered_tree", "fadd", 4, [[3, 0], [2, 1]]))


def test_an_update_has_no_merge_to_combine_partials():
    v = check_reduction(ReductionWitness("fold_left", "sub", 4, [[0, 1], [2, 3]]))
    assert v.obligation == "compatible merge"
    # the fold itself, one piece in source order, is always its own factorisation
    assert check_reduction(ReductionWitness("fold_left", "sub", 4, [[0, 1, 2, 3]]))
    v = check_reduction(ReductionWitness("unordered_tree", "sub", 4, [[0, 1, 2, 3]]))
    assert v.obligation == "compatible merge" and "not a State x State merge" in v.detail
    assert check_reduction(ReductionWitness("fold_left", "nosuch", 4, [[0, 1, 2, 3]])).obligation == \
        "compatible merge"


def set_partitions(xs):
    if not xs:
        yield []
        return
    first, rest = xs[0], xs[1:]
    for part in set_partitions(rest):
        for k in range(len(part)):
            yield part[:k] + [[first] + part[k]] + part[k + 1:]
        yield [[first]] + part


def leaves(t):
    return leaves(t[0]) + leaves(t[1]) if isinstance(t, tuple) else [t]


# the laws of the builtins, restated from the seed and docs/regions.md (not read from the code):
# (exactly associative, exactly commutative, a tree policy may regroup/permute it anyway)
LAWS = {"add": (True, True, True), "concat": (True, False, False), "fadd": (False, True, True)}


def expected(policy, combine, pieces, order):
    """Fold the pieces as a tree of pairs (the computation itself, not a value), and say what
    the seed allows it: the left update chain is always the fold; other parentheses need an
    exactly associative merge or a tree policy; another leaf order needs commutativity (exact, or
    authorized by unordered_tree); a tree policy without a compatible merge is diagnosed."""
    assoc, comm, authorized = LAWS[combine]
    if policy == "unordered_tree" and not (comm and (assoc or authorized)) or \
            policy == "ordered_tree" and not (assoc or authorized):
        return "compatible merge"
    n = sum(map(len, pieces))
    if len(pieces) == 1 and pieces[0] == sorted(pieces[0]):
        return None                                   # no partial state: the fold run on the seed
    tree = by_pieces(lambda a, b: (a, b), "seed", list(range(n)), pieces, order)
    if tree == fold(lambda a, b: (a, b), "seed", range(n)):
        return None
    if not (assoc or policy != "fold_left" and authorized):
        return "compatible merge"
    if leaves(tree) == ["seed", *range(n)]:
        return None
    return None if (comm and assoc) or policy == "unordered_tree" else "contiguous order-preserving pieces"


@pytest.mark.parametrize("combine", sorted(LAWS))
@pytest.mark.parametrize("policy", ["fold_left", "ordered_tree", "unordered_tree"])
def test_every_factorisation_of_a_small_fiber_agrees_with_the_computation_it_builds(policy, combine):
    """All set partitions of 4 contributions, each piece in source or reversed order, merged in
    every order of the pieces (138 witnesses per case)."""
    count = 0
    for part in set_partitions(list(range(4))):
        for flips in itertools.product((False, True), repeat=len(part)):
            pieces = [p[::-1] if f else p for p, f in zip(part, flips)]
            if any(f and len(p) == 1 for p, f in zip(part, flips)):
                continue
            for order in itertools.permutations(range(len(pieces))):
                v = check_reduction(ReductionWitness(policy, combine, 4, pieces, list(order)))
                assert (None if v else v.obligation) == expected(policy, combine, pieces, list(order)), \
                    (pieces, order, v)
                count += 1
    assert count == 138
    # and the values agree where the laws are exact: letters for concat, powers of ten for add
    if combine in ("add", "concat") and policy != "unordered_tree":
        xs = [10 ** k for k in range(4)] if combine == "add" else list("abcd")
        seed = 0 if combine == "add" else ""
        op = lambda a, b: a + b                                                    # noqa: E731
        for part in set_partitions(list(range(4))):
            for order in itertools.permutations(range(len(part))):
                ok = bool(check_reduction(ReductionWitness(policy, combine, 4, part, list(order))))
                assert ok == (by_pieces(op, seed, xs, part, list(order)) == fold(op, seed, xs)), (part, order)


# ---- Bind/serialize: preserved identity and serial order --------------------------------------

DOM = FiniteDomain([("b", 2), ("t", 3)])             # block b is an observed owner; t its threads


def bind(outputs, source="parallel", cuts=(1,), workers=6, domain=DOM):
    return check_bind(BindWitness(domain, IndexMap(("b", "t"), outputs), workers, source, None, cuts))


def test_an_observed_prefix_stays_on_one_participant_and_distinct_prefixes_on_distinct_ones():
    assert bind(["b", "t"], cuts=(1,), workers=2)               # one participant per block, threads in time
    v = bind(["b * 3 + t", "0"], cuts=(1,))                     # each thread its own participant
    assert v.obligation == "preserved identity"
    assert "observed prefix (b=0) is split across participants 0 and 1" in v.detail
    v = bind(["0", "b * 3 + t"], cuts=(1,))                     # both blocks on participant 0
    assert v.obligation == "preserved identity"
    assert "participant 0 would hold the observed prefixes (b=0) and (b=1)" in v.detail
    assert bind(["b * 3 + t", "0"], cuts=())                    # nothing observed: any exact binding


def test_a_serial_source_stays_on_one_participant_in_source_order():
    line = FiniteDomain([("i", 4)])

    def serial(part, time):
        return check_bind(BindWitness(line, IndexMap(("i",), [part, time]), 4, "serial"))
    assert serial("0", "i")
    assert serial("0", "2 * i + 1")                             # gaps are fine, the order is kept
    v = serial("i % 2", "i // 2")
    assert v.obligation == "serial order" and "participants 0 and 1" in v.detail
    v = serial("0", "3 - i")
    assert v.obligation == "serial order" and "(i=0) runs at time 3, not before (i=1) at time 2" in v.detail
    # the same bindings of a parallel source are fine: a valid parallel may be serialized, not conversely
    assert check_bind(BindWitness(line, IndexMap(("i",), ["i % 2", "i // 2"]), 4, "parallel"))
    assert check_bind(BindWitness(line, IndexMap(("i",), ["0", "3 - i"]), 4, "parallel"))
    v = check_bind(BindWitness(line, IndexMap(("i",), ["0", "i"]), 4, "pipelined"))
    assert v.obligation == "scope kind"
