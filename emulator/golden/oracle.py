"""`tile-emu verify DATASET --oracle`: check the stored expected results against references
that share no code with the emulator's kernels (docs/golden-format.md, "Independent check").

- Berkeley SoftFloat (softfloatpy): FP16/FP32/FP64 TADD, TSUB, TMUL, TDIV, TSQRT, TFMA, and
  TCVT from FP16/FP32/FP64/BF16/E5M2 and from integers into FP16/FP32/FP64/BF16 (where one
  rounding suffices, softfloat_converts), in the five modes SoftFloat has (RHB is RNA in
  profile ieee 1.0, docs/numerics.md): results and flags, so the per-PE status is checked too.
- MPFR (gmpy2), one correct rounding at the format's precision with its subnormals:
  TEXP, TLOG, TRSQRT, TRECIP on every floating DataType, and TADD, TSUB, TMUL, TDIV, TSQRT,
  TFMA on BF16, TF32, HF32, E4M3, E5M2 (values only).  Encodings are decoded by NumPy and
  ml_dtypes, not by the emulator's format codecs.
- Exact integer arithmetic (Python integers): every integer operation of the element-wise
  schemas, TCMP, TSEL on every DataType, TCVT integer -> integer and floating -> integer.

What the seed states for special operands (Decisions 073-077: exp(-inf) = +0, log(+-0) = -inf,
rsqrt(+-0) = +-inf, E4M3 has no infinity so an infinite result is its NaN 0x7F) is written here
once more, from the seed, and NaN results are the profile's canonical NaN.  Only the valid
rectangle of each committed destination is checked (padding and rejections are the replay's
job, `tile-emu verify`).  SoftFloat and MPFR are called once per value: this is the
independent check, never the generation path, which stays vectorised in the kernels.

The check itself (`judge`: operands -> reference -> comparison -> report lines) works on
`Lanes`, whatever rows they came from: `_check_table` builds them from single-block rows,
emulator/golden/streams_oracle.py from stream datasets' states and commit records.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import ml_dtypes
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from isa import encoding, instructions as I
from isa.datatypes import Kind, datatype
from isa.errors import DecodeError
from isa.fields import CMODES
from kernels.numeric.profiles import DEFAULT_PROFILE

from . import store
from .dataset import GoldenError, open_dataset
from .hexport import _gather
from .replay import require_well_formed
from .rows import tiles_of

# kernels/numeric/flags.py bits
NV, DZ, OF, UF, NX = 1, 2, 4, 8, 16


# ---------------------------------------------------------------------------- formats

@dataclass(frozen=True)
class Fmt:
    """A floating format as IEEE 754 describes it: precision p (hidden bit included), the
    exponent range of normal numbers, whether it encodes infinity, and the NumPy / ml_dtypes
    type that decodes its container (TF32/HF32: float32 with the low bits zero)."""
    p: int
    emin: int
    emax: int
    inf: bool
    decode_as: object
    container: int
    low_zero_bits: int = 0
    max_finite: float = 0.0


FORMATS = {
    "FP64": Fmt(53, -1022, 1023, True, np.float64, 64, max_finite=float(np.finfo(np.float64).max)),
    "FP32": Fmt(24, -126, 127, True, np.float32, 32, max_finite=float(np.finfo(np.float32).max)),
    "TF32": Fmt(11, -126, 127, True, np.float32, 32, 13, (2 - 2.0 ** -10) * 2.0 ** 127),
    "HF32": Fmt(12, -126, 127, True, np.float32, 32, 12, (2 - 2.0 ** -11) * 2.0 ** 127),
    "FP16": Fmt(11, -14, 15, True, np.float16, 16, max_finite=65504.0),
    "BF16": Fmt(8, -126, 127, True, ml_dtypes.bfloat16, 16, max_finite=float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)),
    "E4M3": Fmt(4, -6, 8, False, ml_dtypes.float8_e4m3fn, 8, max_finite=float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).max)),
    "E5M2": Fmt(3, -14, 15, True, ml_dtypes.float8_e5m2, 8, max_finite=float(ml_dtypes.finfo(ml_dtypes.float8_e5m2).max)),
}
SOFTFLOAT = {"FP16": "f16", "FP32": "f32", "FP64": "f64"}
# floating TCVT sources whose NaNs have IEEE fields (sign, exponent, quiet bit, payload)
SF_FLOAT_SOURCES = ("FP16", "FP32", "FP64", "BF16", "E5M2")
SF_INTS = {"S32": "i32", "S64": "i64", "U32": "ui32", "U64": "ui64"}
SF_METHOD = {"TADD": "add", "TSUB": "sub", "TMUL": "mul", "TDIV": "div", "TSQRT": "sqrt", "TFMA": "mul_add"}
SF_MODES = {"RNE": "NEAR_EVEN", "DEFAULT": "NEAR_EVEN", "RTZ": "MIN_MAG", "RTM": "MIN", "RTP": "MAX",
            "RNA": "NEAR_MAX_MAG", "RHB": "NEAR_MAX_MAG"}
MPFR_BASIC = {"TADD", "TSUB", "TMUL", "TDIV", "TSQRT", "TFMA"}
MPFR_FUNCTIONS = {"TEXP", "TLOG", "TRSQRT", "TRECIP"}
INT_OPS = {"TADD", "TSUB", "TMUL", "TFMA", "TAND", "TOR", "TXOR", "TNOT", "TNEG", "TABS", "TRELU", "TSHL",
           "TSHR", "TMAX", "TMIN", "TDIV", "TREM"}
INT_ROUNDING = ("RNE", "RTZ", "RTM", "RTP", "RNA", "RTO", "RHB", "DEFAULT")


def float_values(bits: np.ndarray, name: str) -> np.ndarray:
    """float64 values of raw encodings, by NumPy / ml_dtypes (every value is exact in float64)."""
    f = FORMATS[name]
    raw = np.asarray(bits, np.uint64).astype(f"u{f.container // 8}")
    with np.errstate(invalid="ignore"):             # NaN encodings widen to NaN, quietly
        return raw.view(f.decode_as).astype(np.float64)


def canonical_nan(name: str) -> int:
    """The profile's canonical quiet NaN (docs/numerics.md: a profile choice, read from its table)."""
    from kernels.numeric import info
    return int(info(name).nan_bits)


