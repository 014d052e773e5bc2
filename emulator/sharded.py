"""Sharded batch runs (docs/machine.md, "Sharded runs"):

    tile-emu run STREAM.tbs --init BATCH.arrow --out FINAL.arrow --workers N     # a local Dask cluster
    tile-emu run STREAM.tbs --init BATCH.arrow --out FINAL.arrow --scheduler tcp://host:8786

The machines of the state file are cut into shards of whole groups of
batchio.MACHINES_PER_BATCH consecutive machines -- the record batches a state file of many
machines is written in.  Each worker task opens the state file itself (emulator.batchio.StateFile:
one record batch in memory at a time), loads its shard's machines alone, runs them as a
MachineBatch on the backend, and returns its final states as the record batches of its groups,
its machines' PE entries, run results and (with --log) commit records.  This process never
loads a machine: it keeps each shard's batches in a spill file beside --out as they arrive and,
once every shard has run, writes --out -- the schema with every machine's PE entries, then the
shards' record batches in order -- and --log, so both are the bytes the same run writes in one
process.  A shard whose machines cannot be read (a damaged state file) is one line naming the
shard's machines; nothing is written.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time

import pyarrow as pa

SHARDS_PER_WORKER = 4            # shards per worker (smaller shards: less memory a worker, better balance)
WARM_MACHINES = 2                # machines each worker runs as its warm-up (emulator.cluster.Warm)


def bound(backend: str) -> int:
    """--workers' bound: the GPUs (backend gpu) or the CPUs this process may use."""
    if backend == "gpu":
        try:
            from kernels.device import device_module
            return max(int(device_module().cuda.runtime.getDeviceCount()), 1)
        except Exception:            # no CuPy, no driver: gpu_status says why, elsewhere
            return 1
    from emulator.cluster import cpus
    return cpus()


def machine_count(path) -> int:
    """The machines a state file's metadata lists (1 for a single-machine file), read from its
    schema alone; a file the workers will refuse may give any count (they say why)."""
    from emulator.batchio import _Entries, _index_meta
    from emulator.stateio import META_KEY, open_file
    reader = open_file(path)
    meta = _index_meta((reader.schema.metadata or {}).get(META_KEY))
    entries = meta.get("machines") if meta else None
    return len(entries) if isinstance(entries, _Entries) else 1


