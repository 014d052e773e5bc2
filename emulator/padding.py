"""PadValue: the encodings Zero, Max and Min write outside the valid rectangle (Decision 056).

The seed says "Zero, Max, and Min define those elements using the selected DataType's
corresponding value" and, for integers, "the selected integer DataType's numeric maximum and
minimum".  For floating DataTypes this project defines (docs/machine.md):
  Zero = +0; Max = +infinity where the format encodes infinity, else the largest finite value;
  Min = -infinity where the format encodes infinity, else the most negative finite value.
E8M0 has neither sign nor zero: Zero and Min are its smallest value 2^-127 (0x00), Max 2^127.
The encodings themselves (infinities, largest finite values) are the format codecs' facts and
are read from kernels.numeric.formats, not restated here.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from isa.datatypes import DATATYPES, DataType, Kind
from kernels.numeric.formats import float_format, inf_bits, max_bits

_INDEX = {"ZERO": 0, "MAX": 1, "MIN": 2}

# TCMP predicate padding (Decision 069): Zero and Min write 0 bits, Max writes 1 bits.
PREDICATE_PAD = {"ZERO": 0, "MAX": 1, "MIN": 0}


def _row(d: DataType) -> tuple[int, int, int]:
    """(zero, max, min) raw encodings of one DataType (in its container; nibble for X2 types)."""
    w = d.bits
    if d.kind is Kind.SINT:
        return 0, (1 << (w - 1)) - 1, 1 << (w - 1)
    if d.kind is Kind.UINT:
        return 0, (1 << w) - 1, 0
    if d.kind is Kind.EXPONENT:                   # E8M0: no sign, no zero -> the smallest value
        return 0, max_bits(d.name), 0
    extreme = inf_bits if float_format(d.name).inf_subst == "inf" else max_bits
    return 0, extreme(d.name, 0), extreme(d.name, 1)


@lru_cache(maxsize=1)
def pad_encodings() -> dict[str, tuple[int, int, int]]:
    """DataType name -> (zero, max, min) raw encodings."""
    return {d.name: _row(d) for d in DATATYPES}


def pad_encoding(pad: str, dtype_name: str | None) -> int | None:
    """Raw encoding PadValue `pad` writes (None for NULL: the elements stay undefined)."""
    if pad is None or pad == "NULL":
        return None
    if dtype_name is None:
        return PREDICATE_PAD[pad]
    return pad_encodings()[dtype_name][_INDEX[pad]]


def padded_tiles(valid, shape: tuple[int, int, int], pad: str | None, dtype_name: str | None, dtype, xp=np):
    """(bits, defined) of P destination tiles, logical `shape` (P, Row, Col): the valid results
    `valid` (P, ValidRow, ValidCol) in the top-left rectangle, PadValue `pad` outside it (NULL or
    None: payload 0, undefined).  Written once against the array module xp (NumPy or CuPy) for
    the reference executors and the batch engine."""
    vr, vc = valid.shape[-2:]
    enc = pad_encoding(pad, dtype_name)
    bits = xp.full(shape, 0 if enc is None else enc, dtype)
    bits[:, :vr, :vc] = valid
    if enc is None:
        defined = xp.zeros(shape, bool)
        defined[:, :vr, :vc] = True
    else:
        defined = xp.ones(shape, bool)
    return bits, defined


@lru_cache(maxsize=8)
def padded_definedness(shape: tuple[int, int, int], vr: int, vc: int) -> np.ndarray:
    """A read-only (P, Row, Col) bool array, True in each tile's top-left vr x vc rectangle and
    False outside it: the definedness of results padded with NULL.  Tiles never write their
    arrays, so blocks of one shape share it, as they share semantics.all_defined."""
    a = np.zeros(shape, bool)
    a[:, :vr, :vc] = True
    a.flags.writeable = False
    return a
