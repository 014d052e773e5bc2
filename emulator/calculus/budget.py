"""Budgets that bound every evaluation of a region program, in time as well as in steps.

A program file is untrusted input: a few kilobytes can describe 2^40 instances, a `seq` of a
million leaves, or functions that each call the previous one twice (2^30 calls for one
expression).  Two budgets stop them (docs/regions.md, "Budgets"):

- the **static cost**, computed from the program alone before anything runs, in linear time:
  an upper bound on the work of one run, in units of about one expression node or one
  instance (a few microseconds each).  A loop costs its instance count times the cost of one
  instance; the instance count of a domain is bounded by interval arithmetic over its bounds
  (parameters are constants, a parameter table ranges over its entries, an enclosing
  coordinate over its own bounds), and an axis whose bounds cannot be bounded so counts as
  the interpreter's per-domain limit.  A call to a user function costs the size of its body
  with every call expanded, computed once per function (memoised), so exponential call trees
  are priced exactly, not evaluated.  A tile block costs BLOCK_COST: it runs a whole tile
  instruction on the emulator.  A program above `max_cost` is refused (`BudgetError`) before
  it runs.
- the **deadline**, a wall-clock limit checked while the interpreter runs, as a backstop for
  what the static bound cannot see.

Both are parameters of `run` (and of `tile-emu run`: `--max-cost`, `--deadline`).  A third
budget, the characters of code a program may hold, bounds loading itself (`check_code_size`;
`load(..., max_code=N)`, `tile-emu run --max-code N`).
"""
from __future__ import annotations

from .errors import RegionError
from .expr import Bin, Call, Const, Expr, ExprSyntaxError, Load, Un, Var, parse_expr, walk
from .program import GprOp, If, Op, Parallel, Pipeline, Program, Reduce, Scan, Seq, Serial, TileOp, TileRef

DEFAULT_MAX_COST = 1 << 22     # about 10 s of interpretation on a 2-core development box
DEFAULT_DEADLINE = 60.0        # seconds
BLOCK_COST = 8192              # a tile block run on the emulator (~20 ms measured)
WALK_BLOCK_COST = 32           # a tile block's effects in the static walker (effects.events; ~50-100 us)
INSTANCE_COST = 2              # entering one instance: its coordinates and scope
MAX_INSTANCES = 1 << 20        # the interpreter's per-domain limit (interp.MAX_INSTANCES)
_CAP = 1 << 62                 # costs saturate here: a bound, never a giant integer


class BudgetError(RegionError):
    """A program whose static cost exceeds the budget: refused before it runs."""


# Loading parses every expression, statement and block text of the program (a few microseconds
# per character, linear: a 1 Mi-character seq loads in seconds); this bounds that work by
# default.  Data (params, array contents) is not code.
DEFAULT_MAX_CODE = 1 << 20


def check_code_size(doc, max_code: int | None = DEFAULT_MAX_CODE) -> int:
    """Characters of code (strings under `body` and `functions`) in a program document; a
    BudgetError beyond `max_code` (None: no limit), found in one pass before anything is parsed."""
    if not isinstance(doc, dict):
        return 0
    n, stack = 0, [doc.get("body"), doc.get("functions")]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            n += len(v)
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    if max_code is not None and n > max_code:
        raise BudgetError("$.body", f"{n} characters of code (expressions, statements, block text) exceed the "
                                    f"code budget of {max_code} (docs/regions.md 'Budgets'); refused before "
                                    f"parsing. Raise it with tile-emu run --max-code N, or max_code=N in Python "
                                    f"(load, loads, load_file)")
    return n


def _add(*xs: int) -> int:
    return min(_CAP, sum(xs))


def _mul(a: int, b: int) -> int:
    return min(_CAP, a * b)


# ---------------------------------------------------------------------------------------------
# Interval bounds of pure integer expressions (domain bounds)

def _corners(f, a, b):
    vals = [f(x, y) for x in a for y in b]
    return min(vals), max(vals)


