"""GPU check of the numeric layer: the Numba-CUDA conversion kernel against the NumPy reference.

For every wide IEEE source/destination pair and every rounding mode the kernel supports, convert
2^22 random encodings (plus every special class) on the GPU and on the CPU reference path
(`kernels.numeric.convert`), require identical bits and flags, and report device throughput.
Prints one JSON object per case; exits 1 if any bit differs.  Runs under NUMBA_ENABLE_CUDASIM=1
too (use --n 4096 there).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from isa.datatypes import datatype
from kernels import numeric
from kernels.numeric import fastconvert

PAIRS = [("FP32", "FP16"), ("FP32", "BF16"), ("FP32", "TF32"), ("FP64", "FP32"), ("FP64", "FP16")]
MODES = list(fastconvert.MODE_CODE)


def _inputs(src: str, n: int, rng) -> np.ndarray:
    width = datatype(src).container
    raw = rng.integers(0, 1 << width, size=n, dtype=np.uint64)
    specials = np.array([0, 1, (1 << (width - 1)), (1 << (width - 1)) + 1, (1 << width) - 1], np.uint64)
    return np.concatenate([raw, specials]).astype(datatype(src).raw_dtype)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 22)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    from numba import cuda
    rng = np.random.default_rng(2026)
    ok = True
    for src, dst in PAIRS:
        s, d = datatype(src), datatype(dst)
        x = _inputs(src, args.n, rng)
        dx = cuda.to_device(x)
        for mode in MODES:
            want_b, want_f = numeric.convert(x, src, dst, rmode=mode)
            got_b, got_f = fastconvert.cuda_convert_ieee(dx, s, d, mode, False, False)
            cuda.synchronize()
            best = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                fastconvert.cuda_convert_ieee(dx, s, d, mode, False, False)
                cuda.synchronize()
                best = min(best, time.perf_counter() - t0)
            same = bool(np.array_equal(got_b.copy_to_host(), want_b) and np.array_equal(got_f.copy_to_host(), want_f))
            ok &= same
            print(json.dumps({"case": f"TCVT {src}->{dst} {mode}", "elements": int(x.size),
                              "gpu_Melem_per_s": round(x.size / best / 1e6, 1), "bits_match_cpu": same}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
