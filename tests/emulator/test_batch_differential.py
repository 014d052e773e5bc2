"""A batch of machines that differ in state, running one random stream on the batched engine,
ends exactly where each machine ends when run alone on the reference Machine: equal digests,
equal committed-block counts and equal StreamErrors (index, offset, reason, field, message).
Streams mix every schema, DataTypes, descriptors, PE masks, GPR offsets, capacities, illegal
blocks, undefined elements and zero divisors."""
import contextlib
import os
import pathlib
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emu_helpers import draw_datr_fields, draw_source
from emulator import FeatureMap, Machine, MachineBatch, MachineConfig
from isa import BDatr, BDim, BIor, Block, BStart, TileBinding, encoding
from isa.datatypes import datatype
from isa.errors import EncodeError
from isa.instructions import INSTRUCTIONS

CONFIG = MachineConfig(local_bytes=4096, matrix_bytes=2048)
# DataType code -> the tile of that type every machine starts with
TYPED = {1: 1, 16: 2, 23: 3, 4: 5, 18: 7}
PARTIAL = {1: 9, 16: 10}    # the same, 2x4 tiles with a 1x3 valid rectangle
# Every schema as likely as the many pointwise instructions together (TCMP, TSEL, TCVT, ...)
ONE_PER_SCHEMA = list({row.schema: row for row in INSTRUCTIONS}.values())


def machine(seed: int) -> Machine:
    """A machine of the common shape with its own values, holes in definedness, zero divisors
    and GPR offsets; now and then a PE lacks a tile or holds one of another shape (so the batch
    splits into several cohorts)."""
    rng = np.random.default_rng(seed)
    m = Machine(CONFIG)
    for p in range(4):
        holes = lambda shape, rate: rng.random(shape) > rate  # noqa: E731
        m.write_tile(p, 1, "FP32", rng.integers(0, 2**32, (2, 4), dtype=np.uint64), defined=holes((2, 4), 0.01))
        m.write_tile(p, 2, "S32", rng.integers(0, 2**31, (2, 4), dtype=np.uint64) * (rng.random((2, 4)) > 0.05))
        m.write_tile(p, 3, "U8", rng.integers(0, 256, (2, 4)), defined=holes((2, 4), 0.02))
        m.write_tile(p, 4, None, rng.integers(0, 2, (2, 4)), kind="predicate")
        m.write_tile(p, 5, "FP16", rng.integers(0, 2**16, (2, 4)), defined=holes((2, 4), 0.02))
        m.write_tile(p, 6, "FP16", rng.integers(0, 2**16, (16, 4)), location="Matrix",
                     fmap=FeatureMap("NC1HWC0", N=1, C1=1, H=4, W=4, C0=4, filterH=2, filterW=2, channels=3))
        m.write_tile(p, 7, "S8", rng.integers(0, 256, (2, 4)), layout=3 if rng.random() < 0.1 else 0)
        m.write_tile(p, 8, "FP32", rng.integers(0, 2**32, (2, 4)), representation="cube")
        # tiles whose valid rectangle (1x3) is smaller than the tile (2x4): padding is exercised
        m.write_tile(p, 9, "FP32", rng.integers(0, 2**32, (2, 4), dtype=np.uint64), valid_row=1, valid_col=3)
        m.write_tile(p, 10, "S32", rng.integers(0, 2**31, (2, 4), dtype=np.uint64), valid_row=1, valid_col=3)
        for r in range(1, 4):                 # r0 is the hard-wired zero (blocks still read it)
            m.set_gpr(p, r, int(rng.integers(0, 3)) | (int(rng.integers(0, 8) == 0) << 20))
        if rng.random() < 0.03:
            m.delete_tile(p, int(rng.integers(1, 9)))
        if rng.random() < 0.03:
            m.write_tile(p, 1, "FP32", rng.integers(0, 2**32, (4, 4), dtype=np.uint64))
    return m


opt = lambda s: st.none() | s  # noqa: E731


@st.composite
def blocks(draw):
    """Mostly blocks that pass the stateless rules, reading the typed tiles or earlier results."""
    row = draw(st.sampled_from(INSTRUCTIONS) | st.sampled_from(ONE_PER_SCHEMA))
    codes = sorted(datatype(n).code for n in row.dtypes)
    usual = [c for c in TYPED if c in codes]
    partial = [c for c in PARTIAL if c in codes] if draw(st.integers(0, 3)) == 0 else []
    dtype = draw(st.sampled_from(partial or usual) if (partial or usual) and draw(st.integers(0, 9))
                 else st.sampled_from(codes))
    typed = PARTIAL if partial else TYPED
    mask = draw(st.sampled_from([1, 3, 15, 15, 15, 6, 0]) | st.integers(0, 15))

    def source(role):
        if draw(st.integers(0, 9)) == 0:
            return draw(st.integers(1, 14))
        return draw_source(draw, row, role, typed.get(dtype, 1))

    tiles = [source(role) for role in row.sources] + [draw(st.integers(11, 14) | st.integers(1, 10))]
    cap = draw(st.integers(0, 300)) if draw(st.integers(0, 9)) == 0 else (32 if partial else None)
    iot = tuple(TileBinding(t, mask, cap if i == len(tiles) - 1 else None) for i, t in enumerate(tiles))
    dim = (BDim(3, 1, 4) if partial else BDim(4, 2)) if draw(st.integers(0, 9)) else \
        BDim(draw(st.integers(1, 5)), draw(opt(st.integers(1, 4))), draw(opt(st.integers(4, 8))))
    fields = draw_datr_fields(draw, row)
    datr = BDatr(**fields) if fields else None
    ior = draw(opt(st.builds(BIor, st.integers(0, 3), st.integers(0, 3), st.just(0), st.just(0)))) \
        if row.uses_ior else None
    return Block(BStart(row.mode, row.function, dtype, row.engine), iot, dim, datr, ior, None)


