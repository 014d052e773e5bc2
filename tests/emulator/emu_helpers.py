"""Block builders for the emulator tests: a block from a mnemonic and plain numbers."""
from __future__ import annotations

import numpy as np

from emulator import Machine
from isa import BDatr, BDim, BIor, BIos, Block, BStart, TileBinding
from isa.datatypes import datatype
from isa.instructions import lookup

UNSET = object()


def blk(mn, dtype, srcs, dst, *, mask=0b0001, vc=4, vr=None, col=None, cap=None, datr=None, ior=None,
        ios=None, dim=UNSET, spelling=None, **datr_fields):
    """Block for `mn` reading tiles `srcs` and writing tile `dst` on PE_MASK `mask`."""
    row = lookup(mn)
    iot = tuple(TileBinding(t, mask) for t in srcs) + (TileBinding(dst, mask, cap),)
    if datr is None and datr_fields:
        datr = BDatr(**datr_fields)
    if dim is UNSET:
        dim = BDim(vc, vr, col)
    return Block(BStart(row.mode, row.function, datatype(dtype).code, spelling or row.engine), iot, dim, datr,
                 ior, ios)


def fill(m: Machine, pe, tile, dtype, values, **kw):
    return m.write_tile(pe, tile, dtype, np.asarray(values), **kw)


def everywhere(m: Machine, tile, dtype, values, pes=range(4), **kw):
    for p in pes:
        m.write_tile(p, tile, dtype, np.asarray(values), **kw)


def numeric_available() -> bool:
    try:
        from kernels import numeric
        numeric.elementwise  # noqa: B018
        numeric.convert  # noqa: B018
        return True
    except (ImportError, AttributeError):
        return False


__all__ = ["blk", "fill", "everywhere", "BDatr", "BDim", "BIor", "BIos", "Block", "BStart", "TileBinding",
           "numeric_available", "Machine"]
