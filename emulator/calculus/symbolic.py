"""Symbolic witness checks with isl (islpy): domains too large to enumerate, or symbolic extents.

Seed 002: "Presburger-definable sets and relations provide closure under composition,
projection and restriction; constant division/modulo encode mixed-radix factors ...  Products
of two unrestricted runtime parameters are outside that core ...  A solver timeout means
unknown, not false."  The finite enumeration (witnesses.py) stays the reference; where both run
they agree (tests/calculus/test_symbolic.py, a property test).  Here the same obligations are
decided as questions about integer sets and maps:

- FiniteDomain -> a set {[axes] : lo <= axis < hi, where}; IndexMap -> a map; a name that is
  neither an axis nor an integer parameter is a symbolic parameter (the answer holds for every
  value, and a counterexample names one);
- quasi-affine expressions only: + - , multiplication by a constant, // and % by a positive
  constant, shifts by constants, comparisons, and/or/not.  Anything else -- a product of two
  variables, a table lookup, a call, a Python callable, a TaskMapping -- is outside the
  fragment and the verdict is **unknown** (decided=False), never admitted;
- every isl computation runs under an operation budget (isl's max_operations); running out is
  unknown too, as is islpy not being installed (an optional dependency: `pip install
  tile-emu[symbolic]`).

`check_reindex_symbolic`, `check_split_fuse_symbolic`, `check_bind_symbolic` mirror the finite
checkers' obligations and order; `check_symbolic(w)` dispatches.  `check_scope_fusion_symbolic`
does the same for pointwise and horizontal fusion of two parallel siblings with affine accesses.
"""
from __future__ import annotations

from .domains import FiniteDomain, IndexMap, fmt
from .expr import Bin, Const, Expr, ExprSyntaxError, Load, Un, Var, parse_expr
from .witnesses import BindWitness, ReindexWitness, SplitFuseWitness, Verdict

MAX_OPERATIONS = 1 << 22          # isl's operation budget per check (a few seconds at most)

try:                               # optional: without it every symbolic check is unknown
    import islpy as isl
except ImportError:                # pragma: no cover - exercised only where islpy is absent
    isl = None


class _Unsupported(Exception):
    """Outside the quasi-affine fragment (or no solver): the answer is unknown."""


class _Fail(Exception):
    def __init__(self, obligation: str, detail: str):
        self.obligation, self.detail = obligation, detail


def _expr(e) -> Expr:
    return e if isinstance(e, Expr) else parse_expr(str(e))


