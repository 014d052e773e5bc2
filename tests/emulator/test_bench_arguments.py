"""`tile-emu bench` arguments (issue 21, item 14 and the --strict cosmetic): an --n no case can
hold here is one line naming the largest n that fits, before anything is allocated; --strict
names each missed case on stderr; random argument combinations give one line and a non-zero
exit, or a correct result, never a traceback or a hang."""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import pathlib

import pytest

import emulator.commands.bench as bench
from emulator.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _never_measured(monkeypatch):
    def measure(case, n, repeat):
        raise AssertionError(f"{case.name} was set up at n={n}: the bound must refuse it first")
    monkeypatch.setattr(bench, "measure", measure)


@pytest.mark.parametrize("argv", [
    ["--case", "numeric.TADD", "--n", str(2 ** 62)],     # was ValueError: array is too big
    ["--case", "vcg", "--n", str(2 ** 40)],              # was ValueError: valid_size matrix ... exceeds
    ["--case", "numeric", "--n", str(2 ** 40)],          # was MemoryError
    ["--case", "batch", "--n", str(2 ** 40)],            # was MemoryError
    ["--case", "machine", "--n", str(2 ** 40)],          # was ValueError: MachineConfig.local_bytes
    ["--n", str(2 ** 63)],
])
def test_an_n_no_case_can_hold_is_one_line_naming_the_largest_n_before_allocating(capsys, monkeypatch, argv):
    _never_measured(monkeypatch)
    assert main(["bench", *argv]) == 2
    out, err = capsys.readouterr()
    assert len(err.splitlines()) == 1 and not out
    assert f"--n {argv[-1]}: " in err and "the largest n" in err
    largest = int(err.rsplit(" ", 1)[1])
    assert 1 <= largest < int(argv[-1])


def test_the_largest_n_it_names_is_accepted_and_one_more_is_not(monkeypatch):
    monkeypatch.setattr(bench, "available_bytes", lambda: 3 << 30)
    cases = bench.select(["numeric.TFMA"])
    room = bench.available_bytes()
    largest = min(bench.largest_n(c, room) for c in cases)
    exact = (room - bench.LIBRARY_BYTES) // bench._NUMERIC_BYTES["TFMA"]      # 28 bytes an element
    assert exact - exact // 100 <= largest <= exact                           # cut to 3 digits
    bench.check_n(cases, largest, gpu=False)
    with pytest.raises(bench.CommandError, match=f"the largest n every selected case can hold here now is {largest}"):
        bench.check_n(cases, exact + 1, gpu=False)


def test_a_case_limit_of_its_own_is_named_exactly():
    from emulator.config import MAX_STORE_BYTES, MachineConfig
    case, = bench.select(["machine.TADD"])
    rows = (case.max_n) // 512              # machine_setup's tiles: n // 512 rows of 128 FP32, 4 a store
    MachineConfig(local_bytes=4 * rows * 128 * 4)                              # the largest n fits ...
    with pytest.raises(ValueError):
        MachineConfig(local_bytes=4 * (rows + 1) * 128 * 4)                   # ... one row more does not
    assert 4 * rows * 128 * 4 <= MAX_STORE_BYTES
    with pytest.raises(bench.CommandError, match=f"holds at most {case.max_n} elements"):
        bench.check_n([case], case.max_n + 1, gpu=False)


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs util-linux prlimit")
def test_an_address_space_limit_lowers_the_largest_n():
    code = ("import emulator.commands.bench as b; c, = b.select(['numeric.TADD.FP32']);"
            "print(b.available_bytes(), b.largest_n(c, b.available_bytes()))")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run(["prlimit", f"--as={2 << 30}", sys.executable, "-c", code], capture_output=True,
                       text=True, env=env, timeout=300)
    room, largest = map(int, r.stdout.split())
    assert 0 < room < 2 << 30 and largest * 24 < 2 << 30


