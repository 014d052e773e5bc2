"""Typed hw_params record schemas: FamilyCapabilityParams(F), one closed record per family.

A record holds only fields its family and enabled schemas interpret: no unknown keys, no
optional field bags.  Fields are built from a few reusable typed atoms (width sets, format
sets, FloatBehaviorProfile, cast relations, predicate sets, capacities).  Each class lists
its fields in `FIELDS` (name -> atom kind); `parse_record` and `record_to_json` read that
table, so a field's JSON spelling, atom domain and canonical order live in one row.

Set-valued fields keep the order and multiplicity written in the description: a duplicate
is a verifier diagnostic (DuplicateDeclaration), not silently merged.  A missing field is
`None` and the verifier reports the incomplete relation.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from isa.datatypes import DATATYPES as _TILE_DATATYPES

from .atoms import (ACCURACY_TIERS, FAST_MATH_FLAGS, FLOAT_FORMATS, FLOAT_PREDICATES,
                    INTEGER_PREDICATES, INTEGER_WIDTHS, NAN_BEHAVIORS, RESOLVED_INDEX_WIDTHS,
                    ROUNDING_MODES, SIGNED_ZERO_BEHAVIORS, STEP_KINDS, SUBNORMAL_BEHAVIORS)
from .jsonread import SchemaReader, obj, prefixed
from .types import PointerLayout

U32_MAX = (1 << 32) - 1


# The scalar integer parameter schema's finite relation of exact pointer formats has the four
# fields of a module's PointerLayout(AS): one record shape (the relation must stay empty).
PointerFormat = PointerLayout


# --- atom kinds: the JSON Schema of one value, and its canonical order ------------------------
# Each atom kind is a JSON Schema fragment worded like the rest of the reader (fabric.jsonread)
# plus the order key its sets print in; records are checked against the schema their FIELDS
# table generates, so a field's JSON spelling, domain and order live in one row.

def _member(domain, what):
    order = {v: i for i, v in enumerate(domain)}
    return ({"type": "string", "enum": list(domain), "x-message": f"{{value!r}} is not {what} (one of {list(domain)})"},
            order.__getitem__)


def _int_in(domain, what):
    return ({"type": "integer", "enum": list(domain), "x-message": f"{{value!r}} is not {what} (one of {list(domain)})"},
            domain.index)


def _u32(minimum):
    return {"type": "integer", "minimum": minimum, "maximum": U32_MAX,
            "x-message": f"{{value!r}} is not an integer in [{minimum}, {U32_MAX}]"}


_WIDTH = _int_in(INTEGER_WIDTHS, "an IntegerWidth")
_FORMAT = _member(tuple(FLOAT_FORMATS), "a FloatFormat")
_INDEX = _int_in(RESOLVED_INDEX_WIDTHS, "a ResolvedIndexWidth")
# Tile DataType names in isa field-code order (the canonical print order of a DataType set)
TILE_DATATYPE_NAMES: tuple[str, ...] = tuple(d.name for d in _TILE_DATATYPES)


def _pair(a, b, what):
    return ({"type": "array", "minItems": 2, "maxItems": 2, "items": [a[0], b[0]],
             "x-message": f"{what} must be a two-element list"},
            lambda p: (a[1](p[0]), b[1](p[1])))


def pointer_format_schema(what: str = "PointerFormat", max_bits: int = U32_MAX) -> dict:
    """A PointerFormat (hw_params) or a module PointerLayout(AS) record: one closed shape."""
    bits_ = {"type": "integer", "minimum": 0, "maximum": max_bits,
             "x-message": f"{{value!r}} is not an integer in [0, {max_bits}]"}
    return obj({"kind": {"const": "stable_integral", "x-message": f"the only {what} kind is \"stable_integral\""},
                "address_space": _u32(0), "representation_bits": bits_, "address_bits": bits_},
               required=("address_space", "representation_bits", "address_bits", "kind"), title=what)


def build_pointer_format(v) -> PointerFormat:
    return PointerFormat(v["address_space"], v["representation_bits"], v["address_bits"], "stable_integral")


# kind -> (is_set, element schema, order key or None)
ATOM_KINDS = {
    "int_widths": (True, *_WIDTH),
    "float_formats": (True, *_FORMAT),
    "index_widths": (True, *_INDEX),
    "int_predicates": (True, *_member(tuple(INTEGER_PREDICATES), "an integer predicate")),
    "float_predicates": (True, *_member(tuple(FLOAT_PREDICATES), "a floating predicate")),
    "rounding_modes": (True, *_member(tuple(ROUNDING_MODES), "a rounding mode")),
    "nan_behaviors": (True, *_member(NAN_BEHAVIORS, "a NaN behaviour")),
    "subnormal_behaviors": (True, *_member(SUBNORMAL_BEHAVIORS, "a subnormal behaviour")),
    "signed_zero_behaviors": (True, *_member(SIGNED_ZERO_BEHAVIORS, "a signed-zero behaviour")),
    "fast_math": (True, *_member(FAST_MATH_FLAGS, "a fast-math flag")),
    "width_pairs": (True, *_pair(_WIDTH, _WIDTH, "a width pair [source, destination]")),
    "format_pairs": (True, *_pair(_FORMAT, _FORMAT, "a format pair [source, destination]")),
    "int_float_pairs": (True, *_pair(_WIDTH, _FORMAT, "an integer/float pair [width, format]")),
    "tile_datatypes": (True, *_member(TILE_DATATYPE_NAMES, "a tile DataType")),
    "pointer_formats": (True, pointer_format_schema(), lambda p: (p.address_space, p.representation_bits, p.address_bits)),
    "positive": (False, _u32(1), None),
    "nonneg": (False, _u32(0), None),
    "accuracy": (False, *_member(ACCURACY_TIERS, "a SpecialMathAccuracyTier")),
    "step_kind": (False, *_member(tuple(STEP_KINDS), "a LoopStream step kind")),
    "behavior": (False, None, None),  # FloatBehaviorProfile, a nested record
}


def _record(cls):
    """A closed frozen record whose fields are exactly its FIELDS table, in that order, each
    None (absent) unless given: a field is named once, in FIELDS."""
    cls.__annotations__ = {name: "tuple | int | str | FloatBehaviorProfile | None" for name in cls.FIELDS}
    for name in cls.FIELDS:
        setattr(cls, name, None)
    return dataclass(frozen=True)(cls)


# --- reusable atom record ------------------------------------------------------------------------

@_record
class FloatBehaviorProfile:
    """Typed admission profile of a floating family.  required_fast_math is the permission mask
    the circuit needs from every actor (subset admission); it is never a key component."""
    FIELDS = {"rounding_modes": "rounding_modes", "nan_behaviors": "nan_behaviors",
              "subnormal_behaviors": "subnormal_behaviors",
              "signed_zero_behaviors": "signed_zero_behaviors", "required_fast_math": "fast_math"}


# --- family records ---------------------------------------------------------------------------
# A family record is its FIELDS row and nothing else, so the records are rows of one table and
# the classes are made from it (a class statement per row restated the same three lines).
# TileEngineParams, which carries a docstring, stays a class statement below.

_FAMILY_FIELDS = {
    "ScalarIntegerAddSubParams": {"integer_widths": "int_widths", "pointer_formats": "pointer_formats"},
    "ScalarIntegerParams": {"integer_widths": "int_widths"},
    "ScalarIntegerCompareMinMaxParams": {"operand_widths": "int_widths", "comparison_predicates": "int_predicates"},
    "ScalarIntegerCastParams": {"width_pairs": "width_pairs", "resolved_index_widths": "index_widths"},
    "ScalarValueSelectParams": {"integer_widths": "int_widths", "float_formats": "float_formats"},
    "ScalarBitReinterpretParams": {"integer_widths": "int_widths", "float_formats": "float_formats"},
    "ScalarFloatParams": {"formats": "float_formats", "behavior": "behavior"},
    "ScalarFloatCompareMinMaxParams": {"formats": "float_formats", "comparison_predicates": "float_predicates",
                                       "behavior": "behavior"},
    "ScalarFloatWidthCastParams": {"format_pairs": "format_pairs", "behavior": "behavior"},
    "ScalarIntegerFloatConversionParams": {"format_pairs": "int_float_pairs"},
    "ScalarSpecialMathParams": {"formats": "float_formats", "behavior": "behavior", "accuracy_guarantee": "accuracy"},
    "FixedVectorIntegerParams": {"integer_element_widths": "int_widths", "max_payload_bits": "positive"},
    "FixedVectorFloatParams": {"formats": "float_formats", "behavior": "behavior", "max_payload_bits": "positive"},
    "LoopStreamParams": {"step_kind": "step_kind", "integer_widths": "int_widths",
                         "continuation_predicates": "int_predicates"},
    "TokenPlaneParams": {"max_payload_bits": "nonneg"},
    "PayloadCapacityParams": {"max_payload_bits": "positive"},
    "RoutedTokenParams": {"max_payload_bits": "nonneg", "max_fan": "positive"},
    "FixedVectorAdapterParams": {"integer_element_widths": "int_widths", "float_element_formats": "float_formats",
                                 "max_payload_bits": "positive"},
    "FixedVectorSliceAlignMergeParams": {
        "integer_element_widths": "int_widths", "float_element_formats": "float_formats",
        "max_container_payload_bits": "positive", "max_slice_payload_bits": "positive",
        "max_dynamic_position_rank": "nonneg", "resolved_index_widths": "index_widths"},
    "FixedVectorShuffleParams": {
        "integer_element_widths": "int_widths", "float_element_formats": "float_formats",
        "max_operand_payload_bits": "positive", "max_result_payload_bits": "positive",
        "max_block_payload_bits": "positive", "max_source_blocks": "positive",
        "max_result_blocks": "positive"},
}


@_record
class TileEngineParams:
    """A PE's VEC or SFU tile engine: the DataTypes its datapath implements (one set for
    every enabled instruction and both TCVT endpoints), the elements it accepts per cycle
    (one beat) and the cycles from a beat's acceptance to its result (docs/timing.md)."""
    FIELDS = {"datatypes": "tile_datatypes", "lanes": "positive", "pipeline_latency": "positive"}


