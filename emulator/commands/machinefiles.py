"""The machine a command starts from (--init, --profile) and the state file it ends with (--out).

Shared by `tile-emu run` for block streams (commands/run.py) and for region programs
(calculus/cli.py); it sits below both so neither imports the other's command module.
"""
from __future__ import annotations

from dataclasses import replace

from emulator.cli import CommandError


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
