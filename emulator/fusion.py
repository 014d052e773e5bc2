"""The batch engine's fusion planner: which runs of consecutive blocks may execute as one pass.

A *chain* is a maximal run of consecutive blocks that are element-wise (binary, unary,
ternary schemas, and TCMP, whose predicate holds one bit per element point), read no GPR
offsets (no B.IOR) and share PE_MASK, ValidRow and ValidCol: a dependence between two of them
can then only join the same element point of the same PE.  Whether running a chain as one
fused scope refines the source program is not assumed here: `admitted` asks
`emulator.calculus.check_plan` (docs/calculus.md, "The planner-facing check") for the plan
with one `fused` step holding every event of the chain, on the cohort's own descriptors, and
the engine fuses only what it admits.  TEXTRACT and TINSERT never enter a chain (once offsets
move their reads, those cross element points, which check_plan rejects as "Dep ⊆
diagonal"); nor do TCVT, TSEL and TIMG2COL, which the fused pass does not implement.

Verdicts are cached by (the chain's blocks, the machines' shape) in a functools.lru_cache of
CACHE_LIMIT entries (isa.memo rule 2), so a batch run asks once per distinct chain; chains are cut at MAX_CHAIN blocks and CHECK_POINTS element points, which
bounds each check's cost (blocks of large tiles do not fuse: they gain least from it).
"""
from __future__ import annotations

from functools import lru_cache

from isa import instructions as I
from isa.errors import IllegalBlockException
from isa.legality import ResolvedBlock

from .calculus.errors import RegionError
from .calculus.plan import Plan, Step, check_plan, source_events, stream_program
from .calculus.witnesses import Verdict

POINTWISE = frozenset({I.BINARY, I.UNARY, I.TERNARY, I.COMPARE})
MAX_CHAIN = 16           # blocks per fused chain: bounds one check_plan call (events x cells)
CHECK_POINTS = 1 << 16   # element points (blocks x PEs x ValidRow x ValidCol) one check may cover
CACHE_LIMIT = 1024       # verdicts kept (least recently used first out)


def _key(rb: ResolvedBlock | None):
    """The chain-compatibility key of a block, or None when it never fuses."""
    if rb is None or rb.instr.schema not in POINTWISE or rb.offset_regs is not None or rb.PE_MASK == 0:
        return None
    return (rb.PE_MASK, rb.ValidRow, rb.ValidCol)


def _longest(key) -> int:
    """The longest chain of blocks with this key whose check stays within CHECK_POINTS
    (check_plan's cost grows with the element points it joins: about 0.5 s for 8 blocks of
    4 x 128x128 on the development box)."""
    if key is None:
        return 0
    mask, vr, vc = key
    return min(MAX_CHAIN, CHECK_POINTS // (bin(mask).count("1") * vr * vc))


def chains(resolved: list[ResolvedBlock | None]) -> list[tuple[int, int]]:
    """[start, stop) of every run of >= 2 consecutive fusible blocks with one key, at most
    MAX_CHAIN long and within CHECK_POINTS (`resolved[i]` is None for a block that failed the
    stateless rules)."""
    out, start = [], 0
    keys = [_key(rb) for rb in resolved] + [None]
    for i in range(1, len(keys)):
        if keys[i] is None or keys[i] != keys[start] or i - start >= _longest(keys[start]):
            if keys[start] is not None and i - start >= 2:
                out.append((start, i))
            start = i
    return out


def admitted(blocks, shape, machine) -> bool:
    """Whether running `blocks` as one fused step refines them on machines of shape `shape`
    (their configuration and, per PE, tile id -> descriptor): check_plan's verdict on
    `machine()`, one machine of that shape (called only when the verdict is not cached yet)."""
    return _admitted(tuple(blocks), shape, _OnDemand(machine))


class _OnDemand:
    """The machine of a verdict not cached yet, made on demand.  Every one compares equal, so
    the cache keys on (blocks, shape) alone, and it lets go of its maker once used (the cache
    keeps no machine alive)."""
    __slots__ = ("make",)

    def __init__(self, make):
        self.make = make

    def __eq__(self, other) -> bool:
        return isinstance(other, _OnDemand)

    def __hash__(self) -> int:
        return 0

    def __call__(self):
        make, self.make = self.make, None
        return make()


@lru_cache(maxsize=CACHE_LIMIT)
def _admitted(blocks: tuple, shape, machine: _OnDemand) -> bool:
    return bool(verdict(blocks, machine()))


def verdict(blocks, machine) -> Verdict:
    """check_plan's verdict on one `fused` step holding every event of `blocks`, in source order."""
    program = stream_program(list(blocks))
    try:
        evs = source_events(program, machines=[machine])
    except (RegionError, IllegalBlockException) as exc:     # e.g. a block illegal on this machine
        return Verdict("Plan", False, "effects known", str(exc))
    if not evs:
        return Verdict("Plan", False, "events exist", "the blocks have no events")
    plan = Plan([Step("fused", [e.ordinal for e in evs])])
    return check_plan(program, plan, machines=[machine], events=evs)
