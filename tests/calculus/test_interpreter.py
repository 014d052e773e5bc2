"""The reference interpreter's sequential semantics, one seed sentence per test."""
import pytest

from emulator.calculus import (InterferenceError, PipelineHazardError, RegionRuntimeError, run)
from emulator.calculus import builder as B


def test_a_load_creates_a_value_snapshot_later_stores_do_not_change_it():
    p = B.program(B.op("t = A[0]", "A[0] = 7", "Bv[0] = t"),
                  arrays={"A": B.array([1], init=[3]), "Bv": B.array([1])})
    r = run(p)
    assert r.arrays == {"A": [7], "Bv": [3]}


def test_temporal_iterations_update_simultaneously_including_swaps():
    swap = B.program(B.serial([("t", 3)], B.op("u = a"), carry={"a": 1, "b": 2}, next={"a": "b", "b": "a"}),
                     arrays={})
    assert run(swap).scope == {"a": 2, "b": 1}          # three swaps
    fib = B.program(B.seq(B.serial([("t", 10)], B.op("u = a"), carry={"a": 0, "b": 1},
                                   next={"a": "b", "b": "a + b"}),
                          B.op("y[0] = a")), arrays={"y": B.array([1])})
    assert run(fib).arrays["y"] == [55]                  # F(10), not the sequential-assignment drift


def test_parallel_noninterference_reports_the_first_conflicting_pair():
    p = B.program(B.parallel([("i", 4)], B.op("x[(i + 1) % 4] = x[i] + 1")), arrays={"x": B.array([4], init=[1, 2, 3, 4])})
    with pytest.raises(InterferenceError) as e:
        run(p, validate=True)
    err = e.value
    assert (err.first, err.second, err.cell, err.kind) == ({"i": 0}, {"i": 1}, "x[1]", "write/read")
    assert err.path == "$.body"


def test_read_only_sharing_and_same_instance_aliasing_are_not_interference():
    p = B.program(B.parallel([("i", 4)], B.op("C[i] = C[i] + s[0]")),
                  arrays={"C": B.array([4], init=[1, 2, 3, 4]), "s": B.array([1], init=[10])})
    assert run(p, validate=True).arrays["C"] == [11, 12, 13, 14]


def test_a_valid_parallel_gives_the_same_state_in_any_instance_order():
    p = B.program(B.parallel([("i", 3), ("j", 2)], B.op("y[i, j] = x[j, i] * 10 + i")),
                  arrays={"x": B.array([2, 3], init=[[1, 2, 3], [4, 5, 6]]), "y": B.array([3, 2])})
    assert run(p, validate=True).arrays == run(p, parallel_order="reverse").arrays
    bad = B.program(B.parallel([("i", 3)], B.op("x[0] = i")), arrays={"x": B.array([1])})
    assert run(bad).arrays != run(bad, parallel_order="reverse").arrays   # why the contract matters
    with pytest.raises(InterferenceError, match="write/write on x\\[0\\]"):
        run(bad, validate=True)


def test_nested_parallel_checks_each_level():
    p = B.program(B.parallel([("i", 2)], B.parallel([("j", 2)], B.op("y[j] = i"))), arrays={"y": B.array([2])})
    with pytest.raises(InterferenceError) as e:
        run(p, validate=True)
    assert e.value.path == "$.body" and e.value.first == {"i": 0} and e.value.second == {"i": 1}


def test_ragged_domains_and_where_masks_enumerate_active_coordinates_in_lex_order():
    p = B.program(B.serial([("i", 4), ("j", 0, "i")], B.op("u = 0"), where="(i + j) % 2 == 1",
                           carry={"s": "''"}, next={"s": "s + 'ij'"}),
                  arrays={})
    # active (i, j): (1,0) (2,1) (3,0) (3,2)
    assert run(p).scope["s"] == "ij" * 4


def test_empty_fibers_return_the_seed_and_masks_omit_contributions():
    p = B.program(B.reduce([("m", 3), ("k", 4)], "y", "x[m, k]", "add", group=["m"], mask="x[m, k] > 0"),
                  arrays={"x": B.array([3, 4], init=[[1, 2, 3, 4], [-1, -2, -3, -4], [0, 5, 0, 6]]),
                          "y": B.array([3], init=[100, 200, 300])})
    r = run(p)
    assert r.arrays["y"] == [110, 200, 311]              # row 1 has no contribution: the seed stays


def test_replicas_never_create_additional_contributions():
    # Each contribution x[k] is held by 3 lanes; the semantic key is k alone.
    p = B.program(B.reduce([("k", 4), ("lane", 3)], "y", "x[k]", "add", group=[0], key=["k"]),
                  arrays={"x": B.array([4], init=[1, 2, 3, 4]), "y": B.array([1], init=[0])})
    assert run(p).arrays["y"] == [10]
    bad = B.program(B.reduce([("k", 2), ("lane", 2)], "y", "x[k] + lane", "add", group=[0], key=["k"]),
                    arrays={"x": B.array([2], init=[1, 2]), "y": B.array([1], init=[0])})
    with pytest.raises(RegionRuntimeError, match="replicas of contribution \\(0,\\) disagree"):
        run(bad)


