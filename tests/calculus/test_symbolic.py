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
