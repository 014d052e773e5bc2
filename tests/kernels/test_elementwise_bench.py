"""`tile-emu bench` (emulator/commands/bench.py): the case table runs and reports; errors are one line."""
import json

from emulator.cli import main
from emulator.commands.bench import CASES


def test_case_table_names_every_numeric_target():
    names = {c.name for c in CASES}
    for op in ("TADD", "TMUL", "TFMA", "TEXP"):
        for fmt in ("E4M3", "BF16", "FP32"):
            assert f"numeric.{op}.{fmt}" in names
    assert next(c for c in CASES if c.name == "numeric.TEXP.FP32").target == 0.25


def test_quick_run_prints_rates_and_ratios(capsys):
    assert main(["bench", "--quick", "--n", "256", "--repeat", "1", "--case", "numeric.TADD", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["case"] for r in rows] == ["numeric.TADD.E4M3", "numeric.TADD.BF16", "numeric.TADD.FP32"]
    assert all(r["elements"] == 256 and r["elements_per_s"] > 0 and r["ratio"] > 0 for r in rows)


def test_list_and_unknown_case(capsys):
    assert main(["bench", "--list"]) == 0
    assert "numeric.TFMA.BF16" in capsys.readouterr().out
    assert main(["bench", "--case", "nonexistent"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no benchmark case" in err
    assert main(["bench", "--n", "0"]) == 2
