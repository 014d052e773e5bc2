"""The fusion forms and fission (seed 002): horizontal fusion as a tagged disjoint union, pipeline
fusion with dependence-distance and version constraints, barrier fusion, fission, a scalar
consumer fused into a reduction's final stage, and retiming with completions.

The reference for every verdict is the interpreter running the transformed program (a different
piece of code from the checkers): an admitted transformation gives the original arrays (and
validates); a rejected one gives other arrays, interferes, or hits a pipeline hazard."""
import pytest

from emulator.calculus import InterferenceError, PipelineHazardError, run
from emulator.calculus import builder as B
from emulator.calculus.domains import IndexMap
from emulator.calculus.plan import Plan, Step, check_plan, source_events
from emulator.calculus.witnesses import (FissionWitness, FusionWitness, Value, VersionWitness, apply_fission,
                                         apply_fusion, check_fission, check_scope_fusion, check_versioning,
                                         pipeline_schedule)
from plan_events import ordinals, stages

N = 6
X = [3, 1, 4, 1, 5, 9]


def arrays(**extra):
    return {"x": B.array([N], init=X), "tmp": B.array([N], fill=0), "out": B.array([N], fill=0),
            "buf": B.array([N], fill=0), **extra}


W = FusionWitness("$.body.seq[0]", "$.body.seq[1]")


def siblings(a, b, kind="parallel", **kw):
    ctor = B.parallel if kind == "parallel" else B.serial
    return B.program(B.seq(ctor(*a), ctor(*b)), arrays=arrays(), **kw)


def same_result(p, q, only=None):
    """q computes what p does (the arrays `only`, or all) and validates."""
    try:
        a, b = run(q, validate=True).arrays, run(p).arrays
    except (InterferenceError, PipelineHazardError):
        return False
    return a == b if only is None else all(a[k] == b[k] for k in only)


# ---- horizontal fusion: a tagged disjoint union -------------------------------------------------

def test_independent_siblings_of_unlike_domains_fuse_horizontally():
    p = siblings(([("i", 3)], B.op("tmp[i] = x[i] * 2")), ([("i", 1, N)], B.op("out[i] = x[i] + 1")))
    h = FusionWitness(W.first, W.second, "horizontal")
    assert check_scope_fusion(p, h)
    assert same_result(p, apply_fusion(p, h))
    v = check_scope_fusion(p, W)                          # pointwise zipping does not apply
    assert v.obligation == "domains align" and "B(i=3) maps to (i=3), which is not an active instance of A" in v.detail


def test_a_dependence_between_the_siblings_rejects_the_union():
    p = siblings(([("i", 3)], B.op("tmp[i] = x[i] * 2")), ([("i", N)], B.op("out[i] = tmp[0]")))
    v = check_scope_fusion(p, FusionWitness(W.first, W.second, "horizontal"))
    assert v.obligation == "independent siblings"
    assert "RAW edge $.body.seq[0] (i=0) -> $.body.seq[1] (i=0) on tmp[0]" in v.detail
    assert not same_result(p, apply_fusion(p, FusionWitness(W.first, W.second, "horizontal")))


def test_unlike_ranks_are_told_to_fuse_horizontally():
    p = B.program(B.seq(B.parallel([("i", 2)], B.op("tmp[i] = 1")), B.parallel([("i", 2), ("j", 2)], B.op("out[i] = 2"))),
                  arrays=arrays())
    v = check_scope_fusion(p, W)
    assert v.obligation == "domains align" and "tagged disjoint union, not pointwise zipping" in v.detail


# ---- pipeline fusion: dependence distances and versions ----------------------------------------

def pipelined(read: str, d: int, V: int | None):
    """serial_i A(i); serial_j B(j) as one pipeline: iteration n runs A(n) (stage 0) and B(n - d)
    (stage 1), with tmp contracted to buf[i % V] when V is given."""
    store = "tmp[n]" if V is None else f"buf[n % {V}]"
    load = read.replace("tmp[", "tmp[" if V is None else "buf[").replace("j", "(n - %d)" % d)
    if V is not None:
        load = load.replace("]", f" % {V}]") if "buf[" in load else load
    return B.program(B.pipeline([("n", N + d)], [
        B.if_(f"n < {N}", B.op(f"{store} = x[n] * 2")),
        B.if_(f"n >= {d}", B.op(f"out[n - {d}] = {load}"))]), arrays=arrays())