class _Space:
    """Names -> isl identifiers (prefixed: our names may be isl keywords such as `mod`), integer
    parameters substituted, other free names collected as symbolic parameters."""

    def __init__(self, params: dict):
        self.ints = {k: v for k, v in params.items() if isinstance(v, int) and not isinstance(v, bool)}
        self.tables = {k for k, v in params.items() if not isinstance(v, int)}
        self.free: dict[str, str] = {}

    def term(self, e, bound: dict) -> str:
        """An integer-valued quasi-affine term."""
        if isinstance(e, Const):
            if isinstance(e.value, bool) or not isinstance(e.value, int):
                raise _Unsupported(f"the constant {e.value!r} is not an integer")
            return f"({e.value})"
        if isinstance(e, Var):
            if e.name in bound:
                return bound[e.name]
            if e.name in self.ints:
                return f"({self.ints[e.name]})"
            return self.free.setdefault(e.name, f"p_{e.name}")
        if isinstance(e, Un) and e.op == "-":
            return f"(-{self.term(e.a, bound)})"
        if isinstance(e, Bin):
            if e.op in ("+", "-"):
                return f"({self.term(e.a, bound)} {e.op} {self.term(e.b, bound)})"
            if e.op == "*":
                a, b = _const(e.a), _const(e.b)
                if a is None and b is None:
                    raise _Unsupported(f"{e!r} multiplies two variables: outside Presburger arithmetic")
                return f"({a} * {self.term(e.b, bound)})" if a is not None else f"({b} * {self.term(e.a, bound)})"
            c = _const(e.b)
            if e.op in ("//", "%", ">>", "<<", "&") and c is None:
                raise _Unsupported(f"{e!r}: division, modulo and shifts by a variable are outside the fragment")
            if e.op == "//" and c > 0:
                return f"floor({self.term(e.a, bound)} / {c})"
            if e.op == "%" and c > 0:
                return f"({self.term(e.a, bound)} mod {c})"
            if e.op == "<<" and 0 <= c <= 64:
                return f"({1 << c} * {self.term(e.a, bound)})"
            if e.op == ">>" and 0 <= c <= 64:
                return f"floor({self.term(e.a, bound)} / {1 << c})"
            if e.op == "&" and c > 0 and c & (c + 1) == 0:
                return f"({self.term(e.a, bound)} mod {c + 1})"
        if isinstance(e, Load):
            raise _Unsupported(f"{e!r} reads a table: explicit tables are decided by enumeration")
        raise _Unsupported(f"{e!r} is not a quasi-affine integer term")

    def cond(self, e, bound: dict) -> str:
        if isinstance(e, Bin) and e.op in ("and", "or"):
            return f"(({self.cond(e.a, bound)}) {e.op} ({self.cond(e.b, bound)}))"
        if isinstance(e, Un) and e.op == "not":
            return f"(not ({self.cond(e.a, bound)}))"
        if isinstance(e, Bin) and e.op in ("==", "!=", "<", "<=", ">", ">="):
            a, b = self.term(e.a, bound), self.term(e.b, bound)
            if e.op == "!=":
                return f"({a} < {b} or {a} > {b})"
            return f"({a} {'=' if e.op == '==' else e.op} {b})"
        if isinstance(e, Const) and isinstance(e.value, bool):
            return "(0 = 0)" if e.value else "(0 = 1)"
        return f"({self.term(e, bound)} < 0 or {self.term(e, bound)} > 0)"     # a truthy integer

    def params(self) -> str:
        return ", ".join(self.free.values())


def _const(e):
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    if isinstance(e, Un) and e.op == "-":
        c = _const(e.a)
        return None if c is None else -c
    return None


