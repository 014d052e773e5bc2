"""Region programs: the seed's grammar as data, plus the static check every program passes.

    P ::= op | P ; P | if predicate then P else P
        | parallel(D, P) | serial(D, P) | pipeline(D, Pi, P) | reduce(R, g, A, P)

plus scan(R, g, y, P), the reduction that exposes every prefix result.  Leaves are calculus ops (statements over named arrays, with their effects), tile blocks (run on
the emulator) and GPR writes.  Every node records `path`, the JSON path of its text form, so a
diagnosis points at the exact place (`$.body.seq[1].body`), whether the program was loaded or
built in Python.  `check(program)` resolves every name and law once; the interpreter, the effect
enumerator and the witness checkers can then rely on a well-formed tree.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

from isa.atomicio import quote

from .errors import ReductionPolicyError, RegionError
from .expr import Call, Expr, Load, Stmt, Var, refs
from .functions import BUILTINS, Function
from .reduction import check_policy
from .tilelaws import check_tile_merge


def key_segment(k) -> str:
    """schema.key_segment, imported on first use: the text form's schema imports jsonschema
    (about 90 ms), which a program built in Python (the batch engine's fused chains) never needs."""
    from .schema import key_segment as segment
    return segment(k)


POLICIES = ("fold_left", "fold_right", "ordered_tree", "unordered_tree")
DEFAULT_POLICY = "unordered_tree"      # "The source default is unordered_tree."
FORMAT = "tile-emu.regions/1"


@dataclass(eq=False)
class Axis:
    name: str
    lo: Expr
    hi: Expr                     # exclusive


@dataclass(eq=False)
class Domain:
    """A finite integer domain: axes in lexicographic (source) order, an optional active-set
    predicate `where` over the coordinates (masks and ragged/triangular domains)."""
    axes: tuple[Axis, ...]
    where: Expr | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.axes)


class Node:
    path: str = "$.body"


@dataclass(eq=False)
class Op(Node):
    """One operation: statements run in order within an instance; loads snapshot values.
    `reads`/`writes` declare extra (opaque) effects beyond the statements' own accesses."""
    stmts: tuple[Stmt, ...]
    reads: tuple[Load, ...] = ()
    writes: tuple[Load, ...] = ()
    name: str | None = None


@dataclass(eq=False)
class TileOp(Node):
    """A tile block leaf: a Block, or block text with `${expr}` placeholders filled per instance."""
    block: object = None          # isa.Block
    text: str | None = None
    holes: tuple[tuple[str, Expr], ...] = ()   # (placeholder text, parsed expression)
    name: str | None = None


@dataclass(eq=False)
class GprOp(Node):
    """Write a PE's private GPR (the offsets TEXTRACT/TINSERT read)."""
    pe: Expr
    index: Expr
    value: Expr


@dataclass(eq=False)
class Seq(Node):
    items: tuple[Node, ...]


@dataclass(eq=False)
class If(Node):
    pred: Expr
    then: Node
    else_: Node | None = None


@dataclass(eq=False)
class Parallel(Node):
    """Independent instances.  `snapshot` names arrays read as their immutable entry value T0:
    inside the scope an instance reads T0 (or what it wrote itself, in its own order) while the
    instances' writes join into the new value T1 -- so reading T0 never conflicts with another
    instance's patch; overlapping patches still do (there is no winning instance)."""
    domain: Domain
    body: Node
    batch: bool = False           # instances run on separate machines (a batch of cases)
    snapshot: tuple[str, ...] = ()


@dataclass(eq=False)
class Serial(Node):
    """Ordered time.  `carry` names loop-carried values (initial values); `next` gives each its
    value for the following iteration, all evaluated first and then assigned simultaneously."""
    domain: Domain
    body: Node
    carry: dict[str, Expr] = field(default_factory=dict)
    next: dict[str, Expr] = field(default_factory=dict)


@dataclass(eq=False)
class Pipeline(Node):
    """pipeline(D, Pi, P): P split into stages Pi; stage s of iteration n issues at n*ii + s.
    Its reference semantics is serial(D, stage_0; ...; stage_k)."""
    domain: Domain
    stages: tuple[Node, ...]
    ii: int = 1


@dataclass(eq=False)
class TileRef:
    """A tile on a PE (an accumulator or a contribution of a tile reduction)."""
    pe: Expr
    tile: Expr


