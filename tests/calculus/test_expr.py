"""The expression language on Python's `ast` (docs/regions.md, "Expressions"): it accepts exactly
what the recursive-descent parser it replaced accepted, builds the same trees and reports the
same columns and words -- checked against that parser, kept as tests/calculus/legacy_expr.py,
on random token soup -- except for Python's reserved words, which are no longer names."""
import importlib.util
import pathlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator.calculus.expr import (RESERVED, Bin, Call, Const, ExprSyntaxError, Load, Un, Var, parse_expr,
                                    parse_stmt)

_spec = importlib.util.spec_from_file_location("legacy_expr", pathlib.Path(__file__).with_name("legacy_expr.py"))
legacy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(legacy)


def shape(e):
    """A tree as nested tuples, constants with their Python type (1 vs 1.0 vs True)."""
    if isinstance(e, Const):
        return ("const", type(e.value).__name__, repr(e.value))
    if isinstance(e, Var):
        return ("var", e.name)
    if isinstance(e, Load):
        return ("load", e.name, tuple(map(shape, e.index)))
    if isinstance(e, Call):
        return ("call", e.name, tuple(map(shape, e.args)))
    if isinstance(e, Bin):
        return ("bin", e.op, shape(e.a), shape(e.b))
    if isinstance(e, Un):
        return ("un", e.op, shape(e.a))
    raise AssertionError(type(e))


def outcome(parse, text):
    try:
        r = parse(text)
    except ExprSyntaxError as exc:
        return ("error", str(exc))
    except ValueError as exc:        # the old parser's int('017', 0) crash
        return ("crash", str(exc))
    if hasattr(r, "target"):
        return ("stmt", shape(r.target), shape(r.value))
    return ("expr", shape(r))


def agree(text, stmt=False):
    new = outcome(parse_stmt if stmt else parse_expr, text)
    old = outcome(legacy.parse_stmt if stmt else legacy.parse_expr, text)
    if new == old:
        return
    if old[0] == "crash":
        assert new[0] == "error", (text, new)
        return
    # the one narrowing: a reserved word of Python is not a name
    assert new[0] == "error" and "reserved word" in new[1], (text, new, old)
    assert any(w in RESERVED for w in text.replace("(", " ").replace("[", " ").split()) or \
        any(w in text for w in RESERVED), (text, new, old)


PIECES = (["a", "b", "x", "f", "i", "inf", "nan", "true", "True", "None", "in", "if", "lambda", "is",
           "0", "1", "017", "00", "0x1F", "0b10", "0o7", "1.5", ".5", "1.", "1e3", "1_0", "2j", "'s'", "'a b'",
           '"d"', "''"] +
          ["+", "-", "*", "/", "//", "%", "<<", ">>", "&", "|", "^", "~", "<", "<=", ">", ">=", "==", "!=", "=",
           "and", "or", "not", "(", ")", "[", "]", ",", "**", "@", ":", ".", ";", "#", "\\", "$", "!", "{", "}",
           "+=", ":="])
BLANKS = ["", " ", "  ", "\t", "\n"]
soup = st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from(BLANKS)), min_size=1, max_size=12).map(
    lambda parts: "".join(p + b for p, b in parts))


@settings(max_examples=800, deadline=None, suppress_health_check=list(HealthCheck))
@given(soup)
def test_random_expressions_parse_and_fail_exactly_as_before(text):
    agree(text)


@pytest.mark.parametrize("text", ["x = a;", "y[i] = 1 ;", "x = a; y = b"])
def test_a_semicolon_is_no_token_of_a_statement(text):
    agree(text, stmt=True)                  # Python's grammar takes 'x = a;', ours never did


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(["x", "y[i]", "(y)", "y[0, 1]", "1", "f(a)", "(y[0])", "inf", "x[(0)]"]), soup)
def test_random_statements_parse_and_fail_exactly_as_before(target, value):
    agree(f"{target} = {value}", stmt=True)
    agree(f"{target} {value}", stmt=True)


