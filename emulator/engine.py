"""The batched engine: N independent machines running one block stream, tiles stacked per
machine, and the same engine for one machine (the backends' execution, emulator/backends.py).
Its public faces are emulator.MachineBatch (emulator/batch.py) and emulator.Machine on a
backend other than reference (emulator/machine.py); it imports neither.  Everything here is
proven against the reference machine (emulator/reference.py), which it runs for the rare paths.

    batch = MachineBatch([Machine.load(p) for p in paths], backend="cpu")
    result = batch.run(stream)          # per machine: committed blocks, StreamError or None
    batch.machine(3).digest()           # == running machine 3 alone on the reference

Every machine keeps the exact single-machine semantics (docs/machine.md, "Batches"): a block
illegal on machine k rejects on k alone with the StreamError the reference gives, k keeps the
state of its last commit and its stream stops there; the others go on.

How (the `cpu` engine; `reference` just runs one reference machine per machine):
  * Machines whose architectural *shape* agrees (per PE: tile id -> descriptor) form a cohort.
    A cohort stores each (PE, tile id) as stacked arrays (machines, elements) of payload and
    definedness, plus GPRs (machines, 4, 32) and status (4, machines): PE-major, as the
    executors stack tiles, so a block reads and commits a PE group's statuses as one slice.
  * Per block: isa.legality.resolve once; the descriptor-level preflight once per cohort (its
    descriptors are those of every member: preflight.check reads the cohort as a TileState);
    GPR-offset windows checked for every machine at once (preflight.gpr_offsets,
    window_bounds, window_fits); then one executor call over every selected PE of every
    machine, the sources handed over as semantics.TileStack (P = PEs x machines, PE-major).
    The executors are the reference's own (schemas.EXECUTORS, one per schema), written once
    against the array module `xp` (NumPy, or CuPy on the gpu backend), so on the gpu backend
    tiles stay on the device from block to block.  A role whose PEs' tiles differ in geometry
    is one TileStack with rows padded to the longest payload, each PE's tile read through its
    own layout (addresses are computed on the host from descriptors and offsets, payloads
    gathered on the device).  GPRs live on the host (blocks only read them, for offsets the
    engine checks there); status bytes stay with the tiles.
  * On NumPy, a covered element-wise block over enough elements runs its element work -- results,
    each tile's status, the definedness rule -- as one compiled pass (emulator/batchfuse.py,
    _fused_program) instead of the executor's separate steps; the executor runs everything else.
  * A descriptor rule that fails fails for the whole cohort, with one error.  The element rules
    report to the engine's hook (FailingMembers), which names the members holding an element
    that breaks one (Refused).  Those members then get their exact exceptions from one more
    executor pass over them alone (_first_faults, hook FirstFaults: the reference's own rule on
    each member's tiles, in the reference's order) and leave the cohort, stopped; so does every
    member when a later PE group's descriptors fail (that group's error, unless an earlier
    group's element rule faults first).  What that pass does not decide -- a device cohort, a
    rejection no rule names, a window check that fails (GPR offsets) -- runs the block member
    by member on a materialized reference machine (the rare path, _rare).  Were the reference
    ever to accept a block the engine rejected, that machine would carry on, detached, on the
    reference: correctness never depends on the fast path agreeing.
  * Commit (BatchEngine._commit, given the block's Staged results): each selected PE's slot
    of the destination id becomes a row view of the stacked result, which the next block
    reads back without copying.

  * Fusion (run(..., fuse=True)): a chain of element-wise blocks that emulator.fusion plans
    and emulator.calculus.check_plan admits runs in one pass per cohort (_fused_attempt):
    results stay (P, ValidRow, ValidCol) arrays between its blocks and commit once; members
    with a fault anywhere in the chain run it block by block, as above.

Slot arrays are never written in place (a commit replaces them), so materialized machines and
views stay valid -- with one exception that no holder can see: the fused pass may write its
results over the payload array of the destination it replaces when nothing but that
destination's own slots holds it and no rejection can follow (_spent).

One machine (Machine(backend=...), one_machine): on `cpu` the reference's own block steps on the
machine's own state with this engine's speed caches (HostPlans: a repeated block's plan kept,
sources read in place as one stack), and covered element-wise blocks as compiled block programs
(emulator/blockprog.py: the element work in one Numba call, then one commit); on `gpu` a one-machine batch holding the state on the
device for the length of a stream (OnBatch).
"""
from __future__ import annotations

import sys
from collections import deque
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Iterable, Sequence

import numpy as np

from isa import instructions as I
from isa.block import Block
from isa.errors import DecodeError, IllegalBlockException
from isa.fields import GPR_COUNT, NUM_PES
from isa.legality import ResolvedBlock, resolve
from kernels import numeric

from . import backends, fusion, preflight, schemas, semantics
from .calculus.groups import check_cohorts
from .config import MachineConfig, with_profile
from .reference import BlockResult, Here, ReferenceMachine, Staged, StreamError, one_block, stream_items
from .state import MachineState, PEState, used_bytes
from .tiles import Descriptor, element_dtype, make_tile, rows_of_one_stack, stacked_tiles, to_physical


@dataclass
class BatchResult:
    """Per machine k: `executed[k]` blocks committed, `errors[k]` the StreamError that stopped
    it (None when it ran the whole stream)."""
    executed: list[int]
    errors: list[StreamError | None]
    fused: list[tuple[int, int]] = field(default_factory=list)   # [start, stop) run as one pass


    @property
    def ok(self) -> bool:
        return all(e is None for e in self.errors)

    @property
    def faulted(self) -> list[int]:
        return [k for k, e in enumerate(self.errors) if e is not None]

    def __len__(self) -> int:
        return len(self.errors)


@dataclass
class Slot:
    """One (PE, tile id) of every machine of a cohort: stacked payload and definedness."""
    desc: Descriptor
    elems: Any                          # (machines, elements), read-only
    defined: Any                        # (machines, elements) bool
    stack: tuple | None = field(default=None, repr=False)   # (elems, defined, pes, s) of a commit


def _signature(m: ReferenceMachine) -> tuple:
    return tuple(tuple(sorted((tid, t.desc) for tid, t in pe.tiles.items())) for pe in m.pes)


class Stores:
    """Per PE, tile id -> Slot: the descriptors of machines of one shape, as preflight reads them
    (a preflight.TileState: every member holds these descriptors)."""

    def __init__(self, config: MachineConfig, slots: list[dict[int, Slot]]):
        self.config = config
        self.slots = slots              # per PE: tile id -> Slot

    def store(self, pe: int) -> dict[int, Slot]:
        return self.slots[pe]

    def used_bytes(self, pe: int, location: str, exclude: int | None = None) -> int:
        return used_bytes(self.slots[pe], location, exclude)