def _names(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{k}" for k in range(n)]


def _domain(sp: _Space, d: FiniteDomain, prefix: str, box: bool = False) -> tuple[str, list[str], dict]:
    """(constraints, isl axis names, bound name map) of a domain (`box`: without `where`)."""
    if not isinstance(d, FiniteDomain):
        raise _Unsupported("not a FiniteDomain")
    sp.ints.update({k: v for k, v in d.params.items() if isinstance(v, int) and not isinstance(v, bool)})
    names = _names(prefix, len(d.axes))
    bound: dict = {}
    out = []
    for (name, lo, hi), n in zip(d.axes, names):
        out.append(f"{sp.term(_expr(lo), bound)} <= {n} < {sp.term(_expr(hi), bound)}")
        bound[name] = n
    if d.where is not None and not box:
        if callable(d.where):
            raise _Unsupported("a Python predicate `where`")
        out.append(sp.cond(_expr(d.where), bound))
    return " and ".join(out) or "0 = 0", names, bound


def _map_terms(sp: _Space, m: IndexMap, names: list[str]) -> list[str]:
    if not isinstance(m, IndexMap) or m.exprs is None:
        raise _Unsupported("a map given as a Python callable")
    if len(m.inputs) != len(names):
        raise _Unsupported("the map's inputs do not match the domain's axes")
    sp.ints.update({k: v for k, v in m.params.items() if isinstance(v, int) and not isinstance(v, bool)})
    bound = dict(zip(m.inputs, names))
    return [sp.term(e, bound) for e in m.exprs]


class _Isl:
    """Builds isl objects from text under one context with an operation budget."""

    def __init__(self, sp: _Space, max_operations: int):
        self.sp = sp
        self.ctx = isl.Context()
        self.ctx.set_max_operations(max_operations)

    def set(self, names, cond) -> "isl.Set":
        return isl.Set.read_from_str(self.ctx, f"[{self.sp.params()}] -> {{ [{', '.join(names)}] : {cond} }}")

    def map(self, ins, outs, cond) -> "isl.Map":
        return isl.Map.read_from_str(self.ctx, f"[{self.sp.params()}] -> {{ [{', '.join(ins)}] -> [{', '.join(outs)}] : {cond} }}")


def _point(s) -> str:
    """One point of a nonempty set (or wrapped map), as parameter and coordinate values."""
    p = s.sample_point()
    sp = p.get_space()
    vals = [p.get_coordinate_val(isl.dim_type.set, k).to_python() for k in range(sp.dim(isl.dim_type.set))]
    pars = [(sp.get_dim_name(isl.dim_type.param, k), p.get_coordinate_val(isl.dim_type.param, k).to_python())
            for k in range(sp.dim(isl.dim_type.param))]
    where = ", ".join(f"{n[2:]} = {v}" for n, v in pars)
    return f"{tuple(vals)}" + (f" (for {where})" if where else "")


def _pair(dep, A, B) -> str:
    """One (A instance, B instance) pair of a nonempty relation, with the axes' names."""
    p = dep.wrap().sample_point()
    n = len(A.domain.axes)
    vals = [p.get_coordinate_val(isl.dim_type.set, k).to_python() for k in range(n + len(B.domain.axes))]
    return f"{A.path} {fmt(A.domain.names, tuple(vals[:n]))} and {B.path} {fmt(B.domain.names, tuple(vals[n:]))}"


def _run(rule: str, fn, w, max_operations) -> Verdict:
    if isl is None:
        return Verdict(rule, False, "undecided", "symbolic: islpy is not installed (pip install tile-emu[symbolic])",
                       decided=False)
    try:
        detail = fn(w, max_operations)
    except _Fail as f:
        return Verdict(rule, False, f.obligation, "symbolic (isl): " + f.detail)
    except _Unsupported as exc:
        return Verdict(rule, False, "undecided", f"symbolic: {exc}", decided=False)
    except isl.Error as exc:                  # the operation budget, or a form isl refuses
        return Verdict(rule, False, "undecided", f"symbolic: isl stopped ({str(exc).splitlines()[0][:120]}): unknown, "
                                                 f"not false", decided=False)
    except RecursionError:
        return Verdict(rule, False, "undecided", "symbolic: expression nested too deeply", decided=False)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, ExprSyntaxError) as exc:
        from isa.atomicio import shown
        return Verdict(rule, False, "undecided", f"symbolic: a field of the wrong type or shape "
                                                 f"({type(exc).__name__}: {shown(str(exc))})", decided=False)
    return Verdict(rule, True, None, "symbolic (isl): " + detail)


# ---------------------------------------------------------------------------------------------
# Reindex

def _bijection(I: _Isl, new_c, nn, old_c, on, terms, obligation) -> "isl.Map":
    """tau on the active new domain as a map, checked onto and injective onto the active old one."""
    outs = _names("o", len(on))
    tau = I.map(nn, outs, f"{new_c} and " + " and ".join(f"{o} = {t}" for o, t in zip(outs, terms)))
    old = I.set(on, old_c)
    img = tau.range()
    stray = img.subtract(old)
    if not stray.is_empty():
        raise _Fail(obligation, f"a new occurrence maps to {_point(stray)}, which is not an active old occurrence")
    if not tau.is_injective():
        raise _Fail(obligation, "two new occurrences map to one old occurrence: not injective (an occurrence would run "
                                "twice)")
    lost = old.subtract(img)
    if not lost.is_empty():
        raise _Fail(obligation, f"old {_point(lost)} has no new occurrence: not onto (an occurrence would be lost)")
    return tau


