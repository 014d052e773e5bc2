"""Hostile state files: bad column names, repeated or unknown columns, feature-map columns
set on a tile without a feature map.  Each is one StateFileError naming the file and why."""
import numpy as np
import pyarrow as pa
import pytest

from emu_helpers import Machine
from emulator.cli import main
from emulator.stateio import StateFileError, load_state, state_table

PLACEHOLDER = "QQQQQQQQ"


def _machine() -> Machine:
    m = Machine()
    m.write_tile(0, 1, "FP32", np.arange(6).reshape(2, 3))
    m.write_tile(1, 2, "U8", np.arange(8).reshape(1, 8))
    return m


def _write(path, t: pa.Table, swap: bytes | None = None):
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, t.schema) as w:
        w.write_table(t)
    if swap is not None:
        data = path.read_bytes()
        assert data.count(PLACEHOLDER.encode()) >= 1
        path.write_bytes(data.replace(PLACEHOLDER.encode(), swap))
    return path


def _with_column(name, column="pe"):
    t = state_table(_machine())
    return t.append_column(name, t.column(column))


def test_a_column_name_that_is_not_utf8_is_one_error(tmp_path, capsys):
    path = _write(tmp_path / "s.arrow", _with_column(PLACEHOLDER), swap=b"QQQ\xffQQQQ")
    with pytest.raises(StateFileError, match="a column name is not UTF-8 text"):
        load_state(path)
    assert main(["show", str(path)]) == 1 and "Traceback" not in capsys.readouterr().err


def test_a_repeated_column_is_one_error(tmp_path):
    path = _write(tmp_path / "s.arrow", _with_column("pe"))
    with pytest.raises(StateFileError, match="column 'pe' appears more than once"):
        load_state(path)


def test_an_unknown_column_is_refused_not_ignored(tmp_path):
    path = _write(tmp_path / "s.arrow", _with_column("comment"))
    with pytest.raises(StateFileError, match=r"unknown column\(s\) 'comment'"):
        load_state(path)


@pytest.mark.parametrize("column,value", [("fmap_pad_bits", 7), ("fmap_transposed", True),
                                          ("fmap_params", [1] * 17)])
def test_feature_map_columns_without_a_feature_map_are_refused(tmp_path, capsys, column, value):
    # docs/state-format.md: 0 / false / empty without a descriptor.  Accepting and resetting
    # them let `diff` call two different files the same state.
    t = state_table(_machine())
    vals = t[column].to_pylist()
    vals[1] = value
    t = t.set_column(t.schema.get_field_index(column), column, pa.array(vals, t.schema.field(column).type))
    path = _write(tmp_path / "s.arrow", t)
    with pytest.raises(StateFileError, match=f"row 1 column '{column}': .* without fmap_layout"):
        load_state(path)
    good = tmp_path / "good.arrow"
    _machine().save(good)
    assert main(["diff", str(good), str(path)]) != 0
    assert "same state" not in capsys.readouterr().out


def test_a_huge_datatype_name_is_quoted(tmp_path):
    t = state_table(_machine())
    vals = t["datatype"].to_pylist()
    vals[0] = "F\x1b" * 500_000
    t = t.set_column(t.schema.get_field_index("datatype"), "datatype", pa.array(vals, pa.string()))
    with pytest.raises(StateFileError) as e:
        load_state(_write(tmp_path / "s.arrow", t))
    assert len(str(e.value)) < 300 and "\x1b" not in str(e.value)