def error_key(err):
    if err is None:
        return None
    return (err.index, err.offset, err.whole_stream, err.reason, getattr(err.cause, "field", None), str(err.cause))


def assert_batch_matches_reference(machines, stream, backend="cpu", fuse=False):
    batch = MachineBatch(machines, backend)
    result = batch.run(stream, fuse=fuse)
    for k, m in enumerate(machines):
        alone = m.copy()
        ref = alone.run(stream)
        assert result.executed[k] == ref.executed, f"machine {k}"
        assert error_key(result.errors[k]) == error_key(ref.error), f"machine {k}"
        assert batch.machine(k).digest() == alone.digest(), f"machine {k}"
    return batch, result


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=6), st.lists(blocks(), min_size=1, max_size=6),
       st.booleans(), st.none() | st.integers(0, 400))
def test_a_batch_ends_where_each_machine_ends_alone_on_the_reference(seeds, stream, as_bytes, cut):
    machines = [machine(s) for s in seeds]
    if as_bytes:                  # byte streams also check the offsets the errors carry
        try:
            stream = encoding.encode(stream)
        except EncodeError:
            pass
        else:
            if cut is not None:   # a damaged word: a decode fault at that block (or the header)
                data = bytearray(stream)
                data[(cut * 7) % len(data)] ^= 0xA5
                stream = bytes(data)
    assert_batch_matches_reference(machines, stream)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=4), st.lists(blocks(), min_size=1, max_size=4),
       st.lists(blocks(), min_size=1, max_size=4))
def test_a_second_stream_restarts_every_machine_like_the_reference(seeds, first, second):
    machines = [machine(s) for s in seeds]
    batch = MachineBatch(machines, "cpu")
    batch.run(first)
    result = batch.run(second)
    for k, m in enumerate(machines):
        alone = m.copy()
        alone.run(first)
        ref = alone.run(second)
        assert error_key(result.errors[k]) == error_key(ref.error)
        assert batch.machine(k).digest() == alone.digest()


@pytest.mark.slow
@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=12), st.lists(blocks(), min_size=1, max_size=10))
def test_longer_streams_on_bigger_batches_match_the_reference(seeds, stream):
    assert_batch_matches_reference([machine(s) for s in seeds], stream)


class HostArrays:
    """An array module that is not numpy itself but computes with it: the engine's branches for
    a device module (status per flag bit, payloads crossing to the host for NumPy executors)."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def asnumpy(a):
        return np.array(a)


@contextlib.contextmanager
def device_stand_in():
    """The `gpu` backend without a GPU; a context manager, since hypothesis tests cannot take
    function-scoped fixtures.  Under the CUDA simulator (NUMBA_ENABLE_CUDASIM=1: how
    test_strict_device.py runs the gpu tests again) on the strict CuPy stand-in
    (tests/strict_device.py), kernels included, so that host/device mixing raises as on CuPy;
    otherwise on HostArrays (NumPy dressed as a device module, numerics on the CPU path), no
    memory check."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))
        import strict_device
        with strict_device.installed():
            yield
        return
    import emulator.backends as backends
    import emulator.batch as batch_module
    import emulator.machine as machine_module
    saved = batch_module.resolve_backend, machine_module.resolve_backend, backends.check_device_memory
    batch_module.resolve_backend = machine_module.resolve_backend = \
        lambda name: ("gpu", HostArrays(), "gpu backend (NumPy stand-in)") if name == "gpu" else saved[0](name)
    backends.check_device_memory = lambda need: None
    try:
        yield
    finally:
        batch_module.resolve_backend, machine_module.resolve_backend, backends.check_device_memory = saved


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=4), st.lists(blocks(), min_size=1, max_size=5))
def test_the_engine_on_a_device_array_module_matches_the_reference(seeds, stream):
    with device_stand_in():
        assert_batch_matches_reference([machine(s) for s in seeds], stream, backend="gpu")