def _reindex(w: ReindexWitness, max_operations) -> str:
    sp = _Space({**w.old.params, **w.new.params})
    new_c, nn, _ = _domain(sp, w.new, "n")
    old_c, on, _ = _domain(sp, w.old, "o")
    terms = _map_terms(sp, w.tau, nn)
    if len(terms) != len(on):
        raise _Fail("tau is typed", f"tau has {len(terms)} coordinate(s); the old domain has {len(on)}")
    cuts = []
    for cut in w.cuts:
        tj = None if cut.tau_j is None else _map_terms(sp, cut.tau_j, nn[:cut.rho])
        cuts.append((cut, tj))
    I = _Isl(sp, max_operations)
    _bijection(I, new_c, nn, old_c, on, terms, "active-domain bijection")
    for cut, tj in cuts:
        ob = f"observed-cut factorisation (cut {cut.j})"
        if not (0 <= cut.j <= len(on) and 0 <= cut.rho <= len(nn)):
            raise _Fail(ob, f"cut ({cut.j}, rho={cut.rho}) exceeds the domains' ranks")
        outs = _names("o", len(on))
        # prefix relation: new prefix -> old prefix of its image
        pre = I.map(nn, outs, f"{new_c} and " + " and ".join(f"{o} = {t}" for o, t in zip(outs, terms)))
        rel = pre.project_out(isl.dim_type.in_, cut.rho, len(nn) - cut.rho) \
                 .project_out(isl.dim_type.out, cut.j, len(on) - cut.j)
        if tj is not None:
            bad = I.set(nn, f"{new_c} and (" + " or ".join(
                f"{t} < {u} or {t} > {u}" for t, u in zip(tj, terms[:cut.j])) + ")") if cut.j else None
            if bad is not None and not bad.is_empty():
                raise _Fail(ob, f"at new {_point(bad)} pi_{cut.j}(tau) differs from tau_{cut.j}(pi'_{cut.rho})")
        if not rel.is_single_valued():
            raise _Fail(ob, "a new prefix reaches two old prefixes: tau does not factor through the observed cut")
        if not rel.is_injective():
            raise _Fail(ob, f"two new prefixes map to one old prefix: tau_{cut.j} is not bijective on active prefixes "
                            f"(an observed identity would merge; re-anchoring needs its own refinement)")
    return f"tau is a bijection of the active domains; {len(w.cuts)} observed cut(s) factor"


def check_reindex_symbolic(w: ReindexWitness, max_operations: int = MAX_OPERATIONS) -> Verdict:
    return _run("Reindex", _reindex, w, max_operations)


# ---------------------------------------------------------------------------------------------
# Split/fuse

def _split_fuse(w: SplitFuseWitness, max_operations) -> str:
    for name, f in w.factors.items():
        if not isinstance(f, int) or isinstance(f, bool) or f <= 0:
            raise _Fail("positive factor", f"factor {name} = {f!r} is not a positive integer")
    sp = _Space({**w.old.params, **w.new.params})
    new_c, nn, _ = _domain(sp, w.new, "n")
    box_c, _, _ = _domain(sp, w.new, "n", box=True)
    old_c, on, _ = _domain(sp, w.old, "o")
    terms = _map_terms(sp, w.tau, nn)
    subs = _subterms(sp, w.tau, nn)
    I = _Isl(sp, max_operations)
    _bijection(I, new_c, nn, old_c, on, terms, "exact active coverage")
    lo, hi = -(1 << (w.index_bits - 1)), (1 << (w.index_bits - 1)) - 1
    for t in list(nn) + subs:
        out = I.set(nn, f"{box_c} and ({t} < {lo} or {t} > {hi})")
        if not out.is_empty():
            raise _Fail("integer representability", f"at {_point(out)} the index arithmetic {w.tau.describe()} leaves "
                                                     f"int{w.index_bits} [{lo}, {hi}] (guards evaluate it on the whole box)")
    return "exact active coverage; the index arithmetic fits int%d on the whole box" % w.index_bits


def _subterms(sp: _Space, m: IndexMap, names) -> list[str]:
    """Every integer subexpression of the map (what the target's index arithmetic computes)."""
    from .expr import walk
    bound = dict(zip(m.inputs, names))
    out = []
    for e in m.exprs:
        for n in walk(e):
            if isinstance(n, (Const, Var, Bin, Un)) and not (isinstance(n, Bin) and n.op in ("and", "or")):
                out.append(sp.term(n, bound))
    return out


