"""Streams a DUT team can aim (docs/golden-format.md, "Stream goldens"): --ops/--dtypes
constraints, the group-size rule, and the coverage a default dataset reaches.

Every claim is counted here from the stored bytes -- streams decoded with isa.encoding, layouts
read as plain JSON -- never from the generator's own records or counters."""
from __future__ import annotations

import hashlib
import json
import pathlib
import shutil

import pyarrow.parquet as pq
import pytest

from emulator.cli import main
from isa import encoding
from isa.datatypes import BY_CODE
from isa.instructions import INSTRUCTIONS, by_carrier

HAZARDS = ("RAW", "WAR", "WAW")


def generate(out, *args) -> int:
    return main(["golden", "--streams", *args, "--out", str(out), "--quiet"])


def rows_of(folder):
    for path in sorted(pathlib.Path(folder).rglob("*.parquet")):
        yield from pq.read_table(path).to_pylist()


def carried(block) -> tuple[str | None, list[str]]:
    """(the block's mnemonic, or None for an unassigned opcode; the names of the DataTypes it
    names: BSTART's and, for TCVT, B.DATR's destination -- a code no DataType has as 'code N')."""
    row = by_carrier(block.bstart.Mode, block.bstart.Function)
    codes = [block.bstart.DataType]
    if row is not None and row.mnemonic == "TCVT" and block.datr is not None and block.datr.DataType is not None:
        codes.append(block.datr.DataType)
    return (row.mnemonic if row else None), [BY_CODE[c].name if c in BY_CODE else f"code {c}" for c in codes]


def hazards(blocks, executed):
    """{(kind, 'consecutive' | 'distant', mnemonic of the later block)} of the executed blocks,
    per (PE, tile): RAW a read of a tile last written by block j, WAR a write of a tile read by
    j != i since its last write, WAW a write of a tile last written by j."""
    writer, readers, out = {}, {}, set()
    for i, b in enumerate(blocks[:executed]):
        *srcs, dest = b.iot
        mn = by_carrier(b.bstart.Mode, b.bstart.Function).mnemonic
        pes = [p for p in range(4) if dest.PE_MASK >> p & 1]

        def dist(j):
            return "consecutive" if i - j == 1 else "distant"
        for p in pes:
            for s in srcs:
                if (p, s.tile) in writer:
                    out.add(("RAW", dist(writer[(p, s.tile)]), mn))
            for j in readers.get((p, dest.tile), ()):
                if j != i:
                    out.add(("WAR", dist(j), mn))
            if (p, dest.tile) in writer:
                out.add(("WAW", dist(writer[(p, dest.tile)]), mn))
        for p in pes:
            for s in srcs:
                readers.setdefault((p, s.tile), set()).add(i)
        for p in pes:
            writer[(p, dest.tile)] = i
            readers[(p, dest.tile)] = set()
    return out


# ---------------------------------------------------------------------------- constraints

@pytest.mark.parametrize("ops, dtypes", [
    ("TADD,TMUL,TCVT,TEXTRACT", "FP16,BF16,S8"),
    ("TDIV,TREM,TSEL,TCMP", "S16,U8"),
    ("TIMG2COL,TINSERT", "FP32"),
    (None, "E4M3,HiF4X2"),
])
def test_every_block_of_every_stream_is_of_the_constraint(tmp_path, ops, dtypes):
    """Each block -- executed, planted or never run -- is an instruction of --ops whose DataTypes
    are of --dtypes; only an illegal_unassigned_opcode stream's planted block names none."""
    args = ["--blocks", "6", "--cases", "24", "--illegal-fraction", "0.5", "--seed", "3"]
    args += (["--ops", ops] if ops else []) + ["--dtypes", dtypes]
    assert generate(tmp_path / "d", *args) == 0
    want_dts = set(dtypes.split(","))
    want_ops = set(ops.split(",")) if ops else {i.mnemonic for i in INSTRUCTIONS if want_dts & set(i.dtypes)}
    seen_ops, unassigned = set(), 0
    for r in rows_of(tmp_path / "d"):
        for i, b in enumerate(encoding.decode(r["stream"])):
            mn, dts = carried(b)
            if mn is None:
                assert r["class"] == "illegal_unassigned_opcode" and i == r["fault_block"], (r["case"], i)
                unassigned += 1
                continue
            assert mn in want_ops and set(dts) <= want_dts, (r["case"], i, mn, dts)
            if i < r["executed"]:
                seen_ops.add(mn)
    assert seen_ops == want_ops and unassigned > 0
    m = json.loads((tmp_path / "d" / "manifest.json").read_text())
    assert m["format_version"] == 3
    assert m["generator"]["ops"] == (ops.split(",") if ops else []) and m["generator"]["dtypes"] == dtypes.split(",")
    assert main(["verify", str(tmp_path / "d"), "--quiet"]) == 0


