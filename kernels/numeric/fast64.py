"""Compiled TADD, TSUB, TMUL, TFMA, TDIV, TRECIP, TSQRT, TREM, TRSQRT, TEXP, TLOG on FP64,
profile ieee; profile ftz by the same kernels with every element that has a subnormal operand
or result marked (`mark_for_ftz`).

The hardware's binary64 addition, multiplication, division and square root are the
reference's single RNE rounding of the exact result, subnormals included; what remains is the
exact flags, from error-free transformations (x, y finite binary64):

  add/sub  s = x + y and Knuth's TwoSum error e (6 operations, no branch): s + e = x + y exactly
           when no intermediate overflows, so NX = (e != 0).  Settled only when |x|, |y| <
           2^1022: then |s|, |s - x| and every other intermediate stay below 2^1024 (issue 12:
           near the largest finite value s - x overflowed and e became NaN; those sums, and
           every real overflow, go to the reference with its halving guard).  A sum in the
           subnormal range is exact (gradual underflow), so never UF; the sum of two operands
           below 2^1022 never overflows.  Exact zeros: +0 unless both addends are -0, as the
           hardware gives in RNE.
  mul      r = x * y and its exact error e = x*y - r: on the CPU one fused multiply-add
           (llvm.fma.f64, an explicit error-free transformation), on CUDA Dekker's TwoProduct with
           Veltkamp's split (C = 2^27 + 1) in mul.rn/add.rn (no fma in the PTX).  Both are exact
           when the split cannot overflow and no partial product underflows: settled when x and
           y are normal, |x|, |y| <= 2^995 and 2^-960 <= |r| <= 2^1020 (so e_x + e_y >= -962 and
           the smallest partial product xl*yl, of at most 52 bits, lies on binary64's grid; the
           split parts exceed x and y by at most 2^-26 relative, so xh*yh stays finite), or when
           an operand is zero and the other finite (exact zero, sign xor, flags 0); then never
           UF or OF, NX = (e != 0).  The CPU's fma needs less, but both targets mark the same
           elements.
  fma      r = fma(x, y, z), the hardware's single rounding of x*y + z (llvm.fma.f64 on the CPU,
           PTX fma.rn.f64 on CUDA: rn.fma_rn, the one explicit fma the PTX test allows this
           kernel).  Its exact error by Boldo and Muller's ErrFma ("Exact and approximated error
           of the FMA", IEEE Trans. Computers 60(2), 2011, algorithm ErrFma): u1 + u2 =
           x*y (TwoProduct above), (a1, a2) = TwoSum(z, u2), (b1, b2) = TwoSum(u1, a1),
           g = RN(RN(b1 - r) + b2), (r2, r3) = FastTwoSum(g, a2); then x*y + z = r + r2 + r3
           exactly when nothing underflows or overflows, so NX = (r2, r3) != 0.  Settled when
           x*y is in the TwoProduct range above with 2^-900 <= |u1| <= 2^1020, z = 0 or
           2^-900 <= |z| <= 2^1020, and r = 0 or 2^-900 <= |r| <= 2^1020: every value is then
           a multiple of 2^-1005 (x*y's 106 bits, z's grid) below 2^1022, so no TwoSum
           overflows, no error term underflows (the theorem's hypothesis), a zero r is an
           exact zero (RN(v) = 0 only for v = 0 on that grid) and a nonzero r is normal (never
           UF, never OF).  An operand x or y = 0 with the others finite gives the exact z (+-0
           as IEEE's RNE signs it), flags 0.
  div      q = x / y, the hardware's correctly rounded quotient (div.rn.f64 on CUDA); exact iff
           q*y = x, i.e. iff x - p == e for the TwoProduct q*y = p + e above (x - p is exact by
           Sterbenz's lemma: p is within 2^-52 of x).  Settled when q and y are in the
           TwoProduct range, |q| > 2^-1022 (strictly: a quotient rounding up to 2^-1022 itself may
           be tiny) and 2^-960 <= |p| <= 2^1020, or x = 0 (exact zero); then never UF or OF.
           TRECIP is 1 / y.
  sqrt     s = sqrt(x) correctly rounded by the hardware (sqrt.rn.f64); exact iff s*s = x, i.e.
           p == x and e == 0 for TwoProduct s*s = p + e; settled for 2^-960 <= x <= 2^1020 and
           x = +-0 (sqrt(-0) = -0); a root is never tiny or overflowing.
  rem      floor modulo (Decision 061; not C's fmod): r = x - trunc(x/y)*y exactly in integers,
           |x| = X 2^ex, |y| = Y 2^ey with 53-bit X, Y: r = x when ex < ey (then |x| < |y|),
           else |r| = ((X 2^(ex-ey)) mod Y) 2^ey with x's sign, the power applied 11 bits at a
           time ((R << 11) mod Y with R < 2^53 fits in 64 bits), at most 16 steps (ex - ey <=
           176; farther operands are marked, so no element costs more than 16 divisions);
           R 2^ey is exact (R < 2^53, and |r| < |y| is a multiple of y's quantum: a binary64
           value, scaled in two steps below 2^-1000).  Then a zero r takes y's sign, an r of
           y's sign is the result (exact), otherwise s = r + y, the hardware's RN with TwoSum's
           error for NX (|s| < |y| < 2^1022: no overflow anywhere; a subnormal sum is exact,
           never UF).  Settled: finite normal x or x = 0, normal y with |y| < 2^1022.
  rsqrt    x = m 4^k with m in [1, 4) (subnormal x scaled by 2^108 first: exact), y0 =
           RN(1 / RN(sqrt(m))) in (1/2, 1], within 2^-51.99 relative of v = 1/sqrt(m), so
           |c| < 2^-50.98 for c = 1 - m y0^2, computed as ((1 - ah) - al) - m pl from the exact
           TwoProducts y0 y0 = ph + pl and m ph = ah + al (1 - ah exact by Sterbenz) with an
           error below 2^-101.  v = y0 (1 - c)^(-1/2) = y0 (1 + c/2 + 3c^2/8 + ...): corr =
           RN(y0 c) / 2 leaves v - y0 - corr below y0 (2^-103.4 truncation + 2^-104 rounding +
           2^-102 from c) < 2^-100.9 v.  (r, e) = TwoSum(y0, corr) is exact, so v lies within
           2^-100 |r| of r + e; RN(v) = r whenever |e| stays farther than that from the
           midpoint ulp(r)/2 (ulp(r)/4 below a power of two), tested as |e| / ulp(r) <
           1/2 - 2^-40 (1/4 - 2^-40 below a power of two); otherwise the element is marked
           (probability about 2^-40).  1/sqrt(x) is dyadic only for x = 4^k (then m = 1: y0 = 1,
           c = 0, exact, flags 0); otherwise NX.  The result r 2^-k lies in (2^-512, 2^537]:
           normal, never UF or OF.  x <= 0, infinities and NaNs are marked.
  exp      transcendental.exp_dd's algorithm compiled (k = rint(64x/ln2), r = x - k ln2/64 in
           double-double, expm1(r) by Horner in double-double, times 2^(j/64) from MPFR
           constants written out here): (h + l) 2^scale within 2^-98 of exp(x) (that module's
           analysis; the same operations, TwoProduct exact in this range on both targets);
           the result h 2^scale when `rounds_to_r(h, l)` (2^-93 margin), else marked.  Settled
           for 2^-60 <= |x|, -708 <= x <= 709 (exp(x) normal and finite: never UF or OF); NX
           (exp of a nonzero binary64 is transcendental).
  log      transcendental.log_dd compiled: x = m 2^e, m in [1/sqrt2, sqrt2) (subnormal x scaled
           by 2^54 first), y0 = fastfn.log_approx(m) (the same value on both targets; its
           accuracy only sets the size of the correction), one Newton step with m - e^y0 in
           double-double, + e ln2 in three parts; that module's per-element bound eps
           (c^2 + 2^-50 |c| + 2^-97 (|y0| + |m - 1|)) / |h| + 2^-98.  Settled when eps <= 2^-93
           and `rounds_to_r(h, l)`; NX (x != 1: log x is transcendental); |log x| is in
           [2^-53, 745]: normal, never UF or OF.  x <= 0, x = 1, infinities, NaNs are marked.
Everything else (NaN/infinite operands, zero divisors, negative radicands, results near the
underflow or overflow thresholds, operands at or above 2^1022 for sums) is marked (flags 0xFF)
and computed by the reference (ops_float), so the results are the reference's by construction
and by test (tests/kernels/test_fast64.py against SoftFloat and exact rationals, near-overflow
sweeps in tests/kernels/test_ops_near_overflow.py).  Loops are `fast.Twin`s: small inputs never
enter a parallel region.
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from . import fast, fastfn, specials as S
from .flags import NX, OF, UF
from .rn import add_rn, fma_rn, mul_rn, two_sum

FALLBACK = np.uint8(0xFF)

_BIG = 2.0 ** 1022               # sums: operands below it never overflow inside TwoSum
_SPLIT_MAX = 2.0 ** 995          # products: C*x stays finite
_PROD_MIN = 2.0 ** -960          # products: every partial product on binary64's grid
_PROD_MAX = 2.0 ** 1020          # products: xh*yh (split parts up to 2^-26 above x, y) stays finite
_FMA_MIN = 2.0 ** -900           # fma: every term a multiple of 2^-1005, no error term underflows
_MIN_NORMAL = 2.0 ** -1022
_MAX = 1.7976931348623157e308


def _arith(context, builder):
    """(mul, add, sub) builders: the .rn intrinsics on CUDA (never fused by ptxas), plain
    fmul/fadd/fsub on the CPU (LLVM contracts nothing without fast-math flags)."""
    d = ir.DoubleType()
    if "CUDA" in type(context).__name__:
        fnty = ir.FunctionType(d, [d, d])
        mul_f = cgutils.get_or_insert_function(builder.module, fnty, "llvm.nvvm.mul.rn.d")
        add_f = cgutils.get_or_insert_function(builder.module, fnty, "llvm.nvvm.add.rn.d")

        def add(u, v):
            return builder.call(add_f, [u, v])
        return (lambda u, v: builder.call(mul_f, [u, v]), add,
                lambda u, v: add(u, builder.fsub(ir.Constant(d, -0.0), v)))     # NVVM's IR has no fneg
    return builder.fmul, builder.fadd, builder.fsub


def _dekker(context, builder, x, y, rr):
    """x*y - rr by Dekker's TwoProduct with Veltkamp's split (C = 2^27 + 1), no fma."""
    mul, add, sub = _arith(context, builder)

    def split(v):
        t = mul(ir.Constant(ir.DoubleType(), 134217729.0), v)
        hi = sub(t, sub(t, v))
        return hi, sub(v, hi)
    xh, xl = split(x)
    yh, yl = split(y)
    e = add(sub(mul(xh, yh), rr), mul(xh, yl))
    return add(add(e, mul(xl, yh)), mul(xl, yl))


_F64 = types.float64(types.float64, types.float64, types.float64)


@intrinsic
def prod_err64(typingctx, a, b, r):
    """a*b - r for binary64 a, b and r = RN(a*b), exact within the range fast64 settles.
    CPU: llvm.fma.f64(a, b, -r).  CUDA: Dekker's TwoProduct (`_dekker`) with the .rn intrinsics."""
    if not (a == b == r == types.float64):
        return None

    def codegen(context, builder, sig, args):
        x, y, rr = args
        if "CUDA" in type(context).__name__:
            return _dekker(context, builder, x, y, rr)
        fnty = ir.FunctionType(ir.DoubleType(), [ir.DoubleType()] * 3)
        fma = cgutils.get_or_insert_function(builder.module, fnty, "llvm.fma.f64")
        return builder.call(fma, [x, y, builder.fneg(rr)])
    return _F64, codegen


