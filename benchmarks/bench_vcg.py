"""VCG-tagged intra-slice reduce throughput against a plain NumPy masked reduction, same run.

    python -m pytest benchmarks/bench_vcg.py -q --benchmark-only

Batch: 65536 slices x 64 time steps of 8-way flits (4 Mi flits, 128 MiB of int32 / float32).
Two placements: R in Time and Packet (lanes tree-reduced, `packet`) and R in Time only (each
lane its own output, `lanes`).  The baseline is what a NumPy user would write without the VCG
contract: np.where(lane < valid, x, 0).sum(...) over the same narrowed view (no per-step
saturation, NumPy's pairwise float order).  extra_info: flits/s of both and
ratio = baseline time / backend time (> 1: the backend is faster).

float16/bfloat16 Add (`test_16bit_reduce_numba_against_numpy`): the Numba backend (`tile-emu
reduce`'s default) against the NumPy backend on the same flits -- the same bits, so the ratio
is the whole story (docs/performance.md; `tile-emu bench --case vcg` runs the same comparison).
"""
import timeit

import numpy as np
import pytest

from fabric.vcg import Mapping, compile_vcg, plan_reduce, reduce_flits, valid_size_matrix
from fabric.vcg.fold import BF16

SLICES, STEPS = 1 << 16, 64
PLACEMENTS = {
    "packet": ("X = {slices}, R = 250", "X", "R # 256 / 4", "R # 256 % 4 # 8"),
    "lanes": ("X = {slices}, A = 4, R = 60", "X", "R # 64", "A # 8"),
}
CASES = [("int32", "AddSat"), ("float32", "Add")]
_DATA: dict = {}


def _batch(placement, dtype, slices=SLICES):
    key = (placement, dtype, slices)
    if key not in _DATA:
        axes, *dims = PLACEMENTS[placement]
        m = Mapping.parse(axes.format(slices=slices), *dims)
        assert (m.num_slices, m.num_steps) == (slices, STEPS)
        vs = valid_size_matrix(compile_vcg(m, "R"), slices, STEPS).reshape(-1)
        rng = np.random.default_rng(0)
        if dtype == "int32":
            x8 = rng.integers(-1000, 1000, (slices * STEPS, 8), dtype=np.int32)
        else:
            x8 = rng.standard_normal((slices * STEPS, 8)).astype(np.float32).astype(dtype)
        _DATA[key] = (m, vs, x8, plan_reduce(m, "R", "trim"))
    return _DATA[key]


def _baseline(x8, vs, r_in_packet):
    x4 = x8.reshape(-1, STEPS, 8)[..., :4]
    mask = np.arange(4) < np.minimum(vs.reshape(-1, STEPS), 4)[..., None]
    kept = np.where(mask, x4, 0)
    return kept.sum(axis=(1, 2)) if r_in_packet else kept.sum(axis=1)


def _measure(benchmark, args, t_base, base_key, label, base_label):
    """Time reduce_flits(*args) and record and print its flit rate against `t_base` (the
    baseline timed in the same run): extra_info's `<base_key>_Mflits_s` and ratio."""
    benchmark.pedantic(reduce_flits, args=args, rounds=3, iterations=1)
    t = benchmark.stats.stats.min
    flits = SLICES * STEPS
    benchmark.extra_info.update({"flits": flits, "Mflits_s": round(flits / t / 1e6, 2),
                                 f"{base_key}_Mflits_s": round(flits / t_base / 1e6, 2),
                                 "ratio": round(t_base / t, 2)})
    print(f"\n{label}: {flits / t / 1e6:.1f} M flits/s, "
          f"{base_label} {flits / t_base / 1e6:.1f} M flits/s, ratio {t_base / t:.2f}")


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("dtype,op", CASES)
@pytest.mark.parametrize("placement", list(PLACEMENTS))
def test_reduce_throughput(benchmark, placement, dtype, op, backend):
    m, vs, x8, plan = _batch(placement, dtype)
    reduce_flits(x8, vs, plan, op, backend)                       # compile / warm caches
    t_base = min(timeit.repeat(lambda: _baseline(x8, vs, plan.r_in_packet), number=1, repeat=3))
    _measure(benchmark, (x8, vs, plan, op, backend), t_base, "baseline",
             f"{placement} {dtype} {op} {backend}", "NumPy masked sum")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("placement", list(PLACEMENTS))
def test_16bit_reduce_numba_against_numpy(benchmark, placement, dtype):
    m, vs, x8, plan = _batch(placement, np.dtype(dtype) if dtype == "float16" else BF16)
    for backend in ("numpy", "numba"):                            # compile / warm caches
        reduce_flits(x8, vs, plan, "Add", backend)
    t_np = min(timeit.repeat(lambda: reduce_flits(x8, vs, plan, "Add", "numpy"), number=1, repeat=3))
    _measure(benchmark, (x8, vs, plan, "Add", "numba"), t_np, "numpy", f"{placement} {dtype} Add numba",
             "numpy backend")
