"""TCVT between FP32 and FP16 / BF16 (the compiled fast loops, kernels/numeric/fastconvert.py)
against a reference written here from docs/numerics.md "Conversion", not from the emulator:

- FP16 / BF16 -> FP32 is exact: every value is a binary32 value; a NaN keeps its sign and its
  payload left-aligned, comes out quiet, and raises NV when it was signalling; profile ftz reads a
  subnormal source as the zero of its sign.  Exhaustive over all 2^16 codes.
- FP32 -> FP16 / BF16 under RNE: the value rounded once to nearest even (np.rint on the exactly
  scaled binary64 value), infinity from a finite value with OF|NX, NX when inexact, UF when
  inexact and tiny after rounding (rounded to the destination's precision with unbounded
  exponent, below its min normal), NaN payloads truncated to the destination with the quiet bit
  set, NV for a signalling NaN, no flag for an infinity; profile ftz reads a subnormal source as
  zero (no flag) and flushes a subnormal result to the zero of its sign with UF|NX.
  Every edge plus random codes by default; all 2^32 codes under `pytest -m slow`.
"""
import numpy as np
import pytest

from kernels import numeric
from kernels.numeric import flags as FL
from kernels.numeric.convert import InvalidEncoding

ALL16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


# ---------------------------------------------------------------------------------------------
# widening reference
# ---------------------------------------------------------------------------------------------
def widen_ref(h, src, ftz):
    h = h.astype(np.uint32)
    if src == "FP16":
        sign, e, t, tbits = (h >> 15) << 31, (h >> 10) & 0x1F, h & 0x3FF, 10
        value = h.astype(np.uint16).view(np.float16).astype(np.float64)   # exact
        emax = 0x1F
    else:
        sign, e, t, tbits = (h >> 15) << 31, (h >> 7) & 0xFF, h & 0x7F, 7
        value = None
        emax = 0xFF
    nan = (e == emax) & (t != 0)
    if value is not None:
        out = np.where(nan, 0.0, value).astype(np.float32).view(np.uint32)
    else:
        out = h << 16                                                   # BF16 is FP32's high half
    payload = (t & ((1 << (tbits - 1)) - 1)).astype(np.uint32) << np.uint32(23 - tbits)
    out = np.where(nan, sign | 0x7F800000 | 0x400000 | payload, out).astype(np.uint32)
    fl = np.where(nan & ((t >> (tbits - 1)) == 0), FL.NV, 0).astype(np.uint8)
    if ftz:
        out = np.where((e == 0) & (t != 0), sign, out).astype(np.uint32)
    return out, fl


@pytest.mark.parametrize("profile", ["ieee", "ftz"])
@pytest.mark.parametrize("src", ["FP16", "BF16"])
def test_every_16_bit_code_widens_to_fp32_exactly(src, profile):
    want_b, want_f = widen_ref(ALL16, src, profile == "ftz")
    for rmode in ("RNE", "DEFAULT", "RTZ"):                 # exact: the mode changes nothing
        b, f = numeric.convert(ALL16, src, "FP32", rmode=rmode, profile=profile)
        assert np.array_equal(b, want_b) and np.array_equal(f, want_f)
        b, f = numeric.convert(ALL16, src, "FP32", rmode=rmode, profile=profile)   # remembered call
        assert np.array_equal(b, want_b) and np.array_equal(f, want_f)


# ---------------------------------------------------------------------------------------------
# narrowing reference (RNE)
# ---------------------------------------------------------------------------------------------
FMT = {"FP16": dict(t=10, emin=-14, emax=15, ebits=5), "BF16": dict(t=7, emin=-126, emax=127, ebits=8)}


def _rint_at(v, qe):
    """v rounded to nearest even at quantum 2^qe (exact scalings in binary64)."""
    return np.ldexp(np.rint(np.ldexp(v, -qe)), qe)


