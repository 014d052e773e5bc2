"""An output naming the same file as an input or as another output is a usage error (issue 21,
item 6): one line, exit 2, before anything is read or written, whatever the spelling (the same
text, `dir/../name`, a symlink, a hard link, a path that does not exist yet).

The commands and their path arguments are enumerated from the argparse definitions: every
option that takes free text is classified below as an input, an output or not a path, so a new
path option cannot be added without being checked here."""
import importlib
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from emulator.cli import COMMANDS, _Parser, main
from isa import assemble

ROOT = pathlib.Path(__file__).resolve().parents[2]
EX = ROOT / "examples"

# command -> {argparse dest: "input" | "output"}; every other free-text option is in NOT_PATHS
PATHS = {
    "compile": {},
    "asm": {"input": "input", "output": "output"},
    "disasm": {"input": "input", "output": "output"},
    "run": {"stream": "input", "init": "input", "fabric": "input", "out": "output", "log": "output"},
    "show": {"state": "input"},
    "diff": {"a": "input", "b": "input"},
    "fabric": {"file": "input", "fabric": "input", "trace": "output", "vcd": "output"},
    "vcg": {"mapping": "input", "heatmap": "output"},
    "reduce": {"input": "input", "mapping": "input", "out": "output"},
    "bench": {},
    # generation writes --out and reads nothing; --coverage reads DATASET and writes stdout;
    # export reads DATASET and writes stdout or --out, which may not lie in DATASET
    # (test_golden_hostile: an export into its own dataset folder)
    # merge reads DATASET and the other shard folders (more) and writes --out, which may not overlap
    # a shard (test_golden_shards)
    "golden": {"dataset": "input", "more": "input", "coverage": "input", "out": "output"},
    "verify": {"dataset": "input"},
    "cosim": {"out": "output"},
}
NOT_PATHS = {
    "vcg": {"axes", "slice", "time", "packet", "reduce", "track"},
    "reduce": {"dtype"},
    "bench": {"case", "profile"},
    "run": {"profile", "scheduler"},
    "golden": {"ops", "dtypes", "dst_dtypes", "rmodes", "sat", "profile", "scheduler", "op", "dtype", "dst", "shapes",
               "rmode", "shard",
               "case"},       # extract's case spec: [PARTITION or data file:]K, never written
}


def _free_text_options(name):
    parser = _Parser(prog=name)
    importlib.import_module(COMMANDS[name][0]).add_arguments(parser)
    return {a.dest for a in parser._actions
            if a.nargs != 0 and a.choices is None and getattr(a.type, "__name__", None) in (None, "str", "output_path")}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_free_text_option_of_every_command_is_classified(name):
    assert _free_text_options(name) == set(PATHS[name]) | NOT_PATHS.get(name, set())


@pytest.fixture
def files(tmp_path):
    """Copies of real inputs in one folder, so that an output onto one of them stays inside it."""
    d = tmp_path / "w"
    d.mkdir()
    for src in (EX / "saxpy.s", EX / "saxpy.init.arrow", EX / "regions" / "saxpy_tiles.regions.json",
                EX / "vcg" / "hcw.json", EX / "vcg" / "hcw_input.arrow", EX / "fabric" / "sum-loop.graph.json",
                EX / "fabric" / "sum-loop.fabric.json", ROOT / "emulator" / "pe.json"):
        shutil.copy(src, d / src.name)
    (d / "saxpy.tbs").write_bytes(assemble((EX / "saxpy.s").read_text()))
    return d


# name -> (argv builder from {dest: path}, {dest: default file name}); outputs default to new names
INVOCATIONS = {
    "asm": (lambda p: ["asm", p["input"], "-o", p["output"]], {"input": "saxpy.s", "output": "o.tbs"}),
    "disasm": (lambda p: ["disasm", p["input"], "-o", p["output"]], {"input": "saxpy.tbs", "output": "o.s"}),
    "run": (lambda p: ["run", p["stream"], "--init", p["init"], "--fabric", p["fabric"], "--out", p["out"],
                       "--log", p["log"], "-q"],
            {"stream": "saxpy.tbs", "init": "saxpy.init.arrow", "fabric": "pe.json", "out": "o.arrow",
             "log": "o.commits.arrow"}),
    "run regions": (lambda p: ["run", p["stream"], "--init", p["init"], "--out", p["out"], "-q"],
                    {"stream": "saxpy_tiles.regions.json", "init": "saxpy.init.arrow", "out": "o.arrow"}),
    "reduce": (lambda p: ["reduce", p["input"], "--mapping", p["mapping"], "--op", "AddSat", "--out", p["out"]],
               {"input": "hcw_input.arrow", "mapping": "hcw.json", "out": "o.arrow"}),
    "vcg": (lambda p: ["vcg", "--mapping", p["mapping"], "--heatmap", p["heatmap"]],
            {"mapping": "hcw.json", "heatmap": "o.png"}),
    "fabric sim": (lambda p: ["fabric", "sim", p["file"], "--fabric", p["fabric"], "--cycles", "100",
                              "--trace", p["trace"], "--vcd", p["vcd"]],
                   {"file": "sum-loop.graph.json", "fabric": "sum-loop.fabric.json", "trace": "o.arrow",
                    "vcd": "o.vcd"}),
}
COMMAND_OF = {"run regions": "run", "fabric sim": "fabric"}
PAIRS = [(inv, out, other) for inv, (_, defaults) in INVOCATIONS.items()
         for out in defaults if PATHS[COMMAND_OF.get(inv, inv)][out] == "output"
         for other in defaults if other != out]


