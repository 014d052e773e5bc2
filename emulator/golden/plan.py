"""`tile-emu golden ... --plan`: what a run would make, and its cost per core, from a short
measured sample, without writing anything (docs/golden-format.md, "Planning a run").

The partitions, files, cases come from the chunk plan (exact).  Bytes and CPU time are
estimates: for a few partitions (every one when there are at most MAX_SAMPLES, else the first of
each instruction or shape class, then more in turn) two prefixes of a real chunk are generated
in this process -- SMALL and LARGE cases (SAMPLE; streams of a stream golden) of the partition's second chunk (its first when it
has one), the same cases the run would generate -- after an untimed warm-up (the compilers'
and the class table's one-time costs, which every worker pays once); the CPU time and the
Parquet bytes of the two give a fixed cost per file and a cost per case, which price each file
of the partition.  A partition not sampled is priced as the mean of the sampled ones of its
instruction (stream goldens: shape class), else of all.  A file of at most LARGE cases is
generated whole and measured as it is.
"""
from __future__ import annotations

import io
import os
import time
from dataclasses import dataclass
from typing import Callable

import pyarrow.parquet as pq

from . import dataset as D

# (SMALL, LARGE) of a kind's unit.  A single-block chunk has a fixed cost (one group or more per
# coverage point, whatever its size: ~0.13 s of a 65,536-case chunk's ~0.45 s), which the two
# sizes separate; a stream chunk's cost is its streams' (groups of group_cases), so one size does.
SAMPLE = {"cases": (1024, 16384), "streams": (None, 1024)}
MAX_SAMPLES = 12
BUDGET_S = 10.0               # stop sampling (CPU seconds) once this is spent; the rest is priced by the mean


@dataclass(frozen=True)
class Cost:
    """A partition's price of a file of r cases: fixed + per_case * r seconds (and bytes)."""
    seconds: float
    seconds_per_case: float
    bytes: float
    bytes_per_case: float

    def of(self, rows: int) -> tuple[float, float]:
        return self.seconds + self.seconds_per_case * rows, self.bytes + self.bytes_per_case * rows


def _mean(costs: list[Cost]) -> Cost:
    k = len(costs)
    return Cost(*(sum(getattr(c, f) for c in costs) / k for f in ("seconds", "seconds_per_case", "bytes",
                                                                  "bytes_per_case")))


def _run(chunk_table: Callable, p, part, chunk: int, n: int) -> tuple[float, int]:
    """(CPU seconds, Parquet bytes) of generating the first n cases of a chunk and encoding them
    as a data file is."""
    t0 = time.process_time()
    buf = io.BytesIO()
    pq.write_table(chunk_table(p, part, chunk, n), buf, **D.PARQUET_OPTIONS)
    return time.process_time() - t0, buf.tell()


