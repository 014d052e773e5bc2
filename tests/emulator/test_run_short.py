"""`tile-emu run` of a short stream (at most SHORT_STREAM_BLOCKS blocks) on one machine without
--backend runs on the reference with every numeric call on the NumPy reference
(kernels.numeric.tiers.interpreted), so the process never imports Numba (issue 32 target 7); it
prints and writes what `--backend cpu` and `--backend reference` do, byte for byte."""
from __future__ import annotations

import hashlib
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import isa
from emulator.cli import main
from emulator.commands import run as run_cmd
from isa.datatypes import datatype
from kernels.numeric import tiers

from emu_helpers import blk
from test_run_cpu_route import machine, op

ROOT = pathlib.Path(__file__).resolve().parents[2]


def short_streams():
    """Streams of at most 8 blocks: the four-op cycle on FP32 values with NaNs, infinities and
    subnormals, partial PE masks, TMAX, an FP16 add, a divide, and a stream that stops on a missing
    tile."""
    mixed = [op(k, mask=(15, 1, 6, 9)[k % 4]) for k in range(5)] + \
        [blk("TMAX", "FP32", (1, 2), 3, mask=15, vc=16, vr=4, col=16),
         blk("TADD", "FP16", (4, 5), 5, mask=15, vc=8, vr=2, col=8),
         blk("TDIV", "FP32", (3, 1), 2, mask=15, vc=16, vr=4, col=16)]
    converts = [blk("TCVT", "FP32", [1], 2, mask=15, vc=16, vr=4, col=16, DataType=datatype("FP16").code),
                blk("TCVT", "FP32", [3], 6, mask=15, vc=16, vr=4, col=16, DataType=datatype("E4M3").code, Sat=1),
                blk("TCVT", "FP32", [1], 7, mask=15, vc=16, vr=4, col=16, DataType=datatype("BF16").code),
                blk("TCVT", "FP16", [4], 8, mask=15, vc=8, vr=2, col=8, DataType=datatype("FP32").code)]
    missing = [op(k) for k in range(3)] + [blk("TADD", "FP32", (1, 7), 3, mask=15, vc=16, vr=4, col=16)]
    return {"cycle": (0, isa.encode([op(k) for k in range(8)])), "mixed": (1, isa.encode(mixed)),
            "missing": (2, isa.encode(missing)), "one": (3, isa.encode([op(1)])),
            "converts": (4, isa.encode(converts))}


def test_the_short_route_takes_streams_of_at_most_eight_blocks():
    assert run_cmd.SHORT_STREAM_BLOCKS == 8
    assert run_cmd.short_stream(isa.encode([op(k) for k in range(8)]))
    assert not run_cmd.short_stream(isa.encode([op(k) for k in range(9)]))
    assert not run_cmd.short_stream(isa.encode([op(1)])[:-4])      # a wrong header: the engine reports it


def digest(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "-"


@pytest.mark.parametrize("name", sorted(short_streams()))
def test_a_short_stream_gives_the_bytes_of_the_cpu_backend_and_the_reference(tmp_path, capsys, name):
    seed, data = short_streams()[name]
    (tmp_path / "s.tbs").write_bytes(data)
    machine(seed).save(tmp_path / "init.arrow")
    got = {}
    for backend in ("cpu", "reference", None):
        tag = backend or "default"
        out, log = tmp_path / "out.arrow", tmp_path / "log.jsonl"       # the same names: the same lines
        rc = main(["run", str(tmp_path / "s.tbs"), "--init", str(tmp_path / "init.arrow"), "--out", str(out),
                   "--log", str(log), *(["--backend", backend] if backend else [])])
        printed = capsys.readouterr()
        got[tag] = (rc, printed.out, printed.err, digest(out), digest(log))
        out.unlink(missing_ok=True)
        log.unlink(missing_ok=True)
    assert got["default"] == got["cpu"] == got["reference"]
    assert not tiers._INTERPRETED[0]            # the route leaves the tiers as it found them


def test_interpreted_tiers_give_the_compiled_tiers_bits():
    """Every floating op the short route meets, on NaNs, infinities, zeros and subnormals: the
    reference alone gives the bits and flags of the tier table's compiled tiers."""
    from isa.datatypes import datatype
    from kernels import numeric
    rng = np.random.default_rng(5)
    special = np.array([0x7FC00000, 0x7F800001, 0xFFC12345, 0x7F800000, 0xFF800000, 0x00000001, 0x807FFFFF,
                        0x00000000, 0x80000000, 0x7F7FFFFF, 0x00800000], np.uint32)
    x = np.concatenate([rng.integers(0, 1 << 32, 4000, dtype=np.uint64).astype(np.uint32),
                        np.repeat(special, len(special)), np.tile(special, len(special))])
    y = np.roll(x, 7)
    z = np.roll(x, 3)
    for op_, dt, ops in [("TADD", "FP32", (x, y)), ("TMUL", "FP32", (x, y)), ("TFMA", "FP32", (x, y, z)),
                         ("TDIV", "FP32", (x, y)), ("TADD", "FP16", (x.astype(np.uint16), y.astype(np.uint16))),
                         ("TMUL", "BF16", ((x >> 16).astype(np.uint16), (y >> 16).astype(np.uint16)))]:
        compiled = numeric.elementwise(op_, dt, *ops)
        with tiers.interpreted():
            assert tiers.select(op_, datatype(dt), tiers._profile("ieee"), len(ops)).name == "reference"
            ref = numeric.elementwise(op_, dt, *ops)
        assert np.array_equal(compiled[0], ref[0]) and np.array_equal(compiled[1], ref[1]), (op_, dt)


def test_interpreted_conversions_give_the_compiled_conversions_bits():
    from kernels import numeric
    rng = np.random.default_rng(6)
    x = rng.integers(0, 1 << 32, 5000, dtype=np.uint64).astype(np.uint32)
    h = rng.integers(0, 1 << 16, 5000, dtype=np.uint64).astype(np.uint16)
    for src, bits, dst, sat in [("FP32", x, "FP16", False), ("FP32", x, "BF16", False), ("FP32", x, "E4M3", True),
                                ("FP32", x, "E5M2", False), ("FP16", h, "FP32", False), ("BF16", h, "FP32", False),
                                ("FP32", x, "S16", True)]:
        compiled = numeric.convert(bits, src, dst, sat=sat)
        with tiers.interpreted():
            ref = numeric.convert(bits, src, dst, sat=sat)
        assert np.array_equal(compiled[0], ref[0]) and np.array_equal(compiled[1], ref[1]), (src, dst)


@pytest.mark.parametrize("name", ["one", "converts"])
def test_a_short_run_imports_no_numba(tmp_path, name):
    """In a fresh interpreter: `tile-emu run` of a one-block stream (and of four conversions),
    no --backend, ends without numba in sys.modules."""
    seed, data = short_streams()[name]
    (tmp_path / "s.tbs").write_bytes(data)
    machine(seed).save(tmp_path / "init.arrow")
    code = ("import contextlib, io, sys\nfrom emulator.cli import main\n"
            f"status = main(['run', {str(tmp_path / 's.tbs')!r}, '--init', {str(tmp_path / 'init.arrow')!r}, "
            f"'--out', {str(tmp_path / 'out.arrow')!r}, '-q'])\n"
            "print(status, any(m == 'numba' or m.startswith('numba.') for m in sys.modules))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, check=True)
    assert out.stdout.split() == ["0", "False"]
