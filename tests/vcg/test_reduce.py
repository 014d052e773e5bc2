"""The intra-slice reduce: narrow/widen prefix rules, the fold order and numeric rules of the
contract (checked on hand-computed values), and bit-identical backends."""
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from fabric.vcg import (Mapping, compile_vcg, plan_reduce, reduce_flits, valid_size_matrix,
                        vector_narrow_split, vector_narrow_trim, vector_widen_concat)
from fabric.vcg.reduce import SUPPORTED_DTYPES, identity
from vcg_reference import BF16, is_float, scalar_op, seed_value, to_bits

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ----------------------------------------------------------------------------- narrow / widen

def test_narrow_split_halves_every_count_and_keeps_the_prefix():
    v8 = np.arange(9, dtype=np.uint8)[None, :]                      # one slice, v = 0..8
    x8 = np.arange(72, dtype=np.int32).reshape(1, 9, 8)
    x4, v4 = vector_narrow_split(x8, v8)
    assert v4.reshape(9, 2).tolist() == [[min(v, 4), max(v - 4, 0)] for v in range(9)]
    assert np.shares_memory(x4, x8)                                  # a view, no copy
    lanes8 = np.arange(8) < v8[0, :, None]
    lanes4 = (np.arange(4) < v4[0, :, None]).reshape(9, 8)
    assert np.array_equal(lanes8, lanes4)                            # same elements stay valid
    x_back, v_back = vector_widen_concat(x4[0, 0::2], v4[0, 0::2], x4[0, 1::2], v4[0, 1::2])
    assert np.array_equal(x_back, x8[0]) and np.array_equal(v_back, v8[0])


def test_narrow_trim_keeps_the_low_half():
    x8 = np.arange(16, dtype=np.int16).reshape(1, 2, 8)
    x4, v4 = vector_narrow_trim(x8, np.array([[3, 8]], np.uint8))
    assert x4.tolist() == [[[0, 1, 2, 3], [8, 9, 10, 11]]] and v4.tolist() == [[3, 4]]


def test_widen_concat_adds_counts():
    x = np.zeros((2, 4), np.float32)
    _, v = vector_widen_concat(x, np.array([4, 2]), x, np.array([3, 0]))
    assert v.tolist() == [7, 2]


# ----------------------------------------------------------------------------- the fold

R_IN_TIME = ("R = 3", "", "R # 4", "1 # 8")          # lanes are independent outputs
R_IN_PACKET = ("R = 4", "", "", "R # 8")             # one flit, lanes tree-reduced (v = 4)


def run(spec, rows, dtype, op, narrow="trim", backend="numpy"):
    m = Mapping.parse(*spec)
    vs = valid_size_matrix(compile_vcg(m, "R"), m.num_slices, m.num_steps)
    x8 = np.zeros((m.num_slices * m.num_steps, 8), dtype=dtype)
    for i, r in enumerate(rows):
        x8[i, :len(r)] = r
    out, ov = reduce_flits(x8, vs.reshape(-1), plan_reduce(m, "R", narrow), op, backend)
    return out, ov, vs


def lane0(out):
    return out.reshape(-1, 4)[0, 0]


def bits(v, dtype):
    return np.array(v, dtype).view(f"u{np.dtype(dtype).itemsize}").item()


# ---- 16-bit floats: IEEE add in the format at every step, the same NaN and zero rules

