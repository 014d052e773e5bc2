"""The text form of region programs (JSON, docs/regions.md): load with precise errors, dump back.

Every rejection is a RegionError naming the JSON path of the offending value and why
(`$.body.seq[1].parallel[0]: an axis is [name, hi] or [name, lo, hi]`).  The shape of the
document is checked first, against the JSON Schema in schema.py (fastjsonschema, then jsonschema
for the words of an error); building the
program then checks what depends on meaning.  The Python builder (builder.py) produces the
same JSON structure, so both paths share one loader.
"""
from __future__ import annotations

import gc
import math
import re
import threading
from contextlib import contextmanager
from typing import Any

from isa import jsontext
from isa.atomicio import quote, shown, why

from .budget import DEFAULT_MAX_CODE, check_code_size
from .errors import RegionError
from .expr import Call, Const, EvalError, Expr, ExprSyntaxError, Load, Var, parse_expr, parse_stmt, walk
from .functions import BUILTINS, Function
from .program import (DEFAULT_POLICY, FORMAT, ArrayDecl, Axis, Domain, GprOp, If, Node, Op,
                      Parallel, Pipeline, Program, Reduce, Scan, Seq, Serial, TileOp, TileRef, check,
                      table_rank)
from .schema import CONSTRUCTS, key_segment, type_name, validate, validate_block_mapping

_HOLE = re.compile(r"\$\{([^{}]*)\}")
MAX_ELEMENTS = 1 << 24            # an array declaration larger than this is refused, not allocated
MAX_TEXT = 1 << 23                # characters of program text, data included (docs/regions.md 'Budgets')


def expr(v, path) -> Expr:
    """A JSON expression: a string in the expression language, or a literal number."""
    if isinstance(v, (bool, int, float)):
        return Const(v)
    if not isinstance(v, str):
        raise RegionError(path, f"an expression is a string or a number, got {type_name(v)}")
    try:
        return parse_expr(v)
    except ExprSyntaxError as exc:
        raise RegionError(path, f"{exc} in {quote(v)}") from None


def _stmt(v, path):
    try:
        return parse_stmt(v)
    except ExprSyntaxError as exc:
        raise RegionError(path, f"{exc} in {quote(v)}") from None


def _access(v, path) -> Load:
    e = expr(v, path)
    if not isinstance(e, Load):
        raise RegionError(path, f"an effect is an element access 'name[index, ...]', got {quote(v)}")
    return e


def _opt_expr(v, path):
    return None if v is None else expr(v, path)


def _domain(v, where, path: str, where_path: str) -> Domain:
    axes, seen = [], set()
    for i, ax in enumerate(v):
        p = f"{path}[{i}]"
        name = ax[0]
        if name in seen:
            raise RegionError(f"{p}[0]", f"axis '{name}' appears twice in this domain")
        seen.add(name)
        lo, hi = (Const(0), expr(ax[1], f"{p}[1]")) if len(ax) == 2 else \
            (expr(ax[1], f"{p}[1]"), expr(ax[2], f"{p}[2]"))
        axes.append(Axis(name, lo, hi))
    return Domain(tuple(axes), _opt_expr(where, where_path))


def _node(v: Any, path: str) -> Node:
    """A node of a document that schema.validate accepted."""
    if not isinstance(v, dict):                    # an isa.Block from the Python builder
        return TileOp(block=v)
    if "op" in v:                                  # the most frequent node, first
        return _op(v, path)
    for kind in CONSTRUCTS:
        if kind in v:
            return _BUILD[kind](v, path)


def _op(v, path):
    body = v["op"]
    if isinstance(body, str):
        stmts = (_stmt(body, f"{path}.op"),)
    else:
        stmts = tuple(_stmt(s, f"{path}.op[{i}]") for i, s in enumerate(body))
    reads, writes = v.get("reads"), v.get("writes")
    return Op(stmts, _accesses(reads, f"{path}.reads") if reads else (),
              _accesses(writes, f"{path}.writes") if writes else (), v.get("name"))


def _accesses(v, path) -> tuple:
    return tuple(_access(a, f"{path}[{i}]") for i, a in enumerate(v))


def _block(v, path):
    b, name = v["block"], v.get("name")
    if isinstance(b, dict):
        return TileOp(block=block_from_mapping(b, f"{path}.block"), name=name)
    if not isinstance(b, str):
        return TileOp(block=b, name=name)          # an isa.Block
    holes = [(m.group(0), expr(m.group(1), f"{path}.block")) for m in _HOLE.finditer(b)]
    # Syntax-check now (placeholders read as 0) so a typo is reported at load, with its path.
    blocks = assemble_text(_HOLE.sub("0", b), f"{path}.block")
    if len(blocks) != 1:
        raise RegionError(f"{path}.block", f"block text must hold exactly one block, found {len(blocks)}; "
                                           f"use 'seq' with block text for a stream")
    if not holes:
        return TileOp(block=blocks[0], text=b, name=name)
    return TileOp(text=b, holes=tuple(holes), name=name)


