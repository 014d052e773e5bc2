"""The GPU, if there is one: whether it is usable, how much memory is free, which array module an
array belongs to.

    ok, why = gpu_status()          # (True, "NVIDIA H200 (cc 9.0, 139.8 GiB), CuPy 13.x, CUDA 13.0")
    xp = array_module(x)            # numpy, or cupy for a CuPy array
    free_device_bytes()             # None without a usable GPU

A GPU is usable when CuPy imports, sees a device and Numba-CUDA can compile for it; the reason
names the first of these that fails.  Nothing here allocates device memory or imports CuPy
unless asked about the GPU, so CPU-only machines (and the CUDA simulator, which has no CuPy)
pay nothing.  Arrays follow the common NumPy/CuPy API, so code written against `xp` runs on
both; tests pass NumPy arrays through the same code.
"""
from __future__ import annotations

import os
from functools import lru_cache

import numpy as np


def _cupy():
    import cupy
    return cupy


def is_device_array(x) -> bool:
    """True for CuPy arrays (and anything else exposing __cuda_array_interface__ but not NumPy's)."""
    return type(x).__module__.startswith("cupy") or (
        hasattr(x, "__cuda_array_interface__") and not isinstance(x, np.ndarray))


def array_module(*arrays):
    """numpy, or cupy when any argument is a CuPy array."""
    for x in arrays:
        if type(x).__module__.startswith("cupy"):
            return _cupy()
    return np


def to_host(x) -> np.ndarray:
    """A NumPy array with x's contents (x itself when it is already one)."""
    if isinstance(x, np.ndarray):
        return x
    if type(x).__module__.startswith("cupy"):
        return _cupy().asnumpy(x)
    if hasattr(x, "copy_to_host"):                 # a numba.cuda device array
        return x.copy_to_host()
    return np.asarray(x)


def to_device(x, xp):
    """x as an array of module xp (a host -> device copy for cupy; NumPy arrays stay as they are)."""
    return x if xp is np else xp.asarray(x)


def from_cuda(x, xp):
    """A numba.cuda device array as an array of module xp: a zero-copy CuPy view
    (__cuda_array_interface__), or a host copy for NumPy (the CUDA simulator)."""
    if xp is np:
        return x.copy_to_host() if hasattr(x, "copy_to_host") else np.asarray(x)
    return xp.asarray(x)


@lru_cache(maxsize=1)
def gpu_status() -> tuple[bool, str]:
    """(usable, description): the device and library versions, or why no GPU can be used."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return False, "NUMBA_ENABLE_CUDASIM=1 (the CUDA simulator runs kernels on the CPU; no CuPy arrays)"
    try:
        cupy = _cupy()
    except ImportError as exc:
        return False, f"CuPy is not installed ({exc}); pip install -e '.[gpu]'"
    except Exception as exc:                        # a broken CUDA install raises at import
        return False, f"CuPy does not import: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return False, f"no CUDA device ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no detail'})"
    if n < 1:
        return False, "no CUDA device"
    try:
        from numba import cuda
        if not cuda.is_available():
            return False, "Numba-CUDA sees no usable device (driver or toolkit missing; pip install numba-cuda)"
    except ImportError:
        return False, "numba-cuda is not installed; pip install -e '.[gpu]'"
    try:
        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        cc = f"{props['major']}.{props['minor']}"
        mem = props["totalGlobalMem"] / 2 ** 30
        rt = cupy.cuda.runtime.runtimeGetVersion()
        return True, f"{name} (cc {cc}, {mem:.1f} GiB), CuPy {cupy.__version__}, CUDA runtime {rt // 1000}.{rt % 1000 // 10}"
    except Exception as exc:
        return False, f"cannot query device 0 ({type(exc).__name__}: {exc})"


def free_device_bytes() -> int | None:
    """Free memory of the current device in bytes (driver's view plus CuPy's pool), or None."""
    ok, _ = gpu_status()
    if not ok:
        return None
    cupy = _cupy()
    free, _total = cupy.cuda.runtime.memGetInfo()
    pool = cupy.get_default_memory_pool()
    return int(free + pool.free_bytes())


free_bytes = free_device_bytes     # the name emulator/backends.py asks for


def require_gpu() -> str:
    """The device description, or RuntimeError with the reason no GPU is usable."""
    ok, why = gpu_status()
    if not ok:
        raise RuntimeError(f"no usable GPU: {why}")
    return why
