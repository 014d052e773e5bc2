"""A strict stand-in for CuPy: the gpu backend's array code, run without a GPU, fails where
CuPy would fail on a real device, and says how much crossed to the host.

    import strict_device
    with strict_device.installed():            # kernels.device.use_device_module(strict_device)
        batch = MachineBatch(machines, "gpu")   # tiles are strict_device.ndarray
        strict_device.TRANSFERS.reset()
        batch.run(stream)
        assert strict_device.TRANSFERS.to_host == 0

`ndarray` wraps a NumPy array (the "device memory") and behaves like cupy.ndarray where host and
device meet:
  * no implicit conversion: np.asarray(x), np.array(x) and anything else that calls
    __array__ raise TypeError (CuPy: "Implicit conversion to a NumPy array is not allowed");
  * ufuncs, operators and NumPy functions reach it through __array_ufunc__ /
    __array_function__ (NEP 13/18, as for CuPy) and compute on the wrapped arrays; an argument
    that is a NumPy array raises TypeError ("Unsupported type"), 0-d ones included: CuPy's
    kernels take Python and NumPy scalars (np.generic) only (cupy/_core/_scalar.pyx, CScalar);
  * indexing gives device arrays (a 0-d array for one element, never a NumPy scalar); NumPy
    index arrays are copied to the device, as are NumPy values assigned through an array index
    (CuPy's _scatter_op), while a NumPy array assigned into a plain slice raises TypeError;
  * bool/int/float of a one-element array read it back (a synchronising scalar read).
Transfers are counted in TRANSFERS: `to_host` arrays (asnumpy, .get(), .tolist()) with their
bytes, `scalar_reads`, `to_device` arrays with their bytes.

Kernels: with NUMBA_ENABLE_CUDASIM=1 the CUDA simulator launches Numba-CUDA kernels on these
arrays (installed() registers a launch-argument extension that hands the simulator the wrapped
array, which the kernel reads and writes in place, as a real launch does with a CuPy array's
device memory; no transfer is counted).  Without the simulator no kernel can run here.
"""
from __future__ import annotations

import contextlib

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

DESCRIPTION = "strict CuPy stand-in (tests/strict_device.py; NumPy memory, no GPU)"


class Transfers:
    def __init__(self):
        self.reset()

    def reset(self):
        self.to_host = 0           # arrays copied device -> host
        self.to_host_bytes = 0
        self.scalar_reads = 0      # bool/int/float/item of a device value
        self.to_device = 0         # host arrays copied host -> device
        self.to_device_bytes = 0
        self.where: list[str] = []  # a short stack summary of each array read back

    def __repr__(self):
        return (f"Transfers(to_host={self.to_host} ({self.to_host_bytes} B), scalar_reads={self.scalar_reads}, "
                f"to_device={self.to_device} ({self.to_device_bytes} B))")


TRANSFERS = Transfers()


def _caller() -> str:
    import traceback
    frames = [f for f in traceback.extract_stack()[:-3] if "strict_device" not in f.filename]
    return " <- ".join(f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno}" for f in frames[-4:][::-1])


def _read_back(a: np.ndarray) -> np.ndarray:
    TRANSFERS.to_host += 1
    TRANSFERS.to_host_bytes += a.nbytes
    TRANSFERS.where.append(_caller())
    return np.array(a, copy=True)


def _upload(a) -> np.ndarray:
    a = np.array(a, copy=True)
    TRANSFERS.to_device += 1
    TRANSFERS.to_device_bytes += a.nbytes
    return a


def _unwrap(x):
    """A device argument of a kernel: the wrapped array; NumPy arrays (0-d too) refused."""
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, np.ndarray):
        raise TypeError(f"Unsupported type {type(x)} (a NumPy array where a device array is needed)")
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(e) for e in x)
    return x


def _wrap(x):
    if isinstance(x, np.ndarray):
        return ndarray(x)
    if isinstance(x, np.generic):            # CuPy reductions and functions give 0-d arrays
        return ndarray(np.asarray(x))
    if isinstance(x, tuple):
        return tuple(_wrap(e) for e in x)
    if isinstance(x, list):
        return [_wrap(e) for e in x]
    return x


def _index(key):
    """An index: device arrays unwrapped; NumPy arrays copied to the device (as CuPy does)."""
    if isinstance(key, tuple):
        return tuple(_index(k) for k in key)
    if isinstance(key, ndarray):
        return key._a
    if isinstance(key, np.ndarray) or isinstance(key, list):
        return _upload(key)
    return key


