"""Where the chunks of a golden dataset run: in this process, on a local Dask cluster
(`--workers N`), or on an existing one (`--scheduler ADDRESS`).  Scale-out goes through Dask
only; every task is `dataset.write_chunk` with plain arguments, so all three write the same
bytes."""
from __future__ import annotations

import gc
import sys
import time
from typing import Callable

from isa.atomicio import quote, shown

from .dataset import GoldenError

SCHEDULER_TIMEOUT_S = 10


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
    """A --scheduler address distributed can parse (tcp/tls: host and a numeric port), checked
    before anything is written; reaching the scheduler is run()'s business."""
    try:
        from distributed.comm import parse_address
        from distributed.comm.addressing import parse_host_port
    except ImportError:
        raise GoldenError("--workers/--scheduler need Dask: pip install 'tile-emu[dask]'") from None
    try:
        scheme, location = parse_address(address)
        if scheme in ("tcp", "tls"):
            parse_host_port(location)
    except (ValueError, TypeError) as exc:
        raise GoldenError(f"--scheduler {quote(address)}: not a Dask scheduler address "
                          f"(tcp://host:port; {shown(str(exc), 80)})") from None


_settled = False


def settle_heap() -> None:
    """Once per process that tile-emu owns, before its first chunk: a full collection, then
    gc.freeze() of what is alive (imported modules -- NumPy, Numba, pyarrow, Dask --, tables,
    caches: ~150,000 objects).  The collector then never rescans them, where each full
    collection that a chunk's allocations trigger used to (~15 % of a stream chunk's CPU time).
    Only objects alive now are frozen; garbage made later is collected as before.  Not called
    in the workers of a cluster given by --scheduler: those processes are not ours."""
    global _settled
    if not _settled:
        _settled = True
        gc.collect()
        gc.freeze()


class _Settling:
    """fn on a worker of the local cluster, the worker's heap settled first (a picklable
    wrapper: a module-level class holding a module-level function)."""

    def __init__(self, fn: Callable):
        self.fn = fn

    def __call__(self, *task):
        settle_heap()
        return self.fn(*task)


def run(tasks: list[tuple], fn: Callable, on_done: Callable[[tuple, dict], None],
        workers: int | None = None, scheduler: str | None = None) -> None:
    """Run fn(*task) for every task; on_done(task, result) as each completes."""
    if not workers and not scheduler:
        settle_heap()
        for task in tasks:
            on_done(task, fn(*task))
        return
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise GoldenError("--workers/--scheduler need Dask: pip install 'tile-emu[dask]'") from None
    cluster = None
    try:
        if scheduler:
            try:
                client = Client(scheduler, timeout=SCHEDULER_TIMEOUT_S)
            except (OSError, TimeoutError) as exc:
                raise GoldenError(f"--scheduler {quote(scheduler)}: no Dask scheduler answered within "
                                  f"{SCHEDULER_TIMEOUT_S} s ({exc.__class__.__name__})") from None
            except (ValueError, TypeError) as exc:      # distributed's address parser
                raise GoldenError(f"--scheduler {quote(scheduler)}: not a Dask scheduler address "
                                  f"(tcp://host:port; {shown(str(exc), 80)})") from None
        else:
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address=None)
            client = Client(cluster)
            fn = _Settling(fn)
        with client:
            futures = {client.submit(fn, *task, pure=False): task for task in tasks}
            for fut in as_completed(futures):
                on_done(futures[fut], fut.result())
    finally:
        if cluster is not None:
            cluster.close()
