"""MachineBatch(detach_stopped=False): a machine a block rejects stays stacked in the engine,
its state no longer advanced, instead of being detached into a host Machine
(emulator/batch.py, MachineBatch.__init__; docs/machine.md, "Batches").  Everything a caller can
observe -- executed counts, StreamErrors, states, statuses, tile arrays, commit and fault
records, a second stream -- is what the reference (and the default batch) gives."""
import numpy as np
import pytest
from emu_helpers import blk
from hypothesis import HealthCheck, given, settings, strategies as st
from test_batch import STREAM, s32_machine
from test_batch_differential import blocks, error_key, machine

from emulator import MachineBatch, batch as B
from emulator.commitlog import Collector


def reference(machines, *streams):
    """Each machine alone on the reference: (its results of the last stream, the machines)."""
    alone = [m.copy() for m in machines]
    results = [[a.run(s) for s in streams][-1] for a in alone]
    return results, alone


def assert_matches_reference(batch, result, machines, *streams):
    results, alone = reference(machines, *streams)
    for k, (ref, a) in enumerate(zip(results, alone)):
        assert result.executed[k] == ref.executed, f"machine {k}"
        assert error_key(result.errors[k]) == error_key(ref.error), f"machine {k}"
        assert batch.machine(k).digest() == alone[k].digest(), f"machine {k}"
        assert list(batch.statuses()[k]) == [pe.status for pe in a.pes], f"machine {k}"


def logged(machines, stream, fuse=False, **options):
    log = Collector()
    batch = MachineBatch(machines, "cpu", **options)
    result = batch.run(stream, log=log, fuse=fuse)
    return batch, result, log.table()


@pytest.fixture
def materialized(monkeypatch):
    """How many cohort members were turned into host Machines."""
    calls = []
    real = B.Cohort.machine
    monkeypatch.setattr(B.Cohort, "machine", lambda self, j: calls.append(j) or real(self, j))
    return calls


def test_the_default_detaches_stopped_machines_as_before():
    assert MachineBatch([s32_machine(1)], "cpu").detach_stopped is True
    assert MachineBatch.from_stacks(MachineBatch([s32_machine(1)]).config, 1, {}).detach_stopped is True


def test_a_descriptor_fault_stops_the_cohort_without_materializing_a_machine(materialized):
    bad = blk("TADD", "S32", [1, 9], 3, mask=15, vr=2)              # tile 9 is absent: SOURCE_MISSING
    machines = [s32_machine(d) for d in (1, 2, 3)]
    stream = [STREAM[0], bad, STREAM[1]]
    batch, result, records = logged(machines, stream, detach_stopped=False)
    assert materialized == []
    assert result.executed == [1, 1, 1] and {e.reason for e in result.errors} == {"SOURCE_MISSING"}
    assert records.equals(logged(machines, stream)[2])
    assert_matches_reference(batch, result, machines, stream)


def test_a_stateless_rejection_stops_every_machine_without_materializing_one(materialized):
    bad = blk("TADD", "S32", [1, 2], 3, mask=15, vr=2, dim=None)   # no B.DIM
    machines = [s32_machine(1), s32_machine(2)]
    stream = [STREAM[0], bad, STREAM[1]]
    batch, result, records = logged(machines, stream, detach_stopped=False)
    assert materialized == []
    assert result.executed == [1, 1] and {e.index for e in result.errors} == {1}
    assert records.equals(logged(machines, stream)[2])
    assert_matches_reference(batch, result, machines, stream)


def test_an_element_fault_on_some_members_leaves_the_others_running():
    machines = [s32_machine(0 if k in (2, 5) else 1 + k % 3) for k in range(8)]   # 2 and 5 divide by zero
    batch, result, records = logged(machines, STREAM, detach_stopped=False)
    assert result.faulted == [2, 5]
    assert records.equals(logged(machines, STREAM)[2])
    assert_matches_reference(batch, result, machines, STREAM)


def test_the_stopped_members_tiles_are_read_where_the_engine_keeps_them():
    bad = blk("TADD", "S32", [1, 9], 3, mask=15, vr=2)
    machines = [s32_machine(d) for d in (1, 2)]
    batch = MachineBatch(machines, "cpu", detach_stopped=False)
    batch.run([STREAM[0], bad])
    _, alone = reference(machines, [STREAM[0]])
    for p in range(4):
        (ids, desc, elems, defined), = batch.tile_arrays(p, 3)
        for j, k in enumerate(ids):
            t = alone[k].store(p)[3]
            assert desc == t.desc
            assert np.array_equal(elems[j], t.elems) and np.array_equal(defined[j], t.defined)


def test_a_second_stream_starts_the_stopped_machines_again():
    bad = blk("TADD", "S32", [1, 9], 3, mask=15, vr=2)
    machines = [s32_machine(d) for d in (1, 0, 3)]
    batch = MachineBatch(machines, "cpu", detach_stopped=False)
    first = [STREAM[0], bad]
    batch.run(first)
    result = batch.run(STREAM)
    assert result.faulted == [1]
    assert_matches_reference(batch, result, machines, first, STREAM)


def test_a_stepped_stream_gives_the_default_records():
    machines = [s32_machine(d) for d in (1, 0, 3)]
    bad = blk("TADD", "S32", [1, 9], 3, mask=15, vr=2)
    stream = [STREAM[0], STREAM[1], bad, STREAM[2]]
    kept = MachineBatch(machines, "cpu", detach_stopped=False)
    default = MachineBatch(machines, "cpu")
    for block in stream:
        a, b = kept.step(block), default.step(block)
        assert a.to_batch().equals(b.to_batch())
    assert [error_key(e) for e in kept.step_errors()] == [error_key(e) for e in default.step_errors()]
    for k in range(len(machines)):
        assert kept.machine(k).digest() == default.machine(k).digest()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=5), st.lists(blocks(), min_size=1, max_size=5),
       st.lists(blocks(), min_size=1, max_size=3))
def test_random_streams_end_where_each_machine_ends_alone_on_the_reference(seeds, first, second):
    machines = [machine(s) for s in seeds]
    batch, result, records = logged(machines, first, detach_stopped=False)
    assert records.equals(logged(machines, first)[2])
    assert_matches_reference(batch, result, machines, first)
    assert_matches_reference(batch, batch.run(second), machines, first, second)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=4), st.lists(blocks(), min_size=2, max_size=6))
def test_fused_random_streams_stop_where_the_default_stops(seeds, stream):
    machines = [machine(s) for s in seeds]
    batch, result, records = logged(machines, stream, fuse=True, detach_stopped=False)
    assert records.equals(logged(machines, stream, fuse=True)[2])
    assert_matches_reference(batch, result, machines, stream)
