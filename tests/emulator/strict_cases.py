"""The gpu backend on the strict CuPy stand-in (tests/strict_device.py) under the CUDA simulator:
run by test_strict_device.py in a subprocess with NUMBA_ENABLE_CUDASIM=1 (not collected on its
own: the simulator must be switched on before numba.cuda is first imported)."""
import importlib
import os
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))
import strict_device  # noqa: E402

from isa import datatypes as dts  # noqa: E402
from isa import instructions as instrs  # noqa: E402
from kernels.numeric import cuda as kcuda  # noqa: E402
from kernels.numeric.profiles import PROFILES  # noqa: E402

E = importlib.import_module("kernels.numeric.elementwise")
cv = importlib.import_module("kernels.numeric.convert")

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":     # not a silent skip: a run that checks nothing
    pytest.fail("strict_cases.py runs under the CUDA simulator: NUMBA_ENABLE_CUDASIM=1 python -m pytest "
                "tests/emulator/strict_cases.py, or through tests/emulator/test_strict_device.py", pytrace=False)


@pytest.fixture(autouse=True)
def strict():
    with strict_device.installed() as xp:
        strict_device.TRANSFERS.reset()
        yield xp


def codes(dt, n, rng):
    raw = np.dtype(dt.raw_dtype)
    x = rng.integers(0, 1 << (8 * raw.itemsize), n, dtype=np.uint64).astype(raw)
    if dt.bits != dt.container or dt.bits != 8 * raw.itemsize:
        x = x & raw.type(int(cv.valid_mask_hex(dt), 16))
    return x


def test_every_elementwise_operation_on_device_arrays_gives_the_cpu_bits(strict):
    """Device (stand-in) operands give the CPU path's bits and flags for every (op, DataType,
    profile); placements 'xp' and 'table' move nothing to the host."""
    rng = np.random.default_rng(0)
    seen, bad = {}, []
    for ins, dt in E.cases():
        op = ins.mnemonic
        for pname in PROFILES:
            where = kcuda.placement(op, dt, PROFILES[pname], ins.arity)
            ops = [codes(dt, 24, rng).reshape(4, 6) for _ in range(ins.arity)]
            mode = "LT" if op == "TCMP" else None
            want = E.elementwise(op, dt.name, *ops, profile=pname, cmode=mode)
            strict_device.TRANSFERS.reset()
            got = E.elementwise(op, dt.name, *[strict.asarray(o) for o in ops], profile=pname, cmode=mode)
            moved = strict_device.TRANSFERS.to_host
            assert all(isinstance(g, strict.ndarray) for g in got), (op, dt.name)
            host = [strict.asnumpy(g) for g in got]
            if not (np.array_equal(host[0], want[0]) and np.array_equal(host[1], want[1])
                    and host[0].dtype == want[0].dtype and host[0].shape == want[0].shape):
                bad.append((op, dt.name, pname, where))
            if where in ("xp", "table") and moved:
                bad.append((op, dt.name, pname, where, "moved to the host"))
            seen[where] = seen.get(where, 0) + 1
    assert not bad, bad
    assert seen.get("xp", 0) >= 250 and seen.get("table", 0) >= 80, seen


@pytest.mark.parametrize("op, name, pname", [("TADD", "FP16", "ftz"), ("TFMA", "FP16", "ieee"),
                                             ("TREM", "FP16", "ieee"), ("TDIV", "FP16", "ftz")])
def test_a_value_table_crosses_to_the_device_once_not_on_every_call(strict, op, name, pname):
    """FP16 operands read through fast.py's value table on the device (or, where the op runs in a
    wider format, fastvec.py's compiled pass): any table is copied there once, so a later call on
    device operands copies nothing from the host."""
    ins = instrs.lookup(op)
    dt = next(d for d in dts.DATATYPES if d.name == name)
    assert kcuda.placement(op, dt, PROFILES[pname], ins.arity) in ("fast", "fastfn", "fastdiv", "fastvec")
    x = strict.asarray(np.full(64, 0x3C00, np.uint16))            # 1.0: nothing marked for the host
    E.elementwise(op, name, *[x] * ins.arity, profile=pname)
    strict_device.TRANSFERS.reset()
    bits, _ = E.elementwise(op, name, *[x] * ins.arity, profile=pname)
    assert strict_device.TRANSFERS.to_device_bytes < 1024, strict_device.TRANSFERS
    assert isinstance(bits, strict.ndarray)


