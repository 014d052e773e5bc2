"""Bad graphs and bad runs: one typed diagnostic (one line on the command line), never a
traceback, a hang or an unbounded allocation."""
import json
import pytest

from fabric.errors import FormatError
from fabric.families import FAMILIES
from fabric.io import load_document
from fabric.sim.graph import GraphCode, GraphError, load_graph_document, load_graph_text
from fabric.sim.models import CYCLE_MODELS, NO_CYCLE_MODEL
from fabric.sim.synth import configured_fabric, graph_document
from sim_fixtures import load, run, sum_loop

ADD = ("add", "arith.addi", ["i32", "i32"], ["i32"], {})


def codes(fn):
    with pytest.raises(GraphError) as exc:
        fn()
    return [d.code for d in exc.value.diagnostics]


def test_every_registered_family_runs_or_is_named_without_a_cycle_model():
    assert set(CYCLE_MODELS) | set(NO_CYCLE_MODEL) == set(FAMILIES)
    assert not set(CYCLE_MODELS) & set(NO_CYCLE_MODEL)


def test_family_without_a_cycle_model_is_rejected_by_name(monkeypatch):
    from fabric.sim import models
    monkeypatch.delitem(models.CYCLE_MODELS, "ScalarMathSin")
    monkeypatch.setitem(models.NO_CYCLE_MODEL, "ScalarMathSin", "taken out for this test")
    sin = ("f", "math.sin", ["f32"], ["f32"], {"accuracy": "correctly_rounded"})
    fab = configured_fabric("fab", [sin])
    g = graph_document("g", "fab", [sin], [], [("a", ["f.0"], [0])], [("y", "f.0")])
    with pytest.raises(GraphError) as exc:
        load_graph_document(g, load_document(fab))
    d = exc.value.diagnostics[0]
    assert d.code is GraphCode.NoCycleModel and "ScalarMathSin" in str(d) and "no cycle model" in str(d)


def test_exact_types_without_a_kernel_are_rejected():
    """i1 -> f32 conversion: the integer conversions this model runs take 8 to 64 bits."""
    cvt = ("f", "arith.sitofp", ["i1"], ["f32"], {})
    fab = configured_fabric("fab", [cvt])
    g = graph_document("g", "fab", [cvt], [], [("a", ["f.0"], [0])], [("y", "f.0")])
    with pytest.raises(GraphError) as exc:
        load_graph_document(g, load_document(fab))
    assert exc.value.diagnostics[0].code is GraphCode.NoCycleModel and "arith.sitofp on i1" in str(exc.value)


def test_unmapped_actor_and_unused_use():
    fab = load_document(configured_fabric("fab", [ADD]))
    g = graph_document("g", "fab", [ADD], [], [("a", ["add.0"], [1]), ("b", ["add.1"], [1])], [("y", "add.0")])
    g["actors"] = ["ghost"]
    assert codes(lambda: load_graph_document(g, fab)) == [GraphCode.UnmappedActor, GraphCode.UnusedMapping]


def test_graph_for_another_fabric_is_rejected():
    fab = load_document(configured_fabric("fab", [ADD]))
    g = graph_document("g", "other", [ADD], [], [], [])
    assert codes(lambda: load_graph_document(g, fab)) == [GraphCode.MismatchedFabric]


def test_operand_and_result_bookkeeping():
    assert codes(lambda: load([ADD], [], [("a", ["add.0"], [1])], [])) == [GraphCode.UnboundOperand,
                                                                         GraphCode.DanglingResult]
    assert GraphCode.MultipleDrivers in codes(lambda: load([ADD], [], [("a", ["add.0", "add.0", "add.1"], [1])],
                                                           [("y", "add.0")]))
    assert codes(lambda: load([ADD], [], [("a", ["add.0", "add.1"], [1 << 32])], [("y", "add.0")])) == [
        GraphCode.BadToken]
    cmp = ("c", "arith.cmpi", ["i32", "i32"], ["i1"], {"predicate": "eq"})
    assert codes(lambda: load([ADD, cmp], [("c.0", "add.0")], [("a", ["add.1", "c.0", "c.1"], [1])],
                              [("y", "add.0")])) == [GraphCode.TypeMismatch]


