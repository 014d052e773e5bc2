"""Numba-CUDA reduce kernel: one thread per output element, compiling jit.py's `cell` (the same
fold as the CPU kernel, float16/bfloat16 included: raw bits in, binary64 (float16) or binary32
(bfloat16) fold, encoded on the
host).  Imported only when backend="cuda" runs, because importing numba.cuda fixes whether the
real driver or the simulator (NUMBA_ENABLE_CUDASIM=1) is used.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from .fold import ReducePlan, fold_dtype
from .jit import _finish, _launch_args, cell, kernel_input

THREADS = 256
_cell_gpu = cuda.jit(device=True)(cell)


@cuda.jit
def _kernel_gpu(x8, v8, fiber, split, r_in_packet, op, seed, lo, hi, witness, fmt, canon, qnan, out):
    i = cuda.grid(1)
    n_o, n_l = out.shape[1], out.shape[2]
    if i < out.shape[0] * n_o * n_l:
        s = i // (n_o * n_l)
        o = (i // n_l) % n_o
        lane = i % n_l
        out[s, o, lane] = _cell_gpu(s, o, lane, x8, v8, fiber, split, r_in_packet,
                                    op, seed, lo, hi, witness, fmt, canon, qnan)


def _device(a):
    if hasattr(a, "__cuda_array_interface__"):
        return cuda.as_cuda_array(a)
    return cuda.to_device(np.ascontiguousarray(a))


def reduce_cuda(x8, v8, plan: ReducePlan, op: str, device_out: bool = False):
    """Numba-CUDA backend (NUMBA_ENABLE_CUDASIM=1 runs it on the CPU simulator).

    x8/v8 may be NumPy arrays (copied to the device) or device arrays (CuPy or Numba, used in
    place).  Returns host NumPy arrays (out, out_valid), or the device accumulator
    [S, O, out_lanes] when device_out=True (fold.fold_dtype: binary64 values for float16,
    binary32 for bfloat16).
    """
    dt = np.dtype(x8.dtype)
    args = _launch_args(x8, plan, op)
    d_acc = cuda.device_array((plan.num_slices, plan.out_steps, plan.out_lanes), dtype=fold_dtype(dt))
    n = d_acc.size
    with np.errstate(all="ignore"):            # the simulator runs the scalar code on NumPy
        _kernel_gpu[(n + THREADS - 1) // THREADS, THREADS](
            _device(kernel_input(x8)), _device(v8), cuda.to_device(args[0]), *args[1:], d_acc)
    if device_out:
        return d_acc
    acc = d_acc.copy_to_host()
    return _finish(acc, plan, dt), np.full((plan.num_slices, plan.out_steps), plan.out_lanes, np.uint8)
