"""Region-program load cost (docs/regions.md, "Expressions"): parsing the statements and
expressions of an op with Python's `ast` (emulator.calculus.expr) against the recursive-descent
parser it replaced (tests/calculus/legacy_expr.py), interleaved in the same run, and loading a
10,000-op program end to end, and its shape check alone: fastjsonschema (schema.validate's
fast check) against jsonschema node by node (its fallback, the check alone before).

    python -m pytest benchmarks/bench_calculus.py -q --benchmark-only
    python benchmarks/bench_calculus.py            # the same numbers, printed

extra_info: us_per_op for both parsers and their ratio (old / new, > 1 means faster now), the
load's us per op, and the shape check's us per op both ways.  The parse functions cache each
distinct text (emulator.calculus.expr.PARSE_CACHE), so the parser figures time the parse itself
(`_expr_tree`, `_stmt_tree`), and a second load, of 10,000 ops that are all different texts
(`x[0] = x[0] + k`), shows what a program pays that never repeats a text.
"""
import importlib.util
import json
import pathlib
import time
import timeit

from emulator.calculus import loads
from emulator.calculus.expr import _expr_tree, _stmt_tree
from emulator.calculus.schema import validate, validate_per_node

ROOT = pathlib.Path(__file__).resolve().parents[1]
OPS = ["x[0] = x[0] + 1", "tmp[i] = fadd(x[i], x[i])", "y[i, j] = a[i, k] * b[k, j] + c[(i + 1) % N, j]",
       "t = select(i < n and not (j >= m), x[i] << 2 | 1, -x[j] // 3)"]
EXPRS = ["i * 4 + j", "(q * b + r) % N", "i < N and j != 0"]


def _legacy():
    spec = importlib.util.spec_from_file_location("legacy_expr", ROOT / "tests" / "calculus" / "legacy_expr.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def per_call_us(stmt, expr, rounds=7, number=400) -> float:
    def once():
        for s in OPS:
            stmt(s)
        for e in EXPRS:
            expr(e)
    # CPU time of this process: the other jobs on a loaded box change wall time far more
    return min(timeit.repeat(once, number=number, repeat=rounds, timer=time.process_time)) / number / (len(OPS) + len(EXPRS)) * 1e6


def measure() -> dict:
    old = _legacy()
    new_us, old_us = [], []
    for _ in range(5):                          # interleaved: the load of the box hits both alike
        new_us.append(per_call_us(_stmt_tree, _expr_tree))
        old_us.append(per_call_us(old.parse_stmt, old.parse_expr))
    doc = json.dumps({"params": {"N": 4}, "arrays": {"x": {"shape": [1], "init": [0]}},
                      "body": {"seq": [{"op": "x[0] = x[0] + 1"}] * 10_000}})
    loads(doc)                                  # warm: the fast check compiles on first use
    load_us = min(_cpu_us(loads, doc) for _ in range(3))
    distinct = json.dumps({"params": {"N": 4}, "arrays": {"x": {"shape": [1], "init": [0]}},
                           "body": {"seq": [{"op": f"x[0] = x[0] + {k}"} for k in range(10_000)]}})
    distinct_us = min(_cpu_us(loads, distinct) for _ in range(3))
    parsed = json.loads(doc)
    fast_us, jsonschema_us = [], []
    for _ in range(3):                          # interleaved, as above
        fast_us.append(_cpu_us(validate, parsed))
        jsonschema_us.append(_cpu_us(validate_per_node, parsed))
    return {"new_us_per_parse": min(new_us), "old_us_per_parse": min(old_us),
            "ratio": min(old_us) / min(new_us), "load_us_per_op": load_us,
            "load_distinct_us_per_op": distinct_us,
            "shape_fast_us_per_op": min(fast_us), "shape_jsonschema_us_per_op": min(jsonschema_us)}


def _cpu_us(f, arg, ops=10_000) -> float:
    t = time.process_time()
    f(arg)
    return (time.process_time() - t) / ops * 1e6


def test_expression_parse_cost(benchmark):
    info = measure()
    benchmark(lambda: _stmt_tree(OPS[1]))
    benchmark.extra_info.update(info)


if __name__ == "__main__":
    for k, v in measure().items():
        print(f"{k}: {v:.2f}")
