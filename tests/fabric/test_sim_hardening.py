"""Regressions from the outside review (issue 21, items 7 and 16 and the trace/VCD messages):
each test failed before its fix."""
from __future__ import annotations

import json
import pathlib
import random

import pyarrow as pa
import pytest

from fabric.io import load
from fabric.sim.engine import MAX_ACTOR_CYCLES, MAX_CYCLES, Simulator
from fabric.sim.graph import GraphCode, GraphError, load_graph_document
from fabric.sim.trace import BATCH_ROWS, ArrowTrace, VcdTrace, fan_out
from sim_fixtures import Recorder, branch, invariant_loop, load as load_program, load_random, sum_loop, vector_pipeline
from test_sim_fuzz import MENU

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "fabric"
SUM_GRAPH, SUM_FABRIC = EXAMPLES / "sum-loop.graph.json", EXAMPLES / "sum-loop.fabric.json"


def _sum_doc():
    return json.loads(SUM_GRAPH.read_text())


@pytest.fixture
def cli(capsys):
    from emulator.cli import main

    def call(*args):
        rc = main(["fabric", "sim", *[str(a) for a in args]])
        out = capsys.readouterr()
        return rc, out.out, out.err
    return call


# --- item 7: an unknown first operand of an input ------------------------------------------------

def test_input_whose_first_operand_is_unknown_is_one_diagnostic():
    doc = _sum_doc()
    doc["inputs"][2]["to"] = ["nosuch.2", "cnt2.2"]
    with pytest.raises(GraphError) as exc:
        load_graph_document(doc, load(str(SUM_FABRIC)))
    d = exc.value.diagnostics
    assert (d[0].code, d[0].path) == (GraphCode.UnknownEndpoint, "$.inputs[2].to[0]")
    assert any(x.code is GraphCode.UnboundOperand and "cnt.2" in x.message for x in d)


def test_input_whose_first_operand_is_unknown_on_the_command_line(tmp_path, cli):
    doc = _sum_doc()
    doc["inputs"][2]["to"] = ["nosuch.2", "cnt2.2"]
    (tmp_path / "g.json").write_text(json.dumps(doc))
    rc, out, err = cli(tmp_path / "g.json", "--fabric", SUM_FABRIC, "--cycles", 100)
    assert rc == 1 and "Traceback" not in err and out == ""
    assert err.strip().splitlines()[-1].endswith("$.inputs[2].to[0]: UnknownEndpoint: nosuch.2 is not an operand "
                                                 "of a graph actor")


# --- item 16: idle stretches are skipped, --cycles is bounded -------------------------------------

def _slow_sum_loop(every):
    doc = _sum_doc()
    for o in doc["outputs"]:
        o["ready_every"] = every
    return load_graph_document(doc, load(str(SUM_FABRIC)))


def test_a_slow_consumer_costs_no_stepped_cycles(monkeypatch):
    """Eight tokens into outputs that accept every 2^20 cycles (the documented maximum) take
    9 * 2^20 cycles; only the cycles in which something can happen are stepped."""
    g = _slow_sum_loop(1 << 20)
    sim = Simulator(g)
    calls = [0]
    step = sim.step

    def counted():
        calls[0] += 1
        if calls[0] > 10_000:
            raise AssertionError("idle cycles are being stepped one by one")
        return step()
    monkeypatch.setattr(sim, "step", counted)
    res = sim.run(10 ** 8)
    assert res.status == "complete" and res.outputs["sum"] == [31]
    assert res.cycles == 9 * (1 << 20)       # the ninth index token leaves at 9 * 2^20 - 1
    assert calls[0] < 1000