def narrow_ref(x, dst, ftz):
    f = FMT[dst]
    t, emin, emax, ebits = f["t"], f["emin"], f["emax"], f["ebits"]
    x = x.astype(np.uint32)
    a = x & np.uint32(0x7FFFFFFF)
    sign16 = ((x >> 31) << (ebits + t)).astype(np.uint32)
    nan, inf = a > 0x7F800000, a == 0x7F800000
    sub_in = (a < 0x00800000) & (a != 0)
    v = np.where(nan | inf, 0, x).astype(np.uint32).view(np.float32).astype(np.float64)
    if ftz:
        v = np.where(sub_in, np.copysign(0.0, v), v)              # a subnormal source reads as zero
    _, ex = np.frexp(v)
    e = ex.astype(np.int64) - 1                                   # |v| in [2^e, 2^(e+1))
    r = _rint_at(v, np.maximum(e, emin) - t)
    over = np.abs(r) >= np.ldexp(1.0, emax + 1)
    nx = (r != v) | over                                          # infinity for a finite value is inexact
    tiny = np.abs(_rint_at(v, e - t)) < np.ldexp(1.0, emin)       # after rounding, unbounded exponent
    top = (1 << ebits) - 1
    if dst == "FP16":
        code = np.where(over, 0, r).astype(np.float16).view(np.uint16).astype(np.uint32)
    else:
        code = np.where(over, 0, r).astype(np.float32).view(np.uint32) >> 16
    code = np.where(over, sign16 | (top << t), code).astype(np.uint32)
    fl = (nx * FL.NX) | (over * FL.OF) | ((nx & tiny) * FL.UF)
    if ftz:
        flush = ((code & ~sign16) < (1 << t)) & ((code & ~sign16) != 0)
        code = np.where(flush, sign16, code)
        fl = np.where(flush, FL.UF | FL.NX, fl)
    payload = (x >> (23 - t)) & ((1 << (t - 1)) - 1)
    code = np.where(inf, sign16 | (top << t), code)
    code = np.where(nan, sign16 | (top << t) | (1 << (t - 1)) | payload, code)
    fl = np.where(inf, 0, fl)
    fl = np.where(nan, np.where((x & 0x400000) == 0, FL.NV, 0), fl)
    return code.astype(np.uint16), fl.astype(np.uint8)


def edges():
    """Zeros, subnormal boundaries, min normal and one ulp either side, the overflow threshold
    and one ulp below, ties (to even and to odd) in the normal and subnormal ranges, the
    tininess boundary, infinities, quiet and signalling NaNs with payloads, both signs."""
    f32 = lambda v: np.array(v, np.float64).astype(np.float32).view(np.uint32)
    pts = []
    for dst, f in FMT.items():
        t, emin, emax = f["t"], f["emin"], f["emax"]
        keys = [np.ldexp(1.0, emin), np.ldexp(1.0, emin - t), np.ldexp(1.0, emin - t - 1),
                np.ldexp(1.0, emin) - np.ldexp(1.0, emin - t - 1),            # rounds up to min normal
                np.ldexp(1.0, emin) - np.ldexp(1.0, emin - t - 2),            # the tininess boundary
                np.ldexp(2.0 - np.ldexp(1.0, -t), emax),                       # max finite
                np.ldexp(2.0 - np.ldexp(1.0, -t - 1), emax),                   # its tie: overflow
                1.0 + np.ldexp(1.0, -t - 1), 1.0 + 3 * np.ldexp(1.0, -t - 1),  # ties to even, to odd
                np.ldexp(3.0, emin - t - 1), np.ldexp(5.0, emin - t - 1), 1.0, 65504.0, 65520.0]
        for k in keys:
            c = int(f32(k))
            pts += [c - 1, c, c + 1]
    pts += [0, 1, 2, 0x7FFFFF, 0x800000, 0x7F7FFFFF, 0x7F800000, 0x7F800001, 0x7FBFFFFF, 0x7FC00000,
            0x7FC00001, 0x7FFFFFFF, 0x7FA00000, 0x7F802000, 0x7F801FFF, 0x7FC02000, 0x7F810000, 0x7F8FFFFF]
    pts = np.array(pts, np.int64) & 0x7FFFFFFF
    pts = np.concatenate([pts, pts | 0x80000000]).astype(np.uint32)
    # every high half with low halves 0, 0x0001, 0x1000, 0x2000 (FP16 ties), 0x7FFF, 0x8000 (BF16 ties), 0xFFFF
    hi = np.arange(1 << 16, dtype=np.uint32) << np.uint32(16)
    lows = [hi | np.uint32(lo) for lo in (0, 1, 0x0FFF, 0x1000, 0x1001, 0x2000, 0x3000, 0x7FFF, 0x8000, 0x8001, 0xFFFF)]
    return np.concatenate([pts] + lows)


