"""Random multi-block stream goldens (docs/golden-format.md, "Stream goldens").

The streams are checked by decoding them here (hazards, aliasing, instructions and DataTypes
are recomputed from the bytes with code of this file), the outcomes against the reference
engine (a plain `Machine` with backend "reference" run on each case's initial state), and the
dataset machinery by byte comparison across worker counts and a resumed run."""
from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from emulator import commitlog as CL
from emulator.cli import main
from emulator.config import MachineConfig
from emulator.golden import dataset as D
from emulator.golden import streams as S
from emulator.golden import streams_dataset as SD
from emulator.machine import Machine
from emulator.state import MachineState, PEState
from emulator.tiles import make_tile
from isa import encoding
from isa.datatypes import DATATYPES, datatype
from isa.errors import IllegalBlockException
from isa.fields import RMODES
from isa.instructions import INSTRUCTIONS, by_carrier

ARGS = ["--blocks", "6", "--cases", "10", "--group-cases", "2", "--illegal-fraction", "0.5", "--seed", "11",
        "--quiet"]


def generate(out, *extra, args=ARGS):
    return main(["golden", "--streams", *args, "--out", str(out), *extra])


def data_files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(pathlib.Path(folder).rglob("*"))
            if p.is_file()}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("streams") / "s"
    assert generate(out) == 0
    return out


@pytest.fixture(scope="module")
def groups():
    """Streams straight from the generator: 40 groups of 2 cases, 8 blocks, every shape class,
    steered by one Aim as a chunk's groups are."""
    rng = np.random.default_rng(5)
    aim = S.Aim(S.EVERY, 8)
    return [S.build_group(S.SHAPES[k % len(S.SHAPES)], 8, 2, rng, MachineConfig(), aim=aim) for k in range(40)]


def all_rows(folder):
    return [r for p in sorted(pathlib.Path(folder).rglob("*.parquet")) for r in pq.read_table(p).to_pylist()]


# ---------------------------------------------------------------------------- what the streams hold

def _hazards_and_aliasing(blocks, executed):
    """Recomputed here from the decoded blocks: per (PE, tile) the last writer and the readers."""
    found = set()
    last_write, read_since = {}, {}
    for i, b in enumerate(blocks[:executed]):
        *srcs, dest = b.iot
        pes = [p for p in range(4) if dest.PE_MASK & (1 << p)]
        if dest.tile in [s.tile for s in srcs]:
            found.add("dest_is_source")
        if len({s.tile for s in srcs}) < len(srcs):
            found.add("sources_one_tile")
        for p in pes:
            if any((p, s.tile) in last_write for s in srcs):
                found.add("RAW")
            if any(j != i for j in read_since.get((p, dest.tile), ())):
                found.add("WAR")
            if (p, dest.tile) in last_write:
                found.add("WAW")
        for p in pes:
            for s in srcs:
                read_since.setdefault((p, s.tile), set()).add(i)
            last_write[(p, dest.tile)] = i
            read_since[(p, dest.tile)] = set()
        if dest.PE_MASK != 0b1111:
            found.add("partial_pe_mask")
    return found


def test_streams_hold_every_hazard_and_aliasing_kind(dataset):
    kinds = set()
    for r in all_rows(dataset):
        kinds |= _hazards_and_aliasing(encoding.decode(r["stream"]), r["executed"])
    assert {"RAW", "WAR", "WAW", "dest_is_source", "sources_one_tile", "partial_pe_mask"} <= kinds


def test_destinations_rename_tiles_of_another_descriptor(groups):
    """A destination id that held a tile of another DataType or shape on a selected PE."""
    renamed = 0
    for g in groups:
        held = {k: v[0] for k, v in g.tiles.items()}
        m = _machine(g, 0)
        for i, b in enumerate(g.blocks[:g.executed]):
            dest = b.iot[-1]
            pes = [p for p in range(4) if dest.PE_MASK >> p & 1]
            m.execute(b)
            for p in pes:
                new = m.read_tile(p, dest.tile).desc
                if (p, dest.tile) in held and held[(p, dest.tile)] != new:
                    renamed += 1
                held[(p, dest.tile)] = new
    assert renamed > 0


