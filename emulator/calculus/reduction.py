"""Reduction semantics: strict folds, the tree policies, and deciding what a policy admits.

For a fiber [r0, ..., rn-1] (active contributions in lexicographic source order) and seed s:

    fold_left  = update_left(...update_left(s, r0)..., rn-1)
    fold_right = update_right(r0, ...update_right(rn-1, s)...)

with update_left(s, r) = merge(s, lift(r)) and update_right(r, s) = merge(lift(r), s) when the
combine function is a merge, or the declared update itself ("update" = State x Elem, "rupdate" =
Elem x State).  An empty fiber returns the seed.

`ordered_tree` admits every binary merge tree over the leaves [s, lift(r0), ..., lift(rn-1)]
(seed on the right for a right-reference reduction) that keeps the leaf order; `unordered_tree`
(the source default) also admits every permutation of the leaves.  Both define *sets* of
admitted results; the canonical result is merge(s, T(lifted fiber)) where T pairs adjacent
partials level by level ([a,b,c,d,e] -> [ab,cd,e] -> [abcd,e] -> abcde), the tree a parallel
realization builds naturally.  A serial fold over a compatible merge is in the admitted set.
"""
from __future__ import annotations

import math
import struct
from typing import Callable, Sequence

from isa.atomicio import quote

from .errors import ReductionPolicyError, UndecidedError
from .functions import Function

MAX_TREE_LEAVES = 7        # admission by exhaustive merge-tree/permutation search up to this size


class _NoSeed:
    def __repr__(self):
        return "<no seed>"


NO_SEED = _NoSeed()        # a scan without a seed: the first state is the first contribution


def vkey(v):
    """An exact identity for a value: floats by their bits (so -0.0 != 0.0 and NaN payloads differ)."""
    if isinstance(v, float):
        return ("f64", struct.unpack("<Q", struct.pack("<d", v))[0])
    if isinstance(v, bool):
        return ("int", int(v))
    if hasattr(v, "vkey"):               # tile values: descriptor, payload and definedness
        return v.vkey()
    return (type(v).__name__, v)


def same(a, b) -> bool:
    return vkey(a) == vkey(b)


def _lifter(lift: Function | None) -> Callable:
    return (lambda x: x) if lift is None else lift


def updates(f: Function, lift: Function | None):
    """(update_left(s, r), update_right(r, s)) for a combine function; None where undefined."""
    lf = _lifter(lift)
    if f.kind == "merge":
        return (lambda s, r: f(s, lf(r))), (lambda r, s: f(lf(r), s))
    if f.kind == "update":
        return (lambda s, r: f(s, r)), None
    if f.kind == "rupdate":
        return None, (lambda r, s: f(r, s))
    return None, None


def check_policy(policy: str, f: Function, where: str = "combine") -> None:
    """Diagnose a policy the combine function cannot support; never invent an algebra."""
    if policy == "fold_left" and f.kind not in ("merge", "update"):
        raise ReductionPolicyError(where, f"fold_left needs update_left(s, r) (a merge or kind 'update'); "
                                          f"{quote(f.name)} is kind {quote(f.kind)}")
    if policy == "fold_right" and f.kind not in ("merge", "rupdate"):
        raise ReductionPolicyError(where, f"fold_right needs update_right(r, s) (a merge or kind 'rupdate'); "
                                          f"{quote(f.name)} is kind {quote(f.kind)} -- a right fold is not the left "
                                          f"update run backwards")
    if policy == "ordered_tree" and not f.ordered_tree_ok:
        raise ReductionPolicyError(where, f"ordered_tree needs a merge declared associative; {quote(f.name)} is "
                                          + ("not a merge" if f.kind != "merge" else "not declared associative"))
    if policy == "unordered_tree" and not f.tree_ok:
        if f.kind != "merge":
            why = (f"{quote(f.name)} is kind {quote(f.kind)}, not a State x State merge; unordered_tree has no merge "
                   f"to regroup. Use fold_left or fold_right")
        else:
            missing = [n for n, ok in (("associative", f.associative), ("commutative", f.commutative)) if not ok]
            why = (f"unordered_tree (the default) needs a merge declared associative and commutative (or "
                   f"regrouping authorized by its numerical policy); {quote(f.name)} is not declared "
                   f"{' or '.join(missing)}. Use fold_left, fold_right or ordered_tree")
        raise ReductionPolicyError(where, why)


def fold_left(f: Function, seed, xs: Sequence, lift: Function | None = None):
    up, _ = updates(f, lift)
    s = seed
    if s is NO_SEED:                      # a merge only (check_scanner): start from lift(r0)
        s, xs = _lifter(lift)(xs[0]), xs[1:]
    for r in xs:
        s = up(s, r)
    return s


def fold_right(f: Function, seed, xs: Sequence, lift: Function | None = None):
    _, up = updates(f, lift)
    s = seed
    if s is NO_SEED:
        s, xs = _lifter(lift)(xs[-1]), xs[:-1]
    for r in reversed(xs):
        s = up(r, s)
    return s


