"""Every CUDA kernel of the numeric layer compiles to PTX without what bit-exactness forbids.

No GPU is needed: numba.cuda.compile_ptx runs NVVM from the pip wheels (numba-cuda,
nvidia-cuda-nvcc-cu12; the `test` extra).  NVVM contracts a separate multiply and add into
`fma` even without fast-math, so the kernels route every product through rn.mul_rn (PTX
`mul.rn`, never fused); this test rejects any `fma` (but the explicit one of the FP64 TFMA
kernel, whose reference rounds once), any flush-to-zero (`.ftz`) and any approximate
division, reciprocal, square root or exponential (`approx`): fastdiv's kernels must divide and
take roots with `div.rn.f64` / `sqrt.rn.f64` (profile a5's TREM kernels `div.rn.f32`; fastfn's TRSQRT: `sqrt.rn.f64`, then
`rcp.rn.f64`, the IEEE-rounded reciprocal NVVM makes of 1/s), and fast64's FP64 TMUL gets its exact product error
from Dekker's TwoProduct (mul.rn/add.rn), not from an fma (so do its TDIV/TRECIP/TSQRT, for NX).
"""
import re

import numpy as np
import pytest

pytest.importorskip("numba_cuda", reason="numba-cuda is not installed (pip install -e '.[test]')")

from numba import cuda, types  # noqa: E402

from kernels.numeric import cuda as kcuda, fastconvert  # noqa: E402

FORBIDDEN = {
    "fused multiply-add": re.compile(r"\bfma\.[\w.]+|\bmad\.(rn\.)?f(16|32|64)\b"),
    "flush to zero": re.compile(r"\.ftz\b"),
    "approximate math": re.compile(r"\bapprox\b"),
}
CC = (8, 0)


def kernels():
    """Every distinct (kernel source, signature) of kernel_sources() -- rows that run the same
    routine on formats of one container share a kernel -- named by its first row."""
    kcuda._numba_cuda()
    fastconvert._cuda_kernel()                      # binds fastconvert's numba.cuda global
    out, seen = [], set()
    for name, (src, sigs) in kcuda.kernel_sources().items():
        for i, sig in enumerate(sigs):
            if (id(src), sig) not in seen:
                seen.add((id(src), sig))
                out.append((f"{name}[{i}]", src, sig))
    u64, i64 = types.uint64[::1], types.int64[::1]
    for src_t, dst_t in ((types.uint32, types.uint16), (types.uint64, types.uint32)):
        out.append((f"fastconvert.cvt[{src_t}->{dst_t}]", fastconvert._cvt_kernel_body,
                    (src_t[::1], dst_t[::1], types.uint8[::1], i64)))
    del u64
    return out


KERNELS = kernels()


# FP64 TFMA rounds once in the reference, so its kernel asks for exactly one explicit fma
# (rn.fma_rn), its result; its exactness test (ErrFma) takes the product error from Dekker's
# TwoProduct, without fma; any contraction would add one and fail.  (FP32 TFMA adds the exact
# binary64 product by TwoSum: no fma.)
EXPLICIT_FMA = {"fast64.FP64.TFMA": ["fma.rn.f64"]}
ROWS = {name: src for name, (src, _) in kcuda.kernel_sources().items()}


@pytest.mark.parametrize("name,src,sig", KERNELS, ids=[k[0] for k in KERNELS])
def test_kernel_ptx_has_no_contraction_ftz_or_approximation(name, src, sig):
    ptx, _ = cuda.compile_ptx(src, sig, cc=CC)
    assert ".entry" in ptx
    for what, pattern in FORBIDDEN.items():
        hits = [m.group(0) for m in pattern.finditer(ptx)]
        if what == "fused multiply-add":
            explicit = [n for n in EXPLICIT_FMA if ROWS.get(n) is src]
            want = EXPLICIT_FMA[explicit[0]] if explicit else []
            assert sorted(hits) == want, f"{name}: {what} in PTX: {hits}"
        else:
            assert not hits, f"{name}: {what} in PTX: {sorted(set(hits))}"


@pytest.mark.parametrize("name,wanted", [("fastdiv-simd.FP32.TDIV", r"\bdiv\.rn\.f64\b"),
                                         ("fastdiv-simd.FP32.TSQRT", r"\bsqrt\.rn\.f64\b"),
                                         ("fastdiv.TF32.TSQRT", r"\bsqrt\.rn\.f64\b"),
                                         ("fastdiv.TF32.TDIV", r"\bdiv\.rn\.f64\b"),
                                         ("fast64.FP64.TDIV", r"\bdiv\.rn\.f64\b"),
                                         ("fast64.FP64.TSQRT", r"\bsqrt\.rn\.f64\b"),
                                         ("fastfn.FP32.TRSQRT", r"\bsqrt\.rn\.f64\b"),
                                         ("fastfn.FP32.TRSQRT", r"\brcp\.rn\.f64\b"),    # 1/s: IEEE reciprocal
                                         ("fastfn.FP32.TLOG", r"\bdiv\.rn\.f64\b"),
                                         ("fast64.FP64.TRSQRT", r"\bsqrt\.rn\.f64\b"),
                                         ("a5.FP32.TREM", r"\bdiv\.rn\.f32\b"),       # profile a5: binary32
                                         ("a5.FP16.TREM", r"\bdiv\.rn\.f32\b"),       # quotients, IEEE-rounded
                                         ("fast64.FP64.TRSQRT", r"\brcp\.rn\.f64\b")])
def test_division_and_root_kernels_use_the_correctly_rounded_instructions(name, wanted):
    src, sigs = kcuda.kernel_sources()[name]
    ptx, _ = cuda.compile_ptx(src, sigs[0], cc=CC)
    assert re.search(wanted, ptx), name


def test_the_check_catches_a_contracted_multiply_add():
    def naive(a, b, c, out):
        i = cuda.grid(1)
        if i < a.shape[0]:
            out[i] = a[i] * b[i] + c[i]
    ptx, _ = cuda.compile_ptx(naive, (types.float64[::1],) * 4, cc=CC)
    assert FORBIDDEN["fused multiply-add"].search(ptx)


def test_every_device_kernel_is_checked():
    """Every row of every compiled tier of the tier table has a kernel, and the kernel source
    and signature of each row is among those compiled above."""
    from kernels.numeric import tiers
    checked = {(id(src), sig) for _, src, sig in KERNELS}
    rows = [(t, key) for t in tiers.TIERS if t.kernels for key in t.kernels]
    assert len(rows) >= 70
    for t, (name, op) in rows:
        src, sigs = kcuda.kernel_sources()[kcuda.kernel_name(t, name, op)]
        assert all((id(src), sig) in checked for sig in sigs), (t.name, name, op)
    assert np.all([len(k[2]) > 0 for k in KERNELS])
