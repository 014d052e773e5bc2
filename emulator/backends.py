"""Execution backends of a MachineBatch: names, the array module each uses, device checks.

    reference  one emulator.Machine per machine (the oracle: today's code, unchanged)
    cpu        the batched engine (emulator/batch.py) on NumPy arrays
    gpu        the same engine with CuPy arrays (device-resident tiles); needs a usable GPU
    auto       gpu when kernels.device.gpu_status() says one is usable, else cpu

`resolve_backend(name)` -> (backend, xp, why): `why` says in words what was chosen and why
(`MachineBatch.why`, printed by `tile-emu run --backend auto`).  Every GPU question goes through
kernels.device (gpu_status, free memory), so there is one place that knows about devices.
"""
from __future__ import annotations

import numpy as np

BACKENDS = ("reference", "cpu", "gpu", "auto")


class BackendError(ValueError):
    """An unknown backend, a GPU backend without a usable GPU, a batch too big for the device."""


def gpu_status() -> tuple[bool, str]:
    """(usable, why): kernels.device's answer, or 'no GPU support installed' without it."""
    try:
        from kernels.device import gpu_status as status
    except ImportError as exc:
        return False, f"no GPU support installed ({exc})"
    return status()


def resolve_backend(name: str):
    if name not in BACKENDS:
        raise BackendError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    if name in ("reference", "cpu"):
        return name, np, f"{name} backend"
    usable, why = gpu_status()
    if name == "auto" and not usable:
        return "cpu", np, f"cpu backend (auto: no usable GPU: {why})"
    if not usable:
        raise BackendError(f"backend gpu: no usable GPU: {why}")
    from kernels.device import device_module
    return "gpu", device_module(), f"gpu backend ({why})"


def check_device_memory(needed: int) -> None:
    """BackendError, before anything is allocated, when `needed` bytes exceed the device's free
    memory (kernels.device.free_bytes() when it exists, else CUDA's own count)."""
    try:
        from kernels.device import free_bytes
        free = int(free_bytes())
    except ImportError:
        from kernels.device import device_module
        free = int(device_module().cuda.runtime.memGetInfo()[0])
    if needed > free:
        raise BackendError(f"backend gpu: the batch needs {needed} bytes of device memory; "
                           f"{free} bytes are free")