def test_every_instruction_datatype_padvalue_and_tcvt_mode_appears(groups):
    ops, dtypes, pads, rmodes, sats, tcvt_dst = set(), set(), set(), set(), set(), set()
    for g in groups:
        for b in encoding.decode(encoding.encode(g.blocks)):
            row = by_carrier(b.bstart.Mode, b.bstart.Function)
            ops.add(row.mnemonic)
            dtypes.add(datatype(b.bstart.DataType).name)
            if b.datr is not None and b.datr.PadValueOrByteId is not None:
                pads.add(b.datr.PadValueOrByteId)
            if row.mnemonic == "TCVT":
                d = b.datr
                tcvt_dst.add(datatype(d.DataType).name)
                rmodes.add(RMODES[d.RMode or 0])
                sats.add(bool(d.Sat))
    assert ops == {i.mnemonic for i in INSTRUCTIONS}
    assert dtypes | tcvt_dst == {d.name for d in DATATYPES}
    assert pads == {0, 1, 2, 3}
    assert rmodes == set(RMODES.values()) and sats == {False, True}


def test_window_offsets_come_from_gprs_the_initial_state_writes(groups):
    """Every TEXTRACT/TINSERT/TIMG2COL with B.IOR names registers the initial state wrote
    (nonzero on some case and PE), and some of them read a nonzero offset -- or, where the
    window source is a tile of the stream's shape (read whole), r0 for both offsets."""
    nonzero = zero = 0
    for g in groups:
        for b in g.blocks[:g.executed]:
            row = by_carrier(b.bstart.Mode, b.bstart.Function)
            if row.uses_ior and b.ior is not None:
                regs = [b.ior.RegSrc0, b.ior.RegSrc1]
                if regs == [0, 0]:
                    assert b.iot[-2].tile not in S.WINDOW_SOURCES
                    zero += 1
                    continue
                assert all(r != 0 for r in regs)
                nonzero += int(g.gprs[:, :, regs].any())
    assert nonzero > 0 and zero > 0


# ---------------------------------------------------------------------------- against the reference engine

def _machine(g, k: int) -> Machine:
    """Case k's initial state on a plain reference Machine (built here from the group's arrays)."""
    pes = [PEState({}, np.array(g.gprs[k, p], np.uint64), 0) for p in range(4)]
    for (p, tid), (desc, e, d) in g.tiles.items():
        pes[p].tiles[tid] = make_tile(desc, e[k], d[k])
    return Machine.from_state(MachineState(g.config, pes), backend="reference")


def _case_records(recs: CL.Records, k: int) -> list[dict]:
    rows = recs.to_pylist()
    return [r for r in rows if r["machine"] == k]


def _final(g):
    """The group's final tiles as a reader gets them from its rows: the initial state overlaid
    with the commit records (the format stores no final state)."""
    cols = SD.group_columns(g, 0, 0)
    layout = SD.parse_layout(cols["layout"])
    get = lambda name: SD.binary_rows(cols[name], layout.width(name))
    return SD.final_tiles(layout, get("initial_payload"), get("initial_defined"), get("record_payload"),
                          get("record_defined"))


def test_records_and_final_states_match_a_plain_machine_run(groups):
    """Block by block on the reference engine: each block's commit records (commitlog's
    block_records of the reference machine) and the final tiles (read back from the rows) and
    statuses."""
    for g in groups[:12]:
        final = _final(g)
        for k in range(g.n):
            m = _machine(g, k)
            want = CL.Records()
            offsets = [off for off, _ in encoding.iter_blocks(encoding.encode(g.blocks))]
            for i, b in enumerate(g.blocks[:g.executed]):
                m.execute(b)
                want = want + CL.block_records(m, b, index=i, offset=offsets[i], machine_index=k)
            assert _case_records(g.records, k) == want.to_pylist()
            for (p, tid), (desc, e, d) in final.items():
                v = m.read_tile(p, tid)
                assert v.desc == desc and np.array_equal(m.pes[p].tiles[tid].elems, e[k])
                assert np.array_equal(m.pes[p].tiles[tid].defined, d[k])
            assert [m.status(p) for p in range(4)] == list(g.status[k])
            assert sum(len(pe.tiles) for pe in m.pes) == len(final)


