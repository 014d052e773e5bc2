"""The one semantic kernel per operation schema the simulator runs: raw bits in, raw bits out.

Values are unsigned integers holding the exact semantic bits of their type (a W-bit integer
is in [0, 2^W)); a fixed vector is a tuple of lane raw bits, lane 0 first.  A kernel takes
the actor (for its width, predicate, ...) and returns a function of the operand values that
returns one value per result.  Timing never lives here.

Results that the registered schema leaves undefined (poison) get one fixed, documented
hardware value, which is a valid refinement: division by zero gives all ones (quotient) or
the dividend (remainder); signed INT_MIN / -1 gives INT_MIN and remainder 0; a shift by at
least the width gives 0 (or all sign bits for an arithmetic right shift); ctlz/cttz of zero
gives the width.  Floating-point, special-math and vector-structure schemas have no kernel
here: their families are rejected by the graph loader ("no cycle model", docs/fabric-graph.md).
"""
from __future__ import annotations

from typing import Callable

from ..schemas import Actor
from ..types import IntegerType, VectorType, payload_bits


def _signed(v: int, w: int) -> int:
    return v - (1 << w) if v >> (w - 1) & 1 else v


def _width(a: Actor, k: int = 0) -> int:
    t = a.inputs[k]
    return t.width if isinstance(t, IntegerType) else payload_bits(t)


def _div(signed: bool, rem: bool):
    def kernel(w: int):
        m = (1 << w) - 1
        smin = 1 << (w - 1)

        def f(x, y):
            if y == 0:
                return x if rem else m
            if signed:
                if x == smin and y == m:
                    return 0 if rem else smin
                a, b = _signed(x, w), _signed(y, w)
                q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # truncating division
                return ((a - q * b) if rem else q) & m
            return (x % y) if rem else (x // y)
        return f
    return kernel


def _shift(kind: str):
    def kernel(w: int):
        m = (1 << w) - 1

        def f(x, s):
            if kind == "shrsi":
                return (_signed(x, w) >> min(s, w)) & m
            if s >= w:
                return 0
            return (x << s) & m if kind == "shli" else x >> s
        return f
    return kernel


def _sat(signed: bool, sub: bool):
    def kernel(w: int):
        lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
        conv = (lambda v: _signed(v, w)) if signed else (lambda v: v)
        return lambda x, y: max(lo, min(hi, conv(x) - conv(y) if sub else conv(x) + conv(y))) & ((1 << w) - 1)
    return kernel


def _count(leading: bool):
    def kernel(w: int):
        def f(x):
            if x == 0:
                return w
            return w - x.bit_length() if leading else (x & -x).bit_length() - 1
        return f
    return kernel


def _minmax(signed: bool, pick_max: bool):
    def kernel(w: int):
        key = (lambda v: _signed(v, w)) if signed else (lambda v: v)
        return lambda x, y: (max if pick_max else min)(x, y, key=key)
    return kernel


def _binop(op: Callable):
    def kernel(w: int):
        m = (1 << w) - 1
        return lambda x, y: op(x, y) & m
    return kernel


# schema -> (width -> function of raw operands)
INTEGER_BINARY: dict[str, Callable] = {
    "arith.addi": _binop(lambda x, y: x + y),
    "arith.subi": _binop(lambda x, y: x - y),
    "arith.muli": _binop(lambda x, y: x * y),
    "arith.andi": _binop(lambda x, y: x & y),
    "arith.ori": _binop(lambda x, y: x | y),
    "llvm.or": _binop(lambda x, y: x | y),
    "arith.xori": _binop(lambda x, y: x ^ y),
    "arith.shli": _shift("shli"),
    "arith.shrsi": _shift("shrsi"),
    "arith.shrui": _shift("shrui"),
    "arith.divsi": _div(True, False),
    "arith.remsi": _div(True, True),
    "arith.divui": _div(False, False),
    "arith.remui": _div(False, True),
    "llvm.intr.sadd.sat": _sat(True, False),
    "llvm.intr.uadd.sat": _sat(False, False),
    "llvm.intr.ssub.sat": _sat(True, True),
    "llvm.intr.usub.sat": _sat(False, True),
    "arith.minsi": _minmax(True, False),
    "arith.maxsi": _minmax(True, True),
    "arith.minui": _minmax(False, False),
    "arith.maxui": _minmax(False, True),
}
INTEGER_UNARY: dict[str, Callable] = {
    "math.ctlz": _count(True), "llvm.intr.ctlz": _count(True),
    "math.cttz": _count(False), "llvm.intr.cttz": _count(False),
}

INTEGER_PREDICATE: dict[str, Callable] = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "slt": lambda a, b: a < b, "sle": lambda a, b: a <= b, "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b,
    "ult": lambda a, b: a < b, "ule": lambda a, b: a <= b, "ugt": lambda a, b: a > b, "uge": lambda a, b: a >= b,
}


