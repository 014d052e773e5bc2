"""Errors of the numeric layer."""


class UnsupportedOperation(ValueError):
    """The (op, DataType[, profile, rounding mode]) combination is not implemented or not defined.

    The emulator turns this into IllegalBlockException('UNSUPPORTED_IN_BUILD') before any effect.
    """
