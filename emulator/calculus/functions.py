"""Registered arithmetic contracts: the functions a program may call and reduce with.

Every function declares its laws; the calculus never assumes one it was not told.  A row says:

- `kind`: "merge" (State x State -> State, usable by every reduction policy), "update"
  (update_left: State x Elem -> State, fold_left only), "rupdate" (update_right: Elem x State ->
  State, fold_right only) or "map" (any arity, expressions only).  A tree policy never accepts
  an update: it has no State x State merge to regroup.
- `associative`, `commutative`: the law holds *exactly* on the values the function accepts.
- `regroup`: the numerical policy authorizes the default `unordered_tree` to regroup and
  permute it even though the laws are not exact (binary64 add/mul: the seed's "floating-point
  add is not an exact monoid: the default tree policy authorizes its changed grouping/order
  without claiming such a proof").  Exact associative+commutative merges regroup as well.
- `identity`: a two-sided identity, when one exists (not needed by any policy here: empty
  fibers return the seed).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from .expr import EvalError, _kind


@dataclass(frozen=True)
class Function:
    name: str
    arity: int
    kind: str                       # merge | update | map
    fn: Callable
    associative: bool = False       # exact
    commutative: bool = False       # exact
    regroup: bool = False           # unordered_tree may regroup/permute under the policy
    identity: object = None
    doc: str = ""
    source: dict | None = None      # the JSON declaration of a user function

    def __call__(self, *args):
        if len(args) != self.arity:
            raise EvalError(f"{self.name} takes {self.arity} argument(s), got {len(args)}")
        return self.fn(*args)

    @property
    def tree_ok(self) -> bool:
        """May `unordered_tree` use it: a merge declared (or policy-authorized) to regroup/permute."""
        return self.kind == "merge" and (self.regroup or (self.associative and self.commutative))

    @property
    def ordered_tree_ok(self) -> bool:
        """May an order-preserving tree use it: a merge declared associative (or authorized)."""
        return self.kind == "merge" and (self.associative or self.regroup)


def _typed(kind: str, name: str):
    def check(*vals):
        for v in vals:
            if _kind(v) != kind:
                raise EvalError(f"{name} is declared on {kind} values, got {_kind(v)} {v!r}")
    return check


def _binary(kind: str, name: str, op):
    """`op` on two values, both required to be of `kind` (int, float or str)."""
    check = _typed(kind, name)

    def f(a, b):
        check(a, b)
        return op(a, b)
    return f


_QNAN = float("nan")              # the default quiet NaN (bits 0x7ff8000000000000)


def _extremum(first):
    """maxNum/minNum: `first(a, b)` says whether a wins.  One NaN selects the other operand, two
    give the default quiet NaN (so the result never depends on operand order); a mixed-sign
    zero tie is decided by the sign (+0 for max, -0 for min)."""
    def f(a, b):
        if math.isnan(a):
            return _QNAN if math.isnan(b) else b
        if math.isnan(b):
            return a
        if a == b == 0.0:
            return a if first(math.copysign(1.0, a), 0.0) else b
        return a if first(a, b) else b
    return f


_fmax = _extremum(lambda a, b: a > b)
_fmin = _extremum(lambda a, b: a < b)


def _fmul(a, b):
    r = a * b
    return _QNAN if r != r else r      # NaN results are the default NaN: no payload order effects


def _fadd(a, b):
    r = a + b
    return _QNAN if r != r else r




def _f64(x):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise EvalError(f"f64 converts an int or float, got {_kind(x)}")
    try:
        return float(x)          # CPython rounds int -> binary64 to nearest, ties to even
    except OverflowError:
        return math.copysign(math.inf, x)


def _select(p, a, b):
    if isinstance(p, bool) or isinstance(p, int):
        return a if p else b
    raise EvalError(f"select's predicate must be an integer or comparison, got {_kind(p)}")


BUILTINS: dict[str, Function] = {f.name: f for f in (
    Function("add", 2, "merge", _binary("int", "add", lambda a, b: a + b), True, True, identity=0,
             doc="exact integer addition"),
    Function("mul", 2, "merge", _binary("int", "mul", lambda a, b: a * b), True, True, identity=1,
             doc="exact integer multiplication"),
    Function("max", 2, "merge", _binary("int", "max", max), True, True, doc="integer maximum"),
    Function("min", 2, "merge", _binary("int", "min", min), True, True, doc="integer minimum"),
    Function("sub", 2, "update", _binary("int", "sub", lambda a, b: a - b),
             doc="integer subtraction: an update, not a merge"),
    Function("fadd", 2, "merge", _binary("float", "fadd", _fadd), False, True, regroup=True, identity=-0.0,
             doc="binary64 addition (RNE; a NaN result is the default quiet NaN): commutative, not associative; the tree policy may regroup it"),
    Function("fmul", 2, "merge", _binary("float", "fmul", _fmul), False, True, regroup=True, identity=1.0,
             doc="binary64 multiplication (RNE); the tree policy may regroup it"),
    Function("fmax", 2, "merge", _binary("float", "fmax", _fmax), True, True,
             doc="binary64 maxNum (two NaNs: the default quiet NaN; +0 beats -0)"),
    Function("fmin", 2, "merge", _binary("float", "fmin", _fmin), True, True,
             doc="binary64 minNum (two NaNs: the default quiet NaN; -0 beats +0)"),
    Function("fsub", 2, "update", _binary("float", "fsub", lambda a, b: a - b), doc="binary64 subtraction: an update"),
    Function("concat", 2, "merge", _binary("str", "concat", lambda a, b: a + b), True, False, identity="",
             doc="string concatenation: associative, not commutative"),
    Function("f64", 1, "map", _f64, doc="int or float -> binary64, round to nearest even"),
    Function("select", 3, "map", _select, doc="select(p, a, b) = a if p else b"),
)}