def test_the_fiber_is_in_lexicographic_source_order_not_key_order():
    """"The fiber uses active coordinates in lexicographic source-axis order": a key names a
    contribution's identity (replicas), it never reorders the fold."""
    arrays = {"s": B.array([4], init=list("abcd")), "y": B.array([1], init=[""])}
    p = B.program(B.reduce([("i", 4)], "y", "s[i]", "concat", group=[0], policy="fold_left", key=["3 - i"]),
                  arrays=arrays)
    assert run(p).arrays["y"] == ["abcd"]
    # replicas of contribution k sit on lanes 1 and 0 of a reversed lane axis: the fiber keeps the
    # order in which each key first occurs in (k, lane) order, i.e. k order
    rep = B.program(B.reduce([("k", 4), ("lane", 2)], "y", "s[k]", "concat", group=[0], policy="fold_right",
                             key=["3 - k"]), arrays=arrays)
    assert run(rep).arrays["y"] == ["abcd"]          # a (b (c (d seed))) with an empty seed


def test_left_and_right_folds_have_different_update_structures():
    arrays = {"s": B.array([3], init=["a", "b", "c"]), "y": B.array([1], init=["S"])}
    left = B.program(B.reduce([("k", 3)], "y", "s[k]", "concat", group=[0], policy="fold_left"), arrays=arrays)
    right = B.program(B.reduce([("k", 3)], "y", "s[k]", "concat", group=[0], policy="fold_right"), arrays=arrays)
    assert run(left).arrays["y"] == ["Sabc"]             # ((S a) b) c
    assert run(right).arrays["y"] == ["abcS"]            # a (b (c S))


def test_a_reduce_body_runs_per_contribution_and_its_locals_feed_the_value():
    p = B.program(B.reduce([("k", 4)], "y", "t", "add", group=[0], body=B.op("t = x[k] * x[k]")),
                  arrays={"x": B.array([4], init=[1, 2, 3, 4]), "y": B.array([1], init=[0])})
    assert run(p).arrays["y"] == [1 + 4 + 9 + 16]


def test_conditionals_on_data():
    p = B.program(B.parallel([("i", 4)], B.if_("x[i] % 2 == 0", B.op("y[i] = 'even'"), B.op("y[i] = 'odd'"))),
                  arrays={"x": B.array([4], init=[3, 8, 5, 0]), "y": B.array([4])})
    assert run(p, validate=True).arrays["y"] == ["odd", "even", "odd", "even"]


def test_pipeline_runs_as_serial_and_validate_finds_a_stage_hazard():
    ok = B.program(B.pipeline([("n", 4)], [B.op("b[n] = x[n] * 2"), B.op("y[n] = b[n] + 1")]),
                   arrays={"x": B.array([4], init=[1, 2, 3, 4]), "b": B.array([4]), "y": B.array([4])})
    assert run(ok, validate=True).arrays["y"] == [3, 5, 7, 9]
    # One buffer slot reused every iteration: stage 1 of n reads b[0] while stage 0 of n+1 rewrites it.
    bad = B.program(B.pipeline([("n", 4)], [B.op("b[0] = x[n] * 2"), B.op("y[n] = b[0] + 1")]),
                    arrays={"x": B.array([4], init=[1, 2, 3, 4]), "b": B.array([1]), "y": B.array([4])})
    assert run(bad).arrays["y"] == [3, 5, 7, 9]          # the reference semantics is serial
    with pytest.raises(PipelineHazardError, match="stage 1 of iteration \\(n=0\\) issues at time 1"):
        run(bad, validate=True)


def test_runtime_errors_name_the_node_and_the_instance():
    p = B.program(B.parallel([("i", 3)], B.op("y[i + 1] = x[i]")),
                  arrays={"x": B.array([3], init=[1, 2, 3]), "y": B.array([3])})
    with pytest.raises(RegionRuntimeError) as e:
        run(p)
    assert e.value.path == "$.body.body.op" and e.value.at == {"i": 2} and "out of range" in e.value.why
    und = B.program(B.op("y[0] = x[1]"), arrays={"x": B.array([2], init=[1, None]), "y": B.array([1])})
    with pytest.raises(RegionRuntimeError, match="read of undefined x\\[1\\]"):
        run(und)
    mixed = B.program(B.op("y[0] = x[0] + 1"), arrays={"x": B.array([1], init=[0.5]), "y": B.array([1])})
    with pytest.raises(RegionRuntimeError, match="mixes float and int"):
        run(mixed)


def test_binary64_arithmetic_rounds_to_nearest_even():
    p = B.program(B.op("y[0] = fadd(x[0], x[1])", "y[1] = f64(x2[0])"),
                  arrays={"x": B.array([2], init=[1.0, 2.0 ** -53]), "x2": B.array([1], init=[2 ** 53 + 1]),
                          "y": B.array([2])})
    # 1 + 2^-53 is a tie between 1 and 1 + 2^-52: even is 1.0; 2^53 + 1 ties to 2^53.
    assert run(p).arrays["y"] == [1.0, float(2 ** 53)]


def test_init_overrides_declared_arrays():
    p = B.program(B.op("y[0] = x[0, 1]"), arrays={"x": B.array([2, 2]), "y": B.array([1])})
    assert run(p, init={"x": [[1, 2], [3, 4]]}).arrays["y"] == [2]
    with pytest.raises(RegionRuntimeError, match="expected a list of 2"):
        run(p, init={"x": [[1, 2, 3], [3, 4]]})
