"""Stateless legality: every rule of the seed that needs no machine state, read off the tables.

`resolve(block)` either raises IllegalBlockException or returns a ResolvedBlock with every
default applied (LB1 -> 1, LB2 -> ValidCol, omitted PadValue -> Null, omitted secondary
DataType -> inherit, RMode 0 -> the operation default).  These checks run even when PE_MASK is
0000: they are facts about the encoded block, not PE faults.  Everything that depends on PE
state (sources, allocation, definedness, values) is the emulator's preflight.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import fields as F
from .block import BDatr, Block, TileBinding
from .datatypes import DataType, Kind, UnknownDataType, datatype
from .errors import IllegalBlockException
from .instructions import Instruction, by_carrier
from .memo import MEMO, Memoised, memo

U16 = 0xFFFF

# The value each B.DATR field takes when it is not consumed: an explicit value equal to it is
# accepted ("explicit nondefault values are illegal").  None = only omission is accepted.
_NOT_CONSUMED_DEFAULT = {
    "PadValueOrByteId": None, "CMode": 0, "Sat": 0, "Canonicalize": 0,
    "DataType": "inherit", "RMode": 0, "Layout": F.LAYOUT_NORM,
}


@dataclass(frozen=True)
class ResolvedBlock(Memoised):
    """A block with every default applied.  emulator.preflight keeps the facts it derives from
    it alone (destination descriptors, accepted source descriptors) on it (isa.memo)."""
    block: Block
    instr: Instruction
    dtype: DataType            # BSTART DataType (the source type for TCVT)
    dst_dtype: DataType        # TCVT: secondary or inherited; every other row: dtype
    PE_MASK: int
    sources: tuple[TileBinding, ...]
    dest: TileBinding
    ValidRow: int
    ValidCol: int
    Col: int                   # physical columns
    PadValue: str | None       # ZERO/MAX/MIN/NULL; None where padding is not applicable
    CMode: str | None          # TCMP only
    RMode: str | None          # TCVT only, resolved (never DEFAULT)
    Sat: bool
    Canonicalize: bool
    Layout: int
    offset_regs: tuple[int, int] | None   # (RegSrc0, RegSrc1) GPR indices; None = offsets zero

    @property
    def pes(self) -> tuple[int, ...]:
        """The PEs PE_MASK selects, in order."""
        return F.SELECTED_PES[self.PE_MASK]


def _illegal(reason: str, field: str, message: str):
    raise IllegalBlockException(reason, field, message)


def _instruction(block: Block) -> Instruction:
    b = block.bstart
    row = by_carrier(b.Mode, b.Function)
    if row is None:
        _illegal("UNASSIGNED_OPCODE", "BSTART", f"TEPL Mode={b.Mode}, Function={b.Function} is unassigned")
    if b.spelling not in (row.engine, "TEPL"):
        _illegal("ENGINE_SPELLING", "BSTART",
                 f"{row.mnemonic} executes on {row.engine}; spell it BSTART.{row.engine} (or BSTART.TEPL)")
    return row


def _datatype(code: int, field: str) -> DataType:
    try:
        return datatype(code)
    except UnknownDataType as exc:
        _illegal("DATATYPE_RESERVED", field, str(exc))


def _bindings(block: Block, row: Instruction) -> tuple[tuple[TileBinding, ...], TileBinding, int]:
    iot = block.iot
    if len(iot) != row.arity + 1:
        _illegal("BINDING_COUNT", "B.IOT",
                 f"{row.mnemonic} binds {row.arity} source(s) ({', '.join(row.sources)}) and one "
                 f"destination, got {len(iot)} binding(s)")
    for i, b in enumerate(iot):
        if not 0 <= b.PE_MASK < (1 << F.PE_MASK_BITS):
            _illegal("PE_MASK_RANGE", f"B.IOT[{i}].PE_MASK", f"{b.PE_MASK:#x} has bits above PE{F.NUM_PES - 1}")
        if b.PE_MASK != iot[0].PE_MASK:
            _illegal("PE_MASK_MISMATCH", f"B.IOT[{i}].PE_MASK",
                     f"{b.PE_MASK:04b} differs from B.IOT[0].PE_MASK {iot[0].PE_MASK:04b}")
        if i < row.arity and b.capacity is not None:
            _illegal("SOURCE_CAPACITY", f"B.IOT[{i}].capacity",
                     f"source '{row.sources[i]}' cannot carry a capacity")
    return tuple(iot[:-1]), iot[-1], iot[0].PE_MASK


def _dims(block: Block) -> tuple[int, int, int]:
    d = block.dim
    if d is None or d.LB0 is None:
        _illegal("DIM_MISSING", "B.DIM.LB0", "LB0 (ValidCol) is required")
    for name in ("LB0", "LB1", "LB2"):
        v = getattr(d, name)
        if v is not None and not 0 <= v <= U16:
            _illegal("DIM_RANGE", f"B.DIM.{name}", f"{v} is not a 16-bit value")
    valid_col = d.LB0
    valid_row = 1 if d.LB1 is None else d.LB1
    col = valid_col if d.LB2 is None else d.LB2
    for name, v in (("LB0", valid_col), ("LB1", valid_row), ("LB2", col)):
        if v == 0:
            _illegal("DIM_ZERO", f"B.DIM.{name}", "must be nonzero")
    if valid_col > col:
        _illegal("DIM_RANGE", "B.DIM.LB0", f"ValidCol {valid_col} exceeds Col {col}")
    return valid_row, valid_col, col


def _datr_fields(block: Block, row: Instruction, dtype: DataType) -> BDatr:
    datr = block.datr or BDatr()
    for name in F.DATR_FIELDS:
        value = getattr(datr, name)
        if value is None or name in row.datr:
            continue
        default = _NOT_CONSUMED_DEFAULT[name]
        if default == "inherit":
            ok = value == dtype.code
        else:
            ok = value == default
        if not ok:
            _illegal("FIELD_NOT_APPLICABLE", f"B.DATR.{name}",
                     f"{row.mnemonic} does not consume {name}; explicit value {value} is illegal")
    checks = (("CMode", F.CMODES), ("Layout", F.LAYOUTS), ("PadValueOrByteId", F.PAD_VALUES),
              ("RMode", F.RMODES))
    for name, table in checks:
        v = getattr(datr, name)
        if v is not None and v not in table:
            _illegal("FIELD_RESERVED", f"B.DATR.{name}", f"code {v} is reserved")
    for name in ("Sat", "Canonicalize"):
        v = getattr(datr, name)
        if v is not None and v not in (0, 1):
            _illegal("FIELD_RESERVED", f"B.DATR.{name}", f"code {v} is reserved")
    return datr


def _ior(block: Block, row: Instruction) -> tuple[int, int] | None:
    if block.ios is not None:
        _illegal("IOS_NOT_ALLOWED", "B.IOS", f"{row.mnemonic} takes no B.IOS")
    ior = block.ior
    if ior is None:
        return None
    if not row.uses_ior:
        _illegal("IOR_NOT_ALLOWED", "B.IOR", f"{row.mnemonic} takes no B.IOR")
    for name in ("RegSrc2", "RegDst"):
        if getattr(ior, name) != 0:
            _illegal("IOR_NONZERO", f"B.IOR.{name}", "must be zero when B.IOR is present")
    for name in ("RegSrc0", "RegSrc1"):
        if not 0 <= getattr(ior, name) < F.GPR_COUNT:
            _illegal("FIELD_RESERVED", f"B.IOR.{name}", f"GPR index {getattr(ior, name)} out of range")
    return ior.RegSrc0, ior.RegSrc1


def default_rmode(src: DataType, dst: DataType) -> str:
    """Decision 080: RTZ for floating-to-integer conversion, RNE for every other conversion."""
    float_src = src.kind in (Kind.FLOAT, Kind.EXPONENT)
    return "RTZ" if float_src and dst.is_int else "RNE"


def resolve(block: Block) -> ResolvedBlock:
    """The block with every default applied, or IllegalBlockException.

    A block's resolution is kept on the block object (isa.memo): a Block is frozen, so it never
    changes, and a stream or benchmark that executes one Block object many times (or on many
    machines) resolves it once.  Not by equality: BStart.spelling is not compared, and 64 ==
    np.int64(64) == 64.0 resolve differently.  Only accepted blocks keep one, so every rejection
    is raised afresh, identically; so does a block whose bindings are a list (it could change)."""
    try:
        return block.__dict__[MEMO]["resolved"]
    except (AttributeError, KeyError):
        pass
    rb = _resolve(block)
    if type(block.iot) is tuple:
        memo(block)["resolved"] = rb
    return rb


def _resolve(block: Block) -> ResolvedBlock:
    row = _instruction(block)
    dtype = _datatype(block.bstart.DataType, "BSTART.DataType")
    if dtype.name not in row.dtypes:
        _illegal("DATATYPE_UNSUPPORTED", "BSTART.DataType", f"{row.mnemonic} does not support {dtype.name}")
    sources, dest, mask = _bindings(block, row)
    valid_row, valid_col, col = _dims(block)
    datr = _datr_fields(block, row, dtype)
    regs = _ior(block, row)

    dst_dtype = dtype
    if "DataType" in row.datr and datr.DataType is not None:
        dst_dtype = _datatype(datr.DataType, "B.DATR.DataType")
    rmode = None
    if "RMode" in row.datr:
        code = datr.RMode or 0          # codes 1-7 are assigned for every destination (Decision 080)
        rmode = default_rmode(dtype, dst_dtype) if code == 0 else F.RMODES[code]
    layout = datr.Layout or F.LAYOUT_NORM
    canon = bool(datr.Canonicalize)
    if canon and layout != F.LAYOUT_NORM:
        _illegal("CANONICALIZE_LAYOUT", "B.DATR.Layout", "Canonicalize=1 requires Layout=NORM")
    pad = None
    if "PadValueOrByteId" in row.datr:
        code = datr.PadValueOrByteId
        pad = F.PAD_OMITTED if code is None else F.PAD_VALUES[code]
    cmode = F.CMODES[datr.CMode or 0] if "CMode" in row.datr else None
    return ResolvedBlock(
        block=block, instr=row, dtype=dtype, dst_dtype=dst_dtype, PE_MASK=mask,
        sources=sources, dest=dest, ValidRow=valid_row, ValidCol=valid_col, Col=col,
        PadValue=pad, CMode=cmode, RMode=rmode, Sat=bool(datr.Sat), Canonicalize=canon,
        Layout=layout, offset_regs=regs,
    )