def assemble_text(text: str, path: str):
    from isa.assembly import assemble_blocks
    from isa.errors import AsmError
    try:
        return assemble_blocks(text)
    except AsmError as exc:
        raise RegionError(path, f"block text: {exc}") from None


def block_from_mapping(m: dict, path: str):
    """The Block dataclasses as JSON: {bstart: {Mode, Function, DataType}, iot: [{tile, PE_MASK,
    capacity?}], dim?: {LB0, LB1?, LB2?}, datr?: {...}, ior?: {...}, ios?: {value}}."""
    from isa.block import BDatr, BDim, BIor, BIos, Block, BStart, TileBinding
    validate_block_mapping(m, path)
    opt = {key: cls(**m[key]) for key, cls in (("dim", BDim), ("datr", BDatr), ("ior", BIor), ("ios", BIos))
           if m.get(key) is not None}
    return Block(BStart(**m["bstart"]), tuple(TileBinding(**b) for b in m["iot"]), **opt)


def _gpr(v, path):
    g = v["gpr"]
    return GprOp(*(expr(g[k], f"{path}.gpr.{k}") for k in ("pe", "index", "value")))


def _seq(v, path):
    items = v["seq"]
    if isinstance(items, str):            # a block stream: one TileOp per block
        return Seq(tuple(TileOp(block=b) for b in assemble_text(items, f"{path}.seq")))
    return Seq(tuple(_node(n, f"{path}.seq[{i}]") for i, n in enumerate(items)))


def _if(v, path):
    els = v.get("else")
    return If(expr(v["if"], f"{path}.if"), _node(v["then"], f"{path}.then"),
              None if els is None else _node(els, f"{path}.else"))


def _parallel(v, path):
    return Parallel(_domain(v["parallel"], v.get("where"), f"{path}.parallel", f"{path}.where"),
                    _node(v["body"], f"{path}.body"), v.get("batch", False), tuple(v.get("snapshot", ())))


def _carries(v, key, path):
    return {k: expr(e, f"{path}.{key}.{k}") for k, e in v.get(key, {}).items()}


def _serial(v, path):
    return Serial(_domain(v["serial"], v.get("where"), f"{path}.serial", f"{path}.where"),
                  _node(v["body"], f"{path}.body"), _carries(v, "carry", path), _carries(v, "next", path))


def _pipeline(v, path):
    return Pipeline(_domain(v["pipeline"], v.get("where"), f"{path}.pipeline", f"{path}.where"),
                    tuple(_node(n, f"{path}.stages[{i}]") for i, n in enumerate(v["stages"])), v.get("ii", 1))


def _tile_ref(v, path) -> TileRef:
    return TileRef(expr(v["pe"], f"{path}.pe"), expr(v["tile"], f"{path}.tile"))


def _reduce(v, path):
    into, value = v["into"], v["value"]
    if isinstance(into, dict):
        into, value = _tile_ref(into, f"{path}.into"), _tile_ref(value, f"{path}.value")
    else:
        value = expr(value, f"{path}.value")
    key = v.get("key")
    if key is not None:
        key = tuple(expr(e, f"{path}.key[{i}]") for i, e in enumerate(key))
    body = v.get("body")
    return Reduce(
        domain=_domain(v["reduce"], v.get("where"), f"{path}.reduce", f"{path}.where"),
        into=into, value=value, combine=v["combine"],
        group=tuple(expr(e, f"{path}.group[{i}]") for i, e in enumerate(v.get("group", []))),
        policy=v.get("policy") or DEFAULT_POLICY, lift=v.get("lift"),
        mask=_opt_expr(v.get("mask"), f"{path}.mask"),
        key=key, body=None if body is None else _node(body, f"{path}.body"),
        seed_side=v.get("seed_side") or "left")


def _scan(v, path):
    body = v.get("body")
    return Scan(
        domain=_domain(v["scan"], v.get("where"), f"{path}.scan", f"{path}.where"),
        into=v["into"], value=expr(v["value"], f"{path}.value"), combine=v["combine"],
        group=tuple(expr(e, f"{path}.group[{i}]") for i, e in enumerate(v.get("group", []))),
        policy=v.get("policy") or DEFAULT_POLICY, exclusive=v.get("exclusive", False),
        seed=_opt_expr(v.get("seed"), f"{path}.seed"), body=None if body is None else _node(body, f"{path}.body"))


