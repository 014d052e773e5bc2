"""The JSON readers through JSON Schema (issue 19, "Libraries"): the fabric description's
structural rules are one schema (fabric.io.SCHEMA plus the records fabric.params generates from
their FIELDS tables), validated by a compiled validator (fastjsonschema) and worded as before
(`PATH: reason`).  The reference implementation, `jsonschema`, checks the schemas themselves
and agrees with the compiled validator on every document of a mutation corpus."""
import copy
import json
import pathlib
import random
from decimal import Decimal

import jsonschema
import pytest

from fabric import io
from fabric.errors import FormatError
from fabric.families import FAMILIES
from fabric.jsonread import SchemaReader, description_path, dollar_path, integer, lst, obj, parse_json, string
from fabric.params import record_schema
from mutate import paths as _paths

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "fabric"
PE_JSON = EXAMPLES.parents[1] / "emulator" / "pe.json"      # the one PE engine description
DOCS = [json.loads(p.read_text()) for p in (EXAMPLES / "alu.json", EXAMPLES / "loop.json", PE_JSON,
                                            EXAMPLES / "mac.fabric.json")]


def _root():
    return json.loads(io._READER._frozen)


def test_the_schemas_are_valid_draft7_schemas_for_the_reference_implementation():
    jsonschema.Draft7Validator.check_schema(_root())
    for d in {d.params for d in FAMILIES.values()}:
        jsonschema.Draft7Validator.check_schema(record_schema(d))


JUNK = [None, True, 0, -1, 2 ** 32, Decimal("1.5"), Decimal("2.0"), "", "x", "a.7", [], {}, [1], {"a": 1}, "op"]


def test_the_compiled_validator_agrees_with_the_reference_on_a_mutation_corpus():
    reference = jsonschema.Draft7Validator(_root())
    rng = random.Random(19)
    verdicts = {True: 0, False: 0}
    for _ in range(400):
        d = copy.deepcopy(rng.choice(DOCS))
        for _ in range(rng.randint(1, 2)):
            p = rng.choice([q for q in _paths(d) if q])
            cur = d
            for k in p[:-1]:
                cur = cur[k]
            cur[p[-1]] = copy.deepcopy(rng.choice(JUNK))
        try:
            io._READER.check(d)
            ours = True
        except FormatError:
            ours = False
        assert reference.is_valid(d) == ours, json.dumps(d, default=str)[:300]
        verdicts[ours] += 1
    assert verdicts[True] and verdicts[False]        # the corpus exercises both outcomes


@pytest.mark.parametrize("edit, where, why", [
    (lambda d: d["fus"][0]["nodes"][0].update(results=Decimal("2.0")), "nodes[0].results", "expected an integer, found a number"),
    (lambda d: d["fus"][0]["yield"].__setitem__(0, "m.٣"), "yield[0]", "is not a value reference"),
    (lambda d: d["fus"][0]["yield"].__setitem__(0, "m.0\n"), "yield[0]", "is not a value reference"),
    (lambda d: d["fus"][0]["nodes"][0].pop("kind"), "nodes[0].kind", "None is not a node kind"),
    (lambda d: d["fus"][0].update(name="a/b"), "fus[0].name", "an FU name cannot contain '/'"),
    (lambda d: d["fus"][0].update(name=""), "fus[0].name", "expected a nonempty string, found a string"),
    (lambda d: d.update(format=Decimal("1.5")), "$.format", "found 1.5"),
    (lambda d: d["fus"][0]["nodes"][2]["ports"]["inputs"].__setitem__(0, 7), "ports.inputs[0]",
     "a port type must be a string, not int"),
    (lambda d: d["fus"][0]["nodes"][2].update(hw_params=[]), "nodes[2].hw_params",
     "expected an object of ScalarIntegerAddSubParams, found a list"),
])
def test_messages_keep_the_readers_wording(edit, where, why):
    d = copy.deepcopy(DOCS[0])
    edit(d)
    with pytest.raises(FormatError) as e:
        io.load_document(d)
    assert where in str(e.value) and why in str(e.value), str(e.value)


def test_a_null_implementation_family_reads_as_absent():
    d = copy.deepcopy(DOCS[0])
    d["fus"][0]["nodes"][2]["implementation_family"] = None
    assert io.load_document(d).fus[0].nodes[2].op.family is None


def test_numbers_with_a_fraction_never_pass_for_integers():
    text = json.dumps(DOCS[0]).replace('"results": 2', '"results": 2.0', 1)
    with pytest.raises(FormatError, match="expected an integer, found a number"):
        io.load_text(text)
    assert parse_json("[2.0]", floats=Decimal) == [Decimal("2.0")]


def test_several_errors_report_the_first_structural_violation_in_schema_order():
    # documented: the schema pass runs before spelling checks (port types, records)
    d = copy.deepcopy(DOCS[0])
    d["fus"][0]["inputs"][0] = "bogus"                 # a spelling error, found by the builder
    d["fus"][1]["nodes"] = 3                           # a structural error, found by the schema
    with pytest.raises(FormatError) as e:
        io.load_document(d)
    assert str(e.value).startswith("fus[1].nodes: expected a list")


def test_path_spellings():
    assert description_path("") == "$" and description_path(".format") == "$.format"
    assert description_path(".fus") == "$.fus" and description_path(".fus[0].name") == "fus[0].name"
    assert description_path(".mapping") == "mapping" and description_path(".mapping.uses[1]") == "mapping.uses[1]"
    assert dollar_path(".edges[0].from") == "$.edges[0].from"


def test_the_generic_reader_serves_another_format():
    # a graph-like document with the graph reader's `$`-rooted paths (fabric/sim/graph.py)
    schema = obj({"actors": lst(string()), "edges": lst(obj({"from": string(), "to": string(),
                                                              "initial": integer(0, 255)},
                                                             required=("from", "to")))},
                 required=("actors", "edges"), title="Graph")
    reader = SchemaReader(schema, dollar_path)
    reader.check({"actors": ["a"], "edges": [{"from": "a.0", "to": "a.1"}]})
    cases = [({"actors": ["a"]}, "$: missing required field 'edges' of Graph"),
             ({"actors": [], "edges": [{"from": "a.0", "to": "a.1", "initial": 300}]},
              "$.edges[0].initial: 300 is outside [0, 255]"),
             ({"actors": [], "edges": [], "x": 1}, "$.x: unknown field of Graph (allowed: actors, edges)"),
             ({"actors": [""], "edges": []}, "$.actors[0]: expected a nonempty string, found a string")]
    for doc, want in cases:
        with pytest.raises(FormatError) as e:
            reader.check(doc)
        assert str(e.value) == want
