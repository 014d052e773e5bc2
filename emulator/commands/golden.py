"""tile-emu golden: coverage-driven golden vectors as a partitioned Parquet dataset.

    tile-emu golden --ops TADD,TCVT --dtypes FP16,E4M3 --cases 100000 --seed 7 --out vectors/
    tile-emu golden ... --workers 4 | --scheduler tcp://host:8786 | --resume
    tile-emu golden ... --shard I/N --out part-I; tile-emu golden merge part-* --out vectors/   # job arrays
    tile-emu golden --coverage vectors/
    tile-emu golden --streams --blocks 8 --cases 100000 --seed 7 --out streams/   # multi-block streams
    tile-emu golden export vectors/ --format testfloat --op TADD --dtype FP32 > f32_add.txt
    tile-emu golden export vectors/ --format hex --out hex/      # $readmemh files for HDL testbenches
    tile-emu golden extract vectors/ --case op=TADD/dtype=FP16:17 --out case17/   # one case to replay
"""
from __future__ import annotations

import io
import itertools
import json
import os
import pathlib
import sys

from emulator.cli import CommandError
from emulator.cluster import NoCluster
from emulator.golden import dataset as D
from emulator.golden.dataset import GoldenError
from isa.atomicio import quote
from kernels.numeric.profiles import DEFAULT_PROFILE, PROFILES


def add_arguments(p) -> None:
    p.add_argument("action", nargs="?", choices=["export", "merge", "extract"],
                   help="export: write another tool's format; merge: join the shards of a --shard run; extract: "
                        "one case as a .tbs stream, initial and expected final state and expected commit log")
    p.add_argument("dataset", nargs="?", help="the dataset folder (export, extract); the first shard folder (merge)")
    p.add_argument("more", nargs="*", metavar="SHARD", help="merge: the other shard folders")
    g = p.add_argument_group("generate")
    g.add_argument("--ops", help="comma-separated instructions, e.g. TADD,TDIV,TCVT")
    g.add_argument("--dtypes", help="comma-separated DataTypes (TCVT: source and, by default, destination types)")
    g.add_argument("--dst-dtypes", help="TCVT destination DataTypes (default: --dtypes)")
    g.add_argument("--rmodes", default=",".join(D.RMODE_NAMES), help="TCVT rounding modes (default: all)")
    g.add_argument("--sat", default="0,1", help="TCVT Sat values (default: 0,1)")
    g.add_argument("--cases", type=int, help="cases per partition")
    g.add_argument("--per-class", type=int, metavar="K",
                   help="K cases of every applicable class (and cross bin) of each partition, instead of --cases")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--profile", default=DEFAULT_PROFILE,
                   help=f"numeric profile: {', '.join(PROFILES)} (default {DEFAULT_PROFILE})")
    g.add_argument("--out", help="output folder (must be empty unless --resume); export: the file (testfloat) "
                                 "or folder (hex) to write")
    g.add_argument("--resume", action="store_true", help="continue an interrupted run in --out")
    g.add_argument("--workers", type=int, help="run on a local Dask cluster of N worker processes")
    g.add_argument("--scheduler", help="run on an existing Dask cluster (tcp://host:port)")
    g.add_argument("--quiet", action="store_true", help="no progress line")
    g.add_argument("--backend", choices=["cpu", "gpu"], default="cpu",
                   help="the batch engine that computes the expected outcomes (gpu: on the GPU; with --workers, "
                        "one worker a GPU through dask-cuda); the same bytes either way")
    g.add_argument("--plan", action="store_true",
                   help="print the partitions, files, cases, bytes and CPU time the run would take (from a short "
                        "measured sample) and write nothing")
    g.add_argument("--shard", metavar="I/N", help="write only shard I of N (0 <= I < N) of the dataset's files, "
                                                  "for a job array; join the shards with golden merge")
    st = p.add_argument_group("streams (random multi-block streams; docs/golden-format.md, 'Stream goldens')")
    st.add_argument("--streams", action="store_true", help="generate random streams of --blocks blocks")
    st.add_argument("--blocks", type=int, help="blocks per stream")
    st.add_argument("--illegal-fraction", type=float, default=None,
                    help="share of streams carrying one illegal block (default 0.1)")
    st.add_argument("--shapes", help="shape classes (default: all)")
    st.add_argument("--group-cases", type=int, default=None,
                    help="streams per group (one stream, many initial states; default 16: at least one "
                         "distinct program per 16 streams)")
    p.add_argument("--coverage", metavar="DIR", nargs="+",
                   help="print the coverage of one dataset, or of several of one kind merged (--format text, json, "
                        "ucis; on stdout, or in the file --out)")
    e = p.add_argument_group("export")
    e.add_argument("--format", choices=["testfloat", "hex", "text", "json", "ucis", "arrow"],
                   help="export format: testfloat (lines on stdout, or in the file --out) or hex ($readmemh files in "
                        "--out); --coverage: text (default), json or ucis; generating with --out -: testfloat (one "
                        "function's lines) or arrow (an Arrow IPC stream of every row) on stdout")
    e.add_argument("--op", help="export: the instruction")
    e.add_argument("--dtype", help="export: the DataType (TCVT: the source)")
    e.add_argument("--dst", help="export: TCVT destination DataType")
    e.add_argument("--rmode", help="export: TCVT rounding mode (default RNE)")
    x = p.add_argument_group("extract (docs/golden-format.md, 'Extracting a case')")
    x.add_argument("--case", metavar="[PARTITION:]K",
                   help="extract: case K of the partition (op=TADD/dtype=FP16:17, or the data file verify names: "
                        "op=TADD/dtype=FP16/part-00000.parquet:17); K alone in a dataset of one partition")
    x.add_argument("--block", type=int, metavar="B",
                   help="extract, stream datasets: the prefix of blocks 0..B (B included) instead of the whole stream")


