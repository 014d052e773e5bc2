"""The text form of region programs (JSON, docs/regions.md): load with precise errors, dump back.

Every rejection is a RegionError naming the JSON path of the offending value and why
(`$.body.seq[1].parallel[0]: an axis is [name, hi] or [name, lo, hi]`).  The Python builder
(builder.py) produces the same JSON structure, so both paths share one loader.
"""
from __future__ import annotations

import math
import re
from typing import Any

from isa import jsontext
from isa.atomicio import quote, shown, why

from .budget import DEFAULT_MAX_CODE, check_code_size
from .errors import RegionError
from .expr import (RESERVED, Call, Const, EvalError, Expr, ExprSyntaxError, Load, Var, parse_expr,
                   parse_stmt, walk)
from .functions import BUILTINS, Function
from .program import (DEFAULT_POLICY, FORMAT, ArrayDecl, Axis, Domain, GprOp, If, Node, Op,
                      Parallel, Pipeline, Program, Reduce, Seq, Serial, TileOp, TileRef, check,
                      table_rank)

CONSTRUCTS = ("op", "block", "gpr", "seq", "if", "parallel", "serial", "pipeline", "reduce")
_NODE_KEYS = {
    "op": {"op", "name", "reads", "writes"},
    "block": {"block", "name"},
    "gpr": {"gpr"},
    "seq": {"seq"},
    "if": {"if", "then", "else"},
    "parallel": {"parallel", "where", "body", "batch"},
    "serial": {"serial", "where", "body", "carry", "next"},
    "pipeline": {"pipeline", "where", "stages", "ii"},
    "reduce": {"reduce", "where", "into", "group", "value", "combine", "policy", "lift", "mask",
               "key", "body", "seed_side"},
}
_REQUIRED = {"if": ("then",), "parallel": ("body",), "serial": ("body",), "pipeline": ("stages",),
             "reduce": ("into", "value", "combine")}
_TOP_KEYS = {"format", "params", "arrays", "functions", "body"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_HOLE = re.compile(r"\$\{([^{}]*)\}")
MAX_ELEMENTS = 1 << 24            # an array declaration larger than this is refused, not allocated
MAX_TEXT = 1 << 23                # characters of program text, data included (docs/regions.md 'Budgets')


def _type(v) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer",
            float: "number", type(None): "null"}.get(type(v), type(v).__name__)


def _need(v, types, path, what):
    if not isinstance(v, types) or (isinstance(v, bool) and bool not in _flat(types)):
        raise RegionError(path, f"{what}, got {_type(v)}")
    return v


def _flat(types):
    return types if isinstance(types, tuple) else (types,)


def _key(k) -> str:
    """An object key as a JSON-path segment: as it is when it is a short identifier, else
    quoted and cut (a key is untrusted text: it may be huge or hold control characters)."""
    return k if isinstance(k, str) and len(k) <= 64 and _NAME.match(k) else quote(k, 40)


def _keys(obj: dict, allowed: set, path: str, required=()):
    for k in obj:
        if not isinstance(k, str) or k not in allowed:
            raise RegionError(f"{path}.{_key(k)}", f"unknown key (expected one of: {', '.join(sorted(allowed))})")
    for k in required:
        if k not in obj:
            raise RegionError(path, f"missing required key '{k}'")


def _name(v, path, what="a name"):
    if not isinstance(v, str) or not _NAME.match(v):
        raise RegionError(path, f"{what} must be an identifier [A-Za-z_][A-Za-z0-9_]*, got {shown(repr(v))}")
    if v in RESERVED:
        raise RegionError(path, f"{what} cannot be {quote(v)}: a reserved word of Python, whose parser reads "
                                f"the expressions")
    return v


def expr(v, path) -> Expr:
    """A JSON expression: a string in the expression language, or a literal number."""
    if isinstance(v, bool):
        return Const(v)
    if isinstance(v, (int, float)):
        return Const(v)
    if not isinstance(v, str):
        raise RegionError(path, f"an expression is a string or a number, got {_type(v)}")
    try:
        return parse_expr(v)
    except ExprSyntaxError as exc:
        raise RegionError(path, f"{exc} in {quote(v)}") from None


def _stmt(v, path):
    if not isinstance(v, str):
        raise RegionError(path, f"a statement is a string 'target = value', got {_type(v)}")
    try:
        return parse_stmt(v)
    except ExprSyntaxError as exc:
        raise RegionError(path, f"{exc} in {quote(v)}") from None


def _access(v, path) -> Load:
    e = expr(v, path)
    if not isinstance(e, Load):
        raise RegionError(path, f"an effect is an element access 'name[index, ...]', got {quote(v)}")
    return e