# ---------------------------------------------------------------------------- SoftFloat

def _sf():
    try:
        import softfloatpy
    except ImportError:
        raise GoldenError("verify --oracle needs softfloatpy (pip install softfloatpy, or the test extra)") from None
    return softfloatpy


def _sf_flags(sf) -> int:
    raised = sf.get_exception_flags()
    out = 0
    for name, bit in (("INEXACT", NX), ("UNDERFLOW", UF), ("OVERFLOW", OF), ("INFINITE", DZ), ("INVALID", NV)):
        if raised & int(getattr(sf.ExceptionFlag, name)):
            out |= bit
    return out


def _sf_value(sf, name: str, bits: int):
    cls = {"FP16": sf.Float16, "FP32": sf.Float32, "FP64": sf.Float64, "BF16": sf.BFloat16}[name]
    return cls.from_bytes(int(bits).to_bytes(FORMATS[name].container // 8, "big"))


def softfloat_op(op: str, dtype: str, operands: list[np.ndarray]):
    """(bits, flags) of an FP16/FP32/FP64 arithmetic op, SoftFloat, RNE, tininess after rounding;
    a NaN result is the profile's canonical NaN."""
    sf = _sf()
    sf.set_tininess_mode(sf.TininessMode.AFTER_ROUNDING)
    sf.set_rounding_mode(sf.RoundingMode.NEAR_EVEN)
    fn = getattr(sf, f"{SOFTFLOAT[dtype]}_{SF_METHOD[op]}")
    is_nan = getattr(sf, f"{SOFTFLOAT[dtype]}_is_nan")
    nan = canonical_nan(dtype)
    bits, flags = [], []
    for vals in zip(*(x.tolist() for x in operands)):
        sf.set_exception_flags(0)
        r = fn(*(_sf_value(sf, dtype, v) for v in vals))
        flags.append(_sf_flags(sf))
        bits.append(nan if is_nan(r) else int.from_bytes(r.to_bytes(), "big"))
    return np.array(bits, np.uint64), np.array(flags, np.uint8)


def _ieee_fields(name: str) -> tuple[int, int]:
    """(exponent bits, trailing significand bits) of an IEEE-family format."""
    f = FORMATS[name]
    t = f.p - 1
    return f.container - 1 - t, t


def _nan_convert(bits: int, src: str, dst: str) -> tuple[int, int]:
    """TCVT of a NaN between IEEE-family formats (docs/numerics.md, "NaN propagation"): sign
    kept, quiet, the payload below the quiet bit left-aligned (cut or zero-filled); NV when the
    source is signalling."""
    es, ts = _ieee_fields(src)
    ed, td = _ieee_fields(dst)
    sign = bits >> (FORMATS[src].container - 1) & 1
    frac = bits & ((1 << ts) - 1)
    quiet = frac >> (ts - 1) & 1
    payload = frac & ((1 << (ts - 1)) - 1)
    moved = payload << (td - ts) if td >= ts else payload >> (ts - td)
    out = (sign << (FORMATS[dst].container - 1)) | (((1 << ed) - 1) << td) | (1 << (td - 1)) | moved
    return out, 0 if quiet else NV


def _max_bits(name: str, sign: int) -> int:
    e, t = _ieee_fields(name)
    return (sign << (FORMATS[name].container - 1)) | (((1 << e) - 2) << t) | ((1 << t) - 1)


def softfloat_convert(src: str, dst: str, rmode: str, sat: bool, operands: list[np.ndarray]):
    """(bits, flags) of TCVT into FP16/FP32/FP64/BF16 by SoftFloat, rounding once: a floating
    source is first widened to FP64 (exact: every SF_FLOAT_SOURCES value is a binary64 value;
    into BF16 through FP32, exact for every source but FP64), an integer source is converted
    from SoftFloat's 32- or 64-bit integer (into BF16 through FP32, exact for 16-bit integers).
    A NaN source follows the profile's propagation rule; Sat=1 clamps a finite result that
    overflows to +-max (docs/numerics.md, overflow table)."""
    sf = _sf()
    sf.set_tininess_mode(sf.TininessMode.AFTER_ROUNDING)
    sf.set_rounding_mode(getattr(sf.RoundingMode, SF_MODES[rmode]))
    d = datatype(src)
    if d.is_int:
        wide = SF_INTS[_wide_int(src)]
        wrap = {"i64": sf.Int64, "ui64": sf.UInt64, "i32": sf.Int32, "ui32": sf.UInt32}[wide]
        values = int_values(operands[0], src).tolist()
        if dst == "BF16":
            to_f32 = getattr(sf, f"{wide}_to_f32")
            convert = lambda k, v: sf.f32_to_bf16(to_f32(wrap.from_int(int(values[k]))))   # noqa: E731
        else:
            fn = getattr(sf, f"{wide}_to_{SOFTFLOAT[dst]}")
            convert = lambda k, v: fn(wrap.from_int(int(values[k])))   # noqa: E731
    else:
        xs = float_values(operands[0], src)

        def convert(k, v):
            a = sf.Float64.from_bytes(np.array([xs[k]], ">f8").tobytes())
            if dst == "FP64":
                return a
            if dst == "BF16":
                return sf.f32_to_bf16(sf.f64_to_f32(a))
            return getattr(sf, f"f64_to_{SOFTFLOAT[dst]}")(a)
    bits, flags = [], []
    for k, v in enumerate(operands[0].tolist()):
        sf.set_exception_flags(0)
        if not d.is_int and np.isnan(xs[k]):
            b, f = _nan_convert(v, src, dst)
        else:
            r = convert(k, v)
            f = _sf_flags(sf)
            b = int.from_bytes(r.to_bytes(), "big")
            if sat and f & OF:
                b = _max_bits(dst, b >> (FORMATS[dst].container - 1))
        bits.append(b)
        flags.append(f)
    return np.array(bits, np.uint64), np.array(flags, np.uint8)


def softfloat_converts(src: str, dst: str) -> bool:
    """Whether softfloat_convert covers the pair (one rounding, a known NaN rule)."""
    s = datatype(src)
    if s.is_int:
        return dst in SOFTFLOAT or (dst == "BF16" and s.bits <= 16)
    return src in SF_FLOAT_SOURCES and (dst in SOFTFLOAT or (dst == "BF16" and src != "FP64"))


def _wide_int(name: str) -> str:
    """The SoftFloat integer type that holds every value of an integer DataType exactly."""
    d = datatype(name)
    if d.kind is Kind.SINT:
        return "S64" if d.bits > 32 else "S32"
    return "U64" if d.bits > 32 else "U32"


# ---------------------------------------------------------------------------- MPFR

def _gmpy2():
    try:
        import gmpy2
    except ImportError:
        raise GoldenError("verify --oracle needs gmpy2 (pip install gmpy2)") from None
    return gmpy2


def mpfr_values(op: str, dtype: str, operands: list[np.ndarray]) -> np.ndarray:
    """float64 values of the correctly rounded (RNE) results, from MPFR at the format's
    precision with its subnormals and an unbounded exponent; overflow (|r| > max finite) gives
    infinity, or NaN in E4M3, which has none."""
    gmpy2 = _gmpy2()
    f = FORMATS[dtype]
    vals = [float_values(x, dtype) for x in operands]
    fn = {"TADD": lambda a, b: a + b, "TSUB": lambda a, b: a - b, "TMUL": lambda a, b: a * b,
          "TDIV": lambda a, b: a / b, "TSQRT": gmpy2.sqrt, "TFMA": gmpy2.fma, "TEXP": gmpy2.exp,
          "TLOG": gmpy2.log, "TRECIP": lambda a: 1 / a, "TRSQRT": _rsqrt(gmpy2)}[op]
    out = np.empty(len(vals[0]), np.float64)
    with gmpy2.context(precision=f.p, emin=f.emin - f.p + 2, emax=1 << 24, subnormalize=True,
                       round=gmpy2.RoundToNearest, trap_divzero=False, trap_invalid=False):
        for i, xs in enumerate(zip(*(v.tolist() for v in vals))):
            out[i] = float(fn(*(gmpy2.mpfr(x) for x in xs)))
    big = np.abs(out) > f.max_finite
    out[big] = np.copysign(np.inf, out[big]) if f.inf else np.nan
    return out


def _rsqrt(gmpy2):
    def rsqrt(a):
        if a == 0:                 # Decision 077: +-0 -> +-infinity (MPFR's rec_sqrt gives +inf for -0)
            return gmpy2.copy_sign(gmpy2.inf(), a)
        return gmpy2.rec_sqrt(a)
    return rsqrt


# ---------------------------------------------------------------------------- exact integers

def int_values(bits: np.ndarray, name: str) -> np.ndarray:
    """Python-integer values (object array) of integer encodings: two's complement or unsigned."""
    d = datatype(name)
    u = np.asarray(bits, np.uint64).astype(object) & ((1 << d.bits) - 1)
    if d.kind is Kind.SINT:
        u = np.where(u >= 1 << (d.bits - 1), u - (1 << d.bits), u)
    return u


def _encode_int(values, name: str) -> np.ndarray:
    return (np.asarray(values, object) & ((1 << datatype(name).bits) - 1)).astype(np.uint64)


def _tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def integer_op(op: str, dtype: str, operands: list[np.ndarray]):
    """(bits, flags) of an integer element-wise op: the seed's definitions on exact integers,
    the result modulo 2^W (Decisions 056-072); no flags."""
    d = datatype(dtype)
    w = d.bits
    raw = [np.asarray(x, np.uint64).astype(object) for x in operands]
    v = [int_values(x, dtype) for x in operands]
    a = v[0]
    count = lambda: raw[1] & (w - 1)             # noqa: E731  low log2(W) bits (Decisions 065/066)
    r = {
        "TADD": lambda: a + v[1], "TSUB": lambda: a - v[1], "TMUL": lambda: a * v[1],
        "TFMA": lambda: a * v[1] + v[2],
        "TAND": lambda: raw[0] & raw[1], "TOR": lambda: raw[0] | raw[1], "TXOR": lambda: raw[0] ^ raw[1],
        "TNOT": lambda: ~a, "TNEG": lambda: -a,
        "TABS": lambda: np.abs(a) if d.signed else a,
        "TRELU": lambda: np.maximum(a, 0),
        "TSHL": lambda: raw[0] << count(),
        "TSHR": lambda: np.array([x >> int(c) for x, c in zip(a.tolist(), count().tolist())], object),
        "TMAX": lambda: np.maximum(a, v[1]), "TMIN": lambda: np.minimum(a, v[1]),
        "TDIV": lambda: np.array([_tdiv(x, y) for x, y in zip(a.tolist(), v[1].tolist())], object),
        "TREM": lambda: np.array([x % y for x, y in zip(a.tolist(), v[1].tolist())], object),
    }[op]()
    return _encode_int(r, dtype), np.zeros(len(a), np.uint8)


def compare_op(dtype: str, cmode: int, operands: list[np.ndarray]):
    """TCMP on integers: one predicate bit per element in numeric order (Decision 069)."""
    a, b = (int_values(x, dtype) for x in operands)
    name = CMODES[cmode]
    r = {"EQ": a == b, "NE": a != b, "LT": a < b, "GT": a > b, "LE": a <= b, "GE": a >= b}[name]
    return np.asarray(r, bool).astype(np.uint64), np.zeros(len(a), np.uint8)


def select_op(operands: list[np.ndarray]):
    """TSEL: the true source's encoding where the mask bit is 1, the false source's where 0."""
    m, t, f = operands
    return np.where(m.astype(bool), t, f).astype(np.uint64), np.zeros(len(m), np.uint8)


def int_convert(src: str, dst: str, sat: bool, operands: list[np.ndarray]):
    """TCVT integer -> integer: modulo the destination width, or with Sat=1 clamped to its
    range with NV (docs/numerics.md, conversion table)."""
    v = int_values(operands[0], src)
    d = datatype(dst)
    lo, hi = (-(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1) if d.signed else (0, (1 << d.bits) - 1)
    if not sat:
        return _encode_int(v, dst), np.zeros(len(v), np.uint8)
    clamped = np.minimum(np.maximum(v, lo), hi)
    return _encode_int(clamped, dst), np.where(clamped != v, NV, 0).astype(np.uint8)


def _round_int(x: Fraction, mode: str) -> int:
    """Round an exact value to an integer (RMode names; DEFAULT is RTZ for float -> integer)."""
    floor = x.numerator // x.denominator
    frac = x - floor
    if frac == 0:
        return floor
    if mode in ("RTZ", "DEFAULT"):
        return floor if x > 0 else floor + 1
    if mode == "RTM":
        return floor
    if mode == "RTP":
        return floor + 1
    if mode == "RTO":                           # truncate; an inexact result gets an odd last bit
        t = floor if x > 0 else floor + 1
        return t if t & 1 else t + (1 if x > 0 else -1)
    half = Fraction(1, 2)
    if frac != half:
        return floor + (frac > half)
    if mode == "RNE":
        return floor + (floor & 1)
    return floor + 1 if x > 0 else floor        # RNA, RHB (= RNA in profile ieee 1.0): ties away


def float_to_int(src: str, dst: str, rmode: str, operands: list[np.ndarray]):
    """TCVT floating -> integer on exact rationals: rounded per mode; NaN -> 0, an infinity or an
    out-of-range result -> the nearest bound, each with NV (no NX); NX when inexact in range."""
    d = datatype(dst)
    lo, hi = (-(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1) if d.signed else (0, (1 << d.bits) - 1)
    out, flags = [], []
    for x in float_values(operands[0], src).tolist():
        if np.isnan(x):
            out.append(0)
            flags.append(NV)
            continue
        if np.isinf(x):
            out.append(hi if x > 0 else lo)
            flags.append(NV)
            continue
        q = Fraction(x)
        r = _round_int(q, rmode)
        if r < lo or r > hi:
            out.append(hi if r > hi else lo)
            flags.append(NV)
        else:
            out.append(r)
            flags.append(NX if r != q else 0)
    return _encode_int(out, dst), np.array(flags, np.uint8)


# ---------------------------------------------------------------------------- which oracle

@dataclass(frozen=True)
class Plan:
    name: str               # softfloat | mpfr | exact
    fn: object              # (operands, cmodes) -> (bits or values, flags or None)
    values: bool = False    # compare float64 values (MPFR) rather than encodings
    status: bool = True     # the oracle gives flags: the per-PE status is checked
    keeps_status: bool = False   # the PE's status stays what it was (TSEL, Decision 079)


def plan_for(part: dict) -> Plan | None:
    """The independent reference of a partition, or None where there is none."""
    op, dt = part["op"], part["dtype"]
    dst, rmode, sat = part.get("dst"), part.get("rmode") or "RNE", bool(part.get("sat"))
    d = datatype(dt)
    if op == "TSEL":
        return Plan("exact", lambda ops, cm: select_op(ops), keeps_status=True)
    if op == "TCMP" and d.is_int:
        return Plan("exact", lambda ops, cm: compare_op(dt, cm, ops))
    if op in INT_OPS and d.is_int:
        return Plan("exact", lambda ops, cm: integer_op(op, dt, ops))
    if op in SF_METHOD and dt in SOFTFLOAT:
        return Plan("softfloat", lambda ops, cm: softfloat_op(op, dt, ops))
    if (op in MPFR_FUNCTIONS and dt in FORMATS) or (op in MPFR_BASIC and dt in FORMATS):
        return Plan("mpfr", lambda ops, cm: (mpfr_values(op, dt, ops), None), values=True, status=False)
    if op == "TCVT" and dst is not None:
        s, t = datatype(dt), datatype(dst)
        if s.is_int and t.is_int:
            return Plan("exact", lambda ops, cm: int_convert(dt, dst, sat, ops))
        if dt in FORMATS and t.is_int and rmode in INT_ROUNDING:
            return Plan("exact", lambda ops, cm: float_to_int(dt, dst, rmode, ops))
        if rmode in SF_MODES and softfloat_converts(dt, dst):
            return Plan("softfloat", lambda ops, cm: softfloat_convert(dt, dst, rmode, sat, ops))
    return None


# ---------------------------------------------------------------------------- the check

@dataclass
class Report:
    rows: int = 0
    covered: dict = field(default_factory=dict)     # oracle -> [units, elements]
    ops: dict = field(default_factory=dict)         # oracle -> set of partition labels
    none: list = field(default_factory=list)        # partition labels without an oracle
    mismatches: list = field(default_factory=list)
    rows_are: str = "cases"                         # what `rows` counts (a stream dataset: streams)
    unit: str = "committed cases"                   # what `covered` counts (streams: (block, PE)s)
    notes: list = field(default_factory=list)       # last lines (streams: mismatches not reported again)

    def lines(self) -> list[str]:
        out = []
        for name in ("softfloat", "mpfr", "exact"):
            if name in self.covered:
                c, e = self.covered[name]
                out.append(f"  {name}: {c:,} {self.unit}, {e:,} elements: {_grouped(self.ops[name])}")
        out.append("  no independent reference: " + (_grouped(self.none) if self.none else "none"))
        return out + self.notes


def _grouped(labels) -> str:
    """'TADD (FP16, FP32), TCVT (12 partitions)' from partition labels."""
    by_op: dict[str, list[str]] = {}
    for lab in sorted(set(labels)):
        op, rest = lab.split(".", 1)
        by_op.setdefault(op, []).append(rest)
    return ", ".join(f"{op} ({', '.join(v)})" if op != "TCVT" else f"TCVT ({len(v)} partitions)"
                     for op, v in by_op.items())


def label(part: dict) -> str:
    s = f"{part['op']}.{part['dtype']}"
    if part.get("dst"):
        s += f">{part['dst']}.{part['rmode']}" + (".sat" if part.get("sat") else "")
    return s


def _profile_free(part: dict, profile: str) -> bool:
    """The references here are IEEE 754's (profile ieee): under another profile (ftz flushes
    subnormals, a5 has rules of its own) only partitions with no floating DataType keep one."""
    return profile == DEFAULT_PROFILE or not any(
        datatype(part[k]).is_float for k in ("dtype", "dst") if part.get(k))


def plan_under(part: dict, profile: str) -> Plan | None:
    """The reference of a partition (or of a stream block's keys) in a dataset of `profile`."""
    return plan_for(part) if _profile_free(part, profile) else None


def check(folder, limit: int = 20, progress=None) -> Report:
    """Check every committed case of every partition that has an oracle; see Report."""
    folder = store.location(folder)     # a local folder or an fsspec URL
    rep = Report()
    plans = {}
    ds = open_dataset(folder)
    for part, f in ds.listed():
        key = id(part)
        if key not in plans:
            plans[key] = plan_under(part, ds.profile.name)
            if plans[key] is None:
                rep.none.append(label(part))
        t = ds.read(f)
        require_well_formed(t, ds, f.path)
        rep.rows += len(t)
        if plans[key] is not None and len(rep.mismatches) < limit:
            _check_table(rep, plans[key], part, t, f.path, limit)
        if progress:
            progress(len(t))
    return rep


def _cmode(block) -> int:
    return 0 if block.datr is None or block.datr.CMode is None else block.datr.CMode


def _valid(shape: dict, counts: np.ndarray) -> np.ndarray:
    """Per gathered element: inside its tile's valid rectangle (NORM: row-major)."""
    col = np.repeat(shape["Col"], counts)
    within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    return ((within // col) < np.repeat(shape["ValidRow"], counts)) & \
        ((within % col) < np.repeat(shape["ValidCol"], counts))


# ---------------------------------------------------------------------------- the shared core
# Both row formats (single-block `inputs`/`outputs`, stream goldens' states and commit records)
# come down to lanes: one committed destination of one PE, its source tiles and its status.

@dataclass
class Lanes:
    """What `judge` checks, whatever the rows looked like: per lane, the valid elements of its
    sources (`operands`, one array per source, lane-major) and of its stored destination
    (`stored`), `lane_of` each element's lane; per lane the stored status, the status before
    the block (`before`: what TSEL keeps), the CMode; `where(j)` names lane j in a mismatch
    line ("FILE: case N PE1"); `units` is what the report counts for these lanes."""
    operands: list
    stored: np.ndarray
    lane_of: np.ndarray
    status: np.ndarray
    before: np.ndarray
    cmodes: np.ndarray
    where: object
    units: int

    def subset(self, keep: np.ndarray, where) -> "Lanes":
        """The lanes `keep` (bool per lane) selects, renumbered in order, named by `where`."""
        el = keep[self.lane_of]
        renumber = np.cumsum(keep) - 1
        return Lanes([x[el] for x in self.operands], self.stored[el], renumber[self.lane_of[el]], self.status[keep],
                     self.before[keep], self.cmodes[keep], where, int(keep.sum()))

    @staticmethod
    def joined(pieces: list["Lanes"], where) -> "Lanes":
        """One Lanes of many (lanes renumbered in order), named by `where`."""
        shift = np.cumsum([0] + [len(p.status) for p in pieces[:-1]])
        cat = np.concatenate
        return Lanes([cat([p.operands[k] for p in pieces]) for k in range(len(pieces[0].operands))],
                     cat([p.stored for p in pieces]), cat([p.lane_of + s for p, s in zip(pieces, shift)]),
                     cat([p.status for p in pieces]), cat([p.before for p in pieces]),
                     cat([p.cmodes for p in pieces]), where, sum(p.units for p in pieces))


def _bits_of(f: dict, idx: np.ndarray, path: str) -> int:
    """The element width of tile entries idx (one role: one width)."""
    kinds = f["kind"].take(pa.array(idx)).to_numpy(zero_copy_only=False)
    dts = f["dtype"].take(pa.array(idx)).to_numpy(zero_copy_only=False)
    pairs = set(zip(*np.unique(np.stack([kinds, dts]).astype(str), axis=1))) if len(idx) else set()
    try:
        w = {1 if k == "predicate" else datatype(d).container for k, d in pairs}
    except ValueError as exc:
        raise GoldenError(f"{path}: {exc}") from None
    if len(w) != 1:
        raise GoldenError(f"{path}: tiles of one role with different element widths")
    return w.pop()


def gather_valid(f: dict, idx: np.ndarray, path: str, rect=None) -> tuple[np.ndarray, np.ndarray]:
    """(valid elements, the lane of each) of tile entries f[idx] (flat list<tile> fields,
    golden names: kind, dtype, Row, Col, ValidRow, ValidCol, payload), lane i = entry idx[i]:
    each entry's valid rectangle, or rect = (ValidRow, ValidCol) per lane (what a block reads)."""
    shape = {c: f[c].to_numpy().astype(np.int64)[idx] for c in ("Row", "Col", "ValidRow", "ValidCol")}
    if rect is not None:
        shape["ValidRow"], shape["ValidCol"] = rect
    counts = shape["Row"] * shape["Col"]
    vals = _gather(f["payload"], idx, counts, _bits_of(f, idx, path), path)
    keep = _valid(shape, counts)
    return vals[keep], np.repeat(np.arange(len(idx)), counts)[keep]


def gather_lanes(src_f: dict, src: np.ndarray, dst_f: dict, dst: np.ndarray, path: str, case_of, rect=None):
    """(operands, stored, lane_of) of lanes whose source entries are src_f[src[:, k]] and whose
    destination entries are dst_f[dst]; sources and destination must hold as many valid
    elements per lane (`case_of(j)` names lane j where they do not).  `rect`: the sources'
    rectangle per lane (gather_valid), where it is not their own valid one."""
    operands, lane_of = [], None
    for k in range(src.shape[1]):
        vals, lanes_k = gather_valid(src_f, src[:, k], path, rect)
        if lane_of is not None and not np.array_equal(lanes_k, lane_of):
            raise GoldenError(f"{path}: source valid rectangles of different sizes")
        lane_of = lanes_k
        operands.append(vals)
    stored, out_lanes = gather_valid(dst_f, dst, path)
    if not np.array_equal(out_lanes, lane_of):
        n = len(dst)
        j = int(np.argmax(np.bincount(out_lanes, minlength=n) != np.bincount(lane_of, minlength=n)))
        raise GoldenError(f"{case_of(j)}: destination and source valid rectangles differ in size")
    return operands, stored, lane_of


def judge(rep: Report, plan: Plan, part: dict, lanes: Lanes, limit: int) -> np.ndarray:
    """Run the oracle on every lane's operands (once; TCMP once per CMode), compare the stored
    elements and statuses, count them in `rep` and add a line per mismatch (up to `limit`).
    The lanes that mismatch (bool per lane)."""
    if len(lanes.status) == 0:
        return np.zeros(0, bool)
    op = part["op"]
    operands, stored, lane_of = lanes.operands, lanes.stored, lanes.lane_of
    cm = lanes.cmodes[lane_of] if op == "TCMP" else None
    if op == "TCMP" and len(set(cm.tolist())) > 1:
        result = np.zeros(len(stored), np.uint64)
        flags = np.zeros(len(stored), np.uint8)
        for c in sorted(set(cm.tolist())):
            sel = cm == c
            result[sel], flags[sel] = plan.fn([x[sel] for x in operands], int(c))
    else:
        result, flags = plan.fn(operands, int(cm[0]) if cm is not None and len(cm) else 0)
    want = result
    if plan.values:
        have = float_values(stored, part["dtype"])
        low = FORMATS[part["dtype"]].low_zero_bits
        nan_ok = stored == np.uint64(canonical_nan(part["dtype"])) if np.isnan(want).any() else True
        bad = np.where(np.isnan(want), ~np.asarray(nan_ok, bool) | ~np.isnan(have),
                       (have != want) | (np.signbit(have) != np.signbit(want)))
        if low:
            bad |= (stored & np.uint64((1 << low) - 1)) != 0
    else:
        bad = stored != want
    rep.covered.setdefault(plan.name, [0, 0])
    rep.ops.setdefault(plan.name, set()).add(label(part))
    rep.covered[plan.name][0] += lanes.units
    rep.covered[plan.name][1] += len(stored)
    bad_lanes = np.bincount(lane_of[bad], minlength=len(lanes.status)) > 0
    if bad.any():
        _report(rep, plan, part, lanes, bad, want, limit)
    if plan.status and flags is not None:
        st = lanes.status.astype(np.uint8)
        if plan.keeps_status:
            expect = lanes.before.astype(np.uint8)
        else:                                   # the OR of the valid elements' flags
            expect = np.zeros(len(st), np.uint8)
            np.bitwise_or.at(expect, lane_of, flags.astype(np.uint8))
        wrong = expect != st
        bad_lanes |= wrong
        for j in np.flatnonzero(wrong)[: max(limit - len(rep.mismatches), 0)]:
            rep.mismatches.append(f"{lanes.where(int(j))}: {label(part)}: status: stored {_flags(st[j])}, "
                                  f"{plan.name} gives {_flags(expect[j])}")
    return bad_lanes


def _flags(v) -> str:
    from kernels.numeric.flags import describe
    return describe(int(v))


def _report(rep, plan, part, lanes, bad, want, limit):
    from ..cosim import value_text
    src = part["dtype"]
    dst = part.get("dst") or (None if I.lookup(part["op"]).dest_kind == "predicate" else src)
    lane_of, stored = lanes.lane_of, lanes.stored
    first = np.cumsum(np.r_[0, np.bincount(lane_of, minlength=int(lane_of.max()) + 1)])
    for e in np.flatnonzero(bad)[: max(limit - len(rep.mismatches), 0)]:
        j = int(lane_of[e])
        ops = " ".join(f"0x{int(x[e]):x}" for x in lanes.operands)
        got = value_text(int(stored[e]), dst)
        oracle = repr(float(want[e])) if plan.values else f"0x{int(want[e]):x} ({value_text(int(want[e]), dst)})"
        rep.mismatches.append(f"{lanes.where(j)} element {int(e - first[j])}: {label(part)} of {ops}: "
                              f"stored 0x{int(stored[e]):x} ({got}), {plan.name} gives {oracle}")


# ---------------------------------------------------------------------------- single-block rows

def _check_table(rep: Report, plan: Plan, part: dict, t: pa.Table, path: str, limit: int) -> None:
    """The lanes of one single-block data file: each committed case's selected PEs, the source
    entries its block's bindings name on that PE (inputs), the destination (outputs)."""
    instr = I.lookup(part["op"])
    t = t.filter(pc.equal(t.column("outcome"), "commit"))
    n = len(t)
    if n == 0:
        return
    cases = t.column("case").to_numpy()
    in_counts, fin = tiles_of(t.column("inputs"))
    out_counts, fout = tiles_of(t.column("outputs"))
    in_start = np.cumsum(in_counts) - in_counts
    streams = t.column("stream").to_pylist()
    blocks = {}
    # lanes: one per output entry (a selected PE of a committed case)
    lane_row = np.repeat(np.arange(n), out_counts)
    lane_out = np.arange(int(out_counts.sum()))
    out_pe = fout["pe"].to_numpy()
    in_pe, in_tile = fin["pe"].to_numpy(), fin["tile"].to_numpy()
    src = np.full((len(lane_out), instr.arity), -1, np.int64)
    cmodes = np.zeros(len(lane_out), np.int64)
    for j, (i, e) in enumerate(zip(lane_row.tolist(), lane_out.tolist())):
        s = streams[i]
        if s not in blocks:
            try:
                blocks[s] = encoding.decode(s)[0]
            except (DecodeError, IndexError):
                raise GoldenError(f"{path}: case {int(cases[i])}: stream does not decode") from None
        b = blocks[s]
        cmodes[j] = _cmode(b)
        lo, hi = int(in_start[i]), int(in_start[i] + in_counts[i])
        for k, binding in enumerate(b.iot[:-1][: instr.arity]):
            hit = np.flatnonzero((in_pe[lo:hi] == out_pe[e]) & (in_tile[lo:hi] == binding.tile))
            src[j, k] = lo + int(hit[0]) if hit.size else -1
    if (src < 0).any():
        j = int(np.argmax((src < 0).any(axis=1)))
        raise GoldenError(f"{path}: case {int(cases[lane_row[j]])}: a committed case lacks a source tile")
    operands, stored, lane_of = gather_lanes(fin, src, fout, lane_out, path,
                                             lambda j: f"{path}: case {int(cases[lane_row[j]])}")
    status = fout["status"].to_numpy().astype(np.uint8)[lane_out]
    before = np.zeros(len(lane_out), np.uint8)           # a single-block case starts with status 0
    judge(rep, plan, part, Lanes(operands, stored, lane_of, status, before, cmodes,
                                 lambda j: f"{path}: case {int(cases[lane_row[j]])} PE{int(out_pe[j])}", n), limit)
