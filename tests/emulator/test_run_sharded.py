"""Sharded batch runs (docs/machine.md, "Sharded runs"): `tile-emu run STREAM --init BATCH
--out FINAL --log LOG --workers N | --scheduler ADDRESS` writes the bytes, the messages and the
exit status of the same run in one process; each worker reads its own machines from the state
file (this process loads none); a shard that cannot be read names its machines and nothing is
written; the option's bounds are one line each."""
from __future__ import annotations

import pathlib
import shutil

import pyarrow as pa
import pytest

from emulator import Machine
from emulator import batchio
from emulator.cli import main
from emulator.sharded import plan, run_shard
from isa import assemble

pytest.importorskip("distributed")
ROOT = pathlib.Path(__file__).resolve().parents[2]
GROUP = 4                                 # machines per record batch, for small test files


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """saxpy.tbs and a batch of 40 machines (saxpy.batch.arrow's 16, two and a half times; machine 5
    of each copy faults), written in record batches of GROUP machines."""
    d = tmp_path_factory.mktemp("sharded")
    (d / "saxpy.tbs").write_bytes(assemble((ROOT / "examples" / "saxpy.s").read_text()))
    machines = [Machine.from_state(s) for s in batchio.load_states(ROOT / "examples" / "saxpy.batch.arrow")]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batchio, "MACHINES_PER_BATCH", GROUP)
        batchio.save_machines((machines * 3)[:40], d / "batch.arrow")
    assert pa.ipc.open_file(d / "batch.arrow").num_record_batches == 10
    return d


def _run(d, capsys, *extra, out="final.arrow", log="final.commits.arrow"):
    rc = main(["run", str(d / "saxpy.tbs"), "--init", str(d / "batch.arrow"), "--out", str(d / out),
               "--log", str(d / log), *extra])
    return rc, capsys.readouterr()


