"""Hex exports carry everything a plain testbench needs (docs/golden-format.md, "Hex export",
format version 2; issue 29 item 1): fields.txt, tiles.txt, roles.txt and index.txt of a
single-block export, machine.txt, tile_info.txt, record_info.txt and index.txt of a stream
export -- compared with the Parquet rows decoded here (the instruction table, the assembly text,
the tile entries), and verify's one-line verdict on each of them damaged."""
from __future__ import annotations

import hashlib
import json
import pathlib
import re
import shutil

import pyarrow.parquet as pq
import pytest

from emulator.cli import main
from golden_exports import golden_hex
from isa import instructions as I
from isa.datatypes import datatype
from isa.errors import REASONS

PADS = {"ZERO": 0, "MAX": 1, "MIN": 2, "NULL": 3}


@pytest.fixture(scope="module")
def ex(tmp_path_factory):
    root = tmp_path_factory.mktemp("hexv2")
    golden_hex(root, "a", "a.hex", "--ops", "TSEL,TIMG2COL", "--dtypes", "FP16", "--cases", "24", "--seed", "7")
    golden_hex(root, "s", "s.hex", "--streams", "--blocks", "2", "--cases", "4", "--illegal-fraction", "0.5",
               "--seed", "4")
    return root


def table(path) -> list[dict]:
    text = pathlib.Path(path).read_text().splitlines()
    cols = text[0][2:].split(" ")
    return [dict(zip(cols, x.split(" "))) for x in text[1:]]


def rows(folder) -> list[dict]:
    return [r for f in sorted(pathlib.Path(folder).glob("*.parquet")) for r in pq.read_table(f).to_pylist()]


def code(reason: str) -> int:
    return 0 if not reason else [*REASONS, "DECODE_ERROR"].index(reason) + 1


@pytest.mark.parametrize("op", ["TSEL", "TIMG2COL"])
def test_fields_txt_holds_each_cases_decoded_block_fields(ex, op):
    part = f"op={op}/dtype=FP16"
    got, want = table(ex / "a.hex" / part / "fields.txt"), rows(ex / "a" / part)
    assert len(got) == len(want) == 24
    instr = I.lookup(op)
    for g, r in zip(got, want):
        pad = re.search(r"PAD=(\w+)", r["asm"])
        assert (int(g["case"]), int(g["mode"]), int(g["function"]), int(g["datatype"])) == \
               (r["case"], instr.mode, instr.function, datatype("FP16").code) or r["reason"] == "UNASSIGNED_OPCODE"
        assert int(g["pe_mask"]) == r["pe_mask"] or not r["outputs"]
        assert int(g["pad_value"]) == PADS[pad.group(1) if pad else "NULL"] and g["pad_name"] == (pad.group(1) if pad else "NULL")
        assert int(g["pad_field"]) == (PADS[pad.group(1)] if pad else -1)
        assert (int(g["local_bytes"]), int(g["matrix_bytes"])) == (r["local_bytes"], r["matrix_bytes"])
        assert int(g["committed"]) == (r["outcome"] == "commit")
        assert int(g["reason_code"]) == code(r["reason"]) and g["reason"] == (r["reason"] or "-")
        assert g["field"] == (r["field"] or "-")


