"""Arrow flit files (zero-copy, malformed input), the `tile-emu vcg` / `tile-emu reduce` commands,
the PNG heatmap (decoded here independently), and the shipped examples."""
import json
import pathlib
import struct
import sys
import zlib

import numpy as np
import pyarrow as pa
import pytest

from emulator.cli import main
from fabric.vcg import Mapping, compile_vcg, plan_reduce, reduce_flits, valid_size_matrix
from fabric.vcg.arrow_io import (FlitFileError, flit_view, input_table, read_flits, read_table,
                                 write_table)
from fabric.vcg.heatmap import PALETTE, png_bytes

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "vcg"
HCW_ARGS = ["--axes", "H=5,C=5,W=19", "--slice", "H # 8 / 2, C # 8 / 2",
            "--time", "H # 8 % 2, C # 8 % 2, W # 24 / 8", "--packet", "W # 24 % 8", "--reduce", "W"]


# ----------------------------------------------------------------------------- Arrow

def test_reading_a_flit_file_is_zero_copy(tmp_path):
    x = np.arange(40 * 8, dtype=np.float32).reshape(40, 8)
    write_table(tmp_path / "f.arrow", input_table(x, np.full(40, 8, np.uint8)))
    view, valid = read_flits(tmp_path / "f.arrow")
    assert view.shape == (40, 8) and np.array_equal(view, x) and valid.tolist() == [8] * 40
    assert not view.flags.writeable                                      # memory-mapped, read-only
    table = read_table(tmp_path / "f.arrow")
    flat = table.column("flit").chunk(0).flatten()
    same = flit_view(table.column("flit"))
    assert same.__array_interface__["data"][0] == flat.buffers()[1].address     # the Arrow buffer itself


def test_a_sliced_arrow_array_keeps_its_offset():
    arr = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(32, dtype=np.int16)), 8).slice(1, 2)
    assert flit_view(arr).tolist() == [list(range(8, 16)), list(range(16, 24))]


def test_raw_bits_can_be_reinterpreted(tmp_path):
    bits = np.array([[0x3C00] * 8], np.uint16)                     # float16 1.0
    write_table(tmp_path / "f.arrow", input_table(bits))
    view, valid = read_flits(tmp_path / "f.arrow", dtype="float16")
    assert view.dtype == np.float16 and view[0, 0] == 1.0 and valid is None
    with pytest.raises(FlitFileError, match="cannot reinterpret uint16 flits as float32"):
        read_flits(tmp_path / "f.arrow", dtype="float32")


@pytest.mark.parametrize("make,words", [
    (lambda: pa.table({"x": [1]}), "no 'flit' column"),
    (lambda: pa.table({"flit": pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(8, np.int32)), 4)}),
     "is not fixed_size_list<_>[8]"),
    (lambda: pa.table({"flit": pa.FixedSizeListArray.from_arrays(pa.array([True] * 8), 8)}),
     "element type bool is not supported"),
    (lambda: pa.table({"flit": pa.FixedSizeListArray.from_arrays(pa.array([1, None] * 4, pa.int32()), 8)}),
     "null values"),
    (lambda: pa.table({"flit": pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(8, np.int8)), 8),
                       "valid_size": pa.array([3], pa.int32())}), "expected uint8"),
    (lambda: pa.table({"flit": pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(8, np.int8)), 8),
                       "valid_size": pa.array([9], pa.uint8())}), "valid_size 9 > 8 at row 0"),
])
def test_malformed_flit_files_are_rejected_precisely(tmp_path, make, words):
    write_table(tmp_path / "bad.arrow", make())
    with pytest.raises(FlitFileError, match=words.replace("[", r"\[").replace("]", r"\]")):
        read_flits(tmp_path / "bad.arrow")


def test_unknown_reinterpretation_type_is_a_flit_file_error(tmp_path):
    write_table(tmp_path / "f.arrow", input_table(np.zeros((1, 8), np.uint16)))
    with pytest.raises(FlitFileError, match="unknown element type 'bogus'"):
        read_flits(tmp_path / "f.arrow", dtype="bogus")


def test_corrupt_arrow_files_are_flit_file_errors(tmp_path):
    """Damaged footers, lengths and buffers: a FlitFileError, never an OSError or a crash."""
    write_table(tmp_path / "f.arrow", input_table(np.arange(64, dtype=np.int32).reshape(8, 8),
                                                  np.full(8, 8, np.uint8)))
    good = (tmp_path / "f.arrow").read_bytes()
    rng = np.random.default_rng(5)
    for k in range(200):
        data = bytearray(good)
        for i in rng.integers(0, len(data), 1 + k % 4):
            data[i] ^= 1 << int(rng.integers(0, 8))
        (tmp_path / "bad.arrow").write_bytes(bytes(data))
        try:
            read_flits(tmp_path / "bad.arrow")
        except FlitFileError:
            pass