@pytest.mark.parametrize("reason", S.STREAM_ILLEGAL)
def test_an_illegal_stream_stops_at_the_planted_block_with_its_reason(reason):
    rng = np.random.default_rng(len(reason))
    g = S.build_group(S.SHAPE_BY_NAME["r4c8"], 5, 2, rng, MachineConfig(), reason)
    assert g.cls == f"illegal_{reason.lower()}"
    final = _final(g)
    for k in range(g.n):
        m = _machine(g, k)
        result = m.run(encoding.encode(g.blocks))          # the reference engine, the whole stream
        assert result.error is not None and result.error.index == g.executed
        assert isinstance(result.error.cause, IllegalBlockException) and result.error.cause.reason == reason
        recs = _case_records(g.records, k)
        assert [r["record"] for r in recs if r["block"] == g.executed] == ["fault"]
        assert recs[-1]["reason"] == reason
        assert all(r["record"] == "commit" and r["block"] < g.executed for r in recs[:-1])
        for (p, tid), (desc, e, d) in final.items():      # the state of the last commit
            assert np.array_equal(m.pes[p].tiles[tid].elems, e[k])


@pytest.mark.parametrize("dense", [False, True])
def test_feature_map_parameters_are_the_draws_of_one_scalar_call_each(dense):
    """cases._feature_map draws its parameters in one rng.integers over their bounds; the maps and
    the generator state after them are those of drawing each one alone, in the documented order."""
    from emulator.golden import cases as CA
    from emulator.preflight import fmap_extents
    from emulator.tiles import FeatureMap

    def one_by_one(ctx, rng):
        c0 = CA.FMAP_BYTES_C0 * 8 // datatype(ctx.src.name).container
        while True:
            layout = "NDC1HWC0" if rng.random() < 0.25 else "NC1HWC0"
            r = lambda lo, hi: int(rng.integers(lo, hi + 1))  # noqa: E731
            pads = [0] * 4 if dense else [r(0, 1) for _ in range(4)]
            c1 = r(1, 2)
            fm = FeatureMap(layout, N=r(1, 2), D=r(1, 2) if layout == "NDC1HWC0" else 1, C1=c1, H=r(3, 6),
                            W=r(3, 6), C0=c0, filterH=r(2, 3), filterW=r(2, 3), strideH=r(1, 2), strideW=r(1, 2),
                            dilationH=r(1, 2), dilationW=r(1, 2), padLeft=pads[0], padRight=pads[1],
                            padTop=pads[2], padBottom=pads[3], channels=c1 * c0 if dense else r(1, c1 * c0),
                            pad_bits=int(ctx.src.random(rng, 1)[0]))
            out_h, out_w, m, _ = fmap_extents(fm)
            if out_h > 0 and out_w > 0 and m >= CA.MIN_FMAP_M:
                return fm

    op = next(i for i in INSTRUCTIONS if i.mnemonic == "TIMG2COL")
    for dt in ("FP16", "S8", "U32"):
        ctx = S._ctx(op, dt)
        for seed in range(40):
            a, b = np.random.default_rng(seed), np.random.default_rng(seed)
            a.integers(0, 7, seed % 3), b.integers(0, 7, seed % 3)     # an odd 32-bit draw buffered
            assert CA._feature_map(ctx, a, dense) == one_by_one(ctx, b)
            assert a.bit_generator.state == b.bit_generator.state


def test_a_chunks_table_holds_each_groups_own_rows_in_group_order():
    """A chunk's table is built once for all its groups; each group's rows in it are the rows
    that group alone gives (group_columns), in group order, cases numbered on from the chunk's
    first -- groups of other widths, faulted and committed groups mixed."""
    p = SD.StreamParams(blocks=4, cases=24, seed=5, shapes=("r4c8",), group_cases=3, illegal_fraction=0.5)
    part, chunk, n = next(iter(SD.chunks(p)))
    table = SD.chunk_table(p, part, chunk, n)
    rng = D._rng(p.seed, part, chunk)                  # the same draws again, a group at a time
    aim, at, widths = S.Aim(p.constraint, p.blocks), 0, set()
    outcomes = set()
    for gi, (m, reason, position) in enumerate(SD.group_plan(p, part, chunk, n, rng)):
        g = S.build_group(S.SHAPE_BY_NAME[part.shape], p.blocks, m, rng, SD.machine_config(p), reason, "cpu",
                          p.constraint, aim, position)
        own = SD.group_columns(g, chunk * p.chunk_cases + at, gi)
        rows = table.slice(at, m)
        for f in SD.SCHEMA:
            got = rows.column(f.name).to_pylist()
            want = [own["layout"]] * m if f.name == "layout" else own[f.name].to_pylist()
            assert got == want, (gi, f.name)
        widths.add(len(own["record_payload"][0].as_py()))
        outcomes.update(own["outcome"].to_pylist())
        at += m
    assert at == table.num_rows == n
    assert len(widths) > 1 and outcomes == {"commit", "fault"}


