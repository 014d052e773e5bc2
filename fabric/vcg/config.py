"""VcgConfig and its compiler: mapping + REDUCE_LABEL -> 3 TimeFilterConfig + 1 PacketClipperConfig.

The structs and `valid`/`valid_size` follow the seed field for field.  `compile_vcg` derives them:

* R's Packet sub-expression (at most one, its minor-most digit, alone in Packet) drives the
  packet clipper: sequencer = Time entries with R's stride (0 for other axes), axis_size =
  R::SIZE, packet_span = that digit's size.  No Packet part: disabled clipper (returns 8).
* R needs a time filter when it is padded and has a Slice part, or a Time part that the clipper
  does not already cover (R in Time+Packet without Slice needs none).  Every other padded axis
  placed completely in Slice/Time (never Packet) takes one more filter.
* SliceMajor (Slice digits above Time digits, or only one of them): boundary contribution
  r_b = floor((SIZE-1)/span)*span with span = the smallest Slice stride; slice_thres encodes r_b,
  time_thres = SIZE - r_b.  TimeMajor (Slice digits below Time digits): Time strides divided by
  the block below them, slice_thres encodes block - (PADDED_SIZE - SIZE), time_thres =
  time_span - 1, and PADDED_SIZE - SIZE <= block is required.
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

from isa.atomicio import quote

from .errors import VcgError
from .mapping import FLIT_LANES, Mapping, Term, dim_digits

MAX_TIME_FILTERS = 3
MAX_SEQUENCER_ENTRIES = 8
SLICE_MASK_BITS = 32


# ----------------------------------------------------------------------------- structs

@dataclass(frozen=True)
class SeqEntry:
    expr: str       # the Time sub-expression this counter iterates
    size: int       # counter limit
    stride: int     # contribution per step to the tracked axis' index (0: not assigned)

    def __str__(self) -> str:
        return f"{self.expr} -> size {self.size} : stride {self.stride}"


@dataclass(frozen=True)
class Sequencer:
    """Nested counters, outer first; index(t) = sum(counter_j(t) * stride_j), counters wrap."""
    entries: tuple[SeqEntry, ...] = ()

    def index(self, t):
        """Works on an int or an integer ndarray of time steps."""
        idx = 0 * t
        inner = 1
        for e in reversed(self.entries):
            if e.stride:
                idx = idx + ((t // inner) % e.size) * e.stride
            inner *= e.size
        return idx

    def __str__(self) -> str:
        return "[" + ", ".join(map(str, self.entries)) + "]"


class TimeFilterMode(enum.Enum):
    SliceMajor = 0
    TimeMajor = 1


@dataclass(frozen=True)
class TimeFilterConfig:
    sequencer: Sequencer
    slice_mask: int
    slice_thres: int
    time_thres: int
    mode: TimeFilterMode
    axis: str | None = None       # the axis this filter tracks (None: disabled); not a HW field

    def valid(self, s: int, t: int) -> bool:
        idx = self.sequencer.index(t)
        m = s & self.slice_mask
        if m < self.slice_thres:
            return True
        if m > self.slice_thres and self.mode is TimeFilterMode.SliceMajor:
            return False
        return idx < self.time_thres

    @property
    def enabled(self) -> bool:
        return self.axis is not None


@dataclass(frozen=True)
class PacketClipperConfig:
    sequencer: Sequencer
    axis_size: int
    packet_span: int
    axis: str | None = None

    def valid_size(self, t: int) -> int:
        # signed arithmetic: the seed's u32 subtraction is meant as a clamp at 0
        return min(max(self.axis_size - self.sequencer.index(t), 0), self.packet_span)

    @property
    def enabled(self) -> bool:
        return self.axis is not None


DISABLED_FILTER = TimeFilterConfig(Sequencer(), 0, 1, 0, TimeFilterMode.SliceMajor)
DISABLED_CLIPPER = PacketClipperConfig(Sequencer(), 8, 8)


@dataclass(frozen=True)
class VcgConfig:
    time_filters: tuple[TimeFilterConfig, TimeFilterConfig, TimeFilterConfig]
    packet_clipper: PacketClipperConfig

    def valid_size(self, s: int, t: int) -> int:
        if all(tf.valid(s, t) for tf in self.time_filters):
            return self.packet_clipper.valid_size(t)
        return 0

    def filter_for(self, axis: str) -> TimeFilterConfig | None:
        return next((tf for tf in self.time_filters if tf.axis == axis), None)

    # -- printing
    def format(self) -> str:
        lines = ["VcgConfig {", "    time_filters: ["]
        for i, tf in enumerate(self.time_filters):
            lines += _indent(format_time_filter(tf, i), 8)
        pc = format_packet_clipper(self.packet_clipper)
        lines += ["    ],", "    packet_clipper: " + pc[0], *_indent(pc[1:], 4), "}"]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        def seq(q: Sequencer):
            return [{"expr": e.expr, "size": e.size, "stride": e.stride} for e in q.entries]
        return {
            "time_filters": [{"axis": tf.axis, "sequencer": seq(tf.sequencer),
                              "slice_mask": tf.slice_mask, "slice_thres": tf.slice_thres,
                              "time_thres": tf.time_thres, "mode": tf.mode.name}
                             for tf in self.time_filters],
            "packet_clipper": {"axis": self.packet_clipper.axis,
                               "sequencer": seq(self.packet_clipper.sequencer),
                               "axis_size": self.packet_clipper.axis_size,
                               "packet_span": self.packet_clipper.packet_span},
        }


def _indent(lines: list[str], n: int) -> list[str]:
    return [" " * n + ln for ln in lines]


def _format_seq(q: Sequencer, col: int) -> list[str]:
    if not q.entries:
        return ["[],"]
    out = []
    for i, e in enumerate(q.entries):
        head = "[" if i == 0 else " " * (col + 1)
        tail = "]," if i == len(q.entries) - 1 else ","
        out.append(f"{head}{e}{tail}")
    return out


def format_time_filter(tf: TimeFilterConfig, slot: int = 0) -> list[str]:
    note = f"  // time filter {slot}: " + (f"tracks {tf.axis}" if tf.axis else "disabled")
    seq = _format_seq(tf.sequencer, 17)
    mask = f"0b{tf.slice_mask:b}" if tf.slice_mask else "0"
    return ["TimeFilterConfig {" + note,
            "    sequencer:   " + seq[0], *seq[1:],
            f"    slice_mask:  {mask},",
            f"    slice_thres: {tf.slice_thres},",
            f"    time_thres:  {tf.time_thres},",
            f"    mode:        {tf.mode.name},",
            "},"]


def format_packet_clipper(pc: PacketClipperConfig) -> list[str]:
    note = "  // " + (f"clips {pc.axis}" if pc.axis else "disabled: every flit full (8)")
    seq = _format_seq(pc.sequencer, 17)
    return ["PacketClipperConfig {" + note,
            "    sequencer:   " + seq[0], *seq[1:],
            f"    axis_size:   {pc.axis_size},",
            f"    packet_span: {pc.packet_span},",
            "},"]


# ----------------------------------------------------------------------------- compiler

AUTO = "auto"


def _pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def _slice_weights(m: Mapping) -> list[int]:
    """Slice-id weight of each Slice term (product of the dims to its right)."""
    w, out = 1, []
    for t in reversed(m.slice):
        out.append(w)
        w *= t.dim
    return out[::-1]


def _sequencer(m: Mapping, axis: str, divisor: int = 1) -> Sequencer:
    """Time entries with `axis`' stride (0 elsewhere); outer stride-0 and size-1 entries dropped
    because counters wrap, so they cannot change index(t)."""
    entries = [SeqEntry(str(t), t.dim, t.stride // divisor if t.axis == axis else 0)
               for t in m.time if t.dim > 1]
    while entries and entries[0].stride == 0:
        entries.pop(0)
    q = Sequencer(tuple(entries))
    if len(q.entries) > MAX_SEQUENCER_ENTRIES:
        raise VcgError("sequencer-capacity",
                       f"tracking {axis} needs {len(q.entries)} sequencer entries")
    return q


def _term_ref(t: Term) -> str:
    return f"{t.where} term '{t}'"


def _placement(m: Mapping, axis: str):
    """`axis`' sub-expressions per dimension.  A 1-position Slice/Time term carries no digit and is
    skipped; a Packet term always counts (its size is the packet_span)."""
    def used(t: Term) -> bool:
        return t.axis == axis and t.dim > 1
    s_terms = [(i, t) for i, t in enumerate(m.slice) if used(t)]
    t_terms = [t for t in m.time if used(t)]
    p_terms = [t for t in m.packet if t.axis == axis]
    return s_terms, t_terms, p_terms


def _check_slice_terms(m: Mapping, axis: str, s_terms) -> list[tuple[Term, int]]:
    """Order and power-of-2 rules; returns (term, lowest slice-id bit) per Slice term."""
    for (_, a), (_, b) in zip(s_terms, s_terms[1:]):
        if a.stride <= b.stride:
            raise VcgError("slice-order",
                           f"{_term_ref(a)} (stride {a.stride}) is placed outside "
                           f"{_term_ref(b)} (stride {b.stride})")
    weights = _slice_weights(m)
    out = []
    for i, t in s_terms:
        w = weights[i]
        if not (_pow2(t.dim) and _pow2(w)):
            raise VcgError("slice-pow2",
                           f"{_term_ref(t)} has size {t.dim} at slice-id stride {w}")
        bit = w.bit_length() - 1
        if bit + (t.dim.bit_length() - 1) > SLICE_MASK_BITS:
            raise VcgError("slice-mask-width",
                           f"{_term_ref(t)} occupies slice-id bits {bit}..{bit + t.dim.bit_length() - 2}")
        out.append((t, bit))
    return out


def _encode(slice_bits: list[tuple[Term, int]], r: int) -> int:
    """Slice-id bits (within slice_mask) of the Slice contribution r of the tracked axis."""
    return sum(((r // t.stride) % t.size) << bit for t, bit in slice_bits)


def _check_dim_padding(axis: str, s_terms, t_terms, time_major: bool) -> None:
    """A padded dimension position must land past PADDED_SIZE (stride * size >= PADDED_SIZE: the
    major digit), where SliceMajor's Greater arm or idx >= time_thres closes it."""
    for t in [t for _, t in s_terms] + list(t_terms):
        major = t.stride * t.size >= t.padded
        if t.dim_padded and (not major or time_major or (t.where == "Time" and s_terms)):
            raise VcgError("dim-padding",
                           f"{_term_ref(t)} pads its dimension from {t.size} to {t.dim}")


