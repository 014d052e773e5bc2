"""Scans (seed 002: "A scan also exposes prefix results and cannot be replaced by a final-result
reduction"): the construct, its reference prefix results, realizations checked per prefix, and the
plan checker's tree scans.  Expected values are computed here with itertools.accumulate and plain
Python arithmetic, never by the code under test."""
import itertools
import json

import pytest

from emulator.calculus import RegionError, ReductionPolicyError, RegionRuntimeError, dump, load, loads, run
from emulator.calculus import builder as B
from emulator.calculus import reduction as R
from emulator.calculus.budget import static_cost
from emulator.calculus.functions import BUILTINS
from emulator.calculus.plan import MAX_SCAN_LEAVES, Plan, Step, check_plan, scan_trees, source_events
from plan_events import ordinals, stages

X = [1, 2, 3, 4]


def arrays(x=X, fill=None):
    return {"x": B.array([len(x)], init=list(x)), "y": B.array([len(x)], fill=fill)}


def scan(x=X, **kw):
    return run(B.program(B.scan([("i", len(x))], "y", "x[i]", kw.pop("combine", "add"), **kw), arrays=arrays(x))).arrays["y"]


def test_the_issue_examples():
    assert scan() == list(itertools.accumulate(X)) == [1, 3, 6, 10]
    assert scan(exclusive=True, seed=0) == [0, 1, 3, 6]
    assert scan(seed=100) == [101, 103, 106, 110]
    words = list("abcd")
    assert scan(words, combine="concat", policy="fold_left") == ["a", "ab", "abc", "abcd"]   # source order
    assert scan(words, combine="concat", policy="ordered_tree", exclusive=True, seed="'>'") == [">", ">a", ">ab", ">abc"]


def test_fold_right_folds_each_prefix_with_the_seed_on_the_right():
    words = list("abcd")
    want = ["".join(words[:k + 1]) + "S" for k in range(4)]       # a (b (c S)) for concat
    assert scan(words, combine="concat", policy="fold_right", seed="'S'") == want
    assert scan(words, combine="concat", policy="fold_right", seed="'S'", exclusive=True) == \
        ["S"] + want[:3]


def test_a_segmented_scan_per_group_and_inactive_coordinates_keep_their_value():
    p = B.program(B.scan([("m", 2), ("k", 3)], "y", "x[m, k]", "mul", group=["m"], where="k != 1"),
                  arrays={"x": B.array([2, 3], init=[[2, 3, 5], [7, 11, 13]]), "y": B.array([2, 3], fill=-1)})
    assert run(p, validate=True).array("y") == [[2, -1, 10], [7, -1, 91]]


def test_float_prefixes_under_the_default_policy_and_admitted_realizations():
    xs = [1e16, 1.0, 1.0, 1.0, 1e16]
    p = B.program(B.scan([("i", 5)], "y", "x[i]", "fadd", seed=0.0),
                  arrays={"x": B.array([5], init=xs), "y": B.array([5])})
    chain = list(itertools.accumulate(xs, initial=0.0))[1:]
    assert run(p).arrays["y"] == chain                       # the reference: the left update chain
    # a Blelloch realization evaluated here on Python floats is admitted prefix by prefix
    f = BUILTINS["fadd"]

    def value(t, seed, fiber):
        return seed if t == "seed" else fiber[t] if isinstance(t, int) else value(t[0], seed, fiber) + value(t[1], seed, fiber)
    blelloch = lambda node, f, seed, fiber, lift: [value(t, seed, fiber) for t in scan_trees("blelloch", len(fiber), True, False)]  # noqa: E731
    got = run(p, validate=True, realize=blelloch).arrays["y"]
    assert got != chain and got[3] == ((0.0 + 1e16) + (1.0 + 1.0)) + 1.0 != chain[3]
    with pytest.raises(RegionRuntimeError, match="prefix result 2"):
        run(p, validate=True, realize=lambda node, f, seed, fiber, lift: chain[:2] + [7.0] + chain[3:])
    assert R.scan_admits("unordered_tree", f, 0.0, xs, got) is None