def test_a_class_the_constraint_cannot_carry_is_not_applicable(tmp_path):
    """TADD alone: no feature map (DESCRIPTOR_INVALID), no window (OFFSET_RANGE, IOR_NONZERO); FP16
    alone: no other DataType of its width (SOURCE_DATATYPE)."""
    assert generate(tmp_path / "d", "--blocks", "3", "--cases", "4", "--ops", "TADD", "--dtypes", "FP16",
                    "--shapes", "r4c8") == 0
    na = json.loads((tmp_path / "d" / "manifest.json").read_text())["partitions"][0]["not_applicable"]
    assert {"illegal_descriptor_invalid", "illegal_offset_range", "illegal_ior_nonzero",
            "illegal_source_datatype"} <= set(na)


@pytest.mark.parametrize("argv, code, message", [
    (["--ops", "TAND", "--dtypes", "FP32"], 1, "no legal block"),
    (["--ops", "TAND,TADD", "--dtypes", "FP32"], 1, "--ops TAND: no stream can carry it"),
    (["--ops", "TADD", "--dtypes", "FP16,E8M0"], 1, "--dtypes E8M0: no stream can carry it"),
    (["--ops", "TFOO"], 1, "unknown op 'TFOO'"),
    (["--dtypes", "FP99"], 1, "unknown DataType 'FP99'"),
    (["--ops", "TADD,tadd"], 1, "'TADD' is listed more than once"),
    (["--dst-dtypes", "FP16"], 2, "--dst-dtypes is for single-block goldens"),
])
def test_a_constraint_no_stream_can_carry_is_one_line_and_writes_nothing(tmp_path, capsys, argv, code, message):
    out = tmp_path / "o"
    assert main(["golden", "--streams", "--blocks", "4", "--cases", "4", *argv, "--out", str(out)]) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "Traceback" not in err[0]
    assert not out.exists()


def test_the_run_names_the_instructions_no_stream_carries_or_commits(tmp_path, capsys):
    """Without --ops, --dtypes leaves some instructions without a DataType: one stderr line names
    them; a dataset too small to commit every instruction of the constraint names the missing
    ones (counted here from the decoded streams)."""
    assert generate(tmp_path / "d", "--blocks", "2", "--cases", "2", "--dtypes", "E4M3,HiF4X2", "--seed", "5") == 0
    err = capsys.readouterr().err.strip().splitlines()
    cannot = [i.mnemonic for i in INSTRUCTIONS if not {"E4M3", "HiF4X2"} & set(i.dtypes)]
    committed = {carried(b)[0] for r in rows_of(tmp_path / "d") for b in encoding.decode(r["stream"])[: r["executed"]]}
    missing = [i.mnemonic for i in INSTRUCTIONS if i.mnemonic not in cannot and i.mnemonic not in committed]
    assert len(err) == 2 and missing
    assert err[0].endswith("no stream carries them: " + ", ".join(cannot))
    assert f"{len(missing)} of {28 - len(cannot)} instructions commit in no stream" in err[1]
    assert err[1].endswith(": " + ", ".join(missing))


# ---------------------------------------------------------------------------- group size

def test_the_default_group_size_gives_a_program_per_16_streams(tmp_path):
    """--blocks 8 --cases 64: 256 streams, at least 16 distinct programs (the stream bytes), no
    program shared by more than 16 streams; --group-cases 64 still makes groups of 64."""
    assert generate(tmp_path / "d", "--blocks", "8", "--cases", "64", "--seed", "7") == 0
    rows = list(rows_of(tmp_path / "d"))
    per = {}
    for r in rows:
        per[r["stream"]] = per.get(r["stream"], 0) + 1
    assert len(rows) == 256 and len(per) >= 256 // 16 and max(per.values()) <= 16
    assert generate(tmp_path / "e", "--blocks", "8", "--cases", "64", "--seed", "7", "--group-cases", "64",
                    "--shapes", "r4c8") == 0
    per = {}
    for r in rows_of(tmp_path / "e"):
        per[r["stream"]] = per.get(r["stream"], 0) + 1
    assert max(per.values()) > 16 and max(per.values()) <= 64


