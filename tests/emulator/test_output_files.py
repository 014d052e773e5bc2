"""Every output file is written atomically, and an empty output path is a usage error.

A write that fails midway (a full disk, a file-size limit) must leave an existing good file
byte-identical and no temporary beside it; `--out ''` must not be silently skipped."""
import os
import pathlib
import shutil
import subprocess
import sys

import pyarrow as pa
import pytest

import isa.atomicio
from emulator.cli import main
from isa import assemble

ROOT = pathlib.Path(__file__).resolve().parents[2]
EX = ROOT / "examples"
VCG = EX / "vcg"
GOOD = b"a good file that must survive\n"
CLI = "import sys; from emulator.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.fixture
def tbs(tmp_path):
    p = tmp_path / "saxpy.tbs"
    p.write_bytes(assemble((EX / "saxpy.s").read_text()))
    return p


def _commands(tmp_path, tbs, out):
    """Each writer of the CLI, writing `out` (name -> argv)."""
    return {
        "run --out": ["run", str(tbs), "--init", str(EX / "saxpy.init.arrow"), "--out", out, "-q"],
        "asm -o": ["asm", str(EX / "saxpy.s"), "-o", out],
        "disasm -o": ["disasm", str(tbs), "-o", out],
        "reduce --out": ["reduce", str(VCG / "hcw_input.arrow"), "--mapping", str(VCG / "hcw.json"),
                         "--op", "AddSat", "--out", out],
        "vcg --heatmap": ["vcg", "--mapping", str(VCG / "hcw.json"), "--heatmap", out],
        "run regions --out json": ["run", str(EX / "regions" / "pointwise.regions.json"), "--out", out, "-q"],
    }


WRITERS = ["run --out", "asm -o", "disasm -o", "reduce --out", "vcg --heatmap", "run regions --out json"]


@pytest.mark.parametrize("writer", WRITERS)
def test_an_empty_output_path_is_a_usage_error(tmp_path, tbs, capsys, writer):
    argv = _commands(tmp_path, tbs, "")[writer]
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert "the output path is empty" in capsys.readouterr().err


def _fail_midway_arrow(monkeypatch):
    """Arrow IPC writers write a few bytes, then fail as a full disk would."""
    def new_file(sink, schema, *args, **kwargs):
        sink.write(b"ARROW1\x00\x00" + b"\xff" * 100)
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(pa.ipc, "new_file", new_file)


def _fail_midway_python(monkeypatch):
    """Python file objects opened by isa.atomicio write half of what they are given, then fail."""
    real_open = open

    class Half:
        def __init__(self, f):
            self.f = f

        def write(self, data):
            self.f.write(data[: len(data) // 2])
            self.f.flush()
            raise OSError(28, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    monkeypatch.setattr(isa.atomicio, "open", lambda *a, **k: Half(real_open(*a, **k)), raising=False)


@pytest.mark.parametrize("writer", WRITERS)
def test_a_write_failing_midway_leaves_the_old_file_and_no_temporary(tmp_path, tbs, capsys, monkeypatch,
                                                                      writer):
    outdir = tmp_path / "out"
    outdir.mkdir()
    out = outdir / ("o.json" if "json" in writer else "o.bin")
    out.write_bytes(GOOD)
    argv = _commands(tmp_path, tbs, str(out))[writer]
    assert main(argv) == 0                                 # the writer works ...
    assert out.read_bytes() != GOOD and os.listdir(outdir) == [out.name]
    capsys.readouterr()
    out.write_bytes(GOOD)
    _fail_midway_arrow(monkeypatch)
    _fail_midway_python(monkeypatch)
    assert main(argv) == 1                                 # ... and its failure is one line
    err = capsys.readouterr().err
    assert "cannot write" in err and "No space left on device" in err and "Traceback" not in err
    assert out.read_bytes() == GOOD
    assert os.listdir(outdir) == [out.name]


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs util-linux prlimit")
def test_a_file_size_limit_leaves_the_old_state_file(tmp_path, tbs):
    # The reproduction: `prlimit --fsize=4096 tile-emu run ... --out k.arrow`.
    out = tmp_path / "k.arrow"
    out.write_bytes(GOOD)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run(["prlimit", "--fsize=4096", sys.executable, "-c", CLI, "run", str(tbs),
                        "--init", str(EX / "saxpy.init.arrow"), "--out", str(out), "-q"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 1 and "cannot write" in r.stderr and "Traceback" not in r.stderr
    assert out.read_bytes() == GOOD
    assert sorted(os.listdir(tmp_path)) == ["k.arrow", "saxpy.tbs"]


def test_machine_save_is_atomic(tmp_path, monkeypatch):
    from emulator import Machine
    out = tmp_path / "m.arrow"
    out.write_bytes(GOOD)
    _fail_midway_arrow(monkeypatch)
    with pytest.raises(OSError):
        Machine.load(EX / "saxpy.init.arrow").save(out)
    assert out.read_bytes() == GOOD and os.listdir(tmp_path) == ["m.arrow"]


def test_outputs_are_created_with_the_usual_permissions(tmp_path, tbs):
    out = tmp_path / "s.tbs"
    assert main(["asm", str(EX / "saxpy.s"), "-o", str(out)]) == 0
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.parametrize("argv", [
    ["run", "{tbs}", "--init", str(EX / "saxpy.init.arrow"), "--out", "/dev/null", "-q"],
    ["reduce", str(VCG / "hcw_input.arrow"), "--mapping", str(VCG / "hcw.json"), "--op", "AddSat",
     "--out", "/dev/null"],
])
def test_an_arrow_output_onto_a_device_is_one_line(tbs, capsys, argv):
    # An IPC file's footer needs a seekable regular file; pyarrow raised ArrowInvalid here.
    assert main([a.replace("{tbs}", str(tbs)) for a in argv]) == 1
    err = capsys.readouterr().err
    assert "/dev/null' is not a regular file" in err and "Traceback" not in err
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")


def test_an_empty_init_path_is_an_error_not_an_empty_machine(tbs, capsys):
    assert main(["run", str(tbs), "--init", "", "-q"]) == 1
    assert "'': no such file" in capsys.readouterr().err
