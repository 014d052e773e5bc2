"""`tile-emu run --backend cpu` of one machine (and `tile-emu run` without --backend, whose default
is cpu) runs Machine(backend="cpu") -- the fast engine's
one-machine path, compiled block programs included (docs/machine.md "Compiled block
programs") -- and gives what `--backend reference` gives, byte for byte: the exit status, every
printed line, the --out state file and the --log file (Arrow IPC and JSON lines), for streams
that finish, streams of NaNs, infinities and subnormals, streams that stop on a fault (a missing
tile, an undefined element, a full store, a truncated stream), and machine K of a file of many."""
from __future__ import annotations

import hashlib
import pathlib

import numpy as np
import pytest

import isa
from emulator import Machine, MachineBatch, MachineConfig, blockprog
from emulator.batchio import save_machines
from emulator.cli import main

from emu_helpers import blk, record_results

ROOT = pathlib.Path(__file__).resolve().parents[2]
EX = ROOT / "examples"
SPECIAL32 = np.array([0x7FC00000, 0x7F800001, 0xFFC12345, 0x7F800000, 0xFF800000, 0x00000001, 0x807FFFFF,
                      0x00000000, 0x80000000, 0x7F7FFFFF, 0x00800000], np.uint64)


def fp32(rng, shape):
    """FP32 encodings: ordinary values of any magnitude with NaNs, infinities, zeros and subnormals."""
    with np.errstate(over="ignore"):
        bits = (rng.standard_normal(shape) * 10.0 ** rng.integers(-40, 39, shape)).astype(np.float32)
    bits = bits.view(np.uint32).astype(np.uint64)
    return np.where(rng.random(shape) < 0.1, SPECIAL32[rng.integers(0, len(SPECIAL32), shape)], bits)


def machine(seed: int, holes: bool = False) -> Machine:
    """4 PEs with FP32 tiles 1-3 (4x16) and FP16 tiles 4-5 (2x8); `holes`: tile 2 of PE 3 has an
    undefined element."""
    rng = np.random.default_rng(seed)
    m = Machine(MachineConfig(local_bytes=2048))
    for p in range(4):
        for t in (1, 2, 3):
            defined = np.ones((4, 16), bool)
            if holes and p == 3 and t == 2:
                defined[2, 5] = False
            m.write_tile(p, t, "FP32", fp32(rng, (4, 16)), defined=defined)
        for t in (4, 5):
            m.write_tile(p, t, "FP16", rng.integers(0, 1 << 16, (2, 8), dtype=np.uint64))
    return m


CYCLE = ["TFMA", "TADD", "TMUL", "TSUB"]


def op(k: int, mask: int = 15):
    mn = CYCLE[k % 4]
    srcs = (1, 2, 3) if mn == "TFMA" else (1 + k % 2, 2 - k % 2)
    return blk(mn, "FP32", srcs, 3 if k % 3 else 1, mask=mask, vc=16, vr=4, col=16)


def streams():
    cycle = [op(k) for k in range(24)]
    mixed = [op(k, mask=(15, 1, 6, 9)[k % 4]) for k in range(12)] + \
        [blk("TMAX", "FP32", (1, 2), 3, mask=15, vc=16, vr=4, col=16),
         blk("TADD", "FP16", (4, 5), 5, mask=15, vc=8, vr=2, col=8),
         blk("TDIV", "FP32", (3, 1), 2, mask=15, vc=16, vr=4, col=16)]
    missing = cycle[:5] + [blk("TADD", "FP32", (1, 7), 3, mask=15, vc=16, vr=4, col=16)] + cycle[5:9]
    full = cycle[:3] + [blk("TADD", "FP32", (1, 2), 9, mask=15, vc=16, vr=4, col=16, cap=2048)] + cycle[3:6]
    return {"cycle": (0, isa.encode(cycle)), "mixed": (1, isa.encode(mixed)),
            "missing": (2, isa.encode(missing)), "undefined": (3, isa.encode(cycle[:8])),
            "full": (4, isa.encode(full)), "truncated": (5, isa.encode(cycle[:6])[:-9])}


