"""`tile-emu run STREAM.tbs --init INIT.arrow --out FINAL.arrow [--log COMMITS.arrow|.jsonl]
[--profile ieee] [--backend B] [--timing] [--fabric F] [--fuse]`.

Runs a binary block stream from an initial state (an empty machine without --init).  On a
failing block it prints the block index, byte offset and reason, still writes the state of
the last committed block to --out, and exits 1.  One path per kind of input: one machine on
the reference or on cpu runs as a Machine (run_one; on cpu, the default, Machine(backend="cpu"):
the fast engine's one-machine path with its compiled block programs, the same bytes); many machines, or
one on gpu or auto or with --fuse, run as a MachineBatch (run_batch; docs/machine.md, "Batches"), and with
--workers or --scheduler sharded over Dask workers (emulator.sharded): each machine stops at its
own first failing block,
every message names the machine, --out holds every machine's committed state, and the exit
status is 1 when any machine faulted.  --backend: reference | cpu | gpu | auto (default:
cpu, one machine or many; --timing and --fabric run on the reference).  --fuse runs chains of consecutive element-wise
blocks that emulator.calculus.check_plan admits as one pass per cohort (emulator.fusion;
same states, counts and errors; default backend cpu).  --fabric admits every block through a fabric model
of the PE engines; --timing (default model: the shipped pe.json) also prints each block's
issue/complete cycles, engine utilisation and total cycles (docs/timing.md); both run one
machine on the reference.  A `.regions.json` input is an execution-calculus program and is
handed to emulator.calculus.cli.run_regions; its budget options (--max-cost, --deadline,
--max-code) are a usage error with a .tbs stream.  --machine K takes machine K of a
multi-machine --init file alone (what --timing, --fabric and region programs, which run one
machine, need).  --out naming the same file as an input is a usage error (exit 2).
--log writes the commit log (docs/commit-log.md): a record per committed (block, PE) and one
per fault, in (machine, block, PE) order, Arrow IPC or JSON lines by its suffix, atomically
(with --machine K the records name machine K).
Its path is checked, and its temporary file created, before any block runs: a wrong suffix,
a missing or unwritable folder, or the same file as an input or --out is one line, exit 2.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from dataclasses import replace
from itertools import islice
from pathlib import Path

from emulator.cli import UNAVAILABLE, CommandError
from emulator.commands import cannot_write, count, distinct_paths, output_path
from isa.atomicio import OutputPathError, quote, shown, why
from kernels.numeric.flags import describe
from kernels.numeric.profiles import DEFAULT_PROFILE, PROFILES, known


def add_arguments(parser):
    parser.add_argument("stream", help=".tbs binary block stream (or a .regions.json calculus program)")
    parser.add_argument("--init", help="initial state (.arrow); default: an empty machine")
    parser.add_argument("--machine", type=count, metavar="K",
                        help="run only machine K of a multi-machine --init file, as one machine "
                             "(--timing, --fabric and region programs run one)")
    parser.add_argument("--out", type=output_path, help="write the final state here (.arrow)")
    parser.add_argument("--log", type=output_path, metavar="FILE",
                        help="write the commit log here: .arrow (Arrow IPC) or .jsonl (JSON lines); "
                             "docs/commit-log.md")
    parser.add_argument("--profile", default=None, metavar="NAME",
                        help=f"numeric profile, one of {', '.join(PROFILES)} (default: the init file's, "
                             f"else {DEFAULT_PROFILE})")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    parser.add_argument("--timing", action="store_true", help="print per-block issue/complete cycles, "
                        "engine utilisation and total cycles (docs/timing.md)")
    parser.add_argument("--fabric", help="fabric description of the PE engines that admits every block "
                        "(default with --timing: the shipped pe.json)")
    parser.add_argument("--backend", choices=("reference", "cpu", "gpu", "auto"), default=None,
                        help="execution backend (default: cpu; --timing and --fabric: reference; a stream of at most 8 "
                             "blocks on one machine: the reference without Numba, the same bytes)")
    parser.add_argument("--fuse", action="store_true",
                        help="batch backends: run chains of element-wise blocks that the calculus's check_plan "
                             "admits as one pass (same results; docs/machine.md 'Batches')")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="shard the machines of --init over a local Dask cluster of N workers (backend gpu: "
                             "one a GPU, dask-cuda); the same bytes as one process (docs/machine.md 'Sharded runs')")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="shard the machines of --init over an existing Dask cluster (tcp://host:port)")
    add_region_arguments(parser)


WHAT = {int: "integer", float: "number"}      # what _positive(kind) asks for, in its message


def _positive(kind):
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            v = None
        if v is None or not 0 < v < float("inf"):
            raise argparse.ArgumentTypeError(f"expected a positive {WHAT[kind]}, got {quote(text)}")
        return v
    return parse


# the options add_region_arguments adds: (flag, argparse dest)
REGION_ONLY = (("--max-cost", "max_cost"), ("--deadline", "deadline"), ("--max-code", "max_code"))


def add_region_arguments(parser):
    parser.add_argument("--max-cost", type=_positive(int), default=None, metavar="N",
                        help="region programs: refuse, before running, a program whose static cost exceeds N "
                             "units (default 4194304; docs/regions.md 'Budgets')")
    parser.add_argument("--deadline", type=_positive(float), default=None, metavar="S",
                        help="region programs: stop a run still going after S seconds (default 60)")
    parser.add_argument("--max-code", type=_positive(int), default=None, metavar="N",
                        help="region programs: refuse, before parsing, a program holding more than N characters "
                             "of code (default 1048576; docs/regions.md 'Budgets')")


def init_machines(args, one: str | None = None) -> list:
    """The machines of --init (one empty machine without it); with --machine K, machine K alone
    (read alone: emulator.batchio.StateFile).  `one` says what runs a single machine: then a file
    of many without --machine is a one-line error saying what a CLI user can do instead."""
    from emulator import Machine
    from emulator.batchio import StateFile
    from emulator.stateio import StateFileError

    if args.init is None:
        if args.machine is not None:
            raise CommandError("--machine K picks a machine of an --init file; give --init", 2)
        return [Machine()]                 # --init "" is an error below, not "empty"
    try:
        f = StateFile(args.init)
        n = len(f)
        if args.machine is not None:
            if args.machine >= n:
                raise CommandError(f"{shown(args.init)}: no machine {args.machine}; the file holds {n} "
                                   f"(0..{n - 1})", 2)
            return [Machine.from_state(f.state(args.machine))]
        if one is not None and n > 1:
            raise CommandError(f"{shown(args.init)} holds {n} machines; {one}: pick one with --machine K "
                               f"(0..{n - 1})")
        return [Machine.from_state(st) for st in f.states()]
    except StateFileError as exc:
        raise CommandError(str(exc)) from None


def check_profile(args) -> None:
    """An unknown --profile is one line naming the known ones (the profile table's), exit 2."""
    if args.profile is not None and args.profile not in PROFILES:
        raise CommandError(f"--profile {quote(args.profile)}: unknown numeric profile; known: {known()}", 2)


def initial_machine(args):
    check_profile(args)
    if args.stream.endswith(".regions.json"):
        one = "a region program runs on one machine"
    else:
        flags = [f for f, on in (("--timing", args.timing), ("--fabric", args.fabric is not None)) if on]
        both = len(flags) == 2
        one = (f"{' and '.join(flags)} {'run' if both else 'runs'} one machine (without {'them' if both else 'it'}, "
               "every machine runs as a batch)")
    m, = init_machines(args, one)
    if args.profile is not None:
        m.config = replace(m.config, profile=args.profile)
    return m


def write_state(m, path):
    """Save `m` to `path`; an unwritable path is a one-line CommandError."""
    from emulator.stateio import save_state
    try:
        save_state(m, path)
    except (OSError, OutputPathError) as exc:
        raise CommandError(cannot_write(path, exc)) from None


def print_timing(data: bytes, executed: int, start) -> None:
    """The timing report of the `executed` blocks that committed, run from state `start`."""
    from isa.encoding import iter_blocks
    from emulator.timing import render, stream_timing

    blocks = [b for _, b in islice(iter_blocks(data), executed)]
    print("\n".join(render(stream_timing(blocks, start, start.engines))))


def _paths(args) -> None:
    """run's inputs and outputs through the shared check; a region program writing a state also
    writes X.case<k>.arrow beside --out X.arrow (emulator.calculus.cli), so an input of that name
    counts as one more output's path."""
    inputs = {"STREAM": args.stream, "--init": args.init, "--fabric": args.fabric}
    outputs = {"--out": args.out, "--log": getattr(args, "log", None)}
    if args.out and args.stream.endswith(".regions.json") and not args.out.endswith(".json"):
        from emulator.calculus.cli import _case_path
        out = Path(args.out)
        case = re.compile(re.escape(out.stem) + r"\.case([1-9][0-9]{0,8})" + re.escape(out.suffix))
        for path in filter(None, inputs.values()):
            for name in {Path(path).name, os.path.basename(os.path.realpath(path))}:
                k = case.fullmatch(name)
                if k:
                    outputs[f"--out's case {k[1]} file"] = _case_path(args.out, int(k[1]))
    distinct_paths(inputs, outputs)


def open_commit_log(args, machines: int):
    """The --log CommitLog (None without --log), its temporary file created: an unwritable path
    is a one-line usage error (exit 2) before any block runs."""
    if args.log is None:
        return None
    from emulator.commitlog import CommitLogError, open_log
    try:
        return open_log(args.log, machines)
    except CommitLogError as exc:
        raise CommandError(str(exc), 2) from None


def _check_log(args) -> None:
    """What can be known about --log from its name alone (suffix, folder), before any input is read."""
    if args.log is None:
        return
    from emulator.commitlog import CommitLogError, check_log_path
    if args.stream.endswith(".regions.json"):
        raise CommandError("--log applies to .tbs block streams, not region programs", 2)
    try:
        check_log_path(args.log)
    except CommitLogError as exc:
        raise CommandError(str(exc), 2) from None


def run(args) -> int:
    check_profile(args)
    _paths(args)
    _check_log(args)
    if args.stream.endswith(".regions.json"):
        if args.timing or args.fabric is not None or args.fuse or args.backend not in (None, "reference") \
                or args.workers is not None or args.scheduler:
            raise CommandError("--timing, --fabric, --fuse, --workers, --scheduler and --backend (but reference) "
                               "apply to .tbs block streams, not region programs", 2)
        from emulator.calculus.cli import run_regions
        return run_regions(args, initial_machine, write_state)
    given = [flag for flag, name in REGION_ONLY if getattr(args, name, None) is not None]
    if given:                    # a budget that would silently bound nothing
        raise CommandError(f"{', '.join(given)} apply to region programs (.regions.json), not .tbs block "
                           "streams", 2)
    try:
        with open(args.stream, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise CommandError(f"{shown(args.stream)}: cannot read: {why(exc)}") from None
    if args.fuse and (args.timing or args.fabric is not None or args.backend == "reference"):
        raise CommandError("--fuse needs a batch backend (cpu, gpu, auto); --timing, --fabric and "
                           "--backend reference run block by block", 2)
    if (args.timing or args.fabric is not None) and args.backend not in (None, "reference"):
        raise CommandError(f"--backend {args.backend}: --timing and --fabric run one machine on the "
                           "reference backend", 2)
    if args.workers is not None or args.scheduler:     # the machines sharded over Dask workers
        if args.timing or args.fabric is not None:
            raise CommandError("--timing and --fabric run one machine; --workers/--scheduler shard a batch", 2)
        from emulator.sharded import run_sharded
        return run_sharded(args, data)
    if args.timing or args.fabric is not None:
        return run_one(args, data, initial_machine(args))
    machines = init_machines(args)
    if args.profile is not None:
        for m in machines:
            m.config = replace(m.config, profile=args.profile)
    if len(machines) == 1 and args.backend in (None, "reference", "cpu") and not args.fuse:
        m = machines[0]
        if args.backend is None and short_stream(data):
            return run_short(args, data, m)
        if args.backend != "reference":  # Machine(backend="cpu"): the engine's one-machine path
            m = m.copy("cpu")
        return run_one(args, data, m)
    return run_batch(args, data, machines)


# A stream of at most this many blocks, run on one machine without --backend, runs on the
# reference with the compiled tiers off (issue 32 target 7): loading Numba and the compiled
# kernels costs about 0.8 s of CPU, more than the reference's NumPy takes for a few blocks.
SHORT_STREAM_BLOCKS = 8


def short_stream(data: bytes) -> bool:
    """Whether the header of `data` declares at most SHORT_STREAM_BLOCKS blocks (a stream whose
    header is wrong is not short: the engine reports it, as for any stream)."""
    from isa.encoding import DecodeError, check_header
    try:
        blocks, _ = check_header(data)
    except DecodeError:
        return False
    return blocks <= SHORT_STREAM_BLOCKS


def run_short(args, data: bytes, m) -> int:
    """`run_one` on the reference machine with every numeric call on the NumPy reference
    (kernels.numeric.tiers.interpreted): the same bytes as the cpu backend (the reference is its
    oracle, and every compiled tier computes the reference's bits), without importing Numba."""
    from kernels.numeric.tiers import interpreted
    with interpreted():
        return run_one(args, data, m)


def run_one(args, data: bytes, m) -> int:
    """One machine, on the reference or (--backend cpu) on the engine's one-machine path (with
    --fabric, every block admitted by the fabric model; with --timing, its cycles printed)."""
    if args.fabric is not None or args.timing:
        from emulator.timing import EngineModelError, PEEngines
        try:
            m.engines = PEEngines.load(args.fabric)
        except EngineModelError as exc:
            raise CommandError(str(exc)) from None
    start = m.copy() if args.timing else None
    log = open_commit_log(args, 1)
    with log if log is not None else _nothing():
        result = m.run(data, log=_as_picked(args, log))
        if args.out:
            write_state(m, args.out)
    if args.timing and not args.quiet and (result.executed or result.ok):
        print_timing(data, result.executed, start)
    err = result.error
    if err is not None:
        print(f"tile-emu run: {shown(args.stream)}: {err.where}: {err.detail}", file=sys.stderr)
        if args.out:
            print(f"tile-emu run: state after {result.executed} committed block(s) written to {shown(args.out)}",
                  file=sys.stderr)
        return 1
    if not args.quiet:
        print(_one_status(args, m, result.executed, log))
    return 0


def _one_status(args, m, executed: int, log) -> str:
    """The success line of a run of one machine."""
    status = " ".join(f"PE{p}={describe(m.status(p))}" for p in range(m.config.num_pes))
    return (f"{args.stream}: {executed} block(s) executed; status {status}"
            + (f"; final state {args.out}" if args.out else "") + _logged(args, log))


class _Picked:
    """The log of machine K of an --init file run alone (--machine K): its records name K."""

    def __init__(self, log, k: int):
        self.log, self.k = log, k

    def write(self, records) -> None:
        self.log.write(records.renumbered(machine=self.k))


def _as_picked(args, log):
    return log if log is None or args.machine is None else _Picked(log, args.machine)


def _nothing():
    return contextlib.nullcontext()


def _logged(args, log) -> str:
    return "" if log is None else f"; commit log {args.log} ({log.rows} record(s))"


def run_batch(args, data: bytes, machines: list) -> int:
    """Machines of --init (many, or one on gpu or auto, or with --fuse) through a
    MachineBatch on the chosen backend."""
    from emulator import MachineBatch
    from emulator.backends import BackendError
    from emulator.batchio import save_machines

    backend = args.backend or "cpu"
    try:
        batch = MachineBatch(machines, backend)
    except BackendError as exc:           # a GPU backend without a usable GPU, or not enough device memory
        raise CommandError(str(exc), UNAVAILABLE) from None
    many = len(machines) > 1
    if args.backend == "auto" and not args.quiet:
        print(f"tile-emu run: {batch.why}", file=sys.stderr)
    log = open_commit_log(args, len(batch))
    with log if log is not None else _nothing():
        result = batch.run(data, fuse=args.fuse, log=_as_picked(args, log))
        if args.out:
            try:
                save_machines([batch.machine(k) for k in range(len(batch))], args.out)
            except (OSError, OutputPathError) as exc:
                raise CommandError(cannot_write(args.out, exc)) from None
    for k in result.faulted:
        err = result.errors[k]
        who = f"machine {k}: " if many else ""
        print(f"tile-emu run: {shown(args.stream)}: {who}{err.where}: {err.detail}", file=sys.stderr)
    if not result.ok:
        if args.out:
            counts = sorted(set(result.executed))
            what = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}..{counts[-1]}"
            print(f"tile-emu run: state after {what} committed block(s)"
                  + (f" per machine ({len(result.faulted)} of {len(batch)} faulted)" if many else "")
                  + f" written to {shown(args.out)}", file=sys.stderr)
        return 1
    if not args.quiet:
        if many:
            print(f"{args.stream}: {len(batch)} machines, {result.executed[0]} block(s) executed on each "
                  f"({batch.backend} backend)" + (f"; final states {args.out}" if args.out else "")
                  + _logged(args, log))
        else:
            print(_one_status(args, batch.machine(0), result.executed[0], log))
    return 0
