"""The compiled fast paths (kernels/numeric/fast.py) give the reference's bits and flags.

The reference implementations (ops_float, transcendental) are checked against independent
oracles in test_ops_float.py / test_transcendental.py; here every fast kernel is compared with
them element by element: 8-bit FMA on all operand triples (slow marker) or 2^20 random ones,
the wide formats on random bit patterns (NaNs, infinities, subnormals and all) and on an
edge-value cross product, both profiles.  The binary64 exp of the FP32 kernel is checked
against MPFR for its error bound.
"""
import gmpy2
import numpy as np
import pytest

from kernels.numeric import fast, ops_float, tiers, transcendental
from kernels.numeric.profiles import PROFILES

from test_ops_float import edge_and_random

REF = {"TADD": ops_float.tadd, "TSUB": ops_float.tsub, "TMUL": ops_float.tmul, "TFMA": ops_float.tfma,
       "TEXP": transcendental.texp}
RAW = {"FP32": np.uint32, "TF32": np.uint32, "HF32": np.uint32, "FP16": np.uint16, "BF16": np.uint16,
       "E4M3": np.uint8, "E5M2": np.uint8}
SERVED = [(op, name) for op in REF for name in RAW if (name, op) in fast.rows("fast")]


def random_codes(name, n, rng):
    raw = RAW[name]
    codes = rng.integers(0, 1 << (8 * np.dtype(raw).itemsize), n, dtype=np.uint64).astype(raw)
    f = edge_and_random(name, 0, 0)            # edges already in the container layout
    shift = {"TF32": 13, "HF32": 12}.get(name, 0)
    codes = codes & raw(~((1 << shift) - 1) & ((1 << (8 * np.dtype(raw).itemsize)) - 1))
    return np.concatenate([f, codes])


def compare(op, name, operands, profile):
    prof = PROFILES[profile]
    # the fast tier and the reference compute NaN/inf operands with float64 arithmetic that raises
    # NumPy's invalid/overflow warnings; the public numeric.elementwise silences them the same way.
    with np.errstate(all="ignore"):
        got = tiers.run(tiers.BY_NAME["fast"], op, name, operands, prof)
        want = REF[op](name, *operands, prof=prof)
    bad = np.flatnonzero((got[0] != want[0]) | (got[1] != want[1]))
    assert not bad.size, (op, name, profile, [hex(int(x[bad[0]])) for x in operands],
                          hex(int(got[0][bad[0]])), int(got[1][bad[0]]), hex(int(want[0][bad[0]])), int(want[1][bad[0]]))


@pytest.mark.parametrize("profile", ("ieee", "ftz"))
@pytest.mark.parametrize("op,name", SERVED)
def test_fast_path_equals_reference_on_random_bit_patterns(op, name, profile):
    rng = np.random.default_rng(hash((op, name)) % 2 ** 32)
    arity = {"TFMA": 3, "TEXP": 1}.get(op, 2)
    ops = [random_codes(name, 1 << 17, rng) for _ in range(arity)]
    for k in range(1, arity):
        ops[k] = ops[k][rng.permutation(len(ops[k]))]
    compare(op, name, ops, profile)


@pytest.mark.parametrize("op,name", [s for s in SERVED if s[0] in ("TADD", "TMUL", "TFMA")])
def test_fast_path_on_the_edge_cross_product(op, name):
    e = edge_and_random(name, 0, 0)
    grids = np.meshgrid(*([e] * (3 if op == "TFMA" else 2)), indexing="ij")
    compare(op, name, [g.ravel() for g in grids], "ieee")


@pytest.mark.parametrize("name", ("E4M3", "E5M2"))
def test_8bit_fma_sampled_triples_fast_equals_reference(name):
    rng = np.random.default_rng(3)
    compare("TFMA", name, [rng.integers(0, 256, 1 << 20).astype(np.uint8) for _ in range(3)], "ieee")


@pytest.mark.slow
@pytest.mark.parametrize("profile", ("ieee", "ftz"))
@pytest.mark.parametrize("name", ("E4M3", "E5M2"))
def test_8bit_fma_every_triple(name, profile):
    """All 2^24 triples (about 10 s per case): python -m pytest -m slow tests/kernels/test_ops_fast.py"""
    codes = np.arange(256, dtype=np.uint8)
    b, c = (x.ravel() for x in np.meshgrid(codes, codes, indexing="ij"))
    for a in range(256):
        compare("TFMA", name, [np.full(65536, a, np.uint8), b, c], profile)


def test_fp32_kernel_exp_error_bound():
    """The kernel's binary64 exp is within 2^-51 relative (it decides with a 2^-46 margin)."""
    x = np.concatenate([np.random.default_rng(2).uniform(-80, 89, 20000), np.linspace(-1e-3, 1e-3, 2001)])
    y = fast.exp_approx(x)
    worst = 0
    with gmpy2.context(gmpy2.get_context(), precision=200):
        for xi, yi in zip(x, y):
            worst = max(worst, abs(gmpy2.mpfr(float(yi)) / gmpy2.exp(gmpy2.mpfr(float(xi))) - 1))
    assert worst < 2.0 ** -51


def test_the_kernels_2_to_the_j_over_64_table_is_mpfr_rounded_to_nearest():
    with gmpy2.context(gmpy2.get_context(), precision=300):
        want = [float(gmpy2.exp2(gmpy2.mpfr(j) / 64)) for j in range(64)]
    assert fast.EXP2_64.tolist() == want
    C = transcendental._constants()
    assert np.array_equal(fast.EXP2_64, C["T"][:, 0])
    assert (fast.C1, fast.C2, fast.C3, fast.INV_LN2_64) == (C["c1"], C["c2"], C["c3"], C["inv_ln2_64"])
