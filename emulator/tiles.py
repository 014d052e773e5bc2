"""Tiles as the tile store holds them: an immutable descriptor, physical elements, definedness.

A tile's payload is its physical elements in layout order (isa/layouts.py): one unsigned-int
array of the DataType's container (uint8 nibbles for X2 types, uint8 0/1 bits for predicate
tiles) plus one bool per physical element.  `payload_bytes` / `from_payload_bytes` give the exact
byte image the state file carries (docs/state-format.md).  Tiles are never mutated: an
executing block builds new ones and the commit swaps them in, so sources and snapshots are the
same arrays and rollback is free.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import numpy as np

from isa import layouts
from isa.datatypes import DataType, datatype
from isa.fields import LAYOUTS

LOCATIONS = ("Local", "Matrix")
KINDS = ("numeric", "predicate")
REPRESENTATIONS = ("standard", "cube")
FMAP_LAYOUTS = ("NC1HWC0", "NDC1HWC0")


@dataclass(frozen=True)
class FeatureMap:
    """The TIMG2COL feature-map descriptor a Matrix-location tile carries (Decision 128).

    The tile's payload is the feature map in row-major (N, D, C1, H, W, C0) order (D = 1 for
    NC1HWC0), i.e. a Row = N*D*C1*H*W by Col = C0 NORM tile.  `pad_bits` is the typed padding
    value as a raw encoding of the tile's DataType.  Nothing here is validated at construction:
    the descriptor is architectural state, and TIMG2COL's preflight rejects an invalid one.
    """
    layout: str = "NC1HWC0"
    N: int = 1
    D: int = 1
    C1: int = 1
    H: int = 1
    W: int = 1
    C0: int = 1
    filterH: int = 1
    filterW: int = 1
    strideH: int = 1
    strideW: int = 1
    dilationH: int = 1
    dilationW: int = 1
    padLeft: int = 0
    padRight: int = 0
    padTop: int = 0
    padBottom: int = 0
    channels: int = 1
    pad_bits: int = 0
    transposed: bool = False

    PARAMS = ("N", "D", "C1", "H", "W", "C0", "filterH", "filterW", "strideH", "strideW",
              "dilationH", "dilationW", "padLeft", "padRight", "padTop", "padBottom", "channels")

    def params(self) -> tuple[int, ...]:
        return tuple(getattr(self, n) for n in self.PARAMS)


@dataclass(frozen=True)
class Descriptor:
    location: str            # Local | Matrix
    kind: str                # numeric | predicate
    dtype: int | None        # DataType code; None for predicate tiles
    Row: int                 # physical rows
    Col: int                 # physical columns
    ValidRow: int
    ValidCol: int
    Layout: int              # B.DATR.Layout code (isa/layouts.py); 0 for predicates
    representation: str      # standard | cube (private CUBE output)
    capacity: int            # bytes of the tile store this tile holds
    fmap: FeatureMap | None = None

    @property
    def datatype(self) -> DataType | None:
        return None if self.dtype is None else datatype(self.dtype)

    @property
    def container(self) -> int:
        return 1 if self.kind == "predicate" else self.datatype.container

    @property
    def elements(self) -> int:
        """Physical element count (bits for a predicate tile)."""
        if self.representation == "cube":
            return int(layouts.cube_elements(self.Row, self.Col))
        return self.Row * self.Col

    @property
    def payload_nbytes(self) -> int:
        return (self.elements * self.container + 7) // 8

    @property
    def layout_key(self):
        return "cube" if self.representation == "cube" else self.Layout

    def describe(self) -> str:
        t = "PRED" if self.kind == "predicate" else self.datatype.name
        s = (f"{self.location} {t} {self.Row}x{self.Col} valid {self.ValidRow}x{self.ValidCol} "
             f"layout {LAYOUTS.get(self.Layout, self.Layout)} cap {self.capacity}")
        if self.representation != "standard":
            s += f" repr {self.representation}"
        return s


def element_dtype(desc: Descriptor) -> np.dtype:
    return _element_dtype(desc.kind, desc.dtype)


@lru_cache(maxsize=None)
def _element_dtype(kind: str, code) -> np.dtype:
    if kind == "predicate":
        return np.dtype(np.uint8)
    return np.dtype(datatype(code).raw_dtype)


@dataclass(frozen=True, eq=False)
class Tile:
    desc: Descriptor
    elems: np.ndarray        # physical elements, shape (desc.elements,), read-only
    defined: np.ndarray      # bool, same shape, read-only
    # (elems, defined, k) when this tile is row k of the (P, elements) arrays one block committed
    # on P PEs at once: a later block over the same PEs reads those rows without stacking a copy
    # (emulator/semantics.py stack_tiles).  None for a tile made alone.
    stack: tuple | None = field(default=None, repr=False)

    def __post_init__(self):
        if self.stack is None:       # rows of a stack are views of its read-only arrays already
            for a in (self.elems, self.defined):
                a.flags.writeable = False

    @cached_property
    def fully_defined(self) -> bool:
        """Every physical element is defined.  Memoised: a tile's definedness never changes
        (its arrays are read-only), so a block reading it need not rescan the mask."""
        return bool(self.defined.all())


class StackRow(Tile):
    """A Tile that is row k of a block's committed (P, elements) arrays (stacked_tiles), whose
    `elems` and `defined` views are made on first use: a block commits one tile per PE, and the
    next block over those PEs reads the stack itself (rows_of_one_stack), so most rows' views
    were never read.  (A class of its own, not a __getattr__ on Tile: that would slow every
    attribute read of every tile.)"""

    @cached_property
    def elems(self) -> np.ndarray:
        return self.stack[0][self.stack[2]]

    @cached_property
    def defined(self) -> np.ndarray:
        return self.stack[1][self.stack[2]]


def stacked_tiles(desc: Descriptor, elems: np.ndarray, defined: np.ndarray,
                  fully_defined: bool = False) -> list[Tile]:
    """Tiles that are the rows of read-only (P, elements) arrays `elems` and `defined`, each
    with `stack` set so that a block over the same PEs reads them in place (no copy).
    `fully_defined` True seeds each tile's memo (the caller knows every element is defined)."""
    elems.setflags(write=False)       # setflags: half the cost of assigning .flags.writeable
    defined.setflags(write=False)
    return stack_rows(desc, elems, defined, fully_defined)


