"""Distributions, resource maps and placement (seed 002): L_v as a relation that keeps replicas,
E_p / L_v / C_(v,p), repartition/materialize in check_plan, and bridge compatibility.

The reference for the placement verdicts is a distributed execution written here: each
participant has its own memory laid out by delta_v, computes with what it holds, and copies move
values as the transfers say; an admitted placement must give the interpreter's arrays, a rejected
one must not (or must read something that is not there)."""
import itertools

import pytest

from emulator.calculus import builder as B
from emulator.calculus import run
from emulator.calculus.domains import FiniteDomain, IndexMap
from emulator.calculus.placement import (Distribution, Phase, Placement, Relation, ResourceMap, Transfer,
                                         check_bridge, relation)
from emulator.calculus.plan import Plan, Step, check_plan, source_events

P = 4
X = [3, 1, 4, 1]


def neighbor_program(where=None):
    """phase A: y[i] = x[i] * 2 on participant i; phase B: z[i] = y[(i + 1) % P] on participant i."""
    return B.program(B.seq(B.parallel([("i", P)], B.op("y[i] = x[i] * 2"), where=where),
                           B.parallel([("i", P)], B.op("z[i] = y[(i + 1) % 4]"))),
                     arrays={"x": B.array([P], init=X), "y": B.array([P], fill=0), "z": B.array([P], fill=0)})


PHASES = [Phase("$.body.seq[0]", IndexMap(("i",), ["i"])), Phase("$.body.seq[1]", IndexMap(("i",), ["i"]))]
OWNER = Distribution("y", FiniteDomain([("p", P), ("s", 1)]), IndexMap(("p", "s"), ["p"]))
HALO = Distribution("y", FiniteDomain([("p", P), ("s", 2)]), IndexMap(("p", "s"), ["(p + s) % 4"]))
COPY_IN = [((((p + 1) % P,), (0,)), ((p,), (1,))) for p in range(P)]     # neighbor's slot 0 -> my slot 1


def plan_for(prog, placement, split=True):
    evs = source_events(prog)
    a = [e.ordinal for e in evs if e.path.startswith("$.body.seq[0]")]
    b = [e.ordinal for e in evs if e.path.startswith("$.body.seq[1]")]
    return Plan([Step("parallel", a), Step("parallel", b)], placement=placement)


def distributed(dist_halo: bool, transfers, where_active=range(P)):
    """Run the two phases with local memories: slot (p, s) holds y[(p + s) % 4] (halo) or y[p]."""
    slots = 2 if dist_halo else 1
    mem = {(p, s): 0 for p in range(P) for s in range(slots)}                # y starts 0
    for p in where_active:
        mem[(p, 0)] = X[p] * 2                                              # owner computes
        if dist_halo:                                                       # its replica elsewhere is stale
            pass
    pending = [(dst, mem[src]) for tr in transfers for src, dst in tr]
    for (p, s), v in pending:
        mem[(p, s)] = v
    out = []
    for p in range(P):
        want = (p + 1) % P
        held = [s for s in range(slots) if (p + s) % P == want] if dist_halo else ([0] if p == want else [])
        if not held:
            return None                                                     # nothing to read
        out.append(mem[(p, held[0])])
    return out


def test_a_halo_copy_repartitions_y_for_the_second_phase():
    prog = neighbor_program()
    want = run(prog).arrays["z"]
    cases = [
        (OWNER, [], "each use observes its reaching value", "places nowhere on it"),
        (HALO, [], "each use observes its reaching value", "a copy after it is missing"),
        (HALO, [Transfer("y", 0, 1, COPY_IN)], None, None),
        (HALO, [Transfer("y", 0, 2, COPY_IN)], "copies published before use", "has not landed yet"),
    ]
    for dist, transfers, obligation, words in cases:
        v = check_plan(prog, plan_for(prog, Placement([dist], PHASES, transfers=transfers)))
        pairs = [[((s[0][0], s[1][0]), (d[0][0], d[1][0])) for s, d in t.pairs] for t in transfers if t.lands <= 1]
        got = distributed(dist is HALO, pairs)
        assert bool(v) == (got == want), (v, got, want)
        if obligation:
            assert v.obligation == obligation and words in v.detail, v
    v = check_plan(prog, plan_for(prog, Placement([HALO], PHASES, transfers=[Transfer("y", 0, 1, COPY_IN)])))
    assert "placement: 1 distributed value(s), 8 slot(s), 1 transfer(s)" in v.detail


