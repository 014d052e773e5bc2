"""Cliff on special values: numeric.elementwise at 256 and 2^20 elements, 0 / 1 / every-7th
element a NaN (random payload), per op and DataType. Usage: PYTHONPATH=<tree> python benchmarks/bench_special_cliff.py [OP.FMT ...]
(docs/performance.md, "Special values")."""
import sys, time
import numpy as np
from kernels import numeric
import kernels
print("tree:", kernels.__file__, file=sys.stderr)

CASES = [("TADD", "FP32"), ("TMUL", "FP32"), ("TFMA", "FP32"), ("TDIV", "FP32"), ("TSQRT", "FP32"),
         ("TADD", "FP16"), ("TMUL", "FP16"), ("TFMA", "FP16"), ("TDIV", "FP16"), ("TSQRT", "FP16"),
         ("TADD", "BF16"), ("TMUL", "BF16"), ("TFMA", "BF16"), ("TDIV", "BF16"),
         ("TADD", "FP64"), ("TMUL", "FP64"), ("TFMA", "FP64"), ("TDIV", "FP64"), ("TSQRT", "FP64")]
if len(sys.argv) > 1:
    CASES = [c for c in CASES if f"{c[0]}.{c[1]}" in sys.argv[1:]]
ARITY = {"TFMA": 3, "TSQRT": 1}
RAW = {"FP32": (np.float32, np.uint32), "FP16": (np.float16, np.uint16), "FP64": (np.float64, np.uint64)}


def operands(op, fmt, n, arity, rng):
    out = []
    for k in range(arity):
        x = np.abs(rng.standard_normal(n)) + 0.5 if op == "TSQRT" else rng.standard_normal(n)
        if fmt == "BF16":
            out.append((x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16))
        else:
            f, u = RAW[fmt]
            out.append(x.astype(f).view(u).copy())
    return out


def nan_codes(fmt, m, rng):
    w = {"FP32": 32, "FP16": 16, "BF16": 16, "FP64": 64}[fmt]
    t = {"FP32": 23, "FP16": 10, "BF16": 7, "FP64": 52}[fmt]
    top = ((1 << (w - 1 - t)) - 1) << t
    pay = rng.integers(1, 1 << min(t, 62), m, dtype=np.int64).astype(np.uint64)
    u = RAW.get(fmt, (None, np.uint16))[1]
    return (np.uint64(top) | pay).astype(u)


def best(fn, n):
    fn()
    t0 = time.perf_counter(); fn(); one = time.perf_counter() - t0
    reps = max(1, int(0.04 / max(one, 1e-7)))
    t = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        t.append((time.perf_counter() - t0) / reps)
    return min(t)


rng = np.random.default_rng(5)
print(f"{'case':14} {'n':>8} {'normal':>10} {'1 NaN':>10} {'1/7 NaN':>10}   (us per call; ratio = t/t_normal)")
for op, fmt in CASES:
    for n in (256, 1 << 20):
        base = operands(op, fmt, n, ARITY.get(op, 2), rng)
        one = [b.copy() for b in base]
        one[0][n // 2] = nan_codes(fmt, 1, rng)[0]
        sev = [b.copy() for b in base]
        sev[0][::7] = nan_codes(fmt, sev[0][::7].size, rng)
        with np.errstate(all="ignore"):
            ts = [best(lambda ops=ops: numeric.elementwise(op, fmt, *ops), n) for ops in (base, one, sev)]
        print(f"{op + '.' + fmt:14} {n:>8} {ts[0]*1e6:>10.1f} {ts[1]*1e6:>10.1f} {ts[2]*1e6:>10.1f}   "
              f"x{ts[1]/ts[0]:.2f} x{ts[2]/ts[0]:.2f}", flush=True)
