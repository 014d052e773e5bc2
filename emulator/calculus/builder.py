"""Python builder for region programs.  Each helper returns the JSON form of a node, so a program
built here and one read from a file go through the same loader and the same checks:

    from emulator.calculus import builder as B
    prog = B.program(
        B.seq(B.parallel([("i", "N")], B.op("tmp[i] = x[i] * 2")),
              B.parallel([("i", "N")], B.op("out[i] = tmp[i] + 1"))),
        params={"N": 4},
        arrays={"x": B.array([4], init=[1, 2, 3, 4]), "tmp": B.array([4]), "out": B.array([4])})

Domains are lists of axes `(name, hi)` or `(name, lo, hi)`; bounds and expressions are strings
in the expression language (docs/regions.md) or numbers.
"""
from __future__ import annotations

from typing import Any

from .loader import load
from .program import DEFAULT_POLICY, Program


def _dom(axes) -> list:
    return [list(a) for a in axes]


def _opt(d: dict, **kw) -> dict:
    d.update({k: v for k, v in kw.items() if v is not None})
    return d


def op(*stmts: str, reads=(), writes=(), name: str | None = None) -> dict:
    return _opt({"op": list(stmts) if len(stmts) != 1 else stmts[0]},
                reads=list(reads) or None, writes=list(writes) or None, name=name)


def block(block_or_text, name: str | None = None) -> dict:
    """A tile-block leaf: an isa.Block, block text (with `${expr}` placeholders), or a mapping."""
    return _opt({"block": block_or_text}, name=name)


def blocks(text: str) -> dict:
    """A block stream as a sequence of tile-block leaves."""
    return {"seq": text}


def gpr(pe, index, value) -> dict:
    return {"gpr": {"pe": pe, "index": index, "value": value}}


def seq(*items) -> dict:
    return {"seq": list(items)}


def if_(pred, then: dict, else_: dict | None = None) -> dict:
    return _opt({"if": pred, "then": then}, **{"else": else_})


def parallel(domain, body: dict, where=None, batch: bool = False, snapshot=()) -> dict:
    return _opt({"parallel": _dom(domain), "body": body}, where=where, batch=batch or None,
                snapshot=list(snapshot) or None)


def serial(domain, body: dict, where=None, carry: dict | None = None, next: dict | None = None) -> dict:
    return _opt({"serial": _dom(domain), "body": body}, where=where, carry=carry, next=next)


def pipeline(domain, stages, where=None, ii: int = 1) -> dict:
    return _opt({"pipeline": _dom(domain), "stages": list(stages), "ii": ii}, where=where)


def reduce(domain, into, value, combine: str, group=(), policy: str = DEFAULT_POLICY, lift=None,
           mask=None, key=None, body: dict | None = None, where=None, seed_side: str = "left") -> dict:
    return _opt({"reduce": _dom(domain), "into": into, "group": list(group), "value": value,
                 "combine": combine, "policy": policy},
                lift=lift, mask=mask, key=None if key is None else list(key), body=body, where=where,
                seed_side=None if seed_side == "left" else seed_side)


def scan(domain, into: str, value, combine: str, group=(), policy: str = DEFAULT_POLICY,
         exclusive: bool = False, seed=None, body: dict | None = None, where=None) -> dict:
    """Every prefix result of `value` over `domain` into `into` (indexed by the domain's coordinates)."""
    return _opt({"scan": _dom(domain), "into": into, "group": list(group), "value": value, "combine": combine,
                 "policy": policy}, exclusive=exclusive or None, seed=seed, body=body, where=where)


def tile(pe, tile_id) -> dict:
    """A tile reference {pe, tile} for tile reductions."""
    return {"pe": pe, "tile": tile_id}


def array(shape, init=None, fill=None) -> dict:
    return _opt({"shape": list(shape)}, init=init, fill=fill)


def function(args, body: str, kind: str | None = None, associative: bool = False,
             commutative: bool = False, regroup: bool = False) -> dict:
    return _opt({"args": list(args), "body": body, "associative": associative,
                 "commutative": commutative, "regroup": regroup}, kind=kind)


def program(body: dict, params: dict | None = None, arrays: dict | None = None,
            functions: dict | None = None) -> Program:
    doc: dict[str, Any] = {"body": body}
    for k, v in (("params", params), ("arrays", arrays), ("functions", functions)):
        if v:
            doc[k] = v
    return load(doc)
