"""The mutation score (examples/rtl/mutate.py): Yosys's `mutate` pass plants faults in the lane
(examples/rtl/alu.v) and the default golden flow must kill every mutant that is not equivalent.

The refusals need no simulator (the default suite; the one that reads a design skips without
Yosys).  A bounded subset of mutants runs under `-m rtl`, the full default run under `-m slow`
(both need yosys, iverilog and the rtl extra, and fail -- never skip -- without them)."""
from __future__ import annotations

import json
import shutil

import pytest

from examples_loader import load_example

mutate = load_example("rtl", "mutate")


def refusal(capsys, *argv):
    status = mutate.main(list(argv))
    err = capsys.readouterr().err.strip().splitlines()
    return status, err


# ------------------------------------------------------------------ refusals (default suite)
@pytest.mark.parametrize("argv, words", [
    (["--dut", "no_such_dut"], "'no_such_dut': not a Verilog file nor a DUT in examples/rtl"),
    (["--dut", "alu", "--count", "0"], "--count must be positive"),
    (["--dut", "alu", "--jobs", "0"], "--jobs must be positive"),
    (["--dut", "alu", "--top", "1 bad"], "not a Verilog module name"),
    (["--dut", "alu", "--bench", "tb_none"], "no such cocotb test module"),
    (["--dut", "alu", "--count", "10", "--only", "3,10"], "--only '10': a mutant id from 0 to 9 (--count 10)"),
    (["--dut", "alu", "--only", "x"], "--only 'x': a mutant id"),
])
def test_bad_arguments_are_one_line_and_exit_2(capsys, argv, words):
    status, err = refusal(capsys, *argv)
    assert status == 2 and len(err) == 1 and words in err[0], err


def test_only_names_mutant_ids_of_the_listing():
    assert mutate.parse_only("57, 50,56,50", 100) == [50, 56, 57]
    assert mutate.parse_only(None, 100) is None


def test_a_stream_bench_verdict_kills_on_a_failing_stream_an_error_or_fewer_blocks():
    """tb_machine's protocol (failures, errors, blocks) beside tb_alu's (failure, lanes)."""
    control = {"streams": 4, "blocks": 30, "failures": [], "errors": []}
    assert mutate.judge(dict(control), control) == ("survived", "")
    verdict, why = mutate.judge(control | {"failures": [{"case": 3, "block": 1, "difference": "record"}]}, control)
    assert verdict == "killed" and "case 3; block 1; difference record" in why
    assert mutate.judge(control | {"errors": ["x.parquet: case 2: timeout"]}, control)[0] == "killed"
    assert mutate.judge(control | {"blocks": 29}, control) == ("killed", "ran 29 blocks of the control's 30")


def test_a_report_path_that_is_a_folder_is_refused_before_any_work(capsys, tmp_path):
    status, err = refusal(capsys, "--dut", "alu", "--json", str(tmp_path))
    assert status == 2 and len(err) == 1 and "is a folder" in err[0], err


def test_without_yosys_it_names_the_debian_package_and_exits_3(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))             # an empty folder: no yosys on PATH
    status, err = refusal(capsys, "--dut", "alu")
    assert status == 3 and err == ["mutate.py: Yosys is not installed: apt-get install -y yosys"]


needs_yosys = pytest.mark.skipif(shutil.which("yosys") is None, reason="apt-get install -y yosys")


@needs_yosys
def test_a_design_yosys_cannot_read_is_one_line_and_exit_2(capsys, tmp_path):
    bad = tmp_path / "broken.v"
    bad.write_text("module broken(input a, output b);\n  assign b = a +;\nendmodule\n")
    status, err = refusal(capsys, "--dut", str(bad))
    assert status == 2 and len(err) == 1, err
    assert "yosys cannot read broken.v" in err[0] and "broken.v:2" in err[0]


@needs_yosys
def test_a_top_module_that_is_not_in_the_design_is_one_line_and_exit_2(capsys):
    status, err = refusal(capsys, "--dut", "alu", "--top", "not_here")
    assert status == 2 and len(err) == 1 and "not_here" in err[0], err


@needs_yosys
def test_a_design_without_mutation_candidates_says_so(capsys, tmp_path):
    empty = tmp_path / "wires.v"
    empty.write_text("module wires(input a, output b);\nendmodule\n")
    status, err = refusal(capsys, "--dut", str(empty))
    assert status == 2 and len(err) == 1 and "no mutation candidate" in err[0], err


