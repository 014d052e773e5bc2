"""Compiled fast paths (Numba) for the hot floating operations; the NumPy code is the reference.

Served here: TADD, TSUB, TMUL, TFMA on FP32, TF32, HF32, FP16, BF16 (and TFMA on E4M3/E5M2,
whose binary ops use 256 x 256 tables), and TEXP on FP32, TF32, HF32.  One fused pass per
element, parallel over the array when it is large (`Twin`, PARALLEL_MIN); every element whose result this code does not settle
(non-finite operands, exp results near a rounding boundary or in the subnormal range) is marked
and recomputed by the reference implementation, so results are bit-identical to the reference
by construction of the cases handled here and by test (tests/kernels/test_ops_fast.py compares
both on every FP16/BF16/8-bit case it can enumerate and on millions of random operands).

Why the arithmetic is exact: every value of these formats is a binary64 and, with p <= 24,
a*b is exact in binary64 and TwoSum gives the exact error of a sum, so the exact result is
s + e with s = RN(x) in binary64 and e known; `round_rne` then rounds s to the destination with
the direction of e deciding ties -- the same single rounding as rounding.round_pack (RNE,
tininess after rounding, the overflow table, FTZ).  The scalar routines use only arithmetic,
comparisons and bit casts, the subset Numba compiles for both the CPU and CUDA.

The module also holds what every compiled tier shares: the format records (`Fmt`, `Dec`,
`Params`), the kernel registry (`REGISTRY`: a routine registers its (DataType, op) rows with the
decorator `kernel`, the operand count read from the instruction's row), the loop templates and
their factory (`loop`, `bind`), a tier row (`Kernel`) and its launcher (`launch`, for the CPU
loops and the CUDA kernels alike), the serial/parallel `Twin` and the hand-off of marked
elements (`settle_marked`).
"""
from __future__ import annotations

import math
import os
import threading
import time
import types as types_
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import NamedTuple

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from isa import instructions as _instructions

from . import formats
from .flags import NX, OF, UF
from .profiles import IEEE
from .rn import mul_rn, two_sum

FALLBACK = np.uint8(0xFF)          # flags value marking "recompute with the reference"
WIDE = ("FP32", "TF32", "HF32", "FP16", "BF16")

# Inputs below this many elements never enter a Numba parallel region: starting and joining the
# thread pool costs tens of microseconds on a quiet machine and milliseconds on a busy one
# (measured: a 1,024-element TADD FP32 took 16 ms with 2 threads, 82 us with one), while one
# core covers 2^18 elements of these loops in 0.1-0.3 ms.
PARALLEL_MIN = 1 << 18


# idle_core samples the machine's CPU time at most this often and reuses its answer in between.
IDLE_SAMPLE_SECONDS = 0.25


def _machine_busy_seconds() -> float | None:
    """CPU seconds all processes have spent busy since boot (/proc/stat), None where unreadable."""
    try:
        with open("/proc/stat", "rb") as f:
            lines = f.read().splitlines()
        fields = lines[0].split()
        user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in fields[1:9])
        cpus = sum(1 for line in lines[1:] if line.startswith(b"cpu"))
    except (OSError, ValueError, IndexError):
        return None
    if cpus != os.cpu_count():      # a container shown the host's CPUs: not this machine's count
        return None
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _own_busy_seconds() -> float:
    """CPU seconds this process (every thread, Numba's workers included) has spent."""
    t = os.times()
    return t.user + t.system


_sample = {"wall": None, "machine": None, "own": None, "idle": True}


def _loadavg_idle() -> bool:
    try:
        return os.getloadavg()[0] <= (os.cpu_count() or 1) - 1
    except (OSError, AttributeError):       # no load average here (Windows has no getloadavg)
        return True


def idle_core() -> bool:
    """Whether the machine has a core to spare for a second Numba thread: the CPU time *other*
    processes used since the last sample leaves at least one core and a half free beside this
    process's own main thread.  On a 2-core machine shared with other jobs, a second thread
    that has to wait for a core made 2^20-element calls 10-100x slower (docs/performance.md).
    This process's own threads are not counted: a load average would count them, so a long
    parallel run would see its own load and turn itself serial after a minute.  Sampled at
    most every IDLE_SAMPLE_SECONDS; the 1-minute load average decides before the first
    sample and where /proc/stat cannot be read."""
    now = time.monotonic()
    last = _sample["wall"]
    if last is not None and now - last < IDLE_SAMPLE_SECONDS:
        return _sample["idle"]
    machine, own = _machine_busy_seconds(), _own_busy_seconds()
    if machine is None or last is None or _sample["machine"] is None:
        idle = _loadavg_idle()
    else:
        others = (machine - _sample["machine"] - (own - _sample["own"])) / (now - last)
        idle = others <= (os.cpu_count() or 1) - 1.5
    _sample.update(wall=now, machine=machine, own=own, idle=idle)
    return idle


# One compiled body per dtype set, not per array flag (issue 32 target 5: a first run after
# install compiled 62 specialisations, a third of them copies that differed only in whether an
# operand array was read-only -- a view of Arrow or bytes -- or writable).
_COMPILE_LOCK = threading.Lock()


def canonical_signature(args, reads) -> tuple:
    """Numba's types of `args`, with every array at a position in `reads` typed read-only: a
    body compiled for a read-only operand also takes a writable one (Numba converts writable to
    read-only without a copy), so one specialisation serves both."""
    sig = []
    for i, x in enumerate(args):
        t = nb.typeof(x)
        if i in reads and isinstance(t, types.Array) and t.mutable:
            t = t.copy(readonly=True)
        sig.append(t)
    return tuple(sig)


