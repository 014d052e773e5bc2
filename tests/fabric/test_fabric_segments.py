"""Seed 000, hw_params And Physical Ports: "For an untagged bits<W> path carrying an exact
software value that needs N bits, every selected segment must satisfy W >= N.  Low-bit-aligned
widening zero-fills high bits and legal narrowing truncates high bits without crossing below
the exact semantic width."""
import itertools
import random

import numpy as np
import pytest

from fabric.io import load_document
from fabric.topology import Router
from fabric.types import SegmentTooNarrow, adapt_segment, adapt_segment_array, bits, bits_tag
from test_fabric_anchors import doc, fu_doc, op_node


def reference_chain(payload: int, widths: list[int], n: int):
    """By hand: the value is low-bit aligned, so after any chain of segments what survives is the
    payload's low min(widths) bits (widening adds only zeros above); a segment after the first
    narrower than N is illegal."""
    if any(w < n for w in widths[1:]):
        return None
    return payload % (1 << min(widths))


def run_chain(payload, widths, n):
    try:
        for a, b in zip(widths, widths[1:]):
            payload = adapt_segment(payload, bits(a), bits(b), n)
    except SegmentTooNarrow:
        return None
    return payload


def test_every_chain_of_up_to_three_segments_over_every_small_payload():
    widths = [1, 2, 3, 5, 8]
    for n in (1, 2, 3, 5):
        for chain in itertools.product(widths, repeat=3):
            if chain[0] < n:
                continue                         # the producer's port already carries the N-bit value
            for payload in range(1 << chain[0]):  # high bits above N included: truncation must drop them
                assert run_chain(payload, list(chain), n) == reference_chain(payload, list(chain), n), (n, chain)


def test_widening_zero_fills_and_narrowing_keeps_the_low_bits():
    assert adapt_segment(0xBEEF, bits(16), bits(64), 16) == 0xBEEF            # the 48 new bits are zero
    assert adapt_segment(0xFFFF_BEEF, bits(32), bits(16), 16) == 0xBEEF       # high bits truncated
    with pytest.raises(SegmentTooNarrow):
        adapt_segment(0xBEEF, bits(32), bits(8), 16)                          # below the semantic width


def test_the_array_form_agrees_with_the_scalar_rule():
    rng = np.random.default_rng(5)
    for src, dst, n in ((16, 64, 16), (64, 16, 16), (32, 32, 7), (64, 1, 1), (9, 33, 9)):
        a = rng.integers(0, 1 << min(src, 63), 257, dtype=np.uint64)
        if src == 64:
            a |= rng.integers(0, 2, 257, dtype=np.uint64) << np.uint64(63)
        got = adapt_segment_array(a, bits(src), bits(dst), n)
        assert got.tolist() == [adapt_segment(int(x), bits(src), bits(dst), n) for x in a]


def test_tagged_segments_are_not_adapted():
    with pytest.raises(ValueError):
        adapt_segment(1, bits_tag(8, 2), bits(8), 8)


def _routed(mid, dst):
    add = op_node("add", "ScalarIntegerAddSub", ["arith.addi"], {"integer_widths": [16], "pointer_formats": []},
                  ["in.0", "in.1"], ["bits<32>", "bits<32>"], ["bits<32>"])
    sink = op_node("add2", "ScalarIntegerAddSub", ["arith.addi"], {"integer_widths": [16], "pointer_formats": []},
                   ["m.0", "in.1"], [f"bits<{dst}>", "bits<32>"], ["bits<32>"])
    fu = fu_doc([add, {"kind": "mux", "name": "m", "operands": ["add.0", "in.0"], "type": f"bits<{mid}>"}, sink],
                ["add2.0"], [{"name": "t", "nodes": ["add", "m", "add2"], "selects": {"m": 0}}])
    f = load_document(doc([fu]))
    return Router(f.fus[0], f.fus[0].templates[0])


def test_a_route_through_a_wider_mux_and_a_narrower_input_delivers_the_exact_value():
    r = _routed(64, 16)                          # bits<32> -> bits<64> (zero-fill) -> bits<16> (truncate)
    rng = random.Random(3)
    for _ in range(200):
        v = rng.randrange(1 << 16)
        assert r.transport(("add", 0), ("add2", 0), v, 16) == v
    # a value with high bits set on the 32-bit result port loses them at the 16-bit input
    assert r.transport(("add", 0), ("add2", 0), 0xABCD_1234, 16) == 0x1234
    assert r.transport(("add", 0), ("add2", 1), 5, 16) is None               # no route to operand 1


def test_a_route_narrower_than_the_value_is_refused():
    with pytest.raises(SegmentTooNarrow):
        _routed(8, 32).transport(("add", 0), ("add2", 0), 0x1234, 16)
