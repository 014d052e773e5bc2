"""TCVT with a status per PE (kernels.numeric.convert_status): convert's bits, and for flags the OR
of its per-element flags over each of `groups` equal consecutive parts of the source -- what a TCVT
block keeps for each PE.  FP32 -> FP16 in RNE, profile ieee, reduces the flags in the conversion
loop (fastconvert.rne_status); every other call is convert followed by that OR.  Checked against
narrow_ref (test_convert_fp16_fast: the value rounded once in binary64, flags from the value) and
against the NumPy reference (convert.convert_generic), the status as the OR of their flags computed
here, on every FP32 code of windows around each threshold, on special values at each block edge of
each group, on seeded random codes, and in every mode and profile the route does not serve.
"""
import importlib

import numpy as np
import pytest

from isa.datatypes import datatype
from kernels.numeric import convert, convert_status
from kernels.numeric import flags as FL
from test_convert_fp16_fast import OVERFLOW, TINY, common_codes, narrow_ref, special_codes

cv = importlib.import_module("kernels.numeric.convert")      # the module (the package re-exports the function)


def generic(x, rmode="RNE", sat=False, ftz=False):
    """The NumPy reference's (bits, flags) of FP32 -> FP16."""
    return cv.convert_generic(x, datatype("FP32"), datatype("FP16"), rmode, sat, ftz)


def or_status(flags, groups):
    """Each group's status: the OR of its elements' flags, one group at a time."""
    flat = np.asarray(flags, np.uint8).reshape(groups, -1)
    return np.array([np.bitwise_or.reduce(row) if row.size else 0 for row in flat], np.uint8)


def assert_status_route(x, groups, want=None):
    """convert_status(x) equals narrow_ref's and the NumPy reference's bits, and their flags'
    OR per group, for FP32 -> FP16 in RNE under profile ieee (`want`: narrow_ref's (bits, flags)
    of x, when the caller has them)."""
    b, st = convert_status(x, "FP32", "FP16", groups, rmode="RNE")
    if want is None:
        want = narrow_ref(x, "FP16", False)
        gen_b, gen_f = generic(x)
        assert np.array_equal(want[0], gen_b) and np.array_equal(want[1], gen_f)
    want_b, want_f = want
    bad = np.flatnonzero(b.ravel() != want_b.ravel())
    assert bad.size == 0, [(hex(x.ravel()[i]), hex(b.ravel()[i]), hex(want_b.ravel()[i])) for i in bad[:5]]
    assert b.shape == x.shape and b.dtype == np.uint16 and st.dtype == np.uint8
    ws = or_status(want_f, groups)
    assert np.array_equal(st, ws), [(int(g), int(st[g]), int(ws[g])) for g in np.flatnonzero(st != ws)[:5]]


# The thresholds of FP32 -> FP16 in RNE (binary32 |x| codes): zero and the smallest subnormals,
# half the smallest subnormal (ties to zero / up), the tininess boundary (tiny after rounding below
# 2^-14 - 2^-26), 2^-14 itself, ties in the normal range, the overflow threshold 65520 (and max
# finite 65504), infinity and the NaNs right above it (signalling, then quiet at 0x7FC00000).
THRESHOLDS = [0x00000000, 0x33000000, 0x33800000, TINY, 0x38800000, 0x3F801000, 0x477FE000, OVERFLOW,
              0x7F800000, 0x7FC00000]
WINDOW = 1 << 14


