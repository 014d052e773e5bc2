"""Per-element numeric status flags (uint8 bit set), IEEE 754 exception names."""
NV = 1 << 0   # invalid operation
DZ = 1 << 1   # divide by zero
OF = 1 << 2   # overflow
UF = 1 << 3   # underflow (tininess detected after rounding, and inexact)
NX = 1 << 4   # inexact

NAMES = {NV: "NV", DZ: "DZ", OF: "OF", UF: "UF", NX: "NX"}


def describe(flags: int) -> str:
    """'NV|NX' style text for a flag byte ('-' when clear)."""
    return "|".join(n for bit, n in NAMES.items() if flags & bit) or "-"