def test_placement_obligations():
    prog = neighbor_program()
    away = Distribution("y", FiniteDomain([("p", P), ("s", 1)]), IndexMap(("p", "s"), ["(p + 1) % 4"]))
    v = check_plan(prog, plan_for(prog, Placement([away], PHASES)))
    assert v.obligation == "owner computes" and "participant [0] writes y[0]" in v.detail
    v = check_plan(prog, plan_for(prog, Placement([HALO], PHASES[:1])))
    assert v.obligation == "phase placement" and "$.body.seq[1]" in v.detail
    wrong = [((((p + 2) % P,), (0,)), ((p,), (1,))) for p in range(P)]
    v = check_plan(prog, plan_for(prog, Placement([HALO], PHASES, transfers=[Transfer("y", 0, 1, wrong)])))
    assert v.obligation == "transfer delivers its element"
    for bad in (Transfer("y", 1, 1, COPY_IN), Transfer("q", 0, 1, COPY_IN), Transfer("y", 0, 1, [(1, 2)]),
                Transfer("y", 0, 1, [(((9,), (0,)), ((0,), (1,)))]), Transfer("y", 0, 1, COPY_IN, kind="multicast")):
        v = check_plan(prog, plan_for(prog, Placement([HALO], PHASES, transfers=[bad])))
        assert v.obligation == "well-typed placement", (bad, v)
    bad_delta = Distribution("y", FiniteDomain([("p", P), ("s", 1)]), IndexMap(("p", "s"), ["p + 10"]))
    assert check_plan(prog, plan_for(prog, Placement([bad_delta], PHASES))).obligation == "well-typed placement"
    assert check_plan(prog, plan_for(prog, "placement")).obligation == "well-typed placement"


def test_a_shuffle_needs_its_sources_converged():
    ragged = neighbor_program(where="i != 1")            # participant 1 has no output in phase A
    ok = Transfer("y", 0, 1, COPY_IN, kind="copy")
    assert check_plan(ragged, plan_for(ragged, Placement([HALO], PHASES, transfers=[ok])))
    shuffle = Transfer("y", 0, 1, COPY_IN, kind="shuffle")
    v = check_plan(ragged, plan_for(ragged, Placement([HALO], PHASES, transfers=[shuffle])))
    assert v.obligation == "converged participants" and "participant [1]" in v.detail


def test_lifetimes_of_distinct_values_sharing_a_resource():
    prog = neighbor_program()
    transfers = [Transfer("y", 0, 1, COPY_IN)]
    one_address = ResourceMap("smem", ("y",), IndexMap(("p", "v"), ["p"]), IndexMap(("s",), ["0"]))
    v = check_plan(prog, plan_for(prog, Placement([HALO], PHASES, [one_address], transfers)))
    assert v.obligation == "lifetimes do not collide" and "instance [0] address [0]" in v.detail
    two = ResourceMap("smem", ("y",), IndexMap(("p", "v"), ["p"]), IndexMap(("s",), ["s"]), capacity=2)
    assert check_plan(prog, plan_for(prog, Placement([HALO], PHASES, [two], transfers)))
    small = ResourceMap("smem", ("y",), IndexMap(("p", "v"), ["p"]), IndexMap(("s",), ["s"]), capacity=1)
    v = check_plan(prog, plan_for(prog, Placement([HALO], PHASES, [small], transfers)))
    assert v.obligation == "lifetimes do not collide" and "capacity is 1" in v.detail