def _domain(v, where, path: str, where_path: str) -> Domain:
    _need(v, list, path, "a domain is a list of axes [name, hi] or [name, lo, hi]")
    axes, seen = [], set()
    for i, ax in enumerate(v):
        p = f"{path}[{i}]"
        if not isinstance(ax, list) or len(ax) not in (2, 3):
            raise RegionError(p, f"an axis is [name, hi] or [name, lo, hi], got {shown(repr(ax))}")
        name = _name(ax[0], f"{p}[0]", "an axis name")
        if name in seen:
            raise RegionError(f"{p}[0]", f"axis '{name}' appears twice in this domain")
        seen.add(name)
        lo, hi = (Const(0), expr(ax[1], f"{p}[1]")) if len(ax) == 2 else \
            (expr(ax[1], f"{p}[1]"), expr(ax[2], f"{p}[2]"))
        axes.append(Axis(name, lo, hi))
    return Domain(tuple(axes), None if where is None else expr(where, where_path))


def _node(v: Any, path: str) -> Node:
    from isa.block import Block
    if isinstance(v, Block):
        return _leaf_block(v, path, None)
    _need(v, dict, path, "a region node is an object with one of the keys " + ", ".join(CONSTRUCTS))
    kinds = [k for k in CONSTRUCTS if k in v]
    if len(kinds) != 1:
        found = "none" if not kinds else " and ".join(kinds)
        raise RegionError(path, f"a region node has exactly one of {', '.join(CONSTRUCTS)}; found {found}")
    kind = kinds[0]
    _keys(v, _NODE_KEYS[kind], path, _REQUIRED.get(kind, ()))
    return _BUILD[kind](v, path)


def _op(v, path):
    body = v["op"]
    if isinstance(body, str):
        stmts = (_stmt(body, f"{path}.op"),)
    else:
        _need(body, list, f"{path}.op", "'op' is a statement or a list of statements")
        if not body:
            raise RegionError(f"{path}.op", "an op needs at least one statement")
        stmts = tuple(_stmt(s, f"{path}.op[{i}]") for i, s in enumerate(body))
    effects = {}
    for key in ("reads", "writes"):
        lst = v.get(key, [])
        _need(lst, list, f"{path}.{key}", f"'{key}' is a list of element accesses")
        effects[key] = tuple(_access(a, f"{path}.{key}[{i}]") for i, a in enumerate(lst))
    name = v.get("name")
    if name is not None:
        _need(name, str, f"{path}.name", "'name' is a string")
    return Op(stmts, effects["reads"], effects["writes"], name)


def _leaf_block(block, path, name) -> TileOp:
    return TileOp(block=block, name=name)


def _block(v, path):
    b = v["block"]
    name = v.get("name")
    if name is not None:
        _need(name, str, f"{path}.name", "'name' is a string")
    from isa.block import Block
    if isinstance(b, Block):
        return TileOp(block=b, name=name)
    if isinstance(b, dict):
        return TileOp(block=block_from_mapping(b, f"{path}.block"), name=name)
    _need(b, str, f"{path}.block", "'block' is block text or a block mapping")
    holes = []
    for m in _HOLE.finditer(b):
        holes.append((m.group(0), expr(m.group(1), f"{path}.block")))
    text = b
    # Syntax-check now (placeholders read as 0) so a typo is reported at load, with its path.
    blocks = assemble_text(_HOLE.sub("0", b), f"{path}.block")
    if len(blocks) != 1:
        raise RegionError(f"{path}.block", f"block text must hold exactly one block, found {len(blocks)}; "
                                           f"use 'seq' with block text for a stream")
    if not holes:
        return TileOp(block=blocks[0], text=text, name=name)
    return TileOp(text=text, holes=tuple(holes), name=name)


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
    _keys(m, {"bstart", "iot", "dim", "datr", "ior", "ios"}, path, ("bstart", "iot"))

    def fields(cls, obj, p, required=()):
        _need(obj, dict, p, f"{cls.__name__} is an object")
        allowed = set(cls.__dataclass_fields__)
        _keys(obj, allowed, p, required)
        for k, val in obj.items():
            if k == "spelling":
                _need(val, str, f"{p}.{k}", "spelling is a string")
            elif val is not None:
                _need(val, int, f"{p}.{k}", f"{k} is an integer")
        return cls(**obj)

    bstart = fields(BStart, m["bstart"], f"{path}.bstart", ("Mode", "Function", "DataType"))
    iot = m["iot"]
    _need(iot, list, f"{path}.iot", "iot is a list of bindings")
    bindings = tuple(fields(TileBinding, b, f"{path}.iot[{i}]", ("tile", "PE_MASK")) for i, b in enumerate(iot))
    opt = {}
    for key, cls in (("dim", BDim), ("datr", BDatr), ("ior", BIor), ("ios", BIos)):
        if m.get(key) is not None:
            opt[key] = fields(cls, m[key], f"{path}.{key}")
    return Block(bstart, bindings, **opt)


