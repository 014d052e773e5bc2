"""Seed 000, "FU Templates And Explicit Topology": "Within one selected template and one exact
actor/op/port correspondence, the normalized semantic assignment is injective with respect to
the complete typed and attributed software graph.  Two valid assignments must not materialize
isomorphic configured functions; such a duplicate is a Fabric schema or verifier error, not an
enumerator deduplication opportunity."

A Finite relation's assignments are its canonical keys; the function a key materializes on the
resource is the set of exact admitted actors (each under its exact port correspondence) that
project to it.  The verifier checks that the keys partition the admitted image: every key
materializes an actor, no actor is materialized by two keys."""
import pathlib

import pytest

import fabric.relation as R
from fabric.errors import DiagnosticCode as C
from fabric.io import load
from fabric.relation import Behavior, Described
from fabric.verify import verify_op
from fabric_fixtures import make_op

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "fabric"


def addsub():
    return make_op("ScalarIntegerSaturatingAddSub", ["llvm.intr.sadd.sat", "llvm.intr.uadd.sat"],
                   {"integer_widths": [8, 16, 32]}, ["bits<32>", "bits<32>"], ["bits<32>"])


@pytest.fixture(autouse=True)
def cold_cache():
    R.clear_seal_cache()
    yield
    R.clear_seal_cache()


def test_every_shipped_finite_relation_partitions_its_admitted_image_by_key():
    for path in [EXAMPLES / n for n in ("alu.json", "loop.json", "mac.fabric.json", "sum-loop.fabric.json",
                                        "temporal.fabric.json")] + \
            [EXAMPLES.parents[1] / "emulator" / "pe.json"]:
        for op in load(path).all_ops():
            rel = R.derive_relation(op)
            if rel.kind != "Finite":
                continue
            classes: dict = {}
            for c in R.enumerate_image(op):        # the test projects every admitted actor itself
                classes.setdefault(rel.project(c.actor, c.corr), set()).add((c.actor, c.corr))
            assert sorted(classes) == sorted(rel.keys), (name, op.name)      # every key is materialized
            seen = [fn for fns in classes.values() for fn in fns]
            assert len(seen) == len(set(seen))                              # and by one key only


def test_a_row_keyed_on_something_outside_the_actor_makes_a_duplicate_a_verifier_error(monkeypatch):
    # a faulty family row: the enumerator reaches each actor twice and the describer tells the
    # two apart by a counter, not by the actor -- two keys, one configured function
    generate, calls = R.GENERATE["int_uniform"], {"n": 0}

    def twice(op, rec):
        for point in generate(op, rec):
            yield point
            yield point

    def by_counter(op, a, corr):
        calls["n"] += 1
        return Described(Behavior("Add", (("active_width", "width", 8 + calls["n"] % 2),)))

    monkeypatch.setitem(R.GENERATE, "int_uniform", twice)
    monkeypatch.setitem(R.DESCRIBE, "int_uniform", by_counter)
    diags = verify_op(addsub())
    assert [d.code for d in diags] == [C.DuplicateConfiguredFunction]
    assert "materialized by two semantic assignments" in diags[0].message


def test_a_key_that_materializes_no_admitted_actor_is_rejected(monkeypatch):
    build_cover = R.build_cover

    def with_a_spurious_assignment(family, described):
        return build_cover(family, described) + [Behavior("SignedAdd", (("active_width", "width", 64),))]

    monkeypatch.setattr(R, "build_cover", with_a_spurious_assignment)
    diags = verify_op(addsub())
    assert [d.code for d in diags] == [C.EmptyBehaviorImage]
    assert "materializes no admitted actor" in diags[0].message


def test_sync_permutations_are_one_assignment_not_two_isomorphic_ones():
    # two lanes of one class: the embeddings [0, 1] and [1, 0] would be two assignments of one
    # function; the canonical embedding admits one of them and the sorted lane set keys it
    op = make_op("TokenSync", ["dataflow.sync"], {"max_payload_bits": 32, "max_fan": 2},
                 ["bits<32>", "bits<32>"], ["bits<32>", "bits<32>"])
    assert verify_op(op) == []
    rel = R.derive_relation(op)
    assert len(rel.keys) == len({rel.project(c.actor, c.corr) for c in R.enumerate_image(op)})