def test_the_initial_state_reads_back_exactly_with_per_pe_values_kept_apart():
    """An initial entry covers the PEs that hold one tile with the same values; SOURCE_UNDEFINED
    gives the reserved tile an undefined element on one PE only, so that PE is an entry of its own."""
    g = S.build_group(S.SHAPE_BY_NAME["r4c8"], 4, 3, np.random.default_rng(9), MachineConfig(), "SOURCE_UNDEFINED")
    cols = SD.group_columns(g, 0, 0)
    layout = SD.parse_layout(cols["layout"])
    got = SD.initial_tiles(layout, SD.binary_rows(cols["initial_payload"], layout.width("initial_payload")),
                           SD.binary_rows(cols["initial_defined"], layout.width("initial_defined")))
    assert set(got) == set(g.tiles)
    for key, (desc, e, d) in g.tiles.items():
        assert got[key][0] == desc and np.array_equal(got[key][1], e) and np.array_equal(got[key][2], d)
    reserved = [e["pes"] for e in layout.initial if e["tile"] == S.RESERVED_TILE]
    assert sorted(p for pes in reserved for p in pes) == [0, 1, 2, 3] and len(reserved) > 1


# ---------------------------------------------------------------------------- the dataset

def test_manifest_names_format_profile_and_partitions(dataset):
    m = json.loads((dataset / "manifest.json").read_text())
    assert m["format"] == "tile-emu stream golden dataset" and m["profile"]["name"] == "ieee"
    assert m["generator"]["blocks"] == 6 and m["generator"]["streams"] is True
    assert [p["shape"] for p in m["partitions"]] == [s.name for s in S.SHAPES]
    r3 = next(p for p in m["partitions"] if p["shape"] == "r3c1")
    assert "illegal_dim_range" in r3["not_applicable"]
    for p in m["partitions"]:
        assert [f["path"] for f in p["files"]] == [f"blocks=6/shape={p['shape']}/part-00000.parquet"]


def test_verify_replays_every_stream_block_by_block(dataset, capsys):
    assert main(["verify", str(dataset), "--quiet"]) == 0
    assert "40 streams of 6 blocks match" in capsys.readouterr().out


def test_the_reference_engine_replays_the_same_records(dataset, capsys):
    """Generated on the batch engine, replayed block by block on plain reference Machines."""
    assert main(["verify", str(dataset), "--backend", "reference", "--quiet"]) == 0
    assert "40 streams of 6 blocks match, block by block (reference" in capsys.readouterr().out


def test_oracle_checks_a_stream_dataset(dataset, capsys):
    """(tests/emulator/test_golden_oracle_streams.py holds the oracle's own tests.)"""
    assert main(["verify", str(dataset), "--oracle", "--quiet"]) == 0
    assert "verify --oracle: 40 streams; every checked result matches" in capsys.readouterr().out


def _rewrite(folder, rel, table):
    """Write `table` over data file `rel` and fix the manifest's size and checksum, so only the
    replay can catch what changed."""
    path = folder / rel
    pq.write_table(table, path, compression="zstd", write_statistics=False)
    m = json.loads((folder / "manifest.json").read_text())
    for p in m["partitions"]:
        for f in p["files"]:
            if f["path"] == rel:
                f["sha256"], f["bytes"] = D.sha256(path), path.stat().st_size
    (folder / "manifest.json").write_text(json.dumps(m))