_BUILD = {"scan": _scan, "op": _op, "block": _block, "gpr": _gpr, "seq": _seq, "if": _if, "parallel": _parallel,
          "serial": _serial, "pipeline": _pipeline, "reduce": _reduce}


# ---------------------------------------------------------------------------------------------
# Top level

def _params(v, path) -> dict:
    return {k: val if isinstance(val, int) else _table(val, f"{path}.{key_segment(k)}") for k, val in v.items()}


def _table(val, path):
    """A rectangular nested list of integers (rectangularity is beyond JSON Schema)."""
    if not val:
        return ()
    if all(isinstance(x, list) for x in val):
        rows = tuple(_table(x, f"{path}[{i}]") for i, x in enumerate(val))
        if len({table_rank(r) for r in rows}) != 1 or len({len(r) for r in rows}) != 1:
            raise RegionError(path, "a parameter table must be rectangular")
        return rows
    for i, x in enumerate(val):
        if isinstance(x, bool) or not isinstance(x, int):
            raise RegionError(f"{path}[{i}]", f"a table entry is an integer, got {type_name(x)}")
    return tuple(val)


def _param_int(e: Expr, params: dict, path: str) -> int:
    class Env:
        def name(self, n):
            if n in params and isinstance(params[n], int):
                return params[n]
            raise EvalError(f"'{n}' is not an integer parameter")

        def load(self, n, idx):
            raise EvalError("an array shape cannot load")

        def call(self, n, args):
            raise EvalError("an array shape cannot call functions")
    try:
        v = e.eval(Env())
    except EvalError as exc:
        raise RegionError(path, str(exc)) from None
    if isinstance(v, bool) or not isinstance(v, int):
        raise RegionError(path, f"must be an integer, got {shown(repr(v))}")
    return v


def _value(x, path):
    if x is None or isinstance(x, (str, float)) or (isinstance(x, int) and not isinstance(x, bool)):
        return x
    raise RegionError(path, f"an element value is an integer, number, string or null, got {type_name(x)}")


def _arrays(v, params, path) -> dict:
    out = {}
    for name, decl in v.items():
        p = f"{path}.{name}"
        shape = tuple(_param_int(expr(s, f"{p}.shape[{i}]"), params, f"{p}.shape[{i}]")
                      for i, s in enumerate(decl["shape"]))
        for i, s in enumerate(shape):
            if s < 0:
                raise RegionError(f"{p}.shape[{i}]", f"an extent is nonnegative, got {s}")
        a = ArrayDecl(shape)
        if a.size > MAX_ELEMENTS:
            raise RegionError(f"{p}.shape", f"{a.size} elements exceed the limit {MAX_ELEMENTS}")
        if "fill" in decl:
            a.init = [decl["fill"]] * a.size
        elif "init" in decl:
            a.init = _flatten(decl["init"], shape, f"{p}.init")
        out[name] = a
    return out


def _flatten(v, shape, path) -> list:
    """A nested list in `shape` (its nesting depends on the parameters: beyond JSON Schema)."""
    if not shape:
        return [_value(v, path)]
    if not isinstance(v, list) or len(v) != shape[0]:
        n = len(v) if isinstance(v, list) else type_name(v)
        raise RegionError(path, f"expected a list of {shape[0]} (shape {list(shape)}), got {n}")
    out = []
    for i, x in enumerate(v):
        out.extend(_flatten(x, shape[1:], f"{path}[{i}]"))
    return out


def _functions(v, params, path) -> dict:
    out: dict[str, Function] = {}
    for name, d in v.items():
        p = f"{path}.{name}"
        if name in BUILTINS:
            raise RegionError(p, f"'{name}' is a builtin function")
        args = tuple(d["args"])
        body = expr(d["body"], f"{p}.body")
        for n in walk(body):
            if isinstance(n, Var) and n.name not in args and not isinstance(params.get(n.name), int):
                raise RegionError(f"{p}.body", f"unknown name {quote(n.name)} (not an argument or integer parameter)")
            if isinstance(n, Load):
                raise RegionError(f"{p}.body", "a function body cannot load from arrays")
            if isinstance(n, Call):
                callee = out.get(n.name) or BUILTINS.get(n.name)
                if callee is None:
                    raise RegionError(f"{p}.body", f"{quote(n.name)} is not a builtin or an earlier function")
                if callee.arity != len(n.args):
                    raise RegionError(f"{p}.body", f"{quote(n.name)} takes {callee.arity} argument(s)")
        kind = d.get("kind", "merge" if len(args) == 2 else "map")
        if kind != "map" and len(args) != 2:
            raise RegionError(f"{p}.kind", f"a {kind} takes two arguments")
        laws = {law: d.get(law, False) for law in ("associative", "commutative", "regroup")}
        out[name] = Function(name, len(args), kind, _closure(args, body, params, dict(out)), **laws,
                             doc=f"user function {d['body']!r}", source=dict(d))
    return out


