"""Intra-slice reduce over VCG-tagged flits, and the 8-way <-> 4-way narrow/widen operations.

The fold this module realises (the contract; docs/vcg.md "Reduction order"):

* Flits arrive per slice in time order as 8-way flits with valid_size v (first v lanes real).
  The narrow stage makes 4-way flits: `trim` keeps lanes 0..3 (v' = min(v, 4)); `split` makes
  two consecutive 4-way flits, low half first (v_low = min(v, 4), v_high = max(v - 4, 0)).
* R in Packet (OutPacket = m![1 # 4]): a 4-way flit contributes the 2-level tree
  op(op(x0, x1), op(x2, x3)) over its valid prefix; a missing operand passes the other through;
  a flit with v = 0 contributes nothing.  R not in Packet (OutPacket = Packet): each lane is its
  own output and a lane contributes iff it is inside the valid prefix.
* Output slot o (the OutTime digits: Time without R's sub-expressions, plus the split half when
  `split` narrows a non-R Packet) folds its contributions in increasing time step:
      result = fold_left(op, identity, contributions)
  with identity 0 (AddSat, integer Add), -0.0 (float Add: the exact IEEE additive identity),
  type min / -inf (Max), type max / +inf (Min).  An empty fiber returns the identity; padding
  never becomes a contribution.
* Numerics: AddSat saturates at every step (tree nodes included); integer Add wraps; float Add
  is IEEE binary add rounded to nearest even at every step, a NaN result is the canonical quiet
  NaN; float Max/Min follow TMAX/TMIN: one NaN selects the other operand, two NaNs give the
  canonical NaN, a +0/-0 tie gives +0 (Max) / -0 (Min).  The same for float16 and bfloat16:
  each Add is the format's IEEE add, Max/Min its TMAX/TMIN (kernels.numeric; fold.py).

Backends: "numpy" (vectorised over slices x slots x lanes, a Python loop over the fiber length
only), "numba" (compiled CPU loop, parallel over slices when large), "cuda" (Numba-CUDA kernel),
"cupy" (the numpy code on CuPy arrays).  Every backend returns the same bits.
"""
from __future__ import annotations

import math

import numpy as np

from .config import check_narrow
from .errors import VcgError
from .fold import (BF16, DATATYPE, NARROW, OP_CODES, OPS, SUPPORTED_DTYPES, TILE_OPS,  # noqa: F401
                   ReducePlan, canonical_nan_bits, check_op, fold_dtype, identity, is_float, kind,
                   raw_dtype)
from .mapping import Mapping

BACKENDS = ("numpy", "numba", "cuda", "cupy")


class BackendUnavailable(RuntimeError):
    """A known backend this machine cannot run (no CuPy, no CUDA device): one line, with why."""


def backend_unavailable(backend: str) -> str | None:
    """Why `backend` cannot run here, in one line, or None when it can.  "cuda" runs under the
    CUDA simulator (NUMBA_ENABLE_CUDASIM=1) too; nothing here initialises a device context."""
    if backend == "cupy":
        try:
            import cupy
            n = cupy.cuda.runtime.getDeviceCount()
        except ImportError as exc:
            return f"CuPy is not installed ({exc}); pip install -e '.[gpu]'"
        except Exception as exc:                       # a broken CUDA install raises here
            return f"CuPy sees no CUDA device ({type(exc).__name__}: {_first_line(exc)})"
        return None if n > 0 else "CuPy sees no CUDA device"
    if backend == "cuda":
        import os
        if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
            return None
        try:
            from numba import cuda
            if cuda.is_available():
                return None
        except ImportError as exc:
            return f"numba-cuda is not installed ({exc}); pip install -e '.[gpu]'"
        return "Numba-CUDA sees no usable device (no driver or no GPU; NUMBA_ENABLE_CUDASIM=1 runs the simulator)"
    return None


def _first_line(exc) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "no detail"


