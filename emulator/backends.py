"""Execution backends: the registry of names, the array module each uses, device checks.

    reference  one reference machine per machine (the oracle: block by block, NumPy)
    cpu        the batched engine (emulator/engine.py) on NumPy arrays
    gpu        the same engine with CuPy arrays (device-resident tiles); needs a usable GPU
    auto       gpu when kernels.device.gpu_status() says one is usable, else cpu

`resolve_backend(name)` -> (backend, xp, why): `why` says in words what was chosen and why
(`MachineBatch.why`, printed by `tile-emu run --backend auto`).  Every GPU question goes through
kernels.device (gpu_status, free memory), so there is one place that knows about devices.  What
runs a resolved backend is the engine's (emulator/engine.py: one_machine for a Machine, the
batch engine for a MachineBatch); this module names backends and imports no engine.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Backend:
    name: str
    doc: str


BACKENDS: dict[str, Backend] = {b.name: b for b in (
    Backend("reference", "one reference machine per machine, block by block (the oracle)"),
    Backend("cpu", "the batched engine on NumPy arrays"),
    Backend("gpu", "the batched engine on CuPy arrays, tiles resident on the device"),
    Backend("auto", "gpu when a usable GPU is found, else cpu (resolved at construction)"),
)}


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
    memory (kernels.device.free_device_bytes)."""
    from kernels.device import free_device_bytes
    free = free_device_bytes()
    if free is None:
        raise BackendError("backend gpu: the device's free memory cannot be read (no usable GPU)")
    if needed > free:
        raise BackendError(f"backend gpu: the batch needs {needed} bytes of device memory; "
                           f"{free} bytes are free")