@intrinsic
def dekker_err64(typingctx, a, b, r):
    """The CUDA branch of prod_err64 on any target, so the CPU tests run the very IR the GPU
    compiles (the CUDA simulator runs the CPU build, fma included)."""
    if not (a == b == r == types.float64):
        return None

    def codegen(context, builder, sig, args):
        return _dekker(context, builder, *args)
    return _F64, codegen


@nb.njit(cache=True)
def dekker_errors(a, b):
    """(r, Dekker's error of r) per element: test hook for `dekker_err64`."""
    r = np.empty(a.shape[0])
    e = np.empty(a.shape[0])
    for i in range(a.shape[0]):
        r[i] = mul_rn(a[i], b[i])
        e[i] = dekker_err64(a[i], b[i], r[i])
    return r, e


@nb.njit(inline="always", error_model="numpy")
def _nx(e):
    return np.uint8(NX) if e != 0 else np.uint8(0)


@nb.njit(inline="always", error_model="numpy")
def _nonfinite(v):
    return not (abs(v) <= _MAX)                 # NaN or infinite


_NAN64 = np.uint64(0x7FF8000000000000)        # the canonical quiet NaN


@nb.njit(inline="always", error_model="numpy")
def _nan64(r):
    """r, or the canonical NaN when r is a NaN: the hardware's IEEE result of an element with a
    NaN or infinite operand (specials.py, "inline")."""
    return r if r == r else fast.bits_f64(_NAN64)


