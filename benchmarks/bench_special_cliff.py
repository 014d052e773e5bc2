"""Cliff on special values: numeric.elementwise at 256 and 2^20 elements, 0 / 1 / every-7th
element a NaN (random payload), per op and DataType. Usage: PYTHONPATH=<tree> python benchmarks/bench_special_cliff.py [--cpu] [OP.FMT ...]
(--cpu: process CPU time, median of 11 alternating rounds: the reading that a loaded machine
leaves meaningful; without it, wall time, best of 5)
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
PICK = [a for a in sys.argv[1:] if not a.startswith("--")]
if PICK:
    CASES = [c for c in CASES if f"{c[0]}.{c[1]}" in PICK]
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


CLOCK = time.process_time if "--cpu" in sys.argv else time.perf_counter


def interleaved(fns):
    """Per call of each of fns, the best (wall) or median (--cpu) of 5-11 timed rounds, the
    variants alternating within every round in reversed order every other round: a
    machine-load change then hits every variant alike instead of the one timed last."""
    for fn in fns:
        fn()
    t0 = time.perf_counter(); fns[0](); one = time.perf_counter() - t0
    reps = max(1, int(0.04 / max(one, 1e-7)))
    t = [[] for _ in fns]
    for r in range(11 if CLOCK is time.process_time else 5):
        for i in (range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))):
            t0 = CLOCK()
            for _ in range(reps):
                fns[i]()
            t[i].append((CLOCK() - t0) / reps)
    return [float(np.median(x)) if CLOCK is time.process_time else min(x) for x in t]


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
            ts = interleaved([lambda ops=ops: numeric.elementwise(op, fmt, *ops) for ops in (base, one, sev)])
        print(f"{op + '.' + fmt:14} {n:>8} {ts[0]*1e6:>10.1f} {ts[1]*1e6:>10.1f} {ts[2]*1e6:>10.1f}   "
              f"x{ts[1]/ts[0]:.2f} x{ts[2]/ts[0]:.2f}", flush=True)
