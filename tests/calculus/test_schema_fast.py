"""The fast shape check (fastjsonschema over the schema in standard keywords) never changes a
verdict: for every document, `schema.validate` -- fast check, then jsonschema node by node for a
document it does not accept -- says exactly what the jsonschema check alone says (the same
RegionError, path and words, or nothing).  Checked on seeded random mutations of the shipped
programs (examples/regions) and of generated programs using every construct, and on programs
nested far deeper than Python's recursion limit (the compiled check gives up, the node-by-node
check decides)."""
from __future__ import annotations

import copy
import glob
import json
import pathlib
import random
import sys
from decimal import Decimal

import pytest

from emulator.calculus import load
from emulator.calculus.errors import RegionError
from emulator.calculus.schema import (CONSTRUCT_SCHEMAS, SCHEMA, _fast_accepts, _fast_block, _fast_program,
                                      validate, validate_block_mapping,
                                      standard, validate_block_mapping_per_node, validate_per_node)
from emulator.calculus.expr import RESERVED

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = [json.loads(pathlib.Path(p).read_text()) for p in sorted(glob.glob(str(ROOT / "examples/regions/*.json")))]
MAPPING = {"bstart": {"Mode": 0, "Function": 1, "DataType": 2}, "iot": [{"tile": 1, "PE_MASK": 1}],
           "dim": {"LB0": 16, "LB1": None}, "datr": None}

# one well-shaped node of each construct (`{}` marks where a child node goes)
LEAVES = [{"op": "x[0] = x[0] + 1"}, {"op": ["t = 1", "x[0] = t"], "reads": ["x[0]"], "writes": ["x[0]"], "name": "a"},
          {"block": "BSTART.VEC TADD, FP32\n B.IOT t1@1, t2@1 -> t3@1\n B.DIM LB0=16, LB1=4"},
          {"block": MAPPING, "name": None}, {"gpr": {"pe": 0, "index": "i", "value": 1.5}},
          {"seq": "BSTART.VEC TADD, FP32\n B.IOT t1@1, t2@1 -> t3@1\n B.DIM LB0=16, LB1=4"},
          {"reduce": [["i", 4]], "into": "x", "value": "x[i]", "combine": "add", "group": ["0"], "key": None},
          {"reduce": [["i", 0, 4]], "into": {"pe": 0, "tile": 1}, "value": {"pe": "i", "tile": 2}, "combine": "tadd",
           "policy": "serial", "mask": None, "seed_side": "left"},
          {"scan": [["i", "N"]], "into": "x", "value": "x[i]", "combine": "add", "exclusive": True, "seed": 0}]
INNER = [lambda c: {"seq": c}, lambda c: {"if": "N > 1", "then": c[0], "else": c[-1] if len(c) > 1 else None},
         lambda c: {"parallel": [["i", "N"]], "where": "i > 0", "body": c[0], "batch": False, "snapshot": ["x"]},
         lambda c: {"serial": [["k", 1, "N"]], "body": c[0], "carry": {"acc": 0}, "next": {"acc": "acc + 1"}},
         lambda c: {"pipeline": [["i", 8]], "stages": c, "ii": 1},
         lambda c: {"reduce": [["j", 2]], "into": "x", "value": "x[j]", "combine": "add", "body": c[0]},
         lambda c: {"scan": [["j", 2]], "into": "x", "value": "x[j]", "combine": "add", "body": c[0], "seed": None}]
HEAD = {"format": "tile-emu.regions/1", "params": {"N": 4, "T": [[1, 2], [3, 4]]},
        "arrays": {"x": {"shape": ["N"], "init": [0, 1, 2, 3]}, "y": {"shape": [2, 2], "fill": 0.5}},
        "functions": {"f": {"args": ["a", "b"], "body": "a + b", "kind": "merge", "associative": True}}}


def generated(rng: random.Random, depth: int = 0):
    if depth > 3 or rng.random() < 0.3:
        return copy.deepcopy(rng.choice(LEAVES))
    return rng.choice(INNER)([generated(rng, depth + 1) for _ in range(rng.randint(1, 3))])


def program(rng: random.Random) -> dict:
    if rng.random() < 0.4:
        return copy.deepcopy(rng.choice(EXAMPLES))
    return {**copy.deepcopy(HEAD), "body": generated(rng)}


# values a mutation puts in: every JSON type, near-miss names and numbers, Python values a
# builder might pass (tuple, Decimal), and pieces of other nodes
KEYS = sorted({k for s in CONSTRUCT_SCHEMAS.values() for k in s["properties"]} | set(SCHEMA["properties"])
              | {"do", "", "x y", "class"})
VALUES = [None, True, False, 0, 1, -1, 2.0, 1.5, "", "x", "i", "for", "None", "not", "1a", "a b", "x\n", "é",
          [], {}, ["i"], ["i", 4], ["i", 0, 4, 5], [["i", 4]], [["for", 4]], {"op": "x[0] = 1"}, {"op": 3},
          {"seq": []}, {"pe": 0, "tile": 1}, ("i", 4), Decimal(1), [1.0], {"x": 1}, {"1x": 1}, {"if": 1},
          sorted(RESERVED)[:2], "add", MAPPING, {"bstart": {}}, "merge", "map"]


def slots(doc):
    """(container, key) of every value in the document (iteratively: documents may be deep)."""
    out, todo = [], [doc]
    while todo:
        c = todo.pop()
        items = c.items() if isinstance(c, dict) else enumerate(c) if isinstance(c, list) else ()
        for k, v in items:
            out.append((c, k))
            todo.append(v)
    return out