def sample():
    rng = np.random.default_rng(7)
    return np.concatenate([edges(), rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32)])


@pytest.mark.parametrize("profile", ["ieee", "ftz"])
@pytest.mark.parametrize("dst", ["FP16", "BF16"])
def test_fp32_narrows_rne_with_flags_on_every_edge_and_random_codes(dst, profile):
    x = sample()
    want_b, want_f = narrow_ref(x, dst, profile == "ftz")
    for _ in range(2):                                        # the first call and the remembered one
        b, f = numeric.convert(x, "FP32", dst, rmode="RNE", profile=profile)
        bad = np.flatnonzero((b != want_b) | (f != want_f))
        assert bad.size == 0, [(hex(x[i]), hex(b[i]), hex(want_b[i]), f[i], want_f[i]) for i in bad[:5]]


def test_the_remembered_call_still_validates_converts_and_keeps_shapes():
    x = np.array([[0x3F800000, 0x7F800001], [0x00000001, 0xC7800000]], np.uint32)
    want = numeric.convert(x, "FP32", "FP16", rmode="RNE")
    for arg in (x, x.astype(np.int64), np.asfortranarray(x), x.astype(">u4"), x.T.copy().T):
        b, f = numeric.convert(arg, "FP32", "FP16", rmode="RNE")
        assert b.shape == (2, 2) and np.array_equal(b, want[0]) and np.array_equal(f, want[1])
    with pytest.raises(InvalidEncoding):
        numeric.convert(np.array([-1], np.int64), "FP16", "FP32")
    numeric.convert(np.array([1], np.uint16), "FP16", "FP32")
    with pytest.raises(InvalidEncoding):
        numeric.convert(np.array([-1], np.int64), "FP16", "FP32")
    # another profile or mode is another call: ftz flushes, RTZ truncates
    h = np.array([0x0001], np.uint16)
    assert int(numeric.convert(h, "FP16", "FP32", profile="ftz")[0][0]) == 0
    assert int(numeric.convert(h, "FP16", "FP32")[0][0]) == 0x33800000
    y = np.array([0x3F801FFF], np.uint32)
    assert int(numeric.convert(y, "FP32", "FP16", rmode="RTZ")[0][0]) == 0x3C00
    assert int(numeric.convert(y, "FP32", "FP16", rmode="RNE")[0][0]) == 0x3C01


# ---------------------------------------------------------------------------------------------
# FP32 -> FP16 in blocks (fastconvert.BLOCK elements): a block whose every |x| is zero or in
# [2^-14 - 2^-26, 65520) takes the common case, any other block the exact loop; neither may show
# in the bits, whichever element of which block holds the special value
# ---------------------------------------------------------------------------------------------
TINY, OVERFLOW = 0x387FF000, 0x477FF000       # binary32 |x|: tiny after rounding below, infinity from


def special_codes():
    """One |x| of every class the common case leaves to the exact loop, and its neighbours on the
    common side: the tininess boundary, subnormal results and ties among them, the smallest
    subnormal and half of it, the overflow threshold and max finite, infinity, quiet and
    signalling NaNs with and without payloads."""
    return [TINY - 1, TINY - 0x1000, 0x38000000, 0x33800000, 0x33000000, 0x33000001, 0x32FFFFFF,
            0x37801000, 0x00000001, 0x007FFFFF, 0x00800000, OVERFLOW, OVERFLOW + 1, 0x477FFFFF,
            0x7F7FFFFF, 0x7F800000, 0x7F800001, 0x7FBFFFFF, 0x7FA02000, 0x7FC00000, 0x7FC02001,
            0x7FFFFFFF]


def common_codes(rng, n):
    """n FP32 codes of the common case: |x| zero (a tenth of them) or anywhere in [TINY,
    OVERFLOW) (ties, exact values and the range's ends included), either sign."""
    a = rng.integers(TINY, OVERFLOW, n, dtype=np.uint64).astype(np.uint32)
    low13 = np.uint32(0x1FFF)
    exact, tie = rng.random(n) < 0.1, rng.random(n) < 0.1
    a[exact] &= ~low13                                            # exact in binary16
    a[tie] = (a[tie] & ~low13) | np.uint32(0x1000)                 # halfway between two
    a = np.clip(a, TINY, OVERFLOW - 1).astype(np.uint32)
    a[rng.random(n) < 0.1] = 0
    a[:4] = [TINY, OVERFLOW - 1, 0x477FE000, 0x38800000]
    return a | (rng.integers(0, 2, n, dtype=np.uint64).astype(np.uint32) << np.uint32(31))


