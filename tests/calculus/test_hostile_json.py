"""Hostile region-program text: one clear line through `tile-emu run`, never a traceback, and
never the whole offending input echoed back."""
import pytest

from emulator.calculus.errors import RegionError
from emulator.calculus.loader import loads
from emulator.cli import main

NINES = "9" * 5000            # longer than Python's 4,300-digit int-string limit


def _run(tmp_path, capsys, text):
    prog = tmp_path / "p.regions.json"
    prog.write_text(text)
    rc = main(["run", str(prog), "-q"])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err and len(err.splitlines()) == 1
    assert len(err) < 400, err[:400]
    return err


@pytest.mark.parametrize("text", [
    '{"params": {"n": %s}, "body": {"seq": []}}' % NINES,
    '{"arrays": {"a": {"shape": [1], "fill": -%s}}, "body": {"seq": []}}' % NINES,
])
def test_a_5000_digit_integer_is_one_line(tmp_path, capsys, text):
    assert "5000 digits (the limit is 4300)" in _run(tmp_path, capsys, text)


def test_a_4300_digit_integer_is_still_an_integer():
    p = loads('{"params": {"n": %s}, "body": {"seq": []}}' % ("9" * 4300))
    assert p.params["n"] == 10 ** 4300 - 1


@pytest.mark.parametrize("text,words", [
    ('{"body": {"op": "u = %s"}}' % ("(" * 1000 + "1" + ")" * 1000 + " +" * 20000), "in '"),
    ('{"params": {"%s-": 1}, "body": {"seq": []}}' % ("p" * 100_000), "a parameter name must be"),
    ('{"body": {"seq": []}, "%s": 1}' % ("k" * 100_000), "unknown key"),
    ('{"body": {"parallel": [["i", 4, 5, %s]], "body": {"seq": []}}}' % ",".join(["1"] * 50_000),
     "an axis is [name, hi]"),
    ('{"format": "%s", "body": {"seq": []}}' % ("f" * 100_000), "unsupported format"),
])
def test_long_offending_text_is_cut(tmp_path, capsys, text, words):
    assert words in _run(tmp_path, capsys, text)


def test_control_bytes_in_a_key_are_escaped():
    with pytest.raises(RegionError) as e:
        loads('{"body": {"seq": []}, "a\\u001b[2Jb": 1}')
    assert "\x1b" not in str(e.value) and "\\x1b" in str(e.value)


@pytest.mark.parametrize("stmt,words", [
    ("u = " + "9" * 5000, "integer literal of 5000 characters (the limit is 4300)"),
    ("u = 1 " + "y" * 60_000, "(60000 characters)"),
])
def test_hostile_expression_text_is_one_short_line(tmp_path, capsys, stmt, words):
    assert words in _run(tmp_path, capsys, '{"body": {"op": "%s"}}' % stmt)


@pytest.mark.parametrize("body,words", [
    ({"scan": [["i", 1 << 40]], "into": "y", "value": "i", "combine": "add"}, "exceeds the budget"),
    ({"scan": [["i", 4096]], "into": "y", "value": "'a'", "combine": "concat", "policy": "fold_right", "seed": "''"},
     "exceeds the budget"),
    ({"scan": [["i", 4]], "into": "y", "value": "i", "combine": "add", "seed": "9" * 5000},
     "integer literal of 5000 characters"),
    ({"scan": [["i", 4]], "into": "y" * 100_000, "value": "i", "combine": "add"}, "(100000 characters) names no array"),
    ({"scan": [["i", 4]], "into": "y", "value": "z" * 60_000, "combine": "add"}, "unknown name"),
    ({"scan": [["i", 4]], "into": "y", "value": "i", "combine": "f" * 60_000}, "unknown function"),
    ({"scan": [["i", 4]], "into": "y", "value": "i", "combine": "add", "exclusive": "yes" * 30_000},
     "'exclusive' is a boolean"),
    ({"parallel": [["i", 4]], "snapshot": ["q" * 100_000], "body": {"op": "y[i] = 1"}}, "names no array"),
    ({"parallel": [["i", 4]], "snapshot": ["if"], "body": {"op": "y[i] = 1"}}, "reserved word"),
    ({"parallel": [["i", 4]], "snapshot": ["y"] * 50_000, "body": {"op": "y[i] = 1"}}, "listed twice"),
    ({"parallel": [["i", 1 << 30]], "snapshot": ["y"], "body": {"op": "y[0] = 1"}}, "exceeds the budget"),
])
def test_hostile_scans_and_snapshots_are_one_line(tmp_path, capsys, body, words):
    import json
    text = json.dumps({"arrays": {"y": {"shape": [4096], "fill": 0}}, "body": body})
    assert words in _run(tmp_path, capsys, text)


def test_a_load_leaves_the_cyclic_collector_as_it_found_it():
    """Loading defers full collections while it builds the tree (loader._full_collections_deferred);
    afterwards, loaded or refused, and nested in another deferral, the thresholds are the caller's."""
    import gc

    from emulator.calculus.loader import _full_collections_deferred
    before = gc.get_threshold()
    loads('{"body": {"seq": [{"op": "x = 1"}]}}')
    with pytest.raises(RegionError):
        loads('{"body": 3}')
    with pytest.raises(RegionError):
        loads("not json")
    with _full_collections_deferred():
        assert gc.get_threshold()[:2] == before[:2] and gc.get_threshold()[2] > before[2]
        loads('{"body": {"seq": []}}')
        assert gc.get_threshold()[2] > before[2]
    assert gc.get_threshold() == before
