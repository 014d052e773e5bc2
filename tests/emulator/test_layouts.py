"""isa/layouts.py: every assigned Layout code is a bijection; the fractal codes are the blocked
orders docs/layouts.md states, checked against an independent loop-built reference."""
import itertools

import numpy as np
import pytest

from isa import layouts as L
from isa.fields import LAYOUTS

SHAPES = [(1, 1), (1, 37), (37, 1), (16, 16), (16, 32), (32, 64), (17, 9), (33, 70), (48, 8)]
BITS = [4, 8, 16, 32, 64]


@pytest.mark.parametrize("code", sorted(LAYOUTS))
def test_every_layout_code_is_a_bijection_on_every_shape(code):
    for (rows, cols), bits in itertools.product(SHAPES, BITS):
        g = L.index_grid(code, rows, cols, bits)
        assert np.array_equal(np.sort(g.ravel()), np.arange(rows * cols)), (code, rows, cols, bits)


def _reference(rows, cols, h, w, outer, inner):
    """Physical order by enumeration: visit blocks, then elements, counting positions."""
    h, w = min(h, rows), min(w, cols)
    blocks = [(br, bc) for br in range(-(-rows // h)) for bc in range(-(-cols // w))]
    if outer == "N":
        blocks.sort(key=lambda b: (b[1], b[0]))
    ref = np.full((rows, cols), -1)
    pos = 0
    for br, bc in blocks:
        cells = [(r, c) for r in range(br * h, min(rows, br * h + h)) for c in range(bc * w, min(cols, bc * w + w))]
        if inner == "N":
            cells.sort(key=lambda rc: (rc[1], rc[0]))
        for r, c in cells:
            ref[r, c] = pos
            pos += 1
    return ref


@pytest.mark.parametrize("code", sorted(LAYOUTS))
def test_layout_matches_the_documented_block_order(code):
    lay = L.LAYOUT_TABLE[code]
    for (rows, cols), bits in itertools.product([(5, 7), (16, 16), (33, 70), (40, 20)], [8, 16, 32]):
        c0 = 256 // bits
        side = {"16": 16, "C0": c0, "ALL": None}
        h = side[lay.block[0]] or rows
        w = side[lay.block[1]] or cols
        ref = _reference(rows, cols, h, w, lay.outer, lay.inner)
        assert np.array_equal(L.index_grid(code, rows, cols, bits), ref), (lay.name, rows, cols, bits)


def test_norm_is_row_major_and_dn_is_column_major():
    assert L.index_grid(0, 3, 4, 32).tolist() == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    assert L.index_grid(1, 3, 4, 32).tolist() == [[0, 3, 6, 9], [1, 4, 7, 10], [2, 5, 8, 11]]


def test_nz_of_fp16_is_the_16x16_fractal_with_column_major_blocks():
    # FP16: C0 = 16.  Element (r, c) of a 32 x 32 tile lives in block (c//16)*2 + r//16.
    g = L.index_grid(L.LAYOUT_TABLE[2].code, 32, 32, 16)
    assert g[0, 16] == 2 * 256 and g[16, 0] == 256 and g[17, 3] == 256 + 16 + 3


def test_c0_is_32_bytes_of_elements():
    assert [L.c0(b) for b in BITS] == [64, 32, 16, 8, 4]


def test_cube_representation_is_padded_16x16_blocks():
    assert L.cube_elements(5, 8) == 256 and L.cube_elements(17, 16) == 512
    r, c = np.meshgrid(np.arange(17), np.arange(20), indexing="ij")
    idx = L.cube_index(r, c, 17, 20)
    assert len(np.unique(idx)) == 17 * 20 and idx.max() < L.cube_elements(17, 20)
    assert L.cube_index(0, 16, 17, 20) == 2 * 256     # two block rows in the first block column
    assert L.cube_index(16, 0, 17, 20) == 256
    assert L.cube_index(1, 2, 17, 20) == 18


def test_fields_table_and_layout_table_agree():
    assert {k: v.name for k, v in L.LAYOUT_TABLE.items()} == LAYOUTS
    assert set(LAYOUTS) == set(range(13))