@st.composite
def moves(draw):
    """TSEL and TIMG2COL blocks: selections between typed tiles (or an earlier result), img2col
    windows anywhere in tile 6's 9 x 16 matrix, at GPR offsets that may reach past it."""
    from emu_helpers import blk
    mask, dest = draw(st.sampled_from([15, 15, 3, 6, 1]) | st.integers(0, 15)), draw(st.integers(11, 14))
    if draw(st.booleans()):
        ior = draw(st.none() | st.builds(BIor, st.integers(0, 3), st.integers(0, 3), st.just(0), st.just(0)))
        return blk("TIMG2COL", "FP16", [6], dest, mask=mask, vr=draw(st.integers(1, 9)), vc=draw(st.integers(1, 16)),
                   ior=ior)
    name, tile = draw(st.sampled_from([("FP32", 1), ("S32", 2), ("U8", 3), ("FP16", 5), ("S8", 7)]))
    return blk("TSEL", name, [4, tile, draw(st.sampled_from([tile, tile, 11]))], dest, mask=mask, vc=4, vr=2,
               PadValueOrByteId=draw(st.none() | st.integers(0, 3)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=5), st.lists(moves(), min_size=1, max_size=5),
       st.integers(0, 2**32 - 1))
def test_selection_and_img2col_on_a_batch_match_the_reference(seeds, stream, seed):
    """TSEL and TIMG2COL (the engine's xp_select / xp_img2col) on both batched backends, every
    other machine's feature map on one PE with an undefined element (read or not)."""
    from emulator import FeatureMap
    machines = [machine(s) for s in seeds]
    rng = np.random.default_rng(seed)
    for k, m in enumerate(machines[seed % 2::2]):
        defined = np.ones((16, 4), bool)
        defined[rng.integers(0, 16), rng.integers(0, 4)] = False
        m.write_tile(k % 4, 6, "FP16", rng.integers(0, 2**16, (16, 4)), location="Matrix", defined=defined,
                     fmap=FeatureMap("NC1HWC0", N=1, C1=1, H=4, W=4, C0=4, filterH=2, filterW=2, channels=3))
    assert_batch_matches_reference(machines, stream)
    with device_stand_in():
        assert_batch_matches_reference(machines, stream, backend="gpu")



@st.composite
def mixed_reads(draw):
    """TEXTRACT, TINSERT and TCVT reading tile 1 (FP32) or 7 (S8), whose geometry differs per PE
    in mixed_machine, at GPR offsets, into row-major or layout-3 destinations."""
    from emu_helpers import blk
    name, tile = draw(st.sampled_from([("FP32", 1), ("S8", 7)]))
    mask, vr, vc = draw(st.sampled_from([15, 15, 10, 6, 2])), draw(st.integers(1, 2)), draw(st.integers(1, 4))
    ior = draw(st.none() | st.builds(BIor, st.integers(0, 3), st.integers(0, 3), st.just(0), st.just(0)))
    layout = draw(st.none() | st.sampled_from([0, 3]))
    op = draw(st.sampled_from(["TEXTRACT", "TINSERT", "TCVT"]))
    if op == "TEXTRACT":
        return blk(op, name, [tile], draw(st.integers(11, 14)), mask=mask, vr=vr, vc=vc, ior=ior, Layout=layout)
    if op == "TINSERT":
        return blk(op, name, [tile, tile], tile, mask=mask, vr=vr, vc=vc, ior=ior, Layout=layout)
    return blk(op, name, [tile], draw(st.integers(11, 14)), mask=mask, vr=vr, vc=4,
               DataType=draw(st.sampled_from([1, 4, 16, 18])), Canonicalize=draw(st.none() | st.just(1)))


def mixed_machine(seed: int) -> Machine:
    """machine(seed) with, on PEs 1 and 3, a 4x4 FP32 tile 1 and a layout-3 S8 tile 7."""
    m = machine(seed)
    rng = np.random.default_rng(seed)
    for p in (1, 3):
        m.write_tile(p, 1, "FP32", rng.integers(0, 2**32, (4, 4), dtype=np.uint64), defined=rng.random((4, 4)) > 0.02)
        m.write_tile(p, 7, "S8", rng.integers(0, 256, (2, 4)), layout=3)
    return m


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=4), st.lists(mixed_reads(), min_size=1, max_size=5))
def test_sources_whose_tiles_differ_in_geometry_per_pe_match_the_reference(seeds, stream):
    """Each PE's tile read through its own layout and shape, on both batched backends."""
    assert_batch_matches_reference([mixed_machine(s) for s in seeds], stream)
    with device_stand_in():
        assert_batch_matches_reference([mixed_machine(s) for s in seeds], stream, backend="gpu")


# ---------------------------------------------------------------- the fused element pass
# Covered element-wise blocks (emulator/batchfuse.py) compute results, statuses and the
# definedness rule in one compiled pass per cohort; these batches are rich in what that pass must
# agree with the reference on: NaNs (quiet, signalling, payloads), infinities, zeros, subnormals,
# overflow, undefined elements in some machines, PE_MASK subsets, partial valid rectangles,
# machines of other shapes and blocks the pass does not cover (TF32, a uncovered op).

SPECIALS = {
    "FP32": [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7FC12345, 0xFFC00001, 0x7F800001, 0xFFA00000,
             1, 0x807FFFFF, 0x00800000, 0x80800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0x33800000, 0x0DA24260],
    "FP16": [0, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7E2A, 0xFE01, 0x7C01, 1, 0x83FF, 0x0400, 0x7BFF, 0xFBFF, 0x3C00,
             0x1400],
    "BF16": [0, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x7FC5, 0xFF81, 0x7F81, 1, 0x807F, 0x0080, 0x7F7F, 0xFF7F, 0x3F80],
}
SPECIALS["TF32"] = [x & 0xFFFFE000 for x in SPECIALS["FP32"]]
FUSED_TILES = {datatype(name).code: tiles for name, tiles in                 # DataType code -> its tiles
               (("FP32", (1, 2, 3, 9)), ("FP16", (4, 5, 6)), ("BF16", (7, 8)), ("TF32", (10,)))}
