"""Coverage closure: the coverage point each case of a partition goes to (docs/golden-format.md,
"Allocation").

A partition's coverage points are its applicable classes, and for a class with cross bins
(coverage.CoverageClass.bins: the padding classes, dest_aliases_source) each bin.  Case i of a
partition goes to:

1. i < P (the number of points): the i-th point of the priority order -- the classes' first
   points interleaved by kind (value, shape, illegal, value, ...), each kind in its own order
   (values: random, specials, the boundary windows, the rest; shapes: the padding classes,
   partial_pe_mask, all_pes, dest_aliases_source, the rest; illegal classes in table order),
   then the remaining cross bins, bin by bin.  So every point gets a case before any gets a
   second, and at any size the kinds share the first cases evenly.
2. after that, round-robin: with `--per-class` over every point in priority order (so K * P
   cases give each point exactly K); with `--cases` the kinds take turns by KIND_SHARE (a
   20-slot round: value 15, shape 4, illegal 1) and round-robin within a kind.

Everything is closed-form arithmetic on the case index, so the count of each point in any
range of cases -- a chunk -- is exact, independent of how the partition is chunked, and the
same in every process.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .coverage import CoverageClass, cells_of

KIND_SHARE = {"value": 15, "shape": 4, "illegal": 1}         # after closure: 75 %, 20 %, 5 %
KINDS = tuple(KIND_SHARE)
VALUE_FIRST = ("random", "specials")
SHAPE_FIRST = ("pad_zero", "pad_max", "pad_min", "pad_null", "partial_pe_mask", "all_pes", "dest_aliases_source")


@dataclass(frozen=True)
class Point:
    cls: CoverageClass
    bin: int | None = None

    @property
    def name(self) -> str:
        return self.cls.name if self.bin is None else f"{self.cls.name}[{self.cls.bins[self.bin]}]"

    @property
    def cells(self) -> list[tuple[str, str]]:
        return cells_of(self.cls, self.bin)


def points(classes: list[CoverageClass]) -> list[Point]:
    """The coverage points of a partition's classes, in class-table order (each class's bins
    in order)."""
    return [Point(c, b) for c in classes for b in (range(len(c.bins)) if c.bins else [None])]


def _kind_order(classes: list[CoverageClass], kind: str) -> list[CoverageClass]:
    mine = [c for c in classes if c.kind == kind]
    if kind == "value":
        key = {n: i for i, n in enumerate(VALUE_FIRST)}
        return sorted(mine, key=lambda c: (key.get(c.name, len(key) + (0 if c.boundary else 1)),))
    if kind == "shape":
        key = {n: i for i, n in enumerate(SHAPE_FIRST)}
        return sorted(mine, key=lambda c: key.get(c.name, len(key)))
    return mine


def priority(pts: list[Point]) -> list[int]:
    """Indices of `pts` in first-pass order (module docstring)."""
    index = {(p.cls.name, p.bin): i for i, p in enumerate(pts)}
    classes = list(dict.fromkeys(p.cls for p in pts))
    lists = [[c for c in _kind_order(classes, k)] for k in KINDS]
    order = []
    for r in range(max((len(x) for x in lists), default=0)):
        for x in lists:
            if r < len(x):
                c = x[r]
                order.append(index[(c.name, 0 if c.bins else None)])
    width = max((len(c.bins) for c in classes), default=0)
    for b in range(1, width):
        for x in lists:
            for c in x:
                if b < len(c.bins):
                    order.append(index[(c.name, b)])
    return order


def _round(present: list[str]) -> list[str]:
    """One round of kind turns: KIND_SHARE slots of each present kind, spread evenly (the j-th
    turn of a kind of share s at (2j + 1) / 2s, ties in KINDS order)."""
    slots = [((2 * j + 1) / (2 * KIND_SHARE[k]), KINDS.index(k), k) for k in present for j in range(KIND_SHARE[k])]
    return [k for _, _, k in sorted(slots)]


def counts_before(pts: list[Point], n: int, equal: bool) -> np.ndarray:
    """Cases of each point among a partition's first n cases."""
    P = len(pts)
    out = np.zeros(P, np.int64)
    if not P or n <= 0:
        return out
    order = priority(pts)
    rank = np.empty(P, np.int64)
    rank[order] = np.arange(P)
    out += rank < min(n, P)
    m = n - P
    if m <= 0:
        return out
    if equal:
        return out + m // P + (rank < m % P)
    kinds = [p.cls.kind for p in pts]
    present = [k for k in KINDS if k in kinds]
    turns = _round(present)
    full, part = divmod(m, len(turns))
    for k in present:
        c = full * KIND_SHARE[k] + turns[:part].count(k)          # cases of kind k after closure
        mine = [i for i in order if kinds[i] == k]                 # round-robin in priority order
        q = np.arange(len(mine))
        out[mine] += c // len(mine) + (q < c % len(mine))
    return out


def counts(pts: list[Point], start: int, stop: int, equal: bool) -> np.ndarray:
    """Cases of each point among cases [start, stop) of the partition."""
    return counts_before(pts, stop, equal) - counts_before(pts, start, equal)


def holes(pts: list[Point], n: int, equal: bool) -> list[str]:
    """What a partition of n cases leaves without a case: the classes none of whose points got
    one, then the cross cells (cross:cell) that no point with a case covers, each in table
    order."""
    got = counts_before(pts, n, equal)
    covered_cls = {p.cls.name for p, k in zip(pts, got) if k}
    covered_cells = {c for p, k in zip(pts, got) if k for c in p.cells}
    out = list(dict.fromkeys(p.cls.name for p in pts if p.cls.name not in covered_cls))
    cells = [c for p in pts for c in p.cells if c not in covered_cells]
    return out + [f"{x}:{y}" for x, y in dict.fromkeys(cells)]


def cells(pts: list[Point]) -> list[tuple[str, str]]:
    """Every cross cell the partition's points aim at, in table order."""
    return list(dict.fromkeys(c for p in pts for c in p.cells))
