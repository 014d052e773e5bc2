"""Untrusted programs: whatever the JSON, loading raises RegionError or succeeds, and running a
loaded program raises RegionRuntimeError (or BudgetError, a RegionError, before it runs) or
succeeds -- never another exception, never a hang."""
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator.calculus import RegionError, RegionRuntimeError, loads, run
from emulator.calculus import interp
from emulator.calculus.effects import events
from mutate import paths as _paths

KEYS = ["op", "seq", "if", "then", "else", "parallel", "serial", "pipeline", "reduce", "body", "where",
        "carry", "next", "stages", "ii", "into", "group", "value", "combine", "policy", "mask", "key",
        "lift", "gpr", "pe", "index", "block", "batch", "seed_side", "shape", "init", "fill", "args", "scan",
        "exclusive", "seed", "snapshot"]
SNIPPETS = ["x[i]", "y[0] = x[i] + 1", "i", "N", "i < 2", "a + b", "t = x[0]", "x[(i + 1) % 2] = i",
            "fadd", "add", "concat", "sub", "fold_left", "fold_right", "unordered_tree", "0", "y",
            "x[i] = 1.5", "t = t", "f64(i)", "2 << 5000", "a * a", "s + s", "[", "i //", "'a'"]
scalars = st.one_of(st.integers(-3, 5), st.sampled_from(SNIPPETS), st.booleans(), st.none(),
                    st.floats(allow_nan=False, width=32))
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)),
    max_leaves=25)

BASE = {"params": {"N": 2}, "arrays": {"x": {"shape": [2], "init": [1, 2]}, "y": {"shape": [2], "fill": 0}}}


def attempt(doc):
    try:
        p = loads(json.dumps(doc))
    except RegionError:
        return
    try:
        run(p, validate=True)
    except (RegionRuntimeError, RegionError):       # RegionError: the static budget refused it
        pass
    try:
        events(p)
    except RegionError:
        pass


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(json_values)
def test_random_bodies_only_raise_region_errors(body):
    attempt({**BASE, "body": body})


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.dictionaries(st.sampled_from(["params", "arrays", "functions", "body", "format"]), json_values,
                       max_size=5))
def test_random_documents_only_raise_region_errors(doc):
    attempt(doc)


SEEDS = [
    {**BASE, "body": {"parallel": [["i", "N"]], "snapshot": ["x"], "body": {"op": ["x[i] = x[(i + 1) % N]", "y[i] = x[i]"]}}},
    {**BASE, "body": {"seq": [{"parallel": [["i", "N"]], "body": {"op": "y[i] = x[i] * 2"}},
                              {"reduce": [["k", 2]], "into": "y", "group": [0], "value": "x[k]", "combine": "add",
                               "policy": "fold_left", "mask": "k > 0", "key": ["k"]}]}},
    {**BASE, "body": {"serial": [["t", 3]], "carry": {"a": 0, "b": 1}, "next": {"a": "b", "b": "a + b"},
                      "body": {"if": "t % 2 == 0", "then": {"op": "y[0] = a"}, "else": {"op": "y[1] = b"}}}},
    {**BASE, "body": {"pipeline": [["n", 2]], "ii": 1, "stages": [{"op": "t = x[n]"}, {"op": "y[n] = t + 1"}]}},
    {**BASE, "body": {"seq": [{"scan": [["k", 2]], "into": "y", "value": "x[k]", "combine": "add", "seed": 0,
                               "exclusive": True, "group": ["k // 2"]},
                              {"scan": [["k", 2]], "into": "y", "value": "t", "combine": "concat", "policy": "fold_right",
                               "body": {"op": "t = 'a'"}}]}},
    {**BASE, "functions": {"g": {"args": ["s", "r"], "body": "s * 2 + r", "kind": "update"}},
     "body": {"reduce": [["k", 2], ["l", 2]], "into": "y", "group": ["k"], "value": "x[l]", "combine": "g",
              "policy": "fold_left", "body": {"op": "u = x[k]"}}},
]


def _replace(doc, path, value):
    if not path:
        return value
    doc = json.loads(json.dumps(doc))
    cur = doc
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return doc


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_mutated_valid_programs_only_raise_region_errors(data):
    doc = data.draw(st.sampled_from(SEEDS))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(list(_paths(doc))))
        doc = _replace(doc, path, data.draw(json_values))
    attempt(doc)


def test_runaway_programs_stop():
    growth = {"arrays": {"y": {"shape": [1]}}, "body": {"serial": [["t", 100]], "carry": {"a": 2},
                                                          "next": {"a": "a * a"}, "body": {"op": "u = a"}}}
    try:
        run(loads(json.dumps(growth)))
        raise AssertionError("expected a bounded failure")
    except RegionRuntimeError as exc:
        assert "exceeds 4096 bits" in str(exc)
    nested = {"body": {"serial": [["i", 1 << 20]], "body": {"serial": [["j", 1 << 20]], "body": {"op": "u = i"}}}}
    p = loads(json.dumps(nested))
    it = interp.Interpreter(p)
    it.max_steps = 10_000
    try:
        it.exec(p.body, interp.Env(it, {}, {}, "$.body"))
        raise AssertionError("expected the step budget to stop the run")
    except RegionRuntimeError as exc:
        assert "node executions" in str(exc)
    deep = {"body": {"op": "y[0] = " + "(" * 5000 + "1" + ")" * 5000}, "arrays": {"y": {"shape": [1]}}}
    try:
        loads(json.dumps(deep))
    except RegionError as exc:
        assert "nested too deeply" in str(exc)
