"""`tile-emu bench`: throughput of named cases against a plain-library baseline, same run.

    tile-emu bench                      # every case, 2^20 elements, best of 7
    tile-emu bench --quick              # smoke run: 2^14 elements, best of 2
    tile-emu bench --case numeric.TADD  # cases whose name starts with a prefix (repeatable)
    tile-emu bench --list | --json
    tile-emu bench --backend gpu        # the same operations on CuPy arrays, vs. device copy bandwidth
    tile-emu bench --profile a5         # the numeric cases under numeric profile a5

A case is one row of CASES: a name, what the baseline is, an optional target ratio, and a setup
function n -> (ours, baseline), two zero-argument callables doing the same work on n elements
(a case with an element count of its own, `Case.n`, runs at that count whatever --n says: the
special.*.256 cases).
The table reports elements/s of both and ratio = baseline time / our time (> 1: faster).  Other
subsystems add rows to CASES; benchmarks/bench_numeric.py runs the numeric rows under
pytest-benchmark.

Both callables are warmed up untimed before timing (`warm_up`: until a call is no longer
clearly faster than the one before), so compilation, table building and lazy kernel loads are
not timed.  A timed repeat is a loop of calls lasting at least MIN_REPEAT_SECONDS; the result is
the best repeat's time per call, ours and the baseline alternating repeat by repeat.  A case below its target is marked MISSED in the `target` column ("missed": true in
--json); `--strict` makes any miss exit 1 and names each missed case on stderr, one line each
(default: exit 0, the targets are informational).

`--n` is bounded before anything is allocated: each case says what its setup and calls hold at
n elements (`Case.memory`, measured peaks with a margin) and the most its own structures allow
(`Case.max_n`); an --n past either, against the memory this machine has available now, is one
line naming the largest n that fits, exit 2.
"""
from __future__ import annotations

import atexit
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from emulator.cli import UNAVAILABLE, CommandError


LIBRARY_BYTES = 256 << 20     # address space the kernels and Numba add when a case first runs (136 MiB measured)


def per_element(nbytes: float, fixed: int = LIBRARY_BYTES) -> Callable[[int], float]:
    """Case.memory of a case whose peak grows with n: `nbytes` per element, plus `fixed`."""
    return lambda n: fixed + nbytes * n


@dataclass(frozen=True)
class Case:
    name: str
    baseline: str                      # what the baseline callable does
    setup: Callable[[int], tuple]      # n -> (ours, baseline)
    target: float | None = None        # minimum ratio the project aims for (informational)
    needs: str | None = None           # optional module the baseline needs (e.g. ml_dtypes)
    # n -> peak host bytes of setup plus both callables (resident-set growth measured at n = 2^17..2^22,
    # rounded up by about a quarter; docs/performance.md), and the largest n the case's own
    # structures allow (None: memory alone bounds it)
    memory: Callable[[int], float] = per_element(64)
    max_n: int | None = None
    device_memory: Callable[[int], float] | None = None    # gpu cases: device bytes at n
    profiled: bool = False             # setup(n, profile): ours runs under --profile
    profile: str | None = None         # ours runs under this profile whatever --profile says
    n: int | None = None               # the case's own element count, whatever --n says (start-up: one start a call)


# ---------------------------------------------------------------- numeric cases

_ML = {"E4M3": "float8_e4m3fn", "BF16": "bfloat16"}
# minimum ratios (issue 9): FP32 TADD/TMUL/TFMA 0.5x NumPy, BF16 TADD/TMUL 1x the ml_dtypes round
# trip (0.5x for TFMA/TEXP), FP16 2x NumPy float16, 8-bit 4x ml_dtypes, FP32 TEXP 0.25x
_TARGET = {"E4M3": 4.0, "BF16": 0.5, "FP16": 2.0}
_TARGET_OP = {("TADD", "BF16"): 1.0, ("TMUL", "BF16"): 1.0, ("TADD", "FP32"): 0.5, ("TMUL", "FP32"): 0.5,
              ("TFMA", "FP32"): 0.5, ("TEXP", "FP32"): 0.25}