def test_non_arrow_bytes_are_rejected(tmp_path):
    (tmp_path / "junk.arrow").write_bytes(b"ARROW1 but not really" * 10)
    with pytest.raises(FlitFileError, match="not a valid Arrow IPC file"):
        read_flits(tmp_path / "junk.arrow")
    with pytest.raises(FlitFileError, match="cannot open"):
        read_flits(tmp_path / "missing.arrow")


# ----------------------------------------------------------------------------- tile-emu vcg

def test_vcg_prints_config_and_heatmap(capsys):
    assert main(["vcg", *HCW_ARGS]) == 0
    out = capsys.readouterr().out
    assert "TimeFilterConfig {  // time filter 0: tracks C" in out
    assert "slice_mask:  0b1100," in out and "axis_size:   19," in out
    assert "t= 11 (1,1,2)" in out and "Legend:" in out


def test_vcg_track_and_narrow_options(capsys):
    assert main(["vcg", *HCW_ARGS, "--track", "none", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [tf["axis"] for tf in doc["config"]["time_filters"]] == [None, None, None]
    assert doc["valid_size"][15] == [8, 8, 3] * 4                 # H, C padding no longer closed
    assert main(["vcg", *HCW_ARGS, "--track", "H", "--json"]) == 0
    assert [tf["axis"] for tf in json.loads(capsys.readouterr().out)["config"]["time_filters"]] == ["H", None, None]
    assert main(["vcg", *HCW_ARGS, "--narrow", "trim"]) == 1
    assert "[narrow-trim]" in capsys.readouterr().err


def test_vcg_json_has_the_full_matrix(capsys):
    assert main(["vcg", *HCW_ARGS, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    m = Mapping.parse("H = 5, C = 5, W = 19", "H # 8 / 2, C # 8 / 2", "H # 8 % 2, C # 8 % 2, W # 24 / 8", "W # 24 % 8")
    vs = valid_size_matrix(compile_vcg(m, "W"), 16, 12)
    assert doc["valid_size"] == vs.tolist() and (doc["num_slices"], doc["num_steps"]) == (16, 12)
    assert doc["config"]["time_filters"][1]["slice_mask"] == 0b1100
    assert doc["mapping"]["reduce"] == "W"


def decode_png(data: bytes) -> np.ndarray:
    """A minimal independent PNG reader (8-bit RGB, filter 0), checking every CRC."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, size = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        assert struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0] == zlib.crc32(kind + body)
        if kind == b"IHDR":
            w, h, depth, color = struct.unpack(">IIBB", body[:10])
            assert (depth, color) == (8, 2)
            size = (h, w)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(size[0], 1 + 3 * size[1])
    assert (raw[:, 0] == 0).all()
    return raw[:, 1:].reshape(size[0], size[1], 3)


def test_vcg_png_heatmap_decodes_to_the_matrix(tmp_path, capsys):
    assert main(["vcg", *HCW_ARGS, "--heatmap", str(tmp_path / "h.png"), "--cell", "3"]) == 0
    img = decode_png((tmp_path / "h.png").read_bytes())
    assert img.shape == (12 * 3, 16 * 3, 3)
    m = Mapping.parse("H = 5, C = 5, W = 19", "H # 8 / 2, C # 8 / 2", "H # 8 % 2, C # 8 % 2, W # 24 / 8", "W # 24 % 8")
    vs = valid_size_matrix(compile_vcg(m, "W"), 16, 12)
    assert np.array_equal(img[1::3, 1::3], PALETTE[vs.T])
    assert decode_png(png_bytes(np.array([[0, 8]], np.uint8), 1)).tolist() == [[PALETTE[0].tolist()], [PALETTE[8].tolist()]]


@pytest.mark.parametrize("args,words", [
    (["--axes", "R=43,X=64", "--slice", "R # 48 / 8, X", "--time", "R # 48 / 2 % 4",
      "--packet", "R # 48 % 2", "--reduce", "R"], "inexpressible [slice-packet]"),
    (["--axes", "R=4", "--time", "R / 3", "--reduce", "R"], "Time column 3: stride 3 does not divide"),
    (["--axes", "R=4", "--time", "R", "--reduce", "Q"], "[reduce-axis]"),
    (["--axes", "R=4", "--time", "R"], "--axes and --reduce are required"),
    (["--mapping", "nope.json"], "cannot read nope.json"),
])
def test_vcg_user_errors_are_one_line_without_traceback(capsys, args, words):
    assert main(["vcg", *args]) in (1, 2)
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_vcg_mapping_error_shows_a_caret(capsys):
    main(["vcg", "--axes", "R=4", "--time", "R # 8 / 3", "--reduce", "R"])
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "  R # 8 / 3" and err[1] == "        ^^^"


def test_the_issue_example_with_a_multiple_of_packet_span_is_accepted(capsys):
    assert main(["vcg", "--axes", "R=44,X=64", "--slice", "R # 48 / 8 # 8, X", "--time", "R # 48 / 2 % 4",
                 "--packet", "R # 48 % 2", "--reduce", "R"]) == 0
    out = capsys.readouterr().out
    assert "slice class" in out and "C2: 128 slices: 384-511" in out


# ----------------------------------------------------------------------------- tile-emu reduce

def hcw_expected():
    """sum over w of the example's logical tensor (make_input.py's formula, restated here)."""
    want = {}
    for h in range(5):
        for c in range(5):
            vals = [((h + 1) + (c + 1) * 7 + (w + 1) * 49) % 97 - 48 for w in range(19)]
            ho, hi, co, ci = h // 2, h % 2, c // 2, c % 2
            want[(ho * 4 + co, hi * 2 + ci)] = sum(vals)
    return want


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_reduce_the_shipped_example(tmp_path, capsys, backend):
    out = tmp_path / "o.arrow"
    assert main(["reduce", str(EXAMPLES / "hcw_input.arrow"), "--mapping", str(EXAMPLES / "hcw.json"),
                 "--op", "AddSat", "--out", str(out), "--backend", backend]) == 0
    assert "16 x 4 output flits" in capsys.readouterr().out
    t = read_table(out)
    assert t.schema.names == ["slice", "out_time", "flit", "valid_size"]
    meta = json.loads(t.schema.metadata[b"tile-emu.vcg"])
    assert meta["op"] == "AddSat" and meta["mapping"]["reduce"] == "W"
    flits = flit_view(t.column("flit"), 4)
    got = {(s, o): int(f[0]) for s, o, f in zip(t.column("slice").to_pylist(), t.column("out_time").to_pylist(), flits)}
    for key, value in hcw_expected().items():
        assert got[key] == value, key
    assert set(t.column("valid_size").to_pylist()) == {1}


def test_the_examples_regenerate_identically(tmp_path):
    sys.path.insert(0, str(EXAMPLES))
    try:
        import make_input
        assert make_input.main(["--out-dir", str(tmp_path)]) == 0
    finally:
        sys.path.remove(str(EXAMPLES))
    for name in ("hcw_input.arrow", "time_packet_input.arrow"):
        new, old = read_table(tmp_path / name), read_table(EXAMPLES / name)
        assert new.schema.equals(old.schema, check_metadata=True)
        a, b = flit_view(new.column("flit")), flit_view(old.column("flit"))
        assert a.tobytes() == b.tobytes()                        # bit for bit, NaN payloads included
        assert new.column("valid_size").equals(old.column("valid_size"))


def test_reduce_time_packet_example_float(tmp_path):
    out = tmp_path / "o.arrow"
    assert main(["reduce", str(EXAMPLES / "time_packet_input.arrow"), "--mapping",
                 str(EXAMPLES / "time_packet.json"), "--op", "Add", "--out", str(out)]) == 0
    flits = flit_view(read_table(out).column("flit"), 4)
    # slice s = (x, a/2); value depends on (a, r, x) with a = 2 * (s % 4)
    for s in range(16):
        x, a = s // 4, (s % 4) * 2
        vals = [np.float32(((a + 1) + (r + 1) * 7 + (x + 1) * 49) % 97 - 48) / np.float32(4) for r in range(10)]
        acc = np.float32(-0.0)
        for t in range(3):                       # flits of R # 16 / 4: 4, 4, 2 valid lanes, tree each
            lanes = vals[4 * t:4 * t + 4]
            ab = lanes[0] + lanes[1]
            node = ab + (lanes[2] + lanes[3]) if len(lanes) == 4 else ab
            acc = np.float32(acc + node)
        assert flits[s, 0] == acc


def _write_hcw_input(tmp_path, **cols):
    t = read_table(EXAMPLES / "hcw_input.arrow")
    for k, v in cols.items():
        t = t.set_column(t.schema.get_field_index(k), k, v)
    write_table(tmp_path / "in.arrow", t)
    return str(tmp_path / "in.arrow")


def test_reduce_rejects_inconsistent_inputs(tmp_path, capsys):
    spec = str(EXAMPLES / "hcw.json")
    bad_valid = pa.array(np.r_[[5], np.full(191, 8)].astype(np.uint8))
    path = _write_hcw_input(tmp_path, valid_size=bad_valid)
    assert main(["reduce", path, "--mapping", spec, "--op", "AddSat", "--out", str(tmp_path / "o")]) == 1
    assert "valid_size 5 at row 0 (slice 0, t = 0) disagrees with the VCG's 8" in capsys.readouterr().err
    short = input_table(np.zeros((10, 8), np.int32))
    write_table(tmp_path / "short.arrow", short)
    assert main(["reduce", str(tmp_path / "short.arrow"), "--mapping", spec, "--op", "Max", "--out", "o"]) == 1
    assert "10 flits, but the mapping has 16 slices x 12 time steps = 192" in capsys.readouterr().err
    f32 = input_table(np.zeros((192, 8), np.float32))
    write_table(tmp_path / "f.arrow", f32)
    assert main(["reduce", str(tmp_path / "f.arrow"), "--mapping", spec, "--op", "AddSat", "--out", "o"]) == 1
    assert "AddSat is not defined for float32" in capsys.readouterr().err


@pytest.mark.parametrize("doc,words", [
    ("{", "is not valid JSON"),
    ('{"axes": {"R": 4}, "time": "R", "reduce": "R", "colour": 1}', "unknown key(s) 'colour'"),
    ('{"axes": {"R": 0}, "time": "R", "reduce": "R"}', "integer size >= 1"),
    ('{"axes": "R = 4", "time": "R", "reduce": "R", "narrow": "cut"}', "'narrow' must be"),
    ('{"axes": "R = 4", "time": "R"}', "'reduce' must be a string (required)"),
    ('{"axes": "R = 4", "time": "R %% 3", "reduce": "R"}', "Time column 4: expected modulo operand"),
    ('[1, 2]', "one JSON object"),
    ("[" * 100000 + "]" * 100000, "nests too deeply"),
])
def test_malformed_mapping_files(tmp_path, capsys, doc, words):
    (tmp_path / "m.json").write_text(doc)
    rc = main(["reduce", str(EXAMPLES / "hcw_input.arrow"), "--mapping", str(tmp_path / "m.json"),
               "--op", "Max", "--out", str(tmp_path / "o.arrow")])
    err = capsys.readouterr().err
    assert rc == 1 and words in err and "Traceback" not in err


def test_unavailable_gpu_backends_are_reported(tmp_path, capsys):
    pytest.importorskip("numba")
    try:
        import cupy  # noqa: F401
        pytest.skip("cupy is installed here")
    except ImportError:
        pass
    rc = main(["reduce", str(EXAMPLES / "hcw_input.arrow"), "--mapping", str(EXAMPLES / "hcw.json"),
               "--op", "Max", "--out", str(tmp_path / "o.arrow"), "--backend", "cupy"])
    err = capsys.readouterr().err
    assert rc == 3 and "backend cupy" in err and "Traceback" not in err


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_reduce_bfloat16_flits_stored_as_uint16_bits(tmp_path, capsys, backend):
    """Arrow has no bfloat16 type: flits travel as uint16 bits, `--dtype bfloat16` reads them, and
    the output flits are uint16 bits again, with dtype bfloat16 in the metadata."""
    from fabric.vcg.fold import BF16
    hcw = json.loads((EXAMPLES / "hcw.json").read_text())
    t = read_table(EXAMPLES / "hcw_input.arrow")
    vs = np.asarray(t.column("valid_size").to_numpy(), np.uint8)
    x8 = (np.random.default_rng(4).standard_normal((vs.size, 8)) * 100).astype(BF16)
    write_table(tmp_path / "in.arrow", input_table(x8.view(np.uint16), vs))
    assert main(["reduce", str(tmp_path / "in.arrow"), "--mapping", str(EXAMPLES / "hcw.json"), "--op", "Add",
                 "--dtype", "bfloat16", "--out", str(tmp_path / "o.arrow"), "--backend", backend]) == 0
    out = read_table(tmp_path / "o.arrow")
    assert out.schema.field("flit").type.value_type == pa.uint16()
    assert json.loads(out.schema.metadata[b"tile-emu.vcg"])["dtype"] == "bfloat16"
    axes = ", ".join(f"{k} = {v}" for k, v in hcw["axes"].items())
    m = Mapping.parse(axes, hcw["slice"], hcw["time"], hcw["packet"])
    want, _ = reduce_flits(x8, vs, plan_reduce(m, hcw["reduce"], hcw["narrow"]), "Add")
    assert np.array_equal(flit_view(out.column("flit"), 4), want.view(np.uint16).reshape(-1, 4))
