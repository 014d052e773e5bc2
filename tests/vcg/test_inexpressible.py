"""Every inexpressible placement of the seed is rejected naming its rule, and the seed's reason
holds: the brute-force count of real elements shows what a single configuration cannot say."""
import numpy as np
import pytest

from fabric.vcg import Mapping, RULES, VcgError, compile_vcg, vector_widen_concat
from fabric.vcg.config import check_narrow
from vcg_reference import Digit, Placement, brute_valid


def rejects(rule, axes, s, t, p, reduce="R", **kw):
    with pytest.raises(VcgError) as e:
        compile_vcg(Mapping.parse(axes, s, t, p), reduce, **kw)
    assert e.value.rule == rule, str(e.value)
    assert f"[{rule}]" in str(e.value) and RULES[rule][0] in str(e.value)
    return e.value


def steps_per_slice(pl, reduce="R"):
    return (brute_valid(pl, reduce, []) > 0).sum(axis=1)


def test_r_in_slice_out_of_order():
    rejects("slice-order", "R = 13, X = 32", "X, R # 16 / 2 % 4, R # 16 / 8", "R # 16 % 2", "1 # 8")
    # why: slices (R # 16 / 2 % 4, R # 16 / 8) give non-monotonic validity
    pl = Placement({"R": 13, "X": 2}, {"R": 16, "X": 2},
                   slice=[Digit("R", 2, 4, 4), Digit("R", 8, 2, 2)], time=[Digit("R", 1, 2, 2)],
                   packet=[Digit(None, 1, 1, 8)])
    # "S6 valid after S5 partial": no single slice_thres separates full, partial and empty slices
    assert steps_per_slice(pl).tolist() == [2, 2, 2, 2, 2, 1, 2, 0]


def test_r_in_slice_and_time_interleaved():
    rejects("interleave", "R = 13, X = 64", "X, R # 16 / 2 % 4", "R # 16 / 8, R # 16 % 2", "1 # 8")
    # why: "S2: 3/4, S3: 2/4" -- different slices need different numbers of valid steps
    pl = Placement({"R": 13}, {"R": 16}, slice=[Digit("R", 2, 4, 4)],
                   time=[Digit("R", 8, 2, 2), Digit("R", 1, 2, 2)], packet=[Digit(None, 1, 1, 8)])
    assert steps_per_slice(pl).tolist() == [4, 4, 3, 2]


def test_slice_time_slice_interleave_is_the_same_rule():
    rejects("interleave", "R = 13", "R # 16 / 8, R # 16 % 2", "R # 16 / 2 % 4", "1 # 8")


def test_r_in_slice_and_time_overpadded():
    e = rejects("timemajor-overpad", "A = 3, R = 14, X = 64", "X, R # 20 % 4", "A, R # 20 / 4", "1 # 8")
    assert "over-pads R = 14 by 6 > slice_span = 4" in str(e)
    # the correct padding R # 16 (16 - 14 = 2 <= 4) is accepted in TimeMajor mode
    cfg = compile_vcg(Mapping.parse("A = 3, R = 14, X = 64", "X, R # 16 % 4", "A, R # 16 / 4", "1 # 8"), "R")
    assert cfg.time_filters[0].mode.name == "TimeMajor"
    # why: a below-threshold slice (r_slice = 0) would reach idx 4 * 4 = 16 >= R::SIZE
    assert 4 * 4 >= 14


def test_major_r_in_packet():
    rejects("packet-major", "A = 8, R = 19, X = 64", "X, A / 2", "R # 24 % 8", "R # 24 / 8 # 8")


def test_r_sharing_packet_with_another_axis():
    rejects("packet-shared", "A = 4, R = 19, X = 256", "X", "R # 24 / 2", "R # 24 % 2, A")


def test_two_r_sub_expressions_in_packet():
    rejects("packet-shared", "R = 8", "", "", "R / 4, R % 4")


def test_r_in_slice_and_packet():
    e = rejects("slice-packet", "R = 2045", "R # 2048 / 8", "1", "R # 2048 % 8")
    assert "2045 % packet_span 8 = 5" in str(e)
    # why: at t = 0 slices 0-254 need 8 but slice 255 (R 2040..2047) needs 5
    pl = Placement({"R": 2045}, {"R": 2048}, slice=[Digit("R", 8, 256, 256)], time=[],
                   packet=[Digit("R", 1, 8, 8)])
    need = brute_valid(pl, "R", [])[:, 0]
    assert set(need[:255]) == {8} and need[255] == 5


def test_degenerate_slice_packet_is_supported():
    m = Mapping.parse("R = 2040", "R # 2048 / 8", "1", "R # 2048 % 8")
    cfg = compile_vcg(m, "R")
    assert cfg.packet_clipper.packet_span == 8 and cfg.time_filters[0].axis == "R"


def test_more_than_three_time_filters():
    e = rejects("filter-count", "A = 3, B = 3, C = 3, R = 5",
                "A # 4, B # 4, C # 4", "R # 8", "1 # 8")
    assert "R, C, B, A" in str(e)
    # three are fine: track only two of the extra axes
    compile_vcg(Mapping.parse("A = 3, B = 3, C = 3, R = 5", "A # 4, B # 4, C # 4", "R # 8", "1 # 8"),
                "R", track=["A", "B"])


