"""`tile-emu run PROGRAM.regions.json [--init INIT.arrow] [--out OUT.arrow|OUT.json]`.

Runs a region program with the reference interpreter in validate mode (parallel
noninterference and pipeline hazards are checked as it runs).  Tile-block leaves execute on a
machine loaded from --init (an empty machine without it); instance k of a `batch` parallel
runs on case machine k, a copy of the initial state.  --out X.arrow writes machine 0's final
state (case k >= 1 to X.case<k>.arrow); --out X.json writes the program's arrays.  The arrays
are also printed (one JSON object) unless -q.  Errors are one line: the JSON path, the
instance coordinates and why.
"""
from __future__ import annotations

import contextlib
import gc
import json
import math
import pathlib
import sys

from emulator.cli import CommandError
from isa.atomicio import OutputPathError, atomic_open, shown, why

from .budget import DEFAULT_DEADLINE, DEFAULT_MAX_CODE, DEFAULT_MAX_COST, check_budget
from .errors import RegionError, RegionRuntimeError
from .interp import run
from .loader import _nest, load_file


def _jsonable(v):
    if isinstance(v, float) and not math.isfinite(v):
        return {"f64": repr(v)}
    return v


def _arrays_json(res) -> dict:
    return {k: _nest([_jsonable(x) for x in flat], res.shapes[k]) for k, flat in res.arrays.items()}


def _case_path(out: str, k: int) -> str:
    p = pathlib.Path(out)
    return str(p.with_name(f"{p.stem}.case{k}{p.suffix}"))


@contextlib.contextmanager
def _collector_paused():
    """Loading allocates a tree of small objects that nothing frees until it is built; Python's
    cyclic collector would rescan it again and again (a 16 MB deeply nested program: 10 s of
    JSON parsing instead of 1 s), so it waits until the program is loaded."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def run_regions(args, initial_machine, write_state) -> int:
    """`initial_machine(args)` and `write_state(machine, path)` are the run command's own (it
    calls this), so block streams and region programs start and end the same way."""
    max_cost = getattr(args, "max_cost", None) or DEFAULT_MAX_COST
    deadline = getattr(args, "deadline", None) or DEFAULT_DEADLINE
    max_code = getattr(args, "max_code", None) or DEFAULT_MAX_CODE
    try:
        with _collector_paused():
            program = load_file(args.stream, max_code)
            check_budget(program, max_cost)
    except RegionError as exc:
        raise CommandError(f"{shown(args.stream)}: {exc}") from None
    machine = initial_machine(args)
    failure = None
    res = None
    try:
        res = run(program, machines=[machine], validate=True, batch_template=machine.copy(),
                  max_cost=None, deadline=deadline)     # the budget was checked above
        machines = res.machines
    except RegionRuntimeError as exc:
        failure = exc
        machines = [machine]
    out = getattr(args, "out", None)
    if out:
        if out.endswith(".json"):
            if res is not None:
                try:
                    with atomic_open(out, "w", encoding="utf-8") as f:
                        f.write(json.dumps(_arrays_json(res), indent=1) + "\n")
                except (OSError, OutputPathError) as exc:
                    raise CommandError(f"{shown(out)}: cannot write: {why(exc)}") from None
        else:
            write_state(machines[0], out)
            for k, m in enumerate(machines[1:], start=1):
                write_state(m, _case_path(out, k))
    if failure is not None:
        print(f"tile-emu run: {shown(args.stream)}: {failure}", file=sys.stderr)
        if out and not out.endswith(".json"):
            print(f"tile-emu run: the state when it stopped was written to {shown(out)}", file=sys.stderr)
        return 1
    if not getattr(args, "quiet", False):
        if res.arrays:
            print(json.dumps(_arrays_json(res)))
        extra = f"; {len(machines)} case machine(s)" if len(machines) > 1 else ""
        print(f"{args.stream}: region program ran: {res.blocks_executed} tile block(s), "
              f"{len(res.reductions)} reduction(s){extra}" + (f"; final state {out}" if out else ""))
    return 0