def check_split_fuse_symbolic(w: SplitFuseWitness, max_operations: int = MAX_OPERATIONS) -> Verdict:
    return _run("Split/fuse", _split_fuse, w, max_operations)


# ---------------------------------------------------------------------------------------------
# Bind/serialize

def _bind(w: BindWitness, max_operations) -> str:
    sp = _Space(w.domain.params)
    dom_c, dn, _ = _domain(sp, w.domain, "i")
    terms = _map_terms(sp, w.binding, dn)
    if len(terms) != 2:
        raise _Fail("exact coverage", f"the binding gives {len(terms)} coordinate(s); expected (participant, time)")
    if not isinstance(w.workers, int) or isinstance(w.workers, bool):
        raise _Unsupported("the number of workers is not an integer")
    I = _Isl(sp, max_operations)
    slots = I.map(dn, ["p", "t"], f"{dom_c} and p = {terms[0]} and t = {terms[1]}")
    if not slots.is_injective():
        raise _Fail("exact coverage", "two instances share one (participant, time) slot")
    limit = "" if w.max_time is None else f" or t >= {w.max_time}"
    out = slots.range().intersect(I.set(["p", "t"], f"p < 0 or p >= {w.workers} or t < 0{limit}"))
    if not out.is_empty():
        raise _Fail("target containment", f"an instance is bound to (participant, time) {_point(out)}, outside "
                                          f"participants 0..{w.workers - 1}" + ("" if w.max_time is None else
                                                                                f", times 0..{w.max_time - 1}"))
    for j in w.identity_cuts:
        owner = I.map(dn, ["p"], f"{dom_c} and p = {terms[0]}").project_out(isl.dim_type.in_, j, len(dn) - j)
        if not owner.is_single_valued():
            raise _Fail("preserved identity", f"an observed prefix of length {j} is split across participants")
        if not owner.is_injective():
            raise _Fail("preserved identity", f"a participant would hold two observed prefixes of length {j}")
    if w.source == "serial":
        parts = slots.range().project_out(isl.dim_type.set, 1, 1)
        if not parts.subtract(parts.lexmin()).is_empty():
            raise _Fail("serial order", "a serial source is bound to two participants: a serial recurrence cannot be "
                                        "parallelized by changing its constructor")
        a, b = _names("a", len(dn)), _names("b", len(dn))
        lex = " or ".join("(" + " and ".join([f"{a[k]} = {b[k]}" for k in range(m)] + [f"{a[m]} < {b[m]}"]) + ")"
                          for m in range(len(dn))) or "0 = 1"
        pair = I.set(a + b, f"{_rename(dom_c, 'i', 'a')} and {_rename(dom_c, 'i', 'b')} and ({lex}) and "
                            f"{_rename(terms[1], 'i', 'a')} >= {_rename(terms[1], 'i', 'b')}")
        if not pair.is_empty():
            raise _Fail("serial order", f"instances {_point(pair)} run out of source order in time")
    elif w.source != "parallel":
        raise _Fail("scope kind", f"source must be parallel or serial, got {w.source!r}")
    return "exact coverage, containment" + (", identity" if w.identity_cuts else "") + \
        (", serial order" if w.source == "serial" else "")


def _rename(text: str, old: str, new: str) -> str:
    """Axis identifiers i0, i1, ... of `text` renamed to new0, new1, ... (identifiers only)."""
    import re
    return re.sub(rf"\b{old}(\d+)\b", rf"{new}\1", text)


def check_bind_symbolic(w: BindWitness, max_operations: int = MAX_OPERATIONS) -> Verdict:
    from .taskmap import TaskMapping
    if isinstance(w.binding, TaskMapping):
        return Verdict("Bind/serialize", False, "undecided", "symbolic: a TaskMapping is a Python function; its "
                                                             "bindings are decided by enumeration", decided=False)
    return _run("Bind/serialize", _bind, w, max_operations)


