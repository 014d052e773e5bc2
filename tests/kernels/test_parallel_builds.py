"""Every parallel build writes the bits and flags of its serial build.

A call of at least fast.PARALLEL_MIN elements runs a loop's parallel build (Numba parallel=True,
`fast.Twin.parallel`) when a core is idle; the suite, run with -n 2, rarely meets one, and the
BF16 conversion loops' parallel builds once wrote wrong bits that no test saw (a prange over the
elements of views made in the loop; docs/numerics.md).  So here each parallel build runs
itself, with every thread Numba has, on 2^18 + 37 elements of random encodings rich in NaN
payloads, infinities, zeros and subnormals, read from a start that is not 64-byte aligned and
written to outputs made as the callers make them, and must write what its serial build writes
(the serial builds are proven against the references by the other kernel tests); a few are
also held to the reference itself.

The loops come from the tables the code keeps, never a hand list: every compiled tier's kernel
rows (fast.REGISTRY, each row's `Kernel.loop`, and fast.gather / lookup1 / lookup2), the
conversion tables (fastconvert.FAST_PAIRS, WIDEN_PAIRS, STATUS_PAIRS, FLUSH_AFTER, and the
integer FP32 -> FP16 loop used where the CPU has no half conversion), the batch engine's fused
passes (emulator.batchfuse._loop / _screened_loop of every 'raw' and 'bits' kernel) and the
fabric's compiled fold (fabric/vcg/jit.py, every dtype the reduce supports);
test_the_audit_covers_every_twin_made fails when a Twin is made that none of these reaches.  By
default one loop of every template, kind and arity runs; `-m slow` runs every loop of every row,
both ftz settings, and every dtype and op of the fold.  Why the split is compile time: each
parallel build compiles in 1-3 s the first time, then loads from Numba's disk cache (measured on
the 2-core container, load 1.4-4: the default 45 tests about 80 s cold and 6 s warm, the whole
sweep of 281 about 6 minutes cold and 17 s warm).
"""
from __future__ import annotations

import numba as nb
import numpy as np
import pytest

from isa.datatypes import datatype
from kernels.numeric import fast, fastconvert as fc, formats, tiers
from kernels.numeric.convert import convert_generic
from kernels.numeric.elementwise import elementwise
from kernels.numeric.interp import interpreted

N = (1 << 18) + 37          # >= PARALLEL_MIN, and no whole number of blocks or threads' shares
FIRST = 3                   # operands start 3 elements into their array: not 64-byte aligned

tiers.load_compiled()


@pytest.fixture(autouse=True)
def every_thread():
    """Every thread Numba has (a parallel region splits its range among them)."""
    before = nb.get_num_threads()
    nb.set_num_threads(nb.config.NUMBA_NUM_THREADS)
    yield
    nb.set_num_threads(before)


def codes(name: str, n: int = N, seed: int = 0) -> np.ndarray:
    """n random encodings of format `name` in its container, a view starting FIRST elements into
    its array: half with a random exponent, half with the exponent 0, 1, max-1 or all ones (zeros,
    subnormals, the binade edges, infinities and NaNs), significands random (quiet and signalling
    NaN payloads), zero or only the top bit set."""
    f = formats.FORMATS[name]
    raw = np.dtype(datatype(name).raw_dtype)
    rng = np.random.default_rng(seed)
    m = n + FIRST
    top = (1 << f.ebits) - 1
    edge = rng.choice(np.array([0, 1, top - 1, top], np.uint64), m)
    e = np.where(rng.random(m) < 0.5, rng.integers(0, top + 1, m, dtype=np.uint64), edge)
    sig = rng.integers(0, 1 << f.t, m, dtype=np.uint64)
    pick = rng.random(m)
    sig = np.where(pick < 0.2, np.uint64(0), np.where(pick < 0.3, np.uint64(1 << (f.t - 1)), sig))
    sign = rng.integers(0, 2, m, dtype=np.uint64) << np.uint64(f.width - 1)
    room = ((sign | (e << np.uint64(f.t)) | sig) << np.uint64(f.shift)).astype(raw)
    return room[FIRST:]