@pytest.mark.parametrize("first", [0, 7])
@pytest.mark.parametrize("profile", ["ieee", "ftz"])
def test_fp32_to_fp16_blocks_give_the_reference_wherever_a_special_value_sits(profile, first):
    """Blocks start after the source's elements before its first 64-byte boundary (`lead`), then
    every BLOCK elements: one special value at a time on each side of each block edge."""
    from kernels.numeric.fastconvert import BLOCK
    rng = np.random.default_rng(11 + first)
    n = 3 * BLOCK + 77                                   # three whole blocks and a short one
    room = common_codes(rng, n + 16)
    base = room[first:first + n]
    a = base & np.uint32(0x7FFFFFFF)
    assert np.all((a == 0) | ((a >= TINY) & (a < OVERFLOW)))
    want_b, want_f = narrow_ref(base, "FP16", profile == "ftz")
    for _ in range(2):                                   # the first call and the remembered one
        b, f = numeric.convert(base, "FP32", "FP16", rmode="RNE", profile=profile)
        assert np.array_equal(b, want_b) and np.array_equal(f, want_f)
    x = base                                             # one array: its blocks stay where they are
    lead = (64 - x.ctypes.data % 64) % 64 // 4
    edges = [0, lead, lead + BLOCK, lead + 2 * BLOCK, lead + 3 * BLOCK]
    positions = sorted({p for e in edges for p in (e - 1, e) if 0 <= p < n} | {n - 1})
    for code in special_codes():
        for sign in (0, 0x80000000):
            for p in positions:
                keep = x[p]
                x[p] = code | sign
                want_b, want_f = narrow_ref(x, "FP16", profile == "ftz")
                b, f = numeric.convert(x, "FP32", "FP16", rmode="RNE", profile=profile)
                bad = np.flatnonzero((b != want_b) | (f != want_f))
                assert bad.size == 0, (hex(code | sign), p, [(int(i), hex(x[i]), hex(b[i]), hex(want_b[i]), f[i],
                                                              want_f[i]) for i in bad[:5]])
                x[p] = keep


@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 63, 4095, 4097, 65536 + 3])
@pytest.mark.parametrize("pair", [("FP32", "FP16"), ("FP16", "FP32"), ("FP32", "BF16"), ("BF16", "FP32")])
def test_remembered_calls_of_any_length_return_their_own_writable_arrays(pair, n):
    """The remembered calls write into arrays with room to start on a 64-byte boundary and
    return the n elements from there (the loops take the source's elements before its first
    64-byte boundary apart): right values, shape and dtype, writable, and no two calls share
    memory, wherever the source starts."""
    src, dst = pair
    rng = np.random.default_rng(n)
    raw = np.uint32 if src == "FP32" else np.uint16
    room = rng.integers(0, 1 << (32 if src == "FP32" else 16), n + 40, dtype=np.uint64).astype(raw)
    for first in (1, 3, 8, 17, 31):                      # sources starting anywhere in a cache line
        x = room[first:first + n]
        ref = narrow_ref(x, dst, False) if src == "FP32" else widen_ref(x, src, False)
        b, f = numeric.convert(x, src, dst, rmode="RNE")
        assert np.array_equal(b, ref[0]) and np.array_equal(f, ref[1]), first
    x = room[:n].copy()
    ref = narrow_ref(x, dst, False) if src == "FP32" else widen_ref(x, src, False)
    got = [numeric.convert(x, src, dst, rmode="RNE") for _ in range(3)]
    for b, f in got:
        assert b.shape == f.shape == (n,) and b.dtype == ref[0].dtype and f.dtype == np.uint8
        assert np.array_equal(b, ref[0]) and np.array_equal(f, ref[1])
        assert b.flags.writeable and f.flags.writeable
    assert not np.shares_memory(got[1][0], got[2][0]) and not np.shares_memory(got[1][1], got[2][1])
    b, f = numeric.convert(x.reshape(1, n, 1), src, dst, rmode="RNE")
    assert b.shape == f.shape == (1, n, 1) and np.array_equal(b.ravel(), ref[0])