class Cohort(Stores):
    """Machines of one architectural shape, state stacked along a leading machine axis; its
    descriptors (Stores) are every member's."""

    def __init__(self, config: MachineConfig, ids: np.ndarray, slots: list[dict[int, Slot]], gprs, status, xp):
        super().__init__(config, slots)
        self.ids = ids                  # batch index of each member
        self.gprs = gprs                # (n, 4, 32) uint64, on the host (blocks only read them)
        self.status = status            # (4, n) uint8, PE-major: a group's rows are the plan's order
        self.xp = xp
        # Slots of separate arrays are stacked when a block first reads them over several PEs
        # (_stack_role): most tiles of a cohort are never read that way, so stacking them all
        # here (a copy of every tile) cost more than the reads it saved.

    def restack(self, tile: int, group: tuple[int, ...]) -> tuple | None:
        """(elems, defined) (S, n, elements) of tile `tile` on PEs `group`, stacked once: the
        slots then hold row views of them (and `stack`), so that the next block over the same
        PEs reads them without copying.  None when some slot is a row of a commit's stack
        already, or the PEs' payloads differ in shape or dtype (the caller concatenates)."""
        slots = [self.slots[p][tile] for p in group]
        if any(s.stack is not None for s in slots) or \
                len({(s.elems.shape, s.elems.dtype) for s in slots}) != 1:
            return None
        shape = (len(group),) + slots[0].elems.shape     # concatenate + reshape: np.stack, without its per-array steps
        e = _readonly(self.xp.concatenate([s.elems for s in slots]).reshape(shape))
        d = _readonly(self.xp.concatenate([s.defined for s in slots]).reshape(shape))
        for i, (p, s) in enumerate(zip(group, slots)):
            self.slots[p][tile] = Slot(s.desc, e[i], d[i], (e, d, group, i))
        return e, d

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def signature(self) -> tuple:
        return tuple(tuple(sorted((tid, s.desc) for tid, s in pe.items())) for pe in self.slots)

    @classmethod
    def of(cls, config, ids, machines: Sequence[ReferenceMachine], xp=np) -> "Cohort":
        """Stack machines of one shape."""
        first = machines[0]
        slots = []
        for p in range(NUM_PES):
            slots.append({tid: Slot(t.desc,
                                    _readonly(xp.asarray(np.stack([m.pes[p].tiles[tid].elems for m in machines])
                                                         .astype(element_dtype(t.desc), copy=False))),
                                    _readonly(xp.asarray(np.stack([m.pes[p].tiles[tid].defined for m in machines]))))
                          for tid, t in first.pes[p].tiles.items()})
        gprs = np.stack([[pe.gprs for pe in m.pes] for m in machines]).astype(np.uint64)
        status = xp.asarray(np.array([[m.pes[p].status for m in machines] for p in range(NUM_PES)], np.uint8))
        return cls(config, np.asarray(ids, np.int64), slots, gprs, status, xp)

    def machine(self, j: int) -> ReferenceMachine:
        """Member j as a host reference machine (its tiles, GPRs, status)."""
        host = _host(self.xp)
        status = host(self.status[:, j])
        if self.xp is np:       # the rows as they are (make_tile copies nothing of a contiguous row)
            tiles = [{tid: make_tile(s.desc, s.elems[j], s.defined[j]) for tid, s in pe.items()} for pe in self.slots]
        else:
            tiles = [{tid: make_tile(s.desc, host(s.elems[j]), host(s.defined[j])) for tid, s in pe.items()}
                     for pe in self.slots]
        return ReferenceMachine.from_state(MachineState(self.config, [
            PEState(tiles[p], np.array(self.gprs[j, p], np.uint64), int(status[p])) for p in range(NUM_PES)]))

    def take(self, keep) -> "Cohort":
        """The cohort of members `keep` (indices, in order)."""
        keep = np.asarray(keep, np.int64)
        k = self.xp.asarray(keep)
        slots = [{tid: Slot(s.desc, _readonly(s.elems[k]), _readonly(s.defined[k])) for tid, s in pe.items()}
                 for pe in self.slots]
        return Cohort(self.config, self.ids[keep], slots, self.gprs[keep], self.status[:, k], self.xp)

    @staticmethod
    def merge(a: "Cohort", b: "Cohort") -> "Cohort":
        xp = a.xp
        slots = [{tid: Slot(s.desc, _readonly(xp.concatenate([s.elems, b.slots[p][tid].elems])),
                            _readonly(xp.concatenate([s.defined, b.slots[p][tid].defined])))
                  for tid, s in pe.items()} for p, pe in enumerate(a.slots)]
        return Cohort(a.config, np.concatenate([a.ids, b.ids]), slots, np.concatenate([a.gprs, b.gprs]),
                      xp.concatenate([a.status, b.status], axis=1), xp)


@lru_cache(maxsize=1)
def _commitlog():
    """emulator.commitlog, imported on first use (it imports pyarrow, which `import emulator`
    does not need) and then without an import statement per block."""
    from . import commitlog
    return commitlog


def _readonly(a):
    if type(a) is np.ndarray or isinstance(a, np.ndarray):
        flags = a.flags
        if flags.writeable:         # already read-only (a row of a stack, a view of one): nothing to set
            flags.writeable = False
    return a


def _host(xp):
    return (lambda a: a) if xp is np else xp.asnumpy


# ---------------------------------------------------------------- element rules on a cohort

class Refused(Exception):
    """Element rules failed on `members` (indices into the executed selection of machines);
    only who failed matters here: each one's exact error comes from the reference."""

    def __init__(self, members: np.ndarray):
        super().__init__(f"element rules failed on {len(members)} machine(s)")
        self.members = members


class FailingMembers:
    """The engine's element-rule hook for the executors (semantics.FirstFault is the
    reference's): over P = PEs x `per` members, PE-major (tile k is member k % per), it notes
    every member one of whose tiles holds an element that breaks a rule, and `settle` raises
    Refused naming them before anything is computed.  On NumPy an all-clear array is found by
    one whole-array test, without per-tile reductions; on a device the per-tile reduction runs
    directly (no extra synchronisation) and `settle` reads back one value."""

    def __init__(self, P: int, per: int, xp):
        self.P, self.per, self.xp = P, per, xp
        self.bad = None          # (P,) bool, once some rule found a tile to look at

    def _note(self, tiles) -> None:
        self.bad = tiles if self.bad is None else self.bad | tiles

    def undefined(self, plan, role, defined, where=None, r0=None, c0=None) -> None:
        P = self.P
        if where is not None:
            self._note((where & ~defined).reshape(P, -1).any(axis=1))
        elif self.xp is not np or not defined.all():
            self._note(~defined.reshape(P, -1).all(axis=1))

    def divisors(self, plan, ops) -> None:
        zero = semantics.zero_divisors(plan.rb, ops)
        if zero is not None:
            self._note(zero.reshape(self.P, -1).any(axis=1))

    def encodings(self, plan, role, bits, dtype) -> None:
        invalid = semantics.invalid_encodings(bits, dtype, self.xp)
        if invalid is not None:
            self._note(invalid.reshape(self.P, -1).any(axis=1))

    def settle(self) -> None:
        bad = self.bad
        if bad is not None and bool(bad.any()):
            raise Refused(np.unique(np.flatnonzero(_host(self.xp)(bad)) % self.per))


class _Undecided(Exception):
    """The rejection pass (_first_faults) met what it does not decide -- a rule's array not
    stacked PE-major over the P tiles, a member the hook noted that the reference's rule does
    not reject -- so each member settles on the reference alone (BatchEngine._rare)."""


class Faulted(Refused):
    """Refused, with each named member's exception: `causes` maps member index (into the
    executed selection) -> the IllegalBlockException the reference raises for it."""

    def __init__(self, causes: dict[int, IllegalBlockException]):
        super().__init__(np.array(sorted(causes), np.int64))
        self.causes = causes


class FirstFaults(FailingMembers):
    """The element-rule hook of the rejection pass (_first_faults).  It finds the members that
    hold an element breaking a rule as FailingMembers does, and for each member found the first
    time, the exception the reference raises: the reference's own rule (semantics.FIRST_FAULT)
    applied to that member's tiles alone (rows m, m + per, ...: its PEs in group order, as a
    one-machine plan stacks them).  The executor calls the rules in the reference's order, so a
    member's first cause is the reference's; `settle` raises Faulted naming every such member."""

    def __init__(self, P: int, per: int, xp):
        super().__init__(P, per, xp)
        self.causes: dict[int, IllegalBlockException] = {}
        self._rule = None            # member index -> the reference's rule on its tiles (raises)

    def _rows(self, a, m: int, shared_ok: bool = False):
        """Member m's rows of a rule argument stacked over the P tiles (None stays None; with
        `shared_ok`, an array of one row broadcast over every tile stays whole)."""
        if a is None or (shared_ok and a.shape[0] == 1):
            return a
        if a.shape[0] != self.P:
            raise _Undecided(f"a rule's array of {a.shape[0]} rows over {self.P} tiles")
        return a[m::self.per]

    def _plan(self, plan):
        """A member's view of the plan as the reference's rules read it: its PEs in order (every
        member's: the P tiles are PE-major, per members a PE)."""
        return replace(plan, pes=plan.pes[::self.per])

    def _note(self, tiles) -> None:
        found = tiles.reshape(-1, self.per).any(axis=0)     # PE-major: tile k * per + m is member m's
        for m in np.flatnonzero(found).tolist():
            if m in self.causes:
                continue
            try:
                self._rule(m)
            except IllegalBlockException as exc:
                self.causes[m] = exc
                continue
            raise _Undecided(f"member {m}: the reference's rule accepts what the hook noted")

    def undefined(self, plan, role, defined, where=None, r0=None, c0=None) -> None:
        rows, one = self._rows, self._plan(plan)
        self._rule = lambda m: semantics.FIRST_FAULT.undefined(
            one, role, rows(defined, m), rows(where, m, True), rows(r0, m), rows(c0, m))
        super().undefined(plan, role, defined, where, r0, c0)

    def divisors(self, plan, ops) -> None:
        one = self._plan(plan)
        self._rule = lambda m: semantics.FIRST_FAULT.divisors(one, [self._rows(o, m, True) for o in ops])
        super().divisors(plan, ops)

    def encodings(self, plan, role, bits, dtype) -> None:
        one = self._plan(plan)
        self._rule = lambda m: semantics.FIRST_FAULT.encodings(one, role, self._rows(bits, m), dtype)
        super().encodings(plan, role, bits, dtype)

    def settle(self) -> None:
        if self.causes:
            raise Faulted(self.causes)


