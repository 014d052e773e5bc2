"""Every evaluation of a region program is bounded in time (docs/regions.md, "Budgets"): a program
whose static cost exceeds the budget is refused before it runs, with one line saying how to raise
the budget, and a wall-clock deadline stops what the static bound cannot see.  The hostile
programs below once ran for minutes (a 100,000-op seq was quadratic, nested serial loops ran 48 s
before the step budget fired, functions calling the previous one twice were exponential)."""
import json

import pytest

from emulator.calculus import RegionError, RegionRuntimeError, loads, run
from emulator.calculus import builder as B
from emulator.calculus.budget import (BLOCK_COST, DEFAULT_MAX_COST, BudgetError, check_budget,
                                      static_cost)
from emulator.calculus.budget import DEFAULT_MAX_CODE as MAX_CODE_DEFAULT
from emulator.calculus.effects import events
from emulator.calculus.expr import Const, Stmt, Var
from emulator.calculus.program import Op, Program, Seq, TileOp, check
from emulator.cli import main

BLOCK = "BSTART.VEC TADD, FP32\n B.IOT t1@1, t2@1 -> t3@1\n B.DIM LB0=16, LB1=4"
X = {"x": {"shape": [1], "init": [0]}}


def refused(doc_or_program, **kw) -> BudgetError:
    p = loads(json.dumps(doc_or_program)) if isinstance(doc_or_program, dict) else doc_or_program
    with pytest.raises(BudgetError) as info:
        run(p, validate=True, **kw)
    msg = str(info.value)
    assert "\n" not in msg and "exceeds the budget" in msg and "--max-cost" in msg and "max_cost=" in msg
    return info.value


def test_nested_serial_loops_1024_by_8192_are_refused_before_running():
    doc = {"arrays": X, "body": {"serial": [["i", 1024]], "body": {"serial": [["j", 8192]],
                                                                    "body": {"op": "x[0] = x[0] + 1"}}}}
    exc = refused(doc)
    assert exc.path == "$.body"            # the outer loop: the inner one alone is within budget


def test_functions_calling_the_previous_one_twice_30_deep_are_priced_not_evaluated():
    fs = {"f0": {"args": ["a"], "body": "a + 1"}}
    for k in range(1, 31):
        fs[f"f{k}"] = {"args": ["a"], "body": f"f{k - 1}(a) + f{k - 1}(a)"}
    doc = {"arrays": X, "functions": fs, "body": {"seq": [{"op": "x[0] = 1"}, {"op": "x[0] = f30(1)"}]}}
    p = loads(json.dumps(doc))
    assert static_cost(p) > 1 << 31                 # 2^31 calls, counted once per function
    assert refused(p).path == "$.body.seq[1]"       # the op that makes the call
    # ten levels deep is cheap and runs: 2^10 * 2 = 2048
    doc["body"]["seq"][1]["op"] = "x[0] = f10(1)"
    assert run(loads(json.dumps(doc))).array("x") == [2048]


def test_two_to_the_twenty_block_leaves_are_refused_before_any_block_runs():
    doc = {"body": {"parallel": [["pe", 1 << 20]], "body": {"block": BLOCK}}}
    assert refused(doc).path == "$.body"
    # leaves written out one by one: a seq of 2^16 tile-block nodes (built directly, as a JSON
    # file of them would be 4 MB)
    leaf = loads(json.dumps({"body": {"block": BLOCK}})).body
    p = Program(Seq(tuple(TileOp(block=leaf.block) for _ in range(1 << 16))))
    assert static_cost(p) > (1 << 16) * BLOCK_COST
    assert refused(p).path == "$.body"


def test_a_seq_of_100000_ops_is_checked_and_priced_in_linear_time_and_runs_within_budget():
    n = 100_000
    stmts = [Stmt(Var(f"t{i}"), Const(i), f"t{i} = {i}") for i in range(n)]
    p = check(Program(Seq(tuple(Op((s,)) for s in stmts))))      # every op defines a new local
    cost = static_cost(p)
    assert cost <= DEFAULT_MAX_COST and cost < 10 * n
    small = check(Program(Seq(tuple(Op((s,)) for s in stmts[:20_000]))))
    assert run(small).scope["t19999"] == 19999


