"""What a block's executor receives (Plan), and the two small rules both preflight and the
schemas' relations and executors use: the rejection (`illegal`) and a feature map's extents.

It sits below preflight and the schema registry (emulator/schemas.py), which both read it, so
preflight can read the registry without an import cycle.  preflight re-exports all three.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isa.errors import IllegalBlockException
from isa.legality import ResolvedBlock

from .tiles import Descriptor, Tile


@dataclass
class Plan:
    rb: ResolvedBlock
    pes: tuple[int, ...]
    sources: list[list[Tile]]          # [role][selected PE]
    dest: Descriptor
    row_offset: np.ndarray             # int64 [P]: low 16 bits of RegSrc0 (zeros without B.IOR)
    col_offset: np.ndarray
    profile: str
    status: np.ndarray                 # uint8 [P]: each selected PE's numeric status before the block
    # What an executor receives.  One machine's plan is preflight.plan's; the batch engine builds
    # one over every member of a cohort (P = PEs x members, PE-major) from check's result.


def illegal(reason: str, field: str, message: str):
    raise IllegalBlockException(reason, field, message)


def fmap_extents(fm) -> tuple[int, int, int, int]:
    """(outH, outW, M, K) of a feature-map descriptor (Decision 128)."""
    out_h = (fm.H + fm.padTop + fm.padBottom - fm.dilationH * (fm.filterH - 1) - 1) // fm.strideH + 1
    out_w = (fm.W + fm.padLeft + fm.padRight - fm.dilationW * (fm.filterW - 1) - 1) // fm.strideW + 1
    return out_h, out_w, fm.N * fm.D * out_h * out_w, fm.C1 * fm.filterH * fm.filterW * fm.C0