def test_every_conversion_on_device_arrays_gives_the_generic_bits_on_the_device(strict):
    rng = np.random.default_rng(1)
    bad = []
    for s in dts.DATATYPES:
        x = codes(s, 48, rng).reshape(6, 8)
        for d in dts.DATATYPES:
            for mode, sat in (("DEFAULT", False), ("RTZ", True)):
                rm = cv.resolve_rmode(mode, s, d)
                want = cv.convert_generic(x, s, d, rm, sat, False, np)
                strict_device.TRANSFERS.reset()
                got = cv.convert(strict.asarray(x), s.name, d.name, rmode=mode, sat=sat)
                moved = strict_device.TRANSFERS.to_host
                if moved or not all(isinstance(g, strict.ndarray) for g in got):
                    bad.append((s.name, d.name, mode, "moved to the host"))
                    continue
                if not all(np.array_equal(strict.asnumpy(g), w) for g, w in zip(got, want)):
                    bad.append((s.name, d.name, mode))
    assert not bad, bad


# ---------------------------------------------------------------- a stream stays on the device

# (op, DataType) pairs the gpu backend still computes on the host in profile ieee
# (kernels/numeric/cuda.py, placement 'host'): none since TREM, TRSQRT, TLOG, FP64 TEXP and
# FP64 TFMA got device kernels (fastfn.py, fast64.py).  Every block of the stream below moves
# no tile payload to the host.
STILL_ON_HOST_TYPES: dict[str, set[str]] = {}
TYPES = ["FP64", "FP32", "TF32", "HF32", "FP16", "BF16", "E4M3", "E5M2", "S64", "S32", "S16", "S8",
         "U64", "U32", "U16", "U8"]
TILE = {name: 20 + i for i, name in enumerate(TYPES)}          # one 2x4 tile of each type
MASK, FMAP, MIXED, DEST = 4, 6, 7, 60


def ordinary_machine(seed):
    """Every element an ordinary value (floats in [1, 2), integers 1..100): no kernel marks an
    element for the host, no divisor is zero."""
    from emulator import FeatureMap, Machine, MachineConfig
    from kernels import numeric
    rng = np.random.default_rng(seed)
    m = Machine(MachineConfig(local_bytes=8192, matrix_bytes=2048))
    for p in range(4):
        for name, tid in TILE.items():
            dt = dts.datatype(name)
            if dt.is_int:
                bits = rng.integers(1, 101, (2, 4), dtype=np.uint64)
            else:
                bits = numeric.encode(1 + rng.random((2, 4)), name)
            m.write_tile(p, tid, name, bits)
        m.write_tile(p, MASK, None, rng.integers(0, 2, (2, 4)), kind="predicate")
        # a tile whose layout differs per PE, read at GPR offsets (r1 = 1 row, r2 = 2 columns)
        m.write_tile(p, MIXED, "S8", rng.integers(1, 101, (2, 4)), layout=3 if p % 2 else 0)
        m.set_gpr(p, 1, 1)
        m.set_gpr(p, 2, 2)
        m.write_tile(p, FMAP, "FP16", numeric.encode(1 + rng.random((16, 4)), "FP16"), location="Matrix",
                     fmap=FeatureMap("NC1HWC0", N=1, C1=1, H=4, W=4, C0=4, filterH=2, filterW=2, channels=3))
    return m