def sha(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_both(tmp_path, capsys, stream: pathlib.Path, init: pathlib.Path, *extra):
    """{backend: (exit status, stdout, stderr, sha256 of --out, of the .arrow log, of the .jsonl log)};
    backend None: no --backend (the default, cpu)."""
    got = {}
    for backend in ("reference", "cpu", None):
        hashes = []
        for suffix in (".arrow", ".jsonl"):
            out, log = tmp_path / "out.arrow", tmp_path / f"log{suffix}"      # the same names: the same lines
            rc = main(["run", str(stream), "--init", str(init), "--out", str(out), "--log", str(log),
                       *(["--backend", backend] if backend else []), *extra])
            printed = capsys.readouterr()
            hashes.append(sha(log))
        got[backend] = (rc, printed.out, printed.err, sha(out), *hashes)
    return got


@pytest.mark.parametrize("name", ["cycle", "mixed", "missing", "undefined", "full", "truncated"])
def test_one_machine_on_cpu_gives_the_references_bytes(tmp_path, capsys, name):
    seed, data = streams()[name]
    (tmp_path / "s.tbs").write_bytes(data)
    machine(seed, holes=name == "undefined").save(tmp_path / "init.arrow")
    got = run_both(tmp_path, capsys, tmp_path / "s.tbs", tmp_path / "init.arrow")
    assert got["cpu"] == got["reference"] == got[None]
    assert got["cpu"][0] == (0 if name in ("cycle", "mixed") else 1)


@pytest.mark.parametrize("name", ["saxpy", "absdiff", "window"])
def test_the_examples_on_cpu_give_the_references_bytes(tmp_path, capsys, name):
    (tmp_path / "s.tbs").write_bytes(isa.encode(isa.assemble_blocks((EX / f"{name}.s").read_text())))
    got = run_both(tmp_path, capsys, tmp_path / "s.tbs", EX / f"{name}.init.arrow")
    assert got["cpu"] == got["reference"] == got[None] and got["cpu"][0] == 0


def test_machine_k_of_a_file_of_many_on_cpu_gives_the_references_bytes(tmp_path, capsys):
    seed, data = streams()["missing"]
    (tmp_path / "s.tbs").write_bytes(data)
    save_machines([machine(7), machine(seed), machine(9)], tmp_path / "init.arrow")
    got = run_both(tmp_path, capsys, tmp_path / "s.tbs", tmp_path / "init.arrow", "--machine", "1")
    assert got["cpu"] == got["reference"] == got[None] and got["cpu"][0] == 1


@pytest.mark.parametrize("backend", [["--backend", "cpu"], []])
def test_one_machine_on_cpu_runs_on_the_machines_engine_not_a_batch(tmp_path, capsys, monkeypatch, backend):
    seed, data = streams()["cycle"]
    (tmp_path / "s.tbs").write_bytes(data)
    machine(seed).save(tmp_path / "init.arrow")
    ran = record_results(monkeypatch, blockprog.Program, "step")

    def no_batch(*a, **kw):
        raise AssertionError("a one-machine batch")
    monkeypatch.setattr(MachineBatch, "__init__", no_batch)
    assert main(["run", str(tmp_path / "s.tbs"), "--init", str(tmp_path / "init.arrow"), *backend, "-q"]) == 0
    assert any(ran)


def test_one_machine_on_the_reference_runs_no_program(tmp_path, capsys, monkeypatch):
    seed, data = streams()["cycle"]
    (tmp_path / "s.tbs").write_bytes(data)
    machine(seed).save(tmp_path / "init.arrow")

    def no_program(*a):
        raise AssertionError("a compiled block program on the reference")
    monkeypatch.setattr(blockprog.Program, "run", no_program)
    monkeypatch.setattr(blockprog.Program, "step", no_program)
    assert main(["run", str(tmp_path / "s.tbs"), "--init", str(tmp_path / "init.arrow"), "--backend", "reference",
                 "-q"]) == 0


def test_timing_and_fabric_still_run_on_the_reference_alone(tmp_path, capsys, monkeypatch):
    seed, data = streams()["cycle"]
    (tmp_path / "s.tbs").write_bytes(data)
    machine(seed).save(tmp_path / "init.arrow")
    assert main(["run", str(tmp_path / "s.tbs"), "--backend", "cpu", "--timing"]) == 2
    assert "--timing and --fabric run one machine on the reference backend" in capsys.readouterr().err

    def no_program(*a):
        raise AssertionError("a compiled block program under --timing")
    monkeypatch.setattr(blockprog.Program, "run", no_program)
    monkeypatch.setattr(blockprog.Program, "step", no_program)
    assert main(["run", str(tmp_path / "s.tbs"), "--init", str(tmp_path / "init.arrow"), "--timing"]) == 0
    assert "total" in capsys.readouterr().out.lower()
