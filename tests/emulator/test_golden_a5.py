"""Golden vectors under numeric profile a5 (docs/numerics.md "Profile a5"): the coverage classes
aim at the edges where a5 and ieee differ."""
from __future__ import annotations

import numpy as np
import pytest

from emulator.golden import coverage as C
from emulator.golden.space import space
from isa import instructions as I


def _ctx(op, src, dst=None):
    return C.Context(I.lookup(op), space(src), space(dst or src))


def test_large_quotient_class_gives_trem_quotients_of_2_to_24_and_more():
    rng = np.random.default_rng(1)
    for name in ("FP16", "FP32", "BF16"):
        ctx = _ctx("TREM", name)
        assert C.BY_NAME["large_quotient"] in C.applicable(ctx)
        x, y = (ctx.src.values(v) for v in C.BY_NAME["large_quotient"].gen(ctx, rng, 400))
        assert (y != 0).all() and (np.abs(x / y) >= 2.0 ** 24).mean() > 0.9, name
    assert C.BY_NAME["large_quotient"] not in C.applicable(_ctx("TREM", "E4M3"))   # range too narrow


def test_subnormal_quotient_class_gives_tdiv_quotients_near_the_smallest_subnormal():
    rng = np.random.default_rng(2)
    ctx = _ctx("TDIV", "FP16")
    x, y = (ctx.src.values(v) for v in C.BY_NAME["subnormal_quotient"].gen(ctx, rng, 400))
    q = np.abs(x / y) / 2.0 ** -24
    assert (q > 0.4).all() and (q < 3.5).all() and ((q > 0.9) & (q < 1.1)).sum() > 20


@pytest.mark.parametrize("src,dst", [("FP16", "U8"), ("FP16", "S8"), ("FP16", "S16"), ("FP32", "S16"),
                                     ("FP32", "S32")])
def test_out_of_range_class_gives_values_whose_rounded_integer_does_not_fit(src, dst):
    rng = np.random.default_rng(3)
    ctx = _ctx("TCVT", src, dst)
    v = ctx.src.values(C.BY_NAME["out_of_range_int"].gen(ctx, rng, 400)[0])
    lo, hi = {"U8": (0, 255), "S8": (-128, 127), "S16": (-32768, 32767), "S32": (-2 ** 31, 2 ** 31 - 1)}[dst]
    assert ((np.round(v) < lo) | (np.round(v) > hi)).mean() > 0.9
    assert C.BY_NAME["out_of_range_int"] not in C.applicable(_ctx("TCVT", "FP16", "S32"))   # always fits