def _snapshot(d):
    return {p.name: (p.read_bytes() if p.is_file() else None, p.is_symlink()) for p in sorted(d.iterdir())}


@pytest.mark.parametrize("inv", sorted(INVOCATIONS))
def test_each_invocation_works_with_distinct_paths(files, capsys, inv):
    build, defaults = INVOCATIONS[inv]
    assert main(build({k: str(files / v) for k, v in defaults.items()})) == 0, capsys.readouterr().err


@pytest.mark.parametrize("spelling", ["same", "dotdot", "symlink", "hardlink"])
@pytest.mark.parametrize("inv, out, other", PAIRS)
def test_an_output_onto_another_path_of_the_command_is_a_usage_error(files, capsys, inv, out, other, spelling):
    build, defaults = INVOCATIONS[inv]
    paths = {k: str(files / v) for k, v in defaults.items()}
    target = files / defaults[other]
    if not target.exists():                      # another output: make it exist for links
        target.write_bytes(b"an older output\n")
    if spelling == "same":
        paths[out] = str(target)
    elif spelling == "dotdot":
        (files / "sub").mkdir()
        paths[out] = str(files / "sub" / ".." / target.name)
    elif spelling == "symlink":
        os.symlink(target.name, files / "link")
        paths[out] = str(files / "link")
    else:
        os.link(target, files / "hard")
        paths[out] = str(files / "hard")
    before = _snapshot(files)
    rc = main(build(paths))
    err = capsys.readouterr().err
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1 and "is the same file as" in err and "Traceback" not in err
    assert _snapshot(files) == before            # nothing read into place, nothing written


@pytest.mark.parametrize("inv, a, b", [(inv, a, b) for inv, a, b in PAIRS
                                       if PATHS[COMMAND_OF.get(inv, inv)][b] == "output"])
def test_two_outputs_that_do_not_exist_yet_are_one_file_whatever_the_spelling(files, capsys, inv, a, b):
    build, defaults = INVOCATIONS[inv]
    paths = {k: str(files / v) for k, v in defaults.items()}
    (files / "sub").mkdir()
    os.symlink("new.out", files / "dangling")    # a link to a file not yet written
    paths[a], paths[b] = str(files / "sub" / ".." / "new.out"), str(files / "dangling")
    before = _snapshot(files)
    assert main(build(paths)) == 2
    err = capsys.readouterr().err
    assert "is the same file as" in err and "each output needs a file of its own" in err
    assert _snapshot(files) == before and not (files / "new.out").exists()


def test_the_message_names_both_paths_and_why(files, capsys, monkeypatch):
    monkeypatch.chdir(files)
    g = "sum-loop.graph.json"
    assert main(["fabric", "sim", g, "--fabric", "sum-loop.fabric.json", "--cycles", "10", "--trace", g]) == 2
    assert capsys.readouterr().err == (f"tile-emu fabric: --trace {g} is the same file as the input GRAPH {g}: "
                                       "an output must not overwrite an input\n")
    x = "x"
    assert main(["fabric", "sim", g, "--fabric", "sum-loop.fabric.json", "--cycles", "10",
                 "--trace", x, "--vcd", "./x"]) == 2
    assert capsys.readouterr().err == (f"tile-emu fabric: --vcd ./x is the same file as --trace {x}: "
                                       "each output needs a file of its own\n")


def test_a_region_programs_case_files_are_outputs_too(files, capsys):
    # --out X.arrow writes a batch program's case k >= 1 to X.case<k>.arrow (emulator.calculus.cli)
    shutil.copy(files / "saxpy.init.arrow", files / "o.case1.arrow")
    before = _snapshot(files)
    assert main(["run", str(files / "saxpy_tiles.regions.json"), "--init", str(files / "o.case1.arrow"),
                 "--out", str(files / "o.arrow"), "-q"]) == 2
    assert "--out's case 1 file" in capsys.readouterr().err and _snapshot(files) == before


def test_standard_streams_and_devices_are_not_files_to_protect(files):
    # /dev/stdin and /dev/stdout may be one terminal: nothing is renamed over them
    r = subprocess.run([sys.executable, "-m", "emulator.cli", "asm", "/dev/stdin", "-o", "/dev/stdout"],
                       input=(files / "saxpy.s").read_bytes(), capture_output=True, timeout=120)
    assert r.returncode == 0 and r.stdout == (files / "saxpy.tbs").read_bytes()
    assert main(["disasm", str(files / "saxpy.tbs"), "-o", "/dev/null"]) == 0


@pytest.mark.parametrize("argv", [
    ["run", "{d}/pointwise.regions.json", "--init", "{d}/loop1", "--out", "{d}/loop2"],
    ["asm", "{d}/loop1", "-o", "{d}/loop2"],
    ["asm", "{d}/loop1", "-o", "{d}/loop1"],
])
def test_a_symlink_loop_is_one_line_not_a_traceback(tmp_path, capsys, argv):
    shutil.copy(EX / "regions" / "pointwise.regions.json", tmp_path)
    os.symlink("loop2", tmp_path / "loop1")
    os.symlink("loop1", tmp_path / "loop2")
    assert main([a.replace("{d}", str(tmp_path)) for a in argv]) in (1, 2)
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