def same(a, b):
    """Bit-identical arrays (any dtype: compared as the bytes they hold)."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def both(fn):
    """fn(build) run with a Twin's serial and its parallel build: (serial's, parallel's)."""
    return fn("serial"), fn("parallel")


# ---------------------------------------------------------------- element-wise kernels

def _kernel_rows():
    """(tier, DataType, op) -> Kernel of every compiled tier's row."""
    return {(t, n, op): k for t, rows in fast.REGISTRY.items() for (n, op), k in rows.items()}


def _one_row_per_loop():
    """The first row of each distinct compiled loop (rows of one routine share it)."""
    seen = {}
    for key, k in _kernel_rows().items():
        seen.setdefault((k.kind if k.kind in fast.READERS else "map", k.arity, k.scalar, k.fix), key)
    return list(seen.values())


def _one_row_per_template():
    """One row of every template: kind ('bits', 'vals', 'f32', 'f64', 'raw'), arity, fix pass."""
    seen = {}
    for key in _one_row_per_loop():
        k = _kernel_rows()[key]
        seen.setdefault((k.kind, k.arity, k.fix is None), key)
    return list(seen.values())


def _ids(rows):
    return ["-".join(r) for r in rows]


def _launch(k, name, operands, ftz, build):
    """launch's (bits, flags) of kernel k by `build` of its loop; the operand gather (kind
    'vals') by the serial gather, whose parallel build has its own test."""
    return fast.launch(k, operands, ftz, getattr(k.loop, build), gather_values=fast.gather.serial)


def _check_kernel(row, ftz):
    tier, name, op = row
    k = _kernel_rows()[row]
    operands = [codes(name, seed=s) for s in range(k.arity)]
    (b0, f0), (b1, f1) = both(lambda build: _launch(k, name, operands, ftz, build))
    assert same(b0, b1) and same(f0, f1), (row, ftz)


TEMPLATE_ROWS = _one_row_per_template()
LOOP_ROWS = _one_row_per_loop()
ALL_ROWS = list(_kernel_rows())


@pytest.mark.parametrize("row", TEMPLATE_ROWS, ids=_ids(TEMPLATE_ROWS))
def test_every_template_parallel_build_computes_as_its_serial_build(row):
    _check_kernel(row, False)


@pytest.mark.slow
@pytest.mark.parametrize("row", ALL_ROWS, ids=_ids(ALL_ROWS))
@pytest.mark.parametrize("ftz", [False, True])
def test_every_kernel_row_parallel_build_computes_as_its_serial_build(row, ftz):
    _check_kernel(row, ftz)


@pytest.mark.parametrize("op, name", [("TADD", "FP32"), ("TFMA", "FP16"), ("TMUL", "BF16")])
def test_a_parallel_build_settled_by_the_reference_is_the_reference(op, name):
    """The registry's fast-tier loop on its parallel build, its marked elements handed to the
    reference (the tiers' hand-off), against the reference alone."""
    k = fast.REGISTRY["fast"][(name, op)]
    operands = [codes(name, seed=s) for s in range(k.arity)]
    bits, flags = _launch(k, name, operands, False, "parallel")
    fast.settle_marked(bits, flags, operands,
                       lambda ops: elementwise(op, name, *ops, profile="ieee"))
    with interpreted():
        ref_bits, ref_flags = elementwise(op, name, *operands, profile="ieee")
    assert same(bits, ref_bits) and same(flags, ref_flags)