class Uniform:
    """A cached `nb.njit` dispatcher that compiles only canonical signatures
    (`canonical_signature`: the array arguments it only reads, typed read-only) and otherwise
    runs as the dispatcher does.  Compilation is disabled between calls, so a call whose exact
    types have no body takes the one its types convert to; a call that has none compiles (or
    loads from Numba's on-disk cache) the canonical one.  `reads(n)`: the positions, of n
    arguments, of the arrays the body only reads."""

    every: list = []                        # every Uniform made (kernels/numeric/precompile.py counts them)

    def __init__(self, dispatcher, reads):
        self.dispatcher = dispatcher
        self.reads = reads
        Uniform.every.append(self)
        dispatcher._can_compile = False     # disable_compile(), which refuses a dispatcher with no body yet

    def __getattr__(self, name):            # py_func, signatures, ... of the dispatcher
        return getattr(self.dispatcher, name)

    def __call__(self, *args):
        for attempt in range(3):
            try:
                return self.dispatcher(*args)
            except TypeError as exc:
                msg = str(exc)
                if attempt == 2 or ("No matching definition" not in msg and "mbiguous" not in msg):
                    raise
                # no body fits: the canonical one; two fit equally well (say C and A layouts of a
                # read-only operand): the call's exact types, which win over conversions
                exact = "mbiguous" in msg
            self.add(canonical_signature(args, frozenset() if exact else self.reads(len(args))))

    def add(self, sig) -> None:
        """Compile (or load from the on-disk cache) the body of signature `sig`."""
        d = self.dispatcher
        with _COMPILE_LOCK:
            d._can_compile = True
            try:
                d.compile(sig)
            finally:
                d._can_compile = False


def reads_all_but(outputs: int):
    """`Uniform.reads` of a loop whose last `outputs` arguments are the arrays it writes."""
    return lambda n: frozenset(range(n - outputs))


class Twin:
    """One compiled loop built twice, serial and parallel (prange is range in the serial build);
    a call runs the serial build unless the last argument (every loop's output or index array)
    has at least PARALLEL_MIN elements, Numba has more than one thread and a core is idle
    (`idle_core`, which does not count this process's own threads).  `calls` counts the builds run, so tests can see which one a call took.

    outputs: how many trailing arguments the loop writes; given, every other array argument
    compiles as read-only (`Uniform`: one specialisation per dtype set); None: Numba's own
    specialisation by exact types."""
    calls = {"serial": 0, "parallel": 0}
    every: list = []                        # every Twin made (precompile builds their parallel twins)

    def __init__(self, fn, outputs: int | None = None, **jit):
        self.py_func = fn
        Twin.every.append(self)
        self.serial = nb.njit(cache=True, **jit)(fn)
        # Numba's on-disk cache keys a function by its name, bytecode and signature, not by its
        # options: the parallel build gets its own name, or a cached serial build would be
        # loaded for it (and the other way round)
        name = fn.__name__ + "__parallel"
        code = fn.__code__.replace(co_name=name, co_qualname=fn.__qualname__ + "__parallel")
        par = types_.FunctionType(code, fn.__globals__, name, fn.__defaults__, fn.__closure__)
        self.parallel = nb.njit(parallel=True, cache=True, **jit)(par)
        if outputs is not None:
            self.serial = Uniform(self.serial, reads_all_but(outputs))
            self.parallel = Uniform(self.parallel, reads_all_but(outputs))
        self.__name__ = self.__qualname__ = fn.__name__
        self.__doc__ = fn.__doc__

    def __call__(self, *args):
        par = args[-1].shape[0] >= PARALLEL_MIN and nb.get_num_threads() > 1 and idle_core()
        Twin.calls["parallel" if par else "serial"] += 1
        return (self.parallel if par else self.serial)(*args)


def twin(fn=None, **jit):
    return Twin(fn, **jit) if fn is not None else (lambda f: Twin(f, **jit))


_ONE = np.uint64(1)


# ---------------------------------------------------------------- bit casts
# LLVM bitcasts, which Numba compiles for the CPU and Numba-CUDA for the GPU alike (rn.py has the
# binary32 ones and the never-contracted mul_rn/add_rn).  Scalar .view() would allocate a 0-d
# array per call.

def _bitcast(src, dst, bits):
    @intrinsic
    def cast(typingctx, x):
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.IntType(bits) if isinstance(dst, types.Integer) else
                                   (ir.DoubleType() if bits == 64 else ir.FloatType()))
        return dst(src), codegen
    return cast


f64_bits = _bitcast(types.float64, types.uint64, 64)
bits_f64 = _bitcast(types.uint64, types.float64, 64)
bits_f32 = _bitcast(types.uint32, types.float32, 32)


class Fmt(NamedTuple):
    """What `round_rne` needs of a destination format (compiled code reads the fields by name;
    a NamedTuple of scalars is one kernel argument on the CPU and on CUDA)."""
    t: int           # trailing significand bits
    emin: int        # exponent of the min normal
    maxmag: int      # magnitude code of the max finite value
    ovf: int         # magnitude code an overflow delivers (infinity, or E4M3's NaN)
    ovf_sign: int    # whether that code keeps the result's sign (0 for E4M3's NaN)
    signbit: int
    shift: int       # position of the encoding in its container (TF32 13, HF32 12)
    ftz: int         # profile ftz: flush subnormal results


class Dec(NamedTuple):
    """How a compiled loop reads an operand encoding as a binary64 value."""
    field: int       # the container bits that hold the encoding
    dshift: int      # left shift into a binary32 pattern (BF16: 16)
    ftz: int         # profile ftz: a subnormal operand reads as the zero of its sign
    mn: float        # the min normal (the ftz threshold)


