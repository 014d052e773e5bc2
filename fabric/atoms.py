"""Closed vocabularies shared by operation schemas, hw_params records and canonical codecs.

Each vocabulary is one table: spelling -> wire tag.  Wire tags are the only numeric
encoding (enum ordinals of any implementation language are never an encoding); the order
of a table is its canonical print order.
"""
from __future__ import annotations

# --- integer and floating domains of typed parameter records ------------------------------

# IntegerWidth: the widths a typed width set may name (exact software types may use any width).
INTEGER_WIDTHS: tuple[int, ...] = (1, 8, 16, 32, 64)
# ResolvedIndexWidth: canonical widths an MLIR `index` endpoint may resolve to.
RESOLVED_INDEX_WIDTHS: tuple[int, ...] = (32, 64)

# FloatFormat: spelling -> representation width.  Print order = this order.
FLOAT_FORMATS: dict[str, int] = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}

# --- predicates ---------------------------------------------------------------------------
INTEGER_PREDICATES: dict[str, int] = {
    "eq": 1, "ne": 2, "slt": 3, "sle": 4, "sgt": 5, "sge": 6, "ult": 7, "ule": 8, "ugt": 9, "uge": 10,
}
SIGNED_INTEGER_PREDICATES = frozenset({"slt", "sle", "sgt", "sge"})

FLOAT_PREDICATES: dict[str, int] = {
    "false": 1, "oeq": 2, "ogt": 3, "oge": 4, "olt": 5, "ole": 6, "one": 7, "ord": 8,
    "ueq": 9, "ugt": 10, "uge": 11, "ult": 12, "ule": 13, "une": 14, "uno": 15, "true": 16,
}
# Under nnan an unordered predicate behaves as its ordered counterpart (the refinement
# normalisation of an uncovered nnan compare); ord is then AlwaysTrue and uno AlwaysFalse.
NNAN_NORMAL_FLOAT_PREDICATE: dict[str, str] = {
    "false": "false", "oeq": "oeq", "ogt": "ogt", "oge": "oge", "olt": "olt", "ole": "ole",
    "one": "one", "ord": "true", "ueq": "oeq", "ugt": "ogt", "uge": "oge", "ult": "olt",
    "ule": "ole", "une": "one", "uno": "false", "true": "true",
}
CONSTANT_FLOAT_PREDICATES = frozenset({"true", "false"})

# --- floating behaviour -------------------------------------------------------------------
ROUNDING_MODES: dict[str, int] = {
    "to_nearest_even": 1, "downward": 2, "upward": 3, "toward_zero": 4, "to_nearest_away": 5,
}
DEFAULT_ROUNDING = "to_nearest_even"

FAST_MATH_FLAGS: tuple[str, ...] = ("reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn")

NAN_BEHAVIORS: tuple[str, ...] = ("ieee", "number_preferred")
SUBNORMAL_BEHAVIORS: tuple[str, ...] = ("preserve", "flush")
SIGNED_ZERO_BEHAVIORS: tuple[str, ...] = ("preserve", "relaxed")

# SpecialMathAccuracyTier in stronger-to-weaker order: index = strength rank.
ACCURACY_TIERS: tuple[str, ...] = ("correctly_rounded", "max_1ulp", "max_2ulp", "max_4ulp")


def accuracy_rank(tier: str) -> int:
    return ACCURACY_TIERS.index(tier)


# --- loop control -------------------------------------------------------------------------
# The fixed LoopStream step kind (capability, never configuration).  `next_state_cycles` is
# the earliest next-state availability of the concrete update datapath.
STEP_KINDS: dict[str, int] = {"add": 1, "sub": 1, "shl": 1, "shr": 1, "mul": 3, "div": 8}

# --- physical port kinds ------------------------------------------------------------------
PORT_KINDS: tuple[str, ...] = ("bits", "bits_tag")
