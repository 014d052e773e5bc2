"""A partition's illegal-class probes (dataset.probe) run their one case on the reference
Machine (issue 32 target 6: a MachineBatch each cost several ms a partition).  The verdict
must be the one the batch engine gives the same case: execute(g).reason[0]."""
from __future__ import annotations

import numpy as np
from isa import instructions as I
from isa.errors import EncodeError

from emulator.golden import coverage as C
from emulator.golden import dataset as D
from emulator.golden.cases import build_group, execute


def partitions():
    for op in I.INSTRUCTIONS:
        names = sorted(op.dtypes)
        for dt in {names[0], names[len(names) // 2], names[-1]}:
            yield from D.partitions(D.Params(ops=(op.mnemonic,), dtypes=(dt,), cases=1, seed=0,
                                             rmodes=("RTZ",), sat=(1,)))


def test_the_reference_probe_rejects_every_illegal_class_case_as_the_batch_engine_does():
    probed = rejected = 0
    for part in partitions():
        ctx = part.context()
        for cls in C.CLASSES:
            if cls.kind != "illegal" or not cls.applies(ctx):
                continue
            try:
                g = build_group(cls, ctx, 1, np.random.default_rng(0))
            except EncodeError:
                continue
            want = execute(g).reason[0]
            assert D.reference_reason(g) == want, (part.path, cls.name)
            probed += 1
            rejected += want == cls.reason
    assert probed > 500 and 0 < rejected < probed       # both verdicts were exercised
