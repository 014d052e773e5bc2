"""The lockstep scoreboard (emulator.cosim): the first difference between two sets of commit
records or two states, named by machine, block, PE, tile and element, with both encodings and
their values; records that cannot be compared are one-line errors naming the field.  Decoded
values are checked against NumPy / ml_dtypes decodings computed here."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pyarrow as pa
import pytest

from emulator import Machine
from emulator import commitlog as CL
from emulator.cli import main
from emulator.cosim import CompareError, compare, compare_states

from emu_helpers import blk, everywhere


def committed(dtype="FP16", values=(0x3C00, 0x4000, 0x4200, 0x4400), mask=0b0011, **kw):
    """(machine, records) after t2 = t1 + t1 on the PEs of `mask`."""
    m = Machine()
    everywhere(m, 1, dtype, np.array(values), **kw)
    b = blk("TADD", dtype, [1, 1], 2, mask=mask, vc=len(values))
    m.execute(b)
    return m, CL.block_records(m, b, index=3, offset=80, machine_index=2).to_pylist()


def with_payload(rec, elems, dtype):
    out = dict(rec)
    out["payload"] = np.asarray(elems, np.dtype(dtype).newbyteorder("<")).tobytes()
    return out


def test_equal_records_have_no_difference():
    _, recs = committed()
    assert compare(recs, [dict(r) for r in recs]) is None
    assert compare(pa.Table.from_pylist(recs, schema=CL.SCHEMA), recs) is None


def test_a_differing_element_is_named_with_both_encodings_and_values():
    _, recs = committed()
    got = [dict(r) for r in recs]
    e = np.frombuffer(recs[1]["payload"], "<u2").copy()
    e[2] ^= 1                                            # PE1, element 2: one ulp off
    got[1] = with_payload(recs[1], e, np.uint16)
    d = compare(recs, got)
    want_e = float(np.frombuffer(recs[1]["payload"], "<f2")[2])
    want_a = float(e.view(np.float16)[2])
    assert (d.machine, d.block, d.pe, d.tile, d.element, d.row, d.col) == (2, 3, 1, 2, 2, 0, 2)
    assert (d.expected, d.actual) == (0x4600, 0x4601) and d.datatype == "FP16"
    assert d.expected_value == f"0x4600 ({want_e!r})" and d.actual_value == f"0x4601 ({want_a!r})"
    assert str(d) == f"machine 2 block 3 PE1 tile 2 element 2 [0,2] FP16: expected 0x4600 (6.0), got 0x4601 ({want_a!r})"


@pytest.mark.parametrize("bits,text", [(0x7F, "NaN"), (0xFF, "-NaN"), (0x80, "-0.0"), (0x7E, "448.0"),
                                       (0x01, repr(float(np.array([1], np.uint8).view(ml_dtypes.float8_e4m3fn)[0])))])
def test_e4m3_values_are_decoded_as_the_format_defines_them(bits, text):
    _, recs = committed("E4M3", (0x38, 0x38), mask=1)
    got = [with_payload(recs[0], [recs[0]["payload"][0], bits], np.uint8)]
    assert compare(recs, got).actual_value == f"0x{bits:02x} ({text})"


def test_a_logical_position_follows_the_layout():
    """A DN (column-major) tile: physical element p sits at the logical (row, col) written."""
    def state(value):
        m = Machine()
        data = np.arange(12, dtype=np.uint8).reshape(3, 4)
        data[2, 1] = value
        m.write_tile(0, 4, "U8", data, layout=1)
        return m
    d = compare_states([state(9)], [state(200)])
    assert (d.row, d.col, d.expected, d.actual) == (2, 1, 9, 200)
    assert d.element != 2 * 4 + 1                         # not the row-major index
    assert d.expected_value == "0x09 (9)" and d.actual_value == "0xc8 (200)"


def test_definedness_differs_and_undefined_elements_compare_equal():
    _, recs = committed("S8", (1, 2, 3, 4), mask=1)
    undefined = dict(recs[0], defined=bytes([0b1011]))
    d = compare(recs, [undefined])
    assert (d.field, d.element, d.actual_value) == ("defined", 2, "undefined")
    assert d.expected_value == "0x06 (6)"
    other_bits = with_payload(undefined, [2, 4, 77, 8], np.uint8)
    assert compare([undefined], [other_bits]) is None


def test_a_status_difference_names_the_flags():
    _, recs = committed()
    d = compare(recs, [recs[0], dict(recs[1], status=0b10001)])
    assert (d.field, d.pe, d.expected_value, d.actual_value) == ("status", 1, "-", "NV|NX")


def test_missing_and_extra_records_are_record_differences():
    _, recs = committed()
    d = compare(recs, recs[:1])
    assert (d.field, d.pe, d.expected, d.actual) == ("record", 1, "a commit", "none")
    d = compare(recs[:1], recs)
    assert (d.field, d.pe, d.expected, d.actual) == ("record", 1, "none", "a commit")


def test_a_fault_against_a_commit_and_faults_of_another_reason():
    _, recs = committed()
    fault = CL.fault_group(2, 3, 80, "SOURCE_MISSING", "B.IOT[1]", "no tile 1").to_pylist()
    d = compare(fault, recs)
    assert d.field == "record" and d.expected == "fault SOURCE_MISSING at B.IOT[1]" and d.actual == "commit on PE0 tile 2, PE1 tile 2"
    other = CL.fault_group(2, 3, 80, "SOURCE_UNDEFINED", "B.IOT[1]", "text differs").to_pylist()
    d = compare(fault, other)
    assert (d.field, d.expected, d.actual) == ("reason", "SOURCE_MISSING", "SOURCE_UNDEFINED")
    assert compare(fault, CL.fault_group(2, 3, 80, "SOURCE_MISSING", "B.IOT[1]", "other words").to_pylist()) is None


@pytest.mark.parametrize("field,value", [("valid_col", 3), ("datatype", "BF16"), ("row", 2), ("layout", 1),
                                         ("mnemonic", "TSUB")])
def test_records_of_different_shapes_or_datatypes_are_one_line_naming_the_field(field, value):
    _, recs = committed()
    with pytest.raises(CompareError) as exc:
        compare(recs, [dict(recs[0], **{field: value}), recs[1]])
    msg = str(exc.value)
    assert "\n" not in msg and f"field {field!r} differs" in msg and msg.startswith("machine 2 block 3 PE0 tile 2")


def test_a_payload_shorter_than_its_descriptor_is_an_error_not_a_crash():
    _, recs = committed()
    with pytest.raises(CompareError, match="field 'payload' of the actual record holds 6 bytes"):
        compare(recs, [dict(recs[0], payload=recs[0]["payload"][:6]), recs[1]])


def test_diff_first_prints_the_first_differing_element_decoded(tmp_path, capsys):
    a, _ = committed("FP32", (0x3F800000, 0x40000000), mask=0b1111)
    b = a.copy()
    bits = b.read_tile(2, 2).bits.copy()
    bits[0, 1] = 0x7FC00000
    b.write_tile(2, 2, "FP32", bits)
    a.save(tmp_path / "a.arrow")
    b.save(tmp_path / "b.arrow")
    assert main(["diff", str(tmp_path / "a.arrow"), str(tmp_path / "b.arrow"), "--first"]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert out == ["machine 0 PE2 tile 2 element 1 [0,1] FP32: expected 0x40800000 (4.0), got 0x7fc00000 (NaN)"]
    assert main(["diff", str(tmp_path / "a.arrow"), str(tmp_path / "a.arrow"), "--first"]) == 0
    assert "same state" in capsys.readouterr().out


def test_diff_first_names_a_gpr_a_status_and_a_descriptor(tmp_path, capsys):
    a, _ = committed("U16", (1, 2), mask=1)
    b = a.copy()
    b.set_gpr(0, 5, 7)
    assert str(compare_states([a], [b])) == "machine 0 PE0: r5: expected 0x0, got 0x7"
    c = a.copy()
    c.write_tile(0, 2, "U16", np.array([[2, 4, 0]]))
    a.save(tmp_path / "a.arrow")
    c.save(tmp_path / "c.arrow")
    assert main(["diff", str(tmp_path / "a.arrow"), str(tmp_path / "c.arrow"), "--first"]) == 1
    line = capsys.readouterr().out.strip()
    assert line.startswith("machine 0 PE0 tile 2: field ") and "\n" not in line
