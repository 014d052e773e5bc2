"""Coverage closure (docs/golden-format.md, "Allocation", "Boundary windows", "Crosses",
"Coverage as data"): every coverage point before any gets a second case, holes said out loud,
boundary windows really hit -- classified here from the stored operands with exact fractions
and ml_dtypes' decoders, not from the generator's labels --, coverage as JSON (validated
against the shipped schema) and UCIS (read back with pyucis)."""
from __future__ import annotations

import hashlib
import json
import pathlib
from fractions import Fraction

import jsonschema
import ml_dtypes
import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

from emulator.cli import main
from emulator.golden import closure, coverage as C, coverage_report as R, dataset as D

# ---------------------------------------------------------------------------- allocation


@st.composite
def class_sets(draw):
    """A random subset of the class table (at least one class), as a partition would have."""
    picks = draw(st.lists(st.sampled_from(C.CLASSES), min_size=1, max_size=len(C.CLASSES), unique_by=lambda c: c.name))
    return [c for c in C.CLASSES if c in picks]


@settings(max_examples=150, deadline=None)
@given(classes=class_sets(), n=st.integers(1, 400), equal=st.booleans(), cut=st.integers(0, 400))
def test_every_point_gets_a_case_before_any_gets_a_second(classes, n, equal, cut):
    pts = closure.points(classes)
    got = closure.counts_before(pts, n, equal)
    assert got.sum() == n
    if n >= len(pts):
        assert got.min() >= 1                      # closure at any size that allows it
    else:
        assert got.max() == 1 and (got == 1).sum() == n
    # a case is never a point's second while another point has none: along the sequence
    for m in range(1, min(n, len(pts)) + 1):
        assert closure.counts_before(pts, m, equal).max() == 1
    # chunks: the counts of any split add up to the whole (every process computes the same)
    cut = min(cut, n)
    assert (closure.counts(pts, 0, cut, equal) + closure.counts(pts, cut, n, equal) == got).all()
    # holes: exactly the classes none of whose points got a case, then the uncovered cells
    holes = closure.holes(pts, n, equal)
    zero_classes = [c.name for c in classes if all(k == 0 for p, k in zip(pts, got) if p.cls is c)]
    assert [h for h in holes if ":" not in h] == zero_classes
    covered = {cell for p, k in zip(pts, got) if k for cell in p.cells}
    assert [h for h in holes if ":" in h] == [f"{a}:{b}" for a, b in closure.cells(pts) if (a, b) not in covered]


@settings(max_examples=60, deadline=None)
@given(classes=class_sets(), k=st.integers(1, 6))
def test_per_class_gives_every_point_exactly_k(classes, k):
    pts = closure.points(classes)
    assert (closure.counts_before(pts, k * len(pts), True) == k).all()


def test_structural_and_illegal_classes_are_not_starved_at_small_sizes():
    part = D.Partition("TADD", "E4M3")
    pts = D.points_for(part)
    first = [pts[i].cls.kind for i in closure.priority(pts)[:12]]
    assert first.count("value") == first.count("shape") == first.count("illegal") == 4
    names = [pts[i].cls.name for i in closure.priority(pts)[:30]]
    assert {"pad_max", "pad_min", "all_pes", "partial_pe_mask", "dest_aliases_source"} <= set(names)


# ---------------------------------------------------------------------------- datasets


def golden(out, *args, ops="TADD", dtypes="E4M3,S16"):
    return main(["golden", "--ops", ops, "--dtypes", dtypes, "--seed", "7", "--quiet", *args, "--out", str(out)])


def shas(folder):
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(pathlib.Path(folder).rglob("*.parquet"))}


