"""Small groups of an illegal class (a partition's probes, and a small partition's one-case
groups) run on the reference Machine (cases.rejected_on_reference: issue 32 target 6, a
one-case MachineBatch costs several times more).  Where the reference rejects every case the
outcome must be the batch engine's for the same group, field for field; where it commits one,
the batch engine must commit it too."""
from __future__ import annotations

import numpy as np
from isa import instructions as I
from isa.errors import EncodeError

from emulator.golden import coverage as C
from emulator.golden import dataset as D
from emulator.golden.cases import build_group, execute, rejected_on_reference

FIELDS = ("committed", "reason", "field", "message", "elems", "defined", "status")


def partitions():
    for op in I.INSTRUCTIONS:
        names = sorted(op.dtypes)
        for dt in {names[0], names[len(names) // 2], names[-1]}:
            yield from D.partitions(D.Params(ops=(op.mnemonic,), dtypes=(dt,), cases=1, seed=0,
                                             rmodes=("RTZ",), sat=(1,)))


def test_the_reference_rejects_small_illegal_groups_exactly_as_the_batch_engine_does():
    rejected = committed = 0
    for part in partitions():
        ctx = part.context()
        for cls in C.CLASSES:
            if cls.kind != "illegal" or not cls.applies(ctx):
                continue
            for n, seed in ((1, 0), (3, 7)):
                try:
                    g = build_group(cls, ctx, n, np.random.default_rng(seed))
                except EncodeError:
                    continue
                want, got = execute(g), rejected_on_reference(g)
                if got is None:
                    assert want.committed.any(), (part.path, cls.name, n)
                    committed += 1
                    continue
                rejected += 1
                assert (got.dest, got.pes) == (want.dest, want.pes), (part.path, cls.name)
                for f in FIELDS:
                    a, b = getattr(got, f), getattr(want, f)
                    assert a.dtype == b.dtype and np.array_equal(a, b), (part.path, cls.name, f)
    assert rejected > 500 and committed > 0            # both ways were exercised


def test_a_probe_keeps_a_class_where_its_mutation_is_rejected_for_its_reason():
    for part in D.partitions(D.Params(ops=("TDIV", "TCVT"), dtypes=("FP16", "S16"), cases=1, seed=0,
                                      rmodes=("RNE",), sat=(0,))):
        ctx = part.context()
        for cls in C.CLASSES:
            if cls.kind != "illegal" or not cls.applies(ctx):
                continue
            try:
                g = build_group(cls, ctx, 1, np.random.default_rng(0))
            except EncodeError:
                assert not D.probe(cls, ctx)
                continue
            assert D.probe(cls, ctx) == (execute(g).reason[0] == cls.reason), (part.path, cls.name)