def _random_program(rng):
    """A random graph of the fuzz menu with slow outputs and multi-cycle stream steps."""
    menu = MENU + [("dataflow.stream", ["i8", "i8", "i8"], ["i8", "i1"], {"step_kind": k, "predicate": "ult"})
                   for k in ("mul", "div", "shl")]
    actors = [(f"a{i}",) + rng.choice(menu) for i in range(rng.randint(1, 8))]
    results = [(f"{a[0]}.{k}", t) for a in actors for k, t in enumerate(a[3])]
    edges, inputs, outputs, used = [], [], [], set()
    for i, a in enumerate(actors):
        for k, t in enumerate(a[2]):
            cands = [r for r, rt in results if rt == t and int(r.split(".")[0][1:]) < i]
            if cands and rng.random() < 0.6:
                src = rng.choice(cands)
                edges.append((src, f"{a[0]}.{k}"))
                used.add(src)
            else:
                inputs.append((f"in_{a[0]}_{k}", [f"{a[0]}.{k}"],
                               [rng.randrange(2) if t == "i1" else rng.randrange(1, 9) for _ in range(rng.randint(0, 5))]))
    for r, _ in results:
        if r not in used or rng.random() < 0.2:
            outputs.append((f"out_{r.replace('.', '_')}", r, rng.choice([1, 2, 7, 40])))
    return actors, edges, inputs, outputs


def _traced_run(g, tmp, skip, engine="reference"):
    sim = Simulator(g, engine)
    rec = Recorder(sim)
    arrow, vcd = ArrowTrace(str(tmp / f"t{skip}.arrow"), sim), VcdTrace(str(tmp / f"w{skip}.vcd"), sim)
    res = sim.run(1500, fan_out(rec, arrow, vcd), skip_idle=skip)
    arrow.close()
    vcd.close()
    return (res.status, res.cycles, res.outputs, {n: vars(c) for n, c in res.counters.items()}, res.message,
            rec.fires, rec.handoffs, rec.stalls, rec.valid, rec.data,
            pa.ipc.open_file(str(tmp / f"t{skip}.arrow")).read_all(), (tmp / f"w{skip}.vcd").read_bytes())


@pytest.mark.parametrize("seed", range(40))
def test_skipping_idle_cycles_changes_no_output_counter_or_trace(seed, tmp_path):
    g = load_random(_random_program, random.Random(500 + seed))
    if g is None:
        return
    fast, slow = _traced_run(g, tmp_path, True), _traced_run(g, tmp_path, False)
    for a, b in zip(fast, slow):
        assert a == b


def _slowed(prog, every):
    prog = list(prog) + [()] * (5 - len(prog))
    prog[3] = [(o[0], o[1], every * (k % 2) + 1) for k, o in enumerate(prog[3])]
    return prog


@pytest.mark.parametrize("every", [2, 7, 40])
@pytest.mark.parametrize("prog", [sum_loop([3, 1, 4, 1, 5]), branch([0, 1, 1, 0], [2, 3, 4, 5]),
                                  invariant_loop(10, [1, 2, 3]), vector_pipeline([1, 2, 3, 4, 5, 6])],
                         ids=["sum_loop", "branch", "invariant_loop", "vector_pipeline"])
def test_skipping_idle_cycles_in_complete_programs(prog, every, tmp_path):
    g = load_program(*_slowed(prog, every))
    fast, slow = _traced_run(g, tmp_path, True), _traced_run(g, tmp_path, False)
    assert fast[0] == "complete"
    for a, b in zip(fast, slow):
        assert a == b


def test_cycles_beyond_the_budget_are_refused_before_starting(tmp_path, cli):
    rc, out, err = cli(SUM_GRAPH, "--fabric", SUM_FABRIC, "--cycles", MAX_CYCLES + 1)
    assert rc == 2 and out == "" and "outside [1, 2^32]" in err
    n = MAX_ACTOR_CYCLES // 6 + 1                        # 6 actors
    rc, out, err = cli(SUM_GRAPH, "--fabric", SUM_FABRIC, "--cycles", n, "--trace", tmp_path / "t.arrow",
                       "--engine", "reference")
    assert rc == 2 and out == "" and "reference engine's budget of 2^30 actor-cycles" in err and "lower --cycles" in err
    assert len(err.strip().splitlines()) == 1 and not list(tmp_path.iterdir())
    rc, out, err = cli(SUM_GRAPH, "--fabric", SUM_FABRIC, "--cycles", 1 << 30, "--instances", 1 << 10)
    assert rc == 2 and out == "" and "compiled engine's budget of 2^38 actor-cycles" in err
    assert "lower --cycles or --instances" in err


