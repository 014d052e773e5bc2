"""TCVT throughput (kernels.numeric.convert) against ml_dtypes' astype, measured in the same run.

    python -m pytest benchmarks/bench_convert.py -q --benchmark-only

Each case converts 2^20 FP32 elements (normal(0, 100) values plus a few percent NaN/inf/tiny)
with the default RMode (RNE).  The baseline is ml_dtypes' FP32 -> destination astype (HiF8 has
no ml_dtypes type; its baseline is the same-size E4M3 astype).  extra_info records elements/s
of both and ratio = baseline time / convert time (> 1: convert is faster).  Targets: 8-bit
destinations >= 4x (issue 3); BF16 and FP16 >= 1x (issue 16; FP16's baseline is NumPy's
astype(float16); `tile-emu bench --case numeric.TCVT` measures the same pairs on normal data).
"""
import timeit

import numpy as np
import pytest

from kernels import numeric

ml_dtypes = pytest.importorskip("ml_dtypes")

N = 1 << 20
BASELINE = {"E4M3": ml_dtypes.float8_e4m3fn, "HiF8": ml_dtypes.float8_e4m3fn, "BF16": ml_dtypes.bfloat16,
            "E5M2": ml_dtypes.float8_e5m2, "FP16": np.float16}


def _data():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(N) * 100).astype(np.float32)
    k = N // 50
    x[rng.integers(0, N, k)] = np.float32(np.nan)
    x[rng.integers(0, N, k)] = np.float32(np.inf)
    x[rng.integers(0, N, k)] = np.float32(1e-40)
    return x


@pytest.mark.parametrize("dst", ["E4M3", "HiF8", "BF16", "E5M2", "FP16"])
def test_tcvt_fp32_to(benchmark, dst):
    x = _data()
    u = x.view(np.uint32)
    numeric.convert(u, "FP32", dst)                     # build tables / load compiled kernels
    base = BASELINE[dst]
    with np.errstate(all="ignore"):
        t_base = min(timeit.repeat(lambda: x.astype(base), number=3, repeat=7)) / 3
    benchmark.pedantic(numeric.convert, args=(u, "FP32", dst), rounds=21, iterations=1, warmup_rounds=2)
    t = benchmark.stats.stats.min
    benchmark.extra_info.update(
        elements=N, convert_Melem_s=round(N / t / 1e6, 1), baseline_Melem_s=round(N / t_base / 1e6, 1),
        baseline=str(np.dtype(base)), ratio=round(t_base / t, 2))
    print(f"\nTCVT FP32->{dst}: {N / t / 1e6:.0f} M elem/s, ml_dtypes {np.dtype(base)} "
          f"{N / t_base / 1e6:.0f} M elem/s, ratio {t_base / t:.2f}")
