"""A run that needs an optional library this machine lacks (gmpy2 for TEXP's MPFR fallback, CuPy,
distributed) ends with one line naming it and exit 3 (UNAVAILABLE: this machine cannot run it), never a traceback."""
from __future__ import annotations

import pytest

from emulator import cli
from kernels.numeric import specials, transcendental


@pytest.fixture(autouse=True)
def fresh_exp_ranges():
    """As on a machine that never ran TEXP: TEXP's decided ranges (kept per format and profile
    once an earlier test derived them from the reference) are derived again, so the run asks
    for gmpy2 as a first run would."""
    specials.exp_ranges.cache_clear()
    yield
    specials.exp_ranges.cache_clear()


def test_a_missing_library_is_one_line_and_exit_3(monkeypatch, tmp_path, capsys):
    def missing():
        raise ImportError("TEXP/TLOG/TRSQRT need gmpy2 (MPFR) for their constants and exact fallback: pip install gmpy2")
    monkeypatch.setattr(transcendental, "_need_gmpy2", missing)
    monkeypatch.setattr(transcendental, "_constants", lambda: missing())
    status = cli.main(["golden", "--ops", "TEXP", "--dtypes", "FP32", "--cases", "4", "--out", str(tmp_path / "v"),
                       "--quiet"])
    err = capsys.readouterr().err
    assert status == 3
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("tile-emu golden: cannot run: ") and "gmpy2" in err


def test_a_broken_import_inside_tile_emu_is_a_bug_not_exit_3(monkeypatch, tmp_path):
    """Exit 3 says "install a library"; an ImportError naming one of tile-emu's own packages
    (a missing module or name inside isa/kernels/fabric/emulator) is a bug and is not hidden
    behind it."""
    def broken():
        raise ImportError("cannot import name 'nope' from 'kernels.numeric'", name="kernels.numeric")
    monkeypatch.setattr(transcendental, "_need_gmpy2", broken)
    monkeypatch.setattr(transcendental, "_constants", lambda: broken())
    with pytest.raises(ImportError, match="nope"):
        cli.main(["golden", "--ops", "TEXP", "--dtypes", "FP32", "--cases", "4", "--out", str(tmp_path / "v"),
                  "--quiet"])
