"""Hostile dataflow graphs: mutations of the shipped example graphs (unknown actors and ports,
wrong JSON kinds, huge values, new cycles, duplicate names, missing and extra fields, broken
bytes).  Every one either loads and runs to a reported end or is refused with one line; never a
traceback or a hang.  The default suite runs a few hundred mutations; `-m slow` runs thousands."""
from __future__ import annotations

import copy
import json
import pathlib
import random

import pytest

from fabric.errors import FormatError
from fabric.io import load
from fabric.sim.engine import Simulator
from fabric.sim.graph import GraphError, load_graph_text

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "fabric"
NAMES = ("sum-loop", "branch", "vector-pipeline", "mac", "temporal")   # temporal: two contexts of one PE
_CACHE: dict = {}


def example(name):
    if name not in _CACHE:
        _CACHE[name] = (json.loads((EXAMPLES / f"{name}.graph.json").read_text()),
                        load(str(EXAMPLES / f"{name}.fabric.json")))
    doc, fab = _CACHE[name]
    return copy.deepcopy(doc), fab


HUGE = [-1, 1 << 20, (1 << 20) + 1, 1 << 31, 1 << 32, 1 << 63, 1 << 64, 1 << 200, 10 ** 400, 0]
WRONG = [None, True, False, 1.5, float("nan"), "", "x", [], {}, [[]], {"a": 1}, "nosuch.0", 7]
BAD_REFS = ["nosuch.0", "nosuch.2", "add.99", "add", "add.-1", "add.01", ".0", "a.b.c", "add.1e3",
            "add." + "9" * 40, "x" * 5000 + ".0", "\u00e9.0", "add.0 ", ""]


def _containers(doc):
    """(parent, key) of every value in the document, depth first."""
    out = []

    def walk(v):
        items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
        for k, x in items:
            out.append((v, k))
            walk(x)
    walk(doc)
    return out


def _endpoints(doc):
    """(parent, key) of every actor.K endpoint string."""
    out = []
    for e in doc.get("edges", []):
        out += [(e, "from"), (e, "to")]
    for x in doc.get("inputs", []):
        out += [(x["to"], k) for k in range(len(x["to"]))]
    for x in doc.get("outputs", []):
        out.append((x, "from"))
    ad = doc.get("activity_defined", [])
    out += [(ad, k) for k in range(len(ad))]
    return out


def _results(doc):
    return sorted({e["from"] for e in doc["edges"]} | {o["from"] for o in doc.get("outputs", [])})


def mutate(doc, rng):
    """Apply one or a few random mutations in place; returns their names.  A mutation that an
    earlier one made inapplicable (its field is gone or of another kind) is skipped."""
    done = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        kind = rng.choice(["endpoint", "endpoint", "wrong", "huge", "duplicate", "cycle", "delete", "extra",
                           "retarget", "drop_actor", "tokens", "initial"])
        try:
            _mutate_one(doc, rng, kind)
            done.append(kind)
        except (TypeError, KeyError, AttributeError, IndexError, ValueError):
            pass
    return done


def _mutate_one(doc, rng, kind):
    if kind == "endpoint":
        parent, key = rng.choice(_endpoints(doc) or [(doc, "name")])
        parent[key] = rng.choice(BAD_REFS + _results(doc))
    elif kind == "wrong":
        parent, key = rng.choice(_containers(doc))
        parent[key] = copy.deepcopy(rng.choice(WRONG))
    elif kind == "huge":
        where = rng.choice(["ready", "token", "initial", "actors"])
        if where == "ready" and doc.get("outputs"):
            rng.choice(doc["outputs"])["ready_every"] = rng.choice(HUGE)
        elif where == "token" and doc.get("inputs"):
            x = rng.choice(doc["inputs"])
            if x["tokens"]:
                x["tokens"][rng.randrange(len(x["tokens"]))] = rng.choice(HUGE)
        elif where == "initial" and doc["edges"]:
            rng.choice(doc["edges"])["initial"] = rng.choice(HUGE)
        else:
            doc["actors"] = doc["actors"] * rng.choice([2, 100])
    elif kind == "duplicate":
        what = rng.choice(["actor", "input", "output", "edge", "io"])
        if what == "actor":
            doc["actors"].append(rng.choice(doc["actors"]))
        elif what == "input" and doc.get("inputs"):
            doc["inputs"].append(copy.deepcopy(rng.choice(doc["inputs"])))
        elif what == "output" and doc.get("outputs"):
            doc["outputs"].append(copy.deepcopy(rng.choice(doc["outputs"])))
        elif what == "edge" and doc["edges"]:
            doc["edges"].append(copy.deepcopy(rng.choice(doc["edges"])))
        elif doc.get("inputs") and doc.get("outputs"):
            rng.choice(doc["outputs"])["name"] = rng.choice(doc["inputs"])["name"]
    elif kind == "cycle" and doc["edges"]:
        # close a loop: some operand now driven by a result downstream of it
        e = rng.choice(doc["edges"])
        e["from"] = rng.choice(_results(doc))
        if rng.random() < 0.5:
            e["initial"] = rng.choice([0, 1, 3])
    elif kind == "delete":
        parent, key = rng.choice(_containers(doc))
        if isinstance(parent, dict):
            del parent[key]
        else:
            parent.pop(key)
    elif kind == "extra":
        parent, key = rng.choice(_containers(doc) + [(doc, "name")])
        target = parent[key] if isinstance(parent[key], dict) else doc
        target[rng.choice(["extra", "from", "initial", "ready_every", "tokens"])] = rng.choice(WRONG + HUGE)
    elif kind == "retarget" and len(doc["edges"]) > 1:
        a, b = rng.sample(doc["edges"], 2)
        a["to"], b["to"] = b["to"], a["to"]
    elif kind == "drop_actor" and doc["actors"]:
        doc["actors"].pop(rng.randrange(len(doc["actors"])))
    elif kind == "tokens" and doc.get("inputs"):
        x = rng.choice(doc["inputs"])
        x["tokens"] = rng.choice([[], [0] * rng.randint(0, 50), [[1, 2]], [[0] * 4] * 3, ["a"], [None]])
    elif kind == "initial" and doc["edges"]:
        rng.choice(doc["edges"])["initial"] = rng.choice(WRONG + [[0, 1, 2, 3], [7, 1]])


