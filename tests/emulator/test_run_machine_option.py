"""`run --machine K` takes one machine of a batch file: what `--timing`, `--fabric` and region
programs (which run one machine) need.  Without it, such a run on a batch file is one line that
tells a CLI user what to do (issue 21: it used to suggest the Python API MachineBatch.load)."""
import pathlib

import pytest

from emulator import Machine
from emulator.batchio import load_states
from emulator.cli import main
from isa import assemble

ROOT = pathlib.Path(__file__).resolve().parents[2]
EX = ROOT / "examples"
BATCH = EX / "saxpy.batch.arrow"              # 16 machines


@pytest.fixture
def tbs(tmp_path):
    p = tmp_path / "saxpy.tbs"
    p.write_bytes(assemble((EX / "saxpy.s").read_text()))
    return p


@pytest.mark.parametrize("flags", [["--timing"], ["--fabric", str(ROOT / "emulator" / "pe.json")],
                                   ["--timing", "--fabric", str(ROOT / "emulator" / "pe.json")]])
def test_timing_a_batch_file_says_what_a_cli_user_can_do(tbs, capsys, flags):
    assert main(["run", str(tbs), "--init", str(BATCH), *flags]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "MachineBatch" not in err and "load_machines" not in err
    assert "holds 16 machines" in err and "pick one with --machine K (0..15)" in err
    assert "every machine runs as a batch" in err


def test_a_region_program_on_a_batch_file_says_to_pick_a_machine(capsys):
    prog = EX / "regions" / "saxpy_tiles.regions.json"
    assert main(["run", str(prog), "--init", str(BATCH), "-q"]) == 1
    err = capsys.readouterr().err
    assert "MachineBatch" not in err and "pick one with --machine K (0..15)" in err
    assert main(["run", str(prog), "--init", str(BATCH), "--machine", "2", "-q"]) == 0


def test_machine_k_runs_as_that_machine_alone(tbs, tmp_path, capsys):
    alone = tmp_path / "m9.arrow"
    Machine.from_state(load_states(BATCH)[9]).save(alone)
    assert main(["run", str(tbs), "--init", str(alone), "--timing"]) == 0
    want = capsys.readouterr().out
    assert main(["run", str(tbs), "--init", str(BATCH), "--machine", "9", "--timing"]) == 0
    assert capsys.readouterr().out == want
    assert main(["run", str(tbs), "--init", str(BATCH), "--machine", "9", "--out", str(tmp_path / "a.arrow"),
                 "-q"]) == 0
    assert main(["run", str(tbs), "--init", str(alone), "--out", str(tmp_path / "b.arrow"), "-q"]) == 0
    assert (tmp_path / "a.arrow").read_bytes() == (tmp_path / "b.arrow").read_bytes()


@pytest.mark.parametrize("argv, words", [
    (["--machine", "16", "--init", str(BATCH)], "no machine 16; the file holds 16 (0..15)"),
    (["--machine", "1", "--init", str(EX / "saxpy.init.arrow")], "no machine 1; the file holds 1 (0..0)"),
    (["--machine", "0"], "--machine K picks a machine of an --init file; give --init"),
])
def test_a_machine_the_file_does_not_hold_is_a_usage_error(tbs, capsys, argv, words):
    assert main(["run", str(tbs), *argv, "--timing"]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.splitlines()) == 1


def test_a_negative_machine_is_refused_by_argparse(tbs, capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", str(tbs), "--init", str(BATCH), "--machine", "-1"])
    assert e.value.code == 2 and "-1 is negative" in capsys.readouterr().err
