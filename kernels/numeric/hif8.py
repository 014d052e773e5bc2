"""HiFloat8 (HiF8): Huawei's tapered-precision 8-bit format, as plain tables.

Definition (arXiv 2409.16626, "Ascend HiFloat8 Format for Deep Learning"; bit layout as in the
public CANN codec `ge::HiF8` and the `en_dtypes.hifloat8` codec; docs/numerics.md restates it):

    code = S | 7-bit rest r.   The prefix-coded Dot field at the top of r selects the layout:
      r = 11 EEEE M     D=4  exponent field 4 bits, mantissa 1 bit,  |E| in 8..15
      r = 10 EEE MM     D=3  exponent field 3 bits, mantissa 2 bits, |E| in 4..7
      r = 01 EE MMM     D=2  exponent field 2 bits, mantissa 3 bits, |E| in 2..3
      r = 001 E MMM     D=1  exponent field 1 bit,  mantissa 3 bits, |E| = 1
      r = 0001 MMM      D=0  no exponent field (E = 0), mantissa 3 bits
      r = 0000 MMM      denormal (DML): value 2^(M-23) for M = 1..7; M = 0 is zero (S=0) / NaN (S=1)
    A D-bit exponent field is sign-magnitude: its top bit is the exponent sign, the low D-1 bits
    are the magnitude without its leading one (implicit), so |E| = 2^(D-1) + low bits.
    Normal value = (-1)^S * 2^E * (1 + M / 2^w), w = mantissa width of the layout.
    Specials: 0x00 is the only zero, 0x80 the only NaN, 0x6F / 0xEF (E = +15, M = 1) are +/-inf.
    Max finite 0x6E = 2^15; min normal 0x7E = 2^-15; min denormal 0x01 = 2^-22.

Everything here is built once at import with vectorised NumPy over the 256 codes and the 38
binades; the rounding core (rounding.py) and the codec (formats.py) read these arrays.
"""
from __future__ import annotations

import numpy as np

from .classes import FINITE, INF, QNAN, ZERO

EMIN_DENORMAL = -22          # smallest binade (0x01 = 2^-22)
EMIN_NORMAL = -15            # min normal 2^-15
EMAX = 15                    # max finite 2^15
NAN_CODE = 0x80
INF_CODE = 0x6F              # | 0x80 for -inf
MAX_CODE = 0x6E              # 2^15
ZERO_CODE = 0x00
DENORMAL_BIAS = 23           # denormal code M encodes 2^(M - 23)
P_AT_EMIN_NORMAL = 2         # precision of the min-normal binade (tininess is judged there)

# Per binade e in [EMIN_DENORMAL, EMAX]: mantissa width w(e) and the code of 2^e with a zero
# mantissa field (Dot prefix + sign-magnitude exponent field, shifted over the mantissa).
BINADES = np.arange(EMIN_DENORMAL, EMAX + 1, dtype=np.int64)
_mag = np.abs(BINADES)
_neg = (BINADES < 0).astype(np.int64)
WIDTH = np.select([BINADES <= -16, _mag <= 3, _mag <= 7], [0, 3, 2], 1).astype(np.int64)
BASE_CODE = np.select(
    [BINADES <= -16, _mag == 0, _mag == 1, _mag <= 3, _mag <= 7],
    [BINADES + DENORMAL_BIAS,
     0x08 + 0 * _mag,
     0x10 | (_neg << 3),
     0x20 | (_neg << 4) | ((_mag - 2) << 3),
     0x40 | (_neg << 4) | ((_mag - 4) << 2)],
    0x60 | (_neg << 4) | ((_mag - 8) << 1),
).astype(np.int64)
del _mag, _neg


def _decode_fields():
    """Per code 0..255: (is_nan, is_inf, is_zero, sign, E, w, mantissa field) from the definition."""
    code = np.arange(256, dtype=np.int64)
    sign = code >> 7
    r = code & 0x7F
    d4, d3, d2 = (r >> 5) == 3, (r >> 5) == 2, (r >> 5) == 1
    d1 = (r >> 4) == 1
    dml = (r >> 3) == 0
    # exponent field (sign bit, low magnitude bits) and mantissa field per layout
    ebits = np.select([d4, d3, d2, d1], [(r >> 1) & 0xF, (r >> 2) & 0x7, (r >> 3) & 0x3, (r >> 3) & 0x1], 0)
    dlen = np.select([d4, d3, d2, d1], [4, 3, 2, 1], 0)
    w = np.select([d4, d3], [1, 2], 3)
    w = np.where(dml, 0, w)
    mant = r & ((1 << w) - 1)
    half = np.where(dlen > 0, 1 << np.maximum(dlen - 1, 0), 0)
    emag = np.where(dlen > 0, half | (ebits & (half - 1)), 0)
    e = np.where((ebits & half) != 0, -emag, emag)
    e = np.where(dml, (r & 7) - DENORMAL_BIAS, e)
    is_zero = code == ZERO_CODE
    is_nan = code == NAN_CODE
    is_inf = (r == INF_CODE)
    return is_nan, is_inf, is_zero, sign, e, w, mant


def code_tables():
    """(cls, sign, exp, sig) per code, in formats.unpack's convention (value = sig * 2^exp)."""
    is_nan, is_inf, is_zero, sign, e, w, mant = _decode_fields()
    cls = np.select([is_zero, is_nan, is_inf], [ZERO, QNAN, INF], FINITE).astype(np.int8)
    sig = np.where(is_zero | is_nan | is_inf, 0, (1 << w) + mant).astype(np.uint64)
    exp = np.where(is_zero | is_nan | is_inf, 0, e - w).astype(np.int64)
    sign = np.where(is_nan, 0, sign)          # the one NaN carries no sign
    return cls, sign.astype(np.uint8), exp, sig
