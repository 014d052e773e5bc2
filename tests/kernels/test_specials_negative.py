"""The class table decides a finite negative operand of TLOG, TSQRT and TRSQRT under the ieee
rule (kernels/numeric/specials.py, NEGATIVE_INVALID): IEEE 754 makes each an invalid operation
whatever the magnitude, so the result is the format's default NaN with NV alone.

Checked two ways, for every negative code of FP16, BF16, TF32 and HF32 (exhaustively) and for
edge and random negative codes of FP32 and FP64, under the ieee, ftz and a5 profiles:
  * by the definition, computed here from the format table: under the ieee rule, every finite
    negative operand that is not a zero (under ftz, a subnormal is the zero of its sign) gives
    the quiet NaN with sign 0 and payload 0 in the format's place in its container, flags NV;
  * against the NumPy reference of the profile's rule (tiers.reference), element for element,
    bits and flags, for every code tried (NaNs, infinities and zeros included)."""
import numpy as np
import pytest

from isa.datatypes import datatype
from kernels import numeric
from kernels.numeric import formats, specials, tiers
from kernels.numeric.flags import NV
from kernels.numeric.profiles import IEEE, PROFILES

EXHAUSTIVE = ("FP16", "BF16", "TF32", "HF32")
SAMPLED = ("FP32", "FP64")


def negative_codes(name: str) -> np.ndarray:
    """Container codes with the sign bit set: all of them for formats of at most 20 bits, else
    the edges (smallest/largest subnormal and normal, -1, -0, -inf, NaNs) and 20,000 random."""
    f = formats.FORMATS[name]
    raw = np.dtype(datatype(name).raw_dtype)
    sign = 1 << (f.width - 1)
    if name in EXHAUSTIVE:
        mags = np.arange(sign, dtype=np.uint64)
    else:
        t = f.t
        edges = [0, 1, (1 << t) - 1, 1 << t, f.max_mag, f.bias << t, f.mag_mask, f.mag_mask - 1]
        rng = np.random.default_rng(7)
        mags = np.concatenate([np.array(edges, np.uint64),
                               rng.integers(0, sign, 20000, dtype=np.uint64)])
    return ((mags | np.uint64(sign)) << np.uint64(f.shift)).astype(raw)


def default_nan(name: str) -> int:
    """The quiet NaN of sign 0 and payload 0, in the container (from the format table)."""
    f = formats.FORMATS[name]
    return ((((1 << (f.width - 1 - f.t)) - 1) << f.t) | (1 << (f.t - 1))) << f.shift


def same_as_reference(op: str, name: str, x: np.ndarray, profile: str):
    """numeric.elementwise(op) on codes x, asserted equal, bits and flags, to the reference of
    the profile's rule (tiers.reference) element for element; its (bits, flags)."""
    prof = PROFILES[profile]
    with np.errstate(all="ignore"):
        got_bits, got_flags = numeric.elementwise(op, name, x, profile=profile)
        want_bits, want_flags = tiers.reference(op)(name, x, prof=prof)
    want_bits = np.asarray(want_bits).astype(got_bits.dtype)
    want_flags = np.broadcast_to(np.asarray(want_flags, np.uint8), got_flags.shape)
    bad = (got_bits != want_bits) | (got_flags != want_flags)
    assert not bad.any(), (op, name, profile, hex(int(x[np.flatnonzero(bad)[0]])))
    return got_bits, got_flags


def cases():
    return [(op, name, profile) for op in sorted(specials.NEGATIVE_INVALID) for name in EXHAUSTIVE + SAMPLED
            for profile in ("ieee", "ftz", "a5")]


@pytest.mark.parametrize("op, name, profile", cases())
def test_negative_operands_give_what_the_reference_and_the_definition_give(op, name, profile):
    prof = PROFILES[profile]
    if not numeric.supports(op, name, profile):
        pytest.skip(f"{op} {name} not implemented under {profile}")
    x = negative_codes(name)
    got_bits, got_flags = same_as_reference(op, name, x, profile)
    if prof.rule(op, name) != IEEE:
        return
    f = formats.FORMATS[name]
    mag = (x.astype(np.uint64) >> np.uint64(f.shift)) & np.uint64(f.mag_mask)
    exp_all = ((1 << (f.width - 1 - f.t)) - 1) << f.t
    finite_nonzero = (mag < exp_all) & (mag >= ((1 << f.t) if prof.ftz else 1))
    assert finite_nonzero.sum() > 100
    assert (got_bits[finite_nonzero] == default_nan(name)).all()
    assert (got_flags[finite_nonzero] == NV).all()


@pytest.mark.parametrize("op", sorted(specials.NEGATIVE_INVALID))
def test_the_table_decides_the_finite_negative_class_only_under_the_ieee_rule(op):
    for profile in ("ieee", "ftz", "a5"):
        prof = PROFILES[profile]
        for name in EXHAUSTIVE + SAMPLED:
            tb = specials.table(op, name, prof, 1, tiers.reference(op))
            if prof.rule(op, name) == IEEE:
                assert tb.src[7] == specials.CODE and int(tb.code[7]) == default_nan(name) and tb.flags[7] == NV
            else:
                assert tb.src[7] == specials.UNDECIDED
    # a finite positive operand stays decided by its value
    assert specials.table(op, "FP32", PROFILES["ieee"], 1, tiers.reference(op)).src[6] == specials.UNDECIDED