def _first_faults(c: "Cohort", rb: ResolvedBlock, plans, sel) -> dict[int, IllegalBlockException] | None:
    """The rejection pass: members `sel` (indices into c, ascending) of a cohort whose
    descriptors passed preflight on `plans`' PE groups, each one's first element-rule fault as
    the reference raises it running the groups in order (a member that faults in one group never
    reaches the next), keyed by member index; a member with none is absent.  One executor call
    a group over all of them (FirstFaults), instead of a reference run a member.  None where the
    pass does not decide (a device cohort, a rule's array it cannot split by member, a rejection
    no rule names): the caller then runs each member on the reference."""
    if c.xp is not np:
        return None
    causes: dict[int, IllegalBlockException] = {}
    left = np.asarray(sel, np.int64)
    try:
        for plan in plans:
            if not len(left):
                break
            try:
                _attempt(c, rb, [plan], left, FirstFaults)
            except Faulted as exc:
                causes.update((int(left[i]), cause) for i, cause in exc.causes.items())
                left = np.delete(left, exc.members)
    except (_Undecided, IllegalBlockException):
        return None
    return causes


# ---------------------------------------------------------------- one block on one cohort

def _stack_role(c: Cohort, tile: int, group: tuple[int, ...], sel) -> semantics.TileStack:
    """The role's tiles on PEs `group` of members `sel` (None: all), PE-major, as the executors
    take them: views of the cohort's stacked storage where it holds them so, else stacked (rows
    padded to the longest payload where the PEs' tiles differ in geometry)."""
    slots = [c.slots[p][tile] for p in group]
    descs = [s.desc for s in slots]
    m = len(c) if sel is None else len(sel)
    xp = c.xp
    if sel is not None:
        k = xp.asarray(sel)
        return semantics.stack_parts(descs, m, [(s.elems[k], s.defined[k]) for s in slots], xp)
    if len(semantics.geometries(descs)) > 1:
        return semantics.stack_parts(descs, m, [(s.elems, s.defined) for s in slots], xp)
    # one geometry from here on: the TileStack is not ragged (no second derivation)
    st = slots[0].stack
    if len(slots) == 1:
        elems, defined = slots[0].elems, slots[0].defined
    elif st is not None and st[2] == group and all(s.stack is not None and s.stack[0] is st[0]
                                                    and s.stack[3] == i for i, s in enumerate(slots)):
        elems, defined = st[0].reshape(len(group) * m, -1), st[1].reshape(len(group) * m, -1)
    else:
        both = c.restack(tile, group)
        if both is None:
            return semantics.stack_parts(descs, m, [(s.elems, s.defined) for s in slots], xp)
        elems, defined = both[0].reshape(len(group) * m, -1), both[1].reshape(len(group) * m, -1)
    return semantics.TileStack(descs, m, elems, defined, ragged=False)


@lru_cache(maxsize=16)          # the 15 non-empty PE groups
def _pe_index(group: tuple[int, ...]):
    """The status rows of PEs `group` (Cohort.status is PE-major): a slice where they are
    contiguous (a view, no index array), else the list of them -- the same rows either way."""
    if group == tuple(range(group[0], group[-1] + 1)):
        return slice(group[0], group[-1] + 1)
    return list(group)


@lru_cache(maxsize=1024)        # (PE group, member count): 15 groups x the few cohort sizes of a run
def _member_pes(group: tuple[int, ...], m: int) -> tuple[int, ...]:
    """The PE of each of the len(group) * m tiles of a stacked role, PE-major (Plan.pes)."""
    return tuple(p for p in group for _ in range(m))


def _offsets(c: Cohort, rb: ResolvedBlock, group, sel) -> tuple[np.ndarray, np.ndarray]:
    """Row/column offsets of every member's PEs `group` (preflight.gpr_offsets), PE-major over
    (group, sel)."""
    g = c.gprs if sel is None else c.gprs[np.asarray(sel)]
    pes = list(group)
    return preflight.gpr_offsets(rb, lambda r: g[:, pes, r].T, len(group) * len(g))


def _windows_ok(c: Cohort, rb: ResolvedBlock, plans) -> np.ndarray:
    """Per member: every GPR-offset window of the block inside its limits (preflight's rule)."""
    ok = np.ones(len(c), bool)
    if rb.offset_regs is None:
        return ok
    shapes = schemas.SCHEMAS[rb.instr.schema].sources
    for group, dest in plans:
        r0, c0 = _offsets(c, rb, group, None)
        r0, c0 = r0.reshape(len(group), -1), c0.reshape(len(group), -1)
        for i, binding in enumerate(rb.sources):
            descs = [c.slots[p][binding.tile].desc for p in group]
            if all(d is descs[0] for d in descs):       # one descriptor on every PE: one bound, one test
                b = preflight.window_bounds(shapes[i], descs[0], dest)
                if b is not None:
                    rows_fit, cols_fit = preflight.window_fits(b, r0, c0)
                    ok &= (rows_fit & cols_fit).all(axis=0)
                continue
            for s, d in enumerate(descs):
                b = preflight.window_bounds(shapes[i], d, dest)
                if b is not None:
                    rows_fit, cols_fit = preflight.window_fits(b, r0[s], c0[s])
                    ok &= rows_fit & cols_fit
    return ok


def _attempt(c: Cohort, rb: ResolvedBlock, plans, sel=None, rules=FailingMembers) -> list[Staged]:
    """Execute the block on members `sel` (None: all): its results per PE group, computed by the
    schema's executor (schemas.EXECUTORS) on the cohort's own arrays.  Raises Refused naming
    the members on which an element rule fails (`rules`: the hook's class; FirstFaults for the
    rejection pass, which the fused element pass does not serve)."""
    staged = []
    xp = c.xp
    m = len(c) if sel is None else len(sel)
    executor = schemas.EXECUTORS[rb.instr.mnemonic]
    fused = _fused_program(rb, c.config.profile) if xp is np and rules is FailingMembers else None
    for group, dest in plans:
        sources = [_stack_role(c, b.tile, group, sel) for b in rb.sources]
        r0, c0 = _offsets(c, rb, group, sel)
        pes = _member_pes(group, m)
        members = c.status if sel is None else c.status[:, xp.asarray(sel)]
        # PE-major, as pes: a slice where contiguous (no index array to upload), then a copy of
        # its rows -- no transposing copy (one of (machines, 4) cost ~0.03 ms on 4,096 machines)
        status = members[_pe_index(group)].reshape(-1).astype(np.uint8)
        plan = preflight.Plan(rb, pes, sources, dest, r0, c0, c.config.profile, status)
        if fused is None:
            out = None
        elif sel is None and len(plans) == 1 and fused.writes_in_place:   # the block alone: see _spent
            out = fused.run(plan, m, _spent(c, rb.dest.tile, group))
        else:
            out = fused.run(plan, m)     # None: today's path
        if type(out) is np.ndarray:          # the members reading an undefined element
            raise Refused(out)
        if out is None:
            out = executor(plan, xp, rules(len(pes), m, xp))
        S = len(group)
        staged.append(Staged(group, dest, to_physical(dest, out.bits, 0, xp).reshape(S, m, -1),
                             to_physical(dest, out.defined, False, xp).reshape(S, m, -1),
                             out.status.reshape(S, m)))
    return staged


def _fused_program(rb: ResolvedBlock, profile: str):
    """The block's fused element pass on the host (emulator/batchfuse.py: results, statuses and
    the definedness rule in one compiled call), or None where it has none.  The module (it
    imports Numba, which `import emulator` does not need) is imported with the first block of a
    schema it might cover."""
    if rb.instr.schema not in _FUSABLE or rb.offset_regs is not None:
        return None
    return _batchfuse().program(rb, profile)


_FUSABLE = (I.UNARY, I.BINARY, I.TERNARY)


@lru_cache(maxsize=1)
def _batchfuse():
    from . import batchfuse
    return batchfuse


# ---------------------------------------------------------------- a fused chain on one cohort

class _Unfused(Exception):
    """The fused pass cannot stand for the chain on this cohort (a fault, or a shape it does
    not handle): the cohort runs the chain block by block instead."""