def _commit(row, k):
    """(index, head, byte offset into record_payload) of the row's k-th commit record, read
    from its layout with plain JSON (as docs/golden-format.md tells a reader to)."""
    heads = json.loads(row["layout"])["records"]
    i = [j for j, h in enumerate(heads) if h["record"] == "commit"][k]
    return i, heads[i], sum(h["payload_bytes"] for h in heads[:i])


def _row_with_commits(rows, k):
    return next(i for i, r in enumerate(rows)
                if len([h for h in json.loads(r["layout"])["records"] if h["record"] == "commit"]) > k)


def test_a_layout_is_compact_json_with_the_documented_keys_in_order(dataset):
    """docs/golden-format.md: initial entries are pes, tile, the descriptor's state-file columns,
    payload_bytes, defined_bytes; records the commit-log head, the descriptor, the sizes; one
    canonical text per layout (json.dumps with separators (",", ":"))."""
    desc = ["location", "kind", "datatype", "row", "col", "valid_row", "valid_col", "layout", "representation",
            "capacity", "fmap_layout", "fmap_params", "fmap_pad_bits", "fmap_transposed", "payload_bytes",
            "defined_bytes"]
    texts = {r["layout"] for r in all_rows(dataset)}
    for text in texts:
        lay = json.loads(text)
        assert text == json.dumps(lay, separators=(",", ":")) and list(lay) == ["initial", "records"]
        assert all(list(e) == ["pes", "tile", *desc] for e in lay["initial"])
        assert all(list(e) == ["block", "offset", "record", "mnemonic", "block_datatype", "pe", "tile", *desc]
                   for e in lay["records"])
    assert len(texts) > 1


def test_layout_entry_texts_are_json_dumps_of_the_entry():
    """The generator writes each entry's JSON from kept pieces: the text is json.dumps's (compact)
    of the head followed by the descriptor's fields, strings escaped as json escapes them."""
    desc = S._regular("E4M3", S.SHAPES[1])
    entry = {**SD._desc_json(desc), **SD._sizes(desc)}
    for head in ({"block": 3, "offset": 144, "record": "commit", "mnemonic": "TADD", "block_datatype": "E4M3",
                  "pe": 2, "tile": 7},
                 {"block": 0, "offset": 16, "record": "fault", "mnemonic": 'T"\\\u00e9\n', "block_datatype": "",
                  "pe": 0, "tile": 0}):
        want = json.dumps({**head, **(entry if head["record"] == "commit" else
                                      {**SD._desc_json(None), **SD._sizes(None)})}, separators=(",", ":"))
        members = SD._desc_members(desc if head["record"] == "commit" else None)[0]
        assert SD._record_text(*head.values(), members) == want
    assert SD._initial_text([0, 1, 2, 3], 5, SD._desc_members(desc)[0]) == \
        json.dumps({"pes": [0, 1, 2, 3], "tile": 5, **entry}, separators=(",", ":"))
    assert SD._desc_members(desc)[1:] == (entry["payload_bytes"], entry["defined_bytes"])


def test_a_planted_wrong_record_fails_verify_naming_file_case_and_block(dataset, tmp_path, capsys):
    x = tmp_path / "x"
    shutil.copytree(dataset, x)
    rel = "blocks=6/shape=r1c8/part-00000.parquet"
    rows = pq.read_table(x / rel).to_pylist()
    row = _row_with_commits(rows, 3)
    i, head, at = _commit(rows[row], 3)
    pay = bytearray(rows[row]["record_payload"])
    pay[at] ^= 0x01
    rows[row]["record_payload"] = bytes(pay)
    _rewrite(x, rel, pa.Table.from_pylist(rows, schema=pq.read_schema(x / rel)))
    assert main(["verify", str(x), "--quiet"]) == 1
    out = capsys.readouterr().out
    assert f"{rel}: case {rows[row]['case']}: block {head['block']}: records.payload (record {i})" in out