@dataclass(frozen=True)
class Params:
    """A format as the compiled tiers see it: `fmt` and `dec` for the kernels, and whether its
    operands are gathered from `values` (binary32 value of every encoding: FP16, E4M3, E5M2)
    instead of decoded in the loop (binary32 patterns: FP32, TF32, HF32, BF16)."""
    fmt: Fmt
    dec: Dec
    lut: bool
    values: np.ndarray


def gathers(name: str) -> bool:
    """Whether the compiled tiers gather format `name`'s operand values from a table (FP16 and the
    8-bit formats) rather than decode binary32 patterns in the loop (FP32, TF32, HF32, BF16)."""
    return formats.FORMATS[name].width not in (32, 19, 20, 16) or name == "FP16"


@lru_cache(maxsize=None)
def params(name: str, ftz: bool) -> Params:
    f = formats.FORMATS[name]
    if f.specials == "fn":
        ovf, ovf_sign = f.mag_mask, 0                  # E4M3: canonical NaN 0x7F, sign dropped
    else:
        ovf, ovf_sign = ((1 << f.ebits) - 1) << f.t, 1  # infinity of the result's sign
    lut = gathers(name)
    vals = np.zeros(1, np.float32)
    if lut:
        codes = np.arange(1 << f.width, dtype=np.uint64).astype(np.dtype(f"u{max(1, f.width // 8)}"))
        vals = np.asarray(formats.decode(codes, name), np.float64).astype(np.float32)   # exact
    fmt = Fmt(f.t, f.emin, f.max_mag, ovf, ovf_sign, f.sign_bit, f.shift, int(ftz))
    dec = Dec(((1 << f.width) - 1) << f.shift, 16 if name == "BF16" else 0, int(ftz), 2.0 ** f.emin)
    return Params(fmt, dec, lut, vals)


@dataclass(frozen=True)
class Kernel:
    """One compiled (op, format) path: its scalar routine and how operands reach it.

    kind  'f32' / 'f64': operands and result as binary32 / binary64 values (views of the
                          encodings); 'raw': container codes in, codes out;
          'bits' / 'vals': a rounded routine (op, x..., fmt) on encodings decoded in the loop /
                          binary32 values gathered from the value table (by `Params.lut`).
    arity the instruction's operand count (its row in isa/instructions.py)
    op    the operation code a rounded routine receives; format: the DataType whose Params a
          rounded routine reads; rule: the profile rule it computes (profiles.py)."""
    scalar: object
    arity: int
    kind: str
    op: int = 0
    format: str = ""
    rule: str = IEEE
    fix: object = None      # a 'map' kernel's exact scalar routine for the elements `scalar` marks

    @cached_property
    def loop(self) -> Twin:
        """The compiled loop (`loop`), kept on the row (isa.memo rule 1): a block's fast path asks
        on every call."""
        return loop(self.kind, self.arity, self.scalar, self.fix)


# ---------------------------------------------------------------- the kernel registry

# Every compiled kernel of every tier: tier name -> {(DataType name, op): Kernel}.  A routine
# registers itself where it is written (`kernel`); the tier table (tiers.py) reads each compiled
# tier's rows from here, and docs/numerics.md's table of tiers is generated from that table
# (kernels/numeric/tiertable.py), so a routine is listed once and an (op, DataType) that no
# compiled kernel serves shows there.
REGISTRY: dict[str, dict[tuple[str, str], Kernel]] = {}


def rows(tier: str) -> dict[tuple[str, str], Kernel]:
    """The (DataType name, op) -> Kernel rows registered for `tier` (the registry's own dict)."""
    return REGISTRY.setdefault(tier, {})


def kernel(tier: str, dtypes, ops, kind: str = "rounded", rule: str = IEEE, fix=None):
    """Compile the decorated scalar routine as every scalar routine is (`nb.njit`, inlined into
    its loop, error_model "numpy": see below) and register it as tier `tier`'s kernel of every
    (format, op).

    dtypes: a DataType name or several; ops: an instruction mnemonic, or {mnemonic: op code}
    for a routine serving several (the code is its `op` argument); kind: 'f32', 'f64' or 'raw'
    (`Kernel`), or 'rounded' for a rounded routine (op, x..., fmt), which reads gathered values
    or decoded encodings as the format's Params say; rule: the profile rule it computes; fix
    (kinds 'f32', 'f64', 'raw'): an exact scalar routine of the same operands that the loop
    runs, in the same compiled call, on the elements the routine marks (`FIX`), marking in turn
    what it cannot settle.  The operand count is the instruction's (isa/instructions.py), never
    stated here."""
    names = (dtypes,) if isinstance(dtypes, str) else tuple(dtypes)
    codes = {ops: 0} if isinstance(ops, str) else dict(ops)

    def register(fn):
        scalar = nb.njit(inline="always", error_model="numpy")(fn)
        table = rows(tier)
        for name in names:
            for op, code in codes.items():
                if (name, op) in table:
                    raise ValueError(f"tier {tier}: {op} on {name} is registered twice")
                k = kind if kind != "rounded" else "vals" if gathers(name) else "bits"
                table[(name, op)] = Kernel(scalar, _instructions.lookup(op).arity, k, code,
                                           name if kind == "rounded" else "", rule, fix)
        return scalar
    return register