def _time_filter(m: Mapping, axis: str) -> TimeFilterConfig:
    """The one filter tracking `axis` over its Slice and Time sub-expressions."""
    n, padded = m.axis_sizes[axis], m.padded_size(axis)
    s_terms, t_terms, _ = _placement(m, axis)
    slice_bits = _check_slice_terms(m, axis, s_terms) if s_terms else []
    time_major = False
    if s_terms and t_terms:
        s_strides = [t.stride for _, t in s_terms]
        t_strides = [t.stride for t in t_terms]
        if min(s_strides) > max(t_strides):
            time_major = False
        elif max(s_strides) < min(t_strides):
            time_major = True
        else:
            ts = sorted(t_terms, key=lambda t: t.stride)
            raise VcgError("interleave",
                           f"{axis}'s Slice strides {sorted(s_strides)} and Time strides "
                           f"{sorted(t_strides)} interleave (e.g. {_term_ref(ts[0])})")
    _check_dim_padding(axis, s_terms, t_terms, time_major)
    mask = sum((t.dim - 1) << bit for t, bit in slice_bits)
    if time_major:
        block = min(t.stride for t in t_terms)                 # R positions below the Time digits
        over = padded - n
        if over > block:
            raise VcgError("timemajor-overpad",
                           f"{axis} # {padded} over-pads {axis} = {n} by {over} > slice_span = {block}")
        time_span = padded // block
        return TimeFilterConfig(_sequencer(m, axis, block), mask, _encode(slice_bits, block - over),
                                time_span - 1, TimeFilterMode.TimeMajor, axis)
    span = min((t.stride for _, t in s_terms), default=padded)
    r_b = (n - 1) // span * span                               # the boundary slice's contribution
    return TimeFilterConfig(_sequencer(m, axis), mask, _encode(slice_bits, r_b), n - r_b,
                            TimeFilterMode.SliceMajor, axis)