# ---------------------------------------------------------------- the fix pass (exact, scalar)
# What the SIMD routines below leave marked -- subnormal operands, results near the ends of the
# range -- each routine's `fix` computes in the same compiled call (fast.kernel's fix): the
# operands split into a significand in [1, 2) and an exponent (`_split64`, exact for subnormals
# too: no hardware operation ever sees a subnormal), the significands' product, quotient or
# root q = RN53 with the exact sign of the rest (TwoProduct, as the SIMD routines), and
# `round64`, which rounds q * 2^scale to FP64 with gradual underflow.  What a fix cannot settle
# (none of these operations leaves anything) stays marked for the reference.

@nb.njit(inline="always", error_model="numpy")
def _split64(x):
    """(m, e): |x| = m 2^e, m in [1, 2), for finite nonzero x, subnormals included (the integer
    significand converted to binary64 is exact and normal)."""
    u = fast.f64_bits(x) & np.uint64(0x7FFFFFFFFFFFFFFF)
    E = np.int64(u >> np.uint64(52))
    t = fast.f64_bits(np.float64(u & _MANT))                          # subnormal: T as a value
    Et = np.int64(t >> np.uint64(52))
    sub = E == 0
    m = fast.bits_f64(((t if sub else u) & _MANT) | np.uint64(1023 << 52))
    return m, (Et - 1023 - 1074) if sub else (E - 1023)


@nb.njit(inline="always", error_model="numpy")
def round64(q, d, scale):
    """(binary64 value, flags) of v = (q + delta) 2^scale rounded to FP64 (RNE, gradual
    underflow, tininess after rounding, overflow), q > 0 a normal binary64 = RN53 of v 2^-scale
    and delta of sign d (0: exact), below half of q's ulp."""
    u = fast.f64_bits(q)
    E = np.int64(u >> np.uint64(52)) - 1023 + scale
    M = (u & _MANT) | _HIDDEN
    drop = min(max(-1022 - E, 1), 54)
    kept, inc, inexact = fast._rne_bits(M, drop, np.int64(d))
    sub = kept + inc                                                   # a carry lands on 2^-1022
    code = np.uint64(0x7FF0000000000000) if E > 1023 else (
        (np.uint64(E + 1023) << np.uint64(52)) | (M & _MANT) if E >= -1022 else sub)
    nx = (d != 0) if E >= -1022 else inexact != 0
    flags = (np.uint8(OF | NX) if E > 1023 else
             (np.uint8(NX) if nx else np.uint8(0)) | (np.uint8(UF) if (E < -1022) & nx else np.uint8(0)))
    return fast.bits_f64(code), flags


