"""The region text form (docs/regions.md): malformed programs get a JSON path and a reason;
well-formed ones round-trip through dump/load; the Python builder produces the same programs."""
import json
import pathlib

import pytest

from emulator.calculus import RegionError, ReductionPolicyError, dump, load, loads, run
from emulator.calculus import builder as B

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARR = {"y": {"shape": [2]}, "x": {"shape": [2], "init": [1, 2]}}


def prog(body, arrays=ARR, **extra):
    return json.dumps({"arrays": arrays, "body": body, **extra})


MALFORMED = [
    # (program text, JSON path, reason fragment)
    ("[1]", "$", "a region program is a JSON object"),
    ('{"body": 3', "$", "not JSON"),
    ('{"format": "v0", "body": {"op": "y[0] = 1"}}', "$.format", "unsupported format"),
    ('{"bogus": 1, "body": {"op": "y[0] = 1"}}', "$.bogus", "unknown key"),
    ('{"arrays": {}}', "$", "missing required key 'body'"),
    (prog({"op": "y[0] = 1", "block": "x"}), "$.body", "exactly one of"),
    (prog({"op": "y[0 = 1"}), "$.body.op", "column 5: expected ']'"),
    (prog({"op": "y[0] == 1"}), "$.body.op", "expected '='"),
    (prog({"op": "z[0] = 1"}), "$.body.op", "'z[0]' names no array"),
    (prog({"op": "y[0, 1] = 1"}), "$.body.op", "has 2 index(es); 'y' has rank 1"),
    (prog({"op": ["t = 1", "t = 2"]}), "$.body.op[1]", "already bound"),
    (prog({"seq": [{"op": "y[0] = 1"}, {"parallel": [["i"]], "body": {"op": "y[i] = 1"}}]}),
     "$.body.seq[1].parallel[0]", "an axis is [name, hi] or [name, lo, hi]"),
    (prog({"parallel": [["i", 2]], "bdy": {}}), "$.body.bdy", "unknown key"),
    (prog({"parallel": [["i", 2]]}), "$.body", "missing required key 'body'"),
    (prog({"parallel": [["i", 2]], "body": {"op": "y[j] = 1"}}), "$.body.body.op", "unknown name 'j'"),
    (prog({"parallel": [["i", "x[0]"]], "body": {"op": "y[i] = 1"}}), "$.body.parallel[0]",
     "must be a pure index expression"),
    (prog({"parallel": [["i", 2], ["i", 2]], "body": {"op": "y[i] = 1"}}), "$.body.parallel[1][0]",
     "appears twice"),
    (prog({"parallel": [["i", 2]], "body": {"parallel": [["i", 2]], "body": {"op": "y[i] = 1"}}}),
     "$.body.body.parallel[0]", "shadows"),
    (prog({"parallel": [["i", 2]], "where": "i <", "body": {"op": "y[i] = 1"}}), "$.body.where",
     "expected a value"),
    (prog({"op": "y[0] = foo(1)"}), "$.body.op", "unknown function 'foo'"),
    (prog({"op": "y[0] = fadd(1.0)"}), "$.body.op", "fadd takes 2 argument(s)"),
    (prog({"serial": [["t", 2]], "next": {"a": "1"}, "body": {"op": "y[0] = 1"}}), "$.body.next.a",
     "not a carried value"),
    (prog({"serial": [["t", 2]], "carry": {"a": 0}, "body": {"op": "a = 1"}}), "$.body.body.op",
     "already bound"),
    (prog({"pipeline": [["t", 2]], "stages": []}), "$.body.stages", "at least one stage"),
    (prog({"pipeline": [["t", 2]], "ii": 0, "stages": [{"op": "y[0] = 1"}]}), "$.body.ii", "positive"),
    (prog({"reduce": [["k", 2]], "into": "y", "value": "k", "combine": "add"}), "$.body.group",
     "g(r) gives 0 coordinate(s)"),
    (prog({"reduce": [["k", 2]], "into": "y", "group": [0], "value": "k", "combine": "add",
           "policy": "random"}), "$.body.policy", "unknown policy"),
    (prog({"reduce": [["k", 2]], "into": "q", "group": [0], "value": "k", "combine": "add"}),
     "$.body.into", "'q' names no array"),
    (prog({"block": "BSTART.VEC TADDD, FP32"}), "$.body.block", "unknown instruction 'TADDD'"),
    (prog({"op": "y[0] = 1"}, arrays={"y": {"shape": [2], "init": [1, 2, 3]}}), "$.arrays.y.init",
     "expected a list of 2"),
    (prog({"op": "y[0] = 1"}, arrays={"y": {"shape": [2], "init": [1, [2]]}}), "$.arrays.y.init[1]",
     "an element value is"),
    (prog({"op": "y[0] = 1"}, arrays={"y": {"shape": [-1]}}), "$.arrays.y.shape[0]", "nonnegative"),
    (prog({"op": "y[0] = 1"}, arrays={"y": {"shape": [1 << 30]}}), "$.arrays.y.shape", "exceed the limit"),
    (prog({"op": "y[0] = 1"}, params={"N": "4"}), "$.params.N", "a parameter is an integer"),
    (prog({"op": "y[0] = 1"}, functions={"f": {"args": ["a", "b"], "body": "a + c"}}),
     "$.functions.f.body", "unknown name 'c'"),
    (prog({"op": "y[0] = 1"}, functions={"add": {"args": ["a", "b"], "body": "a"}}),
     "$.functions.add", "builtin"),
    (prog({"op": "perm[0] = 1"}, params={"perm": [1, 0]}), "$.body.op", "read-only"),
]