# Every scalar routine is compiled with error_model="numpy" (IEEE results for x/0, no exception):
# inlined into a loop it takes the loop's model anyway, but the CUDA simulator calls the routines
# on their own from Python, where Numba's default model raised ZeroDivisionError for x/0.
#
# Inner routines take scalars (and NamedTuples of scalars) only: an array argument costs an
# atomic reference-count update per call.  A table read inside these loops measured 6-10x
# slower than the loop without it, so operands reach a rounded routine in one of two ways:
# `read_bits` decodes binary32 patterns (FP32, TF32, HF32, BF16 shifted up) in the loop, and
# FP16, E4M3, E5M2 are binary32 values gathered beforehand by `gather` from the 2^w-entry
# value table (`Params.values`) and read by `read_val`.

@nb.njit(inline="always", error_model="numpy")
def _from_bits(x, field, dshift):
    return np.float64(bits_f32(np.uint32((np.uint32(x) & np.uint32(field)) << np.uint32(dshift))))


@nb.njit(inline="always", error_model="numpy")
def _daz(v, ftz, min_normal):
    if ftz:                                            # profile ftz: subnormal reads as zero
        if abs(v) < min_normal:
            v = math.copysign(0.0, v)
    return v


@nb.njit(inline="always", error_model="numpy")
def read_bits(a, dec):
    """The binary64 value of encoding `a` (a binary32 pattern in its container, Dec)."""
    return _daz(_from_bits(a, dec.field, dec.dshift), dec.ftz, dec.mn)


@nb.njit(inline="always", error_model="numpy")
def read_val(v, dec):
    """A gathered binary32 value as binary64 (ftz applied)."""
    return _daz(np.float64(v), dec.ftz, dec.mn)


@nb.njit(inline="always", error_model="numpy")
def _rne_bits(M, drop, dm):
    """(kept, increment, inexact) as 0/1 integers: M rounded at bit `drop` with RNE, delta's
    direction dm breaking what would otherwise be a tie.  Branch-free: data-dependent branches
    here would be mispredicted on every other element."""
    kept = M >> np.uint64(drop)
    R = (M >> np.uint64(drop - 1)) & _ONE
    S = np.uint64((M & ((_ONE << np.uint64(drop - 1)) - _ONE)) != 0)
    up = np.uint64(dm > 0)
    tie_even = np.uint64(dm == 0) & kept
    inc = R & (S | up | tie_even)
    return kept, inc, R | S | np.uint64(dm != 0)


@nb.njit(inline="always", error_model="numpy")
def round_rne(s, d, fmt):
    """(code, flags) of the exact x = s + delta rounded to the format `fmt` (RNE), where s is a
    normal binary64 (or zero, then delta = 0) and delta has the sign of d and lies strictly
    between s and its binary64 neighbour.  Mirrors rounding.round_pack for RNE.  One exit and
    selects instead of branches, so the compiler keeps the common path straight."""
    t = fmt.t
    emin = fmt.emin
    u = f64_bits(s)
    neg = u >> np.uint64(63)
    sign = neg << np.uint64(fmt.signbit)
    dm = d - 2 * d * np.int64(neg)                     # direction of delta on the magnitude
    E = np.int64((u >> np.uint64(52)) & np.uint64(0x7FF)) - 1023
    M = (u & np.uint64(0xFFFFFFFFFFFFF)) | np.uint64(1 << 52)
    drop = min(52 - t + max(emin - E, 0), 54)
    kept, inc, inexact = _rne_bits(M, drop, dm)
    code = (np.uint64(max(E - emin, 0)) << np.uint64(t)) + kept + inc
    flags = inexact * np.uint64(NX)
    # tininess after rounding: below 2^emin unless unbounded rounding carries up to it
    ku, iu, _ = _rne_bits(M, 52 - t, dm)
    reaches = np.uint64(E == emin - 1) & np.uint64(ku + iu == (_ONE << np.uint64(t + 1)))
    tiny = np.uint64(E < emin) & (reaches ^ _ONE)
    flags |= (tiny & inexact) * np.uint64(UF)
    over = code > np.uint64(fmt.maxmag)
    code = np.uint64(fmt.ovf) if over else code
    sign = sign * np.uint64(fmt.ovf_sign) if over else sign
    flags = np.uint64(OF | NX) if over else flags
    flush = fmt.ftz != 0 and code != 0 and code < (_ONE << np.uint64(t))
    code = np.uint64(0) if flush else code
    flags = flags | np.uint64(UF | NX) if flush else flags
    zero = s == 0.0
    code = np.uint64(0) if zero else code
    flags = np.uint64(0) if zero else flags
    return (sign | code) << np.uint64(fmt.shift), np.uint8(flags)


@nb.njit(inline="always", error_model="numpy")
def _two_sum_dir(a, b):
    """(s, d): s = RN(a + b) and the sign of its exact error (rn.two_sum)."""
    s, e = two_sum(a, b)
    return s, np.int64(e > 0) - np.int64(e < 0)


# The rounded routines below, fastdiv's and fastfn's all take (op, operands..., fmt): `op` is
# the operation code of a routine that serves several (its registration's {op: code}), ignored
# by the others, so one loop template serves every routine of an arity (`loop`).

@kernel("fast", WIDE, {"TADD": 0, "TSUB": 1, "TMUL": 2})
def binary(op, x, y, fmt):
    """(code, flags) of x op y (op 0 add, 1 sub, 2 mul), or flags FALLBACK for a non-finite
    operand."""
    if not (math.isfinite(x) and math.isfinite(y)):
        return np.uint64(0), np.uint8(0xFF)
    if op == 1:
        y = -y
    if op == 2:
        s, d = mul_rn(x, y), np.int64(0)             # exact: 2p <= 48 bits
    else:
        s, d = _two_sum_dir(x, y)
    return round_rne(s, d, fmt)


