"""The batch engine's fused element pass (emulator/batchfuse.py) against today's path and the
`batch.TADD.FP32.16x16` baseline (NumPy float32 add of the same stacked tiles), in one process
on the same batch, alternating, so the load is shared: 4,096 machines x 4 PEs x 16x16 TADD FP32
by default.  Today's path is the same engine with the pass switched off (engine._fused_program
answering None).  Each figure is the best of 7 loops of at least 0.2 s; `cpu` times by process
CPU time (fairer on a shared machine: run with NUMBA_NUM_THREADS=1), else by wall time.

    NUMBA_NUM_THREADS=1 python benchmarks/bench_batch_fused.py [cpu] [N]
"""
import os
import sys
import time

from emulator import engine
from loops import best_per_call       # benchmarks/loops.py, beside this script
from emulator.commands.bench import batch_setup

CLOCK = time.process_time if "cpu" in sys.argv[1:] else time.perf_counter


def best(f, reps: int = 7) -> float:
    return best_per_call(f, reps, CLOCK)


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:] if a.isdigit()]
    n = sizes[0] if sizes else 4194304
    run, base = batch_setup(n)
    real = engine._fused_program
    print("load average", os.getloadavg(), "clock", CLOCK.__name__)
    for rnd in range(3):
        engine._fused_program = lambda *a: None
        today = best(run)
        engine._fused_program = real
        fused = best(run)
        b = best(base)
        print(f"round {rnd}: NumPy add {n / b / 1e6:.0f} M elem/s; today's path {n / today / 1e6:.0f} M elem/s "
              f"(ratio {b / today:.2f}); fused {n / fused / 1e6:.0f} M elem/s (ratio {b / fused:.2f}); "
              f"fused / today {today / fused:.2f}x")
    print("load average", os.getloadavg())


if __name__ == "__main__":
    main()
