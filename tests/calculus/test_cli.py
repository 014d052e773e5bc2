"""`tile-emu run PROGRAM.regions.json`: the shipped examples, outputs and one-line errors."""
import json
import pathlib

import numpy as np

from emulator import Machine
from emulator.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "regions"
F32 = np.float32


def test_pure_example_prints_its_arrays(capsys):
    assert main(["run", str(EX / "pointwise.regions.json")]) == 0
    out = capsys.readouterr().out.splitlines()
    arrays = json.loads(out[0])
    x = [0.5, 1.25, -2.0, 1e16, 1.0, -1e16]
    assert arrays["out"] == [(v + v) + 1.0 for v in x]
    assert "region program ran: 0 tile block(s), 1 reduction(s)" in out[1]


def test_json_out_writes_the_arrays(tmp_path):
    out = tmp_path / "a.json"
    assert main(["run", str(EX / "pointwise.regions.json"), "--out", str(out), "-q"]) == 0
    assert json.loads(out.read_text())["tmp"][0] == 1.0


def test_tile_example_matches_float32_arithmetic(tmp_path):
    out = tmp_path / "final.arrow"
    init = ROOT / "examples" / "saxpy.init.arrow"
    assert main(["run", str(EX / "saxpy_tiles.regions.json"), "--init", str(init), "--out", str(out), "-q"]) == 0
    m0, m = Machine.load(init), Machine.load(out)
    t = lambda mm, p, k: mm.read_tile(p, k).valid.astype(np.uint32).view(F32)   # noqa: E731
    per_pe = [t(m0, p, 1) * t(m0, p, 2) + t(m0, p, 3) for p in range(4)]      # TMUL then TADD: two roundings
    acc = ((per_pe[0] + per_pe[1]) + per_pe[2]) + per_pe[3]                    # fold_left over PEs 1..3
    assert np.array_equal(t(m, 0, 5), acc)
    assert np.array_equal(t(m, 0, 9), acc[::-1])                              # rows reversed by the loop


def test_malformed_programs_fail_with_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.regions.json"
    bad.write_text(json.dumps({"body": {"parallel": [["i", 2]], "body": {"op": "y[i] = 1"}}}))
    assert main(["run", str(bad)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "$.body.body.op: 'y[i]' names no array" in err


def test_runtime_failures_name_the_node_and_instance(tmp_path, capsys):
    prog = tmp_path / "fail.regions.json"
    prog.write_text(json.dumps({"body": {"parallel": [["pe", 2]], "body": {
        "block": "BSTART.VEC TADD, FP32\n B.IOT t1@${1 << pe}, t2@${1 << pe} -> t3@${1 << pe}\n B.DIM LB0=4"}}}))
    out = tmp_path / "o.arrow"
    assert main(["run", str(prog), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "$.body.body at (pe=0): block rejected: SOURCE_MISSING" in err
    assert Machine.load(out).digest() == Machine().digest()


def test_interference_is_reported(tmp_path, capsys):
    prog = tmp_path / "race.regions.json"
    prog.write_text(json.dumps({"arrays": {"x": {"shape": [2], "fill": 0}},
                                "body": {"parallel": [["i", 2]], "body": {"op": "x[0] = i"}}}))
    assert main(["run", str(prog)]) == 1
    assert "parallel instances (i=0) and (i=1) interfere: write/write on x[0]" in capsys.readouterr().err


def test_batch_cases_are_written_next_to_out(tmp_path):
    prog = tmp_path / "batch.regions.json"
    prog.write_text(json.dumps({"body": {"parallel": [["case", 3]], "batch": True, "body": {"seq": [
        {"gpr": {"pe": 0, "index": 1, "value": "case"}},
        {"block": "BSTART.SFU TEXTRACT, U8\n B.IOT t1@0b0001 -> t2@0b0001\n B.DIM LB0=2\n B.IOR RegSrc0=r1"}]}}}))
    init = tmp_path / "init.arrow"
    m = Machine()
    m.write_tile(0, 1, "U8", np.arange(12, dtype=np.uint8).reshape(3, 4))
    m.save(init)
    out = tmp_path / "final.arrow"
    assert main(["run", str(prog), "--init", str(init), "--out", str(out), "-q"]) == 0
    got = [Machine.load(p).read_tile(0, 2).valid.tolist()
           for p in (out, tmp_path / "final.case1.arrow", tmp_path / "final.case2.arrow")]
    assert got == [[[0, 1]], [[4, 5]], [[8, 9]]]


def test_scan_and_snapshot_example(capsys):
    assert main(["run", str(EX / "scan_snapshot.regions.json")]) == 0
    arrays = json.loads(capsys.readouterr().out.splitlines()[0])
    x, rot = [3, 1, 4, 1, 5, 9], [10, 20, 30, 40, 50, 60]
    prefix = [sum(x[:k + 1]) for k in range(6)]
    assert arrays["prefix"] == prefix and arrays["starts"] == [sum(x[:k]) for k in range(6)]
    assert arrays["rotate"] == [rot[(i + 1) % 6] + prefix[i] for i in range(6)]      # every read sees the entry value