@pytest.mark.parametrize("read", ["tmp[j] + 1", "tmp[j] + tmp[(j + 5) % 6 * (j > 0)]", "tmp[(j + 1) % 6]"])
@pytest.mark.parametrize("d", [0, 1, 2])
@pytest.mark.parametrize("V", [None, 1, 2, 3, 4])
def test_pipeline_fusion_agrees_with_the_interpreters_pipeline(read, d, V):
    src = siblings(([("i", N)], B.op("tmp[i] = x[i] * 2")), ([("j", N)], B.op(f"out[j] = {read}")), kind="serial")
    w = FusionWitness(W.first, W.second, "pipeline", map=IndexMap(("j",), ["j"]), distance=d,
                      versions=None if V is None else {"tmp": IndexMap(("c",), [f"c % {V}"])})
    v = check_scope_fusion(src, w)
    assert bool(v) == same_result(src, pipelined(read, d, V), only=["out"] if V else None), v
    if not v:
        assert v.obligation in ("dependence distances", "version constraints")


def test_pipeline_fusion_diagnostics():
    src = siblings(([("i", N)], B.op("tmp[i] = x[i] * 2")), ([("i", N)], B.op("out[i] = tmp[(i + 1) % 6]")), kind="serial")
    v = check_scope_fusion(src, FusionWitness(W.first, W.second, "pipeline", distance=0))
    assert v.obligation == "dependence distances" and "a larger distance is needed" in v.detail
    assert check_scope_fusion(src, FusionWitness(W.first, W.second, "pipeline", distance=5))
    v = check_scope_fusion(src, FusionWitness(W.first, W.second, "pipeline", distance=-1))
    assert v.obligation == "dependence distances" and "nonnegative" in v.detail
    w = FusionWitness(W.first, W.second, "pipeline", distance=5, versions={"tmp": IndexMap(("c",), ["c % 2"])})
    v = check_scope_fusion(src, w)
    assert v.obligation == "version constraints" and "version lifetimes" in v.detail
    reads_first = siblings(([("i", N)], B.op("tmp[i] = tmp[i] + x[i]")), ([("i", N)], B.op("out[i] = tmp[i]")),
                           kind="serial")
    v = check_scope_fusion(reads_first, FusionWitness(W.first, W.second, "pipeline",
                                                      versions={"tmp": IndexMap(("c",), ["c % 2"])}))
    assert v.obligation == "version constraints" and "before the loop writes it" in v.detail


# ---- barrier fusion ----------------------------------------------------------------------------

def test_a_shared_group_with_a_complete_barrier_fuses_a_cross_instance_dependence():
    p = siblings(([("i", N)], B.op("tmp[i] = x[i] * 3")), ([("i", N)], B.op("out[i] = tmp[(i + 1) % 6] + 1")))
    assert not check_scope_fusion(p, W)                                    # pointwise: Dep_AB not diagonal
    assert not same_result(p, apply_fusion(p, W))
    assert check_scope_fusion(p, FusionWitness(W.first, W.second, "barrier", group_size=N))
    v = check_scope_fusion(p, FusionWitness(W.first, W.second, "barrier", group_size=4))
    assert v.obligation == "one group" and "not a device-wide phase boundary" in v.detail
    v = check_scope_fusion(p, FusionWitness(W.first, W.second, "barrier", group_size=N, complete=False))
    assert v.obligation == "complete barrier"
    v = check_scope_fusion(p, FusionWitness(W.first, W.second, "barrier"))
    assert v.obligation == "one group" and "size" in v.detail
    two_per = FusionWitness(W.first, W.second, "barrier", group_size=3, participant=IndexMap(("i",), ["i // 2"]))
    assert check_scope_fusion(p, two_per)                                  # 3 participants, 2 instances each


# ---- fission -----------------------------------------------------------------------------------

def one_scope(kind, *stmts, **kw):
    ctor = B.parallel if kind == "parallel" else B.serial
    return B.program(ctor([("i", N)], B.seq(*[B.op(s) for s in stmts]), **kw), arrays=arrays())


