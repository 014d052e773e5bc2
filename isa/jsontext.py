"""JSON input for every reader of the project: `loads` with one-line errors and bounded integers.

`json.loads` alone lets three kinds of hostile text escape as unexpected exceptions: an integer
literal longer than Python's int-string limit (ValueError from `int()`), deep nesting
(RecursionError), and malformed text (JSONDecodeError, whose message is fine but whose type
callers must remember).  `loads` turns all three into `JsonTextError`, one line saying where
and why, so each loader wraps a single exception type in its own error.

Nesting the parser accepts can still be too deep for what a reader does next: a document nested
a few levels short of the recursion limit parses, and then a JSON Schema check's error message
(which prints the value), `repr`, `==` or `json.dumps` of it recurses deeper and raises
RecursionError.  A reader of a shallow format passes `max_depth` (MAX_DEPTH unless it knows
better), and `loads` refuses any deeper document the same way; `check_depth` checks a value
parsed some other way.  Region programs nest by design, so the bound is opt-in.

It lives in `isa`, the bottom package, only because readers in every layer above parse JSON.
"""
from __future__ import annotations

import json

# Python's default int-string limit: `int()` refuses longer strings (and would spend quadratic
# time on them).  Region programs allow unbounded integers, so the bound is this one and not
# the 20 digits of a 64-bit field; readers check their own ranges after parsing.
MAX_INT_DIGITS = 4300
# The nesting a reader of a shallow format allows: every stored format but region programs
# (manifests, layouts, state metadata, fabric descriptions, mappings, commit log lines) nests
# fewer than 10 levels, and 64 leaves any later recursion over the value far from the limit.
MAX_DEPTH = 64


class JsonTextError(ValueError):
    """Text that is not acceptable JSON; the message says where (line, column) when known."""


def _parse_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise JsonTextError(f"integer {text[:24]}... has {digits} digits (the limit is {MAX_INT_DIGITS})")
    try:
        return int(text)
    except ValueError:   # PYTHONINTMAXSTRDIGITS set below the default
        raise JsonTextError(f"integer {text[:24]}... has {digits} digits (more than this Python "
                            f"converts: PYTHONINTMAXSTRDIGITS)") from None


def loads(text, max_depth: int | None = None, **kwargs):
    """`json.loads(text)`, raising JsonTextError (a ValueError) for everything malformed:
    bad syntax, nesting too deep for the parser (or, given `max_depth`, more than max_depth
    arrays and objects deep), an integer of more than MAX_INT_DIGITS digits.  `kwargs` go to
    json.loads (object_pairs_hook, parse_constant, ...)."""
    try:
        value = json.loads(text, parse_int=_parse_int, **kwargs)
    except json.JSONDecodeError as exc:
        raise JsonTextError(f"line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise JsonTextError("the JSON nests too deeply") from None
    except UnicodeDecodeError as exc:
        raise JsonTextError(f"not UTF-8 text (byte {exc.start})") from None
    if max_depth is not None:
        check_depth(value, max_depth)
    return value


def check_depth(value, max_depth: int = MAX_DEPTH) -> None:
    """JsonTextError when `value` (dicts, lists and scalars, as json parses them) nests arrays
    and objects more than `max_depth` deep.  Level by level, without recursion: the cost is
    one visit of each array and object, and any depth is measured."""
    level = [value] if isinstance(value, (dict, list)) else []
    depth = 0
    while level:
        depth += 1
        if depth > max_depth:
            raise JsonTextError(f"the JSON nests too deeply (more than {max_depth} levels of arrays and objects)")
        level = [v for c in level for v in (c.values() if isinstance(c, dict) else c) if isinstance(v, (dict, list))]
