"""MachineBatch: N independent machines running one block stream, tiles stacked per machine --
the public face of the batched engine (emulator/engine.py; docs/machine.md, "Batches").

    batch = MachineBatch([Machine.load(p) for p in paths], backend="cpu")
    result = batch.run(stream)          # per machine: committed blocks, StreamError or None
    batch.machine(3).digest()           # == running machine 3 alone on the reference

It adds to the engine what the public API needs: backends by name, loading a state file, and
machines handed out as emulator.Machine.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from .backends import resolve_backend
from .config import MachineConfig
from .engine import BatchEngine, BatchResult, Cohort, Refused, Slot, Stores, checked_machines  # noqa: F401  (re-exported)
from .machine import Machine, load_machines


class MachineBatch(BatchEngine):
    """N independent machines that execute the same block stream (emulator/engine.py)."""

    def __init__(self, machines: Iterable[Machine], backend: str = "cpu", profile: str | None = None,
                 *, detach_stopped: bool = True):
        """`profile` (a kernels.numeric.profiles name) runs every machine under that numeric
        profile instead of its own configuration's.

        `detach_stopped` says what becomes of a cohort member a block rejects.  True (the
        default): it is detached into a host machine holding the state of its last commit.
        False: it stays stacked, in a cohort of stopped members that no later block of the
        stream reaches -- its state is simply no longer advanced, its StreamError, fault
        records and 'stopped' status are the same, and machine(k), tile_arrays, stacks,
        statuses and save read it as before; the next `run` (or stepped stream) starts it
        again.  This saves materializing a machine (every tile) per stopped member, which a
        caller that never reads the stopped state back (the stream golden generator) does not
        need.  A member whose fault only the reference can name (an element rule, a GPR window)
        still runs the block on a materialized machine, as always, and keeps that one."""
        machines = checked_machines(machines, profile)
        super().__init__(machines, resolve_backend(backend), detach_stopped=detach_stopped)

    @classmethod
    def load(cls, path, backend: str = "cpu", config: MachineConfig | None = None,
             profile: str | None = None, *, detach_stopped: bool = True) -> "MachineBatch":
        return cls(load_machines(path, config), backend, profile, detach_stopped=detach_stopped)

    @classmethod
    def from_stacks(cls, config: MachineConfig, n: int, tiles: dict, backend: str = "cpu",
                    gprs: np.ndarray | None = None, *, detach_stopped: bool = True) -> "MachineBatch":
        """n machines of one shape straight from stacked arrays, without a host Machine each:
        `tiles` maps (PE, tile id) -> (Descriptor, elems (n, elements), defined (n, elements));
        `gprs` (n, 4, 32) uint64 or None (all zero; r0 must be 0).  Status starts at zero.  The
        tiles must be valid architectural state (as validate_tile accepts); the golden
        generator builds them so.  `detach_stopped`: as the constructor's."""
        return cls.of_stacks(config, n, tiles, resolve_backend(backend), gprs, detach_stopped=detach_stopped)

    def machine(self, k: int) -> Machine:
        """Machine k's state as a new host Machine (a copy: changing it leaves the batch alone)."""
        m = super().machine(k)
        out = Machine.from_state(m.state)
        out.engines = m.engines
        return out
