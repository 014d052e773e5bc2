"""Element-wise numerics on the GPU: the CPU's compiled scalar routines as Numba-CUDA kernels.

    bits, flags = elementwise_device("TADD", datatype("BF16"), (a, b), prof, None, impl, xp=cupy)

Operands are 1-D device arrays of raw encodings (CuPy; NumPy arrays under the CUDA simulator,
NUMBA_ENABLE_CUDASIM=1, which the test suite uses), results are device arrays of the same module.
What runs where, per (op, DataType):

  * fastvec.py's SIMD routines (FP32/BF16 add/sub/mul/fma, FP16 add/sub/mul, profile ieee),
    fast64.py's (FP64 add/sub/mul/fma/div/recip/sqrt/rem/rsqrt/exp/log; in profile ftz the
    same kernels with subnormal operands and results marked, fast64.mark_for_ftz;
    Dekker's TwoProduct instead of the CPU's fma; TFMA's result is the one explicit
    `fma.rn.f64`),
    fastdiv.py's (TDIV/TRECIP/TSQRT on FP32/TF32/HF32 and TDIV on FP16/BF16, both profiles),
    fastfn.py's (TRSQRT and TLOG on FP32/TF32/HF32: binary64 value, rounding test; TREM on
    FP32/TF32/HF32/BF16/FP16: integer fmod, then one rounding; both profiles),
    fasta5.py's (profile a5: TREM FP32/FP16, TDIV FP16)
    and fast.py's rounding routines (TADD/TSUB/TMUL/TFMA on TF32, HF32, FP16, BF16, FP32 in
    any profile, TFMA on E4M3/E5M2, TEXP on FP32/TF32/HF32) are compiled unchanged into CUDA kernels
    (`kernel_sources()`), one thread per element: the same Python source the CPU loops compile,
    so the same bits.
  * Table-driven pairs (8-bit binary and <= 16-bit unary operations, tables.py) gather from the
    reference's exact tables copied to the device once.
  * A profile's recipe that is a composition (tiers 'compose': a5's FP32 TRSQRT) runs its IEEE
    steps as the device placements of those steps (`_device_primitive`).
  * Elements a kernel marks (flags 0xFF: NaN/infinite operands, results outside a shortcut's
    range, exp results within 2^-46 and rsqrt/log results within 4/16 binary64 ulps of a
    rounding boundary) are gathered, settled on the host
    by the CPU path (which hands its own rare cases to the NumPy/MPFR reference) and scattered
    back, so the result equals the CPU's element for element.
  * Integer operations (ops_int.py) and the floating sign-bit, ordering, comparison and ReLU
    operations (tiers.XP_FLOAT, ops_float.py) are array code written for NumPy and CuPy alike:
    the CPU implementation itself runs on the device arrays ('xp'), nothing crosses to the host.
  * Anything no kernel or table above serves would run on the host (operands copied down, the
    CPU path computes, results copied back); today every supported (op, DataType, profile)
    has a device placement.  `placement(op, dt, prof, arity)` says which: the tier table
    (tiers.py) decides, for the device as for the host.

Floating-point code generation: `mul_rn`/`add_rn` (rn.py) keep every product that the reference
rounds on its own out of `fma`; tests/kernels/test_cuda_ptx.py compiles every kernel of
`kernel_sources()` to PTX (no GPU needed) and rejects `fma` (but the explicit rn.fma_rn of the FP32 and
FP64 TFMA kernels), `.ftz` and `approx`.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from isa.datatypes import DataType

from .. import device
from . import fast, fast64, tables, tiers

cuda = None          # numba.cuda, imported on first use (the simulator flag must be set first)
THREADS = 256
FALLBACK = 0xFF


def _numba_cuda():
    global cuda
    if cuda is None:
        from numba import cuda as _cuda
        cuda = _cuda
    return cuda


# ---------------------------------------------------------------- kernel sources
# The CUDA twins of fast.py's loop templates: one thread per element running the routine bound
# to SCALAR, operands read by READ (fast.bind), so every compiled tier's row is a kernel without a line written for it.

def _map1(a, out, flags):
    i = cuda.grid(1)
    if i < a.shape[0]:
        r, f = SCALAR(a[i])
        out[i] = r
        flags[i] = f


def _map2(a, b, out, flags):
    i = cuda.grid(1)
    if i < a.shape[0]:
        r, f = SCALAR(a[i], b[i])
        out[i] = r
        flags[i] = f


def _map3(a, b, c, out, flags):
    i = cuda.grid(1)
    if i < a.shape[0]:
        r, f = SCALAR(a[i], b[i], c[i])
        out[i] = r
        flags[i] = f


def _rounded1(op, a, fmt, dec, bits, flags):
    i = cuda.grid(1)
    if i < a.shape[0]:
        r, f = SCALAR(op, READ(a[i], dec), fmt)
        bits[i] = r
        flags[i] = f


def _rounded2(op, a, b, fmt, dec, bits, flags):
    i = cuda.grid(1)
    if i < a.shape[0]:
        r, f = SCALAR(op, READ(a[i], dec), READ(b[i], dec), fmt)
        bits[i] = r
        flags[i] = f


def _rounded3(op, a, b, c, fmt, dec, bits, flags):
    i = cuda.grid(1)
    if i < a.shape[0]:
        r, f = SCALAR(op, READ(a[i], dec), READ(b[i], dec), READ(c[i], dec), fmt)
        bits[i] = r
        flags[i] = f


SCALAR = READ = None   # bound per kernel by fast.bind
TEMPLATES = {("map", 1): _map1, ("map", 2): _map2, ("map", 3): _map3,
             ("rounded", 1): _rounded1, ("rounded", 2): _rounded2, ("rounded", 3): _rounded3}


def kernel_name(t, name: str, op: str) -> str:
    return f"{t.name}.{name}.{op}"


def _signature(k: fast.Kernel, raw):
    """The argument types of kernel k's launch (for the PTX test)."""
    from numba import types as T
    u8 = T.uint8[::1]
    if k.kind in ("f32", "f64"):
        v = (T.float32 if k.kind == "f32" else T.float64)[::1]
        return (v,) * (k.arity + 1) + (u8,)
    if k.kind == "raw":
        return (raw,) * (k.arity + 1) + (u8,)
    p = fast.params(k.format, False)
    operand = T.float32[::1] if k.kind == "vals" else raw
    return (T.int64,) + (operand,) * k.arity + (nb_typeof(p.fmt), nb_typeof(p.dec), raw, u8)