def stack_rows(desc: Descriptor, elems: np.ndarray, defined: np.ndarray,
               fully_defined: bool = False) -> list[Tile]:
    """stacked_tiles without making the arrays read-only: for a caller that makes its tiles
    before it fills `elems`, and makes both arrays read-only before any tile is seen
    (emulator/blockprog.py)."""
    out = []
    for k in range(elems.shape[0]):
        # what Tile(desc, elems[k], defined[k], (elems, defined, k)) builds, without the frozen
        # dataclass's per-field object.__setattr__ (a block makes one tile per selected PE) and
        # with the row views made on first use (StackRow)
        t = _new_tile(StackRow)
        d = t.__dict__
        d["desc"] = desc
        d["stack"] = (elems, defined, k)
        if fully_defined:
            d["fully_defined"] = True     # what the cached_property would compute
        out.append(t)
    return out


_new_tile = object.__new__


def rows_of_one_stack(tiles) -> tuple[np.ndarray, np.ndarray] | None:
    """(P, elements) payload and definedness arrays whose rows are `tiles` in order, as views
    (no copy), when the tiles are rows of one stack at evenly spaced, increasing row indices
    (every PE, or a PE_MASK subset of those one block committed; a lone tile is its own stack
    of one).  None otherwise: the caller stacks a copy."""
    first = tiles[0].stack
    if first is None:
        if len(tiles) == 1:
            t = tiles[0]
            return t.elems[None], t.defined[None]
        return None
    e, d, k0 = first
    n = len(tiles)
    if n == 1:
        return e[k0:k0 + 1], d[k0:k0 + 1]
    second = tiles[1].stack
    step = 0 if second is None else second[2] - k0
    if step <= 0:
        return None
    for i in range(1, n):
        st = tiles[i].stack
        if st is None or st[0] is not e or st[2] != k0 + i * step:
            return None
    if k0 == 0 and step == 1 and n == e.shape[0]:      # the whole stack (the common case)
        return e, d
    stop = k0 + (n - 1) * step + 1
    return e[k0:stop:step], d[k0:stop:step]


def make_tile(desc: Descriptor, elems: np.ndarray, defined: np.ndarray) -> Tile:
    """Tile(intern(desc), contiguous elems, contiguous bool defined), both made read-only, built
    as stacked_tiles builds its tiles: without the frozen dataclass's per-field
    object.__setattr__ (a batch member leaving its cohort makes one Tile per tile it holds)."""
    e = np.ascontiguousarray(elems)
    d = np.ascontiguousarray(defined, dtype=bool)
    e.setflags(write=False)           # what Tile.__post_init__ does
    d.setflags(write=False)
    t = _new_tile(Tile)
    t.__dict__.update(desc=intern(desc), elems=e, defined=d, stack=None)
    return t


# isa.memo rule 3: a descriptor stays interned while some tile (or plan) still holds it.
_INTERNED: weakref.WeakValueDictionary[str, Descriptor] = weakref.WeakValueDictionary()


def intern(desc: Descriptor) -> Descriptor:
    """One object per distinct descriptor (they are immutable): the tiles of one shape on the
    four PEs then share it, and per-block checks that compare descriptors find them identical
    before comparing fields.  Keyed by repr, not equality: 64, np.int64(64) and 64.0 are equal
    but validate and digest differently, and repr tells them apart.  The repr is taken once per
    descriptor object (isa.memo rule 1: kept on it), since many tiles share one."""
    key = desc.__dict__.get("_intern_key")
    if key is None:
        key = desc.__dict__["_intern_key"] = repr(desc)
    got = _INTERNED.get(key)
    if got is None:
        _INTERNED[key] = got = desc
    return got


