"""The Numba per-element conversion compiled as a CUDA kernel gives the reference bits.

Runs under the CUDA simulator (NUMBA_ENABLE_CUDASIM=1, in a subprocess so the rest of the
suite keeps the real numba.cuda); on a GPU machine the same script runs on the device.
"""
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import numpy as np, importlib
    from isa.datatypes import datatype
    from kernels.numeric import fastconvert as fc
    cv = importlib.import_module("kernels.numeric.convert")
    rng = np.random.default_rng(0)
    u = rng.integers(0, 1 << 32, 200, dtype=np.uint64).astype(np.uint32)
    u[:20] = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7F800001, 0x7FC00000, 1, 0x807FFFFF, 0x7F7FFFFF,
              0x00800000, 0x3F800001, 0x477FF000, 0x477FEFFF, 0x387FC000, 0x33800000, 0x33000001,
              0x80000001, 0x3FC00000, 0xBF400000, 0x4B800001]
    for dst in ("FP16", "BF16"):
        for mode in ("RNE", "RTO", "RTM"):
            for sat, ftz in ((False, False), (True, True)):
                ob, of = fc.cuda_convert_ieee(u, datatype("FP32"), datatype(dst), mode, sat, ftz)
                wb, wf = cv.convert_generic(u, datatype("FP32"), datatype(dst), mode, sat, ftz)
                assert np.array_equal(ob.copy_to_host(), wb), (dst, mode, sat, ftz)
                assert np.array_equal(of.copy_to_host(), wf), (dst, mode, sat, ftz)
    print("CUDA-OK")
""")


def test_cuda_kernel_matches_the_reference_under_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONWARNINGS="ignore")
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "CUDA-OK" in r.stdout, r.stderr[-3000:]
