"""Independent references for the VCG tests.

A placement is described structurally (each axis' digits with stride/size/dim and the dimension
they sit in); the mapping *text* is rendered from it and parsed by the code under test, while
the references below work from the structure only:

* brute_valid: for every flit and lane, decode (slice, time, lane) into digits, rebuild each axis
  index, and count the real elements -- no sequencers, masks or thresholds.
* reference_reduce: the contract of fabric.vcg.reduce written again as plain Python over the
  logical tensor with Python-int / Python-float arithmetic rounded per step (float32 via one
  rounding of the sum in double: p >= 2q + 2; float16 and bfloat16 by rounding the exact
  rational sum to the format's grid, written here from the IEEE definition).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
# 16-bit formats: (trailing significand bits, emin, emax)
SIXTEEN = {np.dtype(np.float16): (10, -14, 15), BF16: (7, -126, 127)}
NAN_BITS = {np.dtype(np.float16): 0x7E00, BF16: 0x7FC0, np.dtype(np.float32): 0x7FC00000,
            np.dtype(np.float64): 0x7FF8000000000000}


def is_float(dtype) -> bool:
    return np.dtype(dtype).kind == "f" or np.dtype(dtype) == BF16


def round_sixteen(x: Fraction, dtype) -> float:
    """The exact rational x rounded to nearest, ties to even, in a 16-bit format (inf on
    overflow), as a Python float.  Signed zero results are the caller's business."""
    t, emin, emax = SIXTEEN[np.dtype(dtype)]
    if x == 0:
        return 0.0
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    q = Fraction(2) ** (max(e, emin) - t)            # the grid spacing of x's binade
    n, r = divmod(a, q)
    if r > q / 2 or (r == q / 2 and n % 2 == 1):
        n += 1
    v = n * q
    out = math.inf if v > (2 - Fraction(1, 2 ** t)) * Fraction(2) ** emax else float(v)
    return -out if x < 0 else out


@dataclass(frozen=True)
class Digit:
    axis: str | None      # None: the identity `1 # dim`
    stride: int
    size: int
    dim: int


@dataclass
class Placement:
    axes: dict[str, int]                    # logical sizes
    padded: dict[str, int]                  # PADDED_SIZE per axis
    slice: list[Digit] = field(default_factory=list)
    time: list[Digit] = field(default_factory=list)
    packet: list[Digit] = field(default_factory=list)

    def term(self, d: Digit) -> str:
        if d.axis is None:
            return "1" if d.dim == 1 else f"1 # {d.dim}"
        n, p = self.axes[d.axis], self.padded[d.axis]
        base = d.axis if p == n else f"{d.axis} # {p}"
        if d.stride == 1 and d.size == p:
            assert d.dim == d.size, "an unsplit term cannot pad its dimension"
            return base
        if d.stride == 1:
            s = f"{base} % {d.size}"
        elif d.stride * d.size == p:
            s = f"{base} / {d.stride}"
        else:
            s = f"{base} / {d.stride} % {d.size}"
        return s if d.dim == d.size else f"{s} # {d.dim}"

    def text(self, dim: str) -> str:
        return ", ".join(self.term(d) for d in getattr(self, dim)) or "1"

    def axes_text(self) -> str:
        return ", ".join(f"{k} = {v}" for k, v in self.axes.items())

    @property
    def num_slices(self) -> int:
        return math.prod(d.dim for d in self.slice)

    @property
    def num_steps(self) -> int:
        return math.prod(d.dim for d in self.time)


