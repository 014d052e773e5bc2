"""The enumerated formats' lookup tables (golden.space: values() and step() by table) give the
numbers the computed path gives: kernels.numeric.decode and a search of the sorted values."""
import numpy as np
import pytest

from isa.datatypes import datatype
from kernels import numeric

from emulator.golden.space import NATIVE, space

ENUMERATED = ["FP16", "BF16", "E4M3", "E5M2", "HF32", "TF32", "E2M3", "E3M2", "E2M1X2", "E1M2X2", "HiF8", "E8M0"]


def _decoded(sp, enc):
    return numeric.decode(np.asarray(enc, np.uint64).astype(datatype(sp.name).raw_dtype), sp.name).astype(np.float64)


def _stepped(sp, enc, up):
    i = np.clip(np.searchsorted(sp._val, _decoded(sp, enc)) + (1 if up else -1), 0, len(sp._enc) - 1)
    return sp._enc[i]


def _draws(sp, rng, n=20000):
    """Random bit patterns (NaNs, infinities, both zeros included) and every special encoding."""
    specials = np.concatenate([p for p in sp.pools.values() if len(p)])
    return np.concatenate([sp.random(rng, n), specials])


@pytest.mark.parametrize("name", ENUMERATED)
def test_values_and_steps_are_the_decoded_and_searched_ones(name):
    sp = space(name)
    assert name not in NATIVE and sp._all_val is not None
    enc = _draws(sp, np.random.default_rng(len(name)))
    np.testing.assert_array_equal(sp.values(enc), _decoded(sp, enc))      # NaNs compare equal here
    for up in (True, False):
        np.testing.assert_array_equal(sp.step(enc, up), _stepped(sp, enc, up))


@pytest.mark.parametrize("name", ["FP16", "TF32", "E4M3"])
def test_encodings_outside_the_tables_take_the_computed_path(name):
    sp = space(name)
    enc = _draws(sp, np.random.default_rng(3), 100)
    odd = np.concatenate([enc, [np.uint64(1) << np.uint64(sp.container)]]) if sp.container < 64 else enc
    if sp.shift:                                # a bit below the significant bits
        odd = np.concatenate([enc, [np.uint64(1)]])
    assert sp._index(odd) is None
    np.testing.assert_array_equal(sp.values(odd), _decoded(sp, odd))
    np.testing.assert_array_equal(sp.step(odd, True), _stepped(sp, odd, True))
