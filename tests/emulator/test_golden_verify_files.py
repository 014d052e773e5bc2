"""verify's whole-file replay (issue 32 target 6): what every group of a file shares is read
once a file (rebuild_file) and groups of one block run as one batch.  The reference is
rebuild_group run on each group's rows alone and each group executed on its own."""
from __future__ import annotations

import numpy as np

from emulator.golden import dataset as D
from kernels.numeric.profiles import profile as numeric_profile
from emulator.golden import replay as R
from emulator.golden.cases import execute
from emulator.golden.rows import groups_columns

# single-block ops of every kind the replay rebuilds: numeric, conversion, GPR offsets (TEXTRACT)
PARAMS = D.Params(ops=("TDIV", "TCVT", "TEXTRACT"), dtypes=("FP16", "S16"), cases=60, seed=3,
                  rmodes=("RTZ",), sat=(0,))


def tables():
    for part in D.partitions(PARAMS):
        yield part, D.chunk_table(PARAMS, part, 0, PARAMS.cases, one_chunk=True)


def same_group(a, b) -> bool:
    if (a.block, a.config, a.gprs is None) != (b.block, b.config, b.gprs is None):
        return False
    if a.gprs is not None and not np.array_equal(a.gprs, b.gprs):
        return False
    return len(a.tiles) == len(b.tiles) and all(
        (x.tile, x.desc, x.pes) == (y.tile, y.desc, y.pes) and np.array_equal(x.elems, y.elems)
        and x.elems.dtype == y.elems.dtype and np.array_equal(x.defined, y.defined)
        for x, y in zip(a.tiles, b.tiles))


def test_a_file_rebuilds_into_the_groups_its_rows_give_one_group_at_a_time(tmp_path):
    ds = D.Dataset(tmp_path, {}, numeric_profile(PARAMS.profile), PARAMS, (), {}, ())
    seen_gprs = False
    for part, t in tables():
        runs = R._runs(t.column("group").to_numpy())
        whole = R.rebuild_file(t, ds, runs, R.FileTiles(t.column("inputs")))
        alone = [R.rebuild_group(t.slice(lo, hi - lo), ds, part.path) for lo, hi in runs]
        assert whole is not None and len(whole) == len(alone) > 1, part.path
        assert all(same_group(a, b) for a, b in zip(whole, alone)), part.path
        seen_gprs |= any(g.gprs is not None for g in whole)
    assert seen_gprs                                    # the GPR column was exercised


def test_the_whole_file_replay_gives_the_stored_rows_and_each_groups_own_run(tmp_path):
    ds = D.Dataset(tmp_path, {}, numeric_profile(PARAMS.profile), PARAMS, (), {}, ())
    for part, t in tables():
        runs = R._runs(t.column("group").to_numpy())
        groups = R.rebuild_file(t, ds, runs, R.FileTiles(t.column("inputs")))
        alone = groups_columns([(g, execute(g)) for g in groups])
        for name in t.column_names:
            if name not in R.NOT_REPLAYED:
                assert t.column(name).combine_chunks().equals(alone[name]), (part.path, name)


def test_rows_that_do_not_share_a_stream_or_store_size_do_not_rebuild_as_one_group(tmp_path):
    ds = D.Dataset(tmp_path, {}, numeric_profile(PARAMS.profile), PARAMS, (), {}, ())
    part, t = next(tables())
    runs = R._runs(t.column("group").to_numpy())
    stream = t.column("stream").to_pylist()
    i = next(i for i in range(len(runs) - 1) if stream[runs[i][0]] != stream[runs[i + 1][0]])
    merged = runs[:i] + [(runs[i][0], runs[i + 1][1])] + runs[i + 2:]     # two groups' rows claimed as one
    lo, hi = merged[i]
    assert R.rebuild_group(t.slice(lo, hi - lo), ds, part.path) is None
    assert R.rebuild_file(t, ds, merged, R.FileTiles(t.column("inputs"))) is None
    assert R.rebuild_file(t.slice(0, 0), ds, [(0, 0)], R.FileTiles(t.slice(0, 0).column("inputs"))) is None


def test_a_file_whose_groups_rebuild_is_well_formed_and_a_malformed_row_is_named(tmp_path):
    import pyarrow as pa
    import pytest

    from emulator.golden.rows import SCHEMA
    ds = D.Dataset(tmp_path, {}, numeric_profile(PARAMS.profile), PARAMS, (), {}, ())
    part, t = next(tables())
    R.require_well_formed(t, ds, part.path)             # every group rebuilds: nothing to say
    rows = t.to_pylist()
    bad = len(rows) // 2
    rows[bad]["inputs"][0]["payload"] = rows[bad]["inputs"][0]["payload"][:-1]   # a tile one byte short
    broken = pa.Table.from_pylist(rows, schema=SCHEMA)
    with pytest.raises(D.GoldenError, match=f"^{part.path}: case {rows[bad]['case']}: a malformed row"):
        R.require_well_formed(broken, ds, part.path)


def test_runs_are_alike_where_their_rows_hold_the_first_rows_tile_descriptors():
    rng = np.random.default_rng(5)
    for part, t in tables():
        inputs = t.column("inputs").to_pylist()
        fields = [k for k in inputs[0][0] if k not in ("payload", "defined")]

        def naive(lo, hi) -> bool:
            head = inputs[lo]
            return all(len(inputs[r]) == len(head) and all(
                {k: str(e[k]) for k in fields} == {k: str(h[k]) for k in fields}
                for e, h in zip(inputs[r], head)) for r in range(lo, hi))
        for _ in range(5):                      # random runs over the file, some across groups
            cuts = np.unique(rng.integers(1, len(t), rng.integers(1, 8)))
            edges = [0, *cuts.tolist(), len(t)]
            runs = list(zip(edges[:-1], edges[1:]))
            got = R.FileTiles(t.column("inputs")).alike(runs)
            assert got.tolist() == [naive(lo, hi) for lo, hi in runs], part.path