def _closure(args, body, params, known):
    ints = {k: v for k, v in params.items() if isinstance(v, int)}

    class Env:
        __slots__ = ("vals",)

        def __init__(self, vals):
            self.vals = vals

        def name(self, n):
            return self.vals[n] if n in self.vals else ints[n]

        def load(self, n, idx):
            raise EvalError("a function body cannot load")

        def call(self, n, a):
            return (known.get(n) or BUILTINS[n])(*a)

    def fn(*vals):
        return body.eval(Env(dict(zip(args, vals))))
    return fn


_DEFER = threading.Lock()
_deferred = {"depth": 0, "thresholds": None}


@contextmanager
def _full_collections_deferred():
    """Loading builds one acyclic tree of many small objects (and the parsed JSON before it).  While
    the heap grows, Python's cyclic collector would scan all of it again and again in full
    collections -- a third of a 10,000-op load's time on a busy box, and more than the one full
    collection it costs afterwards -- so those wait until the tree is built.  The young
    generations are still collected (a cycle that dies young is freed as before), and reference
    counting frees every other temporary at once.  One depth count for all threads: the last
    load to finish restores the thresholds."""
    with _DEFER:
        if _deferred["depth"] == 0:
            t = _deferred["thresholds"] = gc.get_threshold()
            gc.set_threshold(t[0], t[1], 1 << 30)
        _deferred["depth"] += 1
    try:
        yield
    finally:
        with _DEFER:
            _deferred["depth"] -= 1
            if _deferred["depth"] == 0:
                gc.set_threshold(*_deferred["thresholds"])


def load(doc: Any, source: str | None = None, max_code: int | None = DEFAULT_MAX_CODE) -> Program:
    """A Program from parsed JSON (a dict), checked; RegionError on anything malformed, a
    BudgetError before parsing when its code exceeds `max_code` characters (None: no limit).
    A program nests by design, so its JSON has no depth bound (isa.jsontext.MAX_DEPTH); a
    value nested past what the checks' recursion reaches (a parameter table, a schema error
    that prints the value) is one RegionError too."""
    with _full_collections_deferred():
        try:
            return _load(doc, max_code)
        except RecursionError:
            raise RegionError("$", "nested too deeply for this reader (Python's recursion limit)") from None


def _load(doc: Any, max_code: int | None) -> Program:
    if not isinstance(doc, dict):
        raise RegionError("$", f"a region program is a JSON object, got {type_name(doc)}")
    check_code_size(doc, max_code)
    validate(doc)
    fmt = doc.get("format", FORMAT)
    if fmt != FORMAT:
        raise RegionError("$.format", f"unsupported format {shown(repr(fmt))}; this reader reads {FORMAT!r}")
    params = _params(doc.get("params", {}), "$.params")
    arrays = _arrays(doc.get("arrays", {}), params, "$.arrays")
    functions = _functions(doc.get("functions", {}), params, "$.functions")
    total = sum(a.size for a in arrays.values())
    if total > MAX_ELEMENTS:
        raise RegionError("$.arrays", f"{total} elements in all exceed the limit {MAX_ELEMENTS}")
    try:
        body = _node(doc["body"], "$.body")
        prog = Program(body, params, arrays, functions)
        return check(prog)
    except RecursionError:
        raise RegionError("$.body", "region nesting too deep") from None


def loads(text: str, max_code: int | None = DEFAULT_MAX_CODE) -> Program:
    if len(text) > MAX_TEXT:
        raise RegionError("$", f"the program text has {len(text)} characters; at most {MAX_TEXT} are read")
    with _full_collections_deferred():
        try:
            doc = jsontext.loads(text)
        except jsontext.JsonTextError as exc:
            raise RegionError("$", f"not JSON: {exc}") from None
        return load(doc, max_code=max_code)


def load_file(path, max_code: int | None = DEFAULT_MAX_CODE) -> Program:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise RegionError("$", f"cannot read {shown(path)}: {why(exc)}") from None
    except UnicodeDecodeError as exc:
        raise RegionError("$", f"cannot read {shown(path)}: not UTF-8 text (byte {exc.start})") from None
    return loads(text, max_code)


# ---------------------------------------------------------------------------------------------
# Dump

