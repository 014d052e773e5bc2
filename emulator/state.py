"""Machine state as plain data, below the Machine and its file formats.

`MachineState` is what a state file holds (config, and per PE its tiles, GPRs and status);
`Machine` executes on one, and emulator.stateio/batchio read and write them without knowing the
Machine, so the modules read bottom-up: state -> stateio -> batchio -> machine.
`validate_tile` is the one rule of what a tile may be, shared by Machine.write_tile and the
state-file loader so both accept exactly the same tiles.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from isa.fields import GPR_COUNT, LAYOUTS, NUM_PES

from .config import MachineConfig
from .tiles import FMAP_LAYOUTS, KINDS, LOCATIONS, REPRESENTATIONS, Tile

TILE_ID_LIMIT = 1 << 32


@dataclass
class PEState:
    tiles: dict[int, Tile] = field(default_factory=dict)
    gprs: np.ndarray = field(default_factory=lambda: np.zeros(GPR_COUNT, np.uint64))
    status: int = 0            # numeric status (flags) of the last block that selected this PE


@dataclass
class MachineState:
    """One machine's architectural state as plain data: what a state file holds and what a
    Machine executes on (Machine.from_state runs one, Machine.pes is its own)."""
    config: MachineConfig
    pes: list[PEState] = field(default_factory=lambda: [PEState() for _ in range(NUM_PES)])


def used_bytes(tiles, location: str, exclude: int | None = None) -> int:
    """Bytes of a tile store (tile id -> anything with a `.desc`) held in `location` by its
    tiles other than tile `exclude`: the allocation rule's `used` (docs/machine.md)."""
    used = 0
    for t in tiles.values():     # a plain loop: preflight asks on every block
        d = t.desc
        if d.location == location:
            used += d.capacity
    if exclude is not None and exclude in tiles and tiles[exclude].desc.location == location:
        used -= tiles[exclude].desc.capacity
    return used


def validate_tile(t: Tile, config: MachineConfig, pe: int = 0, tile: int = 0, used: int | None = None) -> str | None:
    """Why tile `tile` of PE `pe` cannot be architectural state (None when it can).  Shared by
    write_tile and the state-file loader so both accept exactly the same tiles; `used` is the
    bytes the other tiles of its store hold (None: not checked)."""
    d = t.desc
    if d.location not in LOCATIONS:
        return f"location {d.location!r}: one of {LOCATIONS}"
    if d.kind not in KINDS:
        return f"kind {d.kind!r}: one of {KINDS}"
    if d.representation not in REPRESENTATIONS:
        return f"representation {d.representation!r}: one of {REPRESENTATIONS}"
    if d.kind == "predicate":
        if d.dtype is not None:
            return "a predicate tile has no DataType"
        if d.representation != "standard" or d.Layout != 0 or d.location != "Local" or d.fmap is not None:
            return "a predicate tile is Local, standard, row-major and has no feature map"
    if d.Layout not in LAYOUTS:
        return f"layout code {d.Layout} is reserved"
    if d.representation == "cube" and d.Layout != 0:
        return "a private-CUBE tile's layout field must be 0 (the representation fixes placement)"
    for name in ("Row", "Col", "ValidRow", "ValidCol"):
        v = getattr(d, name)
        if not isinstance(v, (int, np.integer)) or v < 0 or v >= TILE_ID_LIMIT:
            return f"{name}={v!r} is not a 32-bit count"
    if d.Col == 0 or d.Row == 0:
        return "Row and Col must be nonzero"
    if not (1 <= d.ValidRow <= d.Row and 1 <= d.ValidCol <= d.Col):
        return f"valid {d.ValidRow}x{d.ValidCol} must be nonzero and within {d.Row}x{d.Col}"
    if d.capacity < d.payload_nbytes:       # Row need not be capacity-derived: TCVT keeps its source's
        return f"capacity {d.capacity} is below the {d.payload_nbytes} payload bytes"
    if d.fmap is not None:
        if d.location != "Matrix":
            return "only Matrix-location tiles carry a feature-map descriptor"
        if d.fmap.layout not in FMAP_LAYOUTS:
            return f"feature-map layout {d.fmap.layout!r}: one of {FMAP_LAYOUTS}"
    if t.elems.shape != (d.elements,) or t.defined.shape != (d.elements,):
        return "payload/definedness length does not match the descriptor"
    if used is not None and used + d.capacity > config.store_bytes(d.location):
        return (f"PE{pe} {d.location} store: {used} bytes used + {d.capacity} exceeds "
                f"{config.store_bytes(d.location)}")
    if not 0 <= tile < TILE_ID_LIMIT:
        return "tile id must be in [0, 2^32)"
    return None