# ---------------------------------------------------------------- byte images

def pack_payloads(elems: np.ndarray, container: int) -> np.ndarray:
    """(..., E) physical elements -> (..., bytes) uint8 tile-store images, one per leading index:
    little-endian containers; 4-bit: even index in the low nibble; 1-bit: bit i%8 of byte i//8.
    Unused high bits of the last byte are zero."""
    if container == 1:
        return np.packbits(elems.astype(np.uint8), axis=-1, bitorder="little")
    if container == 4:
        e = elems.astype(np.uint8)
        if e.shape[-1] % 2:
            e = np.concatenate([e, np.zeros(e.shape[:-1] + (1,), np.uint8)], axis=-1)
        return e[..., 0::2] | (e[..., 1::2] << 4)
    le = np.ascontiguousarray(elems, np.dtype(f"<u{container // 8}"))
    return le.view(np.uint8).reshape(elems.shape[:-1] + (-1,))


def unpack_payloads(data: np.ndarray, count: int, container: int) -> np.ndarray:
    """Inverse of pack_payloads: (..., bytes) uint8 images -> (..., count) physical elements."""
    if container == 1:
        return np.unpackbits(data, axis=-1, bitorder="little", count=count)
    if container == 4:
        out = np.empty(data.shape[:-1] + (data.shape[-1] * 2,), np.uint8)
        out[..., 0::2] = data & 0xF
        out[..., 1::2] = data >> 4
        return out[..., :count]
    return np.ascontiguousarray(data).view(np.dtype(f"<u{container // 8}")).astype(f"u{container // 8}")


def pack_elements(elems: np.ndarray, container: int) -> bytes:
    """The payload bytes of one tile's physical elements (pack_payloads)."""
    return pack_payloads(elems, container).tobytes()


def unpack_elements(data: bytes | memoryview | np.ndarray, count: int, container: int) -> np.ndarray:
    """Inverse of pack_elements (len(data) must be the exact byte count)."""
    return unpack_payloads(np.frombuffer(data, dtype=np.uint8), count, container)


def spare_bits(count, container):
    """The unused high bits of the last byte of an image of `count` containers (0..7; arrays
    of counts give arrays)."""
    return (-(count * container)) % 8


def trailing_bits_zero(data: bytes | memoryview | np.ndarray, count: int, container: int) -> bool:
    """True when the bits of the last byte past `count` containers are zero (canonical image)."""
    spare = spare_bits(count, container)
    if spare == 0:
        return True
    last = np.frombuffer(data, dtype=np.uint8)[-1]
    return int(last) >> (8 - spare) == 0


def pack_defined(defined: np.ndarray) -> bytes:
    return np.packbits(defined.astype(np.uint8), bitorder="little").tobytes()


def unpack_defined(data, count: int) -> np.ndarray:
    return np.unpackbits(np.frombuffer(data, dtype=np.uint8), bitorder="little", count=count).astype(bool)


# ---------------------------------------------------------------- logical <-> physical

def index_grid(desc: Descriptor) -> np.ndarray:
    """(Row, Col) array of each logical element's physical index (read-only, cached: a stream
    reuses a few geometries, and every non-NORM tile read or written needs its grid)."""
    return _grid(desc.layout_key, desc.Row, desc.Col, desc.container)


@lru_cache(maxsize=16)
def _grid(layout_key, rows: int, cols: int, container: int) -> np.ndarray:
    if layout_key == "cube":
        r = np.arange(rows, dtype=np.int64)[:, None]
        c = np.arange(cols, dtype=np.int64)[None, :]
        grid = np.broadcast_to(layouts.cube_index(r, c, rows, cols), (rows, cols))
    else:
        grid = layouts.index_grid(layout_key, rows, cols, container)
    grid = np.ascontiguousarray(grid)
    grid.flags.writeable = False
    return grid


def to_physical(desc: Descriptor, logical, fill=0, xp=np):
    """Place a (..., Row, Col) logical array into (..., elements) physical order (array module
    xp: NumPy, or CuPy for the batch engine's device arrays)."""
    lead = logical.shape[:-2]
    flat = logical.reshape(lead + (desc.Row * desc.Col,))
    if desc.Layout == 0 and desc.representation == "standard":   # NORM: row-major, Row*Col elements
        return flat
    out = xp.full(lead + (desc.elements,), fill, dtype=logical.dtype)
    out[..., xp.asarray(index_grid(desc).ravel())] = flat
    return out


def to_logical(desc: Descriptor, phys: np.ndarray) -> np.ndarray:
    """(..., elements) physical -> (..., Row, Col) logical."""
    lead = phys.shape[:-1]
    if desc.layout_key == 0:
        return phys[..., : desc.Row * desc.Col].reshape(lead + (desc.Row, desc.Col))
    return phys[..., index_grid(desc)]