def _digits(digits: list[Digit], x: np.ndarray) -> list[np.ndarray]:
    out, w = [], 1
    for d in reversed(digits):
        out.append((x // w) % d.dim)
        w *= d.dim
    return out[::-1]


def element_reality(pl: Placement):
    """For the (S, T, 8) grid of flit lanes: per axis index and reality, and `position_real`.

    real[a]: the lane exists (Packet) and a's digits rebuild an index below a's SIZE.
    position_real: the lane exists and no identity `1 # n` is on a padding position there (such
    positions are padding of the output, like a padded non-reduce axis).
    """
    s = np.arange(pl.num_slices)[:, None, None]
    t = np.arange(pl.num_steps)[None, :, None]
    q = np.arange(8)[None, None, :]
    shape = (pl.num_slices, pl.num_steps, 8)
    lane_exists = np.broadcast_to(q < math.prod(d.dim for d in pl.packet), shape)
    position_real = np.ones(shape, bool)
    index = {a: np.zeros(shape, np.int64) for a in pl.axes}
    inside = {a: np.ones(shape, bool) for a in pl.axes}
    for digits, x, in_packet in ((pl.slice, s, False), (pl.time, t, False), (pl.packet, q, True)):
        for d, v in zip(digits, _digits(digits, x)):
            v = np.broadcast_to(v, shape)
            if d.axis is None:
                if in_packet:
                    lane_exists = lane_exists & (v < d.size)
                position_real = position_real & (v < d.size)
                continue
            index[d.axis] = index[d.axis] + v * d.stride
            inside[d.axis] = inside[d.axis] & (v < d.size)
    real = {a: inside[a] & (index[a] < pl.axes[a]) & lane_exists for a in pl.axes}
    return index, real, position_real & lane_exists


def brute_valid(pl: Placement, reduce: str, tracked: list[str]) -> np.ndarray:
    """int[S, T]: the valid_size each flit must carry, counted element by element."""
    _, real, _ = element_reality(pl)
    ok = real[reduce].copy()
    for a in tracked:
        ok &= real[a]
    if any(d.axis == reduce for d in pl.packet):
        counts = ok.sum(axis=2)
        prefix = np.arange(8)[None, None, :] < counts[..., None]
        assert np.array_equal(prefix, ok), "real lanes of a flit are not a prefix"
        return counts
    return np.where(ok[:, :, 0], 8, 0)


# ----------------------------------------------------------------------------- reference fold

def _round(x: float, dtype) -> float:
    return float(np.array(x, dtype=np.float64).astype(dtype))


def scalar_op(op: str, a, b, dtype):
    dt = np.dtype(dtype)
    if is_float(dt):
        if op == "Add":
            if math.isnan(a) or math.isnan(b) or (math.isinf(a) and math.isinf(b) and a != b):
                return math.nan
            if dt in SIXTEEN and not (math.isinf(a) or math.isinf(b)):
                s = round_sixteen(Fraction(a) + Fraction(b), dt)
                if s == 0 and Fraction(a) + Fraction(b) == 0:      # exact zero: -0 only for -0 + -0
                    return -0.0 if math.copysign(1, a) < 0 and math.copysign(1, b) < 0 else 0.0
                return s
            return _round(a + b, dt)
        if math.isnan(a) and math.isnan(b):
            return math.nan
        if math.isnan(a):
            return b
        if math.isnan(b):
            return a
        if a == b == 0.0:
            pos = math.copysign(1, a) > 0 or math.copysign(1, b) > 0
            neg = math.copysign(1, a) < 0 or math.copysign(1, b) < 0
            return (0.0 if pos else -0.0) if op == "Max" else (-0.0 if neg else 0.0)
        return max(a, b) if op == "Max" else min(a, b)
    info = np.iinfo(dt)
    if op == "Max":
        return max(a, b)
    if op == "Min":
        return min(a, b)
    if op == "AddSat":
        return min(max(a + b, int(info.min)), int(info.max))
    span = 1 << (8 * dt.itemsize)                     # Add wraps
    r = (a + b) % span
    return r - span if dt.kind == "i" and r > int(info.max) else r


def seed_value(op: str, dtype):
    dt = np.dtype(dtype)
    if is_float(dt):
        return {"Add": -0.0, "Max": -math.inf, "Min": math.inf}[op]
    info = np.iinfo(dt)
    return {"AddSat": 0, "Add": 0, "Max": int(info.min), "Min": int(info.max)}[op]


def tree(op: str, vals: list, dtype):
    """op(op(x0, x1), op(x2, x3)) over a prefix of 1..4 values."""
    ab = vals[0] if len(vals) < 2 else scalar_op(op, vals[0], vals[1], dtype)
    if len(vals) < 3:
        return ab
    cd = vals[2] if len(vals) < 4 else scalar_op(op, vals[2], vals[3], dtype)
    return scalar_op(op, ab, cd, dtype)


def to_bits(value, dtype) -> int:
    dt = np.dtype(dtype)
    if is_float(dt) and math.isnan(value):
        return NAN_BITS[dt]
    a = np.array(value, dtype=dt)          # exact: value is representable
    return int(a.view(f"u{dt.itemsize}"))


def reference_reduce(pl: Placement, reduce: str, op: str, narrow: str, logical, dtype):
    """{(s, o, lane): bits} for every output element whose non-R coordinates are all real.

    `logical(coords: dict axis->index) -> value` gives the logical tensor.  Output slot o is the
    mixed-radix number of the non-R Time digits (plus the split half when R is not in Packet).
    """
    index, real, position_real = element_reality(pl)
    r_in_packet = any(d.axis == reduce for d in pl.packet)
    others = [a for a in pl.axes if a != reduce]
    t_digits = _digits(pl.time, np.arange(pl.num_steps))
    halves = (0, 1) if narrow == "split" else (0,)
    slot_dims = [d.dim for d in pl.time if d.axis != reduce]
    if narrow == "split" and not r_in_packet:
        slot_dims.append(2)
    results: dict = {}
    fibers: dict = {}
    for s in range(pl.num_slices):
        for t in range(pl.num_steps):
            for h in halves:
                slot_digits = [int(v[t]) for d, v in zip(pl.time, t_digits) if d.axis != reduce]
                if narrow == "split" and not r_in_packet:
                    slot_digits.append(h)
                o = 0
                for dd, v in zip(slot_dims, slot_digits):
                    o = o * dd + v
                lanes = range(4 * h, 4 * h + 4)
                if r_in_packet:
                    vals = [logical({a: int(index[a][s, t, q]) for a in pl.axes})
                            for q in lanes if real[reduce][s, t, q]]
                    keys = [(s, o, 0)]
                    contrib = [tree(op, vals, dtype)] if vals else []
                    coords_ok = all(real[a][s, t, 4 * h] or not _placed(pl, a) for a in others)
                    if not (coords_ok and position_real[s, t, 0]):
                        continue
                    fibers.setdefault(keys[0], []).extend(contrib)
                else:
                    for lane, q in enumerate(lanes):
                        if not all(real[a][s, t, q] or not _placed(pl, a) for a in others):
                            continue
                        if not position_real[s, t, q] or q >= _packet_size(pl):
                            continue
                        key = (s, o, lane)
                        fibers.setdefault(key, [])
                        if real[reduce][s, t, q]:
                            fibers[key].append(logical({a: int(index[a][s, t, q]) for a in pl.axes}))
    for key, vals in fibers.items():
        acc = seed_value(op, dtype)
        for v in vals:
            acc = scalar_op(op, acc, v, dtype)
        results[key] = to_bits(acc, dtype)
    return results


def _packet_size(pl: Placement) -> int:
    return math.prod(d.dim for d in pl.packet)


def _placed(pl: Placement, axis: str) -> bool:
    return any(d.axis == axis for d in pl.slice + pl.time + pl.packet)
