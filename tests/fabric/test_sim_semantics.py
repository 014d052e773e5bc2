"""The integer kernels of the simulator, exhaustively on 4-bit operands, against references
written here from the operations' definitions (signed values by two's complement, truncating
division by exact fractions, saturation by clamping, counts from the binary spelling).  The
kernels take whole arrays of operands (every firing of a cycle at once)."""
import math
from fractions import Fraction

import numpy as np
import pytest

from fabric.sim.semantics import INTEGER_BINARY, INTEGER_UNARY, compare, stream_step

W = 4
M = (1 << W) - 1
X = np.repeat(np.arange(16, dtype=np.uint64), 16)
Y = np.tile(np.arange(16, dtype=np.uint64), 16)


def s(x):
    return x - 16 if x >= 8 else x


def trunc_div(a, b):
    return math.trunc(Fraction(a, b))


REF = {
    "arith.addi": lambda x, y: (x + y) % 16, "arith.subi": lambda x, y: (x - y) % 16,
    "arith.muli": lambda x, y: (x * y) % 16, "arith.andi": lambda x, y: x & y, "arith.ori": lambda x, y: x | y,
    "llvm.or": lambda x, y: x | y, "arith.xori": lambda x, y: x ^ y,
    "arith.shli": lambda x, y: (x * 2 ** y) % 16 if y < W else 0,
    "arith.shrui": lambda x, y: x // 2 ** y if y < W else 0,
    "arith.shrsi": lambda x, y: (s(x) // 2 ** min(y, W)) % 16,
    "arith.divui": lambda x, y: x // y if y else M, "arith.remui": lambda x, y: x % y if y else x,
    "arith.divsi": lambda x, y: (M if y == 0 else 8 if (s(x), s(y)) == (-8, -1) else trunc_div(s(x), s(y)) % 16),
    "arith.remsi": lambda x, y: (x if y == 0 else 0 if (s(x), s(y)) == (-8, -1)
                                 else (s(x) - trunc_div(s(x), s(y)) * s(y)) % 16),
    "llvm.intr.sadd.sat": lambda x, y: max(-8, min(7, s(x) + s(y))) % 16,
    "llvm.intr.ssub.sat": lambda x, y: max(-8, min(7, s(x) - s(y))) % 16,
    "llvm.intr.uadd.sat": lambda x, y: min(M, x + y), "llvm.intr.usub.sat": lambda x, y: max(0, x - y),
    "arith.minsi": lambda x, y: x if s(x) <= s(y) else y, "arith.maxsi": lambda x, y: x if s(x) >= s(y) else y,
    "arith.minui": min, "arith.maxui": max,
}


@pytest.mark.parametrize("schema", sorted(INTEGER_BINARY))
def test_binary_kernel_exhaustively(schema):
    f = INTEGER_BINARY[schema](W)
    assert f(X, Y).tolist() == [REF[schema](x, y) for x in range(16) for y in range(16)]


def test_count_zeros_exhaustively():
    lead = [format(x, "04b").find("1") if x else W for x in range(16)]
    trail = [format(x, "04b")[::-1].find("1") if x else W for x in range(16)]
    xs = np.arange(16, dtype=np.uint64)
    assert INTEGER_UNARY["math.ctlz"](W)(xs).tolist() == lead
    assert INTEGER_UNARY["math.cttz"](W)(xs).tolist() == trail


@pytest.mark.parametrize("pred, ref", [("eq", lambda a, b, sa, sb: a == b), ("ne", lambda a, b, sa, sb: a != b),
                                       ("slt", lambda a, b, sa, sb: sa < sb), ("sge", lambda a, b, sa, sb: sa >= sb),
                                       ("ult", lambda a, b, sa, sb: a < b), ("ugt", lambda a, b, sa, sb: a > b)])
def test_compare_exhaustively(pred, ref):
    f = compare(pred, W)
    assert f(X, Y).tolist() == [int(ref(x, y, s(x), s(y))) for x in range(16) for y in range(16)]


def _one(f, x, y):
    return int(f(np.array([x], np.uint64), np.array([y], np.uint64))[0])


def test_stream_steps_are_modular():
    assert _one(stream_step("add", W), 15, 1) == 0 and _one(stream_step("mul", W), 5, 5) == 9
    assert _one(stream_step("shl", W), 3, 2) == 12 and _one(stream_step("shr", W), 12, 5) == 0
    assert _one(stream_step("div", W), 9, 2) == 4 and _one(stream_step("sub", W), 0, 1) == 15
