"""Single-block golden files of many small groups (issue 32 target 6): groups that run the same
block run as one batch, and a small file reaches the Parquet writer as one chunk; neither may
change a byte.  The references are each group run on its own and the file laid out one chunk a
group (what the generator did before)."""
from __future__ import annotations

import io

import numpy as np
import pyarrow.parquet as pq

from emulator.golden import closure
from emulator.golden import dataset as D
from emulator.golden.cases import execute, execute_all

PARAMS = D.Params(ops=("TDIV", "TCVT"), dtypes=("FP16", "S16"), cases=40, seed=7, rmodes=("RTZ",), sat=(1,))


def partition_groups(part):
    ctx, pts, rng = part.context(), D.points_for(part), D._rng(PARAMS.seed, part, 0)
    config = D.machine_config(PARAMS)
    return [D.build_group(pt.cls, ctx, count, rng, config, pt.bin)
            for pt, count in zip(pts, closure.counts(pts, 0, PARAMS.cases, False).tolist()) if count]


def same_outcome(a, b) -> bool:
    fields = ("committed", "reason", "field", "message", "elems", "defined", "status")
    return (a.dest == b.dest and a.pes == b.pes
            and all(np.array_equal(getattr(a, f), getattr(b, f)) and getattr(a, f).dtype == getattr(b, f).dtype
                    for f in fields))


def test_groups_run_together_give_each_groups_own_outcome():
    for part in D.partitions(PARAMS):
        groups = partition_groups(part)
        alone = [execute(g) for g in groups]
        for limit in (4096, 2):                     # one batch a block, or batches of at most 2 cases
            together = execute_all(groups, limit=limit)
            assert all(same_outcome(a, b) for a, b in zip(together, alone)), (part.path, limit)


def parquet_bytes(table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, **D.PARQUET_OPTIONS)
    return buf.getvalue()


def test_a_small_file_is_one_chunk_with_the_bytes_of_one_chunk_a_group():
    for part in D.partitions(PARAMS):
        per_group = D.chunk_table(PARAMS, part, 0, PARAMS.cases)
        group = per_group.column("group").to_numpy()
        assert per_group.column("case").num_chunks == len(np.unique(group)) > 1     # a chunk a group
        table = D.chunk_table(PARAMS, part, 0, PARAMS.cases, one_chunk=True)
        assert table.column("case").num_chunks == 1
        assert parquet_bytes(table) == parquet_bytes(per_group), part.path
