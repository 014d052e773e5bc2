"""The SIMD fast paths (kernels/numeric/fastvec.py: TADD/TSUB/TMUL/TFMA on FP32, BF16 and FP16,
profile ieee) give the correctly rounded result and flags, and small inputs stay out of parallel regions.

Independent references: Berkeley SoftFloat (softfloatpy) for FP32 and FP16, the exact-rational
reference of op_reference.py for BF16, on random codes over the whole range (NaNs, infinities,
subnormals) and on the cases each shortcut of fastvec.py must get right or mark: FMA results
exactly halfway between two binary32 values with a nonzero error term, products at the 2^+-100
limits of the TwoProduct shortcut, BF16 products below 2^-125, FP16 results around its
subnormal range and tininess threshold, overflow by the last rounding,
zeros of both signs.  Millions of random operands are also compared with ops_float, itself
checked against the same references in test_ops_float.py.
"""
import numpy as np
import pytest

import op_reference as R
from kernels import numeric
from isa.datatypes import datatype
from kernels.numeric import fast, fastvec, ops_float, tiers
from kernels.numeric.profiles import PROFILES
from test_ops_float import assert_same, edge_and_random, softfloat
import tier_helpers as TH

IEEE = PROFILES["ieee"]
REF = {"TADD": ops_float.tadd, "TSUB": ops_float.tsub, "TMUL": ops_float.tmul, "TFMA": ops_float.tfma}
KERNELS = fast.rows("fastvec")            # the tier's rows of the kernel registry
CASES = [(op, name) for name, op in KERNELS]
FORMATS = sorted({name for name, _ in KERNELS})
RAW = {"FP32": np.uint32, "BF16": np.uint16, "FP16": np.uint16}


def arity(op):
    return 3 if op == "TFMA" else 2


def f32(x):
    with np.errstate(over="ignore"):             # out-of-range test values become infinities
        return np.asarray(x, np.float32).view(np.uint32)


def f16(x):
    with np.errstate(over="ignore"):
        return np.asarray(x).astype(np.float16)


def run(op, name, *ops):
    # as numeric.elementwise does: the reference fallback computes on NaN/inf operands
    return TH.run("fastvec", op, name, *ops)


def independent(op, name, *ops):
    return R.reference(op, name, *ops) if name == "BF16" else softfloat(op, name, *ops)


def fma_ties(n, seed):
    """a*b + c whose binary64 sum s is exactly halfway between two binary32 values while the
    exact value is not: c = m * 2^E (odd and even m), a*b = 2^(E-24) * (1 +- 2^-46)."""
    rng = np.random.default_rng(seed)
    E = rng.integers(-90, 100, n)
    m = rng.integers(1 << 23, 1 << 24, n).astype(np.float64)
    c = m * np.exp2(E - 23.0)
    k = rng.integers(-20, 20, n)
    up = rng.random(n) < 0.5
    a = (1 + 2.0 ** -23) * np.exp2(k.astype(float))
    b = np.where(up, 1 + 2.0 ** -23, 1 - 2.0 ** -23) * np.exp2((E - 24 - k).astype(float))
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return f32(a * sign), f32(b), f32(c * sign)


def mul_limits(n, seed):
    """Products and operands around 2^+-100 and 2^+-126, and huge-by-tiny products."""
    rng = np.random.default_rng(seed)
    ea = rng.integers(-140, 128, n)
    eb = np.clip(rng.choice([-100, 100, -126, 0, -1, 1, 127, -149], n) - ea + rng.integers(-2, 3, n), -149, 127)
    a = rng.uniform(1, 2, n) * np.exp2(ea.astype(float))
    b = rng.uniform(1, 2, n) * np.exp2(eb.astype(float))
    return f32(a), f32(b)


@pytest.mark.parametrize("op,name", CASES)
def test_random_codes_match_the_independent_reference(op, name):
    ops = [edge_and_random(name, 3000, 11 + k) for k in range(arity(op))]
    rng = np.random.default_rng(5)
    ops = [ops[0]] + [x[rng.permutation(len(x))] for x in ops[1:]]
    assert_same(f"{op}.{name}", run(op, name, *ops), independent(op, name, *ops), ops)


@pytest.mark.parametrize("op,name", CASES)
def test_edge_cross_product_matches_the_independent_reference(op, name):
    e = edge_and_random(name, 0, 0)
    if op == "TFMA":
        e = e[::2]                                     # one sign of each edge: 28^3 triples
    grids = [g.ravel() for g in np.meshgrid(*([e] * arity(op)), indexing="ij")]
    assert_same(f"{op}.{name}", run(op, name, *grids), independent(op, name, *grids), grids)


def test_fp32_fma_halfway_sums_with_a_nonzero_error_round_by_the_error():
    a, b, c = fma_ties(2000, 1)
    assert_same("TFMA.FP32 ties", run("TFMA", "FP32", a, b, c), softfloat("TFMA", "FP32", a, b, c), (a, b, c))


