"""Where a job's tasks run: in this process, on a local Dask cluster (`--workers N`: worker
processes on 127.0.0.1; with `cuda`, dask-cuda's LocalCUDACluster, one worker per GPU), or on
an existing one (`--scheduler ADDRESS`).  Scale-out goes through Dask only; every task is a
module-level function with plain arguments, so each place runs the same computation.  Used by
`tile-emu golden` (emulator/golden/runner.py) and by sharded `tile-emu run` (emulator/sharded.py).
"""
from __future__ import annotations

import os
import time
from typing import Callable

from isa.atomicio import quote, shown

SCHEDULER_TIMEOUT_S = 10


class ClusterError(Exception):
    """A cluster that cannot be used: one line (a bad address, no scheduler answering)."""


class NoCluster(ClusterError):
    """The library a cluster needs is not installed (exit 3 where a command says so)."""


def cpus() -> int:
    """The CPUs this process may use (`os.sched_getaffinity`): the local cluster's bound."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:            # no sched_getaffinity (macOS, Windows)
        return max(os.cpu_count() or 1, 1)


def check_scheduler(address: str) -> None:
    """A --scheduler address distributed can parse (tcp/tls: host and a numeric port), checked
    before anything is written; reaching the scheduler is run()'s business."""
    try:
        from distributed.comm import parse_address
        from distributed.comm.addressing import parse_host_port
    except ImportError:
        raise NoCluster("--workers/--scheduler need Dask: pip install 'tile-emu[dask]'") from None
    try:
        scheme, location = parse_address(address)
        if scheme in ("tcp", "tls"):
            parse_host_port(location)
    except (ValueError, TypeError) as exc:
        raise ClusterError(f"--scheduler {quote(address)}: not a Dask scheduler address "
                           f"(tcp://host:port; {shown(str(exc), 80)})") from None


class Warm:
    """A cluster's warm-up, run once on every worker when the cluster starts (Client.run), before
    any task: `fn(*task)` for each of a few small tasks like the job's own, so that each worker
    imports the modules and loads (or compiles) the Numba kernels the job uses there, in
    parallel, as part of the cluster's start -- not inside the first task it runs, where that
    fixed cost (about 2 s of CPU a worker) was counted in the timed work.  Results are dropped
    and any exception is swallowed: a task that fails says why when it runs for real.  `after`
    (if given) runs last (golden's settle_heap).  Picklable: module-level callables and plain
    arguments."""

    def __init__(self, fn: Callable, tasks: list[tuple], after: Callable[[], None] | None = None):
        self.fn, self.tasks, self.after = fn, list(tasks), after

    def __call__(self) -> float:
        t0 = time.monotonic()
        for task in self.tasks:
            try:
                self.fn(*task)
            except Exception:       # noqa: BLE001 -- the real task reports it
                pass
        if self.after is not None:
            self.after()
        return time.monotonic() - t0


def run(tasks: list[tuple], fn: Callable, on_done: Callable[[tuple, object], None],
        workers: int | None = None, scheduler: str | None = None, local_fn: Callable | None = None,
        cuda: bool = False, in_process: Callable[[], None] | None = None, warm: Warm | None = None,
        timings: dict | None = None) -> None:
    """Run fn(*task) for every task; on_done(task, result) as each completes (in this process,
    in order, when neither workers nor scheduler is given).  `local_fn` wraps fn on a local
    cluster's workers; `in_process()` runs once before in-process tasks; `warm` runs on every
    worker of a cluster before its tasks (not in process).  `timings`, if given, gets "start_s"
    (the cluster's start, or connecting to --scheduler, warm-up included; 0 in process) and
    "work_s" (the tasks, from the first submitted to the last result)."""
    t0 = time.monotonic()
    if not workers and not scheduler:
        if in_process:
            in_process()
        for task in tasks:
            on_done(task, fn(*task))
        if timings is not None:
            timings.update(start_s=0.0, work_s=time.monotonic() - t0)
        return
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise NoCluster("--workers/--scheduler need Dask: pip install 'tile-emu[dask]'") from None
    cluster = None
    try:
        if scheduler:
            try:
                client = Client(scheduler, timeout=SCHEDULER_TIMEOUT_S)
            except (OSError, TimeoutError) as exc:
                raise ClusterError(f"--scheduler {quote(scheduler)}: no Dask scheduler answered within "
                                   f"{SCHEDULER_TIMEOUT_S} s ({exc.__class__.__name__})") from None
            except (ValueError, TypeError) as exc:      # distributed's address parser
                raise ClusterError(f"--scheduler {quote(scheduler)}: not a Dask scheduler address "
                                   f"(tcp://host:port; {shown(str(exc), 80)})") from None
        else:
            if cuda:
                try:
                    from dask_cuda import LocalCUDACluster
                except ImportError:
                    raise NoCluster("--backend gpu --workers N starts one worker per GPU with dask-cuda: "
                                    "pip install 'tile-emu[gpu]'") from None
                cluster = LocalCUDACluster(n_workers=workers, threads_per_worker=1, ip="127.0.0.1",
                                           dashboard_address=None)
            else:
                cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None)
            client = Client(cluster)
            client.wait_for_workers(workers)
            fn = local_fn or fn
        with client:
            if warm is not None and tasks:
                client.run(warm)    # every worker at once; each returns its warm-up's seconds
            t1 = time.monotonic()
            futures = {client.submit(fn, *task, pure=False): task for task in tasks}
            for fut in as_completed(futures):
                on_done(futures[fut], fut.result())
            if timings is not None:
                timings.update(start_s=t1 - t0, work_s=time.monotonic() - t1)
    finally:
        if cluster is not None:
            cluster.close()
