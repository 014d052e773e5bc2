"""Run one compiled tier of kernels/numeric/tiers.py directly (its marked elements settled as
elementwise settles them), or its loop alone (marks kept), for the tests of that tier."""
import numpy as np

from isa.datatypes import datatype
from kernels.numeric import tiers
from kernels.numeric.profiles import PROFILES


def tier_of(family, op, name, arity, profile="ieee"):
    """The first tier placed as `family` ('fastdiv' covers its SIMD and round_rne tiers) that
    serves (op, name) in `profile`."""
    prof = PROFILES[profile] if isinstance(profile, str) else profile
    dt = datatype(name)
    for t in tiers.TIERS:
        if t.where == family and t.serves(op, dt, prof, arity):
            return t
    raise LookupError(f"no {family} tier serves {op} {name} {prof.name}")


def run(family, op, name, *ops, profile="ieee"):
    prof = PROFILES[profile] if isinstance(profile, str) else profile
    t = tier_of(family, op, name, len(ops), prof)
    with np.errstate(all="ignore"):       # as elementwise runs the reference
        return tiers.run(t, op, name, [np.asarray(x) for x in ops], prof)


def marked(family, op, name, *ops, profile="ieee"):
    """The tier's compiled loop alone: (bits, flags) with 0xFF marks."""
    prof = PROFILES[profile] if isinstance(profile, str) else profile
    t = tier_of(family, op, name, len(ops), prof)
    with np.errstate(all="ignore"):
        return tiers.run_kernels(t, op, name, [np.asarray(x) for x in ops], prof)
