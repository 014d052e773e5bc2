"""The Layout codes of B.DATR.Layout as bijections between logical and physical element positions.

The seed assigns NORM plus twelve layout codes without defining them (Decision 080 "applies its
assigned complete layout transformation"); this module is the project's definition, documented
in docs/layouts.md.  A tile of physical shape Row x Col stores Row*Col elements; a layout maps
each logical position (r, c), 0 <= r < Row, 0 <= c < Col, to the linear index p of the element
in the payload (element p occupies the p-th container slot; see docs/state-format.md).

Every non-trivial code is a *blocked* order: the Row x Col rectangle is cut into blocks of
h x w elements (the last block row / column may be shorter or narrower when Row or Col is not
a multiple), the blocks are visited in `outer` order and the elements of one block in `inner`
order, where "Z" = row-major and "N" = column-major.  Ragged edge blocks keep every code a
bijection for every Row x Col, and for aligned shapes the codes are the familiar fractal
formats.  C0 is the number of elements in 32 bytes: 256 // container bits (FP32 8, FP16 16,
8-bit 32, FP64 4, 4-bit 64).

The private CUBE output representation (docs/machine.md) uses `cube_index`: whole 16 x 16
blocks, blocks column-major, elements row-major, with Row and Col rounded up to 16.

All functions are vectorised: r, c, rows, cols broadcast like NumPy int64 arrays.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .fields import LAYOUTS

FRACTAL = 16          # the fixed side of every fractal block
CUBE_BLOCK = 16       # private CUBE representation: 16 x 16 blocks


@dataclass(frozen=True)
class Layout:
    code: int
    name: str
    block: tuple[str, str]   # (h, w): "16", "C0" or "ALL" (the whole dimension)
    outer: str               # block order: "Z" row-major, "N" column-major
    inner: str               # element order inside a block

    @property
    def doc(self) -> str:
        order = {"Z": "row-major", "N": "column-major"}
        if self.block == ("ALL", "ALL"):
            return "row-major (logical placement)" if self.inner == "Z" else "column-major: the transposed placement"
        return f"{self.block[0]} x {self.block[1]} blocks, blocks {order[self.outer]}, elements {order[self.inner]}"


# A fractal code's name says its layout: block order then element order ("Z" row-major, "N"
# column-major), then the block shape: no suffix 16 x C0, "16" 16 x 16, "T" C0 x 16.
_BLOCK_OF_SUFFIX = {"": ("16", "C0"), "16": ("16", "16"), "T": ("C0", "16")}
_WHOLE = {"NORM": "Z", "DN": "N"}    # one block, the whole tile: row-major, column-major elements


def _layout(code: int, name: str) -> Layout:
    if name in _WHOLE:
        return Layout(code, name, ("ALL", "ALL"), "Z", _WHOLE[name])
    return Layout(code, name, _BLOCK_OF_SUFFIX[name[2:]], name[0], name[1])


LAYOUT_TABLE: dict[int, Layout] = {code: _layout(code, name) for code, name in LAYOUTS.items()}


def c0(container_bits: int) -> int:
    """Elements per 32 bytes."""
    return 256 // container_bits


def _side(spec: str, whole, c0_: int):
    return whole if spec == "ALL" else (FRACTAL if spec == "16" else c0_)


def _blocked(r, c, rows, cols, h, w, outer: str, inner: str):
    br, ir = r // h, r % h
    bc, ic = c // w, c % w
    bh = np.minimum(h, rows - br * h)       # height of this (possibly ragged) block row
    bw = np.minimum(w, cols - bc * w)       # width of this block column
    if outer == "N":   # whole block columns first (all full width), then blocks above in this column
        before = bc * w * rows + br * h * bw
    else:              # whole block rows first (all full height), then blocks left in this row
        before = br * h * cols + bc * w * bh
    inside = ir * bw + ic if inner == "Z" else ic * bh + ir
    return before + inside


def physical_index(code: int, r, c, rows, cols, container_bits: int):
    """Linear payload index of logical element (r, c) of a rows x cols tile in Layout `code`."""
    lay = LAYOUT_TABLE[code]
    r, c, rows, cols = (np.asarray(x, dtype=np.int64) for x in (r, c, rows, cols))
    if code == 0:
        return r * cols + c
    k = c0(container_bits)
    h = _side(lay.block[0], rows, k)
    w = _side(lay.block[1], cols, k)
    return _blocked(r, c, rows, cols, h, w, lay.outer, lay.inner)


def cube_elements(rows, cols):
    """Physical element count of the private CUBE representation (whole 16 x 16 blocks)."""
    up = lambda n: -(-n // CUBE_BLOCK) * CUBE_BLOCK  # noqa: E731
    return up(rows) * up(cols)


def cube_index(r, c, rows, cols):
    """Linear payload index of logical (r, c) in the private CUBE representation."""
    r, c, rows = (np.asarray(x, dtype=np.int64) for x in (r, c, rows))
    block_rows = -(-rows // CUBE_BLOCK)
    blk = (c // CUBE_BLOCK) * block_rows + r // CUBE_BLOCK
    return blk * (CUBE_BLOCK * CUBE_BLOCK) + (r % CUBE_BLOCK) * CUBE_BLOCK + c % CUBE_BLOCK


def index_grid(code: int, rows: int, cols: int, container_bits: int) -> np.ndarray:
    """physical_index over the whole rows x cols rectangle, shape (rows, cols)."""
    r = np.arange(rows, dtype=np.int64)[:, None]
    c = np.arange(cols, dtype=np.int64)[None, :]
    return np.broadcast_to(physical_index(code, r, c, rows, cols, container_bits), (rows, cols))