F16_MAX, BF16_MAX = 65504.0, float((2 - 2.0 ** -7) * 2.0 ** 127)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("dtype,rows,want", [
    # ties to even at 1: 1 + 2^-11 stays 1 (FP16), 1 + 2^-8 stays 1 (BF16); above the tie rounds up
    (np.float16, [[1.0], [2.0 ** -11], [0.0]], 1.0),
    (np.float16, [[1.0], [2.0 ** -11], [2.0 ** -11]], 1.0),                      # per step, not exact
    (np.float16, [[1.0 + 2.0 ** -10], [2.0 ** -11], [0.0]], 1.0 + 2.0 ** -9),     # tie -> even, up
    (BF16, [[1.0], [2.0 ** -8], [2.0 ** -8]], 1.0),
    (BF16, [[1.0 + 2.0 ** -7], [2.0 ** -8], [0.0]], 1.0 + 2.0 ** -6),
    (BF16, [[1.0], [2.0 ** -60], [-1.0]], 0.0),                                   # 2^-60 absorbed
    # overflow: the max plus half an ulp is a tie with the (even) next binade -> infinity
    (np.float16, [[F16_MAX], [16.0], [0.0]], np.inf),
    (np.float16, [[F16_MAX], [15.0], [-F16_MAX]], 0.0),
    (BF16, [[BF16_MAX], [2.0 ** 119], [0.0]], np.inf),
    (BF16, [[BF16_MAX], [2.0 ** 118], [0.0]], BF16_MAX),
    # subnormals add exactly
    (np.float16, [[2.0 ** -24], [2.0 ** -24], [-2.0 ** -23 * 3]], -2.0 ** -22),
    (BF16, [[2.0 ** -133], [2.0 ** -126], [0.0]], 2.0 ** -126 + 2.0 ** -133),
])
def test_sixteen_bit_float_add_rounds_to_the_format_at_every_step(dtype, rows, want, backend):
    out, _, _ = run(R_IN_TIME, rows, dtype, "Add", backend=backend)
    assert bits(lane0(out), dtype) == bits(want, dtype)


@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_sixteen_bit_float_nan_and_signed_zero_rules_are_the_fp32_rules(dtype):
    nan = {np.dtype(np.float16): 0x7E00, BF16: 0x7FC0}[np.dtype(dtype)]
    snan = np.array([0x7C01 if dtype == np.float16 else 0x7F81], np.uint16).view(dtype)[0]
    for backend in ("numpy", "numba"):
        out = run(R_IN_TIME, [[1.0], [snan], [2.0]], dtype, "Add", backend=backend)[0]
        assert bits(lane0(out), dtype) == nan                           # canonical quiet NaN
        out = run(R_IN_TIME, [[np.inf], [-np.inf], [2.0]], dtype, "Add", backend=backend)[0]
        assert bits(lane0(out), dtype) == nan
        assert lane0(run(R_IN_TIME, [[np.nan], [1.0], [np.nan]], dtype, "Max", backend=backend)[0]) == 1.0
        assert lane0(run(R_IN_TIME, [[np.nan], [np.nan], [np.nan]], dtype, "Min", backend=backend)[0]) == np.inf
        assert bits(lane0(run(R_IN_TIME, [[-0.0], [-0.0], [-0.0]], dtype, "Add", backend=backend)[0]), dtype) == 0x8000
        assert bits(lane0(run(R_IN_TIME, [[-0.0], [0.0], [-0.0]], dtype, "Add", backend=backend)[0]), dtype) == 0
        assert bits(lane0(run(R_IN_TIME, [[-0.0], [0.0], [-0.0]], dtype, "Max", backend=backend)[0]), dtype) == 0
        assert bits(lane0(run(R_IN_TIME, [[0.0], [-0.0], [0.0]], dtype, "Min", backend=backend)[0]), dtype) == 0x8000
        out = run(R_IN_PACKET, [[1.0, 2.0 ** -12, 2.0 ** -12, 1.0]], dtype, "Add", backend=backend)[0]
        assert lane0(out) == 2.0                                        # the tree rounds each node


def test_addsat_saturates_at_every_step():
    # 100 + 100 saturates to 127 before -100 arrives: 27, not the exact 100
    out, _, _ = run(R_IN_TIME, [[100], [100], [-100], [99]], np.int8, "AddSat")
    assert lane0(out) == 27                          # the 4th step is R = 3: padding, excluded
    out, _, _ = run(R_IN_TIME, [[-100], [-100], [100]], np.int8, "AddSat")
    assert lane0(out) == -28


def test_integer_add_wraps():
    out, _, _ = run(R_IN_TIME, [[100], [100], [1]], np.int8, "Add")
    assert lane0(out) == (201 + 128) % 256 - 128


