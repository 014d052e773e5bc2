"""FP32, FP16 and BF16 computed in wider hardware formats (docs/numerics.md, "Narrow formats in
wider hardware formats"): the cases each statement there must get right, against Berkeley
SoftFloat (FP32, FP16) and the exact-rational definitions of op_reference.py (BF16, FP16), every
element settled in the SIMD pass, and, with `-m slow`, every FP16 and every BF16 operand pair of
TADD, TSUB, TMUL and TDIV against NumPy/ml_dtypes arithmetic with flags from the exact value.
"""
import ml_dtypes
import numba as nb
import numpy as np
import pytest

import op_reference as R
from isa.datatypes import datatype
from kernels import numeric
from kernels.numeric import fast, fastvec, rn, tiers
from kernels.numeric.flags import DZ, NV, NX, OF, UF
from kernels.numeric.profiles import PROFILES
from test_ops_float import assert_same, softfloat
from test_specials import mixed

IEEE = PROFILES["ieee"]
SIMD = {"fastvec", "fastdiv-simd"}


def independent(op, name, *ops):
    return R.reference(op, name, *ops) if name == "BF16" else softfloat(op, name, *ops)


def f32(x):
    return np.asarray(x, np.float32).view(np.uint32)


def bf16(x):
    return (f32(x) >> np.uint32(16)).astype(np.uint16)


def f16(x):
    return np.asarray(x, np.float16).view(np.uint16)


# ---------------------------------------------------------------- FMA: round to odd breaks the tie

def test_fma_whose_wide_sum_is_a_midpoint_rounds_toward_the_exact_value():
    """x*y is exactly a midpoint of the destination's grid and z is far below its last wide bit:
    the wide sum is the midpoint itself, the exact value lies just beside it, and only the sign
    of TwoSum's error (round to odd) says on which side; RNE of the wide sum would pick the even
    neighbour half of the time."""
    # FP16: 3 * 683 = 2049 = 2^11 + 1, a midpoint of the 11-bit grid; z = +-(the smallest subnormals)
    x16 = f16([3.0, 3.0, -3.0, 6.0, 1.5, 3.0 * 2 ** -6])
    y16 = f16([683.0 / 64, 683.0 / 64, 683.0 / 64, 683.0 / 256, 683.0 / 2 ** 10, 683.0 / 8])
    z16 = np.array([0x0001, 0x8001, 0x0001, 0x8003, 0x0002, 0x8001], np.uint16)
    assert_same("TFMA.FP16 midpoint", numeric.elementwise("TFMA", "FP16", x16, y16, z16),
                softfloat("TFMA", "FP16", x16, y16, z16), (x16, y16, z16))
    # BF16: 7 * 37 = 259, a midpoint of the 8-bit grid at [256, 512)
    xb = bf16([7.0, 7.0, -7.0, 7.0 * 2 ** -100, 7.0 * 2 ** 60])
    yb = bf16([37.0, 37.0, 37.0, 37.0 * 2 ** -20, 37.0])
    zb = np.array([0x0001, 0x8001, 0x8001, 0x0001, 0x0080], np.uint16)
    assert_same("TFMA.BF16 midpoint", numeric.elementwise("TFMA", "BF16", xb, yb, zb),
                R.reference("TFMA", "BF16", xb, yb, zb), (xb, yb, zb))
    # FP32: 3 * 5592407 = 2^24 + 5, a midpoint of the 24-bit grid
    x32 = f32([3.0, 3.0, -3.0, 3.0 * 2 ** -60, 3.0 * 2 ** 50])
    y32 = f32([5592407.0, 5592407.0, 5592407.0, 5592407.0 * 2 ** -70, 5592407.0])
    z32 = np.array([0x00000001, 0x80000001, 0x80000001, 0x00000001, 0x3F800000], np.uint32)
    assert_same("TFMA.FP32 midpoint", numeric.elementwise("TFMA", "FP32", x32, y32, z32),
                softfloat("TFMA", "FP32", x32, y32, z32), (x32, y32, z32))


# ---------------------------------------------------------------- tininess and subnormal results

def around(values, fmt, spread, seed):
    """Codes within `spread` ulps of each value's encoding (both signs)."""
    codes = {"FP32": f32, "FP16": f16, "BF16": bf16}[fmt](values).astype(np.int64)
    rng = np.random.default_rng(seed)
    near = (codes[:, None] + rng.integers(-spread, spread + 1, (codes.size, 64))).ravel()
    raw = np.uint32 if fmt == "FP32" else np.uint16
    sign = np.uint64(1 << (31 if fmt == "FP32" else 15))
    near = near[near >= 0].astype(np.uint64)
    return np.concatenate([near, near | sign]).astype(raw)