@kernel("fast", WIDE + ("E4M3", "E5M2"), "TFMA")
def fma(op, x, y, z, fmt):
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        return np.uint64(0), np.uint8(0xFF)
    s, d = _two_sum_dir(mul_rn(x, y), z)             # x*y exact, TwoSum exact (mul_rn: never an fma)
    return round_rne(s, d, fmt)


@twin(outputs=0)
def gather(V, a):
    """V[a] (a separate loop: see above).  V is binary32: every FP16/E4M3/E5M2 value is one, and
    half the bytes of binary64 measured several times faster here."""
    out = np.empty(a.shape[0], V.dtype)
    for i in nb.prange(a.shape[0]):
        out[i] = V[a[i]]
    return out


@twin(outputs=2)
def lookup1(bt, ft, a, bits, flags):
    """Unary table read: bits[i], flags[i] = bt[a[i]], ft[a[i]]."""
    for i in nb.prange(a.shape[0]):
        bits[i] = bt[a[i]]
        flags[i] = ft[a[i]]


@twin(outputs=2)
def lookup2(bt, ft, a, b, bits, flags):
    """Binary 8-bit table read at (a << 8) | b."""
    for i in nb.prange(a.shape[0]):
        k = (np.intp(a[i]) << 8) | np.intp(b[i])
        bits[i] = bt[k]
        flags[i] = ft[k]


# ---------------------------------------------------------------- exp for the 24-bit formats

# 2^(j/64), j = 0..63, as double-doubles (RN(2^(j/64)), then the rest rounded), as written by
# transcendental._constants() from MPFR at 400 bits (tests recompute them); this module's exp
# reads the high parts, fast64.py's FP64 exp both.  A module-level array is a constant of the
# compiled code: read from an array argument inside the loop, the same table cost 20 ns an
# element (the compiler must assume it may alias the outputs).
EXP2_64_DD = np.array([(float.fromhex(h), float.fromhex(lo)) for h, lo in (
    ("0x1.0000000000000p+0", "0x0.0p+0"),
    ("0x1.02c9a3e778061p+0", "-0x1.19083535b085dp-56"),
    ("0x1.059b0d3158574p+0", "0x1.d73e2a475b465p-55"),
    ("0x1.0874518759bc8p+0", "0x1.186be4bb284ffp-57"),
    ("0x1.0b5586cf9890fp+0", "0x1.8a62e4adc610bp-54"),
    ("0x1.0e3ec32d3d1a2p+0", "0x1.03a1727c57b53p-59"),
    ("0x1.11301d0125b51p+0", "-0x1.6c51039449b3ap-54"),
    ("0x1.1429aaea92de0p+0", "-0x1.32fbf9af1369ep-54"),
    ("0x1.172b83c7d517bp+0", "-0x1.19041b9d78a76p-55"),
    ("0x1.1a35beb6fcb75p+0", "0x1.e5b4c7b4968e4p-55"),
    ("0x1.1d4873168b9aap+0", "0x1.e016e00a2643cp-54"),
    ("0x1.2063b88628cd6p+0", "0x1.dc775814a8495p-55"),
    ("0x1.2387a6e756238p+0", "0x1.9b07eb6c70573p-54"),
    ("0x1.26b4565e27cddp+0", "0x1.2bd339940e9d9p-55"),
    ("0x1.29e9df51fdee1p+0", "0x1.612e8afad1255p-55"),
    ("0x1.2d285a6e4030bp+0", "0x1.0024754db41d5p-54"),
    ("0x1.306fe0a31b715p+0", "0x1.6f46ad23182e4p-55"),
    ("0x1.33c08b26416ffp+0", "0x1.32721843659a6p-54"),
    ("0x1.371a7373aa9cbp+0", "-0x1.63aeabf42eae2p-54"),
    ("0x1.3a7db34e59ff7p+0", "-0x1.5e436d661f5e3p-56"),
    ("0x1.3dea64c123422p+0", "0x1.ada0911f09ebcp-55"),
    ("0x1.4160a21f72e2ap+0", "-0x1.ef3691c309278p-58"),
    ("0x1.44e086061892dp+0", "0x1.89b7a04ef80d0p-59"),
    ("0x1.486a2b5c13cd0p+0", "0x1.3c1a3b69062f0p-56"),
    ("0x1.4bfdad5362a27p+0", "0x1.d4397afec42e2p-56"),
    ("0x1.4f9b2769d2ca7p+0", "-0x1.4b309d25957e3p-54"),
    ("0x1.5342b569d4f82p+0", "-0x1.07abe1db13cadp-55"),
    ("0x1.56f4736b527dap+0", "0x1.9bb2c011d93adp-54"),
    ("0x1.5ab07dd485429p+0", "0x1.6324c054647adp-54"),
    ("0x1.5e76f15ad2148p+0", "0x1.ba6f93080e65ep-54"),
    ("0x1.6247eb03a5585p+0", "-0x1.383c17e40b497p-54"),
    ("0x1.6623882552225p+0", "-0x1.bb60987591c34p-54"),
    ("0x1.6a09e667f3bcdp+0", "-0x1.bdd3413b26456p-54"),
    ("0x1.6dfb23c651a2fp+0", "-0x1.bbe3a683c88abp-57"),
    ("0x1.71f75e8ec5f74p+0", "-0x1.16e4786887a99p-55"),
    ("0x1.75feb564267c9p+0", "-0x1.0245957316dd3p-54"),
    ("0x1.7a11473eb0187p+0", "-0x1.41577ee04992fp-55"),
    ("0x1.7e2f336cf4e62p+0", "0x1.05d02ba15797ep-56"),
    ("0x1.82589994cce13p+0", "-0x1.d4c1dd41532d8p-54"),
    ("0x1.868d99b4492edp+0", "-0x1.fc6f89bd4f6bap-54"),
    ("0x1.8ace5422aa0dbp+0", "0x1.6e9f156864b27p-54"),
    ("0x1.8f1ae99157736p+0", "0x1.5cc13a2e3976cp-55"),
    ("0x1.93737b0cdc5e5p+0", "-0x1.75fc781b57ebcp-57"),
    ("0x1.97d829fde4e50p+0", "-0x1.d185b7c1b85d1p-54"),
    ("0x1.9c49182a3f090p+0", "0x1.c7c46b071f2bep-56"),
    ("0x1.a0c667b5de565p+0", "-0x1.359495d1cd533p-54"),
    ("0x1.a5503b23e255dp+0", "-0x1.d2f6edb8d41e1p-54"),
    ("0x1.a9e6b5579fdbfp+0", "0x1.0fac90ef7fd31p-54"),
    ("0x1.ae89f995ad3adp+0", "0x1.7a1cd345dcc81p-54"),
    ("0x1.b33a2b84f15fbp+0", "-0x1.2805e3084d708p-57"),
    ("0x1.b7f76f2fb5e47p+0", "-0x1.5584f7e54ac3bp-56"),
    ("0x1.bcc1e904bc1d2p+0", "0x1.23dd07a2d9e84p-55"),
    ("0x1.c199bdd85529cp+0", "0x1.11065895048ddp-55"),
    ("0x1.c67f12e57d14bp+0", "0x1.2884dff483cadp-54"),
    ("0x1.cb720dcef9069p+0", "0x1.503cbd1e949dbp-56"),
    ("0x1.d072d4a07897cp+0", "-0x1.cbc3743797a9cp-54"),
    ("0x1.d5818dcfba487p+0", "0x1.2ed02d75b3707p-55"),
    ("0x1.da9e603db3285p+0", "0x1.c2300696db532p-54"),
    ("0x1.dfc97337b9b5fp+0", "-0x1.1a5cd4f184b5cp-54"),
    ("0x1.e502ee78b3ff6p+0", "0x1.39e8980a9cc8fp-55"),
    ("0x1.ea4afa2a490dap+0", "-0x1.e9c23179c2893p-54"),
    ("0x1.efa1bee615a27p+0", "0x1.dc7f486a4b6b0p-54"),
    ("0x1.f50765b6e4540p+0", "0x1.9d3e12dd8a18bp-54"),
    ("0x1.fa7c1819e90d8p+0", "0x1.74853f3a5931ep-55"),
)])
EXP2_64 = EXP2_64_DD[:, 0].copy()          # the high parts: RN(2^(j/64))
EXP2_64_LO = EXP2_64_DD[:, 1].copy()       # 2^(j/64) - EXP2_64[j], rounded (fast64's double-double exp)