def test_holes_are_one_line_per_partition_recorded_and_marked(tmp_path, capsys):
    assert golden(tmp_path / "a", "--cases", "24") == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(" without a case (--cases 24; closure needs " in line for line in err)
    m = json.loads((tmp_path / "a" / "manifest.json").read_text())
    e4m3 = next(p for p in m["partitions"] if p["dtype"] == "E4M3")
    assert e4m3["holes"] and e4m3["holes"][0] in err[0]
    assert f"golden: op=TADD/dtype=E4M3: " in err[0] and str(len([h for h in e4m3["holes"] if ":" not in h])) in err[0]
    counts = {}
    for f in e4m3["files"]:
        counts.update(f["classes"])
    assert not any(counts.get(h) for h in e4m3["holes"] if ":" not in h)
    assert main(["golden", "--coverage", str(tmp_path / "a"), "--format", "json", "--out", str(tmp_path / "c.json")]) == 0
    doc = json.loads((tmp_path / "c.json").read_text())
    group = next(g for g in doc["covergroups"] if g["name"] == "op=TADD/dtype=E4M3")
    marked = [b["name"] for b in group["coverpoints"][0]["bins"] if b["status"] == "hole"]
    marked += [f"{cr['name']}:{b['name']}" for cr in group["crosses"] for b in cr["bins"] if b["status"] == "hole"]
    assert sorted(marked) == sorted(e4m3["holes"])
    # at --cases of at least the points, nothing is a hole
    n = len(D.points_for(D.Partition("TADD", "E4M3")))
    assert golden(tmp_path / "b", "--cases", str(n), dtypes="E4M3") == 0
    assert capsys.readouterr().err == ""
    assert json.loads((tmp_path / "b" / "manifest.json").read_text())["partitions"][0]["holes"] == []


