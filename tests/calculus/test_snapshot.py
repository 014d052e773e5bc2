"""Immutable entry snapshots (seed 002): "Reading an immutable entry Tile snapshot T0 does not
conflict with another instance contributing a patch to the new value T1"; T1[e] is V_i[e] where
instance i writes e, T0[e] where no instance does; overlapping patches have no winning instance;
changes within one instance keep their local order.  Expected arrays are computed here from T0."""
import json

import pytest

from emulator.calculus import InterferenceError, RegionError, loads, run
from emulator.calculus import builder as B
from emulator.calculus.plan import Plan, Step, check_plan, source_events

T0 = [1, 2, 3, 4, 5, 6]


def prog(stmt, snapshot=("T",), where=None, extra=None):
    arrays = {"T": B.array([6], init=T0), "y": B.array([6], fill=0), **(extra or {})}
    return B.program(B.parallel([("i", 6)], B.op(*stmt) if isinstance(stmt, tuple) else B.op(stmt),
                                where=where, snapshot=snapshot), arrays=arrays)


def test_reading_the_entry_snapshot_does_not_conflict_with_other_instances_patches():
    p = prog("T[i] = T[(i + 1) % 6] * 10")
    want = [T0[(i + 1) % 6] * 10 for i in range(6)]
    assert run(p, validate=True).arrays["T"] == want
    assert run(p, validate=True, parallel_order="reverse").arrays["T"] == want     # any schedule
    with pytest.raises(InterferenceError, match="read/write on T\\[1\\]"):
        run(prog("T[i] = T[(i + 1) % 6] * 10", snapshot=()), validate=True)       # mutable memory


def test_untouched_elements_keep_the_entry_value():
    p = prog("T[i] = T[5 - i] + 100", where="i % 2 == 0")
    assert run(p, validate=True).arrays["T"] == [T0[5] + 100, 2, T0[3] + 100, 4, T0[1] + 100, 6]


def test_overlapping_patches_still_interfere():
    with pytest.raises(InterferenceError, match="write/write on T\\[0\\]"):
        run(prog("T[0] = T[i]"), validate=True)


def test_an_instance_reads_its_own_writes_in_order():
    p = prog(("T[i] = 7 * i", "y[i] = T[i] + T[(i + 1) % 6]"))
    assert run(p, validate=True).arrays["y"] == [7 * i + T0[(i + 1) % 6] for i in range(6)]


def test_nested_instances_read_the_outer_entry_snapshot():
    p = B.program(B.parallel([("i", 2)], B.parallel([("j", 3)], B.op("T[i * 3 + j] = T[(i * 3 + j + 1) % 6] - 1")),
                             snapshot=["T"]), arrays={"T": B.array([6], init=T0)})
    assert run(p, validate=True).arrays["T"] == [T0[(k + 1) % 6] - 1 for k in range(6)]


def test_a_plan_keeps_the_snapshot_before_the_instances():
    p = prog("T[i] = T[(i + 1) % 6] * 10")
    evs = source_events(p)
    snap = [e.ordinal for e in evs if e.kind == "snapshot"]
    inst = [e.ordinal for e in evs if e.kind == "op"]
    assert check_plan(p, Plan([Step("serial", snap), Step("parallel", inst)]))
    v = check_plan(p, Plan([Step("parallel", inst), Step("serial", snap)]))
    assert v.obligation == "dependences preserved" and "#snapshot" in v.detail
    plain = prog("T[i] = T[(i + 1) % 6] * 10", snapshot=())
    v = check_plan(plain, Plan([Step("parallel", [e.ordinal for e in source_events(plain)])]))
    assert v.obligation == "parallel noninterference"


@pytest.mark.parametrize("snapshot,path,why", [
    (["Q"], "$.body.snapshot[0]", "'Q' names no array"),
    (["T", "T"], "$.body.snapshot[1]", "listed twice"),
    ("T", "$.body.snapshot", "'snapshot' is a list of array names, got string"),
    ([3], "$.body.snapshot[0]", "a snapshot array must be an identifier"),
])
def test_malformed_snapshots(snapshot, path, why):
    doc = {"arrays": {"T": {"shape": [2], "fill": 0}},
           "body": {"parallel": [["i", 2]], "snapshot": snapshot, "body": {"op": "T[i] = 1"}}}
    with pytest.raises(RegionError) as e:
        loads(json.dumps(doc))
    assert e.value.path == path and why in e.value.why, str(e.value)
