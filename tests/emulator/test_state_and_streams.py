"""Machine API, Arrow state files (round trip, malformed-file rejection) and streams."""
import numpy as np
import pyarrow as pa
import pytest

from emu_helpers import Machine, blk, everywhere
from emulator import FeatureMap, MachineConfig, StreamError
from emulator.stateio import SCHEMA, StateFileError, load_state, state_table
from isa import encoding

rng = np.random.default_rng(5)


def rich_machine() -> Machine:
    m = Machine(MachineConfig(local_bytes=1 << 16, matrix_bytes=1 << 14, profile="ftz"))
    m.write_tile(0, 1, "FP32", rng.integers(0, 2**32, (3, 5)), layout=2, valid_col=4)
    m.write_tile(1, 2, None, rng.integers(0, 2, (3, 11)), kind="predicate", capacity=9)
    m.write_tile(2, 3, "S4X2", rng.integers(0, 16, (3, 5)), defined=rng.random((3, 5)) > 0.5)
    m.write_tile(3, 4, "FP16", rng.integers(0, 2**16, (5, 18)), representation="cube")
    fm = FeatureMap("NDC1HWC0", N=1, D=2, C1=1, H=2, W=2, C0=8, filterH=1, filterW=1, channels=5, pad_bits=7)
    m.write_tile(0, 5, "U8", rng.integers(0, 256, (8, 8)), location="Matrix", fmap=fm)
    m.write_tile(0, 6, "U64", np.array([[2**64 - 1, 0, 2**63]], dtype=np.uint64))
    m.set_gpr(1, 31, 2**64 - 1)
    m.set_gpr(3, 30, -2)
    m._pes[2].status = 0b10101
    return m


def test_state_file_round_trip_is_exact(tmp_path):
    m = rich_machine()
    m.save(tmp_path / "s.arrow")
    m2 = Machine.load(tmp_path / "s.arrow")
    assert m2.digest() == m.digest() and m2.config == m.config
    assert m2.gpr(3, 30) == 2**64 - 2 and m2.status(2) == 0b10101
    for p in range(4):
        for t in m.tiles(p):
            a, b = m.read_tile(p, t), m2.read_tile(p, t)
            assert a.desc == b.desc and a.payload == b.payload and np.array_equal(a.defined, b.defined)


def test_state_file_columns_are_the_documented_schema(tmp_path):
    m = rich_machine()
    m.save(tmp_path / "s.arrow")
    with pa.memory_map(str(tmp_path / "s.arrow")) as f:
        t = pa.ipc.open_file(f).read_all()
    assert t.schema.remove_metadata() == SCHEMA
    assert t.num_rows == 6 and sum(c.null_count for c in t.columns) == 0
    row = [r for r in t.to_pylist() if r["tile"] == 6][0]
    assert row["payload"] == (2**64 - 1).to_bytes(8, "little") + bytes(8) + (2**63).to_bytes(8, "little")
    assert row["defined"] == bytes([0b111])


def _mutate(tmp_path, fn, meta=None):
    t = state_table(rich_machine())
    t = fn(t)
    if meta is not None:
        t = t.replace_schema_metadata(meta)
    path = tmp_path / "bad.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, t.schema) as w:
        w.write_table(t)
    return path


def _set(col, i, value, type_=None):
    def fn(t):
        vals = t[col].to_pylist()
        vals[i] = value
        return t.set_column(t.schema.get_field_index(col), col, pa.array(vals, type_ or t.schema.field(col).type))
    return fn


