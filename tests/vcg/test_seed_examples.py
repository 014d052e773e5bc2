"""Every worked example of the VCG seed: the printed configurations field for field, the numeric
claims made about them, the regime tables, and the [5, 5, 19] heatmap cell by cell."""
import re

import numpy as np
import pytest

from fabric.vcg import (DISABLED_CLIPPER, DISABLED_FILTER, Mapping, PacketClipperConfig, SeqEntry,
                        Sequencer, TimeFilterConfig, TimeFilterMode, compile_vcg, valid_size_matrix)
from fabric.vcg.heatmap import parse_text_cells, render_text
from fabric.vcg.valid import EQUAL, GREATER, LESS, slice_classes, time_open

SM, TM = TimeFilterMode.SliceMajor, TimeFilterMode.TimeMajor


def seq(*entries):
    return Sequencer(tuple(SeqEntry(*e) for e in entries))


def fields(tf):
    return (tf.sequencer, tf.slice_mask, tf.slice_thres, tf.time_thres, tf.mode)


def vcg(axes, s, t, p, reduce="R", **kw):
    m = Mapping.parse(axes, s, t, p)
    cfg = compile_vcg(m, reduce, **kw)
    return m, cfg, valid_size_matrix(cfg, m.num_slices, m.num_steps)


def test_disabled_components_are_the_seed_constants():
    assert fields(DISABLED_FILTER)[1:3] == (0, 1)             # slice_mask = 0, slice_thres = 1
    assert all(DISABLED_FILTER.valid(s, t) for s in range(64) for t in range(64))
    assert (DISABLED_CLIPPER.axis_size, DISABLED_CLIPPER.packet_span) == (8, 8)
    assert DISABLED_CLIPPER.sequencer.entries == ()
    assert {DISABLED_CLIPPER.valid_size(t) for t in range(100)} == {8}


def test_r_as_time():
    m, cfg, vs = vcg("A = 8, R = 12, X = 128", "X, A / 4", "R # 16", "A % 4 # 8")
    tf = cfg.time_filters[0]
    assert fields(tf) == (seq(("R # 16", 16, 1)), 0, 0, 12, SM)
    assert cfg.time_filters[1:] == (DISABLED_FILTER, DISABLED_FILTER)
    assert cfg.packet_clipper == DISABLED_CLIPPER
    # "the first 12 time steps (t = 0..11) are valid and the remaining 4 (t = 12..15) are filtered"
    assert (vs[:, :12] == 8).all() and (vs[:, 12:] == 0).all()


def test_r_in_time_reordered():
    m, cfg, vs = vcg("A = 3, B = 4, R = 10, X = 64", "X # 256", "R # 12 / 4, A, R # 12 % 4", "B # 8")
    tf = cfg.filter_for("R")
    assert tf is cfg.time_filters[0]
    assert fields(tf) == (seq(("R # 12 / 4", 3, 4), ("A", 3, 0), ("R # 12 % 4", 4, 1)), 0, 0, 10, SM)
    # t = 13 is (1, 0, 1): idx = 5 < 10 valid; t = 27 is (2, 0, 3): idx = 11 invalid
    assert tf.sequencer.index(13) == 5 and tf.valid(0, 13)
    assert tf.sequencer.index(27) == 11 and not tf.valid(0, 27)
    # X = 64 padded to 256 is an extra padded axis: it takes the next slot (slices >= 64 closed)
    assert cfg.filter_for("X") is cfg.time_filters[1]
    assert (vs[64:] == 0).all()
    # with extra tracking off the configuration is exactly R's filter
    _, only_r, _ = vcg("A = 3, B = 4, R = 10, X = 64", "X # 256", "R # 12 / 4, A, R # 12 % 4", "B # 8",
                       track=[])
    assert only_r.time_filters[1:] == (DISABLED_FILTER, DISABLED_FILTER)


SLICE_MAJOR = ("R # 16 / 8, X, R # 16 / 4 % 2", "R # 16 % 2, R # 16 / 2 % 2", "1 # 8")