FUSED_OPS = [row for row in INSTRUCTIONS if row.mnemonic in
             ("TADD", "TSUB", "TMUL", "TDIV", "TFMA", "TSQRT", "TRECIP", "TEXP", "TREM", "TMAX")]


def special_values(rng, name: str, shape) -> np.ndarray:
    """Encodings of `name`: a third special values, a third random bit patterns, a third normal
    values near 1 (inexact sums and products without specials)."""
    bits = datatype(name).container
    pool = np.array(SPECIALS[name], np.uint64)
    rand = rng.integers(0, 2**bits, shape, dtype=np.uint64)
    if name == "TF32":
        rand &= 0xFFFFE000
    near_one = {"FP32": 0x3F800000, "TF32": 0x3F800000, "FP16": 0x3C00, "BF16": 0x3F80}[name]
    spread = {"FP32": 1 << 24, "TF32": 1 << 24, "FP16": 1 << 11, "BF16": 1 << 8}[name]
    normal = near_one - spread // 2 + rng.integers(0, spread, shape, dtype=np.uint64)
    if name == "TF32":
        normal &= 0xFFFFE000
    pick = rng.integers(0, 3, shape)
    return np.where(pick == 0, pool[rng.integers(0, len(pool), shape)], np.where(pick == 1, rand, normal))


def special_machine(seed: int) -> Machine:
    """4x8 tiles of FP32 (1, 2, 3), FP16 (4, 5, 6), BF16 (7, 8), FP32 with a 3x5 valid rectangle
    (9) and TF32 (10) on every PE; in some machines an undefined element, and now and then a tile
    of another layout or shape (another cohort) or a missing one."""
    rng = np.random.default_rng(seed)
    m = Machine(CONFIG)
    kinds = {1: "FP32", 2: "FP32", 3: "FP32", 4: "FP16", 5: "FP16", 6: "FP16", 7: "BF16", 8: "BF16", 9: "FP32",
             10: "TF32"}
    hole = None                     # in some machines an undefined element: (PE, tile, row, col)
    if rng.random() < 0.3:
        hole = (int(rng.integers(0, 4)), int(rng.integers(1, 10)), int(rng.integers(0, 4)), int(rng.integers(0, 8)))
    for p in range(4):
        for tid, name in kinds.items():
            extra = {"valid_row": 3, "valid_col": 5} if tid == 9 else {}
            defined = np.ones((4, 8), bool)
            if hole is not None and hole[:2] == (p, tid):
                defined[hole[2], hole[3]] = False
            m.write_tile(p, tid, name, special_values(rng, name, (4, 8)), defined=defined, **extra)
    if rng.random() < 0.05:
        m.write_tile(int(rng.integers(0, 4)), 2, "FP32", special_values(rng, "FP32", (4, 8)), layout=3)
    if rng.random() < 0.05:
        m.write_tile(int(rng.integers(0, 4)), 1, "FP32", special_values(rng, "FP32", (2, 8)))
    if rng.random() < 0.03:
        m.delete_tile(int(rng.integers(0, 4)), int(rng.integers(1, 9)))
    return m


@st.composite
def fused_blocks(draw):
    row = draw(st.sampled_from(FUSED_OPS))
    codes = [c for c in FUSED_TILES if c in sorted(datatype(n).code for n in row.dtypes)]
    dtype = draw(st.sampled_from(codes))
    tiles = FUSED_TILES[dtype]
    mask = draw(st.sampled_from([15, 15, 15, 1, 6, 9, 12]) | st.integers(1, 15))
    srcs = [draw(st.sampled_from(tiles)) for _ in row.sources]
    dest = draw(st.sampled_from(tiles) | st.integers(11, 14))
    partial = draw(st.integers(0, 4)) == 0
    iot = tuple(TileBinding(t, mask) for t in srcs + [dest])
    dim = BDim(5, 3, 8) if partial else BDim(8, 4)
    fields = draw_datr_fields(draw, row)
    datr = BDatr(**fields) if fields and draw(st.integers(0, 3)) == 0 else None
    return Block(BStart(row.mode, row.function, dtype, row.engine), iot, dim, datr, None, None)


@contextlib.contextmanager
def fused_everywhere():
    """The fused pass on every call, however few its elements (batchfuse.FUSE_MIN)."""
    from emulator import batchfuse
    old = batchfuse.FUSE_MIN
    batchfuse.FUSE_MIN = 0
    try:
        yield
    finally:
        batchfuse.FUSE_MIN = old


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=8), st.lists(fused_blocks(), min_size=1, max_size=5))
def test_special_values_and_undefined_elements_in_fused_batches_match_the_reference(seeds, stream):
    with fused_everywhere():
        assert_batch_matches_reference([special_machine(s) for s in seeds], stream)


