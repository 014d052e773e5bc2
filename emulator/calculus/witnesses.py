"""Refinement-witness checkers (the seed's rules table), independent of any search.

Each checker takes a typed witness and returns a Verdict: admitted, or the first failed
obligation in plain terms.  Obligations, by rule:

| Rule                   | Obligations checked, in order                                          |
|------------------------|------------------------------------------------------------------------|
| Reindex                | tau total; active-domain bijection; observed-cut factorisation          |
|                        | pi_j o tau = tau_j o pi'_rho(j), tau_j bijective on active prefixes     |
| Split/fuse             | positive factor; exact active coverage; integer representability       |
| Bind/serialize         | exact coverage; target containment; preserved identity; serial order   |
| Reduction factorisation| compatible merge; contribution accounting (no omission, no replica);   |
|                        | contiguous order-preserving pieces unless the merge may permute         |
| Merge tree             | compatible merge; contribution accounting; the policy's tree shape      |
| Scope fusion           | adjacent siblings; scope kinds; domains align; Dep_AB ⊆ diagonal        |
|                        | (parallel) or every cross edge A(i) -> B(j) has i <= j (serial)         |
| Retiming/versioning    | dependence distances; version lifetimes (no reuse while live)          |
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Sequence

from .budget import BudgetError
from .domains import FiniteDomain, IndexMap, fmt
from .errors import ReductionPolicyError, RegionError, UndecidedError
from .expr import EvalError
from .functions import BUILTINS, Function


@dataclass(frozen=True)
class Verdict:
    """admitted, or the first failed obligation; `decided=False` means unknown (a finite check
    too large to run exhaustively), which is never the same as false."""
    rule: str
    admitted: bool
    obligation: str | None = None
    detail: str = ""
    decided: bool = True

    def __bool__(self) -> bool:
        return self.admitted

    def __str__(self) -> str:
        if self.admitted:
            return f"admitted: {self.rule}" + (f" ({self.detail})" if self.detail else "")
        if not self.decided:
            return f"unknown: {self.rule}: {self.detail}"
        return f"rejected: {self.rule}: {self.obligation}: {self.detail}"


class _Fail(Exception):
    def __init__(self, obligation: str, detail: str):
        self.obligation, self.detail = obligation, detail


# What a witness field of the wrong type or shape raises deep inside a check: the witness is
# untrusted input, so this is a verdict (one line), never a traceback.
MALFORMED = (TypeError, ValueError, AttributeError, KeyError, IndexError, ZeroDivisionError, OverflowError,
             RecursionError, MemoryError)


def malformed(rule: str, exc: BaseException) -> Verdict:
    from isa.atomicio import shown
    why = "nested too deeply" if isinstance(exc, RecursionError) else shown(str(exc).splitlines()[0] if str(exc) else "")
    return Verdict(rule, False, "well-typed witness", f"a field of the wrong type or shape ({type(exc).__name__}: {why})")


def checks(rule: str):
    """Makes a checker of a function whose body raises _Fail at the first broken obligation or
    returns the admitted detail: the decorated function answers a Verdict."""
    import functools

    def wrap(fn):
        @functools.wraps(fn)
        def check(w) -> Verdict:
            return _verdict(rule, fn, w)
        return check
    return wrap


def _verdict(rule: str, fn, *args, **kw) -> Verdict:
    try:
        detail = fn(*args, **kw)
    except _Fail as f:
        v = Verdict(rule, False, f.obligation, f.detail)
        for k in ("crossing", "cell"):           # the failing edge, for a caller that words it its own way
            if hasattr(f, k):
                object.__setattr__(v, k, getattr(f, k))
        return v
    except UndecidedError as exc:
        return Verdict(rule, False, "undecided", str(exc), decided=False)
    except BudgetError as exc:          # too large to enumerate: unknown, not false (seed 002)
        return Verdict(rule, False, "undecided", f"effects too large to enumerate: {exc}", decided=False)
    except RegionError as exc:          # a program whose effects cannot be derived
        return Verdict(rule, False, "effects known", str(exc))
    except EvalError as exc:
        return Verdict(rule, False, "well-typed witness", f"a map or bound cannot be evaluated: {exc}")
    except MALFORMED as exc:
        return malformed(rule, exc)
    return Verdict(rule, True, None, detail or "")


# ---------------------------------------------------------------------------------------------
# Reindex and Split/fuse share the bijection check.

@dataclass
class Cut:
    """An observed cut: old prefix length j, the new prefix length rho(j) it corresponds to, and
    optionally tau_j (new prefix -> old prefix); without it tau_j is derived and checked."""
    j: int
    rho: int
    tau_j: IndexMap | None = None


@dataclass
class ReindexWitness:
    old: FiniteDomain
    new: FiniteDomain
    tau: IndexMap                    # new occurrence -> old occurrence
    cuts: tuple[Cut, ...] = ()


def _images(old: FiniteDomain, new: FiniteDomain, tau: IndexMap, obligation: str) -> dict:
    """tau on the active new domain, checked to be a bijection onto the active old domain."""
    olds = old.points()
    old_set = set(olds)
    seen: dict = {}
    img: dict = {}
    for n in new.points():
        try:
            o = tau(n)
        except (EvalError, ZeroDivisionError) as exc:
            raise _Fail("tau is total", f"tau{fmt(new.names, n)} cannot be evaluated: {exc}")
        if len(o) != len(old.axes):
            raise _Fail("tau is typed", f"tau{fmt(new.names, n)} = {o} has {len(o)} coordinate(s); "
                                        f"the old domain has {len(old.axes)}")
        if o not in old_set:
            raise _Fail(obligation, f"new {fmt(new.names, n)} maps to {fmt(old.names, o)}, which is not "
                                    f"an active old occurrence")
        if o in seen:
            raise _Fail(obligation, f"new {fmt(new.names, seen[o])} and {fmt(new.names, n)} both map to old "
                                    f"{fmt(old.names, o)}: not injective (an occurrence would run twice)")
        seen[o] = n
        img[n] = o
    for o in olds:
        if o not in seen:
            raise _Fail(obligation, f"old {fmt(old.names, o)} has no new occurrence: not onto "
                                    f"(an occurrence would be lost)")
    return img


@checks("Reindex")
def check_reindex(w: ReindexWitness) -> Verdict:
    """The Reindex rule: tau an active-domain bijection that factors through every observed cut."""
    img = _images(w.old, w.new, w.tau, "active-domain bijection")
    for cut in w.cuts:
        ob = f"observed-cut factorisation (cut {cut.j})"
        if not (0 <= cut.j <= len(w.old.axes) and 0 <= cut.rho <= len(w.new.axes)):
            raise _Fail(ob, f"cut ({cut.j}, rho={cut.rho}) exceeds the domains' ranks")
        onames, nnames = w.old.names[:cut.j], w.new.names[:cut.rho]
        fwd: dict = {}
        back: dict = {}
        for n, o in img.items():
            pn, po = n[:cut.rho], o[:cut.j]
            if cut.tau_j is not None:
                try:
                    got = cut.tau_j(pn)
                except EvalError as exc:
                    raise _Fail(ob, f"tau_{cut.j}{fmt(nnames, pn)} cannot be evaluated: {exc}")
                if got != po:
                    raise _Fail(ob, f"pi_{cut.j}(tau{fmt(w.new.names, n)}) = {fmt(onames, po)} but "
                                    f"tau_{cut.j}(pi'_{cut.rho}{fmt(w.new.names, n)}) = {fmt(onames, got)}")
            prev = fwd.setdefault(pn, po)
            if prev != po:
                raise _Fail(ob, f"new prefix {fmt(nnames, pn)} reaches old prefixes {fmt(onames, prev)} and "
                                f"{fmt(onames, po)}: tau does not factor through the observed cut")
            prevn = back.setdefault(po, pn)
            if prevn != pn:
                raise _Fail(ob, f"new prefixes {fmt(nnames, prevn)} and {fmt(nnames, pn)} both map to old "
                                f"prefix {fmt(onames, po)}: tau_{cut.j} is not bijective on active prefixes "
                                f"(an observed identity would merge; re-anchoring needs its own refinement)")
    return f"{len(img)} occurrence(s), {len(w.cuts)} observed cut(s)"




@dataclass
class SplitFuseWitness:
    """A split or fuse of axes: tau maps the new (q, r) or k back to the old coordinates."""
    old: FiniteDomain
    new: FiniteDomain
    tau: IndexMap                       # new -> old, e.g. (q, r) -> q*b + r
    factors: dict = field(default_factory=dict)   # name -> factor (b, or the fused extents)
    index_bits: int = 32                # signed width of the target's index arithmetic
    form: tuple | None = None           # ("split", N, b, Q, guard) / ("fuse", N, M): decided in closed form


def split(N: int, b: int, *, axis: str = "i", outer: str = "q", inner: str = "r", Q: int | None = None,
          guard: bool = True, index_bits: int = 32) -> SplitFuseWitness:
    """i = q*b + r, 0 <= r < b, guarded by q*b + r < N (Q = ceil(N/b) unless given)."""
    if Q is None:
        Q = -(-N // b) if b > 0 else 0
    new = FiniteDomain([(outer, Q), (inner, max(b, 0))],
                       where=f"{outer} * {b} + {inner} < {N}" if guard else None)
    return SplitFuseWitness(FiniteDomain([(axis, N)]), new, IndexMap((outer, inner), [f"{outer} * {b} + {inner}"]),
                            {"b": b}, index_bits, ("split", N, b, Q, guard))


def fuse(N: int, M: int, *, axes=("i", "j"), fused: str = "k", index_bits: int = 32) -> SplitFuseWitness:
    """(i, j) -> k = i*M + j; tau: k -> (k // M, k % M)."""
    old = FiniteDomain([(axes[0], N), (axes[1], M)])
    new = FiniteDomain([(fused, N * M)])
    mm = max(M, 1)
    return SplitFuseWitness(old, new, IndexMap((fused,), [f"{fused} // {mm}", f"{fused} % {mm}"]),
                            {"N": N, "M": M}, index_bits, ("fuse", N, M))


def _representable(w: SplitFuseWitness) -> None:
    lo, hi = -(1 << (w.index_bits - 1)), (1 << (w.index_bits - 1)) - 1
    box = w.new.box()
    names = w.new.names
    ivs = None
    if box is not None:
        ivs = w.tau.intervals({n: (a, b - 1) for n, (a, b) in zip(names, box)})
    if ivs is not None:
        for n, (a, b) in zip(names, box):
            if b - 1 > hi or a < lo:
                raise _Fail("integer representability", f"axis {n} spans [{a}, {b}), outside int{w.index_bits}")
        for a, b in ivs:
            if a < lo or b > hi:
                v = b if b > hi else a
                raise _Fail("integer representability",
                            f"the index arithmetic {w.tau.describe()} reaches {v} on {w.new.describe()} "
                            f"(guards evaluate it on the whole box), outside int{w.index_bits} [{lo}, {hi}]")
        return
    # Guards and index arithmetic run on the whole bounding box, not just active points.
    for n in w.new.points(active_only=False):
        for v in list(n) + w.tau.intermediates(n):
            if not lo <= v <= hi:
                raise _Fail("integer representability",
                            f"at {fmt(names, n)} the index arithmetic {w.tau.describe()} reaches {v}, "
                            f"outside int{w.index_bits} [{lo}, {hi}]")


def _closed_form_coverage(w: SplitFuseWitness) -> str:
    if w.form[0] == "fuse":
        _, N, M = w.form
        return f"(k // {M}, k % {M}) is a bijection from [0, {N * M}) onto [0, {N}) x [0, {M})"
    _, N, b, Q, guard = w.form
    o, n = w.old.names, w.new.names
    if Q * b < N:
        raise _Fail("exact active coverage", f"old {fmt(o, (Q * b,))} has no new occurrence: {Q} x {b} < {N} "
                                             f"(an occurrence would be lost)")
    if Q * b > N and not guard:
        raise _Fail("exact active coverage", f"new {fmt(n, (N // b, N % b))} maps to {fmt(o, (N,))}, which is "
                                             f"not an active old occurrence ({Q} x {b} > {N} needs the guard "
                                             f"q*b + r < N)")
    return f"q*b + r covers [0, {N}) exactly once"


@checks("Split/fuse")
def check_split_fuse(w: SplitFuseWitness) -> Verdict:
    """Split/fuse: a positive factor, exact active coverage, representable index arithmetic."""
    for name, f in w.factors.items():
        if not isinstance(f, int) or isinstance(f, bool) or f <= 0:
            raise _Fail("positive factor", f"factor {name} = {f!r} is not a positive integer")
    if w.form is not None:
        detail = _closed_form_coverage(w)
    else:
        img = _images(w.old, w.new, w.tau, "exact active coverage")
        detail = f"{len(img)} occurrence(s) covered exactly once"
    _representable(w)
    return detail




# ---------------------------------------------------------------------------------------------
# Bind/serialize

@dataclass
class BindWitness:
    """Assign the instances of an independent (or serial) domain to (participant, local time)."""
    domain: FiniteDomain
    binding: object                      # IndexMap coords -> (participant, time), or a TaskMapping
    workers: int                         # participants the target provides
    source: str = "parallel"             # the source scope kind: parallel | serial
    max_time: int | None = None
    identity_cuts: tuple[int, ...] = ()  # observed prefixes whose owner identity must survive


def _slots(w: BindWitness) -> dict:
    from .taskmap import TaskMapping
    pts = w.domain.points()
    if isinstance(w.binding, TaskMapping):
        tm = w.binding
        slot: dict = {}
        for wk in range(tm.workers):
            for t, task in enumerate(tm(wk)):
                task = task if isinstance(task, tuple) else (task,)
                if task in slot:
                    p, tt = slot[task]
                    raise _Fail("exact coverage", f"instance {fmt(w.domain.names, task)} is assigned twice "
                                                  f"(participant {p} time {tt} and participant {wk} time {t})")
                slot[task] = (wk, t)
        active = set(pts)
        for task in slot:
            if task not in active:
                raise _Fail("exact coverage", f"participant {slot[task][0]} runs {fmt(w.domain.names, task)}, "
                                              f"which is not an active instance")
        out = {}
        for p in pts:
            if p not in slot:
                raise _Fail("exact coverage", f"instance {fmt(w.domain.names, p)} is assigned to no participant")
            out[p] = slot[p]
        return out
    out = {}
    for p in pts:
        try:
            v = w.binding(p)
        except EvalError as exc:
            raise _Fail("exact coverage", f"the binding of {fmt(w.domain.names, p)} cannot be evaluated: {exc}")
        if len(v) != 2:
            raise _Fail("exact coverage", f"the binding gives {v} for {fmt(w.domain.names, p)}; "
                                          f"expected (participant, time)")
        out[p] = v
    return out


def first_clash(items):
    """(value, earlier key, later key) for the first two keys of `items` with one value, or None
    (is a map injective, and where not)."""
    seen: dict = {}
    for k, v in items:
        if v in seen:
            return v, seen[v], k
        seen[v] = k
    return None


@checks("Bind/serialize")
def check_bind(w: BindWitness) -> Verdict:
    """Bind/serialize: exact coverage, target containment, preserved identity, serial order."""
    names = w.domain.names
    slots = _slots(w)
    clash = first_clash(slots.items())
    if clash is not None:
        s, a, b = clash
        raise _Fail("exact coverage", f"instances {fmt(names, a)} and {fmt(names, b)} share "
                                      f"participant {s[0]} at time {s[1]}")
    for p, (part, t) in slots.items():
        if not 0 <= part < w.workers:
            raise _Fail("target containment", f"instance {fmt(names, p)} is bound to participant {part}; "
                                              f"the target has participants 0..{w.workers - 1}")
        if t < 0 or (w.max_time is not None and t >= w.max_time):
            raise _Fail("target containment", f"instance {fmt(names, p)} runs at local time {t}, outside "
                                              f"0..{'' if w.max_time is None else w.max_time - 1}")
    for j in w.identity_cuts:
        owner: dict = {}
        back: dict = {}
        for p, (part, _) in slots.items():
            pre = p[:j]
            if owner.setdefault(pre, part) != part:
                raise _Fail("preserved identity", f"observed prefix {fmt(names[:j], pre)} is split across "
                                                  f"participants {owner[pre]} and {part}")
            if back.setdefault(part, pre) != pre:
                raise _Fail("preserved identity", f"participant {part} would hold the observed prefixes "
                                                  f"{fmt(names[:j], back[part])} and {fmt(names[:j], pre)}")
    if w.source == "serial":
        parts = sorted({s[0] for s in slots.values()})
        if len(parts) > 1:
            raise _Fail("serial order", f"a serial source is bound to participants {parts[0]} and {parts[1]}: "
                                        f"a serial recurrence cannot be parallelized by changing its constructor")
        order = list(slots)                 # source (lexicographic) order
        for a, b in zip(order, order[1:]):
            if slots[a][1] >= slots[b][1]:
                raise _Fail("serial order", f"{fmt(names, a)} runs at time {slots[a][1]}, not before "
                                            f"{fmt(names, b)} at time {slots[b][1]}")
    elif w.source != "parallel":
        raise _Fail("scope kind", f"source must be parallel or serial, got {w.source!r}")
    return f"{len(slots)} instance(s) on {len({s[0] for s in slots.values()})} participant(s)"




# ---------------------------------------------------------------------------------------------
# Reductions

def _fn(f) -> Function:
    if isinstance(f, Function):
        return f
    if f in BUILTINS:
        return BUILTINS[f]
    raise _Fail("compatible merge", f"unknown combine function {f!r}")


def _policy_ok(policy: str, f: Function) -> None:
    from .reduction import check_policy
    try:
        check_policy(policy, f)
    except ReductionPolicyError as exc:
        raise _Fail("compatible merge", exc.why)


def may_permute(policy: str, f: Function) -> bool:
    """Contribution order may change: the default tree policy with a compatible merge, or an
    exactly associative and commutative merge under any policy."""
    return (policy == "unordered_tree" and f.tree_ok) or (f.kind == "merge" and f.associative and f.commutative)


def may_regroup(policy: str, f: Function) -> bool:
    """Parentheses may change: a tree policy, or an exactly associative merge under a fold."""
    if policy in ("ordered_tree", "unordered_tree"):
        return f.ordered_tree_ok or f.tree_ok
    return f.kind == "merge" and f.associative


def _fiber_size(n) -> int:
    """A fiber is [r0, ..., rn-1] (seed 002): the witness gives n, a count -- a nonnegative
    integer, and never a boolean (True would read as a one-contribution fiber)."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        from isa.atomicio import shown
        raise _Fail("well-typed witness", f"fiber is the number of contributions, a nonnegative integer; "
                                          f"got {shown(repr(n))}")
    return int(n)


def _accounting(n: int, leaves: Sequence, seed_expected: bool) -> None:
    where: dict = {}
    for pos, x in enumerate(leaves):
        if x == "seed":
            if not seed_expected:
                raise _Fail("contribution accounting", "'seed' is not a leaf here (a partial state, or a scan "
                                                       "without a seed)")
            if "seed" in where:
                raise _Fail("contribution accounting", "the seed is merged twice")
            where["seed"] = pos
            continue
        if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < n:
            raise _Fail("contribution accounting", f"{x!r} is not a contribution of this fiber (0..{n - 1})")
        if x in where:
            raise _Fail("contribution accounting", f"contribution {x} is merged twice: a replica is never an "
                                                   f"additional contribution")
        where[x] = pos
    for x in range(n):
        if x not in where:
            raise _Fail("contribution accounting", f"contribution {x} is omitted")
    if seed_expected and "seed" not in where:
        raise _Fail("contribution accounting", "the seed is never merged")


@dataclass
class ReductionWitness:
    """Partition a fiber of n contributions (0..n-1 in source order) into pieces folded into
    partial states, then merge the partials in `order` (default: as listed)."""
    policy: str
    combine: object                       # Function or builtin name
    fiber: int
    pieces: list
    order: list | None = None


@checks("Reduction factorisation")
def check_reduction(w: ReductionWitness) -> Verdict:
    """Reduction factorisation: pieces partition the fiber and merge under the policy's laws."""
    n = _fiber_size(w.fiber)
    f = _fn(w.combine)
    _policy_ok(w.policy, f)
    for k, piece in enumerate(w.pieces):
        if not isinstance(piece, (list, tuple)) or not piece:
            raise _Fail("contribution accounting", f"piece {k} is empty or not a list: a partial state "
                                                   f"needs at least one contribution")
    flat = [x for piece in w.pieces for x in piece]
    _accounting(n, flat, seed_expected=False)
    order = list(range(len(w.pieces))) if w.order is None else list(w.order)
    if sorted(order) != list(range(len(w.pieces))):
        raise _Fail("contribution accounting", f"merge order {order} is not a permutation of the pieces")
    if len(w.pieces) <= 1 and flat == sorted(flat):
        return "a single piece in source order: the fold itself"
    if f.kind == "merge" and all(len(p) == 1 for p in w.pieces) and \
            [w.pieces[k][0] for k in order] == list(range(n)):
        # merge(...merge(seed, lift(r0))..., lift(rn-1)) is the left update chain, tree for tree
        return f"{len(w.pieces)} single-contribution pieces merged in source order: the fold itself"
    if not may_regroup(w.policy, f):
        raise _Fail("compatible merge", f"{w.policy} fixes the grouping and '{f.name}' is not an exactly "
                                        f"associative merge, so partial states cannot be combined exactly")
    if may_permute(w.policy, f):
        return f"{len(w.pieces)} piece(s); the merge may permute"
    for k, piece in enumerate(w.pieces):
        if list(piece) != list(range(piece[0], piece[0] + len(piece))):
            raise _Fail("contiguous order-preserving pieces",
                        f"piece {k} = {list(piece)} is not a contiguous run of the fiber in source order "
                        f"('{f.name}' is not commutative under {w.policy})")
    starts = [w.pieces[k][0] for k in order if w.pieces[k]]
    for a, b in zip(starts, starts[1:]):
        if a > b:
            raise _Fail("contiguous order-preserving pieces",
                        f"partials are merged out of source order (the piece starting at {a} before the one "
                        f"starting at {b}); '{f.name}' is not commutative under {w.policy}")
    return f"{len(w.pieces)} contiguous piece(s) merged in order"




@dataclass
class MergeTreeWitness:
    """An explicit realization: nested pairs over contribution indices and "seed" (`seed`:
    whether the computation has a seed leaf; a scan without a seed has none)."""
    policy: str
    combine: object
    fiber: int
    tree: object
    seed_side: str = "left"
    seed: bool = True


def tree_leaves(t) -> list:
    if isinstance(t, (list, tuple)):
        if len(t) != 2:
            raise _Fail("tree shape", f"{list(t)} is not a binary merge (two operands)")
        return tree_leaves(t[0]) + tree_leaves(t[1])
    return [t]


def left_comb(n: int, seed: bool = True):
    t, first = ("seed", 0) if seed else (0, 1)
    for i in range(first, n):
        t = [t, i]
    return t


def right_comb(n: int, seed: bool = True):
    t, last = ("seed", n) if seed else (n - 1, n - 1)
    for i in reversed(range(last)):
        t = [i, t]
    return t


def _norm(t):
    return [_norm(t[0]), _norm(t[1])] if isinstance(t, (list, tuple)) else t


@checks("Reduction factorisation")
def check_merge_tree(w: MergeTreeWitness) -> Verdict:
    """A merge tree the reduction's policy admits, each contribution once."""
    n = _fiber_size(w.fiber)
    f = _fn(w.combine)
    _policy_ok(w.policy, f)
    leaves = tree_leaves(w.tree)
    _accounting(n, leaves, seed_expected=w.seed)
    seq = list(range(n))
    seed_left = {"fold_left": True, "fold_right": False}.get(w.policy, w.seed_side == "left")
    seed = ["seed"] if w.seed else []
    in_order = leaves == (seed + seq if seed_left else seq + seed)
    if may_permute(w.policy, f):
        return f"any tree and order admitted for '{f.name}' under {w.policy}"
    if w.policy in ("fold_left", "fold_right"):
        want = left_comb(n, w.seed) if w.policy == "fold_left" else right_comb(n, w.seed)
        if _norm(w.tree) == want:
            return f"the {w.policy} update chain"
        if may_regroup(w.policy, f) and in_order:
            return f"'{f.name}' is exactly associative: regrouping preserves the {w.policy} result"
        raise _Fail("strict fold order", f"{w.policy} fixes the update structure {want}; found {_norm(w.tree)}"
                    + ("" if f.kind != "merge" or f.associative else f" ('{f.name}' is not exactly associative)"))
    if not in_order:
        raise _Fail("order-preserving tree", f"leaf order {leaves} changes the contribution order; "
                                             f"'{f.name}' is not commutative under {w.policy}")
    return "an order-preserving tree"




# ---------------------------------------------------------------------------------------------
# Retiming/versioning

@dataclass
class Value:
    """One version of a value: written by an operation issued at `defined`, landed (complete) at
    `completes` (None: a plain write, readable from defined + 1), read at `uses`, held in `slot`."""
    name: str
    defined: int                 # issue time of the definition
    uses: tuple[int, ...]        # read times
    slot: object                 # the physical version slot it occupies
    completes: int | None = None # when an asynchronous write (a copy, a long-latency op) has landed


@dataclass
class VersionWitness:
    values: list
    same_cycle_reuse: bool = False     # may a slot be redefined in the cycle of its last read


def pipeline_versions(iterations: int, *, ii: int = 1, producer_stage: int = 0, consumer_stage: int = 1,
                      distance: int = 0, versions: int = 1) -> VersionWitness:
    """Value i is produced in iteration i at stage s_p into slot i mod V and read by iteration
    i + distance at stage s_c (stage s of iteration n issues at n*ii + s)."""
    return pipeline_schedule(iterations, ii=ii, stages={"p": producer_stage, "c": consumer_stage},
                             deps=[("p", "c", distance)], versions={"p": versions})


def pipeline_schedule(iterations: int, *, ii: int = 1, stages: dict, deps, latency: dict | None = None,
                      versions: dict | None = None) -> VersionWitness:
    """A software-pipelined loop as versions with completions: operation o of iteration n issues
    at n*ii + stages[o]; with latency[o] = L its write lands at issue + L (no latency: a plain
    write); each dependence (src, dst, distance) reads src's value of iteration n at dst's issue
    in iteration n + distance; src keeps versions[src] slots (default 1), iteration n in slot
    n mod V."""
    latency, versions = dict(latency or {}), dict(versions or {})
    vals = []
    for src in dict.fromkeys(d[0] for d in deps):
        V = versions.get(src, 1)
        for n in range(iterations):
            t = n * ii + stages[src]
            uses = tuple(sorted((n + dist) * ii + stages[dst] for s_, dst, dist in deps
                                if s_ == src and n + dist < iterations))
            lat = latency.get(src)
            vals.append(Value(f"{src}[{n}]", t, uses, (src, n % V) if V else (src, n), None if lat is None else t + lat))
    return VersionWitness(vals)


@checks("Retiming/versioning")
def check_versioning(w: VersionWitness) -> Verdict:
    """Retiming/versioning: reads after completions, no slot reused while live or in flight."""
    for v in w.values:
        if v.completes is not None and v.completes < v.defined:
            raise _Fail("well-typed witness", f"{v.name} completes at {v.completes}, before it is issued at {v.defined}")
        for u in v.uses:
            if v.completes is None and u <= v.defined:
                raise _Fail("dependence distances", f"{v.name} is read at time {u}, not after its definition "
                                                    f"at time {v.defined}")
            if v.completes is not None and u < v.completes:
                raise _Fail("completions", f"{v.name} is read at time {u}, before its write issued at {v.defined} "
                                           f"completes at {v.completes}")
    by_slot: dict = {}
    for v in w.values:
        by_slot.setdefault(v.slot, []).append(v)
    for slot, vs in by_slot.items():
        vs = sorted(vs, key=lambda v: v.defined)
        for a, b in zip(vs, vs[1:]):
            last = max(a.uses, default=a.defined)
            ok = b.defined >= last if w.same_cycle_reuse else b.defined > last
            if b.defined == a.defined or not ok:
                raise _Fail("version lifetimes", f"slot {slot} is redefined by {b.name} at time {b.defined} while "
                                                 f"{a.name} (defined at {a.defined}) is live until time {last}")
            if a.completes is not None and b.defined < a.completes:
                raise _Fail("reuse hazards", f"slot {slot} is redefined by {b.name} at time {b.defined} while "
                                             f"{a.name}'s write (issued at {a.defined}) is in flight until {a.completes}")
    return f"{len(w.values)} value(s) in {len(by_slot)} slot(s)"




# ---------------------------------------------------------------------------------------------
# Scope fusion and fission (need a program's effects)

FUSION_KINDS = ("parallel", "serial", "horizontal", "pipeline", "barrier")


@dataclass
class FusionWitness:
    """Fuse sibling scopes A = `first` and B = `second` (the next sibling in a seq).

    kind "parallel": parallel_D(A); parallel_D(B) => parallel_D(A; B) (pointwise, through `map`);
    "serial": serial_i(A(i)); serial_j(B(j)) => serial_i(A(i); B(i));
    "horizontal": independent siblings as one parallel over the tagged disjoint union D_A + D_B
    (domains need not match: it is not pointwise zipping);
    "pipeline": one pipelined loop, B(j) running `distance` iterations behind its A partner, and
    `versions` {array: IndexMap element coordinates -> slot} contracting arrays to rotating slots;
    "barrier": one group of `group_size` participants runs all of A, a complete barrier, then B
    (`participant`: instance coordinates -> participant, default its position in its domain)."""
    first: str
    second: str
    kind: str = "parallel"
    map: IndexMap | None = None          # B coordinates -> A coordinates (default: positional identity)
    distance: int = 0
    versions: dict | None = None
    group_size: int | None = None
    participant: IndexMap | None = None
    complete: bool = True                # barrier: every participant of the group arrives


def _siblings(program, w):
    from .program import Seq, find, nodes
    try:
        A, B = find(program, w.first), find(program, w.second)
    except (RegionError, TypeError) as exc:
        raise _Fail("adjacent siblings", str(exc))
    parent = next((n for n in nodes(program.body) if isinstance(n, Seq) and A in n.items), None)
    if parent is None or B not in parent.items or parent.items.index(B) != parent.items.index(A) + 1:
        raise _Fail("adjacent siblings", f"{w.second} is not the sibling right after {w.first} in a seq")
    return A, B


def _fusion(program, w: FusionWitness, gprs=None, machines=None) -> str:
    from . import effects as E
    from .deps import TableBuilder, crossing
    from .program import Parallel, Serial
    A, B = _siblings(program, w)
    if w.kind not in FUSION_KINDS:
        raise _Fail("scope kinds", f"kind must be one of {', '.join(FUSION_KINDS)}, got {w.kind!r}")
    want = Serial if w.kind in ("serial", "pipeline") else Parallel
    for n, p in ((A, w.first), (B, w.second)):
        if not isinstance(n, want):
            raise _Fail("scope kinds", f"{p} is a {type(n).__name__.lower()}, not a {want.__name__.lower()} scope")
    if isinstance(A, Serial) and A.carry:
        from .expr import Var, walk
        used = {v.name for e in _exprs_of(B) for v in walk(e) if isinstance(v, Var)}
        hit = sorted(set(A.carry) & used)
        if hit:
            raise _Fail("carried values", f"B uses A's carried value '{hit[0]}', which is final only after A's loop")
    if w.kind == "pipeline" and (not isinstance(w.distance, int) or isinstance(w.distance, bool) or w.distance < 0):
        raise _Fail("dependence distances", f"the distance must be a nonnegative integer, got {w.distance!r}")
    # the walks below visit at most the program's instances: bound them as events() does (too
    # large is unknown, not false)
    from .budget import DEFAULT_MAX_COST, WALK_BLOCK_COST, check_budget
    check_budget(program, DEFAULT_MAX_COST, None, None, WALK_BLOCK_COST)
    if w.kind == "barrier":
        return _barrier(program, w, A, B, gprs, machines)
    pairs = 0
    keys = E.Keys()
    for ctx in E.contexts(program, w.first):
        walker = E.Walker(program, gprs=gprs, machines=machines, renamed=False)
        env = E.root_env(walker).child(ctx)
        ai = walker.instances(A.domain, env, A.path)
        bi = walker.instances(B.domain, env, B.path)
        a_names = A.domain.names
        if w.kind == "horizontal":
            b_pos = [1] * len(bi)                         # tag 1; every A instance has tag 0
        else:
            b_pos = _aligned(w, A, B, ai, bi)
        ta, tb = TableBuilder(keys), TableBuilder(keys)
        walker.walk(A, env, dict(ctx))
        _fill(ta, walker.events, A, ai, (lambda k: 0) if w.kind == "horizontal" else (lambda k: k), ctx)
        walker.events = []
        walker.walk(B, env, dict(ctx))
        shift = w.distance if w.kind == "pipeline" else 0
        _fill(tb, walker.events, B, bi, lambda k: b_pos[k] + shift, ctx)
        TA, TB = ta.table(), tb.table()
        rule = "diagonal" if w.kind in ("parallel", "horizontal") else "le"
        cr = crossing(TA, TB, rule, keys)
        if cr is not None:
            cell = E.describe(program, cr.key, cr.cell)
            if w.kind == "horizontal":
                raise _Fail("independent siblings", f"{cr.kind} edge {cr.first} -> {cr.second} on {cell}: a tagged "
                                                    f"disjoint union runs the two scopes concurrently")
            if w.kind == "parallel":
                partner = f"{A.path} {fmt(a_names, tuple(ai[cr.second_pos].values()))}"
                raise _Fail("Dep_AB ⊆ diagonal", f"crossing {cr.kind} edge {cr.first} -> {cr.second} on {cell}: "
                                                 f"the fused scope runs the second with {partner}, so per-instance "
                                                 f"fusion would lose this edge")
            if w.kind == "pipeline":
                raise _Fail("dependence distances", f"{cr.kind} edge {cr.first} -> {cr.second} on {cell}: the first "
                                                    f"runs in pipelined iteration {cr.first_pos}, after the second's "
                                                    f"{cr.second_pos} (B lags by {w.distance}; a larger distance is needed)")
            f = _Fail("cross edges i <= j", f"{cr.kind} edge {cr.first} -> {cr.second} on {cell} goes backwards "
                                            f"in the fused order (A iteration {cr.first_pos} after B's {cr.second_pos})")
            f.crossing, f.cell = cr, cell
            raise f
        if w.kind == "pipeline" and w.versions:
            _pipeline_versions(program, w, TA, TB, keys)
        pairs += len(ai)
    what = {"horizontal": "instance(s) of A in the tagged union", "pipeline": "pipelined iteration(s)"}
    return f"{pairs} {what.get(w.kind, 'fused instance pair(s)')}"


def _aligned(w, A, B, ai, bi) -> list:
    """The A position each B instance fuses with (the map B -> A, checked bijective)."""
    a_rank = {tuple(c.values()): k for k, c in enumerate(ai)}
    a_names = A.domain.names
    if w.map is None and len(A.domain.axes) != len(B.domain.axes):
        raise _Fail("domains align", f"A has {len(A.domain.axes)} axes and B {len(B.domain.axes)}; give a map "
                                     f"(independent siblings of unlike domains fuse horizontally: a tagged "
                                     f"disjoint union, not pointwise zipping)")
    seen: dict = {}
    b_pos = []
    for c in bi:
        t = tuple(c.values())
        try:
            m = t if w.map is None else w.map(t)
        except EvalError as exc:
            raise _Fail("domains align", f"the map cannot be evaluated at B{fmt(B.domain.names, t)}: {exc}")
        if m not in a_rank:
            raise _Fail("domains align", f"B{fmt(B.domain.names, t)} maps to {fmt(a_names, m)}, "
                                         f"which is not an active instance of A")
        if m in seen:
            raise _Fail("domains align", f"B{fmt(B.domain.names, seen[m])} and B{fmt(B.domain.names, t)} both map "
                                         f"to A{fmt(a_names, m)}")
        seen[m] = t
        b_pos.append(a_rank[m])
    missing = [k for k in a_rank if k not in seen]
    if missing:
        raise _Fail("domains align", f"A{fmt(a_names, missing[0])} has no B instance to fuse with")
    if w.kind in ("serial", "pipeline") and any(x > y for x, y in zip(b_pos, b_pos[1:])):
        raise _Fail("domains align", "the map does not preserve B's iteration order")
    return b_pos


def _pipeline_versions(program, w, TA, TB, keys) -> None:
    """Contracted arrays: each written version of an element lives in slot(element) from its
    write to its last read in the pipelined order; a slot is not redefined while live."""
    import numpy as np
    from .effects import CELL_MASK, KEY_SHIFT
    for name, slot_map in w.versions.items():
        if name not in program.arrays or not isinstance(slot_map, IndexMap):
            raise _Fail("version constraints", f"versions maps array names to IndexMaps; {name!r} is not usable")
        code = keys.code.get(name)
        if code is None:
            continue
        shape = program.arrays[name].shape
        # The fused loop's iteration n runs A(n) as stage 0 at time n and B(n - distance) as stage 1
        # at time n + 1 (pipeline(D, Pi, P) with ii = 1).  Times are time * span + row: a table's
        # rows are in source order (an op reads before it writes) and B's rows count after A's, so
        # a write of A and a read of B at one time read as "overwritten before read": simultaneous
        # conflicting stages are a hazard, as the interpreter's pipeline check has it.
        span = len(TA.loc) + len(TB.loc) + 1
        rows = []
        for T, stage, base in ((TA, 0, 0), (TB, 1, len(TA.loc))):
            for r in np.nonzero((T.loc >> KEY_SHIFT) == code)[0].tolist():
                rows.append(((int(T.pos[r]) + stage) * span + base + r, (stage, r), int(T.write[r]),
                             int(T.loc[r]) & CELL_MASK, T.labels[int(T.inst[r])]))
        rows.sort(key=lambda r: r[1])              # source order: A before B
        vals, current = [], {}
        for t, _, wr, cell, label in rows:
            coords = tuple(int(x) for x in np.unravel_index(cell, shape))
            if wr:
                try:
                    sl = slot_map(coords)
                except EvalError as exc:
                    raise _Fail("version constraints", f"the slot of {name}{list(coords)} cannot be evaluated: {exc}")
                v = Value(f"{name}{list(coords)} from {label}", t, (), sl)
                vals.append(v)
                current[cell] = v
            elif cell in current:
                current[cell].uses += (t,)
            else:
                raise _Fail("version constraints", f"{label} reads {name}{list(coords)} before the loop writes it; a "
                                                   f"contracted array holds only what the loop writes")
        v = check_versioning(VersionWitness(vals))
        if not v:
            raise _Fail("version constraints", f"{name}: {v.obligation}: {v.detail} (times: pipelined time x {span} + "
                                               f"access order)")


def _barrier(program, w, A, B, gprs, machines) -> str:
    from . import effects as E
    if not isinstance(w.group_size, int) or isinstance(w.group_size, bool) or w.group_size < 1:
        raise _Fail("one group", f"a barrier fusion needs the group's size (a positive integer), got {w.group_size!r}")
    if w.complete is not True:
        raise _Fail("complete barrier", "the barrier is not reached by every participant of the group (a predicated "
                                        "or partial barrier): A's results would not all precede B")
    n = 0
    for ctx in E.contexts(program, w.first):
        walker = E.Walker(program, gprs=gprs, machines=machines, renamed=False)
        env = E.root_env(walker).child(ctx)
        parts = set()
        for node in (A, B):
            for k, c in enumerate(walker.instances(node.domain, env, node.path)):
                t = tuple(c.values())
                try:
                    p = k if w.participant is None else w.participant(t)
                except EvalError as exc:
                    raise _Fail("one group", f"the participant of {node.path}{fmt(node.domain.names, t)} cannot be "
                                             f"evaluated: {exc}")
                parts.add(p)
        if len(parts) > w.group_size:
            raise _Fail("one group", f"A and B run on {len(parts)} participants, more than one group of {w.group_size}: "
                                     f"a group barrier is not a device-wide phase boundary (keep a launch boundary)")
        n += 1
    return f"one group with a complete barrier in {n} context(s): every A instance precedes every B instance"


def _fill(tb, events, node, insts, pos_of, ctx) -> None:
    names = node.domain.names
    index = {tuple(c[n] for n in names): k for k, c in enumerate(insts)}
    labels = [tb.instance(f"{node.path} {fmt(names, tuple(c.values()))}") for c in insts]
    for ev in events:
        k = index[tuple(ev.coords[n] for n in names)]
        for a in ev.accesses:
            tb.add(labels[k], a.key, a.cells, a.write, pos_of(k))


def _exprs_of(node):
    from .expr import Load
    from .program import nodes, Op, If, Reduce, GprOp
    for n in nodes(node):
        for ax in getattr(getattr(n, "domain", None), "axes", ()):
            yield ax.lo
            yield ax.hi
        if isinstance(n, Op):
            for s in n.stmts:
                yield s.value
                if isinstance(s.target, Load):
                    yield s.target
        elif isinstance(n, If):
            yield n.pred
        elif isinstance(n, GprOp):
            yield n.value
        elif isinstance(n, Reduce) and not n.tiles:
            yield n.value
        for e in getattr(n, "carry", {}).values():
            yield e


def check_scope_fusion(program, w: FusionWitness, gprs: dict | None = None,
                       machines: list | None = None) -> Verdict:
    """`machines`: initial states for tile leaves (descriptors, GPR offsets)."""
    return _verdict("Scope fusion", _fusion, program, w, gprs, machines)


def _doc_at(doc: dict, path: str):
    """The JSON value at a node path ($.body.seq[1].body) of a dumped program."""
    cur = doc
    for part in path[len("$."):].replace("]", "").replace("[", ".").split("."):
        cur = cur[int(part)] if part.isdigit() else cur[part]
    return cur


def apply_fusion(program, w: FusionWitness):
    """The fused program: parallel_D(A; B) / serial_D(A; B) (kinds parallel, serial, pipeline --
    the pipeline's reference semantics is the fused serial loop), or for a horizontal fusion one
    parallel over the tagged union [tag, axes...] running A where tag == 0 and B where tag == 1.
    Requires B's axes named as A's and no carried values in B.  Checks nothing: call the checker."""
    from .loader import dump, load
    from .program import find
    A, B = find(program, w.first), find(program, w.second)
    if [a.name for a in A.domain.axes] != [b.name for b in B.domain.axes] or getattr(B, "carry", None):
        raise ValueError("apply_fusion needs B's axes named as A's and no carried values in B")
    doc = dump(program)
    parent_path, k = w.first.rsplit(".seq[", 1)
    k = int(k.rstrip("]"))
    items = _doc_at(doc, parent_path)["seq"]
    a, b = items[k], items[k + 1]
    fused = dict(a)
    if w.kind == "horizontal":
        key = "parallel"
        tag = "tag"
        while tag in program.params or any(tag == ax.name for ax in A.domain.axes):
            tag += "_"
        fused[key] = [[tag, 2]] + [[x[0], f"(1 - {tag}) * ({x[1]}) + {tag} * ({y[1]})",
                                    f"(1 - {tag}) * ({x[2]}) + {tag} * ({y[2]})"] for x, y in zip(a[key], b[key])]
        fused["where"] = f"({tag} == 0 and ({a.get('where', 1)})) or ({tag} == 1 and ({b.get('where', 1)}))"
        fused["body"] = {"if": f"{tag} == 0", "then": a["body"], "else": b["body"]}
    else:
        fused["body"] = {"seq": [a["body"], b["body"]]}
    if w.kind in ("serial", "pipeline") and "next" in b:
        fused.setdefault("next", {}).update(b["next"])
    items[k:k + 2] = [fused]
    return load(doc)


@dataclass
class FissionWitness:
    """Split the scope at `scope` (a parallel or serial whose body is a seq) before body item
    `at`: parallel_D(A; B) => parallel_D(A); parallel_D(B), likewise serial."""
    scope: str
    at: int


def apply_fission(program, w: FissionWitness):
    """The fissioned program (each part keeps the scope's domain and `where`).  Checks only that
    the split exists; a local of the first part used by the second makes the result ill-formed
    (RegionError): call check_fission."""
    from .loader import dump, load
    from .program import Parallel, Seq, Serial, find
    node = find(program, w.scope)
    if not isinstance(node, (Parallel, Serial)) or not isinstance(node.body, Seq):
        raise _Fail("splittable scope", f"{w.scope} is not a parallel or serial scope whose body is a seq")
    n = len(node.body.items)
    if not isinstance(w.at, int) or isinstance(w.at, bool) or not 0 < w.at < n:
        raise _Fail("splittable scope", f"the split point must be 1..{n - 1} (body items), got {w.at!r}")
    if isinstance(node, Serial) and node.carry:
        raise _Fail("carried values", f"{w.scope} carries {sorted(node.carry)[0]!r} through every iteration; each "
                                      f"part would need its own recurrence")
    doc = dump(program)
    scope = _doc_at(doc, w.scope)
    items = scope["body"]["seq"]
    first, second = dict(scope), dict(scope)
    first["body"], second["body"] = {"seq": items[:w.at]}, {"seq": items[w.at:]}
    _replace_at(doc, w.scope, {"seq": [first, second]})       # the parts: {scope}.seq[0] and .seq[1]
    return load(doc)


def _replace_at(doc: dict, path: str, value) -> None:
    if path == "$.body":
        doc["body"] = value
        return
    parent, last = path.rsplit(".", 1)
    holder = _doc_at(doc, parent)
    if "[" in last:
        name, idx = last[:-1].split("[")
        holder[name][int(idx)] = value
    else:
        holder[last] = value


def _fission(program, w: FissionWitness, gprs=None, machines=None) -> str:
    from .program import Parallel, find
    try:
        split = apply_fission(program, w)
    except RegionError as exc:
        raise _Fail("locals", f"the second part no longer sees a local of the first ({exc.why}); materialize it in "
                              f"an array (scalar expansion) before the split")
    node = find(program, w.scope)
    a, b = f"{w.scope}.seq[0]", f"{w.scope}.seq[1]"
    # the parts are siblings of the new program: fission is admitted exactly when fusing them
    # back is (the same dependences, the other way round)
    v = check_scope_fusion(split, FusionWitness(a, b, "parallel" if isinstance(node, Parallel) else "serial"),
                           gprs, machines)
    if v:
        return f"{w.scope} splits before body item {w.at}: " + v.detail
    if not v.decided:
        raise UndecidedError(v.detail.replace(a, f"{w.scope} part 1").replace(b, f"{w.scope} part 2"))
    cr = getattr(v, "crossing", None)
    if cr is None:
        raise _Fail("preserved cross-region dependences",
                    v.detail.replace(a, f"{w.scope} part 1").replace(b, f"{w.scope} part 2"))
    one, two = (cr.first.replace(a, f"{w.scope} part 1"), cr.second.replace(b, f"{w.scope} part 2"))
    raise _Fail("preserved cross-region dependences",
                f"the loop runs {two} before {one} (both touch {v.cell}); the split would run every part 1 first")


def check_fission(program, w: FissionWitness, gprs: dict | None = None, machines: list | None = None) -> Verdict:
    """Scope fission: the split keeps every cross-part dependence (a parallel: none between
    distinct instances; a serial: none from part 2 of an iteration to part 1 of a later one)."""
    return _verdict("Scope fission", _fission, program, w, gprs, machines)
