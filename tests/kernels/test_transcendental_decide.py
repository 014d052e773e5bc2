"""The rounding test of TEXP/TLOG/TRSQRT (transcendental._decide) rounds both ends of each
element's interval in one pack call over a leading axis of two.  Rounding is element by element,
so each end must come out exactly as a pack call of its own gives it: bits and flags of the lower
end, and the decided mask (both ends round alike), for every floating format, over double-double
values near rounding boundaries, at powers of two, subnormal and overflowing scales, zeros."""
import numpy as np
import pytest

from kernels.numeric import formats
from kernels.numeric import transcendental as T
from kernels.numeric.eft import fast_two_sum
from kernels.numeric.ops_float import pack, special_inputs
from kernels.numeric.profiles import PROFILES

FLOATS = ("FP64", "FP32", "TF32", "HF32", "FP16", "BF16", "E4M3", "E5M2")


def ends_alone(dt, prof, h, l, scale, eps):
    """Each end of (Y - 2 eps|Y|, Y + 2 eps|Y|) rounded by a pack call of its own."""
    w = 2.0 * np.abs(h) * eps
    lo_h, lo_l = fast_two_sum(h, l - w)
    hi_h, hi_l = fast_two_sum(h, l + w)
    b_lo, f_lo = pack(dt, prof, lo_h, lo_l, 1.0, scale)
    b_hi, f_hi = pack(dt, prof, hi_h, hi_l, -1.0, scale)
    return b_lo, f_lo, (b_lo == b_hi) & (f_lo == f_hi)


def samples(seed: int, n: int = 4096):
    """(h, l, scale, eps): h values of every magnitude (powers of two and their neighbours,
    values one ulp of a narrow format apart, zeros of both signs), l within half an ulp of h,
    scales that push results to subnormal, overflow and ordinary ranges, eps of the sizes the
    operations use (a scalar or per element)."""
    rng = np.random.default_rng(seed)
    e = rng.integers(-30, 30, n)
    h = np.ldexp(1.0 + rng.integers(0, 1 << 12, n) / 4096.0, e) * rng.choice([-1.0, 1.0], n)
    h[::17] = np.ldexp(1.0, e[::17])                       # powers of two
    h[5::37] = np.nextafter(h[5::37], 0.0)                 # just below a power of two
    h[3::101] = 0.0
    h[4::103] = -0.0
    ulp = np.spacing(np.abs(h))
    l = (rng.random(n) - 0.5) * ulp
    l[::7] = 0.0
    l[h == 0] = 0.0
    l[1::11] = 0.5 * ulp[1::11] * rng.choice([-1.0, 1.0], n)[1::11]     # a tie in binary64's grid
    scale = rng.choice([0, 0, -140, -1000, -1070, 120, 1000, 4000, -4000], n).astype(np.int64)
    eps = rng.choice([2.0 ** -100, 2.0 ** -60, 2.0 ** -52, 1e-20, 0.0], n)
    return h, l, scale, eps


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_one_pack_call_rounds_each_end_as_its_own_call(dt, profile):
    prof = PROFILES[profile]
    formats.float_format(dt)
    for seed in range(3):
        h, l, scale, eps = samples(seed)
        for sc, ep in ((scale, eps), (0, T.EPS_EXP), (scale[:1], eps[:1])):     # scalar and broadcast forms too
            want = ends_alone(dt, prof, h, l, sc, ep)
            got = T._decide(dt, prof, h, l, sc, ep)
            for w, g in zip(want, got):
                assert g.dtype == w.dtype and g.shape == w.shape
                assert np.array_equal(g, w)


def test_one_pack_call_on_a_two_dimensional_block():
    """Operands of any shape (the direct API takes tiles as they are)."""
    prof = PROFILES["ieee"]
    h, l, scale, eps = samples(7, 64 * 8)
    h, l, scale, eps = (a.reshape(64, 8) for a in (h, l, scale, eps))
    for w, g in zip(ends_alone("FP32", prof, h, l, scale, eps), T._decide("FP32", prof, h, l, scale, eps)):
        assert g.shape == w.shape and np.array_equal(g, w)


@pytest.mark.parametrize("dt", FLOATS)
def test_the_third_row_rounds_the_exact_values_as_their_own_call(dt):
    """With `exact` (what ops_float.special_inputs gives: the special lanes' exactly
    representable results, 1.0 where the result is an infinity or a NaN and on every other
    lane), its row is pack(exact) with l, d and scale 0, and the two ends are unchanged."""
    prof = PROFILES["ieee"]
    h, l, scale, eps = samples(11)
    rng = np.random.default_rng(3)
    special = rng.random(len(h)) < 0.5
    hw = h.copy()
    hw[::13] = np.inf
    hw[1::13] = -np.inf
    hw[2::13] = np.nan
    hw[3::13] = -0.0
    hw[4::13] = 2.0 ** -1074
    hw[5::13] = np.finfo(np.float64).max
    exact = special_inputs(special, hw, np.ones_like(h))
    for sc in (scale, 0):
        *ends, third = T._decide(dt, prof, h, l, sc, eps, exact)
        for w, g in zip(ends_alone(dt, prof, h, l, sc, eps), ends):
            assert g.dtype == w.dtype and np.array_equal(g, w)
        for w, g in zip(pack(dt, prof, exact, 0.0, 0.0, 0), third):
            assert g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w)
