"""Profile `ftz`: subnormal operands read as zero of their sign, subnormal results flush to zero
with UF|NX; everything else as in `ieee` (the profile mechanism is real: same calls, other bits)."""
import numpy as np
import pytest

from kernels import numeric
from kernels.numeric import flags as F

import op_reference as R
from test_ops_float import all_pairs, assert_same, every_code, operand_sets


@pytest.mark.parametrize("name", ("E4M3", "E5M2"))
@pytest.mark.parametrize("op", ("TADD", "TSUB", "TMUL", "TDIV", "TREM"))
def test_8bit_all_pairs_under_ftz(op, name):
    a, b = all_pairs()
    got = numeric.elementwise(op, name, a, b, profile="ftz")
    assert_same(f"ftz {op}.{name}", got, R.reference(op, name, a, b, ftz=True), (a, b))


@pytest.mark.parametrize("name", ("FP16", "BF16"))
@pytest.mark.parametrize("op", ("TSQRT", "TRECIP"))
def test_16bit_unary_every_input_under_ftz(op, name):
    x = every_code(name)
    got = numeric.elementwise(op, name, x, profile="ftz")
    assert_same(f"ftz {op}.{name}", got, R.reference(op, name, x, ftz=True), (x,))


@pytest.mark.parametrize("name", ("FP32", "FP64"))
@pytest.mark.parametrize("op", ("TADD", "TMUL", "TFMA"))
def test_wide_samples_under_ftz(op, name):
    ops = operand_sets(name, 3 if op == "TFMA" else 2, 1500, 21)
    if name == "FP64":   # the FP64 reference rounds exact rationals: keep it to the finite lanes
        ops = [o[np.isfinite(o.view(np.float64))] for o in ops]
        k = min(len(o) for o in ops)
        ops = [o[:k] for o in ops]
    got = numeric.elementwise(op, name, *ops, profile="ftz")
    assert_same(f"ftz {op}.{name}", got, R.reference(op, name, *ops, ftz=True), ops)


def test_ftz_flushes_where_ieee_keeps_subnormals():
    tiny = np.array([0x0001, 0x8001], np.uint16)            # FP16 +-2^-24
    one = np.uint16(0x3C00)
    assert numeric.elementwise("TMUL", "FP16", tiny, one)[0].tolist() == [0x0001, 0x8001]
    bits, flags = numeric.elementwise("TMUL", "FP16", tiny, one, profile="ftz")
    assert bits.tolist() == [0x0000, 0x8000] and not flags.any()          # input read as zero
    half = np.uint16(0x0400)                                              # 2^-14, min normal
    bits, flags = numeric.elementwise("TMUL", "FP16", half, np.uint16(0x3800), profile="ftz")  # * 0.5
    assert int(bits) == 0 and int(flags) == F.UF | F.NX                   # subnormal result flushed


def test_ftz_selection_ops_see_subnormals_as_zero():
    sub, neg_one = np.uint16(0x0001), np.uint16(0xBC00)
    assert int(numeric.elementwise("TMAX", "FP16", sub, neg_one, profile="ftz")[0]) == 0x0000
    assert int(numeric.elementwise("TMAX", "FP16", sub, neg_one)[0]) == 0x0001
    assert int(numeric.elementwise("TRELU", "FP16", sub, profile="ftz")[0]) == 0
    assert int(numeric.elementwise("TCMP", "FP16", sub, np.uint16(0x8000), cmode="EQ", profile="ftz")[0]) == 1
    assert int(numeric.elementwise("TABS", "FP16", np.uint16(0x8001), profile="ftz")[0]) == 0x0001   # sign-bit op


def test_transcendentals_under_ftz():
    # exp of a subnormal input is exp(0) = 1 exactly; a result below the min normal flushes
    assert numeric.elementwise("TEXP", "FP16", np.uint16(0x0001), profile="ftz") == (0x3C00, 0)
    bits, flags = numeric.elementwise("TEXP", "FP16", np.uint16(0xC900), profile="ftz")   # exp(-10)
    assert int(bits) == 0 and int(flags) == F.UF | F.NX
