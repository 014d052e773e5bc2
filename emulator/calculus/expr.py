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

Parsing is Python's own parser (`ast`) restricted by a node whitelist to this grammar (below);
Python's reserved words (`if`, `in`, `lambda`, ...) are therefore not names, and an expression
nests at most as deep as Python's parser builds (about 200 parentheses, or a chain of about
900 operators).  A rejection names the column of the first offending token.
"""
from __future__ import annotations

import ast
import keyword
import math
import re
import warnings
from functools import lru_cache

from isa.atomicio import quote

from .errors import Located

__all__ = ["Expr", "Const", "Var", "Load", "Call", "Bin", "Un", "Stmt", "ExprSyntaxError",
           "EvalError", "parse_expr", "parse_stmt", "walk", "refs"]


class ExprSyntaxError(Located):
    """A syntax error at column `col` (1-based)."""

    def __init__(self, col: int, why: str):
        super().__init__(f"column {col}", why)
        self.col = col


class EvalError(ValueError):
    """An expression that cannot be evaluated at this instance (type, range, division by zero)."""


class Names:
    """The `name` half of the evaluation protocol (name, load, call) over a dict of values."""
    __slots__ = ("vars",)
    unbound = "'{}' is not bound here"

    def name(self, n):
        try:
            return self.vars[n]
        except KeyError:
            raise EvalError(self.unbound.format(n)) from None


class Expr:
    __slots__ = ("_refs",)        # refs(): computed on first use

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


class _Applied(Expr):
    """NAME[...] and NAME(...): a name applied to operands (`index` / `args` name them)."""
    __slots__ = ("name", "items")
    brackets = "()"

    def __init__(self, name: str, items: tuple[Expr, ...]):
        self.name, self.items = name, items

    def children(self):
        return self.items

    def __repr__(self):
        return f"{self.name}{self.brackets[0]}{', '.join(map(repr, self.items))}{self.brackets[1]}"


class Load(_Applied):
    """An array element or a parameter-table entry."""
    __slots__ = ()
    brackets = "[]"

    @property
    def index(self) -> tuple[Expr, ...]:
        return self.items

    def eval(self, env):
        return env.load(self.name, tuple(as_index(e.eval(env)) for e in self.items))


class Call(_Applied):
    __slots__ = ()

    @property
    def args(self) -> tuple[Expr, ...]:
        return self.items

    def eval(self, env):
        return env.call(self.name, [a.eval(env) for a in self.items])


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


def table_entry(table, name: str, idx: tuple):
    """A parameter table's entry at integer indices idx (EvalError when out of range)."""
    v = table
    for i in idx:
        if not 0 <= i < len(v):
            raise EvalError(f"{name}[{', '.join(map(str, idx))}] is out of range of the table")
        v = v[i]
    return v


def walk(e: Expr):
    """Every node of an expression, parents before children."""
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children()))


def refs(e: Expr) -> tuple[Expr, ...]:
    """The Var, Load and Call nodes of `e` in walk order: what a name check reads.  Kept on the
    tree once computed (a parsed tree is shared by every place its text appears)."""
    try:
        return e._refs
    except AttributeError:
        pass
    r = e._refs = tuple([n for n in walk(e) if isinstance(n, (Var, _Applied))])
    return r


