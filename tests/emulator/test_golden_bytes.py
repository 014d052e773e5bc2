"""A golden dataset's data files are the same bytes release to release: the SHA-256 of every
file of three single-block seeded runs, recorded from main at f7424f4 (before issue 32's single-block
generation work) with

    tile-emu golden --ops TADD --dtypes FP16 --cases 1500 --seed 1
    tile-emu golden --ops TCVT --dtypes FP32 --dst-dtypes E4M3 --rmodes RNE --sat 1 --cases 300 --seed 1
    tile-emu golden --ops TIMG2COL,TEXTRACT,TSEL --dtypes FP16 --cases 200 --seed 2

(illegal classes, a file past one Arrow chunk, TCVT's DATR, feature maps, GPR offsets, predicate
sources).  A Parquet file names the writer that made it (created_by, pyarrow's version) and its
pages are zstd's output, so the digests hold for the pyarrow they were recorded with; another
pyarrow skips the test rather than blame the generator.  Two stream runs follow (RUNS, below)."""
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
    # Stream goldens: the SHA-256 of every data file of two seeded stream runs, recorded from
    # main at a8cc9fb (before the stream builder's per-group bookkeeping was made cheaper) -- every
    # shape class, an illegal share, a constraint with window sources, predicates and TCVT.  These are
    # the files' own bytes: since a stream file's `layout` dictionary holds each text once
    # (streams_dataset.layout_column), pyarrow never leaves a dictionary page part-written, so the
    # bytes no longer depend on the process's allocation history (tests/emulator/
    # test_golden_streams_layout.py).
    "streams": (["--streams", "--blocks", "4", "--cases", "8", "--seed", "7"], {
        "blocks=4/shape=r1c8/part-00000.parquet": "df0b7fe7efb2ee0ec9648a7ec4aa0c01d5349e9657544b5e14dac9560691fd2b",
        "blocks=4/shape=r2c3w8/part-00000.parquet": "9b0c4e69787ad54e5fc2b06935ea95e0d7cd077f13495a8fa056cb104793e0b1",
        "blocks=4/shape=r3c1/part-00000.parquet": "8cacc5fb63c9dda47a2e315e765116b42594469c40c20e3f2700978ccba6c1c4",
        "blocks=4/shape=r4c8/part-00000.parquet": "e8c3ccd5656c521c0deb6be15ff38a273a427d4807a1d91216c2c21db192879c"}),
    "streams_constrained": (["--streams", "--blocks", "6", "--cases", "6", "--seed", "3",
                             "--ops", "TADD,TCVT,TEXTRACT,TSEL,TCMP", "--dtypes", "FP16,S16,FP32"], {
        "blocks=6/shape=r1c8/part-00000.parquet": "478acd87b1db2e3349c60b2f3472227be24d5679fc190240a7201a15bdcc547a",
        "blocks=6/shape=r2c3w8/part-00000.parquet": "b4c478c2fbabf82fdac86a3fb82a5d4a3d3ef10d17f0e8d2907f171bf7d79a85",
        "blocks=6/shape=r3c1/part-00000.parquet": "6f87b61ab8b96bdcd474d5f7e0df022717602e01edebecd7a8a3a988f0cd1516",
        "blocks=6/shape=r4c8/part-00000.parquet": "2fe2431e2d9d07dabfd219be7d67917ddbab63aa14cb00010bad54e3d3f89b51"}),
}


@pytest.mark.skipif(pa.__version__ != PYARROW, reason=f"digests recorded with pyarrow {PYARROW}")
@pytest.mark.parametrize("run", sorted(RUNS))
def test_seeded_runs_write_the_recorded_bytes(run, tmp_path):
    args, want = RUNS[run]
    assert main(["golden", *args, "--quiet", "--out", str(tmp_path / run)]) == 0
    got = {p.relative_to(tmp_path / run).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
           for p in sorted((tmp_path / run).rglob("*.parquet"))}
    assert got == want