def test_fp32_fma_cancellation_and_far_apart_addends():
    """c = -RN(a*b) leaves r = the product's tiny error (c and r 2^24 and more apart: marked);
    c far below or above a*b makes c - r inexact in binary64 unless marked."""
    rng = np.random.default_rng(8)
    n = 3000
    a = rng.standard_normal(n).astype(np.float32) * np.exp2(rng.integers(-60, 60, n)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    p = (a.astype(np.float64) * b).astype(np.float32)
    kind = rng.integers(0, 3, n)
    c = np.where(kind == 0, -p, np.where(kind == 1, p * np.float32(2.0 ** -40), p * np.float32(2.0 ** 40)))
    ops = (f32(a), f32(b), f32(c.astype(np.float32)))
    assert_same("TFMA.FP32 cancel", run("TFMA", "FP32", *ops), softfloat("TFMA", "FP32", *ops), ops)


def test_fp32_products_at_the_limits_of_the_two_product_shortcut():
    a, b = mul_limits(4000, 2)
    assert_same("TMUL.FP32 limits", run("TMUL", "FP32", a, b), softfloat("TMUL", "FP32", a, b), (a, b))


def test_bf16_products_below_the_normal_range_and_sums_that_overflow():
    rng = np.random.default_rng(3)
    a32, b32 = mul_limits(3000, 4)
    a = (a32 >> np.uint32(16)).astype(np.uint16)
    b = (b32 >> np.uint32(16)).astype(np.uint16)
    assert_same("TMUL.BF16 limits", run("TMUL", "BF16", a, b), R.reference("TMUL", "BF16", a, b), (a, b))
    big = (0x7F00 + rng.integers(0, 0x80, 2000)).astype(np.uint16) | np.where(rng.random(2000) < 0.5, 0x8000, 0).astype(np.uint16)
    other = big[rng.permutation(2000)] ^ np.where(rng.random(2000) < 0.5, 0x8000, 0).astype(np.uint16)
    for op in ("TADD", "TSUB"):
        assert_same(f"{op}.BF16 overflow", run(op, "BF16", big, other), R.reference(op, "BF16", big, other), (big, other))


def test_fp16_results_around_the_subnormal_range_and_the_tininess_threshold():
    rng = np.random.default_rng(6)
    small = np.concatenate([np.arange(0, 3 << 10), np.arange(0x8000, 0x8000 + (3 << 10))]).astype(np.uint16)
    a = small[rng.integers(0, small.size, 20000)]
    b = np.where(rng.random(20000) < 0.5, small[rng.integers(0, small.size, 20000)],
                 rng.integers(0x3000, 0x4000, 20000) | np.where(rng.random(20000) < 0.5, 0x8000, 0)).astype(np.uint16)
    for op in ("TADD", "TSUB", "TMUL"):
        assert_same(f"{op}.FP16 small", run(op, "FP16", a, b), softfloat(op, "FP16", a, b), (a, b))


@pytest.mark.parametrize("name", FORMATS)
def test_zero_results_carry_the_ieee_sign(name):
    z, nz = (0, 0x80000000) if name == "FP32" else (0, 0x8000)
    one = {"FP32": 0x3F800000, "BF16": 0x3F80, "FP16": 0x3C00}[name]
    dt = RAW[name]
    a = np.array([z, nz, nz, one, one | nz, z, nz], dt)
    b = np.array([z, nz, z, one | nz, one, nz, z], dt)
    for op in ("TADD", "TSUB", "TMUL"):
        assert_same(f"{op}.{name} zeros", run(op, name, a, b), independent(op, name, a, b), (a, b))
    if (name, "TFMA") not in KERNELS:
        return
    c = b[::-1].copy()
    assert_same(f"TFMA.{name} zeros", run("TFMA", name, a, b, c), independent("TFMA", name, a, b, c), (a, b, c))


@pytest.mark.parametrize("op,name", CASES)
def test_many_random_operands_match_ops_float(op, name):
    rng = np.random.default_rng(hash((op, name, 9)) % 2 ** 32)
    raw = RAW[name]
    n = 1 << 17
    ops = []
    for _ in range(arity(op)):
        vals = rng.standard_normal(n) * np.exp2(rng.integers(-30, 30, n).astype(float))
        codes = {"FP32": lambda: f32(vals), "BF16": lambda: (f32(vals) >> np.uint32(16)).astype(raw),
                 "FP16": lambda: f16(vals).view(raw)}[name]()
        codes[: n // 8] = rng.integers(0, np.iinfo(raw).max, n // 8, dtype=np.uint64).astype(raw)
        ops.append(codes)
    with np.errstate(all="ignore"):
        want = REF[op](name, *ops, prof=IEEE)
    assert_same(f"{op}.{name}", run(op, name, *ops), want, ops)


def test_ftz_profile_and_other_formats_are_not_served_here():
    def placed(op, name, prof):
        return tiers.select(op, datatype(name), prof, 3 if op == "TFMA" else 2).name
    assert placed("TADD", "FP32", PROFILES["ftz"]) != "fastvec"
    assert placed("TDIV", "FP32", IEEE) != "fastvec" and placed("TADD", "TF32", IEEE) != "fastvec"
    assert all(placed(op, name, IEEE) == "fastvec" for op, name in CASES)


def test_a_small_input_never_enters_a_parallel_region():
    before = dict(fast.Twin.calls)
    for size in (1, 1024, fast.PARALLEL_MIN - 1):
        x = np.full(size, 0x3F800000, np.uint32)
        numeric.elementwise("TADD", "FP32", x, x)
        numeric.elementwise("TADD", "FP16", x.astype(np.uint16), x.astype(np.uint16))
        numeric.elementwise("TADD", "E4M3", x.astype(np.uint8), x.astype(np.uint8))
    assert fast.Twin.calls["parallel"] == before["parallel"]
    assert fast.Twin.calls["serial"] >= before["serial"] + 9


@pytest.mark.parametrize("idle", (True, False))
def test_a_large_input_runs_the_parallel_build_only_with_threads_and_an_idle_core(monkeypatch, idle):
    import numba
    monkeypatch.setattr(fast, "idle_core", lambda: idle)
    x = np.full(fast.PARALLEL_MIN, 0x3F800000, np.uint32)
    before = dict(fast.Twin.calls)
    bits, _ = numeric.elementwise("TADD", "FP32", x, x)
    assert (bits == 0x40000000).all()
    grew = fast.Twin.calls["parallel"] - before["parallel"]
    assert grew == (1 if idle and numba.get_num_threads() > 1 else 0)


def test_each_loop_runs_its_own_scalar_routine_and_caches_apart_from_its_parallel_build():
    names = set()
    for (name, op), k in KERNELS.items():
        twin = k.loop
        assert twin.py_func.__globals__["SCALAR"] is k.scalar
        assert k.scalar is getattr(fastvec, f"{name.lower()}_{op[1:].lower()}")
        assert twin.py_func.__name__.endswith(f"fastvec_{name.lower()}_{op[1:].lower()}")
        # Numba's disk cache keys by name and bytecode, not by parallel=True or the bound
        # routine: distinct names
        assert twin.parallel.py_func.__qualname__ != twin.serial.py_func.__qualname__
        names |= {twin.parallel.py_func.__qualname__, twin.serial.py_func.__qualname__}
    assert len(names) == 2 * len(KERNELS)


def test_idle_core_counts_other_processes_cpu_time_not_this_process_own(monkeypatch):
    """A parallel run's own threads keep the machine busy; only other processes' CPU time says
    whether a second thread would wait for a core."""
    clock = {"now": 100.0, "machine": 1000.0, "own": 10.0}
    monkeypatch.setattr(fast, "_machine_busy_seconds", lambda: clock["machine"])
    monkeypatch.setattr(fast, "_own_busy_seconds", lambda: clock["own"])
    monkeypatch.setattr(fast.time, "monotonic", lambda: clock["now"])
    monkeypatch.setattr(fast.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(fast, "_loadavg_idle", lambda: True)
    monkeypatch.setattr(fast, "_sample", {"wall": None, "machine": None, "own": None, "idle": True})
    assert fast.idle_core()                     # first sample: the load average decides
    clock.update(now=101.0, machine=1002.0, own=12.0)   # both cores busy, all of it ours
    assert fast.idle_core()
    clock.update(now=101.1, machine=1002.2, own=12.0)   # within IDLE_SAMPLE_SECONDS: the last answer
    assert fast.idle_core()
    clock.update(now=102.0, machine=1004.0, own=13.0)   # another process took a whole core
    assert not fast.idle_core()
    clock.update(now=103.0, machine=1005.2, own=14.0)   # others 0.2 core: a core is free again
    assert fast.idle_core()


def test_idle_core_answers_on_a_machine_without_proc_stat_or_a_load_average(monkeypatch):
    """No /proc/stat (macOS, Windows, a locked-down container) and no os.getloadavg (Windows):
    idle_core still answers, and says a core is free (the serial/parallel choice never changes a
    bit of a result, only its speed)."""
    import builtins
    real_open = builtins.open

    def no_proc_stat(path, *a, **k):
        if str(path) == "/proc/stat":
            raise FileNotFoundError(path)
        return real_open(path, *a, **k)

    monkeypatch.setattr(builtins, "open", no_proc_stat)
    assert fast._machine_busy_seconds() is None
    monkeypatch.delattr(fast.os, "getloadavg", raising=False)
    monkeypatch.setattr(fast, "_sample", {"wall": None, "machine": None, "own": None, "idle": True})
    monkeypatch.setattr(fast.time, "monotonic", iter([100.0, 101.0]).__next__)
    assert fast.idle_core() is True
    assert fast.idle_core() is True            # a later sample: still no /proc/stat, same answer
