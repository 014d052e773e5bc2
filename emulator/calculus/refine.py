"""Composing refinements (seed 002, law 2) and re-homing across an identity cut.

**Composition.**  "Two such remaps compose by ordinary map composition; bijections and the
commuting prefix equations compose.  Contextual refinement rules compose only when their effect
and numerical contracts are preserved.  An arbitrary per-kernel allclose tolerance is not a
transitive contextual equivalence and cannot replace that condition."  A `Refinement` is one
step: a witness with the contracts of its source and target; `check_composition(steps)` admits
the chain when, in order:

- **well-typed witness**: every step is a Refinement with Contracts;
- **no tolerance**: no contract accepts results within a tolerance;
- **steps admitted**: each witness passes its own checker (an undecided one makes the chain unknown);
- **chain**: each step starts where the previous ended (its source contract is the previous
  target; consecutive reindexings share their middle domain, point for point);
- **effect contract preserved**: a step's target has its source's observable effects;
- **numerical contract preserved**: per reduction, the target's policy admits no computation its
  source's did not (fold_left, fold_right < ordered_tree < unordered_tree by inclusion of the
  admitted sets; the strict folds are incomparable);
- **composite admitted** (consecutive reindexings): their composition (`compose_reindex`) is
  checked as one witness, the law's conclusion verified rather than assumed.

**Re-homing.**  "An identity-defining cut needs a bijective tau_j on active prefixes.  Crossing
that boundary requires an explicit re-anchoring/re-homing refinement, not just equal flattened
cardinalities ... Re-homing is a separate refinement with resource/effect obligations."  A
`RehomeWitness` moves the owners of an old cut j (old prefixes) to new homes (new prefixes of
length rho); `check_rehome` checks: **active-domain bijection**; **re-homing map** (every active
owner gets one active home, distinct owners distinct homes); and per occurrence and owned
resource, run away from its owner's home: **resource effects** (a write there needs a declared
combine, an explicit contract such as atomics) and **resource access served** (a declared
transfer between the owner's home and the running prefix).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .domains import FiniteDomain, IndexMap, fmt
from .errors import UndecidedError
from .expr import EvalError
from .witnesses import (Cut, ReindexWitness, Verdict, _Fail, _images, _verdict, check_bind, check_merge_tree, first_clash,
                        check_reduction, check_reindex, check_split_fuse, check_versioning)

# policy -> the policies whose admitted computations include all of its own (docs/calculus.md,
# "Reductions": a fold is one in-order tree, an in-order tree one of all trees)
_WITHIN = {"fold_left": {"fold_left", "ordered_tree", "unordered_tree"},
           "fold_right": {"fold_right", "unordered_tree"},
           "ordered_tree": {"ordered_tree", "unordered_tree"},
           "unordered_tree": {"unordered_tree"}}


@dataclass(frozen=True)
class Contract:
    """What a program state promises its context: its observable `effects` (names), its
    reductions' `numerics` ((reduction, policy) pairs), and -- never composable -- a `tolerance`
    within which results are accepted."""
    effects: frozenset = frozenset()
    numerics: tuple = ()
    tolerance: float | None = None


@dataclass
class Refinement:
    witness: object
    source: Contract = field(default_factory=Contract)
    target: Contract = field(default_factory=Contract)


def check_witness(w) -> Verdict:
    """The checker of any single witness."""
    from .groups import SharedGroupWitness, check_shared_group
    from .orders import StrengthWitness, check_strengthening
    from .witnesses import BindWitness, MergeTreeWitness, ReductionWitness, SplitFuseWitness, VersionWitness
    table = ((ReindexWitness, check_reindex), (SplitFuseWitness, check_split_fuse), (BindWitness, check_bind),
             (ReductionWitness, check_reduction), (MergeTreeWitness, check_merge_tree),
             (VersionWitness, check_versioning), (StrengthWitness, check_strengthening),
             (SharedGroupWitness, check_shared_group), (RehomeWitness, check_rehome))
    for cls, check in table:
        if isinstance(w, cls):
            return check(w)
    return Verdict("Composition", False, "well-typed witness", f"{type(w).__name__} is not a witness")


def compose_reindex(first: ReindexWitness, second: ReindexWitness) -> ReindexWitness:
    """first: old -> mid (tau1: mid -> old), second: mid -> new (tau2: new -> mid): the remap
    old -> new with tau = tau1 o tau2 and, per observed cut of `first` (j, rho1), the cut
    (j, rho2) where `second` observes the mid cut rho1, tau_j composed when both are given."""
    t1, t2 = first.tau, second.tau

    def tau(*c):
        return t1(t2(tuple(c)))
    cuts = []
    for c1 in first.cuts:
        c2 = next((c for c in second.cuts if c.j == c1.rho), None)
        if c2 is None:
            raise _Fail("chain", f"the first remap observes cut {c1.j} as mid prefix {c1.rho}, which the second "
                                 f"does not observe: it may scramble that identity")
        tj = None
        if c1.tau_j is not None and c2.tau_j is not None:
            a, b = c1.tau_j, c2.tau_j
            tj = IndexMap(second.new.names[:c2.rho], lambda *c, a=a, b=b: a(b(tuple(c))))
        cuts.append(Cut(c1.j, c2.rho, tj))
    return ReindexWitness(first.old, second.new, IndexMap(second.new.names, tau), tuple(cuts))


def _same_domain(a: FiniteDomain, b: FiniteDomain) -> bool:
    return a.names == b.names and a.points() == b.points()


def _numerics_ok(src: Contract, tgt: Contract, k: int) -> None:
    before = dict(src.numerics)
    for red, policy in tgt.numerics:
        was = before.get(red)
        if was is None:
            continue
        if was not in _WITHIN.get(policy, ()):          # target admits a computation the source did not
            raise _Fail("numerical contract preserved",
                        f"step {k} turns {red}'s {was} into {policy}, which admits computations {was} does not")
    lost = [r for r in before if r not in dict(tgt.numerics)]
    if lost:
        raise _Fail("numerical contract preserved", f"step {k} drops the numerical contract of {lost[0]}")


def _composition(steps) -> str:
    if not isinstance(steps, (list, tuple)) or not steps:
        raise _Fail("well-typed witness", "a composition is a nonempty list of Refinement steps")
    for k, st in enumerate(steps):
        if not isinstance(st, Refinement) or not isinstance(st.source, Contract) or not isinstance(st.target, Contract):
            raise _Fail("well-typed witness", f"step {k} is not a Refinement(witness, source Contract, target Contract)")
    for k, st in enumerate(steps):
        for side in ("source", "target"):
            if getattr(st, side).tolerance is not None:
                raise _Fail("no tolerance", f"step {k}'s {side} accepts results within {getattr(st, side).tolerance!r}: "
                                            f"an allclose tolerance is not a transitive contextual equivalence")
    for k, st in enumerate(steps):
        v = check_witness(st.witness)
        if not v.decided:
            raise UndecidedError(f"step {k}: {v.detail}")
        if not v:
            raise _Fail("steps admitted", f"step {k} ({v.rule}): {v.obligation}: {v.detail}")
    for k in range(1, len(steps)):
        a, b = steps[k - 1], steps[k]
        if a.target != b.source:
            raise _Fail("chain", f"step {k} starts from a contract that is not step {k - 1}'s target")
        if isinstance(a.witness, ReindexWitness) and isinstance(b.witness, ReindexWitness) and \
                not _same_domain(a.witness.new, b.witness.old):
            raise _Fail("chain", f"step {k}'s old domain {b.witness.old.describe()} is not step {k - 1}'s new "
                                 f"domain {a.witness.new.describe()}")
    for k, st in enumerate(steps):
        if st.target.effects != st.source.effects:
            gone = sorted(st.source.effects - st.target.effects)
            new = sorted(st.target.effects - st.source.effects)
            raise _Fail("effect contract preserved", f"step {k} " + (f"loses the observable effect {gone[0]}" if gone
                                                                     else f"adds the observable effect {new[0]}"))
        _numerics_ok(st.source, st.target, k)
    composed = 0
    for k in range(1, len(steps)):
        a, b = steps[k - 1].witness, steps[k].witness
        if isinstance(a, ReindexWitness) and isinstance(b, ReindexWitness):
            v = check_reindex(compose_reindex(a, b))
            if not v:
                raise _Fail("composite admitted", f"steps {k - 1} and {k}: {v.obligation}: {v.detail}")
            composed += 1
    return f"{len(steps)} step(s) compose" + (f"; {composed} composite remap(s) checked" if composed else "")


def check_composition(steps) -> Verdict:
    return _verdict("Composition", _composition, steps)


# ---------------------------------------------------------------------------------------------
# Re-homing / re-anchoring

@dataclass(frozen=True)
class Resource:
    """A resource owned per old owner prefix (an allocation anchored at the cut)."""
    name: str
    written: bool = False
    combine: str | None = None          # an explicit contract for remote writes (e.g. an atomic add)


@dataclass
class RehomeWitness:
    old: FiniteDomain
    new: FiniteDomain
    tau: IndexMap                       # new occurrence -> old occurrence
    cut: int                            # j: the identity-defining old prefix (the owner)
    rho: int                            # the new prefix an occurrence runs on
    home: IndexMap                      # old owner prefix -> its new home prefix
    resources: tuple = ()
    transfers: tuple = ()               # (old owner prefix, new prefix) pairs with a communication


def _rehome(w: RehomeWitness) -> str:
    if not (isinstance(w.cut, int) and isinstance(w.rho, int) and 0 <= w.cut <= len(w.old.axes)
            and 0 <= w.rho <= len(w.new.axes)):
        raise _Fail("well-typed witness", f"cut {w.cut!r} / rho {w.rho!r} exceed the domains' ranks")
    img = _images(w.old, w.new, w.tau, "active-domain bijection")
    j, rho = w.cut, w.rho
    on, nn = w.old.names[:j], w.new.names[:rho]
    owners = sorted({o[:j] for o in img.values()})
    prefixes = {n[:rho] for n in img}
    homes: dict = {}
    for q in owners:
        try:
            h = tuple(w.home(q))
        except (EvalError, TypeError, ValueError) as exc:
            raise _Fail("re-homing map", f"the home of owner {fmt(on, q)} cannot be evaluated: {exc}")
        if h not in prefixes:
            raise _Fail("re-homing map", f"owner {fmt(on, q)} is homed at {fmt(nn, h)}, which runs no occurrence")
        homes[q] = h
    clash = first_clash(homes.items())
    if clash is not None:
        h, a, b = clash
        raise _Fail("re-homing map", f"owners {fmt(on, a)} and {fmt(on, b)} are both homed at {fmt(nn, h)}: "
                                     f"their allocation identities would merge")
    try:
        transfers = {(tuple(a), tuple(b)) for a, b in w.transfers}
        resources = [r if isinstance(r, Resource) else Resource(*r) for r in w.resources]
    except (TypeError, ValueError):
        raise _Fail("well-typed witness", "transfers are (owner prefix, new prefix) pairs; resources are "
                                          "Resource(name, written, combine)") from None
    away = 0
    for n, o in img.items():
        q, at = o[:j], n[:rho]
        if at == homes[q]:
            continue
        away += 1
        for r in resources:
            if r.written and r.combine is None:
                raise _Fail("resource effects", f"new {fmt(w.new.names, n)} (old {fmt(w.old.names, o)}) writes owner "
                                                f"{fmt(on, q)}'s {r.name} from {fmt(nn, at)}, away from its home "
                                                f"{fmt(nn, homes[q])}: a remote write needs a declared combine")
            if (q, at) not in transfers:
                raise _Fail("resource access served", f"new {fmt(w.new.names, n)} (old {fmt(w.old.names, o)}) uses "
                                                      f"owner {fmt(on, q)}'s {r.name} from {fmt(nn, at)} with no "
                                                      f"transfer from its home {fmt(nn, homes[q])}")
    return f"{len(owners)} owner(s) re-homed; {away} occurrence(s) run away from their owner's home"


def check_rehome(w: RehomeWitness) -> Verdict:
    return _verdict("Re-homing", _rehome, w)
