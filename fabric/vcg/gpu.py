"""Numba-CUDA reduce kernel: one thread per output element, the fold compiled from jit.py's
scalar functions.  Imported only when backend="cuda" runs, because importing numba.cuda fixes
whether the real driver or the simulator (NUMBA_ENABLE_CUDASIM=1) is used.

float16 is refused here; CuPy's float16 arithmetic runs through backend="cupy".
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from .jit import _comb_for, _finish, _launch_args, _make_cell
from .reduce import ReducePlan

_GPU: dict[str, object] = {}
THREADS = 256


def _gpu_kernel(name: str, comb):
    if name not in _GPU:
        cell = _make_cell(lambda f: cuda.jit(device=True)(f), cuda.jit(device=True)(comb))

        @cuda.jit
        def kernel(x8, v8, fiber, split, r_in_packet, op, seed, lo, hi, qnan, canon, out):
            i = cuda.grid(1)
            n_o, n_l = out.shape[1], out.shape[2]
            if i < out.shape[0] * n_o * n_l:
                s = i // (n_o * n_l)
                o = (i // n_l) % n_o
                lane = i % n_l
                out[s, o, lane] = cell(s, o, lane, x8, v8, fiber, split, r_in_packet,
                                       op, seed, lo, hi, qnan, canon)
        _GPU[name] = kernel
    return _GPU[name]


def reduce_cuda(x8, v8, plan: ReducePlan, op: str, device_out: bool = False):
    """Numba-CUDA backend (NUMBA_ENABLE_CUDASIM=1 runs it on the CPU simulator).

    x8/v8 may be NumPy arrays (copied to the device) or device arrays (CuPy or Numba, used in
    place).  Returns host NumPy arrays unless device_out=True.
    """
    dt = np.dtype(x8.dtype)
    if dt == np.float16:
        raise TypeError("the Numba-CUDA reduce kernel has no float16 path; use backend='cupy' "
                        "(GPU) or 'numpy'")
    name, comb = _comb_for(dt)
    kernel = _gpu_kernel(name, comb)
    args = _launch_args(x8, plan, op)
    d_x = cuda.as_cuda_array(x8) if hasattr(x8, "__cuda_array_interface__") else cuda.to_device(np.ascontiguousarray(x8))
    d_v = cuda.as_cuda_array(v8) if hasattr(v8, "__cuda_array_interface__") else cuda.to_device(np.ascontiguousarray(v8))
    d_f = cuda.to_device(args[0])
    d_acc = cuda.device_array((plan.num_slices, plan.out_steps, plan.out_lanes), dtype=dt)
    n = d_acc.size
    with np.errstate(all="ignore"):            # the simulator runs the scalar code on NumPy
        kernel[(n + THREADS - 1) // THREADS, THREADS](d_x, d_v, d_f, *args[1:], d_acc)
    if device_out:
        return d_acc
    acc = d_acc.copy_to_host()
    return _finish(acc, plan), np.full((plan.num_slices, plan.out_steps), plan.out_lanes, np.uint8)
