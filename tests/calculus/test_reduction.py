"""Reduction policies: strict folds, the tree policies' admitted sets, and their diagnosis.

The admitted sets are checked against an independent brute force written here: every binary
tree over every leaf order, evaluated with Python's own binary64 `+`.
"""
import itertools
import math
import struct

import pytest

from emulator.calculus import ReductionPolicyError, UndecidedError, run
from emulator.calculus import builder as B
from emulator.calculus import reduction as R
from emulator.calculus.functions import BUILTINS, Function

fadd, concat, add, sub = BUILTINS["fadd"], BUILTINS["concat"], BUILTINS["add"], BUILTINS["sub"]


def bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def all_trees(leaves):
    """Every full binary tree over `leaves` in this order, evaluated with binary64 '+'."""
    if len(leaves) == 1:
        yield leaves[0]
        return
    for k in range(1, len(leaves)):
        for a in all_trees(leaves[:k]):
            for b in all_trees(leaves[k:]):
                yield a + b


def brute_unordered(seed, xs):
    return {bits(v) for perm in itertools.permutations([seed] + xs) for v in all_trees(list(perm))}


def brute_ordered(seed, xs):
    return {bits(v) for v in all_trees([seed] + xs)}


FIBERS = [
    [1e16, 1.0, -1e16, 1.0],
    [0.1, 0.2, 0.3],
    [2.0 ** 53, 1.0, 1.0, -(2.0 ** 53)],
    [-0.0, 0.0],
    [1.5, -2.25, 3.0e-300, 7.0],
]


@pytest.mark.parametrize("xs", FIBERS)
def test_unordered_tree_admits_exactly_the_results_of_some_merge_tree_and_permutation(xs):
    got = {bits(v) for v in R.admitted("unordered_tree", fadd, 0.0, xs).values()}
    assert got == brute_unordered(0.0, xs)


@pytest.mark.parametrize("xs", FIBERS)
def test_ordered_tree_admits_regrouping_but_not_reordering(xs):
    got = {bits(v) for v in R.admitted("ordered_tree", fadd, 0.0, xs).values()}
    assert got == brute_ordered(0.0, xs)


def test_float_add_under_the_tree_policy_admits_reordered_results():
    xs = [1e16, 1.0, -1e16, 1.0]
    serial = ((((0.0 + 1e16) + 1.0) + -1e16) + 1.0)          # 1.0: the first 1.0 is absorbed
    reordered = (((0.0 + 1e16) + -1e16) + 1.0) + 1.0         # 2.0
    assert serial != reordered
    for v in (serial, reordered):
        assert R.admits("unordered_tree", fadd, 0.0, xs, v)
    assert not R.admits("unordered_tree", fadd, 0.0, xs, 3.0)   # no tree produces 3
    # the strict left fold admits exactly its own result
    assert R.admits("fold_left", fadd, 0.0, xs, serial) and not R.admits("fold_left", fadd, 0.0, xs, reordered)


def test_the_interpreter_accepts_an_admitted_realization_and_rejects_an_invented_one():
    prog = B.program(B.reduce([("k", 4)], "y", "x[k]", "fadd", group=[0]),
                     arrays={"x": B.array([4], init=[1e16, 1.0, -1e16, 1.0]), "y": B.array([1], init=[0.0])})
    canon = run(prog).arrays["y"][0]
    # canonical: seed + ((x0 + x1) + (x2 + x3)), computed here by hand
    assert canon == 0.0 + ((1e16 + 1.0) + (-1e16 + 1.0))
    serial = run(prog, validate=True, realize=lambda node, f, s, xs, lift: R.fold_left(f, s, xs)).arrays["y"][0]
    assert serial == 1.0
    with pytest.raises(Exception, match="not admitted by unordered_tree"):
        run(prog, validate=True, realize=lambda node, f, s, xs, lift: 3.0)