def test_64_bit_saturation_both_ends():
    big = np.iinfo(np.int64).max
    out, _, _ = run(R_IN_TIME, [[big], [1], [-5]], np.int64, "AddSat")
    assert lane0(out) == big - 5
    out, _, _ = run(R_IN_TIME, [[-big], [-2], [3]], np.int64, "AddSat")
    assert lane0(out) == -big - 1 + 3
    umax = np.iinfo(np.uint64).max
    out, _, _ = run(R_IN_TIME, [[umax - 1], [5], [0]], np.uint64, "AddSat")
    assert lane0(out) == umax


def test_float_add_over_time_is_a_left_fold():
    # (((-0 + 1e8) + 1) + -1e8) + 1 in float32: 1e8 + 1 rounds back to 1e8, so the result is 1
    spec = ("R = 4", "", "R", "1 # 8")
    out, _, _ = run(spec, [[1e8], [1.0], [-1e8], [1.0]], np.float32, "Add")
    assert lane0(out) == np.float32(1.0)
    assert math.fsum([1e8, 1.0, -1e8, 1.0]) == 2.0                  # the exact sum differs


def test_float_add_in_packet_is_a_two_level_tree():
    # op(op(1e8, 1), op(-1e8, 1)) = 1e8 + -1e8 = 0 in float32, where a left fold gives 1
    out, _, _ = run(R_IN_PACKET, [[1e8, 1.0, -1e8, 1.0]], np.float32, "Add")
    assert lane0(out) == 0.0 and out.reshape(-1, 4)[0, 1:].tolist() == [0, 0, 0]
    # with 3 valid lanes the missing operand passes c through: (1e8 + 1) + -1e8 = 0
    out, _, _ = run(("R = 3", "", "", "R # 8"), [[1e8, 1.0, -1e8, 7.0]], np.float32, "Add")
    assert lane0(out) == 0.0


def test_float_nan_rules():
    nan_payload = np.array([0x7F800001], np.uint32).view(np.float32)[0]   # a signalling NaN
    out, _, _ = run(R_IN_TIME, [[1.0], [nan_payload], [2.0]], np.float32, "Add")
    assert bits(lane0(out), np.float32) == 0x7FC00000                  # canonical quiet NaN
    out, _, _ = run(R_IN_TIME, [[np.nan], [1.0], [np.nan]], np.float32, "Max")
    assert lane0(out) == 1.0                                           # one NaN: the other operand
    out, _, _ = run(R_IN_TIME, [[np.nan], [np.nan], [np.nan]], np.float32, "Min")
    assert lane0(out) == np.inf                                        # NaNs never beat the seed
    out, _, _ = run(R_IN_PACKET, [[np.nan, np.nan, np.nan, np.nan]], np.float64, "Max")
    assert lane0(out) == -np.inf


def test_signed_zeros():
    assert bits(lane0(run(R_IN_TIME, [[-0.0], [-0.0], [-0.0]], np.float32, "Add")[0]), np.float32) == 0x80000000
    assert bits(lane0(run(R_IN_TIME, [[-0.0], [0.0], [-0.0]], np.float32, "Add")[0]), np.float32) == 0
    assert bits(lane0(run(R_IN_TIME, [[-0.0], [0.0], [-0.0]], np.float16, "Max")[0]), np.float16) == 0
    assert bits(lane0(run(R_IN_TIME, [[0.0], [-0.0], [0.0]], np.float64, "Min")[0]), np.float64) == 1 << 63


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_an_all_padding_slice_returns_the_identity(dtype):
    # Slice-only R = 1 padded to 2: slice 1 holds only padding, its output is the fold's seed
    spec = ("R = 1", "R # 2", "", "1 # 8")
    ops = ("Add", "Min", "Max") if is_float(dtype) else ("AddSat", "Add", "Min", "Max")
    for op in ops:
        m = Mapping.parse(*spec)
        vs = valid_size_matrix(compile_vcg(m, "R"), 2, 1)
        assert vs.tolist() == [[8], [0]]
        x8 = np.full((2, 8), 7, dtype=dtype)
        out, _ = reduce_flits(x8, vs.reshape(-1), plan_reduce(m, "R"), op)
        assert out[1, 0, 0].tobytes() == identity(op, dtype).tobytes()
        assert out[0, 0, 0] == dtype.type(7)                           # seed op x == x