def plan(n: int, workers: int, group: int) -> list[tuple[int, int]]:
    """Shards (lo, hi) of whole groups covering machines 0..n-1: at most SHARDS_PER_WORKER a
    worker, as even as the groups allow."""
    groups = -(-n // group)
    k = max(1, min(groups, workers * SHARDS_PER_WORKER))
    cuts = [group * (groups * i // k) for i in range(k)] + [n]
    return [(lo, min(hi, n)) for lo, hi in zip(cuts[:-1], cuts[1:]) if lo < hi]


def _stream_bytes(batches, schema: pa.Schema) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as w:
        for b in batches:
            w.write_batch(b)
    return sink.getvalue().to_pybytes()


def run_shard(path: str, total: int, lo: int, hi: int, group: int, data: bytes, backend: str,
              profile: str | None, fuse: bool, log: bool) -> dict:
    """One shard, on a worker: machines lo..hi-1 of the state file at `path` (of `total` machines)
    run as a MachineBatch; a dict of plain values and bytes (see the module docstring), or
    {"error": line} / {"unavailable": line}."""
    from dataclasses import replace

    from emulator import Machine, MachineBatch
    from emulator.backends import BackendError
    from emulator.batchio import BATCH_SCHEMA, StateFile, group_batches
    from emulator.stateio import StateFileError, config_json, pes_json
    try:
        f = StateFile(path)
        if len(f) != total:
            return {"error": f"{path}: holds {len(f)} machines, not {total} (changed during the run?)"}
        machines = [Machine.from_state(f.state(k)) for k in range(lo, hi)]
    except StateFileError as exc:
        return {"error": str(exc)}
    if profile is not None:
        for m in machines:
            m.config = replace(m.config, profile=profile)
    try:
        batch = MachineBatch(machines, backend)
    except BackendError as exc:
        return {"unavailable": str(exc)}
    from emulator.commitlog import Collector, SCHEMA as LOG_SCHEMA
    records = Collector() if log else None
    result = batch.run(data, fuse=fuse, log=records)
    finals = [batch.machine(k) for k in range(len(batch))]
    out = {"pes": [pes_json(m) for m in finals], "config": config_json(finals[0].config),
           "executed": list(result.executed), "backend": batch.backend, "why": batch.why,
           "errors": [(lo + k, result.errors[k].where, result.errors[k].detail) for k in result.faulted],
           "states": _stream_bytes(group_batches(finals, lo, group), BATCH_SCHEMA),
           "log": None, "log_rows": 0}
    if log:
        import pyarrow.compute as pc
        t = records.table() if records.blocks else LOG_SCHEMA.empty_table()
        t = t.set_column(0, "machine", pc.add(t.column("machine"), pa.scalar(lo, pa.uint32())).cast(pa.uint32()))
        out["log"], out["log_rows"] = _stream_bytes(t.combine_chunks().to_batches(), LOG_SCHEMA), t.num_rows
    return out


def run_sharded(args, data: bytes) -> int:
    """`tile-emu run ... --workers N | --scheduler ADDRESS`: see the module docstring."""
    from emulator.cli import UNAVAILABLE, CommandError
    from emulator.cluster import ClusterError, NoCluster, Warm, check_scheduler, run as run_tasks
    from emulator import batchio
    from emulator.stateio import StateFileError
    from isa.atomicio import shown
    if args.workers and args.scheduler:
        raise CommandError("--workers and --scheduler exclude each other", 2)
    if args.init is None or args.machine is not None:
        raise CommandError("--workers/--scheduler shard the machines of an --init file of many machines (not "
                           "--machine K)", 2)
    backend = args.backend or "cpu"
    if args.workers is not None and not 1 <= args.workers <= bound(backend):
        what = "GPUs" if backend == "gpu" else "CPUs this process may use"
        raise CommandError(f"--workers {args.workers}: from 1 to {bound(backend)} (the {what}; more workers only "
                           "compete for them)", 2)
    if backend in ("gpu", "auto"):
        from kernels.device import gpu_status
        usable, why_not = gpu_status()
        if backend == "gpu" and not usable:
            raise CommandError(f"--backend gpu: no usable GPU ({why_not})", UNAVAILABLE)
        backend = "gpu" if usable else "cpu"
        if args.backend == "auto" and not args.quiet:
            print(f"tile-emu run: auto: {'gpu' if usable else 'cpu'} ({why_not})", file=sys.stderr)
    try:
        if args.scheduler:
            check_scheduler(args.scheduler)
        n = machine_count(args.init)
    except NoCluster as exc:
        raise CommandError(str(exc), UNAVAILABLE) from None
    except (ClusterError, StateFileError) as exc:
        raise CommandError(str(exc), 2 if isinstance(exc, ClusterError) else 1) from None
    if n < 2:
        raise CommandError(f"{shown(args.init)} holds one machine; --workers/--scheduler shard a batch of many "
                           "(run it without them)", 2)
    group = batchio.MACHINES_PER_BATCH
    shards = plan(n, args.workers or 1, group)
    path = os.path.abspath(args.init)
    tasks = [(path, n, lo, hi, group, data, backend, args.profile, args.fuse, args.log is not None)
             for lo, hi in shards]
    spill_dir = os.path.dirname(os.path.abspath(args.out)) if args.out else None
    spill_dir = spill_dir if spill_dir and os.path.isdir(spill_dir) else None
    with tempfile.TemporaryDirectory(prefix=".tile-emu-shards-", dir=spill_dir) as spill:
        got: dict[int, dict] = {}
        bad: dict[int, tuple[int, str]] = {}

        def on_done(task, res) -> None:
            i = shards.index((task[2], task[3]))
            if "error" in res or "unavailable" in res:
                bad[i] = (UNAVAILABLE if "unavailable" in res else 1, res.get("error") or res["unavailable"])
                return
            for key in ("states", "log"):
                if res[key] is not None:
                    with open(os.path.join(spill, f"{key}-{i}.arrows"), "wb") as f:
                        f.write(res[key])
                    res[key] = True
            got[i] = res

        # the warm-up: two machines of the first shard through the same program on every
        # worker as the cluster starts (imports, Numba caches), not inside its first shard
        lo, hi = shards[0]
        warm = Warm(run_shard, [(path, n, lo, min(lo + WARM_MACHINES, hi), *tasks[0][4:])])
        times: dict = {}
        try:
            run_tasks(tasks, run_shard, on_done, args.workers, args.scheduler,
                      cuda=backend == "gpu" and bool(args.workers), warm=warm, timings=times)
        except NoCluster as exc:
            raise CommandError(str(exc), UNAVAILABLE) from None
        except ClusterError as exc:
            raise CommandError(str(exc), 1) from None
        if bad:
            i = min(bad)
            lo, hi = shards[i]
            status, line = bad[i]
            raise CommandError(f"shard {i} of {len(shards)} (machines {lo}..{hi - 1}): {line}; nothing written",
                               status)
        results = [got[i] for i in range(len(shards))]
        t0 = time.monotonic()
        log_rows = _write_outputs(args, spill, results, n)
        times["write_s"] = time.monotonic() - t0
    return _report(args, results, n, log_rows, times)


def _write_outputs(args, spill: str, results: list[dict], n: int) -> int:
    """--out (every machine's PE entries in the schema, then the shards' record batches in order)
    and --log (the shards' records in machine order, through the commit log's writer: the same
    record batches and checksums as one process writes); the log's record count."""
    from emulator.batchio import BATCH_SCHEMA
    from emulator.cli import CommandError
    from emulator.commands import cannot_write
    from emulator.stateio import FORMAT, META_KEY, VERSION
    from isa.atomicio import OutputPathError, atomic_path
    if args.out:
        meta = {"format": FORMAT, "version": VERSION, "config": results[0]["config"],
                "machines": [{"pes": p} for r in results for p in r["pes"]]}
        schema = BATCH_SCHEMA.with_metadata({META_KEY: json.dumps(meta).encode()})
        try:
            with atomic_path(args.out, devices=False) as tmp, pa.OSFile(tmp, "wb") as sink, \
                    pa.ipc.new_file(sink, schema) as writer:
                for i in range(len(results)):
                    with pa.memory_map(os.path.join(spill, f"states-{i}.arrows")) as src:
                        for b in pa.ipc.open_stream(src):
                            writer.write_batch(b)
        except (OSError, OutputPathError) as exc:
            raise CommandError(cannot_write(args.out, exc)) from None
    if args.log is None:
        return 0
    from emulator.commitlog import CommitLogError, open_log
    try:
        log = open_log(args.log, n)
    except CommitLogError as exc:
        raise CommandError(str(exc), 2) from None
    with log:
        with contextlib.ExitStack() as stack:
            for i in range(len(results)):
                src = stack.enter_context(pa.memory_map(os.path.join(spill, f"log-{i}.arrows")))
                log.write_ordered(pa.ipc.open_stream(src).read_all())
    return log.rows


def _report(args, results: list[dict], n: int, log_rows: int, times: dict) -> int:
    """The lines run_batch prints for the same run: each faulted machine, then the summary (with
    the cluster's start, warm-up included, the shards' and the writing's seconds)."""
    from isa.atomicio import shown
    if not args.quiet:             # standard output: the messages on stderr stay those of one process
        what = f"local cluster of {args.workers} worker(s)" if args.workers else f"scheduler {args.scheduler}"
        print(f"tile-emu run: {what} ready in {times['start_s']:.2f} s (warm-up included); {len(results)} shard(s) "
              f"ran in {times['work_s']:.2f} s; writing took {times['write_s']:.2f} s")
    faulted = [e for r in results for e in r["errors"]]
    for k, where, detail in faulted:
        print(f"tile-emu run: {shown(args.stream)}: machine {k}: {where}: {detail}", file=sys.stderr)
    executed = [x for r in results for x in r["executed"]]
    logged = "" if args.log is None else f"; commit log {args.log} ({log_rows} record(s))"
    if faulted:
        if args.out:
            counts = sorted(set(executed))
            what = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}..{counts[-1]}"
            print(f"tile-emu run: state after {what} committed block(s) per machine ({len(faulted)} of {n} faulted) "
                  f"written to {shown(args.out)}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"{args.stream}: {n} machines, {executed[0]} block(s) executed on each ({results[0]['backend']} "
              f"backend, {len(results)} shard(s))" + (f"; final states {args.out}" if args.out else "") + logged)
    return 0