@pytest.mark.parametrize("kind,stmts,ok", [
    ("parallel", ("tmp[i] = x[i] * 3", "out[i] = tmp[i] + 1"), True),
    ("serial", ("tmp[i] = x[i] * 3", "out[i] = tmp[i] + tmp[(i + 5) % 6 * (i > 0)]"), True),   # reads earlier
    ("serial", ("tmp[i] = x[i] * 3", "out[i] = tmp[(i + 1) % 6]"), False),      # reads what a later i writes
    ("serial", ("out[i] = tmp[(i + 5) % 6]", "tmp[i] = x[i]"), False),         # a later part 1 reads part 2's
])
def test_fission_keeps_cross_part_dependences(kind, stmts, ok):
    p = one_scope(kind, *stmts)
    v = check_fission(p, FissionWitness("$.body", 1))
    assert bool(v) == ok, v
    assert same_result(p, apply_fission(p, FissionWitness("$.body", 1))) == ok
    if not ok:
        assert v.obligation == "preserved cross-region dependences" and "the split would run every part 1 first" in v.detail


@pytest.mark.parametrize("kind,stmts,ok", [
    ("parallel", ("tmp[i] = x[i] * 3", "out[i] = tmp[i] + 1"), True),
    ("parallel", ("tmp[i] = x[i] * 3", "out[i] = x[(i + 1) % 6] + tmp[i]"), True),
    ("serial", ("tmp[i] = x[i] * 3", "out[i] = tmp[i] + tmp[(i + 5) % 6 * (i > 0)]"), True),
    ("serial", ("tmp[i] = x[i] * 3", "out[i] = tmp[(i + 1) % 6]"), False),
    ("serial", ("out[i] = tmp[(i + 5) % 6]", "tmp[i] = x[i]"), False),
])
def test_fission_as_a_plan_is_the_parts_in_two_steps(kind, stmts, ok):
    """check_plan sees a fission as the scope's events in two steps, part 1 of every instance
    then part 2 (serial steps in source order; parallel ones as one batch each): its verdict is
    the interpreter's on the split program."""
    p = one_scope(kind, *stmts)
    evs = source_events(p)
    part = [[e.ordinal for e in evs if e.path.startswith(f"$.body.body.seq[{k}]")] for k in (0, 1)]
    assert sorted(part[0] + part[1]) == [e.ordinal for e in evs]
    step = "parallel" if kind == "parallel" else "serial"
    v = check_plan(p, Plan([Step(step, part[0]), Step(step, part[1])]))
    assert bool(v) == ok == same_result(p, apply_fission(p, FissionWitness("$.body", 1))), v
    if not ok:
        assert v.obligation == "dependences preserved"


def test_fission_obligations():
    v = check_fission(one_scope("parallel", "t = x[i]", "out[i] = t"), FissionWitness("$.body", 1))
    assert v.obligation == "locals" and "scalar expansion" in v.detail
    carried = B.program(B.serial([("i", N)], B.seq(B.op("u = a"), B.op("out[i] = a")), carry={"a": 0},
                                 next={"a": "a + 1"}), arrays=arrays())
    assert check_fission(carried, FissionWitness("$.body", 1)).obligation == "carried values"
    for at in (0, 2, "1", True):
        assert check_fission(one_scope("parallel", "tmp[i] = 1", "out[i] = 2"), FissionWitness("$.body", at)).obligation \
            == "splittable scope"
    nested = B.program(B.seq(B.op("out[0] = 1"), B.parallel([("i", N)], B.seq(B.op("tmp[i] = x[i]"), B.op("buf[i] = tmp[i]")))),
                       arrays=arrays())
    w = FissionWitness("$.body.seq[1]", 1)
    assert check_fission(nested, w) and same_result(nested, apply_fission(nested, w))


# ---- plans: pipeline steps with completions, and a reduction's final stage ---------------------

def loop_program():
    return B.program(B.serial([("i", 4)], B.seq(B.op("tmp[i] = x[i] * 2"), B.op("out[i] = tmp[i] + 1"))),
                     arrays=arrays())


@pytest.mark.parametrize("lag,latency", [(1, 1), (1, 2), (2, 2), (3, 2), (2, 3)])
def test_a_pipeline_step_keeps_every_read_after_its_write_lands(lag, latency):
    prog = loop_program()
    evs = source_events(prog)                        # A0 B0 A1 B1 ...: A_i = 2i, B_i = 2i + 1
    times = [t for i in range(4) for t in (i, i + lag)]
    lat = [latency if k % 2 == 0 else 1 for k in range(8)]
    v = check_plan(prog, Plan([Step("pipeline", [e.ordinal for e in evs], times=times, latency=lat)]))
    assert bool(v) == (lag >= latency), v                         # B_i issues at i + lag, A_i lands at i + latency
    if not v:
        assert v.obligation == "dependences preserved" and f"landing at tick {latency - 1}" in v.detail


