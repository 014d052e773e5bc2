"""Properties over random placements, checked against vcg_reference (structure, not the compiler):

* every placement the compiler accepts tags each flit with the brute-force count of its real
  R elements (and closes flits that are padding of a tracked axis): never a silently wrong config;
* every placement built from the seed's expressible forms is accepted;
* known inexpressible families are always rejected with their rule;
* the reduction, with padding filled with NaN/inf/INT_MIN/INT_MAX, equals the reference fold over
  the logical tensor for every real output element.
"""
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings, strategies as st

from fabric.vcg import Mapping, VcgError, compile_vcg, plan_reduce, reduce_flits, valid_size_matrix
from fabric.vcg.spec import default_narrow
from vcg_reference import Digit, Placement, brute_valid, element_reality, is_float, reference_reduce

MAX_FLITS = 1024
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def mapping_of(pl: Placement) -> Mapping:
    return Mapping.parse(pl.axes_text(), pl.text("slice"), pl.text("time"), pl.text("packet"))


def expected_tracked(pl: Placement, reduce: str) -> list[str]:
    """Axes other than R that the seed says take a time filter: padded, complete, not in Packet."""
    out = []
    for a in pl.axes:
        ds = [d for d in pl.slice + pl.time + pl.packet if d.axis == a]
        if a == reduce or not ds or any(d.axis == a for d in pl.packet):
            continue
        complete = math.prod(d.size for d in ds) == pl.padded[a]
        padded = pl.padded[a] > pl.axes[a] or any(d.dim > d.size for d in ds)
        if complete and padded:
            out.append(a)
    return out


def _interleave(draw, groups):
    """Merge lists keeping each list's order, in a drawn interleaving."""
    out, groups = [], [list(g) for g in groups if g]
    while groups:
        g = groups[draw(st.integers(0, len(groups) - 1))]
        out.append(g.pop(0))
        groups = [g for g in groups if g]
    return out


# ----------------------------------------------------------------------------- random placements