def test_identity_elements():
    assert identity("Add", np.float32).tobytes() == np.float32(-0.0).tobytes()
    assert identity("Max", np.int16) == -32768 and identity("Min", np.uint32) == 2 ** 32 - 1
    assert identity("AddSat", np.int8) == 0


# ----------------------------------------------------------------------------- backends agree

HCW = ("H = 5, C = 5, W = 19", "H # 8 / 2, C # 8 / 2", "H # 8 % 2, C # 8 % 2, W # 24 / 8", "W # 24 % 8")
REORDERED = ("A = 3, B = 4, R = 10, X = 8", "X # 16", "R # 12 / 4, A, R # 12 % 4", "B # 8")


def random_flits(dtype, n, rng):
    dt = np.dtype(dtype)
    if is_float(dt):
        x = (rng.standard_normal((n, 8)) * 2.0 ** rng.integers(-10, 10, (n, 8))).astype(dt)
        x[rng.random(x.shape) < 0.05] = np.nan
        x[rng.random(x.shape) < 0.03] = -0.0
        return x
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, (n, 8), dtype=dt, endpoint=True)


@pytest.mark.parametrize("spec,reduce,narrow", [(HCW, "W", "split"), (REORDERED, "R", "trim"),
                                                (REORDERED, "R", "split")])
def test_numba_backend_gives_the_numpy_bits(spec, reduce, narrow):
    m = Mapping.parse(*spec)
    vs = valid_size_matrix(compile_vcg(m, reduce), m.num_slices, m.num_steps).reshape(-1)
    plan = plan_reduce(m, reduce, narrow)
    rng = np.random.default_rng(7)
    for dt in SUPPORTED_DTYPES:
        x8 = random_flits(dt, vs.size, rng)
        for op in (("Add", "Min", "Max") if is_float(dt) else ("AddSat", "Add", "Min", "Max")):
            a, va = reduce_flits(x8, vs, plan, op, "numpy")
            b, vb = reduce_flits(x8, vs, plan, op, "numba")
            u = f"u{dt.itemsize}"
            assert np.array_equal(a.view(u), b.view(u)), (dt, op)
            assert np.array_equal(va, vb)


CUDA_SIM = textwrap.dedent("""
    import numpy as np
    from fabric.vcg import Mapping, compile_vcg, plan_reduce, reduce_flits, valid_size_matrix
    spec = %r
    m = Mapping.parse(*spec[:4])
    vs = valid_size_matrix(compile_vcg(m, spec[4]), m.num_slices, m.num_steps).reshape(-1)
    plan = plan_reduce(m, spec[4], spec[5])
    rng = np.random.default_rng(3)
    for dt, ops in [("int8", ["AddSat", "Add"]), ("int64", ["AddSat", "Max"]),
                    ("uint64", ["AddSat", "Min"]), ("uint16", ["Add"]),
                    ("float16", ["Add", "Min"]), ("bfloat16", ["Add", "Max"]),
                    ("float32", ["Add", "Max"]), ("float64", ["Add", "Min"])]:
        dt = np.dtype(dt)
        if "float" in dt.name:
            x = (rng.standard_normal((vs.size, 8)) * 1e3).astype(dt)
            x[rng.random(x.shape) < 0.1] = np.nan
        else:
            i = np.iinfo(dt)
            x = rng.integers(i.min, i.max, (vs.size, 8), dtype=dt, endpoint=True)
        for op in ops:
            a, va = reduce_flits(x, vs, plan, op, "numpy")
            b, vb = reduce_flits(x, vs, plan, op, "cuda")
            u = "u%%d" %% dt.itemsize
            assert np.array_equal(a.view(u), b.view(u)), (dt, op)
            assert np.array_equal(va, vb)
    print("identical")
""")