def _family_record(name: str, fields: dict):
    """The closed record class of one `_FAMILY_FIELDS` row, named as if written `class name:`."""
    return _record(type(name, (), {"FIELDS": fields, "__module__": __name__}))


RECORDS = {name: _family_record(name, fields) for name, fields in _FAMILY_FIELDS.items()}
RECORDS[TileEngineParams.__name__] = TileEngineParams
# Each record is a module attribute under its class name (fabric.families reads P.<name>).
globals().update(RECORDS)


# --- JSON <-> record -------------------------------------------------------------------------------

def record_schema(cls) -> dict:
    """The JSON Schema of a closed record, generated from its FIELDS table."""
    props = {}
    for name, kind in cls.FIELDS.items():
        if kind == "behavior":
            props[name] = record_schema(FloatBehaviorProfile)
            continue
        is_set, element, _ = ATOM_KINDS[kind]
        props[name] = {"type": "array", "items": element, "x-message": "must be a list"} if is_set else element
    return obj(props, title=cls.__name__)


def build_record(cls, value):
    """The record of a JSON object its `record_schema` accepts (tuples for sets)."""
    values = {}
    for name, kind in cls.FIELDS.items():
        if name not in value:
            continue
        v = value[name]
        if kind == "behavior":
            values[name] = build_record(FloatBehaviorProfile, v)
        elif kind == "pointer_formats":
            values[name] = tuple(build_pointer_format(x) for x in v)
        elif ATOM_KINDS[kind][0]:
            values[name] = tuple(tuple(x) if isinstance(x, list) else x for x in v)
        else:
            values[name] = v
    return cls(**values)


@lru_cache(maxsize=None)
def _reader(cls) -> SchemaReader:
    return SchemaReader(record_schema(cls))


def parse_record(cls, value, path: str):
    """Parse a closed record; unknown fields and ill-typed values are FormatErrors at `path`."""
    _reader(cls).check(value, render=prefixed(path))
    return build_record(cls, value)


def _atom_json(v):
    if isinstance(v, PointerFormat):
        return {"address_space": v.address_space, "representation_bits": v.representation_bits,
                "address_bits": v.address_bits, "kind": v.kind}
    if isinstance(v, tuple):
        return list(v)
    return v


def record_to_json(rec) -> dict:
    """Canonical JSON: fields in FIELDS order, set elements in their domain order."""
    out = {}
    for name, kind in type(rec).FIELDS.items():
        v = getattr(rec, name)
        if v is None:
            continue
        if kind == "behavior":
            out[name] = record_to_json(v)
            continue
        is_set, _, order = ATOM_KINDS[kind]
        out[name] = [_atom_json(x) for x in sorted(v, key=order)] if is_set else v
    return out


