"""Golden vectors (docs/golden-format.md): determinism, replay, coverage, TestFloat export,
bad input.  Expected outcomes are checked against references computed here (softfloatpy,
exact fractions), not against the emulator."""
from __future__ import annotations

import json
import os
import pathlib
import shutil
from fractions import Fraction

import numpy as np
import pyarrow.parquet as pq
import pytest
import softfloatpy as sf

from emulator.cli import main
from emulator.golden import dataset as D
from emulator.golden.rows import unpack_rows

ARGS = ["--cases", "120", "--seed", "7", "--quiet"]


def generate(out, *extra, ops="TADD,TCVT", dtypes="FP32,E4M3"):
    return main(["golden", "--ops", ops, "--dtypes", dtypes, "--rmodes", "RNE,RTZ", "--sat", "0",
                 *ARGS, "--out", str(out), *extra])


def data_files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(pathlib.Path(folder).rglob("*.parquet"))}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("golden") / "v"
    assert generate(out) == 0
    return out


def rows(folder, partition):
    return pq.read_table(pathlib.Path(folder) / partition / "part-00000.parquet").to_pylist()


# ---------------------------------------------------------------------------- dataset


def test_manifest_names_versions_parameters_and_checksums(dataset):
    m = json.loads((dataset / "manifest.json").read_text())
    assert m["format"] == D.FORMAT and m["profile"] == {"name": "ieee", "version": "1.0"}
    assert m["generator"]["seed"] == 7 and m["generator"]["cases"] == 120
    files = [f for p in m["partitions"] for f in p["files"]]
    assert len(files) == 2 + 2 * 2 * 2          # TADD x 2 dtypes + TCVT x 2 src x 2 dst x 2 modes
    for f in files:
        assert f["rows"] == 120 and len(f["sha256"]) == 64
        assert D.sha256(dataset / f["path"]) == f["sha256"]


def test_same_seed_gives_byte_identical_files(dataset, tmp_path):
    assert generate(tmp_path / "again") == 0
    assert data_files(tmp_path / "again") == data_files(dataset)


def test_a_local_dask_cluster_writes_the_same_bytes(dataset, tmp_path):
    pytest.importorskip("distributed")
    assert generate(tmp_path / "dask", "--workers", "2") == 0
    assert data_files(tmp_path / "dask") == data_files(dataset)


def test_verify_replays_every_case(dataset, capsys):
    assert main(["verify", str(dataset), "--quiet"]) == 0
    assert "1,200 cases match" in capsys.readouterr().out


def test_resume_keeps_finished_files_and_completes_the_rest(dataset, tmp_path):
    out = tmp_path / "r"
    shutil.copytree(dataset, out)
    (out / "manifest.json").unlink()
    victim = out / "op=TADD/dtype=E4M3/part-00000.parquet"
    victim.unlink()
    kept = out / "op=TADD/dtype=FP32/part-00000.parquet"
    before = kept.stat().st_mtime_ns
    assert generate(out, "--resume") == 0
    assert kept.stat().st_mtime_ns == before
    assert data_files(out) == data_files(dataset)
    assert (out / "manifest.json").read_bytes() == (dataset / "manifest.json").read_bytes()


# ---------------------------------------------------------------------------- contents


def _f32(bits):
    return sf.Float32.from_bytes(int(bits).to_bytes(4, "big"))