def every_instruction():
    """(row, DataType name, block): each instruction on each DataType the machines hold (TCVT:
    to every destination), writing tile DEST; then TEXTRACT, TINSERT and TCVT on MIXED, whose
    layout differs per PE, at GPR offsets."""
    from isa import BDatr, BDim, BIor, Block, BStart, TileBinding
    out = []
    for row in instrs.INSTRUCTIONS:
        names = ["FP16"] if row.schema == instrs.IMG2COL else [n for n in TYPES if n in row.dtypes]
        for name in names:
            code = dts.datatype(name).code
            srcs = {instrs.SELECT: [MASK, TILE[name], TILE[name]], instrs.IMG2COL: [FMAP]}.get(
                row.schema, [TILE[name]] * len(row.sources))
            iot = tuple(TileBinding(t, 15, None) for t in srcs + [DEST])
            dests = [n for n in TYPES if n in row.dtypes] if row.schema == instrs.CONVERT else [None]
            for dst in dests:
                datr = BDatr(DataType=dts.datatype(dst).code) if dst else None
                out.append((row, name, Block(BStart(row.mode, row.function, code, row.engine), iot,
                                             BDim(4, 2), datr, None, None)))
    s8 = dts.datatype("S8").code
    for row in instrs.INSTRUCTIONS:        # the per-PE layouts of MIXED, at offsets
        if row.schema in (instrs.EXTRACT, instrs.INSERT, instrs.CONVERT):
            srcs = [MIXED, MIXED] if row.schema == instrs.INSERT else [MIXED]
            dest = MIXED if row.schema == instrs.INSERT else DEST
            iot = tuple(TileBinding(t, 15, None) for t in srcs + [dest])
            # TEXTRACT: a 1x2 window at (1, 2); TINSERT: the whole tile at (0, 0) (r3 = 0); TCVT: the tile
            ior = (BIor(3, 3, 0, 0) if row.schema == instrs.INSERT else BIor(1, 2, 0, 0)) if row.uses_ior else None
            datr = BDatr(DataType=dts.datatype("FP32").code) if row.schema == instrs.CONVERT else None
            dim = BDim(2, 1) if row.schema == instrs.EXTRACT else BDim(4, 2)
            out.append((row, "S8", Block(BStart(row.mode, row.function, s8, row.engine), iot, dim, datr, ior, None)))
    return out


def test_a_stream_of_every_instruction_keeps_tiles_on_the_device(strict):
    """Block after block on one batch: results match each machine run alone on the reference,
    and no block moves a tile payload (or anything but single-value reads) to the host, except
    those the gpu backend still computes on the host (STILL_ON_HOST_TYPES), which do."""
    from emulator import MachineBatch
    from test_batch_differential import error_key
    machines = [ordinary_machine(s) for s in range(3)]
    batch = MachineBatch(machines, "gpu")
    assert batch.xp is strict
    alone = [m.copy() for m in machines]
    stream = every_instruction()
    assert {r.mnemonic for r, _, _ in stream} == {r.mnemonic for r in instrs.INSTRUCTIONS}
    moved, on_host = [], set()
    for row, name, block in stream:
        strict_device.TRANSFERS.reset()
        result = batch.run([block])
        crossed = strict_device.TRANSFERS.to_host
        refs = [m.run([block]) for m in alone]
        assert [error_key(e) for e in result.errors] == [error_key(r.error) for r in refs], (row.mnemonic, name)
        assert all(e is None for e in result.errors), (row.mnemonic, name, result.errors[0])
        if name in STILL_ON_HOST_TYPES.get(row.mnemonic, ()):
            on_host.add((row.mnemonic, name))
            assert crossed, (row.mnemonic, name, "listed as host but moved nothing")
        elif crossed:
            moved.append((row.mnemonic, name, block.datr, strict_device.TRANSFERS.where))
    assert not moved, moved
    assert on_host == {(op, n) for op, ns in STILL_ON_HOST_TYPES.items() for n in ns}
    for k, m in enumerate(alone):
        assert batch.machine(k).digest() == m.digest()