def test_a_changed_final_tile_fails_verify(dataset, tmp_path, capsys):
    """The final state is the records: a changed bit of the last commit to a tile (a final
    tile) or of its definedness is named like any record."""
    x = tmp_path / "x"
    shutil.copytree(dataset, x)
    rel = "blocks=6/shape=r4c8/part-00000.parquet"
    rows = pq.read_table(x / rel).to_pylist()
    row = next(i for i, r in enumerate(rows) if r["outcome"] == "commit")
    heads = json.loads(rows[row]["layout"])["records"]
    last = len(heads) - 1
    d = bytearray(rows[row]["record_defined"])
    d[sum(h["defined_bytes"] for h in heads[:last])] ^= 0x01
    rows[row]["record_defined"] = bytes(d)
    _rewrite(x, rel, pa.Table.from_pylist(rows, schema=pq.read_schema(x / rel)))
    assert main(["verify", str(x), "--quiet"]) == 1
    assert f"block {heads[last]['block']}: records.defined (record {last})" in capsys.readouterr().out


@pytest.mark.parametrize("edit, field", [
    (lambda lay: lay["records"][0].update(tile=lay["records"][0]["tile"] + 1), "layout.records[0].tile"),
    (lambda lay: lay["records"][0].update(valid_col=lay["records"][0]["valid_col"] ^ 1 or 2),
     "layout.records[0].valid_col"),
    (lambda lay: lay["records"][0].update(datatype="FP64" if lay["records"][0]["datatype"] != "FP64" else "U8"),
     "records[0]"),           # the replay names it, or the open check when the sizes differ
])
def test_a_changed_stored_descriptor_fails_verify(dataset, tmp_path, capsys, edit, field):
    x = tmp_path / "x"
    shutil.copytree(dataset, x)
    rel = "blocks=6/shape=r1c8/part-00000.parquet"
    rows = pq.read_table(x / rel).to_pylist()
    row = next(i for i, r in enumerate(rows) if r["outcome"] == "commit")
    lay = json.loads(rows[row]["layout"])
    edit(lay)
    rows[row]["layout"] = json.dumps(lay, separators=(",", ":"))
    _rewrite(x, rel, pa.Table.from_pylist(rows, schema=pq.read_schema(x / rel)))
    assert main(["verify", str(x), "--quiet"]) == 1
    out = capsys.readouterr()
    assert f"{rel}: case {rows[row]['case']}" in out.out + out.err and field in out.out + out.err


