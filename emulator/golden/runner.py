"""Where the chunks of a golden dataset run: in this process, on a local Dask cluster
(`--workers N`), or on an existing one (`--scheduler ADDRESS`), through emulator.cluster.  Every
task is `dataset.write_chunk` with plain arguments, so all three write the same bytes."""
from __future__ import annotations

import gc
import sys
import tempfile
import time
from typing import Callable

from .dataset import GoldenError


class Progress:
    """One status line on stderr: files and cases done, cases/s (redrawn at most every 0.5 s)."""

    def __init__(self, total_cases: int, total_files: int, stream=None, enabled: bool = True,
                 label: str = "golden"):
        self.total, self.files_total, self.label = total_cases, total_files, label
        self.done = self.files = 0
        self.t0 = self.last = time.monotonic()
        # sys.stderr as it is now, not as it was at import (a test's captured stream, since closed)
        self.stream, self.enabled = sys.stderr if stream is None else stream, enabled

    def add(self, cases: int, files: int = 1) -> None:
        self.done += cases
        self.files += files
        now = time.monotonic()
        if self.enabled and (now - self.last >= 0.5 or self.done >= self.total):
            self.last = now
            rate = self.done / max(now - self.t0, 1e-9)
            files = f"{self.files}/{self.files_total} files, " if self.files_total else ""
            self.stream.write(f"\r{self.label}: {files}{self.done:,}/{self.total:,} cases, {rate:,.0f} cases/s")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.done:
            self.stream.write("\n")

    @property
    def rate(self) -> float:
        return self.done / max(time.monotonic() - self.t0, 1e-9)


def check_scheduler(address: str) -> None:
    """A --scheduler address distributed can parse (emulator.cluster.check_scheduler)."""
    from emulator.cluster import ClusterError, check_scheduler as check
    try:
        check(address)
    except ClusterError as exc:
        raise GoldenError(str(exc)) from None


_settled = False
YOUNG_THRESHOLD = 20_000     # settle_heap: allocations between young-generation collections


def settle_heap() -> None:
    """Once per process that tile-emu owns, before its first chunk: a full collection, then
    gc.freeze() of what is alive (imported modules -- NumPy, Numba, pyarrow, Dask --, tables,
    caches: ~150,000 objects).  The collector then never rescans them, where each full
    collection that a chunk's allocations trigger used to (~15 % of a stream chunk's CPU time).
    Only objects alive now are frozen; garbage made later is collected as before.  Not called
    in the workers of a cluster given by --scheduler: those processes are not ours.

    The youngest generation's threshold is raised to YOUNG_THRESHOLD allocations (CPython's
    default: 700): a stream chunk allocates millions of short-lived objects (blocks, descriptors,
    small arrays), and at 700 a young collection ran every few hundred microseconds and pushed
    survivors into the older generations, 3-7 % of a stream chunk's CPU time; at 20,000 it is
    1.5-3 % (docs/performance-history.md, "Stream goldens: the collector's share").  Cyclic
    garbage is still collected, a little later; the older generations keep their thresholds."""
    global _settled
    if not _settled:
        _settled = True
        gc.collect()
        gc.freeze()
        young, middle, old = gc.get_threshold()
        if young:                          # 0: collection turned off by the caller; leave it so
            gc.set_threshold(max(young, YOUNG_THRESHOLD), middle, old)


class _Settling:
    """fn on a worker of the local cluster, the worker's heap settled first (a picklable
    wrapper: a module-level class holding a module-level function)."""

    def __init__(self, fn: Callable):
        self.fn = fn

    def __call__(self, *task):
        settle_heap()
        return self.fn(*task)


WARM_CASES = 128     # cases of a warm-up chunk: more than a partition's coverage points (~65), so each class runs
WARM_PARTS = 8       # warm-up chunks a worker runs at most (one per distinct instruction and DataTypes)


def _warm_chunk(fn: Callable, params: dict, part: dict, chunk: int, n: int, *rest) -> None:
    """One small chunk written into a temporary folder that is then removed (a warm-up)."""
    with tempfile.TemporaryDirectory(prefix="tile-emu-warm-") as tmp:
        fn(tmp, params, part, chunk, n, *rest)


def warm_tasks(fn: Callable, tasks: list[tuple]) -> list[tuple]:
    """The warm-up of a golden run (emulator.cluster.Warm): for each of the first WARM_PARTS
    distinct kernels the tasks use (a partition less its rounding mode and saturation), one chunk
    of at most WARM_CASES cases written to a temporary folder -- the imports, the Numba caches
    and the Parquet writer the real chunks then find loaded."""
    out, seen = [], set()
    for _, params, part, chunk, n, *rest in tasks:
        key = tuple(sorted((k, repr(v)) for k, v in part.items() if k not in ("rmode", "sat")))
        if key in seen:
            continue
        seen.add(key)
        out.append((fn, params, part, chunk, min(n, WARM_CASES), *rest))
        if len(out) == WARM_PARTS:
            break
    return out


def run(tasks: list[tuple], fn: Callable, on_done: Callable[[tuple, dict], None],
        workers: int | None = None, scheduler: str | None = None, cuda: bool = False,
        timings: dict | None = None) -> None:
    """Run fn(*task) for every task; on_done(task, result) as each completes (emulator.cluster.run:
    in this process, on a local cluster -- of one worker a GPU with `cuda` -- whose workers warm
    up (warm_tasks) and settle their heaps when the cluster starts, or on --scheduler's, whose
    workers warm up alone).  A missing library is emulator.cluster.NoCluster; `timings` as
    emulator.cluster.run fills it."""
    from emulator.cluster import ClusterError, NoCluster, Warm, run as run_tasks
    warm = Warm(_warm_chunk, warm_tasks(fn, tasks), None if scheduler else settle_heap)
    try:
        run_tasks(tasks, fn, on_done, workers, scheduler, local_fn=_Settling(fn), in_process=settle_heap,
                  cuda=cuda, warm=warm, timings=timings)
    except NoCluster:
        raise
    except ClusterError as exc:
        raise GoldenError(str(exc)) from None