def _fp32_block(mnemonic: str, srcs, dest: int, mask: int = 15, dim=None) -> Block:
    row = next(r for r in INSTRUCTIONS if r.mnemonic == mnemonic)
    iot = tuple(TileBinding(t, mask) for t in list(srcs) + [dest])
    return Block(BStart(row.mode, row.function, 1, row.engine), iot, dim or BDim(8, 4))


def test_the_fused_pass_runs_and_a_machine_reading_an_undefined_element_is_left_byte_identical(monkeypatch):
    from emulator import batchfuse
    ran = []
    real = batchfuse.Program.run

    def spy(self, plan, m, *spent):
        out = real(self, plan, m, *spent)
        ran.append(out is not None and not isinstance(out, np.ndarray))
        return out
    monkeypatch.setattr(batchfuse.Program, "run", spy)
    machines = [special_machine(s) for s in range(40)]
    rng = np.random.default_rng(7)
    hole = np.ones((4, 8), bool)
    hole[2, 3] = False
    for k in (3, 17):       # PE 2's tile 2 has an undefined element: every block below reads it
        machines[k].write_tile(2, 2, "FP32", special_values(rng, "FP32", (4, 8)), defined=hole)
    before = {k: machines[k].digest() for k in (3, 17)}
    stream = [_fp32_block("TADD", (1, 2), 11), _fp32_block("TFMA", (11, 3, 1), 12),
              _fp32_block("TMUL", (12, 2), 1, mask=6)]
    with fused_everywhere():
        batch, result = assert_batch_matches_reference(machines, stream)
    assert True in ran                          # the fused pass finished blocks
    for k in (3, 17):
        assert result.errors[k].index == 0 and result.errors[k].reason == "SOURCE_UNDEFINED"
        assert batch.machine(k).digest() == before[k]


def _forced_parallel(monkeypatch):
    """(fast, its Twin.calls before): every Twin call from here takes the parallel build (one
    element up, a core idle); skips where Numba has one thread."""
    from kernels.numeric import fast
    import numba
    if numba.get_num_threads() < 2:
        pytest.skip("one Numba thread: no parallel build runs")
    monkeypatch.setattr(fast, "PARALLEL_MIN", 1)
    monkeypatch.setattr(fast, "idle_core", lambda: True)
    return fast, dict(fast.Twin.calls)


def test_the_fused_pass_on_the_parallel_build_matches_the_reference(monkeypatch):
    """The compiled pass's parallel build (fast.Twin) runs above fast.PARALLEL_MIN elements on a
    machine with a core to spare: forced here on a small batch."""
    fast, before = _forced_parallel(monkeypatch)
    machines = [special_machine(s) for s in range(100, 124)]
    stream = [_fp32_block("TADD", (1, 2), 11), _fp32_block("TSUB", (11, 3), 2, mask=13),
              _fp32_block("TMUL", (1, 2), 12, dim=BDim(5, 3, 8))]
    with fused_everywhere():
        assert_batch_matches_reference(machines, stream)
    assert fast.Twin.calls["parallel"] > before["parallel"]


@pytest.mark.parametrize("mnemonic", ["TEXP", "TLOG", "TREM"])
def test_the_fused_pass_of_a_rounded_routine_on_the_parallel_build_matches_the_reference(monkeypatch, mnemonic):
    """A block whose kernel is a rounded routine on decoded encodings (kind 'bits': FP32 TEXP,
    TLOG, TREM) through the parallel build: it once failed to compile there (its format records
    nested in a tuple), so such a batch raised from fast.PARALLEL_MIN elements on an idle core."""
    fast, before = _forced_parallel(monkeypatch)
    machines = [special_machine(s) for s in range(200, 212)]
    srcs = (1, 2) if mnemonic == "TREM" else (1,)
    with fused_everywhere():
        assert_batch_matches_reference(machines, [_fp32_block(mnemonic, srcs, 11)])
    assert fast.Twin.calls["parallel"] > before["parallel"]


def test_a_batch_of_fuse_min_elements_takes_the_fused_pass_unforced(monkeypatch):
    """64 machines x 4 PEs x 16x16 = batchfuse.FUSE_MIN elements: the pass runs as it is."""
    from emulator import batchfuse
    assert batchfuse.FUSE_MIN <= 64 * 4 * 256
    ran = []
    real = batchfuse.Program.run
    monkeypatch.setattr(batchfuse.Program, "run", lambda self, plan, m, *spent: ran.append(1) or real(self, plan, m, *spent))
    machines = _fp32_batch(64, np.random.default_rng(11))
    block = _fp32_block("TADD", (1, 2), 3, dim=BDim(16, 16))
    assert_batch_matches_reference(machines, [block, _fp32_block("TMUL", (3, 1), 2, dim=BDim(16, 16))])
    assert ran


def _fp32_batch(n: int, rng, shape=(16, 16), values=None) -> list[Machine]:
    """n machines holding FP32 tiles 1 and 2 on each of 4 PEs: values(k, p, t) for machine k,
    else special_values drawn from rng."""
    machines = []
    for k in range(n):
        m = Machine(MachineConfig(local_bytes=8192))
        for p in range(4):
            for t in (1, 2):
                m.write_tile(p, t, "FP32", values(k, p, t) if values else special_values(rng, "FP32", shape))
        machines.append(m)
    return machines