def test_unrelated_values_share_addresses_when_their_lifetimes_do_not_overlap():
    """"A/B/accumulator may share participants while having unrelated layouts and lifetimes":
    u lives from its write (step 0) to its last read (step 1); w, written later, may take its
    register, not while u is live.  Initial values nobody reads occupy nothing."""
    prog = B.program(B.seq(B.parallel([("i", P)], B.op("u[i] = x[i] + 1")),
                           B.parallel([("i", P)], B.op("z[i] = u[i] * 3")),
                           B.parallel([("i", P)], B.op("w[i] = x[i] - 1"))),
                     arrays={"x": B.array([P], init=X), "u": B.array([P], fill=0), "z": B.array([P], fill=0),
                             "w": B.array([P], fill=0)})
    evs = source_events(prog)
    part = [[e.ordinal for e in evs if e.path.startswith(f"$.body.seq[{k}]")] for k in range(3)]
    own = lambda v: Distribution(v, FiniteDomain([("p", P), ("s", 1)]), IndexMap(("p", "s"), ["p"]))  # noqa: E731
    phases = [Phase(f"$.body.seq[{k}]", IndexMap(("i",), ["i"])) for k in range(3)]
    reg = ResourceMap("reg", ("u", "w"), IndexMap(("p", "v"), ["p"]), IndexMap(("s",), ["0"]))
    placement = Placement([own("u"), own("w")], phases, [reg])
    assert check_plan(prog, Plan([Step("parallel", part[0]), Step("parallel", part[1]), Step("parallel", part[2])],
                                 placement=placement))
    v = check_plan(prog, Plan([Step("parallel", part[0]), Step("parallel", part[1] + part[2])], placement=placement))
    assert v.obligation == "lifetimes do not collide" and "holds u participant [0] slot [0] (steps 0..1)" in v.detail


# ---- relations and bridges -------------------------------------------------------------------

def test_the_relation_keeps_replicas_and_composes():
    L = relation(HALO)
    assert len(L) == 8 and L.image((1,), 1) == {(1, 0), (0, 1)}            # y[1] lives on participants 1 and 0
    brute = {((p + s) % P, p, s) for p, s in itertools.product(range(P), range(2))}
    assert L.rows == frozenset(brute)
    owners = Relation((p, p * 10) for p in range(P))                       # participant -> its group
    comp = L.project((0, 1)).compose(owners, 1, 1)
    assert comp.rows == frozenset((e, p * 10) for e, p, _ in brute)
    assert L.restrict(lambda r: r[2] == 0).rows == frozenset(r for r in brute if r[2] == 0)


def test_bridge_compatibility_is_a_relation_check():
    assert check_bridge(HALO, sorted(relation(HALO).rows))
    inverse = {e: (e, 0) for e in range(P)}                                 # loses the halo replicas
    v = check_bridge(HALO, inverse)
    assert v.obligation == "replicas kept" and "2 copies" in v.detail
    assert check_bridge(OWNER, {(e,): (e, 0) for e in range(P)})
    v = check_bridge(HALO, sorted(relation(HALO).rows)[:-1])
    assert v.obligation == "same active pairs" and "misses" in v.detail
    res = ResourceMap("smem", ("y",), IndexMap(("p", "v"), ["p"]), IndexMap(("s",), ["s * 4"]))
    theirs = {((p,), (s,)): ((p,), (s * 4,)) for p in range(P) for s in range(2)}
    assert check_bridge(HALO, sorted(relation(HALO).rows), resources=[res], adapter_resources=theirs)
    theirs[((2,), (1,))] = ((2,), (1,))
    v = check_bridge(HALO, sorted(relation(HALO).rows), resources=[res], adapter_resources=theirs)
    assert v.obligation == "resource instance and offset" and "participant [2] slot [1]" in v.detail
    assert check_bridge(HALO, 5).obligation == "well-typed witness"