# ---------------------------------------------------------------------------- a default dataset

@pytest.fixture(scope="module")
def default(tmp_path_factory):
    """The default dataset of 1,024 8-block streams: --cases 256 over the four shape classes."""
    out = tmp_path_factory.mktemp("aim") / "d"
    assert generate(out, "--blocks", "8", "--cases", "256", "--seed", "7") == 0
    return out


def test_every_instruction_commits_in_a_default_dataset(default):
    committed = set()
    for r in rows_of(default):
        for b in encoding.decode(r["stream"])[: r["executed"]]:
            committed.add(carried(b)[0])
    assert committed == {i.mnemonic for i in INSTRUCTIONS}


def test_hazards_of_every_kind_and_distance_and_the_report_names_the_holes(default, capsys):
    """RAW, WAR and WAW between consecutive and between distant blocks, for (nearly) every
    instruction that can show them: every kind x distance occurs, at most two (kind, distance,
    instruction) bins a stream can have are missing, and `golden --coverage` counts exactly the
    bins found here and names exactly the missing ones."""
    found = set()
    for r in rows_of(default):
        found |= hazards(encoding.decode(r["stream"]), r["executed"])
    assert {(k, d) for k, d, _ in found} == {(k, d) for k in HAZARDS for d in ("consecutive", "distant")}
    possible = {(k, d, i.mnemonic) for k in HAZARDS for d in ("consecutive", "distant") for i in INSTRUCTIONS
                if not (k == "RAW" and i.mnemonic == "TIMG2COL")}
    assert found <= possible
    holes = sorted(possible - found)
    assert len(holes) <= 2, holes
    assert main(["golden", "--coverage", str(default)]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("hazard_x_instruction:"))
    assert f"{len(found)} of {len(possible)} bins covered" in line
    assert all(f"{k}/{d}/{m}" in line for k, d, m in holes)


def test_window_blocks_read_tiles_earlier_blocks_wrote(default):
    """TEXTRACT's source and TINSERT's old destination and insertion are, on some streams, a tile
    an earlier block of the stream wrote on that PE (TIMG2COL reads only the feature map)."""
    reads = set()
    for r in rows_of(default):
        written = set()
        for b in encoding.decode(r["stream"])[: r["executed"]]:
            *srcs, dest = b.iot
            mn = carried(b)[0]
            pes = [p for p in range(4) if dest.PE_MASK >> p & 1]
            for role, s in enumerate(srcs):
                if any((p, s.tile) in written for p in pes):
                    reads.add((mn, role))
            written |= {(p, dest.tile) for p in pes}
    assert {("TEXTRACT", 0), ("TINSERT", 0), ("TINSERT", 1)} <= reads
    assert not any(mn == "TIMG2COL" for mn, _ in reads)


def test_row_above_valid_row_and_col_above_valid_col_occur(default):
    """From the layouts (plain JSON): destinations with Row > ValidRow in every shape class, and
    Col > ValidCol in r2c3w8."""
    tall, wide = set(), set()
    for path in sorted(pathlib.Path(default).rglob("*.parquet")):
        shape = path.parent.name.split("=")[1]
        for text in set(pq.read_table(path, columns=["layout"]).column("layout").to_pylist()):
            for e in json.loads(text)["records"]:
                if e["record"] == "commit":
                    if e["row"] > e["valid_row"]:
                        tall.add(shape)
                    if e["col"] > e["valid_col"]:
                        wide.add(shape)
    assert tall == {"r1c8", "r4c8", "r2c3w8", "r3c1"} and wide == {"r2c3w8"}


def test_faults_sit_at_every_block_position(default):
    positions = {r["fault_block"] for r in rows_of(default) if r["outcome"] == "fault"}
    assert positions == set(range(8))


# ---------------------------------------------------------------------------- determinism, versions

def _digests(folder):
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(pathlib.Path(folder).rglob("*")) if p.is_file()}