def check_symbolic(w, max_operations: int = MAX_OPERATIONS) -> Verdict:
    """The symbolic check of a Reindex, Split/fuse or Bind witness (unknown for any other)."""
    for cls, fn in ((ReindexWitness, check_reindex_symbolic), (SplitFuseWitness, check_split_fuse_symbolic),
                    (BindWitness, check_bind_symbolic)):
        if isinstance(w, cls):
            return fn(w, max_operations)
    return Verdict("Symbolic", False, "undecided", f"symbolic: no symbolic check for {type(w).__name__}", decided=False)


# ---------------------------------------------------------------------------------------------
# Scope fusion (pointwise and horizontal) of two parallel siblings with affine array accesses

def _node_domain(sp: _Space, d, prefix: str) -> tuple[str, list[str], dict]:
    """A program node's Domain (Axis objects, a `where` Expr) as constraints over isl names."""
    names = _names(prefix, len(d.axes))
    bound: dict = {}
    out = []
    for ax, n in zip(d.axes, names):
        out.append(f"{sp.term(ax.lo, bound)} <= {n} < {sp.term(ax.hi, bound)}")
        bound[ax.name] = n
    if d.where is not None:
        out.append(sp.cond(d.where, bound))
    return " and ".join(out) or "0 = 0", names, bound


def _accesses(program, node, sp: _Space, bound: dict) -> list[tuple[str, bool, list[str]]]:
    """(array, writes?, subscript terms) of every array access of a scope's body: ops only, with
    subscripts quasi-affine in the coordinates (a local, a load or a table in a subscript, or any
    other construct in the body, is outside the fragment)."""
    from .expr import Call, Load, walk
    from .program import Op, Seq
    out: list = []
    locals_: set = set()

    def reads(e) -> None:
        for n in walk(e):
            if isinstance(n, Load) and n.name in program.arrays:
                out.append((n.name, False, [sp.term(i, _no_locals(i)) for i in n.index]))

    def _no_locals(e) -> dict:
        from .expr import Var
        for v in walk(e):
            if isinstance(v, Var) and v.name in locals_:
                raise _Unsupported(f"the subscript {e!r} uses the local '{v.name}'")
            if isinstance(v, Call):
                raise _Unsupported(f"the subscript {e!r} calls a function")
        return bound

    def visit(n) -> None:
        if isinstance(n, Seq):
            for item in n.items:
                visit(item)
        elif isinstance(n, Op):
            for st in n.stmts:
                reads(st.value)
                if isinstance(st.target, Load):
                    for i in st.target.index:
                        reads(i)
                    out.append((st.target.name, True, [sp.term(i, _no_locals(i)) for i in st.target.index]))
                else:
                    locals_.add(st.target.name)
            for ld in n.reads:
                out.append((ld.name, False, [sp.term(i, _no_locals(i)) for i in ld.index]))
            for ld in n.writes:
                out.append((ld.name, True, [sp.term(i, _no_locals(i)) for i in ld.index]))
        else:
            raise _Unsupported(f"{n.path} is a {type(n).__name__.lower()}: the symbolic fusion check takes "
                               f"bodies of ops with affine array accesses")
    visit(node.body)
    return out