def test_the_derivation_records():
    from emulator.calculus.placement import derivation
    prog = neighbor_program()
    plan = plan_for(prog, Placement([HALO], PHASES, transfers=[Transfer("y", 0, 1, COPY_IN)]))
    d = derivation(prog, plan, source_events(prog))
    assert d["E"][0] == ("main", (0,), 0) and d["E"][7] == ("main", (3,), 1)     # E_p: phase B's last instance
    assert d["L"]["y"] == relation(HALO)
    assert d["C"]["y"][0] == (((1,), (0,)), ((0,), (1,)), 0, 1)


# ---- several reads of one distributed array in one operation (issue 26 item 11) -------------
# Seed 002: "each use observes its reaching value"; "Copies/repartitioning implement mismatched
# producer and consumer distributions".  A use is one read of the op, not the array: in
# `z[p] = y[p] * 100 + y[p + 2]` the two reads of y may have different reaching definitions on
# one participant, and each must find its own in a local slot.  (The check kept one reaching
# value per (event, array), so the second read's replaced the first's.)
#
# Every program below: phase A (events 0..3) runs y[i] = x[i] * 2 on participant i, so with
# x = [3, 1, 4, 1] it writes y[0..3] = 6, 2, 8, 2 (event i defines y[i]); phase B (events 4..7)
# runs one op with several reads of y on participant p.  y's other elements keep their
# distinct initial values (50, 60, ...), never written, so their reaching definition is the
# initial value.  The reference is a distributed run written here (`local_run`): local slots
# laid out by delta_y, owner writes, copies, then each participant reads only its own slots.
# An admitted plan must give the interpreter's z; a refused one must not.

Y0 = [0, 0, 0, 0, 50, 60, 70, 80]


def reads_program(op):
    return B.program(B.seq(B.parallel([("i", P)], B.op("y[i] = x[i] * 2")), B.parallel([("p", P)], B.op(op))),
                     arrays={"x": B.array([P], init=X), "y": B.array([8], init=Y0), "z": B.array([P], fill=0)})


READ_PHASES = [Phase("$.body.seq[0]", IndexMap(("i",), ["i"])), Phase("$.body.seq[1]", IndexMap(("p",), ["p"]))]


def local_run(delta, slots, copies, reads, combine):
    """Slot (p, s) holds element delta(p, s) of y, starting at its initial value; participant i
    writes 2 x[i] into each of its slots of y[i]; `copies` ((src p, s), (dst p, s)) then move
    contents; participant p reads element r(p) of each read r from a slot of its own (None where
    it has none) and computes combine(values)."""
    mem = {(p, s): Y0[delta(p, s)] for p in range(P) for s in range(slots)}
    for p in range(P):
        for s in range(slots):
            if delta(p, s) == p:
                mem[(p, s)] = X[p] * 2
    for (sp, ss), (dp, ds) in [((a, b), (c, d)) for ((a,), (b,)), ((c,), (d,)) in copies]:
        mem[(dp, ds)] = mem[(sp, ss)]
    out = []
    for p in range(P):
        vals = []
        for r in reads:
            held = [s for s in range(slots) if delta(p, s) == r(p)]
            if not held:
                return None
            vals.append(mem[(p, held[0])])
        out.append(combine(*vals))
    return out


def copy_pairs(pairs):
    """[(src p, src s, dst p, dst s)] as Transfer pairs."""
    return [(((a,), (b,)), ((c,), (d,))) for a, b, c, d in pairs]


def verdict(op, delta_text, delta, slots, pairs, reads, combine, landing=1):
    prog = reads_program(op)
    evs = source_events(prog)
    a = [e.ordinal for e in evs if e.path.startswith("$.body.seq[0]")]
    b = [e.ordinal for e in evs if e.path.startswith("$.body.seq[1]")]
    dist = Distribution("y", FiniteDomain([("p", P), ("s", slots)]), IndexMap(("p", "s"), [delta_text]))
    transfers = [Transfer("y", 0, landing, copy_pairs(pairs))] if pairs else []
    v = check_plan(prog, Plan([Step("parallel", a), Step("parallel", b)],
                              placement=Placement([dist], READ_PHASES, transfers=transfers)))
    want = run(prog).arrays["z"]
    got = local_run(delta, slots, copy_pairs(pairs) if landing == 1 else [], reads, combine)
    assert bool(v) == (got == list(want)), (v, got, want)
    return v, list(want)


