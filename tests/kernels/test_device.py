"""kernels.device: GPU status, free memory and array modules, on a machine without a GPU.

gpu_status() must always answer (never raise) and say why no GPU is usable; the array helpers
keep NumPy arrays as they are, so code written against `xp` runs unchanged on the CPU.
"""
import numpy as np

from kernels import device


def test_gpu_status_answers_with_a_reason():
    ok, why = device.gpu_status()
    assert isinstance(ok, bool) and isinstance(why, str) and why
    if not ok:
        assert device.free_device_bytes() is None


def test_numpy_arrays_stay_numpy():
    x = np.arange(5, dtype=np.uint16)
    assert device.array_module(x) is np and device.array_module(x, x) is np
    assert not device.is_device_array(x)
    assert device.to_host(x) is x and device.to_device(x, np) is x
    assert device.from_cuda(x, np) is x or np.array_equal(device.from_cuda(x, np), x)


def test_objects_with_a_cuda_array_interface_count_as_device_arrays():
    class Fake:
        __cuda_array_interface__ = {"shape": (1,), "typestr": "<u2", "data": (0, False), "version": 3}
    assert device.is_device_array(Fake())


def test_require_gpu_names_the_reason(monkeypatch):
    monkeypatch.setattr(device, "gpu_status", lambda: (False, "no CUDA device"))
    try:
        device.require_gpu()
    except RuntimeError as exc:
        assert "no usable GPU: no CUDA device" in str(exc)
    else:
        raise AssertionError("require_gpu returned without a GPU")
