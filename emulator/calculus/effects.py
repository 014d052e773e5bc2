"""Static effects: every leaf instance of a program, in source order, with its read/write cells.

The fragment (docs/calculus.md, "Effects"): domain bounds, `where`, array indices, `if`
predicates and block placeholders are pure integer expressions of coordinates, parameters and
parameter tables (affine maps with constant div/mod, or explicit tables), so each op instance's
footprint is computed exactly without running the program.  Where an index or predicate depends
on data, the footprint is over-approximated (whole array, both branches) and the event is
marked `exact=False`; a checker that relies on it says so.

Cells are (key, integer) pairs, held vectorised: `loc = key_code << 40 | cell`.  Array keys are
the array name (cell = row-major flat index); tile keys are `tile:m<machine>:pe<PE>:t<tile>`,
with `@v<n>` when destination renaming is modelled as fresh storage (cell = row << 16 | col);
GPR keys are `gpr:m<machine>:pe<PE>` (cell = register index).  A reduction's contributions
write private slots `red:<reduce path>` (cell = position in source order) that its final
`#result` event reads, so every ordering check sees the contributions precede the result.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .budget import DEFAULT_MAX_COST, WALK_BLOCK_COST, BudgetError, check_budget
from .cells import DATA, Access, describe
from .errors import RegionError, format_coords
from .expr import Const, EvalError, Load, Var, as_index, table_entry, truth, walk
from .program import (GprOp, If, Node, Op, Parallel, Pipeline, Program, Reduce, Scan, Seq, Serial, TileOp,
                      children)
from .tiles import walk_gpr_op, walk_tile_op, walk_tile_reduce

KEY_SHIFT = 40
MAX_INSTANCES = 1 << 20
CELL_MASK = (1 << KEY_SHIFT) - 1


class _Impure(Exception):
    pass


@dataclass
class Event:
    """One leaf instance in source order (an op instance, a block on one PE, a GPR write, an
    `if` predicate, a reduction contribution or its final store)."""
    ordinal: int
    path: str
    coords: dict
    kind: str
    accesses: list[Access] = field(default_factory=list)
    exact: bool = True
    notes: list[str] = field(default_factory=list)
    machine: int = 0
    pe: int | None = None
    block: object = None                   # the isa.Block of a tile event
    extra: dict = field(default_factory=dict)   # reductions: group of a contribution, groups/dtype of a result

    @property
    def label(self) -> str:
        """`$.body.seq[2] TADD (i=1) on PE0`: path, instruction, coordinates, PE."""
        where = format_coords(self.coords) if self.coords else ""
        pe = f" on PE{self.pe}" if self.pe is not None else ""
        mn = ""
        if self.block is not None:
            from isa.instructions import by_carrier
            row = by_carrier(self.block.bstart.Mode, self.block.bstart.Function)
            mn = f" {row.mnemonic}" if row is not None else ""
        mach = f" machine {self.machine}" if self.machine else ""
        return f"{self.path}{mn}{' ' + where if where else ''}{pe}{mach}"

    def cells(self, write: bool) -> dict[str, np.ndarray]:
        out: dict[str, list] = {}
        for a in self.accesses:
            if a.write == write:
                out.setdefault(a.key, []).append(a.cells)
        return {k: np.unique(np.concatenate(v)) for k, v in out.items()}


class Keys:
    """Interns effect keys to small integers for vectorised joins."""

    def __init__(self):
        self.code: dict[str, int] = {}
        self.names: list[str] = []

    def __call__(self, key: str) -> int:
        c = self.code.get(key)
        if c is None:
            c = self.code[key] = len(self.names)
            self.names.append(key)
        return c


class _SEnv:
    __slots__ = ("vars", "walker")

    def __init__(self, walker: "Walker", vars: dict):
        self.walker, self.vars = walker, vars

    def child(self, extra: dict) -> "_SEnv":
        v = dict(self.vars)
        v.update(extra)
        return _SEnv(self.walker, v)

    def name(self, n):
        v = self.vars.get(n, DATA)
        if v is DATA:
            raise _Impure(n)
        return v

    def load(self, n, idx):
        t = self.walker.tables.get(n)
        if t is None:
            raise _Impure(f"{n}[...]")
        return table_entry(t, n, idx)

    def call(self, n, args):
        return self.walker.program.function(n)(*args)


class Walker:
    """Enumerates the events of a program (or one node of it) statically, in source order."""

    def __init__(self, program: Program, *, gprs: dict | None = None, renamed: bool = True,
                 machines: list | None = None):
        self.program = program
        self.machines = list(machines or [])        # initial states: tile descriptors, GPR values
        self.tile_desc: dict = {}                   # (machine, pe, tile) -> Descriptor after a block
        self.tables = {k: v for k, v in program.params.items() if not isinstance(v, int)}
        self.gprs: dict = dict(gprs or {})          # (machine, pe, index) -> int or DATA
        self.renamed = renamed
        self.versions: dict = {}                    # (machine, pe, tile) -> version
        self.snapshots: dict = {}                   # array -> (entry-snapshot key, cells this instance wrote)
        self.events: list[Event] = []
        self.machine = 0
        self.strides = {}
        for k, a in program.arrays.items():
            st, acc = [], 1
            for s in reversed(a.shape):
                st.append(acc)
                acc *= s
            self.strides[k] = tuple(reversed(st))

    # ---- helpers -------------------------------------------------------------------------------
    def pure(self, e, env: _SEnv, path: str):
        try:
            return e.eval(env)
        except _Impure:
            return DATA
        except EvalError as exc:
            raise RegionError(path, str(exc)) from None

    def truth(self, v, path: str) -> bool:
        try:
            return truth(v)
        except EvalError as exc:
            raise RegionError(path, str(exc)) from None

    def emit(self, path, coords, kind, accesses, exact=True, notes=(), **kw) -> Event:
        ev = Event(len(self.events), path, dict(coords), kind, list(accesses), exact, list(notes),
                   machine=self.machine, **kw)
        self.events.append(ev)
        return ev

    def access(self, load: Load, env: _SEnv, write: bool, path: str, notes: list) -> Access | None:
        if load.name in self.tables:
            return None
        shape = self.program.arrays[load.name].shape
        idx = [self.pure(e, env, path) for e in load.index]
        if any(i is DATA for i in idx):
            notes.append(f"{load!r} has a data-dependent index: every element of '{load.name}' assumed")
            n = 1
            for s in shape:
                n *= s
            return self._snap(Access(load.name, write, np.arange(n, dtype=np.int64)), notes)
        for d, (i, n) in enumerate(zip(idx, shape)):
            try:
                i = as_index(i)
            except EvalError as exc:
                raise RegionError(path, f"{load!r}: {exc}") from None
            if not 0 <= i < n:
                raise RegionError(path, f"{load!r} = {load.name}{idx} is out of range (axis {d} has extent {n})")
        flat = sum(i * s for i, s in zip(idx, self.strides[load.name]))
        return self._snap(Access(load.name, write, np.array([flat], dtype=np.int64)), notes)

    def _snap(self, a: Access, notes: list) -> Access:
        """Inside a `snapshot` parallel: a read of a cell the instance has not written itself reads
        the entry snapshot T0 (its own key, written once by the scope's `#snapshot` event)."""
        snap = self.snapshots.get(a.key)
        if snap is None:
            return a
        key, own = snap
        if a.write:
            own.update(a.cells.tolist())
            return a
        mine = np.isin(a.cells, np.fromiter(own, np.int64, len(own))) if own else np.zeros(len(a.cells), bool)
        if not mine.any():
            return Access(key, False, a.cells, a.points)
        if not mine.all():
            notes.append(f"reads of '{a.key}' mix the entry snapshot and the instance's own writes: all taken "
                         f"as reads of the current value")
        return a

    def loads_of(self, e, env: _SEnv, path: str, notes: list) -> list[Access]:
        out = []
        for n in walk(e):
            if isinstance(n, Load):
                a = self.access(n, env, False, path, notes)
                if a is not None:
                    out.append(a)
        return out

    def instances(self, domain, env: _SEnv, path: str) -> list[dict]:
        out: list[dict] = []
        axes = domain.axes

        def rec(k, cur, e):
            if k == len(axes):
                if domain.where is None or self.truth(self.pure(domain.where, e, path), path):
                    out.append(dict(cur))
                return
            ax = axes[k]
            lo, hi = self.pure(ax.lo, e, path), self.pure(ax.hi, e, path)
            try:
                lo, hi = as_index(lo), as_index(hi)
            except EvalError as exc:
                raise RegionError(path, f"axis {ax.name}: {exc}") from None
            if hi - lo > MAX_INSTANCES:
                raise BudgetError(path, f"axis {ax.name} spans {hi - lo} values; at most {MAX_INSTANCES}")
            for i in range(lo, hi):
                cur[ax.name] = i
                rec(k + 1, cur, e.child({ax.name: i}))
            cur.pop(ax.name, None)
        rec(0, {}, env)
        return out

    # ---- nodes ---------------------------------------------------------------------------------
    def walk(self, node: Node, env: _SEnv, coords: dict) -> None:
        getattr(self, "_" + type(node).__name__.lower())(node, env, coords)

    def _op(self, node: Op, env, coords):
        notes: list[str] = []
        accs: list[Access] = []
        for s in node.stmts:
            accs += self.loads_of(s.value, env, node.path, notes)
            t = s.target
            if isinstance(t, Var):
                env.vars[t.name] = DATA
            else:
                for e in t.index:
                    accs += self.loads_of(e, env, node.path, notes)
                a = self.access(t, env, True, node.path, notes)
                if a is not None:
                    accs.append(a)
        for lst, w in ((node.reads, False), (node.writes, True)):
            for ld in lst:
                a = self.access(ld, env, w, node.path, notes)
                if a is not None:
                    accs.append(a)
        self.emit(node.path, coords, "op", accs, exact=not notes, notes=notes)

    def _seq(self, node: Seq, env, coords):
        for item in node.items:
            self.walk(item, env, coords)

    def _if(self, node: If, env, coords):
        notes: list[str] = []
        accs = self.loads_of(node.pred, env, f"{node.path}.if", notes)
        if accs or notes:
            self.emit(f"{node.path}.if", coords, "if", accs, exact=not notes, notes=notes)
        p = self.pure(node.pred, env, f"{node.path}.if")
        if p is DATA:
            start = len(self.events)
            self.walk(node.then, env.child({}), coords)
            if node.else_ is not None:
                self.walk(node.else_, env.child({}), coords)
            for ev in self.events[start:]:
                ev.exact = False
                ev.notes.append(f"under the data-dependent predicate at {node.path}.if (both branches assumed)")
        elif self.truth(p, f"{node.path}.if"):
            self.walk(node.then, env.child({}), coords)
        elif node.else_ is not None:
            self.walk(node.else_, env.child({}), coords)

    def _parallel(self, node: Parallel, env, coords):
        saved = self.machine
        outer = {name: self.snapshots.get(name) for name in node.snapshot}
        for name in node.snapshot:           # the scope keeps T0: one copy, before every instance
            key = f"{name}@entry:{node.path}"
            cells = np.arange(self.program.arrays[name].size, dtype=np.int64)
            self.emit(f"{node.path}#snapshot", coords, "snapshot", [Access(name, False, cells), Access(key, True, cells)])
            self.snapshots[name] = (key, set())
        for n, c in enumerate(self.instances(node.domain, env, f"{node.path}.parallel")):
            if node.batch:
                self.machine = n
            for name in node.snapshot:
                self.snapshots[name] = (self.snapshots[name][0], set())
            self.walk(node.body, env.child(c), {**coords, **c})
        self.machine = saved
        for name, prev in outer.items():
            if prev is None:
                del self.snapshots[name]
            else:
                self.snapshots[name] = prev

    def _serial(self, node: Serial, env, coords):
        notes: list[str] = []
        accs = []
        for k, e in node.carry.items():
            accs += self.loads_of(e, env, f"{node.path}.carry.{k}", notes)
        if accs:
            self.emit(f"{node.path}.carry", coords, "carry", accs, exact=not notes, notes=notes)
        carried = {k: DATA for k in node.carry}
        for c in self.instances(node.domain, env, f"{node.path}.serial"):
            it = env.child({**carried, **c})
            self.walk(node.body, it, {**coords, **c})
            notes, accs = [], []
            for k, e in node.next.items():
                accs += self.loads_of(e, it, f"{node.path}.next.{k}", notes)
            if accs:
                self.emit(f"{node.path}.next", {**coords, **c}, "next", accs, exact=not notes, notes=notes)
        env.vars.update(carried)

    def _pipeline(self, node: Pipeline, env, coords):
        for c in self.instances(node.domain, env, f"{node.path}.pipeline"):
            it = env.child(c)
            for st in node.stages:
                self.walk(st, it, {**coords, **c})

    def _reduce(self, node: Reduce, env, coords):
        if node.tiles:
            walk_tile_reduce(self, node, env, coords)
            return
        # A contribution reads its value and writes a private pseudo cell `red:<path>` (its slot in
        # the fiber); the final `#result` event reads every slot and the seeds, then writes A[o].
        groups: dict[int, None] = {}
        slot = "red:" + node.path
        n = 0
        keys: set = set()
        for c in self.instances(node.domain, env, f"{node.path}.reduce"):
            it = env.child(c)
            cc = {**coords, **c}
            if node.body is not None:
                self.walk(node.body, it, cc)
            notes: list[str] = []
            accs = []
            if node.mask is not None:
                accs += self.loads_of(node.mask, it, f"{node.path}.mask", notes)
                mk = self.pure(node.mask, it, f"{node.path}.mask")
                if mk is DATA:
                    notes.append("data-dependent mask: the contribution is assumed present")
                elif not self.truth(mk, f"{node.path}.mask"):
                    continue                       # masks omit contributions
            if node.key is not None:
                k = tuple(self.pure(e, it, f"{node.path}.key") for e in node.key)
                if k in keys:
                    continue                       # a replica: never an additional contribution
                keys.add(k)
            accs += self.loads_of(node.value, it, f"{node.path}.value", notes)
            target = self.access(Load(node.into, node.group), it, False, f"{node.path}.group", notes)
            group = int(target.cells[0]) if len(target.cells) == 1 else None
            for cell in target.cells.tolist():
                groups[cell] = None
            accs.append(Access(slot, True, np.array([n], dtype=np.int64)))
            n += 1
            self.emit(node.path, cc, "contribution", accs, exact=not notes, notes=notes,
                      extra={"group": describe(self.program, node.into, group) if group is not None else None})
        if groups:
            cells = np.array(sorted(groups), dtype=np.int64)
            self.emit(f"{node.path}#result", coords, "result",
                      [Access(slot, False, np.arange(n, dtype=np.int64)),
                       Access(node.into, False, cells), Access(node.into, True, cells)],
                      extra={"node": node})

    def _scan(self, node: Scan, env, coords):
        # As a reduction: contributions write private slots red:<path>, a `#seed` event reads
        # what the seed reads (at the start), and the `#result` event reads every slot and
        # writes each contribution's prefix result y[r].
        slot = "red:" + node.path
        if node.seed is not None:
            notes: list[str] = []
            accs = self.loads_of(node.seed, env, f"{node.path}.seed", notes)
            accs.append(Access(slot + "#seed", True, np.array([0], dtype=np.int64)))
            self.emit(f"{node.path}#seed", coords, "seed", accs, exact=not notes, notes=notes)
        outs, groups, n = [], {}, 0
        for c in self.instances(node.domain, env, f"{node.path}.scan"):
            it = env.child(c)
            cc = {**coords, **c}
            if node.body is not None:
                self.walk(node.body, it, cc)
            notes = []
            accs = self.loads_of(node.value, it, f"{node.path}.value", notes)
            g = tuple(self.pure(e, it, f"{node.path}.group") for e in node.group)
            groups[g] = groups.get(g, 0) + 1
            out = self.access(Load(node.into, tuple(Const(v) for v in c.values())), it, True, f"{node.path}.into", notes)
            outs.append(out.cells)
            accs.append(Access(slot, True, np.array([n], dtype=np.int64)))
            n += 1
            self.emit(node.path, cc, "contribution", accs, exact=not notes, notes=notes,
                      extra={"group": g, "scan": True})
        if n:
            accs = [Access(slot, False, np.arange(n, dtype=np.int64)),
                    Access(node.into, True, np.concatenate(outs))]
            if node.seed is not None:
                accs.append(Access(slot + "#seed", False, np.array([0], dtype=np.int64)))
            self.emit(f"{node.path}#result", coords, "result", accs, extra={"node": node, "groups": groups})

    def _tileop(self, node: TileOp, env, coords):
        walk_tile_op(self, node, env, coords)

    def _gprop(self, node: GprOp, env, coords):
        walk_gpr_op(self, node, env, coords)


def root_env(walker: Walker) -> _SEnv:
    return _SEnv(walker, {k: v for k, v in walker.program.params.items() if isinstance(v, int)})


def events(program: Program, node: Node | None = None, *, gprs: dict | None = None,
           renamed: bool = True, env: dict | None = None, machines: list | None = None,
           max_cost: int | None = DEFAULT_MAX_COST) -> list[Event]:
    """The events of `node` (default: the whole body) in source order.  `env` binds the
    coordinates of enclosing domains when `node` is not the root; `machines` are the initial
    states tile leaves start from (descriptors and GPR offsets); `renamed` models each tile
    destination as fresh storage (versions), so only true (RAW) dependences link tile blocks.
    A program whose static cost exceeds `max_cost` is refused first (budget.BudgetError)."""
    check_budget(program, max_cost, node, env, WALK_BLOCK_COST)
    w = Walker(program, gprs=gprs, renamed=renamed, machines=machines)
    e = root_env(w)
    if env:
        e = e.child(env)
    w.walk(node if node is not None else program.body, e, dict(env or {}))
    return w.events


def contexts(program: Program, path: str) -> list[dict]:
    """The enclosing-domain coordinates under which the node at `path` runs (pure predicates
    decided; data-dependent ones assumed taken)."""
    out: list[dict] = []
    w = Walker(program)

    def rec(node: Node, env: _SEnv, coords: dict):
        if node.path == path:
            out.append(dict(coords))
            return
        if not path.startswith(node.path):
            return
        if isinstance(node, (Parallel, Serial, Pipeline)) or (isinstance(node, (Reduce, Scan)) and node.body is not None):
            extra = {k: DATA for k in getattr(node, "carry", {})}
            for c in w.instances(node.domain, env, node.path):
                for _, ch in children(node):
                    rec(ch, env.child({**extra, **c}), {**coords, **c})
        elif isinstance(node, If):
            p = w.pure(node.pred, env, node.path)
            for rel, ch in children(node):
                if p is DATA or (rel == ".then") == w.truth(p, node.path):
                    rec(ch, env.child({}), coords)
        else:
            for _, ch in children(node):
                rec(ch, env, coords)
    rec(program.body, root_env(w), {})
    return out
