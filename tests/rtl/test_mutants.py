"""Goldens are judged by the bugs they find: realistic bugs planted in a copy of
examples/rtl/alu.v, each of which the RTL example's default flow (examples/rtl/run.py: every
coverage class and cross bin once, `--per-class 1`) must catch.  Several sit where the old
allocation (a share of 24 cases per partition) never looked: E4M3 padding, tininess detected
before rounding, the overflow edge, signed Min padding, a PE_MASK decode that only a partial mask
shows.  Marked `rtl` like tests/rtl/test_rtl.py (iverilog and the rtl extra; fail, never skip)."""
from __future__ import annotations

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = ROOT / "examples" / "rtl"
from examples_loader import load_example  # noqa: E402

rtl_run = load_example("rtl")

pytestmark = pytest.mark.rtl

# name: (the line of alu.v, its mutation, what must be named in the failure)
MUTANTS = {
    # E4M3's Max is 0x7E (448); 0x7F is its NaN
    "e4m3_pad_max_writes_nan": ("wire [63:0] pad_max = is_e4m3 ? 64'h7E", "wire [63:0] pad_max = is_e4m3 ? 64'h7F",
                                "E4M3"),
    # tininess detected before rounding: |exact| < 2^-6 (the seed's profile detects it after rounding)
    "tininess_before_rounding": (
        "tiny = mag != 40'd0 && (lead < 6'd11 || (lead == 6'd11 && !(mag[11:7] == 5'b11111)));",
        "tiny = mag != 40'd0 && lead < 6'd12;", "TMUL E4M3"),
    # overflow decided on the exact magnitude (> 448) instead of after rounding (>= 464)
    "e4m3_overflow_edge_before_rounding": (
        "end else if (e > 6'd15 || (e == 6'd15 && m[2:0] == 3'd7)) begin",
        "end else if (mag > 40'd117440512) begin", "E4M3"),
    # a signed TADD that saturates at its bounds where the seed wraps modulo 2^W
    "signed_add_saturates": (
        "F_ADD:   int_y = ua + ub;",
        "F_ADD:   int_y = (is_signed && (~(ua ^ ub) & (ua ^ (ua + ub)) & sign_bit) != 64'd0) ? "
        "((ua & sign_bit) != 64'd0 ? sign_bit : (mask >> 1)) : ua + ub;", "TADD S"),
    # PadValue Min of a signed type written as 0 (the unsigned minimum)
    "signed_pad_min_zero": ("(is_signed ? sign_bit : 64'd0)", "(is_signed ? 64'd0 : 64'd0)", " S"),
    # the PE index's bits swapped in the PE_MASK decode: masks 0001 and 1111 cannot show it
    "pe_mask_decode_swapped": ("assign we = pe_mask[pe];", "assign we = pe_mask[{pe[0], pe[1]}];", ""),
}


@pytest.fixture(scope="module")
def default_flow(tmp_path_factory):
    need = rtl_run.missing_tools()
    assert need is None, need
    out = tmp_path_factory.mktemp("flow")
    ints, e4m3 = rtl_run.generate(out)                 # run.py's default size
    return out, [e4m3, ints]                           # E4M3 first: its mutants stop early


def test_the_default_flow_closes_coverage(default_flow):
    from emulator.golden import coverage_report as R
    _, folders = default_flow
    doc = R.coverage([str(f) for f in folders])
    holes = [(g["name"], b["name"]) for g in doc["covergroups"] for item in g["coverpoints"] + g["crosses"]
             for b in item["bins"] if b["status"] == "hole"]
    assert holes == [] and doc["summary"]["covered"] > 0
    crosses = {cr["name"] for g in doc["covergroups"] for cr in g["crosses"]}
    assert {"pe_mask_x_pad", "geometry_x_pad", "pe_mask_x_alias", "pad_x_dtype"} <= crosses


@pytest.mark.parametrize("name", MUTANTS)
def test_each_planted_bug_is_caught_at_the_default_size(default_flow, tmp_path, name):
    old, new, where = MUTANTS[name]
    text = (HERE / "alu.v").read_text()
    assert text.count(old) == 1, f"alu.v no longer holds the line {name} mutates"
    source = tmp_path / "alu.v"
    source.write_text(text.replace(old, new))
    _, folders = default_flow
    result = rtl_run.simulate("alu", folders, tmp_path / "sim", source=source)
    assert result.get("error") is None, result
    f = result["failure"]
    assert f is not None, f"{name}: every case passed"
    assert where in f"{f['op']} {f['dtype']}", f
