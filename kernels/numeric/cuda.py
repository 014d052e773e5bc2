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
    FP32/TF32/HF32/BF16/FP16: integer fmod, then one rounding; both profiles)
    and fast.py's rounding routines (TADD/TSUB/TMUL/TFMA on TF32, HF32, FP16, BF16, FP32 in
    any profile, TFMA on E4M3/E5M2, TEXP on FP32/TF32/HF32) are compiled unchanged into CUDA kernels
    (`kernel_sources()`), one thread per element: the same Python source the CPU loops compile,
    so the same bits.
  * Table-driven pairs (8-bit binary and <= 16-bit unary operations, tables.py) gather from the
    reference's exact tables copied to the device once.
  * Elements a kernel marks (flags 0xFF: NaN/infinite operands, results outside a shortcut's
    range, exp results within 2^-46 and rsqrt/log results within 4/16 binary64 ulps of a
    rounding boundary) are gathered, settled on the host
    by the CPU path (which hands its own rare cases to the NumPy/MPFR reference) and scattered
    back, so the result equals the CPU's element for element.
  * Integer operations (ops_int.py) and the floating sign-bit, ordering, comparison and ReLU
    operations (XP_FLOAT, ops_float.py) are array code written for NumPy and CuPy alike: the
    CPU implementation itself runs on the device arrays ('xp'), nothing crosses to the host.
  * Anything no kernel or table above serves would run on the host (operands copied down, the
    CPU path computes, results copied back); today every supported (op, DataType, profile)
    has a device placement.  `placement(op, dt, prof, arity)` says which.

Floating-point code generation: `mul_rn`/`add_rn` (rn.py) keep every product that the reference
rounds on its own out of `fma`; tests/kernels/test_cuda_ptx.py compiles every kernel of
`KERNELS` to PTX (no GPU needed) and rejects `fma` (but the explicit rn.fma_rn of the FP32 and
FP64 TFMA kernels), `.ftz` and `approx`.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from isa.datatypes import DataType, Kind

from .. import device
from . import fast, fast64, fastdiv, fastfn, fastvec, ops_int, tables

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
# Each kernel is a thin per-thread wrapper around a scalar routine the CPU loops also call.

def _binary_kernel(fn):
    def kernel(a, b, out, flags):
        i = cuda.grid(1)
        if i < a.shape[0]:
            r, f = fn(a[i], b[i])
            out[i] = r
            flags[i] = f
    return kernel


def _ternary_kernel(fn):
    def kernel(a, b, c, out, flags):
        i = cuda.grid(1)
        if i < a.shape[0]:
            r, f = fn(a[i], b[i], c[i])
            out[i] = r
            flags[i] = f
    return kernel


def fast_binary_bits(op, a, b, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz, field, dshift, mn, bits, flags):
    i = cuda.grid(1)
    if i < a.shape[0]:
        x = fast._daz(fast._from_bits(a[i], field, dshift), ftz, mn)
        y = fast._daz(fast._from_bits(b[i], field, dshift), ftz, mn)
        r, f = fast._binary(op, x, y, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz)
        bits[i] = r
        flags[i] = f


def fast_binary_vals(op, a, b, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz, mn, bits, flags):
    i = cuda.grid(1)
    if i < a.shape[0]:
        x = fast._daz(np.float64(a[i]), ftz, mn)
        y = fast._daz(np.float64(b[i]), ftz, mn)
        r, f = fast._binary(op, x, y, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz)
        bits[i] = r
        flags[i] = f


def fast_fma_bits(a, b, c, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz, field, dshift, mn, bits, flags):
    i = cuda.grid(1)
    if i < a.shape[0]:
        x = fast._daz(fast._from_bits(a[i], field, dshift), ftz, mn)
        y = fast._daz(fast._from_bits(b[i], field, dshift), ftz, mn)
        z = fast._daz(fast._from_bits(c[i], field, dshift), ftz, mn)
        r, f = fast._fma(x, y, z, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz)
        bits[i] = r
        flags[i] = f


