"""A stream dataset's `layout` column stores each distinct layout once, so its bytes do not depend
on the writer's memory: groups that share a layout share one dictionary entry (a dictionary that
held a text twice made pyarrow fall back to plain encoding after laying out a dictionary page
whose tail it never wrote)."""
import numpy as np
import pyarrow.parquet as pq

from emulator.cli import main
from emulator.golden.streams_dataset import layout_column


def test_groups_sharing_a_layout_share_one_dictionary_entry():
    col = layout_column(["a", "b", "a", "c"], np.array([0, 0, 1, 2, 2, 3], np.int32))
    assert col.dictionary.to_pylist() == ["a", "b", "c"]
    assert col.indices.to_pylist() == [0, 0, 1, 0, 0, 2]
    assert col.to_pylist() == ["a", "a", "b", "a", "a", "c"]


def test_distinct_layouts_keep_their_order():
    col = layout_column(["x", "y", "z"], np.array([0, 1, 1, 2], np.int32))
    assert col.dictionary.to_pylist() == ["x", "y", "z"]
    assert col.indices.to_pylist() == [0, 1, 1, 2]


def test_every_written_layout_dictionary_is_distinct_and_dictionary_encoded(tmp_path):
    # this run's r3c1 file has two groups with one layout (it wrote memory-dependent bytes before)
    assert main(["golden", "--streams", "--blocks", "6", "--ops", "TADD,TCVT,TDIV", "--dtypes", "FP16,S16",
                 "--cases", "300", "--seed", "5", "--quiet", "--out", str(tmp_path / "d")]) == 0
    files = sorted((tmp_path / "d").rglob("*.parquet"))
    assert files
    for f in files:
        pf = pq.ParquetFile(f)
        col = pf.read(columns=["layout"]).column("layout").combine_chunks()
        texts = col.dictionary.to_pylist()
        assert len(set(texts)) == len(texts), f
        meta = pf.metadata.row_group(0)
        chunk = next(meta.column(i) for i in range(meta.num_columns) if meta.column(i).path_in_schema == "layout")
        assert "RLE_DICTIONARY" in chunk.encodings, f
