"""Golden vectors under numeric profile a5 (docs/numerics.md "Profile a5"): the coverage classes
aim at the edges where a5 and ieee differ, and a dataset generated under a5 verifies under a5
and fails when replayed under ieee."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from emulator.cli import main
from emulator.golden import coverage as C
from emulator.golden.space import space
from isa import instructions as I
from kernels.numeric.profiles import PROFILES


def _ctx(op, src, dst=None):
    return C.Context(I.lookup(op), space(src), space(dst or src))


def test_large_quotient_class_gives_trem_quotients_of_2_to_24_and_more():
    rng = np.random.default_rng(1)
    for name in ("FP16", "FP32", "BF16"):
        ctx = _ctx("TREM", name)
        assert C.BY_NAME["large_quotient"] in C.applicable(ctx)
        x, y = (ctx.src.values(v) for v in C.BY_NAME["large_quotient"].gen(ctx, rng, 400))
        assert (y != 0).all() and (np.abs(x / y) >= 2.0 ** 24).mean() > 0.9, name
    assert C.BY_NAME["large_quotient"] not in C.applicable(_ctx("TREM", "E4M3"))   # range too narrow


def test_subnormal_quotient_class_gives_tdiv_quotients_near_the_smallest_subnormal():
    rng = np.random.default_rng(2)
    ctx = _ctx("TDIV", "FP16")
    x, y = (ctx.src.values(v) for v in C.BY_NAME["subnormal_quotient"].gen(ctx, rng, 400))
    q = np.abs(x / y) / 2.0 ** -24
    assert (q > 0.4).all() and (q < 3.5).all() and ((q > 0.9) & (q < 1.1)).sum() > 20


@pytest.mark.parametrize("src,dst", [("FP16", "U8"), ("FP16", "S8"), ("FP16", "S16"), ("FP32", "S16"),
                                     ("FP32", "S32")])
def test_out_of_range_class_gives_values_whose_rounded_integer_does_not_fit(src, dst):
    rng = np.random.default_rng(3)
    ctx = _ctx("TCVT", src, dst)
    v = ctx.src.values(C.BY_NAME["out_of_range_int"].gen(ctx, rng, 400)[0])
    lo, hi = {"U8": (0, 255), "S8": (-128, 127), "S16": (-32768, 32767), "S32": (-2 ** 31, 2 ** 31 - 1)}[dst]
    assert ((np.round(v) < lo) | (np.round(v) > hi)).mean() > 0.9
    assert C.BY_NAME["out_of_range_int"] not in C.applicable(_ctx("TCVT", "FP16", "S32"))   # always fits


def _generate(out, ops, dtypes, profile, extra=()):
    assert main(["golden", "--ops", ops, "--dtypes", dtypes, *extra, "--cases", "400", "--seed", "1",
                 "--profile", profile, "--quiet", "--out", str(out)]) == 0


def _relabel(src, dst, name):
    shutil.copytree(src, dst)
    m = json.loads((dst / "manifest.json").read_text())
    m["profile"] = {"name": name, "version": PROFILES[name].version}
    m["generator"]["profile"] = name
    (dst / "manifest.json").write_text(json.dumps(m))
    (dst / "generation.json").write_text(json.dumps(m["generator"]))


@pytest.mark.parametrize("ops,dtypes,extra", [
    ("TREM,TDIV,TRSQRT,TRECIP", "FP16,FP32", ()),
    ("TCVT", "FP16", ("--dst-dtypes", "U8,S8,S16", "--sat", "0")),
])
def test_an_a5_dataset_verifies_under_a5_and_fails_under_ieee(tmp_path, capsys, ops, dtypes, extra):
    _generate(tmp_path / "a5", ops, dtypes, "a5", extra)
    m = json.loads((tmp_path / "a5" / "manifest.json").read_text())
    assert m["profile"] == {"name": "a5", "version": "1.0"}
    assert main(["verify", str(tmp_path / "a5"), "--quiet"]) == 0
    capsys.readouterr()
    _relabel(tmp_path / "a5", tmp_path / "as_ieee", "ieee")
    assert main(["verify", str(tmp_path / "as_ieee"), "--quiet"]) == 1       # the rules differ there
    assert "MISMATCH" in capsys.readouterr().out


def test_resuming_a_dataset_of_another_a5_version_is_one_line_and_writes_nothing(tmp_path, capsys):
    """A finished a5 dataset whose manifest names another version of the rules: --resume would
    relabel its files with this build's version; it is refused (exit 1, one line), the folder
    byte for byte as it was."""
    out = tmp_path / "a5"
    argv = ["golden", "--ops", "TREM", "--dtypes", "FP16", "--cases", "40", "--seed", "3", "--profile", "a5",
            "--out", str(out), "--quiet"]
    assert main(argv) == 0
    m = json.loads((out / "manifest.json").read_text())
    m["profile"]["version"] = "0.9"
    (out / "manifest.json").write_text(json.dumps(m))
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main(argv + ["--resume"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "profile a5 version '0.9'" in err, err
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