def fast_fma_vals(a, b, c, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz, mn, bits, flags):
    i = cuda.grid(1)
    if i < a.shape[0]:
        x = fast._daz(np.float64(a[i]), ftz, mn)
        y = fast._daz(np.float64(b[i]), ftz, mn)
        z = fast._daz(np.float64(c[i]), ftz, mn)
        r, f = fast._fma(x, y, z, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz)
        bits[i] = r
        flags[i] = f


def fast_exp_bits(a, t, emin, maxmag, ovf, shift, ftz, field, c1, c2, inv, bits, flags):
    i = cuda.grid(1)
    if i < a.shape[0]:
        x, ok = fast.exp_input(a[i], ftz, field, emin)
        if ok:
            k, p = fast._exp_reduced(x, c1, c2, inv)
            r, f = fast.exp_round(fast.EXP2_64[k & 63], p, k, t, emin, maxmag, ovf, shift)
            bits[i] = r
            flags[i] = f
        else:
            flags[i] = 0xFF


def _unary_kernel(fn):
    def kernel(a, out, flags):
        i = cuda.grid(1)
        if i < a.shape[0]:
            r, f = fn(a[i])
            out[i] = r
            flags[i] = f
    return kernel


# Kernels of the routines rounded by fast.round_rne that take the format's scalars (fmt: t, emin,
# maxmag, ovf, ovf_sign, signbit, shift, ftz) after their operands: fastdiv.divide (TDIV),
# fastfn.rem, .rsqrt, .log.  '_bits' operands are encodings (decoded by field, dshift), '_vals'
# ones binary32 values gathered from fast.py's value table (FP16).
def _rounded_binary_bits(fn):
    def kernel(a, b, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz, field, dshift, mn, bits, flags):
        i = cuda.grid(1)
        if i < a.shape[0]:
            x = fast._daz(fast._from_bits(a[i], field, dshift), ftz, mn)
            y = fast._daz(fast._from_bits(b[i], field, dshift), ftz, mn)
            r, f = fn(x, y, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz)
            bits[i] = r
            flags[i] = f
    return kernel


def _rounded_binary_vals(fn):
    def kernel(a, b, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz, mn, bits, flags):
        i = cuda.grid(1)
        if i < a.shape[0]:
            x = fast._daz(np.float64(a[i]), ftz, mn)
            y = fast._daz(np.float64(b[i]), ftz, mn)
            r, f = fn(x, y, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz)
            bits[i] = r
            flags[i] = f
    return kernel


def _rounded_unary_bits(fn):
    def kernel(a, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz, field, dshift, mn, bits, flags):
        i = cuda.grid(1)
        if i < a.shape[0]:
            x = fast._daz(fast._from_bits(a[i], field, dshift), ftz, mn)
            r, f = fn(x, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz)
            bits[i] = r
            flags[i] = f
    return kernel


# fastdiv.py's tier 2 TRECIP/TSQRT (op 0/1 of fastdiv.unary)
def fastdiv_unary_bits(op, a, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz, field, dshift, mn, bits, flags):
    i = cuda.grid(1)
    if i < a.shape[0]:
        x = fast._daz(fast._from_bits(a[i], field, dshift), ftz, mn)
        r, f = fastdiv.unary(op, x, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz)
        bits[i] = r
        flags[i] = f


def fastdiv_unary_vals(op, a, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz, mn, bits, flags):
    i = cuda.grid(1)
    if i < a.shape[0]:
        x = fast._daz(np.float64(a[i]), ftz, mn)
        r, f = fastdiv.unary(op, x, t, emin, maxmag, ovf, ovf_sign, signbit, shift, ftz)
        bits[i] = r
        flags[i] = f


