"""`tile-emu bench` (emulator/commands/bench.py): the case table runs and reports; errors are one line."""
import json

import pytest

from emulator.cli import main
from emulator.commands.bench import CASES


def test_case_table_names_every_numeric_target():
    names = {c.name for c in CASES}
    for op in ("TADD", "TMUL", "TFMA", "TEXP"):
        for fmt in ("E4M3", "BF16", "FP16", "FP32"):
            assert f"numeric.{op}.{fmt}" in names
    target = {c.name: c.target for c in CASES}
    assert target["numeric.TEXP.FP32"] == 0.25 and target["numeric.TADD.FP32"] == 0.5
    assert target["numeric.TMUL.BF16"] == 1.0 and target["numeric.TADD.FP16"] == 2.0


def test_quick_run_prints_rates_and_ratios(capsys):
    assert main(["bench", "--quick", "--n", "256", "--repeat", "1", "--case", "numeric.TADD", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["case"] for r in rows] == ["numeric.TADD.E4M3", "numeric.TADD.BF16", "numeric.TADD.FP16",
                                         "numeric.TADD.FP32"]
    assert all(r["elements"] == 256 and r["elements_per_s"] > 0 and r["ratio"] > 0 for r in rows)


def test_conversion_and_profile_cases_have_the_issue_16_targets():
    target = {c.name: c.target for c in CASES}
    assert target["numeric.TCVT.FP32-FP16"] == 1.0 and target["numeric.TCVT.FP32-BF16"] == 1.0
    for op in ("TRSQRT", "TREM", "TDIV"):
        assert target[f"profile.a5.{op}.FP16"] == 0.5          # within 2x of the same op under ieee


def test_profile_option_runs_the_numeric_cases_under_it_and_says_so(capsys):
    assert main(["bench", "--quick", "--n", "256", "--repeat", "1", "--case", "numeric.TADD.FP32",
                 "--case", "numeric.TCVT.FP32-FP16", "--profile", "a5", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["case"] for r in rows] == ["numeric.TADD.FP32", "numeric.TCVT.FP32-FP16"]
    assert all(r["profile"] == {"name": "a5", "version": "1.0"} for r in rows)
    assert main(["bench", "--quick", "--n", "256", "--repeat", "1", "--case", "profile.a5.TREM"]) == 0
    out = capsys.readouterr().out
    assert "numeric profile ieee 1.0" in out.splitlines()[0] and "profile.a5.TREM.FP16" in out
    assert main(["bench", "--quick", "--n", "256", "--repeat", "1", "--case", "profile.a5.TREM", "--json"]) == 0
    row, = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["profile"] == {"name": "a5", "version": "1.0"}          # the profile the case measures


def test_an_unknown_profile_is_one_line_listing_the_known_ones(capsys):
    assert main(["bench", "--profile", "a6", "--case", "numeric.TADD"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "known: ieee 1.0, ftz 1.0, a5 1.0" in err


def test_list_and_unknown_case(capsys):
    assert main(["bench", "--list"]) == 0
    assert "numeric.TFMA.BF16" in capsys.readouterr().out
    assert main(["bench", "--case", "nonexistent"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no benchmark case" in err
    assert main(["bench", "--n", "0"]) == 2


class ScriptedClock:
    """A clock that advances only when a scripted callable 'runs', by that call's duration."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def callable(self, durations):
        calls = iter(durations)

        def run():
            self.now += next(calls, durations[-1])
        return run


def scripted_case(clock, ours, base, target=None):
    from emulator.commands.bench import Case
    return Case("fake.case", "scripted", lambda n: (clock.callable(ours), clock.callable(base)), target)


def test_timing_starts_only_after_the_first_calls_have_settled(monkeypatch):
    """Compilation and lazily built paths slow the first calls: they are run untimed."""
    from emulator.commands import bench
    clock = ScriptedClock()
    monkeypatch.setattr(bench, "clock", clock)
    case = scripted_case(clock, ours=[0.4, 0.2, 0.08, 0.04, 0.04], base=[0.12, 0.04, 0.04])
    r = bench.measure(case, 100, repeat=2)
    assert r["elements_per_s"] == pytest.approx(2500) and r["baseline_elements_per_s"] == pytest.approx(2500)
    assert r["ratio"] == pytest.approx(1.0)


def test_a_missed_target_is_marked_and_strict_makes_it_exit_1(monkeypatch, capsys):
    from emulator.commands import bench
    clock = ScriptedClock()
    monkeypatch.setattr(bench, "clock", clock)
    monkeypatch.setattr(bench, "CASES", [scripted_case(clock, ours=[0.02], base=[0.01], target=4.0)])
    assert main(["bench", "--n", "10", "--repeat", "1"]) == 0          # targets are informational
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("fake.case"))
    assert " 0.50 " in row and "MISSED 4.00" in row and "1 case(s) MISSED" in out
    assert main(["bench", "--n", "10", "--repeat", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["missed"] is True
    assert main(["bench", "--n", "10", "--repeat", "1", "--strict"]) == 1


def test_a_met_target_is_not_marked(monkeypatch, capsys):
    from emulator.commands import bench
    clock = ScriptedClock()
    monkeypatch.setattr(bench, "clock", clock)
    monkeypatch.setattr(bench, "CASES", [scripted_case(clock, ours=[0.008], base=[0.04], target=4.0)])
    assert main(["bench", "--n", "10", "--repeat", "1", "--strict"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("fake.case"))
    assert "MISSED" not in row and "4.00" in row


def test_gpu_backend_lists_its_cases_and_refuses_without_a_gpu(capsys):
    from kernels.device import gpu_status
    assert main(["bench", "--backend", "gpu", "--list"]) == 0
    out = capsys.readouterr().out
    assert "gpu.TADD.FP32" in out and "gpu.TCVT.FP32-E4M3.sat" in out and "copy" in out
    if not gpu_status()[0]:
        assert main(["bench", "--backend", "gpu"]) == 3
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "no usable GPU" in err


def test_gpu_case_setup_runs_on_a_numpy_stand_in_for_cupy(monkeypatch):
    """The GPU cases' setup (operands, the equal-bytes copy baseline) is plain array code: with
    NumPy standing in for CuPy it runs here, on the CPU path."""
    import sys
    import types

    import numpy as np

    from emulator.commands.bench import GPU_CASES
    fake = types.ModuleType("cupy")
    fake.asarray, fake.empty, fake.empty_like, fake.copyto, fake.uint8 = (
        np.asarray, np.empty, np.empty_like, np.copyto, np.uint8)
    fake.cuda = types.SimpleNamespace(Device=lambda: types.SimpleNamespace(synchronize=lambda: None))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    for case in GPU_CASES:
        ours, copy = case.setup(512)
        ours()
        copy()


def test_vcg_cases_time_the_default_reduce_backend_against_the_numpy_one(capsys):
    """`tile-emu bench --case vcg`: float16/bfloat16 Add on the Numba backend (`tile-emu reduce`'s
    default) against the NumPy backend on the same flits, target 1x (docs/performance.md)."""
    target = {c.name: c.target for c in CASES if c.name.startswith("vcg.")}
    assert target == {f"vcg.Add.{f}.{p}": 1.0 for f in ("FP16", "BF16") for p in ("packet", "lanes")}
    assert main(["bench", "--n", "4096", "--repeat", "1", "--case", "vcg", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 4 and all(r["elements"] == 4096 and r["ratio"] > 0 for r in rows)