def test_a_layout_that_does_not_fit_its_bytes_is_one_line(dataset, tmp_path, capsys):
    x = tmp_path / "x"
    shutil.copytree(dataset, x)
    rel = "blocks=6/shape=r1c8/part-00000.parquet"
    rows = pq.read_table(x / rel).to_pylist()
    rows[0]["initial_payload"] = rows[0]["initial_payload"][:-1]
    _rewrite(x, rel, pa.Table.from_pylist(rows, schema=pq.read_schema(x / rel)))
    assert main(["verify", str(x), "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"case {rows[0]['case']}: initial_payload holds" in err[0]


def test_a_version_1_stream_dataset_is_refused_in_one_line(dataset, tmp_path, capsys):
    x = tmp_path / "x"
    shutil.copytree(dataset, x)
    m = json.loads((x / "manifest.json").read_text())
    m["format_version"] = 1
    (x / "manifest.json").write_text(json.dumps(m))
    assert main(["verify", str(x), "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "format version 1; this tile-emu reads versions 2 and 3" in err[0]


@pytest.mark.parametrize("damage, message", [
    (lambda p: p.write_bytes(p.read_bytes()[:-100]), "bytes, the manifest says"),
    (lambda p: p.write_bytes(p.read_bytes()[:50] + b"\xff" + p.read_bytes()[51:]), "SHA-256 differs"),
])
def test_truncated_or_altered_files_are_one_line(dataset, tmp_path, capsys, damage, message):
    x = tmp_path / "x"
    shutil.copytree(dataset, x)
    damage(x / "blocks=6/shape=r4c8/part-00000.parquet")
    assert main(["verify", str(x), "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "blocks=6/shape=r4c8/part-00000.parquet" in err[0] and message in err[0]


@pytest.mark.parametrize("damage, message", [
    (lambda x: (x / "manifest.json").write_text((x / "manifest.json").read_text()[:-40]), "not valid JSON"),
    (lambda x: (x / "blocks=6/shape=r3c1/part-00000.parquet").unlink(), "listed in the manifest but missing"),
    (lambda x: (x / "blocks=6/shape=r3c1/extra.parquet").write_bytes(b"x"), "not listed in the manifest"),
    (lambda x: (x / "generation.json").write_text('{"streams": true}'), "generation.json"),
])
def test_a_damaged_dataset_folder_is_one_line(dataset, tmp_path, capsys, damage, message):
    x = tmp_path / "x"
    shutil.copytree(dataset, x)
    damage(x)
    for argv in (["verify", str(x), "--quiet"], ["golden", "--coverage", str(x)]):
        assert main(argv) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0]


def test_a_row_with_a_wrong_class_outcome_is_named(dataset, tmp_path, capsys):
    x = tmp_path / "x"
    shutil.copytree(dataset, x)
    rel = "blocks=6/shape=r2c3w8/part-00000.parquet"
    rows = pq.read_table(x / rel).to_pylist()
    i = next(i for i, r in enumerate(rows) if r["class"] == "legal")
    rows[i]["outcome"] = "fault"
    _rewrite(x, rel, pa.Table.from_pylist(rows, schema=pq.read_schema(x / rel)))
    assert main(["verify", str(x), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"{rel}: case {rows[i]['case']}: class legal expects commit" in err


def test_local_dask_clusters_of_one_and_two_workers_write_the_same_bytes(tmp_path):
    small = ["--blocks", "2", "--cases", "2", "--group-cases", "1", "--shapes", "r1c8,r3c1", "--seed", "4",
             "--quiet"]
    assert generate(tmp_path / "one", "--workers", "1", args=small) == 0
    assert generate(tmp_path / "two", "--workers", "2", args=small) == 0
    assert generate(tmp_path / "here", args=small) == 0
    assert data_files(tmp_path / "one") == data_files(tmp_path / "two") == data_files(tmp_path / "here")


def test_resume_after_an_interrupted_run_gives_the_same_bytes(dataset, tmp_path):
    x = tmp_path / "x"
    shutil.copytree(dataset, x)
    (x / "manifest.json").unlink()
    (x / "blocks=6/shape=r4c8/part-00000.parquet").unlink()
    (x / "blocks=6/shape=r4c8/.part-00000.parquet.0123abcd.tmp").write_bytes(b"half")
    assert generate(x, "--resume") == 0
    assert data_files(x) == data_files(dataset)


def test_resume_refuses_a_data_file_of_another_stream_row_format(dataset, tmp_path, capsys):
    """A kept file must hold this format's rows: one of version 1's columns is one line, exit 1."""
    x = tmp_path / "x"
    shutil.copytree(dataset, x)
    (x / "manifest.json").unlink()
    rel = "blocks=6/shape=r1c8/part-00000.parquet"
    old = pq.read_table(x / rel).drop_columns(["layout"]).append_column("final", pa.array([[]] * 10, pa.list_(pa.uint8())))
    pq.write_table(old, x / rel)
    assert generate(x, "--resume") == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and rel in err[0] and "does not hold stream rows of format version 3" in err[0]


@pytest.mark.parametrize("argv, message", [
    (["--cases", "4", "--out", "o"], "missing --blocks"),
    (["--blocks", "4", "--cases", "4", "--dst-dtypes", "FP16", "--out", "o"], "--dst-dtypes is for single-block"),
    (["--blocks", "4", "--cases", "4", "--illegal-fraction", "2", "--out", "o"], "--illegal-fraction 2"),
])
def test_bad_stream_arguments_are_one_line(tmp_path, capsys, argv, message):
    assert main(["golden", "--streams", *argv]) == 2
    assert message in capsys.readouterr().err


def test_unknown_shape_class_is_one_line(tmp_path, capsys):
    assert main(["golden", "--streams", "--blocks", "2", "--cases", "1", "--shapes", "r9", "--out",
                 str(tmp_path / "o")]) == 1
    assert "unknown stream shape class 'r9'" in capsys.readouterr().err


def test_coverage_reports_stream_classes_and_impossible_cells(dataset, capsys):
    assert main(["golden", "--coverage", str(dataset)]) == 0
    out = capsys.readouterr().out
    assert "illegal_dim_range" in out and "n/a" in out
    assert "RAW hazards" in out and "impossible:" in out and "TIMG2COL reads only a feature map" in out
    assert "hazards x instruction" in out and "hazard_x_instruction:" in out
    assert "faults (streams) by reason x position" in out