MALFORMED = [
    ("pe out of range", _set("pe", 0, 4), "column 'pe'"),
    ("duplicate tile", _set("tile", 1, 1), "appears twice"),
    ("unknown DataType", _set("datatype", 0, "FP99"), "column 'datatype'"),
    ("predicate with a DataType", _set("datatype", 3, "FP32"), "column 'datatype'"),
    ("payload too short", _set("payload", 0, b"\x00"), "column 'payload'"),
    ("defined bitmap too long", _set("defined", 0, b"\xff" * 9), "column 'defined'"),
    ("nonzero trailing payload nibble", _set("payload", 4, b"\xff" * 8), "column 'payload'"),
    ("reserved layout code", _set("layout", 0, 13), "reserved"),
    ("capacity below the payload", _set("capacity", 0, 1), "payload bytes"),
    ("valid rectangle beyond the tile", _set("valid_row", 0, 9), "valid"),
    ("unknown location", _set("location", 0, "Global"), "location"),
    ("huge Row does not allocate", _set("row", 0, 2**31), "column 'payload'"),
    ("feature map params count", _set("fmap_params", 1, [1, 2, 3]), "fmap_params"),
    ("feature map on a Local tile", _set("location", 1, "Local"), "feature-map"),
    ("capacity beyond the store", _set("capacity", 2, 2**40), None),
]