def run(args) -> int:
    if args.more and args.action != "merge":
        raise CommandError(f"unexpected argument {quote(args.more[0])} (only merge takes several folders)", 2)
    if args.action != "extract" and (args.case is not None or args.block is not None):
        raise CommandError("--case and --block select the case golden extract writes: golden extract DIR --case "
                           "[PARTITION:]K [--block B] --out D", 2)
    try:
        if args.action == "merge":
            return _merge(args)
        if args.action == "export":
            return _export(args)
        if args.action == "extract":
            return _extract(args)
        if args.coverage:
            return _coverage(args)
        if args.streams:
            return _generate_streams(args)
        return _generate(args)
    except GoldenError as exc:
        raise CommandError(str(exc), 1) from None
    except D.store.Unavailable as exc:          # an fsspec URL whose library is not installed
        raise CommandError(str(exc), 3) from None
    except NoCluster as exc:                    # Dask (or dask-cuda for --backend gpu) not installed
        raise CommandError(str(exc), 3) from None


def _params(args) -> D.Params:
    if args.cases is not None and args.per_class is not None:
        raise CommandError("--cases and --per-class exclude each other: a total per partition, or K cases "
                           "per class", 2)
    size = "per_class" if args.per_class is not None else "cases"
    missing = [f"--{n.replace('_', '-')}" for n in ("ops", "dtypes", size, "out") if getattr(args, n) in (None, "")
               and not (n == "out" and args.plan)]
    if missing:
        raise CommandError(f"missing {', '.join(missing)} (see tile-emu golden --help)", 2)
    flag, value = f"--{size.replace('_', '-')}", getattr(args, size)
    if value <= 0:
        raise CommandError(f"{flag} must be positive", 2)
    if value > D.MAX_CASES:
        raise CommandError(f"{flag} {value}: at most {D.MAX_CASES:,} (2^32) cases per "
                           + ("partition" if size == "cases" else "class"), 2)
    if args.workers is not None and args.workers <= 0:
        raise CommandError("--workers must be positive", 2)
    if args.workers is not None and args.workers > max_workers():
        raise CommandError(f"--workers {args.workers}: at most {max_workers()} (the CPUs this process may use; "
                           "more worker processes only compete for them)", 2)
    if args.workers and args.scheduler:
        raise CommandError("--workers and --scheduler exclude each other", 2)
    try:
        sat = tuple(int(s) for s in D.parse_list(args.sat, "sat"))
    except ValueError:
        raise CommandError(f"--sat {quote(args.sat)}: a list of 0/1", 2) from None
    if any(s not in (0, 1) for s in sat):
        raise CommandError(f"--sat {quote(args.sat)}: a list of 0/1", 2)
    if args.profile not in PROFILES:
        raise CommandError(f"--profile {quote(args.profile)}: one of {', '.join(PROFILES)}", 2)
    if not D.SEED_RANGE[0] <= args.seed < D.SEED_RANGE[1]:
        raise CommandError(f"--seed {args.seed}: from -2^63 to 2^64 - 1", 2)
    p = D.Params(
        ops=tuple(o.upper() for o in D.parse_list(args.ops, "ops")), dtypes=D.parse_list(args.dtypes, "dtypes"),
        cases=args.cases, per_class=args.per_class, seed=args.seed,
        dst_dtypes=D.parse_list(args.dst_dtypes, "dst-dtypes") if args.dst_dtypes else (),
        rmodes=tuple(r.upper() for r in D.parse_list(args.rmodes, "rmodes")), sat=sat, profile=args.profile)
    D.chunks(p, args.out != "-")    # validates names, (op, DataType) pairs and sizes before anything is written
    if args.scheduler:
        from emulator.golden.runner import check_scheduler
        check_scheduler(args.scheduler)
    return p