def test_expected_fp32_sums_match_softfloat(dataset):
    sf.set_rounding_mode(sf.RoundingMode.NEAR_EVEN)
    sf.set_tininess_mode(sf.TininessMode.AFTER_ROUNDING)
    checked = 0
    for r in rows(dataset, "op=TADD/dtype=FP32"):
        if r["outcome"] != "commit":
            continue
        a, b = r["inputs"][0], r["inputs"][len(r["inputs"]) // 2]
        out = r["outputs"][0]
        va = np.frombuffer(a["payload"], "<u4").reshape(a["Row"], a["Col"])
        vb = np.frombuffer(b["payload"], "<u4").reshape(b["Row"], b["Col"])
        vo = np.frombuffer(out["payload"], "<u4").reshape(out["Row"], out["Col"])
        for i in range(a["ValidRow"]):
            for j in range(a["ValidCol"]):
                s = sf.f32_add(_f32(va[i, j]), _f32(vb[i, j]))
                if sf.f32_is_nan(s):
                    assert np.isnan(np.uint32(vo[i, j]).view(np.float32))
                else:
                    assert int(vo[i, j]) == int.from_bytes(s.to_bytes(), "big")
                checked += 1
    assert checked > 500


def test_illegal_classes_record_the_rejection_they_name(dataset):
    seen = set()
    for r in rows(dataset, "op=TADD/dtype=E4M3"):
        if r["class"].startswith("illegal_"):
            assert r["outcome"] == "reject" and r["outputs"] == []
            assert r["reason"].lower() == r["class"][len("illegal_"):]
            seen.add(r["reason"])
    assert {"SOURCE_MISSING", "SOURCE_UNDEFINED", "DIM_ZERO", "CAPACITY"} <= seen


def _e4m3(code):
    s, e, m = code >> 7, code >> 3 & 0xF, code & 7
    v = Fraction(m, 8) * Fraction(2) ** -6 if e == 0 else (1 + Fraction(m, 8)) * Fraction(2) ** (e - 7)
    return -v if s else v


def test_tie_cases_are_exact_ties_of_e4m3_addition(dataset):
    finite = sorted({_e4m3(c) for c in range(256) if (c & 0x7F) != 0x7F})
    ties = total = 0
    for r in rows(dataset, "op=TADD/dtype=E4M3"):
        if r["class"] != "tie":
            continue
        a, b = (np.frombuffer(t["payload"], np.uint8) for t in r["inputs"])
        for x, y in zip(a[:8], b[:8]):
            exact = _e4m3(int(x)) + _e4m3(int(y))
            hi = next((v for v in finite if v >= exact), None)
            lo = next((v for v in reversed(finite) if v <= exact), None)
            total += 1
            ties += hi is not None and lo is not None and hi != lo and exact == (hi + lo) / 2
    assert total and ties / total > 0.8


def test_coverage_table_marks_impossible_classes(dataset, capsys):
    assert main(["golden", "--coverage", str(dataset)]) == 0
    out = capsys.readouterr().out
    line = {l.split()[0]: l.split()[1:] for l in out.splitlines()[1:-1]}
    header = out.splitlines()[0].split()
    col = {name: i for i, name in enumerate(header)}
    assert line["infinities"][col["TADD.E4M3"]] == "n/a"          # E4M3 has no infinity
    assert line["infinities"][col["TADD.FP32"]] != "n/a"
    assert line["int_divide_by_zero" if "int_divide_by_zero" in line else "illegal_int_divide_by_zero"][0] == "n/a"
    assert "(complete)" in out


def test_textract_cases_copy_the_window_their_gprs_name(tmp_path):
    """Decision 126: destination [r, c] = source [row_offset + r, column_offset + c], offsets in the
    low 16 bits of the GPRs B.IOR names; checked here on the raw rows, for NORM tiles."""
    out = tmp_path / "x"
    assert main(["golden", "--ops", "TEXTRACT,TINSERT", "--dtypes", "FP16", *ARGS, "--out", str(out)]) == 0
    checked = 0
    for r in rows(out, "op=TEXTRACT/dtype=FP16"):
        if r["outcome"] != "commit":
            continue
        regs = {(g["pe"], g["index"]): g["value"] for g in r["gprs"]}
        for o in r["outputs"]:
            src = next(t for t in r["inputs"] if t["pe"] == o["pe"])
            if o["Layout"] or src["Layout"]:                     # NORM tiles only
                continue
            s = np.frombuffer(src["payload"], "<u2").reshape(src["Row"], src["Col"])
            d = np.frombuffer(o["payload"], "<u2").reshape(o["Row"], o["Col"])
            r0, c0 = regs.get((o["pe"], 1), 0) & 0xFFFF, regs.get((o["pe"], 2), 0) & 0xFFFF
            vr, vc = o["ValidRow"], o["ValidCol"]
            assert (d[:vr, :vc] == s[r0:r0 + vr, c0:c0 + vc]).all()
            assert o["status"] == 0                  # TEXTRACT publishes no numeric status
            checked += 1
    assert checked > 50
    reasons = {r["reason"] for r in rows(out, "op=TINSERT/dtype=FP16") if r["class"] == "illegal_offset_range"}
    assert reasons == {"OFFSET_RANGE"}
    assert main(["verify", str(out), "--quiet"]) == 0


def _img2col_reference(fm: dict, fmap: np.ndarray, pad: int, pos_m: int, pos_k: int, vrow: int, vcol: int):
    """Decision 128 (docs/machine.md), element by element: m = posM + r -> (n, d, outRow, outCol),
    k = posK + c -> (c1, kernelRow, kernelCol, c0); the input position outRow*strideH +
    kernelRow*dilationH - padTop (columns likewise) outside the map, or a channel c1*C0 + c0 at or
    beyond `channels`, reads the padding value."""
    out_h = (fm["H"] + fm["padTop"] + fm["padBottom"] - fm["dilationH"] * (fm["filterH"] - 1) - 1) // fm["strideH"] + 1
    out_w = (fm["W"] + fm["padLeft"] + fm["padRight"] - fm["dilationW"] * (fm["filterW"] - 1) - 1) // fm["strideW"] + 1
    x = fmap.reshape(fm["N"], fm["D"], fm["C1"], fm["H"], fm["W"], fm["C0"])
    want = np.zeros((vrow, vcol), fmap.dtype)
    for r in range(vrow):
        m = pos_m + r
        n, d, oh, ow = m // (fm["D"] * out_h * out_w), m // (out_h * out_w) % fm["D"], m // out_w % out_h, m % out_w
        for c in range(vcol):
            k = pos_k + c
            c1, kr = k // (fm["filterH"] * fm["filterW"] * fm["C0"]), k // (fm["filterW"] * fm["C0"]) % fm["filterH"]
            kc, c0 = k // fm["C0"] % fm["filterW"], k % fm["C0"]
            ih = oh * fm["strideH"] + kr * fm["dilationH"] - fm["padTop"]
            iw = ow * fm["strideW"] + kc * fm["dilationW"] - fm["padLeft"]
            inside = 0 <= ih < fm["H"] and 0 <= iw < fm["W"] and c1 * fm["C0"] + c0 < fm["channels"]
            want[r, c] = x[n, d, c1, ih, iw, c0] if inside else pad
    return want, fm["N"] * fm["D"] * out_h * out_w, fm["C1"] * fm["filterH"] * fm["filterW"] * fm["C0"]


def test_timg2col_cases_follow_decision_128(tmp_path):
    """TIMG2COL golden rows: each committed case's valid rectangle equals Decision 128's formula
    computed here from the row's own feature-map descriptor, payload and offsets (r1 = posM,
    r2 = posK); the feature-map descriptor round-trips through the rows (verify replays them)."""
    from emulator.tiles import FeatureMap
    out = tmp_path / "x"
    assert main(["golden", "--ops", "TIMG2COL", "--dtypes", "FP16,S8", *ARGS, "--out", str(out)]) == 0
    checked = {"NC1HWC0": 0, "NDC1HWC0": 0}
    for part, raw in (("op=TIMG2COL/dtype=FP16", "<u2"), ("op=TIMG2COL/dtype=S8", "u1")):
        for r in rows(out, part):
            if r["outcome"] != "commit":
                continue
            regs = {(g["pe"], g["index"]): g["value"] for g in r["gprs"]}
            for o in r["outputs"]:
                src = next(t for t in r["inputs"] if t["pe"] == o["pe"])
                fm = dict(zip(FeatureMap.PARAMS, src["fmap_params"]))
                assert src["location"] == "Matrix" and (src["Row"], src["Col"]) == (
                    fm["N"] * fm["D"] * fm["C1"] * fm["H"] * fm["W"], fm["C0"])
                pos_m, pos_k = regs.get((o["pe"], 1), 0) & 0xFFFF, regs.get((o["pe"], 2), 0) & 0xFFFF
                vr, vc = o["ValidRow"], o["ValidCol"]
                want, m_ext, k_ext = _img2col_reference(fm, np.frombuffer(src["payload"], raw), src["fmap_pad_bits"],
                                                        pos_m, pos_k, vr, vc)
                assert pos_m + vr <= m_ext and pos_k + vc <= k_ext
                d = np.frombuffer(o["payload"], raw).reshape(o["Row"], o["Col"])
                assert (d[:vr, :vc] == want).all(), (r["case"], r["class"])
                assert o["location"] == "Matrix" and o["Layout"] == 0 and o["fmap_layout"] == ""
                checked[src["fmap_layout"]] += 1
        reasons = {r["class"]: r["reason"] for r in rows(out, part) if r["class"].startswith("illegal_")}
        assert reasons["illegal_descriptor_invalid"] == "DESCRIPTOR_INVALID"
        assert reasons["illegal_offset_range"] == "OFFSET_RANGE"
    assert checked["NC1HWC0"] > 50
    for backend in ("cpu", "reference"):
        assert main(["verify", str(out), "--backend", backend, "--quiet"]) == 0


def test_a_feature_map_descriptor_edited_in_the_rows_is_a_mismatch(tmp_path, capsys):
    """The replay rebuilds the feature map from the rows: a changed padding value is caught."""
    import pyarrow as pa
    out = tmp_path / "x"
    assert main(["golden", "--ops", "TIMG2COL", "--dtypes", "FP16", *ARGS, "--out", str(out)]) == 0
    f = out / "op=TIMG2COL/dtype=FP16/part-00000.parquet"
    t = pq.read_table(f).to_pylist()
    for r in t:
        for tile in r["inputs"]:
            tile["fmap_pad_bits"] ^= 1
            tile["fmap_params"][-1] = 1              # channels = 1: most reads become padding
    pq.write_table(pa.Table.from_pylist(t, schema=pq.read_schema(f)), f)
    m = json.loads((out / "manifest.json").read_text())
    for p in m["partitions"]:
        for rec in p["files"]:
            rec["sha256"], rec["bytes"] = D.sha256(out / rec["path"]), f.stat().st_size
    (out / "manifest.json").write_text(json.dumps(m))
    assert main(["verify", str(out), "--quiet"]) == 1
    assert "outputs.payload" in capsys.readouterr().out


# ---------------------------------------------------------------------------- TestFloat

TF_FLAGS = [(sf.ExceptionFlag.INEXACT, 1), (sf.ExceptionFlag.UNDERFLOW, 2), (sf.ExceptionFlag.OVERFLOW, 4),
            (sf.ExceptionFlag.INFINITE, 8), (sf.ExceptionFlag.INVALID, 16)]


def _export(folder, capsysbinary, *args):
    capsysbinary.readouterr()
    assert main(["golden", "export", str(folder), "--format", "testfloat", *args]) == 0
    return capsysbinary.readouterr().out.decode().splitlines()


@pytest.mark.parametrize("args, fn, mode, wide", [
    (("--op", "TADD", "--dtype", "FP32"), sf.f32_add, "NEAR_EVEN", (4, 4)),
    (("--op", "TCVT", "--dtype", "FP32", "--dst", "FP32", "--rmode", "RTZ"), None, None, None),
])
def test_testfloat_lines_match_softfloat(dataset, capsysbinary, args, fn, mode, wide):
    if fn is None:      # FP32 -> FP32 is not a TestFloat function
        assert main(["golden", "export", str(dataset), "--format", "testfloat", *args]) == 1
        return
    lines = _export(dataset, capsysbinary, *args)
    assert len(lines) > 500
    sf.set_tininess_mode(sf.TininessMode.AFTER_ROUNDING)
    sf.set_rounding_mode(getattr(sf.RoundingMode, mode))
    for line in lines:
        a, b, r, f = line.split()
        sf.set_exception_flags(0)
        s = fn(_f32(int(a, 16)), _f32(int(b, 16)))
        raised = sf.get_exception_flags()
        want_f = sum(t for flag, t in TF_FLAGS if raised & flag)
        assert int(f, 16) == want_f, line
        if not sf.f32_is_nan(s):
            assert int(r, 16) == int.from_bytes(s.to_bytes(), "big"), line


def test_testfloat_conversion_lines_match_softfloat(tmp_path, capsysbinary):
    out = tmp_path / "cvt"
    assert main(["golden", "--ops", "TCVT", "--dtypes", "FP32", "--dst-dtypes", "FP16", "--rmodes", "RTZ,RNA",
                 "--sat", "0", *ARGS, "--out", str(out)]) == 0
    sf.set_tininess_mode(sf.TininessMode.AFTER_ROUNDING)
    for rmode, sfm in (("RTZ", "MIN_MAG"), ("RNA", "NEAR_MAX_MAG")):
        lines = _export(out, capsysbinary, "--op", "TCVT", "--dtype", "FP32", "--dst", "FP16", "--rmode", rmode)
        assert len(lines) > 300
        sf.set_rounding_mode(getattr(sf.RoundingMode, sfm))
        for line in lines:
            a, r, f = line.split()
            sf.set_exception_flags(0)
            s = sf.f32_to_f16(_f32(int(a, 16)))
            raised = sf.get_exception_flags()
            assert int(f, 16) == sum(t for flag, t in TF_FLAGS if raised & flag), line
            if not sf.f16_is_nan(s):
                assert int(r, 16) == int.from_bytes(s.to_bytes(), "big"), line


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("argv, message", [
    (["--ops", "TFOO", "--dtypes", "FP16"], "unknown op 'TFOO'"),
    (["--ops", "TADD", "--dtypes", "FP99"], "unknown DataType 'FP99'"),
    (["--ops", "TAND", "--dtypes", "FP16"], "TAND does not support FP16; supported: S16, S32"),
    (["--ops", "TIMG2COL", "--dtypes", "FP64"], "TIMG2COL does not support FP64"),
])
def test_bad_names_are_one_line_errors(tmp_path, capsys, argv, message):
    assert main(["golden", *argv, "--cases", "5", "--out", str(tmp_path / "x")]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "x").exists()


def test_a_non_empty_out_needs_resume_and_resume_needs_the_same_parameters(dataset, tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert generate(out) == 1
    assert "is not empty" in capsys.readouterr().err
    assert (out / "keep.txt").read_text() == "mine"
    again = tmp_path / "again"
    shutil.copytree(dataset, again)
    assert main(["golden", "--ops", "TADD", "--dtypes", "FP32", *ARGS, "--out", str(again), "--resume"]) == 1
    assert "other parameters" in capsys.readouterr().err


def test_damaged_datasets_are_named(dataset, tmp_path, capsys):
    bad = tmp_path / "bad"
    shutil.copytree(dataset, bad)
    f = bad / "op=TADD/dtype=FP32/part-00000.parquet"
    f.write_bytes(f.read_bytes()[: 1000])
    assert main(["verify", str(bad), "--quiet"]) == 1
    assert "op=TADD/dtype=FP32/part-00000.parquet" in capsys.readouterr().err
    m = json.loads((dataset / "manifest.json").read_text())
    m["partitions"][0]["files"][0]["rows"] += 1
    shutil.rmtree(bad)
    shutil.copytree(dataset, bad)
    (bad / "manifest.json").write_text(json.dumps(m))
    assert main(["verify", str(bad), "--quiet"]) == 1
    assert "rows, the manifest says" in capsys.readouterr().err
    (bad / "manifest.json").write_text("{" * 100000)
    assert main(["verify", str(bad), "--quiet"]) == 1
    assert "not valid JSON" in capsys.readouterr().err


@pytest.mark.parametrize("through_memory", [True, False])
def test_a_failed_write_leaves_no_file_under_its_final_name(tmp_path, monkeypatch, capsys, through_memory):
    def boom(table, where, **kw):          # half a file written, then the disk is full
        if isinstance(where, (str, pathlib.Path)):
            pathlib.Path(where).write_bytes(b"PAR1 half")
        else:                              # a small file's buffer (dataset.ONE_READ_BYTES)
            where.write(b"PAR1 half")
        raise OSError(28, "No space left on device")
    if not through_memory:
        monkeypatch.setattr(D, "ONE_READ_BYTES", -1)
    monkeypatch.setattr(D.pq, "write_table", boom)
    assert generate(tmp_path / "f", ops="TADD", dtypes="FP32") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write (No space left on device)" in err and "--resume" in err
    assert not list((tmp_path / "f").rglob("*.parquet"))
    assert not [p for p in (tmp_path / "f").rglob("*") if p.name.endswith(".tmp")]


def test_an_unreachable_scheduler_is_one_line(tmp_path, capsys, monkeypatch):
    pytest.importorskip("distributed")
    from emulator import cluster
    monkeypatch.setattr(cluster, "SCHEDULER_TIMEOUT_S", 1)
    assert generate(tmp_path / "s", "--scheduler", "tcp://127.0.0.1:9", ops="TADD", dtypes="FP32") == 1
    assert "no Dask scheduler answered" in capsys.readouterr().err
