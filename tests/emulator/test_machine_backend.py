"""Machine(backend=...): one machine on the batched engine gives exactly what the reference
gives (every BlockResult, the StreamError, the final state); MachineBatch.tile_arrays hands out
the engine's own storage without a copy (DLPack on NumPy; CuPy's __cuda_array_interface__ on
the gpu backend)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emu_helpers import blk
from emulator import Machine, MachineBatch
from emulator.backends import BackendError, gpu_status
from isa import encoding
from isa.errors import EncodeError, IllegalBlockException
from test_batch_differential import CONFIG, blocks, device_stand_in, error_key, machine


def assert_backend_matches_reference(m: Machine, stream, backend: str):
    on = m.copy(backend=backend)
    ref = m.copy()
    got, want = on.run(stream), ref.run(stream)
    assert got.results == want.results
    assert error_key(got.error) == error_key(want.error)
    assert on.digest() == ref.digest()
    assert on.backend == backend and ref.backend == "reference"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.lists(blocks(), min_size=1, max_size=6), st.booleans())
def test_a_machine_on_the_cpu_backend_runs_a_stream_exactly_as_the_reference(seed, stream, as_bytes):
    if as_bytes:
        try:
            stream = encoding.encode(stream)
        except EncodeError:
            pass
    assert_backend_matches_reference(machine(seed), stream, "cpu")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.lists(blocks(), min_size=1, max_size=4))
def test_a_machine_on_the_device_path_runs_a_stream_exactly_as_the_reference(seed, stream):
    with device_stand_in():
        assert_backend_matches_reference(machine(seed), stream, "gpu")


def test_execute_on_a_backend_raises_the_reference_exception_and_changes_nothing():
    m = machine(7).copy(backend="cpu")
    before = m.digest()
    bad = blk("TADD", "FP32", [1, 42], 11, mask=15, vc=4, vr=2)       # tile 42 exists nowhere
    with pytest.raises(IllegalBlockException) as got:
        m.execute(bad)
    with pytest.raises(IllegalBlockException) as want:
        machine(7).execute(bad)
    assert (got.value.reason, got.value.field, str(got.value)) == \
           (want.value.reason, want.value.field, str(want.value))
    assert m.digest() == before
    good = blk("TADD", "S32", [2, 2], 11, mask=15, vc=4, vr=2)
    ref = machine(7)
    assert m.execute(good) == ref.execute(good) and m.digest() == ref.digest()


def test_unknown_and_unusable_backends_are_one_line_errors():
    with pytest.raises(BackendError, match="unknown backend 'tpu'; choose one of reference, cpu, gpu, auto"):
        Machine(CONFIG, backend="tpu")
    if not gpu_status()[0]:
        with pytest.raises(BackendError, match="no usable GPU"):
            Machine(CONFIG, backend="gpu")
        assert Machine(CONFIG, backend="auto").backend == "cpu"
        assert "auto: no usable GPU" in Machine(CONFIG, backend="auto").why


def test_a_copy_keeps_its_backend_unless_told_otherwise():
    m = Machine(CONFIG, backend="cpu")
    assert m.copy().backend == "cpu" and m.copy(backend="reference").backend == "reference"


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_a_machine_pickles_with_its_state_and_backend_and_runs_on_after_loading(backend):
    import pickle
    good = blk("TADD", "S32", [2, 2], 11, mask=15, vc=4, vr=2)
    m = machine(7).copy(backend=backend)
    m.execute(good)                           # the cpu engine now keeps this block's plan
    back = pickle.loads(pickle.dumps(m))
    assert back.backend == backend and back.why == m.why and back.digest() == m.digest()
    assert back.execute(good) == m.execute(good) and back.digest() == m.digest()


# ---------------------------------------------------------------- tile_arrays: no copy

def test_tile_arrays_are_the_engines_own_storage_and_speak_dlpack():
    machines = [machine(s) for s in (1, 2, 3)]
    batch = MachineBatch(machines, "cpu")
    stream = [blk("TADD", "S32", [2, 2], 11, mask=15, vc=4, vr=2)]
    assert batch.run(stream).ok
    groups = batch.tile_arrays(1, 11)
    assert sorted(int(k) for ids, *_ in groups for k in ids) == [0, 1, 2]
    for ids, desc, elems, defined in groups:
        cohort = next(c for c in batch._cohorts if set(c.ids) == set(ids))
        slot = cohort.slots[1][11]
        assert np.shares_memory(elems, slot.elems) and np.shares_memory(defined, slot.defined)
        assert not elems.flags.writeable and not defined.flags.writeable
        via = np.from_dlpack(elems)
        assert np.shares_memory(via, elems) and np.array_equal(via, elems)
        for j, k in enumerate(ids):
            assert np.array_equal(elems[j], batch.machine(int(k))._pes[1].tiles[11].elems)
    # the host copies the golden generator reads are the same values
    for (ids, d, e, f), (ids2, d2, e2, f2) in zip(groups, batch.stacks(1, 11)):
        assert np.array_equal(ids, ids2) and d == d2 and np.array_equal(e, e2) and np.array_equal(f, f2)


def test_tile_arrays_stay_valid_as_later_blocks_replace_the_tile():
    batch = MachineBatch([machine(s) for s in (4, 5)], "cpu")
    batch.run([blk("TADD", "S32", [2, 2], 11, mask=15, vc=4, vr=2)])
    held = batch.tile_arrays(0, 11)
    values = [(e.copy(), f.copy()) for _, _, e, f in held]
    assert batch.run([blk("TADD", "S32", [11, 11], 11, mask=15, vc=4, vr=2)]).ok
    for (_, _, e, f), (e0, f0) in zip(held, values):
        assert np.array_equal(e, e0) and np.array_equal(f, f0)          # never written in place
    assert not any(np.array_equal(e, e0) for (_, _, e, _), (e0, _) in zip(batch.tile_arrays(0, 11), values))


def test_tile_arrays_of_a_missing_tile_or_bad_pe():
    batch = MachineBatch([machine(1)], "cpu")
    assert batch.tile_arrays(0, 99) == []
    with pytest.raises(ValueError, match="PE 4 out of range"):
        batch.tile_arrays(4, 1)
