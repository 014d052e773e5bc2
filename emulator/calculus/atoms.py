"""Atom refinement (seed 002): "replace a matching semantic subgraph; target atom's value, layout,
convergence, effect and arithmetic contract".  "A collective atom refines a whole semantic
subgraph, so it is not modeled as a bijection between scalar FLOPs and machine instructions. Its
contract connects input/output values, participant convergence, effects, and numerical policy."

A plan step `Step("atom", events, atom=AtomContract(...))` replaces its member events -- any
subgraph: the ops of one instance, a block on several PEs, every contribution and the result of
a reduction -- by one atom.  check_plan's order obligations see the members' dependences on
outside events in their source directions, plus the atom's extra declared reads (so a subgraph
that is not convex -- an outside event between two members -- cannot be placed), and then:

| obligation | what |
|---|---|
| well-typed atom | an AtomContract with cell sets per key |
| value contract | the atom reads every value the subgraph takes from outside it |
| effect contract | the atom writes exactly what the subgraph writes: every value it produces, nothing else observable |
| layout contract | each operand's lane layout: an output element written by exactly one lane, every input element read by some lane (replicas are fine) |
| convergence | the participants that run the members are the atom's, converged: none predicated by data, none missing |
| arithmetic contract | a reduction in the subgraph is realized within what its policy admits (the atom's policy admits no computation the source's does not); other operations exactly |
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .cells import Access, describe
from .domains import FiniteDomain, IndexMap
from .errors import UndecidedError
from .expr import EvalError
from .witnesses import _Fail


@dataclass
class AtomContract:
    name: str
    reads: dict = field(default_factory=dict)         # effect key (array, tile key) -> cells
    writes: dict = field(default_factory=dict)
    participants: tuple | None = None                 # who runs it together (None: whoever runs the members)
    converged: bool = True
    arithmetic: dict = field(default_factory=dict)    # reduction path -> the policy it realizes; "exact": bool
    layout: dict = field(default_factory=dict)        # key -> (FiniteDomain of lanes, IndexMap lane -> cell)


def _cells(program, key, v, what) -> np.ndarray:
    """Cells of one key: flat ints, or element coordinates of an array."""
    try:
        items = list(v)
    except TypeError:
        raise _Fail("well-typed atom", f"{what}[{key!r}] must be a list of cells") from None
    out = []
    shape = program.arrays[key].shape if key in program.arrays else None
    for c in items:
        if isinstance(c, (tuple, list)) and shape is not None:
            if len(c) != len(shape) or not all(isinstance(x, int) and 0 <= x < n for x, n in zip(c, shape)):
                raise _Fail("well-typed atom", f"{what}[{key!r}]: {c!r} is not an element of {key}")
            out.append(int(np.ravel_multi_index(tuple(c), shape)))
        elif isinstance(c, (int, np.integer)) and not isinstance(c, bool) and c >= 0:
            out.append(int(c))
        else:
            raise _Fail("well-typed atom", f"{what}[{key!r}]: {c!r} is not a cell")
    return np.unique(np.array(out, np.int64))


def _sets(evs, ids):
    """Per key: cells the members write, and cells they read from outside (not written earlier
    by a member)."""
    written: dict = {}
    outside: dict = {}
    for i in ids:
        for a in evs[i].accesses:
            if not a.write:
                inner = written.get(a.key)
                cells = a.cells if inner is None else np.setdiff1d(a.cells, inner)
                if len(cells):
                    outside[a.key] = np.union1d(outside.get(a.key, np.zeros(0, np.int64)), cells)
        for a in evs[i].accesses:
            if a.write:
                written[a.key] = np.union1d(written.get(a.key, np.zeros(0, np.int64)), a.cells)
    return written, outside


def substitute(program, plan, steps, evs) -> list:
    """The events as check_plan's order obligations see them: an atom's members keep their own
    accesses (their dependences on outside events keep their source directions, so a subgraph
    that is not convex -- an outside event between two members -- breaks an order), and the
    first member also reads whatever the atom declares beyond what the members read."""
    out = list(evs)
    for s, (step, ids) in enumerate(zip(plan.steps, steps)):
        if step.kind != "atom":
            continue
        atom = step.atom
        if not isinstance(atom, AtomContract) or not isinstance(atom.reads, dict) or not isinstance(atom.writes, dict):
            raise _Fail("well-typed atom", f"atom step {s} needs an AtomContract with dicts reads/writes")
        read: dict = {}
        for i in ids:
            for a in evs[i].accesses:
                read[a.key] = np.union1d(read.get(a.key, np.zeros(0, np.int64)), a.cells)
        extra = []
        for k, v in atom.reads.items():
            more = np.setdiff1d(_cells(program, k, v, "reads"), read.get(k, np.zeros(0, np.int64)))
            if len(more):
                extra.append(Access(k, False, more))
        if extra:
            first = min(ids)
            out[first] = replace(evs[first], accesses=list(evs[first].accesses) + extra)
    return out


def check_atoms(program, plan, steps, evs) -> None:
    from .placement import participant_of
    phases = getattr(plan.placement, "phases", None) or []
    for s, (step, ids) in enumerate(zip(plan.steps, steps)):
        if step.kind != "atom":
            continue
        atom = step.atom
        where = f"atom step {s} ({atom.name})"
        written, outside = _sets(evs, ids)
        for k in [k for k in set(written) | set(outside) if _private(k)]:
            if k in outside and k.startswith("red:"):
                raise _Fail("value contract", f"{where} holds the final merge of {k[4:]} but not all its contributions: "
                                              f"a reduction's partial states are private to it")
            written.pop(k, None)
            outside.pop(k, None)
        declared_r = {k: _cells(program, k, v, "reads") for k, v in atom.reads.items()}
        declared_w = {k: _cells(program, k, v, "writes") for k, v in atom.writes.items()}
        for k, cells in outside.items():
            miss = np.setdiff1d(cells, declared_r.get(k, np.zeros(0, np.int64)))
            if len(miss):
                raise _Fail("value contract", f"{where} does not read {describe(program, k, int(miss[0]))}, which the "
                                              f"subgraph takes from outside it")
        for k in set(written) | set(declared_w):
            have, want = written.get(k, np.zeros(0, np.int64)), declared_w.get(k, np.zeros(0, np.int64))
            lost, extra = np.setdiff1d(have, want), np.setdiff1d(want, have)
            if len(lost):
                raise _Fail("effect contract", f"{where} does not write {describe(program, k, int(lost[0]))}, which the "
                                               f"subgraph produces")
            if len(extra):
                raise _Fail("effect contract", f"{where} also writes {describe(program, k, int(extra[0]))}, which the "
                                               f"subgraph does not: an observable effect of its own")
        _layout(program, atom, where, declared_r, declared_w)
        _convergence(atom, where, [evs[i] for i in ids], phases, participant_of)
        _arithmetic(program, atom, where, [evs[i] for i in ids])


def _private(key: str) -> bool:
    """Pseudo-cells no one outside observes: a reduction's partial states, a snapshot's copy."""
    return key.startswith("red:") or "@entry:" in key


def _layout(program, atom, where, reads, writes) -> None:
    if not isinstance(atom.layout, dict):
        raise _Fail("well-typed atom", f"{where}: layout maps keys to (FiniteDomain, IndexMap)")
    for key, spec in atom.layout.items():
        try:
            lanes, to_cell = spec
        except (TypeError, ValueError):
            raise _Fail("well-typed atom", f"{where}: layout[{key!r}] is (FiniteDomain of lanes, IndexMap lane -> cell)") from None
        if not isinstance(lanes, FiniteDomain) or not isinstance(to_cell, IndexMap):
            raise _Fail("well-typed atom", f"{where}: layout[{key!r}] is (FiniteDomain of lanes, IndexMap lane -> cell)")
        shape = program.arrays[key].shape if key in program.arrays else None
        got = []
        for lane in lanes.points():
            try:
                c = tuple(to_cell(lane))
            except (EvalError, TypeError, ValueError) as exc:
                raise _Fail("layout contract", f"{where}: lane {lane} of {key}: {exc}") from None
            got.append(int(np.ravel_multi_index(c, shape)) if shape is not None and len(c) == len(shape) else c[0])
        got = np.array(got, np.int64)
        if key in writes:
            uniq, count = np.unique(got, return_counts=True)
            dup = uniq[count > 1]
            if len(dup):
                raise _Fail("layout contract", f"{where}: {describe(program, key, int(dup[0]))} is written by "
                                               f"{int(count[count > 1][0])} lanes of the atom's output layout")
            miss = np.setdiff1d(writes[key], uniq)
            if len(miss):
                raise _Fail("layout contract", f"{where}: no lane of the output layout holds "
                                               f"{describe(program, key, int(miss[0]))}")
        if key in reads:
            miss = np.setdiff1d(reads[key], got)
            if len(miss):
                raise _Fail("layout contract", f"{where}: no lane of the input layout reads "
                                               f"{describe(program, key, int(miss[0]))}")


def _convergence(atom, where, members, phases, participant_of) -> None:
    if atom.converged is not True:
        raise _Fail("convergence", f"{where} declares its participants not converged; a collective atom needs them "
                                   f"all together")
    for e in members:
        if any("data-dependent predicate" in n for n in e.notes):
            raise _Fail("convergence", f"{where}: {e.label} runs under a data-dependent predicate, so its participant "
                                       f"may be predicated away while the atom needs it converged")
    if atom.participants is None:
        return
    try:
        allowed = {tuple(p) if isinstance(p, (tuple, list)) else (p,) for p in atom.participants}
    except TypeError:
        raise _Fail("well-typed atom", f"{where}: participants is a list of participant coordinates") from None
    running = set()
    for e in members:
        p = participant_of(phases, e)
        p = p if p is not None else ((e.pe,) if e.pe is not None else tuple(e.coords.values()))
        if p:                                 # a final merge of the whole group has no participant of its own
            running.add(p)
    extra = sorted(running - allowed)
    if extra:
        raise _Fail("convergence", f"{where}: participant {list(extra[0])} runs a member but is not one of the atom's")
    missing = sorted(allowed - running)
    if missing:
        raise _Fail("convergence", f"{where}: the atom needs participant {list(missing[0])} converged, which runs no "
                                   f"member (predicated away, or outside the subgraph)")


def _arithmetic(program, atom, where, members) -> None:
    from .program import Reduce, Scan
    from .refine import _WITHIN
    if not isinstance(atom.arithmetic, dict):
        raise _Fail("well-typed atom", f"{where}: arithmetic maps reduction paths to policies")
    reductions = {}
    plain = False
    for e in members:
        node = e.extra.get("node")
        if e.kind in ("contribution", "result"):
            path = e.path.split("#")[0]
            reductions[path] = node if node is not None else reductions.get(path)
        elif e.kind in ("op", "block"):
            plain = True
    for path, node in reductions.items():
        realized = atom.arithmetic.get(path)
        if realized is None:
            raise _Fail("arithmetic contract", f"{where} replaces the reduction {path} but says nothing of how it "
                                               f"merges (arithmetic[{path!r}] = the policy it realizes)")
        source = getattr(node, "policy", None)
        if node is None:
            from .program import find
            source = find(program, path).policy
        if isinstance(node, (Reduce, Scan)) or source is not None:
            if source not in _WITHIN.get(realized, ()):
                raise _Fail("arithmetic contract", f"{where} realizes {path} as {realized}, which admits computations its "
                                                   f"{source} policy does not")
    if plain and atom.arithmetic.get("exact", True) is not True:
        raise _Fail("arithmetic contract", f"{where} computes the subgraph's operations inexactly; only a reduction's "
                                           f"admitted set can absorb a different computation")


def tile_cells(rows: int, cols: int) -> list:
    """The cells of a rows x cols tile region (cell = row << 16 | col), for tile keys."""
    return [r << 16 | c for r in range(rows) for c in range(cols)]