# z[p] = y[p] * 100 + y[p + 2]: slot (p, 0) holds y[p], slot (p, 1) holds y[p + 2].  Participants
# 0 and 1 need y[2], y[3], written by events 2, 3 on participants 2, 3: copies (2,0) -> (0,1) and
# (3,0) -> (1,1).  Participants 2 and 3 read y[4], y[5], never written: their initial 50, 60 in
# slot 1 are the reaching values.  z = [6*100 + 8, 2*100 + 2, 8*100 + 50, 2*100 + 60].
TWO = ("z[p] = y[p] * 100 + y[p + 2]", "p + 2 * s", lambda p, s: p + 2 * s, 2,
       [lambda p: p, lambda p: p + 2], lambda u, w: u * 100 + w)
TWO_COPIES = [(2, 0, 0, 1), (3, 0, 1, 1)]


def test_two_reads_of_one_array_each_observe_their_reaching_value():
    op, text, delta, slots, reads, combine = TWO
    v, z = verdict(op, text, delta, slots, TWO_COPIES, reads, combine)
    assert v, v                                      # refused before: y[p]'s reach was y[p + 2]'s
    assert z == [608, 202, 850, 260]
    # without copies participant 0's slot 1 still holds y[2]'s initial value, not event 2's
    v, _ = verdict(op, text, delta, slots, [], reads, combine)
    assert v.obligation == "each use observes its reaching value"
    assert "(p=0) on participant [0] reads y[2] in step 1: participant [0] slot [1] holds the initial value, " \
           "but its reaching definition is that of event 2" in v.detail
    # the copy to participant 0 alone: participant 1's second read misses event 3's y[3]
    v, _ = verdict(op, text, delta, slots, TWO_COPIES[:1], reads, combine)
    assert v.obligation == "each use observes its reaching value" and "participant [1] reads y[3]" in v.detail
    # a copy that lands a step late: y[2] is read before it arrives
    v, _ = verdict(op, text, delta, slots, TWO_COPIES, reads, combine, landing=2)
    assert v.obligation == "copies published before use" and "reads y[2] in step 1" in v.detail


# z[p] = y[p] * 100 + y[p + 1] * 10 + y[p + 2]: slot (p, s) holds y[p + s].  Copies: y[p + 1] into
# (p, 1) for p = 0, 1, 2 from (p + 1, 0); y[p + 2] into (p, 2) for p = 0, 1 from (p + 2, 0).
# (3, 1) holds y[4] and (2, 2), (3, 2) hold y[4], y[5]: initial, reaching as they are.
# y = [6, 2, 8, 2, 50, 60]: z = [628, 282, 870, 760].
THREE = ("z[p] = y[p] * 100 + y[p + 1] * 10 + y[p + 2]", "p + s", lambda p, s: p + s, 3,
         [lambda p: p, lambda p: p + 1, lambda p: p + 2], lambda u, v, w: u * 100 + v * 10 + w)
THREE_COPIES = [(1, 0, 0, 1), (2, 0, 1, 1), (3, 0, 2, 1), (2, 0, 0, 2), (3, 0, 1, 2)]


def test_three_reads_of_one_array_each_observe_their_reaching_value():
    op, text, delta, slots, reads, combine = THREE
    v, z = verdict(op, text, delta, slots, THREE_COPIES, reads, combine)
    assert v, v
    assert z == [628, 282, 870, 760]
    # each copy is needed by exactly one read: dropping one names that read's element and slot
    for drop, (part, elem, slot, event) in zip(range(5), [(0, 1, 1, 1), (1, 2, 1, 2), (2, 3, 1, 3),
                                                          (0, 2, 2, 2), (1, 3, 2, 3)]):
        v, _ = verdict(op, text, delta, slots, THREE_COPIES[:drop] + THREE_COPIES[drop + 1:], reads, combine)
        assert v.obligation == "each use observes its reaching value", (drop, v)
        assert f"on participant [{part}] reads y[{elem}] in step 1: participant [{part}] slot [{slot}] holds the " \
               f"initial value, but its reaching definition is that of event {event}" in v.detail, (drop, v)


