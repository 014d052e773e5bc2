"""A golden dataset's data files are the same bytes release to release: the SHA-256 of every
file of three seeded runs, recorded from main at f7424f4 (before issue 32's single-block
generation work) with

    tile-emu golden --ops TADD --dtypes FP16 --cases 1500 --seed 1
    tile-emu golden --ops TCVT --dtypes FP32 --dst-dtypes E4M3 --rmodes RNE --sat 1 --cases 300 --seed 1
    tile-emu golden --ops TIMG2COL,TEXTRACT,TSEL --dtypes FP16 --cases 200 --seed 2

(illegal classes, a file past one Arrow chunk, TCVT's DATR, feature maps, GPR offsets, predicate
sources).  A Parquet file names the writer that made it (created_by, pyarrow's version) and its
pages are zstd's output, so the digests hold for the pyarrow they were recorded with; another
pyarrow skips the test rather than blame the generator."""
import hashlib
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from emulator.cli import main

PYARROW = "26.0.1"
RUNS = {
    "add": (["--ops", "TADD", "--dtypes", "FP16", "--cases", "1500", "--seed", "1"], {
        "op=TADD/dtype=FP16/part-00000.parquet": "c4b6e837f6e8d1372e1439a2b25ecd25a154c9b40e2fd5e4d022e78036b64433"}),
    "cvt": (["--ops", "TCVT", "--dtypes", "FP32", "--dst-dtypes", "E4M3", "--rmodes", "RNE", "--sat", "1",
             "--cases", "300", "--seed", "1"], {
        "op=TCVT/dtype=FP32/dst=E4M3/rmode=RNE/sat=1/part-00000.parquet":
            "7fa4fed8317536dc5d2406a818a03e60e8ad35722d18156e1229b1d64cc3a70c"}),
    "windows": (["--ops", "TIMG2COL,TEXTRACT,TSEL", "--dtypes", "FP16", "--cases", "200", "--seed", "2"], {
        "op=TEXTRACT/dtype=FP16/part-00000.parquet": "2b540c9acbcae77e06556a86c82a08fa8116e2727b542f1afd301a7638618f43",
        "op=TIMG2COL/dtype=FP16/part-00000.parquet": "1a8bb5e0e86120b424b0f99e65e88f46eca4a7c28bc132d19216d439f5f68052",
        "op=TSEL/dtype=FP16/part-00000.parquet": "e0567213720c65d631499c0bdeae5f8c5bbcf8d848885a8b43a46437aa6f9861"}),
}


@pytest.mark.skipif(pa.__version__ != PYARROW, reason=f"digests recorded with pyarrow {PYARROW}")
@pytest.mark.parametrize("run", sorted(RUNS))
def test_seeded_runs_write_the_recorded_bytes(run, tmp_path):
    args, want = RUNS[run]
    assert main(["golden", *args, "--quiet", "--out", str(tmp_path / run)]) == 0
    got = {p.relative_to(tmp_path / run).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
           for p in sorted((tmp_path / run).rglob("*.parquet"))}
    assert got == want


# Stream goldens likewise, by content: the SHA-256 of each data file's table read back and written
# as an Arrow IPC stream, for two seeded stream runs recorded from main at a8cc9fb (before the
# stream builder's per-group bookkeeping was made cheaper) -- every shape class, an illegal
# share, a constraint with window sources, predicates and TCVT.  Not the files' own bytes: the
# Parquet dictionary page of a stream file's `layout` column may end in bytes pyarrow leaves
# uninitialized, which depend on the process's allocation history (docs/performance-history.md,
# the rejection pass measured), while every value is pinned here.
STREAM_RUNS = {
    "streams": (["--streams", "--blocks", "4", "--cases", "8", "--seed", "7"], {
        "blocks=4/shape=r1c8/part-00000.parquet": "f5948c1aa2dc6642f5ee513959f5df3b3a96398e3dac1946602b2e92a5ebe7dc",
        "blocks=4/shape=r2c3w8/part-00000.parquet": "cdf4c7251db2db37fabaee743bc3a792d21ba0dd53be9880303231bcd0c1d120",
        "blocks=4/shape=r3c1/part-00000.parquet": "af3e4e6e269464215fcb290111a1dd2564257df4d09d322f35d80e186bf8afa6",
        "blocks=4/shape=r4c8/part-00000.parquet": "0d3fb9895676cf310ca23282209b0d2cc87e4c15671b018f70cc64d7599c888e"}),
    "streams_constrained": (["--streams", "--blocks", "6", "--cases", "6", "--seed", "3",
                             "--ops", "TADD,TCVT,TEXTRACT,TSEL,TCMP", "--dtypes", "FP16,S16,FP32"], {
        "blocks=6/shape=r1c8/part-00000.parquet": "32cc51bfea1f17178091d4a7062be84768114e2f2f412f73c6ea929c5e02f8ea",
        "blocks=6/shape=r2c3w8/part-00000.parquet": "a3ca45cdf5c9a806a877de7b0d2e1009ec9b5264fb359ed3333b2ed06db12666",
        "blocks=6/shape=r3c1/part-00000.parquet": "d29d41b80cc0be4cfd0a870d493e62f4534b8ebfe5c5eb577a201c00c54f7eb1",
        "blocks=6/shape=r4c8/part-00000.parquet": "55454e29d8307286746cedab314282298f42eef4808f5e212586acac7d6a609c"}),
}


def table_digest(path: pathlib.Path) -> str:
    """The SHA-256 of the Parquet file's table as one Arrow IPC stream (its schema and values)."""
    table = pq.read_table(path)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


@pytest.mark.skipif(pa.__version__ != PYARROW, reason=f"digests recorded with pyarrow {PYARROW}")
@pytest.mark.parametrize("run", sorted(STREAM_RUNS))
def test_seeded_stream_runs_write_the_recorded_tables(run, tmp_path):
    args, want = STREAM_RUNS[run]
    out = tmp_path / run
    assert main(["golden", *args, "--quiet", "--out", str(out)]) == 0
    assert {p.relative_to(out).as_posix(): table_digest(p) for p in sorted(out.rglob("*.parquet"))} == want