def _signatures():
    """name -> (python kernel, [argument type tuples]) for every kernel this module launches;
    the PTX test compiles each one."""
    from numba import types as T
    u8, u16, u32, f32, i64, f64 = T.uint8[::1], T.uint16[::1], T.uint32[::1], T.float32[::1], T.int64, T.float64
    ins = {"FP32": f32, "BF16": u16, "FP16": u16}
    outs = {"FP32": f32, "BF16": u16, "FP16": u16}
    table = {}
    for (name, op), fn in fastvec.SCALAR.items():
        n_in = 3 if op == "TFMA" else 2
        src = (_ternary_kernel if n_in == 3 else _binary_kernel)(fn)
        table[f"fastvec.{name}.{op}"] = (src, [(ins[name],) * n_in + (outs[name], u8)])
    arity_kernel = {1: _unary_kernel, 2: _binary_kernel, 3: _ternary_kernel}
    for (name, op), fn in fast64.SCALAR.items():
        n_in = {"TRECIP": 1, "TSQRT": 1, "TRSQRT": 1, "TEXP": 1, "TLOG": 1, "TFMA": 3}.get(op, 2)
        src = arity_kernel[n_in](fn)
        table[f"fast64.{name}.{op}"] = (src, [(T.float64[::1],) * (n_in + 1) + (u8,)])
    for (name, op), fn in fastdiv.SCALAR.items():
        n_in = 2 if op == "TDIV" else 1
        src = (_binary_kernel if n_in == 2 else _unary_kernel)(fn)
        table[f"fastdiv.{name}.{op}"] = (src, [(ins[name],) * n_in + (outs[name], u8)])
    fmt = (i64,) * 8
    table["fastdiv.div_bits"] = (_rounded_binary_bits(fastdiv.divide), [(c, c) + fmt + (i64, i64, f64, c, u8) for c in (u32, u16)])
    table["fastdiv.div_vals"] = (_rounded_binary_vals(fastdiv.divide), [(f32, f32) + fmt + (f64, u16, u8)])
    table["fastdiv.unary_bits"] = (fastdiv_unary_bits, [(i64, c) + fmt + (i64, i64, f64, c, u8) for c in (u32, u16)])
    table["fastdiv.unary_vals"] = (fastdiv_unary_vals, [(i64, f32) + fmt + (f64, u16, u8)])
    table["fastfn.rsqrt_bits"] = (_rounded_unary_bits(fastfn.rsqrt), [(u32,) + fmt + (i64, i64, f64, u32, u8)])
    table["fastfn.log_bits"] = (_rounded_unary_bits(fastfn.log), [(u32,) + fmt + (i64, i64, f64, u32, u8)])
    table["fastfn.rem_bits"] = (_rounded_binary_bits(fastfn.rem), [(c, c) + fmt + (i64, i64, f64, c, u8) for c in (u32, u16)])
    table["fastfn.rem_vals"] = (_rounded_binary_vals(fastfn.rem), [(f32, f32) + fmt + (f64, u16, u8)])
    table["fast.binary_bits"] = (fast_binary_bits, [(i64, c, c) + fmt + (i64, i64, f64, c, u8) for c in (u32, u16)])
    table["fast.binary_vals"] = (fast_binary_vals, [(i64, f32, f32) + fmt + (f64, c, u8) for c in (u16, u8)])
    table["fast.fma_bits"] = (fast_fma_bits, [(c, c, c) + fmt + (i64, i64, f64, c, u8) for c in (u32, u16)])
    table["fast.fma_vals"] = (fast_fma_vals, [(f32, f32, f32) + fmt + (f64, c, u8) for c in (u16, u8)])
    table["fast.exp_bits"] = (fast_exp_bits, [(u32,) + (i64,) * 7 + (f64, f64, f64, u32, u8)])
    return table


@lru_cache(maxsize=1)
def kernel_sources():
    return _signatures()


@lru_cache(maxsize=None)
def _kernel(name):
    return _numba_cuda().jit(kernel_sources()[name][0])