# The lost read could also admit a wrong plan: z[p] = y[(p + 1) % 4] * 100 + y[(p + 2) % 4 + 4].
# Slot 0 holds y[p] (owner), slot 1 y[(p + 1) % 4], slot 2 y[(p + 2) % 4 + 4] (initial 50..80).
# The first read needs event (p + 1) % 4's y, copied from ((p + 1) % 4, 0) into (p, 1); the
# second reads an initial value in place.  Without the copies the first read sees y's initial
# 0s (z = [70, 80, 50, 60]), but the check compared it with the second read's reaching value
# (the initial value) and admitted the plan.  Correct: z = [270, 880, 250, 660].
STALE = ("z[p] = y[(p + 1) % 4] * 100 + y[(p + 2) % 4 + 4]", "(p + s) % 4 + 2 * s * (s - 1)",
         lambda p, s: (p + s) % 4 + 2 * s * (s - 1), 3, [lambda p: (p + 1) % 4, lambda p: (p + 2) % 4 + 4],
         lambda u, w: u * 100 + w)


def test_a_first_read_that_misses_its_copy_is_refused_even_when_the_second_read_is_satisfied():
    op, text, delta, slots, reads, combine = STALE
    copies = [((p + 1) % P, 0, p, 1) for p in range(P)]
    v, z = verdict(op, text, delta, slots, copies, reads, combine)
    assert v and z == [270, 880, 250, 660]
    v, _ = verdict(op, text, delta, slots, [], reads, combine)
    assert v.obligation == "each use observes its reaching value"
    assert "(p=0) on participant [0] reads y[1] in step 1: participant [0] slot [1] holds the initial value, " \
           "but its reaching definition is that of event 1" in v.detail


# Aliased reads.  z[p] = y[p] * y[p]: both reads are one cell with one reaching definition, the
# owner's write (z = [36, 4, 64, 4]).  z[p] = y[p] * 100 + y[p - p % 2]: on even p the reads
# alias (y[p] twice); on odd p the second is y[p - 1], participant p - 1's.  delta(p, s) =
# p - s * (p % 2): an even participant holds y[p] in both slots (a replica the owner's write
# updates in both), an odd one y[p - 1] in slot 1, copied from (p - 1, 0).
# y = [6, 2, 8, 2]: z = [606, 206, 808, 208].
SQUARE = ("z[p] = y[p] * y[p]", "p", lambda p, s: p, 1, [lambda p: p, lambda p: p], lambda u, w: u * w)
PAIRS = ("z[p] = y[p] * 100 + y[p - p % 2]", "p - s * (p % 2)", lambda p, s: p - s * (p % 2), 2,
         [lambda p: p, lambda p: p - p % 2], lambda u, w: u * 100 + w)


def test_aliased_reads_of_one_cell_and_of_a_replica():
    op, text, delta, slots, reads, combine = SQUARE
    v, z = verdict(op, text, delta, slots, [], reads, combine)
    assert v and z == [36, 4, 64, 4]
    op, text, delta, slots, reads, combine = PAIRS
    v, z = verdict(op, text, delta, slots, [(0, 0, 1, 1), (2, 0, 3, 1)], reads, combine)
    assert v and z == [606, 206, 808, 208]
    v, _ = verdict(op, text, delta, slots, [(0, 0, 1, 1)], reads, combine)
    assert v.obligation == "each use observes its reaching value"
    assert "on participant [3] reads y[2] in step 1: participant [3] slot [1] holds the initial value, but its " \
           "reaching definition is that of event 2" in v.detail