@st.composite
def any_placement(draw):
    """Arbitrary digit splits and dimension assignments: expressible or not."""
    names = ["R"] + draw(st.sampled_from([[], ["A"], ["A", "B"]]))
    axes, padded = {}, {}
    dims = {"slice": [], "time": [], "packet": []}
    for name in names:
        sizes = draw(st.lists(st.sampled_from([1, 2, 2, 3, 4, 4, 5, 8]), min_size=1, max_size=3))
        p = math.prod(sizes)
        assume(p >= 1)
        axes[name], padded[name] = draw(st.integers(max(1, p // 2), p)), p
        stride = 1
        for k in sizes:
            split = not (stride == 1 and k == p)
            dim = k + (draw(st.sampled_from([0, 0, 0, 1, 3])) if split else 0)
            where = draw(st.sampled_from(["slice", "time", "time", "packet"]))
            dims[where].append(Digit(name, stride, k, dim))
            stride *= k
    if draw(st.booleans()):
        axes["X"], padded["X"] = 2, 2
        dims["slice"].append(Digit("X", 1, 2, 2))
    if draw(st.booleans()):
        dims["packet"].append(Digit(None, 1, 1, draw(st.sampled_from([1, 2]))))
    for k in dims:
        dims[k] = draw(st.permutations(dims[k]))
    while math.prod(d.dim for d in dims["packet"]) > 8:
        dims["time"].append(dims["packet"].pop())
    pl = Placement(axes, padded, dims["slice"], dims["time"], dims["packet"])
    assume(pl.num_slices * pl.num_steps <= MAX_FLITS)
    return pl


def _pow2_sizes(draw, n):
    return [draw(st.sampled_from([2, 4])) for _ in range(n)]


@st.composite
def expressible_placement(draw):
    """Placements of the forms the seed declares expressible (see docs/vcg.md)."""
    mode = draw(st.sampled_from(["time", "slice", "slice_major", "time_major", "packet", "time_packet"]))
    ps = None
    if mode in ("packet", "time_packet") or draw(st.booleans()):
        ps = draw(st.sampled_from([1, 2, 3, 4, 8]))
    r_slice, r_time = [], []
    stride = ps or 1
    sizes_t = [draw(st.sampled_from([2, 3, 4])) for _ in range(draw(st.integers(1, 2)))]
    sizes_s = _pow2_sizes(draw, draw(st.integers(1, 2)))
    if mode in ("time", "time_packet"):
        for k in sizes_t:
            r_time.append(Digit("R", stride, k, k)); stride *= k
    elif mode == "slice":
        for k in sizes_s:
            r_slice.append(Digit("R", stride, k, k)); stride *= k
    elif mode == "slice_major":
        for k in sizes_t:
            r_time.append(Digit("R", stride, k, k)); stride *= k
        for k in sizes_s:
            r_slice.append(Digit("R", stride, k, k)); stride *= k
    elif mode == "time_major":
        for k in sizes_s:
            r_slice.append(Digit("R", stride, k, k)); stride *= k
        for k in sizes_t:
            r_time.append(Digit("R", stride, k, k)); stride *= k
    p = stride
    low = {"time_major": p - (math.prod(d.size for d in r_slice) * (ps or 1)), }.get(mode, 1)
    n = draw(st.integers(max(1, low, p // 3), p))
    if ps and r_slice:
        n = max(ps, n // ps * ps)                         # the degenerate Slice + Packet case
    if ps is None and (r_slice or r_time) and p == 1:
        assume(False)
    packet = [Digit("R", 1, ps, draw(st.sampled_from([ps, 8])))] if ps else []
    if ps and p == ps:                                    # R only in Packet: one unsplit digit
        packet = [Digit("R", 1, ps, ps)]
    if packet and packet[0].dim > packet[0].size and packet[0].size == p:
        packet = [Digit("R", 1, ps, ps)]
    # dimension padding on the major R digit where the seed allows it
    all_r = r_slice + r_time
    if all_r and mode in ("time", "slice", "slice_major", "time_packet") and draw(st.booleans()):
        major = max(all_r, key=lambda d: d.stride * d.size)
        if major.stride > 1:
            grow = major.size * 2 if major in r_slice else major.size + draw(st.integers(1, 3))
            if major in r_slice and major.size & (major.size - 1):
                grow = major.size
            new = Digit("R", major.stride, major.size, grow)
            r_slice = [new if d is major else d for d in r_slice]
            r_time = [new if d is major else d for d in r_time]
    axes, padded = {"R": n}, {"R": p}
    # an extra padded axis H (Slice above Time, like the seed's H and C) and a filler A in Time
    h_slice, h_time = [], []
    if draw(st.booleans()):
        hi, ho = draw(st.sampled_from([1, 2, 3])), draw(st.sampled_from([2, 4]))
        axes["H"], padded["H"] = draw(st.integers(max(1, hi * ho // 2), hi * ho)), hi * ho
        h_time, h_slice = [Digit("H", 1, hi, hi)], [Digit("H", hi, ho, ho)]
        if hi == 1:
            h_time = []
    other_time = [Digit("A", 1, 3, 3)] if draw(st.booleans()) else []
    if other_time:
        axes["A"], padded["A"] = 3, 3
    filler = [Digit("X", 1, 2, 2)] if draw(st.booleans()) else []
    if filler:
        axes["X"], padded["X"] = 2, 2
    r_slice_desc = sorted(r_slice, key=lambda d: -d.stride)
    slice_terms = _interleave(draw, [r_slice_desc, h_slice, filler])
    time_terms = draw(st.permutations(r_time + h_time + other_time))
    if not packet and draw(st.booleans()):
        packet = [Digit(None, 1, 1, 8)]
    pl = Placement(axes, padded, slice_terms, list(time_terms), packet)
    assume(pl.num_slices * pl.num_steps <= MAX_FLITS)
    return pl


def check_against_brute_force(pl: Placement):
    m = mapping_of(pl)
    cfg = compile_vcg(m, "R")
    tracked = [tf.axis for tf in cfg.time_filters if tf.axis and tf.axis != "R"]
    assert sorted(tracked) == sorted(expected_tracked(pl, "R"))
    vs = valid_size_matrix(cfg, m.num_slices, m.num_steps)
    want = brute_valid(pl, "R", tracked)
    bad = np.argwhere(vs != want)
    assert bad.size == 0, (f"{m}\n{cfg.format()}\nfirst mismatch (s, t) = {tuple(bad[0])}: "
                           f"got {vs[tuple(bad[0])]}, brute force {want[tuple(bad[0])]}")
    return m, cfg, vs


@settings(max_examples=600, **SETTINGS)
@given(any_placement())
def test_accepted_random_placements_count_exactly_the_real_elements(pl):
    try:
        m = mapping_of(pl)
        compile_vcg(m, "R")
    except VcgError as e:
        event(f"rejected [{e.rule}]")
        return                                   # rejected: fine, never silently wrong
    event("accepted")
    check_against_brute_force(pl)


@settings(max_examples=400, **SETTINGS)
@given(expressible_placement())
def test_expressible_placements_are_accepted_and_exact(pl):
    check_against_brute_force(pl)


# ----------------------------------------------------------------------------- inexpressible families

@st.composite
def inexpressible(draw):
    """(rule, placement) from the seed's inexpressible families with random sizes."""
    rule = draw(st.sampled_from(["slice-order", "interleave", "timemajor-overpad", "packet-major",
                                 "packet-shared", "slice-packet"]))
    k1, k2 = draw(st.sampled_from([2, 4])), draw(st.sampled_from([2, 4]))
    x = [Digit("X", 1, 4, 4)] if draw(st.booleans()) else []
    ax = {"X": 4} if x else {}
    if rule == "slice-order":                    # minor Slice digit placed outside the major one
        kt = draw(st.sampled_from([2, 3]))
        p = kt * k1 * k2
        n = draw(st.integers(1, p - 1))
        sl = x + [Digit("R", kt, k1, k1), Digit("R", kt * k1, k2, k2)]
        return rule, Placement({"R": n, **ax}, {"R": p, **ax}, sl, [Digit("R", 1, kt, kt)], [])
    if rule == "interleave":                     # Time - Slice - Time
        kt2 = draw(st.sampled_from([2, 3]))
        p = k1 * k2 * kt2
        n = draw(st.integers(1, p - 1))
        return rule, Placement({"R": n, **ax}, {"R": p, **ax}, x + [Digit("R", k1, k2, k2)],
                               [Digit("R", k1 * k2, kt2, kt2), Digit("R", 1, k1, k1)], [])
    if rule == "timemajor-overpad":              # Slice minor, Time major, P - N > slice_span
        kt = draw(st.integers(3, 6))
        p = k1 * kt
        n = draw(st.integers(1, p - k1 - 1))              # over-padding p - n > slice_span k1
        return rule, Placement({"R": n, **ax}, {"R": p, **ax}, x + [Digit("R", 1, k1, k1)],
                               [Digit("R", k1, kt, kt)], [])
    if rule == "packet-major":                   # R's major digit in Packet
        kt = draw(st.sampled_from([2, 3, 8]))
        p = kt * k1
        n = draw(st.integers(1, p))
        return rule, Placement({"R": n, **ax}, {"R": p, **ax}, x, [Digit("R", 1, kt, kt)],
                               [Digit("R", kt, k1, k1)])
    if rule == "packet-shared":                  # another axis beside R in Packet
        p = 2 * k1
        n = draw(st.integers(1, p))
        return rule, Placement({"R": n, "A": 2}, {"R": p, "A": 2}, [],
                               [Digit("R", 2, k1, k1)],
                               draw(st.permutations([Digit("R", 1, 2, 2), Digit("A", 1, 2, 2)])))
    ps = draw(st.sampled_from([2, 4, 8]))        # slice-packet: R::SIZE % packet_span != 0
    p = ps * k1 * 4
    n = draw(st.integers(0, p // ps - 1)) * ps + draw(st.integers(1, ps - 1))
    return rule, Placement({"R": n}, {"R": p}, [Digit("R", ps, k1 * 4, k1 * 4)], [], [Digit("R", 1, ps, ps)])


@settings(max_examples=300, **SETTINGS)
@given(inexpressible())
def test_inexpressible_families_are_always_rejected(case):
    rule, pl = case
    with pytest.raises(VcgError) as e:
        compile_vcg(mapping_of(pl), "R")
    assert e.value.rule == rule, (str(e.value), mapping_of(pl))


# ----------------------------------------------------------------------------- reduction

INT_OPS, FLOAT_OPS = ("AddSat", "Add", "Min", "Max"), ("Add", "Min", "Max")
DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint32", "uint64", "float16", "bfloat16", "float32",
          "float64"]


def adversarial(dtype, shape, rng):
    dt = np.dtype(dtype)
    if is_float(dt):
        u = np.dtype(f"u{dt.itemsize}")
        nan_payload = np.array([np.nan], dt).view(u)[0] | u.type(5)
        pool = np.array([np.nan, np.inf, -np.inf, -0.0, ml_dtypes.finfo(dt).max], dt)
        pool = np.concatenate([pool, np.array([nan_payload], u).view(dt)])
    else:
        info = np.iinfo(dt)
        pool = np.array([info.min, info.max, info.max - 1, info.min + 1], dt)
    return rng.choice(pool, size=shape)


def logical_values(dtype, rng, pl):
    """A logical tensor (dict from coordinates to value): big magnitudes so saturation and
    rounding order matter."""
    dt = np.dtype(dtype)
    cache = {}

    def value(coords):
        key = tuple(sorted(coords.items()))
        if key not in cache:
            if is_float(dt):
                e = int(rng.integers(-6, 8))
                v = float(np.array(rng.standard_normal() * 2.0 ** e, dtype=dt))
            else:
                info = np.iinfo(dt)
                v = int(rng.integers(int(info.min) // 2, int(info.max) // 2 + 1, dtype=np.int64)
                        if dt != np.uint64 else int(rng.integers(0, 1 << 62)) * 3)
                v = min(max(v, int(info.min)), int(info.max))
            cache[key] = v
        return cache[key]
    return value


@settings(max_examples=150, **SETTINGS)
@given(expressible_placement(), st.sampled_from(DTYPES), st.data())
def test_reduction_with_adversarial_padding_equals_the_reference_fold(pl, dtype, data):
    m, cfg, vs = check_against_brute_force(pl)
    op = data.draw(st.sampled_from(FLOAT_OPS if "float" in dtype else INT_OPS))
    narrow = data.draw(st.sampled_from(["split", default_narrow(m)]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    index, real, position_real = element_reality(pl)
    every = position_real.copy()
    for a in pl.axes:
        every &= real[a]
    logical = logical_values(dtype, rng, pl)
    x8 = adversarial(dtype, every.shape, rng)
    for s, t, q in zip(*np.nonzero(every)):
        x8[s, t, q] = logical({a: int(index[a][s, t, q]) for a in pl.axes})
    plan = plan_reduce(m, "R", narrow)
    out, out_valid = reduce_flits(x8.reshape(-1, 8), vs.reshape(-1), plan, op, "numpy")
    want = reference_reduce(pl, "R", op, narrow, logical, dtype)
    bits = out.view(f"u{np.dtype(dtype).itemsize}")
    assert want, "no real output element"
    for (s, o, lane), b in want.items():
        assert int(bits[s, o, lane]) == b, (str(m), op, dtype, narrow, (s, o, lane), hex(int(bits[s, o, lane])), hex(b))
    assert (out_valid == plan.out_lanes).all()