def _launch(name, n, *args):
    if n:
        _kernel(name)[(n + THREADS - 1) // THREADS, THREADS](*args)


# ---------------------------------------------------------------- placement

# Floating operations whose CPU implementation (ops_float.py) is array code that runs unchanged
# on device arrays: sign-bit operations, ordering, comparison and ReLU (exact comparisons of the
# decoded float64 values, no rounding).  Every integer operation (ops_int.py) is such code too.
XP_FLOAT = frozenset({"TABS", "TNEG", "TMAX", "TMIN", "TCMP", "TRELU"})


def placement(op: str, dt: DataType, prof, arity: int) -> str:
    """Where elementwise_device computes (op, dt): 'fastvec', 'fast64', 'fast', 'table', 'fastdiv',
    'fastfn', 'xp' (the CPU implementation itself on the device arrays; all on the device) or
    'host'."""
    if dt.kind is not Kind.FLOAT:
        return "xp" if op in ops_int.OPS else "host"
    if fastvec.serves(op, dt.name, prof):
        return "fastvec"
    if fast64.serves(op, dt.name, prof):
        return "fast64"
    if fast.serves(op, dt.name):
        return "fast"
    if tables.applies(op, dt.name, arity):
        return "table"
    if fastdiv.serves(op, dt.name, prof):
        return "fastdiv"
    if fastfn.serves(op, dt.name, prof):
        return "fastfn"
    if op in XP_FLOAT:
        return "xp"
    return "host"


@lru_cache(maxsize=None)
def _device_table(op, name, prof, cmode, fn, arity, xp_name):
    bt, ft = tables.table(op, name, prof, cmode, fn, arity)
    xp = np if xp_name == "numpy" else device.device_module()
    return device.to_device(bt, xp), device.to_device(ft, xp)


@lru_cache(maxsize=None)
def _device_values(name, ftz, xp_name):
    """fast.py's value table of format `name` (binary32/64 value of every encoding), copied to
    the device once: a copy per call moved 256 KiB host -> device for every FP16 call."""
    V = fast._scalars(name, ftz)[2]
    return device.to_device(V, np if xp_name == "numpy" else device.device_module())


# ---------------------------------------------------------------- entry point

def elementwise_device(op: str, dt: DataType, operands, prof, cmode, impl, fn=None, xp=None):
    """(bits, flags) device arrays of `op` on 1-D container-dtype device operands.

    `impl(dt, host_operands, prof, cmode)` is the CPU path (kernels.numeric.elementwise.TABLE),
    used for host-placed operations and for marked elements; `fn` the reference function (for
    table placement)."""
    xp = xp if xp is not None else device.array_module(*operands)
    where = placement(op, dt, prof, len(operands))
    n = operands[0].shape[0]
    if where == "xp":
        bits, flags = impl(dt, tuple(operands), prof, cmode)
        return bits, flags.astype(np.uint8, copy=False)
    if where == "host":
        hb, hf = impl(dt, tuple(device.to_host(x) for x in operands), prof, cmode)
        return device.to_device(np.ascontiguousarray(hb), xp), device.to_device(np.ascontiguousarray(hf), xp)
    if where == "table":
        bt, ft = _device_table(op, dt.name, prof, cmode, fn, len(operands), xp.__name__)
        if len(operands) == 1:
            idx = operands[0]
        else:
            idx = (operands[0].astype(np.uint16) << np.uint16(8)) | operands[1]
        return bt[idx], ft[idx]
    flags = xp.empty(n, np.uint8)
    bits = KERNEL_RUNNERS[where](op, dt, operands, prof, n, flags, xp)
    _settle(dt, operands, prof, cmode, bits, flags, impl, xp)
    return bits, flags


def _fastfn(op, dt, operands, prof, n, flags, xp):
    """TRSQRT/TLOG (encodings) and TREM (FP16: binary32 values from the device's value table)."""
    bits = xp.empty(n, dt.raw_dtype)
    fmt, lut, _, dec, mn = fast._scalars(dt.name, prof.ftz)
    if op in ("TRSQRT", "TLOG"):
        _launch(f"fastfn.{'rsqrt' if op == 'TRSQRT' else 'log'}_bits", n, operands[0], *fmt, *dec, mn, bits, flags)
    elif lut:
        Vd = _device_values(dt.name, prof.ftz, xp.__name__)
        _launch("fastfn.rem_vals", n, *(Vd[x] for x in operands), *fmt, mn, bits, flags)
    else:
        _launch("fastfn.rem_bits", n, *operands, *fmt, *dec, mn, bits, flags)
    return bits


def _fast64(op, dt, operands, prof, n, flags, xp):
    """FP64: the ieee kernels; in profile ftz every element with a subnormal operand or result marked."""
    out = xp.empty(n, np.float64)
    _launch(f"fast64.{dt.name}.{op}", n, *(x.view(np.float64) for x in operands), out, flags)
    bits = out.view(np.uint64)
    if prof.ftz:
        fast64.mark_for_ftz(bits, flags, operands)
    return bits


def _fastvec(op, dt, operands, prof, n, flags, xp):
    """FP32 (as float32 values), BF16/FP16 (encodings): the SIMD routines, one thread each."""
    raw = np.dtype(dt.raw_dtype)
    args = [x.view(np.float32) for x in operands] if dt.name == "FP32" else list(operands)
    out = xp.empty(n, np.float32 if dt.name == "FP32" else raw)
    _launch(f"fastvec.{dt.name}.{op}", n, *args, out, flags)
    return out.view(raw)


def _fast(op, dt, operands, prof, n, flags, xp):
    """fast.py's rounding routines: TADD/TSUB/TMUL/TFMA (FP16 through the value table), TEXP."""
    bits = xp.empty(n, dt.raw_dtype)
    fmt, lut, _, dec, mn = fast._scalars(dt.name, prof.ftz)
    if lut:
        Vd = _device_values(dt.name, prof.ftz, xp.__name__)
        vals = [Vd[x] for x in operands]
        if op == "TFMA":
            _launch("fast.fma_vals", n, *vals, *fmt, mn, bits, flags)
        else:
            _launch("fast.binary_vals", n, fast.OPS[op], *vals, *fmt, mn, bits, flags)
    elif op == "TEXP":
        t, emin, maxmag, ovf, _, _, shift, ftz = fmt
        K, _ = fast._exp_constants()
        _launch("fast.exp_bits", n, operands[0], t, emin, maxmag, ovf, shift, ftz, dec[0], K[0], K[1], K[2],
                bits, flags)
    elif op == "TFMA":
        _launch("fast.fma_bits", n, *operands, *fmt, *dec, mn, bits, flags)
    else:
        _launch("fast.binary_bits", n, fast.OPS[op], *operands, *fmt, *dec, mn, bits, flags)
    return bits


def _fastdiv(op, dt, operands, prof, n, flags, xp):
    """TDIV/TRECIP/TSQRT: fastdiv.py's SIMD tier in profile ieee (FP32; BF16/FP16 TDIV), its
    round_rne tier otherwise (FP16 operands as binary32 values gathered from the device's value table)."""
    if fastdiv.simd(op, dt.name, prof) and dt.name == "FP32":
        out = xp.empty(n, np.float32)
        _launch(f"fastdiv.FP32.{op}", n, *(x.view(np.float32) for x in operands), out, flags)
        return out.view(np.uint32)
    if fastdiv.simd(op, dt.name, prof):
        bits = xp.empty(n, dt.raw_dtype)
        _launch(f"fastdiv.{dt.name}.{op}", n, *operands, bits, flags)
        return bits
    bits = xp.empty(n, dt.raw_dtype)
    fmt, lut, _, dec, mn = fast._scalars(dt.name, prof.ftz)
    if lut:
        Vd = _device_values(dt.name, prof.ftz, xp.__name__)
        args, kind = [Vd[x] for x in operands] + list(fmt), "vals"
    else:
        args, kind = list(operands) + list(fmt) + list(dec), "bits"
    if op == "TDIV":
        _launch(f"fastdiv.div_{kind}", n, *args, mn, bits, flags)
    else:
        _launch(f"fastdiv.unary_{kind}", n, fastdiv.UNARY[op], *args, mn, bits, flags)
    return bits


# placement -> (op, dt, operands, prof, n, flags, xp) -> bits: launches the kernels, fills flags
KERNEL_RUNNERS = {"fastdiv": _fastdiv, "fastfn": _fastfn, "fast64": _fast64, "fastvec": _fastvec, "fast": _fast}


def _settle(dt, operands, prof, cmode, bits, flags, impl, xp):
    """Elements the kernel marked: computed on the host by the CPU path, written back in place."""
    if flags.size == 0 or int(flags.max()) != FALLBACK:      # one reduction; usually nothing to do
        return
    todo = xp.flatnonzero(flags == FALLBACK)
    hb, hf = impl(dt, tuple(np.ascontiguousarray(device.to_host(x[todo])) for x in operands), prof, cmode)
    bits[todo] = device.to_device(np.asarray(hb, bits.dtype), xp)
    flags[todo] = device.to_device(np.asarray(hf, np.uint8), xp)