def mutate(doc, rng: random.Random):
    for _ in range(rng.randint(1, 3)):
        places = slots(doc)
        if not places:
            return rng.choice(VALUES)
        c, k = rng.choice(places)
        what = rng.random()
        if what < 0.45:
            c[k] = copy.deepcopy(rng.choice(VALUES))
        elif what < 0.6 and isinstance(c, dict):
            del c[k]
        elif what < 0.75 and isinstance(c, dict):
            c[rng.choice(KEYS)] = copy.deepcopy(rng.choice(VALUES + [c[k]]))
        elif what < 0.85 and isinstance(c, dict):
            c[rng.choice(KEYS)] = c.pop(k)                  # a key renamed
        elif what < 0.92 and isinstance(c, list):
            c.insert(rng.randrange(len(c) + 1), copy.deepcopy(c[k]))
        else:
            c[k] = [c[k]] if rng.random() < 0.5 else {rng.choice(KEYS): c[k]}
    return doc


def verdict(check, doc):
    try:
        check(doc)
    except RegionError as exc:
        return (exc.path, str(exc))
    return None


def compare(seed: int, n: int):
    rng = random.Random(seed)
    accepted = refused = slow_accepted = 0
    for _ in range(n):
        doc = mutate(program(rng), rng)
        want = verdict(validate_per_node, doc)
        fast = _fast_accepts(_fast_program, doc)
        if fast:
            assert want is None, (doc, want)            # the fast check never accepts a refused document
        assert verdict(validate, doc) == want, doc
        accepted += fast
        refused += want is not None
        slow_accepted += (want is None) and not fast
    return accepted, refused, slow_accepted


@pytest.mark.parametrize("seed", range(4))
def test_fast_and_fallback_give_the_verdict_and_words_of_jsonschema_alone(seed):
    accepted, refused, slow_accepted = compare(seed, 100)
    # both sides are exercised: mutations the fast check accepts, and refusals worded by jsonschema
    assert accepted >= 10 and refused >= 30
    # the shipped and generated programs themselves all pass the fast check
    rng = random.Random(seed)
    for _ in range(20):
        assert _fast_accepts(_fast_program, program(rng))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 120))
def test_fast_and_fallback_verdicts_many_mutations(seed):
    compare(seed, 1000)


def test_block_mappings_fast_and_fallback_agree():
    rng = random.Random(7)
    accepted = 0
    for _ in range(300):
        m = mutate(copy.deepcopy(MAPPING), rng)
        want = verdict(lambda d: validate_block_mapping_per_node(d, "$.body.block"), m)
        fast = _fast_accepts(_fast_block, m)
        if fast:
            assert want is None, m
        assert verdict(lambda d: validate_block_mapping(d, "$.body.block"), m) == want, m
        accepted += fast
    assert accepted >= 10


def test_python_values_json_does_not_have_are_left_to_jsonschema():
    """A tuple is not a JSON array, Decimal and 1.0 are not JSON integers for jsonschema here:
    the fast check refuses them too (its own types would admit them), so the words stay."""
    for body in ({"parallel": (("i", 4),), "body": {"op": "x[0] = 1"}},
                 {"pipeline": [["i", 4]], "stages": [{"op": "x[0] = 1"}], "ii": 1.0},
                 {"pipeline": [["i", 4]], "stages": [{"op": "x[0] = 1"}], "ii": Decimal(1)},
                 {"pipeline": [["i", 4]], "stages": [{"op": "x[0] = 1"}], "ii": True}):
        doc = {"body": body}
        assert not _fast_accepts(_fast_program, doc)
        assert verdict(validate, doc) == verdict(validate_per_node, doc) is not None


def test_a_keyword_the_translation_does_not_know_stops_it_rather_than_being_dropped():
    with pytest.raises(ValueError, match="'minimum'"):
        standard({"type": "integer", "minimum": 1}, {})
    with pytest.raises(ValueError, match="string enums"):
        standard({"enum": [1, True]}, {})


def test_a_tile_reduction_with_an_expression_contribution_is_a_region_error():
    """Found by the mutations: the message's braces were read as a format field (a KeyError)."""
    doc = {"body": {"reduce": [["i", 4]], "into": {"pe": 0, "tile": 1}, "value": "x[i]", "combine": "tadd"}}
    assert verdict(validate, doc) == verdict(validate_per_node, doc) == (
        "$.body.value", "$.body.value: a tile reduction contributes a tile {pe, tile}")


DEPTH = max(20_000, 20 * sys.getrecursionlimit())


def nested(depth: int, leaf) -> dict:
    node = leaf
    for _ in range(depth):
        node = {"seq": [node]}
    return {"arrays": {"x": {"shape": [1]}}, "body": node}


def test_a_program_nested_past_the_recursion_limit_is_checked_by_the_node_by_node_validator():
    ok = nested(DEPTH, {"op": "x[0] = 1"})
    assert not _fast_accepts(_fast_program, ok)         # the compiled check gives up (RecursionError) ...
    assert verdict(validate, ok) is None                # ... and the document is still well shaped
    bad = nested(DEPTH, {"op": 3})
    assert verdict(validate, bad) == verdict(validate_per_node, bad) == (
        "$.body" + ".seq[0]" * DEPTH + ".op", f"{'$.body' + '.seq[0]' * DEPTH + '.op'}: "
        "'op' is a statement or a list of statements, got integer")
    with pytest.raises(RegionError, match="region nesting too deep"):     # as before: the builder recurses
        load(ok, max_code=None)


@pytest.mark.slow
def test_a_program_nested_100000_levels_deep():
    ok = nested(100_000, {"op": "x[0] = 1"})
    assert verdict(validate, ok) is None
    with pytest.raises(RegionError, match="region nesting too deep"):
        load(ok, max_code=None)