def nb_typeof(x):
    import numba
    return numba.typeof(x)


def _signatures():
    """name -> (python kernel, [argument type tuples]) for every kernel this module launches:
    one per row of every compiled tier of the tier table (rows running the same routine share
    one kernel function); the PTX test compiles each distinct one."""
    _numba_cuda()                          # bound kernels copy the module's globals, cuda included
    from numba import types as T
    from numba.np import numpy_support
    from isa.datatypes import datatype
    table = {}
    for t in tiers.TIERS:
        for (name, op), k in (t.kernels or {}).items():
            raw = T.Array(numpy_support.from_dtype(np.dtype(datatype(name).raw_dtype)), 1, "C")
            table[kernel_name(t, name, op)] = (_bound(k), [_signature(k, raw)])
    return table


@lru_cache(maxsize=None)
def _bound_routine(kind, arity, scalar):
    tpl, read = fast.template(kind, arity, TEMPLATES)
    return fast.bind(tpl, scalar, read)


def _bound(k: fast.Kernel):
    return _bound_routine(k.kind if k.kind in fast.READERS else "map", k.arity, k.scalar)


@lru_cache(maxsize=1)
def kernel_sources():
    return _signatures()


@lru_cache(maxsize=None)
def _jit(src):
    return _numba_cuda().jit(src)


def _kernel(name):
    return _jit(kernel_sources()[name][0])


