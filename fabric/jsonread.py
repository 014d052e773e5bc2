"""JSON documents read against a JSON Schema, every violation one `PATH: reason` line.

The fabric description reader (fabric/io.py) and the dataflow graph reader (fabric/sim/graph.py)
share this: `parse_json` turns bytes or text into JSON values (duplicate keys, NaN/Infinity,
malformed text, deep nesting, over-long integers and over-size documents are errors), and
`SchemaReader(schema).check(doc)` validates a document against a JSON Schema (draft 7) and
raises a `FormatError` for its first violation, worded in the project's style.

The schema is plain data built with the helpers below (`obj`, `lst`, `string`, `integer`,
`enum`, ...); a helper's wording travels with the schema through two annotations the
validator ignores: `x-message`, a format string (`{value!r}`, `{kind}`, `{pytype}`) used for
any failure of that subschema, and `title`, the record name an object's messages cite.
Objects are closed through `propertyNames`, checked before `required` and before any child,
so an unknown field is reported first, then a missing one, then the children in schema order.

Validation runs through fastjsonschema, which compiles a schema to Python once; the reference
`jsonschema` package, about 25 times slower on an 8 MiB description (42 s against 1.7 s on a
loaded 2-core box), checks the schemas and their verdicts in the tests.
"""
from __future__ import annotations

from decimal import Decimal
from functools import lru_cache
import json

import fastjsonschema

from isa import jsontext

from .errors import FormatError, json_kind

MAX_ITEMS = 1 << 16

# string formats a schema may name (`{"format": NAME}`): NAME -> test(str) -> bool, registered by
# the reader that owns the rule (the graph reader's `endpoint` is fabric.topology.split_ref)
FORMATS: dict = {}


def register_format(name: str, test) -> None:
    FORMATS[name] = test


# --- parsing ---------------------------------------------------------------------------------