def _check_reduce_axis(m: Mapping, reduce: str) -> None:
    if reduce not in m.axis_sizes:
        raise VcgError("reduce-axis", f"REDUCE_LABEL {quote(reduce)} is not a declared axis")
    if not m.factors(reduce):
        raise VcgError("reduce-axis", f"{reduce} is not placed in Slice, Time or Packet")
    if not m.is_complete(reduce):
        got = math.prod(t.size for _, _, t in m.factors(reduce))
        raise VcgError("reduce-axis",
                       f"{reduce}'s sub-expressions cover {got} of {reduce} # {m.padded_size(reduce)}")


def _packet_clipper(m: Mapping, reduce: str) -> PacketClipperConfig:
    s_terms, t_terms, p_terms = _placement(m, reduce)
    if not p_terms:
        return DISABLED_CLIPPER
    if len(p_terms) > 1:
        raise VcgError("packet-shared", f"{reduce} has {len(p_terms)} sub-expressions in Packet")
    pk = p_terms[0]
    if pk.stride != 1:
        raise VcgError("packet-major",
                       f"{_term_ref(pk)} is {reduce}'s stride-{pk.stride} digit, not its minor-most one")
    others = [t for t in m.packet if t is not pk and t.dim > 1]
    if others:
        raise VcgError("packet-shared", f"{_term_ref(others[0])} shares Packet with {reduce}")
    n = m.axis_sizes[reduce]
    if s_terms and n % pk.size:
        raise VcgError("slice-packet",
                       f"{reduce} = {n} lies in Slice ({_term_ref(s_terms[0][1])}) and Packet "
                       f"({_term_ref(pk)}) with {n} % packet_span {pk.size} = {n % pk.size}")
    if not s_terms:
        # the clipper alone tracks R: only its major-most Time digit may pad its dimension
        _check_dim_padding(reduce, [], t_terms, False)
    return PacketClipperConfig(_sequencer(m, reduce), n, pk.size, reduce)


