"""The element-wise rules of profiles other than IEEE, each written once as a composition of IEEE
primitives (kernels/numeric/profiles.py names the rule of each (op, DataType); docs/numerics.md
"Profile a5" states every rule with its evidence in the public PTO A5 sources).

A recipe is `recipe(run, name, *operands) -> (bits, flags)`: `run(op, name, *operands)` is one
IEEE operation of the numeric layer (profile ieee: the exact result rounded once, RNE,
subnormals kept), the rest is array code over the API NumPy and CuPy share (selects, bit
operations, kernels.numeric.convert).  So one recipe serves

  * the reference (`reference(rule)`): `run` is the NumPy reference of ops_float;
  * the compose tier of the tier table (kernels/numeric/tiers.py): `run` is the best tier of
    the primitive on the host, or on the device (kernels/numeric/cuda.py), so a recipe that is
    a composition runs as the compiled kernels it is made of;

and kernels/numeric/fasta5.py compiles the recipes whose steps are cheaper fused (TREM, FP16
TDIV), with the same bits by test.  Status flags are the OR of the IEEE flags of the steps that
run on an element (a step a recipe applies to some elements only -- the sign fix-up of TREM --
counts only there); comparisons are quiet (no flag for a quiet NaN, as TCMP); rounding to an
integral value raises no flag (IEEE 754 roundToIntegral, not ...Exact).  NaN results are the
canonical quiet NaN, as every IEEE primitive here delivers.
"""
from __future__ import annotations

import numpy as np

from . import profiles as P
from .convert import convert
from .formats import FORMATS, _xp

_U32 = np.uint32
_U16 = np.uint16


def _one(name):
    """The encoding of 1.0 in floating format `name`."""
    f = FORMATS[name]
    return (f.bias << f.t) << f.shift


def _negative(bits, name):
    """`bits < 0` as the recipes' comparisons ask it: sign set, not a zero, not a NaN (quiet)."""
    f = FORMATS[name]
    t = bits.dtype.type
    sign = t(1 << (f.width - 1))
    mag = bits & t((1 << (f.width - 1)) - 1)
    return ((bits & sign) != 0) & (mag != 0) & (mag <= t(((1 << f.ebits) - 1) << f.t))


def floor32(q):
    """Binary32 codes rounded to an integral value toward minus infinity (A5 vtrc ROUND_F),
    keeping the sign of zero, infinities and NaNs; exact, no flags."""
    xp = _xp(q)
    frac = (q & _U32(0x7FFFFFFF)) < _U32(0x4B000000)          # |q| < 2^23: may have a fraction
    i, _ = convert(q, "FP32", "S64", "RTM")
    f, _ = convert(i, "S64", "FP32")                           # exact: |floor(q)| <= 2^23
    f = xp.where((f & _U32(0x7FFFFFFF)) == 0, q & _U32(0x80000000), f)
    return xp.where(frac, f, q)


def sqrt_then_div(run, name, x):
    """TRSQRT = RN(1 / RN(sqrt x)), both steps in the operand's format (TRsqrt.hpp:49-50)."""
    s, f1 = run("TSQRT", name, x)
    one = _xp(s).full_like(s, _one(name))
    r, f2 = run("TDIV", name, one, s)
    return r, f1 | f2


def rem_unfused(run, name, x, y):
    """TREM FP32 (TRem.hpp:33-43): q = RN(x/y); q = floor(q); p = RN(q*y); r = RN(x - p);
    if RN(y*r) < 0 then r = RN(r + y)."""
    xp = _xp(x)
    q, f1 = run("TDIV", name, x, y)
    p, f2 = run("TMUL", name, floor32(q), y)
    r, f3 = run("TSUB", name, x, p)
    t, f4 = run("TMUL", name, y, r)
    neg = _negative(t, name)
    s, f5 = run("TADD", name, r, y)
    return xp.where(neg, s, r), f1 | f2 | f3 | f4 | xp.where(neg, f5, np.uint8(0))


def rem_via_fp32(run, name, x, y):
    """TREM FP16 (TRem.hpp:45-73): the FP32 steps of rem_unfused on the widened operands (exact),
    the FP32 remainder converted to FP16 rounding toward zero with saturation (ROUND_Z,
    RS_ENABLE: a finite overflow gives +-max), then the sign fix-up in FP16 arithmetic."""
    xp = _xp(x)
    X, g1 = convert(x, "FP16", "FP32")
    Y, g2 = convert(y, "FP16", "FP32")
    q, f1 = run("TDIV", "FP32", X, Y)
    p, f2 = run("TMUL", "FP32", floor32(q), Y)
    r, f3 = run("TSUB", "FP32", X, p)
    h, f4 = convert(r, "FP32", "FP16", "RTZ", sat=True)
    t, f5 = run("TMUL", "FP16", y, h)
    neg = _negative(t, "FP16")
    s, f6 = run("TADD", "FP16", h, y)
    flags = g1 | g2 | f1 | f2 | f3 | f4 | f5 | xp.where(neg, f6, np.uint8(0))
    return xp.where(neg, s, h), flags


# DivIEEE754HalfImpl (custom/Div754.hpp:361-565), FP16 codes
_MAX_SUBNORMAL = _U16(0x03FF)
_SCALE_UP = _U16(0x6400)                 # 2^10


