"""Region-program load cost (docs/regions.md, "Expressions"): parsing the statements and
expressions of an op with Python's `ast` (emulator.calculus.expr) against the recursive-descent
parser it replaced (tests/calculus/legacy_expr.py), interleaved in the same run, and loading a
10,000-op program end to end.

    python -m pytest benchmarks/bench_calculus.py -q --benchmark-only
    python benchmarks/bench_calculus.py            # the same numbers, printed

extra_info: us_per_op for both parsers and their ratio (old / new, > 1 means faster now).
"""
import importlib.util
import json
import pathlib
import time
import timeit

from emulator.calculus import loads
from emulator.calculus.expr import parse_expr, parse_stmt

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
        new_us.append(per_call_us(parse_stmt, parse_expr))
        old_us.append(per_call_us(old.parse_stmt, old.parse_expr))
    doc = json.dumps({"params": {"N": 4}, "arrays": {"x": {"shape": [1], "init": [0]}},
                      "body": {"seq": [{"op": "x[0] = x[0] + 1"}] * 10_000}})
    t = time.process_time()
    loads(doc)
    load_us = (time.process_time() - t) / 10_000 * 1e6
    return {"new_us_per_parse": min(new_us), "old_us_per_parse": min(old_us),
            "ratio": min(old_us) / min(new_us), "load_us_per_op": load_us}


def test_expression_parse_cost(benchmark):
    info = measure()
    benchmark(lambda: parse_stmt(OPS[1]))
    benchmark.extra_info.update(info)


if __name__ == "__main__":
    for k, v in measure().items():
        print(f"{k}: {v:.2f}")