@dataclass(eq=False)
class Reduce(Node):
    """reduce(R, g, A, P): for each active r of R (lexicographic order) run P, then contribute
    `value` (unless `mask` is false) to group g(r) = `group` of array `into` (A).  `key` is the
    semantic identity of a contribution: coordinates with equal keys are replicas and count once.
    For a tile reduction `into`/`value` are TileRefs and `combine` is a tile mnemonic."""
    domain: Domain
    into: str | TileRef
    value: Expr | TileRef
    combine: str
    group: tuple[Expr, ...] = ()
    policy: str = DEFAULT_POLICY
    lift: str | None = None
    mask: Expr | None = None
    key: tuple[Expr, ...] | None = None
    body: Node | None = None
    seed_side: str = "left"       # tree policies: where the seed enters (left/right reference)

    @property
    def tiles(self) -> bool:
        return isinstance(self.into, TileRef)


@dataclass(eq=False)
class Scan(Node):
    """A scan over R (lexicographic order): for each active r run `body`, take `value`; the
    contributions with equal g(r) = `group` form one fiber, and y[r] (`into`, indexed by R's
    coordinates) receives the prefix result of r's fiber -- inclusive: the policy's result over
    [seed?, r0, ..., r]; exclusive: over [seed, r0, ..., r-1] (the first is the seed).  A scan
    exposes every prefix result, so it is never a final-result reduction."""
    domain: Domain
    into: str
    value: Expr
    combine: str
    group: tuple[Expr, ...] = ()
    policy: str = DEFAULT_POLICY
    exclusive: bool = False
    seed: Expr | None = None
    body: Node | None = None


@dataclass(eq=False)
class ArrayDecl:
    shape: tuple[int, ...]
    init: list | None = None      # flat row-major values; None = every element undefined

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


@dataclass(eq=False)
class Program:
    body: Node
    params: dict[str, object] = field(default_factory=dict)   # int or (nested) tuple table
    arrays: dict[str, ArrayDecl] = field(default_factory=dict)
    functions: dict[str, Function] = field(default_factory=dict)  # user-declared

    def __post_init__(self):
        assign_paths(self.body, "$.body")

    def function(self, name: str) -> Function | None:
        return self.functions.get(name) or BUILTINS.get(name)


# ---------------------------------------------------------------------------------------------
# Paths

def children(node: Node) -> list[tuple[str, Node]]:
    """(relative JSON path, child) pairs in source order."""
    if isinstance(node, Seq):
        return [(f".seq[{i}]", n) for i, n in enumerate(node.items)]
    if isinstance(node, If):
        out = [(".then", node.then)]
        if node.else_ is not None:
            out.append((".else", node.else_))
        return out
    if isinstance(node, (Parallel, Serial)):
        return [(".body", node.body)]
    if isinstance(node, Pipeline):
        return [(f".stages[{i}]", n) for i, n in enumerate(node.stages)]
    if isinstance(node, (Reduce, Scan)):
        return [] if node.body is None else [(".body", node.body)]
    return []


def assign_paths(node: Node, path: str) -> None:
    node.path = path
    for rel, child in children(node):
        assign_paths(child, path + rel)


def nodes(node: Node):
    """Every node, in source order (pre-order)."""
    yield node
    for _, child in children(node):
        yield from nodes(child)


def find(program: Program, path: str) -> Node:
    for n in nodes(program.body):
        if n.path == path:
            return n
    raise RegionError(path, "no node at this path")


# ---------------------------------------------------------------------------------------------
# Static check: names, ranks, arities, policies.

class _Scope:
    """The names in scope while the checker walks the tree: one table for the whole walk, with a
    frame per open scope (`nested`), so opening a scope costs nothing however many names are
    visible and a lookup is one dict access (a program of n nodes is checked in time ~n).
    A name maps to its bindings, innermost last, each (frame, kind); kind is coord, carry or local."""

    def __init__(self):
        self.names: dict[str, list[tuple[int, str]]] = {}
        self.frames: list[list[str]] = [[]]

    @property
    def depth(self) -> int:
        return len(self.frames)

    def kind(self, name: str, below: int | None = None) -> str | None:
        """How `name` is bound (innermost binding, or only those of frames below `below`: an enclosing
        scope), or None."""
        bindings = self.names.get(name)
        if not bindings:
            return None
        if len(bindings) == 1:                 # the common case, without building a list
            f, k = bindings[0]
            return k if below is None or f < below else None
        kinds = [k for f, k in bindings if below is None or f < below]
        if not kinds:
            return None
        return "coord" if "coord" in kinds else kinds[-1]      # a coordinate reads as one wherever bound

    def add(self, name: str, kind: str) -> None:
        self.names.setdefault(name, []).append((len(self.frames) - 1, kind))
        self.frames[-1].append(name)

    @contextmanager
    def nested(self):
        self.frames.append([])
        try:
            yield self
        finally:
            for name in reversed(self.frames.pop()):
                bindings = self.names[name]
                bindings.pop()
                if not bindings:
                    del self.names[name]


