"""Logical programs sharing one group: virtual context and allocation-instance identities.

Seed 002: "Multiple logical programs may share a group; their virtual context and
allocation-instance identities must remain distinct."  A `SharedGroupWitness` binds the logical
instances of several programs (members) to the participants and local times of one group, gives
each member a virtual context, and maps each member's logical allocations to allocation
instances (the physical buffers).  `check_shared_group` checks, vectorised over instances:

| obligation | what |
|---|---|
| well-typed witness | integer arrays of matching lengths, member indices in range |
| target containment | 0 <= participant < workers, 0 <= time |
| exact coverage | no (participant, time) slot runs two logical instances |
| distinct virtual contexts | no two members share a context (their identities stay apart) |
| distinct allocation instances | every (member, logical allocation) appears once and no two share an allocation instance |

The batch engine's own decision -- running N machines as one cohort (emulator/batch.py) -- is
such a witness: `cohort_witness` builds it from the cohorts (machine k is member k, its context;
PE p of machine k in cohort row j is participant j * NUM_PES + p; tile t of PE p of machine k is
the allocation instance (p, t, row j) of the stacked arrays), and `check_cohorts` also checks
that every machine is in exactly one cohort or runs alone.  It costs a few NumPy calls per run
(docs/calculus.md, "Shared groups"), never per element or per block.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..state import TILE_ID_LIMIT
from .witnesses import Verdict, _Fail, _verdict

_RULE = "Bind/serialize (shared group)"


@dataclass
class SharedGroupWitness:
    """Per logical instance i: its member `member[i]`, participant `participant[i]` and local time
    `time[i]`; per member m: its virtual context `context[m]`; per logical allocation j: its
    member `alloc_member[j]`, name code `alloc_name[j]` and allocation instance `alloc_instance[j]`
    (one integer code per physical buffer).  `names` are the members' names for diagnostics."""
    member: object
    participant: object
    time: object
    context: object
    workers: int
    alloc_member: object = field(default_factory=lambda: np.zeros(0, np.int64))
    alloc_name: object = field(default_factory=lambda: np.zeros(0, np.int64))
    alloc_instance: object = field(default_factory=lambda: np.zeros(0, np.int64))
    names: list = field(default_factory=list)


def _ints(name: str, v, n: int | None = None) -> np.ndarray:
    try:
        a = np.asarray(v)
    except Exception:                     # noqa: BLE001 - an untrusted field of any type
        raise _Fail("well-typed witness", f"{name} is not an array of integers") from None
    if a.ndim != 1 or a.dtype.kind not in "iu" or a.dtype == bool:
        raise _Fail("well-typed witness", f"{name} must be a 1-D array of integers, got "
                                          f"{a.ndim}-D {a.dtype}")
    if n is not None and len(a) != n:
        raise _Fail("well-typed witness", f"{name} has {len(a)} entries; expected {n}")
    return a.astype(np.int64, copy=False)


def _first_duplicate(keys: np.ndarray) -> tuple[int, int] | None:
    """Indices (a, b), a < b, of the first repeated key (by b), or None."""
    if len(keys) < 2:
        return None
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    same = np.nonzero(k[1:] == k[:-1])[0]
    if not len(same):
        return None
    pairs = np.stack([order[same], order[same + 1]], axis=1)
    b = int(np.argmin(pairs.max(axis=1)))
    a, c = sorted(map(int, pairs[b]))
    return a, c


def _distinct(keys: np.ndarray, obligation: str, words) -> None:
    """_Fail(obligation, words(a, b)) at the first repeated key."""
    dup = _first_duplicate(keys)
    if dup is not None:
        raise _Fail(obligation, words(*dup))


