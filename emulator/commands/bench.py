"""`tile-emu bench`: throughput of named cases against a plain-library baseline, same run.

    tile-emu bench                      # every case, 2^20 elements, best of 7
    tile-emu bench --quick              # smoke run: 2^14 elements, best of 2
    tile-emu bench --case numeric.TADD  # cases whose name starts with a prefix (repeatable)
    tile-emu bench --list | --json
    tile-emu bench --backend gpu        # the same operations on CuPy arrays, vs. device copy bandwidth

A case is one row of CASES: a name, what the baseline is, an optional target ratio, and a setup
function n -> (ours, baseline), two zero-argument callables doing the same work on n elements.
The table reports elements/s of both and ratio = baseline time / our time (> 1: faster).  Other
subsystems add rows to CASES; benchmarks/bench_numeric.py runs the numeric rows under
pytest-benchmark.
"""
from __future__ import annotations

import json
import timeit
from dataclasses import dataclass
from typing import Callable

import numpy as np

from emulator.cli import CommandError


@dataclass(frozen=True)
class Case:
    name: str
    baseline: str                      # what the baseline callable does
    setup: Callable[[int], tuple]      # n -> (ours, baseline)
    target: float | None = None        # minimum ratio the project aims for (informational)
    needs: str | None = None           # optional module the baseline needs (e.g. ml_dtypes)


# ---------------------------------------------------------------- numeric cases

_ML = {"E4M3": "float8_e4m3fn", "BF16": "bfloat16"}
# minimum ratios (issue 9): FP32 TADD/TMUL/TFMA 0.5x NumPy, BF16 TADD/TMUL 1x the ml_dtypes round
# trip (0.5x for TFMA/TEXP), FP16 2x NumPy float16, 8-bit 4x ml_dtypes, FP32 TEXP 0.25x
_TARGET = {"E4M3": 4.0, "BF16": 0.5, "FP16": 2.0}
_TARGET_OP = {("TADD", "BF16"): 1.0, ("TMUL", "BF16"): 1.0, ("TADD", "FP32"): 0.5, ("TMUL", "FP32"): 0.5,
              ("TFMA", "FP32"): 0.5, ("TEXP", "FP32"): 0.25}


