"""round_pack: one rounding of an exact value to every floating DataType, every mode.

The reference is tests/kernels/oracles.round_exact: exact rationals, neighbours found from each
format's own written definition, the mode's rule applied in value space.
"""
from fractions import Fraction

import numpy as np
import pytest

from kernels.numeric import flags as FL
from kernels.numeric.rounding import RMODES, bitlen, round_pack, round_to_int

import oracles as O

MODES = [m for m in RMODES if m != "RHB"]


def modes_for(name):
    return MODES + (["RHB"] if name == "HiF8" else [])   # RHB elsewhere: test_rhb_is_ties_away_...


def sig_exp(fr: Fraction):
    """(sig, exp) with fr == sig * 2^exp exactly, sig < 2^64 (fr a dyadic rational)."""
    d = fr.denominator
    assert d & (d - 1) == 0
    exp = -(d.bit_length() - 1)
    sig = fr.numerator
    while sig >= 1 << 64 and sig % 2 == 0:
        sig //= 2
        exp += 1
    return (sig, exp) if sig < 1 << 64 else None


def interesting_values(name, rng, n_random=120):
    """Magnitudes around the format: representable values, midpoints, just-above/below, the
    overflow and underflow boundaries, and random dyadics over the whole exponent range."""
    sp = O.SPEC[name]
    if sp.values is not None:
        vals = [v for v in sp.values if v > 0]
        pick = [vals[i] for i in rng.choice(len(vals), size=min(40, len(vals)), replace=False)]
        pick += vals[:3] + vals[-3:]
    else:
        pick = [sp.min_normal, sp.max, sp.min_normal * Fraction(3, 2), Fraction(1), Fraction(3, 2) ** 5]
        pick += [Fraction(2) ** int(e) * (1 + Fraction(int(m), 1 << sp.t))
                 for e, m in zip(rng.integers(sp.emin - sp.t, sp.emax, 30), rng.integers(0, 1 << min(sp.t, 60), 30))]
    out = set()
    for v in pick:
        lo, hi = sp.neighbours(v) if sp.values is None or v < sp.max else (v, sp.virtual)
        step = hi - lo if hi > lo else v / 8
        for c in (v, (lo + hi) / 2, v + step / 4, v + step * 3 / 4, v - step / 4, v + step / 2 ** 40):
            if c > 0:
                out.add(c)
    for c in (sp.virtual, (sp.max + sp.virtual) / 2, sp.virtual * 3, sp.min_normal / 2,
              sp.below_min_normal, (sp.below_min_normal + sp.min_normal) / 2,
              sp.min_normal * Fraction(2) ** -30, sp.max * 2 ** 20):
        out.add(c)
    lo_e, hi_e = (sp.emin - 60, sp.emax + 3)
    for _ in range(n_random):
        sig = int(rng.integers(1, 1 << 62)) >> int(rng.integers(0, 60))
        e = int(rng.integers(lo_e, hi_e))
        out.add(Fraction(max(sig, 1)) * Fraction(2) ** (e - max(sig, 1).bit_length()))
    return sorted(v for v in out if sig_exp(v) is not None)


def run_case(name, values, signs, sticky, mode, sat, ftz):
    sig, exp = zip(*(sig_exp(v) for v in values))
    sig, exp = np.array(sig, dtype=np.uint64), np.array(exp, dtype=np.int64)
    st = np.full(len(values), sticky)
    if sticky:          # caller guarantee: sig >= 2^63; the value is (sig + s) 2^exp, 0 < s < 1
        sh = np.array([64 - int(s).bit_length() for s in sig])
        sig = np.array([int(s) << int(k) for s, k in zip(sig, sh)], dtype=np.uint64)
        exp = exp - sh
    bits, fl = round_pack(signs, exp, sig, st, name, rmode=mode, sat=sat, ftz=ftz)
    for i, v in enumerate(values):
        x = (Fraction(int(sig[i])) + (Fraction(1, 3) if sticky else 0)) * Fraction(2) ** int(exp[i])
        x = -x if signs[i] else x
        want = O.round_exact(x, name, mode, sat, ftz)
        got = (int(bits[i]), int(fl[i]))
        assert got == want, (f"{name} {mode} sat={sat} ftz={ftz} sticky={sticky} x={float(x)!r} "
                             f"({x}): got {got[0]:#x}/{FL.describe(got[1])} want {want[0]:#x}/{FL.describe(want[1])}")


@pytest.mark.parametrize("name", O.FLOATS)
def test_round_pack_is_the_exact_value_rounded_once(name):
    """Every mode, with and without Sat / ftz, both signs, exact and sticky inputs."""
    rng = np.random.default_rng(sum(map(ord, name)))
    vals = interesting_values(name, rng)
    signs = rng.integers(0, 2, len(vals)).astype(bool)
    for mode in modes_for(name):
        for sat, ftz in ((False, False), (True, False), (False, True)):
            run_case(name, vals, signs, False, mode, sat, ftz)
        run_case(name, vals[::3], signs[::3], True, mode, False, False)


