"""Closed JSON documents checked against a JSON Schema (jsonschema), with the one-line errors
the fabric readers have always given: `FormatError(path, reason)` for the first problem in
reading order.

`check(doc, schema)` validates a parsed document (fabric.io.parse_json) against a Draft 2020-12
schema built from the small helpers below and raises the first error as today's readers word it:

    $.actors[3]: expected a nonempty string, found an integer
    $.edges: 70000 entries exceed the limit of 65536
    $.edges[0].from: 'a' is not an endpoint (actor.K)
    $.outputs[1].ready_every: 0 is outside [1, 1048576]
    $.inputs[0]: missing required field 'to'
    $.inputs[0].extra: unknown field (allowed: name, to, tokens)

"First" is the order the hand-written readers checked in: an object's unknown fields, then
its missing fields, then its fields in the schema's property order, list items by index.
jsonschema does the checking; only the wording and that order are written here.  Any
fabric reader (graphs here, fabric descriptions in fabric/io.py) can call it.
"""
from __future__ import annotations

import jsonschema

from ..errors import FormatError, json_kind

_FORMATS = jsonschema.FormatChecker(formats=())
_WORDING: dict = {}       # format name -> function(value) -> reason


def register_format(name: str, test, reason):
    """A string format: `test(value) -> bool`, `reason(value) -> str` when it fails."""
    _FORMATS.checks(name)(test)
    _WORDING[name] = reason


# --- schema helpers ----------------------------------------------------------------------------------

def string(fmt: str | None = None) -> dict:
    s = {"type": "string", "minLength": 1}
    if fmt:
        s["format"] = fmt
    return s


def integer(lo: int, hi: int) -> dict:
    return {"type": "integer", "minimum": lo, "maximum": hi}


def array(items: dict | None = None, limit: int = 1 << 16) -> dict:
    s = {"type": "array", "maxItems": limit}
    if items is not None:
        s["items"] = items
    return s


def closed(required=(), optional=(), properties=None) -> dict:
    """An object with exactly these fields; `properties` maps a field to its schema (absent:
    any value, checked by the reader)."""
    properties = properties or {}
    names = list(required) + list(optional)
    return {"type": "object", "required": list(required), "additionalProperties": False,
            "properties": {k: properties.get(k, {}) for k in names}}


# --- errors in reading order ---------------------------------------------------------------------------

_KIND = {"string": "a nonempty string", "array": "a list", "object": "an object", "integer": "an integer"}


def _position(schema_at, path, err) -> tuple:
    """Sort key: per path step the property's schema position (list items by index); an error at
    an object itself sorts before its fields, unknown fields before missing ones."""
    key = []
    node = schema_at
    for step in path:
        if isinstance(step, int):
            key.append((2, step))
            node = node.get("items", {}) if isinstance(node, dict) else {}
        else:
            props = list(node.get("properties", {})) if isinstance(node, dict) else []
            key.append((2, props.index(step) if step in props else len(props)))
            node = node.get("properties", {}).get(step, {}) if isinstance(node, dict) else {}
    rank = {"additionalProperties": 0, "type": 0}.get(err.validator, 1)   # the node's own errors first
    key.append((rank, 0))
    return tuple(key)


def _where(path) -> str:
    out = "$"
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else f".{step}"
    return out


def _reason(err):
    """(path suffix, reason) in the readers' words."""
    v, inst, sch = err.validator, err.instance, err.schema
    if v == "type":
        return "", f"expected {_KIND.get(err.validator_value, err.validator_value)}, found {json_kind(inst)}"
    if v == "minLength":
        return "", f"expected a nonempty string, found {json_kind(inst)}"
    if v == "maxItems":
        return "", f"{len(inst)} entries exceed the limit of {err.validator_value}"
    if v == "minItems":
        return "", f"needs at least {err.validator_value} entr{'y' if err.validator_value == 1 else 'ies'}"
    if v in ("minimum", "maximum"):
        return "", f"{inst} is outside [{sch.get('minimum')}, {sch.get('maximum')}]"
    if v == "const":
        return "", f"expected {err.validator_value!r}, found {inst!r}"
    if v == "format":
        return "", _WORDING[err.validator_value](inst)
    if v == "additionalProperties":
        allowed = sorted(sch.get("properties", {}))
        extra = next(k for k in inst if k not in sch.get("properties", {}))
        return f".{extra}", f"unknown field (allowed: {', '.join(allowed)})"
    if v == "required":
        missing = next(k for k in sch["required"] if k not in inst)
        return "", f"missing required field {missing!r}"
    if v == "maxProperties":
        return "", f"{len(inst)} entries exceed the limit of {err.validator_value}"
    if v == "enum":
        return "", f"{inst!r} is not one of {', '.join(map(repr, err.validator_value))}"
    if v == "oneOf" or v == "not":
        return "", err.schema.get("description", err.message)
    return "", err.message


def check(doc, schema: dict) -> None:
    """Raise FormatError for the first error of `doc` against `schema`, or return."""
    validator = jsonschema.Draft202012Validator(schema, format_checker=_FORMATS)
    errors = list(validator.iter_errors(doc))
    if not errors:
        return
    err = min(errors, key=lambda e: _position(schema, list(e.absolute_path), e))
    suffix, reason = _reason(err)
    raise FormatError(_where(err.absolute_path) + suffix, reason)