def max_workers() -> int:
    """--workers' bound: the CPUs this process may use (docs/golden-format.md, "Limits")."""
    from emulator.cluster import cpus
    return cpus()


def _produce(args, p, unit: str, chunks, chunk_table, keys, write_chunk, write_manifest, summary,
             resumable=None, **readers) -> int:
    """What golden and golden --streams do alike once their parameters are read: the backend
    check, --plan or --out -, the shard plan, the --out/--resume check (`readers`: the kind's
    generation.json and manifest readers; `resumable` checks the files already there), the
    chunks written, then `summary(out, records, rows, size, rate)` prints the kind's lines."""
    _check_backend(args)
    done = _plan_or_pipe(args, p, chunks, chunk_table, unit)
    if done is not None:
        return done
    out = D.store.location(args.out)
    plan = _shard_plan(args, out, p, chunks(p))
    D.params_match_or_fail(out, p, args.resume, **readers)
    if args.resume and resumable is not None:
        resumable(out, chunks(p))
    summary(out, *_write(args, out, p, plan, keys, write_chunk, write_manifest))
    return 0


def _generate(args) -> int:
    from emulator.golden.dataset import write_chunk
    p = _params(args)

    def summary(out, records, rows, size, rate):
        print(f"{rows:,} cases in {len(records)} files ({size / 1e6:.1f} MB) -> {out}{_shard_note(args)}"
              + (f"; {rate:,.0f} cases/s" if rate is not None else ""))
        if not args.shard:             # a shard's holes are the merged dataset's business
            for line in hole_lines(p):
                print(line, file=sys.stderr)
    return _produce(args, p, "cases", D.chunks, D.chunk_table, _part_dict, write_chunk, D.manifest, summary)


def _check_backend(args) -> None:
    """--backend gpu: a usable GPU here (exit 3 otherwise, before anything is written), and with
    --workers at most one worker a GPU."""
    if args.backend != "gpu" or args.plan:
        return
    from emulator.sharded import bound
    from kernels.device import gpu_status
    usable, why_not = gpu_status()
    if not usable:
        raise CommandError(f"--backend gpu: no usable GPU ({why_not})", 3)
    if args.workers and args.workers > bound("gpu"):
        raise CommandError(f"--backend gpu --workers {args.workers}: at most {bound('gpu')} (one worker a GPU)", 2)


def _plan_or_pipe(args, p, chunks, chunk_table, unit: str) -> int | None:
    """--plan (nothing written) or --out - (the cases on standard output): the exit status; None
    for a run that writes a dataset."""
    if args.plan:
        return _plan(args, p, chunks(p, args.out != "-"), chunk_table, unit)
    if _piped(args):
        return _pipe(args, p, chunks(p, False), chunk_table, unit)
    return None