def test_cycle_without_an_initial_token_is_rejected_and_runs_with_one():
    inc = [("add", "arith.addi", ["i8", "i8"], ["i8"], {})]
    edges = [("add.0", "add.0")]
    ins, outs = [("one", ["add.1"], [1, 1, 1])], [("count", "add.0")]
    assert codes(lambda: load(inc, edges, ins, outs)) == [GraphCode.CycleWithoutInitialToken]
    res, _ = run(inc, [("add.0", "add.0", 5)], ins, outs)
    assert res.outputs["count"] == [6, 7, 8]
    assert res.status == "deadlock"   # the last sum waits on its own edge for a 4th "one"
    assert "add.0->add.0" in res.message and "one->add.1" in res.message


def test_combinational_loop_of_transparent_resources_is_rejected():
    carry = ("c", "dataflow.carry", ["i1", "i8", "i8"], ["i8"], {})
    gate = ("g", "dataflow.gate", ["i1", "i8"], ["i1", "i8"], {})
    assert GraphCode.CombinationalLoop in codes(lambda: load(
        [carry, gate], [("c.0", "g.1"), ("g.1", "c.2")],
        [("k", ["c.0"], [0]), ("i", ["c.1"], [1]), ("gc", ["g.0"], [1])], [("gcond", "g.0")]))


@pytest.mark.parametrize("text, where", [
    ("{", "line 1"), ("[]", "$"), ('{"format": "x"}', "$"), (b"\xff", "UTF-8"),
    ('{"format": "tile-emu-fabric-graph/1", "name": "g", "fabric": "fab", "actors": [1], "edges": []}', "actors[0]"),
    ('{"format": "tile-emu-fabric-graph/1", "name": "g", "fabric": "fab", "actors": [], "edges": [{"from": "a", "to": "b.0"}]}', "edges[0].from"),
    ('{"format": "tile-emu-fabric-graph/1", "name": "g", "fabric": "fab", "actors": [], "edges": [], "extra": 1}', "extra"),
])
def test_malformed_documents_are_format_errors(text, where):
    fab = load_document(configured_fabric("fab", [ADD]))
    with pytest.raises(FormatError) as exc:
        load_graph_text(text, fab)
    assert where in str(exc.value)


# --- the command line ------------------------------------------------------------------------------

def _files(tmp_path, actors, edges, inputs, outputs, defined=()):
    fab = configured_fabric("fab", actors)
    (tmp_path / "f.json").write_text(json.dumps(fab))
    (tmp_path / "g.json").write_text(json.dumps(graph_document("g", "fab", actors, edges, inputs, outputs, defined)))
    return str(tmp_path / "g.json"), str(tmp_path / "f.json")


class _Run:
    def __init__(self, rc, out, err):
        self.returncode, self.stdout, self.stderr = rc, out, err


@pytest.fixture
def cli(capsys):
    from emulator.cli import main

    def call(*args):
        try:
            rc = main(["fabric", "sim", *args])
        except SystemExit as exc:          # argparse's own usage errors
            rc = exc.code
        out = capsys.readouterr()
        return _Run(rc, out.out, out.err)
    return call


def test_cli_prints_outputs_cycles_and_counters(tmp_path, cli):
    g, f = _files(tmp_path, *sum_loop([1, 2, 3]))
    r = cli(g, "--fabric", f, "--cycles", "100")
    assert r.returncode == 0, r.stderr
    assert "status: complete, 6 cycle(s)" in r.stdout
    assert "output sum: 1 token(s): [6]" in r.stdout
    assert any(line.split()[:2] == ["add", "ScalarIntegerAddSub"] and line.split()[2] == "3"
               for line in r.stdout.splitlines())


def test_cli_rejects_a_bad_graph_in_one_line(tmp_path, cli):
    g, f = _files(tmp_path, [ADD], [], [("a", ["add.0"], [1])], [("y", "add.0")])
    r = cli(g, "--fabric", f, "--cycles", "10")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("tile-emu fabric: ")
    assert "UnboundOperand" in r.stderr