def _fused_attempt(c: Cohort, rbs: list[ResolvedBlock], pes: tuple[int, ...], record: bool = False):
    """The chain `rbs` (fusion.chains: element-wise or TCMP, one PE set and valid rectangle, no GPR
    offsets) on every member of c in one pass: each block's preflight on the descriptors its
    predecessors leave, its rules, its numeric call on the (P, ValidRow, ValidCol) results of
    earlier blocks kept as arrays; then (rb, Staged) of each destination's last version, for
    BatchEngine._commit, the last block's status last.  An element rule that fails raises
    Refused naming the members (they run the chain unfused, the rest try again); any other fault
    raises _Unfused (the cohort runs the chain unfused).  Either way each machine ends exactly as the unfused
    run ends it (blocks before its fault committed, then its StreamError).  Returns (those
    (rb, Staged), per block) where, with `record` (a commit log), `per block` holds every
    block's own (rb, Staged) -- its destination and status as the unfused run commits them --
    and is empty otherwise."""
    xp, m = c.xp, len(c)
    shadow = Stores(c.config, [dict(pe) for pe in c.slots])     # c's descriptors as the chain changes them
    made: dict[int, tuple] = {}          # tile id -> (rb, dest, logical (P, vr, vc) result)
    read: dict[int, Any] = {}            # tile id -> its checked valid rectangle, for tiles from before the chain
    last_flags = None
    S = len(pes)
    P = S * m
    member_pes = _member_pes(pes, m)

    def stage(rb, dest, out, flags):
        status = xp.zeros(P, np.uint8) if flags is None else semantics.flags_status(flags, out.shape, P, xp)
        o = semantics.outcome(rb, dest, P, out, status, None if rb.instr.schema == I.COMPARE else rb.dtype.name, xp)
        return Staged(pes, dest, to_physical(dest, o.bits, 0, xp).reshape(S, m, -1),
                      to_physical(dest, o.defined, False, xp).reshape(S, m, -1), o.status.reshape(S, m))

    per_block = []
    for rb in rbs:
        try:
            groups = preflight.pe_groups(shadow, rb, pes)
            if len(groups) != 1:
                raise _Unfused("PE groups differ")
            dest, _ = preflight.check(shadow, rb, groups[0], preflight.gpr_offsets(rb, None, len(pes)))
        except IllegalBlockException as exc:
            raise _Unfused(str(exc)) from exc
        vr, vc = rb.ValidRow, rb.ValidCol
        z = preflight.no_offsets(P)
        plan = preflight.Plan(rb, member_pes, [], dest, z, z, c.config.profile, None)   # the block's, for its rules
        rules = FailingMembers(P, m, xp)
        ops = []
        for role, b in enumerate(rb.sources):
            if b.tile in made:           # a result of this chain: every valid element defined
                bits = made[b.tile][2]
                if bits.shape != (P, vr, vc):
                    raise _Unfused("a chain result read with another rectangle")
            elif b.tile in read:
                bits = read[b.tile]
            else:
                ts = _stack_role(c, b.tile, pes, None)
                if ts.ragged:
                    raise _Unfused("the PEs' source tiles differ in geometry")
                bits, defined = semantics.valid(ts, vr, vc, xp)
                rules.undefined(plan, role, defined)       # an undefined element read
                read[b.tile] = bits
            ops.append(bits)
        semantics.check_values(plan, ops, rules)          # a zero divisor, an invalid encoding
        compare = rb.instr.schema == I.COMPARE       # a predicate: one 0/1 bit per element
        try:
            out, flags = numeric.elementwise(rb.instr.mnemonic, rb.dtype.name, *ops, profile=c.config.profile,
                                             **({"cmode": rb.CMode} if compare else {}))
        except IllegalBlockException as exc:
            raise _Unfused(str(exc)) from exc
        out = xp.asarray(out)
        if compare:
            out = (out != 0).astype(np.uint8)
        out = xp.broadcast_to(out, (P, vr, vc)).astype(element_dtype(dest), copy=False)
        made.pop(rb.dest.tile, None)     # keep insertion order = order of each tile's last write
        made[rb.dest.tile] = (rb, dest, out)
        last_flags = flags
        if record:
            per_block.append((rb, stage(rb, dest, out, flags)))
        for p in pes:
            shadow.slots[p][rb.dest.tile] = Slot(dest, None, None)
    staged = []
    for tid, (rb, dest, out) in made.items():
        flags = last_flags if rb is rbs[-1] else None  # each block replaces the status: the last one's stays
        staged.append((rb, stage(rb, dest, out, flags)))
    return staged, per_block


# ---------------------------------------------------------------- the batch

def checked_machines(machines, profile: str | None) -> list:
    """The machines of a new batch, checked (at least one, each a machine, one configuration),
    as copies under numeric profile `profile` when one is given."""
    machines = [m for m in machines]
    if not machines:
        raise ValueError("a batch needs at least one machine")
    for k, m in enumerate(machines):
        if not isinstance(m, ReferenceMachine):
            raise TypeError(f"machine {k}: expected an emulator.Machine, got {type(m).__name__}")
    config = machines[0].config
    for k, m in enumerate(machines):
        if m.config != config:
            raise ValueError(f"machine {k}: configuration {m.config} differs from machine 0's {config}; "
                             f"a batch shares one configuration")
    if profile is not None:
        config = with_profile(config, profile)
        copies = []
        for m in machines:
            c = ReferenceMachine.copy(m)
            c.config = config
            copies.append(c)
        machines = copies
    return machines


