"""The golden row builders (emulator/golden/rows.py) give exactly the Arrow columns that the
plain constructions give: pa.array(values).take(index), per-entry bytes, np.packbits along the
last axis.  The references are built here from Python lists, independently of the builders."""
import numpy as np
import pyarrow as pa
import pytest

from emulator.golden import rows as R

rng = np.random.default_rng(20261207)

STRINGS = ["", "local", "vec", "FP16", "E4M3", "\u00e9t\u00e9", "a" * 70]
BYTES = [b"", b"\x00", b"ab\x00\x00", b"\x00\xff" * 9, b"xyz"]


@pytest.fixture(autouse=True, params=[0, None], ids=["numpy-paths", "default-threshold"])
def small(request, monkeypatch):
    """Each test twice: with the NumPy builders at every size, and with rows.SMALL as shipped."""
    if request.param is not None:
        monkeypatch.setattr(R, "SMALL", request.param)


def same(got: pa.Array, want: pa.Array) -> None:
    assert got.type == want.type
    got.validate(full=True)
    assert got.null_count == 0
    assert got.equals(want)


@pytest.mark.parametrize("pool,typ", [(STRINGS, pa.string()), (BYTES, pa.binary())])
@pytest.mark.parametrize("k", [1, 2, 5])
def test_take_values_is_arrow_take(pool, typ, k):
    for _ in range(20):
        values = [pool[i] for i in rng.integers(0, len(pool), k)]
        index = rng.integers(0, k, int(rng.integers(0, 6000)))
        same(R._take_values(values, index, typ), pa.array(values, typ).take(pa.array(index)))


@pytest.mark.parametrize("pool,typ", [(STRINGS, pa.string()), (BYTES, pa.binary())])
def test_runs_repeat_each_value_its_count(pool, typ):
    for _ in range(20):
        values = [pool[i] for i in rng.integers(0, len(pool), int(rng.integers(1, 9)))]
        counts = rng.integers(0, 50, len(values))
        want = pa.array([v for v, c in zip(values, counts) for _ in range(c)], typ)
        same(R.repeat_runs(values, counts, typ), want)


@pytest.mark.parametrize("value,typ", [("local", pa.string()), ("", pa.string()), (b"a\x00\x00", pa.binary()),
                                       (7, pa.uint32()), (2 ** 63, pa.uint64()), (True, pa.bool_())])
@pytest.mark.parametrize("n", [0, 1, 1000])
def test_repeat_is_n_copies(value, typ, n):
    same(R._repeat(value, n, typ), pa.array([value] * n, typ))


def test_binary_is_each_entrys_bytes_case_major():
    for _ in range(20):
        groups, want = [], []
        for _ in range(int(rng.integers(0, 4))):
            n = int(rng.integers(1, 30))          # a group has at least one case
            chunks = [rng.integers(0, 256, (n, int(rng.integers(0, 4)), int(rng.integers(0, 6))), dtype=np.uint8)
                      for _ in range(int(rng.integers(0, 3)))]
            groups.append((n, chunks))
            want += [c[i, j].tobytes() for i in range(n) for c in chunks for j in range(c.shape[1])]
        same(R._binary(groups), pa.array(want, pa.binary()))


@pytest.mark.parametrize("width", [0, 1, 7, 8, 16, 20, 64])
def test_pack_defined_is_packbits_along_the_last_axis(width):
    d = rng.integers(0, 2, (13, 3, width)).astype(bool)
    want = np.array([[[sum(1 << b for b in range(8) if 8 * i + b < width and d[c, k, 8 * i + b])
                       for i in range(-(-width // 8))] for k in range(3)] for c in range(13)], np.uint8)
    want = want.reshape(13, 3, -(-width // 8))
    got = R.pack_defined(d)
    assert got.dtype == np.uint8 and np.array_equal(got, want)
    assert np.array_equal(R.pack_defined(d[:, 1:, :]), want[:, 1:, :])       # a strided view too


def test_strings_convert_the_rejected_cases_only():
    for frac in (0.0, 0.1, 1.0):
        values = np.full(500, "", object)
        rejected = rng.random(500) < frac
        values[rejected] = [STRINGS[i] for i in rng.integers(0, len(STRINGS), int(rejected.sum()))]
        same(R._strings(values, ~rejected), pa.array(list(values), pa.string()))


def test_no_entries_give_empty_columns():
    empty = np.zeros(0, np.int64)
    same(R._take_values([], empty), pa.array([], pa.string()))
    same(R.repeat_runs([], empty, pa.binary()), pa.array([], pa.binary()))
    same(R._binary([]), pa.array([], pa.binary()))
    same(R._strings(np.zeros(0, object), np.zeros(0, bool)), pa.array([], pa.string()))