def test_a_result_still_read_somewhere_is_never_written_by_a_later_pass(monkeypatch):
    """The pass writes into its earlier result arrays once nothing refers to them
    (emulator/reuse.py's pool, for results of 64 KiB or more): arrays a caller holds (tile_arrays, a materialized machine) keep their
    bytes while later blocks rewrite the same destination; once they are let go, a stream that
    rewrites one destination alternates between two arrays; and the batch ends as the reference
    does."""
    from emulator import batchfuse
    handed = []
    real = batchfuse.destination

    def take(*args):
        out = real(*args)
        handed.append(id(out))          # the id only: a reference here would keep every array busy
        return out
    monkeypatch.setattr(batchfuse, "destination", take)
    machines = _fp32_batch(16, np.random.default_rng(5))          # 16 x 4 x 16x16 FP32: 64 KiB of results
    stream = [_fp32_block("TADD", (1, 2), 3, dim=BDim(16, 16)), _fp32_block("TMUL", (3, 1), 3, dim=BDim(16, 16)),
              _fp32_block("TSUB", (2, 3), 3, dim=BDim(16, 16))]
    with fused_everywhere():
        batch = MachineBatch(machines)
        held, copies, materialized = [], [], []
        for block in stream * 3:
            batch.run([block])
            (_, _, elems, _), = batch.tile_arrays(1, 3)
            held.append(elems)
            copies.append(elems.copy())
            materialized.append((batch.machine(0), batch.machine(0).digest()))
        assert len(set(handed)) == 9          # every result still held: a new array each
        for a, b in zip(held, copies):
            assert np.array_equal(a, b)
        for m, digest in materialized:
            assert m.digest() == digest
        del held, materialized, a
        handed.clear()
        for _ in range(4):
            batch.run(stream)
        assert len(set(handed)) <= 2
    for k, m in enumerate(machines):
        alone = m.copy()
        for _ in range(7):
            alone.run(stream)
        assert batch.machine(k).digest() == alone.digest()


def test_the_pool_hands_out_an_array_only_when_nothing_refers_to_it():
    """The fused pass's result arrays come from emulator/reuse.py: a kept array is handed out
    again only when no view, caller or tile refers to it; another dtype gets its own."""
    from emulator.reuse import POOL_MIN_BYTES, destination
    n = POOL_MIN_BYTES // 4 * 8                    # 8 rows of a pooled size
    a = destination((n,), np.dtype(np.uint32), 4 * n)
    view = a.reshape(8, -1)[2:]
    del a
    b = destination((n,), np.dtype(np.uint32), 4 * n)
    assert b is not view.base                       # a view still reads the first
    del view
    assert destination((n,), np.dtype(np.uint32), 4 * n) is not b   # b is held here
    assert destination((n,), np.dtype(np.uint16), 2 * n).dtype == np.uint16     # another dtype: its own array


def test_definedness_is_remembered_only_for_arrays_defined_everywhere():
    from emulator.batchfuse import known_defined
    whole = np.ones((6, 32), bool)
    holed = whole.copy()
    holed[4, 7] = False
    assert known_defined(whole[2:]) and known_defined(whole)
    assert not known_defined(holed) and not known_defined(holed[:2])      # its owner has a hole
    assert not known_defined(np.frombuffer(bytes(8), bool))             # no array owns these bytes


def test_a_machine_with_an_undefined_element_in_a_remembered_batch_is_still_refused():
    """A first stream reads sources defined everywhere (remembered); a second batch of the same
    tiles but one hole is refused for that machine alone, as the reference refuses it."""
    rng = np.random.default_rng(9)
    machines = _fp32_batch(5, rng)
    hole = np.ones((16, 16), bool)
    hole[15, 15] = False
    stream = [_fp32_block("TADD", (1, 2), 3, dim=BDim(16, 16))]
    with fused_everywhere():
        assert_batch_matches_reference(machines, stream)
        machines[2].write_tile(3, 2, "FP32", special_values(rng, "FP32", (16, 16)), defined=hole)
        batch, result = assert_batch_matches_reference(machines, stream + stream)
    assert result.errors[2].reason == "SOURCE_UNDEFINED" and result.ok is False


def _screen_pairs(rng, n: int):
    """FP32 operand pairs: specials against everything, random bit patterns, near-equal values of
    opposite signs (exact cancellation, zero sums of either sign), sums that overflow, tiny ones."""
    a = special_values(rng, "FP32", n).astype(np.uint32)
    b = special_values(rng, "FP32", n).astype(np.uint32)
    k = n // 4
    b[:k] = a[:k] ^ np.uint32(0x80000000) ^ rng.integers(0, 3, k, dtype=np.uint32)
    big = rng.integers(0x7F000000, 0x7F800000, k, dtype=np.uint32)
    a[k:2 * k], b[k:2 * k] = big, big ^ (rng.integers(0, 2, k, dtype=np.uint32) << np.uint32(31))
    tiny = rng.integers(0, 0x01000000, (2, k), dtype=np.uint32) | (rng.integers(0, 2, (2, k), dtype=np.uint32) << 31)
    a[2 * k:3 * k], b[2 * k:3 * k] = tiny
    return a, b


