"""Symbolic witness checks with isl (seed 002: Presburger sets and relations; "a solver timeout
means unknown, not false").  The finite enumeration is the reference: on random quasi-affine
witnesses small enough to enumerate, both give the same verdict and the same failed obligation.
Beyond enumeration (2^30 instances, a symbolic extent N) the symbolic check decides; outside the
fragment it answers unknown, never admitted."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator.calculus.domains import FiniteDomain, IndexMap
from emulator.calculus.symbolic import (check_bind_symbolic, check_reindex_symbolic, check_split_fuse_symbolic,
                                        check_symbolic)
from emulator.calculus.taskmap import repeat, spatial
from emulator.calculus.witnesses import (BindWitness, Cut, ReindexWitness, SplitFuseWitness, VersionWitness,
                                         check_bind, check_reindex, check_split_fuse, fuse, split)


def same(finite, symbolic):
    assert symbolic.decided, symbolic
    assert (bool(finite), finite.obligation) == (bool(symbolic), symbolic.obligation), (finite, symbolic)


AXES = ["a", "b"]


def terms(names):
    v = st.sampled_from(names)
    c = st.integers(1, 4)
    return st.one_of(
        v, st.integers(0, 3).map(str),
        st.tuples(v, c, v).map(lambda t: f"{t[0]} * {t[1]} + {t[2]}"),
        st.tuples(v, c, v, c).map(lambda t: f"({t[0]} * {t[1]} + {t[2]}) // {t[3]}"),
        st.tuples(v, c, v, c).map(lambda t: f"({t[0]} * {t[1]} + {t[2]}) % {t[3]}"),
        st.tuples(c, v).map(lambda t: f"{t[0]} - 1 - {t[1]}"))


def domains(names):
    return st.lists(st.integers(1, 6), min_size=len(names), max_size=len(names)).flatmap(
        lambda ext: st.one_of(st.none(), st.sampled_from([f"{names[0]} + {names[-1]} < 6", f"{names[0]} % 2 == 0",
                                                          f"not ({names[-1]} == 1)"])).map(
            lambda where: FiniteDomain(list(zip(names, ext)), where=where)))


@st.composite
def bijections(draw):
    """Known bijections (so the cut obligations get exercised): flips, swaps, splits, merges."""
    e1, e2 = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    kind = draw(st.sampled_from(["flip", "swap", "split", "merge", "mixed"]))
    if kind == "flip":
        return FiniteDomain([("i", e1), ("j", e2)]), FiniteDomain([("a", e1), ("b", e2)]), IndexMap(("a", "b"), [f"{e1} - 1 - a", "b"])
    if kind == "swap":
        return FiniteDomain([("i", e1), ("j", e2)]), FiniteDomain([("a", e2), ("b", e1)]), IndexMap(("a", "b"), ["b", "a"])
    if kind == "split":
        return FiniteDomain([("i", e1 * e2)]), FiniteDomain([("a", e1), ("b", e2)]), IndexMap(("a", "b"), [f"a * {e2} + b"])
    if kind == "merge":
        return FiniteDomain([("i", e1), ("j", e2)]), FiniteDomain([("a", e1 * e2)]), IndexMap(("a",), [f"a // {e2}", f"a % {e2}"])
    return (FiniteDomain([("i", e1), ("j", e2)]), FiniteDomain([("a", e2), ("b", e1)]),
            IndexMap(("a", "b"), [f"(a * {e1} + b) // {e2}", f"(a * {e1} + b) % {e2}"]))


@st.composite
def reindexes(draw):
    if draw(st.booleans()):
        old, new, tau = draw(bijections())
        on, nn = list(old.names), list(new.names)
    else:
        on = ["i", "j"][:draw(st.integers(1, 2))]
        nn = AXES[:draw(st.integers(1, 2))]
        old, new = draw(domains(on)), draw(domains(nn))
        tau = IndexMap(tuple(nn), [draw(terms(nn)) for _ in on])
    cuts = []
    for _ in range(draw(st.integers(0, 2))):
        j, rho = draw(st.integers(0, len(on))), draw(st.integers(0, len(nn)))
        tj = None if draw(st.booleans()) or not j else IndexMap(tuple(nn[:rho]), [draw(terms(nn[:rho] or ["0"]))
                                                                              if rho else "0" for _ in range(j)])
        cuts.append(Cut(j, rho, tj))
    return ReindexWitness(old, new, tau, tuple(cuts))


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(reindexes())
def test_reindex_finite_and_symbolic_agree(w):
    same(check_reindex(w), check_reindex_symbolic(w))


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(0, 40), st.integers(1, 7), st.one_of(st.none(), st.integers(0, 12)), st.booleans(),
       st.integers(5, 9))
def test_split_finite_and_symbolic_agree(N, b, Q, guard, bits):
    w = split(N, b, Q=Q, guard=guard, index_bits=bits)
    generic = SplitFuseWitness(w.old, w.new, w.tau, w.factors, w.index_bits)      # no closed form: enumerate
    same(check_split_fuse(generic), check_split_fuse_symbolic(w))
    assert bool(check_split_fuse(w)) == bool(check_split_fuse(generic))


@st.composite
def binds(draw):
    names = AXES[:draw(st.integers(1, 2))]
    dom = draw(domains(names))
    binding = IndexMap(tuple(names), [draw(terms(names)), draw(terms(names))])
    return BindWitness(dom, binding, draw(st.integers(1, 8)), draw(st.sampled_from(["parallel", "serial"])),
                       draw(st.one_of(st.none(), st.integers(1, 12))),
                       tuple(draw(st.lists(st.integers(0, len(names)), max_size=2))))


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(binds())
def test_bind_finite_and_symbolic_agree(w):
    same(check_bind(w), check_bind_symbolic(w))


# ---- beyond enumeration -----------------------------------------------------------------------

def test_two_to_the_thirty_instances():
    w = split(1 << 30, 1 << 10)
    assert not check_split_fuse(SplitFuseWitness(w.old, w.new, w.tau, w.factors)).decided   # too many to enumerate
    assert check_split_fuse_symbolic(w)
    v = check_split_fuse_symbolic(split(1 << 30, 1 << 10, guard=False, Q=(1 << 20) + 1))
    assert v.obligation == "exact active coverage" and "not an active old occurrence" in v.detail
    v = check_split_fuse_symbolic(fuse(1 << 16, 1 << 16))
    assert v.obligation == "integer representability" and "int32" in v.detail
    bind = BindWitness(FiniteDomain([("i", 1 << 30)]), IndexMap(("i",), ["i % 1024", "i // 1024"]), 1024)
    assert not check_bind(bind).decided and check_bind_symbolic(bind)
    clash = BindWitness(FiniteDomain([("i", 1 << 30)]), IndexMap(("i",), ["i % 1024", "i // 2048"]), 1024)
    assert check_bind_symbolic(clash).obligation == "exact coverage"


def test_symbolic_extents_hold_for_every_value_or_name_one():
    N = FiniteDomain([("i", "N")])
    QR = FiniteDomain([("q", "(N + 3) // 4"), ("r", 4)], where="q * 4 + r < N")
    assert check_reindex_symbolic(ReindexWitness(N, QR, IndexMap(("q", "r"), ["q * 4 + r"])))
    unguarded = FiniteDomain([("q", "(N + 3) // 4"), ("r", 4)])
    v = check_reindex_symbolic(ReindexWitness(N, unguarded, IndexMap(("q", "r"), ["q * 4 + r"])))
    assert v.obligation == "active-domain bijection" and "(for N = " in v.detail
    blocks = FiniteDomain([("b", "B"), ("t", 6)])
    rows = FiniteDomain([("u", "B * 6 // 4"), ("v", 4)], where="B % 2 == 0")
    v = check_reindex_symbolic(ReindexWitness(blocks, rows, IndexMap(("u", "v"), ["(u * 4 + v) // 6", "(u * 4 + v) % 6"]),
                                              (Cut(1, 1),)))
    assert v.obligation in ("active-domain bijection", "observed-cut factorisation (cut 1)")


@pytest.mark.parametrize("w,words", [
    (ReindexWitness(FiniteDomain([("i", 4)]), FiniteDomain([("a", 2), ("b", 2)]), IndexMap(("a", "b"), ["a * b"])),
     "multiplies two variables"),
    (ReindexWitness(FiniteDomain([("i", 4)]), FiniteDomain([("a", 4)]), IndexMap(("a",), ["perm[a]"], {"perm": (1, 0, 3, 2)})),
     "reads a table"),
    (ReindexWitness(FiniteDomain([("i", 4)]), FiniteDomain([("a", 4)]), IndexMap(("a",), lambda a: (a,))),
     "Python callable"),
    (ReindexWitness(FiniteDomain([("i", 4)]), FiniteDomain([("a", 4)], where=lambda c: True), IndexMap(("a",), ["a"])),
     "Python predicate"),
    (ReindexWitness(FiniteDomain([("i", 4)]), FiniteDomain([("a", 4)]), IndexMap(("a",), ["a // n"])), "by a variable"),
    (BindWitness(FiniteDomain([("t", 12)]), spatial(4) * repeat(3), 4), "TaskMapping"),
    (VersionWitness([]), "no symbolic check"),
])
def test_outside_the_fragment_is_unknown_never_admitted(w, words):
    v = check_symbolic(w)
    assert not v and not v.decided and words in v.detail and "unknown" in str(v)


def test_a_solver_limit_is_unknown():
    w = split(1 << 30, 7)
    v = check_split_fuse_symbolic(w, max_operations=10)
    assert not v and not v.decided and "isl stopped" in v.detail


# ---- scope fusion: two parallel siblings with affine accesses ---------------------------------

from emulator.calculus import builder as B                                  # noqa: E402
from emulator.calculus.symbolic import check_scope_fusion_symbolic          # noqa: E402
from emulator.calculus.witnesses import FusionWitness, check_scope_fusion   # noqa: E402

W = FusionWitness("$.body.seq[0]", "$.body.seq[1]")
S = 6                                                                       # array extent


def subscript(names):
    v = st.sampled_from(names)
    c = st.integers(0, 3)
    return st.one_of(v, st.integers(0, S - 1).map(str),
                     st.tuples(v, c).map(lambda t: f"({t[0]} + {t[1]}) % {S}"),
                     st.tuples(c, v).map(lambda t: f"{S - 1} - {t[1]} // {t[0] + 1}"),
                     st.tuples(v, v).map(lambda t: f"({t[0]} + {t[1]}) % {S}"))


@st.composite
def sibling_programs(draw):
    rank = draw(st.sampled_from([1, 2]))
    names = ["i", "j"][:rank]
    ext = [draw(st.integers(1, S)) for _ in names]
    b_ext = ext if draw(st.booleans()) else [draw(st.integers(1, S)) for _ in names]
    dom = list(zip(names, ext))
    where = draw(st.sampled_from([None, "i % 2 == 0", f"i + {names[-1]} < 5"]))
    sub = lambda: "[" + ", ".join(draw(subscript(names)) for _ in range(2)) + "]"   # noqa: E731
    a_stmt = f"tmp{sub()} = x{sub()} + 1"
    b_stmt = draw(st.sampled_from([f"out{sub()} = tmp{sub()} * 2", f"tmp{sub()} = x{sub()}",
                                   f"out{sub()} = x{sub()} + tmp{sub()}", f"x{sub()} = 3"]))
    arrays = {k: B.array([S, S], fill=1) for k in ("x", "tmp", "out")}
    prog = B.program(B.seq(B.parallel(dom, B.op(a_stmt), where=where),
                           B.parallel(list(zip(names, b_ext)), B.op(b_stmt))), arrays=arrays)
    kind = draw(st.sampled_from(["parallel", "horizontal"]))
    m = None
    if kind == "parallel" and rank == 2 and draw(st.booleans()):
        m = IndexMap(("i", "j"), draw(st.sampled_from([["j", "i"], ["i", "j"], [f"{ext[0] - 1} - i", "j"]])))
    return prog, FusionWitness(W.first, W.second, kind, map=m)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(sibling_programs())
def test_fusion_finite_and_symbolic_agree(case):
    prog, w = case
    same(check_scope_fusion(prog, w), check_scope_fusion_symbolic(prog, w))


def test_fusion_beyond_enumeration_is_decided_symbolically():
    n = 1 << 11                                                  # 2^22 instances per scope
    def prog(b):                                                 # noqa: E306
        return B.program(B.seq(B.parallel([("i", n), ("j", n)], B.op("tmp[i, j] = x[i, j]")),
                               B.parallel([("i", n), ("j", n)], B.op(b))),
                         arrays={k: B.array([n, n], fill=0) for k in ("x", "tmp", "out")})
    pointwise = prog("out[i, j] = tmp[i, j] + 1")
    assert not check_scope_fusion(pointwise, W).decided         # the finite reference declines
    assert check_scope_fusion_symbolic(pointwise, W)
    v = check_scope_fusion_symbolic(prog(f"out[i, j] = tmp[i, (j + 1) % {n}]"), W)
    assert v.obligation == "Dep_AB ⊆ diagonal" and "per-instance fusion would lose it" in v.detail
    i, j = (int(x) for x in v.detail.split("$.body.seq[0] (i=")[1].split(")")[0].split(", j="))
    bi, bj = (int(x) for x in v.detail.split("$.body.seq[1] (i=")[1].split(")")[0].split(", j="))
    assert (i, j) == (bi, (bj + 1) % n)                           # the counterexample is a real edge
    transposed = FusionWitness(W.first, W.second, map=IndexMap(("i", "j"), ["j", "i"]))
    assert check_scope_fusion_symbolic(prog("out[j, i] = tmp[j, i]"), transposed)
    h = FusionWitness(W.first, W.second, "horizontal")
    assert check_scope_fusion_symbolic(prog("out[i, j] = x[i, j]"), h)
    assert check_scope_fusion_symbolic(prog("out[i, j] = tmp[0, 0]"), h).obligation == "independent siblings"


@pytest.mark.parametrize("b,words", [
    ("out[i, j] = tmp[i, j + 1]", "may leave its bounds"),
    ("out[i, j] = tmp[x[i, j], j]", "reads a table"),
    ("out[i, j] = tmp[i * j % 4, j]", "multiplies two variables"),
])
def test_fusion_outside_the_fragment_is_unknown(b, words):
    prog = B.program(B.seq(B.parallel([("i", 4), ("j", 4)], B.op("tmp[i, j] = x[i, j]")),
                           B.parallel([("i", 4), ("j", 4)], B.op(b))),
                     arrays={k: B.array([4, 4], fill=0) for k in ("x", "tmp", "out")})
    v = check_scope_fusion_symbolic(prog, W)
    assert not v and not v.decided and words in v.detail, v
    v = check_scope_fusion_symbolic(prog, FusionWitness(W.first, W.second, "pipeline"))
    assert not v.decided


def test_a_fusion_counterexample_is_a_real_edge_and_a_solver_limit_is_unknown():
    prog = B.program(B.seq(B.parallel([("i", 40), ("j", 40)], B.op("tmp[i, j] = x[i, j]")),
                           B.parallel([("i", 40), ("j", 40)],
                                      B.op("out[i, j] = tmp[(i * 7 + j * 3) % 40, (j * 5 + i) % 40]"))),
                     arrays={k: B.array([40, 40], fill=0) for k in ("x", "tmp", "out")})
    v = check_scope_fusion_symbolic(prog, W)
    assert v.obligation == "Dep_AB ⊆ diagonal"
    a = tuple(int(x) for x in v.detail.split("$.body.seq[0] (i=")[1].split(")")[0].split(", j="))
    b = tuple(int(x) for x in v.detail.split("$.body.seq[1] (i=")[1].split(")")[0].split(", j="))
    assert a == ((b[0] * 7 + b[1] * 3) % 40, (b[1] * 5 + b[0]) % 40) and a != b     # B(b) reads what A(a) wrote
    assert check_scope_fusion(prog, W).obligation == "Dep_AB ⊆ diagonal"
    v = check_scope_fusion_symbolic(prog, W, max_operations=50)
    assert not v and not v.decided and "isl stopped" in v.detail
    for bad in (("nonsense", W), (prog, "w")):
        v = check_scope_fusion_symbolic(*bad)
        assert not v and not v.decided