def test_cli_reports_a_deadlock_with_cycle_and_waiting_edges(tmp_path, cli):
    g, f = _files(tmp_path, [ADD], [], [("a", ["add.0"], [1, 2]), ("b", ["add.1"], [1])], [("y", "add.0")])
    r = cli(g, "--fabric", f, "--cycles", "100")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert "deadlock at cycle 2" in last and "a->add.0" in last


def test_cli_refuses_a_trace_too_large_before_starting(tmp_path, cli):
    g, f = _files(tmp_path, *sum_loop([1, 2, 3]))
    out = tmp_path / "t.arrow"
    r = cli(g, "--fabric", f, "--cycles", str(1 << 27), "--trace", str(out))   # within the run budget
    assert r.returncode == 2 and "lower --cycles" in r.stderr and not out.exists()
    r = cli(g, "--fabric", f, "--cycles", str(1 << 50))
    assert r.returncode == 2 and "outside" in r.stderr


def read_vcd(text):
    """A small VCD reader: header variables and the value of every signal at every time (a time
    with no change repeats the previous one)."""
    lines = iter(text.splitlines())
    ids, names = {}, []
    for line in lines:
        tok = line.split()
        if tok[:1] == ["$var"]:
            assert tok[1] == "wire" and tok[-1] == "$end"
            ids[tok[3]] = (tok[4], int(tok[2]))
        if tok[:1] == ["$enddefinitions"]:
            break
    changes, cur, t = {}, {}, None
    for line in lines:
        if line.startswith("#"):
            if t is not None:
                changes[t] = dict(cur)
            t = int(line[1:])
        elif line in ("$dumpvars", "$end"):
            continue
        elif line[0] in "01x":
            cur[ids[line[1:]][0]] = line[0]
        elif line[0] == "b":
            v, ident = line[1:].split()
            name, w = ids[ident]
            assert v == "x" or len(v) <= w
            cur[name] = v
        else:
            raise AssertionError(f"unexpected VCD line {line!r}")
    changes[t] = dict(cur)
    values, last = {}, {}
    for u in range(max(changes) + 1):
        last = changes.get(u, last)
        values[u] = last
    return ids, values


def test_cli_writes_a_parseable_vcd_and_an_arrow_trace(tmp_path, cli):
    import pyarrow as pa

    g, f = _files(tmp_path, *sum_loop([1, 2, 3]))
    vcd, arrow = tmp_path / "w.vcd", tmp_path / "t.arrow"
    r = cli(g, "--fabric", f, "--cycles", "100", "--vcd", str(vcd), "--trace", str(arrow))
    assert r.returncode == 0, r.stderr
    ids, values = read_vcd(vcd.read_text())
    assert "add_0__split_1_valid" in {n for n, _ in ids.values()}
    # the add result 1 (x0 + 0) is valid on its edge to the demux at cycle 2 and handed off
    assert values[2]["add_0__split_1_valid"] == "1" and int(values[2]["add_0__split_1_data"], 2) == 1
    t = pa.ipc.open_file(str(arrow)).read_all()
    assert set(t.column("event").to_pylist()) == {"fire", "handoff", "stall"}
    fires = [(c, a) for c, e, a in zip(t.column("cycle").to_pylist(), t.column("event").to_pylist(),
                                        t.column("actor").to_pylist()) if e == "fire" and a == "add"]
    assert [c for c, _ in fires] == [1, 2, 3]
    assert not list(tmp_path.glob(".*.tmp"))


# --- static routing: fabric.mux / fabric.demux ------------------------------------------------------

EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[2] / "examples" / "fabric"


def _mac(template="mul-add"):
    doc = json.loads((EXAMPLES / "mac.fabric.json").read_text())
    doc["mapping"]["templates"]["mac"] = template
    graph = (EXAMPLES / "mac.graph.json").read_text()
    return load_graph_text(graph, load_document(doc))