def test_zero_keeps_its_sign_where_the_format_has_negative_zero():
    for name in O.FLOATS:
        bits, fl = round_pack([0, 1], [0, 5], [0, 0], False, name)
        want = [O.round_exact(Fraction(0), name)[0], O.round_exact(-Fraction(0), name)[0]]
        if name == "E8M0":
            assert list(bits) == [0xFF, 0xFF] and list(fl) == [FL.NV, FL.NV]
            continue
        assert list(fl) == [0, 0]
        neg = O.SPEC[name].sign_mask << O.SPEC[name].shift if O.SPEC[name].neg_zero else 0
        assert [int(b) for b in bits] == [0, neg], name
        del want


def test_overflow_table_fp16():
    """RNE/RNA -> inf, RTZ and RTO -> max, directed modes by direction, Sat -> max; OF|NX."""
    x = 65520 * 2                      # far beyond max 65504 (one binade up)
    cases = {"RNE": (0x7C00, 0xFC00), "RNA": (0x7C00, 0xFC00), "RTZ": (0x7BFF, 0xFBFF),
             "RTO": (0x7BFF, 0xFBFF), "RTP": (0x7C00, 0xFBFF), "RTM": (0x7BFF, 0xFC00)}
    for mode, (pos, neg) in cases.items():
        bits, fl = round_pack([0, 1], 0, x, False, "FP16", rmode=mode)
        assert [int(b) for b in bits] == [pos, neg], mode
        assert list(fl) == [FL.OF | FL.NX] * 2
        bits, fl = round_pack([0, 1], 0, x, False, "FP16", rmode=mode, sat=True)
        assert [int(b) for b in bits] == [0x7BFF, 0xFBFF] and list(fl) == [FL.OF | FL.NX] * 2


def test_e4m3_overflow_is_the_canonical_nan_for_nearest_modes():
    for sign in (0, 1):
        bits, fl = round_pack(sign, 0, 480, False, "E4M3")          # 480 = the code 0x7F as a number
        assert int(bits) == 0x7F and int(fl) == FL.OF | FL.NX
        bits, fl = round_pack(sign, 0, 464, False, "E4M3")          # tie 448|480: even 448 wins
        assert int(bits) == 0x7E | sign << 7 and int(fl) == FL.NX
        bits, fl = round_pack(sign, 0, 464, False, "E4M3", rmode="RNA")
        assert int(bits) == 0x7F and int(fl) == FL.OF | FL.NX
        bits, fl = round_pack(sign, 0, 1000, False, "E4M3", rmode="RTZ")
        assert int(bits) == 0x7E | sign << 7 and int(fl) == FL.OF | FL.NX


def test_formats_without_inf_or_nan_overflow_to_max():
    for name, mx in (("E3M2", 0x1F), ("E2M3", 0x1F), ("E2M1X2", 0x7), ("E1M2X2", 0x7), ("HiF4X2", 0x7)):
        for mode in MODES:
            bits, fl = round_pack(1, 10, 1, False, name, rmode=mode)
            assert int(bits) == mx | O.SPEC[name].sign_mask and int(fl) == FL.OF | FL.NX, (name, mode)


def test_hif8_tapered_boundaries():
    # max finite 2^15 = 0x6E; the code 0x6F (1.5 * 2^15) is +inf, so the RNE overflow tie
    # 1.25 * 2^15 goes to the even 0x6E while ties-away (RNA, RHB) overflow to inf
    assert [int(round_pack(0, 13, 5, False, "HiF8", rmode=m)[0]) for m in ("RNE", "RNA", "RHB")] == [0x6E, 0x6F, 0x6F]
    # 15.5 is the tie between 15 (0x2F, odd) and 16 (0x40, even): RNE -> 16, RTZ -> 15, RTO -> 15
    assert [int(round_pack(0, -1, 31, False, "HiF8", rmode=m)[0]) for m in ("RNE", "RTZ", "RTO")] == [0x40, 0x2F, 0x2F]
    # denormals are powers of two: 1.5 * 2^-20 ties 2^-20 (0x03, odd) and 2^-19 (0x04, even)
    bits, fl = round_pack(0, -21, 3, False, "HiF8")
    assert int(bits) == 0x04 and int(fl) == FL.UF | FL.NX
    # 2^-23 ties 0 and 2^-22: RNE -> 0 (even), RNA -> 2^-22; a negative result never gives -0
    assert int(round_pack(1, -23, 1, False, "HiF8")[0]) == 0x00
    assert int(round_pack(1, -23, 1, False, "HiF8", rmode="RNA")[0]) == 0x81