class BatchEngine:
    """N independent machines that execute the same block stream (see the module doc), on a
    resolved backend (backends.resolve_backend's (name, array module, why)).  emulator.MachineBatch
    is this engine with its public constructor; the machines it hands out are reference machines
    here."""

    _rec = None              # the running stream's _Recorder when it has a log
    _session = None          # step()'s stream: [next block index, errors, live detached machines]

    def __init__(self, machines: list[ReferenceMachine], resolved: tuple, *, detach_stopped: bool = True):
        """`machines` as checked_machines gives them (they are not changed: the batch copies what
        it keeps).  `detach_stopped`: MachineBatch's."""
        self.config = machines[0].config
        self.backend, self.xp, self.why = resolved
        self.detach_stopped = bool(detach_stopped)
        self._n = len(machines)
        self._host: dict[int, ReferenceMachine] = {}   # machines outside every cohort (reference path)
        self._cohorts: list[Cohort] = []
        self._stopped: list[Cohort] = []         # stopped members kept stacked (detach_stopped=False)
        if self.backend == "reference":
            self._host = {k: ReferenceMachine.copy(m) for k, m in enumerate(machines)}
        else:
            self._build(dict(enumerate(machines)))

    def save(self, path) -> None:
        from .batchio import save_machines
        save_machines([self.machine(k) for k in range(self._n)], path)

    def __len__(self) -> int:
        return self._n

    def machine(self, k: int) -> ReferenceMachine:
        """Machine k's state as a new host machine (a copy: changing it leaves the batch alone)."""
        if not (isinstance(k, (int, np.integer)) and 0 <= k < self._n):
            raise IndexError(f"machine {k!r} out of range 0..{self._n - 1}")
        k = int(k)
        if k in self._host:
            return self._host[k].copy()
        for c in self._cohorts + self._stopped:
            j = np.flatnonzero(c.ids == k)
            if j.size:
                return c.machine(int(j[0]))
        raise AssertionError(f"machine {k} is nowhere")   # pragma: no cover

    @classmethod
    def of_stacks(cls, config: MachineConfig, n: int, tiles: dict, resolved: tuple, gprs: np.ndarray | None = None,
                  *, detach_stopped: bool = True):
        """MachineBatch.from_stacks on a resolved backend."""
        batch = cls.__new__(cls)
        batch.config = config
        batch.backend, batch.xp, batch.why = resolved
        batch.detach_stopped = bool(detach_stopped)
        batch._n, batch._host, batch._cohorts, batch._stopped = n, {}, [], []
        if batch.backend == "reference":
            for k in range(n):
                state = MachineState(config)
                for (p, tid), (desc, elems, defined) in tiles.items():
                    state.pes[p].tiles[tid] = make_tile(desc, elems[k], defined[k])
                if gprs is not None:
                    for p in range(NUM_PES):
                        state.pes[p].gprs = np.array(gprs[k, p], np.uint64)
                batch._host[k] = ReferenceMachine.from_state(state)
            return batch
        xp = batch.xp
        slots = [{} for _ in range(NUM_PES)]
        asarray = xp.asarray
        for (p, tid), (desc, elems, defined) in tiles.items():
            slots[p][tid] = Slot(desc, _readonly(asarray(elems)), _readonly(asarray(defined)))
        gprs = np.zeros((n, NUM_PES, GPR_COUNT), np.uint64) if gprs is None else np.array(gprs, np.uint64)
        status = xp.zeros((NUM_PES, n), np.uint8)
        batch._cohorts = [Cohort(config, np.arange(n, dtype=np.int64), slots, gprs, status, xp)]
        return batch

    def tile_arrays(self, pe: int, tile: int) -> list[tuple[np.ndarray, Descriptor, Any, Any]]:
        """Tile `tile` of PE `pe` on every machine that holds it, as the engine stores it, without
        a copy: (machine indices, descriptor, elems (m, elements), defined (m, elements)) per
        group of machines sharing a descriptor, payloads in physical order (docs/machine.md).
        On the gpu backend the arrays are CuPy device arrays (`__cuda_array_interface__`,
        `__dlpack__`), else NumPy (`__dlpack__`, the buffer protocol).  Read-only: NumPy's are
        flagged so; a CuPy array has no such flag, and writing one corrupts the batch.  They
        stay valid as later blocks run (a commit replaces a slot's arrays, never writes them)."""
        if not (isinstance(pe, (int, np.integer)) and 0 <= pe < NUM_PES):
            raise ValueError(f"PE {pe!r} out of range 0..{NUM_PES - 1}")
        out = []
        for c in self._cohorts + self._stopped:
            s = c.slots[pe].get(tile)
            if s is not None:
                out.append((c.ids.copy(), s.desc, s.elems, s.defined))
        for k, m in sorted(self._host.items()):
            t = m.store(pe).get(tile)
            if t is not None:
                out.append((np.array([k], np.int64), t.desc, t.elems[None], t.defined[None]))
        return out

    def stacks(self, pe: int, tile: int) -> list[tuple[np.ndarray, Descriptor, Any, Any]]:
        """tile_arrays as host (NumPy) arrays: a device-to-host copy on the gpu backend, the
        engine's own read-only arrays otherwise; without materializing Machines."""
        host = _host(self.xp)
        return [(ids, d, host(e), host(f)) for ids, d, e, f in self.tile_arrays(pe, tile)]

    def statuses(self) -> np.ndarray:
        """(machines, 4) uint8: every machine's per-PE numeric status."""
        out = np.zeros((self._n, NUM_PES), np.uint8)
        for c in self._cohorts + self._stopped:
            out[c.ids] = _host(c.xp)(c.status).T
        for k, m in self._host.items():
            out[k] = [pe.status for pe in m.pes]
        return out

    def digests(self) -> list[bytes]:
        return [self.machine(k).digest() for k in range(self._n)]

    # ------------------------------------------------------------ layout
    def _build(self, machines: dict[int, ReferenceMachine]) -> None:
        """Put host machines into cohorts (merging with an existing cohort of the same shape)."""
        groups: dict[tuple, list[int]] = {}
        for k, m in machines.items():
            groups.setdefault(_signature(m), []).append(k)
        if self.xp is not np:
            need = sum(_machine_bytes(m) for m in machines.values())
            backends.check_device_memory(need)
        by_sig = {c.signature: i for i, c in enumerate(self._cohorts)}
        for sig, ks in groups.items():
            new = Cohort.of(self.config, ks, [machines[k] for k in ks], self.xp)
            if sig in by_sig:
                self._cohorts[by_sig[sig]] = Cohort.merge(self._cohorts[by_sig[sig]], new)
            else:
                by_sig[sig] = len(self._cohorts)
                self._cohorts.append(new)
        for k in machines:
            self._host.pop(k, None)
        # the grouping is a bind witness: checked first
        v = check_cohorts(self._n, [(c.ids, {p: list(c.slots[p]) for p in range(NUM_PES)}) for c in self._cohorts], self._host)
        if not v:
            raise RuntimeError(f"batch engine: the cohorts are not a valid shared-group binding: {v}")

    # ------------------------------------------------------------ streams
    def run(self, stream: bytes | bytearray | memoryview | Sequence[Block] | Iterable[Block],
            fuse: bool = False, log=None) -> BatchResult:
        """Run the stream on every machine; each stops at its first failing block.  With `fuse`,
        chains of consecutive element-wise blocks that emulator.calculus.check_plan admits run
        as one pass per cohort (emulator.fusion; the result's `fused` lists them); the states,
        counts and errors are those of the unfused run.

        The stream is read through a window of the next blocks (one, or fusion.MAX_CHAIN with
        `fuse`: memory stays bounded); a chain that starts the window runs in one pass (_chain),
        any other block alone (_step).  A decode fault stops every machine still live at that
        block.

        `log` (optional; as Machine.run's) is anything with a `write(records)` method -- a
        commitlog.CommitLog opened with machines=len(batch), a commitlog.Collector -- and
        receives one commitlog.Records (plain arrays) per block, in block order, once every
        machine is done with that block: the commit records of every machine that committed
        it and the fault record of every machine that stopped there (no call for a block no
        machine committed or faulted on: a strict no-op).  Within one Records each machine's
        rows are in ascending PE order, machines grouped as the engine holds them, not sorted
        (the reference backend writes machine by machine, each its whole stream): a stable
        sort by machine (what CommitLog and Collector.table do) gives the log's (machine,
        block, PE) order.  The records are the same on every backend, with or without `fuse`."""
        self._session = None
        if self.backend == "reference":
            return self._run_reference(stream, log)
        self._restart()
        source, bad_header = stream_items(stream)
        if bad_header is not None:
            if log is not None:
                from .commitlog import fault_records
                log.write(fault_records(bad_header, np.arange(self._n, dtype=np.uint32)))
            return BatchResult([0] * self._n, [bad_header] * self._n)
        self._rec = None if log is None else _Recorder(log)
        try:
            return self._run(source, fuse)
        finally:
            self._rec = None

    def _run(self, source, fuse: bool) -> BatchResult:
        errors: list[StreamError | None] = [None] * self._n
        live_host: set[int] = set()
        ahead = fusion.MAX_CHAIN if fuse else 1
        window: deque = deque()          # (offset, block, resolved or None) of the next blocks
        ended, undecodable = False, None
        fused: list[tuple[int, int]] = []
        index = 0
        while True:
            while not ended and len(window) < ahead:
                try:
                    offset, block = next(source)
                except StopIteration:
                    ended = True
                except DecodeError as exc:
                    ended, undecodable = True, exc
                else:
                    window.append((offset, block, _resolved(block) if fuse else None))
            if not window or (not self._cohorts and not live_host):
                break
            first = fusion.chains([w[2] for w in window])[:1] if fuse else []
            if first and first[0][0] == 0 and self._cohorts:
                stop = first[0][1]
                if self._chain([window.popleft() for _ in range(stop)], index, errors, live_host):
                    fused.append((index, index + stop))
                index += stop
            else:
                offset, block, _ = window.popleft()
                self._step(block, index, offset, errors, live_host)
                index += 1
            if self._rec is not None:
                self._rec.flush()
        if undecodable is not None and not window:
            err = StreamError.undecodable(index, undecodable)
            for k in self._live(live_host):
                errors[k] = err
                if self._rec is not None:
                    self._rec.fault(k, err)
            if self._rec is not None:
                self._rec.flush()
        return BatchResult(_executed(index, errors), errors, fused)

    def step(self, block, *, offset: int | None = None):
        """Execute one block (an isa Block, or the bytes of a one-block `.tbs` stream, as
        Machine.step takes) on every machine still in this stepped stream, and return its
        records, a commitlog.Records: what `run(..., log=...)` writes for this block (the
        commit records of the machines that committed it, the fault record of each that
        rejected it), block index the number of steps taken so far.  A rejection stops that
        machine alone, as in run: it keeps the state of its last commit, byte for byte, and
        takes no further steps; nothing is raised for it.  Machine-level errors so far are in
        `step_errors()`.  `run` starts a new stream (every machine, block 0)."""
        Collector = _commitlog().Collector
        if self._session is None:
            if self.backend != "reference":
                self._restart()
            self._session = [0, [None] * self._n, set()]
        index, errors, live_host = self._session
        log = Collector()
        try:
            items = [(offset, block)] if isinstance(block, Block) else list(one_block(block, offset))
        except StreamError as exc:                # bytes that do not decode: every live machine
            from .commitlog import fault_records
            live = [k for k in range(self._n) if errors[k] is None]
            err = StreamError(index, exc.offset, exc.cause, exc.whole_stream)
            for k in live:
                errors[k] = err
            self._session[0] += 1
            return fault_records(err, np.array(live, np.uint32))
        (off, b), = items
        if self.backend == "reference":
            for k in range(self._n):
                if errors[k] is None:
                    r = self._host[k]._run_items(iter(items), _Machine(log, k), index)
                    errors[k] = r.error
            self._session[0] += 1
            return log.records()
        self._rec = _Recorder(log)
        try:
            self._step(b, index, off, errors, live_host)
            self._rec.flush()
        finally:
            self._rec = None
        self._session[0] += 1
        return log.records()

    def step_errors(self) -> list[StreamError | None]:
        """Per machine, the StreamError that stopped it in the stepped stream (None: live)."""
        return list(self._session[1]) if self._session is not None else [None] * self._n

    def _chain(self, items, start: int, errors, live_host) -> bool:
        """The chain `items` ((offset, block, resolved) of blocks start, start + 1, ...): each
        cohort for which check_plan admits the fused step and whose fused pass meets no fault
        commits it at once; every other cohort and every detached machine runs the blocks one
        by one (so a fault inside the chain stops a machine exactly where the unfused run stops
        it).  True when some cohort ran fused."""
        rbs = [rb for _, _, rb in items]
        blocks = [b for _, b, _ in items]
        pes = rbs[0].pes
        done, rest = [], []
        record = self._rec is not None
        if record:
            for index, (offset, block, _) in enumerate(items, start):
                self._rec.at(index, offset, block)
        for c in self._cohorts:
            if not fusion.admitted(blocks, (c.config, c.signature), lambda: c.machine(0)):
                rest.append(c)
                continue
            for _ in range(3):                 # members that fault leave; the others retry
                try:
                    done.append((c, _fused_attempt(c, rbs, pes, record)))
                    c = None
                    break
                except _Unfused:
                    break
                except Refused as exc:
                    rest.append(c.take(exc.members))
                    c = c.take(np.setdiff1d(np.arange(len(c)), exc.members))
                    if not len(c):
                        c = None
                        break
            if c is not None:
                rest.append(c)
        self._cohorts = rest
        for index, (offset, block, _) in enumerate(items, start):
            if not self._cohorts and not live_host:
                break
            self._step(block, index, offset, errors, live_host)
        for c, (staged, per_block) in done:
            for rb, st in staged:
                self._commit(c, rb, [st])
            for index, (rb, st) in enumerate(per_block, start):   # each block's own commit, for the log
                self._rec.commit(index, c.ids, rb.dest.tile, [st])
            self._cohorts.append(c)
        return bool(done)

    def _live(self, live_host) -> list[int]:
        return sorted([int(k) for c in self._cohorts for k in c.ids] + list(live_host))

    def _restart(self) -> None:
        """A new stream starts every machine: those an earlier one stopped join the cohorts again
        (host machines by shape, as at construction; stopped stacked members with the cohort of
        their shape, or as one of their own)."""
        if self._stopped:
            by_sig = {c.signature: i for i, c in enumerate(self._cohorts)}
            for s in self._stopped:
                sig = s.signature
                if sig in by_sig:
                    self._cohorts[by_sig[sig]] = Cohort.merge(self._cohorts[by_sig[sig]], s)
                else:
                    by_sig[sig] = len(self._cohorts)
                    self._cohorts.append(s)
            self._stopped = []
        if self._host:           # machines stopped by an earlier stream start this one in a cohort
            self._build(dict(self._host))

    def _stop(self, k: int, m: ReferenceMachine, err: StreamError, errors, live_host) -> None:
        self._host[k] = m
        errors[k] = err
        live_host.discard(k)
        if self._rec is not None:
            self._rec.fault(k, err)

    def _stop_cohort(self, c: Cohort, err: StreamError, errors, live_host) -> None:
        """Every member of cohort c stops at `err`: detached into host Machines, or (with
        detach_stopped=False) kept stacked in c, which no later block reaches."""
        self._stop_members(c, np.arange(len(c)), [err] * len(c), errors, live_host)

    def _stop_members(self, c: Cohort, members: np.ndarray, errs: list[StreamError], errors, live_host) -> None:
        """Members `members` of cohort c (ascending) stop, the i-th at errs[i], their states those
        of their last commit: detached into host Machines, or (detach_stopped=False) kept stacked
        in a cohort of their own that no later block reaches.  Faults are logged in member order."""
        if self.detach_stopped:
            for j, err in zip(members.tolist(), errs):
                self._stop(int(c.ids[j]), c.machine(j), err, errors, live_host)
            return
        self._stopped.append(c if len(members) == len(c) else c.take(members))
        for k, err in zip(c.ids[members].tolist(), errs):
            errors[k] = err
            if self._rec is not None:
                self._rec.fault(k, err)

    def _execute_host(self, k: int, m: ReferenceMachine, block: Block, index: int) -> None:
        """Block `index` on machine k outside every cohort (the reference path), recorded."""
        if self._rec is None:
            m.execute(block)
            return
        res, staged = m._execute(block)
        if staged:
            self._rec.commit(index, [k], res.dest, staged)

    def _step(self, block: Block, index: int, offset, errors, live_host: set[int]) -> None:
        if self._rec is not None:
            self._rec.at(index, offset, block)
        try:
            rb = resolve(block)
        except IllegalBlockException as exc:     # stateless: every live machine stops here
            err = StreamError(index, offset, exc)
            for c in self._cohorts:
                self._stop_cohort(c, err, errors, live_host)
            for k in list(live_host):
                self._stop(k, self._host[k], err, errors, live_host)
            self._cohorts = []
            return
        for k in sorted(live_host):              # detached machines: the reference, block by block
            try:
                self._execute_host(k, self._host[k], block, index)
            except IllegalBlockException as exc:
                self._stop(k, self._host[k], StreamError(index, offset, exc), errors, live_host)
        if rb.PE_MASK == 0:                      # strict no-op after the stateless rules
            return
        pes = rb.pes
        cohorts = []
        for c in self._cohorts:
            c = self._step_cohort(c, rb, block, pes, index, offset, errors, live_host)
            if c is not None and len(c):
                cohorts.append(c)
        self._cohorts = cohorts

    def _rare(self, c: Cohort, j: int, block: Block, index, offset, errors, live_host) -> None:
        """Member j runs the block on the reference: a fault stops it, success detaches it."""
        k = int(c.ids[j])
        m = c.machine(j)
        try:
            self._execute_host(k, m, block, index)
        except IllegalBlockException as exc:
            self._stop(k, m, StreamError(index, offset, exc), errors, live_host)
            return
        self._host[k] = m
        live_host.add(k)

    def _reject(self, c: Cohort, rb, plans, bad: np.ndarray, cause, block, index, offset, errors,
                live_host) -> None:
        """Members `bad` of c (ascending), which passed the descriptor rules of `plans`' PE groups,
        reject the block: each stops with its first element-rule fault there, else with `cause`
        (None: each has such a fault), as the reference gives them -- decided for all of them in
        one vectorised pass (_first_faults) where it can, else member by member on the
        reference (_rare)."""
        causes = _first_faults(c, rb, plans, bad)
        if causes is None or (cause is None and len(causes) < len(bad)):
            for j in bad.tolist():
                self._rare(c, j, block, index, offset, errors, live_host)
            return
        errs = [StreamError(index, offset, causes.get(j, cause)) for j in bad.tolist()]
        self._stop_members(c, bad, errs, errors, live_host)

    def _step_cohort(self, c: Cohort, rb, block, pes, index, offset, errors, live_host) -> Cohort | None:
        plans = []      # (PE group, destination descriptor)
        # every member's offsets are 0 without B.IOR; with it they differ: _windows_ok checks them
        offsets = preflight.gpr_offsets(rb, None, len(pes)) if rb.offset_regs is None else None
        for g in preflight.pe_groups(c, rb, pes):
            try:
                plans.append((g, preflight.check(c, rb, g, offsets)[0]))
            except IllegalBlockException as exc:
                if rb.offset_regs is None and not plans:   # descriptors only: one fault for all
                    self._stop_cohort(c, StreamError(index, offset, exc), errors, live_host)
                elif rb.offset_regs is None:   # that fault, unless an earlier group's element rule faults first
                    self._reject(c, rb, plans, np.arange(len(c)), exc, block, index, offset, errors, live_host)
                else:   # a window may fault first on some members
                    for j in range(len(c)):
                        self._rare(c, j, block, index, offset, errors, live_host)
                return None
        ok = None if rb.offset_regs is None else _windows_ok(c, rb, plans)   # no B.IOR: every window fits
        if ok is not None and not ok.all():
            for j in np.flatnonzero(~ok):
                self._rare(c, int(j), block, index, offset, errors, live_host)
            c = c.take(np.flatnonzero(ok))
            if not len(c):
                return None
        while True:
            try:
                staged = _attempt(c, rb, plans)
                break
            except Refused as exc:                 # the executor's rules named them
                bad = np.asarray(exc.members, np.int64)
                self._reject(c, rb, plans, bad, None, block, index, offset, errors, live_host)
            except IllegalBlockException:          # a rejection the rules did not name: each member settles alone
                bad = np.arange(len(c))
                for j in bad.tolist():
                    self._rare(c, j, block, index, offset, errors, live_host)
            c = c.take(np.setdiff1d(np.arange(len(c)), bad))
            if not len(c):
                return None
        self._commit(c, rb, staged)
        if self._rec is not None:
            self._rec.commit(index, c.ids, rb.dest.tile, staged)
        return c

    def _commit(self, c: Cohort, rb: ResolvedBlock, staged: list[Staged]) -> None:
        """The one point where a block changes a cohort, given its results on every PE group:
        each selected PE's slot of the destination id becomes a row view of the stacked result
        (never written again, except by the very pass that replaces it: _spent) and every member
        takes its new status.  Nothing here can fail.
        (Members on the reference path commit through ReferenceMachine._commit.)"""
        tile = rb.dest.tile
        for st in staged:
            _place(c.slots, tile, st)
            # (S, m): every member's status on the group's PEs, rows of the PE-major status (the
            # transposing store into a (machines, 4) array it replaces cost ~0.1 ms on 4,096 machines)
            c.status[_pe_index(st.pes)] = st.status

    def _run_reference(self, stream, log=None) -> BatchResult:
        if isinstance(stream, (bytes, bytearray, memoryview)):
            stream = bytes(stream)
        else:
            stream = list(stream)
        executed, errors = [], []
        for k in range(self._n):
            r = self._host[k].run(stream, log=None if log is None else _Machine(log, k))
            executed.append(r.executed)
            errors.append(r.error)
        return BatchResult(executed, errors)