def test_left_and_right_folds_differ_for_a_noncommutative_merge_and_use_their_own_orientation():
    assert R.fold_left(concat, "S", ["a", "b", "c"]) == "Sabc"
    assert R.fold_right(concat, "S", ["a", "b", "c"]) == "abcS"
    # update_left(s, r) = s - r: ((10 - 1) - 2) - 3
    assert R.fold_left(sub, 10, [1, 2, 3]) == 4
    with pytest.raises(ReductionPolicyError, match="not the left update run backwards"):
        R.canonical("fold_right", sub, 10, [1, 2, 3])


def test_empty_fibers_return_the_seed_under_every_policy():
    for pol in ("fold_left", "fold_right", "unordered_tree"):
        assert R.canonical(pol, add, 42, []) == 42
    assert R.canonical("ordered_tree", concat, "S", []) == "S"


def test_canonical_tree_pairs_adjacent_partials_level_by_level():
    # [a,b,c,d,e] -> [ab,cd,e] -> [abcd,e] -> abcde, then seed on the left
    assert R.canonical("ordered_tree", concat, "S", list("abcde")) == "Sabcde"
    paren = Function("p", 2, "merge", lambda a, b: f"({a}{b})", associative=True)
    assert R.canonical("ordered_tree", paren, "S", list("abcde")) == "(S(((ab)(cd))e))"
    assert R.canonical("ordered_tree", paren, "S", list("abc"), seed_side="right") == "(((ab)c)S)"


def test_exact_integer_merges_admit_a_single_result():
    xs = [3, -7, 11, 5, 2]
    assert set(R.admitted("unordered_tree", add, 1, xs).values()) == {1 + sum(xs)}


def test_tree_policies_without_a_compatible_merge_are_diagnosed_not_invented():
    with pytest.raises(ReductionPolicyError, match="not declared commutative"):
        R.admitted("unordered_tree", concat, "S", ["a"])
    with pytest.raises(ReductionPolicyError, match="not a State x State merge"):
        R.canonical("unordered_tree", sub, 0, [1])
    with pytest.raises(ReductionPolicyError, match="ordered_tree needs a merge"):
        R.canonical("ordered_tree", sub, 0, [1])


def test_admission_declines_large_fibers_instead_of_guessing():
    with pytest.raises(UndecidedError):
        R.admitted("unordered_tree", fadd, 0.0, [1.0] * 10)


def test_nan_and_signed_zero_are_compared_by_bits():
    assert not R.same(0.0, -0.0) and R.same(math.nan, math.nan)
    # -0 + -0 = -0 only: no tree can give +0 from (seed -0, -0)
    assert R.admits("unordered_tree", fadd, -0.0, [-0.0], -0.0)
    assert not R.admits("unordered_tree", fadd, -0.0, [-0.0], 0.0)


SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.1, 3.0, 1e308, -1e308, 5e-324, math.inf, -math.inf,
            struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000))[0],
            struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000123))[0],
            struct.unpack("<d", struct.pack("<Q", 0xFFF0000000000001))[0]]


@pytest.mark.parametrize("name", ["fadd", "fmul", "fmax", "fmin", "add", "mul", "max", "min", "concat"])
def test_declared_exact_laws_hold_bit_for_bit_on_special_values(name):
    f = BUILTINS[name]
    vals = {"concat": ["", "a", "bc"], "add": [0, -3, 7, 2 ** 70], "mul": [0, -3, 7, 2 ** 70],
            "max": [0, -3, 7], "min": [0, -3, 7]}.get(name, SPECIALS)
    for a, b in itertools.product(vals, repeat=2):
        if f.commutative:
            assert R.same(f(a, b), f(b, a)), (a, b)
    for a, b, c in itertools.product(vals, repeat=3):
        if f.associative:
            assert R.same(f(f(a, b), c), f(a, f(b, c))), (a, b, c)


def test_binary64_add_is_declared_regroupable_because_it_is_not_associative():
    f = BUILTINS["fadd"]
    assert not f.associative and f.regroup
    assert f(f(1e16, 1.0), 1.0) != f(1e16, f(1.0, 1.0))     # the counterexample the policy tolerates