def _no_duplicate_keys(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise FormatError("$", f"duplicate key {k!r} in one object")
        out[k] = v
    return out


def parse_json(text, what: str = "the description", max_bytes: int = 8 << 20, floats=float) -> object:
    """A JSON document (str or UTF-8 bytes) of at most `max_bytes`, or FormatError: duplicate
    keys, NaN/Infinity constants, malformed text, deep nesting and over-long integers (through
    isa.jsontext) are all one-line errors.  `floats=Decimal` keeps a number with a fraction or
    exponent apart from an integer (JSON Schema's "integer" admits 1.0; a reader that wants
    integers only passes Decimal, which no "integer" or "string" schema accepts)."""
    if isinstance(text, (bytes, bytearray)):
        if len(text) > max_bytes:
            raise FormatError("$", f"{what} exceeds {max_bytes} bytes")
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError("$", f"not UTF-8 text (byte {exc.start})") from None
    if len(text) > max_bytes:
        raise FormatError("$", f"{what} exceeds {max_bytes} bytes")
    try:
        return jsontext.loads(text, object_pairs_hook=_no_duplicate_keys, parse_float=floats,
                              parse_constant=lambda c: (_ for _ in ()).throw(FormatError("$", f"{c} is not JSON")))
    except FormatError:
        raise
    except jsontext.JsonTextError as exc:
        raise FormatError("$", f"malformed JSON: {exc}") from None


# --- schema helpers --------------------------------------------------------------------------

def obj(properties: dict, required=(), title: str | None = None, **extra) -> dict:
    """A closed object: exactly `properties` may appear, `required` must."""
    closed = {"propertyNames": {"enum": sorted(properties)}, "x-owner": f" of {title}" if title else ""}
    s = {"type": "object", "allOf": [closed], "required": list(required), "properties": properties}
    if title:
        s["title"] = title
    s.update(extra)
    return s


def lst(items: dict, limit: int = MAX_ITEMS, **extra) -> dict:
    return {"type": "array", "maxItems": limit, "items": items, **extra}


def string(*checks: dict, **extra) -> dict:
    """A nonempty string, then each of `checks` in order (e.g. a `pattern`)."""
    if not checks:
        return {"type": "string", "minLength": 1, **extra}
    return {"type": "string", "allOf": [{"minLength": 1}, *checks], **extra}


def integer(lo: int = 0, hi: int = (1 << 32) - 1, **extra) -> dict:
    return {"type": "integer", "minimum": lo, "maximum": hi, **extra}


def enum(values, message: str, **extra) -> dict:
    return {"enum": list(values), "x-message": message, **extra}


def pattern(regex: str, message: str, **extra) -> dict:
    return {"type": "string", "pattern": regex, "x-message": message, **extra}


# --- paths -------------------------------------------------------------------------------------
# A renderer spells the path of a violation from its suffix below the document root, written
# the way every reader here writes paths: `.key` for an object member, `[i]` for a list item.

def dollar_path(suffix: str) -> str:
    """`$`, `$.edges[0].from`: every path from the document root."""
    return "$" + suffix


def description_path(suffix: str) -> str:
    """The fabric description's spelling: `$` and `$.key` for the root and its direct values,
    `fus[0].nodes[2]...` below them, and `mapping...` for everything in the mapping."""
    if not suffix:
        return "$"
    body = suffix[1:]
    head = body.split(".", 1)[0].split("[", 1)[0]
    return body if (body != head or head == "mapping") else f"$.{head}"


def prefixed(root: str):
    """A renderer for a subtree read on its own: paths continue `root` (`hw_params.x[1]`)."""
    def render(suffix: str) -> str:
        return root + suffix
    return render


# --- checking ----------------------------------------------------------------------------------

def _freeze(v):
    return json.dumps(v)        # key order kept: the validator checks properties in schema order


@lru_cache(maxsize=None)
def _compile(frozen: str):
    return fastjsonschema.compile(json.loads(frozen), formats=FORMATS, use_default=False)


class SchemaReader:
    """Validates documents against one schema; `render` spells error paths.  `definitions` are
    the subschemas `schema` references as `#/definitions/NAME` (each compiles to one function;
    the root is one more, so no violation carries the whole definitions table along)."""

    def __init__(self, schema: dict, render=description_path, definitions: dict | None = None):
        self.schema = schema
        self.render = render
        self._frozen = _freeze({"definitions": {**(definitions or {}), "__root__": schema},
                                "$ref": "#/definitions/__root__"})
        self._validator = None

    @property
    def _validate(self):
        if self._validator is None:          # compiled on first use, once per process
            self._validator = _compile(self._frozen)
        return self._validator

    def check(self, doc, render=None) -> None:
        try:
            self._validate(doc)
        except fastjsonschema.JsonSchemaValueException as exc:
            raise translate(exc, render or self.render) from None


# how a type violation names what was expected (the helpers' `string` is a nonempty one)
_EXPECTED = {"object": "an object", "array": "a list", "integer": "an integer", "string": "a nonempty string",
             "boolean": "a boolean"}


def _of(schema) -> str:
    t = schema.get("title") if isinstance(schema, dict) else None
    return f" of {t}" if t else ""


def _message(template: str, value) -> str:
    if isinstance(value, Decimal):       # a JSON number read with floats=Decimal reads as the float it spells
        value = float(value)
    return template.format(value=value, kind=json_kind(value), pytype=type(value).__name__)


def translate(exc, render) -> FormatError:
    """The project's wording of one fastjsonschema violation."""
    suffix = (exc.name or "data")[len("data"):]     # fastjsonschema names the root "data"
    path, rule, value, d = render(suffix), exc.rule, exc.value, exc.definition or {}
    if rule == "propertyNames":               # the closed-object check: the first unknown key
        allowed = d["propertyNames"]["enum"]
        key = next(k for k in value if k not in allowed)
        owner = d.get("x-owner", "")
        return FormatError(render(f"{suffix}.{key}"), f"unknown field{owner} (allowed: {', '.join(allowed)})")
    if rule == "required":
        key = next(k for k in d["required"] if k not in value)
        if "x-required" in d and key in d["x-required"]:
            return FormatError(render(f"{suffix}.{key}"), _message(d["x-required"][key], None))
        return FormatError(path, f"missing required field {key!r}{_of(d)}")
    if "x-message" in d:
        return FormatError(path, _message(d["x-message"], value))
    if rule == "type" or rule == "minLength":
        want = d.get("type", "string")
        noun = (_EXPECTED.get(want, want) if isinstance(want, str) else " or ".join(want))
        return FormatError(path, f"expected {noun}{_of(d) if want == 'object' else ''}, found {json_kind(value)}")
    if rule in ("maxItems", "maxProperties"):
        return FormatError(path, f"{len(value)} entries exceed the limit of {d[rule]}")
    if rule == "minItems":
        n = d["minItems"]
        return FormatError(path, f"needs at least {n} entr{'y' if n == 1 else 'ies'}")
    if rule in ("minimum", "maximum"):
        return FormatError(path, f"{value} is outside [{d['minimum']}, {d['maximum']}]")
    return FormatError(path, f"{json_kind(value)} violates the schema ({rule})")
