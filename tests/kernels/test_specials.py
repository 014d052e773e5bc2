"""Special operands (NaNs of any payload, infinities, zeros, subnormals) are settled by compiled
code in the same call as the other elements (kernels/numeric/specials.py), with the results and
flags the definitions give (docs/numerics.md, "Operations").

Independent references: the exact-rational definitions of op_reference.py (FP16, BF16, TF32,
HF32, E4M3, E5M2, profiles ieee and ftz) and Berkeley SoftFloat (FP32, FP64).  The class table
itself is checked against the formats' definitions (every code's class).
"""
import numpy as np
import pytest

import oracles as O
import op_reference as R
from isa.datatypes import datatype
from kernels import numeric
from kernels.numeric import fast, formats, specials, tiers
from kernels.numeric.profiles import PROFILES
from test_ops_float import SF, assert_same, softfloat

OPS = ("TADD", "TSUB", "TMUL", "TDIV", "TREM", "TFMA", "TSQRT", "TRECIP")
ARITY = {"TFMA": 3, "TSQRT": 1, "TRECIP": 1}
WIDE = ("FP64", "FP32", "TF32", "HF32", "FP16", "BF16")


def class_of(name, code, ftz):
    """The class of one container code from the format's definition (oracles.decode_code)."""
    sp = O.SPECS[name]
    kind, sign, value = O.decode_code(name, (int(code) >> sp[5]) & ((1 << O.width(name)) - 1))
    if kind == "nan":
        t = sp[2]
        quiet = sp[4] == "fn" or (int(code) >> (sp[5] + t - 1)) & 1
        return 0 if quiet else 1
    if kind == "inf":
        return 2 + sign
    if kind == "zero" or (ftz and abs(value) < O.SPEC[name].min_normal):
        return 4 + sign
    return 6 + sign


@pytest.mark.parametrize("ftz", (False, True))
@pytest.mark.parametrize("name", ("FP16", "BF16", "E4M3", "E5M2", "TF32", "FP32", "FP64"))
def test_every_code_has_the_class_its_definition_gives(name, ftz):
    f = formats.FORMATS[name]
    raw = np.dtype(f"u{max(1, (f.width + f.shift) // 8)}")
    if f.width <= 16:
        codes = np.arange(1 << f.width, dtype=np.uint64)
    else:
        codes = np.concatenate([np.arange(0, 1 << 12), np.random.default_rng(1).integers(0, 1 << 62, 20000)]).astype(np.uint64)
        codes = codes >> np.uint64(64 - f.width) if f.width < 64 else codes
        codes = np.concatenate([codes, np.array([(1 << (f.width - 1 - f.t)) - 1 << f.t | m for m in (0, 1, 1 << (f.t - 1))],
                                                np.uint64)])
    codes = (codes << np.uint64(f.shift)).astype(raw)
    got = specials.classes(codes, name, ftz)
    want = [class_of(name, c, ftz) for c in codes]
    assert got.tolist() == want


def mixed(name, n, arity, seed):
    """Operands in which about half the elements are special: every NaN kind (quiet, signalling,
    both signs, random payloads), infinities, zeros, subnormals; the rest random codes."""
    f = formats.FORMATS[name]
    rng = np.random.default_rng(seed)
    w, t = f.width, f.t
    top = ((1 << (w - 1 - t)) - 1) << t
    out = []
    for _ in range(arity):
        r = rng.integers(0, 1 << 62, n, dtype=np.int64).astype(np.uint64) >> np.uint64(62 - w) if w < 62 else \
            rng.integers(0, 1 << 63, n, dtype=np.int64).astype(np.uint64) * np.uint64(2) + rng.integers(0, 2, n).astype(np.uint64)
        r = r & np.uint64((1 << w) - 1) if w < 64 else r
        kind = rng.integers(0, 8, n)
        pay = rng.integers(1, 1 << min(t, 62), n, dtype=np.int64).astype(np.uint64)
        sign = rng.integers(0, 2, n).astype(np.uint64) << np.uint64(w - 1)
        if f.specials == "ieee":
            r = np.where(kind == 0, np.uint64(top) | pay | sign, r)                      # NaN, any payload
            r = np.where(kind == 1, np.uint64(top) | sign, r)                            # +-inf
        elif f.specials == "fn":
            r = np.where(kind < 2, np.uint64(f.mag_mask) | sign, r)
        r = np.where(kind == 2, sign, r)                                                  # +-0
        r = np.where(kind == 3, (pay & np.uint64((1 << t) - 1)) | sign, r)                # subnormal (or 0)
        out.append((r << np.uint64(f.shift)).astype(np.dtype(f"u{max(1, (w + f.shift) // 8)}")))
    return out