def test_r_in_slice_and_time_slicemajor_reproduces_the_printed_config():
    # The printed slice_mask 0b1000001 / slice_thres 64 put R # 16 / 8 at slice-id bit 6, which is
    # its bit when X has 32 positions (see test_slice_bit_erratum for X = 64).
    m, cfg, vs = vcg("R = 11, X = 32", *SLICE_MAJOR)
    assert fields(cfg.time_filters[0]) == (
        seq(("R # 16 % 2", 2, 1), ("R # 16 / 2 % 2", 2, 2)), 0b1000001, 64, 3, SM)
    _three_regimes(m, cfg, vs)


def _three_regimes(m, cfg, vs):
    tf = cfg.time_filters[0]
    assert [int(tf.sequencer.index(t)) for t in range(4)] == [0, 2, 1, 3]   # idx in {0..3}
    # slice groups by R contribution from Slice: 0, 4 -> all 4 steps; 8 -> 3; 12 -> none
    bits = {"R # 16 / 8": 8, "R # 16 / 4 % 2": 4}
    weights = np.cumprod([1] + [t.dim for t in reversed(m.slice)])[::-1][1:]
    r_slice = sum(((np.arange(m.num_slices) // w) % t.dim) * bits.get(str(t), 0)
                  for t, w in zip(m.slice, weights))
    steps = (vs > 0).sum(axis=1)
    for contribution, valid_steps in [(0, 4), (4, 4), (8, 3), (12, 0)]:
        assert set(steps[r_slice == contribution]) == {valid_steps}
    assert [r + i for r in (8,) for i in (0, 2, 1, 3)] == [8, 10, 9, 11]     # R = 11 is the padded one
    assert (vs[r_slice == 8][:, 3] == 0).all()


def test_slice_bit_erratum_x64():
    """With X = 64 (as printed) R # 16 / 8 sits at slice-id bit 7, not 6: the compiler emits
    0b10000001 / 128, and the printed 0b1000001 / 64 would open padded slices."""
    m, cfg, vs = vcg("R = 11, X = 64", *SLICE_MAJOR)
    tf = cfg.time_filters[0]
    assert (tf.slice_mask, tf.slice_thres, tf.time_thres) == (0b10000001, 128, 3)
    _three_regimes(m, cfg, vs)
    printed = TimeFilterConfig(tf.sequencer, 0b1000001, 64, 3, SM, "R")
    wrong = valid_size_matrix(type(cfg)((printed, DISABLED_FILTER, DISABLED_FILTER), DISABLED_CLIPPER),
                              m.num_slices, m.num_steps)
    assert not np.array_equal(wrong, vs)


def test_r_in_time_and_slice_timemajor():
    m, cfg, vs = vcg("R = 13, X = 64", "R # 16 / 2 % 2, X, R # 16 % 2", "R # 16 / 4 % 2, R # 16 / 8", "1 # 8")
    tf = cfg.time_filters[0]
    # strides 4 and 8 divided by slice_span = 4; slice_thres encodes r_slice = 4 - 3 = 1
    assert fields(tf)[0] == seq(("R # 16 / 4 % 2", 2, 1), ("R # 16 / 8", 2, 2))
    assert fields(tf)[2:] == (1, 3, TM)
    assert tf.slice_mask == 0b10000001                     # bits 0 and 7 (X = 64; the seed prints 6)
    _, cfg32, _ = vcg("R = 13, X = 32", "R # 16 / 2 % 2, X, R # 16 % 2", "R # 16 / 4 % 2, R # 16 / 8", "1 # 8")
    assert fields(cfg32.time_filters[0]) == (fields(tf)[0], 0b1000001, 1, 3, TM)
    # R values across iterations: 0, 8, 4, 12 (+ r_slice); two regimes, no all-invalid one
    assert [int(tf.sequencer.index(t)) * 4 for t in range(4)] == [0, 8, 4, 12]
    r_slice = (np.arange(m.num_slices) >> 7) * 2 + (np.arange(m.num_slices) & 1)
    steps = (vs > 0).sum(axis=1)
    assert set(steps[r_slice == 0]) == {4}
    for r in (1, 2, 3):
        assert set(steps[r_slice == r]) == {3}
        assert (vs[r_slice == r][:, 3] == 0).all()          # R = 13, 14, 15 dropped at t = 3
    assert steps.min() > 0


def test_r_as_packet():
    m, cfg, vs = vcg("A = 8, R = 3, X = 64", "X, A / 2", "1", "R # 8")
    assert cfg.packet_clipper == PacketClipperConfig(Sequencer(), 3, 8, "R")
    assert cfg.time_filters == (DISABLED_FILTER,) * 3
    assert (vs == 3).all()                                   # clamp(3 - 0, 0, 8) everywhere


def test_r_in_time_and_packet():
    m, cfg, vs = vcg("A = 8, R = 10, X = 64", "X, A / 2", "R # 16 / 4", "R # 16 % 4 # 8")
    assert cfg.packet_clipper == PacketClipperConfig(seq(("R # 16 / 4", 4, 4)), 10, 4, "R")
    assert cfg.time_filters == (DISABLED_FILTER,) * 3
    # flit t: idx = 4t -> clamp(10 - idx, 0, 4) = 4, 4, 2, 0 for every slice
    assert (vs == np.array([4, 4, 2, 0])).all()


HCW_AXES = "H = 5, C = 5, W = 19"
HCW = ("H # 8 / 2, C # 8 / 2", "H # 8 % 2, C # 8 % 2, W # 24 / 8", "W # 24 % 8")

# The seed's complete heatmap (rows t = 0..11, columns slice_id = Ho * 4 + Co), verbatim.
SEED_HEATMAP = """\
 t= 0  Hi=0,Ci=0  W  8  8  8  0 | 8  8  8  0| 8  8  8  0| 0  0  0  0  H:v C:v
 t= 1             |  8  8  8  0 | 8  8  8  0| 8  8  8  0| 0  0  0  0
 t= 2             |  3  3  3  0 | 3  3  3  0| 3  3  3  0| 0  0  0  0
 t= 3  Hi=0,Ci=1  W  8  8  0  0 | 8  8  0  0| 8  8  0  0| 0  0  0  0  H:v C:>
 t= 4             |  8  8  0  0 | 8  8  0  0| 8  8  0  0| 0  0  0  0
 t= 5             |  3  3  0  0 | 3  3  0  0| 3  3  0  0| 0  0  0  0
 t= 6  Hi=1,Ci=0  W  8  8  8  0 | 8  8  8  0| 0  0  0  0| 0  0  0  0  H:> C:v
 t= 7             |  8  8  8  0 | 8  8  8  0| 0  0  0  0| 0  0  0  0
 t= 8             |  3  3  3  0 | 3  3  3  0| 0  0  0  0| 0  0  0  0
 t= 9  Hi=1,Ci=1  W  8  8  0  0 | 8  8  0  0| 0  0  0  0| 0  0  0  0  H:> C:>
 t=10             |  8  8  0  0 | 8  8  0  0| 0  0  0  0| 0  0  0  0
 t=11             |  3  3  0  0 | 3  3  0  0| 0  0  0  0| 0  0  0  0
"""
SEED_COLUMN_MARKS = {"H": "v v v v v v v v > > > > x x x x", "C": "v v > x " * 4}


def _seed_cells():
    return np.array([[int(c) for c in re.findall(r"\d+", ln[19:])] for ln in SEED_HEATMAP.splitlines()])


def test_hcw_step1_packet_clipper_only():
    m, cfg, vs = vcg("W = 19", "", "W # 24 / 8", "W # 24 % 8", reduce="W")
    assert cfg.time_filters == (DISABLED_FILTER,) * 3
    assert cfg.packet_clipper == PacketClipperConfig(seq(("W # 24 / 8", 3, 8)), 19, 8, "W")
    assert vs.tolist() == [[8, 8, 3]]
    _, cfg_all, vs_all = vcg(HCW_AXES, *HCW, reduce="W", track=[])   # H, C ignored
    assert (vs_all == np.tile([8, 8, 3], 4)).all()


def test_hcw_step2_c_time_filter():
    m, cfg, vs = vcg("C = 5, W = 19", "C # 8 / 2", "C # 8 % 2, W # 24 / 8", "W # 24 % 8", reduce="W")
    assert (cfg.time_filters[0].slice_mask, cfg.time_filters[0].slice_thres,
            cfg.time_filters[0].time_thres, cfg.time_filters[0].mode) == (0b0011, 2, 1, SM)
    assert vs.tolist() == [[8, 8, 3, 8, 8, 3], [8, 8, 3, 8, 8, 3], [8, 8, 3, 0, 0, 0], [0] * 6]


def test_hcw_step3_configs_and_heatmap_cell_by_cell():
    m, cfg, vs = vcg(HCW_AXES, *HCW, reduce="W")
    tf_c, tf_h, tf_off = cfg.time_filters
    assert (tf_c.axis, tf_c.slice_mask, tf_c.slice_thres, tf_c.time_thres, tf_c.mode) == ("C", 0b0011, 2, 1, SM)
    assert (tf_h.axis, tf_h.slice_mask, tf_h.slice_thres, tf_h.time_thres, tf_h.mode) == ("H", 0b1100, 0b1000, 1, SM)
    assert tf_off == DISABLED_FILTER
    pc = cfg.packet_clipper
    assert (pc.axis_size, pc.packet_span) == (19, 8)
    assert [(e.size, e.stride) for e in pc.sequencer.entries if e.stride] == [(3, 8)]   # Wo: size 3 : stride 8
    seed = _seed_cells()
    assert seed.shape == (12, 16)
    assert np.array_equal(vs.T, seed)                       # every one of the 192 cells
    assert np.array_equal(parse_text_cells(render_text(cfg, m, vs, "W")), seed)
    marks = {LESS: "v", EQUAL: ">", GREATER: "x"}
    for tf in (tf_c, tf_h):
        got = " ".join(marks[c] for c in slice_classes(tf, 16))
        assert got.split() == SEED_COLUMN_MARKS[tf.axis].split()
    rows = {}
    for ln in SEED_HEATMAP.splitlines():
        if "H:" in ln:
            t = int(ln[3:5])
            rows[t] = dict(x.split(":") for x in ln.split()[-2:])
    for t, note in rows.items():
        assert note["H"] == ("v" if time_open(tf_h, 12)[t] else ">")
        assert note["C"] == ("v" if time_open(tf_c, 12)[t] else ">")


def test_the_printed_format_names_every_field():
    m, cfg, _ = vcg("A = 3, B = 4, R = 10, X = 64", "X # 256", "R # 12 / 4, A, R # 12 % 4", "B # 8", track=[])
    text = cfg.format()
    assert "sequencer:   [R # 12 / 4 -> size 3 : stride 4,\n" in text
    assert "A -> size 3 : stride 0,\n" in text
    assert "time_thres:  10," in text and "mode:        SliceMajor," in text
    assert "axis_size:   8," in text and "packet_span: 8," in text
    d = cfg.to_dict()
    assert d["time_filters"][0]["sequencer"][1] == {"expr": "A", "size": 3, "stride": 0}
    assert d["time_filters"][1] == {"axis": None, "sequencer": [], "slice_mask": 0, "slice_thres": 1,
                                    "time_thres": 0, "mode": "SliceMajor"}


@pytest.mark.parametrize("s,t", [(0, 0), (5, 3), (255, 15), (128, 12), (3, 11)])
def test_scalar_valid_size_agrees_with_the_matrix(s, t):
    m, cfg, vs = vcg("R = 11, X = 64", *SLICE_MAJOR)
    assert cfg.valid_size(s, t % m.num_steps) == vs[s, t % m.num_steps]
