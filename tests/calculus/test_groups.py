"""Logical programs sharing a group (seed 002: "their virtual context and allocation-instance
identities must remain distinct"), and the batch engine's cohorts as such a witness."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator import Machine, MachineBatch
from emulator.calculus.groups import SharedGroupWitness, check_cohorts, check_shared_group, cohort_witness


def two_programs(**change):
    # program A: 3 instances on participants 0..2; program B: 2 instances on 3..4, both at time 0;
    # A owns buffers "x" (code 0), "y" (1); B owns "x" (0)
    w = dict(member=[0, 0, 0, 1, 1], participant=[0, 1, 2, 3, 4], time=[0] * 5, context=[7, 8], workers=5,
             alloc_member=[0, 0, 1], alloc_name=[0, 1, 0], alloc_instance=[10, 11, 12], names=["A", "B"])
    w.update(change)
    return check_shared_group(SharedGroupWitness(**w))


def test_two_programs_with_distinct_identities_share_a_group():
    assert two_programs()
    # the same participant at different local times is fine too
    assert two_programs(participant=[0, 1, 2, 0, 1], time=[0, 0, 0, 1, 1])


@pytest.mark.parametrize("change,obligation,words", [
    ({"context": [7, 7]}, "distinct virtual contexts", "A and B share virtual context 7"),
    ({"alloc_instance": [10, 11, 10]}, "distinct allocation instances",
     "A allocation 0 and B allocation 0 share allocation instance 10"),
    ({"alloc_name": [0, 0, 0]}, "distinct allocation instances", "A lists its allocation 0 twice"),
    ({"participant": [0, 1, 2, 2, 4]}, "exact coverage", "A instance 2 and B instance 3 share participant 2 at time 0"),
    ({"participant": [0, 1, 2, 3, 5]}, "target containment", "B instance 4 runs on participant 5"),
    ({"time": [0, 0, 0, 0, -1]}, "target containment", "at time -1"),
    ({"member": [0, 0, 0, 1, 2]}, "well-typed witness", "member[4] = 2 names no member"),
    ({"time": [0, 0]}, "well-typed witness", "time has 2 entries; expected 5"),
    ({"participant": "01234"}, "well-typed witness", "participant must be a 1-D array of integers"),
    ({"workers": -1}, "well-typed witness", "workers must be a nonnegative integer"),
])
def test_a_broken_identity_is_named(change, obligation, words):
    v = two_programs(**change)
    assert v.obligation == obligation and words in v.detail, v


fields = st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=3), st.floats(),
                   st.lists(st.one_of(st.integers(-2, 6), st.floats(), st.none()), max_size=6),
                   st.lists(st.lists(st.integers(0, 3), max_size=2), max_size=3))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.fixed_dictionaries({k: fields for k in ("member", "participant", "time", "context", "alloc_member",
                                                   "alloc_name", "alloc_instance")}), st.one_of(st.integers(-2, 8), fields))
def test_untrusted_fields_give_a_verdict_never_an_exception(w, workers):
    v = check_shared_group(SharedGroupWitness(workers=workers, **w))
    assert v.admitted or v.obligation


def test_a_cohort_is_a_shared_group():
    w = cohort_witness([5, 2, 9], {0: [1, 2], 3: [4]})
    assert check_shared_group(w)
    assert list(w.context) == [5, 2, 9] and w.workers == 12
    assert check_cohorts(10, [([5, 2, 9], {0: [1]}), ([0, 1, 3, 4, 6, 7, 8], {})])
    v = check_cohorts(10, [([5, 2, 9], {}), ([0, 1, 3, 4, 6, 7, 8, 2], {})])
    assert v.obligation == "exact coverage" and "machine 2 is placed twice" in v.detail
    v = check_cohorts(10, [([5, 2, 9], {})], alone=[0, 1, 3, 4, 6, 7])
    assert v.obligation == "exact coverage" and "machine 8 is in no cohort" in v.detail
    v = check_cohorts(3, [([0, 1, 1], {})])
    assert v.obligation == "exact coverage"


def test_the_batch_engine_cohorts_are_admitted():
    ms = []
    for k in range(5):
        m = Machine()
        m.write_tile(0, 1, "FP32" if k % 2 else "S32", np.zeros((2, 4), np.uint32))
        ms.append(m)
    b = MachineBatch(ms)
    cohorts = [(c.ids, {p: list(c.slots[p]) for p in range(4)}) for c in b._cohorts]
    assert len(cohorts) == 2
    assert check_cohorts(5, cohorts, b._host)


def test_a_grouping_that_would_merge_two_machines_identities_is_refused():
    """"Multiple logical programs may share a group; their virtual context and allocation-instance
    identities must remain distinct": a cohort that stacks machine 2 in two rows gives both rows
    one virtual context (and each of its tiles two rows of the stacked arrays), so the grouping is
    refused -- and so is a cohort whose tile table names one (PE, tile) allocation twice."""
    v = check_shared_group(cohort_witness([5, 2, 2], {0: [1]}))
    assert v.obligation == "distinct virtual contexts" and "machine 2 and machine 2 share virtual context 2" in v.detail
    v = check_cohorts(6, [([5, 2, 2], {0: [1]}), ([0, 1, 3, 4], {})])
    assert not v and v.obligation == "exact coverage" and "machine 2 is placed twice" in v.detail
    v = check_cohorts(3, [([0, 1, 2], {0: [1, 1]})])
    assert not v and v.obligation == "distinct allocation instances"
    assert "cohort 0: machine 0 lists its allocation 1 twice" in v.detail


def _machine(k):
    m = Machine()
    m.write_tile(0, 65536, "S32", np.full((2, 4), k, np.uint32))
    m.write_tile(1, 0, "S32", np.full((2, 4), 10 + k, np.uint32))
    m.write_tile(3, (1 << 32) - 1, "S32", np.full((2, 4), 20 + k, np.uint32))
    return m


def test_the_batch_engine_refuses_a_grouping_that_merges_identities():
    b = MachineBatch([_machine(k) for k in range(3)])
    assert len(b._cohorts) == 1
    b._cohorts[0].ids = np.array([0, 1, 1])        # row 2 would run as machine 1: machine 2 is lost
    with pytest.raises(RuntimeError, match="exact coverage: machine 1 is placed twice"):
        b._build({})                               # the check every grouping passes before it runs


def test_every_tile_id_a_machine_may_hold_is_its_own_allocation_instance():
    """Tile ids are [0, 2^32): PE 0's tile 65536 and PE 1's tile 0 are two allocations (the cohort
    witness once named both 65536 and refused to batch such machines)."""
    b = MachineBatch([_machine(k) for k in range(3)])
    cohorts = [(c.ids, {p: list(c.slots[p]) for p in range(4)}) for c in b._cohorts]
    assert len(cohorts) == 1 and check_cohorts(3, cohorts, b._host)
    for k in range(3):
        m = b.machine(k)
        assert [int(m.read_tile(pe, t).bits[0, 0]) for pe, t in ((0, 65536), (1, 0), (3, (1 << 32) - 1))] == \
            [k, 10 + k, 20 + k]