def _values(fmt: str, n: int, op: str, seed: int):
    """Typical data: normal(0, 1) values (TEXP: uniform in [-8, 8]) as the format's encodings."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-8, 8, n) if op == "TEXP" else rng.standard_normal(n)
    if fmt in ("FP32", "FP16"):
        return x.astype(np.float32 if fmt == "FP32" else np.float16)
    import ml_dtypes
    return x.astype(np.float32).astype(getattr(ml_dtypes, _ML[fmt]))


def _numeric_case(op: str, fmt: str) -> Case:
    arity = {"TFMA": 3, "TEXP": 1}.get(op, 2)
    plain = {"TADD": lambda a, b: a + b, "TMUL": lambda a, b: a * b,
             "TFMA": lambda a, b, c: a * b + c, "TEXP": np.exp}[op]

    def setup(n: int, profile: str = "ieee"):
        from kernels import numeric
        vals = [_values(fmt, n, op, seed) for seed in range(arity)]
        bits = [v.view(f"u{v.dtype.itemsize}") for v in vals]
        ours = lambda: numeric.elementwise(op, fmt, *bits, profile=profile)   # noqa: E731
        if fmt in ("FP32", "FP16"):                                    # NumPy's own dtype
            base = lambda: plain(*vals)                                # noqa: E731
        else:                                                          # ml_dtypes round trip
            base = lambda: plain(*(v.astype(np.float32) for v in vals)).astype(vals[0].dtype)  # noqa: E731
        return ours, base

    if fmt in ("FP32", "FP16"):
        np_name = "float32" if fmt == "FP32" else "float16"
        what = f"NumPy {np_name} exp (not correctly rounded)" if op == "TEXP" else \
            f"NumPy {np_name} " + ("a*b+c, two roundings" if op == "TFMA" else op[1:].lower())
    else:
        what = f"ml_dtypes {_ML[fmt]} round trip through float32"
    target = _TARGET_OP.get((op, fmt), _TARGET.get(fmt))
    return Case(f"numeric.{op}.{fmt}", what, setup, target, None if fmt in ("FP32", "FP16") else "ml_dtypes",
                memory=per_element(_NUMERIC_BYTES[op]), profiled=True)


# peak bytes per element (measured: TADD/TMUL 12-18, TFMA 19-22, TEXP 10-14 over the four formats)
_NUMERIC_BYTES = {"TADD": 24, "TMUL": 24, "TFMA": 28, "TEXP": 18}


CASES: list[Case] = [_numeric_case(op, fmt) for op in ("TADD", "TMUL", "TFMA", "TEXP")
                     for fmt in ("E4M3", "BF16", "FP16", "FP32")]


def _convert_case(dst: str, status: bool = False) -> Case:
    """TCVT FP32 -> dst (RNE, no Sat) on normal(0, 100) values against NumPy's astype(float16) /
    ml_dtypes' astype(bfloat16) (issue 16: >= 1x); `status`: with four PEs' statuses instead of a
    flag per element (kernels.numeric.convert_status, what a TCVT block keeps)."""
    def setup(n: int, profile: str = "ieee"):
        from kernels import numeric
        if status:
            cs, n = numeric.convert_status, n - n % 4           # bound once: the package resolves it per access
        x = (np.random.default_rng(0).standard_normal(n) * 100).astype(np.float32)
        u = x.view(np.uint32)
        if dst == "FP16":
            base_type = np.float16
        else:
            import ml_dtypes
            base_type = ml_dtypes.bfloat16
        ours = (lambda: cs(u, "FP32", dst, 4, rmode="RNE", profile=profile)) if status else \
            (lambda: numeric.convert(u, "FP32", dst, rmode="RNE", profile=profile))
        return ours, (lambda: x.astype(base_type))

    what = "NumPy astype(float16)" if dst == "FP16" else "ml_dtypes astype(bfloat16)"
    return Case(("numeric.TCVT.status." if status else "numeric.TCVT.") + f"FP32-{dst}", what, setup, 1.0,
                None if dst == "FP16" else "ml_dtypes", profiled=True)


CASES += [_convert_case("FP16"), _convert_case("BF16"), _convert_case("FP16", status=True)]


def _profile_case(op: str, fmt: str, profile: str) -> Case:
    """`op` on `fmt` under `profile` against the same op under profile ieee (issue 16: a5's
    TRSQRT/TREM/TDIV FP16 within 2x of ieee, ratio >= 0.5)."""
    arity = 1 if op == "TRSQRT" else 2

    def setup(n: int):
        from kernels import numeric
        vals = [np.abs(_values(fmt, n, op, seed)) if op == "TRSQRT" else _values(fmt, n, op, seed)
                for seed in range(arity)]
        bits = [v.view(f"u{v.dtype.itemsize}") for v in vals]
        return (lambda: numeric.elementwise(op, fmt, *bits, profile=profile)), \
            (lambda: numeric.elementwise(op, fmt, *bits, profile="ieee"))
    return Case(f"profile.{profile}.{op}.{fmt}", f"kernels.numeric.elementwise {op} {fmt} under profile ieee",
                setup, 0.5, profile=profile)


CASES += [_profile_case(op, "FP16", "a5") for op in ("TRSQRT", "TREM", "TDIV")]


# ---------------------------------------------------------------- special values (issue 32)
# One element, or every seventh, special -- a NaN with a random payload (quiet or signalling), an
# infinity, a zero or a subnormal, cycling, of either sign -- against the same call on the same
# all-normal operands: the ratio is the all-normal rate's share the special mix keeps (target:
# within 1.5x).  At --n elements (default 2^20) and at 256 (`.256`: one block's elements).

SPECIAL_FAMILIES = (("TADD", ("FP64", "FP32", "TF32", "FP16", "BF16", "E4M3")), ("TMUL", ("FP64", "FP32", "FP16", "BF16")),
                    ("TFMA", ("FP64", "FP32", "FP16", "BF16", "E5M2")), ("TDIV", ("FP64", "FP32", "FP16", "BF16")),
                    ("TSQRT", ("FP64", "FP32", "FP16")), ("TREM", ("FP64", "FP32", "FP16")),
                    ("TEXP", ("FP64", "FP32")), ("TLOG", ("FP64", "FP32")), ("TRSQRT", ("FP64", "FP32")),
                    ("TMAX", ("FP32",)), ("TCMP", ("FP32",)))


def _normal_operands(op: str, fmt: str, n: int, arity: int):
    """Encodings of normal values: N(0, 1) (TEXP uniform in [-8, 8]; TSQRT/TLOG/TRSQRT positive;
    TREM's divisors away from zero), rounded to the format."""
    from kernels import numeric
    out = []
    for k in range(arity):
        rng = np.random.default_rng(1000 + k)
        x = rng.uniform(-8, 8, n) if op == "TEXP" else rng.standard_normal(n)
        if op in ("TSQRT", "TLOG", "TRSQRT") or (op == "TREM" and k == 1):
            x = np.abs(x) + 0.5
        if fmt == "FP64":
            out.append(x.view(np.uint64).copy())
        else:
            out.append(numeric.convert(x.astype(np.float32).view(np.uint32), "FP32", fmt, rmode="RNE")[0])
    return out


def _special_codes(fmt: str, n: int, seed: int):
    """n special encodings of `fmt`: the i-th a NaN (random payload: quiet or signalling),
    an infinity, a zero or a subnormal as i % 4 says, of a random sign."""
    from kernels.numeric import formats
    f = formats.FORMATS[fmt]
    rng = np.random.default_rng(seed)
    w, t = f.width, f.t
    payload = rng.integers(1, 1 << min(t, 62), n, dtype=np.int64).astype(np.uint64)
    sign = rng.integers(0, 2, n).astype(np.uint64) << np.uint64(w - 1)
    top = np.uint64(((1 << (w - 1 - t)) - 1) << t)
    nan = (np.uint64(f.mag_mask) if f.specials == "fn" else top | payload)
    inf = top if f.specials == "ieee" else np.uint64(f.mag_mask)
    kind = np.arange(n) % 4
    mag = np.where(kind == 0, nan, np.where(kind == 1, inf, np.where(kind == 2, np.uint64(0),
                                                                         payload & np.uint64((1 << t) - 1))))
    raw = np.dtype(f"u{max(1, (w + f.shift) // 8)}")
    return ((mag | sign) << np.uint64(f.shift)).astype(raw)


def _special_case(op: str, fmt: str, which: str, size: int | None) -> Case:
    arity = {"TFMA": 3, "TSQRT": 1, "TEXP": 1, "TLOG": 1, "TRSQRT": 1}.get(op, 2)

    def setup(n: int):
        from kernels import numeric
        base = _normal_operands(op, fmt, n, arity)
        mixed = [b.copy() for b in base]
        where = np.array([n // 2]) if which == "one" else np.arange(0, n, 7)
        # the j-th special element has one special operand, operand j % arity, of kind
        # (j // arity) % 4: every operand meets every kind, and a subnormal never shares its
        # element with a NaN that would decide the result alone
        for k, x in enumerate(mixed):
            mine = where[k::arity]
            x[mine] = _special_codes(fmt, mine.size, 7 + k)
        return (lambda: numeric.elementwise(op, fmt, *mixed)), (lambda: numeric.elementwise(op, fmt, *base))

    what = "one element special" if which == "one" else "every 7th element special (NaN, inf, 0, subnormal)"
    return Case(f"special.{op}.{fmt}.{which}" + (f".{size}" if size else ""),
                f"{what}, against the same call on all-normal operands", setup, 0.67,
                memory=per_element(8 * (arity + 2) * 2 + 16), n=size)


CASES += [_special_case(op, fmt, which, size) for op, fmts in SPECIAL_FAMILIES for fmt in fmts
          for size in (None, 256) for which in ("one", "1of7")]


# ---------------------------------------------------------------- FP16 per op (issue 32)
# FP16 TADD, TSUB, TMUL, TDIV, TSQRT, TFMA and TCVT to and from FP32 against NumPy doing the
# arithmetic in float32 on the same data plus the narrowing (astype(float16): correctly rounded
# only where double rounding is innocuous, and without flags).

def _fp16_case(op: str) -> Case:
    arity = {"TFMA": 3, "TSQRT": 1, "TCVT.FP16-FP32": 1, "TCVT.FP32-FP16": 1}.get(op, 2)
    plain = {"TADD": np.add, "TSUB": np.subtract, "TMUL": np.multiply, "TDIV": np.divide,
             "TSQRT": np.sqrt, "TFMA": lambda a, b, c: a * b + c}

    def setup(n: int):
        from kernels import numeric
        rng = np.random.default_rng(16)
        vals = [rng.standard_normal(n).astype(np.float16) for _ in range(arity)]
        if op == "TSQRT":
            vals = [np.abs(vals[0])]
        if op == "TCVT.FP32-FP16":
            x = (rng.standard_normal(n) * 100).astype(np.float32)
            return (lambda: numeric.convert(x.view(np.uint32), "FP32", "FP16", rmode="RNE")), \
                (lambda: x.astype(np.float16))
        bits = [v.view(np.uint16) for v in vals]
        if op == "TCVT.FP16-FP32":
            return (lambda: numeric.convert(bits[0], "FP16", "FP32")), (lambda: vals[0].astype(np.float32))
        wide = [v.astype(np.float32) for v in vals]
        fn = plain[op]
        return (lambda: numeric.elementwise(op, "FP16", *bits)), \
            (lambda: fn(*(v.astype(np.float32) for v in vals)).astype(np.float16))

    base = ("NumPy astype(float16)" if op == "TCVT.FP32-FP16" else "NumPy astype(float32)"
            if op == "TCVT.FP16-FP32" else "NumPy float32 arithmetic on the same data plus both conversions")
    return Case(f"fp16.{op}", base, setup, None, memory=per_element(40))


CASES += [_fp16_case(op) for op in ("TADD", "TSUB", "TMUL", "TDIV", "TSQRT", "TFMA", "TCVT.FP32-FP16",
                                    "TCVT.FP16-FP32")]


# ---------------------------------------------------------------- GPU cases (--backend gpu)
# Same operations on CuPy arrays resident on the device.  The baseline is a device-to-device
# copy moving as many bytes as the operation reads and writes, so ratio = the operation's share
# of the copy bandwidth measured in the same run (issue 9 aims at >= 0.6 for FP32/FP16/BF16,
# >= 0.3 for 8-bit formats and TCVT FP32 -> E4M3 with Sat).

def _gpu_case(op: str, fmt: str, target: float) -> Case:
    arity = {"TFMA": 3, "TCVT": 1}.get(op, 2)

    def setup(n: int):
        import cupy
        from kernels import numeric
        src = "FP32" if op == "TCVT" else fmt
        rngs = [np.random.default_rng(seed) for seed in range(arity)]     # our own codec: the GPU
        host = [numeric.encode(r.standard_normal(n), src) for r in rngs]   # machine has no ml_dtypes
        bits = [cupy.asarray(v) for v in host]
        if op == "TCVT":
            run = lambda: numeric.convert(bits[0], "FP32", fmt, sat=True)      # noqa: E731
        else:
            run = lambda: numeric.elementwise(op, fmt, *bits)                  # noqa: E731
        out_b, out_f = run()
        moved = sum(int(b.nbytes) for b in bits) + int(out_b.nbytes) + int(out_f.nbytes)
        a = cupy.empty(moved // 2, cupy.uint8)
        b = cupy.empty_like(a)
        sync = cupy.cuda.Device().synchronize
        return (lambda: (run(), sync())), (lambda: (cupy.copyto(b, a), sync()))

    what = "device-to-device copy of the same bytes (ratio = fraction of copy bandwidth)"
    name = f"gpu.{op}.{fmt}" if op != "TCVT" else f"gpu.TCVT.FP32-{fmt}.sat"
    from isa.datatypes import datatype
    moved = arity * (datatype("FP32" if op == "TCVT" else fmt).container // 8) + datatype(fmt).container // 8 + 1
    # host: the float64 draws and their encodings; device: the operands, the result and flags, and
    # the two copy buffers of half as many bytes each (not measured: no GPU here)
    return Case(name, what, setup, target, "cupy", memory=per_element(16 * arity),
                device_memory=per_element(2 * moved))


GPU_CASES: list[Case] = ([_gpu_case(op, fmt, 0.6) for op in ("TADD", "TMUL", "TFMA") for fmt in ("FP32", "FP16", "BF16")]
                         + [_gpu_case(op, "E4M3", 0.3) for op in ("TADD", "TMUL")]
                         + [_gpu_case("TCVT", "E4M3", 0.3)])


# ---------------------------------------------------------------- batch cases

BATCH_TILE = (16, 16)      # 4 PEs x 16x16 FP32 per machine: 1,024 elements per machine-block


def batch_setup(n: int, backend: str = "cpu"):
    """TADD FP32 over n // 1024 machines (4 PEs x 16x16 tiles each) as one MachineBatch block,
    against np.add of the same stacked (machines * 4, 16, 16) float32 arrays."""
    from emulator import Machine, MachineBatch
    from isa import BDim, Block, BStart, TileBinding
    from isa.instructions import lookup

    rows, cols = BATCH_TILE
    count = max(1, n // (4 * rows * cols))
    rng = np.random.default_rng(0)
    a = (rng.random((count, 4, rows, cols), dtype=np.float32) + 1)
    b = (rng.random((count, 4, rows, cols), dtype=np.float32) + 1)
    machines = []
    for k in range(count):
        m = Machine()
        for p in range(4):
            m.write_tile(p, 1, "FP32", a[k, p].view(np.uint32))
            m.write_tile(p, 2, "FP32", b[k, p].view(np.uint32))
        machines.append(m)
    batch = MachineBatch(machines, backend)
    row = lookup("TADD")
    block = Block(BStart(row.mode, row.function, 1, row.engine),
                  (TileBinding(1, 15), TileBinding(2, 15), TileBinding(3, 15)), BDim(cols, rows))
    stream = [block]
    fa, fb = a.reshape(-1, rows, cols), b.reshape(-1, rows, cols)
    return (lambda: batch.run(stream)), (lambda: np.add(fa, fb))


CASES.append(Case("batch.TADD.FP32.16x16", "NumPy float32 add of the same stacked tiles "
                  "(n // 1024 machines x 4 PEs x 16x16; --n 4194304 = 4,096 machines)", batch_setup,
                  memory=per_element(64)))           # measured 48: a Machine per 1,024 elements


# ---------------------------------------------------------------- machine cases

def machine_setup(n: int):
    """One TADD FP32 block on one Machine on the engine's host path (backend cpu: the reference's
    steps with the engine's speed caches; the reference itself keeps none), 4 PEs x (n // 512) x
    128 tiles (--n 65536: the 4 x 128x128 of issue 9's target), against
    kernels.numeric.elementwise on the same stacked operands: ratio = numeric time / block time
    (issue 9: the block costs <= 1.5x, ratio >= 0.67)."""
    from emulator import Machine, MachineConfig
    from isa import BDim, Block, BStart, TileBinding
    from isa.instructions import lookup
    from kernels.numeric import elementwise

    rows, cols = max(1, n // (4 * 128)), 128
    rng = np.random.default_rng(0)
    data = [(rng.random((4, rows, cols), dtype=np.float32) + 1).view(np.uint32) for _ in range(2)]
    m = Machine(MachineConfig(local_bytes=4 * rows * cols * 4), backend="cpu")
    for p in range(4):
        m.write_tile(p, 1, "FP32", data[0][p])
        m.write_tile(p, 2, "FP32", data[1][p])
    row = lookup("TADD")
    block = Block(BStart(row.mode, row.function, 1, row.engine),
                  (TileBinding(1, 15), TileBinding(2, 15), TileBinding(3, 15)), BDim(cols, rows))
    return (lambda: m.execute(block)), (lambda: elementwise("TADD", "FP32", *data))


def _machine_max_n() -> int:
    """machine_setup's Local store holds 4 tiles of n // 512 rows x 128 FP32: MAX_STORE_BYTES bounds n."""
    from emulator.config import MAX_STORE_BYTES
    return (MAX_STORE_BYTES // (4 * 128 * 4) + 1) * 512 - 1


CASES.append(Case("machine.TADD.FP32", "kernels.numeric.elementwise on the same stacked operands "
                  "(4 PEs x n//512 x 128 tiles; --n 65536 = 4 x 128x128)", machine_setup, 1 / 1.5,
                  memory=per_element(44), max_n=_machine_max_n()))      # measured 34


# ---------------------------------------------------------------- compiled block programs (issue 32 target 1)

STREAM_TILE = (4, 16)      # 4 PEs x 4x16 FP32: 256 elements per block


def _stream_machine(compiled: bool):
    """A machine on the cpu backend with 4x16 FP32 tiles 1, 2 on every PE; `compiled` False:
    today's path alone (engine.HostPlans(compiled=False))."""
    from emulator import Machine, MachineConfig, engine
    rows, cols = STREAM_TILE
    rng = np.random.default_rng(0)
    m = Machine(MachineConfig(), backend="cpu")
    m._engine = engine.HostPlans(compiled)
    for p in range(4):
        for t in (1, 2):
            m.write_tile(p, t, "FP32", (rng.random((rows, cols), dtype=np.float32) + 1).view(np.uint32))
    return m


def _stream_blocks():
    from isa import assemble_blocks
    rows, cols = STREAM_TILE
    return assemble_blocks(
        f"BSTART.VEC TADD, FP32\n    B.IOT t1@0b1111, t2@0b1111 -> t3@0b1111\n    B.DIM LB0={cols}, LB1={rows}\n"
        f"BSTART.VEC TSUB, FP32\n    B.IOT t3@0b1111, t2@0b1111 -> t1@0b1111\n    B.DIM LB0={cols}, LB1={rows}\n")


def stream_setup(n: int):
    """Machine(backend="cpu").run of a `.tbs` stream of n // 256 blocks alternating TADD and TSUB
    FP32 on 4 PEs x 4x16 (--n 256000000: 1,000,000 blocks), each run from the same state,
    against the same run on today's path (the reference's steps with the engine's speed caches,
    no compiled block programs): ratio = today's time / ours."""
    from isa import encode
    pair = _stream_blocks()
    data = encode([pair[i % 2] for i in range(max(1, n // 256))])
    start = {c: _stream_machine(c) for c in (True, False)}

    def once(compiled):
        r = start[compiled].copy().run(data)
        assert r.ok, r.error
    return (lambda: once(True)), (lambda: once(False))


def block_setup(n: int):
    """One TADD FP32 block on 4 PEs x 4x16 through Machine(backend="cpu").execute (the per-block
    cost), against kernels.numeric.elementwise on the same stacked (4, 4, 16) operands."""
    from kernels.numeric import elementwise
    m = _stream_machine(True)
    block = _stream_blocks()[0]
    data = [np.stack([m.read_tile(p, t).bits for p in range(4)]).astype(np.uint32) for t in (1, 2)]
    return (lambda: m.execute(block)), (lambda: elementwise("TADD", "FP32", *data))


CASES.extend([
    Case("machine.stream", "the same stream on today's path, no compiled block programs (n // 256 blocks of "
         "TADD/TSUB FP32 on 4 PEs x 4x16; --n 256000000 = 1,000,000 blocks)", stream_setup, 10.0,
         memory=per_element(4)),
    Case("machine.block", "kernels.numeric.elementwise on the same stacked 4 x 4x16 operands (one TADD FP32 "
         "block through Machine(backend='cpu').execute)", block_setup, None, memory=lambda n: LIBRARY_BYTES,
         n=256),
])


# ---------------------------------------------------------------- commit-log cases (issue 17: <= 1.3x)

LOG_TILE = (16, 16)        # 4 PEs x 16x16 FP32: 1,024 elements per machine-block
LOG_OPS = ("TADD", "TMUL", "TSUB", "TMAX")
LOG_BATCH_BLOCKS = 8


def _log_stream(blocks: int) -> bytes:
    """`blocks` FP32 blocks on every PE cycling through LOG_OPS, each reading two of tiles 1..4
    and writing a third (read-after-write chains; a valid rectangle of 16 x 12 of 16 x 16 with
    PadValue ZERO: padding in every result)."""
    from isa import assemble_blocks, encode
    rows, cols = LOG_TILE
    text = []
    for i in range(min(blocks, 4 * len(LOG_OPS))):        # the pattern repeats every 16 blocks
        a, b, d = 1 + i % 4, 1 + (i + 1) % 4, 1 + (i + 2) % 4
        text.append(f"BSTART.VEC {LOG_OPS[i % len(LOG_OPS)]}, FP32\n"
                    f"    B.IOT t{a}@0b1111, t{b}@0b1111 -> t{d}@0b1111 CAP={rows * cols * 4}\n"
                    f"    B.DIM LB0={cols - 4}, LB1={rows}, LB2={cols}\n    B.DATR PAD=ZERO\n")
    pattern = assemble_blocks("".join(text))
    return encode([pattern[i % len(pattern)] for i in range(blocks)])


def _log_machine(rng, config):
    from emulator import Machine
    rows, cols = LOG_TILE
    m = Machine(config)
    for p in range(4):
        for t in (1, 2, 3, 4):
            m.write_tile(p, t, "FP32", (rng.random((rows, cols), dtype=np.float32) + 1).view(np.uint32),
                         valid_col=cols - 4)
    return m


def log_setup(batch: bool):
    """`tile-emu run --log` in-process: the run with its commit log written (Arrow IPC, to a
    scratch folder) against the same run without it; n elements = blocks x 1,024 on one
    Machine (--n 10240000: 10,000 blocks), or machines x 1,024 of a MachineBatch running an
    8-block stream (--n 4194304: 4,096 machines).  Target ratio 1/1.3."""
    def setup(n: int):
        from emulator import MachineBatch, MachineConfig
        from emulator.commitlog import open_log
        scratch = tempfile.mkdtemp(prefix="tile-emu-bench-log-")      # scratch, removed when bench ends
        atexit.register(shutil.rmtree, scratch, True)
        path = os.path.join(scratch, "commits.arrow")
        rng = np.random.default_rng(0)
        config = MachineConfig()
        count = max(1, n // (4 * LOG_TILE[0] * LOG_TILE[1]))
        if batch:
            data = _log_stream(LOG_BATCH_BLOCKS)
            start = [_log_machine(rng, config) for _ in range(count)]

            def once(log):
                b = MachineBatch(start, "cpu")
                if log:
                    with open_log(path, len(b)) as lg:
                        r = b.run(data, log=lg)
                else:
                    r = b.run(data)
                assert r.ok, r.errors
        else:
            data = _log_stream(count)
            start = _log_machine(rng, config)

            def once(log):
                m = start.copy()
                if log:
                    with open_log(path) as lg:
                        r = m.run(data, log=lg)
                else:
                    r = m.run(data)
                assert r.ok, r.error
        return (lambda: once(True)), (lambda: once(False))
    return setup


CASES.extend([
    Case("run.log.machine", "the same Machine.run without --log (n // 1024 blocks of 4 PEs x 16x16 FP32; "
         "--n 10240000 = 10,000 blocks)", log_setup(False), 1 / 1.3, memory=per_element(16)),
    Case("run.log.batch", "the same MachineBatch.run without --log (n // 1024 machines, 8 blocks of 4 PEs x "
         "16x16 FP32; --n 4194304 = 4,096 machines)", log_setup(True), 1 / 1.3, memory=per_element(400)),
])


# ---------------------------------------------------------------- golden cases

def golden_setup(op: str, dtype: str, dst: str | None = None, sat: bool = False):
    """n golden cases of one partition generated and written as Parquet (the whole pipeline of
    `tile-emu golden`, in-process), against pyarrow writing the same rows to Parquet alone."""
    def setup(n: int):
        import pyarrow.parquet as pq

        from emulator.golden import dataset as D
        from emulator.golden.runner import settle_heap
        p = D.Params(ops=(op,), dtypes=(dtype,), cases=n, seed=1, dst_dtypes=(dst,) if dst else (),
                     rmodes=("RNE",), sat=(int(sat),))
        try:
            part = D.partitions(p)[0]
            chunks = D.chunks(p)            # the generator's own limits (cases, files) apply
        except D.GoldenError as exc:
            raise CommandError(f"--n {n}: {exc}", 2) from None
        scratch = tempfile.mkdtemp(prefix="tile-emu-bench-golden-")   # scratch, not an output:
        atexit.register(shutil.rmtree, scratch, True)                 # removed when bench ends
        folder = os.path.join(scratch, "dataset")
        table = D.chunk_table(p, part, 0, min(n, p.chunk_cases))
        copies = -(-n // len(table))
        settle_heap()                       # as `tile-emu golden` does before its first chunk

        def ours():
            shutil.rmtree(folder, ignore_errors=True)
            for pt, chunk, k in chunks:
                D.write_chunk(folder, p.to_json(), vars(pt), chunk, k)

        def base():
            for i in range(copies):
                pq.write_table(table, os.path.join(scratch, "base.parquet"), compression="zstd",
                               write_statistics=False)
        return ours, base
    return setup


def golden_memory(n: int) -> float:
    """One chunk's rows in memory at a time (measured about 3 KB a case), plus the chunk plan, plus
    the address space Parquet's thread pools map when first used (1.4 GiB measured)."""
    from emulator.golden.dataset import CHUNK_CASES
    return (3 << 29) + 4096 * min(n, CHUNK_CASES) + 256 * -(-n // CHUNK_CASES)


# issue 32: golden generation at least half as fast as pyarrow writing the same rows alone
GOLDEN_TARGET = 0.5

CASES.append(Case("golden.TADD.FP16", "pyarrow writing the same rows to Parquet (n = cases)",
                  golden_setup("TADD", "FP16"), GOLDEN_TARGET, memory=golden_memory))
CASES.append(Case("golden.TCVT.FP32.E4M3.sat", "pyarrow writing the same rows to Parquet (n = cases)",
                  golden_setup("TCVT", "FP32", "E4M3", sat=True), GOLDEN_TARGET, memory=golden_memory))


# The 68 partitions of `golden --ops TDIV,TREM,TCVT --dtypes FP16,S16` (issue 32's multi-partition
# dataset: 40 cases a partition at --n 2720), n cases spread evenly over them.
PARTITION_OPS, PARTITION_DTYPES = ("TDIV", "TREM", "TCVT"), ("FP16", "S16")


def partitions_setup(what: str):
    """golden.partitions: generating the 68-partition dataset against generating as many cases
    in one partition (TDIV FP16); verify.partitions / verify.oracle.partitions: verifying it
    (replay, or --oracle) against generating it.  Each partition gets n // 68 cases (at least
    one), so a small --n shows what a partition costs beyond its cases."""
    def setup(n: int):
        import atexit
        import os
        import shutil
        import tempfile

        from emulator.golden import dataset as D
        from emulator.golden.runner import settle_heap
        per = max(1, n // 68)
        many = D.Params(ops=PARTITION_OPS, dtypes=PARTITION_DTYPES, cases=per, seed=1)
        one = D.Params(ops=PARTITION_OPS[:1], dtypes=PARTITION_DTYPES[:1], cases=per * len(D.partitions(many)),
                       seed=1)
        try:
            plans = {p: D.chunks(p) for p in (many, one)}
        except D.GoldenError as exc:
            raise CommandError(f"--n {n}: {exc}", 2) from None
        scratch = tempfile.mkdtemp(prefix="tile-emu-bench-partitions-")   # scratch, removed when bench ends
        atexit.register(shutil.rmtree, scratch, True)

        def generate(p, folder):
            shutil.rmtree(folder, ignore_errors=True)
            records = [D.write_chunk(folder, p.to_json(), vars(pt), chunk, k) for pt, chunk, k in plans[p]]
            D.write_json(D.store.location(folder) / D.MANIFEST, D.manifest(p, records))

        dataset = os.path.join(scratch, "dataset")
        generate(many, dataset)
        settle_heap()
        gen_many = lambda: generate(many, os.path.join(scratch, "again"))     # noqa: E731
        if what == "golden":
            return gen_many, lambda: generate(one, os.path.join(scratch, "one"))
        if what == "verify":
            from emulator.golden.replay import verify
            return (lambda: verify(D.open_dataset(dataset), "cpu")), gen_many
        from emulator.golden.oracle import check
        return (lambda: check(dataset)), gen_many
    return setup


CASES.append(Case("golden.partitions", "the same cases generated in one partition (n = cases over 68 "
                  "partitions; --n 2720: 40 a partition)", partitions_setup("golden"), memory=golden_memory))
CASES.append(Case("verify.partitions", "generating the same 68-partition dataset (n = cases)",
                  partitions_setup("verify"), 0.5, memory=golden_memory))
CASES.append(Case("verify.oracle.partitions", "generating the same 68-partition dataset (n = cases)",
                  partitions_setup("oracle"), 0.5, memory=golden_memory))


STREAM_BLOCKS = 8


def golden_streams_setup(n: int):
    """`tile-emu golden --streams --blocks 8` in-process (generation on the batch engine,
    records, states, Parquet), n = stream-blocks (n / 8 streams over the four shape classes,
    new ones on every call), against pyarrow writing rows of one such call to Parquet alone."""
    import pyarrow.parquet as pq

    from emulator.golden import streams_dataset as SD
    from emulator.golden.runner import settle_heap
    streams = -(-n // STREAM_BLOCKS)
    shapes = tuple(s.name for s in SD.S.SHAPES)
    p = SD.StreamParams(blocks=STREAM_BLOCKS, cases=max(1, -(-streams // len(shapes))), seed=1, shapes=shapes)
    try:
        plan = SD.chunks(p)
    except SD.GoldenError as exc:
        raise CommandError(f"--n {n}: {exc}", 2) from None
    scratch = tempfile.mkdtemp(prefix="tile-emu-bench-streams-")
    atexit.register(shutil.rmtree, scratch, True)
    folder = os.path.join(scratch, "dataset")
    tables = [SD.chunk_table(p, part, k, m) for part, k, m in plan]
    settle_heap()                           # as `tile-emu golden --streams` does before its first chunk

    seeds = iter(range(2, 1 << 62))

    def ours():
        # a new seed every call, so each call draws new streams as a long run's chunks do: the same
        # streams again would find every per-key cache (conversion tables, compiled kernels,
        # interned descriptors) filled by the call before, and measured 1.5-2x what a real run gets
        shutil.rmtree(folder, ignore_errors=True)
        params = {**p.to_json(), "seed": next(seeds)}
        for part, k, m in plan:
            SD.write_chunk(folder, params, part.keys(), k, m)

    def base():
        for t in tables:
            pq.write_table(t, os.path.join(scratch, "base.parquet"), compression="zstd", write_statistics=False)
    return ours, base


def golden_streams_memory(n: int) -> float:
    """Parquet's thread pools' address space and, per 8-block stream, what the peak resident
    size grew by between n = 2^15 and 2^18 (21 KB: every chunk's table, which the baseline
    holds, 5.4-8.4 KB a stream in stream-row format 2, and the allocator's high-water mark around
    the chunk being built), rounded up by about a third."""
    return (3 << 29) + 28_000 * -(-n // STREAM_BLOCKS)


CASES.append(Case("golden.streams", "pyarrow writing one call's rows to Parquet (n = stream-blocks, 8-block streams, new streams each call)",
                  golden_streams_setup, GOLDEN_TARGET, memory=golden_streams_memory))


# ---------------------------------------------------------------- VCG reduce cases

VCG_STEPS = 64
# placement: (axes with the slice count, Slice, Time, Packet) as in benchmarks/bench_vcg.py
VCG_PLACEMENTS = {"packet": ("X = {slices}, R = 250", "X", "R # 256 / 4", "R # 256 % 4 # 8"),
                  "lanes": ("X = {slices}, A = 4, R = 60", "X", "R # 64", "A # 8")}


def vcg_setup(dtype: str, placement: str):
    """Float Add over R of n // 512 slices x 64 steps of 8-way flits on the Numba CPU backend
    (`tile-emu reduce`'s default) against the NumPy backend on the same flits, same bits."""
    def setup(n: int):
        from fabric.vcg import Mapping, compile_vcg, plan_reduce, reduce_flits, valid_size_matrix
        slices = max(1, n // (VCG_STEPS * 8))
        axes, *dims = VCG_PLACEMENTS[placement]
        m = Mapping.parse(axes.format(slices=slices), *dims)
        vs = valid_size_matrix(compile_vcg(m, "R"), slices, VCG_STEPS).reshape(-1)
        plan = plan_reduce(m, "R", "trim")
        x8 = _values({"float16": "FP16", "bfloat16": "BF16"}[dtype], slices * VCG_STEPS * 8, "TADD", 0)
        x8 = x8.reshape(-1, 8)
        return (lambda: reduce_flits(x8, vs, plan, "Add", "numba")), \
            (lambda: reduce_flits(x8, vs, plan, "Add", "numpy"))
    return setup


def _vcg_max_n() -> int:
    """vcg_setup's valid_size matrix of n // 512 slices x 64 steps is bounded by MAX_MATRIX_CELLS."""
    from fabric.vcg.valid import MAX_MATRIX_CELLS
    return (MAX_MATRIX_CELLS // VCG_STEPS + 1) * VCG_STEPS * 8 - 1


CASES.extend(Case(f"vcg.Add.{fmt}.{placement}", f"the NumPy reduce backend on the same flits "
                  f"(n elements = n // 512 slices x 64 steps x 8 lanes; {placement})",
                  vcg_setup(dtype, placement), 1.0, memory=per_element(18), max_n=_vcg_max_n())
             for fmt, dtype in (("FP16", "float16"), ("BF16", "bfloat16")) for placement in VCG_PLACEMENTS)


# ---------------------------------------------------------------- fabric simulator cases

def _fabric_setup(kind: str, instances: int):
    def setup(n: int):
        from fabric.sim.layered import bench_setup
        return bench_setup(kind, instances)(n)
    return setup


CASES.extend(Case(f"fabric.sim.{kind}" + (f".x{b}" if b > 1 else ""),
                  f"NumPy computing the same outputs layer by layer, no timing (n actor-cycles of the 1,000-actor "
                  f"layered graph, {b} instance(s), compiled engine; docs/performance.md)", _fabric_setup(kind, b))
             for kind in ("i32", "f32") for b in (1, 256))


# ---------------------------------------------------------------- start-up cases (issue 32, targets 7-8)

STARTUP_CYCLES = 200           # fabric sim: cycles of the 1,000-actor layered graph after starting


def _startup_files(scratch: str) -> dict:
    """What the start-up cases read, written once to `scratch`: a one-block text file (TADD FP32
    on 4 PEs x 4x16), its stream, a state holding its sources, and the layered fabric graph."""
    from emulator import Machine
    from emulator.stateio import save_state
    from fabric.sim.layered import layered_documents
    from isa import assemble_blocks, encode

    text = ("one:\nBSTART.VEC TADD, FP32\n    B.IOT t1@0b1111, t2@0b1111 -> t3@0b1111\n"
            "    B.DIM LB0=16, LB1=4\n")
    path = {name: os.path.join(scratch, name) for name in
            ("one.s", "one.tbs", "init.arrow", "layered.fabric.json", "layered.graph.json")}
    with open(path["one.s"], "w") as f:
        f.write(text)
    with open(path["one.tbs"], "wb") as f:
        f.write(encode(assemble_blocks(text)))
    m = Machine()
    ones = np.full((4, 16), 0x3F800000, np.uint32)
    for p in range(4):
        m.write_tile(p, 1, "FP32", ones)
        m.write_tile(p, 2, "FP32", ones)
    save_state(m, path["init.arrow"])
    fab, graph = layered_documents("f32", length=STARTUP_CYCLES)
    for name, doc in (("layered.fabric.json", fab), ("layered.graph.json", graph)):
        with open(path[name], "w") as f:
            json.dump(doc, f)
    return path


def startup_setup(argv: Callable[[dict, str], list[str]]):
    """One start of `tile-emu ARGS` in a fresh interpreter (this Python, `-m emulator.cli`, this
    process's environment), against `python -c pass`: ratio = interpreter start / command start
    (1.0: the command costs nothing beyond Python itself).  n is one start whatever --n says."""
    def setup(n: int):
        scratch = tempfile.mkdtemp(prefix="tile-emu-bench-startup-")     # removed when bench ends
        atexit.register(shutil.rmtree, scratch, True)
        path = _startup_files(scratch)
        ours = [sys.executable, "-m", "emulator.cli"] + argv(path, scratch)
        base = [sys.executable, "-c", "pass"]

        def start(cmd):
            def call():
                r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, cwd=scratch)
                if r.returncode != 0:
                    raise RuntimeError(f"{' '.join(cmd[2:])}: exit {r.returncode}: {r.stderr.decode()[-300:]}")
            return call
        return start(ours), start(base)
    return setup


STARTUP = {
    "version": lambda p, d: ["--version"],
    "asm": lambda p, d: ["asm", p["one.s"], "-o", os.path.join(d, "out.tbs")],
    "run": lambda p, d: ["run", p["one.tbs"], "--init", p["init.arrow"], "--out", os.path.join(d, "out.arrow"),
                         "-q"],
    "fabric.sim": lambda p, d: ["fabric", "sim", p["layered.graph.json"], "--fabric", p["layered.fabric.json"],
                                "--cycles", str(STARTUP_CYCLES)],
}
CASES.extend(Case(f"startup.{name}", "`python -c pass` started the same way (n = one start; docs/performance.md, "
                  "'Start-up')", startup_setup(argv), memory=lambda n: LIBRARY_BYTES, n=1)
             for name, argv in STARTUP.items())


# ---------------------------------------------------------------- runner

clock = time.perf_counter      # the timer of warm_up and measure (tests substitute a scripted one)

# A first call compiles, and the next few can still be slow (lazily compiled paths, tables built
# on first use): keep calling, untimed, while each call is clearly faster than the one before.
WARMUP_SETTLED = 0.8           # a call taking >= this fraction of the previous one: settled
WARMUP_MAX_CALLS = 8
WARMUP_MAX_SECONDS = 5.0       # a slow case at 2^20 elements stops warming after this long


def warm_up(fn: Callable[[], object]) -> int:
    """Call `fn` untimed until its time has settled; returns the number of calls made."""
    previous, spent = None, 0.0
    for calls in range(1, WARMUP_MAX_CALLS + 1):
        t0 = clock()
        fn()
        took = clock() - t0
        spent += took
        if (previous is not None and took >= WARMUP_SETTLED * previous) or spent >= WARMUP_MAX_SECONDS:
            return calls
        previous = took
    return WARMUP_MAX_CALLS


# A repeat is a loop of calls lasting at least this long, so that a call of tens of microseconds
# is timed over many calls (its first, still-cold call does not decide the result) and timer
# resolution does not matter.
MIN_REPEAT_SECONDS = 0.02
MAX_CALLS_PER_REPEAT = 10_000
MAX_REPEAT = 100               # --repeat: a repeat takes at least 2 x MIN_REPEAT_SECONDS; best of 100 is plenty


def _per_call(fn: Callable[[], object], number: int) -> float:
    t0 = clock()
    for _ in range(number):
        fn()
    return (clock() - t0) / number


def _calls_per_repeat(fn: Callable[[], object]) -> int:
    took = _per_call(fn, 1)
    if took <= 0:
        return MAX_CALLS_PER_REPEAT
    return max(1, min(MAX_CALLS_PER_REPEAT, int(np.ceil(MIN_REPEAT_SECONDS / took))))


def measure(case: Case, n: int, repeat: int, profile: str = "ieee") -> dict:
    """Best-of-`repeat` seconds per call of ours and of the baseline, each timed after `warm_up`;
    the two alternate repeat by repeat, so both see the same machine (load, clock speed).
    `profile`: the numeric profile of a case's own side (cases marked `profiled`); a case with
    its own element count (`Case.n`) runs at that count."""
    n = case.n or n
    ours, base = case.setup(n, profile) if case.profiled else case.setup(n)
    with np.errstate(all="ignore"):
        warm_up(ours)
        warm_up(base)
        n_ours, n_base = _calls_per_repeat(ours), _calls_per_repeat(base)
        t_ours = t_base = float("inf")
        for _ in range(repeat):
            t_ours = min(t_ours, _per_call(ours, n_ours))
            t_base = min(t_base, _per_call(base, n_base))
    ratio = t_base / t_ours
    from kernels.numeric.profiles import profile as numeric_profile
    p = numeric_profile(case.profile or profile)
    return {"case": case.name, "elements": n, "elements_per_s": n / t_ours,
            "profile": {"name": p.name, "version": p.version} if case.profiled or case.profile else None,
            "baseline_elements_per_s": n / t_base, "ratio": ratio, "target": case.target,
            "missed": case.target is not None and ratio < case.target, "baseline": case.baseline}


def target_text(r: dict) -> str:
    """The table's target column: '-' without a target, 'MISSED 4.00' below it, '4.00' at or above."""
    if r["target"] is None:
        return "-"
    return ("MISSED " if r["missed"] else "") + f"{r['target']:.2f}"


def machine_line() -> str:
    """What the numbers depend on: CPUs, load, Numba threads.  The compiled kernels are parallel,
    so on a machine busy with other work a call can wait a scheduler slice for each thread."""
    cpus = os.cpu_count() or 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    try:
        import numba
        threads = f"{numba.config.NUMBA_NUM_THREADS} Numba thread(s)"
    except ImportError:
        threads = "no Numba"
    line = f"machine: {cpus} CPU(s), {threads}" + ("" if load is None else f", load average {load:.1f}")
    if load is not None and load > cpus:
        line += " -- busy: parallel kernels are slowed by waiting threads (try NUMBA_NUM_THREADS=1)"
    return line


def select(prefixes: list[str] | None, cases: list[Case] | None = None) -> list[Case]:
    cases = CASES if cases is None else cases
    if not prefixes:
        return list(cases)
    chosen = [c for c in cases if any(c.name.startswith(p) for p in prefixes)]
    if not chosen:
        from isa.atomicio import shown          # a prefix is user text: escaped and cut
        raise CommandError(f"no benchmark case starts with {shown(', '.join(prefixes), 160)}; try --list", 2)
    return chosen


def available_bytes() -> int:
    """Bytes a new allocation can take now: the kernel's MemAvailable (free memory plus what it
    can reclaim; sysconf's free pages elsewhere), within what the address-space limit (ulimit -v,
    prlimit --as) leaves this process."""
    room = None
    try:
        with open("/proc/meminfo") as f:
            room = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError):
        pass
    if room is None:
        try:
            room = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError):
            room = 1 << 62                 # nothing says: the address-space limit alone bounds it
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit != resource.RLIM_INFINITY:
        used = 0
        try:
            with open("/proc/self/status") as f:
                used = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
        except (OSError, StopIteration, ValueError):
            pass
        room = min(room, max(0, limit - used))
    return room


def _size(nbytes: float) -> str:
    for unit, shift in (("EiB", 60), ("PiB", 50), ("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.1f} {unit}"
    return f"{int(nbytes)} bytes"


def largest_n(case: Case, room: float) -> int:
    """The largest n at which `case` fits its own structures (exactly) and `room` bytes (cut to
    three significant digits: the memory available moves a little from run to run)."""
    hi = case.max_n if case.max_n is not None else 1 << 62
    if case.memory(hi) <= room:
        return hi
    lo = 0                                 # memory(lo) <= room < memory(hi): bisect
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if case.memory(mid) <= room:
            lo = mid
        else:
            hi = mid
    cut = 10 ** max(0, len(str(lo)) - 3)
    return lo // cut * cut


def check_n(cases: list[Case], n: int, gpu: bool) -> None:
    """Before any case allocates: one line, exit 2, when some case cannot hold n elements here (its
    own structures, or the host memory available now), naming the largest n every case can hold;
    exit 3 when the device's free memory cannot."""
    if not cases:
        return
    room = available_bytes()
    limit, case = min(((largest_n(c, room), c) for c in cases if c.n is None), key=lambda lc: lc[0],
                      default=(n, None))
    if case is not None and n > limit:
        if case.max_n is not None and limit == case.max_n:
            why_not = f"{case.name} holds at most {case.max_n} elements"
        else:
            why_not = (f"{case.name} needs about {_size(case.memory(n))}, more than the {_size(room)} of memory "
                       f"available")
        who = "it" if len(cases) == 1 else "every selected case"
        raise CommandError(f"--n {n}: {why_not}; the largest n {who} can hold here now is {limit}", 2)
    if gpu:
        from emulator.backends import BackendError, check_device_memory
        for case in cases:
            if case.device_memory is not None:
                try:
                    check_device_memory(int(case.device_memory(n)))
                except BackendError as exc:
                    raise CommandError(f"--n {n}: {case.name}: {exc}", UNAVAILABLE) from None


def _available(case: Case) -> bool:
    if case.needs is None:
        return True
    try:
        __import__(case.needs)
    except ImportError:
        return False
    return True


def add_arguments(parser):
    parser.add_argument("--quick", action="store_true", help="smoke run: 2^14 elements, best of 2")
    parser.add_argument("--case", action="append", metavar="PREFIX", help="run cases whose name starts with PREFIX")
    parser.add_argument("--n", type=int, help="elements per case (default 2^20; --quick 2^14); more than a case can "
                        "hold in this machine's available memory is refused, naming the largest n that fits")
    parser.add_argument("--repeat", type=int, help="best of this many repeats, each a loop of calls of at least "
                        f"20 ms (default 7; --quick 2; at most {MAX_REPEAT})")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--json", action="store_true", help="one JSON object per case instead of the table")
    parser.add_argument("--strict", action="store_true", help="exit 1 when any case misses its target")
    parser.epilog = ("A case below its target is marked MISSED.  Exit status: 0, or with --strict 1 when a "
                     "target is missed; 2 for bad arguments; 3 for --backend gpu without a usable GPU.")
    parser.add_argument("--profile", default="ieee", metavar="NAME",
                        help="numeric profile of the numeric.* cases (default ieee; kernels.numeric.profiles)")
    parser.add_argument("--backend", choices=("cpu", "gpu"), default="cpu",
                        help="cpu: NumPy/Numba on the host (default); gpu: CuPy arrays on the device, "
                             "ratios against the device copy bandwidth (default 2^24 elements)")


def _gpu_cases() -> list[Case]:
    from kernels.device import gpu_status
    ok, why = gpu_status()
    if not ok:
        raise CommandError(f"backend gpu: no usable GPU: {why}", UNAVAILABLE)
    return GPU_CASES


def run(args) -> int:
    from kernels.numeric.profiles import UnknownProfile, known, profile as numeric_profile
    profile = getattr(args, "profile", "ieee")
    try:
        numeric_profile(profile)
    except UnknownProfile:
        raise CommandError(f"--profile {profile!r}: unknown numeric profile; known: {known()}", 2) from None
    gpu = getattr(args, "backend", "cpu") == "gpu"
    cases = select(args.case, GPU_CASES if args.list and gpu else (_gpu_cases() if gpu else CASES))
    if args.list:
        for c in cases:
            print(f"{c.name:24} baseline: {c.baseline}" + (f"  (target >= {c.target}x)" if c.target else ""))
        return 0
    n = args.n if args.n is not None else (1 << 14 if args.quick else 1 << (24 if gpu else 20))
    repeat = args.repeat if args.repeat is not None else (2 if args.quick else 7)
    if n < 1 or repeat < 1:
        raise CommandError("--n and --repeat must be positive", 2)
    if repeat > MAX_REPEAT:
        raise CommandError(f"--repeat {repeat}: at most {MAX_REPEAT} (each repeat times both callables for at "
                           f"least {MIN_REPEAT_SECONDS:g} s)", 2)
    check_n([c for c in cases if _available(c)], n, gpu)
    if not args.json:
        p = numeric_profile(profile)
        print(machine_line() + f"; numeric profile {p.name} {p.version}")
        print(f"{'case':24} {'M elem/s':>10} {'baseline':>10} {'ratio':>7} {'target':>14}  baseline")
    missed = []
    for case in cases:
        if not _available(case):
            print(f"{case.name:24} skipped: needs {case.needs}" if not args.json else
                  json.dumps({"case": case.name, "skipped": f"needs {case.needs}"}))
            continue
        r = measure(case, n, repeat, profile)
        if r["missed"]:
            missed.append(r)
        if args.json:
            print(json.dumps(r))
        else:
            print(f"{r['case']:24} {_millions(r['elements_per_s'])} {_millions(r['baseline_elements_per_s'])} "
                  f"{r['ratio']:7.2f} {target_text(r):>14}  {r['baseline']}")
    if missed and not args.json:
        print(f"{len(missed)} case(s) MISSED their target: {', '.join(r['case'] for r in missed)}")
    if missed and args.strict:
        for r in missed:
            print(f"tile-emu bench: {r['case']} MISSED its target: ratio {r['ratio']:.2f} < {r['target']:.2f}",
                  file=sys.stderr)
        return 1
    return 0


def _millions(per_s: float) -> str:
    """A rate in millions for the table, 10 wide: three decimals below one million (a
    golden.streams run of 48,000 stream-blocks/s reads 0.048, not 0.0); below a thousand a
    second, three significant digits (a start-up case's 3.1 starts/s reads 3.1e-06)."""
    m = per_s / 1e6
    return f"{m:10.1f}" if m >= 1 else f"{m:10.3f}" if m >= 1e-3 else f"{m:10.3g}"