def _place(slots: list[dict[int, Slot]], tile: int, st: Staged) -> None:
    """A commit's new slots: on each PE of the group, tile `tile` becomes a row view of the
    group's stacked result, the Slot remembering the stack and its row."""
    bits, defined, pes, dest = _readonly(st.bits), _readonly(st.defined), st.pes, st.dest
    for s, p in enumerate(pes):
        slots[p][tile] = Slot(dest, bits[s], defined[s], (bits, defined, pes, s))


# ---------------------------------------------------------------- a spent destination
# A block over one PE group whose destination slots on that group are rows of one earlier
# result, held by nothing but those slots, replaces every one of them at its commit: the pass may
# write its results into that array (the peer's TADD(d, a, b) does likewise) instead of a second
# one.  On a 4,096-machine FP32 block that is 16 MB fewer in the cache's working set, some 0.5 ms
# of a 2.5 ms call here.  Who holds the array is read from reference counts, as emulator/reuse.py
# reads them: any view, tile, caller, commit-log record or Slot held elsewhere adds one.

_getrefcount = sys.getrefcount


def _holds(slots: list[dict[int, Slot]], tile: int, group: tuple[int, ...]):
    """(owner, reference counts of the owner, the stack view and every Slot, its stack tuple and
    row view) where tile `tile` on PEs `group` is exactly the rows of one stack over `group`
    whose owner holds its own memory; else None.  The counts include this frame's own
    references, the same on every call (_sole measures them so)."""
    first = slots[group[0]].get(tile)
    if first is None or first.stack is None or first.stack[2] != group:
        return None
    stack = first.stack[0]
    owner = stack.base
    if type(owner) is not np.ndarray or not owner.flags.owndata or stack.shape[0] != len(group):
        return None
    counts = [_getrefcount(owner), _getrefcount(stack)]
    for i, p in enumerate(group):
        s = slots[p].get(tile)
        if s is None or s.stack is None or s.stack[0] is not stack or s.stack[3] != i:
            return None
        counts += (_getrefcount(s), _getrefcount(s.stack), _getrefcount(s.elems))
    return owner, tuple(counts)