VALID = ["a | b & c", "a & b | c ^ d", "(a | b) & c", "a | (b & c)", "(a) | b & (c)", "a < b and c < d",
         "not a == b", "not not a", "-x * y", "- 5", "-(5)", "--5", "~-x", "x[i, j + 1]", "x[(i), (j)]",
         "f()", "f(a, b)[0]" if False else "f(a, b)", "x[ i ]", "(x)", "((x))", "a << b & c", "a & b << c",
         "1 - -1", "1e3 + .5 + 1.", "0x1F + 0b10", "'a' + 's b'", "a <= b", "(a < b) < c", "x[f(i)]",
         "i // 2 % 3", "a\n+\tb", "x[\n0]", "True[0]", "None(1) + False"]


@pytest.mark.parametrize("text", VALID)
def test_the_grammar_is_unchanged_on_valid_text(text):
    assert outcome(parse_expr, text) == outcome(legacy.parse_expr, text)
    assert outcome(parse_expr, text)[0] == "expr"


@pytest.mark.parametrize("text,message", [
    ("y[0 = 1", "column 5: expected ']', found '='"),
    ("a < b < c", "column 7: chained comparisons are not allowed; use 'and'"),
    ("(x)[1]", "column 4: unexpected '[' after the expression"),
    ("x[(1, 2)]", "column 5: expected ')', found ','"),
    ("f(1,)", "column 5: expected a value, found ')'"),
    ("a # b", "column 3: unexpected character '#'"),
    ("a ** b", "column 4: expected a value, found '*'"),
    ("x.y", "column 2: unexpected character '.'"),
    ("'a' 'b'", "column 5: unexpected \"'b'\" after the expression"),
    ("in + 1", "column 1: 'in' is a reserved word of Python and cannot be a name"),
    ("017", "leading zeros in decimal integer literals are not permitted"),   # the old parser crashed
])
def test_messages_name_the_column(text, message):
    with pytest.raises(ExprSyntaxError) as e:
        parse_expr(text)
    assert message in str(e.value)


def test_statements():
    s = parse_stmt("  y[i] = y[i] + 1")
    assert s.text == "  y[i] = y[i] + 1" and isinstance(s.target, Load)
    for text, message in [("y[0] == 1", "column 6: expected '=', found '=='"),
                          ("1 = 2", "column 1: a statement assigns to a local NAME or an element NAME[...]"),
                          ("x = y = 1", "column 7: unexpected '=' after the expression"),
                          ("x += 1", "column 3: expected '=', found '+'"),
                          ("(x)[0] = 1", "column 4: expected '=', found '['")]:
        with pytest.raises(ExprSyntaxError) as e:
            parse_stmt(text)
        assert message in str(e.value), text


def test_bounds_are_errors_not_crashes():
    with pytest.raises(ExprSyntaxError, match="nested too deeply"):
        parse_expr("(" * 300 + "1" + ")" * 300)
    with pytest.raises(ExprSyntaxError, match="nested too deeply"):
        parse_expr(" + ".join(["1"] * 5000))
    with pytest.raises(ExprSyntaxError, match="integer literal of 5000 characters"):
        parse_expr("9" * 5000)
    with pytest.raises(ExprSyntaxError, match="integer literal of 5002 characters"):
        parse_expr("0x" + "f" * 5000)
    with pytest.raises(ExprSyntaxError, match="must be a string"):
        parse_expr(7)
    assert isinstance(parse_expr("f(" + ", ".join(["1"] * 2000) + ")"), Call)


def test_a_text_is_parsed_once_and_a_refusal_every_time():
    from emulator.calculus import expr as E
    a = parse_expr("i * 4 + j")
    assert parse_expr("i * 4 + j") is a and repr(a) == "((i * 4) + j)"
    s = parse_stmt("y[i] = y[i] + 1")
    assert parse_stmt("y[i] = y[i] + 1") is s and s.text == "y[i] = y[i] + 1"
    for _ in range(2):                     # a refused text is never kept: the same words each time
        with pytest.raises(ExprSyntaxError, match="column 4: expected a value, found end of text"):
            parse_expr("i +")
    long = " + ".join(["i"] * 100)         # longer than CACHED_TEXT: parsed anew, the same tree
    assert len(long) > E.CACHED_TEXT and parse_expr(long) is not parse_expr(long)
    assert repr(parse_expr(long)) == repr(parse_expr(long))
    for k in range(E.PARSE_CACHE + 10):    # bounded: a stream of distinct texts does not grow it
        parse_expr(f"i + {k}")
    assert E._cached_expr.cache_info().currsize <= E.PARSE_CACHE
