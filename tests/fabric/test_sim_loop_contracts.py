"""Loop-control contracts as records (issue 19): LoopCarry, LoopInvariant, LoopGate and
LoopStream carry one UsePattern per logical transition case; the records round-trip through the
canonical resource-contract codec; the engines read each case's consumption, active results and
timing from them; a record that does not cover its schema's cases is refused by the loader."""
import dataclasses

import pytest

from fabric import contract as C
from fabric.sim.graph import GraphCode, GraphError
from sim_fixtures import STREAM, load, run


@pytest.mark.parametrize("family, step", [("LoopCarry", None), ("LoopInvariant", None), ("LoopGate", None),
                                          ("LoopStream", "add"), ("LoopStream", "mul"), ("LoopStream", "div")])
def test_per_case_records_round_trip_through_the_codec(family, step):
    rec = C.loop_control_contract(family, step)
    data = C.encode_contract(rec)
    assert C.decode_contract(data) == rec and C.encode_contract(C.decode_contract(data)) == data
    cases = C.LOOP_CASES[family].cases
    assert len(rec.use_patterns) == len(cases) == len(rec.eligibility_keys) == len(rec.transition_keys)
    assert rec.grant_policy is None and rec.requesters == (0,)
    for case, p, use in zip(cases, rec.use_patterns, C.case_uses(family, rec)):
        assert p.eligibility == p.transition == p.key
        assert p.claims[0].state == 0                              # the context-state entry
        assert set(use.consumes) == set(case.consumes)             # exactly its operand heads
        assert set(use.produces) == {j for j, _ in case.produces}  # exactly its active results
        assert all(c.amount == 1 for c in p.claims)
    assert C.case_cover_error(family, rec) is None


def test_exact_pattern_shapes():
    """The normalised records, spelled out: carry init claims (context, init, result); loop_false
    claims no result capacity; a multiply stream's patterns claim the in-flight update released
    3 cycles after acceptance, with publication one cycle after it."""
    carry = C.loop_control_contract("LoopCarry")
    states = [[c.state for c in p.claims] for p in carry.use_patterns]
    assert states == [[0, 2, 4], [0, 1, 3, 4], [0, 1]]          # heads 1..3, result 4
    assert carry.events == ("Accept", "Publish", "Release") and carry.timings[0].ranks == (0, 0, 0)
    stream = C.loop_control_contract("LoopStream", "mul")
    assert [[c.state for c in p.claims] for p in stream.use_patterns] == [[0, 1, 2, 3, 4, 5, 6], [0, 4, 5, 6]]
    assert stream.events == ("Accept", "Publish", "NextState") and stream.timings[0].ranks == (0, 1, 3)
    gate = C.case_uses("LoopGate", C.loop_control_contract("LoopGate"))
    assert [u.produces for u in gate] == [(1,), (), (0, 1), (0,)]   # head_true publishes only value'


def _without_pattern(family, k):
    rec = C.loop_control_contract(family, "add" if family == "LoopStream" else None)
    pats = rec.use_patterns[:k] + rec.use_patterns[k + 1:]
    pats = tuple(dataclasses.replace(p, key=i, eligibility=i, transition=i) for i, p in enumerate(pats))
    keys = tuple(range(len(pats)))
    return dataclasses.replace(rec, use_patterns=pats, eligibility_keys=keys, transition_keys=keys)


def _claiming(family, case, drop_state):
    rec = C.loop_control_contract(family)
    p = rec.use_patterns[case]
    claims = tuple(c for c in p.claims if c.state != drop_state)
    claims = tuple(dataclasses.replace(c, claim=i) for i, c in enumerate(claims))
    pats = tuple(dataclasses.replace(q, claims=claims) if q.key == case else q for q in rec.use_patterns)
    return dataclasses.replace(rec, use_patterns=pats)


@pytest.mark.parametrize("record, why", [
    (lambda: _without_pattern("LoopCarry", 2), "3 logical transition case(s)"),
    (lambda: _claiming("LoopCarry", 1, 3), "claims operand heads [0]"),        # loop_true without `next`
    (lambda: _claiming("LoopCarry", 0, 4), "claims result capacity []"),       # init without its result
    (lambda: _claiming("LoopCarry", 0, 0), "does not claim the context-state entry"),
])
def test_a_record_that_does_not_cover_the_cases_is_one_typed_diagnostic(monkeypatch, record, why):
    import fabric.sim.models as M
    bad = record()
    assert why in C.case_cover_error("LoopCarry", bad)
    real = M.contract_for
    monkeypatch.setattr(M, "contract_for", lambda op: bad if op.family == "LoopCarry" else real(op))
    carry = ("c", "dataflow.carry", ["i1", "i8", "i8"], ["i8"], {})
    with pytest.raises(GraphError) as exc:
        load([carry], [], [("cond", ["c.0"], [0]), ("init", ["c.1"], [1]), ("next", ["c.2"], [2])], [("o", "c.0")])
    d = exc.value.diagnostics[0]
    assert d.code is GraphCode.ContractCasesUncovered and why in str(d) and "\n" not in str(d)


def test_the_engines_read_timing_from_the_record(monkeypatch):
    """A stream record whose NextState rank is 5 (not the step kind's 1): the add stream then
    publishes every 5 cycles - the engines take the timing from the record, not from code."""
    import fabric.sim.models as M
    rec = C.loop_control_contract("LoopStream", "add")
    slow = dataclasses.replace(rec, timings=(C.TimingContract(0, (0, 1, 5)),))
    real = M.contract_for
    monkeypatch.setattr(M, "contract_for", lambda op: slow if op.family == "LoopStream" else real(op))
    for engine in ("reference", "compiled"):
        res, rec_ = run([("s", "dataflow.stream", ["i8"] * 3, ["i8", "i1"], STREAM)], [],
                        [("start", ["s.0"], [0]), ("limit", ["s.1"], [3]), ("step", ["s.2"], [1])],
                        [("i", "s.0"), ("c", "s.1")], engine=engine)
        assert res.outputs["i"] == [0, 1, 2, 3]
        assert rec_.cycles_handing_off("s.0->i") == [1, 6, 11, 16]
