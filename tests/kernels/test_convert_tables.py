"""TCVT's conversion tables are an optimisation only: a host conversion reads a (pair, RMode,
Sat) key's table once the elements converted under that key reach the table's building cost
(kernels/numeric/convert.py, host_table) and converts directly before that.  Both ways give the
same bits and flags, for every code of every source of 16 bits or fewer and for FP32/TF32/HF32
sources to 8-bit floats (the hi16 table)."""
import importlib

import numpy as np
import pytest

from isa.datatypes import DATATYPES, datatype

CV = importlib.import_module("kernels.numeric.convert")   # the module (the package re-exports its function)

SMALL = [d.name for d in DATATYPES if d.bits <= 16]
ALL = [d.name for d in DATATYPES]
HI16_SOURCES = ("FP32", "TF32", "HF32")
HI16_DESTS = [n for n in ALL if CV._hi16_eligible(datatype("FP32"), datatype(n))]


@pytest.fixture
def tables(monkeypatch):
    """set(cost): every table costs `cost` elements from now on, with empty caches."""
    monkeypatch.setattr(CV, "_HOST_TABLES", {"full": {}, "hi16": {}})
    monkeypatch.setattr(CV, "_demand", {})

    def set_cost(cost):
        monkeypatch.setattr(CV, "TABLE_COST", {"full": lambda s: cost, "hi16": lambda s: cost})
        CV._HOST_TABLES["full"].clear()
        CV._HOST_TABLES["hi16"].clear()
        CV._demand.clear()
    return set_cost


def both_ways(tables, codes, src, dst, rmode, sat):
    tables(float("inf"))
    direct = CV.convert(codes, src, dst, rmode, sat)
    tables(0)
    table = CV.convert(codes, src, dst, rmode, sat)
    return direct, table


def every_code(src):
    d = datatype(src)
    return np.arange(1 << d.bits, dtype=np.uint64).astype(d.raw_dtype)


@pytest.mark.parametrize("src", SMALL)
def test_a_small_source_converts_every_code_to_every_destination_the_same_with_and_without_its_table(tables, src):
    codes = every_code(src)
    for dst in ALL:
        for rmode, sat in (("RNE", False), ("RTZ", True)):
            (db, df), (tb, tf) = both_ways(tables, codes, src, dst, rmode, sat)
            assert db.dtype == tb.dtype and np.array_equal(db, tb), (src, dst, rmode, sat)
            assert np.array_equal(df, tf), (src, dst, rmode, sat)


@pytest.mark.parametrize("mode", ["RNE", "RTZ", "RTM", "RTP", "RNA", "RTO"])
def test_every_mode_and_sat_of_fp16_and_e4m3_sources_agree(tables, mode):
    for src, dst in (("FP16", "E4M3"), ("FP16", "S8"), ("E4M3", "BF16"), ("BF16", "HiF8"), ("U16", "FP16")):
        for sat in (False, True):
            (db, df), (tb, tf) = both_ways(tables, every_code(src), src, dst, mode, sat)
            assert np.array_equal(db, tb) and np.array_equal(df, tf), (src, dst, mode, sat)


def hi16_samples(src, rng):
    d = datatype(src)
    shift = 32 - d.bits                     # TF32/HF32 keep their low bits zero
    hi = np.arange(1 << 16, dtype=np.uint32) << np.uint32(16)
    lo = rng.integers(0, 1 << 16, hi.size).astype(np.uint32)
    x = (hi | lo) >> np.uint32(shift) << np.uint32(shift)
    edges = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 1, 0x00800000,
                      0x43700000, 0x43800000, 0x477FE000, 0x47800000], np.uint32) >> np.uint32(shift) << np.uint32(shift)
    return np.concatenate([x, edges])


@pytest.mark.parametrize("src", HI16_SOURCES)
def test_a_32_bit_float_source_to_an_8_bit_float_agrees_with_and_without_the_hi16_table(tables, src):
    rng = np.random.default_rng(17)
    x = hi16_samples(src, rng)
    for dst in HI16_DESTS:
        for rmode, sat in (("RNE", False), ("RTZ", True), ("RNA", False)):
            (db, df), (tb, tf) = both_ways(tables, x, src, dst, rmode, sat)
            assert np.array_equal(db, tb) and np.array_equal(df, tf), (src, dst, rmode, sat)


def test_a_key_gets_its_table_once_its_elements_reach_the_building_cost(monkeypatch):
    monkeypatch.setattr(CV, "_HOST_TABLES", {"full": {}, "hi16": {}})
    monkeypatch.setattr(CV, "_demand", {})
    key = ("FP16", "E4M3", "RNE", False, False, CV.IEEE)
    cost = CV.TABLE_COST["full"]("FP16")
    assert cost == 1 << 16
    assert CV.host_table("full", key, cost // 2) is None          # converted directly
    assert CV.host_table("full", key, cost // 2 - 1) is None
    t = CV.host_table("full", key, 1)                              # the sum reaches the cost
    assert t is not None and len(t[0]) == 1 << 16
    assert CV.host_table("full", key, 1) is t                      # kept
    assert CV.host_table("full", ("FP16", "E5M2", "RNE", False, False, CV.IEEE), cost) is not None  # at once


def test_the_host_tables_and_the_demand_counts_are_bounded(monkeypatch):
    monkeypatch.setattr(CV, "_HOST_TABLES", {"full": {}, "hi16": {}})
    monkeypatch.setattr(CV, "_demand", {})
    monkeypatch.setattr(CV, "HOST_TABLE_LIMIT", {"full": 3, "hi16": 3})
    monkeypatch.setattr(CV, "DEMAND_KEYS", 5)
    keys = [("E4M3", d, "RNE", False, False, CV.IEEE) for d in ("FP16", "BF16", "FP32", "E5M2", "S8")]
    for k in keys:
        CV.host_table("full", k, 256)
    assert list(CV._HOST_TABLES["full"]) == keys[-3:]               # oldest out
    for i in range(12):
        CV.host_table("full", ("FP16", ALL[i], "RNE", False, False, CV.IEEE), 1)
    assert len(CV._demand) <= 5
