"""The recursive-descent parser that emulator/calculus/expr.py used before it moved to Python's
`ast` (issue 18), kept only as the test oracle for tests/calculus/test_expr.py: the new parser
must accept exactly what this one accepts, build the same trees and report the same columns."""
import math

from isa.atomicio import quote

from emulator.calculus.expr import _TOKEN, Bin, Call, Const, Expr, ExprSyntaxError, Load, Stmt, Un, Var

MAX_LITERAL = 4300


# ---------------------------------------------------------------------------------------------
# Tokenizer and recursive-descent parser.  The token classes are the language's lexical
# definition, one table in expr.py (`_TOKEN`), which both parsers read.

_COMPARE = ("==", "!=", "<", "<=", ">", ">=")
_ARITH = {"&": 1, "|": 1, "^": 1, "<<": 2, ">>": 2, "+": 3, "-": 3, "*": 4, "/": 4, "//": 4, "%": 4}
_KEYWORDS = ("and", "or", "not")
_CONSTS = {"inf": math.inf, "nan": math.nan, "true": True, "false": False}


def _tokens(text: str):
    pos, out = 0, []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ExprSyntaxError(pos + 1, f"unexpected character {text[pos]!r}")
        kind = m.lastgroup
        if kind != "ws":
            tok = m.group()
            if kind == "name" and tok in _KEYWORDS:
                kind = "op"
            out.append((kind, tok, pos + 1))
        pos = m.end()
    out.append(("end", "", len(text) + 1))
    return out


class _Parser:
    def __init__(self, text: str):
        self.toks = _tokens(text)
        self.i = 0

    def peek(self):
        return self.toks[self.i]

    def take(self):
        t = self.toks[self.i]
        self.i += 1
        return t

    def expect(self, tok: str):
        kind, text, col = self.take()
        if text != tok or kind in ("str",):
            raise ExprSyntaxError(col, f"expected '{tok}', found {_show(kind, text)}")

    def at(self, *ops) -> bool:
        kind, text, _ = self.peek()
        return kind == "op" and text in ops

    def binary(self, ops, sub):
        e = sub()
        while self.at(*ops):
            op = self.take()[1]
            e = Bin(op, e, sub())
        return e

    def expr(self):
        return self.binary(("or",), self.conj)

    def conj(self):
        return self.binary(("and",), self.neg)

    def neg(self):
        if self.at("not"):
            self.take()
            return Un("not", self.neg())
        return self.cmp()

    def cmp(self):
        e = self.arith()
        if self.at(*_COMPARE):
            op = self.take()[1]
            e = Bin(op, e, self.arith())
            if self.at(*_COMPARE):
                raise ExprSyntaxError(self.peek()[2], "chained comparisons are not allowed; use 'and'")
        return e

    def arith(self, min_level: int = 1):
        """bit, shift, sum and term: left-associative levels parsed by precedence climbing (one
        loop instead of a call per level per operand: parsing is linear and cheap per token)."""
        e = self.unary()
        while True:
            kind, text, _ = self.toks[self.i]
            level = _ARITH.get(text, 0) if kind == "op" else 0
            if level < min_level:
                return e
            self.i += 1
            e = Bin(text, e, self.arith(level + 1))

    def unary(self):
        if self.at("-", "~"):
            op = self.take()[1]
            inner = self.unary()
            if op == "-" and isinstance(inner, Const) and isinstance(inner.value, (int, float)) \
                    and not isinstance(inner.value, bool):
                return Const(-inner.value)
            return Un(op, inner)
        return self.atom()

    def atom(self):
        kind, text, col = self.take()
        if kind == "int":
            if len(text) > MAX_LITERAL:     # int() refuses longer decimal strings
                raise ExprSyntaxError(col, f"integer literal of {len(text)} characters (the limit is {MAX_LITERAL})")
            return Const(int(text, 0))
        if kind == "float":
            return Const(float(text))
        if kind == "str":
            return Const(text[1:-1])
        if kind == "name":
            if text in _CONSTS:
                return Const(_CONSTS[text])
            if self.at("["):
                self.take()
                return Load(text, self.args("]"))
            if self.at("("):
                self.take()
                return Call(text, self.args(")", allow_empty=True))
            return Var(text)
        if kind == "op" and text == "(":
            e = self.expr()
            self.expect(")")
            return e
        raise ExprSyntaxError(col, f"expected a value, found {_show(kind, text)}")

    def args(self, close: str, allow_empty: bool = False) -> tuple[Expr, ...]:
        out = []
        if allow_empty and self.at(close):
            self.take()
            return ()
        while True:
            out.append(self.expr())
            if self.at(","):
                self.take()
                continue
            self.expect(close)
            return tuple(out)

    def end(self):
        kind, text, col = self.peek()
        if kind != "end":
            raise ExprSyntaxError(col, f"unexpected {_show(kind, text)} after the expression")


def _show(kind: str, text: str) -> str:
    return "end of text" if kind == "end" else quote(text)


MAX_TEXT = 1 << 16


def _guarded(text: str, parse):
    if not isinstance(text, str):
        raise ExprSyntaxError(1, f"an expression must be a string, got {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise ExprSyntaxError(1, f"expression longer than {MAX_TEXT} characters")
    try:
        return parse(_Parser(text))
    except RecursionError:
        raise ExprSyntaxError(1, "expression nested too deeply") from None


def parse_expr(text: str) -> Expr:
    def go(p):
        e = p.expr()
        p.end()
        return e
    return _guarded(text, go)


def parse_stmt(text: str) -> Stmt:
    return _guarded(text, lambda p: _stmt(p, text))


def _stmt(p: "_Parser", text: str) -> Stmt:
    target = p.atom()
    if not isinstance(target, (Var, Load)):
        raise ExprSyntaxError(1, "a statement assigns to a local NAME or an element NAME[...]")
    kind, tok, col = p.take()
    if tok != "=" or kind != "op":
        raise ExprSyntaxError(col, f"expected '=', found {_show(kind, tok)}")
    value = p.expr()
    p.end()
    return Stmt(target, value, text)