def compare(predicate: str, w: int) -> Callable:
    """Raw-bit integer comparison under a registered predicate (signed ones reinterpret)."""
    test = INTEGER_PREDICATE[predicate]
    if predicate in ("slt", "sle", "sgt", "sge"):
        return lambda x, y: int(test(_signed(x, w), _signed(y, w)))
    return lambda x, y: int(test(x, y))


def _cast(a: Actor) -> Callable:
    s, d = _width(a), payload_bits(a.results[0]) if not isinstance(a.results[0], IntegerType) else a.results[0].width
    if a.schema == "arith.extsi":
        return lambda x: _signed(x, s) & ((1 << d) - 1)
    return lambda x: x & ((1 << d) - 1)  # extui, trunci: zero-extend / drop high bits


# --- step kinds of dataflow.stream -----------------------------------------------------------

def stream_step(kind: str, w: int) -> Callable:
    """next = cur (step_kind) step, modular in the actor width; div by zero as arith.divui."""
    m = (1 << w) - 1
    return {
        "add": lambda c, s: (c + s) & m,
        "sub": lambda c, s: (c - s) & m,
        "shl": lambda c, s: (c << s) & m if s < w else 0,
        "shr": lambda c, s: c >> s if s < w else 0,
        "mul": lambda c, s: (c * s) & m,
        "div": lambda c, s: c // s if s else m,
    }[kind]


# --- kernels by schema ----------------------------------------------------------------------

def _pack(a: Actor) -> Callable:
    vt = a.inputs[0]
    ew = vt.element.width
    return lambda v: sum(x << (i * ew) for i, x in enumerate(v))


def _unpack(a: Actor) -> Callable:
    vt = a.results[0]
    ew, n = vt.element.width, vt.num_elements
    m = (1 << ew) - 1
    return lambda x: tuple((x >> (i * ew)) & m for i in range(n))


def kernel_for(a: Actor) -> Callable | None:
    """The function of a stateless actor's operand values, returning the result tuple; None
    when this model has no kernel for the schema (or for its types)."""
    s = a.schema
    if s in INTEGER_BINARY and isinstance(a.inputs[0], IntegerType):
        f = INTEGER_BINARY[s](a.inputs[0].width)
        return lambda x, y: (f(x, y),)
    if s in INTEGER_UNARY and isinstance(a.inputs[0], IntegerType):
        f = INTEGER_UNARY[s](a.inputs[0].width)
        return lambda x: (f(x),)
    if s == "arith.cmpi" and isinstance(a.inputs[0], IntegerType):
        f = compare(a.attr("predicate"), a.inputs[0].width)
        return lambda x, y: (f(x, y),)
    if s == "arith.select" and not isinstance(a.inputs[1], VectorType):
        return lambda c, x, y: (x if c else y,)
    if s in ("arith.extsi", "arith.extui", "arith.trunci"):
        f = _cast(a)
        return lambda x: (f(x),)
    if s == "arith.bitcast":
        return lambda x: (x,)  # equal width: the raw bits are the result
    if s == "dataflow.sync":
        return lambda *xs: tuple(xs)
    if s == "dataflow.pack":
        f = _pack(a)
        return lambda v: (f(v),)
    if s == "dataflow.unpack":
        f = _unpack(a)
        return lambda x: (f(x),)
    if s == "dataflow.constant":
        v = a.attr("value")
        return lambda _trigger: (v,)
    return None