def test_the_gather_and_table_reads_parallel_builds_read_as_their_serial_builds():
    a16 = codes("FP16")
    V = fast.params("FP16", False).values
    g0, g1 = both(lambda build: getattr(fast.gather, build)(V, a16))
    assert same(g0, g1) and same(g0, V[a16])
    a8, b8 = codes("E4M3"), codes("E5M2", seed=2)
    rng = np.random.default_rng(5)
    bt1, ft1 = rng.integers(0, 256, 256, dtype=np.uint8), rng.integers(0, 32, 256, dtype=np.uint8)
    bt2, ft2 = rng.integers(0, 256, 1 << 16, dtype=np.uint8), rng.integers(0, 32, 1 << 16, dtype=np.uint8)

    def read(loop, *args):
        return lambda build: _filled(getattr(loop, build), *args)
    r0, r1 = both(read(fast.lookup1, bt1, ft1, a8))
    assert same(r0[0], r1[0]) and same(r0[1], r1[1]) and same(r0[0], bt1[a8]) and same(r0[1], ft1[a8])
    r0, r1 = both(read(fast.lookup2, bt2, ft2, a8, b8))
    k = (a8.astype(np.intp) << 8) | b8
    assert same(r0[0], r1[0]) and same(r0[1], r1[1]) and same(r0[0], bt2[k]) and same(r0[1], ft2[k])


def _filled(fn, bt, ft, *index):
    bits, flags = np.empty(index[0].size, bt.dtype), np.empty(index[0].size, np.uint8)
    fn(bt, ft, *index, bits, flags)
    return bits, flags


# ---------------------------------------------------------------- conversions

def _conversion_loops():
    """(label, Twin, source format, destination format, takes ftz) of every conversion loop the
    tables hold, and the integer FP32 -> FP16 loop (FAST_PAIRS' where the CPU has no half
    conversion; built here as a Twin where it has one)."""
    out = []
    for table in (fc.FAST_PAIRS, fc.WIDEN_PAIRS):
        for (s, d), tw in table.items():
            out.append((f"{tw.__name__}", tw, s, d, d == "BF16" or s != "FP32"))
    if fc.FAST_PAIRS[("FP32", "FP16")].py_func is not fc._fp32_to_fp16_rne:
        out.append(("_fp32_to_fp16_rne", fast.Twin(fc._fp32_to_fp16_rne, outputs=2), "FP32", "FP16", False))
    return out


CONVERSIONS = _conversion_loops()