def _shared_group(w: SharedGroupWitness) -> str:
    member = _ints("member", w.member)
    n = len(member)
    part, time = _ints("participant", w.participant, n), _ints("time", w.time, n)
    ctx = _ints("context", w.context)
    if not isinstance(w.workers, int) or isinstance(w.workers, bool) or w.workers < 0:
        raise _Fail("well-typed witness", f"workers must be a nonnegative integer, got {w.workers!r}")
    am = _ints("alloc_member", w.alloc_member)
    an, ai = _ints("alloc_name", w.alloc_name, len(am)), _ints("alloc_instance", w.alloc_instance, len(am))
    names = list(w.names) if len(w.names) == len(ctx) else [f"member {m}" for m in range(len(ctx))]
    for what, arr in (("member", member), ("alloc_member", am)):
        bad = np.nonzero((arr < 0) | (arr >= len(ctx)))[0]
        if len(bad):
            raise _Fail("well-typed witness", f"{what}[{int(bad[0])}] = {int(arr[bad[0]])} names no member "
                                              f"(0..{len(ctx) - 1})")
    out = np.nonzero((part < 0) | (part >= w.workers) | (time < 0))[0]
    if len(out):
        i = int(out[0])
        raise _Fail("target containment", f"{names[member[i]]} instance {i} runs on participant {int(part[i])} at "
                                          f"time {int(time[i])}; the group has participants 0..{w.workers - 1}")
    _distinct(part * (int(time.max(initial=0)) + 1) + time, "exact coverage", lambda a, b: (
        f"{names[member[a]]} instance {a} and {names[member[b]]} instance {b} share participant {int(part[a])} at "
        f"time {int(time[a])}"))
    _distinct(ctx, "distinct virtual contexts", lambda a, b: (
        f"{names[a]} and {names[b]} share virtual context {int(ctx[a])}: their identities would merge"))
    span = int(an.max(initial=0)) + 1
    _distinct(am * span + an, "distinct allocation instances", lambda a, b: (
        f"{names[am[a]]} lists its allocation {int(an[a])} twice (entries {a} and {b})"))
    _distinct(ai, "distinct allocation instances", lambda a, b: (
        f"{names[am[a]]} allocation {int(an[a])} and {names[am[b]]} allocation {int(an[b])} share allocation "
        f"instance {int(ai[a])}"))
    return f"{len(ctx)} member(s), {n} instance(s), {len(am)} allocation(s) on {w.workers} participant(s)"


def check_shared_group(w: SharedGroupWitness) -> Verdict:
    return _verdict(_RULE, _shared_group, w)


# ---------------------------------------------------------------------------------------------
# The batch engine's cohorts

def cohort_witness(ids, tiles: dict, pes: int = 4) -> SharedGroupWitness:
    """The cohort of machines `ids` (stack row j holds machine ids[j]) with tiles {PE: [tile id,
    ...]} as a shared group: member j = machine ids[j] (its context), instance (j, p) on
    participant j * pes + p, allocation (PE p, tile t) of member j = stacked slot (p, t), row j."""
    ids = np.asarray(ids, np.int64)
    n = len(ids)
    rows = np.repeat(np.arange(n, dtype=np.int64), pes)
    lane = np.tile(np.arange(pes, dtype=np.int64), n)
    keys = sorted((int(p), int(t)) for p, ts in tiles.items() for t in ts)
    # the name of (PE p, tile t): p * 2^32 + t, one code per pair for every tile id a machine may
    # hold ([0, 2^32)); p << 16 | t named PE 0's tile 65536 and PE 1's tile 0 alike
    codes = np.array([p * TILE_ID_LIMIT + t for p, t in keys], np.int64)
    am = np.repeat(np.arange(n, dtype=np.int64), len(codes))
    an = np.tile(codes, n)
    slot = np.tile(np.arange(len(codes), dtype=np.int64), n)      # the stacked slot of (p, t)
    return SharedGroupWitness(member=rows, participant=rows * pes + lane, time=np.zeros(n * pes, np.int64),
                              context=ids, workers=n * pes, alloc_member=am, alloc_name=an,
                              alloc_instance=slot * max(n, 1) + am, names=[f"machine {int(k)}" for k in ids])


def check_cohorts(n_machines: int, cohorts, alone=(), pes: int = 4) -> Verdict:
    """`cohorts`: (ids, tiles) per cohort; `alone`: machines running on their own.  Admitted when
    every machine 0..n-1 is in exactly one cohort or alone and each cohort is a valid shared
    group (check_shared_group on cohort_witness)."""
    all_ids = np.concatenate([np.asarray(ids, np.int64) for ids, _ in cohorts] + [np.asarray(list(alone), np.int64)])
    dup = _first_duplicate(all_ids)
    if dup is not None:
        return Verdict(_RULE, False, "exact coverage", f"machine {int(all_ids[dup[0]])} is placed twice (in two "
                                                       f"cohorts, or in a cohort and alone)")
    missing = np.setdiff1d(np.arange(n_machines, dtype=np.int64), all_ids)
    extra = np.setdiff1d(all_ids, np.arange(n_machines, dtype=np.int64))
    if len(missing) or len(extra):
        what = f"machine {int(missing[0])} is in no cohort and not alone" if len(missing) else \
            f"machine {int(extra[0])} is not one of the batch's {n_machines}"
        return Verdict(_RULE, False, "exact coverage", what)
    for c, (ids, tiles) in enumerate(cohorts):
        v = check_shared_group(cohort_witness(ids, tiles, pes))
        if not v:
            return Verdict(_RULE, False, v.obligation, f"cohort {c}: {v.detail}")
    return Verdict(_RULE, True, None, f"{n_machines} machine(s): {len(cohorts)} cohort(s), {len(all_ids) - sum(len(i) for i, _ in cohorts)} alone")
