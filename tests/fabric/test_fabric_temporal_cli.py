"""`tile-emu fabric check`, `format` and `sim` on every shipped and tested fabric with a temporal
PE (issue 26 item 6).

Seed 000: "A temporal PE instantiates the declared state for each resident
InstructionContextRef"; the semantic-field relation is "one concrete-resource relation ...
sealed into ResolvedFabricOpCapabilityView"; DeriveFields consumes the "SpatialMapping
occurrence and instruction context", and "values for one Mapping-selected physical
configuration slot must be unique".  So an op of a temporal PE has one view and one relation,
and the configured projection has one slot per resident context (`fu/op@c`), each holding its
own value of that relation (docs/fabric-format.md: "temporal-PE slots are printed
`fu/op@context`").  `fabric check` printed the views and then crashed decoding the first
context's key (it looked the relation up under the slot's name).

Each case: a fabric, the configuration line each slot must print, and a graph with the outputs
it must compute (worked out in the case's comment)."""
from __future__ import annotations

import json
import pathlib

import pytest

from emulator.cli import main
from fabric.errors import FormatError
from fabric.io import dump, load, load_document, load_text
from fabric.sim.synth import configured_fabric, graph_document, temporal_pe
from test_fabric_realization import MEMORY, TEMPORAL, _contexts, edge, two_fus

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "fabric"
I16 = ["i16", "i16"]
ADD = ("add", "arith.addi", I16, ["i16"], {})
SUBI = ("sub", "arith.subi", I16, ["i16"], {})
ADD2 = ("add2", "arith.addi", I16, ["i16"], {})


def _pe(actors, contexts, uses_contexts=None, **pe):
    """test_sim_temporal's shape: every actor on one op of a temporal PE."""
    fab = configured_fabric("fab", actors)
    temporal_pe(fab, [a[0] for a in actors], "pe0", contexts, uses_contexts, **pe)
    return fab


def _graph(fabric, actors, edges, inputs, outputs):
    return graph_document("g", fabric["name"], [(a,) for a in actors], edges, inputs, outputs)


def _memrf():
    d = two_fus({**MEMORY, **TEMPORAL}, [edge(witness={"kind": "memory", "memory": "buf", "slot": 0}),
                                          edge(witness={"kind": "register_file", "pe": "pe0", "register": 1},
                                               dst="b.1")])
    d["mapping"]["uses"][0]["context"] = 1
    return d


def cases():
    """(id, fabric document, {slot: expected configuration prefix}, graph document, {output: tokens})."""
    shipped = json.loads((EXAMPLES / "temporal.fabric.json").read_text())
    out = [
        # add in context 0, subi in context 1 (the shape): s = x + y, d = x - y
        ("examples/temporal", shipped, {"add/op@0": "Active(Add ", "add/op@1": "Active(Sub "},
         json.loads((EXAMPLES / "temporal.graph.json").read_text()),
         {"s": [11, 22, 33, 44], "d": [9, 18, 27, 36]}),
    ]
    # test_sim_temporal: add/subi, with the PE's initiation interval and grant policy; 2 - 7 wraps
    # to 2^16 - 5 = 65531
    for pe in ({}, {"initiation_interval": 3, "grant_policy": "fixed_priority"}):
        f = _pe([ADD, SUBI], 2, **pe)
        out.append((f"add-subi{'-ii3' if pe else ''}", f, {"add/op@0": "Active(Add ", "add/op@1": "Active(Sub "},
                    _graph(f, ["add", "sub"], [], [("a", ["add.0"], [10, 20]), ("b", ["add.1"], [1, 2]),
                                                   ("c", ["sub.0"], [2, 5]), ("e", ["sub.1"], [7, 1])],
                           [("s", "add.0"), ("d", "sub.0")]),
                    {"s": [11, 22], "d": [65531, 4]}))
    # one context, II 2; and three actors in contexts 2, 0, 3 of four (context 1 stays Disabled)
    f = _pe([ADD], 1, initiation_interval=2)
    out.append(("add-one-context", f, {"add/op@0": "Active("},
                _graph(f, ["add"], [], [("a", ["add.0"], [1, 2, 3]), ("b", ["add.1"], [7, 8, 9])], [("s", "add.0")]),
                {"s": [8, 10, 12]}))
    f = _pe([ADD, SUBI, ADD2], 4, [2, 0, 3], grant_policy="fixed_priority")
    out.append(("three-of-four", f, {"add/op@0": "Active(Sub ", "add/op@1": "Disabled", "add/op@2": "Active(Add ",
                                      "add/op@3": "Active(Add "},
                _graph(f, ["add", "sub", "add2"], [], [("x", ["add.0", "sub.0", "add2.0"], [100, 3]),
                                                        ("y", ["add.1", "sub.1", "add2.1"], [1, 4])],
                       [("s", "add.0"), ("d", "sub.0"), ("t", "add2.0")]),
                {"s": [101, 7], "d": [99, 65535], "t": [101, 7]}))
    # test_fabric_realization: a register-file edge a -> b between the PE's two FUs (o = x + y + z);
    # compares eq / slt in contexts 0 / 1 of one op (1 == 1, 5 < 2, 3 < 7); a memory and a register
    # file edge feeding both operands of b (o = 2 (x + y))
    f = two_fus(TEMPORAL, [edge(witness={"kind": "register_file", "pe": "pe0", "register": 3})])
    out.append(("register-file", f, {"p/add@0": "Active(none", "p/add@1": "Disabled", "c/add@0": "Active(none",
                                     "c/add@1": "Disabled"},
                _graph(f, ["a", "b"], [("a.0", "b.0")], [("x", ["a.0"], [1, 2, 3]), ("y", ["a.1"], [10, 20, 30]),
                                                         ("z", ["b.1"], [100, 200, 300])], [("o", "b.0")]),
                {"o": [111, 222, 333]}))
    f = _contexts(0, 1)
    out.append(("compare-contexts", f, {"p/cmp@0": "Active(Compare [integer_predicate=eq]",
                                        "p/cmp@1": "Active(Compare [integer_predicate=slt]",
                                        "c/add@0": "Disabled", "c/add@1": "Disabled"},
                _graph(f, ["x", "y"], [], [("a", ["x.0", "y.0"], [1, 5, 3]), ("b", ["x.1", "y.1"], [1, 2, 7])],
                       [("eq", "x.0"), ("lt", "y.0")]),
                {"eq": [1, 0, 0], "lt": [0, 0, 1]}))
    f = _memrf()
    out.append(("memory-and-register-file", f, {"p/add@0": "Disabled", "p/add@1": "Active(none",
                                                "c/add@0": "Active(none", "c/add@1": "Disabled"},
                _graph(f, ["a", "b"], [("a.0", "b.0"), ("a.0", "b.1")],
                       [("x", ["a.0"], [1, 2, 3]), ("y", ["a.1"], [10, 20, 30])], [("o", "b.0")]),
                {"o": [22, 44, 66]}))
    return out


