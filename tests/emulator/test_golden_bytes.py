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