class ndarray(NDArrayOperatorsMixin):
    """A device array (see the module doc)."""

    __array_priority__ = 100

    def __init__(self, a: np.ndarray):
        self._a = a

    # -------------------------------------------------------- no implicit host conversion
    def __array__(self, *args, **kwargs):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. "
                        "Please use `.get()` to construct a NumPy array explicitly.")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.get("out")
        args = _unwrap(inputs)
        kw = {k: (_unwrap(v) if k != "out" else tuple(_unwrap(o) for o in v)) for k, v in kwargs.items()}
        with np.errstate(all="ignore"):           # a GPU raises no floating-point exceptions
            result = getattr(ufunc, method)(*args, **kw)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(result)

    def __array_function__(self, func, types, args, kwargs):
        fn = getattr(_this_module(), func.__name__, None)
        if fn is None:
            return NotImplemented
        return fn(*args, **kwargs)

    # -------------------------------------------------------- attributes
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)
    T = property(lambda self: ndarray(self._a.T))

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (ndarray(self._a[i]) for i in range(len(self._a)))

    def __repr__(self):
        return f"strict_device.ndarray(shape={self.shape}, dtype={self.dtype})"

    def __getitem__(self, key):
        return ndarray(np.asarray(self._a[_index(key)]))

    def __setitem__(self, key, value):
        if isinstance(value, ndarray):
            value = value._a
        elif isinstance(value, np.ndarray):
            # CuPy copies a host value to the device for an advanced (array) index only; under
            # basic slicing it fills with the value as a scalar, which a host array is not
            parts = key if isinstance(key, tuple) else (key,)
            if not any(isinstance(k, (ndarray, np.ndarray, list)) for k in parts):
                raise TypeError(f"Unsupported type {type(value)} (a NumPy array assigned into a device slice)")
            value = _upload(value)
        self._a[_index(key)] = value

    # -------------------------------------------------------- reading back
    def _scalar(self):
        if self._a.size != 1:
            raise TypeError("only one-element device arrays can be read as a scalar")
        TRANSFERS.scalar_reads += 1
        return self._a.reshape(()).item()

    def __bool__(self):
        return bool(self._scalar())

    def __int__(self):
        return int(self._scalar())

    def __float__(self):
        return float(self._scalar())

    def item(self):
        return self._scalar()

    def get(self):
        return _read_back(self._a)

    def tolist(self):
        return _read_back(self._a).tolist()



def _device_method(name):
    """ndarray.<name>: NumPy's method on the wrapped array, the result on the device."""
    def method(self, *args, **kwargs):
        with np.errstate(all="ignore"):
            return _wrap(getattr(self._a, name)(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))
    method.__name__ = name
    return method


for _name in ("reshape", "astype", "view", "copy", "ravel", "flatten", "any", "all", "max", "min", "sum",
              "argmax", "argmin", "transpose", "squeeze", "nonzero", "take", "cumsum", "fill", "swapaxes",
              "repeat"):
    setattr(ndarray, _name, _device_method(_name))
del _name


def _this_module():
    import sys
    return sys.modules[__name__]


# ------------------------------------------------------------ the module's functions

def asarray(x, dtype=None, order=None):
    """x on the device: device arrays as they are (converted to `dtype`), host data copied."""
    if isinstance(x, ndarray):
        return x if dtype is None or x.dtype == np.dtype(dtype) else x.astype(dtype)
    if hasattr(x, "copy_to_host") and not isinstance(x, np.ndarray):   # a Numba-CUDA device array
        return ndarray(np.asarray(x.copy_to_host(), dtype))
    return ndarray(np.asarray(_upload(np.asarray(x, dtype)), dtype))


def array(x, dtype=None, copy=True):
    if isinstance(x, ndarray):
        return ndarray(np.array(x._a, dtype, copy=True))
    return asarray(x, dtype)


def asnumpy(x):
    """A host copy (counted); host arrays as they are."""
    if isinstance(x, ndarray):
        return _read_back(x._a)
    return np.asarray(x)


def get_array_module(*args):
    return _this_module() if any(isinstance(a, ndarray) for a in args) else np


def _function(name, fn):
    def function(*args, **kwargs):
        with np.errstate(all="ignore"):
            return _wrap(fn(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))
    function.__name__ = name
    return function


class _Ufunc:
    """A NumPy ufunc called on device arrays (and its reduce/accumulate methods)."""

    def __init__(self, ufunc):
        self._u = ufunc
        self.__name__ = ufunc.__name__

    def __call__(self, *args, **kwargs):
        return _function(self.__name__, self._u)(*args, **kwargs)

    def __getattr__(self, method):
        return _function(f"{self.__name__}.{method}", getattr(self._u, method))


def __getattr__(name):
    """Every other NumPy name: dtypes and constants as they are, functions on device arrays."""
    value = getattr(np, name)
    if isinstance(value, np.ufunc):
        return _Ufunc(value)
    if callable(value) and not isinstance(value, type):
        return _function(name, value)
    return value


class _Runtime:
    @staticmethod
    def memGetInfo():
        return 1 << 34, 1 << 34

    @staticmethod
    def getDeviceCount():
        return 1


class cuda:                                   # noqa: N801  (CuPy's name)
    runtime = _Runtime()


class _Pool:
    @staticmethod
    def free_bytes():
        return 0


def get_default_memory_pool():
    return _Pool()


# ------------------------------------------------------------ installing it

class _LaunchArgs:
    """A Numba-CUDA simulator extension: device arrays reach a kernel as their memory."""

    def prepare_args(self, ty, val, stream=0, retr=None):
        if not isinstance(val, ndarray):
            return ty, val
        # the simulator copies every array argument back after the launch; a read-only view
        # (a broadcast operand: CuPy has no read-only arrays) is an input, so a copy serves
        return ty, (val._a if val._a.flags.writeable else val._a.copy())


def _simulator_launches_device_arrays() -> None:
    import os
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        return
    from numba.cuda.simulator import kernel as simulated
    if getattr(simulated.FakeCUDAKernel, "_strict_device", False):
        return
    call = simulated.FakeCUDAKernel.__call__

    def launch(self, *args):
        if not any(isinstance(e, _LaunchArgs) for e in self.extensions):
            self.extensions.append(_LaunchArgs())
        return call(self, *args)

    simulated.FakeCUDAKernel.__call__ = launch
    simulated.FakeCUDAKernel._strict_device = True


@contextlib.contextmanager
def installed():
    """This module as the device array module (kernels.device.use_device_module)."""
    from kernels import device
    _simulator_launches_device_arrays()
    previous = device._substitute
    device.use_device_module(_this_module())
    try:
        yield _this_module()
    finally:
        device.use_device_module(previous)


__all__ = ["ndarray", "asarray", "array", "asnumpy", "TRANSFERS", "installed"]
