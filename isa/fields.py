"""Code tables for the B.DATR fields and the other small enumerations of the block schema.

Every field of B.DATR, B.DIM and B.IOR is optional; `None` always means "omitted", which the
seed keeps distinct from an explicitly encoded zero (omitted PadValue = Null, explicit 00 = Zero;
omitted secondary DataType = inherit, explicit 0 = FP64).
"""
from __future__ import annotations

NUM_PES = 4                     # PE_MASK is 4 bits wide
PE_MASK_BITS = NUM_PES
# PE_MASK -> the PEs it selects, in order: bit p selects PE p
SELECTED_PES = tuple(tuple(p for p in range(NUM_PES) if mask >> p & 1) for mask in range(1 << PE_MASK_BITS))

# B.DATR.PadValueOrByteId in its PadValue interpretation (Decision 056/058).
PAD_VALUES = {0b00: "ZERO", 0b01: "MAX", 0b10: "MIN", 0b11: "NULL"}
PAD_OMITTED = "NULL"            # omission resolves to Null

# B.DATR.CMode (Decision 069); 6 and 7 are reserved.  Omission retains encoded zero (EQ).
CMODES = {0: "EQ", 1: "NE", 2: "LT", 3: "GT", 4: "LE", 5: "GE"}
CMODE_FIELD_BITS = 3

# B.DATR.RMode (Decision 080).  0 = the operation default: RTZ for float->int, RNE otherwise.
RMODES = {0: "DEFAULT", 1: "RNE", 2: "RTZ", 3: "RTM", 4: "RTP", 5: "RNA", 6: "RTO", 7: "RHB"}
RMODE_FIELD_BITS = 3

# B.DATR.Layout: NORM plus the twelve assigned non-NORM layout transformations; the
# remaining codes of the 4-bit field are reserved.  The bijection each code denotes between
# logical (row, col) and physical position is defined in isa/layouts.py and docs/layouts.md.
LAYOUTS = {
    0: "NORM",
    1: "DN",      # column-major (transposed) placement
    2: "NZ", 3: "ZN", 4: "ZZ", 5: "NN",            # fractal, 16 x C0 blocks
    6: "NZ16", 7: "ZN16", 8: "ZZ16", 9: "NN16",     # fractal, 16 x 16 blocks
    10: "NZT", 11: "ZNT", 12: "ZZT",                # fractal, C0 x 16 blocks
}
LAYOUT_FIELD_BITS = 4
LAYOUT_NORM = 0

# The B.DATR fields, by their seed names, in encoding order.
DATR_FIELDS = ("PadValueOrByteId", "CMode", "Sat", "Canonicalize", "DataType", "RMode", "Layout")

GPR_COUNT = 32                  # private general-purpose registers per PE
ZERO_GPR = 0                    # index 0 is the hard-wired zero: reads 0, holds nothing (docs/assembly.md)
GPR_BITS = 64
GPR_INDEX_BITS = 5