# ln2/64 = C1 + C2 + C3 (C1, C2 of 36 bits: k*C1, k*C2 exact for |k| < 2^17) and 64/ln2, as
# transcendental._constants() computes them from MPFR at 400 bits (tests recompute them);
# fast64's FP64 exp uses them too.
C1 = float.fromhex("0x1.62e42fefa0000p-7")
C2 = float.fromhex("0x1.cf79abc9e0000p-46")
C3 = float.fromhex("0x1.d9cc01f97b57ap-85")
INV_LN2_64 = float.fromhex("0x1.71547652b82fep+6")


@nb.njit(inline="always", error_model="numpy")
def _exp_reduced(x):
    """(k, p) with exp(x) ~ 2^(k/64) * p: k = round(64 x / ln2), r = x - k ln2/64 (k*C1 exact,
    |r| <= ln2/128), p = 1 + r + ... + r^6/720 (truncation < 2^-65)."""
    # mul_rn: every product rounded on its own, as analysed (on CUDA a plain a*b+c became fma)
    kf = (mul_rn(x, INV_LN2_64) + 6755399441055744.0) - 6755399441055744.0   # round to nearest integer
    r = (x - mul_rn(kf, C1)) - mul_rn(kf, C2)
    p = 1.0 / 120 + mul_rn(r, 1.0 / 720)
    p = 1.0 / 24 + mul_rn(r, p)
    p = 1.0 / 6 + mul_rn(r, p)
    p = 0.5 + mul_rn(r, p)
    p = 1.0 + mul_rn(r, p)
    p = 1.0 + mul_rn(r, p)
    return np.int64(kf), p


@nb.njit(cache=True)
def exp_approx(x):
    """The kernel's binary64 exp(x) for |x| < 700, as an array (for testing its error bound)."""
    out = np.empty(x.shape[0], np.float64)
    for i in range(x.shape[0]):
        k, p = _exp_reduced(x[i])
        out[i] = EXP2_64[k & 63] * p * 2.0 ** (k >> 6)
    return out


@nb.njit(inline="always", error_model="numpy")
def exp_round(tk, p, k, fmt):
    """(code, flags) of 2^(k >> 6) * tk * p (tk = 2^((k & 63)/64)) rounded at t trailing bits,
    or flags 0xFF when a rounding boundary lies within 2^-46 of it (the reference decides)."""
    t = fmt.t
    drop = 52 - t
    half = np.uint64(1) << np.uint64(drop - 1)
    low_mask = (np.uint64(1) << np.uint64(drop)) - np.uint64(1)
    rebias = 1023 - (1 - fmt.emin)
    u = f64_bits(mul_rn(tk, p)) + (np.uint64(k >> 6) << np.uint64(52))   # * 2^(k >> 6), exact
    low = u & low_mask
    near = (low - half if low > half else half - low) <= np.uint64(64)   # selects, not branches
    # RNE at t trailing bits on the binary64 pattern, then rebias (normal range: E >= 1)
    v = (u + half - np.uint64(1) + ((u >> np.uint64(drop)) & np.uint64(1))) >> np.uint64(drop)
    code = v - (np.uint64(rebias) << np.uint64(t))
    over = code > np.uint64(fmt.maxmag)
    code = (np.uint64(fmt.ovf) if over else code) << np.uint64(fmt.shift)
    f = np.uint8(OF | NX) if over else np.uint8(NX)
    return code, np.uint8(0xFF) if near else f