def _launch(name, n, *args):
    if n:
        _kernel(name)[(n + THREADS - 1) // THREADS, THREADS](*args)


# ---------------------------------------------------------------- placement

def placement(op: str, dt: DataType, prof, arity: int) -> str:
    """Where elementwise_device computes (op, dt) under prof: the tier table's device tier
    ('fastvec', 'fast64', 'fast', 'table', 'fastdiv', 'fastfn', 'a5', 'compose' -- a recipe on
    the device kernels of its steps --, 'xp' -- the CPU implementation itself on the device
    arrays; all on the device) or 'host'."""
    t = tiers.select(op, dt, prof, arity, device=True)
    return t.where if t is not None else "host"


@lru_cache(maxsize=None)
def _device_table(op, name, prof, cmode, fn, arity, xp_name):
    bt, ft = tables.table(op, name, prof, cmode, fn, arity)
    xp = np if xp_name == "numpy" else device.device_module()
    return device.to_device(bt, xp), device.to_device(ft, xp)


@lru_cache(maxsize=None)
def _device_values(name, ftz, xp_name):
    """fast.py's value table of format `name` (binary32 value of every encoding), copied to
    the device once: a copy per call moved 256 KiB host -> device for every FP16 call."""
    V = fast.params(name, ftz).values
    return device.to_device(V, np if xp_name == "numpy" else device.device_module())


# ---------------------------------------------------------------- entry point

def elementwise_device(op: str, dt: DataType, operands, prof, cmode, impl, fn=None, xp=None, paths=None):
    """(bits, flags) device arrays of `op` on 1-D container-dtype device operands.

    `impl(dt, host_operands, prof, cmode)` is the CPU path (kernels.numeric.elementwise.TABLE),
    used for host-placed operations and for marked elements; `fn` the reference function (for
    table placement); `paths(op, dt) -> (impl, fn)` the same for the steps of a composition."""
    xp = xp if xp is not None else device.array_module(*operands)
    t = tiers.select(op, dt, prof, len(operands), device=True)
    if t is None or t.kind == "reference":
        hb, hf = impl(dt, tuple(device.to_host(x) for x in operands), prof, cmode)
        return device.to_device(np.ascontiguousarray(hb), xp), device.to_device(np.ascontiguousarray(hf), xp)
    if t.kind == "array":
        bits, flags = impl(dt, tuple(operands), prof, cmode)
        return bits, flags.astype(np.uint8, copy=False)
    if t.kind == "compose":
        return tiers.compose(op, dt.name, operands, prof, _device_primitive(xp, paths))
    if t.kind == "table":
        bt, ft = _device_table(op, dt.name, prof, cmode, fn, len(operands), xp.__name__)
        if len(operands) == 1:
            idx = operands[0]
        else:
            idx = (operands[0].astype(np.uint16) << np.uint16(8)) | operands[1]
        return bt[idx], ft[idx]
    n = operands[0].shape[0]
    k = t.kernels[(dt.name, op)]
    name = kernel_name(t, dt.name, op)
    Vd = (lambda V, x: _device_values(dt.name, prof.ftz, xp.__name__)[x])
    bits, flags = fast.launch(k, operands, prof.ftz, lambda *args: _launch(name, n, *args), xp, Vd)
    if t.ftz_marks and prof.ftz:
        fast64.mark_for_ftz(bits, flags, operands)
    _settle(dt, operands, prof, cmode, bits, flags, impl, xp)
    return bits, flags


def _device_primitive(xp, paths):
    """An IEEE operation on device arrays (profile ieee), for the steps of a composition."""
    from isa.datatypes import datatype
    from .profiles import IEEE, profile

    def primitive(op, name, *operands):
        dt = datatype(name)
        impl, fn = paths(op, dt)
        return elementwise_device(op, dt, operands, profile(IEEE), None, impl, fn=fn, xp=xp, paths=paths)
    return primitive


def _settle(dt, operands, prof, cmode, bits, flags, impl, xp):
    """Elements the kernel marked: computed on the host by the CPU path, written back in place."""
    if flags.size == 0 or int(flags.max()) != FALLBACK:      # one reduction; usually nothing to do
        return
    todo = xp.flatnonzero(flags == FALLBACK)
    hb, hf = impl(dt, tuple(np.ascontiguousarray(device.to_host(x[todo])) for x in operands), prof, cmode)
    bits[todo] = device.to_device(np.asarray(hb, bits.dtype), xp)
    flags[todo] = device.to_device(np.asarray(hf, np.uint8), xp)
