"""The block model: one BSTART and its descriptors, exactly as decoded (no defaults applied).

Optional fields are `None` when omitted.  Resolving defaults (LB1 -> 1, omitted PadValue ->
Null, omitted secondary DataType -> inherit, ...) is the job of legality/preflight, so that
"omitted" and "explicitly encoded zero" stay distinct all the way from the bytes to the rules.
Field names are the seed's, so a search for a spec term lands here.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .memo import Memoised


@dataclass(frozen=True)
class BStart:
    """BSTART: TEPL carrier Mode/Function and the block's DataType code.

    `spelling` records the engine the text named (VEC, SFU or TEPL); it is not encoded, so a
    decoded block carries the canonical engine of its instruction row (or TEPL when unassigned).
    """
    Mode: int
    Function: int
    DataType: int
    spelling: str = field(default="TEPL", compare=False)


@dataclass(frozen=True)
class TileBinding:
    """One B.IOT binding: an architectural tile name and its PE_MASK.

    Bindings appear in the instruction row's operand order, sources first, destination last.
    `capacity` (bytes) is how a destination's byte capacity is given; physical rows derive from
    it.  Omitted on a destination it means "the smallest capacity holding the valid rows"; on a
    source it must be omitted.
    """
    tile: int
    PE_MASK: int
    capacity: int | None = None


@dataclass(frozen=True)
class BDim:
    LB0: int | None = None   # ValidCol (required, nonzero, 16-bit)
    LB1: int | None = None   # ValidRow, default 1
    LB2: int | None = None   # physical Col, default ValidCol


@dataclass(frozen=True)
class BDatr:
    PadValueOrByteId: int | None = None
    CMode: int | None = None
    Sat: int | None = None
    Canonicalize: int | None = None
    DataType: int | None = None      # secondary (destination) DataType for TCVT
    RMode: int | None = None
    Layout: int | None = None


@dataclass(frozen=True)
class BIor:
    RegSrc0: int = 0
    RegSrc1: int = 0
    RegSrc2: int = 0
    RegDst: int = 0


@dataclass(frozen=True)
class BIos:
    """B.IOS: a scalar immediate operand descriptor.  No tile instruction here consumes it
    (it is illegal for every instruction), but streams may carry it and it must round-trip."""
    value: int = 0


@dataclass(frozen=True)
class Block(Memoised):
    """One block as decoded.  isa.legality.resolve keeps its resolution on it (isa.memo)."""
    bstart: BStart
    iot: tuple[TileBinding, ...] = ()
    dim: BDim | None = None
    datr: BDatr | None = None
    ior: BIor | None = None
    ios: BIos | None = None

    def __post_init__(self):
        # The bindings are a tuple whatever sequence the caller built the block from: a block is
        # hashed (the compiled programs and the decode caches key on it), and a list would make
        # the fast engine fail where the reference machine runs the block.
        if not isinstance(self.iot, tuple):
            object.__setattr__(self, "iot", tuple(self.iot))
