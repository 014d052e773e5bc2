"""GPU throughput of the VCG-tagged reduce (backend "cuda": Numba-CUDA kernel; "cupy": the NumPy
code on CuPy arrays), on the same 65536 x 64 batches as bench_vcg.py, with the bits checked
against the CPU NumPy backend.  Run on a GPU machine:

    sh benchmarks/gpu_check_vcg.sh            # or: python benchmarks/gpu_vcg.py [--repeat N]

Prints one JSON object per case: device-resident kernel time (inputs already on the GPU),
M flits/s, GB/s of flit bytes read, and whether the bits match the CPU result.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bench_vcg import CASES, PLACEMENTS, SLICES, STEPS, _batch  # noqa: E402

from fabric.vcg.reduce import reduce_flits, reduce_xp  # noqa: E402


def _time(fn, sync, repeat):
    fn()
    sync()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="VCG reduce GPU throughput")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--slices", type=int, default=SLICES, help="batch slices (small for the simulator)")
    args = ap.parse_args(argv)
    from numba import cuda
    from fabric.vcg.gpu import reduce_cuda
    try:
        import cupy
    except ImportError:
        cupy = None
    try:
        name = cuda.get_current_device().name
    except AttributeError:                      # the CUDA simulator
        name = "CUDA simulator"
    print(json.dumps({"device": name.decode() if isinstance(name, bytes) else str(name)}))
    ok_all = True
    for placement in PLACEMENTS:
        for dtype, op in CASES:
            m, vs, x8, plan = _batch(placement, dtype, args.slices)
            slices = args.slices
            want, _ = reduce_flits(x8, vs, plan, op, "numpy")
            u = f"u{x8.dtype.itemsize}"
            x3, v2 = x8.reshape(slices, STEPS, 8), vs.reshape(slices, STEPS)
            d_x, d_v = cuda.to_device(x3), cuda.to_device(v2)
            t = _time(lambda: reduce_cuda(d_x, d_v, plan, op, device_out=True), cuda.synchronize, args.repeat)
            got, _ = reduce_cuda(d_x, d_v, plan, op)
            rows = [("cuda", t, np.array_equal(got.view(u), want.view(u)))]
            if cupy is not None:
                c_x, c_v = cupy.asarray(x3), cupy.asarray(v2)
                sync = cupy.cuda.Device().synchronize
                t = _time(lambda: reduce_xp(c_x, c_v, plan, op, cupy), sync, args.repeat)
                got = cupy.asnumpy(reduce_xp(c_x, c_v, plan, op, cupy)[0])
                rows.append(("cupy", t, np.array_equal(got.view(u), want.view(u))))
            for backend, t, same in rows:
                flits = slices * STEPS
                ok_all &= bool(same)
                print(json.dumps({"placement": placement, "dtype": dtype, "op": op, "backend": backend,
                                  "seconds": t, "Mflits_s": round(flits / t / 1e6, 1),
                                  "GB_s": round(x8.nbytes / t / 1e9, 1), "bits_match_cpu": bool(same)}))
    return 0 if ok_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
