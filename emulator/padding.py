"""PadValue: the encodings Zero, Max and Min write outside the valid rectangle (Decision 056).

The seed says "Zero, Max, and Min define those elements using the selected DataType's
corresponding value" and, for integers, "the selected integer DataType's numeric maximum and
minimum".  For floating DataTypes this project defines (docs/machine.md):
  Zero = +0; Max = +infinity where the format encodes infinity, else the largest finite value;
  Min = -infinity where the format encodes infinity, else the most negative finite value.
E8M0 has neither sign nor zero: Zero and Min are its smallest value 2^-127 (0x00), Max 2^127.
One row per DataType: (zero, max, min) raw encodings in the container (nibble for X2 types).
"""
from __future__ import annotations

import numpy as np

from isa.datatypes import DATATYPES, Kind

_FLOAT = {
    "FP64": (0, 0x7FF0000000000000, 0xFFF0000000000000),   # +-inf
    "FP32": (0, 0x7F800000, 0xFF800000),
    "TF32": (0, 0x7F800000, 0xFF800000),                   # 1-8-10 in the high bits
    "HF32": (0, 0x7F800000, 0xFF800000),                   # 1-8-11 in the high bits
    "FP16": (0, 0x7C00, 0xFC00),
    "BF16": (0, 0x7F80, 0xFF80),
    "HiF8": (0, 0x6F, 0xEF),                               # HiFloat8 +-inf
    "E4M3": (0, 0x7E, 0xFE),                               # OCP E4M3: no inf, +-448
    "E5M2": (0, 0x7C, 0xFC),                               # +-inf
    "E3M2": (0, 0x1F, 0x3F),                               # FP6 (6 low bits): +-28
    "E2M3": (0, 0x1F, 0x3F),                               # FP6: +-7.5
    "E2M1X2": (0, 0x7, 0xF),                               # FP4: +-6
    "E1M2X2": (0, 0x7, 0xF),                               # +-1.75
    "HiF4X2": (0, 0x7, 0xF),                               # sign-magnitude nibble: +-max
    "E8M0": (0x00, 0xFE, 0x00),                            # 2^-127 .. 2^127, 0xFF is NaN
}


def _int_row(dt) -> tuple[int, int, int]:
    w = dt.bits
    if dt.kind is Kind.SINT:
        return 0, (1 << (w - 1)) - 1, 1 << (w - 1)
    return 0, (1 << w) - 1, 0


PAD_ENCODINGS: dict[str, tuple[int, int, int]] = {
    d.name: (_FLOAT[d.name] if d.name in _FLOAT else _int_row(d)) for d in DATATYPES
}
_INDEX = {"ZERO": 0, "MAX": 1, "MIN": 2}

# TCMP predicate padding (Decision 069): Zero and Min write 0 bits, Max writes 1 bits.
PREDICATE_PAD = {"ZERO": 0, "MAX": 1, "MIN": 0}


def pad_encoding(pad: str, dtype_name: str | None) -> int | None:
    """Raw encoding PadValue `pad` writes (None for NULL: the elements stay undefined)."""
    if pad is None or pad == "NULL":
        return None
    if dtype_name is None:
        return PREDICATE_PAD[pad]
    return PAD_ENCODINGS[dtype_name][_INDEX[pad]]


def pad_outside(bits: np.ndarray, defined: np.ndarray, valid_row: int, valid_col: int,
                pad: str | None, dtype_name: str | None) -> None:
    """Apply PadValue in place to the (P, Row, Col) logical arrays outside the valid rectangle."""
    outside = np.ones(bits.shape[-2:], dtype=bool)
    outside[:valid_row, :valid_col] = False
    enc = pad_encoding(pad, dtype_name)
    if enc is None:
        bits[..., outside] = 0
        defined[..., outside] = False
    else:
        bits[..., outside] = enc
        defined[..., outside] = True
