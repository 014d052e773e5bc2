"""The vocabulary of effects, below every module that produces or reads them.

A cell is a (key, integer) pair: an array element (key = array name, cell = row-major flat
index), a tile element (`tile:m<machine>:pe<PE>:t<tile>[@v<n>]`, cell = row << 16 | col, or -1
for the whole tile) or a GPR (`gpr:m<machine>:pe<PE>`, cell = register index).  An `Access` is
one read or write of a set of cells; `DATA` stands for a value known only at run time.
effects.py (the static walker) and tiles.py (the tile leaves it calls) both build them, so they
live here rather than in either.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class _Data:
    def __repr__(self):
        return "<data>"


DATA = _Data()                   # a value known only at run time


@dataclass
class Access:
    key: str
    write: bool
    cells: np.ndarray                      # int64 cell ids
    points: np.ndarray | None = None       # per cell: the element instance (pointwise coordinate)


def describe(program, key: str, cell: int) -> str:
    """A human name for one cell: `x[1, 2]`, `PE1 t3 (version 2) [0, 5]`, `PE0 GPR 3`."""
    if key.startswith("tile:"):
        _, m, pe, t = key.split(":")
        tile, _, ver = t.partition("@")
        mach = "" if m == "m0" else f"machine {m[1:]} "
        v = f" (version {ver[1:]})" if ver else ""
        return f"{mach}{pe.upper()} tile {tile}{v} element [{cell >> 16}, {cell & 0xFFFF}]"
    if key.startswith("gpr:"):
        _, m, pe = key.split(":")
        mach = "" if m == "m0" else f"machine {m[1:]} "
        return f"{mach}{pe.upper()} GPR {cell}"
    if program is not None and key in program.arrays:
        idx, rest = [], cell
        shape = program.arrays[key].shape
        strides = [1] * len(shape)
        for d in range(len(shape) - 2, -1, -1):
            strides[d] = strides[d + 1] * shape[d + 1]
        for s in strides:
            idx.append(rest // s)
            rest %= s
        return f"{key}[{', '.join(map(str, idx))}]"
    return f"{key}#{cell}"