@pytest.fixture(scope="module")
def one_process(files):
    """The run in one process (and its messages), with the test's record batches."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batchio, "MACHINES_PER_BATCH", GROUP)
        rc = main(["run", str(files / "saxpy.tbs"), "--init", str(files / "batch.arrow"),
                   "--out", str(files / "one.arrow"), "--log", str(files / "one.jsonl")])
    return rc


def _same_messages(a: str, b: str, d) -> None:
    assert a.replace("one.arrow", "X") == b.replace("two.arrow", "X")


def test_two_workers_write_the_bytes_messages_and_status_of_one_process(files, one_process, capfd, monkeypatch):
    monkeypatch.setattr(batchio, "MACHINES_PER_BATCH", GROUP)
    capfd.readouterr()
    main(["run", str(files / "saxpy.tbs"), "--init", str(files / "batch.arrow"), "--out", str(files / "one.arrow"),
          "--log", str(files / "one.jsonl")])
    want = capfd.readouterr().err
    # this process may not load a machine: the workers (other processes) read their shards
    monkeypatch.setattr(batchio.StateFile, "state", lambda *a, **k: pytest.fail("the coordinator loaded a machine"))
    rc = main(["run", str(files / "saxpy.tbs"), "--init", str(files / "batch.arrow"), "--out", str(files / "two.arrow"),
               "--log", str(files / "two.jsonl"), "--workers", "2"])
    got = capfd.readouterr().err
    assert rc == one_process == 1                     # machine 5 of each copy faults, the rest run on
    _same_messages(want, got, files)
    assert got.count("SOURCE_UNDEFINED") == 3
    assert (files / "two.arrow").read_bytes() == (files / "one.arrow").read_bytes()
    assert (files / "two.jsonl").read_bytes() == (files / "one.jsonl").read_bytes()
    assert main(["verify", str(files / "two.jsonl")]) == 0


def test_an_existing_scheduler_runs_the_shards_too(files, one_process, monkeypatch, capsys):
    from distributed import LocalCluster
    monkeypatch.setattr(batchio, "MACHINES_PER_BATCH", GROUP)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        rc = main(["run", str(files / "saxpy.tbs"), "--init", str(files / "batch.arrow"),
                   "--out", str(files / "sched.arrow"), "--log", str(files / "sched.commits.arrow"),
                   "--scheduler", cluster.scheduler_address, "-q"])
    assert rc == 1
    assert (files / "sched.arrow").read_bytes() == (files / "one.arrow").read_bytes()
    with pytest.MonkeyPatch.context() as mp:      # the Arrow log of one process, for comparison
        mp.setattr(batchio, "MACHINES_PER_BATCH", GROUP)
        main(["run", str(files / "saxpy.tbs"), "--init", str(files / "batch.arrow"),
              "--out", str(files / "one-b.arrow"), "--log", str(files / "one.commits.arrow"), "-q"])
    assert (files / "sched.commits.arrow").read_bytes() == (files / "one.commits.arrow").read_bytes()


def test_shards_are_whole_record_batches_at_most_four_a_worker():
    assert plan(40, 2, 4) == [(0, 4), (4, 8), (8, 12), (12, 20), (20, 24), (24, 28), (28, 32), (32, 40)]
    assert plan(40, 1, 1024) == [(0, 40)]
    for n, w, g in ((1, 1, 4), (4097, 3, 1024), (10, 16, 4)):
        shards = plan(n, w, g)
        assert shards[0][0] == 0 and shards[-1][1] == n and len(shards) <= 4 * w
        assert all(a[1] == b[0] for a, b in zip(shards, shards[1:])) and all(lo % g == 0 for lo, _ in shards)


def test_a_worker_loads_its_shards_machines_alone(files, monkeypatch):
    loaded = []
    real = batchio.StateFile.state
    monkeypatch.setattr(batchio.StateFile, "state", lambda self, k, *a, **kw: (loaded.append(k), real(self, k, *a, **kw))[1])
    res = run_shard(str(files / "batch.arrow"), 40, 8, 12, GROUP, (files / "saxpy.tbs").read_bytes(), "cpu", None,
                    False, False)
    assert loaded == [8, 9, 10, 11]
    assert len(res["pes"]) == 4 and [e[0] for e in res["errors"]] == []
    res = run_shard(str(files / "batch.arrow"), 40, 4, 8, GROUP, (files / "saxpy.tbs").read_bytes(), "cpu", None,
                    False, False)
    assert [e[0] for e in res["errors"]] == [5]       # machine ids are the batch's


def test_a_machine_damaged_in_the_state_file_names_its_shard_and_nothing_is_written(files, capsys, tmp_path,
                                                                                     monkeypatch):
    monkeypatch.setattr(batchio, "MACHINES_PER_BATCH", GROUP)
    src = files / "batch.arrow"
    reader = pa.ipc.open_file(src)
    batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
    b = batches[2]                                  # machines 8..11
    rows = b.column("machine").to_numpy()
    layout = b.column("layout").to_numpy().copy()
    layout[list(rows).index(9)] = 200               # no such Layout code
    batches[2] = b.set_column(b.schema.get_field_index("layout"), "layout", pa.array(layout, pa.uint8()))
    bad = tmp_path / "bad.arrow"
    with pa.OSFile(str(bad), "wb") as sink, pa.ipc.new_file(sink, reader.schema) as w:
        for x in batches:
            w.write_batch(x)
    rc = main(["run", str(files / "saxpy.tbs"), "--init", str(bad), "--out", str(tmp_path / "o.arrow"),
               "--log", str(tmp_path / "o.jsonl"), "--workers", "2"])      # 8 shards of 4 or 8 machines
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1, err
    assert "machines 8..11" in err and "machine 9" in err and "nothing written" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.arrow"]


@pytest.mark.parametrize("extra, status, words", [
    (["--workers", "0"], 2, "--workers 0: from 1 to"),
    (["--workers", "100000"], 2, "--workers 100000: from 1 to"),
    (["--workers", "1", "--scheduler", "tcp://127.0.0.1:9"], 2, "exclude each other"),
    (["--workers", "1", "--machine", "3"], 2, "not --machine K"),
    (["--workers", "1", "--timing"], 2, "--timing and --fabric run one machine"),
    (["--scheduler", "tcp://127.0.0.1:port"], 2, "not a Dask scheduler address"),
    (["--workers", "1", "--backend", "gpu"], 3, "--backend gpu: no usable GPU"),
])
def test_bad_sharding_options_are_one_line(files, capsys, extra, status, words, tmp_path):
    rc = main(["run", str(files / "saxpy.tbs"), "--init", str(files / "batch.arrow"),
               "--out", str(tmp_path / "o.arrow"), *extra])
    err = capsys.readouterr().err
    assert rc == status and err.count("\n") == 1 and words in err, err
    assert not (tmp_path / "o.arrow").exists()


def test_a_file_of_one_machine_is_not_sharded(files, capsys, tmp_path):
    shutil.copy(ROOT / "examples" / "saxpy.init.arrow", tmp_path / "one.arrow")
    rc = main(["run", str(files / "saxpy.tbs"), "--init", str(tmp_path / "one.arrow"), "--workers", "1"])
    assert rc == 2 and "holds one machine" in capsys.readouterr().err


def test_a_file_of_many_groups_is_written_one_record_batch_a_group_and_reads_back(files, tmp_path):
    machines = [Machine.from_state(s) for s in batchio.load_states(files / "batch.arrow")]
    batchio.save_machines(machines, tmp_path / "small.arrow")       # 40 <= 1024: one record batch
    assert pa.ipc.open_file(tmp_path / "small.arrow").num_record_batches == 1
    back = batchio.load_states(tmp_path / "small.arrow")
    grouped = batchio.load_states(files / "batch.arrow")
    assert [Machine.from_state(s).digest() for s in back] == [Machine.from_state(s).digest() for s in grouped]