def mutate_bytes(text: bytes, rng) -> bytes:
    kind = rng.choice(["truncate", "garbage", "bom", "utf8", "nest", "dup_key"])
    if kind == "truncate":
        return text[:rng.randrange(len(text))]
    if kind == "garbage":
        k = rng.randrange(len(text))
        return text[:k] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + text[k:]
    if kind == "bom":
        return b"\xef\xbb\xbf" + text
    if kind == "utf8":
        return text.replace(b'"name"', b'"n\xffame"', 1)
    if kind == "nest":
        return b'{"format": "tile-emu-fabric-graph/1", "name": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    return text.replace(b'"name"', b'"name": "a", "name"', 1)


def check_one(text, fab, cycles=300):
    """Refused in one line, or a run that ends with a reported status."""
    try:
        g = load_graph_text(text, fab)
    except (FormatError, GraphError) as exc:
        msg = str(exc.diagnostics[0]) if isinstance(exc, GraphError) else str(exc)
        assert msg and "\n" not in msg and "Traceback" not in msg
        return "refused"
    res = Simulator(g).run(cycles)
    assert res.status in ("complete", "deadlock", "starved", "cycle_limit", "fault")
    assert "\n" not in res.message
    return res.status


def _run_mutations(seed, count):
    rng = random.Random(seed)
    seen = {}
    for i in range(count):
        doc, fab = example(NAMES[i % len(NAMES)])
        if rng.random() < 0.15:
            text = mutate_bytes(json.dumps(doc).encode(), rng)
            what = "bytes"
        else:
            what = "+".join(mutate(doc, rng))
            text = json.dumps(doc, allow_nan=True)
        try:
            out = check_one(text, fab)
        except Exception as exc:      # the failure names the mutation that caused it
            raise AssertionError(f"mutation {i} ({what}) raised {type(exc).__name__}: {exc}\n{text[:2000]}") from exc
        seen[out] = seen.get(out, 0) + 1
    return seen


def test_mutated_example_graphs_are_refused_in_one_line_or_run():
    seen = _run_mutations(2024, 240)
    assert seen.get("refused") and len(seen) > 1      # both kinds of outcome occur


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_many_mutated_example_graphs(seed):
    _run_mutations(seed, 1500)


def test_mutated_graphs_through_the_command_line(tmp_path, capsys):
    """The command never shows a traceback: exit 0, 1 (refused, deadlock) or 2 (usage)."""
    from emulator.cli import main

    rng = random.Random(7)
    for i in range(30):
        name = NAMES[i % len(NAMES)]
        doc, _ = example(name)
        mutate(doc, rng)
        p = tmp_path / f"g{i}.json"
        p.write_text(json.dumps(doc))
        rc = main(["fabric", "sim", str(p), "--fabric", str(EXAMPLES / f"{name}.fabric.json"), "--cycles", "200"])
        err = capsys.readouterr().err
        assert rc in (0, 1, 2) and "Traceback" not in err
        if rc:
            assert err.strip().splitlines()[-1].startswith("tile-emu fabric: ")