def _piped(args) -> bool:
    """Whether this run writes its cases to standard output (--out -), its options checked."""
    if args.out != "-":
        if args.format is not None and not args.plan:
            raise CommandError(f"--format {args.format} while generating: cases go to standard output (--out -) as "
                               "testfloat or arrow; a dataset folder is Parquet", 2)
        return False
    if args.plan:
        return False
    if args.format not in ("testfloat", "arrow"):
        raise CommandError("--out - writes the cases to standard output: --format testfloat (one TestFloat "
                           "function's lines) or --format arrow (an Arrow IPC stream of every row)", 2)
    for flag in ("resume", "workers", "scheduler"):
        if getattr(args, flag):
            raise CommandError(f"--out - and --{flag} exclude each other: the cases are written in order, in this "
                               "process, and nothing is kept to resume", 2)
    if args.format == "testfloat" and args.streams:
        raise CommandError("--format testfloat writes single-block cases of one function; a stream golden's rows "
                           "go out as --format arrow", 2)
    return True


def _pipe(args, p, plan, chunk_table, unit: str) -> int:
    """golden ... --format testfloat|arrow --out -: every chunk of the plan (or of the shard) on
    standard output as it is generated (emulator/golden/pipe.py); a closed pipe ends it, exit 0."""
    from emulator.golden import pipe
    from emulator.golden.runner import Progress, settle_heap
    tasks = _shard_plan(args, None, p, plan)
    lines, schema = None, None
    if args.format == "testfloat":
        lines = _testfloat_lines(p)
    elif unit == "streams":
        from emulator.golden.streams_dataset import SCHEMA as schema
    else:
        from emulator.golden.rows import SCHEMA as schema
    total = sum(n for _, _, n in tasks) if args.shard else sum(plan.cases_of(i) for i in range(len(plan.parts)))
    progress = Progress(total, 0, enabled=not args.quiet)
    settle_heap()
    try:
        size = pipe.stream(tasks, lambda part, chunk, n: chunk_table(p, part, chunk, n, args.backend), args.format,
                           schema, lines, progress.add)
    except BrokenPipeError:         # the reader has what it wanted
        pipe.quiet_stdout()
        progress.close()
        return 0
    progress.close()
    print(f"golden: {progress.done:,} {unit} ({size / 1e6:.1f} MB of {args.format}) -> standard output"
          f"{_shard_note(args)}", file=sys.stderr)
    return 0


def _testfloat_lines(p):
    """lines(table, partition) of the one TestFloat function the parameters name (checked: one
    partition, a function TestFloat has, Sat=0, profile ieee)."""
    from emulator.golden import export as X
    from emulator.golden.pipe import replay_source
    from kernels.numeric.profiles import profile
    parts = D.partitions(p)
    if len(parts) != 1:
        raise CommandError(f"--format testfloat --out -: the parameters give {len(parts)} partitions; TestFloat "
                           "checks one function: one --ops, one --dtypes (TCVT: one --dst-dtypes, --rmodes, --sat 0)",
                           2)
    part = parts[0]
    try:
        X.function_name(part.op, part.dtype, part.dst)
    except GoldenError as exc:
        raise CommandError(str(exc), 2) from None
    if part.op == "TCVT" and (part.sat or part.rmode not in X.ROUNDING):
        raise CommandError("--format testfloat: TestFloat has no saturating conversion; --sat 0", 2)
    if p.profile != DEFAULT_PROFILE:
        raise CommandError(f"--format testfloat checks IEEE 754 results: --profile {DEFAULT_PROFILE}, not "
                           f"{p.profile}", 2)
    source = replay_source(profile(p.profile))
    return lambda t, part: X.table_lines(t, source, part.op, part.dtype, part.dst, part.rmode, part.path)


