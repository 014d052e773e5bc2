"""The expression and statement language of region programs (docs/regions.md, "Expressions").

A small, total grammar so that a program file is data, never code:

    expr  := or ;  or := and ('or' and)* ;  and := not ('and' not)* ;  not := 'not' not | cmp
    cmp   := bit (('=='|'!='|'<'|'<='|'>'|'>=') bit)?
    bit   := shift (('&'|'|'|'^') shift)* ;  shift := sum (('<<'|'>>') sum)*
    sum   := term (('+'|'-') term)* ;  term := unary (('*'|'/'|'//'|'%') unary)*
    unary := ('-'|'~') unary | atom
    atom  := INT | FLOAT | 'STRING' | NAME | NAME '[' expr (',' expr)* ']' | NAME '(' args ')'
           | '(' expr ')'
    stmt  := NAME '=' expr | NAME '[' expr, ... ']' '=' expr

`NAME` alone is a domain coordinate, a specialization parameter, a loop-carried value or a
local; `NAME[...]` is a load from an array (or a lookup in a parameter table, an explicit index
function); `NAME(...)` calls a registered function.  Integers are unbounded and `//`, `%` are
floor division and floor modulo (Python's, which is what mixed-radix splits need); floats are
binary64 with round-to-nearest-even; mixing an int and a float is an error, not a conversion.
"""
from __future__ import annotations

import math
import re

from isa.atomicio import quote

__all__ = ["Expr", "Const", "Var", "Load", "Call", "Bin", "Un", "Stmt", "ExprSyntaxError",
           "EvalError", "parse_expr", "parse_stmt", "walk"]


class ExprSyntaxError(ValueError):
    def __init__(self, col: int, why: str):
        super().__init__(f"column {col}: {why}")
        self.col = col
        self.why = why


class EvalError(ValueError):
    """An expression that cannot be evaluated at this instance (type, range, division by zero)."""


class Expr:
    __slots__ = ()

    def children(self) -> tuple["Expr", ...]:
        return ()


class Const(Expr):
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def eval(self, env):
        return self.value

    def __repr__(self):
        return repr(self.value) if not isinstance(self.value, str) else "'" + self.value + "'"


class Var(Expr):
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def eval(self, env):
        return env.name(self.name)

    def __repr__(self):
        return self.name


class Load(Expr):
    __slots__ = ("name", "index")

    def __init__(self, name: str, index: tuple[Expr, ...]):
        self.name, self.index = name, index

    def children(self):
        return self.index

    def eval(self, env):
        return env.load(self.name, tuple(as_index(e.eval(env)) for e in self.index))

    def __repr__(self):
        return f"{self.name}[{', '.join(map(repr, self.index))}]"


class Call(Expr):
    __slots__ = ("name", "args")

    def __init__(self, name: str, args: tuple[Expr, ...]):
        self.name, self.args = name, args

    def children(self):
        return self.args

    def eval(self, env):
        return env.call(self.name, [a.eval(env) for a in self.args])

    def __repr__(self):
        return f"{self.name}({', '.join(map(repr, self.args))})"


def _same_kind(op, a, b):
    ka, kb = _kind(a), _kind(b)
    if ka != kb:
        raise EvalError(f"'{op}' mixes {ka} and {kb} operands (convert explicitly, e.g. f64(x))")
    return ka


def _kind(v) -> str:
    if isinstance(v, bool):
        return "int"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "str"
    if v is None:
        raise EvalError("use of an undefined value")
    return type(v).__name__


MAX_LITERAL = 4300            # Python's int-string limit (isa.jsontext.MAX_INT_DIGITS)
MAX_INT_BITS = 4096          # values are bounded so a hostile program cannot exhaust memory
MAX_STR_LEN = 1 << 16


def _arith(op, a, b):
    v = _arith_raw(op, a, b)
    if isinstance(v, int) and v.bit_length() > MAX_INT_BITS:
        raise EvalError(f"integer result of '{op}' exceeds {MAX_INT_BITS} bits")
    if isinstance(v, str) and len(v) > MAX_STR_LEN:
        raise EvalError(f"string result of '{op}' exceeds {MAX_STR_LEN} characters")
    return v