@pytest.mark.parametrize("centre", THRESHOLDS, ids=hex)
@pytest.mark.parametrize("sign", [0, 0x80000000], ids=["+", "-"])
def test_every_fp32_code_around_each_threshold_converts_with_its_status(centre, sign):
    """Every code in a window of 2^15 around each threshold (clipped at zero and at 0x7FFFFFFF),
    in groups of 1, 2, 64 and 4,096 (one code a group: the status is that code's flags)."""
    lo, hi = max(centre - WINDOW, 0), min(centre + WINDOW, 0x80000000)
    x = (np.arange(lo, hi, dtype=np.uint64) | sign).astype(np.uint32)
    x = x[: x.size // 4096 * 4096]
    for groups in (1, 2, 64, 4096):
        assert_status_route(x, groups)
    assert_status_route(x[:4096], 4096)


def test_every_code_alone_is_its_own_group():
    """groups == elements: each status is exactly that element's flags."""
    x = np.concatenate([np.array(special_codes(), np.uint32), np.array(THRESHOLDS, np.uint32),
                        np.array([1, 0x1000, 0x38801000, 0x3F801001, 0x7F7FFFFF], np.uint32)])
    x = np.concatenate([x, x | np.uint32(0x80000000)])
    assert_status_route(x, x.size)


@pytest.mark.parametrize("m", [3 * 4096 + 77, 4096, 16 * 1024])
def test_a_special_value_at_each_block_edge_of_each_group_sets_only_its_groups_status(m):
    """Groups of m common-case codes (fastconvert.BLOCK elements a block, blocks never straddling
    two groups): one special value at a time before and after each block edge of each group, and
    at each group's first and last element -- its group's status is that value's flags ORed with
    the rest's; the other groups' statuses stay NX or nothing, whichever group and block it sits in."""
    from kernels.numeric.fastconvert import BLOCK
    groups = 3
    rng = np.random.default_rng(m)
    x = common_codes(rng, groups * m)
    assert_status_route(x, groups)
    lead = (64 - x.ctypes.data % 64) % 64 // 4
    edges = [lead + k * BLOCK for k in range(m // BLOCK + 1)]
    positions = sorted({g * m + p for g in range(groups) for e in edges for p in (e - 1, e, 0, m - 1) if 0 <= p < m})
    want_b, want_f = narrow_ref(x, "FP16", False)
    for code in special_codes():
        for p in positions:
            keep = x[p]
            x[p] = code | (int(p) & 1) << 31
            one_b, one_f = narrow_ref(x[p:p + 1], "FP16", False)      # the reference changes at p only
            b, f = want_b.copy(), want_f.copy()
            b[p], f[p] = one_b[0], one_f[0]
            assert_status_route(x, groups, (b, f))
            x[p] = keep


@pytest.mark.parametrize("shape", [(4, 128, 128), (4, 33, 17), (7, 5), (1, 1), (2, 0), (3, 4097), (5, 16, 16)])
def test_seeded_random_codes_and_sources_starting_anywhere(shape):
    """Random encodings (NaN payloads, infinities, subnormals included) and common-case codes, one
    group per leading index, sources starting at any element of a cache line."""
    rng = np.random.default_rng(sum(shape) + 1)
    n = int(np.prod(shape))
    for codes in (rng.integers(0, 1 << 32, n + 16, dtype=np.uint64).astype(np.uint32), common_codes(rng, n + 16)):
        for first in (0, 1, 5, 15):
            assert_status_route(codes[first:first + n].reshape(shape), shape[0])
        assert_status_route(np.asfortranarray(codes[:n].reshape(shape)), shape[0])    # a copy, C order


def test_exact_groups_have_no_status_and_inexact_ones_nx():
    """A group of values exact in binary16 has status 0; one inexact element makes it NX, in the
    group it belongs to only (the NX test stops once a group has NX, per group)."""
    x = np.full((4, 8192), 0x3F800000, np.uint32)               # 1.0
    assert_status_route(x, 4)
    for p in (0, 255, 256, 4095, 4096, 8191):
        x[2, p] = 0x3F800001
        b, st = convert_status(x, "FP32", "FP16", 4, rmode="RNE")
        assert list(st) == [0, 0, FL.NX, 0]
        x[2, p] = 0x3F800000


MODES = [dict(rmode=r) for r in ("RTZ", "RTM", "RTP", "RNA", "RTO")] + [dict(rmode="RNE", sat=True),
                                                                      dict(rmode="RNE", profile="ftz"),
                                                                      dict(rmode="RNE", profile="a5")]


@pytest.mark.parametrize("kw", MODES, ids=lambda kw: "-".join(map(str, kw.values())))
def test_other_modes_and_profiles_give_convert_and_the_or_of_its_flags(kw):
    """Every call the route does not serve is convert followed by the OR (the same bits, and the
    status from convert's own flags), here also held against the NumPy reference."""
    rng = np.random.default_rng(3)
    x = np.concatenate([np.array(special_codes() * 2, np.uint32), rng.integers(0, 1 << 32, 4 * 4096 - 44,
                                                                               dtype=np.uint64).astype(np.uint32)])
    x = x.reshape(4, -1)
    b, st = convert_status(x, "FP32", "FP16", 4, **kw)
    want_b, want_f = convert(x, "FP32", "FP16", **kw)
    assert np.array_equal(b, want_b) and np.array_equal(st, or_status(want_f, 4))
    if kw.get("profile", "ieee") != "a5":
        gen_b, gen_f = generic(x, kw["rmode"], kw.get("sat", False), kw.get("profile") == "ftz")
        assert np.array_equal(b, gen_b) and np.array_equal(st, or_status(gen_f, 4))


@pytest.mark.parametrize("pair", [("FP16", "FP32"), ("BF16", "FP32"), ("FP32", "BF16"), ("FP32", "E4M3"), ("S32", "FP16")])
def test_other_conversions_give_convert_and_the_or_of_its_flags(pair):
    src, dst = pair
    raw = datatype(src).raw_dtype
    rng = np.random.default_rng(4)
    x = rng.integers(0, 1 << (8 * np.dtype(raw).itemsize), (4, 300), dtype=np.uint64).astype(raw)
    b, st = convert_status(x, src, dst, 4, rmode="RNE")
    want_b, want_f = convert(x, src, dst, rmode="RNE")
    assert np.array_equal(b, want_b) and np.array_equal(st, or_status(want_f, 4))


def test_held_results_keep_their_bytes_and_each_call_gets_its_own():
    """The route writes a shape's last outputs again only when nobody holds them: a held bits
    array or status keeps its bytes through later calls of the same shape, results are writable
    and no two held results share memory."""
    rng = np.random.default_rng(8)
    xs = [rng.integers(0, 1 << 32, (4, 64, 64), dtype=np.uint64).astype(np.uint32) for _ in range(4)]
    held = []
    for k, x in enumerate(xs * 2):
        b, st = convert_status(x, "FP32", "FP16", 4, rmode="RNE")
        assert b.flags.writeable and st.flags.writeable
        if k % 2:
            held.append((b, st, b.copy(), st.copy()))
        del b, st
    for b, st, b0, st0 in held:
        assert np.array_equal(b, b0) and np.array_equal(st, st0)
    for (b1, s1, _, _), (b2, s2, _, _) in zip(held, held[1:]):
        assert not np.shares_memory(b1, b2) and not np.shares_memory(s1, s2)


def test_the_route_serves_ieee_rne_and_nothing_runs_compiled_while_interpreted(monkeypatch):
    """The status loop serves FP32 -> FP16 in RNE (DEFAULT resolves to it) under profile ieee;
    inside interp.interpreted() no compiled path serves, not even a remembered route."""
    from kernels.numeric.fastconvert import HARDWARE_HALF
    from kernels.numeric.interp import interpreted
    x = np.arange(0, 1 << 20, 97, dtype=np.uint32) << np.uint32(10)
    x = x[: x.size // 4 * 4]
    assert_status_route(x, 4)
    for rmode in ("RNE", "DEFAULT", 1):                   # 1: RMode's field code of RNE
        convert_status(x, "FP32", "FP16", 4, rmode=rmode)
        assert bool(cv._STATUS[("FP32", "FP16", rmode, False, "ieee")]) == HARDWARE_HALF
    want = convert_status(x, "FP32", "FP16", 4, rmode="RNE")

    def no_loop(*a):
        raise AssertionError("a remembered compiled route ran while interpreted")
    monkeypatch.setattr(cv, "_STATUS", {k: no_loop for k in cv._STATUS})
    with interpreted():
        got = convert_status(x, "FP32", "FP16", 4, rmode="RNE")
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_bad_arguments_raise_as_convert_does():
    from kernels.numeric.convert import InvalidEncoding
    with pytest.raises(ValueError):
        convert_status(np.zeros(4, np.uint32), "FP32", "FP99", 1)
    with pytest.raises(ValueError):
        convert_status(np.zeros(4, np.uint32), "FP32", "FP16", 1, rmode="XYZ")
    with pytest.raises(InvalidEncoding):
        convert_status(np.array([-1], np.int64), "FP16", "FP32", 1)


@pytest.mark.parametrize("backend", ["cpu", "reference"])
@pytest.mark.parametrize("datr", ["RMode=RNE", "RMode=RTZ", "RMode=RNE, Sat=1"])
def test_a_tcvt_block_keeps_each_pes_status_as_the_or_of_its_elements_flags(backend, datr):
    """TCVT FP32 -> FP16 on 4 PEs x 64x64 (the block's executor asks convert_status): each PE's
    destination holds the NumPy reference's bits and its status is the OR of the reference's
    flags -- PE0 exact values (no flag), PE1 inexact ones, PE2 a signalling NaN among exact
    values, PE3 random encodings (signalling NaNs among them) with an overflow and a tiny value."""
    from emulator import Machine
    from isa.assembly import assemble_blocks
    rng = np.random.default_rng(10)
    tiles = [np.full((64, 64), 0x3F800000, np.uint32), common_codes(rng, 64 * 64).reshape(64, 64),
             np.full((64, 64), 0x40000000, np.uint32), rng.integers(0, 1 << 32, (64, 64), dtype=np.uint64).astype(np.uint32)]
    tiles[2][17, 5] = 0x7F800123
    tiles[3][0, 0], tiles[3][63, 63] = 0x477FF000, 0x33800001
    m = Machine(backend=backend)
    for pe, t in enumerate(tiles):
        m.write_tile(pe, 1, "FP32", t)
    (block,) = assemble_blocks(f"BSTART.VEC TCVT, FP32\nB.IOT t1@0b1111 -> t2@0b1111\nB.DIM LB0=64, LB1=64\n"
                               f"B.DATR DataType=FP16, {datr}")
    rmode, sat = ("RTZ" if "RTZ" in datr else "RNE"), "Sat" in datr
    for _ in range(2):                                    # the first block and a repeated one
        result = m.execute(block)
        for pe, t in enumerate(tiles):
            want_b, want_f = generic(t, rmode, sat)
            assert np.array_equal(m.read_tile(pe, 2).bits, want_b), pe
            assert result.status[pe] == int(np.bitwise_or.reduce(want_f.ravel())), pe
    if datr == "RMode=RNE":
        assert [result.status[pe] for pe in range(4)] == [0, FL.NX, FL.NV, FL.NV | FL.NX | FL.OF | FL.UF]