@pytest.mark.parametrize("case", [HCW + ("W", "split"), ("R = 10", "", "R # 16 / 4", "R # 16 % 4 # 8", "R", "trim"),
                                  REORDERED[:1] + ("X",) + REORDERED[2:] + ("R", "trim")])
def test_cuda_kernel_in_the_simulator_gives_the_cpu_bits(case):
    # NUMBA_ENABLE_CUDASIM must be set before numba.cuda is imported: run in a fresh interpreter
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", CUDA_SIM % (case,)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "identical" in r.stdout, r.stderr[-3000:]


SIXTEEN_FOLD = textwrap.dedent("""
    import sys, numpy as np
    from fabric.vcg import Mapping, compile_vcg, plan_reduce, reduce_flits, valid_size_matrix
    spec = ("A = 3, R = 37", "A", "R # 40 / 4", "R # 40 % 4 # 8")   # R in Packet and in Time
    m = Mapping.parse(*spec)
    vs = valid_size_matrix(compile_vcg(m, "R"), m.num_slices, m.num_steps).reshape(-1)
    x = np.load(sys.argv[1])
    for dt in ("float16", "bfloat16"):
        xd = x[dt].view(dt)
        for narrow in ("trim", "split"):
            for op in ("Add", "Min", "Max"):
                out, _ = reduce_flits(xd, vs, plan_reduce(m, "R", narrow), op, "cuda")
                print(dt, narrow, op, ",".join(map(str, out.view(np.uint16).reshape(-1).tolist())))
""")


def sixteen_inputs(rng, n):
    """Raw uint16 flits mixing ordinary values, values near the max and the subnormal range,
    signed zeros, infinities and NaNs."""
    out = {}
    for dt in (np.float16, BF16):
        mx = 65504.0 if dt == np.float16 else BF16_MAX
        tiny = 2.0 ** -24 if dt == np.float16 else 2.0 ** -133
        kind = rng.integers(0, 8, (n, 8))
        v = rng.standard_normal((n, 8)) * 2.0 ** rng.integers(-12, 12, (n, 8))
        v = np.where(kind == 1, mx * rng.uniform(0.25, 1, (n, 8)) * rng.choice([-1, 1], (n, 8)), v)
        v = np.where(kind == 2, tiny * rng.integers(-40, 40, (n, 8)), v)
        v = np.where(kind == 3, rng.choice([0.0, -0.0, np.inf, -np.inf, np.nan], (n, 8)), v)
        out[np.dtype(dt).name] = v.astype(dt).view(np.uint16)
    return out