def _gpr(v, path):
    g = v["gpr"]
    _need(g, dict, f"{path}.gpr", "'gpr' is an object {pe, index, value}")
    _keys(g, {"pe", "index", "value"}, f"{path}.gpr", ("pe", "index", "value"))
    return GprOp(expr(g["pe"], f"{path}.gpr.pe"), expr(g["index"], f"{path}.gpr.index"),
                 expr(g["value"], f"{path}.gpr.value"))


def _seq(v, path):
    items = v["seq"]
    if isinstance(items, str):            # a block stream: one TileOp per block
        return Seq(tuple(TileOp(block=b) for b in assemble_text(items, f"{path}.seq")))
    _need(items, list, f"{path}.seq", "'seq' is a list of region nodes (or block text)")
    return Seq(tuple(_node(n, f"{path}.seq[{i}]") for i, n in enumerate(items)))


def _if(v, path):
    els = v.get("else")
    return If(expr(v["if"], f"{path}.if"), _node(v["then"], f"{path}.then"),
              None if els is None else _node(els, f"{path}.else"))


def _parallel(v, path):
    batch = v.get("batch", False)
    _need(batch, bool, f"{path}.batch", "'batch' is a boolean")
    return Parallel(_domain(v["parallel"], v.get("where"), f"{path}.parallel", f"{path}.where"),
                    _node(v["body"], f"{path}.body"), batch)


def _carries(v, key, path):
    m = v.get(key, {})
    _need(m, dict, f"{path}.{key}", f"'{key}' is an object name -> expression")
    out = {}
    for k, e in m.items():
        _name(k, f"{path}.{key}.{_key(k)}", "a carried value")
        out[k] = expr(e, f"{path}.{key}.{k}")
    return out


def _serial(v, path):
    return Serial(_domain(v["serial"], v.get("where"), f"{path}.serial", f"{path}.where"),
                  _node(v["body"], f"{path}.body"), _carries(v, "carry", path), _carries(v, "next", path))


def _pipeline(v, path):
    st = v["stages"]
    _need(st, list, f"{path}.stages", "'stages' is a list of region nodes")
    ii = v.get("ii", 1)
    _need(ii, int, f"{path}.ii", "'ii' is a positive integer")
    return Pipeline(_domain(v["pipeline"], v.get("where"), f"{path}.pipeline", f"{path}.where"),
                    tuple(_node(n, f"{path}.stages[{i}]") for i, n in enumerate(st)), ii)


def _tile_ref(v, path) -> TileRef:
    _keys(v, {"pe", "tile"}, path, ("pe", "tile"))
    return TileRef(expr(v["pe"], f"{path}.pe"), expr(v["tile"], f"{path}.tile"))


def _reduce(v, path):
    into, value = v["into"], v["value"]
    if isinstance(into, dict):
        into = _tile_ref(into, f"{path}.into")
        if not isinstance(value, dict):
            raise RegionError(f"{path}.value", "a tile reduction contributes a tile {pe, tile}")
        value = _tile_ref(value, f"{path}.value")
    else:
        into = _name(into, f"{path}.into", "'into' (the accumulator array A)")
        value = expr(value, f"{path}.value")
    group = v.get("group", [])
    _need(group, list, f"{path}.group", "'group' (g) is a list of index expressions")
    key = v.get("key")
    if key is not None:
        _need(key, list, f"{path}.key", "'key' is a list of index expressions")
        key = tuple(expr(e, f"{path}.key[{i}]") for i, e in enumerate(key))
    for k in ("combine", "policy", "lift", "seed_side"):
        if v.get(k) is not None:
            _need(v[k], str, f"{path}.{k}", f"'{k}' is a string")
    body = v.get("body")
    return Reduce(
        domain=_domain(v["reduce"], v.get("where"), f"{path}.reduce", f"{path}.where"),
        into=into, value=value, combine=v["combine"],
        group=tuple(expr(e, f"{path}.group[{i}]") for i, e in enumerate(group)),
        policy=v.get("policy", DEFAULT_POLICY), lift=v.get("lift"),
        mask=None if v.get("mask") is None else expr(v["mask"], f"{path}.mask"),
        key=key, body=None if body is None else _node(body, f"{path}.body"),
        seed_side=v.get("seed_side", "left"))


_BUILD = {"op": _op, "block": _block, "gpr": _gpr, "seq": _seq, "if": _if, "parallel": _parallel,
          "serial": _serial, "pipeline": _pipeline, "reduce": _reduce}


# ---------------------------------------------------------------------------------------------
# Top level