def test_a_manifest_whose_holes_lie_is_refused(tmp_path, capsys):
    assert golden(tmp_path / "a", "--cases", "24", dtypes="S16") == 0
    m = json.loads((tmp_path / "a" / "manifest.json").read_text())
    m["partitions"][0]["holes"] = m["partitions"][0]["holes"][1:]
    (tmp_path / "a" / "manifest.json").write_text(json.dumps(m))
    capsys.readouterr()
    assert main(["verify", str(tmp_path / "a"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holes omits" in err


def test_per_class_is_deterministic_across_worker_counts(tmp_path):
    pytest.importorskip("distributed")
    args = ("--per-class", "2")
    assert golden(tmp_path / "one", *args, ops="TADD,TCMP") == 0
    assert golden(tmp_path / "two", *args, "--workers", "2", ops="TADD,TCMP") == 0
    assert shas(tmp_path / "one") == shas(tmp_path / "two")
    m = json.loads((tmp_path / "one" / "manifest.json").read_text())
    for p in m["partitions"]:
        part = D.Partition(p["op"], p["dtype"])
        rows = sum(f["rows"] for f in p["files"])
        assert rows == 2 * len(D.points_for(part)) and p["holes"] == []
        counts = {}
        for f in p["files"]:
            for c, k in f["classes"].items():
                counts[c] = counts.get(c, 0) + k
        for c in D.classes_for(part)[0]:
            assert counts[c.name] == 2 * max(1, len(c.bins))
    assert main(["verify", str(tmp_path / "one"), "--quiet"]) == 0


@pytest.mark.parametrize("ops, dtypes, extra", [
    ("TADD,TCMP,TSEL", "FP16,S8", ()),
    ("TEXTRACT", "E4M3,U16", ()),
    ("TCVT", "FP32", ("--dst-dtypes", "E4M3,S8", "--rmodes", "RNE", "--sat", "1")),
])
def test_per_class_one_closes_every_class_and_cross(tmp_path, ops, dtypes, extra):
    assert golden(tmp_path / "v", "--per-class", "1", *extra, ops=ops, dtypes=dtypes) == 0
    doc = R.coverage([str(tmp_path / "v")])
    assert doc["summary"]["holes"] == 0
    crosses = {cr["name"] for g in doc["covergroups"] for cr in g["crosses"]}
    assert {"pe_mask_x_pad", "geometry_x_pad", "pe_mask_x_alias", "pad_x_dtype"} <= crosses


def _rows(folder):
    for f in sorted(pathlib.Path(folder).rglob("*.parquet")):
        for r in pq.read_table(f).to_pylist():
            yield f.parent.relative_to(folder).as_posix(), r


def test_crosses_are_counted_from_the_stored_rows(tmp_path):
    """pe_mask x pad, geometry x pad and pe_mask x alias recounted here from each row's pe_mask,
    block text and output tile."""
    assert golden(tmp_path / "v", "--per-class", "1", ops="TMUL", dtypes="FP16") == 0
    want = {}
    names = {m: n for n, ms in C.PE_PATTERNS.items() for m in ms}
    for _, r in _rows(tmp_path / "v"):
        if r["outcome"] != "commit":
            continue
        o = r["outputs"][0]
        geom = {(True, True): "row_col", (True, False): "row", (False, True): "col"}.get(
            (o["Row"] > o["ValidRow"], o["Col"] > o["ValidCol"]))
        pad = next((w.split("=")[1] for w in r["asm"].replace(",", " ").split() if w.startswith("PAD=")), None)
        if pad and geom:
            code = {"ZERO": "zero", "MAX": "max", "MIN": "min", "NULL": "null"}[pad.upper()]
            for key in (("pe_mask_x_pad", f"{names[r['pe_mask']]}/{code}"), ("geometry_x_pad", f"{geom}/{code}")):
                want[key] = want.get(key, 0) + 1
    ds = D.open_dataset(tmp_path / "v")
    got = {k: v for k, v in ds.crosses[ds.partitions[0]].items() if k[0] in ("pe_mask_x_pad", "geometry_x_pad")}
    assert got == want and len(got) == 4 * 5 + 4 * 3


# ---------------------------------------------------------------------------- boundary windows

ML = {"FP16": np.float16, "FP32": np.float32, "FP64": np.float64, "BF16": ml_dtypes.bfloat16,
      "E4M3": ml_dtypes.float8_e4m3fn, "E5M2": ml_dtypes.float8_e5m2}
RAW = {8: np.uint8, 16: "<u2", 32: "<u4", 64: "<u8"}


def _values(tile, name):
    """The valid rectangle's values as Fractions (None for NaN/inf), decoded by ml_dtypes."""
    ft = ML[name]
    bits = np.dtype(ft).itemsize * 8
    raw = np.frombuffer(tile["payload"], RAW[bits]).reshape(tile["Row"], tile["Col"])
    v = raw[: tile["ValidRow"], : tile["ValidCol"]].reshape(-1).view(ft).astype(np.float64)
    return [Fraction(float(x)) if np.isfinite(x) else None for x in v], raw[: tile["ValidRow"], : tile["ValidCol"]].reshape(-1)


def _info(name):
    fi = ml_dtypes.finfo(ML[name])
    return Fraction(float(fi.smallest_normal)), fi.nmant + 1, Fraction(float(fi.max))


def _operands(r, name, k):
    """The k source tiles of the row's first output PE, as values."""
    pe = r["outputs"][0]["pe"]
    tiles = [t for t in r["inputs"] if t["pe"] == pe][:k]
    return [_values(t, name) for t in tiles]


def _exact(op, xs):
    if None in xs:
        return None
    if op == "TMUL":
        return xs[0] * xs[1]
    if op == "TADD":
        return xs[0] + xs[1]
    if op == "TSUB":
        return xs[0] - xs[1]
    return xs[0] * xs[1] + xs[2]


def _exact_results(folder, klass, op, dtype):
    """The exact result of every element of the first output PE of every row of `klass`
    (an element with a NaN or infinite operand has none and is left out)."""
    for _, r in _rows(folder):
        if r["class"] != klass:
            continue
        ops = _operands(r, dtype, 3 if op == "TFMA" else 2)
        for i in range(len(ops[0][0])):
            e = _exact(op, [o[0][i] for o in ops])
            if e is not None:
                yield e


@pytest.mark.parametrize("op, dtype", [("TMUL", "E4M3"), ("TMUL", "E5M2"), ("TMUL", "FP16"), ("TMUL", "BF16"),
                                       ("TMUL", "FP32"), ("TFMA", "FP64"), ("TFMA", "FP16")])
def test_round_to_min_normal_results_land_where_tininess_before_and_after_disagree(tmp_path, op, dtype):
    """|exact| in [m(1 - 2^-(p+1)), m) and not on the subnormal grid: RNE rounds it up to m, so a
    DUT detecting tininess after rounding raises no underflow where one detecting it before does."""
    assert golden(tmp_path / "v", "--per-class", "6", ops=op, dtypes=dtype) == 0
    m, p, _ = _info(dtype)
    lo, grid = m * (1 - Fraction(1, 2 ** (p + 1))), m / 2 ** (p - 1)
    hit = total = cases = 0
    for _, r in _rows(tmp_path / "v"):
        if r["class"] != "round_to_min_normal":
            continue
        cases += 1
        ops = _operands(r, dtype, 3 if op == "TFMA" else 2)
        inside = [lo <= abs(e) < m and e / grid != int(e / grid) for e in
                  (_exact(op, [o[0][i] for o in ops]) for i in range(len(ops[0][0])))]
        assert any(inside), r["case"]
        hit += sum(inside)
        total += len(inside)
    assert cases == 6 and hit / total > 0.6


def test_e4m3_multiplication_window_is_the_one_the_issue_counts():
    """56 of the 64,516 finite E4M3 operand pairs have a product in the window: the generator's
    pairs are among them (checked on the pairs themselves, over every encoding)."""
    v = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    fin = [Fraction(float(x)) for x in v if np.isfinite(x)]
    m, p, _ = _info("E4M3")
    lo, grid = m * (1 - Fraction(1, 2 ** (p + 1))), m / 2 ** (p - 1)
    window = {(a, b) for a in fin for b in fin if lo <= abs(a * b) < m and (a * b) / grid != int((a * b) / grid)}
    assert len(fin) ** 2 == 64516 and len(window) == 56
    from emulator.golden.cases import build_group
    part = D.Partition("TMUL", "E4M3")
    g = build_group(C.BY_NAME["round_to_min_normal"], part.context(), 64, np.random.default_rng(1))
    a, b = (t.elems.reshape(-1).view(ml_dtypes.float8_e4m3fn).astype(np.float64) for t in g.tiles)
    pairs = [(Fraction(float(x)), Fraction(float(y))) for x, y in zip(a, b)]
    assert sum(pr in window for pr in pairs) / len(pairs) > 0.6


@pytest.mark.parametrize("src, dst, rmode", [("FP32", "E4M3", "RNE"), ("FP64", "FP16", "RTP"), ("FP32", "BF16", "RTM"),
                                             ("FP16", "E5M2", "RNA")])
def test_conversion_windows_round_up_to_the_destinations_smallest_normal(tmp_path, src, dst, rmode):
    assert golden(tmp_path / "v", "--per-class", "4", "--dst-dtypes", dst, "--rmodes", rmode, "--sat", "0",
                  ops="TCVT", dtypes=src) == 0
    m, p, _ = _info(dst)
    lo = m * (1 - Fraction(1, 2 ** (p + 1))) if rmode in ("RNE", "RNA") else m * (1 - Fraction(1, 2 ** p))
    sign = {"RTP": 1, "RTM": -1}.get(rmode)
    hit = total = 0
    for _, r in _rows(tmp_path / "v"):
        if r["class"] != "round_to_min_normal":
            continue
        xs, _ = _operands(r, src, 1)[0]
        inside = [x is not None and lo <= abs(x) < m and (sign is None or x * sign > 0) and
                  (rmode in ("RNE", "RNA") or abs(x) > lo) for x in xs]
        hit, total = hit + sum(inside), total + len(inside)
    assert total and hit / total > 0.6


@pytest.mark.parametrize("op, dtype", [("TADD", "E4M3"), ("TSUB", "FP16"), ("TFMA", "BF16"), ("TMUL", "E4M3"),
                                       ("TMUL", "FP32")])
def test_overflow_cases_sit_at_the_threshold_and_one_ulp_below(tmp_path, op, dtype):
    assert golden(tmp_path / "v", "--per-class", "8", ops=op, dtypes=dtype) == 0
    _, p, mx = _info(dtype)
    ulp = Fraction(2) ** (int(np.floor(np.log2(float(mx)))) - (p - 1))
    t_hi, t_lo = mx + ulp / 2, mx - ulp / 2
    seen = {"at": 0, "below": 0, "near": 0}
    for e in _exact_results(tmp_path / "v", "overflow", op, dtype):
        e = abs(e)
        seen["at"] += e == t_hi
        seen["below"] += e == t_lo
        seen["near"] += min(abs(e - t_hi), abs(e - t_lo)) <= ulp
    if op == "TMUL":
        assert seen["near"] > 10
    else:
        assert seen["at"] > 0 and seen["below"] > 0


@pytest.mark.parametrize("op, dtype", [("TMUL", "FP16"), ("TFMA", "E4M3")])
def test_ties_occur_in_the_subnormal_range_and_across_the_binades(tmp_path, op, dtype):
    assert golden(tmp_path / "v", "--per-class", "16", ops=op, dtypes=dtype) == 0
    m, p, mx = _info(dtype)
    sub, binades = 0, set()
    for e in _exact_results(tmp_path / "v", "tie", op, dtype):
        if e == 0:
            continue
        e = abs(e)
        q = m / 2 ** (p - 1) if e < m else Fraction(2) ** (int(np.floor(np.log2(float(e)))) - (p - 1))
        if (e / q - Fraction(1, 2)).denominator == 1:          # exactly halfway between two
            if e < m:
                sub += 1
            else:
                binades.add(int(np.floor(np.log2(float(e)))))
    assert sub > 0
    assert len(binades) > 6


@pytest.mark.parametrize("op, dtype", [("TADD", "FP32"), ("TSUB", "E4M3"), ("TMUL", "BF16"), ("TFMA", "FP16")])
def test_exact_zero_results_of_both_signs(tmp_path, op, dtype):
    assert golden(tmp_path / "v", "--per-class", "4", ops=op, dtypes=dtype) == 0
    signs = set()
    for _, r in _rows(tmp_path / "v"):
        if r["class"] != "exact_zero":
            continue
        ops = _operands(r, dtype, 3 if op == "TFMA" else 2)
        for i in range(len(ops[0][0])):
            xs = [o[0][i] for o in ops]
            neg = [bool(int(o[1][i]) >> (np.dtype(ML[dtype]).itemsize * 8 - 1)) for o in ops]
            assert _exact(op, xs) == 0
            # IEEE 754 (6.3), round to nearest: a zero sum is -0 only when both addends are -0
            if op == "TMUL":
                signs.add(neg[0] != neg[1])
            elif op in ("TADD", "TSUB"):
                b_neg = neg[1] != (op == "TSUB")
                signs.add(xs[0] == 0 and xs[1] == 0 and neg[0] and b_neg)
            else:
                prod_neg = neg[0] != neg[1]
                signs.add(xs[0] * xs[1] == 0 and xs[2] == 0 and prod_neg and neg[2])
    assert signs == {True, False}


@pytest.mark.parametrize("op, dtype", [("TMUL", "E4M3"), ("TMUL", "E5M2"), ("TMUL", "FP16"), ("TFMA", "BF16"),
                                       ("TMUL", "FP32")])
def test_products_below_half_the_smallest_subnormal_round_to_signed_zero_with_uf_and_nx(tmp_path, op, dtype):
    """0 < |exact| < s/2, s the smallest subnormal: round to nearest gives a zero of the exact
    result's sign, inexact and tiny (UF and NX in the tile's status); tiles whose products are
    all one power of two among them, for E4M3 the first case's all 2^-12 (2^-6 x 2^-6 and other
    splits): its status has no other source of UF and NX."""
    assert golden(tmp_path / "v", "--per-class", "3", ops=op, dtypes=dtype) == 0
    s = Fraction(float(ml_dtypes.finfo(ML[dtype]).smallest_subnormal))
    bits = np.dtype(ML[dtype]).itemsize * 8
    results, cases = [], 0
    for _, r in _rows(tmp_path / "v"):
        if r["class"] != "underflow_to_zero":
            continue
        cases += 1
        ops = _operands(r, dtype, 3 if op == "TFMA" else 2)
        out = r["outputs"][0]
        _, raw = _values(out, dtype)
        assert out["status"] & (1 << 3) and out["status"] & (1 << 4), out["status"]     # UF, NX
        for i in range(len(ops[0][0])):
            e = _exact(op, [o[0][i] for o in ops])
            assert e is not None and 0 < abs(e) < s / 2, (r["case"], i, e)
            assert int(raw[i]) == (1 << (bits - 1) if e < 0 else 0), (r["case"], i, hex(int(raw[i])))
        tile = {abs(_exact(op, [o[0][i] for o in ops])) for i in range(len(ops[0][0]))}
        results.append(tile)
    assert cases == 3
    pure = [t.pop() for t in results if len(t) == 1]
    assert len(pure) == 3 and all(x.numerator == 1 and x.denominator & (x.denominator - 1) == 0 for x in pure)
    if dtype == "E4M3":
        assert Fraction(1, 2 ** 12) in pure


def test_sums_of_one_format_never_land_below_half_the_smallest_subnormal():
    """TADD/TSUB results are multiples of the smallest subnormal: the class does not apply."""
    for op in ("TADD", "TSUB"):
        for dtype in ("E4M3", "FP16", "FP32"):
            assert not C.BY_NAME["underflow_to_zero"].applies(D.Partition(op, dtype).context())
    assert C.BY_NAME["underflow_to_zero"].applies(D.Partition("TMUL", "E4M3").context())


def _ints(tile, w, signed):
    raw = np.frombuffer(tile["payload"], RAW[w]).astype(object)
    vals = [int(x) for x in raw[: tile["ValidCol"] * tile["ValidRow"]]]
    return [x - (1 << w) if signed and x >> (w - 1) else x for x in vals]


@pytest.mark.parametrize("op, dtype", [("TADD", "S8"), ("TSUB", "S64"), ("TADD", "U16"), ("TSUB", "U8"),
                                       ("TFMA", "S32"), ("TMUL", "S16"), ("TMUL", "U64")])
def test_wrap_edges_are_the_bounds_and_one_past_them(tmp_path, op, dtype):
    assert golden(tmp_path / "v", "--per-class", "4", ops=op, dtypes=dtype) == 0
    w, signed = int(dtype[1:]), dtype[0] == "S"
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
    wraps = total = 0
    for _, r in _rows(tmp_path / "v"):
        if r["class"] != "wrap_edge":
            continue
        pe = r["outputs"][0]["pe"]
        ops = [_ints(t, w, signed) for t in r["inputs"] if t["pe"] == pe]
        for xs in zip(*ops):
            e = {"TADD": lambda: xs[0] + xs[1], "TSUB": lambda: xs[0] - xs[1], "TMUL": lambda: xs[0] * xs[1],
                 "TFMA": lambda: xs[0] * xs[1] + xs[2]}[op]()
            total += 1
            wraps += not lo <= e <= hi
            if op == "TMUL":
                assert abs(e) >= 1 << (w - 2)                       # at the width's top
            else:
                assert e in (lo - 1, lo, hi, hi + 1), (xs, e)
    assert total and 0.2 < wraps / total < 0.9


@pytest.mark.parametrize("src, dst", [("S32", "S8"), ("U16", "U8"), ("S16", "U8"), ("FP32", "S16"), ("FP16", "U8")])
def test_saturation_edges_sit_at_the_destination_bounds(tmp_path, src, dst):
    assert golden(tmp_path / "v", "--per-class", "4", "--dst-dtypes", dst, "--rmodes", "RNE", "--sat", "0,1",
                  ops="TCVT", dtypes=src) == 0
    w = int(dst[1:])
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if dst[0] == "S" else (0, (1 << w) - 1)
    beyond = total = 0
    for _, r in _rows(tmp_path / "v"):
        if r["class"] != "sat_edge":
            continue
        t = next(t for t in r["inputs"] if t["pe"] == r["outputs"][0]["pe"])
        xs = _ints(t, int(src[1:]), src[0] == "S") if src[0] in "SU" else _values(t, src)[0]
        for x in xs:
            total += 1
            assert min(abs(x - lo), abs(x - hi)) <= 2, x
            beyond += not lo <= x <= hi
    assert total and beyond > 0


# ---------------------------------------------------------------------------- coverage as data


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    d = tmp_path_factory.mktemp("cov")
    assert golden(d / "a", "--cases", "20", dtypes="E4M3") == 0
    assert golden(d / "b", "--per-class", "1", dtypes="E4M3,S8") == 0
    return d


def test_json_coverage_validates_against_the_shipped_schema_and_merges(two, capsys):
    capsys.readouterr()
    assert main(["golden", "--coverage", str(two / "a"), str(two / "b"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator(json.loads(R.SCHEMA_FILE.read_text())).validate(doc)
    assert [d["path"] for d in doc["datasets"]] == [str(two / "a"), str(two / "b")]
    a = R.golden_model(two / "a")
    b = R.golden_model(two / "b")
    merged = {g["name"]: {x["name"]: x["count"] for x in g["coverpoints"][0]["bins"]}
              for g in doc["covergroups"] if g["coverpoints"]}
    ga = {x["name"]: x["count"] for x in a["covergroups"][0]["coverpoints"][0]["bins"]}
    gb = {x["name"]: x["count"] for x in b["covergroups"][0]["coverpoints"][0]["bins"]}
    assert merged["op=TADD/dtype=E4M3"] == {k: ga[k] + gb[k] for k in ga}
    assert doc["summary"]["holes"] == 0 and a["summary"]["holes"] > 0


def test_ucis_coverage_reads_back_with_pyucis(two, tmp_path):
    pytest.importorskip("ucis")
    from ucis.cover_type_t import CoverTypeT
    from ucis.scope_type_t import ScopeTypeT
    from ucis.xml.xml_factory import XmlFactory
    out = tmp_path / "cov.xml"
    assert main(["golden", "--coverage", str(two / "a"), "--format", "ucis", "--out", str(out)]) == 0
    db = XmlFactory.read(str(out))
    got = {}
    for inst in db.scopes(ScopeTypeT.INSTANCE):
        for cg in inst.scopes(ScopeTypeT.COVERGROUP):
            for ci in cg.scopes(ScopeTypeT.COVERINSTANCE):
                for cp in ci.scopes(ScopeTypeT.COVERPOINT):
                    for item in cp.coverItems(CoverTypeT.CVGBIN):
                        got[(cg.getScopeName(), cp.getScopeName(), item.getName())] = item.getCoverData().data
    doc = R.golden_model(two / "a")
    for g in doc["covergroups"]:
        for cp in g["coverpoints"]:
            for b in cp["bins"]:
                if b["status"] != "n/a":
                    assert got[(g["name"], cp["name"], b["name"])] == b["count"]
    assert any(k[1] == "pe_mask_x_pad.pe_mask" for k in got)


# ---------------------------------------------------------------------------- bad input


def test_per_class_with_cases_is_one_line_and_writes_nothing(tmp_path, capsys):
    assert golden(tmp_path / "x", "--cases", "5", "--per-class", "1") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--cases and --per-class exclude each other" in err
    assert not (tmp_path / "x").exists()


def test_coverage_of_a_mix_of_dataset_kinds_is_one_line(two, tmp_path, capsys):
    assert main(["golden", "--streams", "--blocks", "2", "--cases", "4", "--shapes", "r1c8", "--quiet",
                 "--out", str(tmp_path / "s")]) == 0
    capsys.readouterr()
    out = tmp_path / "cov.json"
    assert main(["golden", "--coverage", str(two / "a"), str(tmp_path / "s"), "--format", "json",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "coverage merges datasets of one kind" in err and not out.exists()
    # a stream dataset alone: its coverage as JSON of the same schema
    assert main(["golden", "--coverage", str(tmp_path / "s"), "--format", "json", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    jsonschema.Draft202012Validator(R.schema()).validate(doc)
    assert doc["kind"] == "streams" and any(cr["name"] == "raw_hazard" for g in doc["covergroups"] for cr in g["crosses"])


def test_ucis_without_pyucis_exits_3_naming_the_extra(two, tmp_path, capsys, monkeypatch):
    import builtins
    real = builtins.__import__

    def no_ucis(name, *a, **kw):
        if name == "ucis" or name.startswith("ucis."):
            raise ImportError(f"No module named {name!r}")
        return real(name, *a, **kw)
    monkeypatch.setattr(builtins, "__import__", no_ucis)
    out = tmp_path / "cov.xml"
    assert main(["golden", "--coverage", str(two / "a"), "--format", "ucis", "--out", str(out)]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tile-emu[ucis]" in err and not out.exists()


def test_a_version_1_dataset_is_refused_in_one_line(two, tmp_path, capsys):
    import shutil
    shutil.copytree(two / "a", tmp_path / "old")
    m = json.loads((tmp_path / "old" / "manifest.json").read_text())
    m["format_version"] = 1
    (tmp_path / "old" / "manifest.json").write_text(json.dumps(m))
    capsys.readouterr()
    assert main(["verify", str(tmp_path / "old"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "version 2" in err