def independent_fold(x8, vs, m, narrow, op, dtype):
    """The contract, element by element, with the exact-rational rounding of vcg_reference."""
    plan = plan_reduce(m, "R", narrow)
    x = x8.reshape(m.num_slices, m.num_steps, 8).astype(np.float64)
    v = vs.reshape(m.num_slices, m.num_steps)
    want = np.zeros((m.num_slices, plan.out_steps, 4), np.uint16)
    for s in range(m.num_slices):
        for o in range(plan.out_steps):
            for lane in range(plan.out_lanes):
                acc = seed_value(op, dtype)
                for t4 in plan.fiber[o]:
                    t, half = (t4 // 2, t4 % 2) if narrow == "split" else (t4, 0)
                    v4 = min(max(int(v[s, t]) - 4 * half, 0), 4)
                    lanes = [float(x[s, t, 4 * half + i]) for i in range(v4)]
                    if plan.r_in_packet and lanes:
                        ab = lanes[0] if v4 < 2 else scalar_op(op, lanes[0], lanes[1], dtype)
                        if v4 >= 3:
                            cd = lanes[2] if v4 < 4 else scalar_op(op, lanes[2], lanes[3], dtype)
                            ab = scalar_op(op, ab, cd, dtype)
                        acc = scalar_op(op, acc, ab, dtype)
                    elif not plan.r_in_packet and lane < v4:
                        acc = scalar_op(op, acc, lanes[lane], dtype)
                want[s, o, lane] = to_bits(acc, dtype)
    return want


def test_sixteen_bit_floats_on_every_backend_equal_an_independent_fold(tmp_path):
    """FP16 and BF16 reduce with the same bits on numpy, numba and the Numba-CUDA kernel (in the
    simulator), and those bits are the contract's fold computed here with exact rationals."""
    spec = ("A = 3, R = 37", "A", "R # 40 / 4", "R # 40 % 4 # 8")
    m = Mapping.parse(*spec)
    vs = valid_size_matrix(compile_vcg(m, "R"), m.num_slices, m.num_steps).reshape(-1)
    raw = sixteen_inputs(np.random.default_rng(12), vs.size)
    np.savez(tmp_path / "x.npz", **raw)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", SIXTEEN_FOLD, str(tmp_path / "x.npz")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    cuda = {tuple(line.split()[:3]): line.split()[3] for line in r.stdout.splitlines()}
    for name, bits16 in raw.items():
        dt = np.dtype(name) if name == "float16" else BF16
        x8 = bits16.view(dt)
        for narrow in ("trim", "split"):
            for op in ("Add", "Min", "Max"):
                want = independent_fold(x8, vs, m, narrow, op, dt)
                for backend in ("numpy", "numba"):
                    out, _ = reduce_flits(x8, vs, plan_reduce(m, "R", narrow), op, backend)
                    assert out.dtype == dt
                    assert np.array_equal(out.view(np.uint16), want), (name, narrow, op, backend)
                assert cuda[(name, narrow, op)] == ",".join(map(str, want.reshape(-1).tolist())), (name, narrow, op)


def test_reduce_checks_shapes_ops_and_backends():
    m = Mapping.parse(*R_IN_TIME)
    plan = plan_reduce(m, "R")
    with pytest.raises(ValueError, match="expected 1 x 4 = 4 flits"):
        reduce_flits(np.zeros((3, 8), np.int32), np.zeros(3, np.uint8), plan, "Add")
    with pytest.raises(ValueError, match="not defined for float32"):
        reduce_flits(np.zeros((4, 8), np.float32), np.zeros(4, np.uint8), plan, "AddSat")
    with pytest.raises(TypeError, match="not supported"):
        reduce_flits(np.zeros((4, 8), np.bool_), np.zeros(4, np.uint8), plan, "Add")
    with pytest.raises(ValueError, match="unknown backend"):
        reduce_flits(np.zeros((4, 8), np.int32), np.zeros(4, np.uint8), plan, "Add", "tpu")


# ----------------------------------------------------------------------------- against the calculus

def test_the_hardware_fold_is_a_tree_the_calculus_admits():
    """The contract's fold, written as an explicit merge tree, evaluated by the calculus'
    realize_tree, gives our bits; the calculus' default unordered_tree admits that result while
    a strict fold_left over the same contributions gives a different float32 value."""
    reduction = pytest.importorskip("emulator.calculus.reduction")
    from emulator.calculus.functions import Function

    def f32_add(a, b):                    # binary32 add via one rounding of the exact double sum
        return float(np.float32(a + b))

    add = Function("f32.add", 2, "merge", f32_add, commutative=True, regroup=True)
    xs = [1e8, 1.0, -1e8, 1.0, 1.0]       # R = 5: flit 0 holds R 0..3, flit 1 holds R 4
    out, _, vs = run(("R = 5", "", "R # 8 / 4", "R # 8 % 4 # 8"), [xs[:4], xs[4:]], np.float32, "Add")
    assert vs.tolist() == [[4, 1]]
    ours = float(lane0(out))
    tree = [["seed", [[0, 1], [2, 3]]], 4]                 # seed + op(op(x0,x1),op(x2,x3)), then + x4
    assert ours == reduction.realize_tree(add, tree, xs, -0.0)
    assert reduction.admits("unordered_tree", add, -0.0, xs, ours)
    assert ours == 1.0 and reduction.fold_left(add, -0.0, xs) == 2.0   # the order is part of the contract


class _NotNumpy:
    """NumPy under another name: reduce_xp then takes its CuPy route for bfloat16 (raw bits in,
    kernels.numeric's element-wise TADD/TMAX/TMIN per step, raw bits out), which CI cannot run on
    CuPy itself."""
    def __getattr__(self, name):
        return getattr(np, name)


def test_the_cupy_bfloat16_route_equals_the_independent_fold():
    from fabric.vcg.reduce import reduce_xp
    spec = ("A = 3, R = 37", "A", "R # 40 / 4", "R # 40 % 4 # 8")
    m = Mapping.parse(*spec)
    vs = valid_size_matrix(compile_vcg(m, "R"), m.num_slices, m.num_steps)
    raw = sixteen_inputs(np.random.default_rng(5), vs.size)["bfloat16"]
    for narrow in ("trim", "split"):
        plan = plan_reduce(m, "R", narrow)
        for op in ("Add", "Min", "Max"):
            out, _ = reduce_xp(raw.reshape(m.num_slices, m.num_steps, 8), vs, plan, op, _NotNumpy(), dtype=BF16)
            assert out.dtype == np.uint16
            want = independent_fold(raw.view(BF16), vs.reshape(-1), m, narrow, op, BF16)
            assert np.array_equal(out, want), (narrow, op)


def test_a_small_numba_reduce_never_enters_a_parallel_region():
    """On a busy 2-core machine a parallel region's waiting thread made a 2^14-element reduce 40x
    slower than the serial loop: below kernels.numeric.fast.PARALLEL_MIN fold steps it runs serial."""
    from kernels.numeric.fast import PARALLEL_MIN
    from fabric.vcg import jit
    assert not jit._use_parallel(PARALLEL_MIN - 1)
    assert jit._use_parallel(PARALLEL_MIN) == (jit.numba.get_num_threads() > 1 and jit.idle_core())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_compiled_16bit_add_is_ieee_add_for_every_first_operand(dtype):
    """The compiled fold's Add (float16: a binary64 sum rounded once more; bfloat16: a binary32
    one; no error term) against the format's own IEEE add, computed by NumPy float16 / ml_dtypes
    bfloat16 arithmetic (binary32 then RNE): every encoding as the first operand against 100
    second operands -- random codes, both zeros, both infinities, a NaN, the max, the smallest
    subnormal.  (Every one of the 2^32 pairs of each format was also checked once against the
    TwoSum fold this replaced.)"""
    import numba
    from fabric.vcg import jit
    from fabric.vcg.fold import DATATYPE
    from kernels.numeric import encode
    dt = np.dtype(dtype) if dtype == "float16" else BF16
    fmt = jit.kernel_fmt(dt)
    _, lo, hi, witness, _ = jit._scalars(dt, "Add")

    @numba.njit
    def add_all(ca, cb, fmt, lo, hi, witness, out):
        for i in range(ca.size):
            x = jit.load(ca[i], fmt, witness)
            for j in range(cb.size):
                out[i, j] = jit.comb(jit.ADD, x, jit.load(cb[j], fmt, witness), lo, hi, witness, fmt)

    max_code = 0x7BFF if dtype == "float16" else 0x7F7F
    specials = [0x0000, 0x8000, 0x7C00 if dtype == "float16" else 0x7F80, 0xFC00 if dtype == "float16" else 0xFF80,
                0x7E00 if dtype == "float16" else 0x7FC0, max_code, max_code | 0x8000, 0x0001, 0x8001]
    cb = np.concatenate([specials, np.random.default_rng(5).integers(0, 1 << 16, 100 - len(specials))]).astype(np.uint16)
    ca = np.arange(1 << 16, dtype=np.uint16)
    got = np.empty((ca.size, cb.size), jit.fold_dtype(dt))
    add_all(ca, cb, fmt, lo, hi, witness, got)
    with np.errstate(all="ignore"):
        want = (ca.view(dt)[:, None] + cb.view(dt)[None, :]).view(np.uint16)
        got_bits = encode(got.astype(np.float64), DATATYPE[dt])
    nan = np.isnan(want.view(dt).astype(np.float32))
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got_bits[~nan], want[~nan])