def _arith_raw(op, a, b):
    k = _same_kind(op, a, b)
    if k == "str":
        if op == "+":
            return a + b
        raise EvalError(f"'{op}' is not defined on strings")
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        if k == "int" and a.bit_length() + b.bit_length() > MAX_INT_BITS + 1:
            raise EvalError(f"integer result of '*' exceeds {MAX_INT_BITS} bits")
        return a * b
    if op == "/":
        if k != "float":
            raise EvalError("'/' is binary64 division; use '//' for integers")
        if b == 0.0:
            # IEEE: x/±0 is ±inf (or NaN for 0/0); Python raises, so spell it out.
            if a == 0.0 or math.isnan(a):
                return math.nan
            return math.copysign(math.inf, a) * math.copysign(1.0, b)
        return a / b
    if k != "int":
        raise EvalError(f"'{op}' is defined on integers only")
    if op in ("//", "%"):
        if b == 0:
            raise EvalError(f"integer {'division' if op == '//' else 'modulo'} by zero")
        return a // b if op == "//" else a % b
    if op in ("<<", ">>"):
        if b < 0:
            raise EvalError(f"negative shift count {b}")
        if op == "<<" and a.bit_length() + b > MAX_INT_BITS:
            raise EvalError(f"integer result of '<<' exceeds {MAX_INT_BITS} bits")
        return a << b if op == "<<" else a >> b
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "^":
        return a ^ b
    raise AssertionError(op)


def _compare(op, a, b):
    _same_kind(op, a, b)
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def truth(v) -> bool:
    if isinstance(v, (bool, int)):
        return bool(v)
    raise EvalError(f"a predicate must be an integer or comparison, got {_kind(v)}")


class Bin(Expr):
    __slots__ = ("op", "a", "b")

    def __init__(self, op: str, a: Expr, b: Expr):
        self.op, self.a, self.b = op, a, b

    def children(self):
        return (self.a, self.b)

    def eval(self, env):
        op = self.op
        if op == "and":
            return truth(self.a.eval(env)) and truth(self.b.eval(env))
        if op == "or":
            return truth(self.a.eval(env)) or truth(self.b.eval(env))
        a, b = self.a.eval(env), self.b.eval(env)
        if op in _COMPARE:
            return _compare(op, a, b)
        return _arith(op, a, b)

    def __repr__(self):
        return f"({self.a!r} {self.op} {self.b!r})"


class Un(Expr):
    __slots__ = ("op", "a")

    def __init__(self, op: str, a: Expr):
        self.op, self.a = op, a

    def children(self):
        return (self.a,)

    def eval(self, env):
        v = self.a.eval(env)
        if self.op == "not":
            return not truth(v)
        k = _kind(v)
        if self.op == "-" and k in ("int", "float"):
            return -v
        if self.op == "~" and k == "int":
            return ~v
        raise EvalError(f"unary '{self.op}' is not defined on {k}")

    def __repr__(self):
        return f"{self.op}{'' if self.op != 'not' else ' '}{self.a!r}"


class Stmt:
    """`target = value`; target is a Var (a local) or a Load (a store to an array element)."""
    __slots__ = ("target", "value", "text")

    def __init__(self, target: Var | Load, value: Expr, text: str):
        self.target, self.value, self.text = target, value, text

    def __repr__(self):
        return self.text


def as_index(v) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise EvalError(f"an index must be an integer, got {_kind(v)} {v!r}")
    return v


def walk(e: Expr):
    """Every node of an expression, parents before children."""
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children()))


# ---------------------------------------------------------------------------------------------
# Tokenizer and recursive-descent parser.

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<float>(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
  | (?P<int>0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)
  | (?P<str>'[^'\\]*')
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>//|<<|>>|<=|>=|==|!=|[-+*/%&|^~<>=()\[\],])
""", re.VERBOSE)

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