def _convert(tw, build, u, ftz_arg, room):
    """A conversion loop's (bits, flags), its outputs with `room` spare elements as direct() gives
    them (64 bytes more: the loop places its results) or none as widen() and fast_rne() do."""
    out = np.uint16 if tw.py_func.__name__.startswith("_fp32") else np.uint32
    ob = np.empty(u.size + room * 64 // np.dtype(out).itemsize, out)
    of = np.empty(u.size + room * 64, np.uint8)
    at = getattr(tw, build)(u, *ftz_arg, ob, of)
    s1, s2 = divmod(at, 64)
    return ob[s1:s1 + u.size].copy(), of[s2:s2 + u.size].copy()


@pytest.mark.parametrize("label, tw, s, d, takes_ftz", CONVERSIONS, ids=[c[0] for c in CONVERSIONS])
@pytest.mark.parametrize("room", [0, 1])
def test_every_conversion_loop_parallel_build_converts_as_the_reference(label, tw, s, d, takes_ftz, room):
    u = codes(s)
    for ftz in ((False, True) if takes_ftz else (False,)):
        args = (ftz,) if takes_ftz else ()
        (b0, f0), (b1, f1) = both(lambda build: _convert(tw, build, u, args, room))
        assert same(b0, b1) and same(f0, f1), (label, ftz)
        ref_b, ref_f = convert_generic(u, datatype(s), datatype(d), "RNE", False, ftz)
        assert same(b1, ref_b) and same(f1, ref_f), (label, ftz)


def test_the_flush_pass_parallel_build_flushes_as_its_serial_build():
    """FLUSH_AFTER (profile ftz after FP32 -> FP16): in place on the serial conversion's results,
    and the pair then gives the reference's ftz conversion."""
    u = codes("FP32")
    ob, of = np.empty(u.size, np.uint16), np.empty(u.size, np.uint8)
    fc.FAST_PAIRS[("FP32", "FP16")].serial(u, ob, of)

    def flush(build):
        b, f = ob.copy(), of.copy()
        getattr(fc.FLUSH_AFTER, build)(u, np.uint32(0x0400), b, f)
        return b, f
    (b0, f0), (b1, f1) = both(flush)
    ref_b, ref_f = convert_generic(u, datatype("FP32"), datatype("FP16"), "RNE", False, True)
    assert same(b0, b1) and same(f0, f1) and same(b1, ref_b) and same(f1, ref_f)


@pytest.mark.skipif(not fc.STATUS_PAIRS, reason="no status loop without the CPU's half conversion")
@pytest.mark.parametrize("groups", [1, 7, 4096])
def test_the_status_loop_parallel_build_gives_the_serial_bits_and_statuses(groups):
    loop = fc.STATUS_PAIRS[("FP32", "FP16")]
    u = codes("FP32", n=N - N % groups)

    def run(build):
        ob, status = np.empty(u.size + 32, np.uint16), np.empty(groups, np.uint8)
        s1 = getattr(loop, build)(u, groups, status, ob)
        return ob[s1:s1 + u.size].copy(), status
    (b0, s0), (b1, s1) = both(run)
    ref_b, ref_f = convert_generic(u, datatype("FP32"), datatype("FP16"), "RNE", False, False)
    assert same(b0, b1) and same(s0, s1) and same(b1, ref_b)
    assert same(s1, np.bitwise_or.reduce(ref_f.reshape(groups, -1), axis=1))


# ---------------------------------------------------------------- the batch engine's fused passes

def _fused_loops():
    """(label, Twin, Kernel, name) of the fused pass of every distinct 'raw' / 'bits' routine
    (batchfuse._loop) and of every screened one (_screened_loop)."""
    from emulator import batchfuse
    out, seen = [], set()
    for (tier, name, op), k in _kernel_rows().items():
        if k.kind not in batchfuse.TEMPLATES_KINDS or (k.kind, k.arity, k.scalar) in seen:
            continue
        seen.add((k.kind, k.arity, k.scalar))
        out.append((f"fuse-{tier}-{name}-{op}", batchfuse._loop(k.kind, k.arity, k.scalar), k, name))
        screened = batchfuse._screened_loop(k.arity, k.scalar) if k.kind == "raw" else None
        if screened is not None:
            out.append((f"screened-{tier}-{name}-{op}", screened, k, name))
    return out


FUSED = _fused_loops()
FUSED_DEFAULT = list({(f[2].kind, f[2].arity, f[0].split("-")[0]): f for f in FUSED}.values())


def _fused_run(tw, k, name, build, whole):
    """A pass over P tiles of 16 x 16 sources (every element defined but one tile's), as
    Program.run calls it: packed 16 x 16 results, or (`whole`) 15 x 13 valid in 16 x 16
    destination tiles padded with a fill."""
    P, Row, Col = (N // 256) + 3, 16, 16
    raw = np.dtype(datatype(name).raw_dtype)
    srcs = [codes(name, n=P * Row * Col, seed=s).reshape(P, Row * Col) for s in range(k.arity)]
    srcs += srcs[-1:] * (3 - k.arity)
    defs = [np.ones((P, Row * Col), np.uint8) for _ in range(3)]
    defs[0][5, 17] = 0
    vr, vc = (15, 13) if whole else (16, 16)
    tile, ocol = (Row * Col, Col) if whole else (vr * vc, vc)
    step, rows, width = ((tile, 0), 1, vr * vc) if vc == Col == ocol else ((tile, ocol), vr, vc)
    from emulator import batchfuse
    extra = batchfuse.flat_extra(fast.params(k.format, False), k.op) if k.kind == "bits" else ()
    status, undefined = np.empty(P, np.uint8), np.empty(P, np.bool_)
    out = np.full(P * tile, 0x5A, raw)
    got = getattr(tw, build)(tuple(srcs), tuple(defs), True, step, rows, width, Col, extra,
                             (tile, ocol, vr, vc), raw.type(7), status, undefined, out)
    return got, status, undefined, out


def _check_fused(label, tw, k, name):
    for whole in (False, True):
        (g0, s0, u0, o0), (g1, s1, u1, o1) = both(lambda build: _fused_run(tw, k, name, build, whole))
        assert g0 == g1 and same(s0, s1) and same(u0, u1) and same(o0, o1), (label, whole)
        assert u1.sum() == 1 and u1[5]


@pytest.mark.parametrize("label, tw, k, name", FUSED_DEFAULT, ids=[f[0] for f in FUSED_DEFAULT])
def test_every_fused_pass_template_parallel_build_computes_as_its_serial_build(label, tw, k, name):
    _check_fused(label, tw, k, name)


@pytest.mark.slow
@pytest.mark.parametrize("label, tw, k, name", FUSED, ids=[f[0] for f in FUSED])
def test_every_fused_pass_parallel_build_computes_as_its_serial_build(label, tw, k, name):
    _check_fused(label, tw, k, name)


# ---------------------------------------------------------------- the fabric's compiled fold

def _fold_cases():
    """(dtype, op) of the fold (fabric/vcg/jit.py, one Twin specialised per dtype): by default
    the 16-bit floats, binary32 and one integer type on Add; -m slow every dtype the reduce
    supports on every op the dtype takes."""
    from fabric.vcg.fold import OP_CODES
    from fabric.vcg.reduce import SUPPORTED_DTYPES, check_op
    default = {np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int32), SUPPORTED_DTYPES[9]}
    cases = []
    for dt in SUPPORTED_DTYPES:
        for op in OP_CODES:
            try:
                check_op(op, dt)
            except ValueError:
                continue
            marks = () if (dt in default and op == "Add") else (pytest.mark.slow,)
            cases.append(pytest.param(dt, op, marks=marks, id=f"{dt.name}-{op}"))
    return cases


@pytest.mark.parametrize("dtype, op", _fold_cases())
def test_the_fold_parallel_build_reduces_as_its_serial_build(monkeypatch, dtype, op):
    """fabric/vcg/jit.py's reduce on 8,192 slices x 8 flits x 8 lanes (2^19 elements, random
    bit patterns: NaN payloads, infinities, zeros, subnormals), its parallel build (the prange
    over slices) chosen, then its serial one."""
    from fabric.vcg import Mapping, compile_vcg, jit, plan_reduce, reduce_flits, valid_size_matrix
    m = Mapping.parse("X = 8192, R = 60", "X", "R # 64 / 8", "R # 64 % 8")
    vs = valid_size_matrix(compile_vcg(m, "R"), m.num_slices, m.num_steps).reshape(-1)
    plan = plan_reduce(m, "R", "split")
    rng = np.random.default_rng(7)
    raw = np.dtype(f"u{dtype.itemsize}")
    x8 = rng.integers(0, (1 << 8 * dtype.itemsize) - 1, (m.num_slices * m.num_steps, 8), dtype=np.uint64,
                      endpoint=True).astype(raw).view(dtype)

    def fold(build):
        monkeypatch.setattr(jit, "_use_parallel", lambda steps: build == "parallel")
        return reduce_flits(x8, vs, plan, op, "numba")
    (o0, v0), (o1, v1) = both(fold)
    assert same(o0, o1) and same(v0, v1)


def test_the_audit_covers_every_twin_made():
    """Every fast.Twin made by the modules audited here is one this module runs (a Twin added
    elsewhere later must be added here): the kernel loops, the gathers and table reads, the
    conversion loops, the fused passes and the fabric's fold."""
    from fabric.vcg import jit
    for (tier, name, op) in ALL_ROWS:
        fast.REGISTRY[tier][(name, op)].loop     # noqa: B018  -- built, as the slow sweep runs them
    covered = {id(fast.REGISTRY[t][(n, o)].loop) for t, n, o in ALL_ROWS}
    covered |= {id(fast.gather), id(fast.lookup1), id(fast.lookup2), id(fc.FLUSH_AFTER), id(jit._kernel_twin)}
    covered |= {id(c[1]) for c in CONVERSIONS} | {id(t) for t in fc.STATUS_PAIRS.values()}
    covered |= {id(f[1]) for f in FUSED}
    missing = [tw.__name__ for tw in fast.Twin.every if id(tw) not in covered]
    assert not missing, missing
