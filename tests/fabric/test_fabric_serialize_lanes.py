"""Seed 000, ordered-cardinality adapters: "Serialize active-group declares the exact maximum
reachable lane count M of the sealed capability".  M is read from the admitted image, so every
physical port bounds it (the vector input, the mask input, the element result), not only the
payload capacity and input 0 (issue 19's contradiction)."""
import itertools
import random

import pytest

from fabric.contract import contract_for
from fabric.io import load_text
from fabric.view import check_fabric
from fabric_fixtures import make_op

ELEMENTS = {8: "i8", 16: "i16", 32: "i32", 64: "i64"}
FLOATS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}


def serialize(ints=(16,), floats=(), cap=64, ins=(64, 2, 1), outs=(64, 1)):
    return make_op("FixedVectorSerialize", ["dataflow.serialize"],
                   {"integer_element_widths": list(ints), "float_element_formats": list(floats),
                    "max_payload_bits": cap},
                   [f"bits<{w}>" for w in ins], [f"bits<{w}>" for w in outs])


def reachable_lanes(ints, floats, cap, ins, outs):
    """Independent enumeration from the seed's rules: an actor serialize(vector<L x E>,
    vector<L x i1>, i1) -> (E, i1) is admitted when its vector payload L * |E| fits the
    payload capacity and input 0, its mask's L bits fit input 1, the phase bit fits input 2,
    and the element and the phase fit results 0 and 1 (every untagged segment W >= N)."""
    widths = list(ints) + [FLOATS[f] for f in floats]
    out = set()
    for e in widths:
        for lanes in range(1, cap + 1):
            if lanes * e <= min(cap, ins[0]) and lanes <= ins[1] and ins[2] >= 1 and e <= outs[0] and outs[1] >= 1:
                out.add(lanes)
    return out


def active_group_slots(op) -> int:
    return len(contract_for(op).use_patterns[0].transactions)


def test_the_issue_example_a_two_bit_mask_port_bounds_m_to_two():
    # inputs bits<64>, bits<2>, bits<1> with i16 elements reach L in {1, 2}
    assert reachable_lanes([16], [], 64, (64, 2, 1), (64, 1)) == {1, 2}
    assert active_group_slots(serialize()) == 2


def test_m_is_the_greatest_reachable_lane_count_over_random_capabilities():
    rng = random.Random(19)
    for _ in range(60):
        ints = rng.sample(sorted(ELEMENTS), rng.randint(0, 3))
        floats = rng.sample(sorted(FLOATS), rng.randint(0 if ints else 1, 2))
        cap = rng.choice([8, 16, 24, 64, 100, 128])
        ins = (rng.choice([8, 16, 32, 64, 128]), rng.choice([1, 2, 3, 4, 8, 64]), 1)
        outs = (rng.choice([8, 16, 32, 64]), 1)
        want = reachable_lanes(ints, floats, cap, ins, outs)
        op = serialize(ints, floats, cap, ins, outs)
        if not want:
            continue            # nothing reachable: the verifier rejects the resource (EmptyBehaviorImage)
        assert active_group_slots(op) == max(want), (ints, floats, cap, ins, outs)


def test_the_result_port_bounds_which_elements_reach_and_so_m():
    # an i8 element reaches 8 lanes through bits<64>; an i64 one would reach 1 -- but a bits<8>
    # result carries only the i8 element, and a bits<64> one both
    assert active_group_slots(serialize([8, 64], [], 64, (64, 64, 1), (8, 1))) == 8
    assert active_group_slots(serialize([64], [], 64, (64, 64, 1), (64, 1))) == 1


def test_the_view_and_the_check_show_the_exact_m():
    text = ('{"format": "tile-emu-fabric/1", "name": "s", "fus": [{"name": "f", "inputs": ["bits<64>", "bits<2>", '
            '"bits<1>"], "outputs": ["bits<64>", "bits<1>"], "nodes": [{"kind": "op", "name": "ser", '
            '"implementation_family": "FixedVectorSerialize", "op_list": ["dataflow.serialize"], "hw_params": '
            '{"integer_element_widths": [16], "float_element_formats": [], "max_payload_bits": 64}, "operands": '
            '["in.0", "in.1", "in.2"], "ports": {"inputs": ["bits<64>", "bits<2>", "bits<1>"], "results": '
            '["bits<64>", "bits<1>"]}, "constraints": [{"resource_contract": "ordered_cardinality_adapter"}]}], '
            '"yield": ["ser.0", "ser.1"], "templates": [{"name": "t", "nodes": ["ser"]}]}]}')
    rep = check_fabric(load_text(text))
    assert rep.ok, rep.diagnostics
    (view,) = rep.views
    active, close = view.resource_state_and_timing_contract.use_patterns
    assert (len(active.transactions), len(close.transactions)) == (2, 1)


@pytest.mark.parametrize("cap, mask", list(itertools.product([16, 32, 64], [1, 2, 4, 16])))
def test_m_never_exceeds_the_mask_port_nor_the_payload(cap, mask):
    op = serialize([8, 16], [], cap, (64, mask, 1), (16, 1))
    assert active_group_slots(op) == max(reachable_lanes([8, 16], [], cap, (64, mask, 1), (16, 1)))