def _plan(args, p, plan, chunk_table, unit: str) -> int:
    """golden ... --plan: the run's partitions, files, cases, and its bytes and CPU time from a
    short measured sample (emulator/golden/plan.py); nothing is written."""
    from emulator.golden import plan as P
    tasks = list(_shard_plan(args, None, p, plan))
    what = f"{len(plan.parts):,} partition(s), {len(plan):,} data file(s), " \
           f"{sum(n for _, _, n in plan):,} {unit}"
    if unit == "streams":
        what += f" of {p.blocks} blocks"
    est = P.estimate(p, tasks, chunk_table, unit)
    print(P.render(est, what, len(plan), args.workers, getattr(args, "shard_at", None), unit))
    return 0


def _shard_plan(args, out: pathlib.Path | None, p, plan):
    """The files this run writes: the whole plan, or with --shard I/N its shard I (checked, with
    --resume, against what --out holds, before --out is touched; emulator/golden/shards.py)."""
    from emulator.golden import shards
    shard = None
    if args.shard is not None:
        try:
            shard = shards.parse(args.shard)
        except ValueError as exc:
            raise CommandError(str(exc), 2) from None
    if out is not None:
        shards.check_resume(out, shard, args.resume)
    if shard is None:
        return plan
    args.shard_at = shard
    return shards.select(plan, *shard)


def _shard_note(args) -> str:
    return f" (shard {args.shard_at[0]}/{args.shard_at[1]})" if args.shard else ""


def _merge(args) -> int:
    """golden merge SHARD... --out D: the dataset the shards' command without --shard writes."""
    from emulator.golden import shards
    folders = [args.dataset, *args.more] if args.dataset else []
    if not folders or not args.out:
        raise CommandError("merge needs the shard folders and --out: golden merge part-* --out D", 2)
    p, records = shards.merge(folders, args.out)
    rows, size = sum(r["rows"] for r in records), sum(r["bytes"] for r in records)
    print(f"golden merge: {len(folders)} shard(s), {rows:,} cases in {len(records)} files ({size / 1e6:.1f} MB) "
          f"-> {args.out}")
    if isinstance(p, D.Params):
        for line in hole_lines(p):
            print(line, file=sys.stderr)
    return 0


def hole_lines(p: D.Params) -> list[str]:
    """One line per partition that --cases leaves short of closure: how many classes and cross
    cells got no case, and which (the manifest's `holes`)."""
    out = []
    for part in D.partitions(p):
        holes = D.holes_of(p, part)
        if holes:
            classes = [h for h in holes if ":" not in h]
            cells = [h for h in holes if ":" in h]
            pts = len(D.points_for(part))
            out.append(f"golden: {part.path}: {len(classes)} of {len(D.classes_for(part)[0])} classes and "
                       f"{len(cells)} cross cell(s) without a case (--cases {p.cases}; closure needs {pts}): "
                       + ", ".join(holes))
    return out


def _write(args, out: pathlib.Path, p, plan, keys, write_chunk, manifest):
    """Write the data files of `plan` (those --resume finds done are kept) through the runner,
    then the manifest; (file records, rows, bytes, rate or None when nothing was written).
    `keys(part)` is the task's partition, `manifest(p, records)` the manifest (golden and
    golden --streams share this)."""
    from emulator.golden.runner import Progress, run as run_tasks
    if args.shard:                 # written first: the folder holds a shard, unfinished (files null)
        from emulator.golden import shards
        D.write_json(out / shards.SHARD, shards.doc(p, *args.shard_at, None))
    tasks, records = [], []
    for part, chunk, n in plan:
        path = out / part.path / D.file_name(chunk)
        if args.resume and path.is_file():
            records.append(D.file_record(out, path))
            continue
        tasks.append((str(out), p.to_json(), keys(part), chunk, n, args.backend))
    total = sum(t[4] for t in tasks)
    progress = Progress(total, len(tasks), enabled=not args.quiet)
    # no more worker processes than files: the rest would only start and idle
    workers = min(args.workers, max(len(tasks), 1)) if args.workers else None
    times: dict = {}
    run_tasks(tasks, write_chunk, lambda task, rec: (records.append(rec), progress.add(task[4])),
              workers=workers, scheduler=args.scheduler, cuda=args.backend == "gpu", timings=times)
    progress.close()
    rate = progress.rate
    if (workers or args.scheduler) and tasks:
        # the cluster's start (worker processes, imports, Numba caches: its warm-up) is its own
        # figure; the rate is the chunks' alone (docs/performance.md, "Beyond one machine")
        what = f"local cluster of {workers} worker(s)" if workers else f"scheduler {args.scheduler}"
        print(f"golden: {what} ready in {times['start_s']:.2f} s (warm-up included); the {len(tasks):,} "
              f"chunk(s) took {times['work_s']:.2f} s")
        rate = total / max(times["work_s"], 1e-9)
    if args.shard:                 # a shard's manifest: shard.json with its records (emulator/golden/shards.py)
        D.write_json(out / shards.SHARD, shards.doc(p, *args.shard_at, records))
    else:
        D.write_json(out / D.MANIFEST, manifest(p, records))
    return (records, sum(r["rows"] for r in records), sum(r["bytes"] for r in records),
            rate if total else None)


