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

The device array module is CuPy.  `use_device_module(module)` puts another module with CuPy's
API in its place (None restores CuPy): its `ndarray` type is then what counts as a device
array, and it is taken as a usable device.  The test suite installs a strict stand-in there
(tests/strict_device.py: arrays that refuse implicit host conversion and host/device mixing as
CuPy does, and count transfers), so the gpu backend's array code runs without a GPU.
"""
from __future__ import annotations

import os
from functools import lru_cache

import numpy as np


_substitute = None          # a module standing in for CuPy (use_device_module), or None


def use_device_module(module) -> None:
    """Make `module` (CuPy's API: ndarray, asarray, asnumpy, cuda.runtime.memGetInfo, ...) the
    device array module in place of CuPy; None restores CuPy.  For the test suite's stand-in."""
    global _substitute
    _substitute = module
    gpu_status.cache_clear()


def device_module():
    """The device array module: CuPy (imported on first use), or the installed substitute."""
    if _substitute is not None:
        return _substitute
    import cupy
    return cupy


def _on_device(x) -> bool:
    if _substitute is not None:
        return isinstance(x, _substitute.ndarray)
    return type(x).__module__.startswith("cupy")


def is_device_array(x) -> bool:
    """True for CuPy arrays (and anything else exposing __cuda_array_interface__ but not NumPy's)."""
    return _on_device(x) or (hasattr(x, "__cuda_array_interface__") and not isinstance(x, np.ndarray))


def array_module(*arrays):
    """numpy, or the device module (cupy) when any argument is a device array."""
    for x in arrays:
        if _on_device(x):
            return device_module()
    return np


def to_host(x) -> np.ndarray:
    """A NumPy array with x's contents (x itself when it is already one)."""
    if isinstance(x, np.ndarray):
        return x
    if _on_device(x):
        return device_module().asnumpy(x)
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
    if _substitute is not None:
        return True, getattr(_substitute, "DESCRIPTION", f"{_substitute.__name__} standing in for CuPy")
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return False, "NUMBA_ENABLE_CUDASIM=1 (the CUDA simulator runs kernels on the CPU; no CuPy arrays)"
    try:
        cupy = device_module()
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
    cupy = device_module()
    free, _total = cupy.cuda.runtime.memGetInfo()
    pool = cupy.get_default_memory_pool()
    return int(free + pool.free_bytes())


def require_gpu() -> str:
    """The device description, or RuntimeError with the reason no GPU is usable."""
    ok, why = gpu_status()
    if not ok:
        raise RuntimeError(f"no usable GPU: {why}")
    return why