def table_rank(v) -> int:
    r = 0
    while isinstance(v, (list, tuple)):
        r += 1
        if not v:
            break
        v = v[0]
    return r


class _Checker:
    def __init__(self, program: Program):
        self.p = program
        self.ints = {k for k, v in program.params.items() if isinstance(v, int)}
        self.tables = {k: table_rank(v) for k, v in program.params.items() if not isinstance(v, int)}

    def expr(self, e: Expr, scope: _Scope, path: str, pure: bool = False, what: str = "expression",
             below: int | None = None):
        ints = self.ints
        for n in refs(e):
            if isinstance(n, Var):
                if n.name in ints:
                    continue
                kind = scope.kind(n.name, below)
                if kind == "coord":
                    continue
                if kind is not None:
                    if pure:
                        raise RegionError(path, f"{what} must be a pure index expression; "
                                                f"{quote(n.name)} is a data value")
                    continue
                raise RegionError(path, f"unknown name {quote(n.name)} (not a coordinate, parameter, "
                                        f"carried value or local in scope)")
            elif isinstance(n, Load):
                if n.name in self.tables:
                    rank = self.tables[n.name]
                elif n.name in self.p.arrays:
                    if pure:
                        raise RegionError(path, f"{what} must be a pure index expression; "
                                                f"{quote(repr(n))} loads from array {quote(n.name)}")
                    rank = len(self.p.arrays[n.name].shape)
                else:
                    raise RegionError(path, f"{quote(repr(n))} names no array or parameter table")
                if len(n.index) != rank:
                    raise RegionError(path, f"{quote(repr(n))} has {len(n.index)} index(es); "
                                            f"{quote(n.name)} has rank {rank}")
            elif isinstance(n, Call):
                f = self.p.function(n.name)
                if f is None:
                    raise RegionError(path, f"unknown function {quote(n.name)}")
                if f.arity != len(n.args):
                    raise RegionError(path, f"{n.name} takes {f.arity} argument(s), got {len(n.args)}")
                if pure:
                    raise RegionError(path, f"{what} must be a pure index expression; "
                                            f"it calls {quote(n.name)}")

    def taken(self, name: str, scope: _Scope) -> bool:
        return scope.kind(name) is not None or name in self.ints or name in self.tables

    def domain(self, d: Domain, scope: _Scope, path: str) -> None:
        """Bind the domain's coordinates in the innermost (just opened) frame of `scope`."""
        for i, ax in enumerate(d.axes):
            p = f"{path}[{i}]"
            if self.taken(ax.name, scope):
                raise RegionError(p, f"axis {quote(ax.name)} shadows a name already in scope")
            self.expr(ax.lo, scope, p, pure=True, what="a domain bound")
            self.expr(ax.hi, scope, p, pure=True, what="a domain bound")
            scope.add(ax.name, "coord")
        if d.where is not None:
            self.expr(d.where, scope, path.rsplit(".", 1)[0] + ".where", pure=True,
                      what="an active-domain predicate")

    def node(self, node: Node, scope: _Scope) -> None:
        path = node.path
        if isinstance(node, Op):
            for i, s in enumerate(node.stmts):
                p = f"{path}.op[{i}]" if len(node.stmts) > 1 else f"{path}.op"
                self.expr(s.value, scope, p)
                t = s.target
                if isinstance(t, Load):
                    if t.name in self.tables:
                        raise RegionError(p, f"parameter table {quote(t.name)} is read-only")
                    self.expr(t, scope, p)
                else:
                    if self.taken(t.name, scope):
                        raise RegionError(p, f"{quote(t.name)} is already bound in this scope; a local "
                                             f"is assigned once (use a carried value for a recurrence)")
                    scope.add(t.name, "local")
            for key, accs in (("reads", node.reads), ("writes", node.writes)):
                for i, a in enumerate(accs):
                    if a.name not in self.p.arrays:
                        raise RegionError(f"{path}.{key}[{i}]", f"{quote(a.name)} names no array")
                    self.expr(a, scope, f"{path}.{key}[{i}]")
        elif isinstance(node, TileOp):
            for i, (_, e) in enumerate(node.holes):
                self.expr(e, scope, f"{path}.block", pure=True, what="a block placeholder")
        elif isinstance(node, GprOp):
            for key in ("pe", "index", "value"):
                self.expr(getattr(node, key), scope, f"{path}.gpr.{key}")
        elif isinstance(node, Seq):
            for item in node.items:
                self.node(item, scope)
        elif isinstance(node, If):
            self.expr(node.pred, scope, f"{path}.if")
            with scope.nested():
                self.node(node.then, scope)
            if node.else_ is not None:
                with scope.nested():
                    self.node(node.else_, scope)
        elif isinstance(node, Parallel):
            for i, name in enumerate(node.snapshot):
                if name not in self.p.arrays:
                    raise RegionError(f"{path}.snapshot[{i}]", f"{quote(name)} names no array")
                if name in node.snapshot[:i]:
                    raise RegionError(f"{path}.snapshot[{i}]", f"{quote(name)} is listed twice")
            with scope.nested():
                self.domain(node.domain, scope, f"{path}.parallel")
                self.node(node.body, scope)
        elif isinstance(node, Serial):
            self.serial(node, scope)
        elif isinstance(node, Pipeline):
            if not isinstance(node.ii, int) or isinstance(node.ii, bool) or node.ii < 1:
                raise RegionError(f"{path}.ii", f"the initiation interval must be a positive integer, got {node.ii!r}")
            if not node.stages:
                raise RegionError(f"{path}.stages", "a pipeline needs at least one stage")
            with scope.nested():
                self.domain(node.domain, scope, f"{path}.pipeline")
                for st in node.stages:
                    self.node(st, scope)
        elif isinstance(node, Reduce):
            self.reduce(node, scope)
        elif isinstance(node, Scan):
            self.scan(node, scope)
        else:
            raise RegionError(path, f"not a region node: {type(node).__name__}")

    def serial(self, node: Serial, scope: _Scope) -> None:
        path = node.path
        for name, e in node.carry.items():
            if self.taken(name, scope):
                raise RegionError(f"{path}.carry.{key_segment(name)}", f"{quote(name)} is already bound in this scope")
            self.expr(e, scope, f"{path}.carry.{key_segment(name)}")
        with scope.nested():
            self.domain(node.domain, scope, f"{path}.serial")
            for name in node.carry:
                scope.add(name, "carry")
            for name in node.next:
                if name not in node.carry:
                    raise RegionError(f"{path}.next.{key_segment(name)}", f"{quote(name)} is not a carried value (declare it in 'carry')")
            with scope.nested():
                self.node(node.body, scope)
                for name, e in node.next.items():
                    self.expr(e, scope, f"{path}.next.{key_segment(name)}")
        for name in node.carry:
            scope.add(name, "carry")          # final values are visible after the loop

    def reduce(self, node: Reduce, scope: _Scope) -> None:
        path = node.path
        if node.policy not in POLICIES:
            raise RegionError(f"{path}.policy", f"unknown policy {node.policy!r}; one of {', '.join(POLICIES)}")
        if node.seed_side not in ("left", "right"):
            raise RegionError(f"{path}.seed_side", f"must be 'left' or 'right', got {node.seed_side!r}")
        with scope.nested():
            self.domain(node.domain, scope, f"{path}.reduce")
            inner = scope.depth              # key, group and tile references see the domain, not the body
            with scope.nested():
                self._reduce_parts(node, scope, inner)

    def _reduce_parts(self, node: Reduce, scope: _Scope, inner: int) -> None:
        path = node.path
        if node.body is not None:
            self.node(node.body, scope)
        if node.mask is not None:
            self.expr(node.mask, scope, f"{path}.mask")
        for i, k in enumerate(node.key or ()):
            self.expr(k, scope, f"{path}.key[{i}]", pure=True, what="a contribution key", below=inner)
        if node.tiles:
            if not isinstance(node.value, TileRef):
                raise RegionError(f"{path}.value", "a tile reduction contributes a tile {pe, tile}")
            for ref, key in ((node.into, "into"), (node.value, "value")):
                for f_ in ("pe", "tile"):
                    self.expr(getattr(ref, f_), scope, f"{path}.{key}.{f_}", pure=True, what="a tile reference",
                              below=inner)
            check_tile_merge(node)
            return
        if not isinstance(node.value, Expr):
            raise RegionError(f"{path}.value", "an array reduction contributes an expression value")
        if node.into not in self.p.arrays:
            raise RegionError(f"{path}.into", f"{quote(node.into)} names no array")
        rank = len(self.p.arrays[node.into].shape)
        if len(node.group) != rank:
            raise RegionError(f"{path}.group", f"g(r) gives {len(node.group)} coordinate(s); "
                                               f"{quote(node.into)} has rank {rank}")
        for i, g in enumerate(node.group):
            self.expr(g, scope, f"{path}.group[{i}]", pure=True, what="the grouping map g", below=inner)
        self.expr(node.value, scope, f"{path}.value")
        check_reducer(self.p, node)


    def scan(self, node: Scan, scope: _Scope) -> None:
        path = node.path
        if node.policy not in POLICIES:
            raise RegionError(f"{path}.policy", f"unknown policy {node.policy!r}; one of {', '.join(POLICIES)}")
        if node.seed is not None:
            self.expr(node.seed, scope, f"{path}.seed")
        if node.into not in self.p.arrays:
            raise RegionError(f"{path}.into", f"{quote(node.into)} names no array")
        rank = len(self.p.arrays[node.into].shape)
        if rank != len(node.domain.axes):
            raise RegionError(f"{path}.into", f"a scan stores one prefix result per contribution at its "
                                              f"coordinates: {quote(node.into)} has rank {rank}, the scan domain "
                                              f"{len(node.domain.axes)} axes")
        with scope.nested():
            self.domain(node.domain, scope, f"{path}.scan")
            inner = scope.depth
            with scope.nested():
                if node.body is not None:
                    self.node(node.body, scope)
                for i, g in enumerate(node.group):
                    self.expr(g, scope, f"{path}.group[{i}]", pure=True, what="the grouping map g", below=inner)
                self.expr(node.value, scope, f"{path}.value")
        check_scanner(self.p, node)


