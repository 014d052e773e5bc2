"""The TestFloat export reads a committed case's operands where its block says they are
(docs/golden-format.md, "TestFloat export" and "What verify checks"): the tiles its source
bindings name, in B.IOT order, on its selected PEs.  A committed case that lost a source tile
is refused by the open every consumer shares -- `verify`, `--oracle`, `--coverage` and both
exports, in one line, before anything is replayed -- and a machine that holds more tiles than
the block reads exports the same lines as one that does not."""
from __future__ import annotations

import copy as _copy

import pyarrow.parquet as pq
import pytest

from emulator.cli import main
from test_golden_hostile import (EXPORT_TADD, TADD_FP32, copy, generated, mismatch, one_line, refused_everywhere,
                                 rewrite)


@pytest.fixture(scope="module")
def tadd(tmp_path_factory):
    return generated(tmp_path_factory, "export-sources", "tadd", "--ops", "TADD,TSUB", "--dtypes", "FP32", "--cases", "40")


def _first_commit(rows) -> dict:
    return next(r for r in rows if r["outcome"] == "commit")


def _drop_right_operand(rows) -> None:
    """The issue's dataset: the first committed row lost one of its two input tiles."""
    r = _first_commit(rows)
    right = max(t["tile"] for t in r["inputs"])
    r["inputs"] = [t for t in r["inputs"] if t["tile"] != right]


def test_a_committed_case_that_lost_a_source_tile_is_refused_everywhere_before_any_replay(tadd, tmp_path, capsys):
    x = copy(tadd, tmp_path)
    rows = pq.read_table(x / TADD_FP32).to_pylist()
    r = _first_commit(rows)
    right = max(t["tile"] for t in r["inputs"])
    pe = min(t["pe"] for t in r["inputs"] if t["tile"] == right)
    rewrite(x, TADD_FP32, _drop_right_operand)
    refused_everywhere(x, capsys, f"{TADD_FP32}: case {r['case']}: outcome commit, but inputs lack tile {right} on "
                                  f"PE{pe}, which the block reads (B.IOT[1])")


def _export(folder, capsysbinary, *argv) -> bytes:
    assert main(["golden", "export", str(folder), *argv]) == 0
    return capsysbinary.readouterr().out


def test_tiles_the_block_does_not_read_change_no_line(tadd, tmp_path, capsysbinary):
    """A machine may hold tiles no source binding names (verify accepts them): every committed
    case given one more FP32 tile on each PE its first input is on exports what it did."""
    x = copy(tadd, tmp_path)

    def extra(rows):
        for r in rows:
            if r["outcome"] == "commit":
                spare = max(t["tile"] for t in r["inputs"]) + 1
                r["inputs"] += [dict(_copy.deepcopy(t), tile=spare) for t in r["inputs"]
                                if t["tile"] == r["inputs"][0]["tile"]]
    rewrite(x, TADD_FP32, extra)
    assert main(["verify", str(x), "--quiet"]) == 0
    capsysbinary.readouterr()
    want = _export(tadd, capsysbinary, *EXPORT_TADD)
    assert want and _export(x, capsysbinary, *EXPORT_TADD) == want


def test_operands_follow_the_source_bindings_not_the_tile_ids(tadd, capsysbinary):
    """TSUB's lines are left - right with left the tile B.IOT[0] names: every line's result is
    the operands' difference, computed here with NumPy float32 (exact for the lines whose
    operands and result are normal numbers)."""
    import numpy as np
    text = _export(tadd, capsysbinary, "--format", "testfloat", "--op", "TSUB", "--dtype", "FP32").decode()
    a, b, c = (np.array([int(f, 16) for f in col], np.uint32).view(np.float32)
               for col in zip(*(line.split()[:3] for line in text.splitlines())))
    with np.errstate(all="ignore"):
        ok = np.isfinite(a) & np.isfinite(b) & np.isfinite(c) & (np.abs(c) > np.finfo(np.float32).tiny)
        assert ok.sum() > 10 and np.array_equal((a - b)[ok], c[ok])


def test_a_committed_case_reading_an_undefined_element_is_refused_by_the_export(tadd, tmp_path, capsys):
    """verify reports it (the replay rejects it: SOURCE_UNDEFINED); the export refuses it in one
    line rather than writing the defined elements only."""
    x = copy(tadd, tmp_path)
    rows = pq.read_table(x / TADD_FP32).to_pylist()
    case = next(r for r in rows if r["class"] == "random")["case"]

    def undefine(rows):
        r = next(r for r in rows if r["class"] == "random")
        r["inputs"][0]["defined"] = bytes(len(r["inputs"][0]["defined"]))
    rewrite(x, TADD_FP32, undefine)
    mismatch(x, capsys, f"case {case}: outcome: expected 'commit', got 'reject'")
    one_line(capsys, main(["golden", "export", str(x), *EXPORT_TADD]),
             f"{TADD_FP32}: case {case}: a committed case reads an undefined source element")