def _stream_params(args):
    from emulator.golden import streams_dataset as SD
    missing = [f"--{n}" for n in ("blocks", "cases", "out") if getattr(args, n) in (None, "")
               and not (n == "out" and args.plan)]
    if missing:
        raise CommandError(f"missing {', '.join(missing)} (see tile-emu golden --help)", 2)
    if args.dst_dtypes:
        raise CommandError("--dst-dtypes is for single-block goldens; with --streams, --dtypes constrains TCVT's "
                           "destinations too", 2)
    for name, v, lo, hi in (("blocks", args.blocks, 1, SD.MAX_BLOCKS), ("cases", args.cases, 1, D.MAX_CASES),
                            ("group-cases", args.group_cases or 1, 1, SD.CHUNK_CASES)):
        if not lo <= v <= hi:
            raise CommandError(f"--{name} {v}: from {lo} to {hi:,}", 2)
    frac = SD.ILLEGAL_FRACTION if args.illegal_fraction is None else args.illegal_fraction
    if not 0 <= frac <= 1:
        raise CommandError(f"--illegal-fraction {frac}: from 0 to 1", 2)
    if args.workers is not None and not 1 <= args.workers <= max_workers():
        raise CommandError(f"--workers {args.workers}: from 1 to {max_workers()} (the CPUs this process may use)", 2)
    if args.workers and args.scheduler:
        raise CommandError("--workers and --scheduler exclude each other", 2)
    if args.profile not in PROFILES:
        raise CommandError(f"--profile {quote(args.profile)}: one of {', '.join(PROFILES)}", 2)
    if not D.SEED_RANGE[0] <= args.seed < D.SEED_RANGE[1]:
        raise CommandError(f"--seed {args.seed}: from -2^63 to 2^64 - 1", 2)
    kw = {}
    if args.shapes:
        kw["shapes"] = D.parse_list(args.shapes, "shapes")
    if args.group_cases:
        kw["group_cases"] = args.group_cases
    if args.ops is not None:                # the instructions and DataTypes a DUT implements
        kw["ops"] = tuple(o.upper() for o in D.parse_list(args.ops, "ops"))
    if args.dtypes is not None:             # (names as the tables spell them: FP16, not fp16)
        kw["dtypes"] = tuple(D._dtype(d) for d in D.parse_list(args.dtypes, "dtypes"))
    p = SD.StreamParams(blocks=args.blocks, cases=args.cases, seed=args.seed, illegal_fraction=float(frac),
                        profile=args.profile, **kw)
    SD.chunks(p, args.out != "-")
    if args.scheduler:
        from emulator.golden.runner import check_scheduler
        check_scheduler(args.scheduler)
    return p


def _generate_streams(args) -> int:
    """golden --streams: the same machinery as _generate, with the stream dataset's chunks."""
    from emulator.golden import streams_dataset as SD
    p = _stream_params(args)

    def summary(out, records, rows, size, rate):
        print(f"{rows:,} streams of {p.blocks} blocks in {len(records)} files ({size / 1e6:.1f} MB) -> {out}"
              f"{_shard_note(args)}"
              + (f"; {rate * p.blocks:,.0f} stream-blocks/s" if rate is not None else ""))
        for line in SD.instruction_lines(out, p, None if args.shard else records):
            print(line, file=sys.stderr)
    return _produce(args, p, "streams", SD.chunks, SD.chunk_table, lambda part: part.keys(), SD.write_chunk,
                    SD.manifest, summary, SD.check_resumable, read=SD.read_params, manifest=SD.read_manifest)