@pytest.mark.parametrize("body,path,why", [
    ({"scan": [["i", 4]], "into": "y", "value": "x[i]", "combine": "add", "exclusive": True}, "$.body.seed",
     "an exclusive scan needs a seed"),
    ({"scan": [["i", 4]], "into": "y", "value": "x[i]", "combine": "sub", "policy": "fold_left"}, "$.body.seed",
     "its prefixes need a seed state"),
    ({"scan": [["i", 2], ["j", 2]], "into": "y", "value": "x[i]", "combine": "add"}, "$.body.into",
     "'y' has rank 1, the scan domain 2 axes"),
    ({"scan": [["i", 4]], "into": "y", "value": "x[i]", "combine": "add", "exclusive": 1}, "$.body.exclusive",
     "'exclusive' is a boolean, got integer"),
    ({"scan": [["i", 4]], "into": "y", "value": "x[i]", "combine": "add", "group": ["x[i]"]}, "$.body.group[0]",
     "must be a pure index expression"),
    ({"scan": [["i", 4]], "into": "y", "value": "x[i]", "combine": "add", "mask": "i > 0"}, "$.body.mask",
     "unknown key"),
])
def test_malformed_scans_are_one_line_with_a_path(body, path, why):
    with pytest.raises(RegionError) as e:
        loads(json.dumps({"arrays": {"x": {"shape": [4], "fill": 1}, "y": {"shape": [4]}}, "body": body}))
    assert e.value.path == path and why in e.value.why, str(e.value)


def test_a_tree_policy_needs_a_compatible_merge():
    with pytest.raises(ReductionPolicyError, match="not declared commutative"):
        B.program(B.scan([("i", 4)], "y", "x[i]", "concat"), arrays=arrays(list("abcd")))


def test_dump_and_load_round_trip():
    p = B.program(B.scan([("i", 4)], "y", "t", "add", exclusive=True, seed="x[0]", body=B.op("t = x[i] * 2"),
                         group=["i // 2"], where="i != 5"), arrays=arrays())
    again = load(json.loads(json.dumps(dump(p))))
    assert dump(again) == dump(p) and run(again).arrays == run(p).arrays == run(p).arrays
    assert run(p).arrays["y"] == [1, 3, 1, 7]         # groups {0, 1} and {2, 3}, seed x[0] = 1


def test_a_fold_right_scan_is_priced_quadratically():
    def cost(n, policy):
        return static_cost(B.program(B.scan([("i", n)], "y", "x[i]", "concat", policy=policy, seed="''"),
                                     arrays={"x": B.array([n], fill="a"), "y": B.array([n])}))
    assert cost(200, "fold_left") < 2 * cost(100, "fold_left") + 10
    assert cost(200, "fold_right") > 3 * cost(100, "fold_right")


# ---- the plan checker -----------------------------------------------------------------------

def scan_program(n=6, combine="concat", policy="ordered_tree", seed="'S'", exclusive=False):
    vals = [str(k) for k in range(n)] if combine == "concat" else [float(k) + 0.5 for k in range(n)]
    return B.program(B.seq(B.scan([("i", n)], "y", "x[i]", combine, policy=policy, seed=seed, exclusive=exclusive),
                           B.op("z[0] = y[2]")),
                     arrays={"x": B.array([n], init=vals), "y": B.array([n]), "z": B.array([1])})


def scan_plan(prog, realization, kind="scan"):
    evs = source_events(prog)
    contrib = ordinals(evs, "contribution")
    res = ordinals(evs, "result")
    seed = [Step("serial", [e.ordinal]) for e in evs if e.kind == "seed"]
    rest = [Step("serial", [e.ordinal]) for e in evs if e.kind not in ("contribution", "result", "seed")]
    return Plan(seed + [Step("parallel", contrib), Step(kind, res, tree=realization)] + rest)