@pytest.mark.parametrize("op", ["TSEL", "TIMG2COL"])
def test_tiles_txt_holds_each_lanes_tiles_location_capacity_and_feature_map(ex, op):
    part = f"op={op}/dtype=FP16"
    roles = [*I.lookup(op).sources, "dst"]
    got, want = table(ex / "a.hex" / part / "tiles.txt"), rows(ex / "a" / part)
    lanes = table(ex / "a.hex" / part / "cases.txt")
    assert len(got) == len(lanes) * len(roles)
    by_case = {r["case"]: r for r in want}
    seen_fmap = 0
    for k, lane in enumerate(lanes):
        r, pe = by_case[int(lane["case"])], int(lane["pe"])
        ids = [int(t) for t in re.findall(r"t(\d+)@", r["asm"].split("B.IOT", 1)[1].split("\n")[0])] \
            if "B.IOT" in r["asm"] else []
        for j, role in enumerate(roles):
            g = got[k * len(roles) + j]
            slot = 3 if role == "dst" else j
            assert (int(g["case"]), int(g["pe"]), int(g["slot"]), g["role"]) == (r["case"], pe, slot, role)
            is_dst = role == "dst"
            tile = (ids[-1] if ids else -1) if is_dst else (ids[j] if j < len(ids) - 1 else -1)
            assert int(g["tile"]) == tile
            pool = r["outputs"] if is_dst else r["inputs"]
            hit = [t for t in pool if t["pe"] == pe and (is_dst or t["tile"] == tile)]
            if int(lane[f"{role}_n"]) == 0 and not hit:
                assert g["present"] == "0"
                continue
            if g["present"] == "0":                 # a tile of another width than the role's files
                continue
            t = hit[0]
            assert (int(g["location"]), int(g["kind"]), int(g["capacity"]), int(g["representation"])) == \
                   (["Local", "Matrix"].index(t["location"]), ["numeric", "predicate"].index(t["kind"]),
                    t["capacity"], 0)
            assert int(g["fmap_layout"]) == ["", "NC1HWC0", "NDC1HWC0"].index(t["fmap_layout"])
            params = [int(g[c]) for c in ("N", "D", "C1", "H", "W", "C0", "filterH", "filterW", "strideH", "strideW",
                                          "dilationH", "dilationW", "padLeft", "padRight", "padTop", "padBottom",
                                          "channels")]
            assert params == (list(t["fmap_params"]) or [0] * 17)
            assert int(g["fmap_pad_bits"], 16) == t["fmap_pad_bits"] and int(g["fmap_transposed"]) == t["fmap_transposed"]
            seen_fmap += bool(t["fmap_layout"])
    assert (seen_fmap > 0) == (op == "TIMG2COL")


def test_roles_txt_is_the_slot_table_and_index_txt_the_line_counts(ex):
    part = ex / "a.hex" / "op=TSEL/dtype=FP16"
    assert table(part / "roles.txt") == [
        {"slot": "0", "slot_name": "src0", "role": "mask", "file": "mask.hex", "def_file": "mask.def.hex", "bits": "1"},
        {"slot": "1", "slot_name": "src1", "role": "true", "file": "true.hex", "def_file": "true.def.hex", "bits": "16"},
        {"slot": "2", "slot_name": "src2", "role": "false", "file": "false.hex", "def_file": "false.def.hex",
         "bits": "16"},
        {"slot": "3", "slot_name": "dst", "role": "dst", "file": "dst.hex", "def_file": "dst.def.hex", "bits": "16"}]
    index = {x["name"]: int(x["count"]) for x in table(part / "index.txt")}
    for f in part.iterdir():
        if f.name != "index.txt":
            n = f.read_text().count("\n")
            assert index.pop(f.name) == n - f.name.endswith(".txt"), f.name
    assert index == {"cases": 24, "lanes": len(table(part / "cases.txt"))}


def test_stream_export_holds_store_sizes_faults_and_tile_facts(ex):
    m = json.loads((ex / "s.hex" / "manifest.json").read_text())
    assert m["format_version"] == 2
    faults = 0
    for entry in m["partitions"]:
        out, src = ex / "s.hex" / entry["path"], rows(ex / "s" / entry["path"])
        assert [[int(g["case"]), int(g["local_bytes"]), int(g["matrix_bytes"]), int(g["reason_code"]), g["reason"],
                 g["field"]] for g in table(out / "machine.txt")] == \
               [[r["case"], r["local_bytes"], r["matrix_bytes"], code(r["reason"]), r["reason"] or "-",
                 r["field"] or "-"] for r in src]
        info, want = table(out / "tile_info.txt"), []
        for r in src:
            for e in json.loads(r["layout"])["initial"]:
                want += [[r["case"], pe, e["tile"], ["Local", "Matrix"].index(e["location"]), e["capacity"],
                          ["standard", "cube"].index(e["representation"]),
                          ["", "NC1HWC0", "NDC1HWC0"].index(e["fmap_layout"]), list(e["fmap_params"]) or [0] * 17]
                         for pe in e["pes"]]
        assert [[int(g[c]) for c in ("case", "pe", "tile", "location", "capacity", "representation", "fmap_layout")]
                + [[int(g[c]) for c in ("N", "D", "C1", "H", "W", "C0", "filterH", "filterW", "strideH", "strideW",
                                        "dilationH", "dilationW", "padLeft", "padRight", "padTop", "padBottom",
                                        "channels")]] for g in info] == want
        recs, want = table(out / "record_info.txt"), []
        for r in src:
            for e in json.loads(r["layout"])["records"]:
                fault = e["record"] == "fault"
                faults += fault
                want.append([str(r["case"]), str(e["block"]), e["record"], str(e["pe"]), str(e["tile"]),
                             str(code(r["reason"]) if fault else 0), (r["field"] or "-") if fault else "-"])
        assert [[g[c] for c in ("case", "block", "record", "pe", "tile", "reason_code", "field")] for g in recs] == want
    assert faults > 0