def _needs_filter(m: Mapping, axis: str) -> bool:
    s_terms, t_terms, _ = _placement(m, axis)
    if not (s_terms or t_terms):
        return False
    return m.padded_size(axis) > m.axis_sizes[axis] or any(
        t.dim_padded for t in [t for _, t in s_terms] + t_terms)


def tracked_axes(m: Mapping, reduce: str, track=AUTO) -> list[str]:
    """Axes that take a time filter, in slot order (see module doc)."""
    s_terms, t_terms, p_terms = _placement(m, reduce)
    out = []
    if (s_terms or (t_terms and not p_terms)) and _needs_filter(m, reduce):
        out.append(reduce)
    order = list(m.slice) + list(m.time)

    def minor_key(axis: str) -> int:
        return max(i for i, t in enumerate(order) if t.axis == axis)

    if track == AUTO:
        extra = [a for a in m.axis_sizes if a != reduce and _needs_filter(m, a)
                 and m.is_complete(a) and not _placement(m, a)[2]]
        extra.sort(key=minor_key, reverse=True)
    else:
        extra = []
        for a in track:
            if a == reduce or a in extra:
                continue
            if a not in m.axis_sizes:
                raise VcgError("incomplete-axis", f"tracked axis {quote(a)} is not declared")
            if _placement(m, a)[2]:
                raise VcgError("packet-track", f"{a} has a sub-expression in Packet")
            if not m.factors(a) or not m.is_complete(a):
                raise VcgError("incomplete-axis", f"{a} is not placed completely")
            if _needs_filter(m, a):
                extra.append(a)
    return out + extra


def _check_widths(cfg: VcgConfig) -> None:
    limit = 1 << 32
    for tf in cfg.time_filters + (cfg.packet_clipper,):
        values = {f: getattr(tf, f) for f in ("slice_thres", "time_thres", "axis_size", "packet_span")
                  if hasattr(tf, f)}
        values.update({f"sequencer entry {e.expr!r}": max(e.size, e.stride) for e in tf.sequencer.entries})
        for name, v in values.items():
            if v >= limit:
                raise VcgError("field-width", f"{name} of the {tf.axis} {type(tf).__name__} is {v}")


def compile_vcg(m: Mapping, reduce: str, track=AUTO, narrow: str | None = None) -> VcgConfig:
    """The VcgConfig for mapping `m` reducing `reduce`; VcgError names the broken rule."""
    _check_reduce_axis(m, reduce)
    clipper = _packet_clipper(m, reduce)
    axes = tracked_axes(m, reduce, track)
    filters = [_time_filter(m, a) for a in axes]
    if len(filters) > MAX_TIME_FILTERS:
        raise VcgError("filter-count", f"{len(filters)} axes need time filters: {', '.join(axes)}")
    cfg = VcgConfig(tuple(filters + [DISABLED_FILTER] * (MAX_TIME_FILTERS - len(filters))), clipper)
    _check_widths(cfg)
    if narrow is not None:
        check_narrow(m, reduce, narrow)
    return cfg


# ----------------------------------------------------------------------------- narrow

NARROW_MODES = ("trim", "split")


def real_lanes(m: Mapping) -> np.ndarray:
    """bool[8]: lanes of an 8-way flit that can hold a real element under the Packet mapping."""
    q = np.arange(FLIT_LANES)
    ok = q < m.packet_size
    sums: dict[str, np.ndarray] = {}
    for t, d in zip(m.packet, dim_digits(m.packet, q)):
        ok &= d < t.size
        if t.axis is not None:
            sums[t.axis] = sums.get(t.axis, 0) + d * t.stride
    for a, s in sums.items():
        ok &= s < m.axis_sizes[a]
    return ok


def check_narrow(m: Mapping, reduce: str, narrow: str) -> None:
    if narrow not in NARROW_MODES:
        raise ValueError(f"narrow must be one of {NARROW_MODES}, not {quote(narrow)}")
    if narrow == "trim":
        lanes = np.flatnonzero(real_lanes(m))
        if lanes.size and lanes.max() >= 4:
            raise VcgError("narrow-trim",
                           f"Packet {', '.join(map(str, m.packet))} can hold real data in lane {lanes.max()}")