@nb.njit(inline="always", error_model="numpy")
def _signed(v, f, neg):
    return (-v if neg else v), f


@nb.njit(inline="always", error_model="numpy")
def _sgn(v):
    return np.int64(v > 0) - np.int64(v < 0)


@nb.njit(inline="always", error_model="numpy")
def fix_mul(x, y):
    """x * y for finite nonzero x, y (fast.kernel fix of TMUL)."""
    mx, ex = _split64(x)
    my, ey = _split64(y)
    p = mul_rn(mx, my)
    v, f = round64(p, _sgn(prod_err64(mx, my, p)), ex + ey)
    return _signed(v, f, (x < 0) != (y < 0))


@nb.njit(inline="always", error_model="numpy")
def fix_div(x, y):
    """x / y for finite nonzero x, y: q = RN53(mx/my), the sign of mx - q my exactly (TwoProduct
    p + e = q my, mx - p exact by Sterbenz)."""
    mx, ex = _split64(x)
    my, ey = _split64(y)
    q = mx / my
    p = mul_rn(q, my)
    r = (mx - p) - prod_err64(q, my, p)
    v, f = round64(q, _sgn(r), ex - ey)
    return _signed(v, f, (x < 0) != (y < 0))


@nb.njit(inline="always", error_model="numpy")
def fix_recip(y):
    return fix_div(1.0, y)


