"""`tile-emu run STREAM.tbs --init INIT.arrow --out FINAL.arrow [--profile ieee] [--backend B]`.

Runs a binary block stream from an initial state (an empty machine without --init).  On a
failing block it prints the block index, byte offset and reason, still writes the state of
the last committed block to --out, and exits 1.  An --init file of many machines runs them as
a MachineBatch (docs/machine.md, "Batches"): each machine stops at its own first failing block,
every message names the machine, --out holds every machine's committed state, and the exit
status is 1 when any machine faulted.  --backend: reference | cpu | gpu | auto (default:
reference for one machine, cpu for many).  A `.regions.json` input is an execution-calculus
program and is handed to emulator.calculus.cli.run_regions.
"""
from __future__ import annotations

import sys
from dataclasses import replace

from emulator.cli import CommandError


def add_arguments(parser):
    parser.add_argument("stream", help=".tbs binary block stream (or a .regions.json calculus program)")
    parser.add_argument("--init", help="initial state (.arrow); default: an empty machine")
    parser.add_argument("--out", help="write the final state here (.arrow)")
    parser.add_argument("--profile", default=None, help="numeric profile (default: the init file's, else ieee)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    parser.add_argument("--backend", choices=("reference", "cpu", "gpu", "auto"), default=None,
                        help="execution backend (default: reference for one machine, cpu for many)")


def initial_machine(args):
    from emulator import Machine
    from emulator.stateio import StateFileError
    from kernels.numeric.profiles import PROFILES

    if args.profile is not None and args.profile not in PROFILES:
        raise CommandError(f"unknown profile {args.profile!r}; known: {', '.join(sorted(PROFILES))}", 2)
    try:
        m = Machine.load(args.init) if args.init else Machine()
    except StateFileError as exc:
        raise CommandError(str(exc)) from None
    if args.profile is not None:
        m.config = replace(m.config, profile=args.profile)
    return m


def write_state(m, path):
    """Save `m` to `path`; an unwritable path is a one-line CommandError."""
    from emulator.stateio import save_state
    try:
        save_state(m, path)
    except OSError as exc:
        raise CommandError(f"{path}: cannot write: {exc}") from None


def run(args) -> int:
    if args.stream.endswith(".regions.json"):
        from emulator.calculus.cli import run_regions
        return run_regions(args)
    try:
        with open(args.stream, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise CommandError(f"{args.stream}: cannot read: {exc}") from None
    if args.init or args.backend not in (None, "reference"):
        return run_batch(args, data)
    m = initial_machine(args)
    result = m.run(data)
    if args.out:
        write_state(m, args.out)
    err = result.error
    if err is not None:
        where = err.where
        cause = err.cause if hasattr(err.cause, "field") else f"{err.reason}: {getattr(err.cause, 'reason', err.cause)}"
        print(f"tile-emu run: {args.stream}: {where}: {cause}", file=sys.stderr)
        if args.out:
            print(f"tile-emu run: state after {result.executed} committed block(s) written to {args.out}",
                  file=sys.stderr)
        return 1
    if not args.quiet:
        from kernels.numeric.flags import describe
        status = " ".join(f"PE{p}={describe(m.status(p))}" for p in range(m.config.num_pes))
        print(f"{args.stream}: {result.executed} block(s) executed; status {status}"
              + (f"; final state {args.out}" if args.out else ""))
    return 0


def _cause(err) -> str:
    return str(err.cause) if hasattr(err.cause, "field") else f"{err.reason}: {getattr(err.cause, 'reason', err.cause)}"


def run_batch(args, data: bytes) -> int:
    """Every machine of --init (one or many) through a MachineBatch on the chosen backend."""
    from emulator import Machine, MachineBatch
    from emulator.backends import BackendError
    from emulator.batchio import load_machines, save_machines
    from emulator.stateio import StateFileError
    from isa.atomicio import OutputPathError
    from kernels.numeric.profiles import PROFILES

    if args.profile is not None and args.profile not in PROFILES:
        raise CommandError(f"unknown profile {args.profile!r}; known: {', '.join(sorted(PROFILES))}", 2)
    try:
        machines = load_machines(args.init) if args.init else [Machine()]
    except StateFileError as exc:
        raise CommandError(str(exc)) from None
    if args.profile is not None:
        for m in machines:
            m.config = replace(m.config, profile=args.profile)
    backend = args.backend or ("reference" if len(machines) == 1 else "cpu")
    try:
        batch = MachineBatch(machines, backend)
    except BackendError as exc:
        raise CommandError(str(exc)) from None
    many = len(machines) > 1
    if args.backend == "auto" and not args.quiet:
        print(f"tile-emu run: {batch.why}", file=sys.stderr)
    result = batch.run(data)
    if args.out:
        try:
            save_machines([batch.machine(k) for k in range(len(batch))], args.out)
        except (OSError, OutputPathError) as exc:
            raise CommandError(f"{args.out}: cannot write: {exc}") from None
    for k in result.faulted:
        err = result.errors[k]
        who = f"machine {k}: " if many else ""
        print(f"tile-emu run: {args.stream}: {who}{err.where}: {_cause(err)}", file=sys.stderr)
    if not result.ok:
        if args.out:
            counts = sorted(set(result.executed))
            what = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}..{counts[-1]}"
            print(f"tile-emu run: state after {what} committed block(s)"
                  + (f" per machine ({len(result.faulted)} of {len(batch)} faulted)" if many else "")
                  + f" written to {args.out}", file=sys.stderr)
        return 1
    if not args.quiet:
        from kernels.numeric.flags import describe
        if many:
            print(f"{args.stream}: {len(batch)} machines, {result.executed[0]} block(s) executed on each "
                  f"({batch.backend} backend)" + (f"; final states {args.out}" if args.out else ""))
        else:
            m = batch.machine(0)
            status = " ".join(f"PE{p}={describe(m.status(p))}" for p in range(m.config.num_pes))
            print(f"{args.stream}: {result.executed[0]} block(s) executed; status {status}"
                  + (f"; final state {args.out}" if args.out else ""))
    return 0