def test_one_and_two_workers_write_files_of_the_same_sha256(tmp_path):
    args = ["--blocks", "5", "--cases", "40", "--seed", "9", "--shapes", "r1c8,r2c3w8", "--ops",
            "TADD,TCVT,TSEL,TCMP,TINSERT,TEXTRACT", "--dtypes", "FP16,S8,E4M3"]
    assert generate(tmp_path / "one", *args, "--workers", "1") == 0
    assert generate(tmp_path / "two", *args, "--workers", "2") == 0
    one, two = _digests(tmp_path / "one"), _digests(tmp_path / "two")
    assert one == two and sum(1 for k in one if k.endswith(".parquet")) == 2


def test_a_version_2_stream_dataset_still_verifies_and_is_not_resumed(tmp_path, capsys):
    """Version 2 stored the same rows; its generator recorded no ops/dtypes.  verify and
    --coverage open one (as unconstrained); --resume refuses to continue one in one line."""
    assert generate(tmp_path / "d", "--blocks", "3", "--cases", "6", "--shapes", "r1c8", "--seed", "2") == 0
    old = tmp_path / "v2"
    shutil.copytree(tmp_path / "d", old)
    m = json.loads((old / "manifest.json").read_text())
    m["format_version"] = 2
    del m["generator"]["ops"], m["generator"]["dtypes"]
    (old / "manifest.json").write_text(json.dumps(m))
    g = json.loads((old / "generation.json").read_text())
    del g["ops"], g["dtypes"]
    (old / "generation.json").write_text(json.dumps(g))
    assert main(["verify", str(old), "--quiet"]) == 0
    assert main(["golden", "--coverage", str(old)]) == 0
    capsys.readouterr()
    (old / "manifest.json").unlink()
    assert generate(old, "--blocks", "3", "--cases", "6", "--shapes", "r1c8", "--seed", "2", "--resume") == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "format version 2" in err[0] and "generate into an empty --out" in err[0]


def test_the_open_refuses_a_block_outside_the_constraint(tmp_path, capsys):
    """A constrained dataset whose manifest (and generation.json) claim a narrower constraint than
    its streams carry is refused by verify in one line naming the case and block."""
    assert generate(tmp_path / "d", "--blocks", "3", "--cases", "4", "--shapes", "r1c8", "--ops", "TADD,TSUB",
                    "--dtypes", "FP16", "--illegal-fraction", "0", "--seed", "1") == 0
    for name in ("manifest.json", "generation.json"):
        path = tmp_path / "d" / name
        doc = json.loads(path.read_text())
        (doc["generator"] if name == "manifest.json" else doc)["ops"] = ["TADD"]
        path.write_text(json.dumps(doc))
    first = next(r for r in rows_of(tmp_path / "d")
                 if any(carried(b)[0] == "TSUB" for b in encoding.decode(r["stream"])))
    capsys.readouterr()
    assert main(["verify", str(tmp_path / "d"), "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is TSUB of DataType FP16; the dataset's streams carry only --ops TADD" in err[0]
    assert f"case {first['case']}" in err[0]


def test_the_coverage_model_holds_the_stream_crosses_counted_here(default, tmp_path):
    """golden --coverage --format json (the coverage model, valid against its shipped schema):
    the dataset group's `instruction` coverpoint counts each instruction's executed blocks over
    every stream, and `hazard_x_instruction` has exactly the bins found here covered, RAW x
    TIMG2COL n/a and the rest holes."""
    import jsonschema

    from emulator.golden import coverage_report as R
    out = tmp_path / "c.json"
    assert main(["golden", "--coverage", str(default), "--format", "json", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, R.schema())
    group = next(g for g in doc["covergroups"] if g["name"] == "dataset")
    counts, found = {}, set()
    for r in rows_of(default):
        blocks = encoding.decode(r["stream"])
        for b in blocks[: r["executed"]]:
            counts[carried(b)[0]] = counts.get(carried(b)[0], 0) + 1
        found |= hazards(blocks, r["executed"])
    point = next(cp for cp in group["coverpoints"] if cp["name"] == "instruction")
    assert {b["name"]: b["count"] for b in point["bins"]} == {i.mnemonic: counts.get(i.mnemonic, 0)
                                                              for i in INSTRUCTIONS}
    cross = next(cr for cr in group["crosses"] if cr["name"] == "hazard_x_instruction")
    assert cross["axes"] == ["hazard", "distance", "instruction"]
    status = {tuple(b["values"]): b["status"] for b in cross["bins"]}
    assert {k for k, s in status.items() if s == "covered"} == found
    assert {k for k, s in status.items() if s == "n/a"} == {("RAW", d, "TIMG2COL") for d in ("consecutive", "distant")}