def pairwise(f: Function, xs: Sequence):
    """Adjacent pairs merged level by level, the odd last partial carried up unchanged."""
    level = list(xs)
    while len(level) > 1:
        nxt = [f(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def canonical(policy: str, f: Function, seed, xs: Sequence, lift: Function | None = None,
              seed_side: str = "left"):
    """The reference result of a reduction under `policy` (the one the interpreter computes)."""
    check_policy(policy, f)
    if policy == "fold_left":
        return fold_left(f, seed, xs, lift)
    if policy == "fold_right":
        return fold_right(f, seed, xs, lift)
    if not xs:
        return seed
    t = pairwise(f, [_lifter(lift)(x) for x in xs])
    if seed is NO_SEED:
        return t
    return f(seed, t) if seed_side == "left" else f(t, seed)


def leaves(seed, xs: Sequence, lift: Function | None, seed_side: str) -> list:
    lifted = [_lifter(lift)(x) for x in xs]
    if seed is NO_SEED:
        return lifted
    return [seed] + lifted if seed_side == "left" else lifted + [seed]


def admitted(policy: str, f: Function, seed, xs: Sequence, lift: Function | None = None,
             seed_side: str = "left", limit: int = MAX_TREE_LEAVES) -> dict:
    """Every result the policy admits, as {vkey: value}.  Exhaustive: UndecidedError past `limit`
    leaves (seed included) for the tree policies."""
    check_policy(policy, f)
    if policy in ("fold_left", "fold_right"):
        v = canonical(policy, f, seed, xs, lift, seed_side)
        return {vkey(v): v}
    ls = leaves(seed, xs, lift, seed_side)
    if len(ls) > limit:
        raise UndecidedError(f"admission under {policy} is decided exhaustively for at most {limit} "
                             f"leaves (seed included); this fiber has {len(ls)}")
    return _ordered_sets(f, ls) if policy == "ordered_tree" else _unordered_sets(f, ls)


def _ordered_sets(f: Function, ls: list) -> dict:
    # CYK over intervals: V[i][j] = results of every tree over ls[i..j] in order.
    n = len(ls)
    V = [[None] * n for _ in range(n)]
    for i, x in enumerate(ls):
        V[i][i] = {vkey(x): x}
    for width in range(2, n + 1):
        for i in range(0, n - width + 1):
            j = i + width - 1
            out = {}
            for k in range(i, j):
                for a in V[i][k].values():
                    for b in V[k + 1][j].values():
                        v = f(a, b)
                        out.setdefault(vkey(v), v)
            V[i][j] = out
    return V[0][n - 1]


def _unordered_sets(f: Function, ls: list) -> dict:
    # Subset DP: V[S] = results of every tree, in every leaf order, over the leaves in S.
    n = len(ls)
    V: dict[int, dict] = {}
    for i, x in enumerate(ls):
        V[1 << i] = {vkey(x): x}
    for S in range(1, 1 << n):
        if S in V:
            continue
        out = {}
        A = (S - 1) & S
        while A:
            B = S ^ A
            for a in V[A].values():
                for b in V[B].values():
                    v = f(a, b)
                    out.setdefault(vkey(v), v)
            A = (A - 1) & S
        V[S] = out
    return V[(1 << n) - 1]


def admits(policy: str, f: Function, seed, xs: Sequence, result, lift: Function | None = None,
           seed_side: str = "left", limit: int = MAX_TREE_LEAVES) -> bool:
    """Does some computation the policy admits (a merge tree/permutation) produce `result`?"""
    return vkey(result) in admitted(policy, f, seed, xs, lift, seed_side, limit)


def scan_prefixes(policy: str, f: Function, seed, xs: Sequence, exclusive: bool = False) -> list:
    """The reference prefix results of a scan (the interpreter's): result k is the policy's
    result over [seed, r0, ..., rk] (inclusive) or [seed, r0, ..., r(k-1)] (exclusive; the
    first is the seed), without the seed when there is none.  fold_right folds every prefix
    on its own (a right fold shares nothing between prefixes); fold_left and the tree policies
    run the left update chain, which every tree policy admits (it is an in-order tree)."""
    check_policy(policy, f)
    n = len(xs)
    if policy == "fold_right":
        return [fold_right(f, seed, xs[:k if exclusive else k + 1]) for k in range(n)]
    up, _ = updates(f, None)
    out, acc = [], seed
    for x in xs:
        if exclusive:
            out.append(acc)
        acc = x if acc is NO_SEED else up(acc, x)
        if not exclusive:
            out.append(acc)
    return out


def scan_admits(policy: str, f: Function, seed, xs: Sequence, results: Sequence, exclusive: bool = False,
                limit: int = MAX_TREE_LEAVES) -> int | None:
    """The first prefix whose realized result the policy does not admit, or None (each prefix
    decided exhaustively: UndecidedError past `limit` leaves)."""
    if len(results) != len(xs):
        return min(len(results), len(xs))
    for k, r in enumerate(results):
        prefix = xs[:k] if exclusive else xs[:k + 1]
        if exclusive and not prefix:
            ok = same(r, seed)
        else:
            ok = admits(policy, f, seed, prefix, r, None, "left", limit)
        if not ok:
            return k
    return None


def realize_tree(f: Function, tree, contributions: Sequence, seed, lift: Function | None = None):
    """Evaluate an explicit merge tree: nested 2-lists over contribution indices and "seed"."""
    lf = _lifter(lift)

    def ev(t):
        if t == "seed":
            return seed
        if isinstance(t, int) and not isinstance(t, bool):
            return lf(contributions[t])
        a, b = t
        return f(ev(a), ev(b))
    return ev(tree)


def is_nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)