def _params(v, path) -> dict:
    _need(v, dict, path, "'params' is an object name -> integer or integer table")
    out = {}
    for k, val in v.items():
        p = f"{path}.{_key(k)}"
        _name(k, p, "a parameter name")
        if isinstance(val, int) and not isinstance(val, bool):
            out[k] = val
        elif isinstance(val, list):
            out[k] = _table(val, p)
        else:
            raise RegionError(p, f"a parameter is an integer or a (nested) list of integers, got {_type(val)}")
    return out


def _table(val, path):
    if not val:
        return ()
    if all(isinstance(x, list) for x in val):
        rows = tuple(_table(x, f"{path}[{i}]") for i, x in enumerate(val))
        if len({table_rank(r) for r in rows}) != 1 or len({len(r) for r in rows}) != 1:
            raise RegionError(path, "a parameter table must be rectangular")
        return rows
    for i, x in enumerate(val):
        if isinstance(x, bool) or not isinstance(x, int):
            raise RegionError(f"{path}[{i}]", f"a table entry is an integer, got {_type(x)}")
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
    raise RegionError(path, f"an element value is an integer, number, string or null, got {_type(x)}")


def _arrays(v, params, path) -> dict:
    _need(v, dict, path, "'arrays' is an object name -> {shape, init?, fill?}")
    out = {}
    for name, decl in v.items():
        p = f"{path}.{_key(name)}"
        _name(name, p, "an array name")
        _need(decl, dict, p, "an array declaration is an object {shape, init?, fill?}")
        _keys(decl, {"shape", "init", "fill"}, p, ("shape",))
        shape_v = decl["shape"]
        _need(shape_v, list, f"{p}.shape", "'shape' is a list of extents")
        shape = tuple(_param_int(expr(s, f"{p}.shape[{i}]"), params, f"{p}.shape[{i}]")
                      for i, s in enumerate(shape_v))
        for i, s in enumerate(shape):
            if s < 0:
                raise RegionError(f"{p}.shape[{i}]", f"an extent is nonnegative, got {s}")
        a = ArrayDecl(shape)
        if a.size > MAX_ELEMENTS:
            raise RegionError(f"{p}.shape", f"{a.size} elements exceed the limit {MAX_ELEMENTS}")
        if "init" in decl and "fill" in decl:
            raise RegionError(p, "give 'init' or 'fill', not both")
        if "fill" in decl:
            a.init = [_value(decl["fill"], f"{p}.fill")] * a.size
        elif "init" in decl:
            a.init = _flatten(decl["init"], shape, f"{p}.init")
        out[name] = a
    return out


def _flatten(v, shape, path) -> list:
    if not shape:
        return [_value(v, path)]
    if not isinstance(v, list) or len(v) != shape[0]:
        n = len(v) if isinstance(v, list) else _type(v)
        raise RegionError(path, f"expected a list of {shape[0]} (shape {list(shape)}), got {n}")
    out = []
    for i, x in enumerate(v):
        out.extend(_flatten(x, shape[1:], f"{path}[{i}]"))
    return out


def _functions(v, params, path) -> dict:
    _need(v, dict, path, "'functions' is an object name -> {args, body, kind?, laws}")
    out: dict[str, Function] = {}
    for name, d in v.items():
        p = f"{path}.{_key(name)}"
        _name(name, p, "a function name")
        if name in BUILTINS:
            raise RegionError(p, f"'{name}' is a builtin function")
        _need(d, dict, p, "a function is an object {args, body, kind?, associative?, commutative?, regroup?}")
        _keys(d, {"args", "body", "kind", "associative", "commutative", "regroup"}, p, ("args", "body"))
        args = d["args"]
        _need(args, list, f"{p}.args", "'args' is a list of names")
        args = tuple(_name(a, f"{p}.args[{i}]", "an argument") for i, a in enumerate(args))
        if len(set(args)) != len(args):
            raise RegionError(f"{p}.args", "argument names must be distinct")
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
        if kind not in ("merge", "update", "rupdate", "map"):
            raise RegionError(f"{p}.kind", f"kind is merge, update, rupdate or map, got {shown(repr(kind))}")
        if kind != "map" and len(args) != 2:
            raise RegionError(f"{p}.kind", f"a {kind} takes two arguments")
        laws = {}
        for law in ("associative", "commutative", "regroup"):
            val = d.get(law, False)
            _need(val, bool, f"{p}.{law}", f"'{law}' is a boolean")
            laws[law] = val
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


def load(doc: Any, source: str | None = None, max_code: int | None = DEFAULT_MAX_CODE) -> Program:
    """A Program from parsed JSON (a dict), checked; RegionError on anything malformed, a
    BudgetError before parsing when its code exceeds `max_code` characters (None: no limit)."""
    _need(doc, dict, "$", "a region program is a JSON object")
    check_code_size(doc, max_code)
    _keys(doc, _TOP_KEYS, "$", ("body",))
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