def test_a_loop_costs_its_instances_times_the_work_of_one():
    def cost(n):
        return static_cost(B.program(B.serial([("i", n)], B.op("x[0] = x[0] + i")), arrays={"x": B.array([1], init=[0])}))
    assert cost(2000) - 1 == 2 * (cost(1000) - 1)


def test_domain_sizes_are_bounded_from_parameters_tables_and_enclosing_coordinates():
    def prog(inner_hi, **params):
        return B.program(B.parallel([("i", "N")], B.parallel([("j", inner_hi)], B.op("x[0] = 1"))),
                         params={"N": 1000, **params}, arrays={"x": B.array([1], init=[0])})
    square, triangle = static_cost(prog("N")), static_cost(prog("i"))
    assert triangle <= square < 100 * 1000 * 1000      # j < i is bounded by N - 1, not by 2^20
    table = static_cost(prog("T[i % 3]", T=[5, 7, 9]))
    assert table < square // 50                          # a table ranges over its entries (<= 9)


def test_the_budget_and_the_deadline_can_be_raised_or_lowered():
    doc = {"arrays": X, "body": {"serial": [["i", 100]], "body": {"op": "x[0] = x[0] + 1"}}}
    p = loads(json.dumps(doc))
    refused(p, max_cost=100)
    assert run(p, max_cost=check_budget(p)).array("x") == [100]
    slow = loads(json.dumps({"arrays": X, "body": {"serial": [["i", 1 << 20]], "body": {"op": "x[0] = x[0] + 1"}}}))
    with pytest.raises(RegionRuntimeError) as info:
        run(slow, max_cost=None, deadline=0.05)
    msg = str(info.value)
    assert "\n" not in msg and "deadline" in msg and "--deadline" in msg


def test_the_static_effect_walk_is_budgeted_too():
    doc = {"arrays": X, "body": {"serial": [["i", 1024]], "body": {"serial": [["j", 8192]],
                                                                    "body": {"op": "x[0] = x[0] + 1"}}}}
    with pytest.raises(RegionError) as info:
        events(loads(json.dumps(doc)))
    assert "exceeds the budget" in str(info.value)