@kernel("fast", ("FP32", "TF32", "HF32"), "TEXP")
def exp(op, x, fmt):
    """(code, flags) of exp(x): binary64 exp with relative error < 2^-51 (table 2^(j/64), degree-6
    polynomial), rounded where no rounding boundary of the destination lies within 2^-46 of it,
    in the normal range; specials, zero/subnormal and x outside [-80, 89] are marked."""
    ok = math.isfinite(x) and x != 0.0 and x >= -80.0 and x <= 89.0
    k, p = _exp_reduced(x if ok else 1.0)
    code, f = exp_round(EXP2_64[k & 63], p, k, fmt)
    return code, f if ok else FALLBACK


# ---------------------------------------------------------------- the loop factory

# Loop templates: each runs the routine bound to the global name SCALAR (by `loop`) over 1-D
# arrays.  'map' loops take the operands as the routine reads them (binary32/binary64 values or
# raw codes) and write its result; 'rounded' loops read each operand with the function bound to
# READ -- `read_bits` (encodings, kind 'bits') or `read_val` (gathered values, kind 'vals') --
# and hand them, with the op code and the format's Fmt, to a rounded routine.  No reduction
# inside (a running count of marked elements cost 40 % more than the loop itself): the caller
# looks for marks with one flags.max().
SCALAR = READ = None   # bound in each loop's own globals by `loop`


@intrinsic
def wide_vectors(typingctx):
    """A hint, no semantics: the enclosing loop may be vectorised 512 bits wide where the CPU has
    AVX-512 (LLVM's x86 tuning prefers 256 bits; the TCVT FP32->FP16 loop measured 1.5x faster
    on 16 lanes than on 8, docs/performance.md).  The string attribute goes past llvmlite's list of
    known function attributes, which has no way to name it; where that fails the hint is
    skipped."""
    def codegen(context, builder, sig, args):
        try:
            set.add(builder.function.attributes, '"prefer-vector-width"="512"')
        except Exception:               # a future llvmlite: leave the default width
            pass
        return ir.Constant(ir.IntType(64), 0)
    return types.int64(), codegen


def _map1(a, out, flags):
    wide_vectors()
    for i in nb.prange(a.shape[0]):
        out[i], flags[i] = SCALAR(a[i])


def _map2(a, b, out, flags):
    wide_vectors()
    for i in nb.prange(a.shape[0]):
        out[i], flags[i] = SCALAR(a[i], b[i])


def _map3(a, b, c, out, flags):
    wide_vectors()
    for i in nb.prange(a.shape[0]):
        out[i], flags[i] = SCALAR(a[i], b[i], c[i])


def _rounded1(op, a, fmt, dec, bits, flags):
    for i in nb.prange(a.shape[0]):
        bits[i], flags[i] = SCALAR(op, READ(a[i], dec), fmt)


def _rounded2(op, a, b, fmt, dec, bits, flags):
    for i in nb.prange(a.shape[0]):
        bits[i], flags[i] = SCALAR(op, READ(a[i], dec), READ(b[i], dec), fmt)


def _rounded3(op, a, b, c, fmt, dec, bits, flags):
    for i in nb.prange(a.shape[0]):
        bits[i], flags[i] = SCALAR(op, READ(a[i], dec), READ(b[i], dec), READ(c[i], dec), fmt)


MARK_BITS = np.uint64(0x8080808080808080)    # bit 7 of each flags byte: set by a mark, by no flag


