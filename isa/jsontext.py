"""JSON input for every reader of the project: `loads` with one-line errors and bounded integers.

`json.loads` alone lets three kinds of hostile text escape as unexpected exceptions: an integer
literal longer than Python's int-string limit (ValueError from `int()`), deep nesting
(RecursionError), and malformed text (JSONDecodeError, whose message is fine but whose type
callers must remember).  `loads` turns all three into `JsonTextError`, one line saying where
and why, so each loader wraps a single exception type in its own error.

It lives in `isa`, the bottom package, only because readers in every layer above parse JSON.
"""
from __future__ import annotations

import json

# Python's default int-string limit: `int()` refuses longer strings (and would spend quadratic
# time on them).  Region programs allow unbounded integers, so the bound is this one and not
# the 20 digits of a 64-bit field; readers check their own ranges after parsing.
MAX_INT_DIGITS = 4300


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


def loads(text, **kwargs):
    """`json.loads(text)`, raising JsonTextError (a ValueError) for everything malformed:
    bad syntax, nesting too deep for the parser, an integer of more than MAX_INT_DIGITS digits.
    `kwargs` go to json.loads (object_pairs_hook, parse_constant, ...)."""
    try:
        return json.loads(text, parse_int=_parse_int, **kwargs)
    except json.JSONDecodeError as exc:
        raise JsonTextError(f"line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise JsonTextError("the JSON nests too deeply") from None
    except UnicodeDecodeError as exc:
        raise JsonTextError(f"not UTF-8 text (byte {exc.start})") from None