def measure(chunk_table: Callable, p, part, chunk: int, rows: int, sample: tuple[int, int]) -> Cost:
    """The price of a partition's files, measured on chunk `chunk` of `rows` cases."""
    SMALL, LARGE = sample
    _run(chunk_table, p, part, chunk, min(rows, LARGE // 64))            # warm-up, untimed
    if rows <= LARGE or SMALL is None:
        rows = min(rows, LARGE)
        cpu, size = _run(chunk_table, p, part, chunk, rows)
        return Cost(0.0, cpu / rows, 0.0, size / rows)
    (t1, b1), (t2, b2) = (_run(chunk_table, p, part, chunk, n) for n in (SMALL, LARGE))
    # under load the two timings are noisy: a slope below a tenth of the mean is not believed
    per_case = max((t2 - t1) / (LARGE - SMALL), 0.1 * t2 / LARGE)
    per_byte = max((b2 - b1) / (LARGE - SMALL), 0.1 * b2 / LARGE)
    return Cost(max(t2 - per_case * LARGE, 0.0), per_case, max(b2 - per_byte * LARGE, 0.0), per_byte)


def family(part) -> str:
    """Partitions priced alike: an instruction's, or a stream shape class's."""
    return getattr(part, "op", None) or getattr(part, "shape", "")


def _choose(parts: list) -> list:
    """Partitions to sample, in the order they are sampled: all when there are at most
    MAX_SAMPLES, else the first of each family, then the next of each in turn."""
    if len(parts) <= MAX_SAMPLES:
        return list(parts)
    queues: dict[str, list] = {}
    for part in parts:
        queues.setdefault(family(part), []).append(part)
    order, depth = [], 0
    while len(order) < min(MAX_SAMPLES, len(parts)):
        for q in queues.values():
            if depth < len(q) and len(order) < MAX_SAMPLES:
                order.append(q[depth])
        depth += 1
    return order


@dataclass(frozen=True)
class Estimate:
    rows: list          # (partition path, files, cases, bytes, CPU seconds, measured?) per partition
    sampled_cases: int
    sampled_seconds: float


def estimate(p, tasks: list[tuple], chunk_table: Callable, unit: str = "cases", budget_s: float = BUDGET_S) -> Estimate:
    """Price every file of `tasks` ((partition, chunk, cases), the run's files)."""
    sample = SAMPLE[unit]
    files: dict = {}
    for part, chunk, n in tasks:
        files.setdefault(part, []).append((chunk, n))
    costs: dict = {}
    spent, cases = 0.0, 0
    for part in _choose(list(files)):
        if spent >= budget_s and costs:
            break
        chunk, n = files[part][1] if len(files[part]) > 1 else files[part][0]
        t0 = time.process_time()
        costs[part] = measure(chunk_table, p, part, chunk, n, sample)
        spent += time.process_time() - t0
        cases += min(n, sample[1]) if n <= sample[1] or sample[0] is None else sum(sample)
    by_family: dict = {}
    for part, c in costs.items():
        by_family.setdefault(family(part), []).append(c)
    overall = _mean(list(costs.values()))
    rows = []
    for part, fs in files.items():
        c = costs.get(part) or (_mean(by_family[family(part)]) if family(part) in by_family else overall)
        secs = size = 0.0
        for _, n in fs:
            s, b = c.of(n)
            secs, size = secs + s, size + b
        rows.append((part.path, len(fs), sum(n for _, n in fs), size, secs, part in costs))
    return Estimate(rows, cases, spent)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:,.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:,.1f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:,.1f} h"
    return f"{seconds / 86400:,.1f} days"


def _size(b: float) -> str:
    for unit, k in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= k:
            return f"{b / k:,.1f} {unit}"
    return f"{b:,.0f} B"


MAX_LINES = 40


def render(est: Estimate, what: str, total_files: int, workers: int | None, shard: tuple[int, int] | None,
           unit: str = "cases") -> str:
    """The plan as text: one line per partition (per instruction or shape class past MAX_LINES
    partitions), the totals, the time per core and for the workers or shards asked for."""
    rows = est.rows
    if len(rows) > MAX_LINES:
        grouped: dict = {}
        for path, f, n, b, s, m in rows:
            key = path.split("/", 1)[0] + "/..."
            g = grouped.get(key, [key, 0, 0, 0.0, 0.0, False])
            grouped[key] = [key, g[1] + f, g[2] + n, g[3] + b, g[4] + s, g[5] or m]
        rows = [tuple(g) for g in grouped.values()]
    width = max([len("partition")] + [len(r[0]) for r in rows]) + 2
    files, cases = sum(r[1] for r in est.rows), sum(r[2] for r in est.rows)
    size, secs = sum(r[3] for r in est.rows), sum(r[4] for r in est.rows)
    head = f"golden --plan: {what}"
    if shard:
        head += f"; shard {shard[0]}/{shard[1]}: {files:,} of the {total_files:,} files"
    out = [head, f"{'partition':<{width}}{'files':>8}{unit:>16}{'est. bytes':>14}{'est. CPU':>14}"]
    for path, f, n, b, s, m in rows:
        out.append(f"{path + ('' if m else ' ~'):<{width}}{f:>8,}{n:>16,}{_size(b):>14}{_duration(s):>14}")
    out.append(f"{'total':<{width}}{files:>8,}{cases:>16,}{_size(size):>14}{_duration(secs):>14}")
    per = size / cases if cases else 0.0
    out.append(f"about {per:,.0f} bytes a {unit[:-1]} on disk; {_duration(secs)} of one core"
               + (f", about {_duration(secs / workers)} on {workers} workers (plus the cluster's start, "
                  "a few seconds)" if workers and workers > 1 else "")
               + (f" (this shard; the {shard[1]} shards about {_duration(secs * shard[1])} of cores in all)"
                  if shard else ""))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    out.append(f"estimated from {est.sampled_cases:,} {unit} generated here in {est.sampled_seconds:.1f} CPU s "
               f"(load average {load:.1f}; ~ = priced by the partitions measured); nothing was written")
    return "\n".join(out)