@nb.njit(inline="always", error_model="numpy")
def fix_sqrt(x):
    """sqrt(x) for finite x > 0: m 2^e with e even, m in [1, 4), q = RN53(sqrt m), the sign of
    m - q^2 exactly; a root is normal (never UF or OF)."""
    m, e = _split64(x)
    odd = (e & 1) != 0
    m = m * 2.0 if odd else m                                          # exact
    e = e - 1 if odd else e
    q = math.sqrt(m)
    p = mul_rn(q, q)
    r = (m - p) - prod_err64(q, q, p)
    return round64(q, _sgn(r), e // 2)


@fast.kernel("fast64", "FP64", "TSUB", "f64")
def fp64_sub(x, y):
    return fp64_add(x, -y)


@fast.kernel("fast64", "FP64", "TADD", "f64")
def fp64_add(x, y):
    """(binary64 result, flags) of x + y for binary64 values x, y."""
    s, e = two_sum(x, y)
    ok = (abs(x) < _BIG) & (abs(y) < _BIG)                     # False for NaN and infinities
    special = _nonfinite(x) | _nonfinite(y)
    sf = S.invalid(s != s, (x != x) | (y != y), S.snan64(x) | S.snan64(y))
    return _nan64(s), _nx(e) if ok else (sf if special else FALLBACK)


@fast.kernel("fast64", "FP64", "TMUL", "f64", fix=fix_mul)
def fp64_mul(x, y):
    r = mul_rn(x, y)
    e = prod_err64(x, y, r)
    ax, ay, ar = abs(x), abs(y), abs(r)
    normal = (ax >= _MIN_NORMAL) & (ax <= _SPLIT_MAX) & (ay >= _MIN_NORMAL) & (ay <= _SPLIT_MAX)
    zero = ((x == 0) & (ay <= _MAX)) | ((y == 0) & (ax <= _MAX))       # exact; e may be NaN on CUDA
    ok = (normal & (ar >= _PROD_MIN) & (ar <= _PROD_MAX)) | zero
    special = _nonfinite(x) | _nonfinite(y)
    sf = S.invalid(r != r, (x != x) | (y != y), S.snan64(x) | S.snan64(y))
    return _nan64(r), (np.uint8(0) if zero else _nx(e)) if ok else (sf if special else FALLBACK)


@nb.njit(inline="always", error_model="numpy")
def _fma_term(v):
    """v = 0 or 2^-900 <= |v| <= 2^1020 (False for NaN and infinities)."""
    a = abs(v)
    return (v == 0) | ((a >= _FMA_MIN) & (a <= _PROD_MAX))


@nb.njit(inline="always", error_model="numpy")
def err_fma(x, y, z):
    """(r, r2, r3): r = RN(x*y + z) by the hardware, x*y + z = r + r2 + r3 (ErrFma)."""
    r = fma_rn(x, y, z)
    u1 = mul_rn(x, y)
    u2 = prod_err64(x, y, u1)
    a1, a2 = two_sum(z, u2)
    b1, b2 = two_sum(u1, a1)
    g = (b1 - r) + b2
    r2 = g + a2                                                     # FastTwoSum(g, a2)
    return r, r2, a2 - (r2 - g)


@fast.kernel("fast64", "FP64", "TFMA", "f64")
def fp64_fma(x, y, z):
    """(binary64 result, flags) of x*y + z: the hardware fma, NX from ErrFma's exact error."""
    r, r2, r3 = err_fma(x, y, z)
    u1 = mul_rn(x, y)
    ax, ay = abs(x), abs(y)
    normal = (ax >= _MIN_NORMAL) & (ax <= _SPLIT_MAX) & (ay >= _MIN_NORMAL) & (ay <= _SPLIT_MAX)
    au = abs(u1)
    ok = normal & (au >= _FMA_MIN) & (au <= _PROD_MAX) & _fma_term(z) & _fma_term(r)
    zero = (((x == 0) & (ay <= _MAX)) | ((y == 0) & (ax <= _MAX))) & (abs(z) <= _MAX)
    special = _nonfinite(x) | _nonfinite(y) | _nonfinite(z)
    zero_inf = (math.isinf(x) & (y == 0)) | ((x == 0) & math.isinf(y))
    sf = S.invalid(r != r, (x != x) | (y != y) | (z != z), S.snan64(x) | S.snan64(y) | S.snan64(z) | zero_inf)
    return _nan64(r), (np.uint8(0) if zero else _nx(r2) | _nx(r3)) if ok | zero else (sf if special else FALLBACK)


@nb.njit(inline="always", error_model="numpy")
def _in_split_range(v):
    a = abs(v)
    return (a >= _MIN_NORMAL) & (a <= _SPLIT_MAX)


@fast.kernel("fast64", "FP64", "TDIV", "f64", fix=fix_div)
def fp64_div(x, y):
    """q = x / y (the hardware's correctly rounded quotient); exact iff q*y = x, i.e. iff
    x - p == e for TwoProduct q*y = p + e (x - p is exact by Sterbenz: p is within 2^-52 of x)."""
    q = x / y
    p = mul_rn(q, y)
    e = prod_err64(q, y, p)
    ap = abs(p)
    # q > 2^-1022 (strictly: at 2^-1022 itself v may be tiny) keeps UF away; finite q, no OF
    ok = _in_split_range(q) & (abs(q) > _MIN_NORMAL) & _in_split_range(y) & (ap >= _PROD_MIN) & (ap <= _PROD_MAX)
    zero = (x == 0) & (y != 0) & (abs(y) <= _MAX)                 # an exact zero of the xor sign
    special = _nonfinite(x) | _nonfinite(y) | (y == 0)
    sf = S.invalid(q != q, (x != x) | (y != y), S.snan64(x) | S.snan64(y)) | \
        S.divide_by_zero((y == 0) & (abs(x) <= _MAX) & (x != 0))
    return _nan64(q), (np.uint8(0) if zero else _nx((x - p) - e)) if ok | zero else (sf if special else FALLBACK)


@fast.kernel("fast64", "FP64", "TRECIP", "f64", fix=fix_recip)
def fp64_recip(y):
    return fp64_div(1.0, y)


@fast.kernel("fast64", "FP64", "TSQRT", "f64", fix=fix_sqrt)
def fp64_sqrt(x):
    """s = sqrt(x) correctly rounded by the hardware; exact iff s*s = x (TwoProduct p + e)."""
    s = math.sqrt(x)
    p = mul_rn(s, s)
    e = prod_err64(s, s, p)
    ok = (x >= _PROD_MIN) & (x <= _PROD_MAX) & (p >= _PROD_MIN) & (p <= _PROD_MAX)
    zero = x == 0                                                  # sqrt(-0) = -0
    inexact = (p != x) | (e != 0)
    special = _nonfinite(x) | (x < 0)
    sf = S.invalid(s != s, x != x, S.snan64(x))
    return _nan64(s), (np.uint8(NX) if inexact & ~zero else np.uint8(0)) if ok | zero else (sf if special else FALLBACK)


_MANT = np.uint64((1 << 52) - 1)
_HIDDEN = np.uint64(1 << 52)
_REM_STEP = 11                   # R < 2^53: R << 11 < 2^64
_REM_STEPS = 16                  # at most 16 integer divisions per element (ex - ey <= 176)


@nb.njit(inline="always", error_model="numpy")
def _sig_exp(v):
    """(X, e) with |v| = X 2^e, X in [2^52, 2^53), for a normal binary64 v."""
    u = fast.f64_bits(v)
    return (u & _MANT) | _HIDDEN, np.int64((u >> np.uint64(52)) & np.uint64(0x7FF)) - 1075


@nb.njit(inline="always", error_model="numpy")
def _pow2(e):
    return fast.bits_f64(np.uint64(e + 1023) << np.uint64(52))


@nb.njit(inline="always", error_model="numpy")
def fmod53(x, y):
    """(x - trunc(x/y)*y exactly, settled?) for normal (or zero) x and normal y; not settled
    when the exponents are more than 176 apart."""
    if x == 0.0:
        return x, True
    X, ex = _sig_exp(x)
    Y, ey = _sig_exp(y)
    k = ex - ey
    if k < 0:
        return x, True
    if k > _REM_STEP * _REM_STEPS:
        return x, False
    R = X % Y
    while k > 0 and R != 0:
        step = min(k, _REM_STEP)
        R = (R << np.uint64(step)) % Y
        k -= step
    if ey >= -1000:
        mag = np.float64(R) * _pow2(ey)
    else:
        mag = (np.float64(R) * _pow2(ey + 64)) * _pow2(-64)        # both exact: |r| < |y|, on y's grid
    return (-mag if x < 0 else mag), True


@nb.njit(inline="always", error_model="numpy")
def fix_rem(x, y):
    """floor modulo x mod y for the elements fp64_rem marks: a subnormal operand (its integer
    significand unnormalised, which the remainder steps take as they are) or operands more
    than 176 binades apart (more steps); divisors at or above 2^1022 stay marked."""
    ok = (abs(y) < _BIG) & (y != 0) & (abs(x) <= _MAX)
    ux = fast.f64_bits(x) & np.uint64(0x7FFFFFFFFFFFFFFF)
    uy = fast.f64_bits(y) & np.uint64(0x7FFFFFFFFFFFFFFF)
    Ex, Ey = np.int64(ux >> np.uint64(52)), np.int64(uy >> np.uint64(52))
    X = (ux & _MANT) | (_HIDDEN if Ex != 0 else np.uint64(0))
    Y = (uy & _MANT) | (_HIDDEN if Ey != 0 else np.uint64(0))
    Y = Y if Y != 0 else np.uint64(1)                                   # y = 0: not ok anyway
    ex, ey = max(Ex, 1) - 1075, max(Ey, 1) - 1075
    k = ex - ey
    r = x
    if ok and x != 0 and k >= 0:
        R = X % Y
        while k > 0 and R != 0:
            step = min(k, _REM_STEP)
            R = (R << np.uint64(step)) % Y
            k -= step
        mag = np.float64(R) * _pow2(ey) if ey >= -1000 else (np.float64(R) * _pow2(ey + 64)) * _pow2(-64)
        r = -mag if x < 0 else mag
    s, e = two_sum(r, y)
    if not ((r != 0) & ((r < 0) != (y < 0))):
        s = r if r != 0 else math.copysign(0.0, y)
        e = 0.0
    return s, _nx(e) if ok else FALLBACK


@fast.kernel("fast64", "FP64", "TREM", "f64", fix=fix_rem)
def fp64_rem(x, y):
    """(binary64 result, flags) of floor modulo x mod y."""
    ax, ay = abs(x), abs(y)
    ok = ((x == 0) | ((ax >= _MIN_NORMAL) & (ax <= _MAX))) & (ay >= _MIN_NORMAL) & (ay < _BIG)
    r, done = fmod53(x if ok else 0.0, y if ok else 1.0)
    s, e = two_sum(r, y)
    if not ((r != 0) & ((r < 0) != (y < 0))):
        s = r if r != 0 else math.copysign(0.0, y)
        e = 0.0
    return s, _nx(e) if ok & done else FALLBACK


# ---------------------------------------------------------------- exp: constants
# transcendental._constants() (MPFR at 400 bits), written out so that the compiled code needs
# no gmpy2 and reads them as constants (tests/kernels/test_fast64.py recomputes every one):
# T[j] = 2^(j/64) = fast.EXP2_64[j] + EXP2_64_LO[j] (fast.EXP2_64_DD); 1/k! = INV_FACT[k] (hi, lo), k = 0..11;
# ln2/64 = C1 + C2 + C3 and 64/ln2 are fast.py's (C1, C2 of 36 bits: k*C1, k*C2 exact for
# |k| < 2^17).
EXP2_64_LO = fast.EXP2_64_LO
INV_FACT = np.array([(float.fromhex(a), float.fromhex(b)) for a, b in (
    ("0x1.0000000000000p+0", "0x0.0p+0"), ("0x1.0000000000000p+0", "0x0.0p+0"),
    ("0x1.0000000000000p-1", "0x0.0p+0"), ("0x1.5555555555555p-3", "0x1.5555555555555p-57"),
    ("0x1.5555555555555p-5", "0x1.5555555555555p-59"), ("0x1.1111111111111p-7", "0x1.1111111111111p-63"),
    ("0x1.6c16c16c16c17p-10", "-0x1.f49f49f49f49fp-65"), ("0x1.a01a01a01a01ap-13", "0x1.a01a01a01a01ap-73"),
    ("0x1.a01a01a01a01ap-16", "0x1.a01a01a01a01ap-76"), ("0x1.71de3a556c734p-19", "-0x1.c154f8ddc6c00p-73"),
    ("0x1.27e4fb7789f5cp-22", "0x1.cbbc05b4fa99ap-76"), ("0x1.ae64567f544e4p-26", "-0x1.c062e06d1f209p-80"),
)])
_C1, _C2, _C3, _INV_LN2_64 = fast.C1, fast.C2, fast.C3, fast.INV_LN2_64
_EXP_MIN, _EXP_MAX = -708.0, 709.0          # exp(x) normal and finite: 3.3e-308 .. 8.2e307
_EXP_TINY = 2.0 ** -60                       # |x| below: exp(x) is 1 or its neighbour; marked


@nb.njit(inline="always", error_model="numpy")
def _fast_two_sum(a, b):
    s = add_rn(a, b)
    return s, b - (s - a)


@nb.njit(inline="always", error_model="numpy")
def _dd_add(ah, al, bh, bl):
    s, e = two_sum(ah, bh)
    return _fast_two_sum(s, e + (al + bl))


@nb.njit(inline="always", error_model="numpy")
def _dd_mul(ah, al, bh, bl):
    p = mul_rn(ah, bh)
    return _fast_two_sum(p, prod_err64(ah, bh, p) + (mul_rn(ah, bl) + mul_rn(al, bh)))


@nb.njit(inline="always", error_model="numpy")
def exp_parts(x):
    """(h, l, scale): exp(x) = (h + l) 2^scale within 2^-98 relative, h = RN(h + l), for
    2^-60 <= |x| <= 709: transcendental.exp_dd's algorithm and constants, compiled (the same
    operations, so its error analysis holds; TwoProduct by fma on the CPU, Dekker on CUDA)."""
    kf = (mul_rn(x, _INV_LN2_64) + 6755399441055744.0) - 6755399441055744.0     # rint
    rh, rl = _reduce(x, kf)
    eh, el = _expm1_reduced(rh, rl)
    k = np.int64(kf)
    j = k & 63
    oh, ol = _dd_add(1.0, 0.0, eh, el)
    h, l = _dd_mul(fast.EXP2_64[j], EXP2_64_LO[j], oh, ol)
    return h, l, k >> 6


@nb.njit(inline="always", error_model="numpy")
def _reduce(x, kf):
    """x - kf ln2/64 as a double-double (exact to ~2^-115 absolute for |kf| < 2^17)."""
    t1 = x - mul_rn(kf, _C1)                                       # k*C1 exact, Sterbenz
    rh, rl = two_sum(t1, -mul_rn(kf, _C2))
    return _fast_two_sum(rh, rl - mul_rn(kf, _C3))


@nb.njit(inline="always", error_model="numpy")
def _expm1_reduced(rh, rl):
    """expm1(r) for |r| <= ln2/128 (+ tiny) as a double-double, relative error < 2^-100
    (transcendental._expm1_reduced, compiled)."""
    t = INV_FACT[11, 0]
    t = INV_FACT[10, 0] + mul_rn(rh, t)
    t = INV_FACT[9, 0] + mul_rn(rh, t)
    t = INV_FACT[8, 0] + mul_rn(rh, t)
    t = INV_FACT[7, 0] + mul_rn(rh, t)
    p = mul_rn(rh, t)
    sh, sl = _dd_add(INV_FACT[6, 0], INV_FACT[6, 1], p, prod_err64(rh, t, p))
    for j in range(5, 0, -1):
        sh, sl = _dd_mul(rh, rl, sh, sl)
        sh, sl = _dd_add(INV_FACT[j, 0], INV_FACT[j, 1], sh, sl)
    return _dd_mul(rh, rl, sh, sl)


_LN2_1 = float.fromhex("0x1.62e42fefa3800p-1")      # ln2 in 42/42/53-bit parts: e*L1, e*L2 exact
_LN2_2 = float.fromhex("0x1.ef35793c76000p-45")
_LN2_3 = float.fromhex("0x1.cc01f97b57a08p-87")
_RSQRT2 = 0.7071067811865476
_LOG_EPS_MAX = 2.0 ** -93                            # rounds_to_r's margin


@nb.njit(inline="always", error_model="numpy")
def log_parts(x):
    """(h, l, eps): log(x) = h + l within eps |h| (a per-element bound), h = RN(h + l), for a
    positive finite x != 1: transcendental.log_dd compiled, its y0 = log(m) from fastfn's
    own binary64 log (both targets compute the same y0; the Newton step and the bound do not
    depend on y0's accuracy)."""
    sub = x < _MIN_NORMAL
    xs = mul_rn(x, 2.0 ** 54) if sub else x
    u = fast.f64_bits(xs)
    e = np.int64((u >> np.uint64(52)) & np.uint64(0x7FF)) - 1022                  # x = m 2^e, m in [1/2, 1)
    m = fast.bits_f64((u & _MANT) | np.uint64(1022 << 52))
    if m < _RSQRT2:
        m = mul_rn(m, 2.0)
        e -= 1
    e = e - 54 if sub else e
    y0 = fastfn.log_approx(m) if m != 1.0 else 0.0
    kf = (mul_rn(y0, _INV_LN2_64) + 6755399441055744.0) - 6755399441055744.0      # |k| <= 33
    rh, rl = _reduce(y0, kf)
    eh, el = _expm1_reduced(rh, rl)
    k = np.int64(kf)
    sc = _pow2(k >> 6)                                                            # 1 or 1/2
    th, tl = mul_rn(fast.EXP2_64[k & 63], sc), mul_rn(EXP2_64_LO[k & 63], sc)    # 2^(k/64), exact
    ph, pl = _dd_mul(th, tl, eh, el)
    gh, gl = _dd_add(th - 1.0, tl, ph, pl)                 # expm1(y0) = (T - 1) + T expm1(r)
    dh, dl = _dd_add(m - 1.0, 0.0, -gh, -gl)               # m - e^y0
    c = (dh + dl) / (1.0 + gh)                             # Newton correction m e^-y0 - 1
    y1h, y1l = two_sum(y0, c)
    ef = np.float64(e)
    a1, a2 = two_sum(mul_rn(ef, _LN2_1), mul_rn(ef, _LN2_2))
    h, l = _dd_add(a1, a2 + mul_rn(ef, _LN2_3), y1h, y1l)
    err = mul_rn(c, c) + mul_rn(abs(c), 2.0 ** -50) + mul_rn(abs(y0) + abs(m - 1.0), 2.0 ** -97)
    return h, l, err / abs(h) + 2.0 ** -98


@fast.kernel("fast64", "FP64", "TLOG", "f64")
def fp64_log(x):
    """(binary64 result, flags) of log(x): settled when the per-element bound is at most
    2^-93 and no midpoint lies within it; NX (log x is transcendental for x != 1)."""
    ok = (x > 0) & (x <= _MAX) & (x != 1.0)
    h, l, eps = log_parts(x if ok else 2.0)
    return h, np.uint8(NX) if ok & (eps <= _LOG_EPS_MAX) & rounds_to_r(h, l) else FALLBACK


@fast.kernel("fast64", "FP64", "TEXP", "f64")
def fp64_exp(x):
    """(binary64 result, flags) of exp(x): settled for 2^-60 <= |x| <= 709 and x >= -708 when
    no midpoint lies within 2^-93 of (h + l) 2^scale; NX (exp(x) is transcendental for x != 0)."""
    ax = abs(x)
    ok = (ax >= _EXP_TINY) & (x <= _EXP_MAX) & (x >= _EXP_MIN)
    h, l, scale = exp_parts(x if ok else 1.0)
    res = h * _pow2(scale)                                          # exact: a normal result
    # 0 < |x| < 2^-60: exp(x) lies within 2^-59 of 1, closer than either midpoint around 1
    # (1 + 2^-53, 1 - 2^-54): it rounds to 1, inexactly (zero and the specials: specials.py)
    tiny = (ax < _EXP_TINY) & (x != 0)
    return (1.0 if tiny else res), np.uint8(NX) if tiny | (ok & rounds_to_r(h, l)) else FALLBACK


_SUB_SCALE = 2.0 ** 108          # = 4^54: subnormal radicands become normal, exactly
_RSQRT_MARGIN = 2.0 ** -40       # v - (r + e) < 2^-100 |r| = 2^-48 ulp(r) at most


@nb.njit(inline="always", error_model="numpy")
def rsqrt_parts(m):
    """(r, e) with r + e within 2^-100.9 relative of 1/sqrt(m), r = RN(r + e), m in [1, 4)."""
    y0 = 1.0 / math.sqrt(m)
    ph = mul_rn(y0, y0)
    pl = prod_err64(y0, y0, ph)
    ah = mul_rn(m, ph)
    al = prod_err64(m, ph, ah)
    c = ((1.0 - ah) - al) - mul_rn(m, pl)
    corr = mul_rn(y0, c) * 0.5
    return two_sum(y0, corr)


@nb.njit(inline="always", error_model="numpy")
def rounds_to_r(r, e):
    """Whether every value within 2^-93 |r| (2^-41 ulp(r)) of r + e rounds to r (e = the exact
    rest of r's TwoSum, r normal): |e| in units of ulp(r) below 1/2 - 2^-40, below 1/4 - 2^-40 when r
    is a power of two and e negative (the midpoint below is half as far)."""
    u = fast.f64_bits(r)
    E = np.int64((u >> np.uint64(52)) & np.uint64(0x7FF))
    w = abs(e) * _pow2(1075 - E - 23) * 2.0 ** 23        # |e| / ulp(r), exact (two powers of two)
    lim = 0.25 if ((u & _MANT) == 0) & ((e < 0) != (r < 0)) else 0.5   # e toward zero at 2^k
    return w < lim - _RSQRT_MARGIN


@fast.kernel("fast64", "FP64", "TRSQRT", "f64")
def fp64_rsqrt(x):
    """(binary64 result, flags) of 1/sqrt(x)."""
    ok = (x > 0) & (x <= _MAX)
    xs = x if ok else 1.0
    sub = xs < _MIN_NORMAL
    xs = xs * _SUB_SCALE if sub else xs
    u = fast.f64_bits(xs)
    E = np.int64((u >> np.uint64(52)) & np.uint64(0x7FF)) - 1023
    k = E >> 1                                                        # floor(E / 2)
    m = fast.bits_f64((u & _MANT) | (np.uint64(E - 2 * k + 1023) << np.uint64(52)))   # [1, 4)
    r, e = rsqrt_parts(m)
    k = k - 54 if sub else k
    res = r * _pow2(-k)                                               # exact: normal result
    exact = m == 1.0
    return res, (np.uint8(0) if exact else np.uint8(NX)) if ok & rounds_to_r(r, e) else FALLBACK


_EXP64 = np.uint64(0x7FF0000000000000)
_MANT64 = np.uint64(0x000FFFFFFFFFFFFF)


def _subnormal(u):
    return ((u & _EXP64) == 0) & ((u & _MANT64) != 0)


def mark_for_ftz(bits, flags, operands):
    """Profile ftz: mark (flags 0xFF) every element with a subnormal operand or a subnormal
    result.  The kernels settle only elements whose operands and result are normal or zero
    apart from subnormal operands and exact subnormal sums/remainders (module doc), and there
    profile ftz reads and rounds exactly as ieee does (a subnormal input reads as zero, a
    result below the min normal after rounding flushes: neither occurs), so the elements left
    unmarked already hold ftz's bits and flags.  Array code: NumPy or CuPy arrays alike."""
    mark = _subnormal(bits)
    for x in operands:
        mark |= _subnormal(x)
    flags[mark] = FALLBACK