# ---------------------------------------------------------------------------- verify

def _refresh(manifest_dir: pathlib.Path, part: str, name: str) -> None:
    """Rewrite the manifest's size and SHA-256 of one file (a damage only the content checks see)."""
    mp = manifest_dir / "manifest.json"
    m = json.loads(mp.read_text())
    p = manifest_dir / part / name
    for entry in m["partitions"]:
        if entry["path"] == part:
            entry["files"][name].update(bytes=p.stat().st_size, sha256=hashlib.sha256(p.read_bytes()).hexdigest())
    mp.write_text(json.dumps(m))


def _verify_fails(folder, capsys, pattern):
    assert main(["verify", str(folder)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err and re.search(pattern, err), err


def _edit(path: pathlib.Path, k: int, fn) -> None:
    lines = path.read_text().splitlines(keepends=True)
    lines[k] = fn(lines[k])
    path.write_text("".join(lines))


@pytest.fixture
def single(ex, tmp_path):
    shutil.copytree(ex / "a.hex", tmp_path / "h")
    return tmp_path / "h"


@pytest.fixture
def stream(ex, tmp_path):
    shutil.copytree(ex / "s.hex", tmp_path / "h")
    return tmp_path / "h"


PART = "op=TSEL/dtype=FP16"


def test_an_altered_fields_line_is_named_with_its_case(single, capsys):
    _edit(single / PART / "fields.txt", 4, lambda x: x.replace(" FP16 ", " FP32 ", 1))
    _verify_fails(single, capsys, r"op=TSEL/dtype=FP16/fields.txt'?: line 5: case 3 .*altered")


def test_a_removed_tiles_line_is_named(single, capsys):
    _edit(single / PART / "tiles.txt", 2, lambda x: "")
    _refresh(single, PART, "tiles.txt")
    _verify_fails(single, capsys, r"tiles.txt'?: line 3: case 0 PE \d slot \d role \w+, expected .*slot 1 role true")


def test_a_wrong_role_table_and_a_wrong_line_count_are_named(single, capsys, tmp_path):
    _edit(single / PART / "roles.txt", 1, lambda x: x.replace("mask", "left"))
    _refresh(single, PART, "roles.txt")
    _verify_fails(single, capsys, r"roles.txt'?: line 2: .*the partition's keys give 0 src0 mask")
    other = tmp_path / "o"
    shutil.copytree(single.parent / "h", other)
    _edit(other / PART / "roles.txt", 1, lambda x: x.replace("left", "mask"))
    _refresh(other, PART, "roles.txt")
    _edit(other / PART / "index.txt", 2, lambda x: x.replace(x.split()[1], str(int(x.split()[1]) + 1)))
    _refresh(other, PART, "index.txt")
    _verify_fails(other, capsys, r"index.txt'?: line 3: .*the files hold mask.hex \d+")


def test_a_version_1_manifest_is_refused_in_one_line(single, capsys):
    m = json.loads((single / "manifest.json").read_text())
    m["format_version"] = 1
    (single / "manifest.json").write_text(json.dumps(m))
    _verify_fails(single, capsys, r"not a tile-emu hex export version 2 manifest")


def test_stream_extra_files_damaged_are_named(stream, capsys, tmp_path):
    part = json.loads((stream / "manifest.json").read_text())["partitions"][0]["path"]
    shutil.copytree(stream, tmp_path / "b")
    _edit(stream / part / "machine.txt", 1, lambda x: x.replace("262144", "262145", 1))
    _verify_fails(stream, capsys, r"machine.txt'?: line 2: case 0: altered")
    b = tmp_path / "b"
    _edit(b / part / "tile_info.txt", 1, lambda x: "")
    _refresh(b, part, "tile_info.txt")
    _verify_fails(b, capsys, r"tile_info.txt'?: line 2: case 0 \(PE \d+, tile \d+\): (pe|tile) \d+, expected \d+")
