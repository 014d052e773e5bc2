"""Finite integer domains and index maps for witnesses (independent of any program).

A `FiniteDomain` is named axes with integer bounds in lexicographic (source) order and an
optional active-set predicate; an `IndexMap` sends the coordinates of one domain to a tuple of
integers, given as expressions in the expression language (`"q*4 + r"`, `"perm[i]"`) or a
Python callable.  Both are plain data so a witness can be written in JSON.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from .errors import UndecidedError
from .expr import Bin, Const, EvalError, Expr, Names, Un, Var, as_index, parse_expr, table_entry, truth

MAX_POINTS = 1 << 20          # witnesses are checked by enumeration up to this many points


class _Env(Names):
    __slots__ = ("tables",)
    unbound = "unknown name '{}'"

    def __init__(self, vars: dict, tables: dict):
        self.vars, self.tables = vars, tables

    def load(self, n, idx):
        v = self.tables.get(n)
        if v is None:
            raise EvalError(f"'{n}' is not a table")
        return table_entry(v, n, idx)

    def call(self, n, args):
        from .functions import BUILTINS
        f = BUILTINS.get(n)
        if f is None:
            raise EvalError(f"unknown function '{n}'")
        return f(*args)


def _expr(e) -> Expr:
    return e if isinstance(e, Expr) else parse_expr(str(e))


@dataclass
class FiniteDomain:
    axes: tuple                      # ((name, lo, hi), ...), hi exclusive; bounds int or expression
    where: object = None             # expression text, Expr, or callable(coords dict) -> bool
    params: dict | None = None       # integer parameters and tables for the expressions

    def __init__(self, axes: Sequence, where=None, params: dict | None = None):
        norm = []
        for a in axes:
            a = tuple(a)
            norm.append((a[0], 0, a[1]) if len(a) == 2 else a)
        self.axes = tuple(norm)
        self.where = where
        self.params = dict(params or {})

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a[0] for a in self.axes)

    def _bound(self, b, env: dict) -> int:
        if isinstance(b, int) and not isinstance(b, bool):
            return b
        return as_index(_expr(b).eval(_Env(env, self._tables())))

    def _tables(self) -> dict:
        return {k: v for k, v in self.params.items() if not isinstance(v, int)}

    def _ints(self) -> dict:
        return {k: v for k, v in self.params.items() if isinstance(v, int)}

    def active(self, coords: tuple, check_bounds: bool = True) -> bool:
        env = {**self._ints(), **dict(zip(self.names, coords))}
        if check_bounds:
            for (n, lo, hi), c in zip(self.axes, coords):
                if not self._bound(lo, env) <= c < self._bound(hi, env):
                    return False
        if self.where is None:
            return True
        if callable(self.where):
            return bool(self.where(dict(zip(self.names, coords))))
        return truth(_expr(self.where).eval(_Env(env, self._tables())))

    def points(self, active_only: bool = True, limit: int = MAX_POINTS) -> list[tuple[int, ...]]:
        """Coordinates in lexicographic order (the active ones, or the whole bounding box).
        UndecidedError past `limit` points: a finite check that large is declined, not guessed."""
        out: list[tuple] = []
        base = self._ints()
        box = self.box()
        if box is not None:
            n = 1
            for lo, hi in box:
                n *= max(hi - lo, 0)
            if n > limit:
                raise UndecidedError(f"the domain {self.describe()} has {n} points; exhaustive checks stop "
                                     f"at {limit}")

            if n == 0:
                return out                  # an empty axis: no point (and no walk over the others)
        # every step of every axis counts, so empty or ragged inner axes under a long outer one
        # (a < 10^12, b < 0) are declined too, not walked
        steps = [0]
        cap = limit * max(1, len(self.axes))

        def rec(k, cur, env):
            if k == len(self.axes):
                t = tuple(cur)
                if not active_only or self.active(t, check_bounds=False):
                    out.append(t)
                return
            n, lo, hi = self.axes[k]
            a, b = self._bound(lo, env), self._bound(hi, env)
            steps[0] += max(b - a, 0)
            if steps[0] > cap:
                raise UndecidedError(f"the domain {self.describe()} takes more than {cap} steps to enumerate; "
                                     f"exhaustive checks stop at {limit} points")
            for i in range(a, b):
                cur.append(i)
                rec(k + 1, cur, {**env, n: i})
                cur.pop()
        rec(0, [], dict(base))
        return out


    def box(self) -> list[tuple[int, int]] | None:
        """Constant [lo, hi) per axis when every bound is a constant or integer parameter."""
        out = []
        for _, lo, hi in self.axes:
            try:
                out.append((self._bound(lo, self._ints()), self._bound(hi, self._ints())))
            except EvalError:
                return None
        return out

    def describe(self) -> str:
        return "{" + ", ".join(f"{n} in [{lo}, {hi})" for n, lo, hi in self.axes) + "}"


class IndexMap:
    """coords of `inputs` -> tuple of ints; from expressions (one per output) or a callable."""

    def __init__(self, inputs: Sequence[str], outputs, params: dict | None = None):
        self.inputs = tuple(inputs)
        self.params = dict(params or {})
        if callable(outputs):
            self.fn: Callable | None = outputs
            self.exprs = None
        else:
            self.fn = None
            self.exprs = tuple(_expr(e) for e in outputs)

    def __call__(self, coords: tuple) -> tuple[int, ...]:
        if self.fn is not None:
            v = self.fn(*coords)
            return tuple(v) if isinstance(v, (tuple, list)) else (v,)
        ints = {k: v for k, v in self.params.items() if isinstance(v, int)}
        tables = {k: v for k, v in self.params.items() if not isinstance(v, int)}
        env = _Env({**ints, **dict(zip(self.inputs, coords))}, tables)
        return tuple(as_index(e.eval(env)) for e in self.exprs)

    def intermediates(self, coords: tuple) -> list[int]:
        """Every integer an expression map computes on the way (for representability checks)."""
        if self.exprs is None:
            return list(self(coords))
        from .expr import walk
        ints = {k: v for k, v in self.params.items() if isinstance(v, int)}
        tables = {k: v for k, v in self.params.items() if not isinstance(v, int)}
        env = _Env({**ints, **dict(zip(self.inputs, coords))}, tables)
        out = []
        for e in self.exprs:
            for n in walk(e):
                v = n.eval(env)
                if isinstance(v, int) and not isinstance(v, bool):
                    out.append(v)
        return out

    def intervals(self, box: dict) -> list[tuple[int, int]] | None:
        """Sound [lo, hi] bounds of every subexpression over a box of input values (interval
        arithmetic; exact for affine maps), or None where an operator is not covered."""
        if self.exprs is None:
            return None
        ints = {k: v for k, v in self.params.items() if isinstance(v, int)}
        out: list = []

        def iv(e):
            if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
                r = (e.value, e.value)
            elif isinstance(e, Var):
                if e.name in box:
                    r = box[e.name]
                elif e.name in ints:
                    r = (ints[e.name], ints[e.name])
                else:
                    raise _NoInterval
            elif isinstance(e, Un) and e.op == "-":
                lo, hi = iv(e.a)
                r = (-hi, -lo)
            elif isinstance(e, Bin) and e.op in ("+", "-", "*", "//", "%"):
                (a0, a1), (b0, b1) = iv(e.a), iv(e.b)
                if e.op == "+":
                    r = (a0 + b0, a1 + b1)
                elif e.op == "-":
                    r = (a0 - b1, a1 - b0)
                elif e.op == "*":
                    ps = (a0 * b0, a0 * b1, a1 * b0, a1 * b1)
                    r = (min(ps), max(ps))
                elif b0 == b1 and b0 > 0:
                    r = (a0 // b0, a1 // b0) if e.op == "//" else \
                        ((a0 % b0, a1 % b0) if a0 // b0 == a1 // b0 else (0, b0 - 1))
                else:
                    raise _NoInterval
            else:
                raise _NoInterval
            out.append(r)
            return r
        try:
            for e in self.exprs:
                iv(e)
        except _NoInterval:
            return None
        return out

    def describe(self) -> str:
        if self.exprs is None:
            return getattr(self.fn, "__name__", "map")
        return f"({', '.join(self.inputs)}) -> ({', '.join(map(repr, self.exprs))})"


class _NoInterval(Exception):
    pass


def fmt(names: Sequence[str], coords: Sequence[int]) -> str:
    return "(" + ", ".join(f"{n}={c}" for n, c in zip(names, coords)) + ")"