def plan_reduce(m: Mapping, reduce: str, narrow: str = "trim") -> ReducePlan:
    """Fiber structure of the intra-slice reduce of `reduce` (VcgError if the narrow is illegal)."""
    check_narrow(m, reduce, narrow)
    r_in_packet = any(t.axis == reduce for t in m.packet)
    dims = [(t.dim, t.axis == reduce) for t in m.time]
    if narrow == "split":
        dims.append((2, r_in_packet))                     # the half becomes the minor time digit
    steps = math.prod(d for d, _ in dims)
    t4 = np.arange(steps, dtype=np.int64)
    slot = np.zeros(steps, dtype=np.int64)
    w = 1
    for (d, is_r), digit in zip(reversed(dims), reversed(_digits(dims, t4))):
        if not is_r:
            slot += digit * w
            w *= d
    order = np.argsort(slot, kind="stable")                # time order inside each slot
    fiber = order.reshape(w, steps // w)
    return ReducePlan(m.num_slices, m.num_steps, narrow, r_in_packet, fiber)


def _digits(dims, x):
    out, w = [], 1
    for d, _ in reversed(dims):
        out.append((x // w) % d)
        w *= d
    return out[::-1]


# ----------------------------------------------------------------------------- narrow / widen

def vector_narrow_split(x8, v8):
    """[..., T, 8] flits + [..., T] counts -> [..., 2T, 4] (low half first) + [..., 2T]; a view."""
    xp = _xp(x8)
    x4 = x8.reshape(*x8.shape[:-2], x8.shape[-2] * 2, 4)
    v = v8.astype(np.int16)
    v4 = xp.stack([xp.minimum(v, 4), xp.clip(v - 4, 0, 4)], axis=-1)
    return x4, v4.reshape(*v8.shape[:-1], v8.shape[-1] * 2).astype(np.uint8)


def vector_narrow_trim(x8, v8):
    """[..., T, 8] -> [..., T, 4] lanes 0..3, v' = min(v, 4).  The static v <= 4 guarantee is
    checked on the mapping (config.check_narrow), not here."""
    xp = _xp(x8)
    return x8[..., :4], xp.minimum(v8, 4).astype(np.uint8)


def vector_widen_concat(x_low, v_low, x_high, v_high):
    """Two 4-way flits -> one 8-way flit, v = v_low + v_high; the halves must keep the prefix."""
    xp = _xp(x_low)
    v_low = xp.asarray(v_low).astype(np.int16)
    v_high = xp.asarray(v_high).astype(np.int16)
    bad = (v_high > 0) & (v_low < 4)
    if bool(bad.any()):
        i = int(xp.flatnonzero(bad.reshape(-1))[0])
        raise VcgError("widen-concat", f"flit {i} has v_low = {int(v_low.reshape(-1)[i])} "
                                       f"and v_high = {int(v_high.reshape(-1)[i])}")
    return xp.concatenate([x_low, x_high], axis=-1), (v_low + v_high).astype(np.uint8)


def narrow(x8, v8, mode: str):
    return vector_narrow_split(x8, v8) if mode == "split" else vector_narrow_trim(x8, v8)


def _xp(a):
    return np if isinstance(a, np.ndarray) else __import__("cupy").get_array_module(a)


# ----------------------------------------------------------------------------- elementwise ops

def _uview(a, xp):
    return a.view(raw_dtype(a.dtype))


def combine(op: str, a, b, xp=np, encoded: str | None = None):
    """op(a, b) elementwise with the module's numeric rules (arrays of one dtype); encoded: a and
    b are raw encodings of that floating DataType, and the step is kernels.numeric's element-wise
    TADD/TMAX/TMIN of it (profile ieee: the float ops' rules below, bit for bit)."""
    if encoded is not None:
        from kernels.numeric import elementwise
        return elementwise(TILE_OPS[op], encoded, a, b, profile="ieee")[0]
    dt = a.dtype
    if is_float(dt):
        if op == "Add":
            return a + b
        an, bn = xp.isnan(a), xp.isnan(b)
        ua, ub = _uview(a, xp), _uview(b, xp)
        if op == "Max":
            pick = xp.where(a > b, ua, xp.where(b > a, ub, ua & ub))   # +0/-0 tie -> +0
        else:
            pick = xp.where(a < b, ua, xp.where(b < a, ub, ua | ub))   # +0/-0 tie -> -0
        nan = xp.asarray(canonical_nan_bits(dt), dtype=pick.dtype)
        pick = xp.where(an & bn, nan, xp.where(an, ub, xp.where(bn, ua, pick)))
        return pick.view(dt)
    if op == "Add":
        return a + b                                           # arrays wrap modulo 2**bits
    if op == "Max":
        return xp.maximum(a, b)
    if op == "Min":
        return xp.minimum(a, b)
    s = a + b                                                  # AddSat
    info = np.iinfo(dt)
    if dt.kind == "u":
        return xp.where(s < a, xp.asarray(info.max, dtype=dt), s)
    over = ((a ^ s) & (b ^ s)) < 0                             # sign flipped: overflow
    return xp.where(over, xp.where(a < 0, xp.asarray(info.min, dtype=dt),
                                   xp.asarray(info.max, dtype=dt)), s)


def canonicalize_nan(a, xp=np):
    if not is_float(a.dtype):
        return a
    u = _uview(a, xp)
    nan = xp.asarray(canonical_nan_bits(a.dtype), dtype=u.dtype)
    return xp.where(xp.isnan(a), nan, u).view(a.dtype)


def tree4(op: str, x4, v4, xp=np, encoded: str | None = None):
    """op(op(x0, x1), op(x2, x3)) over the valid prefix of each 4-way flit ([..., 4], [...])."""
    a, b, c, d = (x4[..., i] for i in range(4))
    ab = xp.where(v4 >= 2, combine(op, a, b, xp, encoded), a)
    cd = xp.where(v4 >= 4, combine(op, c, d, xp, encoded), c)
    return xp.where(v4 >= 3, combine(op, ab, cd, xp, encoded), ab)


# ----------------------------------------------------------------------------- reduce

def reduce_flits(x8, v8, plan: ReducePlan, op: str, backend: str = "numpy"):
    """Reduce [S*T, 8] (or [S, T, 8]) flits with [S*T] valid sizes.

    Returns (out [S, O, 4] of the input dtype, out_valid [S, O] uint8): O = plan.out_steps output
    flits per slice in OutTime order; lanes >= out_valid are padding and hold zero bits.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    why = backend_unavailable(backend)
    if why is not None:
        raise BackendUnavailable(f"backend {backend}: {why}")
    check_op(op, x8.dtype)
    s, t = plan.num_slices, plan.num_steps
    if x8.size != s * t * 8 or v8.size != s * t:
        raise ValueError(f"expected {s} x {t} = {s * t} flits of 8 and as many valid sizes, got "
                         f"{x8.size // 8 if x8.size % 8 == 0 else x8.size / 8} flits and {v8.size} valid sizes")
    x8 = x8.reshape(s, t, 8)
    v8 = v8.reshape(s, t)
    if backend == "numba":
        from .jit import reduce_numba
        return reduce_numba(x8, v8, plan, op), _out_valid(plan, np)
    if backend == "cuda":
        from .gpu import reduce_cuda
        return reduce_cuda(x8, v8, plan, op)
    if backend == "cupy":
        import cupy
        dt = x8.dtype                         # bfloat16 crosses as its raw bits (CuPy lacks the type)
        raw = x8.view(raw_dtype(dt)) if dt in NARROW else x8
        return reduce_xp(cupy.asarray(raw), cupy.asarray(v8), plan, op, cupy, dtype=dt)
    return reduce_xp(x8, v8, plan, op, np)


def _out_valid(plan: ReducePlan, xp):
    return xp.full((plan.num_slices, plan.out_steps), plan.out_lanes, dtype=np.uint8)


def reduce_xp(x8, v8, plan: ReducePlan, op: str, xp=np, dtype=None):
    """The vectorised reference backend, written against the common NumPy/CuPy API.

    dtype: the element type when x8 holds its raw bits (float16/bfloat16 on CuPy); a bfloat16
    result on CuPy is raw uint16 bits too.

    16-bit floats: where the array module has the type (NumPy: float16 and ml_dtypes' bfloat16;
    CuPy: float16) the fold uses its arithmetic, which adds through binary32 and rounds to the
    format -- the correctly rounded sum, since binary32 has p = 24 >= 2p + 2 for both formats
    (double rounding is then innocuous: Figueroa, "When is double rounding innocuous?", 1995).
    Elsewhere (bfloat16 on CuPy) it folds the raw encodings with kernels.numeric's element-wise
    TADD/TMAX/TMIN of the DataType, on the device.  The tests hold every route to one exact fold."""
    dt = np.dtype(dtype or x8.dtype)
    encoded = DATATYPE[dt] if (xp is not np and dt == BF16) else None
    with np.errstate(all="ignore"):
        if encoded is not None:
            x8 = x8.view(raw_dtype(dt))
            seed = identity(op, dt).view(raw_dtype(dt))
        else:
            if dtype is not None:
                x8 = x8.view(dt)
            seed = identity(op, x8.dtype)
        x4, v4 = narrow(x8, v8, plan.narrow)
        fiber = xp.asarray(plan.fiber)
        acc_shape = (plan.num_slices, plan.out_steps) + (() if plan.r_in_packet else (4,))
        acc = xp.broadcast_to(xp.asarray(seed), acc_shape).copy()
        if plan.r_in_packet:
            contrib, ok = tree4(op, x4, v4, xp, encoded), v4 > 0                   # [S, T4]
        else:
            contrib, ok = x4, xp.arange(4)[None, None, :] < v4[..., None]     # [S, T4, 4]
        for j in range(plan.fiber.shape[1]):
            steps = fiber[:, j]
            acc = xp.where(ok[:, steps], combine(op, acc, contrib[:, steps], xp, encoded), acc)
        if op == "Add" and encoded is None:       # the element-wise TADD's NaN is canonical already
            acc = canonicalize_nan(acc, xp)
        if plan.r_in_packet:
            out = xp.zeros(acc_shape + (4,), dtype=acc.dtype)
            out[..., 0] = acc
        else:
            out = acc
    return out, _out_valid(plan, xp)