def _values(fmt: str, n: int, op: str, seed: int):
    """Typical data: normal(0, 1) values (TEXP: uniform in [-8, 8]) as the format's encodings."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-8, 8, n) if op == "TEXP" else rng.standard_normal(n)
    if fmt in ("FP32", "FP16"):
        return x.astype(np.float32 if fmt == "FP32" else np.float16)
    import ml_dtypes
    return x.astype(np.float32).astype(getattr(ml_dtypes, _ML[fmt]))


def _numeric_case(op: str, fmt: str) -> Case:
    arity = {"TFMA": 3, "TEXP": 1}.get(op, 2)
    plain = {"TADD": lambda a, b: a + b, "TMUL": lambda a, b: a * b,
             "TFMA": lambda a, b, c: a * b + c, "TEXP": np.exp}[op]

    def setup(n: int):
        from kernels import numeric
        vals = [_values(fmt, n, op, seed) for seed in range(arity)]
        bits = [v.view(f"u{v.dtype.itemsize}") for v in vals]
        ours = lambda: numeric.elementwise(op, fmt, *bits)            # noqa: E731
        if fmt in ("FP32", "FP16"):                                    # NumPy's own dtype
            base = lambda: plain(*vals)                                # noqa: E731
        else:                                                          # ml_dtypes round trip
            base = lambda: plain(*(v.astype(np.float32) for v in vals)).astype(vals[0].dtype)  # noqa: E731
        return ours, base

    if fmt in ("FP32", "FP16"):
        np_name = "float32" if fmt == "FP32" else "float16"
        what = f"NumPy {np_name} exp (not correctly rounded)" if op == "TEXP" else \
            f"NumPy {np_name} " + ("a*b+c, two roundings" if op == "TFMA" else op[1:].lower())
    else:
        what = f"ml_dtypes {_ML[fmt]} round trip through float32"
    target = _TARGET_OP.get((op, fmt), _TARGET.get(fmt))
    return Case(f"numeric.{op}.{fmt}", what, setup, target, None if fmt in ("FP32", "FP16") else "ml_dtypes")


CASES: list[Case] = [_numeric_case(op, fmt) for op in ("TADD", "TMUL", "TFMA", "TEXP")
                     for fmt in ("E4M3", "BF16", "FP16", "FP32")]


# ---------------------------------------------------------------- GPU cases (--backend gpu)
# Same operations on CuPy arrays resident on the device.  The baseline is a device-to-device
# copy moving as many bytes as the operation reads and writes, so ratio = the operation's share
# of the copy bandwidth measured in the same run (issue 9 aims at >= 0.6 for FP32/FP16/BF16,
# >= 0.3 for 8-bit formats and TCVT FP32 -> E4M3 with Sat).

def _gpu_case(op: str, fmt: str, target: float) -> Case:
    arity = {"TFMA": 3, "TCVT": 1}.get(op, 2)

    def setup(n: int):
        import cupy
        from kernels import numeric
        src = "FP32" if op == "TCVT" else fmt
        rngs = [np.random.default_rng(seed) for seed in range(arity)]     # our own codec: the GPU
        host = [numeric.encode(r.standard_normal(n), src) for r in rngs]   # machine has no ml_dtypes
        bits = [cupy.asarray(v) for v in host]
        if op == "TCVT":
            run = lambda: numeric.convert(bits[0], "FP32", fmt, sat=True)      # noqa: E731
        else:
            run = lambda: numeric.elementwise(op, fmt, *bits)                  # noqa: E731
        out_b, out_f = run()
        moved = sum(int(b.nbytes) for b in bits) + int(out_b.nbytes) + int(out_f.nbytes)
        a = cupy.empty(moved // 2, cupy.uint8)
        b = cupy.empty_like(a)
        sync = cupy.cuda.Device().synchronize
        return (lambda: (run(), sync())), (lambda: (cupy.copyto(b, a), sync()))

    what = "device-to-device copy of the same bytes (ratio = fraction of copy bandwidth)"
    name = f"gpu.{op}.{fmt}" if op != "TCVT" else f"gpu.TCVT.FP32-{fmt}.sat"
    return Case(name, what, setup, target, "cupy")


GPU_CASES: list[Case] = ([_gpu_case(op, fmt, 0.6) for op in ("TADD", "TMUL", "TFMA") for fmt in ("FP32", "FP16", "BF16")]
                         + [_gpu_case(op, "E4M3", 0.3) for op in ("TADD", "TMUL")]
                         + [_gpu_case("TCVT", "E4M3", 0.3)])


# ---------------------------------------------------------------- runner

def measure(case: Case, n: int, repeat: int) -> dict:
    """Best-of-`repeat` seconds of ours and of the baseline (after one warm-up call each)."""
    ours, base = case.setup(n)
    with np.errstate(all="ignore"):
        ours()
        base()
        t_ours = min(timeit.repeat(ours, number=1, repeat=repeat))
        t_base = min(timeit.repeat(base, number=1, repeat=repeat))
    return {"case": case.name, "elements": n, "elements_per_s": n / t_ours,
            "baseline_elements_per_s": n / t_base, "ratio": t_base / t_ours,
            "target": case.target, "baseline": case.baseline}


def select(prefixes: list[str] | None, cases: list[Case] | None = None) -> list[Case]:
    cases = CASES if cases is None else cases
    if not prefixes:
        return list(cases)
    chosen = [c for c in cases if any(c.name.startswith(p) for p in prefixes)]
    if not chosen:
        raise CommandError(f"no benchmark case starts with {', '.join(prefixes)}; try --list", 2)
    return chosen


def _available(case: Case) -> bool:
    if case.needs is None:
        return True
    try:
        __import__(case.needs)
    except ImportError:
        return False
    return True


def add_arguments(parser):
    parser.add_argument("--quick", action="store_true", help="smoke run: 2^14 elements, best of 2")
    parser.add_argument("--case", action="append", metavar="PREFIX", help="run cases whose name starts with PREFIX")
    parser.add_argument("--n", type=int, help="elements per case (default 2^20; --quick 2^14)")
    parser.add_argument("--repeat", type=int, help="best of this many runs (default 7; --quick 2)")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--json", action="store_true", help="one JSON object per case instead of the table")
    parser.add_argument("--backend", choices=("cpu", "gpu"), default="cpu",
                        help="cpu: NumPy/Numba on the host (default); gpu: CuPy arrays on the device, "
                             "ratios against the device copy bandwidth (default 2^24 elements)")


def _gpu_cases() -> list[Case]:
    from kernels.device import gpu_status
    ok, why = gpu_status()
    if not ok:
        raise CommandError(f"--backend gpu: no usable GPU ({why})", 2)
    return GPU_CASES


def run(args) -> int:
    gpu = getattr(args, "backend", "cpu") == "gpu"
    cases = select(args.case, GPU_CASES if args.list and gpu else (_gpu_cases() if gpu else CASES))
    if args.list:
        for c in cases:
            print(f"{c.name:24} baseline: {c.baseline}" + (f"  (target >= {c.target}x)" if c.target else ""))
        return 0
    n = args.n if args.n is not None else (1 << 14 if args.quick else 1 << (24 if gpu else 20))
    repeat = args.repeat if args.repeat is not None else (2 if args.quick else 7)
    if n < 1 or repeat < 1:
        raise CommandError("--n and --repeat must be positive", 2)
    if not args.json:
        print(f"{'case':24} {'M elem/s':>10} {'baseline':>10} {'ratio':>7} {'target':>7}  baseline")
    for case in cases:
        if not _available(case):
            print(f"{case.name:24} skipped: needs {case.needs}" if not args.json else
                  json.dumps({"case": case.name, "skipped": f"needs {case.needs}"}))
            continue
        r = measure(case, n, repeat)
        if args.json:
            print(json.dumps(r))
        else:
            target = f"{r['target']:.2f}" if r["target"] else "-"
            print(f"{r['case']:24} {r['elements_per_s'] / 1e6:10.1f} {r['baseline_elements_per_s'] / 1e6:10.1f} "
                  f"{r['ratio']:7.2f} {target:>7}  {r['baseline']}")
    return 0