@pytest.mark.parametrize("op", ["TADD", "TSUB"])
def test_the_fp32_screen_gives_the_full_routines_code_and_flags_wherever_it_does_not_mark(op):
    """batchfuse.SCREENS: where the screen leaves the mark clear, its code and flags are the
    full routine's and the reference's (kernels.numeric.elementwise, interpreted: NumPy)."""
    import numba
    from emulator import batchfuse
    from kernels import numeric
    from kernels.numeric import fastvec
    from kernels.numeric.interp import interpreted
    full = fastvec.fp32_add if op == "TADD" else fastvec.fp32_sub
    screen = batchfuse.SCREENS[full]

    @numba.njit
    def both(a, b, out):
        for i in range(a.shape[0]):
            c, f = screen(a[i], b[i])
            out[0, i], out[1, i] = c, f
            c, f = full(a[i], b[i])
            out[2, i], out[3, i] = c, f
    a, b = _screen_pairs(np.random.default_rng(3), 1 << 16)
    out = np.zeros((4, a.size), np.uint64)
    both(a, b, out)
    with interpreted():                          # the NumPy reference
        ref_bits, ref_flags = numeric.elementwise(op, "FP32", a, b)
    clear = (out[1] & batchfuse._MARK_BIT) == 0
    assert clear.mean() > 0.3 and (~clear).sum() > 1000          # both kinds of element occur
    assert np.array_equal(out[0][clear], out[2][clear]) and np.array_equal(out[1][clear], out[3][clear])
    assert np.array_equal(out[2], ref_bits) and np.array_equal(out[3], np.asarray(ref_flags).reshape(-1))
    with np.errstate(all="ignore"):            # the sum in binary64: NaN, or beyond binary32's overflow
        y = b if op == "TADD" else b ^ np.uint32(1 << 31)       # threshold (the max finite + half its ulp)
        s = a.view(np.float32).astype(np.float64) + y.view(np.float32).astype(np.float64)
        beyond = ~(np.abs(s) <= 2.0 ** 128 - 2.0 ** 103)
    assert beyond.sum() > 100 and not clear[beyond].any()      # every NaN, infinity and overflow is marked


def test_screened_passes_redo_the_tiles_with_special_values_and_match_the_reference(monkeypatch):
    """Tiles holding NaNs, infinities or an overflowing sum are redone by the full routine inside
    the screened pass (kept on here however many tiles it redoes), and a call that redoes most
    tiles sends the next calls to the unscreened pass: either way the reference's results."""
    from emulator import batchfuse
    redone = []
    real = batchfuse._screened_loop

    def spy(arity, scalar):
        loop = real(arity, scalar)
        if loop is None:
            return None
        return lambda *args: redone.append(loop(*args)) or redone[-1]
    monkeypatch.setattr(batchfuse, "_screened_loop", spy)
    monkeypatch.setattr(batchfuse, "_PROGRAMS", {})
    rng = np.random.default_rng(13)

    def values(k, p, t):
        v = 0x3F800000 + rng.integers(0, 1 << 23, (16, 16), dtype=np.uint64)
        if (k + p + t) % 5 == 0:                   # a special value or an overflow in some tiles
            v[rng.integers(0, 16), rng.integers(0, 16)] = rng.choice(SPECIALS["FP32"] + [0x7F7FFFFF])
        return v
    machines = _fp32_batch(12, rng, values=values)
    dim = BDim(16, 16)
    stream = [_fp32_block("TADD", (1, 2), 3, dim=dim), _fp32_block("TSUB", (3, 1), 4, dim=dim),
              _fp32_block("TADD", (4, 4), 4, dim=dim), _fp32_block("TADD", (4, 4), 4, dim=dim)]
    with fused_everywhere():
        monkeypatch.setattr(batchfuse, "REDONE_MAX", 1)        # never sends a call unscreened
        assert_batch_matches_reference(machines, stream)
        assert redone and any(redone) and not all(r == 0 for r in redone)
        monkeypatch.setattr(batchfuse, "REDONE_MAX", 1 << 30)  # any redone tile: the next calls unscreened
        redone.clear()
        assert_batch_matches_reference(machines, stream)
        assert len(redone) < len(stream)


def _handed_out(monkeypatch) -> list:
    """The result arrays the fused pass takes from emulator/reuse.py, kept (so none is reused)."""
    from emulator import batchfuse
    handed = []
    real = batchfuse.destination
    monkeypatch.setattr(batchfuse, "destination", lambda *a: handed.append(real(*a)) or handed[-1])
    return handed


