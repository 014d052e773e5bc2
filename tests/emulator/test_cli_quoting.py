"""CLI error messages quote file names and offending text: escaped, at most about 80
characters, so neither control bytes nor megabytes of input reach the terminal."""
import pathlib

import pytest

from emulator.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[2]
EX = ROOT / "examples"
NAMES = ["no\x1b[2Jsuch.file", "n" * 100_000]


def _commands(bad):
    return {
        "run": ["run", bad, "-q"],
        "run --init": ["run", str(EX / "saxpy.s"), "--init", bad],
        "run regions": ["run", bad + ".regions.json"],
        "asm": ["asm", bad, "-o", "-"],
        "disasm": ["disasm", bad],
        "show": ["show", bad],
        "reduce": ["reduce", bad, "--mapping", str(EX / "vcg" / "hcw.json"), "--op", "Max", "--out", "o.arrow"],
        "reduce --mapping": ["reduce", bad, "--mapping", bad, "--op", "Max", "--out", "o.arrow"],
        "vcg --mapping": ["vcg", "--mapping", bad],
        "fabric": ["fabric", "check", bad],
    }


@pytest.mark.parametrize("command", list(_commands("x")))
@pytest.mark.parametrize("bad", NAMES, ids=["control-bytes", "100k-name"])
def test_a_hostile_file_name_is_escaped_and_cut(capsys, command, bad):
    rc = main(_commands(bad)[command])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err
    assert "\x1b" not in err
    assert max(len(line) for line in err.splitlines()) < 400, err[:400]


@pytest.mark.parametrize("argv", [
    ["run", str(EX / "saxpy.s"), "extra", "a\x1b[2J" * 20_000],          # argparse: unrecognized
    ["show", "s.arrow", "--max", "9\x1b" * 50_000],                      # a count argument
])
def test_argparse_errors_are_bounded_and_escaped(capsys, argv):
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and "\x1b" not in err.replace("\\x1b", "")
    assert max(len(line) for line in err.splitlines()) < 400, err[:400]


def test_an_unknown_command_is_quoted(capsys):
    assert main(["x\x1b" * 50_000]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err.replace("\\x1b", "") and len(err) < 400


def test_a_hostile_profile_name_is_one_bounded_escaped_line(capsys):
    assert main(["run", str(EX / "saxpy.s"), "--profile", "p\x1b" * 50_000]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err.replace("\\x1b", "") and len(err) < 400
