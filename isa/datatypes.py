"""The DataType table: the 25 assigned Tile DataTypes with their fixed field codes.

Codes follow the order the seed lists them for TCVT (Decision 080); every other value of the
5-bit DataType field is globally reserved and rejects.  One row per type; code elsewhere reads
the table instead of branching on names.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

DATATYPE_FIELD_BITS = 5


class Kind(str, Enum):
    FLOAT = "float"        # sign/exponent/mantissa formats, FP64 .. HiF4
    EXPONENT = "exponent"  # E8M0: exponent-only, no sign, no zero
    SINT = "sint"
    UINT = "uint"


@dataclass(frozen=True)
class DataType:
    code: int
    name: str
    kind: Kind
    bits: int           # significant bits of one logical element
    container: int      # bits one element occupies in a tile payload (4 for X2 types)
    packed_x2: bool     # two logical elements per byte: even index low nibble, odd high

    @property
    def is_float(self) -> bool:
        return self.kind is Kind.FLOAT

    @property
    def is_int(self) -> bool:
        return self.kind in (Kind.SINT, Kind.UINT)

    @property
    def signed(self) -> bool:
        return self.kind is Kind.SINT

    @property
    def raw_dtype(self) -> str:
        """NumPy dtype name of the raw-encoding arrays that cross every API (one element each)."""
        return {4: "uint8", 8: "uint8", 16: "uint16", 32: "uint32", 64: "uint64"}[self.container]

    def payload_bytes(self, elements: int) -> int:
        """Bytes a row-major run of `elements` logical elements occupies."""
        return (elements * self.container + 7) // 8


_F, _E, _S, _U = Kind.FLOAT, Kind.EXPONENT, Kind.SINT, Kind.UINT

# code, name, kind, significant bits, container bits, packed X2
_ROWS = (
    (0, "FP64", _F, 64, 64, False),
    (1, "FP32", _F, 32, 32, False),
    (2, "TF32", _F, 19, 32, False),    # 1-8-10 in the high bits of a 32-bit container
    (3, "HF32", _F, 20, 32, False),    # 1-8-11 in the high bits of a 32-bit container
    (4, "FP16", _F, 16, 16, False),
    (5, "BF16", _F, 16, 16, False),
    (6, "HiF8", _F, 8, 8, False),
    (7, "E4M3", _F, 8, 8, False),
    (8, "E5M2", _F, 8, 8, False),
    (9, "E3M2", _F, 6, 8, False),      # FP6 in the low bits of a byte
    (10, "E2M3", _F, 6, 8, False),
    (11, "E2M1X2", _F, 4, 4, True),
    (12, "E1M2X2", _F, 4, 4, True),
    (13, "E8M0", _E, 8, 8, False),
    (14, "HiF4X2", _F, 4, 4, True),
    (15, "S64", _S, 64, 64, False),
    (16, "S32", _S, 32, 32, False),
    (17, "S16", _S, 16, 16, False),
    (18, "S8", _S, 8, 8, False),
    (19, "S4X2", _S, 4, 4, True),
    (20, "U64", _U, 64, 64, False),
    (21, "U32", _U, 32, 32, False),
    (22, "U16", _U, 16, 16, False),
    (23, "U8", _U, 8, 8, False),
    (24, "U4X2", _U, 4, 4, True),
)

DATATYPES: tuple[DataType, ...] = tuple(DataType(*row) for row in _ROWS)
BY_CODE: dict[int, DataType] = {d.code: d for d in DATATYPES}
BY_NAME: dict[str, DataType] = {d.name: d for d in DATATYPES}
_BY_UPPER: dict[str, DataType] = {d.name.upper(): d for d in DATATYPES}


class UnknownDataType(ValueError):
    pass


def datatype(key: int | str | DataType) -> DataType:
    """Look a DataType up by code or name (names are case-insensitive); reserved codes raise."""
    if isinstance(key, DataType):
        return key
    if isinstance(key, str):
        try:
            return _BY_UPPER[key.upper()]
        except KeyError:
            raise UnknownDataType(f"unknown DataType name {key!r}") from None
    try:
        return BY_CODE[int(key)]
    except KeyError:
        raise UnknownDataType(f"DataType code {key} is globally reserved") from None


def names(*keys: str) -> frozenset[str]:
    """A validated set of DataType names (typos in a table row fail at import)."""
    return frozenset(datatype(k).name for k in keys)


# DataType sets the instruction table rows refer to (Decisions 056-081, 126-128).
ELEMENTWISE = names("FP64", "FP32", "TF32", "HF32", "FP16", "BF16", "E4M3", "E5M2",
                    "S64", "S32", "S16", "S8", "U64", "U32", "U16", "U8")
INTEGER = names("S64", "S32", "S16", "S8", "U64", "U32", "U16", "U8")
FLOATING = names("FP64", "FP32", "TF32", "HF32", "FP16", "BF16", "E4M3", "E5M2")
ALL = frozenset(d.name for d in DATATYPES)
ALL_BUT_HIF4 = ALL - {"HiF4X2"}
IMG2COL = names("FP32", "FP16", "BF16", "S32", "S16", "S8", "U32", "U16", "U8")