CASES = cases()


def _run(capsys, *argv):
    rc = main(list(map(str, argv)))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.mark.parametrize("name, fabric, slots, graph, outputs", CASES, ids=[c[0] for c in CASES])
def test_check_format_and_sim_of_a_temporal_fabric(name, fabric, slots, graph, outputs, tmp_path, capsys):
    fp, gp = tmp_path / "f.json", tmp_path / "g.json"
    fp.write_text(json.dumps(fabric))
    gp.write_text(json.dumps(graph))

    rc, out, err = _run(capsys, "fabric", "check", fp)
    assert rc == 0 and err == "", err
    lines = out.splitlines()
    pe = load_document(fabric).pes[0]
    assert f"  instruction_contexts       {pe.contexts} resident in temporal PE {pe.name} " in out
    cfg = lines[lines.index("configuration (strict import)") + 1:]
    # one line per context of each op of the PE, each with its own value
    assert {line.split(": ")[0].strip() for line in cfg} >= set(slots)
    for slot, shown in slots.items():
        assert f"  {slot}: {shown}" in out, (slot, out)

    # --full-keys: each context's key is one of its op's canonical behaviour keys
    rc, full, _ = _run(capsys, "fabric", "check", "--full-keys", fp)
    assert rc == 0
    keys = {line.split("key=")[1] for line in full.splitlines() if line.startswith("    ") and "key=" in line}
    for line in full.splitlines():
        if line.startswith("  ") and ": Active(key " in line:
            assert line.split(": Active(key ")[1].rstrip(")") in keys

    rc, text, err = _run(capsys, "fabric", "format", fp)
    assert rc == 0 and err == ""
    assert load_text(text) == load_document(fabric) and dump(load_text(text)) == text

    rc, out, err = _run(capsys, "fabric", "sim", gp, "--fabric", fp, "--cycles", "200")
    assert rc == 0 and err == "", err
    assert "status: complete" in out
    for o, toks in outputs.items():
        assert f"output {o}: {len(toks)} token(s): [{', '.join(map(str, toks))}]" in out


def test_every_shipped_temporal_fabric_is_a_case():
    shipped = [p for p in sorted(EXAMPLES.glob("*.json"))
               if "temporal" in {pe.kind for pe in _pes(p)}]
    assert [p.name for p in shipped] == ["temporal.fabric.json"]


def _pes(path):
    try:
        return load(path).pes
    except FormatError:        # a graph document
        return ()
