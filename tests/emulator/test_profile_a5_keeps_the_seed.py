"""What no profile may change (issue 16; docs/numerics.md "A5 differs from the architecture
here"): where seed 004 states the rule itself, profile a5 follows the seed, not A5.  Each test
runs the block on a machine under profile a5 and compares with the seed's rule computed here
with Python integers, and checks that the inputs include cases where A5's own rule would give
another result (so the test would see a profile that copied A5)."""
import numpy as np
import pytest

import emu_helpers
from emu_helpers import blk
from emulator import Machine, MachineConfig
from isa.datatypes import datatype
from kernels import numeric

INTS = ["S8", "S16", "S32", "S64", "U8", "U16", "U32", "U64"]


def a5_machine() -> Machine:
    return Machine(MachineConfig(profile="a5"))


def run_binary(mn, dtype, a, b, **kw):
    return emu_helpers.run_binary(mn, dtype, a, b, a5_machine(), **kw)


def signed(v: int, w: int) -> int:
    return v - (1 << w) if v >> (w - 1) else v


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("mn", ["TSHL", "TSHR"])
def test_a5_shift_counts_are_the_low_log2_w_bits(mn, dtype):
    """Decisions 065/066: the count is the low log2(W) bits of the count element; A5's tests shift
    by the whole count (counts >= W give 0 or the sign fill)."""
    dt = datatype(dtype)
    w = dt.bits
    a = np.array([[1, 3, (1 << w) - 1, 1 << (w - 1), 0x55 % (1 << w), 7, 1 << (w - 2), 2]], dtype=dt.raw_dtype)
    counts = [w, w + 1, w + 3, 2 * w - 1, 1, 0, w + 2, (1 << w) - 1]
    b = np.array([counts], dtype=dt.raw_dtype)
    v, res = run_binary(mn, dtype, a, b)
    differs = 0
    for x, c, got in zip(a.ravel().tolist(), counts, v.bits.ravel().tolist()):
        n, whole = c % w, min(c, w)                # A5: the whole count (>= W: all bits out)
        if mn == "TSHL":
            want, a5_rule = (x << n) % (1 << w), (x << whole) % (1 << w)
        else:
            xs = signed(x, w) if dt.signed else x
            want, a5_rule = (xs >> n) % (1 << w), (xs >> whole) % (1 << w)
        assert got == want, (mn, dtype, x, c)
        differs += want != a5_rule
    assert differs > 0 and res.status == {0: 0}


def test_a5_trem_s64_is_the_floor_modulo_with_the_divisors_sign():
    """Decision 061: a nonzero TREM result has the divisor's sign (Python's %); A5's Int64Div
    computes the truncated remainder (the dividend's sign)."""
    pairs = [(-7, 2), (7, -2), (-7, -2), (7, 2), (-(1 << 63), 3), ((1 << 63) - 1, -10), (-1, 1 << 40), (5, 7)]
    a = np.array([[x % (1 << 64) for x, _ in pairs]], np.uint64)
    b = np.array([[y % (1 << 64) for _, y in pairs]], np.uint64)
    v, _ = run_binary("TREM", "S64", a, b)
    got = [signed(g, 64) for g in v.bits.ravel().tolist()]
    assert got == [x % y for x, y in pairs]
    truncated = [x - int(abs(x) // abs(y)) * (1 if (x >= 0) == (y >= 0) else -1) * y for x, y in pairs]
    assert got != truncated


SNAN_AND_MORE = {      # signalling NaNs (both signs), a quiet NaN with payload, zeros, inf, 1, 1.0
    "FP16": [0x7C01, 0xFC01, 0x7E01, 0, 0x8000, 0x7C00, 1, 0x3C00],
    "BF16": [0x7F81, 0xFF81, 0x7FC1, 0, 0x8000, 0x7F80, 1, 0x3F80],
    "FP32": [0x7F800001, 0xFF800001, 0x7FC00001, 0, 0x80000000, 0x7F800000, 1, 0x3F800000]}


@pytest.mark.parametrize("name,sign", [("FP16", 0x8000), ("BF16", 0x8000), ("FP32", 0x80000000)])
def test_a5_tneg_toggles_only_the_sign_bit(name, sign):
    """Decision 072: TNEG toggles the sign bit and nothing else (a signalling NaN stays
    signalling, no NV); A5 multiplies by -1 (which would quiet it and raise NV)."""
    raw = np.dtype(datatype(name).raw_dtype)
    if raw.itemsize == 2:
        x = np.arange(1 << 16, dtype=np.uint16)                 # every code
    else:
        x = np.array(SNAN_AND_MORE[name], raw)
    bits, flags = numeric.elementwise("TNEG", name, x, profile="a5")
    assert np.array_equal(bits, x ^ raw.type(sign)) and not flags.any()
    m = a5_machine()
    x = np.array(SNAN_AND_MORE[name], raw)
    m.write_tile(0, 1, name, x.reshape(1, 8))
    res = m.execute(blk("TNEG", name, [1], 2, vc=8))
    assert m.read_tile(0, 2).bits.ravel().tolist() == (x ^ raw.type(sign)).tolist()
    assert res.status == {0: 0}


def test_a5_tcmp_bit_i_is_the_logical_element_i():
    """Decision 069: bit i of the predicate is element i of the tile's logical (row-major) index;
    A5's TCmp starts each row of ValidCol bits at its own row offset of the destination."""
    rows, cols = 3, 5                     # rows of 5 bits: a per-row byte start would differ
    a = np.arange(rows * cols, dtype=np.uint64).reshape(rows, cols)
    b = np.full((rows, cols), 6, np.uint64)
    v, _ = run_binary("TCMP", "U16", a, b, CMode=2)           # LT
    want = [int(x < 6) for x in range(rows * cols)]
    assert v.kind == "predicate" and v.bits.ravel().tolist() == want
    assert v.payload == np.packbits(np.array(want, np.uint8), bitorder="little").tobytes()
    per_row = b"".join(np.packbits(np.array(want[r * cols:(r + 1) * cols], np.uint8), bitorder="little").tobytes()
                       for r in range(rows))
    assert v.payload[:len(per_row)] != per_row
