"""Hostile mapping input to `tile-emu vcg` / `reduce`: one clear line, a non-zero exit, no
traceback, and never the whole offending text echoed back."""
import pathlib

import pytest

from emulator.cli import main
from fabric.vcg import Mapping
from fabric.vcg.errors import MappingError

ROOT = pathlib.Path(__file__).resolve().parents[2]
HCW_INPUT = ROOT / "examples" / "vcg" / "hcw_input.arrow"
NINES = "9" * 5000            # longer than Python's 4,300-digit int-string limit


def _short_error(capsys, rc):
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err
    assert max(len(line) for line in err.splitlines()) < 500, err[:500]
    return err


@pytest.mark.parametrize("doc", [
    '{"axes": {"R": %s}, "time": "R", "reduce": "R"}' % NINES,
    '{"axes": "R = 4", "time": "R", "reduce": "R", "narrow": %s}' % NINES,
])
def test_a_mapping_file_with_a_5000_digit_integer_is_one_line(tmp_path, capsys, doc):
    (tmp_path / "m.json").write_text(doc)
    err = _short_error(capsys, main(["vcg", "--mapping", str(tmp_path / "m.json")]))
    assert "5000 digits (the limit is 4300)" in err
    err = _short_error(capsys, main(["reduce", str(HCW_INPUT), "--mapping", str(tmp_path / "m.json"),
                                     "--op", "Max", "--out", str(tmp_path / "o.arrow")]))
    assert "5000 digits" in err and not (tmp_path / "o.arrow").exists()


@pytest.mark.parametrize("args,words", [
    (["--axes", f"R={NINES}", "--time", "R", "--reduce", "R"], "size of axis R"),
    (["--axes", "R=4", "--time", f"R # {NINES}", "--reduce", "R"], "padding operand"),
    (["--axes", "R=4", "--time", f"R / 0000{NINES}", "--reduce", "R"], "stride operand"),
])
def test_a_5000_digit_literal_in_mapping_text_is_too_large(capsys, args, words):
    err = _short_error(capsys, main(["vcg", *args]))
    assert words in err and "is too large (limit 2**40)" in err and " characters)" in err


def test_a_literal_with_many_leading_zeros_is_still_its_value():
    assert Mapping.parse("R = " + "0" * 30 + "4", time="R").axis_sizes == {"R": 4}


def test_equal_stride_and_size_digits_of_one_axis_overlap_not_crash(capsys):
    # 'R % 4 # 8' and 'R' are both R's stride-1 size-4 digit: sorting them compared Terms.
    with pytest.raises(MappingError, match="overlaps"):
        Mapping.parse("R = 4", slice="R % 4 # 8", time="R")
    err = _short_error(capsys, main(["vcg", "--axes", "R=4", "--slice", "R % 4 # 8", "--time", "R",
                                     "--reduce", "R"]))
    assert "a digit of R would be placed twice" in err


def test_a_100kb_expression_is_quoted_not_echoed(capsys):
    huge = "Q" * 100_000
    err = _short_error(capsys, main(["vcg", "--axes", "R=4", "--time", f"R, {huge}", "--reduce", "R"]))
    assert "unknown axis 'QQQ" in err and "(100000 characters)" in err


def test_control_bytes_in_an_expression_never_reach_the_terminal(capsys):
    err = _short_error(capsys, main(["vcg", "--axes", "R=4", "--time", "R \x1b[2J", "--reduce", "R"]))
    assert "\x1b" not in err and "'\\x1b'" in err


@pytest.mark.parametrize("args", [
    ["--axes", "R=4", "--time", "R", "--reduce", "R" * 100_000],
    ["--axes", "R=4", "--time", "R", "--reduce", "R", "--track", "T" * 100_000],
    ["--axes", "A" * 100_000 + "=4", "--time", "R", "--reduce", "R"],
])
def test_huge_names_are_quoted(capsys, args):
    _short_error(capsys, main(["vcg", *args]))


def test_huge_unknown_keys_and_axis_names_in_a_mapping_file(tmp_path, capsys):
    m = tmp_path / "m.json"
    m.write_text('{"axes": {"%s": 4}, "time": "R", "reduce": "R"}' % ("A" * 100_000))
    assert "at most 64 characters" in _short_error(capsys, main(["vcg", "--mapping", str(m)]))
    m.write_text('{"axes": "R = 4", "time": "R", "reduce": "R", "%s": 1}' % ("k" * 100_000))
    assert "unknown key(s) 'kkk" in _short_error(capsys, main(["vcg", "--mapping", str(m)]))


def test_a_file_name_with_control_bytes_is_escaped(tmp_path, capsys):
    err = _short_error(capsys, main(["vcg", "--mapping", str(tmp_path / "a\x1b[2Jb.json")]))
    assert "\x1b" not in err and "\\x1b" in err


# ----------------------------------------------------------------------------- flit files

def _flit_file(path, names, swap=None):
    import numpy as np
    import pyarrow as pa
    from fabric.vcg.arrow_io import input_table
    t = input_table(np.zeros((4, 8), np.int32), np.full(4, 8, np.uint8))
    cols = [t.column("flit"), t.column("valid_size"), t.column("valid_size")][:len(names)]
    t = pa.Table.from_arrays(cols, names=names)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, t.schema) as w:
        w.write_table(t)
    if swap:
        path.write_bytes(path.read_bytes().replace(*swap))
    return path


@pytest.mark.parametrize("names,swap,words", [
    (["flit", "QQQQQQQQ"], (b"QQQQQQQQ", b"QQQ\xffQQQQ"), "a column name is not UTF-8 text"),
    (["flit", "valid_size", "valid_size"], None, "column 'valid_size' appears more than once"),
    (["flit", "valid_sise"], None, "unknown column(s) 'valid_sise'"),
])
def test_malformed_flit_file_columns_are_one_line(tmp_path, capsys, names, swap, words):
    from fabric.vcg.arrow_io import FlitFileError, read_flits
    path = _flit_file(tmp_path / "f.arrow", names, swap)
    with pytest.raises(FlitFileError) as e:
        read_flits(path)
    assert words in str(e.value)
    m = tmp_path / "m.json"
    m.write_text('{"axes": "R = 8", "time": "R # 32 / 8", "packet": "R # 32 % 8", "reduce": "R"}')
    rc = main(["reduce", str(path), "--mapping", str(m), "--op", "Max", "--out", str(tmp_path / "o.arrow")])
    err = capsys.readouterr().err
    assert rc == 1 and words in err and "Traceback" not in err
