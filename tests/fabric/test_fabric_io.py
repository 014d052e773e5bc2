"""The fabric description format: examples, canonical printing, precise errors, fuzzing, CLI."""
import copy
import json
import pathlib

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from emulator.cli import main
from fabric.errors import DiagnosticCode as C, FormatError
from fabric.io import dump, load, load_text
from fabric.view import check_fabric, render
from mutate import byte_edits, paths as _paths, set_copy

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "fabric"
RICH = json.loads((EXAMPLES / "alu.json").read_text())


def test_shipped_valid_examples_check_clean():
    for name in ("alu.json", "loop.json"):
        rep = check_fabric(load(EXAMPLES / name))
        assert rep.ok, rep.diagnostics
        assert len(rep.views) == sum(len(fu.ops()) for fu in rep.fabric.fus)


def test_shipped_invalid_example_reports_each_class():
    rep = check_fabric(load(EXAMPLES / "invalid.json"))
    assert {d.code for d in rep.diagnostics} == {
        C.ImplicitTokenSink, C.GepFailClosed, C.OpListMemberOutsideFamily, C.DuplicateDeclaration,
        C.InvalidAccuracyContract, C.PortKindMismatch, C.UninterpretedParameterDomain}


def test_canonical_print_round_trips_and_is_idempotent():
    for name in ("alu.json", "loop.json", "invalid.json"):
        f = load(EXAMPLES / name)
        text = dump(f)
        assert dump(load_text(text)) == text
        assert load_text(text) == load_text(dump(load_text(text)))


def test_canonical_print_orders_sets_by_domain():
    doc = copy.deepcopy(RICH)
    doc["fus"][0]["nodes"][2]["hw_params"]["integer_widths"] = [32, 8, 16]
    text = dump(load_text(json.dumps(doc)))
    assert '"integer_widths": [8, 16, 32]' in text


def _mut(doc, path, value):
    return json.dumps(set_copy(doc, path, value))


@pytest.mark.parametrize("text, where, why", [
    ("{", "line 1", "malformed JSON"),
    ("[]", "$", "expected an object"),
    (_mut(RICH, ["format"], "tile-emu-fabric/2"), "$.format", "expected"),
    (_mut(RICH, ["fus", 0, "extra"], 1), "fus[0].extra", "unknown field"),
    (_mut(RICH, ["fus", 0, "nodes", 2, "hw_params", "integer_widths", 1], 12), "integer_widths[1]", "IntegerWidth"),
    (_mut(RICH, ["fus", 0, "nodes", 2, "hw_params", "bogus"], []), "hw_params.bogus", "unknown field"),
    (_mut(RICH, ["fus", 0, "nodes", 2, "ports", "inputs", 0], "bits<-1>"), "ports.inputs[0]", "not a port type"),
    (_mut(RICH, ["fus", 0, "nodes", 2, "operands", 0], "da"), "operands[0]", "value reference"),
    (_mut(RICH, ["fus", 0, "nodes", 0, "kind"], "switch"), "nodes[0].kind", "node kind"),
    (_mut(RICH, ["fus", 0, "nodes", 2, "constraints", 0], {"resource_contract": "magic"}), "constraints[0]",
     "resource contract"),
    (_mut(RICH, ["mapping", "uses", 0, "actor", "inputs", 0], "i0"), "actor.inputs[0]", "not a software type"),
    (_mut(RICH, ["mapping", "uses", 0, "operands"], [0, 1.5]), "operands[1]", "integer"),
    (_mut(RICH, ["fus", 0, "nodes", 2, "name"], KeyError), "nodes[2]", "missing required field"),
    ('{"format": "tile-emu-fabric/1", "format": "x"}', "$", "duplicate key"),
    ('{"format": NaN}', "$", "not JSON"),
    ("[" * 100000, "$", "nests too deeply"),
    (b"\xff\xfe{}", "$", "UTF-8"),
])
def test_malformed_descriptions_give_path_and_reason(text, where, why):
    with pytest.raises(FormatError) as e:
        load_text(text)
    assert where in str(e.value) and why in str(e.value)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2 ** 70), 2 ** 70) | st.floats(allow_nan=True)
    | st.text(max_size=8) | st.sampled_from(["bits<32>", "bits_tag<8,2>", "in.0", "add.0", "arith.addi", "i32",
                                             "vector<2xi8>", "index", "ScalarIntegerAddSub", "dynamic", "none"]),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3), max_leaves=6)


