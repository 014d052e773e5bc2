"""The gpu backend's array code against a strict CuPy stand-in (tests/strict_device.py): arrays
that refuse implicit host conversion and host/device mixing as CuPy does on a real device, and
count every transfer.

The stand-in's own rules are checked here; then the gpu tests (the batch and fusion
differential tests, Machine(backend="gpu"), the device status path) and strict_cases.py (every
element-wise operation and conversion on device arrays; a stream of every instruction that
moves no tile payload to the host) run again in a subprocess under the CUDA simulator
(NUMBA_ENABLE_CUDASIM=1 must be set before numba.cuda is first imported), on the stand-in,
Numba-CUDA kernels included."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))
import strict_device as xp  # noqa: E402

HERE = pathlib.Path(__file__).parent
GPU_TESTS = [
    f"{HERE / 'strict_cases.py'}",
    f"{HERE / 'test_batch_differential.py'}::test_the_engine_on_a_device_array_module_matches_the_reference",
    f"{HERE / 'test_batch_differential.py'}::test_selection_and_img2col_on_a_batch_match_the_reference",
    f"{HERE / 'test_batch_differential.py'}::test_sources_whose_tiles_differ_in_geometry_per_pe_match_the_reference",
    f"{HERE / 'test_fusion.py'}::test_a_fused_run_on_a_device_array_module_matches_the_reference",
    f"{HERE / 'test_machine_backend.py'}::test_a_machine_on_the_device_path_runs_a_stream_exactly_as_the_reference",
    f"{HERE / 'test_batch.py'}::test_the_device_path_of_the_engine_matches_the_reference",
    f"{HERE / 'test_batch.py'}::test_status_flags_on_the_device_path_match_the_reference",
    f"{HERE / 'test_profile_plumbing.py'}::test_machine_batch_takes_a_profile_on_the_gpu_backend",
]


def test_a_device_array_refuses_implicit_conversion_to_numpy():
    a = xp.asarray(np.arange(4, dtype=np.uint8))
    for convert in (np.asarray, np.array, lambda x: np.ascontiguousarray(np.zeros(4)) + np.asarray(x)):
        with pytest.raises(TypeError, match="Implicit conversion"):
            convert(a)
    with pytest.raises(TypeError):
        np.zeros(4, np.uint8)[a]                    # a host array indexed by device indices


def test_a_device_array_refuses_to_mix_with_host_arrays_in_operations():
    a = xp.asarray(np.arange(4, dtype=np.uint8))
    host = np.ones(4, np.uint8)
    for mixed in (lambda: a + host, lambda: host + a, lambda: np.where(a > 1, a, host),
                  lambda: np.concatenate([a, host]), lambda: xp.maximum(a, host),
                  lambda: a - np.zeros((), np.uint8),      # CuPy takes no 0-d NumPy array either
                  lambda: a.__setitem__(slice(1, 3), host[:2])):   # nor one assigned into a slice
        with pytest.raises(TypeError, match="Unsupported type"):
            mixed()
    # Python and NumPy scalars are scalars, as in CuPy's kernels; the results stay on the device
    for ok in (a + np.uint8(1), a + 1, np.where(a > 1, a, np.uint8(7)), a[1:]):
        assert isinstance(ok, xp.ndarray)


def test_transfers_are_counted():
    xp.TRANSFERS.reset()
    a = xp.asarray(np.arange(6, dtype=np.uint16))       # host -> device
    b = (a * 2)[xp.asarray(np.array([1, 3]))]            # device only
    assert xp.TRANSFERS.to_host == 0 and xp.TRANSFERS.to_device == 2
    assert xp.asnumpy(b).tolist() == [2, 6] and xp.TRANSFERS.to_host == 1 and xp.TRANSFERS.to_host_bytes == 4
    assert int(b[0]) == 2 and bool((b > 1).all()) and xp.TRANSFERS.scalar_reads == 2
    assert isinstance(b[0], xp.ndarray) and b[0].shape == ()    # one element is a 0-d device array


def test_the_gpu_tests_pass_on_the_strict_stand_in_under_the_cuda_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONWARNINGS="ignore")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *GPU_TESTS],
                       env=env, capture_output=True, text=True, timeout=900, cwd=HERE.parents[1])
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert " passed" in r.stdout and "skipped" not in r.stdout.splitlines()[-1], r.stdout[-2000:]
