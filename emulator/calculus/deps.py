"""Cross-scope dependences, vectorised: does every edge A(i) -> B(j) satisfy a rule?

A `Table` holds the accesses of one scope's instances: per row the instance, its aligned
position (where the fused schedule runs it), the cell (`loc`) and whether it writes.  For two
scopes A (earlier in source order) and B, the dependence relation Dep_AB holds (i, j) when
A(i) and B(j) touch a common cell and one of them writes it (RAW, WAR, WAW).  `crossing`
finds the first edge breaking a rule without materialising Dep_AB:

- "diagonal": pos_A(i) == pos_B(j)  (parallel pointwise fusion: Dep_AB ⊆ {(i, i)})
- "le":       pos_A(i) <= pos_B(j)  (serial fusion: every cross edge A(i) -> B(j) has i <= j)

Per cell it compares the min/max positions of the A side with those of the B side
(np.unique + reduceat), then names one concrete violating pair.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .effects import CELL_MASK, KEY_SHIFT, Keys


@dataclass
class Table:
    inst: np.ndarray      # int64 instance index (into labels)
    pos: np.ndarray       # int64 aligned position
    loc: np.ndarray       # int64 key << 40 | cell
    write: np.ndarray     # bool
    labels: list[str]

    @staticmethod
    def empty(labels=None) -> "Table":
        z = np.zeros(0, dtype=np.int64)
        return Table(z, z, z, np.zeros(0, dtype=bool), list(labels or []))


class TableBuilder:
    def __init__(self, keys: Keys):
        self.keys = keys
        self.parts: list[tuple] = []
        self.labels: list[str] = []

    def instance(self, label: str) -> int:
        self.labels.append(label)
        return len(self.labels) - 1

    def add(self, inst: int, key: str, cells: np.ndarray, write: bool, pos) -> None:
        n = len(cells)
        if n == 0:
            return
        code = np.int64(self.keys(key)) << np.int64(KEY_SHIFT)
        p = np.broadcast_to(np.asarray(pos, dtype=np.int64), (n,))
        self.parts.append((np.full(n, inst, dtype=np.int64), p, code | cells.astype(np.int64),
                           np.full(n, write, dtype=bool)))

    def table(self) -> Table:
        if not self.parts:
            return Table.empty(self.labels)
        cols = list(zip(*self.parts))
        return Table(*(np.concatenate(c) for c in cols), self.labels)


@dataclass
class Crossing:
    first: str            # label of the A instance
    second: str           # label of the B instance
    key: str
    cell: int
    kind: str             # RAW | WAR | WAW
    first_pos: int
    second_pos: int


_KINDS = (("RAW", True, False), ("WAR", False, True), ("WAW", True, True))


def _group_minmax(loc: np.ndarray, pos: np.ndarray):
    order = np.argsort(loc, kind="stable")
    l, p = loc[order], pos[order]
    uniq, start = np.unique(l, return_index=True)
    return uniq, np.minimum.reduceat(p, start), np.maximum.reduceat(p, start)


def crossing(A: Table, B: Table, rule: str, keys: Keys) -> Crossing | None:
    """The first dependence edge A(i) -> B(j) that breaks `rule`, or None when Dep_AB obeys it.
    "First" = smallest B position, then smallest cell, then RAW before WAR before WAW."""
    best = None
    for kind, a_w, b_w in _KINDS:
        am = A.write if a_w else ~A.write
        bm = B.write if b_w else ~B.write
        if not am.any() or not bm.any():
            continue
        ua, amin, amax = _group_minmax(A.loc[am], A.pos[am])
        bl, bp, bi = B.loc[bm], B.pos[bm], B.inst[bm]
        k = np.searchsorted(ua, bl)
        k_ok = k < len(ua)
        hit = np.zeros(len(bl), dtype=bool)
        hit[k_ok] = ua[k[k_ok]] == bl[k_ok]
        if not hit.any():
            continue
        kk = k[hit]
        if rule == "diagonal":
            bad = (amin[kk] != bp[hit]) | (amax[kk] != bp[hit])
        elif rule == "le":
            bad = amin[kk] > bp[hit]
        else:
            raise ValueError(rule)
        if not bad.any():
            continue
        rows = np.nonzero(hit)[0][bad]
        # first by (B position, cell)
        o = np.lexsort((bl[rows], bp[rows]))[0]
        r = rows[o]
        cand = (int(bp[r]), int(bl[r]), kind, int(bi[r]))
        if best is None or cand[:2] < best[:2]:
            best = cand
    if best is None:
        return None
    jpos, loc, kind, j = best
    a_w = kind in ("RAW", "WAW")
    am = (A.loc == loc) & (A.write if a_w else ~A.write)
    ai, ap = A.inst[am], A.pos[am]
    viol = np.nonzero(ap != jpos if rule == "diagonal" else ap > jpos)[0]   # nonempty by construction
    pick = viol[np.argmin(ap[viol])]
    i, ipos = int(ai[pick]), int(ap[pick])
    return Crossing(A.labels[i], B.labels[j], keys.names[loc >> KEY_SHIFT], loc & CELL_MASK, kind, ipos, jpos)


def conflicts_within(T: Table, keys: Keys):
    """The first pair of distinct instances of one scope that conflict (noninterference):
    W(i) ∩ (R(j) ∪ W(j)) ≠ ∅.  Returns (label_i, label_j, key, cell, kind) or None."""
    if len(T.loc) == 0:
        return None
    wl = T.loc[T.write]
    if len(wl) == 0:
        return None
    shared = np.isin(T.loc, np.unique(wl))
    loc, inst, wr = T.loc[shared], T.inst[shared], T.write[shared]
    order = np.lexsort((inst, loc))
    loc, inst, wr = loc[order], inst[order], wr[order]
    uniq, start = np.unique(loc, return_index=True)
    imin = np.minimum.reduceat(inst, start)
    imax = np.maximum.reduceat(inst, start)
    multi = np.nonzero(imin != imax)[0]
    if len(multi) == 0:
        return None
    # pick the cell whose second instance is smallest
    best = None
    for g in multi:
        s = start[g]
        e = start[g + 1] if g + 1 < len(start) else len(loc)
        ii, ww = inst[s:e], wr[s:e]
        writers = np.unique(ii[ww])
        for j in np.unique(ii):
            others_w = writers[writers != j]
            j_writes = bool(ww[ii == j].any())
            cand_i = others_w if not j_writes else np.unique(ii[ii != j])
            cand_i = cand_i[cand_i < j]
            if len(cand_i):
                i = int(cand_i.min())
                iw = bool(ww[ii == i].any())
                kind = ("write" if iw else "read") + "/" + ("write" if j_writes else "read")
                c = (int(j), i, int(uniq[g]), kind)
                if best is None or c[:2] < best[:2]:
                    best = c
                break
    if best is None:
        return None
    j, i, loc_, kind = best
    return T.labels[i], T.labels[j], keys.names[loc_ >> KEY_SHIFT], loc_ & CELL_MASK, kind