def test_tininess_is_detected_after_rounding():
    # FP16: 2^-14 - 2^-26 rounds (RNE, unbounded exponent, p = 11) to the min normal 2^-14:
    # not tiny, so only NX; with RTZ it stays below: UF|NX
    x = (1 << 26) - 1          # (2^26 - 1) * 2^-40 = 2^-14 - 2^-40
    bits, fl = round_pack(0, -40, x, False, "FP16")
    assert int(bits) == 0x0400 and int(fl) == FL.NX
    bits, fl = round_pack(0, -40, x, False, "FP16", rmode="RTZ")
    assert int(bits) == 0x03FF and int(fl) == FL.UF | FL.NX
    # an exact subnormal raises nothing; under ftz it flushes with UF|NX
    assert int(round_pack(0, -24, 1, False, "FP16")[1]) == 0
    bits, fl = round_pack(1, -24, 1, False, "FP16", ftz=True)
    assert int(bits) == 0x8000 and int(fl) == FL.UF | FL.NX


def test_e8m0_has_no_zero_no_sign():
    bits, fl = round_pack([0, 1, 0, 0, 0], [0, 0, -200, 127, 200], [0, 1, 1, 1, 1], False, "E8M0")
    assert [int(b) for b in bits] == [0xFF, 0xFF, 0x00, 0xFE, 0xFF]
    assert [int(f) for f in fl] == [FL.NV, FL.NV, FL.UF | FL.NX, 0, FL.OF | FL.NX]


@pytest.mark.parametrize("name", O.FLOATS)
def test_rhb_is_ties_away_on_every_floating_format(name):
    """docs/numerics.md "RHB": one rule for every destination, round to nearest with ties away
    from zero -- checked against the oracle's RNA (its own value-space rule), midpoints included."""
    vals = interesting_values(name, np.random.default_rng(41))
    sig, exp = zip(*(sig_exp(v) for v in vals))
    sig, exp = np.array(sig * 2, np.uint64), np.array(exp * 2, np.int64)
    neg = np.repeat([False, True], len(vals))
    bits, fl = round_pack(neg, exp, sig, False, name, rmode="RHB")
    for i, v in enumerate(vals * 2):
        want = O.round_exact(-v if neg[i] else v, name, "RNA")
        assert (int(bits[i]), int(fl[i])) == want, (name, v, bool(neg[i]))


def test_rhb_rounds_ties_away_to_integers_too():
    # 2.5 -> 3, -2.5 -> -3, 3.5 -> 4, 2.25 -> 2 (S32 and U8)
    sig, exp = [5, 5, 7, 9], [-1, -1, -1, -2]
    bits, fl = round_to_int([0, 1, 0, 0], exp, sig, False, "S32", rmode="RHB")
    assert [int(b) for b in bits] == [3, 0xFFFFFFFD, 4, 2] and [int(f) for f in fl] == [FL.NX] * 4
    assert [int(b) for b in round_to_int(0, -1, 5, False, "U8", rmode="RHB")[0].ravel()] == [3]


def test_unknown_or_unresolved_modes_are_rejected():
    with pytest.raises(ValueError):
        round_pack(0, 0, 1, False, "FP32", rmode="DEFAULT")


def test_bitlen_exact_for_all_64_bit_values():
    xs = [0, 1, 2, 3, (1 << 53) - 1, 1 << 53, (1 << 53) + 1, (1 << 54) - 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1]
    xs += [(1 << k) - 1 for k in range(1, 65)] + [1 << k for k in range(64)]
    got = bitlen(np.array(xs, dtype=np.uint64))
    assert list(got) == [x.bit_length() for x in xs]


def test_round_to_int_matches_exact_oracle():
    rng = np.random.default_rng(7)
    vals = [Fraction(int(s), 1 << int(k)) for s, k in zip(rng.integers(0, 1 << 62, 400), rng.integers(0, 70, 400))]
    vals += [Fraction(k, 2) for k in range(0, 10)] + [Fraction(2) ** 63, Fraction(2) ** 64 - 1, Fraction(2) ** 64,
                                                         Fraction(2) ** 63 - Fraction(1, 2), Fraction(2) ** 62 + Fraction(1, 2), Fraction(2) ** 64 - Fraction(1, 2)]
    signs = rng.integers(0, 2, len(vals)).astype(bool)
    vals = [v for v in vals if v == 0 or sig_exp(v) is not None]
    signs = signs[:len(vals)]
    se = [sig_exp(v) if v else (0, 0) for v in vals]
    sig = np.array([s for s, _ in se], dtype=np.uint64)
    exp = np.array([e for _, e in se], dtype=np.int64)
    for name in O.INTS:
        for mode in MODES:
            bits, fl = round_to_int(signs, exp, sig, False, name, rmode=mode)
            for i, v in enumerate(vals):
                x = -v if signs[i] else v
                assert (int(bits[i]), int(fl[i])) == O.round_int_exact(x, name, mode), (name, mode, x)