def test_narrow_trim_needs_the_static_guarantee():
    m = Mapping.parse("R = 19", "", "R # 24 / 8", "R # 24 % 8")
    with pytest.raises(VcgError) as e:
        compile_vcg(m, "R", narrow="trim")
    assert e.value.rule == "narrow-trim"
    compile_vcg(m, "R", narrow="split")
    # R = 3 padded to 8 in Packet: lanes 3..7 are always padding, so trimming is safe
    check_narrow(Mapping.parse("R = 3", "", "", "R # 8"), "R", "trim")
    check_narrow(Mapping.parse("A = 8, R = 12", "", "R # 16", "A % 4 # 8"), "R", "trim")


# ---- rules the seed states in its text (power of 2, dimension padding, capacities, completeness)

def test_slice_sub_expressions_need_power_of_two_sizes_and_strides():
    rejects("slice-pow2", "R = 44", "R # 48 / 8", "R # 48 % 8", "1")        # size 6
    rejects("slice-pow2", "R = 13, X = 3", "R # 16 / 8, X", "R # 16 % 8", "1")   # slice-id stride 3


def test_the_issue_example_r43_is_rejected():
    # R = 43 split across all three dimensions (the seed's notation example) is inexpressible
    rejects("slice-packet", "R = 43, X = 64", "R # 48 / 8, X", "R # 48 / 2 % 4", "R # 48 % 2")


def test_padding_a_minor_sub_expression_is_rejected():
    rejects("dim-padding", "R = 14", "", "R # 16 / 4, R # 16 % 4 # 5", "1")
    rejects("dim-padding", "R = 13", "R # 16 % 4", "R # 16 / 4 # 5", "1")            # TimeMajor
    rejects("dim-padding", "R = 14", "R # 16 / 4", "R # 16 % 4 # 5", "1")            # SliceMajor, Time side
    rejects("dim-padding", "R = 10", "", "R # 16 / 4, R # 16 % 4 # 5", "1")
    # padding the major sub-expression is fine: positions past it are past R::SIZE
    compile_vcg(Mapping.parse("R = 13", "R # 32 / 8 # 256", "R # 32 % 8", "1"), "R")
    compile_vcg(Mapping.parse("R = 13", "", "R # 16 / 4 # 8", "R # 16 % 4 # 8"), "R")


def test_sequencer_capacity():
    axes = "A = 2, B = 2, C = 2, D = 2, E = 2, F = 2, G = 2, H = 2, R = 3"
    rejects("sequencer-capacity", axes, "", "R # 4, A, B, C, D, E, F, G, H", "1")
    # outer zero-stride counters are dropped, so the same axes outside R fit
    compile_vcg(Mapping.parse(axes, "", "A, B, C, D, E, F, G, H, R # 4", "1"), "R")


def test_slice_mask_is_32_bits():
    rejects("slice-mask-width", f"R = 3, X = {1 << 32}", "R # 4 / 2, X", "R # 4 % 2", "1")


def test_config_fields_are_u32():
    rejects("field-width", f"R = {(1 << 33) - 1}", "", f"R # {1 << 33}", "1")
    e = rejects("field-width", f"R = 13, X = {1 << 33}", "", "R # 16, X", "1")     # a counter of 2**33
    assert "sequencer entry 'X'" in str(e)
    compile_vcg(Mapping.parse(f"R = {(1 << 32) - 5}", "", f"R # {(1 << 32) - 4}", "1"), "R")


def test_reduce_axis_must_exist_be_placed_and_complete():
    rejects("reduce-axis", "R = 3", "", "R # 4", "1", reduce="Q")
    rejects("reduce-axis", "R = 3, A = 2", "", "A", "1")
    rejects("reduce-axis", "R = 13", "", "R # 16 / 4", "1")


def test_tracking_requests_that_cannot_be_honoured():
    rejects("packet-track", "A = 3, R = 5", "", "R # 8", "A # 4", track=["A"])
    rejects("incomplete-axis", "A = 5, R = 5", "A # 8 / 2", "R # 8", "1", track=["A"])
    # automatic tracking skips both instead
    cfg = compile_vcg(Mapping.parse("A = 5, R = 5", "A # 8 / 2", "R # 8", "1"), "R")
    assert [tf.axis for tf in cfg.time_filters] == ["R", None, None]


def test_widen_concat_needs_prefix_halves():
    x = np.zeros((3, 4), np.int32)
    with pytest.raises(VcgError) as e:
        vector_widen_concat(x, np.array([4, 3, 2]), x, np.array([1, 1, 0]))
    assert e.value.rule == "widen-concat" and "flit 1" in str(e.value)


def test_every_rule_has_a_rejection_test():
    import inspect
    import sys
    src = inspect.getsource(sys.modules[__name__])
    missing = [r for r in RULES if f'"{r}"' not in src]
    assert not missing, missing