def combine_function(program: Program, node) -> Function:
    """A reduction's or scan's `combine`: a declared binary merge or update."""
    f = program.function(node.combine)
    if f is None:
        raise RegionError(f"{node.path}.combine", f"unknown function {quote(node.combine)}")
    if f.arity != 2 or f.kind == "map":
        raise RegionError(f"{node.path}.combine", f"{quote(f.name)} is not a binary merge or update")
    return f


def check_scanner(program: Program, node: Scan) -> Function:
    """A scan's combine and policy (as for reduce), and the seed its prefixes need."""
    path = node.path
    f = combine_function(program, node)
    check_policy(node.policy, f, f"{path}.policy")
    if node.seed is None and node.exclusive:
        raise RegionError(f"{path}.seed", "an exclusive scan needs a seed: its first result")
    if node.seed is None and f.kind != "merge":
        raise RegionError(f"{path}.seed", f"{quote(f.name)} is an update (State x Elem): its prefixes need a seed state")
    return f


def check_reducer(program: Program, node: Reduce) -> Function:
    """The policy/combine compatibility the seed requires: diagnosed, never an invented algebra."""
    path = node.path
    f = combine_function(program, node)
    if node.lift is not None:
        lf = program.function(node.lift)
        if lf is None or lf.arity != 1:
            raise RegionError(f"{path}.lift", f"lift {quote(node.lift)} must name a one-argument function")
        if f.kind != "merge":
            raise ReductionPolicyError(f"{path}.lift", f"lift applies to a merge; {quote(f.name)} is an update")
    check_policy(node.policy, f, f"{path}.policy")
    return f


def check(program: Program) -> Program:
    """Resolve names/ranks/arities and reduction laws; raise RegionError at the first problem."""
    c = _Checker(program)
    for name, a in program.arrays.items():
        if name in program.params:
            raise RegionError(f"$.arrays.{key_segment(name)}", f"{quote(name)} is also a parameter")
    c.node(program.body, _Scope())
    return program