def test_internal_edge_through_the_selected_static_route_runs_at_one_item_per_cycle():
    g = _mac()
    assert [e.realization for e in g.edges if e.label == "p.0->s.0"] == ["internal"]
    from fabric.sim.engine import Simulator

    res = Simulator(g).run(100)
    assert res.outputs["y"] == [105, 212, 321, 432]       # x * w + b
    assert res.cycles == 4 + 2                             # mul at 0..3, add at 1..4, last output at 5


def test_template_selecting_the_other_branch_cannot_realize_the_edge():
    """Mutually exclusive branches need the explicit demux/mux selection: with the mul-max
    template the configured add is not on the route, so the fabric does not verify."""
    with pytest.raises(GraphError) as exc:
        _mac("mul-max")
    assert exc.value.diagnostics[0].code is GraphCode.FabricInvalid


def test_two_actors_on_one_fabric_op_are_rejected():
    fab = configured_fabric("fab", [ADD])
    second = dict(fab["mapping"]["uses"][0], name="add2")
    fab["mapping"]["uses"].append(second)
    g = graph_document("g", "fab", [ADD, ("add2",) + ADD[1:]], [],
                       [("a", ["add.0", "add.1", "add2.0", "add2.1"], [1])], [("y", "add.0"), ("z", "add2.0")])
    assert GraphCode.SharedResource in codes(lambda: load_graph_document(g, load_document(fab)))


def test_cli_rejects_unwritable_output_paths_before_running(tmp_path, cli):
    g, f = _files(tmp_path, *sum_loop([1]))
    for opt in ("--vcd", "--trace"):
        r = cli(g, "--fabric", f, "--cycles", "10", opt, str(tmp_path / "missing" / "x"))
        assert r.returncode == 1 and "does not exist" in r.stderr and r.stdout == ""
        r = cli(g, "--fabric", f, "--cycles", "10", opt, "")
        assert r.returncode == 1 and "empty" in r.stderr


@pytest.mark.parametrize("name, cycles, output, tokens", [
    ("sum-loop", 11, "sum", [31]), ("branch", 13, "y", [4, 6, 8, 25]),
    ("vector-pipeline", 27, "out", [2, 4, 6, 8, 10, 12, 0]), ("mac", 6, "y", [105, 212, 321, 432]),
    ("temporal", 9, "d", [9, 18, 27, 36])])
def test_shipped_examples_run_as_documented(tmp_path, cli, name, cycles, output, tokens):
    r = cli(str(EXAMPLES / f"{name}.graph.json"), "--fabric", str(EXAMPLES / f"{name}.fabric.json"), "--cycles", "1000")
    assert r.returncode == 0, r.stderr
    assert f"status: complete, {cycles} cycle(s)" in r.stdout
    assert f"output {output}: {len(tokens)} token(s): [{', '.join(map(str, tokens))}]" in r.stdout


def test_cli_refuses_a_device_as_arrow_trace_and_writes_a_waveform_to_one(tmp_path, cli):
    g, f = _files(tmp_path, *sum_loop([1]))
    r = cli(g, "--fabric", f, "--cycles", "10", "--trace", "/dev/null")
    assert r.returncode == 1 and "not a regular file" in r.stderr
    r = cli(g, "--fabric", f, "--cycles", "10", "--vcd", "/dev/null")
    assert r.returncode == 0, r.stderr


# --- engines and instances on the command line -----------------------------------------------------

def test_cli_says_which_engine_ran(tmp_path, cli):
    g, f = _files(tmp_path, *sum_loop([1, 2, 3]))
    for engine, shown_ in (("auto", "compiled"), ("compiled", "compiled"), ("reference", "reference")):
        r = cli(g, "--fabric", f, "--cycles", "100", "--engine", engine)
        assert r.returncode == 0 and f"engine: {shown_}\n" in r.stdout and "status: complete, 6 cycle(s)" in r.stdout