def _scope_fusion(args, max_operations) -> str:
    from .program import Parallel
    from .witnesses import FusionWitness, _Fail as _FiniteFail, _siblings
    program, w = args
    if not isinstance(w, FusionWitness):
        raise _Unsupported("not a FusionWitness")
    try:
        A, B = _siblings(program, w)
    except _FiniteFail as f:
        raise _Fail(f.obligation, f.detail)
    if w.kind not in ("parallel", "horizontal"):
        raise _Unsupported(f"kind {w.kind!r}: the symbolic check takes pointwise and horizontal fusion")
    for n, p in ((A, w.first), (B, w.second)):
        if not isinstance(n, Parallel):
            raise _Fail("scope kinds", f"{p} is a {type(n).__name__.lower()}, not a parallel scope")
        if n.batch or n.snapshot:
            raise _Unsupported(f"{p} is a batch or snapshot parallel")
    parent = w.first.rsplit(".", 1)[0]
    if parent != "$.body":
        raise _Unsupported("the siblings are inside another scope: enclosing coordinates are enumerated")
    sp = _Space(program.params)
    a_c, an, a_bound = _node_domain(sp, A.domain, "a")
    b_c, bn, b_bound = _node_domain(sp, B.domain, "b")
    acc_a, acc_b = _accesses(program, A, sp, a_bound), _accesses(program, B, sp, b_bound)
    I = _Isl(sp, max_operations)
    for (name, _, terms), names, cond in [(x, an, a_c) for x in acc_a] + [(x, bn, b_c) for x in acc_b]:
        shape = program.arrays[name].shape
        if len(terms) != len(shape):
            raise _Unsupported(f"an access of {name} has {len(terms)} subscript(s) for rank {len(shape)}")
        out = " or ".join(f"{t} < 0 or {t} >= {s}" for t, s in zip(terms, shape)) or "0 = 1"
        if not I.set(names, f"{cond} and ({out})").is_empty():
            raise _Unsupported(f"an access of {name} may leave its bounds: decided by enumeration")
    dep = None
    for na, wa, ta in acc_a:
        for nb, wb, tb in acc_b:
            if na != nb or not (wa or wb):
                continue
            eq = " and ".join(f"{x} = {y}" for x, y in zip(ta, tb)) or "0 = 0"
            rel = I.map(an, bn, f"{a_c} and {b_c} and {eq}")
            dep = rel if dep is None else dep.union(rel)
    if w.kind == "horizontal":
        if dep is not None and not dep.is_empty():
            raise _Fail("independent siblings", f"{_pair(dep, A, B)} touch one element, one of them writing it: "
                                                f"a tagged disjoint union runs the two scopes concurrently")
        return "the siblings share no written element: a tagged disjoint union"
    if w.map is None and len(an) != len(bn):
        raise _Fail("domains align", f"A has {len(an)} axes and B {len(bn)}; give a map (independent siblings of "
                                     f"unlike domains fuse horizontally: a tagged disjoint union, not pointwise zipping)")
    terms = bn if w.map is None else _map_terms(sp, w.map, bn)
    if len(terms) != len(an):
        raise _Fail("domains align", f"the map gives {len(terms)} coordinate(s); A has {len(an)} axes")
    M = I.map(bn, an, f"{b_c} and " + (" and ".join(f"{x} = {t}" for x, t in zip(an, terms)) or "0 = 0"))
    stray = M.range().subtract(I.set(an, a_c))
    if not stray.is_empty():
        raise _Fail("domains align", f"a B instance maps to {_point(stray)}, which is not an active instance of A")
    if not M.is_injective():
        raise _Fail("domains align", "two B instances map to one A instance")
    lost = I.set(an, a_c).subtract(M.range())
    if not lost.is_empty():
        raise _Fail("domains align", f"A{_point(lost)} has no B instance to fuse with")
    if dep is not None:
        off = dep.subtract(M.reverse())
        if not off.is_empty():
            raise _Fail("Dep_AB ⊆ diagonal", f"a crossing edge between {_pair(off, A, B)}: per-instance fusion "
                                             f"would lose it")
    return "Dep_AB ⊆ diagonal over the whole domains"


def check_scope_fusion_symbolic(program, w, max_operations: int = MAX_OPERATIONS) -> Verdict:
    """Pointwise (`parallel`) or `horizontal` fusion of two parallel siblings directly under the
    program's seq, decided with isl over the whole domains: the obligations of check_scope_fusion
    (adjacent siblings, scope kinds, domains align, Dep_AB ⊆ diagonal / independent siblings) for
    bodies of ops whose array subscripts are quasi-affine.  Anything else is unknown."""
    return _run("Scope fusion", _scope_fusion, (program, w), max_operations)
