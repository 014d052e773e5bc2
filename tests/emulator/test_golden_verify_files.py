"""verify's whole-file replay (issue 32 target 6): what every group of a file shares is read
once a file (rebuild_file) and groups of one block run as one batch.  The reference is
rebuild_group run on each group's rows alone and each group executed on its own."""
from __future__ import annotations

import numpy as np

from emulator.golden import coverage as C
from emulator.golden import dataset as D
from emulator.golden import replay as R
from emulator.golden.cases import execute
from emulator.golden.rows import groups_columns
from kernels.numeric.profiles import profile as numeric_profile

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


def _first_class_fault(rows: list[dict], order: list[str], applicable: dict) -> str | None:
    """The spec sentence, row by row: the first class in `order` (the file's class counts) that
    the partition cannot have, or that has a row whose outcome -- and for an illegal class,
    reason -- is not the class's, named at its first such row."""
    for name in order:
        mine = [r for r in rows if r["class"] == name]
        if name not in applicable:
            return f"case {mine[0]['case']}: class '{name}' " + ("is not one the partition can have"
                                                                if name in C.BY_NAME else "is unknown")
        cls = applicable[name]
        want = "reject" if cls.kind == "illegal" else "commit"
        for r in mine:
            if r["outcome"] != want or (cls.kind == "illegal" and r["reason"] != cls.reason):
                return f"case {r['case']}: class {name} expects " + (
                    f"reject with {cls.reason}" if cls.kind == "illegal" else "commit")
    return None


def test_the_first_row_against_its_class_is_named_as_the_row_by_row_reading_names_it(tmp_path):
    import pyarrow as pa

    from emulator.golden.rows import SCHEMA
    rng = np.random.default_rng(11)
    part, t = next(tables())
    applicable = {c.name: c for c in D.classes_for(part)[0]}
    others = ["bogus", next(c.name for c in C.CLASSES if c.name not in applicable)]
    clean = t.to_pylist()
    said = set()
    for trial in range(40):
        rows = [dict(r) for r in clean]
        for _ in range(rng.integers(0, 4)):           # a few rows edited: label, outcome or reason
            r = rows[rng.integers(len(rows))]
            what = rng.integers(4)
            if what == 0:
                r["class"] = others[rng.integers(2)]
            elif what == 1:
                r["class"] = list(applicable)[rng.integers(len(applicable))]
            elif what == 2 and r["outcome"] == "commit":
                r["outcome"] = "reject"
            elif r["outcome"] == "reject":
                r["reason"] = "DIM_ZERO" if r["reason"] != "DIM_ZERO" else "DTYPE_MISMATCH"
        table = pa.Table.from_pylist(rows, schema=SCHEMA)
        counts = {c["values"]: c["counts"] for c in table.column("class").value_counts().to_pylist()}
        rec = {"path": f"{part.path}/part-00000.parquet", "rows": len(rows), "sha256": "", "bytes": 0,
               "classes": counts}
        ds = D.Dataset(tmp_path, {}, numeric_profile(PARAMS.profile), PARAMS, (part,), {}, ())
        want = _first_class_fault(rows, list(counts), applicable)
        try:
            D._check_rows(ds, D.DataFile(part, 0, rec), table)
            got = None
        except D.GoldenError as exc:
            got = str(exc).split(": ", 1)[1]
        assert got == want, trial
        said.add(want and want.split(": ", 1)[1].split()[-1])
    assert len(said) >= 4             # clean files, unknown and foreign classes, wrong outcomes and reasons


def test_each_group_replays_to_its_own_batch_engine_outcome_whichever_path_it_takes(tmp_path):
    from emulator.golden.cases import REFERENCE_CASES
    ds = D.Dataset(tmp_path, {}, numeric_profile(PARAMS.profile), PARAMS, (), {}, ())
    small_rejects = 0
    for part, t in tables():
        runs = R._runs(t.column("group").to_numpy())
        groups = R.rebuild_file(t, ds, runs, R.FileTiles(t.column("inputs")))
        outcome = t.column("outcome").to_pylist()
        small_rejects += sum(hi - lo <= REFERENCE_CASES and set(outcome[lo:hi]) == {"reject"} for lo, hi in runs)
        for g, got in zip(groups, R.replay_groups(t, runs, groups, "cpu")):
            want = execute(g)
            assert (got.dest, got.pes) == (want.dest, want.pes), part.path
            for f in ("committed", "reason", "field", "message", "elems", "defined", "status"):
                a, b = getattr(got, f), getattr(want, f)
                assert a.dtype == b.dtype and np.array_equal(a, b), (part.path, f)
    assert small_rejects > 10                           # the reference path was taken