@pytest.mark.parametrize("pad", [None, 0, 1, 2, 3])      # omitted (NULL), ZERO, MAX, MIN, NULL
def test_a_partial_rectangle_is_computed_into_the_padded_destination_and_matches_the_reference(monkeypatch, pad):
    """A block whose valid rectangle (11 x 13) is smaller than its destination tiles (16 x 16, from
    the capacity) has its results computed straight into the destination tiles, padded around
    them: every PadValue, a destination that is also a source, special values, and machines
    reading an undefined element (refused, state byte for byte as before) end as on the
    reference, and the committed tiles are the array the pass wrote."""
    from emulator import batchfuse
    handed = _handed_out(monkeypatch)
    placed = []
    real = batchfuse.in_place_padding
    monkeypatch.setattr(batchfuse, "in_place_padding", lambda *a: placed.append(real(*a)) or placed[-1])
    rng = np.random.default_rng(40 + (pad or 0))
    machines = []
    for k in range(12):
        m = Machine(MachineConfig(local_bytes=8192))
        for p, t in np.ndindex(4, 2):
            m.write_tile(p, t + 1, "FP32", special_values(rng, "FP32", (16, 16)), valid_row=11, valid_col=13)
        machines.append(m)
    hole = np.ones((16, 16), bool)
    hole[3, 4] = False                         # inside the valid rectangle: read, so refused
    machines[5].write_tile(1, 2, "FP32", special_values(rng, "FP32", (16, 16)), defined=hole, valid_row=11,
                           valid_col=13)
    before = machines[5].digest()
    datr = None if pad is None else BDatr(PadValueOrByteId=pad)
    row = next(r for r in INSTRUCTIONS if r.mnemonic == "TADD")
    mul = next(r for r in INSTRUCTIONS if r.mnemonic == "TMUL")
    dim = BDim(13, 11, 16)
    cap = 16 * 16 * 4
    stream = [Block(BStart(row.mode, row.function, 1, row.engine),
                    (TileBinding(1, 15), TileBinding(2, 15), TileBinding(3, 15, cap)), dim, datr),
              Block(BStart(mul.mode, mul.function, 1, mul.engine),      # destination = first source
                    (TileBinding(3, 15), TileBinding(1, 15), TileBinding(3, 15, cap)), dim, datr)]
    with fused_everywhere():
        batch, result = assert_batch_matches_reference(machines, stream)
    assert [w for w in placed if w is not None] and all(w == (16, 16) for w in placed if w is not None)
    assert result.errors[5].index == 0 and result.errors[5].reason == "SOURCE_UNDEFINED"
    assert batch.machine(5).digest() == before
    for p in range(4):
        (_, desc, elems, _), = [t for t in batch.tile_arrays(p, 3) if 5 not in t[0]]
        assert (desc.Row, desc.Col, desc.ValidRow, desc.ValidCol) == (16, 16, 11, 13)
        assert np.shares_memory(elems, handed[-1])


def test_a_whole_tile_result_is_committed_as_the_array_the_pass_wrote(monkeypatch):
    """No copy between the fused pass and the commit: each PE's destination tile of every machine
    is a row of the one result array the pass wrote (emulator/reuse.py hands it out)."""
    handed = _handed_out(monkeypatch)
    machines = _fp32_batch(16, np.random.default_rng(12))
    with fused_everywhere():
        batch, _ = assert_batch_matches_reference(machines, [_fp32_block("TADD", (1, 2), 3, dim=BDim(16, 16))])
    for p in range(4):
        (_, _, elems, _), = batch.tile_arrays(p, 3)
        assert np.shares_memory(elems, handed[-1])


@st.composite
def padded_streams(draw):
    """(machine seeds, DataType, valid rectangle, blocks): element-wise blocks whose valid
    rectangle is smaller than their tiles of `rows` x 8 (the destination's rows from the
    capacity), any PadValue, destinations that are sources or new tiles."""
    name = draw(st.sampled_from(["FP32", "FP16"]))
    vr, vc = draw(st.integers(1, 6)), draw(st.integers(1, 7))
    rows = draw(st.sampled_from([vr]) | st.integers(vr, 8))    # every tile's; more than vr: rows of padding
    cap = rows * 8 * datatype(name).container // 8
    blocks = []
    for _ in range(draw(st.integers(1, 3))):
        mnemonic = draw(st.sampled_from(["TADD", "TSUB", "TMUL", "TFMA"]))
        row = next(r for r in INSTRUCTIONS if r.mnemonic == mnemonic)
        srcs = [draw(st.integers(1, 3)) for _ in row.sources]
        pad = draw(st.none() | st.integers(0, 3))
        iot = tuple(TileBinding(t, 15) for t in srcs) + (TileBinding(draw(st.integers(1, 4)), 15, cap),)
        blocks.append(Block(BStart(row.mode, row.function, datatype(name).code, row.engine), iot, BDim(vc, vr, 8),
                            None if pad is None else BDatr(PadValueOrByteId=pad)))
    return draw(st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=6)), name, (rows, vr, vc), blocks


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(padded_streams())
def test_results_computed_into_padded_destinations_match_the_reference(drawn):
    """Random partial rectangles, PadValues, capacities and destinations, over special values
    and now and then an undefined element: the batch ends as each machine alone on the
    reference (the fused pass forced, so each block runs it)."""
    seeds, name, (rows, vr, vc), stream = drawn
    machines = []
    for s in seeds:
        rng = np.random.default_rng(s)
        m = Machine(MachineConfig(local_bytes=8192))
        for p, t in np.ndindex(4, 3):
            defined = rng.random((rows, 8)) > 0.002
            m.write_tile(p, t + 1, name, special_values(rng, name, (rows, 8)), defined=defined, valid_row=vr,
                         valid_col=vc)
        machines.append(m)
    with fused_everywhere():
        assert_batch_matches_reference(machines, stream)