def test_a_yosys_mutation_line_is_decoded_into_its_fields():
    line = ("mutate -mode cnot0 -module alu -cell $and$alu.v:56$97 -port A -portbit 1 -ctrlbit 2 "
            "-wire ua -wirebit 1 -src alu.v:56.25-56.54 -src alu.v:51.1-51.2")
    m = mutate.parse_mutation(line)
    assert m == {"mode": "cnot0", "module": "alu", "cell": "$and$alu.v:56$97", "port": "A", "portbit": 1,
                 "ctrlbit": 2, "wire": "ua", "wirebit": 1, "src": ["alu.v:56.25-56.54", "alu.v:51.1-51.2"]}
    assert mutate.describe(m) == ("cnot0 alu.$and$alu.v:56$97 port A[1] (XOR with not A[2]), wire ua[1], "
                                  "at alu.v:56.25-56.54")


# ------------------------------------------------------------------ mutation runs (rtl, slow)
def score(tmp_path, *argv) -> dict:
    assert mutate.missing_yosys() is None, mutate.missing_yosys()
    need = mutate._run_py().missing_tools()
    assert need is None, need
    out = tmp_path / "score.json"
    assert mutate.main(["--dut", "alu", "--json", str(out), *argv]) == 0
    return json.loads(out.read_text())


def unexplained(r: dict) -> list[str]:
    """Mutants that survived without a proof that the flow cannot tell them from the lane."""
    return [m["description"] for m in r["mutants"]
            if m["verdict"] != "killed" and m.get("equivalence") != "equivalent"]


@pytest.mark.rtl
def test_a_bounded_sample_of_lane_mutants_is_killed_or_proved_equivalent(tmp_path, capsys):
    r = score(tmp_path, "--count", "8", "--seed", "5")
    assert r["total"] == 8 and len(r["mutants"]) == 8 and r["equivalent"] is not None
    assert unexplained(r) == []
    assert all(m["by"] for m in r["mutants"] if m["verdict"] == "killed")   # each kill names its case
    assert f"{r['killed']}/8 mutants killed" in capsys.readouterr().out


@pytest.mark.slow           # not rtl: `-m rtl` (CI) would select it too, and it runs for the better part of an hour
@pytest.mark.xfail(strict=False, reason="3 survivors whose SAT proofs time out at 300 s (argued equivalent by hand "
                   "in docs/rtl-mutation.md); the 3 live gaps of the first run are killed since (--only 50,56,57)")
def test_every_non_equivalent_mutant_of_the_default_run_is_killed(tmp_path):
    r = score(tmp_path)                                    # 100 mutants, seed 1
    assert r["total"] == 100
    assert unexplained(r) == []
    assert r["killed"] + r["equivalent"] == r["total"]


@pytest.mark.rtl
def test_the_machine_netlist_passes_its_bench_and_a_bounded_sample_of_its_mutants_runs(tmp_path):
    """The multi-block DUT (machine.v) as Yosys elaborates it -- the control -- passes tb_machine on
    a stream dataset of its subset (the bench drives every input in step with the clock), so its
    mutants can be scored; each kill names the stream and block or the bench error."""
    import subprocess
    import sys
    assert mutate.missing_yosys() is None, mutate.missing_yosys()
    data = tmp_path / "streams"
    done = subprocess.run([sys.executable, "-m", "emulator.cli", "golden", "--streams", "--ops",
                           "TADD,TSUB,TMUL,TAND,TOR,TXOR,TSHL,TSHR,TMAX,TMIN,TSEL", "--dtypes", "S8,S16,S32,U8,U16,U32",
                           "--blocks", "8", "--cases", "2", "--group-cases", "2", "--illegal-fraction", "0.5",
                           "--out", str(data)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "score.json"
    assert mutate.main(["--dut", "machine", "--bench", "tb_machine", "--dataset", str(data), "--count", "3",
                        "--jobs", "1", "--json", str(out)]) == 0      # 1 would mean the control failed
    r = json.loads(out.read_text())
    assert r["total"] == 3 and len(r["mutants"]) == 3
    assert all(m["by"] for m in r["mutants"] if m["verdict"] == "killed")