@pytest.mark.parametrize("read", ["tmp[j] + 1", "tmp[(j + 1) % 6]", "tmp[(j + 2) % 6]"])
@pytest.mark.parametrize("d", [0, 1, 2])
def test_pipeline_fusion_as_a_plan_step(read, d):
    """serial A; serial B as one pipeline step: A(i) issues at tick i, B(j) at j + d + 1 (stage 1 of
    iteration j + d).  The plan's verdict, the witness's and the interpreter's pipelined program
    agree."""
    src = siblings(([("i", N)], B.op("tmp[i] = x[i] * 2")), ([("j", N)], B.op(f"out[j] = {read}")), kind="serial")
    evs = source_events(src)
    ids = [e.ordinal for e in evs if e.path.startswith(W.first)] + [e.ordinal for e in evs if e.path.startswith(W.second)]
    v = check_plan(src, Plan([Step("pipeline", ids, times=list(range(N)) + [j + d + 1 for j in range(N)])]))
    w = check_scope_fusion(src, FusionWitness(W.first, W.second, "pipeline", distance=d))
    assert bool(v) == bool(w) == same_result(src, pipelined(read, d, None)), (v, w)


@pytest.mark.parametrize("b,ok", [("out[i] = x[i] + 1", True), ("out[i] = tmp[0]", False), ("x[i] = 0", False)])
def test_horizontal_fusion_as_a_plan_step(b, ok):
    """A horizontal fusion is one parallel step holding both siblings' events: its verdict is the
    witness's and the interpreter's on the tagged union."""
    p = siblings(([("i", 3)], B.op("tmp[i] = x[i] * 2")), ([("i", 1, N)], B.op(b)))
    h = FusionWitness(W.first, W.second, "horizontal")
    v = check_plan(p, Plan([Step("parallel", [e.ordinal for e in source_events(p)])]))
    assert bool(v) == bool(check_scope_fusion(p, h)) == same_result(p, apply_fusion(p, h)) == ok, v
    if not ok:
        assert v.obligation in ("parallel noninterference", "dependences preserved")


def test_malformed_pipeline_steps():
    prog = loop_program()
    ids = list(range(8))
    for kw in ({}, {"times": [0] * 7}, {"times": list(range(8)), "latency": 0}, {"times": ["a"] * 8},
               {"times": [-1] * 8}, {"times": list(range(8)), "latency": [1] * 3}):
        v = check_plan(prog, Plan([Step("pipeline", ids, **kw)]))
        assert v.obligation == "step kinds", (kw, v)


def reduce_then_scalar():
    return B.program(B.seq(B.reduce([("k", 4)], "s", "x[k]", "add", group=[0]), B.op("out[0] = s[0] * 2")),
                     arrays={**arrays(), "s": B.array([1], init=[0])})


def test_a_scalar_consumer_of_a_reduction_fuses_into_its_final_stage():
    prog = reduce_then_scalar()
    evs = source_events(prog)
    contrib, res, use = stages(evs)
    tree = ["seed", [[0, 1], [2, 3]]]
    assert check_plan(prog, Plan([Step("parallel", contrib), Step("merge", res, tree=tree, final=use)]))
    v = check_plan(prog, Plan([Step("parallel", contrib + use), Step("merge", res, tree=tree)]))   # per worker
    assert v.obligation == "dependences preserved" and "final stage" in v.detail
    v = check_plan(prog, Plan([Step("parallel", contrib[:3]), Step("merge", res, tree=tree, final=contrib[3:] + use)]))
    assert v.obligation == "final stage"
    v = check_plan(prog, Plan([Step("parallel", contrib, final=use), Step("merge", res, tree=tree)]))
    assert v.obligation == "step kinds" and "only a merge step" in v.detail


# ---- retiming with completions -----------------------------------------------------------------

def test_versions_with_completions():
    # a copy issued at 0 lands at 3: a read at 2 is too early, at 3 fine
    assert check_versioning(VersionWitness([Value("v", 0, (3,), 0, completes=3)]))
    v = check_versioning(VersionWitness([Value("v", 0, (2,), 0, completes=3)]))
    assert v.obligation == "completions" and "before its write issued at 0 completes at 3" in v.detail
    # a dead value still in flight blocks its slot until it lands
    v = check_versioning(VersionWitness([Value("a", 0, (), 0, completes=4), Value("b", 2, (5,), 0)]))
    assert v.obligation == "reuse hazards"
    assert check_versioning(VersionWitness([Value("v", 3, (), 0, completes=1)])).obligation == "well-typed witness"


