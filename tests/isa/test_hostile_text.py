"""Hostile block text and JSON: one clear line, never the whole offending input echoed back."""
import pytest

from isa.assembly import parse
from isa.errors import AsmError
from isa.jsontext import MAX_DEPTH, MAX_INT_DIGITS, JsonTextError, check_depth, loads


@pytest.mark.parametrize("literal", ["9" * 5000, "0" * 5000 + "1" * 70, "0x" + "f" * 100_000])
def test_a_huge_integer_literal_does_not_fit_its_field(literal):
    with pytest.raises(AsmError, match="does not fit its 16-bit field") as e:
        parse(f"BSTART.VEC TADD, FP16\n  B.DIM LB0={literal}\n")
    assert len(str(e.value)) < 200


def test_leading_zeros_do_not_change_a_value():
    block = parse("BSTART.VEC TADD, FP16\n  B.DIM LB0=" + "0" * 5000 + "64\n")[0].block
    assert block.dim.LB0 == 64


@pytest.mark.parametrize("line", [
    "X" * 1_000_000,                                   # one 1 MB word
    "BSTART.VEC " + "T" * 1_000_000 + ", FP16",        # unknown instruction
    "BSTART." + "V" * 1_000_000 + " TADD, FP16",       # unknown engine spelling
    "BSTART.VEC TADD, " + "F" * 1_000_000,             # unknown DataType
    "L" * 1_000_000 + ":",                             # label naming no block
    "BSTART.VEC TADD, FP16\n  B.DATR " + "K" * 1_000_000 + "=1",
])
def test_a_1mb_line_is_quoted_not_echoed(line):
    with pytest.raises(AsmError) as e:
        parse(line)
    assert len(str(e.value)) < 400, str(e.value)[:400]
    assert "characters)" in str(e.value)


def test_control_bytes_are_escaped():
    with pytest.raises(AsmError) as e:
        parse("BSTART.VEC TADD\x1b[2J, FP16")
    assert "\x1b" not in str(e.value)


@pytest.mark.parametrize("text,words", [
    ("9" * (MAX_INT_DIGITS + 1), f"{MAX_INT_DIGITS + 1} digits"),
    ("[-" + "9" * 5000 + "]", "5000 digits"),
    ("[" * 100_000, "nests too deeply"),
    ("{", "line 1 column 2"),
    (b"\xff", "not UTF-8"),
])
def test_json_text_errors_are_one_line(text, words):
    with pytest.raises(JsonTextError, match=words) as e:
        loads(text)
    assert len(str(e.value)) < 120


def test_json_integers_up_to_the_limit_load():
    assert loads("9" * MAX_INT_DIGITS) == 10 ** MAX_INT_DIGITS - 1


@pytest.mark.parametrize("text,depth", [("1", 0), ("[]", 1), ('{"a": [1, {"b": []}]}', 4),
                                        ("[" * 500 + "]" * 500, 500)])
def test_max_depth_counts_nested_arrays_and_objects(text, depth):
    assert loads(text, max_depth=depth) == loads(text)
    if depth:
        with pytest.raises(JsonTextError, match=rf"nests too deeply \(more than {depth - 1} levels"):
            loads(text, max_depth=depth - 1)


def test_without_max_depth_any_depth_the_parser_takes_loads():
    assert loads("[" * 500 + "]" * 500) == loads("[" * 500 + "]" * 500, max_depth=MAX_DEPTH + 500)


def test_check_depth_measures_any_depth_without_recursion():
    v: list = []
    for _ in range(100_000):                    # far past the recursion limit: built, not parsed
        v = [v]
    with pytest.raises(JsonTextError, match="nests too deeply"):
        check_depth(v, MAX_DEPTH)
    check_depth(v, 100_001)
