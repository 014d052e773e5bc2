"""The timing loop the stand-alone benchmark scripts share (bench_batch_fused.py, peer/ours.py):
the best of `rounds` loops of calls, each loop at least `min_seconds` long, after one warm call
(compiling, tables, lazy paths), read on `clock` (time.process_time on a shared machine, where
the wait for a core must not count; else time.perf_counter)."""
from __future__ import annotations

import time


def best_per_call(fn, rounds: int, clock=time.perf_counter, min_seconds: float = 0.2) -> float:
    """Seconds a call of `fn` takes: the least mean over `rounds` loops."""
    fn()
    best = float("inf")
    for _ in range(rounds):
        calls, t0 = 0, clock()
        while True:
            fn()
            calls += 1
            elapsed = clock() - t0
            if elapsed >= min_seconds:
                break
        best = min(best, elapsed / calls)
    return best


def p10_per_call(fn, calls: int, clock=time.perf_counter) -> float:
    """Seconds a call of `fn` takes: the 10th percentile of `calls` single calls after a warm one
    (a call's own time, less exposed than a long loop to waits for a core on a shared machine)."""
    fn()
    times = []
    for _ in range(calls):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    times.sort()
    return times[calls // 10]