def _part_dict(part: D.Partition) -> dict:
    return {"op": part.op, "dtype": part.dtype, "dst": part.dst, "rmode": part.rmode, "sat": part.sat}


def _coverage(args) -> int:
    """golden --coverage DIR [DIR ...] [--format text|json|ucis] [--out FILE]: one dataset's
    coverage, or several of one kind merged (emulator/golden/coverage_report.py).  Everything is
    read and checked before anything is written; --out is written whole or not at all."""
    from emulator.golden import coverage_report as R
    fmt = args.format or "text"
    if fmt not in ("text", "json", "ucis"):
        raise CommandError(f"--coverage --format {fmt}: text, json or ucis ({fmt} is an export format)", 2)
    if fmt == "ucis":
        try:
            R.check_ucis()
        except R.NoUcis as exc:
            raise CommandError(str(exc), 3) from None
    if args.out:
        for folder in args.coverage:
            _outside(folder, args.out)
    if fmt == "text" and len(args.coverage) == 1:
        from emulator.golden import kinds
        table = kinds.detect(args.coverage[0]).coverage_text(args.coverage[0])    # a kind's own table
        if table is not None:
            return _emit(args.out, table + "\n")
    try:
        doc = R.coverage(list(args.coverage))
    except R.MixedKinds as exc:
        raise CommandError(str(exc), 2) from None
    if fmt == "json":
        return _emit(args.out, json.dumps(doc, indent=1) + "\n")
    if fmt == "text":
        return _emit(args.out, R.text(doc) + "\n")
    buf = io.StringIO()
    R.write_ucis(doc, buf)
    return _emit(args.out, buf.getvalue())


def _emit(out: str | None, text: str) -> int:
    """text on stdout, or into the file `out` (written whole or not at all)."""
    if not out:
        sys.stdout.write(text)
        return 0
    from emulator.commands import cannot_write
    from isa.atomicio import OutputPathError, atomic_open
    try:
        with atomic_open(out, "w", encoding="utf-8") as f:
            f.write(text)
    except OutputPathError as exc:
        raise CommandError(str(exc), 1) from None
    except OSError as exc:
        raise CommandError(cannot_write(out, exc), 1) from None
    return 0


def coverage_table(folder) -> str:
    """Classes x partitions (n/a where a partition cannot have the class), the crosses and the
    holes of a golden dataset, opened through open_dataset (emulator/golden/coverage_report.py)."""
    from emulator.golden import coverage_report as R
    return R.text(R.golden_model(folder))


def _outside(dataset: str, out: str | None) -> None:
    """An export's --out may not lie in the dataset folder (nor be it): the dataset would hold a
    file its manifest does not list, and every later verify would refuse it."""
    from emulator.commands import distinct_paths
    if not out:
        return
    distinct_paths({"DATASET": dataset}, {"--out": out})
    folder, target = os.path.realpath(dataset), os.path.realpath(out)
    if os.path.commonpath([folder, target]) == folder:
        raise CommandError(f"--out {quote(out)} lies in the dataset folder {quote(dataset)}: "
                           "the dataset would hold a file its manifest does not list", 2)


