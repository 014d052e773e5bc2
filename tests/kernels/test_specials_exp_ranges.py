"""TEXP's operands beyond its overflow and underflow thresholds are settled without the NumPy
reference (kernels/numeric/specials.py, exp_ranges / settle_exp) and give what the reference
gives, element for element, bits and flags.

Every code of FP16, BF16, TF32 and HF32 (exhaustively) and edge and random codes of FP32 and
FP64, under the ieee, ftz and a5 profiles, through kernels.numeric.elementwise (the compiled
tier, the class table, the ranges, then the reference for what is left), against
tiers.reference.  And by the definition, from the decoded operand values computed here: under
the ieee rule without ftz, x >= ln(MAX) + 1 gives +inf with OF and NX, x <= ln(min subnormal) - 1
gives +0 with UF and NX."""
import math

import numpy as np
import pytest

from isa.datatypes import datatype
from kernels.numeric import formats, specials, tiers
from kernels.numeric.flags import NX, OF, UF
from kernels.numeric.profiles import IEEE, PROFILES
from test_specials_negative import EXHAUSTIVE, SAMPLED, same_as_reference


def codes(name: str) -> np.ndarray:
    f = formats.FORMATS[name]
    raw = np.dtype(datatype(name).raw_dtype)
    if name in EXHAUSTIVE:
        c = np.arange(1 << f.width, dtype=np.uint64)
    else:
        rng = np.random.default_rng(11)
        sign = 1 << (f.width - 1)
        r = specials.exp_ranges(name, PROFILES["ieee"], tiers.reference("TEXP"))
        edges = []
        for m in (r.hi, r.lo):           # each threshold's code and its neighbours, both signs
            edges += [m - 2, m - 1, m, m + 1, m + 2]
        edges += [0, 1, f.max_mag, f.mag_mask, f.max_mag - 1]
        edges += [e | sign for e in edges]
        c = np.concatenate([np.array(edges, np.uint64), rng.integers(0, 1 << f.width, 40000, dtype=np.uint64)])
    return (c << np.uint64(f.shift)).astype(raw)


@pytest.mark.parametrize("profile", ("ieee", "ftz", "a5"))
@pytest.mark.parametrize("name", EXHAUSTIVE + SAMPLED)
def test_texp_matches_the_reference_and_the_definition_beyond_its_thresholds(name, profile):
    prof = PROFILES[profile]
    x = codes(name)
    got_bits, got_flags = same_as_reference("TEXP", name, x, profile)
    if prof.ftz or prof.rule("TEXP", name) != IEEE:
        return
    f = formats.FORMATS[name]
    v = formats.decode(x, name)
    top = float(formats.decode(np.array([f.max_mag << f.shift], np.uint64).astype(x.dtype), name)[0])
    tiny = float(formats.decode(np.array([1 << f.shift], np.uint64).astype(x.dtype), name)[0])
    over = np.isfinite(v) & (v >= math.log(top) + 1)
    under = np.isfinite(v) & (v <= math.log(tiny) - 1)
    assert over.sum() > 10 and under.sum() > 10
    inf = ((1 << (f.width - 1 - f.t)) - 1) << f.t << f.shift
    assert (got_bits[over] == inf).all() and (got_flags[over] == OF | NX).all()
    assert (got_bits[under] == 0).all() and (got_flags[under] == UF | NX).all()


def test_the_ranges_are_decided_only_under_the_ieee_rule_without_ftz():
    fn = tiers.reference("TEXP")
    for name in EXHAUSTIVE + SAMPLED:
        assert specials.exp_ranges(name, PROFILES["ftz"], fn) is None
        r = specials.exp_ranges(name, PROFILES["ieee"], fn)
        assert r is not None and r.hi and r.lo
    assert specials.exp_ranges("E4M3", PROFILES["ieee"], fn) is None      # no infinity: not decided here