def div_normalised(run, name, x, y):
    """TDIV FP16 as A5's high-precision division DivIEEE754HalfImpl: operands below the largest
    subnormal 0x03FF (strictly, Div754.hpp:446,453) are scaled by 2^10; each significand with its
    exponent field set to the bias (a value of +-[1, 2)) is divided once (vdiv, :474); the
    quotient is multiplied by 2^adjust (the subnormal scalings, :482-484); then by the exponent
    difference scale = e0 - e1 + 15 (:499-502): scale = -9 gives +-0x0001 when |m0| > |m1| and
    +-0 otherwise (:507-517), scale < -9 gives +-0 (:519-526), scale = 31 doubles the quotient
    and uses 30 (:528-535), scale > 31 gives +-inf (:537-543), 0 < scale multiplies by the
    normal 2^(scale-15) (:545-549), scale <= 0 by the subnormal 2^(scale-15) = 0x0200 >> -scale
    (:551-556); each multiplication an FP16 vmul (RNE: a subnormal quotient is rounded a second
    time).  Lanes with a zero, infinite or NaN operand (the source's invalid and NaN masks,
    :425-438, :558-564) give the IEEE quotient: the recipe divides them unscaled up to powers
    of two and keeps the hardware's result (NaN lanes: the canonical NaN 0x7E00); a5 gives them
    ieee's flags too (assumed: the source's arithmetic on the NaN lanes' stand-in values is
    discarded)."""
    xp = _xp(x)
    sign = _U16(0x8000)
    ax, ay = x & _U16(0x7FFF), y & _U16(0x7FFF)
    special = (ax == 0) | (ay == 0) | (ax >= _U16(0x7C00)) | (ay >= _U16(0x7C00))
    sub0, sub1 = ax < _MAX_SUBNORMAL, ay < _MAX_SUBNORMAL
    up0, _ = run("TMUL", "FP16", x, xp.full_like(x, _SCALE_UP))
    up1, _ = run("TMUL", "FP16", y, xp.full_like(y, _SCALE_UP))     # exact: no flags
    a, b = xp.where(sub0, up0, x), xp.where(sub1, up1, y)
    adjust = xp.where(sub0, np.int16(-10), np.int16(0)) + xp.where(sub1, np.int16(10), np.int16(0))
    m0 = (a & _U16(0x83FF)) + _U16(0x3C00)
    m1 = (b & _U16(0x83FF)) + _U16(0x3C00)
    q, fq = run("TDIV", "FP16", m0, m1)                              # in (1/2, 2): NX at most
    le = (m0 & _U16(0x7FFF)) <= (m1 & _U16(0x7FFF))                 # |m0| <= |m1|
    q, _ = run("TMUL", "FP16", q, ((adjust + np.int16(15)).astype(_U16) << _U16(10)))   # exact
    qsign = q & sign
    e0 = ((a & _U16(0x7C00)) >> _U16(10)).astype(np.int16)
    e1 = ((b & _U16(0x7C00)) >> _U16(10)).astype(np.int16)
    scale = e0 - e1 + np.int16(15)
    at9 = scale == np.int16(-9)
    below = scale < np.int16(-9)
    top = scale == np.int16(31)
    scale = xp.where(top, np.int16(30), scale)
    doubled, f2 = run("TMUL", "FP16", q, xp.full_like(q, _U16(0x4000)))
    q = xp.where(top, doubled, q)
    over = scale > np.int16(31)
    normal = scale > np.int16(0)
    factor = xp.where(normal, (xp.clip(scale, 1, 30).astype(_U16) << _U16(10)),
                      _U16(0x0200) >> xp.clip(-scale, 0, 15).astype(_U16))
    scaled, f3 = run("TMUL", "FP16", q, factor)
    out = xp.where(at9, qsign | xp.where(le, _U16(0), _U16(1)),
                   xp.where(below, qsign, xp.where(over, qsign | _U16(0x7C00), scaled)))
    flags = fq | xp.where(top, f2, np.uint8(0)) | xp.where(at9 | below | over, np.uint8(0), f3)
    ieee, fi = run("TDIV", "FP16", x, y)
    return xp.where(special, ieee, out), xp.where(special, fi, flags)


def recip_normalised(run, name, x):
    """TRECIP FP16 = TDIV(1, x) by div_normalised (pto_instr.hpp:533-540 maps TRECIP to TDIVS
    with the division algorithm; TDivS.hpp:43-57)."""
    return div_normalised(run, name, _xp(x).full_like(x, _U16(0x3C00)), x)


RULES = {P.SQRT_THEN_DIV: sqrt_then_div, P.REM_UNFUSED: rem_unfused, P.REM_VIA_FP32: rem_via_fp32,
         P.DIV_NORMALISED: div_normalised, P.RECIP_NORMALISED: recip_normalised}


def _reference_run(op, name, *operands):
    """An IEEE primitive by the NumPy reference (ops_float)."""
    from .ops_float import OPS
    return OPS[op](name, *operands, prof=P.PROFILES["ieee"])


def reference(rule: str):
    """The reference of `rule`: fn(op, name, operands, prof) -> (bits, flags)."""
    recipe = RULES[rule]

    def fn(op, name, operands, prof):
        with np.errstate(all="ignore"):
            return recipe(_reference_run, name, *operands)
    fn.__name__ = f"{rule}_reference"
    return fn