@intrinsic
def ctz(typingctx, x):
    """Count of trailing zero bits of a nonzero uint64 (llvm.cttz)."""
    if x != types.uint64:
        return None

    def codegen(context, builder, sig, args):
        fnty = ir.FunctionType(ir.IntType(64), [ir.IntType(64), ir.IntType(1)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.cttz.i64")
        return builder.call(fn, [args[0], ir.Constant(ir.IntType(1), 1)])
    return types.uint64(types.uint64), codegen


# 'map' loops with a fix pass: after the vectorised loop, the marked elements -- found 8 flags at a
# time, a word OR, so an unmarked call pays a fast scan -- go to the routine bound to FIX, in the
# same compiled call.
FIX = None


@nb.njit(inline="always")
def marked(flags):
    """The indices of the marked elements of `flags`, in order (empty after one word scan when
    none is; a second scan fills them in): the fix pass of every arity walks these."""
    n = flags.shape[0]
    words = flags[:n // 8 * 8].view(np.uint64)
    count = 0
    for j in range(words.shape[0]):
        w = words[j] & MARK_BITS
        while w:
            w &= w - np.uint64(1)
            count += 1
    for i in range(n // 8 * 8, n):
        count += flags[i] == 0xFF
    at = np.empty(count, np.int64)
    if count == 0:
        return at
    k = 0
    for j in range(words.shape[0]):
        w = words[j] & MARK_BITS
        while w:
            at[k] = j * 8 + np.int64(ctz(w) >> np.uint64(3))
            w &= w - np.uint64(1)
            k += 1
    for i in range(n // 8 * 8, n):
        if flags[i] == 0xFF:
            at[k] = i
            k += 1
    return at


def _map1_fix(a, out, flags):
    wide_vectors()
    for i in nb.prange(a.shape[0]):
        out[i], flags[i] = SCALAR(a[i])
    for i in marked(flags):
        out[i], flags[i] = FIX(a[i])


def _map2_fix(a, b, out, flags):
    wide_vectors()
    for i in nb.prange(a.shape[0]):
        out[i], flags[i] = SCALAR(a[i], b[i])
    for i in marked(flags):
        out[i], flags[i] = FIX(a[i], b[i])


TEMPLATES_FIX = {("map", 1): _map1_fix, ("map", 2): _map2_fix}
TEMPLATES = {("map", 1): _map1, ("map", 2): _map2, ("map", 3): _map3,
             ("rounded", 1): _rounded1, ("rounded", 2): _rounded2, ("rounded", 3): _rounded3}
READERS = {"bits": read_bits, "vals": read_val}


def bind(template, scalar, read=None, name=None, fix=None):
    """A copy of `template` whose global SCALAR is `scalar` (and READ `read`), under a name of
    its own.

    Why globals and not a closure: Numba's on-disk cache keys a function by its qualified name,
    its bytecode and the pickled contents of its closure cells; a cell holding a Numba
    dispatcher does not pickle to the same bytes in two processes, so a closure-generated loop
    was recompiled (and its cache index rewritten) in every process.  Globals are not part of
    the key: loops that differ only in SCALAR share bytecode and are told apart by their names,
    which carry the routine's module and name (so binding another routine is another cache
    entry), and they take the routine's source file as theirs, whose stamp the cache checks (an
    edit there recompiles them).  The limit that remains is Numba's own: an edit to a function
    the routine calls in a third file is not noticed (clear __pycache__), as with any cached
    function calling another."""
    fn = getattr(scalar, "py_func", scalar)
    tail = "" if read is None else "_" + getattr(read, "py_func", read).__name__
    tail += "" if fix is None else "_" + getattr(fix, "py_func", fix).__name__
    name = name or f"{template.__name__}{tail}__{fn.__module__.rsplit('.', 1)[-1]}_{fn.__name__}"
    # the routine's file as the loop's: Numba's cache checks that file's stamp, so an edit to the
    # routine's module recompiles its loops (as when they were written out beside it)
    code = template.__code__.replace(co_name=name, co_qualname=name, co_filename=fn.__code__.co_filename)
    g = dict(template.__globals__)
    g["SCALAR"], g["READ"], g["FIX"] = scalar, read, fix
    return types_.FunctionType(code, g, name, template.__defaults__)


_LOOPS: dict = {}


def template(kind: str, arity: int, templates: dict):
    """(template, reader) of a Kernel kind in `templates` (this module's or cuda.py's)."""
    if kind in READERS:
        return templates[("rounded", arity)], READERS[kind]
    return templates[("map", arity)], None


def loop(kind: str, arity: int, scalar, fix=None) -> Twin:
    """The compiled loop of a Kernel `kind` and arity running `scalar` (and `fix` on what it
    marks; one per routine and kind, shared by every format it serves; serial and parallel
    builds, `Twin`)."""
    key = (kind if kind in READERS else "map", arity, scalar, fix)
    hit = _LOOPS.get(key)
    if hit is None:
        tpl, read = template(kind, arity, TEMPLATES if fix is None else TEMPLATES_FIX)
        hit = _LOOPS[key] = Twin(bind(tpl, scalar, read, fix=fix), outputs=2, error_model="numpy")
    return hit


_VIEW = {"f32": np.float32, "f64": np.float64}


def launch(k: Kernel, operands, prof_ftz: bool, call, xp=np, gather_values=None, flags=None):
    """(bits, flags) of kernel `k` on 1-D container-dtype operands: allocates the outputs (every
    loop writes every element), views or gathers the operands as `k.kind` says and calls
    `call(*args)` -- the CPU loop, or a CUDA launch (kernels/numeric/cuda.py) with
    `gather_values(V, x)` reading the device's copy of the value table.  `flags`: a uint8
    buffer of the elements' count to write the flags into (default: a new one)."""
    n = operands[0].shape[0]
    raw = operands[0].dtype
    flags = xp.empty(n, np.uint8) if flags is None else flags
    view = _VIEW.get(k.kind)
    if view is not None:
        out = xp.empty(n, view)
        call(*[x.view(view) for x in operands], out, flags)     # a list: a block's few operands
        return out.view(raw), flags
    if k.kind == "raw":
        out = xp.empty(n, raw)
        call(*operands, out, flags)
        return out, flags
    p = params(k.format, bool(prof_ftz))
    bits = xp.empty(n, raw)
    if k.kind == "vals":
        get = gather_values or gather
        call(k.op, *(get(p.values, x) for x in operands), p.fmt, p.dec, bits, flags)
    else:
        call(k.op, *operands, p.fmt, p.dec, bits, flags)
    return bits, flags


# ---------------------------------------------------------------- entry points

def settle_marked(bits, flags, operands, compute):
    """Every compiled tier's hand-off: the elements marked FALLBACK recomputed, in place, by
    `compute(operands restricted to them) -> (bits, flags)` (the next tier or the reference).
    One flags.max() finds whether there are any (a running count in the loops cost more)."""
    if bits.shape[0] and flags.max() == FALLBACK:
        todo = np.flatnonzero(flags == FALLBACK)
        bits[todo], flags[todo] = compute([x[todo] for x in operands])
    return bits, flags


def by_reference(reference, name, prof):
    """`settle_marked`'s compute for the last tier: the NumPy reference of the operation."""
    return lambda ops: reference(name, *ops, prof=prof)