def test_the_cli_refuses_in_one_line_and_says_how_to_raise_the_budget(tmp_path, capsys):
    path = tmp_path / "nested.regions.json"
    path.write_text(json.dumps({"arrays": X, "body": {"serial": [["i", 1024]], "body": {
        "serial": [["j", 8192]], "body": {"op": "x[0] = x[0] + 1"}}}}))
    assert main(["run", str(path)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "exceeds the budget" in err and "--max-cost" in err
    assert main(["run", str(path), "--max-cost", str(1 << 40), "--deadline", "0.2"]) == 1
    err = capsys.readouterr().err.strip()
    assert "deadline" in err and len(err.splitlines()) == 1


def test_a_long_pipeline_is_validated_in_time_linear_in_its_iterations():
    # Stage s of iteration n issues at n*ii + s, so only the last (stages - 1) // ii iterations can
    # overlap the current one; the hazard check once compared every pair of iterations.
    n = 20_000
    p = B.program(B.pipeline([("i", n)], [B.op("x[i] = i"), B.op("y[i] = x[i] + 1")]),
                  arrays={"x": B.array([n]), "y": B.array([n])})
    assert run(p, validate=True).array("y")[-1] == n
    clash = B.program(B.pipeline([("i", 1, n)], [B.op("x[i] = y[i - 1]"), B.op("y[i] = x[i]")]),
                      arrays={"x": B.array([n]), "y": B.array([n], fill=0)})
    with pytest.raises(RegionRuntimeError, match="issues at time"):
        run(clash, validate=True)


def test_a_program_text_beyond_the_size_limit_is_refused_before_parsing():
    from emulator.calculus.loader import MAX_TEXT
    doc = json.dumps({"body": {"seq": [{"op": "x[0] = 1"}]}, "arrays": X})
    with pytest.raises(RegionError, match=f"at most {MAX_TEXT}"):
        loads(doc + " " * MAX_TEXT)


def test_more_code_than_the_code_budget_is_refused_before_any_of_it_is_parsed():
    n = MAX_CODE_DEFAULT // len("x[0] = x[0] + 1") + 1
    doc = {"arrays": X, "body": {"seq": [{"op": "x[0] = x[0] + 1"}] * n}}
    with pytest.raises(BudgetError, match="characters of code"):
        loads(json.dumps(doc))
    data = {"arrays": {"y": {"shape": [1 << 18], "init": [1] * (1 << 18)}}, "body": {"op": "y[0] = 2"}}
    assert run(loads(json.dumps(data))).arrays["y"][:2] == [2, 1]     # data is not code


def seq_program(code_chars: int) -> dict:
    """A `seq` of identical ops holding just over `code_chars` characters of code."""
    op = "x[0] = x[0] + 1"
    return {"arrays": X, "body": {"seq": [{"op": op}] * (code_chars // len(op) + 1)}}


def test_the_code_budget_is_a_parameter_and_a_flag(tmp_path, capsys):
    doc = seq_program(300)
    with pytest.raises(BudgetError, match="--max-code N, or max_code=N"):
        loads(json.dumps(doc), max_code=300)
    assert run(loads(json.dumps(doc), max_code=400)).arrays["x"] == [21]
    path = tmp_path / "p.regions.json"
    path.write_text(json.dumps(doc))
    assert main(["run", str(path), "--max-code", "300"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "code budget of 300" in err and "--max-code N" in err
    assert main(["run", str(path), "--max-code", "400", "-q"]) == 0
    with pytest.raises(SystemExit) as info:             # a usage error, like --max-cost 0
        main(["run", str(path), "--max-code", "0"])
    assert info.value.code == 2 and "--max-code" in capsys.readouterr().err


def test_a_seq_of_more_than_the_default_code_budget_is_refused_in_one_line(tmp_path, capsys):
    path = tmp_path / "big.regions.json"
    path.write_text(json.dumps(seq_program(MAX_CODE_DEFAULT)))
    assert main(["run", str(path)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"code budget of {MAX_CODE_DEFAULT}" in err and "--max-code N" in err


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "1e6", "abc", "", "9" * 5000])
def test_a_bad_max_code_is_one_usage_line_naming_the_flag(tmp_path, capsys, value):
    path = tmp_path / "p.regions.json"
    path.write_text(json.dumps(seq_program(10)))
    with pytest.raises(SystemExit) as info:
        main(["run", str(path), "--max-code", value])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert info.value.code == 2 and "argument --max-code: expected a positive integer" in err


@pytest.mark.parametrize("flag, value", [("--max-code", "100"), ("--max-cost", "100"), ("--deadline", "1")])
def test_a_region_budget_given_with_a_block_stream_is_a_usage_error_not_ignored(tmp_path, capsys, flag, value):
    """The budgets bound region programs only: given with a .tbs stream they would bound nothing,
    so the run is refused in one line (exit 2) before the stream is read, nothing written."""
    stream, out = tmp_path / "s.tbs", tmp_path / "out.arrow"
    stream.write_bytes(b"")
    assert main(["run", str(stream), flag, value, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag in err and "region programs" in err
    assert not out.exists()


@pytest.mark.slow
def test_a_seq_of_more_than_the_default_code_budget_runs_when_the_budget_is_raised(tmp_path, capsys):
    """Loading and sequencing are linear: 69,906 ops (1.19 Mi characters of code) load and run in
    a few seconds once --max-code allows them."""
    doc = seq_program(MAX_CODE_DEFAULT)
    path = tmp_path / "big.regions.json"
    path.write_text(json.dumps(doc))
    assert main(["run", str(path), "--max-code", str(2 * MAX_CODE_DEFAULT)]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0]) == {"x": [len(doc["body"]["seq"])]}


def test_nesting_too_deep_to_price_is_a_region_error_not_a_traceback():
    node = {"op": "x[0] = 1"}
    for k in range(480):
        node = {"parallel": [[f"i{k}", 1]], "body": node}
    with pytest.raises(RegionError):
        run(loads(json.dumps({"arrays": X, "body": node})))
