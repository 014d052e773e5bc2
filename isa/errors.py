"""The exceptions that cross package boundaries, with machine-readable reason codes.

`IllegalBlockException` is raised for every architectural rejection, by the stateless rules in
isa.legality and by the emulator's stateful preflight alike; `reason` is one of REASONS and
`field` names the offending descriptor field (seed spelling, e.g. "B.DATR.RMode", "B.IOT[1]").
"""
from __future__ import annotations

# reason code: what it means.  One table, so tools can list and document every rejection.
REASONS: dict[str, str] = {
    # stateless (isa.legality)
    "UNASSIGNED_OPCODE": "the TEPL (Mode, Function) pair selects no instruction",
    "ENGINE_SPELLING": "BSTART names an engine that is neither the canonical engine nor TEPL",
    "DATATYPE_RESERVED": "a DataType field holds a globally reserved code",
    "DATATYPE_UNSUPPORTED": "the DataType is outside the instruction's exact DataType set",
    "BINDING_COUNT": "B.IOT does not bind exactly the instruction's sources and one destination",
    "PE_MASK_MISMATCH": "participating B.IOT bindings carry different PE_MASK values",
    "PE_MASK_RANGE": "a PE_MASK has bits above the 4 PEs",
    "SOURCE_CAPACITY": "a source binding carries a capacity (only destinations do)",
    "DIM_MISSING": "B.DIM or its required LB0 is omitted",
    "DIM_ZERO": "a B.DIM value that must be nonzero is zero",
    "DIM_RANGE": "a B.DIM value exceeds 16 bits or ValidCol exceeds Col",
    "FIELD_NOT_APPLICABLE": "an explicit nondefault value in a B.DATR field the instruction does not consume",
    "FIELD_RESERVED": "a B.DATR field holds a reserved code",
    "CANONICALIZE_LAYOUT": "Canonicalize=1 requires Layout=NORM",
    "IOR_NOT_ALLOWED": "B.IOR on an instruction that takes no B.IOR",
    "IOR_NONZERO": "B.IOR.RegSrc2 or B.IOR.RegDst is nonzero",
    "IOS_NOT_ALLOWED": "B.IOS on an instruction that takes no B.IOS",
    # stateful (emulator preflight)
    "SOURCE_MISSING": "a source binding names a tile that does not exist on a selected PE",
    "SOURCE_KIND": "a source has the wrong storage kind (numeric vs predicate) or location",
    "SOURCE_DATATYPE": "a source DataType differs from the one the instruction requires",
    "SHAPE_MISMATCH": "physical or valid shape, or layout, differs where the schema requires equality",
    "REPRESENTATION": "the source representation (standard / private CUBE) does not fit Canonicalize",
    "CAPACITY": "a destination capacity cannot hold its physical representation",
    "ALLOCATION": "the tile store has no room for the destination",
    "SOURCE_UNDEFINED": "a source element the block reads is undefined",
    "INT_DIVIDE_BY_ZERO": "an integer divisor in the valid rectangle is zero",
    "OFFSET_RANGE": "a TEXTRACT/TINSERT/TIMG2COL window exceeds its source or result extent",
    "DESCRIPTOR_INVALID": "the TIMG2COL feature-map descriptor is invalid",
    "INVALID_ENCODING": "a source element's encoding is invalid for the operation/profile",
    # capability admission (a fabric model of the PE's engines is given: docs/timing.md)
    "ENGINE_CAPABILITY": "the engine resource of the fabric model does not support the block "
                         "(its op_list lacks the instruction or its hw_params the DataType)",
}


class IllegalBlockException(Exception):
    """Illegal Block Exception: the block is rejected before any architectural effect."""

    def __init__(self, reason: str, field: str, message: str):
        assert reason in REASONS, reason
        super().__init__(f"{reason} at {field}: {message}")
        self.reason = reason
        self.field = field
        self.message = message


class DecodeError(ValueError):
    """Bytes that are not a well-formed block stream; `offset` is the byte offset of the fault
    (the offending header field or word).  `block_offset` is the byte offset of the BSTART of
    the block the fault lies in (where the next block would start, for a fault between blocks);
    None for a header or stream-length fault, which no block owns."""

    def __init__(self, offset: int, reason: str, block_offset: int | None = None):
        super().__init__(f"byte offset {offset}: {reason}")
        self.offset = offset
        self.reason = reason
        self.block_offset = block_offset


class AsmError(ValueError):
    """Block text that does not assemble; `line`/`column` are 1-based."""

    def __init__(self, line: int, column: int, reason: str, source: str | None = None):
        where = f"{source}:" if source else "line "
        super().__init__(f"{where}{line}:{column}: {reason}")
        self.line = line
        self.column = column
        self.reason = reason


class EncodeError(ValueError):
    """A Block that the `.tbs` encoding cannot represent (a value wider than its field, a
    mandatory field omitted, too many descriptors); `index` is the block's position."""

    def __init__(self, index: int, field: str, reason: str):
        super().__init__(f"block {index}: {field}: {reason}")
        self.index = index
        self.field = field
        self.reason = reason
