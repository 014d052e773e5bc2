"""Small data files go through memory whole (issue 32 target 6): the generator writes a file's
Parquet bytes into a buffer and hashes them there; verify reads a file once and parses the
bytes it hashed.  Both must give what the path-based route gives: the same bytes written, the
same table read, the same refusal of a damaged file.  And the rows' byte columns, laid out
without NumPy calls per one-case group, hold each entry's bytes in case-major order."""
from __future__ import annotations

import hashlib

import numpy as np
import pyarrow.parquet as pq
import pytest

from emulator.golden import dataset as D
from emulator.golden import rows as R
from emulator.golden.replay import verify

PARAMS = D.Params(ops=("TDIV", "TCVT"), dtypes=("FP16",), cases=12, seed=5, rmodes=("RTZ",), sat=(0,))


def generate(folder) -> None:
    records = [D.write_chunk(str(folder), PARAMS.to_json(), vars(pt), ch, k) for pt, ch, k in D.chunks(PARAMS)]
    D.write_json(D.store.location(str(folder)) / D.MANIFEST, D.manifest(PARAMS, records))


def test_a_small_file_written_through_memory_has_the_bytes_the_writer_gives_a_path(tmp_path):
    part = D.partitions(PARAMS)[0]
    table = D.chunk_table(PARAMS, part, 0, PARAMS.cases, one_chunk=True)
    pq.write_table(table, tmp_path / "by-path.parquet", **D.PARQUET_OPTIONS)
    data = D._write_parquet(table, str(tmp_path / "by-memory.parquet"))
    want = (tmp_path / "by-path.parquet").read_bytes()
    assert data == want and (tmp_path / "by-memory.parquet").read_bytes() == want
    rec = D.local_record(tmp_path / "by-memory.parquet", "x", None, table, data)
    assert rec["sha256"] == hashlib.sha256(want).hexdigest() and rec["bytes"] == len(want)


def test_datasets_written_through_memory_and_through_paths_are_byte_identical(tmp_path, monkeypatch):
    generate(tmp_path / "memory")
    monkeypatch.setattr(D, "ONE_READ_BYTES", -1)          # every file through its path
    generate(tmp_path / "path")
    files = sorted(p.relative_to(tmp_path / "memory") for p in (tmp_path / "memory").rglob("*") if p.is_file())
    assert len(files) > 2
    for f in files:
        assert (tmp_path / "memory" / f).read_bytes() == (tmp_path / "path" / f).read_bytes(), f


@pytest.mark.parametrize("one_read", [True, False])
def test_verify_reads_a_file_alike_through_memory_and_through_its_path(tmp_path, monkeypatch, one_read):
    if not one_read:
        monkeypatch.setattr(D, "ONE_READ_BYTES", -1)
    generate(tmp_path)
    ds = D.open_dataset(tmp_path)
    f = ds.files[0]
    assert ds.read(f).equals(pq.read_table(tmp_path / f.record["path"]))
    rows, bad = verify(ds)
    assert rows == PARAMS.cases * len(D.partitions(PARAMS)) and bad == []
    path = tmp_path / f.record["path"]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01                             # same size, one bit changed
    path.write_bytes(bytes(data))
    with pytest.raises(D.GoldenError, match="SHA-256 differs from the manifest"):
        D.open_dataset(tmp_path)


def expected_binary(groups) -> list[bytes]:
    """Each entry's bytes, built entry by entry: a group's cases in order, then its chunks,
    then the entries of a chunk."""
    out = []
    for n, chunks in groups:
        for case in range(n):
            for c in chunks:
                out += [bytes(c[case, j]) for j in range(c.shape[1])]
    return out


def test_the_byte_columns_hold_each_entry_case_major_whatever_the_group_sizes():
    rng = np.random.default_rng(11)
    for trial in range(30):
        groups = []
        for _ in range(int(rng.integers(0, 7))):
            n = int(rng.choice([1, 1, 1, 2, 5]))      # a group holds at least one case
            chunks = [rng.integers(0, 256, (n, int(rng.integers(0, 4)), int(rng.integers(0, 9))), dtype=np.uint8)
                      for _ in range(int(rng.integers(0, 4)))]
            groups.append((n, chunks))
        assert R._binary(groups).to_pylist() == expected_binary(groups), trial