def _e(e: Expr):
    if isinstance(e, Const) and not isinstance(e.value, str) and not (
            isinstance(e.value, float) and not math.isfinite(e.value)):
        return e.value
    return repr(e)


def _dom(d: Domain) -> list:
    return [[a.name, _e(a.lo), _e(a.hi)] for a in d.axes]


def _where(out: dict, d: Domain) -> dict:
    if d.where is not None:
        out["where"] = _e(d.where)
    return out


def dump_node(n: Node) -> dict:
    if isinstance(n, Op):
        out = {"op": [s.text for s in n.stmts] if len(n.stmts) != 1 else n.stmts[0].text}
        if n.name:
            out["name"] = n.name
        if n.reads:
            out["reads"] = [repr(a) for a in n.reads]
        if n.writes:
            out["writes"] = [repr(a) for a in n.writes]
        return out
    if isinstance(n, TileOp):
        if n.text is not None:
            out = {"block": n.text}
        else:
            from isa.assembly import disassemble
            out = {"block": disassemble([n.block]).strip()}
        if n.name:
            out["name"] = n.name
        return out
    if isinstance(n, GprOp):
        return {"gpr": {"pe": _e(n.pe), "index": _e(n.index), "value": _e(n.value)}}
    if isinstance(n, Seq):
        return {"seq": [dump_node(c) for c in n.items]}
    if isinstance(n, If):
        out = {"if": _e(n.pred), "then": dump_node(n.then)}
        if n.else_ is not None:
            out["else"] = dump_node(n.else_)
        return out
    if isinstance(n, Parallel):
        out = _where({"parallel": _dom(n.domain)}, n.domain)
        if n.batch:
            out["batch"] = True
        if n.snapshot:
            out["snapshot"] = list(n.snapshot)
        out["body"] = dump_node(n.body)
        return out
    if isinstance(n, Serial):
        out = _where({"serial": _dom(n.domain)}, n.domain)
        if n.carry:
            out["carry"] = {k: _e(v) for k, v in n.carry.items()}
        if n.next:
            out["next"] = {k: _e(v) for k, v in n.next.items()}
        out["body"] = dump_node(n.body)
        return out
    if isinstance(n, Pipeline):
        out = _where({"pipeline": _dom(n.domain)}, n.domain)
        out["ii"] = n.ii
        out["stages"] = [dump_node(s) for s in n.stages]
        return out
    if isinstance(n, Reduce):
        out = _where({"reduce": _dom(n.domain)}, n.domain)
        ref = (lambda r: {"pe": _e(r.pe), "tile": _e(r.tile)})
        out["into"] = ref(n.into) if n.tiles else n.into
        if n.group:
            out["group"] = [_e(g) for g in n.group]
        out["value"] = ref(n.value) if n.tiles else _e(n.value)
        out["combine"] = n.combine
        out["policy"] = n.policy
        for k in ("lift", "mask"):
            v = getattr(n, k)
            if v is not None:
                out[k] = v if isinstance(v, str) else _e(v)
        if n.key is not None:
            out["key"] = [_e(k) for k in n.key]
        if n.seed_side != "left":
            out["seed_side"] = n.seed_side
        if n.body is not None:
            out["body"] = dump_node(n.body)
        return out
    if isinstance(n, Scan):
        out = _where({"scan": _dom(n.domain)}, n.domain)
        out["into"] = n.into
        if n.group:
            out["group"] = [_e(g) for g in n.group]
        out.update(value=_e(n.value), combine=n.combine, policy=n.policy)
        if n.exclusive:
            out["exclusive"] = True
        if n.seed is not None:
            out["seed"] = _e(n.seed)
        if n.body is not None:
            out["body"] = dump_node(n.body)
        return out
    raise TypeError(type(n).__name__)


def dump(p: Program) -> dict:
    """The JSON form of a program; load(dump(p)) rebuilds it."""
    out: dict = {"format": FORMAT}
    if p.params:
        out["params"] = {k: (v if isinstance(v, int) else _list(v)) for k, v in p.params.items()}
    if p.arrays:
        arr = {}
        for k, a in p.arrays.items():
            d: dict = {"shape": list(a.shape)}
            if a.init is not None:
                d["init"] = _nest(a.init, a.shape)
            arr[k] = d
        out["arrays"] = arr
    if p.functions:
        out["functions"] = {k: dict(f.source) for k, f in p.functions.items() if f.source is not None}
    out["body"] = dump_node(p.body)
    return out


def _list(t):
    return [_list(x) for x in t] if isinstance(t, tuple) else t


def _nest(flat, shape):
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return list(flat)
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]