@pytest.mark.parametrize("policy,combine,realization,ok", [
    ("ordered_tree", "concat", "serial", True),
    ("ordered_tree", "concat", "blelloch", True),
    ("ordered_tree", "concat", "hillis_steele", True),
    ("fold_left", "concat", "blelloch", True),          # exactly associative: regrouping is exact
    ("fold_left", "fadd", "serial", True),
    ("fold_left", "fadd", "blelloch", False),           # binary64 add is not associative
    ("fold_left", "fadd", "hillis_steele", False),
    ("unordered_tree", "fadd", "blelloch", True),       # the default policy authorizes the regrouping
    ("fold_right", "concat", "serial", False),          # the seed belongs on the right
])
def test_a_tree_scan_is_admitted_only_under_the_merge_laws(policy, combine, realization, ok):
    prog = scan_program(combine=combine, policy=policy, seed="'S'" if combine == "concat" else 0.0)
    v = check_plan(prog, scan_plan(prog, realization))
    assert bool(v) == ok, v
    if not ok:
        assert v.obligation == "scan realization" and "prefix result" in v.detail


def test_the_named_realizations_compute_every_prefix():
    """Evaluated here with integer + and string concatenation: each prefix tree yields the prefix."""
    def ev(t, xs):
        return xs[t] if not isinstance(t, list) else ev(t[0], xs) + ev(t[1], xs)
    for n in range(1, 20):
        xs = [3 ** k for k in range(n)]
        for real in ("serial", "blelloch", "hillis_steele"):
            assert [ev(t, xs) for t in scan_trees(real, n, False, False)] == list(itertools.accumulate(xs))
            words = ["S"] + [chr(97 + k) for k in range(n)]
            got = [ev(t, {"seed": "S", **{k: words[k + 1] for k in range(n)}}) for t in scan_trees(real, n, True, True)]
            assert got == ["".join(words[:k + 1]) for k in range(n)]


def test_a_plan_replacing_a_scan_by_a_final_result_reduction_is_rejected():
    prog = scan_program()
    v = check_plan(prog, scan_plan(prog, ["seed", [[0, 1], [2, [3, [4, 5]]]]], kind="merge"))
    assert v.obligation == "prefix results" and "final-result reduction" in v.detail


def test_explicit_per_prefix_trees_and_their_accounting():
    prog = scan_program(n=3, exclusive=True)
    assert check_plan(prog, scan_plan(prog, ["seed", ["seed", 0], [["seed", 0], 1]]))
    v = check_plan(prog, scan_plan(prog, ["seed", ["seed", 0], ["seed", 0]]))
    assert v.obligation == "scan realization" and "prefix result 2" in v.detail and "contribution 1 is omitted" in v.detail
    v = check_plan(prog, scan_plan(prog, ["seed", ["seed", 0]]))
    assert v.obligation == "scan realization" and "2 prefix tree(s) for 3 prefix results" in v.detail
    v = check_plan(prog, scan_plan(prog, "bogus"))
    assert v.obligation == "scan realization" and "none of serial, blelloch, hillis_steele" in v.detail


def test_the_consumer_of_a_prefix_result_waits_for_the_scan():
    prog = scan_program()
    evs = source_events(prog)
    contrib, res, use = stages(evs)
    seed = ordinals(evs, "seed")
    v = check_plan(prog, Plan([Step("serial", seed), Step("parallel", contrib), Step("serial", use),
                               Step("scan", res, tree="serial")]))
    assert v.obligation == "dependences preserved" and "#result" in v.detail and "y[2]" in v.detail


def test_large_named_realizations_are_decided_by_the_laws():
    n = 400
    assert (n + 1) * n // 2 > MAX_SCAN_LEAVES
    for policy, combine, ok in (("ordered_tree", "concat", True), ("fold_left", "fadd", False)):
        prog = scan_program(n=n, combine=combine, policy=policy, seed="'S'" if combine == "concat" else 0.0)
        assert bool(check_plan(prog, scan_plan(prog, "blelloch"))) == ok