@lru_cache(maxsize=NUM_PES)
def _sole(S: int) -> tuple:
    """The counts _holds reads for a stack over S PEs that a commit installed (_place) and that
    nothing else holds: measured on such a stack, not assumed (an interpreter counting otherwise
    then finds nothing spent, and the pass takes a fresh array)."""
    group = tuple(range(S))
    slots = [{} for _ in range(NUM_PES)]
    _place(slots, 1, _stand_in(group))
    return _holds(slots, 1, group)[1]


def _stand_in(group) -> Staged:
    """A result over `group` (two members) as a fused pass stages one: views of one array."""
    S = len(group)
    owner = np.empty(S * 2, np.uint32)
    return Staged(group, None, owner.reshape(S, 2, 1), np.ones((S, 2, 1), bool), np.zeros((S, 2), np.uint8))


def _spent(c: Cohort, tile: int, group: tuple[int, ...]) -> np.ndarray | None:
    """The array under destination tile `tile` on PEs `group` when the block about to run
    replaces all of those slots at its commit and nothing but they holds it (see above), else
    None: what the fused pass may write its results into.  The caller runs that block alone
    (one PE group, every member), so no rejection comes between the write and the commit."""
    if not _reuse().REUSE:             # a free-threaded interpreter: no count shows a sole holder
        return None
    got = _holds(c.slots, tile, group)
    if got is None:
        return None
    owner, counts = got
    if _reuse().kept(owner):           # the pool's reference: one more, and no holder
        counts = (counts[0] - 1,) + counts[1:]
    return owner if counts == _sole(len(group)) else None


@lru_cache(maxsize=1)
def _reuse():
    from . import reuse
    return reuse


def _executed(index: int, errors: list) -> list[int]:
    """Per machine, the blocks it committed: `index` (the stream's length) where it ran to the
    end, its error's block index otherwise.  Where no machine stopped (one C-level count) the
    list is built without a step per machine: a Python loop over 4,096 machines cost about a
    tenth of a millisecond a run, some 4% of a 4,096-machine TADD block."""
    if errors.count(None) == len(errors):
        return [index] * len(errors)
    return [index if e is None else e.index for e in errors]


def _resolved(block) -> ResolvedBlock | None:
    """The block resolved, or None when it fails the stateless rules (or is no block at all):
    then it fuses with nothing, and its own step raises what it raises, in its turn."""
    try:
        return resolve(block)
    except Exception:
        return None


def _machine_bytes(m: ReferenceMachine) -> int:
    return sum(t.elems.nbytes + t.defined.nbytes for pe in m.pes for t in pe.tiles.values()) \
        + NUM_PES * (GPR_COUNT * 8 + 1)


# ---------------------------------------------------------------- one machine: Machine(backend=...)

class HostPlans:
    """One machine on the host (the `cpu` backend): the reference's own block steps on the
    machine's own state (reference.Here), planned with two speed caches that change no answer
    (tests/emulator/test_machine_fastpaths.py):
      * a block executed again over the same PEs, with the same config, no B.IOR offsets and
        the very same source tile objects (immutable: same descriptors, same bytes), reuses its
        previous plan: every descriptor rule would pass as it did, so only what else the plan
        depends on -- the store's room for the destination, each PE's status -- is read afresh
        (`plan`).  It keeps that one plan, holding the last block's source tiles until another
        block runs;
      * a role's tiles that are not rows of one stack yet (write_tile and state files make
        tiles one by one; a block over other PEs made them) are stacked once and the machine's
        tiles re-pointed at the rows: the same descriptor and bytes, read-only, so nothing
        architectural changes (digest, read_tile and every rule see the same tile), and later
        blocks over these PEs read them in place (_stack_sources).
    And a covered element-wise block runs as a compiled block program (emulator/blockprog.py,
    docs/machine.md "Compiled block programs"): its element work in one compiled call and one
    commit, every other block -- and a covered one on which a rule might fail -- on the steps
    above.  `compiled=False` leaves the programs out (today's path alone: the benchmark's
    baseline, and the differential tests' second opinion)."""

    def __init__(self, compiled: bool = True):
        # (rb, pes, config, (tile id, tiles) per role, stacked sources, dest) of the last block
        self._last = None
        self.compiled = compiled
        # the compiled programs' stacks: (PEs, tile id) -> (the tiles read there last, their
        # stacked elems and defined, all defined); at most one entry per PE set and tile id
        self.seen = {}
        self._prog = (None, None, None)         # (Block, config, its program) of `execute`'s last block

    def runner(self, machine: ReferenceMachine) -> Here:
        if self.compiled:
            return Compiled(machine, self.plan, self.seen)
        return Here(machine, self.plan)

    def fresh(self) -> "HostPlans":
        """The same for another machine (a copy): nothing kept."""
        return HostPlans(self.compiled)

    def execute(self, m: ReferenceMachine, block: Block) -> BlockResult:
        """One block on m outside any stream (Machine.execute): what a fresh runner's execute
        and close do, without making the runner when the block's compiled program finishes it
        (a lone block commits at once: no chain)."""
        if self.compiled and m.engines is None:
            # the program of the block executed last, when it is the same Block object under the
            # same config object again (a program is a fact of the block and the profile; kept
            # only for a Block whose fields cannot change, as blockprog.program keeps its own)
            config = m.config
            last = self._prog
            if last[0] is block and last[1] is config:
                prog = last[2]
            else:
                prog = _blockprog().program(block, config.profile)
                if type(block.iot) is tuple:
                    self._prog = (block, config, prog)
            if prog is not None:
                res = prog.run(m, block, None, 0, None, self.seen)
                if res is not None:
                    return res
                # today's path, as Compiled.execute after a program that did not finish
                return Here(m, self.plan).execute(block, None, 0, None)
        runner = self.runner(m)
        try:
            return runner.execute(block, None, 0, None)
        finally:
            runner.close()

    def forget(self) -> None:
        """Drop the kept plan and stacks (and the tiles they hold): the machine took another state."""
        self._last = None
        self.seen = {}

    def plan(self, m: ReferenceMachine, rb: ResolvedBlock, pes) -> preflight.Plan:
        """preflight.plan with the sources as _stack_sources hands them over, or the previous
        plan of the very same block over the very same tiles with the allocation and the
        statuses read afresh."""
        last = self._last
        if last is not None and last[0] is rb and last[1] == pes and last[2] is m.config:
            stores = [m.store(p) for p in pes]
            if all(store.get(tid) is t for tid, tiles in last[3] for store, t in zip(stores, tiles)):
                preflight.check_allocation(m, rb, pes, last[5])
                z = preflight.no_offsets(len(pes))
                return preflight.Plan(rb, pes, list(last[4]), last[5], z, z, m.config.profile, m.statuses(pes))
        plan = preflight.plan(m, rb, pes)
        self._stack_sources(m, rb, plan)
        if rb.offset_regs is None:
            held = tuple((b.tile, tuple(m.store(p)[b.tile] for p in pes)) for b in rb.sources)
            self._last = (rb, pes, m.config, held, tuple(plan.sources), plan.dest)
        return plan

    @staticmethod
    def _stack_sources(m: ReferenceMachine, rb: ResolvedBlock, plan: preflight.Plan) -> None:
        """Each source role of `plan` as one semantics.TileStack, read in place: tiles of one
        descriptor that are not rows of one stack are stacked once and m's tiles re-pointed at
        the rows (see the class doc).  Runs after preflight.plan passed, on the tiles it found;
        the arrays are read-only like every tile's."""
        done = {}
        P = len(plan.pes)
        for role, binding in enumerate(rb.sources):
            tid = binding.tile
            if tid in done:
                plan.sources[role] = done[tid]
                continue
            tiles = plan.sources[role]
            d0 = tiles[0].desc
            both = rows_of_one_stack(tiles)
            if both is None:
                if any(t.desc is not d0 for t in tiles):     # descriptors differ per PE: stacked per block
                    plan.sources[role] = done[tid] = semantics.stack_tiles(tiles)
                    continue
                known = all(t.__dict__.get("fully_defined", False) for t in tiles)
                new = stacked_tiles(d0, np.stack([t.elems for t in tiles]), np.stack([t.defined for t in tiles]),
                                    known)
                for p, t in zip(plan.pes, new):
                    m.store(p)[tid] = t
                tiles, both = new, (new[0].stack[0], new[0].stack[1])
            plan.sources[role] = done[tid] = semantics.TileStack(
                (d0,), P, both[0], both[1], fully_defined=all(t.fully_defined for t in tiles))