@pytest.mark.slow
@pytest.mark.parametrize("dst", ["FP16", "BF16"])
def test_every_fp32_code_narrows_rne_with_flags(dst):
    step = 1 << 24
    for lo in range(0, 1 << 32, step):
        x = np.arange(lo, lo + step, dtype=np.uint64).astype(np.uint32)
        want_b, want_f = narrow_ref(x, dst, False)
        b, f = numeric.convert(x, "FP32", dst, rmode="RNE")
        assert np.array_equal(b, want_b) and np.array_equal(f, want_f), hex(lo)


def test_a_remembered_conversion_runs_no_compiled_loop_while_the_compiled_paths_are_off(monkeypatch):
    """interp.interpreted(): "no compiled path serves" -- not even a TCVT call that an earlier,
    compiled call taught convert() to send straight to its loop."""
    import importlib
    cv = importlib.import_module("kernels.numeric.convert")      # the package re-exports the function
    from kernels.numeric.interp import interpreted
    bits = np.arange(0, 1 << 16, 7, dtype=np.uint32) << 16 | 0x1234
    compiled = cv.convert(bits, "FP32", "FP16", "RNE")
    assert any(k[:2] == ("FP32", "FP16") for k in cv._DIRECT)

    def no_loop(*a):
        raise AssertionError("a remembered compiled loop ran while interpreted")
    monkeypatch.setattr(cv, "_DIRECT", {k: no_loop for k in cv._DIRECT})
    with interpreted():
        got = cv.convert(bits, "FP32", "FP16", "RNE")
    assert np.array_equal(got[0], compiled[0]) and np.array_equal(got[1], compiled[1])


HOLDS = {"the result": lambda r: r, "its bits": lambda r: r[0], "its flags": lambda r: r[1],
         "a view of the bits": lambda r: r[0][1:, ::2], "a view of the flags": lambda r: r[1][-1],
         "two views of each": lambda r: (r[0][1:], r[0][:-1], r[1][1:], r[1][:-1]),
         "the bits' buffer": lambda r: r[0].base, "a memoryview of the flags": lambda r: memoryview(r[1]),
         "a weak reference to the bits": lambda r: __import__("weakref").ref(r[0])}


@pytest.mark.parametrize("hold", list(HOLDS))
@pytest.mark.parametrize("pair", [("FP32", "FP16"), ("FP16", "FP32"), ("FP32", "BF16"), ("BF16", "FP32")])
def test_a_result_anyone_holds_keeps_its_bytes_through_later_calls(pair, hold):
    """The remembered calls write a shape's last outputs again only when nothing outside holds
    them: whatever part of a result is held (the arrays, a view, the buffer, a memoryview, a weak
    reference), it keeps its bytes while calls of the same shape convert other data -- from
    sources starting at the same place in a cache line (the results then start where the last
    ones did) and elsewhere (they start elsewhere in the same buffers)."""
    src, dst = pair
    raw = np.uint32 if src == "FP32" else np.uint16
    rng = np.random.default_rng(5)
    n, stride = 4 * 33 * 17, 64 * 36                 # sources 64 bytes times k apart, plus 0-2 elements
    pool = rng.integers(0, 1 << (8 * np.dtype(raw).itemsize), 8 * stride, dtype=np.uint64).astype(raw)
    xs = [pool[k * stride + k % 3:k * stride + k % 3 + n].reshape(4, 33, 17) for k in range(8)]
    weak = hold.startswith("a weak")
    for k in range(8):
        r = numeric.convert(xs[k], src, dst, rmode="RNE")
        held = HOLDS[hold](r)
        kept = np.array(held() if weak else held, copy=True)
        del r
        for x in (xs[(k + 1) % 8], xs[(k + 3) % 8], xs[(k + 5) % 8]):
            b, f = numeric.convert(x, src, dst, rmode="RNE")
            ref = narrow_ref(x, dst, False) if src == "FP32" else widen_ref(x, src, False)
            assert np.array_equal(b, ref[0]) and np.array_equal(f, ref[1])
            del b, f                                  # nothing but `held` holds a result
        now = held() if weak else held
        assert now is None or np.array_equal(np.asarray(now), kept), k    # a weak reference may die, not change
        del held, now