# ---------------------------------------------------------------------------------------------
# Parsing: Python's own parser (`ast`), restricted by a node whitelist to the grammar above.
#
# Python parses a superset of this grammar with the same precedence everywhere except one level:
# '&', '|' and '^' are one left-associative level here (Python orders them & > ^ > |), so an
# unparenthesized run of them is flattened in source order and folded from the left.  `ast`
# drops parentheses, so the few places where they change the meaning are read back from the
# node offsets (a parenthesized name cannot be subscripted or called, a parenthesized tuple is
# not an index list).  Anything outside the whitelist is rejected, and the error is then located
# by `_diagnose`: a linear scan of the lexical grammar below (the token classes are the
# language's definition, so they stay a table) that names the first token at which the text
# stops being a prefix of the grammar -- the column and words of the recursive-descent parser
# this replaced, so every message stays the same.

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<float>(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
  | (?P<int>0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)
  | (?P<str>'[^'\\]*')
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>//|<<|>>|<=|>=|==|!=|[-+*/%&|^~<>=()\[\],])
""", re.VERBOSE)
# whole-token forms (fullmatch) of the classes above
_INT = re.compile(r"0[xX][0-9a-fA-F]+|0[bB][01]+|\d+").fullmatch
_FLOAT = re.compile(r"(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+").fullmatch
_STR = re.compile(r"'[^'\\]*'").fullmatch
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").fullmatch
MAX_TEXT = 1 << 16
_PLAIN = re.compile(r"[ !\"$-\[\]-~]*").fullmatch   # printable ASCII without '#' and '\': Python reads it as we do

_COMPARE = ("==", "!=", "<", "<=", ">", ">=")
_ARITH_OPS = ("&", "|", "^", "<<", ">>", "+", "-", "*", "/", "//", "%")
_KEYWORDS = ("and", "or", "not")
_CONSTS = {"inf": math.inf, "nan": math.nan, "true": True, "false": False}
# Python's reserved words cannot be names here (Python's parser reads them as syntax).
RESERVED = frozenset(keyword.kwlist) - {"and", "or", "not", "True", "False", "None"} | {"__debug__"}

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
           ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}
_BITWISE = frozenset((ast.BitAnd, ast.BitOr, ast.BitXor))
_WARNS = re.compile(r"(?<![A-Za-z_0-9])\.?\d[\w.]*?[A-Za-z_]").search   # a literal run into a name
_CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_BOOLOPS = {ast.And: "and", ast.Or: "or"}


class _Reject(Exception):
    """The text is outside the grammar; `_diagnose` says where and why (`why`, `col`: Python's
    own words, used only where the scan finds nothing)."""

    def __init__(self, why: str = "not in the expression grammar", col: int = 1):
        self.why, self.col = why, col


class _Source:
    """Offsets of `ast` nodes (UTF-8 bytes of one line) read back in the text."""
    __slots__ = ("b", "text")

    def __init__(self, text: str):
        self.text = text
        self.b = text if text.isascii() else text.encode()

    def seg(self, n) -> str:
        s = self.b[n.col_offset:n.end_col_offset]
        return s if isinstance(s, str) else s.decode()

    def gap(self, a: int, b: int) -> str:
        s = self.b[a:b]
        return s if isinstance(s, str) else s.decode()


# Conversion, one function per whitelisted node type.  Every identifier in the tree is ASCII
# [A-Za-z_][A-Za-z0-9_]* (the text was printable ASCII or went through the lexer), so names need
# no check; literals do (Python also reads 1_000, 0o7, 2j, "s", 'a' 'b').

def _const(n, src: _Source) -> Expr:
    v = n.value
    if v is None or v is True or v is False:
        return Var(src.seg(n))                     # True, False, None: plain names here
    seg = src.seg(n)
    t = type(v)
    if t is int:
        if (seg.isdigit() or _INT(seg)) and len(seg) <= MAX_LITERAL:
            return Const(v)
    elif t is float:
        if _FLOAT(seg):
            return Const(v)
    elif t is str and _STR(seg):                   # one quoted run, no escapes, no concatenation
        return Const(v)
    raise _Reject


def _name(n, src: _Source) -> Expr:
    c = _CONSTS.get(n.id)
    return Var(n.id) if c is None else Const(c)


def _callee(n, owner, src: _Source) -> str:
    """The name before '[' or '(': unparenthesized, not a constant name."""
    t = type(n)
    if n.col_offset != owner.col_offset:           # `(x)[i]`, `(f)(x)`
        raise _Reject
    if t is ast.Name:
        name = n.id
    elif t is ast.Constant and (n.value is None or n.value is True or n.value is False):
        name = src.seg(n)
    else:
        raise _Reject
    if name in _CONSTS:
        raise _Reject
    return name


def _args(items, src: _Source, close_at: int) -> tuple[Expr, ...]:
    """Index or call arguments; no trailing comma (the text between the last one and the
    closing bracket holds only its own closing parentheses and blanks)."""
    if items and items[-1].end_col_offset != close_at and "," in src.gap(items[-1].end_col_offset, close_at):
        raise _Reject
    return tuple([Var(a.id) if type(a) is ast.Name and a.id not in _CONSTS else _conv(a, src) for a in items])


def _bit_operands(n, src: _Source, out: list, ops: list) -> None:
    """Flatten an unparenthesized run of & | ^ in source order (the grammar's one level)."""
    left, right = n.left, n.right
    if type(left) is ast.BinOp and type(left.op) in _BITWISE and left.col_offset == n.col_offset:
        _bit_operands(left, src, out, ops)
    else:
        out.append(_conv(left, src))
    ops.append(_BINOPS[type(n.op)])
    if type(right) is ast.BinOp and type(right.op) in _BITWISE and \
            "(" not in src.gap(left.end_col_offset, right.col_offset):
        _bit_operands(right, src, out, ops)
    else:
        out.append(_conv(right, src))


def _binop(n, src: _Source) -> Expr:
    t = type(n.op)
    if t in _BITWISE:
        xs, ops = [], []
        _bit_operands(n, src, xs, ops)
        e = xs[0]
        for o, x in zip(ops, xs[1:]):
            e = Bin(o, e, x)
        return e
    op = _BINOPS.get(t)
    if op is None:                                 # ** and @
        raise _Reject
    a, b = n.left, n.right
    return Bin(op, Var(a.id) if type(a) is ast.Name and a.id not in _CONSTS else _conv(a, src),
               Var(b.id) if type(b) is ast.Name and b.id not in _CONSTS else _conv(b, src))


def _unary(n, src: _Source) -> Expr:
    op = _UNOPS.get(type(n.op))
    if op is None:                                 # unary +
        raise _Reject
    inner = _conv(n.operand, src)
    if op == "-" and type(inner) is Const and type(inner.value) in (int, float):
        return Const(-inner.value)
    return Un(op, inner)


def _boolop(n, src: _Source) -> Expr:
    op = _BOOLOPS[type(n.op)]
    e = _conv(n.values[0], src)
    for v in n.values[1:]:
        e = Bin(op, e, _conv(v, src))
    return e


def _comparison(n, src: _Source) -> Expr:
    if len(n.ops) != 1:                            # chained
        raise _Reject
    op = _CMPOPS.get(type(n.ops[0]))
    if op is None:                                 # in, is, not in, is not
        raise _Reject
    return Bin(op, _conv(n.left, src), _conv(n.comparators[0], src))


def _subscript(n, src: _Source) -> Expr:
    name = _callee(n.value, n, src)
    sl = n.slice
    if type(sl) is ast.Tuple:
        # a parenthesized tuple `x[(a, b)]` opens one more '(' before its first element than
        # that element closes before the first ','
        first = sl.elts[0]
        if first.col_offset != n.value.end_col_offset + 1:      # something between '[' and it
            after = src.gap(first.end_col_offset, n.end_col_offset)
            if src.gap(n.value.end_col_offset, first.col_offset).count("(") != after[:after.find(",")].count(")"):
                raise _Reject
        items = sl.elts
    else:
        items = (sl,)
    return Load(name, _args(items, src, n.end_col_offset - 1))


def _call(n, src: _Source) -> Expr:
    if n.keywords:
        raise _Reject
    return Call(_callee(n.func, n, src), _args(n.args, src, n.end_col_offset - 1))


_UNOPS = {ast.USub: "-", ast.Invert: "~", ast.Not: "not"}
_CONVERT = {ast.Constant: _const, ast.Name: _name, ast.BinOp: _binop, ast.UnaryOp: _unary,
            ast.BoolOp: _boolop, ast.Compare: _comparison, ast.Subscript: _subscript, ast.Call: _call}


def _conv(n, src: _Source) -> Expr:
    f = _CONVERT.get(type(n))
    if f is None:
        raise _Reject
    return f(n, src)


def _parse(text: str, mode: str):
    """The `ast` tree of `text` and its offsets, or _Reject."""
    if not _PLAIN(text):
        text = _normalized(text)      # blanks of any kind read as spaces, as the lexer reads them
    body = text.lstrip(" ") if text[:1] == " " else text
    try:
        if _WARNS(body):
            with warnings.catch_warnings():    # '1if' and kin: Python warns, our lexer errs
                warnings.simplefilter("ignore")
                tree = compile(body, "<expr>", mode, ast.PyCF_ONLY_AST)
        else:
            tree = compile(body, "<expr>", mode, ast.PyCF_ONLY_AST)
    except SyntaxError as exc:
        if "too many nested parentheses" in str(exc.msg):
            raise ExprSyntaxError(1, "expression nested too deeply") from None
        col = (exc.offset or 1) + len(text) - len(body)
        raise _Reject(str(exc.msg), col) from None
    except (RecursionError, MemoryError):     # Python's parser: "too complex"
        raise ExprSyntaxError(1, "expression nested too deeply") from None
    return tree, _Source(body)


def _normalized(text: str) -> str:
    """Every blank (tab, newline, ...) outside a string as a space; an ExprSyntaxError at the
    first character the lexer refuses (a '#', a '\\', anything outside the token classes)."""
    return "".join(" " * len(tok) if kind == "ws" else tok for kind, tok, _ in _lex(text, blanks=True))


def _guarded(text, mode: str, build):
    if not isinstance(text, str):
        raise ExprSyntaxError(1, f"an expression must be a string, got {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise ExprSyntaxError(1, f"expression longer than {MAX_TEXT} characters")
    try:
        return build(*_parse(text, mode))
    except _Reject as r:
        toks = _lex(text)
        _diagnose(toks, mode == "exec")
        word = next((t for k, t, _ in toks if k == "name" and t in RESERVED), None)
        if word is not None:            # the one place this grammar is narrower than it reads
            col = next(c for k, t, c in toks if k == "name" and t == word)
            raise ExprSyntaxError(col, f"{quote(word)} is a reserved word of Python and cannot be a name") from None
        raise ExprSyntaxError(r.col, r.why) from None
    except RecursionError:
        raise ExprSyntaxError(1, "expression nested too deeply") from None


# A program repeats its texts (`x[i]` in many ops, one op in every iteration of a generated
# stream), so each distinct text is parsed once: the trees are never mutated after parsing
# (every consumer reads them), so one tree can serve every place the text appears.  The cache is
# bounded in entries and in the length of a text it keeps, so a hostile stream of distinct long
# texts costs a parse each, not memory.  Rejections are not cached (lru_cache re-raises them).
PARSE_CACHE = 4096           # distinct texts kept (least recently used go first)
CACHED_TEXT = 256            # characters; a longer text is parsed every time


def _expr_tree(text: str) -> Expr:
    return _guarded(text, "eval", lambda tree, src: _conv(tree.body, src))


def _assignment(tree, src: _Source) -> Stmt:
    # Python's statement grammar takes a trailing ';' ('x = a;'), ours has no ';' at all
    if ";" in src.text or len(tree.body) != 1 or type(tree.body[0]) is not ast.Assign or len(tree.body[0].targets) != 1:
        raise _Reject
    a = tree.body[0]
    target = _conv(a.targets[0], src)
    if not isinstance(target, (Var, Load)):
        raise _Reject
    return Stmt(target, _conv(a.value, src), src.text)


def _stmt_tree(text: str) -> Stmt:
    stmt = _guarded(text, "exec", _assignment)
    stmt.text = text
    return stmt


_cached_expr = lru_cache(maxsize=PARSE_CACHE)(_expr_tree)
_cached_stmt = lru_cache(maxsize=PARSE_CACHE)(_stmt_tree)


def parse_expr(text: str) -> Expr:
    """The tree of `text` (shared by every caller with the same text: do not mutate it)."""
    if type(text) is str and len(text) <= CACHED_TEXT:
        return _cached_expr(text)
    return _expr_tree(text)


def parse_stmt(text: str) -> Stmt:
    """The statement `text` (shared by every caller with the same text: do not mutate it)."""
    if type(text) is str and len(text) <= CACHED_TEXT:
        return _cached_stmt(text)
    return _stmt_tree(text)


# ---------------------------------------------------------------------------------------------
# Locating a rejection: the first token where the text stops being a prefix of the grammar.

def _lex(text: str, blanks: bool = False) -> list[tuple[str, str, int]]:
    """(kind, text, column) per token, 'end' last; `blanks` keeps the whitespace runs."""
    toks, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ExprSyntaxError(pos + 1, f"unexpected character {text[pos]!r}")
        kind, tok = m.lastgroup, m.group()
        if kind != "ws" or blanks:
            toks.append(("op" if kind == "name" and tok in _KEYWORDS else kind, tok, pos + 1))
        pos = m.end()
    if not blanks:
        toks.append(("end", "", len(text) + 1))
    return toks


def _show(kind: str, text: str) -> str:
    return "end of text" if kind == "end" else quote(text)


def _diagnose(toks, stmt: bool) -> None:
    """Raise the ExprSyntaxError of the first offending token, if the grammar sees one.  A
    statement is one atom (NAME or NAME[...]) then '=' then an expression."""
    i = 0
    if stmt:
        i = _scan(toks, 0, atom_only=True)
        if not _assignable(toks[:i]):
            raise ExprSyntaxError(1, "a statement assigns to a local NAME or an element NAME[...]")
        kind, tok, col = toks[i]
        if tok != "=" or kind != "op":
            raise ExprSyntaxError(col, f"expected '=', found {_show(kind, tok)}")
        i += 1
    _scan(toks, i)


def _scan(toks, i: int, atom_only: bool = False) -> int:
    """A pushdown scan from token i: `want` is "value" (an operand may start: a literal, a
    name, '(', a unary operator, 'not' where an expression starts) or "op" (an operator, ',',
    a closing bracket, a postfix '[' or '(' right after a name).  The stack holds the open
    brackets ('(' group, '[' index, 'call'), each with whether a comparison was seen since its
    last 'and'/'or'/',' (a second one is a chained comparison).  Returns the index after one
    atom (`atom_only`), or at the end of a valid expression."""
    stack = [["top", False]]
    want, not_ok, postfix, empty_ok = "value", not atom_only, False, False
    while True:
        kind, tok, col = toks[i]
        frame = stack[-1]
        base = atom_only and len(stack) == 1
        if want == "value":
            if kind == "op" and tok == "not" and not_ok:
                pass
            elif kind == "op" and tok in ("-", "~") and not base:
                not_ok = False
            elif kind == "op" and tok == "(":
                stack.append(["(", False])
                not_ok = True
            elif kind in ("int", "float", "str", "name"):
                if kind == "int" and len(tok) > MAX_LITERAL:
                    raise ExprSyntaxError(col, f"integer literal of {len(tok)} characters (the limit is {MAX_LITERAL})")
                want, postfix = "op", kind == "name" and tok not in _CONSTS
            elif empty_ok and tok == ")":
                stack.pop()
                want, postfix = "op", False
            else:
                raise ExprSyntaxError(col, f"expected a value, found {_show(kind, tok)}")
            empty_ok = False
        else:
            opens = kind == "op" and postfix and tok in ("[", "(")
            if base and not opens:
                return i
            closer = {"(": "')'", "call": "')'", "[": "']'"}.get(frame[0])
            if opens:
                stack.append(["[" if tok == "[" else "call", False])
                want, not_ok, empty_ok = "value", True, tok == "("
            elif kind == "op" and tok in _ARITH_OPS:
                want, not_ok = "value", False
            elif kind == "op" and tok in _COMPARE:
                if frame[1]:
                    raise ExprSyntaxError(col, "chained comparisons are not allowed; use 'and'")
                frame[1] = True
                want, not_ok = "value", False
            elif kind == "op" and tok in ("and", "or"):
                frame[1] = False
                want, not_ok = "value", True
            elif kind == "op" and tok == "," and frame[0] in ("[", "call"):
                frame[1] = False
                want, not_ok = "value", True
            elif kind == "op" and tok in (")", "]") and closer == f"'{tok}'":
                stack.pop()
            elif kind == "end" and closer is None:
                return i
            elif closer is not None:
                raise ExprSyntaxError(col, f"expected {closer}, found {_show(kind, tok)}")
            else:
                raise ExprSyntaxError(col, f"unexpected {_show(kind, tok)} after the expression")
            postfix = False
        i += 1


def _assignable(atom) -> bool:
    """NAME or NAME[...], inside any number of enclosing parentheses."""
    while len(atom) > 2 and atom[0][1] == "(" and _closes_at_end(atom):
        atom = atom[1:-1]
    if not atom or atom[0][0] != "name" or atom[0][1] in _CONSTS:
        return False
    return len(atom) == 1 or (atom[1][1] == "[" and _closes_at_end(atom[1:]))


def _closes_at_end(toks) -> bool:
    """The bracket opened by toks[0] closes at the last token."""
    depth = 0
    for n, (k, t, _) in enumerate(toks):
        if k == "op" and t in ("(", "["):
            depth += 1
        elif k == "op" and t in (")", "]"):
            depth -= 1
            if depth == 0:
                return n == len(toks) - 1
    return False