def independent(op, name, ops, ftz):
    if name in ("FP32", "FP64"):
        assert not ftz
        return softfloat(op, name, *ops)
    return R.reference(op, name, *ops, ftz=ftz)


@pytest.mark.parametrize("profile", ("ieee", "ftz"))
@pytest.mark.parametrize("name", WIDE + ("E4M3", "E5M2"))
@pytest.mark.parametrize("op", OPS)
def test_special_heavy_operands_match_the_definitions(op, name, profile):
    if op != "TFMA" and name in ("E4M3", "E5M2"):
        pytest.skip("8-bit binary and unary operations read tables of the reference (test_ops_float)")
    if profile == "ftz" and name in ("FP32", "FP64"):
        pytest.skip("SoftFloat has no ftz; test_ops_ftz.py checks FP32/FP64 ftz")
    if name == "FP64" and op == "TREM":
        pytest.skip("SoftFloat's remainder is IEEE's, not floor modulo; test_fast64.py checks FP64 TREM")
    if name in ("FP32", "FP64") and op not in SF_OPS_NAMES:
        pytest.skip("no SoftFloat counterpart")
    ops = mixed(name, 3000 if name in ("FP32", "FP64") else 6000, ARITY.get(op, 2), 11)
    got = numeric.elementwise(op, name, *ops, profile=profile)
    assert_same(f"{op}.{name}.{profile}", got, independent(op, name, ops, profile == "ftz"), ops)


SF_OPS_NAMES = ("TADD", "TSUB", "TMUL", "TDIV", "TSQRT", "TFMA")


@pytest.mark.parametrize("profile", ("ieee", "ftz", "a5"))
@pytest.mark.parametrize("name", WIDE + ("E4M3", "E5M2"))
def test_every_compiled_case_settles_special_operands_without_the_reference(name, profile):
    """After the class table, the marks left for the next tier or the NumPy reference have no NaN
    or infinite operand: those never leave compiled code."""
    prof = PROFILES[profile]
    dt = datatype(name)
    for op in ("TADD", "TSUB", "TMUL", "TDIV", "TREM", "TFMA", "TSQRT", "TRECIP", "TEXP", "TLOG", "TRSQRT"):
        arity = ARITY.get(op, 2) if op in ARITY or op not in ("TEXP", "TLOG", "TRSQRT") else 1
        t = tiers.select(op, dt, prof, arity)
        if t is None or t.kind != "kernels":
            continue
        ops = mixed(name, 4000, arity, 5)
        with np.errstate(all="ignore"):
            bits, flags = tiers.run_kernels(t, op, name, ops, prof)
            specials.settle(op, name, prof, tiers.reference(op), ops, bits, flags)
        left = flags == fast.FALLBACK
        cls = [specials.classes(x, name, prof.ftz) for x in ops]
        nonfinite = np.zeros(len(left), bool)
        for k in cls:
            nonfinite |= k < 4
        assert not (left & nonfinite).any(), (op, name, profile, [hex(x[np.flatnonzero(left & nonfinite)[0]]) for x in ops])


def test_a_table_holds_what_the_reference_gives_for_each_decided_class_combination():
    prof = PROFILES["ieee"]
    tb = specials.table("TDIV", "FP32", prof, 2, tiers.reference("TDIV"))
    k = lambda a, b: a * specials.CLASSES + b      # noqa: E731
    # 0/0 and inf/inf: the canonical NaN with NV; x/0: the infinity of the xor sign with DZ
    assert (tb.src[k(4, 5)], tb.code[k(4, 5)], tb.flags[k(4, 5)]) == (specials.CODE, 0x7FC00000, 1)
    assert (tb.src[k(2, 3)], tb.code[k(2, 3)], tb.flags[k(2, 3)]) == (specials.CODE, 0x7FC00000, 1)
    assert (tb.src[k(7, 4)], tb.code[k(7, 4)], tb.flags[k(7, 4)]) == (specials.CODE, 0xFF800000, 2)
    # finite / finite is decided by the values
    assert tb.src[k(6, 7)] == specials.UNDECIDED
    add = specials.table("TADD", "FP32", prof, 2, tiers.reference("TADD"))
    assert add.src[k(6, 4)] == 0 and add.flags[k(6, 4)] == 0        # x + 0 = x
    assert add.src[k(1, 6)] == specials.CODE and add.flags[k(1, 6)] == 1   # sNaN + x: NaN, NV