@pytest.mark.parametrize("name,fn,fragment", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_state_file_is_rejected_with_row_and_column(tmp_path, name, fn, fragment):
    path = _mutate(tmp_path, fn)     # rows: (0,1) (0,5) (0,6) (1,2) (2,3) (3,4)
    with pytest.raises(StateFileError) as exc:
        load_state(path)
    msg = str(exc.value)
    assert "row " in msg, msg
    if fragment:
        assert fragment in msg, msg


@pytest.mark.parametrize("meta,fragment", [
    ({}, "no 'tile-emu.state'"),
    ({b"tile-emu.state": b"{not json"}, "not JSON"),
    ({b"tile-emu.state": b"[" * 100000 + b"]" * 100000}, "nests too deeply"),
    ({b"tile-emu.state": b'{"format": "other"}'}, "format"),
    ({b"tile-emu.state": b'{"format": "tile-emu-state", "version": 99}'}, "version"),
    ({b"tile-emu.state": b'{"format": "tile-emu-state", "version": 1, "pes": []}'}, "4 PEs"),
])
def test_malformed_metadata_is_rejected(tmp_path, meta, fragment):
    path = _mutate(tmp_path, lambda t: t, meta=meta)
    with pytest.raises(StateFileError) as exc:
        load_state(path)
    assert fragment in str(exc.value)


def test_gpr_values_in_metadata_are_checked(tmp_path):
    import json
    t = state_table(rich_machine())
    meta = json.loads(t.schema.metadata[b"tile-emu.state"])
    meta["pes"][0]["gprs"][3] = "0x1" + "0" * 16
    path = _mutate(tmp_path, lambda t: t, meta={b"tile-emu.state": json.dumps(meta).encode()})
    with pytest.raises(StateFileError, match=r"pes\[0\]\.gprs\[3\]"):
        load_state(path)


@pytest.mark.parametrize("config,fragment", [
    (None, "must be an object"),
    ([1, 2], "must be an object"),
    ({"profile": "bogus"}, "profile"),
    ({"profile": 3}, "profile"),
    ({"local_bytes": 1.5}, "local_bytes"),
    ({"local_bytes": True}, "local_bytes"),
    ({"matrix_bytes": "4096"}, "matrix_bytes"),
    ({"local_bytes": 1 << 32}, "local_bytes"),     # a huge store would let one block allocate without bound
])
def test_malformed_config_in_metadata_is_rejected_on_load(tmp_path, config, fragment):
    import json
    t = state_table(rich_machine())
    meta = json.loads(t.schema.metadata[b"tile-emu.state"])
    meta["config"] = config
    path = _mutate(tmp_path, lambda t: t, meta={b"tile-emu.state": json.dumps(meta).encode()})
    with pytest.raises(StateFileError, match="config") as exc:
        load_state(path)
    assert fragment in str(exc.value)


def test_corrupt_binary_offsets_are_rejected_not_trusted(tmp_path):
    """Arrow IPC reads do not check offsets: a file whose `payload` offsets run backwards must be
    a StateFileError, not a crash when the column is read."""
    path = tmp_path / "s.arrow"
    rich_machine().save(path)
    t = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    offsets = t.column("payload").chunk(0).buffers()[1].to_pybytes()
    data = bytearray(path.read_bytes())
    at = data.find(offsets)
    assert at > 0
    data[at + 4:at + 8] = (2**31 - 1).to_bytes(4, "little")    # offset[1] beyond offset[2]
    path.write_bytes(bytes(data))
    with pytest.raises(StateFileError, match="corrupt Arrow data"):
        load_state(path)


def test_store_capacity_is_checked_with_running_sums_over_many_tiles(tmp_path):
    """20000 one-byte predicate tiles fill a 20000-byte Local store exactly; one more byte is
    rejected.  (The loader keeps per-store sums, so a file of many tiles loads in linear time.)"""
    from emulator.tiles import Descriptor, make_tile
    d = Descriptor("Local", "predicate", None, 1, 8, 1, 8, 0, "standard", 1)
    t = make_tile(d, np.zeros(8, np.uint8), np.ones(8, bool))
    m = Machine(MachineConfig(local_bytes=20000))
    m._pes[2].tiles.update({i: t for i in range(20000)})
    m.save(tmp_path / "full.arrow")
    assert len(load_state(tmp_path / "full.arrow").pes[2].tiles) == 20000
    m._pes[2].tiles[20000] = t
    m.save(tmp_path / "over.arrow")
    with pytest.raises(StateFileError, match="row 20000 .*PE2 Local store: 20000 bytes used"):
        load_state(tmp_path / "over.arrow")


@pytest.mark.parametrize("content", [b"", b"garbage", b"ARROW1" + bytes(100)])
def test_non_arrow_bytes_are_rejected(tmp_path, content):
    (tmp_path / "x.arrow").write_bytes(content)
    with pytest.raises(StateFileError):
        load_state(tmp_path / "x.arrow")


def test_missing_column_and_wrong_type_are_rejected(tmp_path):
    path = _mutate(tmp_path, lambda t: t.drop_columns(["layout"]))
    with pytest.raises(StateFileError, match="column 'layout' is missing"):
        load_state(path)
    path = _mutate(tmp_path, lambda t: t.set_column(t.schema.get_field_index("layout"), "layout",
                                                    pa.array(t["layout"].to_pylist(), pa.int64())))
    with pytest.raises(StateFileError, match="type"):
        load_state(path)


def test_nulls_are_rejected(tmp_path):
    path = _mutate(tmp_path, _set("payload", 0, None))
    with pytest.raises(StateFileError, match="nulls"):
        load_state(path)


# ---------------------------------------------------------------- machine API

def test_write_tile_validation():
    m = Machine(MachineConfig(local_bytes=64))
    with pytest.raises(ValueError):
        m.write_tile(4, 1, "FP32", np.zeros((1, 1)))
    with pytest.raises(ValueError):
        m.write_tile(0, 1, "U8", np.array([[256]]))
    with pytest.raises(ValueError):
        m.write_tile(0, 1, "U4X2", np.array([[16]]))
    with pytest.raises(ValueError):
        m.write_tile(0, 1, "FP32", np.zeros((5, 4)))        # 80 bytes > the 64-byte store
    with pytest.raises(ValueError):
        m.write_tile(0, 1, "FP32", np.zeros((2, 2)), capacity=4)
    with pytest.raises(ValueError):
        m.set_gpr(0, 32, 0)


def test_copy_is_independent_and_digest_tracks_every_part_of_state():
    m = rich_machine()
    c = m.copy()
    assert c.digest() == m.digest()
    c.set_gpr(0, 1, 1)
    assert c.digest() != m.digest()
    c = m.copy()
    c._pes[0].status = 1
    assert c.digest() != m.digest()
    c = m.copy()
    c.write_tile(0, 6, "U64", np.array([[2**64 - 1, 0, 2**63]], dtype=np.uint64), defined=np.array([[1, 1, 0]], bool))
    assert c.digest() != m.digest()


# ---------------------------------------------------------------- streams

def _stream_machine():
    m = Machine()
    everywhere(m, 1, "U32", np.arange(8).reshape(2, 4))
    return m


def test_run_executes_a_binary_stream_in_order():
    m = _stream_machine()
    blocks = [blk("TEXTRACT", "U32", [1], 2, mask=0b1111, vr=2), blk("TADD", "U32", [2, 1], 3, mask=0b0001, vr=2),
              blk("TEXTRACT", "U32", [3], 4, vc=1)]
    r = m.run(encoding.encode(blocks))
    assert r.ok and r.executed == 3
    assert m.read_tile(0, 4).bits.tolist() == [[0]] and m.read_tile(0, 3).bits[1].tolist() == [8, 10, 12, 14]


def test_run_stops_at_the_first_failing_block_with_index_offset_and_cause():
    m = _stream_machine()
    blocks = [blk("TEXTRACT", "U32", [1], 2, vr=2), blk("TEXTRACT", "U32", [1], 3, vr=2),
              blk("TEXTRACT", "U32", [99], 4), blk("TEXTRACT", "U32", [1], 5)]
    data = encoding.encode(blocks)
    offsets = [off for off, _ in encoding.iter_blocks(data)]
    expected = _stream_machine()
    expected.run(blocks[:2])
    r = m.run(data)
    assert not r.ok and r.executed == 2
    err = r.error
    assert isinstance(err, StreamError) and err.index == 2 and err.offset == offsets[2]
    assert err.reason == "SOURCE_MISSING" and m.digest() == expected.digest()
    assert 5 not in m.tiles(0)


def test_run_reports_decode_errors_after_the_committed_prefix():
    m = _stream_machine()
    data = encoding.encode([blk("TEXTRACT", "U32", [1], 2, vr=2), blk("TEXTRACT", "U32", [1], 3, vr=2)])
    r = m.run(data[:-3])
    assert not r.ok and r.error.reason == "DECODE_ERROR" and r.executed == 0
    assert r.error.offset is not None
    assert r.error.whole_stream and r.error.where.startswith("stream header")   # no block is blamed


def test_a_fault_inside_a_block_names_that_block():
    m = _stream_machine()
    data = bytearray(encoding.encode([blk("TEXTRACT", "U32", [1], 2, vr=2)] * 2))
    second = [off for off, _ in encoding.iter_blocks(bytes(data))][1]
    data[second] = 0xEE                                  # unknown word tag where block 1 starts
    r = m.run(bytes(data))
    assert r.executed == 1 and not r.error.whole_stream and r.error.where == f"block 1 (byte offset {second})"


def test_a_decode_fault_is_reported_at_the_blocks_bstart_and_names_the_offending_word():
    """docs/assembly.md: the emulator reports a failing block by its BSTART offset (what disasm
    prints as '# block i, byte N'); the decode fault itself names the word's own offset."""
    m = _stream_machine()
    two = encoding.encode([blk("TEXTRACT", "U32", [1], 2, vr=2)] * 2)
    second = [off for off, _ in encoding.iter_blocks(two)][1]
    data = bytearray(two)
    word = second + 8                                    # block 1's first descriptor word
    data[word] = 0xEE                                    # unknown word tag
    r = m.run(bytes(data))
    assert r.executed == 1 and r.error.index == 1 and r.error.offset == second
    assert r.error.where == f"block 1 (byte offset {second})" and r.error.cause.offset == word
    assert r.error.detail.startswith(f"DECODE_ERROR at byte offset {word}: unknown word tag")


def test_run_accepts_block_sequences():
    m = _stream_machine()
    r = m.run([blk("TEXTRACT", "U32", [1], 2, vr=2), blk("TEXTRACT", "U32", [7], 3)])
    assert r.executed == 1 and r.error.index == 1 and r.error.offset is None