def test_outputs_bound_counts_tokens_a_slow_consumer_can_take(tmp_path, cli):
    doc = _sum_doc()
    for o in doc["outputs"]:
        o["ready_every"] = 1 << 20
    (tmp_path / "g.json").write_text(json.dumps(doc))
    rc, out, err = cli(tmp_path / "g.json", "--fabric", SUM_FABRIC, "--cycles", 10 ** 8)
    assert rc == 0, err
    assert "status: complete, 9437184 cycle(s)" in out and "output sum: 1 token(s): [31]" in out


# --- trace and waveform messages ---------------------------------------------------------------------

@pytest.mark.parametrize("opt", ["--trace", "--vcd"])
@pytest.mark.parametrize("folder", ["/proc", "/sys"])
def test_trace_on_a_filesystem_without_storage_says_so(cli, opt, folder):
    rc, out, err = cli(SUM_GRAPH, "--fabric", SUM_FABRIC, "--cycles", 100, opt, f"{folder}/x")
    assert rc == 1 and out == ""
    assert "not a regular filesystem" in err and "0 MiB" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("opt, kind", [("--vcd", "waveform")])
def test_a_failed_waveform_write_names_the_file_and_the_reason(cli, opt, kind):
    rc, out, err = cli(SUM_GRAPH, "--fabric", SUM_FABRIC, "--cycles", 100, opt, "/dev/full")
    assert rc == 1 and "Traceback" not in err
    assert err.strip() == f"tile-emu fabric: cannot write the {kind} '/dev/full': No space left on device"


def test_an_arrow_trace_of_several_batches_is_written(tmp_path):
    """Batches after the first may hold stalls only: every batch shares the event dictionary
    (an Arrow IPC file allows one), so a long run's trace is complete and readable."""
    g = _slow_sum_loop(1 << 13)        # 9 x 2^13 cycles of 3 stall rows: more than three batches
    sim = Simulator(g)
    tr = ArrowTrace(str(tmp_path / "t.arrow"), sim)
    res = sim.run(10 ** 7, fan_out(tr))
    tr.close()
    assert res.status == "complete"
    f = pa.ipc.open_file(str(tmp_path / "t.arrow"))
    assert f.num_record_batches > 2
    t = f.read_all()
    assert t.num_rows > 2 * BATCH_ROWS
    assert t.column("cycle").to_pylist() == sorted(t.column("cycle").to_pylist())
    assert set(t.column("event").to_pylist()) == {"fire", "handoff", "stall"}


def test_lane_of_names_the_set_bit_in_both_builds_without_a_numpy_warning():
    import warnings

    import numpy as np

    from fabric.sim import kernel as K
    from fabric.sim.engine import kernel_for
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # a wrapping NumPy scalar multiply warned on stderr
        for build in (K.REFERENCE, kernel_for("compiled")):
            assert [int(build.lane_of(np.uint64(1) << np.uint64(k))) for k in range(64)] == list(range(64))


def test_a_reference_batch_prints_no_warning(tmp_path, capsys):
    from emulator.cli import main
    ex = pathlib.Path(__file__).resolve().parents[2] / "examples" / "fabric"
    rc = main(["fabric", "sim", str(ex / "sum-loop.graph.json"), "--fabric", str(ex / "sum-loop.fabric.json"),
               "--cycles", "12", "--engine", "reference", "--instances", "65"])
    assert rc == 0 and capsys.readouterr().err == ""