def _export(args) -> int:
    from emulator.golden.export import ROUNDING, function_name, lines
    from isa.atomicio import OutputPathError, atomic_open
    if args.dataset:
        _outside(args.dataset, args.out)
    if args.format == "hex":                 # a folder of files: emulator/golden/hexport.py
        from emulator.golden import kinds
        if not args.dataset or not args.out:
            raise CommandError("export --format hex needs DATASET --out FOLDER", 2)
        if D.store.protocol(args.dataset) not in (None, "file", "local"):
            raise CommandError(f"export --format hex reads a local dataset folder, not {quote(args.dataset)}: copy it "
                               "here first (verify, --coverage and --format testfloat read URLs)", 2)
        try:                                 # the kind's hex export (emulator/golden/hexport.py, streams_hexport.py)
            print(kinds.detect(args.dataset).write_hex(args.dataset, args.out, args.op, args.dtype, args.dst,
                                                       args.rmode))
        except kinds.Usage as exc:
            raise CommandError(str(exc), 2) from None
        return 0
    if args.format in ("text", "json", "ucis"):
        raise CommandError(f"--format {args.format} is a --coverage format; export writes testfloat or hex", 2)
    if not args.dataset or not args.format or not args.op or not args.dtype:
        raise CommandError("export needs DATASET --format testfloat --op OP --dtype DTYPE", 2)
    name = function_name(args.op.upper(), args.dtype.upper() if len(args.dtype) <= 4 else args.dtype, args.dst)
    blocks = lines(args.dataset, args.op, args.dtype, args.dst, args.rmode)
    blocks = itertools.chain([next(blocks, b"")], blocks)     # the dataset checked before --out is opened
    if args.out:                             # a file, written whole or not at all
        from emulator.commands import cannot_write
        try:
            with atomic_open(args.out, "wb") as out:
                for block in blocks:
                    out.write(block)
        except OutputPathError as exc:
            raise CommandError(str(exc), 1) from None
        except OSError as exc:
            raise CommandError(cannot_write(args.out, exc), 1) from None
    else:
        out = sys.stdout.buffer
        for block in blocks:
            out.write(block)
        out.flush()
    mode = ROUNDING.get((args.rmode or "RNE").upper(), "-rnear_even")
    print(f"# check with: testfloat_ver {name} {mode} -tininessafter < FILE", file=sys.stderr)
    return 0


def _extract(args) -> int:
    """golden extract DIR --case [PARTITION:]K [--block B] --out D: one case's reproducer
    (emulator/golden/extract.py), written into the new folder D whole or not at all."""
    from emulator.commands import cannot_write
    from emulator.golden.reproduce import NoSuchCase, extract
    from emulator.stateio import StateFileError
    if not args.dataset or args.case is None or not args.out:
        raise CommandError("extract needs DATASET --case [PARTITION:]K --out FOLDER", 2)
    if D.store.protocol(args.dataset) not in (None, "file", "local"):
        raise CommandError(f"extract reads a local dataset folder, not {quote(args.dataset)}", 2)
    if args.block is not None and args.block < 0:
        raise CommandError(f"--block {args.block} is negative", 2)
    folder, target = os.path.realpath(args.dataset), os.path.realpath(args.out)
    if folder == target:
        raise CommandError(f"--out {quote(args.out)} is the dataset folder: extract writes a new folder", 2)
    _outside(args.dataset, args.out)
    if os.path.commonpath([folder, target]) == target:
        raise CommandError(f"--out {quote(args.out)} holds the dataset folder {quote(args.dataset)}: "
                           "extract writes a new folder", 2)
    out = pathlib.Path(args.out)
    if out.is_symlink() or (out.exists() and not (out.is_dir() and not any(out.iterdir()))):
        raise CommandError(f"--out {quote(args.out)} exists: extract writes a new (or empty) folder", 2)
    if not out.parent.is_dir():
        raise CommandError(f"--out {quote(args.out)}: no folder {quote(str(out.parent))} to create it in", 2)
    try:
        r = extract(args.dataset, args.case, args.block)
    except NoSuchCase as exc:
        raise CommandError(str(exc), 2) from None
    try:
        r.write(out)
    except (OSError, StateFileError) as exc:
        raise CommandError(cannot_write(args.out, exc), 1) from None
    prefix = "" if args.block is None else f", blocks 0 to {args.block}"
    end = (f"faults at block {r.fault['block']}: {r.fault['reason']}" if r.fault else
           f"commits {len(r.blocks)} block(s)")
    print(f"golden extract: {r.spec} ({r.cls}{prefix}) {end} -> {args.out}")
    run, diff, cmp = r.commands(args.out)
    print(f"  replay:  {run}" + ("   # exit 1: the expected fault" if r.fault else ""))
    print(f"  compare: {diff}   # exit 0: the expected final state")
    print(f"  compare: {cmp}   # no output: the expected commit log, byte for byte")
    return 0