@pytest.mark.parametrize("text,path,why", MALFORMED)
def test_malformed_programs_are_rejected_with_a_json_path_and_a_reason(text, path, why):
    with pytest.raises(RegionError) as e:
        loads(text)
    assert e.value.path == path, str(e.value)
    assert why in e.value.why, str(e.value)


def test_a_tree_policy_without_a_compatible_merge_is_diagnosed_at_load():
    # sub is an update (State x Elem), concat is not commutative: neither may be regrouped freely.
    for combine, hint in (("sub", "not a State x State merge"), ("concat", "not declared commutative")):
        with pytest.raises(ReductionPolicyError) as e:
            loads(prog({"reduce": [["k", 2]], "into": "y", "group": [0], "value": "k", "combine": combine}))
        assert e.value.path == "$.body.policy" and hint in e.value.why


def test_a_user_function_is_only_as_lawful_as_declared():
    fn = {"avg": {"args": ["a", "b"], "body": "(a + b) // 2", "commutative": True}}
    body = {"reduce": [["k", 2]], "into": "y", "group": [0], "value": "k", "combine": "avg"}
    with pytest.raises(ReductionPolicyError, match="not declared associative"):
        loads(prog(body, functions=fn))
    ok = loads(prog({**body, "policy": "fold_left"}, arrays={"y": {"shape": [1], "init": [0]}}, functions=fn))
    assert run(ok).arrays["y"] == [((0 + 0) // 2 + 1) // 2]


def test_dump_then_load_gives_the_same_program():
    doc = {
        "params": {"N": 3, "perm": [2, 0, 1]},
        "arrays": {"x": {"shape": [3], "init": [1.5, -0.0, 2.25]}, "y": {"shape": [3]},
                   "s": {"shape": [1], "init": [0.0]}},
        "functions": {"twice": {"args": ["a"], "body": "a + a", "kind": "map"}},
        "body": {"seq": [
            {"parallel": [["i", "N"]], "where": "i != 1", "body": {"op": "y[perm[i]] = twice(x[i])"}},
            {"if": "N > 2", "then": {"op": "y[1] = 0.5"}, "else": {"op": "y[1] = 1.5"}},
            {"serial": [["t", 0, 2]], "carry": {"a": 0}, "next": {"a": "a + t"}, "body": {"op": "u = a"}},
            {"reduce": [["k", "N"]], "into": "s", "group": [0], "value": "y[k]", "combine": "fadd",
             "mask": "k != 0"},
        ]},
    }
    p = load(doc)
    again = load(json.loads(json.dumps(dump(p))))
    assert dump(again) == dump(p)
    assert run(again).arrays == run(p).arrays


def test_the_builder_and_the_json_form_agree():
    built = B.program(
        B.seq(B.parallel([("i", "N")], B.op("tmp[i] = x[i] * 2")),
              B.parallel([("i", "N")], B.op("out[i] = tmp[i] + 1"))),
        params={"N": 4},
        arrays={"x": B.array([4], init=[1, 2, 3, 4]), "tmp": B.array([4]), "out": B.array([4])})
    text = loads(json.dumps({
        "params": {"N": 4},
        "arrays": {"x": {"shape": [4], "init": [1, 2, 3, 4]}, "tmp": {"shape": [4]}, "out": {"shape": [4]}},
        "body": {"seq": [{"parallel": [["i", "N"]], "body": {"op": "tmp[i] = x[i] * 2"}},
                         {"parallel": [["i", "N"]], "body": {"op": "out[i] = tmp[i] + 1"}}]}}))
    assert dump(built) == dump(text)
    assert run(built).array("out") == [3, 5, 7, 9]


def test_node_paths_name_the_json_position():
    p = B.program(B.seq(B.op("y[0] = 1"), B.parallel([("i", 2)], B.op("y[i] = 2"))), arrays={"y": B.array([2])})
    assert p.body.items[1].body.path == "$.body.seq[1].body"


@pytest.mark.parametrize("path", sorted((ROOT / "examples" / "regions").glob("*.regions.json")),
                         ids=lambda p: p.name)
def test_shipped_pure_examples_load(path):
    doc = json.loads(path.read_text())
    load(doc)