class Compiled(Here):
    """HostPlans' runner: each block as its compiled program (emulator/blockprog.py) where it
    has one and the program finishes it, else by the reference's steps (Here); in a stream
    known whole (Machine.run of bytes, a list or a tuple) run without a log, the second and
    later of consecutive covered blocks as a chain
    (blockprog.Chain), committed before any other block runs and when the stream ends (close).  The program
    module is imported with the first block (it imports Numba, which `import emulator` does not
    need)."""

    def __init__(self, machine: ReferenceMachine, planner, seen: dict):
        super().__init__(machine, planner)
        self.seen = seen
        self.chain = None
        self.chains = machine.__dict__.get("_whole_stream", False)     # Machine.run says so
        self.progs = {}

    def execute(self, block: Block, log, index: int, offset: int | None) -> BlockResult:
        m = self.machine
        if m.engines is None:
            # the program of each block object met in this stream, kept with the block and the
            # config it was looked up under (a stream repeats a few block objects: isa.encoding)
            config = m.config
            hit = self.progs.get(id(block))
            if hit is not None and hit[0] is block and hit[1] is config:
                prog = hit[2]
            else:
                prog = _blockprog().program(block, config.profile)
                if len(self.progs) < 64:
                    self.progs[id(block)] = (block, config, prog)
            if prog is not None:
                # the second and later of consecutive covered blocks, without a log: a chain,
                # committed when it ends (a lone block, as Machine.execute runs, commits at once)
                chain = self.chain
                if chain is not None and log is None:
                    res = prog.step(m, chain, self.seen)
                    if res is not None:
                        return res
                self.close()
                res = prog.run(m, block, log, index, offset, self.seen)
                if res is not None:
                    if chain is None and self.chains:
                        self.chain = _blockprog().Chain()
                    return res
        self.close()
        self.chain = None
        return Here.execute(self, block, log, index, offset)

    def close(self) -> None:
        """The chain's blocks committed to the machine (blockprog.Chain.flush)."""
        if self.chain is not None:
            self.chain.flush(self.machine, self.seen)


@lru_cache(maxsize=1)
def _blockprog():
    from . import blockprog
    return blockprog


class OnDevice:
    """One machine on a device backend (`gpu`): each stream runs on a one-machine batch
    (OnBatch)."""

    def __init__(self, resolved: tuple):
        self.resolved = resolved

    def runner(self, machine: ReferenceMachine) -> "OnBatch":
        return OnBatch(machine, self.resolved)

    def fresh(self) -> "OnDevice":
        return self

    def forget(self) -> None:
        """Nothing kept between streams."""

    def execute(self, m: ReferenceMachine, block: Block) -> BlockResult:
        """One block on m outside any stream (Machine.execute)."""
        runner = self.runner(m)
        try:
            return runner.execute(block, None, 0, None)
        finally:
            runner.close()


def one_machine(backend: str, xp, why: str):
    """How a machine on resolved backend `backend` runs its streams: None for the reference
    (itself, block by block), HostPlans on `cpu`, OnDevice on `gpu`.  Each has runner(machine)
    -- what runs one stream: execute(block, log, index, offset) -> BlockResult, close() --,
    forget() (the machine took another state) and fresh() (the same for a copy)."""
    if backend == "reference":
        return None
    if backend == "cpu":
        return HostPlans()
    return OnDevice((backend, xp, why))


class OnBatch:
    """One stream of a machine on a device backend: its state lives in a one-machine batch (its
    tiles on the device) and comes back when the stream ends or stops (close).  Each block's
    BlockResult reads back the 4 status bytes."""

    def __init__(self, machine: ReferenceMachine, resolved: tuple):
        self.machine = machine
        self.batch = BatchEngine([machine], resolved)

    def execute(self, block: Block, log=None, index: int = 0, offset: int | None = None) -> BlockResult:
        """The block on the batch; its commit records (as block `index` at `offset`) go to `log`
        (its fault record is the run's to write)."""
        rb = resolve(block)                     # the stateless rules raise here, as on the reference
        if self.machine.engines is not None:
            self.machine.engines.admit(rb)
        error = self.batch.run([block], log=None if log is None else _Commits(log, index, offset)).errors[0]
        if error is not None:
            raise error.cause                   # the reference's exception; state: the last commit's
        pes = rb.pes
        status = self.batch.statuses()[0] if pes else ()
        return BlockResult(rb.instr.mnemonic, pes, rb.dest.tile, {p: int(status[p]) for p in pes})

    def close(self) -> None:
        self.machine.adopt(self.batch.machine(0).state)


class _Commits:
    """A log for a one-block run inside a longer stream: commit records renumbered as block
    `index` at `offset`; fault records dropped (the outer run writes its own)."""

    def __init__(self, log, index: int, offset: int | None):
        self.log, self.index, self.offset = log, index, offset

    def write(self, records) -> None:
        from .commitlog import COMMIT, Records
        commits = Records(g for g in records.groups if g.record == COMMIT)
        if len(commits):
            self.log.write(commits.renumbered(block=self.index, offset=self.offset))


class _Machine:
    """A log for machine k of a batch run alone (the reference path): records renumbered."""

    def __init__(self, log, k: int):
        self.log, self.k = log, k

    def write(self, records) -> None:
        self.log.write(records.renumbered(machine=self.k))


class _Recorder:
    """What the batch engine hands its log: the records of every machine for each block, gathered
    from the engine's commit points (cohorts, detached machines, fused chains) and faults, and
    written one Records per block, in block order, when the block is done (`flush`)."""

    def __init__(self, log):
        self.log = log
        self.pending: dict[int, list] = {}        # block index -> Records parts, in arrival order
        self.faults: dict[int, dict] = {}         # block index -> {id(StreamError): (error, [machines])}
        self.blocks: dict[int, tuple] = {}        # block index -> (offset, block)
        self._names: dict[int, tuple] = {}

    def at(self, index: int, offset, block) -> None:
        self.blocks[index] = (offset, block)

    def names(self, index: int) -> tuple[str, str]:
        if index not in self._names:
            block_names = _commitlog().block_names
            self._names[index] = block_names(self.blocks[index][1])
        return self._names[index]

    def commit(self, index: int, ids, tile: int, staged) -> None:
        staged_records = _commitlog().staged_records
        offset = self.blocks[index][0]
        self.pending.setdefault(index, []).append(
            staged_records(staged, block=index, offset=offset, names=self.names(index), tile=tile, machines=ids))

    def fault(self, k: int, err) -> None:
        entry = self.faults.setdefault(err.index, {}).setdefault(id(err), (err, []))
        entry[1].append(k)

    def flush(self) -> None:
        if not self.faults and len(self.pending) == 1:      # the common block: one cohort's commits
            (parts,) = self.pending.values()
            if len(parts) == 1:
                self.pending.clear()
                self.log.write(parts[0])
                self.blocks.clear()
                self._names.clear()
                return
        Records, fault_records = _commitlog().Records, _commitlog().fault_records
        for index in sorted(set(self.pending) | set(self.faults)):
            parts = self.pending.pop(index, [])
            for err, ks in self.faults.pop(index, {}).values():
                decoded = isinstance(err.cause, IllegalBlockException)      # else DECODE_ERROR: no block
                block = self.blocks.get(index, (None, None))[1] if decoded else None
                parts.append(fault_records(err, np.array(sorted(ks), np.uint32), block))
            self.log.write(parts[0] if len(parts) == 1 else Records(g for r in parts for g in r.groups))
        self.blocks.clear()
        self._names.clear()

