"""`tile-emu compile` fills Numba's on-disk cache before timed work (issue 32 target 5): after it,
a first stream-golden run in a fresh process compiles nothing -- every loop it meets loads from
the cache -- and the command's summary names what it made ready."""
from __future__ import annotations

import os
import pathlib
import pickle
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def cached_bodies(cache: pathlib.Path) -> dict:
    """{index file: its signatures} of a Numba cache folder."""
    out = {}
    for p in cache.rglob("*.nbi"):
        with open(p, "rb") as f:
            pickle.load(f)                      # Numba's version
            _, overloads = pickle.loads(f.read())
        out[p.name] = set(overloads)
    return out


@pytest.mark.slow
def test_after_compile_a_first_golden_run_compiles_nothing(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "emulator.cli", "compile"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, check=True)
    assert "specialisations of" in done.stdout and str(tmp_path / "cache") in done.stdout
    before = cached_bodies(tmp_path / "cache")
    assert before
    subprocess.run([sys.executable, "-m", "emulator.cli", "golden", "--streams", "--blocks", "8", "--cases", "64",
                    "--seed", "7", "--out", str(tmp_path / "g"), "--quiet"], env=env, cwd=tmp_path, check=True,
                   capture_output=True)
    assert cached_bodies(tmp_path / "cache") == before