@pytest.mark.parametrize("ii,latency,versions", [(1, 1, 1), (1, 1, 2), (1, 2, 2), (1, 2, 3), (2, 2, 1), (2, 3, 2)])
def test_a_retimed_pipeline_with_latencies(ii, latency, versions):
    """load (stage 0, latency L) -> use (stage S) in the same iteration; the verdict equals the
    closed form: the use issues no earlier than the load lands (S >= L), and slot n mod V is not
    rewritten by iteration n + V before the use of iteration n (V * ii > S)."""
    stage = 2
    w = pipeline_schedule(8, ii=ii, stages={"load": 0, "use": stage}, deps=[("load", "use", 0)],
                          latency={"load": latency}, versions={"load": versions})
    assert bool(check_versioning(w)) == (stage >= latency and versions * ii > stage)


def test_a_group_step_with_a_complete_barrier_orders_its_phases():
    p = siblings(([("i", N)], B.op("tmp[i] = x[i] * 3")), ([("i", N)], B.op("out[i] = tmp[(i + 1) % 6] + 1")))
    evs = source_events(p)
    a = [e.ordinal for e in evs if e.path.startswith(W.first)]
    b = [e.ordinal for e in evs if e.path.startswith(W.second)]
    phases = [0] * len(a) + [1] * len(b)
    assert check_plan(p, Plan([Step("group", a + b, phases=phases, group_size=N)]))
    v = check_plan(p, Plan([Step("group", a + b, phases=phases, group_size=4)]))
    assert v.obligation == "one group" and "6 participants" in v.detail
    v = check_plan(p, Plan([Step("group", a + b, phases=phases, group_size=N, complete=False)]))
    assert v.obligation == "complete barrier"
    v = check_plan(p, Plan([Step("group", a + b, phases=[0] * (len(a) + len(b)), group_size=N)]))
    assert v.obligation == "parallel noninterference" and "group step 0" in v.detail
    v = check_plan(p, Plan([Step("group", a + b, phases=[1] * len(a) + [0] * len(b), group_size=N)]))
    assert v.obligation == "dependences preserved" and "phase 1" in v.detail
    assert check_plan(p, Plan([Step("group", a + b, phases=phases[:-1], group_size=N)])).obligation == "step kinds"


def test_a_final_stage_runs_its_consumers_in_listed_order():
    chain = [B.op(f"out[{k}] = {'s[0]' if k == 0 else f'out[{k - 1}]'} + 1") for k in range(N)]
    prog = B.program(B.seq(B.reduce([("k", 2)], "s", "x[k]", "add", group=[0]), *chain),
                     arrays={**arrays(), "s": B.array([1], init=[0])})
    evs = source_events(prog)
    contrib = ordinals(evs, "contribution")
    res = ordinals(evs, "result")
    uses = ordinals(evs, "op")
    tree = ["seed", [0, 1]]
    assert check_plan(prog, Plan([Step("parallel", contrib), Step("merge", res, tree=tree, final=uses)]))
    v = check_plan(prog, Plan([Step("parallel", contrib), Step("merge", res, tree=tree, final=uses[::-1])]))
    assert v.obligation == "dependences preserved" and "(its final stage)" in v.detail


# ---- too large to enumerate: unknown, never false and never admitted ---------------------------

def test_checks_over_domains_too_large_to_enumerate_are_unknown():
    big = 1 << 30
    two = siblings(([("i", big)], B.op("tmp[i % 6] = x[i % 6]")), ([("i", big)], B.op("out[i % 6] = tmp[i % 6]")))
    one = B.program(B.parallel([("i", big)], B.seq(B.op("tmp[i % 6] = x[i % 6]"), B.op("out[i % 6] = tmp[i % 6]"))),
                    arrays=arrays())
    verdicts = [check_scope_fusion(two, W), check_scope_fusion(two, FusionWitness(W.first, W.second, "horizontal")),
                check_fission(one, FissionWitness("$.body", 1)), check_plan(two, Plan([Step("fused", [0])]))]
    for v in verdicts:
        assert not v and not v.decided and str(v).startswith("unknown:") and "too large to enumerate" in v.detail, v
