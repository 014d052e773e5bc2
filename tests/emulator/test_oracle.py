"""verify --oracle (emulator/golden/oracle.py): stored results checked against SoftFloat, MPFR
and exact integers, never the emulator's kernels; a planted wrong value or status is caught and
named; the references themselves are held to the seed's and the profile's stated facts."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from emulator.cli import main
from emulator.golden import oracle as O
from emulator.golden.dataset import sha256
from emulator.golden.rows import SCHEMA

ARGS = ["--cases", "40", "--seed", "11", "--quiet"]


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """Two datasets (a manifest must be exactly what its generator parameters give, so float
    and integer partitions cannot share one): floats in d/, integers in i/."""
    root = tmp_path_factory.mktemp("oracle")
    assert main(["golden", "--ops", "TADD,TEXP,TMAX", "--dtypes", "FP32,E4M3", *ARGS, "--out", str(root / "d")]) == 0
    assert main(["golden", "--ops", "TSHR,TDIV", "--dtypes", "S16", *ARGS, "--out", str(root / "i")]) == 0
    return root


def _dataset(root, part):
    return root / ("i" if "S16" in part else "d")


def _report(folder, capsys) -> dict:
    assert main(["verify", str(folder), "--oracle", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "every checked result matches" in out
    return {line.split(":")[0].strip(): line for line in out.splitlines() if line.startswith("  ")}


def test_every_result_with_a_reference_matches_and_the_report_says_which_had_none(datasets, capsys):
    lines = _report(datasets / "d", capsys)
    assert "TADD (FP32)" in lines["softfloat"]
    assert "TADD (E4M3)" in lines["mpfr"] and "TEXP (E4M3, FP32)" in lines["mpfr"]
    assert lines["no independent reference"].endswith("TMAX (E4M3, FP32)")
    lines = _report(datasets / "i", capsys)
    assert "TDIV (S16)" in lines["exact"] and "TSHR (S16)" in lines["exact"]


def _plant(folder, part, edit):
    """Rewrite one data file with `edit(rows)` applied and its manifest entry updated, as a
    generator with a bug would have written it."""
    path = folder / part / "part-00000.parquet"
    rows = pq.read_table(path).to_pylist()
    case = edit(rows)
    pq.write_table(pq.read_table(path).from_pylist(rows, schema=SCHEMA), path)
    m = json.loads((folder / "manifest.json").read_text())
    for p in m["partitions"]:
        for f in p["files"]:
            if f["path"] == f"{part}/part-00000.parquet":
                f["sha256"], f["bytes"] = sha256(path), path.stat().st_size
    (folder / "manifest.json").write_text(json.dumps(m))
    return case


def _first_commit(rows):
    return next(i for i, r in enumerate(rows) if r["outcome"] == "commit" and r["class"] == "random")


@pytest.mark.parametrize("part,width", [("op=TADD/dtype=FP32", "<u4"), ("op=TEXP/dtype=E4M3", "u1"),
                                        ("op=TSHR/dtype=S16", "<u2")])
def test_a_planted_wrong_expected_value_is_caught_and_named(datasets, tmp_path, capsys, part, width):
    folder = tmp_path / "d"
    shutil.copytree(_dataset(datasets, part), folder)

    def edit(rows):
        i = _first_commit(rows)
        out = rows[i]["outputs"][0]
        e = np.frombuffer(out["payload"], width).copy()
        e[0] ^= 1 << 1                                          # flip a low bit of the first element
        out["payload"] = e.tobytes()
        return rows[i]["case"], out["pe"]
    case, pe = _plant(folder, part, edit)
    assert main(["verify", str(folder), "--oracle", "--quiet"]) == 1
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith(f"{part}/part-00000.parquet: case {case} PE{pe} element 0: ") and "stored" in first
    assert "MISMATCH" in out


def test_a_planted_wrong_status_is_caught_by_the_softfloat_flags(datasets, tmp_path, capsys):
    folder = tmp_path / "d"
    shutil.copytree(datasets / "d", folder)

    def edit(rows):
        i = _first_commit(rows)
        rows[i]["outputs"][0]["status"] ^= O.NV
        return rows[i]["case"], rows[i]["outputs"][0]["pe"]
    case, pe = _plant(folder, "op=TADD/dtype=FP32", edit)
    assert main(["verify", str(folder), "--oracle", "--quiet"]) == 1
    assert f"case {case} PE{pe}: TADD.FP32: status: stored " in capsys.readouterr().out


# ---------------------------------------------------------------------------- the references

def u(*v, dtype=np.uint64):
    return np.array(v, dtype)


def test_mpfr_e4m3_overflow_is_nan_and_rsqrt_of_signed_zero_is_signed_infinity():
    # 448 + 32 = 480 rounds past the max finite 448: E4M3 has no infinity (docs/numerics.md)
    assert np.isnan(O.mpfr_values("TADD", "E4M3", [u(0x7E), u(0x60)]))[0]
    # 448 + 16 = 464: the tie rounds to even, 448 (docs/numerics.md's example)
    assert O.mpfr_values("TADD", "E4M3", [u(0x7E), u(0x58)])[0] == 448.0
    r = O.mpfr_values("TRSQRT", "FP16", [u(0x0000, 0x8000, 0x7C00)])
    assert r[0] == np.inf and r[1] == -np.inf and r[2] == 0 and not np.signbit(r[2])     # Decision 077
    assert O.mpfr_values("TEXP", "FP32", [u(0xFF800000)])[0] == 0.0                      # Decision 073
    assert O.mpfr_values("TLOG", "BF16", [u(0x8000)])[0] == -np.inf                      # Decision 074


def test_exact_integer_ops_follow_the_seed_sentences():
    bits, flags = O.integer_op("TSHR", "S8", [u(0x80, 0x80, 0x7F), u(1, 9, 3)])
    assert bits.tolist() == [0xC0, 0xC0, 0x0F] and not flags.any()       # sign fill; count = low 3 bits
    assert O.integer_op("TSHR", "U8", [u(0x80), u(1)])[0].tolist() == [0x40]
    assert O.integer_op("TSHL", "U16", [u(1), u(17)])[0].tolist() == [2]   # 17 & 15 = 1
    assert O.integer_op("TDIV", "S32", [u(0x80000000, 7), u(0xFFFFFFFF, 0xFFFFFFFE)])[0].tolist() == [0x80000000, 0xFFFFFFFD]
    assert O.integer_op("TREM", "S8", [u(0xF9), u(3)])[0].tolist() == [2]  # -7 mod 3 = 2 (divisor's sign)
    assert O.integer_op("TREM", "S8", [u(7), u(0xFD)])[0].tolist() == [0xFE]   # 7 mod -3 = -2


@pytest.mark.parametrize("mode,want", [("RNE", [2, 2, -2]), ("RNA", [3, 2, -3]), ("RTZ", [2, 2, -2]),
                                       ("RTM", [2, 2, -3]), ("RTP", [3, 3, -2]), ("RTO", [3, 3, -3]),
                                       ("DEFAULT", [2, 2, -2])])
def test_float_to_int_rounds_per_mode(mode, want):
    x = np.array([2.5, 2.25, -2.5], np.float32).view(np.uint32).astype(np.uint64)
    bits, flags = O.float_to_int("FP32", "S8", mode, [x])
    assert [int(b) - 256 if b >= 128 else int(b) for b in bits] == want and (flags == O.NX).all()


def test_float_to_int_bounds_and_nan():
    x = np.array([np.nan, np.inf, -1e10, 300.0], np.float32).view(np.uint32).astype(np.uint64)
    bits, flags = O.float_to_int("FP32", "U8", "RNE", [x])
    assert bits.tolist() == [0, 255, 0, 255] and (flags == O.NV).all()


def test_nan_conversion_keeps_sign_and_left_aligned_payload():
    """docs/numerics.md: FP32 0x7F800001 -> FP16 0x7E00 with NV; FP16 0x7C01 -> FP32 0x7FC02000 with NV."""
    assert O._nan_convert(0x7F800001, "FP32", "FP16") == (0x7E00, O.NV)
    assert O._nan_convert(0x7C01, "FP16", "FP32") == (0x7FC02000, O.NV)
    assert O._nan_convert(0xFE00, "FP16", "FP64") == (0xFFF8000000000000, 0)


def test_a_missing_softfloat_is_one_line(monkeypatch):
    import builtins
    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "softfloatpy":
            raise ImportError(name)
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(O.GoldenError, match="needs softfloatpy"):
        O.softfloat_op("TADD", "FP32", [u(0), u(0)])
