"""One rule for backends, every command (README "exit status"; issue 9, "Bad input"): an unknown
backend name is a usage error, exit 2; a known backend this machine cannot run (a GPU backend
without a usable GPU, a batch larger than the device's free memory) is exit 3.  Either way the
failure is one line naming the backend, with no traceback, and no output file is created."""
import pathlib
import sys
import types

import pytest

from emulator.cli import EXIT_CODES, UNAVAILABLE, main

ROOT = pathlib.Path(__file__).resolve().parents[2]
EX = ROOT / "examples"
NO_GPU = "no CUDA device (stand-in)"


@pytest.fixture
def files(tmp_path):
    from isa import assemble
    (tmp_path / "s.tbs").write_bytes(assemble((EX / "saxpy.s").read_text()))
    return tmp_path


@pytest.fixture
def no_gpu(monkeypatch):
    """This machine has no usable GPU, whatever it has: kernels.device (the one place that asks
    about devices) says so, CuPy does not import, and Numba-CUDA sees no device."""
    import kernels.device
    monkeypatch.setattr(kernels.device, "gpu_status", lambda: (False, NO_GPU))
    monkeypatch.setitem(sys.modules, "cupy", None)
    import numba
    stub = types.SimpleNamespace(is_available=lambda: False)
    monkeypatch.setattr(numba, "cuda", stub, raising=False)
    monkeypatch.setitem(sys.modules, "numba.cuda", stub)
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)


def commands(d, backend, reduce_backend):
    """(name, argv, the output file it would write) for every command that takes --backend.
    (golden and vcg take none: they run on the host only.)"""
    init, out = str(EX / "saxpy.init.arrow"), d / "out.arrow"
    vcg = EX / "vcg"
    return [
        ("run", ["run", str(d / "s.tbs"), "--init", init, "--out", str(out), "--backend", backend], out),
        ("run --fuse", ["run", str(d / "s.tbs"), "--init", init, "--out", str(out), "--fuse",
                        "--backend", backend], out),
        ("verify", ["verify", str(d / "no-such-dataset"), "--backend", backend], None),
        ("bench", ["bench", "--n", "16", "--repeat", "1", "--backend", backend], None),
        ("reduce", ["reduce", str(vcg / "hcw_input.arrow"), "--mapping", str(vcg / "hcw.json"), "--op", "Max",
                    "--out", str(out), "--backend", reduce_backend], out),
    ]


def exit_status(argv):
    try:
        return main(argv)
    except SystemExit as exc:             # argparse's usage errors
        return exc.code


def test_the_exit_table_states_the_rule():
    assert UNAVAILABLE == 3 and "usable GPU" in EXIT_CODES[3] and "backend" in EXIT_CODES[2]


@pytest.mark.parametrize("k", range(5))
def test_an_unknown_backend_name_is_a_usage_error(files, capsys, k):
    name, argv, out = commands(files, "nosuch", "nosuch")[k]
    assert exit_status(argv) == 2, name
    err = capsys.readouterr().err
    assert "Traceback" not in err and "invalid choice: 'nosuch'" in err.strip().splitlines()[-1]
    assert out is None or not out.exists()


@pytest.mark.parametrize("k,reduce_backend", [(k, "cupy") for k in range(5)] + [(4, "cuda")])
def test_a_gpu_backend_without_a_usable_gpu_exits_3_in_one_line_writing_nothing(files, capsys, no_gpu, k,
                                                                                reduce_backend):
    name, argv, out = commands(files, "gpu", reduce_backend)[k]
    assert exit_status(argv) == 3, name
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    backend = reduce_backend if name == "reduce" else "gpu"
    assert lines[0].startswith(f"tile-emu {name.split()[0]}: backend {backend}: ")
    assert (NO_GPU in lines[0]) if name != "reduce" else ("CuPy" in lines[0] or "Numba-CUDA" in lines[0])
    assert captured.out == "" and (out is None or not out.exists())


def test_auto_falls_back_to_cpu_without_a_gpu(files, capsys, no_gpu):
    out = files / "out.arrow"
    assert main(["run", str(files / "s.tbs"), "--init", str(EX / "saxpy.init.arrow"), "--out", str(out),
                 "--backend", "auto"]) == 0
    assert f"auto: no usable GPU: {NO_GPU}" in capsys.readouterr().err and out.exists()


@pytest.mark.parametrize("extra", [["--timing"], ["--fabric", str(ROOT / "emulator" / "pe.json")]])
def test_a_batch_backend_with_timing_or_fabric_is_a_usage_error(files, capsys, extra):
    """--timing and --fabric run one machine on the reference: another backend is not silently ignored."""
    out = files / "out.arrow"
    assert main(["run", str(files / "s.tbs"), "--out", str(out), "--backend", "cpu", *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--backend cpu" in err and not out.exists()


def test_a_backend_with_a_region_program_is_a_usage_error(capsys):
    assert main(["run", str(EX / "regions" / "pointwise.regions.json"), "--backend", "gpu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--backend" in err


def test_reduce_flits_names_an_unusable_backend_in_one_line(no_gpu):
    import numpy as np
    from fabric.vcg import Mapping, plan_reduce, reduce_flits
    from fabric.vcg.reduce import BackendUnavailable
    plan = plan_reduce(Mapping.parse("X = 1, A = 4, R = 60", "X", "R # 64", "A # 8"), "R", "trim")
    for backend in ("cupy", "cuda"):
        with pytest.raises(BackendUnavailable, match=f"^backend {backend}: [^\n]+$"):
            reduce_flits(np.zeros((64, 8), np.int32), np.full(64, 4, np.uint8), plan, "Max", backend)



class HostArrays:
    """NumPy dressed as a device array module (not numpy itself), so the engine takes its
    device path, memory check included, without a GPU."""

    def __getattr__(self, name):
        import numpy
        return getattr(numpy, name)


def test_a_batch_larger_than_the_free_device_memory_exits_3_before_allocating(files, capsys, monkeypatch):
    import emulator.batch as batch_module
    monkeypatch.setattr(batch_module, "resolve_backend", lambda name: ("gpu", HostArrays(), "gpu (stand-in)"))
    monkeypatch.setitem(sys.modules, "kernels.device", types.SimpleNamespace(free_device_bytes=lambda: 1000))
    out = files / "out.arrow"
    assert main(["run", str(files / "s.tbs"), "--init", str(EX / "saxpy.init.arrow"), "--out", str(out),
                 "--backend", "gpu"]) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "bytes of device memory; 1000 bytes are free" in err
    assert not out.exists()
