"""The one semantic kernel per operation schema the simulator runs: raw bits in, raw bits out.

Values are unsigned integers holding the exact semantic bits of their type (a W-bit integer
is in [0, 2^W)); a fixed vector is a tuple of lane raw bits, lane 0 first.  A kernel takes
the actor (for its width, predicate, ...) and returns a function of the operand values that
returns one value per result.  Timing never lives here.

Results that the registered schema leaves undefined (poison) get one fixed, documented
hardware value, which is a valid refinement: division by zero gives all ones (quotient) or
the dividend (remainder); signed INT_MIN / -1 gives INT_MIN and remainder 0; a shift by at
least the width gives 0 (or all sign bits for an arithmetic right shift); ctlz/cttz of zero
gives the width.

Floating-point kernels are the bit-exact element-wise operations of `kernels.numeric` under the
`ieee` profile (every result rounded once, round to nearest even; NaN results are the format's
canonical quiet NaN - any NaN is a valid refinement of the registered schemas).  An actor asking
for another rounding mode, and arith.remf (fmod, not the ISA's floor modulo), have no kernel;
nor have the special-math functions other than sqrt, rsqrt, exp and log, or the vector-structure
schemas: their uses are rejected by the graph loader ("no cycle model", docs/fabric-graph.md).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from isa.instructions import INSTRUCTIONS

from ..schemas import Actor, effective_rounding
from ..types import FloatType, IntegerType, VectorType, payload_bits


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


# --- floating point: kernels.numeric under the ieee profile ------------------------------------------

DTYPE = {"f16": "FP16", "bf16": "BF16", "f32": "FP32", "f64": "FP64"}
FLOAT_LAYOUT = {"f16": (5, 10), "bf16": (8, 7), "f32": (8, 23), "f64": (11, 52)}
CANONICAL_NAN = {"f16": 0x7E00, "bf16": 0x7FC0, "f32": 0x7FC00000, "f64": 0x7FF8000000000000}
# the instruction table's float_schema column: which tile instruction computes a float schema
FLOAT_BINARY = {r.float_schema: r.mnemonic for r in INSTRUCTIONS if r.float_schema and r.arity == 2}
FLOAT_UNARY = {r.float_schema: r.mnemonic for r in INSTRUCTIONS if r.float_schema and r.arity == 1}
ROUNDED = {"arith.addf", "arith.subf", "arith.mulf", "arith.divf", "math.fma", "arith.truncf"}
# arith.cmpf predicate -> (TCMP cmode or None, value when unordered)
CMPF = {"oeq": ("EQ", 0), "ogt": ("GT", 0), "oge": ("GE", 0), "olt": ("LT", 0), "ole": ("LE", 0),
        "one": ("NE", 0), "ueq": ("EQ", 1), "ugt": ("GT", 1), "uge": ("GE", 1), "ult": ("LT", 1),
        "ule": ("LE", 1), "une": ("NE", 1), "ord": (None, 0), "uno": (None, 1), "true": (None, 1),
        "false": (None, 0)}


def is_nan(x: int, fmt: str) -> bool:
    e, m = FLOAT_LAYOUT[fmt]
    return (x >> m) & ((1 << e) - 1) == (1 << e) - 1 and x & ((1 << m) - 1) != 0


def _ew(op: str, fmt: str, **kw):
    from kernels.numeric.elementwise import elementwise
    dt = DTYPE[fmt]
    return lambda *xs: int(elementwise(op, dt, *(np.uint64(x) for x in xs), **kw)[0])


def _cmpf(predicate: str, fmt: str):
    cmode, unordered = CMPF[predicate]
    test = _ew("TCMP", fmt, cmode=cmode) if cmode else None

    def f(x, y):
        if is_nan(x, fmt) or is_nan(y, fmt):
            return unordered
        if cmode is None:
            return int(predicate in ("ord", "true"))
        return test(x, y)
    return f


def _ieee_minmax(op: str, fmt: str):
    pick = _ew(op, fmt)
    return lambda x, y: CANONICAL_NAN[fmt] if is_nan(x, fmt) or is_nan(y, fmt) else pick(x, y)


def _convert(src: str, dst: str):
    from kernels.numeric.convert import convert
    return lambda x: int(convert(np.asarray([x], dtype=np.uint64).astype(_raw(src)), src, dst)[0][0])


def _raw(dtype: str):
    from isa.datatypes import BY_NAME
    return BY_NAME[dtype].raw_dtype


def _int_dtype(t, signed: bool) -> str | None:
    if isinstance(t, IntegerType) and t.width in (8, 16, 32, 64):
        return f"{'S' if signed else 'U'}{t.width}"
    return None


def float_kernel(a: Actor) -> Callable | None:
    s = a.schema
    if s in ROUNDED and effective_rounding(a) != "to_nearest_even":
        return None
    t = a.inputs[0]
    fmt = t.format if isinstance(t, FloatType) else None
    if s in FLOAT_BINARY and fmt:
        return _ew(FLOAT_BINARY[s], fmt)
    if s in FLOAT_UNARY and fmt:
        return _ew(FLOAT_UNARY[s], fmt)
    if s == "math.fma" and fmt:
        return _ew("TFMA", fmt)
    if s in ("arith.maximumf", "arith.minimumf") and fmt:
        return _ieee_minmax("TMAX" if s == "arith.maximumf" else "TMIN", fmt)
    if s == "arith.cmpf" and fmt:
        return _cmpf(a.attr("predicate"), fmt)
    r = a.results[0]
    if s in ("arith.extf", "arith.truncf") and fmt:
        return _convert(DTYPE[fmt], DTYPE[r.format])
    if s in ("arith.sitofp", "arith.uitofp") and isinstance(r, FloatType):
        src = _int_dtype(t, s == "arith.sitofp")
        return _convert(src, DTYPE[r.format]) if src else None
    if s in ("arith.fptosi", "arith.fptoui", "llvm.fptosi.sat", "llvm.fptoui.sat") and fmt:
        dst = _int_dtype(r, s in ("arith.fptosi", "llvm.fptosi.sat"))
        # round toward zero, saturating, NaN -> 0: the .sat schema exactly, a refinement of the plain one
        return _convert(DTYPE[fmt], dst) if dst else None
    return None


def kernel_for(a: Actor) -> Callable | None:
    """The function of a stateless actor's operand values, returning the result tuple; None
    when this model has no kernel for the schema (or for its types)."""
    s = a.schema
    f = float_kernel(a)
    if f is not None:
        n = len(a.inputs)
        return (lambda x: (f(x),)) if n == 1 else (lambda x, y: (f(x, y),)) if n == 2 else (lambda x, y, z: (f(x, y, z),))
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