def _bin_interval(op, a, b):
    if op == "+":
        return a[0] + b[0], a[1] + b[1]
    if op == "-":
        return a[0] - b[1], a[1] - b[0]
    if op == "*":
        return _corners(lambda x, y: x * y, a, b)
    if op == "//" and (b[0] > 0 or b[1] < 0):       # floor division is monotone off zero
        return _corners(lambda x, y: x // y, a, b)
    if op == "%":
        if b[0] > 0:
            return (a[0], a[1]) if 0 <= a[0] and a[1] < b[0] else (0, b[1] - 1)
        if b[1] < 0:
            return b[0] + 1, 0
    if op in ("<<", ">>") and 0 <= b[0] and b[1] <= 4096:
        if op == "<<":
            return _corners(lambda x, y: x << y, a, b)
        return _corners(lambda x, y: x >> y, a, b)
    if op in ("&", "|", "^") and a[0] >= 0 and b[0] >= 0:
        if op == "&":
            return 0, min(a[1], b[1])
        return 0, (1 << max(a[1].bit_length(), b[1].bit_length())) - 1
    if op in ("==", "!=", "<", "<=", ">", ">=", "and", "or"):
        return 0, 1
    return None


class _Intervals:
    """[lo, hi] of a pure integer expression given intervals of the names it may use."""

    def __init__(self, program: Program):
        self.ints = {k: v for k, v in program.params.items() if isinstance(v, int)}
        self.tables = {k: v for k, v in program.params.items() if not isinstance(v, int)}
        self._table_range: dict = {}

    def table(self, name):
        if name not in self._table_range:
            flat, stack = [], [self.tables[name]]
            while stack:
                v = stack.pop()
                if isinstance(v, (list, tuple)):
                    stack.extend(v)
                elif isinstance(v, int) and not isinstance(v, bool):
                    flat.append(v)
            self._table_range[name] = (min(flat), max(flat)) if flat else None
        return self._table_range[name]

    def of(self, e: Expr, env: dict):
        if isinstance(e, Const):
            v = e.value
            return (int(v), int(v)) if isinstance(v, int) else None
        if isinstance(e, Var):
            if e.name in env:
                return env[e.name]
            v = self.ints.get(e.name)
            return None if v is None else (v, v)
        if isinstance(e, Load):
            return self.table(e.name) if e.name in self.tables else None
        if isinstance(e, Un):
            a = self.of(e.a, env)
            if a is None:
                return (0, 1) if e.op == "not" else None
            return {"-": (-a[1], -a[0]), "~": (-a[1] - 1, -a[0] - 1), "not": (0, 1)}.get(e.op)
        if isinstance(e, Bin):
            a, b = self.of(e.a, env), self.of(e.b, env)
            if a is None or b is None:
                return (0, 1) if e.op in ("==", "!=", "<", "<=", ">", ">=", "and", "or") else None
            return _bin_interval(e.op, a, b)
        return None


# ---------------------------------------------------------------------------------------------
# Static cost

class StaticCost:
    """The static cost of a program (see the module docstring); `cost[node]` after `total()`."""

    def __init__(self, program: Program, block_cost: int = BLOCK_COST):
        self.p = program
        self.block_cost = block_cost
        self.iv = _Intervals(program)
        self.fn: dict[str, int] = {}
        self.cost: dict[int, int] = {}           # id(node) -> its cost (for the refusal's path)

    def function(self, name: str) -> int:
        """Evaluation size of one call: the body with every call expanded (memoised; user
        functions call only builtins and earlier functions, so this terminates)."""
        if name in self.fn:
            return self.fn[name]
        f = self.p.function(name)
        src = getattr(f, "source", None) if f is not None else None
        body = src.get("body") if isinstance(src, dict) else None
        if isinstance(body, str):
            try:
                size = self.expr(parse_expr(body))
            except (ExprSyntaxError, RecursionError):
                size = 1
        else:
            size = 1                             # a builtin, or a constant body
        self.fn[name] = size
        return size

    def expr(self, e) -> int:
        if e is None or not isinstance(e, Expr):
            return 0
        n = 0
        for x in walk(e):
            n += 1
            if isinstance(x, Call):
                n = _add(n, self.function(x.name))
        return n

    def exprs(self, es) -> int:
        return _add(*(self.expr(e) for e in es)) if es else 0

    def domain(self, d, env: dict) -> tuple[int, int, dict]:
        """(instance count bound, enumeration cost per instance, env with the coordinates)."""
        count, per, inner = 1, 0, dict(env)
        for ax in d.axes:
            lo, hi = self.iv.of(ax.lo, inner), self.iv.of(ax.hi, inner)
            if lo is None or hi is None:
                extent = MAX_INSTANCES            # unbounded statically: the interpreter's limit
                inner.pop(ax.name, None)
            else:
                extent = max(0, min(hi[1] - lo[0], MAX_INSTANCES))
                inner[ax.name] = (lo[0], max(lo[0], hi[1] - 1))
            count = _mul(count, extent)           # the box: `where` filters, enumeration still visits
            per = _add(per, self.expr(ax.lo), self.expr(ax.hi))
        return count, _add(per, self.expr(d.where)), inner

    def node(self, node, env: dict, visible: int) -> tuple[int, int]:
        """(cost, names visible after it): copying an environment costs its size, which is
        what entering a scope costs the interpreter."""
        c, visible = self._node(node, env, visible)
        self.cost[id(node)] = c
        return c, visible

    def _loop(self, node, env, visible, bodies, per_instance=0) -> int:
        count, enum, inner = self.domain(node.domain, env)
        v = visible + len(node.domain.axes)
        body = 0
        for b in bodies:
            cb, v = self.node(b, inner, v)
            body = _add(body, cb)
        each = _add(INSTANCE_COST, enum, _mul(len(node.domain.axes) + 1, visible), per_instance, body)
        return _add(1, _mul(count, each))

    def _node(self, node, env, visible):
        if isinstance(node, Op):
            c = 1 + len(node.stmts)
            for s in node.stmts:
                c = _add(c, self.expr(s.value), self.expr(s.target))
            c = _add(c, self.exprs(node.reads), self.exprs(node.writes))
            return c, visible + sum(isinstance(s.target, Var) for s in node.stmts)
        if isinstance(node, TileOp):
            return _add(self.block_cost, self.exprs([e for _, e in node.holes])), visible
        if isinstance(node, GprOp):
            return _add(1, self.exprs([node.pe, node.index, node.value])), visible
        if isinstance(node, Seq):
            c = 1
            for item in node.items:
                ci, visible = self.node(item, env, visible)
                c = _add(c, ci)
            return c, visible
        if isinstance(node, If):
            c = self.node(node.then, env, visible)[0]
            if node.else_ is not None:
                c = max(c, self.node(node.else_, env, visible)[0])
            return _add(1, self.expr(node.pred), visible, c), visible
        if isinstance(node, Parallel):
            copy = sum(self.p.arrays[a].size for a in node.snapshot if a in self.p.arrays) // 16
            return _add(copy, self._loop(node, env, visible, [node.body])), visible
        if isinstance(node, Serial):
            carry = self.exprs(list(node.carry.values()))
            nxt = _add(len(node.next), self.exprs(list(node.next.values())))
            c = self._loop(node, env, visible + len(node.carry), [node.body], nxt)
            return _add(carry, c), visible + len(node.carry)
        if isinstance(node, Pipeline):
            return self._loop(node, env, visible, list(node.stages)), visible
        if isinstance(node, Reduce):
            if node.tiles:
                refs = [node.into.pe, node.into.tile, node.value.pe, node.value.tile] \
                    if isinstance(node.into, TileRef) and isinstance(node.value, TileRef) else []
                per = _add(self.block_cost, self.exprs(refs))
            else:
                merge = _add(self.function(node.combine), self.function(node.lift) if node.lift else 0)
                per = _add(self.expr(node.value), self.exprs(node.group), merge)
            per = _add(per, self.expr(node.mask), self.exprs(node.key or ()))
            bodies = [node.body] if node.body is not None else []
            return self._loop(node, env, visible, bodies, per), visible
        if isinstance(node, Scan):
            merge = self.function(node.combine)
            per = _add(self.expr(node.value), self.exprs(node.group), merge)
            if node.policy == "fold_right":       # every prefix is folded on its own: n^2 / 2 merges
                per = _add(per, _mul(self.domain(node.domain, env)[0], merge))
            bodies = [node.body] if node.body is not None else []
            return _add(self.expr(node.seed), self._loop(node, env, visible, bodies, per)), visible
        return 1, visible

    def total(self, node=None, env: dict | None = None) -> int:
        exact = {k: (v, v) for k, v in (env or {}).items() if isinstance(v, int) and not isinstance(v, bool)}
        return self.node(self.p.body if node is None else node, exact, len(self.iv.ints) + len(exact))[0]

    def culprit(self, root, limit: int):
        """The innermost node on the costliest path whose own cost still exceeds `limit`."""
        from .program import children
        node = root
        while True:
            over = [ch for _, ch in children(node) if self.cost.get(id(ch), 0) > limit]
            if not over:
                return node
            node = max(over, key=lambda ch: self.cost[id(ch)])


def static_cost(program: Program, node=None, env: dict | None = None, block_cost: int = BLOCK_COST) -> int:
    return StaticCost(program, block_cost).total(node, env)


def check_budget(program: Program, max_cost: int | None = DEFAULT_MAX_COST, node=None,
                 env: dict | None = None, block_cost: int = BLOCK_COST) -> int:
    """The program's static cost; BudgetError (one line, naming the node that dominates it) when
    it exceeds `max_cost`.  None disables the check."""
    sc = StaticCost(program, block_cost)
    try:
        total = sc.total(node, env)
    except RecursionError:
        raise BudgetError("$.body", "region nesting too deep to price (and to run)") from None
    if max_cost is not None and total > max_cost:
        root = program.body if node is None else node
        where = sc.culprit(root, max_cost)
        own = sc.cost.get(id(where), total)
        what = f"{own}" if own < _CAP else f"at least {_CAP}"
        raise BudgetError(where.path, f"static cost {what} exceeds the budget of {max_cost} units "
                                      f"(instances x work per instance, docs/regions.md 'Budgets'); "
                                      f"refused before running. Raise it with tile-emu run --max-cost N, "
                                      f"or max_cost=N in Python (run, events)")
    return total