def test_cli_runs_instances_with_their_own_streams(tmp_path, cli):
    actors, edges, inputs, outputs = sum_loop([1])
    inputs = [x for x in inputs if x[0] not in ("x", "limit")]
    fab = configured_fabric("fab", actors)
    doc = graph_document("g", "fab", actors, edges, inputs, outputs)
    doc["inputs"] += [{"name": "limit", "to": ["cnt.1", "cnt2.1"], "instance_tokens": [[2], [3], [1]]},
                      {"name": "x", "to": ["add.1"], "instance_tokens": [[5, 6], [1, 2, 3], [9]]}]
    (tmp_path / "f.json").write_text(json.dumps(fab))
    (tmp_path / "g.json").write_text(json.dumps(doc))
    r = cli(str(tmp_path / "g.json"), "--fabric", str(tmp_path / "f.json"), "--cycles", "100", "--instances", "4")
    assert r.returncode == 0, r.stderr
    assert "engine: compiled, 4 instances" in r.stdout
    for k, total in ((0, 11), (1, 6), (2, 9), (3, 11)):                 # instance 3 takes list 3 mod 3 = 0
        assert f"instance {k}: output sum: 1 token(s): [{total}]" in r.stdout
    ref = cli(str(tmp_path / "g.json"), "--fabric", str(tmp_path / "f.json"), "--cycles", "100", "--instances", "4",
              "--engine", "reference")
    assert ref.stdout.replace("engine: reference", "engine: compiled") == r.stdout


@pytest.mark.parametrize("args, words", [(["--instances", "0"], "outside [1, 2^16]"),
                                         (["--instances", str(1 << 17)], "outside [1, 2^16]"),
                                         (["--engine", "fast"], "invalid choice")])
def test_cli_refuses_bad_engine_options(tmp_path, cli, args, words):
    g, f = _files(tmp_path, *sum_loop([1]))
    r = cli(g, "--fabric", f, "--cycles", "10", *args)
    assert r.returncode == 2 and words in r.stderr and r.stdout == ""


def test_cli_refuses_a_trace_of_too_many_instances_before_starting(tmp_path, cli):
    g, f = _files(tmp_path, *sum_loop([1]))
    out = tmp_path / "t.arrow"
    r = cli(g, "--fabric", f, "--cycles", str(1 << 20), "--instances", "4096", "--trace", str(out))
    assert r.returncode == 2 and "lower --cycles or --instances" in r.stderr and not out.exists()


def test_instance_tokens_are_checked_like_tokens():
    fab = load_document(configured_fabric("fab", [ADD]))
    doc = graph_document("g", "fab", [ADD], [], [("a", ["add.0"], [1])], [("y", "add.0")])
    doc["inputs"].append({"name": "b", "to": ["add.1"], "instance_tokens": [[1], [1 << 40]]})
    assert codes(lambda: load_graph_document(doc, fab)) == [GraphCode.BadToken]
    doc["inputs"][1]["instance_tokens"] = []
    with pytest.raises(FormatError) as exc:
        load_graph_document(doc, fab)
    assert "instance_tokens" in exc.value.path and "at least 1" in str(exc.value)


# --- the document schema's wording (read by fabric/jsonread.py, the description's reader) -------

_DOC = {"format": "tile-emu-fabric-graph/1", "name": "g", "fabric": "f", "actors": [], "edges": []}
_ONE_FORM = "an input has exactly one of tokens (every instance) and instance_tokens (one list per instance)"


