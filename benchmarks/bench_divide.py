"""Throughput of the compiled TDIV/TRECIP/TSQRT (fastdiv.py), FP64 arithmetic and functions
(fast64.py) and TRSQRT/TLOG/TREM (fastfn.py) against the NumPy reference path they replace and
against NumPy's own operation.

    NUMBA_NUM_THREADS=1 python benchmarks/bench_divide.py          # a table, about a minute
    python -m pytest benchmarks/bench_divide.py -q --benchmark-only -s

2^20 elements of typical data (normal(0, 1); |normal| for square roots and logarithms), timed like `tile-emu
bench` (untimed warm-up, then the minimum of repeated single calls).  Columns: ours (numeric.
elementwise), the reference path (the NumPy code elementwise ran for these ops before, in the
same cache-sized chunks), NumPy's float32/float64 operation (not a bit-exact emulation: no
flags, and for FP16/BF16 not the format at all), in M elements/s, and the ratios.
"""
import importlib
import timeit

import numpy as np
import pytest

from isa.datatypes import datatype
from kernels import numeric
from kernels.numeric.profiles import PROFILES

N = 1 << 20
elementwise = importlib.import_module("kernels.numeric.elementwise")    # the package re-exports a function of that name
CASES = [("TDIV", "FP32"), ("TRECIP", "FP32"), ("TSQRT", "FP32"), ("TDIV", "TF32"), ("TDIV", "BF16"),
         ("TDIV", "FP16"), ("TADD", "FP64"), ("TMUL", "FP64"), ("TDIV", "FP64"), ("TSQRT", "FP64"), ("TFMA", "FP64"), ("TRSQRT", "FP32"), ("TRSQRT", "TF32"),
         ("TLOG", "FP32"), ("TLOG", "HF32"), ("TREM", "FP32"), ("TREM", "BF16"), ("TREM", "FP64"),
         ("TRSQRT", "FP64"), ("TEXP", "FP64"), ("TLOG", "FP64")]
# NumPy has no fused multiply-add: TFMA's baseline is a*b + c, two roundings
NUMPY = {"TDIV": np.divide, "TRECIP": lambda x: 1 / x, "TSQRT": np.sqrt, "TADD": np.add, "TMUL": np.multiply,
         "TFMA": lambda a, b, c: a * b + c, "TRSQRT": lambda x: 1 / np.sqrt(x),
         "TREM": np.mod, "TLOG": np.log, "TEXP": np.exp}
ARITY = {"TDIV": 2, "TADD": 2, "TMUL": 2, "TFMA": 3, "TREM": 2}


def operands(op, name, n=N, seed=0):
    rng = np.random.default_rng(seed)
    k = ARITY.get(op, 1)
    v = [rng.standard_normal(n) for _ in range(k)]
    if op in ("TSQRT", "TRSQRT", "TLOG"):
        v = [np.abs(x) for x in v]
    if name == "FP64":
        return [x.view(np.uint64) for x in v], v
    f32 = [x.astype(np.float32) for x in v]
    if name == "FP16":
        f16 = [x.astype(np.float16) for x in v]
        return [x.view(np.uint16) for x in f16], f16
    bits = [x.view(np.uint32) for x in f32]
    if name == "BF16":
        return [(b >> np.uint32(16)).astype(np.uint16) for b in bits], f32
    if name == "TF32":
        bits = [b & np.uint32(0xFFFFE000) for b in bits]
    return bits, f32


def runners(op, name):
    ops, vals = operands(op, name)
    dt, prof, ref = datatype(name), PROFILES["ieee"], elementwise.REFERENCE[op]
    return {"ours": lambda: numeric.elementwise(op, name, *ops),
            "reference": lambda: elementwise._chunked(ref, dt, tuple(ops), prof=prof),
            "numpy": lambda: NUMPY[op](*vals)}


def best(fn, repeat=5):
    with np.errstate(all="ignore"):
        fn()
        fn()
        return min(timeit.repeat(fn, number=1, repeat=repeat))


def table():
    print(f"{'case':<14}{'ours':>9}{'reference':>11}{'numpy':>9}{'x ref':>8}{'x numpy':>9}   (M elem/s, 2^20 elements)")
    for op, name in CASES:
        t = {k: best(fn) for k, fn in runners(op, name).items()}
        m = {k: N / v / 1e6 for k, v in t.items()}
        print(f"{op + ' ' + name:<14}{m['ours']:>9.0f}{m['reference']:>11.0f}{m['numpy']:>9.0f}"
              f"{t['reference'] / t['ours']:>8.1f}{t['numpy'] / t['ours']:>9.2f}")


@pytest.mark.parametrize("op,name", CASES, ids=[f"{o}.{n}" for o, n in CASES])
def test_divide(benchmark, op, name):
    r = runners(op, name)
    t_ref, t_np = best(r["reference"]), best(r["numpy"])
    with np.errstate(all="ignore"):
        benchmark.pedantic(r["ours"], rounds=7, iterations=1, warmup_rounds=2)
    t = benchmark.stats.stats.min
    benchmark.extra_info.update(Melem_s=round(N / t / 1e6, 1), reference_ratio=round(t_ref / t, 2),
                                numpy_ratio=round(t_np / t, 2))


if __name__ == "__main__":
    table()
