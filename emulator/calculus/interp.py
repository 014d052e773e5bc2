"""The reference interpreter: the sequential semantics of region programs (docs/calculus.md).

- `op`: statements in order; a load yields a value snapshot (a later store never changes it).
- `P ; P`, `if`: ordinary sequence and conditionals.
- `parallel(D, P)`: instances in lexicographic order (the reference order; under the
  noninterference contract every order gives the same state).  With `validate=True` each
  instance's read/write footprint is recorded and W(i) ∩ (R(j) ∪ W(j)) = ∅ is checked for every
  i != j; the first instance found to conflict with an earlier one is reported with that
  earlier instance and the cell (InterferenceError).
- `serial(D, P)`: ordered iterations; loop-carried values are updated simultaneously at the end
  of each iteration (all `next` expressions are evaluated before any is assigned: swaps work).
- `pipeline(D, Pi, P)`: serial(D, stage_0; ...; stage_k); with `validate=True` the overlapped
  schedule (stage s of iteration n at time n*ii + s) is checked to keep every dependence.
- `reduce(R, g, A, P)`: seed = A[o] when the reduce starts; per active r run P, skip masked
  contributions, count replicas (equal keys) once, then fold each fiber -- its contributions in
  lexicographic source-axis order, whatever their keys -- under the policy (reduction.py).
  Empty fibers leave the seed.
- `scan(R, g, y, P)`: as reduce, but every contribution r stores its fiber's prefix result at
  y[r] (inclusive or exclusive; reduction.scan_prefixes).

Undefined elements (no init) are an error to read, like undefined tile elements.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from .budget import DEFAULT_DEADLINE, DEFAULT_MAX_COST, MAX_INSTANCES, check_budget
from .errors import InterferenceError, PipelineHazardError, RegionRuntimeError
from .expr import EvalError, Names, Var, as_index, table_entry, truth
from .program import (GprOp, If, Op, Parallel, Pipeline, Program, Reduce, Scan, Seq, Serial, TileOp,
                      check_reducer, check_scanner)
from . import reduction as red

# A domain larger than MAX_INSTANCES is refused rather than enumerated (budget.py).
MAX_STEPS = 1 << 23           # leaf instances one run may execute (a runaway program stops, not hangs)


class _Footprint:
    __slots__ = ("reads", "writes")

    def __init__(self):
        self.reads: set = set()
        self.writes: set = set()


class Env(Names):
    """Names in scope for one instance: coordinates, parameters, carried values, locals."""
    __slots__ = ("interp", "coords", "path")

    def __init__(self, interp: "Interpreter", vars: dict, coords: dict, path: str):
        self.interp, self.vars, self.coords, self.path = interp, vars, coords, path

    def child(self, extra: dict | None = None, coords: dict | None = None) -> "Env":
        v = dict(self.vars)
        c = self.coords
        if extra:
            v.update(extra)
        if coords:
            v.update(coords)
            c = {**c, **coords}
        return Env(self.interp, v, c, self.path)

    # the expression protocol (name: Names)
    def load(self, n, idx):
        return self.interp.load(n, idx)

    def call(self, n, args):
        return self.interp.program.function(n)(*args)


@dataclass
class RunResult:
    arrays: dict[str, list]                  # flat, row-major values (None = undefined)
    shapes: dict[str, tuple[int, ...]]
    scope: dict                              # top-level locals and carried values
    machines: list = field(default_factory=list)
    reductions: list = field(default_factory=list)   # (path, group, policy, seed, fiber, result)
    blocks_executed: int = 0

    def array(self, name: str):
        """The array as nested lists."""
        from .loader import _nest
        return _nest(self.arrays[name], self.shapes[name])


class Interpreter:
    def __init__(self, program: Program, *, init: dict | None = None, validate: bool = False,
                 machines: list | None = None, realize: Callable | None = None,
                 parallel_order: str = "lex", batch_template=None, deadline: float | None = DEFAULT_DEADLINE):
        if parallel_order not in ("lex", "reverse"):
            raise ValueError(f"parallel_order is 'lex' or 'reverse', got {parallel_order!r}")
        self.program = program
        self.validate = validate
        self.parallel_order = parallel_order
        self.realize = realize
        self.shapes = {k: a.shape for k, a in program.arrays.items()}
        self.arrays = {k: (list(a.init) if a.init is not None else [None] * a.size)
                       for k, a in program.arrays.items()}
        self.strides = {k: _strides(s) for k, s in self.shapes.items()}
        for k, v in (init or {}).items():
            self.set_array(k, v)
        self.tables = {k: v for k, v in program.params.items() if not isinstance(v, int)}
        self.collectors: list[_Footprint] = []
        self.machines = list(machines or [])
        self.machine_index = 0
        self.batch_template = batch_template       # batch cases beyond `machines` start as its copies
        self.steps = 0
        self.max_steps = MAX_STEPS
        self.deadline = deadline
        self.stop_at = None if deadline is None else time.monotonic() + deadline
        self.blocks_executed = 0
        self.reductions: list = []
        # arrays read as an immutable entry snapshot: name -> [T0 values, collector depth at the
        # scope's entry, cells the current instance wrote itself]
        self.snapshots: dict[str, list] = {}

    # ---- state -------------------------------------------------------------------------------
    def set_array(self, name: str, values) -> None:
        """Replace an array's contents: nested lists in its shape, or a flat row-major list."""
        from .errors import RegionError
        from .loader import _flatten
        if name not in self.shapes:
            raise RegionRuntimeError("init", f"names an undeclared array '{name}'")
        if hasattr(values, "tolist"):
            values = values.tolist()
        shape = self.shapes[name]
        flat_ok = (isinstance(values, list) and len(shape) > 1 and len(values) == len(self.arrays[name])
                   and not any(isinstance(x, list) for x in values))
        try:
            flat = values if flat_ok else _flatten(values, shape, f"init.{name}")
        except RegionError as exc:
            raise RegionRuntimeError("init", str(exc)) from None
        self.arrays[name] = list(flat)

    def _flat(self, name: str, idx: tuple) -> int:
        shape = self.shapes[name]
        for d, (i, n) in enumerate(zip(idx, shape)):
            if not 0 <= i < n:
                raise EvalError(f"{name}[{', '.join(map(str, idx))}] is out of range "
                                f"(axis {d} has extent {n})")
        return sum(i * s for i, s in zip(idx, self.strides[name]))

    def cell_name(self, cell) -> str:
        name, flat = cell
        if name.startswith(("tile:", "gpr:")):
            from .tiles import describe_tile_cell
            return describe_tile_cell(name, flat)
        idx, rest = [], flat
        for s in self.strides[name]:
            idx.append(rest // s)
            rest %= s
        return f"{name}[{', '.join(map(str, idx))}]"

    def load(self, name, idx):
        if name in self.tables:
            return table_entry(self.tables[name], name, idx)
        flat = self._flat(name, idx)
        snap = self.snapshots.get(name)
        if snap is not None and flat not in snap[2]:
            # the entry snapshot T0: a read of T for enclosing scopes, of T0 inside this one
            v = snap[0][flat]
            for d, c in enumerate(self.collectors):
                c.reads.add((name, flat) if d < snap[1] else (name + "@entry", flat))
        else:
            v = self._read(name, flat)
        if v is None:
            raise EvalError(f"read of undefined {name}[{', '.join(map(str, idx))}]")
        return v

    def _read(self, name, flat):
        """The current value of one cell, recorded in every open footprint."""
        for c in self.collectors:
            c.reads.add((name, flat))
        return self.arrays[name][flat]

    def store(self, name, idx, value):
        flat = self._flat(name, idx)
        if value is None:
            raise EvalError(f"store of an undefined value to {name}[{', '.join(map(str, idx))}]")
        for c in self.collectors:
            c.writes.add((name, flat))
        snap = self.snapshots.get(name)
        if snap is not None:
            snap[2].add(flat)                 # the instance reads its own write from now on
        self.arrays[name][flat] = value

    def touch(self, reads=(), writes=()):
        """Record effects that are not array accesses (tiles, GPRs) in the open footprints."""
        for c in self.collectors:
            c.reads.update(reads)
            c.writes.update(writes)

    # ---- evaluation helpers --------------------------------------------------------------------
    def ev(self, e, env: Env, path: str):
        try:
            return e.eval(env)
        except EvalError as exc:
            raise RegionRuntimeError(path, str(exc), env.coords) from None
        except RecursionError:
            raise RegionRuntimeError(path, "expression nesting too deep", env.coords) from None

    def instances(self, domain, env: Env, path: str):
        """Active coordinates in lexicographic order (bounds may use earlier axes)."""
        out: list[dict] = []
        axes = domain.axes
        seen = [0]

        def rec(k: int, cur: dict, e: Env):
            seen[0] += 1
            if not seen[0] & 0xFFF:
                self.tick(path, e.coords)
            if k == len(axes):
                if domain.where is None or truth(self.ev(domain.where, e, path)):
                    out.append(dict(cur))
                    if len(out) > MAX_INSTANCES:
                        raise RegionRuntimeError(path, f"more than {MAX_INSTANCES} instances")
                return
            ax = axes[k]
            lo, hi = as_int(self.ev(ax.lo, e, path), path, e), as_int(self.ev(ax.hi, e, path), path, e)
            if hi - lo > MAX_INSTANCES:
                raise RegionRuntimeError(path, f"axis {ax.name} spans {hi - lo} values; at most "
                                               f"{MAX_INSTANCES} instances per domain", e.coords)
            for i in range(lo, hi):
                cur[ax.name] = i
                rec(k + 1, cur, e.child(coords={ax.name: i}))
            cur.pop(ax.name, None)
        rec(0, {}, env)
        return out

    # ---- nodes ---------------------------------------------------------------------------------
    def tick(self, path: str, coords=None) -> None:
        """The wall-clock backstop (budget.py): checked every 256 steps and enumerated instances."""
        if self.stop_at is not None and time.monotonic() > self.stop_at:
            raise RegionRuntimeError(path, f"still running after the {self.deadline:g} s deadline; the run is "
                                           f"stopped. Raise it with tile-emu run --deadline S or "
                                           f"run(..., deadline=S)", coords)

    def exec(self, node, env: Env) -> None:
        self.steps += 1
        if self.steps > self.max_steps:
            raise RegionRuntimeError(node.path, f"more than {self.max_steps} node executions; "
                                                f"the run is stopped", env.coords)
        if not self.steps & 0xFF:
            self.tick(node.path, env.coords)
        m = _DISPATCH.get(type(node))
        if m is None:
            raise RegionRuntimeError(node.path, f"not a region node: {type(node).__name__}")
        m(self, node, env)

    def _op(self, node: Op, env: Env) -> None:
        for i, s in enumerate(node.stmts):
            p = f"{node.path}.op[{i}]" if len(node.stmts) > 1 else f"{node.path}.op"
            value = self.ev(s.value, env, p)
            t = s.target
            if isinstance(t, Var):
                env.vars[t.name] = value
            else:
                idx = tuple(as_int(self.ev(e, env, p), p, env) for e in t.index)
                try:
                    self.store(t.name, idx, value)
                except EvalError as exc:
                    raise RegionRuntimeError(p, str(exc), env.coords) from None
        for key, accs in (("reads", node.reads), ("writes", node.writes)):
            for i, a in enumerate(accs):
                p = f"{node.path}.{key}[{i}]"
                idx = tuple(as_int(self.ev(e, env, p), p, env) for e in a.index)
                try:
                    flat = self._flat(a.name, idx)
                except EvalError as exc:
                    raise RegionRuntimeError(p, str(exc), env.coords) from None
                cell = (a.name, flat)
                self.touch(reads=[cell] if key == "reads" else (), writes=[cell] if key == "writes" else ())

    def _seq(self, node: Seq, env: Env) -> None:
        for item in node.items:
            self.exec(item, env)

    def _if(self, node: If, env: Env) -> None:
        if truth_at(self.ev(node.pred, env, f"{node.path}.if"), f"{node.path}.if", env):
            self.exec(node.then, env.child())
        elif node.else_ is not None:
            self.exec(node.else_, env.child())

    def _parallel(self, node: Parallel, env: Env) -> None:
        insts = self.instances(node.domain, env, f"{node.path}.parallel")
        if node.batch and self.batch_template is not None:
            while len(self.machines) < len(insts):
                self.machines.append(self.batch_template.copy())
        if node.batch and len(insts) > len(self.machines):
            raise RegionRuntimeError(node.path, f"a batch of {len(insts)} instances needs as many machines; "
                                                f"{len(self.machines)} given")
        saved = self.machine_index
        checker = _NonInterference(self, node.path) if self.validate else None
        order = list(enumerate(insts))
        if self.parallel_order == "reverse":     # another admitted schedule of independent instances
            order.reverse()
        outer = {name: self.snapshots.get(name) for name in node.snapshot}
        for name in node.snapshot:
            self.snapshots[name] = [list(self.arrays[name]), len(self.collectors), set()]
        try:
            self._instances(node, env, order, checker)
        finally:
            for name, prev in outer.items():
                if prev is None:
                    del self.snapshots[name]
                else:
                    self.snapshots[name] = prev
            self.machine_index = saved

    def _instances(self, node: Parallel, env: Env, order, checker) -> None:
        saved = self.machine_index
        for n, coords in order:
            if node.batch:
                self.machine_index = n
            for name in node.snapshot:
                self.snapshots[name][2] = set()
            fp = None
            if checker is not None:
                fp = _Footprint()
                self.collectors.append(fp)
            try:
                self.exec(node.body, env.child(coords=coords))
            finally:
                if fp is not None:
                    self.collectors.pop()
                self.machine_index = saved
            if checker is not None:
                checker.add(coords, fp)
                for c in self.collectors:      # an enclosing parallel sees this instance's effects
                    c.reads |= fp.reads
                    c.writes |= fp.writes

    def _serial(self, node: Serial, env: Env) -> None:
        carry = {k: self.ev(e, env, f"{node.path}.carry.{k}") for k, e in node.carry.items()}
        for coords in self.instances(node.domain, env, f"{node.path}.serial"):
            it = env.child(extra=carry, coords=coords)
            self.exec(node.body, it)
            # Simultaneous update: every next value from the iteration's final state, then assign.
            new = {k: self.ev(e, it, f"{node.path}.next.{k}") for k, e in node.next.items()}
            carry.update(new)
        env.vars.update(carry)

    def _pipeline(self, node: Pipeline, env: Env) -> None:
        insts = self.instances(node.domain, env, f"{node.path}.pipeline")
        events = []           # (n, s, coords, footprint) for the hazard check
        for n, coords in enumerate(insts):
            it = env.child(coords=coords)
            for s, stage in enumerate(node.stages):
                fp = None
                if self.validate:
                    fp = _Footprint()
                    self.collectors.append(fp)
                try:
                    self.exec(stage, it)
                finally:
                    if fp is not None:
                        self.collectors.pop()
                if fp is not None:
                    _pipeline_hazard(self, node, events, n, s, coords, fp)
                    events.append((n, s, coords, fp))
                    for c in self.collectors:
                        c.reads |= fp.reads
                        c.writes |= fp.writes

    def _reduce(self, node: Reduce, env: Env) -> None:
        if node.tiles:
            from .tiles import exec_tile_reduce
            exec_tile_reduce(self, node, env)
            return
        f = check_reducer(self.program, node)
        lift = None if node.lift is None else self.program.function(node.lift)
        path = node.path
        insts = self.instances(node.domain, env, f"{path}.reduce")
        seeds: dict[tuple, object] = {}
        fibers: dict[tuple, list] = {}
        seen: dict[tuple, tuple] = {}
        for coords in insts:
            it = env.child(coords=coords)
            if node.body is not None:
                self.exec(node.body, it)
            if node.mask is not None and not truth_at(self.ev(node.mask, it, f"{path}.mask"), f"{path}.mask", it):
                continue                                   # masks omit contributions
            v = self.ev(node.value, it, f"{path}.value")
            o = tuple(as_int(self.ev(g, it, f"{path}.group"), f"{path}.group", it) for g in node.group)
            k = tuple(coords.values()) if node.key is None else \
                tuple(as_int(self.ev(e, it, f"{path}.key"), f"{path}.key", it) for e in node.key)
            if k in seen:                                  # a replica: never an extra contribution
                o0, v0 = seen[k]
                if o0 != o or not red.same(v0, v):
                    raise RegionRuntimeError(f"{path}.key", f"replicas of contribution {k} disagree "
                                                            f"({o0}: {v0!r} vs {o}: {v!r})", coords)
                continue
            seen[k] = (o, v)
            if o not in seeds:
                try:
                    self._flat(node.into, o)
                    seeds[o] = self._seed(node.into, o)
                except EvalError as exc:
                    raise RegionRuntimeError(f"{path}.group", str(exc), coords) from None
            fibers.setdefault(o, []).append(v)       # source order: keys decide identity, not order
        for o in sorted(fibers):
            fiber = fibers[o]
            seed = seeds[o]
            try:
                result = self.fold(node, f, seed, fiber, lift, o)
            except EvalError as exc:
                raise RegionRuntimeError(f"{path}.combine", str(exc), {"group": o}) from None
            self.reductions.append((path, o, node.policy, seed, fiber, result))
            self.store(node.into, o, result)

    def _scan(self, node: Scan, env: Env) -> None:
        f = check_scanner(self.program, node)
        path = node.path
        seed = red.NO_SEED if node.seed is None else self.ev(node.seed, env, f"{path}.seed")
        fibers: dict[tuple, list] = {}
        for coords in self.instances(node.domain, env, f"{path}.scan"):
            it = env.child(coords=coords)
            if node.body is not None:
                self.exec(node.body, it)
            v = self.ev(node.value, it, f"{path}.value")
            g = tuple(as_int(self.ev(e, it, f"{path}.group"), f"{path}.group", it) for e in node.group)
            fibers.setdefault(g, []).append((coords, v))        # source order
        for g, members in fibers.items():
            fiber = [v for _, v in members]
            try:
                results = self.scan_fold(node, f, seed, fiber, g)
            except EvalError as exc:
                raise RegionRuntimeError(f"{path}.combine", str(exc), {"group": g}) from None
            for (coords, _), r in zip(members, results):
                try:
                    self.store(node.into, tuple(coords.values()), r)
                except EvalError as exc:
                    raise RegionRuntimeError(f"{path}.into", str(exc), coords) from None
            self.reductions.append((path, g, node.policy, seed, fiber, results))

    def scan_fold(self, node: Scan, f, seed, fiber, group) -> list:
        """The reference prefix results, or the `realize` hook's (a list), checked in validate
        mode prefix by prefix (exhaustively, for prefixes small enough to decide)."""
        if self.realize is None:
            return red.scan_prefixes(node.policy, f, seed, fiber, node.exclusive)
        results = self.realize(node, f, seed, fiber, None)
        if not isinstance(results, (list, tuple)) or len(results) != len(fiber):
            raise RegionRuntimeError(node.path, f"a realized scan gives one result per contribution "
                                                f"({len(fiber)} for group {group})")
        if self.validate and len(fiber) + 1 <= red.MAX_TREE_LEAVES:
            k = red.scan_admits(node.policy, f, seed, fiber, results, node.exclusive)
            if k is not None:
                raise RegionRuntimeError(node.path, f"realized prefix result {k} ({results[k]!r}) for group "
                                                    f"{group} is not admitted by {node.policy}")
        return list(results)

    def fold(self, node: Reduce, f, seed, fiber, lift, group):
        """The reference result of one fiber, or the `realize` hook's, which validate mode checks
        is admitted by the policy (exhaustively, for fibers small enough to decide)."""
        if self.realize is None:
            return red.canonical(node.policy, f, seed, fiber, lift, node.seed_side)
        result = self.realize(node, f, seed, fiber, lift)
        if self.validate and len(fiber) + 1 <= red.MAX_TREE_LEAVES and \
                not red.admits(node.policy, f, seed, fiber, result, lift, node.seed_side):
            raise RegionRuntimeError(node.path, f"realized result {result!r} for group {group} is not "
                                                f"admitted by {node.policy}")
        return result

    def _seed(self, name, o):
        v = self._read(name, self._flat(name, o))
        if v is None:
            raise EvalError(f"the seed {name}[{', '.join(map(str, o))}] is undefined")
        return v

    def _tile(self, node: TileOp, env: Env) -> None:
        from .tiles import exec_tile_op
        exec_tile_op(self, node, env)

    def _gpr(self, node: GprOp, env: Env) -> None:
        from .tiles import exec_gpr_op
        exec_gpr_op(self, node, env)

    @property
    def machine(self):
        if not self.machines:
            return None
        return self.machines[self.machine_index]


_DISPATCH = {Op: Interpreter._op, Seq: Interpreter._seq, If: Interpreter._if,
             Parallel: Interpreter._parallel, Serial: Interpreter._serial,
             Pipeline: Interpreter._pipeline, Reduce: Interpreter._reduce, Scan: Interpreter._scan,
             TileOp: Interpreter._tile, GprOp: Interpreter._gpr}


class _NonInterference:
    """Incremental check: when instance j finishes, compare it with every earlier instance."""

    def __init__(self, interp: Interpreter, path: str):
        self.interp, self.path = interp, path
        self.first_writer: dict = {}
        self.first_reader: dict = {}
        self.coords: list[dict] = []

    def add(self, coords: dict, fp: _Footprint) -> None:
        j = len(self.coords)
        self.coords.append(coords)
        best = None                                    # (i, cell, kind)
        for cell in fp.writes:
            for table, kind in ((self.first_writer, "write/write"), (self.first_reader, "read/write")):
                i = table.get(cell)
                if i is not None and (best is None or (i, kind) < (best[0], best[2])):
                    best = (i, cell, kind)
        for cell in fp.reads - fp.writes:
            i = self.first_writer.get(cell)
            if i is not None and (best is None or i < best[0]):
                best = (i, cell, "write/read")
        if best is not None:
            i, cell, kind = best
            raise InterferenceError(self.path, self.coords[i], coords, self.interp.cell_name(cell), kind)
        for cell in fp.writes:
            self.first_writer.setdefault(cell, j)
        for cell in fp.reads:
            self.first_reader.setdefault(cell, j)


def _pipeline_hazard(interp, node: Pipeline, events, n, s, coords, fp) -> None:
    t = n * node.ii + s
    # Only stages of the last (S - 1) // ii iterations can issue at or after t (n1*ii + s1 >= t
    # with s1 < S), so the check looks back that far and no further: linear in the iterations.
    first = n - (len(node.stages) - 1) // node.ii
    start = len(events)
    while start and events[start - 1][0] >= first:
        start -= 1
    for (n1, s1, c1, f1) in events[start:]:
        if n1 == n or n1 * node.ii + s1 < t:
            continue
        cells = (f1.writes & (fp.reads | fp.writes)) | (fp.writes & f1.reads)
        if cells:
            cell = interp.cell_name(min(cells, key=repr))
            raise PipelineHazardError(
                node.path, f"stage {s1} of iteration {_fmt(c1)} issues at time {n1 * node.ii + s1}, not "
                           f"before stage {s} of iteration {_fmt(coords)} at time {t}, but they share {cell}; "
                           f"a larger ii or a different stage split is needed")


def _fmt(c: dict) -> str:
    from .errors import format_coords
    return format_coords(c)


def _strides(shape) -> tuple[int, ...]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return tuple(reversed(out))


def as_int(v, path, env) -> int:
    try:
        return as_index(v)
    except EvalError as exc:
        raise RegionRuntimeError(path, str(exc), env.coords) from None


def truth_at(v, path, env) -> bool:
    try:
        return truth(v)
    except EvalError as exc:
        raise RegionRuntimeError(path, str(exc), env.coords) from None


def run(program: Program, *, init: dict | None = None, validate: bool = False,
        machines: list | None = None, realize: Callable | None = None,
        parallel_order: str = "lex", batch_template=None, max_cost: int | None = DEFAULT_MAX_COST,
        deadline: float | None = DEFAULT_DEADLINE) -> RunResult:
    """Interpret `program` from its declared (or `init`-overridden) arrays and the given machines.

    `realize(node, f, seed, fiber, lift) -> value` replaces the canonical tree result of a
    reduction (to model another realization; validate mode checks the policy admits it); for a
    scan node it returns the list of prefix results, each checked the same way;
    `parallel_order="reverse"` runs parallel instances in reverse lexicographic order;
    instance k of a `batch` parallel runs on machines[k], created as a copy of `batch_template`
    when fewer machines were given.

    Budgets (budget.py): a program whose static cost exceeds `max_cost` is refused before it
    runs (BudgetError); a run still going after `deadline` seconds is stopped
    (RegionRuntimeError).  None disables either."""
    check_budget(program, max_cost)
    it = Interpreter(program, init=init, validate=validate, machines=machines, realize=realize,
                     parallel_order=parallel_order, batch_template=batch_template, deadline=deadline)
    params = {k: v for k, v in program.params.items() if isinstance(v, int)}
    env = Env(it, dict(params), {}, "$.body")
    it.exec(program.body, env)
    scope = {k: v for k, v in env.vars.items() if k not in params}
    return RunResult(it.arrays, it.shapes, scope, it.machines, it.reductions, it.blocks_executed)