@pytest.mark.parametrize("name", ("FP32", "FP16", "BF16"))
@pytest.mark.parametrize("op", ("TMUL", "TDIV", "TFMA"))
def test_results_around_the_tininess_threshold_and_in_the_subnormal_range(op, name):
    """Products, quotients and fmas landing just below, at and above the smallest normal and in
    the subnormal range, from normal and subnormal operands."""
    emin = {"FP32": -126, "FP16": -14, "BF16": -126}[name]
    rng = np.random.default_rng(hash((op, name)) % 2 ** 32)
    a = around([2.0 ** (emin // 2), 1.5 * 2.0 ** (emin // 2), 2.0 ** (emin + 3), 0.75], name, 40, 1)
    b = a[rng.permutation(a.size)]
    if op == "TDIV":
        b = around([2.0 ** -(emin // 2), 1.5 * 2.0 ** -(emin // 2), 8.0, 1.25], name, 40, 2)[: a.size]
        a = a[: b.size]
    ops = [a, b] if op != "TFMA" else [a, b, around([2.0 ** emin, 2.0 ** (emin - 3)], name, 200, 3)[: a.size]]
    n = min(x.size for x in ops)
    ops = [x[:n] for x in ops]
    assert_same(f"{op}.{name} tiny", numeric.elementwise(op, name, *ops), independent(op, name, *ops), ops)


@pytest.mark.parametrize("name", ("FP32", "FP16", "BF16"))
def test_quotients_that_round_to_the_smallest_normal_or_overflow(name):
    emin, top = {"FP32": (-126, 127), "FP16": (-14, 15), "BF16": (-126, 127)}[name]
    x = around([2.0 ** (emin + 5), 2.0 ** (top - 2)], name, 20, 4)
    y = around([2.0 ** 5, 2.0 ** -3, 1.0], name, 20, 5)
    n = min(x.size, y.size)
    assert_same(f"TDIV.{name} edges", numeric.elementwise("TDIV", name, x[:n], y[:n]),
                independent("TDIV", name, x[:n], y[:n]), (x[:n], y[:n]))


def test_every_fp16_square_root_matches_softfloat():
    x = np.arange(1 << 16, dtype=np.uint16)
    assert_same("TSQRT.FP16", numeric.elementwise("TSQRT", "FP16", x), softfloat("TSQRT", "FP16", x), (x,))


# ---------------------------------------------------------------- one pass, no marks

@pytest.mark.parametrize("name", ("FP32", "FP16", "BF16"))
def test_the_simd_pass_settles_every_element_special_and_subnormal_ones_included(name):
    dt = datatype(name)
    for op in ("TADD", "TSUB", "TMUL", "TFMA", "TDIV", "TRECIP", "TSQRT"):
        arity = {"TFMA": 3, "TRECIP": 1, "TSQRT": 1}.get(op, 2)
        t = tiers.select(op, dt, IEEE, arity)
        if t.name not in SIMD:
            continue
        ops = mixed(name, 20000, arity, 9)
        with np.errstate(all="ignore"):
            bits, flags = tiers.run_kernels(t, op, name, ops, IEEE)
        assert not (flags == fast.FALLBACK).any(), (op, name)


# ---------------------------------------------------------------- the binary16 conversions

def _decoder(half_f32):
    """FP16 codes -> binary32 bits through the scalar conversion `half_f32`, compiled over an
    array (a closure: the hardware conversions are intrinsics, which no compiled function
    takes as an argument; built only when the test runs it)."""
    @nb.njit
    def run(h):
        out = np.empty(h.shape[0], np.uint32)
        for i in range(h.shape[0]):
            out[i] = rn.f32_bits(half_f32(h[i]))
        return out
    return run


def _encoder(f32_half):
    """binary32 bits -> FP16 codes through the scalar conversion `f32_half` (as `_decoder`)."""
    @nb.njit
    def run(u):
        out = np.empty(u.shape[0], np.uint16)
        for i in range(u.shape[0]):
            out[i] = f32_half(rn.bits_f32(u[i]))
        return out
    return run


def test_the_binary16_conversions_equal_the_definition():
    """The hardware conversions and, for CPUs without F16C, the integer routines that replace
    them: every FP16 code decodes to its value (a NaN quiet, sign and payload kept, left-aligned)
    and binary32 values encode to nearest even as NumPy's float16 cast (IEEE 754) does, NaNs
    quiet with the sign and the payload's top 9 bits."""
    h = np.arange(1 << 16, dtype=np.uint16)
    with np.errstate(invalid="ignore"):
        want = h.view(np.float16).astype(np.float32).view(np.uint32)
    nan = (h & np.uint16(0x7FFF)) > np.uint16(0x7C00)
    hn = h[nan].astype(np.uint32)
    want[nan] = ((hn & np.uint32(0x8000)) << np.uint32(16)) | np.uint32(0x7FC00000) | ((hn & np.uint32(0x3FF)) << np.uint32(13))
    decoders = [fastvec.sw_half_f32] + ([rn.hw_half_f32] if rn.HARDWARE_HALF else [])
    for dec in map(_decoder, decoders):
        assert np.array_equal(dec(h), want), dec
    rng = np.random.default_rng(12)
    u = np.concatenate([rng.integers(0, 1 << 32, 400000, dtype=np.uint64).astype(np.uint32),
                        (np.arange(0x33000000, 0x48000000, 0x1000, dtype=np.uint32)[:, None]
                         + np.array([0, 1, 0xFFF, 0x1000 - 1, 0x800], np.uint32)).ravel()])
    u = np.concatenate([u, u | np.uint32(0x80000000)])
    with np.errstate(invalid="ignore", over="ignore"):
        want = u.view(np.float32).astype(np.float16).view(np.uint16)
    nan = np.isnan(u.view(np.float32))
    keep = ((u >> np.uint32(16)) & np.uint32(0x8000)) | np.uint32(0x7E00) | ((u >> np.uint32(13)) & np.uint32(0x3FF))
    want[nan] = keep[nan].astype(np.uint16)
    for enc in map(_encoder, [fastvec.sw_f32_half] + ([rn.hw_f32_half] if rn.HARDWARE_HALF else [])):
        assert np.array_equal(enc(u), want), enc


# ---------------------------------------------------------------- exhaustive (slow)

_HALF = {"FP16": (np.float16, 0x7E00, 2.0 ** -14 - 2.0 ** -26),
         "BF16": (ml_dtypes.bfloat16, 0x7FC0, 2.0 ** -126 - 2.0 ** -135)}


def plain_reference(op, name, a, b):
    """(codes, flags) of op on FP16/BF16 codes from NumPy binary64 arithmetic and NumPy /
    ml_dtypes rounding, independently of kernels.numeric.  A sum or difference is v = s + e
    exactly (TwoSum in binary64), a product is exact in binary64, a quotient q = RN53(x/y); the
    cast to the format rounds s, p or q to nearest even, which is RN_p(v): double rounding is
    innocuous for +, -, *, / when 53 >= 2p + 2 (Figueroa 1995; a sum or product below the
    normal range is exact in binary64; quotients: docs/numerics.md, Lemma D), ml_dtypes' BF16
    cast going through binary32 (RN8(RN24(.)), 24 >= 2*8 + 2).  Flags from the exact value:
    NX when the result differs from v (for quotients: result * y != x, an exact product), UF
    when inexact and |v| below the tininess threshold (quotients: |x| < T |y|, exact), OF|NX
    for a finite v giving an infinity, NV for a NaN from non-NaN operands or a signalling NaN
    operand, DZ for a finite nonzero x / 0; a NaN result is the canonical NaN."""
    with np.errstate(all="ignore"):
        return _plain(op, name, a, b)


def _plain(op, name, a, b):
    ftype, nan_code, tiny_t = _HALF[name]
    x = a.view(ftype).astype(np.float64)
    y = b.view(ftype).astype(np.float64)
    if op == "TSUB":
        y = -y
    if op in ("TADD", "TSUB"):
        v = x + y
        bb = v - x
        e = (x - (v - bb)) + (y - bb)
        e = np.where(np.isfinite(v), e, 0.0)
        r = v.astype(ftype)
        rd = r.astype(np.float64)
        nx = (rd != v) | (e != 0)
        tiny = np.abs(v) < tiny_t
    elif op == "TMUL":
        v = x * y
        r = v.astype(ftype)
        rd = r.astype(np.float64)
        nx = rd != v
        tiny = np.abs(v) < tiny_t
    else:
        v = x / y
        r = v.astype(ftype)
        rd = r.astype(np.float64)
        nx = rd * y != x
        tiny = np.abs(x) < tiny_t * np.abs(y)
    finite = np.isfinite(x) & np.isfinite(y) & ((y != 0) | (op != "TDIV"))      # v finite
    code = r.view(np.uint16).copy()
    code[np.isnan(v)] = nan_code
    inf, quiet = (0x7C00, 0x0200) if name == "FP16" else (0x7F80, 0x0040)
    snan = [((c & 0x7FFF) > inf) & ((c & quiet) == 0) for c in (a, b)]
    nv = (np.isnan(v) & ~np.isnan(x) & ~np.isnan(y)) | snan[0] | snan[1]
    dz = (op == "TDIV") & (y == 0) & np.isfinite(x) & (x != 0)
    of = finite & np.isinf(rd)
    flags = np.where(finite, (nx | of) * NX | (nx & tiny) * UF | of * OF, 0)
    flags = flags | nv * NV | dz * DZ
    return code, flags.astype(np.uint8)


def test_the_plain_reference_agrees_with_softfloat_and_exact_rationals():
    """The exhaustive test's reference, on random and edge codes, against the references the
    other tests use (SoftFloat for FP16, exact rationals for BF16)."""
    for name in ("FP16", "BF16"):
        a = mixed(name, 30000, 1, 21)[0]
        b = mixed(name, 30000, 1, 22)[0]
        for op in ("TADD", "TSUB", "TMUL", "TDIV"):
            assert_same(f"plain {op}.{name}", plain_reference(op, name, a, b), independent(op, name, a, b), (a, b))


CHUNKS = 256            # all 2^32 operand pairs of a 16-bit format in 256 chunks of 2^24


def operand_pairs(k):
    """Chunk k of the 2^32 operand pairs: first operands 256k .. 256k + 255, each against all
    2^16 codes (2^24 pairs; with the reference's float64 temporaries 1.7 GB peak resident)."""
    first = np.arange(k * 256, k * 256 + 256, dtype=np.uint16)
    return np.repeat(first, 1 << 16), np.tile(np.arange(1 << 16, dtype=np.uint16), 256)


def check_pair_chunk(op, name, k):
    a, b = operand_pairs(k)
    assert_same(f"{op}.{name} chunk {k}", numeric.elementwise(op, name, a, b), plain_reference(op, name, a, b), (a, b))


def test_the_chunks_are_every_operand_pair_once():
    """The exhaustive test's 256 chunks: disjoint first-operand ranges covering all 2^16 codes,
    each against all 2^16 second operands, so 2^32 pairs, each once."""
    firsts = np.concatenate([np.unique(operand_pairs(k)[0]) for k in (0, 1, CHUNKS - 1)])
    assert firsts.tolist() == list(range(512)) + list(range(65280, 65536))
    a, b = operand_pairs(7)
    assert a.size == b.size == 1 << 24
    assert np.unique(a.astype(np.uint32) << 16 | b).size == 1 << 24
    assert CHUNKS * 256 == 1 << 16


@pytest.mark.slow
@pytest.mark.parametrize("name", ("FP16", "BF16"))
@pytest.mark.parametrize("op", ("TADD", "TSUB", "TMUL", "TDIV"))
def test_every_operand_pair_matches_the_plain_reference(op, name):
    """All 2^32 operand pairs (256 chunks of 2^24, 1.7 GB peak resident), against NumPy /
    ml_dtypes arithmetic with flags from the exact value (plain_reference, independent of
    kernels.numeric: sums, differences and products of two 16-bit operands are exact in binary64
    and rounded once; a quotient is RN53 of the exact one, then rounded, innocuous by
    53 >= 2*24 + 2 and 24 >= 2*8 + 2 / 2*11 + 2 as its docstring states; the rational reference
    would take hours).  Runtime (docs/numerics.md, "Validation"), measured on one chunk of each op
    and format on the 2-core dev box, one Numba thread: 3.0-4.3 s CPU a chunk (20-35 s wall at load
    11), so 13-18 minutes per op and format on a free core and about 2-2.5 hours for all eight.
    One chunk alone: `check_pair_chunk(op, name, k)`."""
    for k in range(CHUNKS):
        check_pair_chunk(op, name, k)