PATHS = [p for p in _paths(RICH) if p]
# a temporal PE (contexts, initiation interval, grant policy, per-use contexts): mutations reach
# its slots `fu/op@c`, which `render` decodes with the op's relation
TEMPORAL = json.loads((EXAMPLES / "temporal.fabric.json").read_text())
# values a temporal PE's fields take (contexts, ids, policies), so that mutations stay loadable often
_PE_VALUES = st.sampled_from([0, 1, 2, 3, 4, 1024, 1025, "round_robin", "fixed_priority", "spatial", "temporal",
                              "add", "add/op", "pe0", {"registers": 4, "width": 16}])


def _never_a_traceback(text):
    try:
        f = load_text(text)
    except FormatError as exc:
        assert exc.path and exc.reason
        return
    rep = check_fabric(f)  # must return a report, whatever the content
    for d in rep.diagnostics:
        assert d.path and d.message
    if rep.ok:
        render(rep)
        render(rep, full_keys=True)
        assert dump(load_text(dump(f))) == dump(f)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(i=st.integers(0, len(PATHS) - 1), value=_JSON | st.just(KeyError))
def test_structurally_fuzzed_descriptions_never_raise(i, value):
    _never_a_traceback(_mut(RICH, list(PATHS[i]), value))


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_byte_fuzzed_descriptions_never_raise(data):
    raw = byte_edits(bytearray(json.dumps(RICH).encode()), data, data.draw(st.integers(1, 4)))
    _never_a_traceback(bytes(raw))


def _temporal_mutant(data):
    """One to three replacements (or deletions) anywhere in the temporal example."""
    doc = TEMPORAL
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        at = paths[data.draw(st.integers(0, len(paths) - 1))]
        doc = set_copy(doc, list(at), data.draw(_PE_VALUES | _JSON | st.just(KeyError)))
    return json.dumps(doc)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_structurally_fuzzed_temporal_descriptions_never_raise(data):
    _never_a_traceback(_temporal_mutant(data))


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_byte_fuzzed_temporal_descriptions_never_raise(data):
    raw = byte_edits(bytearray(json.dumps(TEMPORAL).encode()), data, data.draw(st.integers(1, 4)))
    _never_a_traceback(bytes(raw))


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_many_fuzzed_descriptions_never_raise(data):
    """The three fuzzers above at scale, on both seeds (the rich ALU and the temporal PE)."""
    kind = data.draw(st.sampled_from(["rich", "temporal", "bytes"]))
    if kind == "rich":
        i = data.draw(st.integers(0, len(PATHS) - 1))
        _never_a_traceback(_mut(RICH, list(PATHS[i]), data.draw(_JSON | st.just(KeyError))))
    elif kind == "temporal":
        _never_a_traceback(_temporal_mutant(data))
    else:
        seed = data.draw(st.sampled_from([RICH, TEMPORAL]))
        _never_a_traceback(bytes(byte_edits(bytearray(json.dumps(seed).encode()), data, data.draw(st.integers(1, 4)))))


# --- the CLI -------------------------------------------------------------------------------

def test_cli_check_valid_prints_views_and_configuration(capsys):
    assert main(["fabric", "check", str(EXAMPLES / "alu.json")]) == 0
    out = capsys.readouterr().out
    assert "fabric.op alu/div" in out and "Quotient [active_width=16]" in out
    assert "Direct: 21-bit carrier" in out and "configuration (strict import)" in out
    assert "alu/add: Disabled" in out


def test_cli_check_invalid_exits_1_with_one_diagnostic_per_line(capsys):
    assert main(["fabric", "check", str(EXAMPLES / "invalid.json")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("invalid (10 diagnostic(s))")
    assert all(line.startswith("tile-emu fabric: ") for line in err)
    assert any("GepFailClosed" in line for line in err)


def test_cli_unreadable_or_malformed_file_is_one_line(tmp_path, capsys):
    assert main(["fabric", "check", str(tmp_path / "missing.json")]) == 1
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "tile-emu-fabric/1", "name": "x", "fus": [{"name": 3}]}')
    assert main(["fabric", "check", str(bad)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "fus[0]" in err[1]


def test_cli_format_prints_canonical_text(capsys):
    assert main(["fabric", "format", str(EXAMPLES / "loop.json")]) == 0
    out = capsys.readouterr().out
    assert out == dump(load(EXAMPLES / "loop.json"))