@pytest.mark.parametrize("pair", [("FP32", "FP16"), ("FP16", "FP32")])
def test_outputs_nobody_holds_are_written_again(pair):
    """A result dropped before the next call of its shape: that call writes the same buffers (the
    allocation it saves is a fifth of a 64K-element call), with its own values."""
    src, dst = pair
    raw = np.uint32 if src == "FP32" else np.uint16
    rng = np.random.default_rng(6)
    x, y = (rng.integers(0, 1 << (8 * np.dtype(raw).itemsize), (4, 128, 128), dtype=np.uint64).astype(raw)
            for _ in range(2))
    numeric.convert(x, src, dst, rmode="RNE")
    b, f = numeric.convert(x, src, dst, rmode="RNE")
    where = (b.base.ctypes.data, f.base.ctypes.data)
    del b, f
    b, f = numeric.convert(y, src, dst, rmode="RNE")
    assert (b.base.ctypes.data, f.base.ctypes.data) == where
    ref = narrow_ref(y, dst, False) if src == "FP32" else widen_ref(y, src, False)
    assert np.array_equal(b, ref[0]) and np.array_equal(f, ref[1])


@pytest.mark.parametrize("pair", [("FP32", "FP16"), ("FP16", "FP32"), ("FP32", "BF16"), ("BF16", "FP32")])
def test_a_source_off_its_element_alignment_converts_like_any_other(pair):
    """The remembered calls run the loop's compiled body without type dispatch only for sources
    aligned to their element size; a source one byte off goes through the dispatcher, same bits."""
    src, dst = pair
    raw = np.dtype(np.uint32 if src == "FP32" else np.uint16)
    rng = np.random.default_rng(9)
    n = 3 * 4096 + 5
    x = rng.integers(0, 1 << (8 * raw.itemsize), n, dtype=np.uint64).astype(raw)
    buf = np.zeros(n * raw.itemsize + 1, np.uint8)
    odd = np.frombuffer(buf.data, dtype=raw, count=n, offset=1)
    buf[1:] = x.view(np.uint8)
    assert not odd.flags.aligned and np.array_equal(odd, x)
    ref = narrow_ref(x, dst, False) if src == "FP32" else widen_ref(x, src, False)
    for arg in (x, odd, x, odd):
        b, f = numeric.convert(arg, src, dst, rmode="RNE")
        assert np.array_equal(b, ref[0]) and np.array_equal(f, ref[1])


@pytest.mark.parametrize("pair", [("FP32", "FP16"), ("FP16", "FP32")])
def test_a_result_altered_and_dropped_is_not_handed_out_altered(pair):
    """A caller may reshape a result in place, reinterpret its dtype or make it read-only before
    dropping it: the next call of that shape still returns arrays of the source's shape, the
    destination's dtype, writable, with the right values (a kept result so altered is not reused)."""
    src, dst = pair
    raw = np.uint32 if src == "FP32" else np.uint16
    out = np.uint16 if dst in ("FP16", "BF16") else np.uint32
    rng = np.random.default_rng(7)
    x = rng.integers(0, 1 << (8 * np.dtype(raw).itemsize), (4, 64, 64), dtype=np.uint64).astype(raw)
    alterations = (lambda r: setattr(r[0], "shape", (-1,)), lambda r: setattr(r[1], "shape", (4, -1)),
                   lambda r: r[0].setflags(write=False), lambda r: setattr(r[0], "dtype", np.int16 if out == np.uint16 else np.int32))
    for alter in alterations:
        r = numeric.convert(x, src, dst, rmode="RNE")
        del r
        r = numeric.convert(x, src, dst, rmode="RNE")
        alter(r)
        del r
        b, f = numeric.convert(x, src, dst, rmode="RNE")
        ref = narrow_ref(x, dst, False) if src == "FP32" else widen_ref(x, src, False)
        assert b.shape == f.shape == x.shape and b.dtype == out and f.dtype == np.uint8
        assert b.flags.writeable and f.flags.writeable
        assert np.array_equal(b, ref[0]) and np.array_equal(f, ref[1])
        del b, f


