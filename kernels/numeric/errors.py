"""Errors of the numeric layer."""


class UnsupportedOperation(ValueError):
    """The (op, DataType[, profile]) combination is not defined.  The emulator never meets it:
    every DataType an instruction's row admits is implemented (tests/emulator/test_numeric_ops.py
    checks), so isa.legality's DATATYPE_UNSUPPORTED is the only rejection of a type."""