def _peak_growth(name: str, n: int) -> tuple[int, float]:
    """Peak resident growth (bytes) of setting up and measuring case `name` at n elements, from a
    fresh process, and what the case's memory table says for n."""
    code = f"""
import emulator.commands.bench as b
def kb(key):
    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith(key)) * 1024
b.MIN_REPEAT_SECONDS = 0.001
c, = [c for c in b.CASES if c.name == {name!r}]
start = kb('VmRSS')
b.measure(c, {n}, 1)
print(kb('VmHWM') - start, c.memory({n}))
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=1200)
    assert r.returncode == 0, r.stderr
    grew, said = r.stdout.split()
    return int(grew), float(said)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmHWM from /proc")
def test_a_numeric_cases_memory_table_is_an_upper_bound():
    grew, said = _peak_growth("numeric.TFMA.BF16", 1 << 21)      # the largest measured per element
    assert 0 < grew <= said


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmHWM from /proc")
@pytest.mark.parametrize("name", [c.name for c in bench.CASES])
def test_every_cases_memory_table_is_an_upper_bound(name):
    n = 1 << 17 if name.startswith("golden") else 1 << 22
    grew, said = _peak_growth(name, n)
    assert grew <= said


# ---------------------------------------------------------------- --strict

def _scripted(monkeypatch, ratios: dict):
    def measure(case, n, repeat, profile="ieee"):
        r = ratios[case.name]
        return {"case": case.name, "elements": n, "elements_per_s": 1.0, "baseline_elements_per_s": r,
                "ratio": r, "target": case.target, "missed": case.target is not None and r < case.target,
                "baseline": case.baseline}
    monkeypatch.setattr(bench, "measure", measure)


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_strict_names_each_missed_case_on_stderr(capsys, monkeypatch, json_flag):
    _scripted(monkeypatch, {"numeric.TADD.FP32": 0.1, "numeric.TADD.FP16": 3.0, "numeric.TADD.BF16": 0.2,
                            "numeric.TADD.E4M3": 9.0})
    assert main(["bench", "--case", "numeric.TADD", "--n", "64", "--strict", *json_flag]) == 1
    out, err = capsys.readouterr()
    assert err.splitlines() == ["tile-emu bench: numeric.TADD.BF16 MISSED its target: ratio 0.20 < 1.00",
                                "tile-emu bench: numeric.TADD.FP32 MISSED its target: ratio 0.10 < 0.50"]
    if json_flag:
        assert [json.loads(line)["missed"] for line in out.splitlines()] == [False, True, False, True]
    assert main(["bench", "--case", "numeric.TADD", "--n", "64", *json_flag]) == 0   # informational
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------- random argument combinations

RUNNABLE = ["numeric.TADD.FP32", "numeric.TMUL.FP16", "vcg.Add.FP16.packet"]   # cheap at tiny n
PREFIXES = RUNNABLE + ["numeric", "batch", "machine", "golden", "vcg", "gpu.", "", "nosuch", "\x1b[2J",
                       "x" * 5000]
HOSTILE_N = ["0", "-1", str(2 ** 40), str(2 ** 62), str(2 ** 63), str(10 ** 30), "2^62", "1e6", "", "0x10",
             "nan", "9" * 5000]
REPEATS = ["1", "2", "0", "-3", str(10 ** 9), "many", "9" * 5000]


def _argv(rng: random.Random) -> tuple[list[str], bool]:
    """A random bench command line, and whether it may run cases (then only cheap ones, tiny n)."""
    argv = ["bench"]
    flags = [f for f in ("--quick", "--json", "--strict", "--list") if rng.random() < 0.3]
    if rng.random() < 0.15:
        argv += ["--backend", rng.choice(["cpu", "gpu", "tpu"])]
    runs = "--list" not in flags and rng.random() < 0.5
    if runs:
        prefixes = rng.sample(RUNNABLE, rng.randint(1, 2))
        argv += ["--n", str(rng.randint(1, 300)), "--repeat", rng.choice(["1", "2"])]
    else:
        prefixes = rng.sample(PREFIXES, rng.randint(0, 3))
        if "--list" not in flags:
            argv += ["--n", rng.choice(HOSTILE_N)]
        if rng.random() < 0.5:
            argv += ["--repeat", rng.choice(REPEATS)]
    for p in prefixes:
        argv += ["--case", p]
    if rng.random() < 0.1:
        argv += [rng.choice(["--bogus", "extra", "--n"])]
    return argv + flags, runs


class _Hang(Exception):
    pass


def _check_one(argv, capsys, monkeypatch):
    monkeypatch.setattr(bench, "MIN_REPEAT_SECONDS", 0.002)      # tiny n: keep each repeat short
    def alarm(*_):
        raise _Hang(" ".join(argv)[:200])
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(300)
    try:
        try:
            rc = main(argv)
        except SystemExit as e:                  # argparse: usage line + one error line, exit 2
            rc = e.code
            out, err = capsys.readouterr()
            assert rc == 2 and err.splitlines()[-1].startswith("tile-emu bench: error: "), err
            assert len(err.splitlines()[-1]) < 400
            return
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    if rc not in (0,) and not (rc == 1 and "--strict" in argv):
        assert rc in (2, 3) and len(err.splitlines()) == 1 and err.startswith("tile-emu bench: "), (argv, err)
        assert len(err) < 400
        return
    if "--list" in argv:
        assert out.strip() and all(line.split()[0] for line in out.splitlines())
        return
    n = int(argv[argv.index("--n") + 1]) if "--n" in argv else None
    rows = [json.loads(line) for line in out.splitlines()] if "--json" in argv else None
    if rows is not None:
        for r in rows:
            assert r["elements"] == n and r["ratio"] > 0 and r["missed"] == (r["target"] is not None
                                                                              and r["ratio"] < r["target"])
        assert (rc == 1) == ("--strict" in argv and any(r["missed"] for r in rows))
        assert len(err.splitlines()) == (sum(r["missed"] for r in rows) if rc == 1 else 0)


@pytest.mark.parametrize("seed", range(30))
def test_random_bench_arguments_give_one_line_or_a_result(capsys, monkeypatch, seed):
    argv, _ = _argv(random.Random(seed))
    _check_one(argv, capsys, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(30, 430))
def test_random_bench_arguments_give_one_line_or_a_result_at_length(capsys, monkeypatch, seed):
    argv, _ = _argv(random.Random(seed))
    _check_one(argv, capsys, monkeypatch)