@pytest.mark.parametrize("extra, message", [
    ({"format": 5}, "$.format: expected 'tile-emu-fabric-graph/1', found 5"),
    ({"inputs": [{"name": "a", "to": []}]}, f"$.inputs[0]: {_ONE_FORM}"),
    ({"inputs": [{"name": "a", "to": [], "tokens": [], "instance_tokens": [[1]]}]}, f"$.inputs[0]: {_ONE_FORM}"),
    ({"inputs": [{"name": "a", "tokens": [], "instance_tokens": [[1]]}]}, "$.inputs[0]: missing required field 'to'"),
    ({"inputs": [{"name": "a", "to": [], "tokens": [], "zz": 1}]},
     "$.inputs[0].zz: unknown field (allowed: instance_tokens, name, to, tokens)"),
    ({"inputs": [{"name": "a", "to": [], "instance_tokens": []}]}, "$.inputs[0].instance_tokens: needs at least 1 entry"),
    ({"inputs": [{"name": "a", "to": ["x.0\n"], "tokens": []}]}, "$.inputs[0].to[0]: 'x.0\\n' is not an endpoint (actor.K)"),
    ({"temporal": [{"op": "x", "contexts": 1, "actors": {str(i): 0 for i in range(1025)}}]},
     "$.temporal[0].actors: 1025 entries exceed the limit of 1024"),
    ({"temporal": [{"op": "x", "contexts": 1, "actors": {"a": -1}}]}, "$.temporal[0].actors.a: -1 is outside [0, 1023]"),
    ({"temporal": [{"op": "x", "contexts": 1, "actors": {}, "grant_policy": "lifo"}]},
     "$.temporal[0].grant_policy: 'lifo' is not one of 'round_robin', 'fixed_priority'"),
    ({"edges": [{"from": "a.0", "to": "b.0", "q": 1}]}, "$.edges[0].q: unknown field (allowed: from, initial, to)"),
    ({"outputs": [{"name": "y", "from": "a.0", "ready_every": 1.5}]},
     "$.outputs[0].ready_every: expected an integer, found a number"),
    ({"outputs": [{"name": "", "from": "a.0"}]}, "$.outputs[0].name: expected a nonempty string, found a string"),
    ({"actors": ["x"] * 70000}, "$.actors: 70000 entries exceed the limit of 65536"),
    ({"activity_defined": ["a.b"]}, "$.activity_defined[0]: 'a.b' is not an endpoint (actor.K)"),
])
def test_the_first_schema_error_in_reading_order_is_one_line(extra, message):
    fab = load_document(configured_fabric("fab", [ADD]))
    with pytest.raises(FormatError) as exc:
        load_graph_document({**_DOC, **extra}, fab)
    assert str(exc.value) == message


def test_the_graph_schema_verdicts_agree_with_the_reference_jsonschema():
    """fastjsonschema decides; the reference implementation (Draft 7, the endpoint format as
    fabric.topology.split_ref) must reach the same verdict on every mutated example graph."""
    import copy
    import pathlib
    import random

    import jsonschema

    from fabric.sim.graph import _READER
    from fabric.topology import split_ref
    fmt = jsonschema.FormatChecker(formats=())
    fmt.checks("endpoint")(lambda v: not isinstance(v, str) or split_ref(v) is not None)
    reference = jsonschema.Draft7Validator(json.loads(_READER._frozen), format_checker=fmt)
    ex = pathlib.Path(__file__).resolve().parents[2] / "examples" / "fabric"
    docs = [json.loads(p.read_text()) for p in sorted(ex.glob("*.graph.json"))]
    junk = [None, True, 0, -1, 1 << 40, 1.5, "", "x", "a.7", "a.b", [], {}, [1], {"a": 1}, [[1]]]
    rng = random.Random(19)
    verdicts = {True: 0, False: 0}
    for _ in range(300):
        d = copy.deepcopy(rng.choice(docs))
        if rng.random() < 0.3:
            d["temporal"] = [{"op": "fu/x", "contexts": 2, "actors": {"a": 0, "b": 1}}]
        for _ in range(rng.randint(1, 2)):
            paths, stack = [], [((), d)]
            while stack:
                p, v = stack.pop()
                paths.append(p)
                stack += [(p + (k,), x) for k, x in (v.items() if isinstance(v, dict) else
                                                     enumerate(v) if isinstance(v, list) else ())]
            p = rng.choice(paths[1:])
            cur = d
            for k in p[:-1]:
                cur = cur[k]
            cur[p[-1]] = copy.deepcopy(rng.choice(junk))
        try:
            _READER.check(d)
            ours = True
        except FormatError:
            ours = False
        assert reference.is_valid(d) == ours, json.dumps(d)[:300]
        verdicts[ours] += 1
    assert verdicts[True] and verdicts[False]