@pytest.mark.parametrize("pair", [("FP32", "FP16"), ("FP16", "FP32")])
def test_a_source_whose_dtype_is_equal_but_another_object_converts_the_same(pair):
    """The remembered call is found by the call's arguments and the array's dtype object: a source
    with an equal dtype that is another object (here one carrying metadata) takes the long way,
    with the same bits, and the remembered call still serves the plain dtype afterwards."""
    src, dst = pair
    raw = np.dtype(np.uint32 if src == "FP32" else np.uint16)
    other = np.dtype(raw.type, metadata={"from": "elsewhere"})
    assert other == raw and other is not raw
    rng = np.random.default_rng(12)
    x = rng.integers(0, 1 << (8 * raw.itemsize), (3, 5, 7), dtype=np.uint64).astype(raw)
    ref = narrow_ref(x, dst, False) if src == "FP32" else widen_ref(x, src, False)
    for arg in (x, x.view(other), x, x.view(other), x):
        b, f = numeric.convert(arg, src, dst, rmode="RNE")
        assert b.shape == f.shape == x.shape
        assert np.array_equal(b, ref[0]) and np.array_equal(f, ref[1])


@pytest.mark.parametrize("pair", [("FP32", "FP16"), ("FP16", "FP32")])
def test_more_shapes_than_kept_sets_in_turn_each_get_their_own_values(pair):
    """A remembered call keeps one output set a shape, at most KEPT_SHAPES of them: calls cycling
    through more shapes than that, some results held and some dropped, each return their own
    values, and a held result keeps its bytes."""
    from kernels.numeric.fastconvert import KEPT_SHAPES
    src, dst = pair
    raw = np.uint32 if src == "FP32" else np.uint16
    rng = np.random.default_rng(13)
    shapes = [(k + 1, 16) for k in range(KEPT_SHAPES + 3)]
    held = []
    for turn in range(3):
        for i, shape in enumerate(shapes):
            x = rng.integers(0, 1 << (8 * np.dtype(raw).itemsize), shape, dtype=np.uint64).astype(raw)
            ref = narrow_ref(x, dst, False) if src == "FP32" else widen_ref(x, src, False)
            b, f = numeric.convert(x, src, dst, rmode="RNE")
            assert np.array_equal(b, ref[0]) and np.array_equal(f, ref[1]), (turn, shape)
            if (turn + i) % 3 == 0:
                held.append((b, f, b.copy(), f.copy()))
            del b, f
    for b, f, b0, f0 in held:
        assert np.array_equal(b, b0) and np.array_equal(f, f0)


@pytest.mark.parametrize("pair", [("FP32", "FP16"), ("FP16", "FP32"), ("FP32", "BF16"), ("BF16", "FP32")])
def test_the_parallel_builds_convert_like_the_reference(pair):
    """A call of at least fast.PARALLEL_MIN elements runs a loop's parallel build when a core is
    idle (fast.Twin): run that build itself, with every thread Numba has, on 2^20 random codes
    starting anywhere in a cache line (the BF16 loops' parallel builds once wrote wrong bits)."""
    import numba as nb
    from kernels.numeric import fastconvert as fc
    src, dst = pair
    loop = fc.FAST_PAIRS.get(pair) or fc.WIDEN_PAIRS.get(pair)
    if loop is None:
        pytest.skip(f"no loop of its own for {pair} on this CPU")
    raw, out = (np.uint32, np.uint16) if src == "FP32" else (np.uint16, np.uint32)
    rng = np.random.default_rng(21)
    room = rng.integers(0, 1 << (8 * np.dtype(raw).itemsize), (1 << 20) + 8, dtype=np.uint64).astype(raw)
    nb.set_num_threads(nb.config.NUMBA_NUM_THREADS)
    for first in (0, 3):
        x = room[first:first + (1 << 20)]
        ref = narrow_ref(x, dst, False) if src == "FP32" else widen_ref(x, src, False)
        ob, of = np.empty(x.size + 32, out), np.empty(x.size + 64, np.uint8)
        at = loop.parallel(x, False, ob, of) if pair != ("FP32", "FP16") else loop.parallel(x, ob, of)
        s1, s2 = divmod(at, 64)
        assert np.array_equal(ob[s1:s1 + x.size], ref[0]) and np.array_equal(of[s2:s2 + x.size], ref[1]), first
