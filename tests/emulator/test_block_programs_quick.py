"""FP32 quick parts of the compiled block programs (emulator/blockprog.py `_quick2`/`_quick3`,
kernels/numeric/fastvec.py "FP32 quick parts", docs/numerics.md "FP32 quick parts"): a TADD,
TSUB, TMUL or TFMA FP32 block gives every PE the result and the status (the OR of its elements'
flags) that the NumPy reference gives -- PEs of ordinary values (the quick pass alone), PEs with
one NaN (any payload, signalling or quiet), infinity, overflow, tiny result or subnormal (the
redo by the full routine), zeros of both signs -- at 4 x 128x128 and on small tiles; and result
arrays reused by the next blocks (blockprog.destination) never change a tile anyone still holds."""
import numba as nb
import numpy as np
import pytest

from emulator import Machine, blockprog
from emulator.config import with_profile
from emulator.config import MachineConfig
from emulator.commitlog import Collector
from isa import BDim, Block, BStart, TileBinding
from isa.instructions import lookup
from kernels import numeric
from kernels.numeric import fastvec
from kernels.numeric.flags import NX as NX_FLAG
from kernels.numeric.interp import interpreted

OPS = ("TADD", "TSUB", "TMUL", "TFMA")
# binary32 encodings that sit on a rule's edge: NaNs (quiet, signalling, payloads, both signs),
# infinities, signed zeros, subnormals, the min normal and its neighbours, the max finite value,
# values whose products or sums overflow or land near the tininess threshold 2^-126
EDGES = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF812345, 0x7FC12345, 0x7FBFFFFF,
                  0x7F800000, 0xFF800000, 0x00000000, 0x80000000, 0x00000001, 0x807FFFFF,
                  0x00400000, 0x00800000, 0x80800000, 0x00800001, 0x007FFFFF, 0x7F7FFFFF,
                  0xFF7FFFFF, 0x7F000000, 0x1F800000, 0x20000000, 0x1F7FFFFF, 0x3F800000,
                  0xBF800000, 0x3F800001, 0x33800000, 0x34000000, 0x0C000000, 0x5F800000],
                 np.uint32)


def ordinary(rng, shape, lo=-20, hi=20):
    """Finite binary32 values with magnitudes 2^lo .. 2^hi: no flag but NX from any op."""
    m = rng.uniform(1.0, 2.0, shape) * np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return (m * 2.0 ** rng.integers(lo, hi, shape)).astype(np.float32).view(np.uint32)


def operands(seed, pes, n, arity, edges_in=(), every=None):
    """`arity` (pes, n) operand stacks of ordinary values; PEs in `edges_in` get edge values
    (one, or every `every`-th element when given) in every operand."""
    rng = np.random.default_rng(seed)
    ops = [ordinary(rng, (pes, n)) for _ in range(arity)]
    for p in edges_in:
        for x in ops:
            at = [int(rng.integers(n))] if every is None else np.arange(0, n, every)
            x[p, at] = EDGES[rng.integers(0, len(EDGES), len(at))]
    return ops


def reference(op, ops, pes):
    """(bits, per-PE status) by the NumPy reference, elementwise then the OR per PE."""
    with interpreted():
        bits, flags = numeric.elementwise(op, "FP32", *ops)
    return bits, np.bitwise_or.reduce(flags.reshape(pes, -1), axis=1)


def block(op, cols, rows, mask=15):
    row = lookup(op)
    srcs = (1, 3, 2) if op == "TFMA" else (1, 2)
    binds = tuple(TileBinding(t, mask) for t in srcs) + (TileBinding(3, mask),)
    return Block(BStart(row.mode, row.function, 1, row.engine), binds, BDim(cols, rows))


def program_result(op, ops, rows, cols, profile="ieee"):
    """(bits, status) of the block's compiled program on operand stacks `ops`."""
    prog = blockprog.program(block(op, cols, rows), profile)
    assert prog is not None
    pes = ops[0].shape[0]
    d = np.ones(ops[0].shape, bool)
    out = np.empty(ops[0].shape, np.uint32)
    status = np.empty(pes, np.uint8)
    assert prog.fn(*ops, *[d] * len(ops), prog.prm[0], out, status, *prog.extra) == 0
    return out, status


def test_the_fp32_programs_under_ieee_run_the_quick_parts():
    for op in OPS:
        prog = blockprog.program(block(op, 16, 4), "ieee")
        assert "_quick" in prog.fn.py_func.__name__
        g = prog.fn.py_func.__globals__
        assert g["QUICK"] is fastvec.QUICK[g["SCALAR"]][0]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape", [(4, 128, 128), (4, 4, 16), (3, 1, 5)])
@pytest.mark.parametrize("seed", range(3))
def test_ordinary_and_edge_pes_match_the_reference(op, shape, seed):
    pes, rows, cols = shape
    n = rows * cols
    arity = 3 if op == "TFMA" else 2
    # PE 0 ordinary (the quick pass), PE 1 one edge value, PE 2 edges throughout (the redo)
    ops = operands(seed, pes, n, arity, edges_in=[p for p in (1,) if p < pes])
    if pes > 2:
        ops2 = operands(seed + 100, 1, n, arity, edges_in=[0], every=3)
        for x, y in zip(ops, ops2):
            x[2] = y[0]
    bits, status = program_result(op, ops, rows, cols)
    ref_bits, ref_status = reference(op, ops, pes)
    np.testing.assert_array_equal(bits, ref_bits)
    np.testing.assert_array_equal(status, ref_status)


@pytest.mark.parametrize("op", OPS)
def test_every_pair_of_edge_values_matches_the_reference(op):
    """Each edge value alone in a PE of ordinary values, against each other edge value: every
    PE's status decides on one element, so a flag the quick pass missed would show."""
    k = len(EDGES)
    arity = 3 if op == "TFMA" else 2
    rng = np.random.default_rng(5)
    pairs = np.array([(i, j) for i in range(k) for j in range(k)])
    pes = len(pairs)
    ops = [ordinary(rng, (pes, 8), 0, 2) for _ in range(arity)]       # products and sums stay ordinary
    ops[0][:, 3] = EDGES[pairs[:, 0]]
    ops[1][:, 3] = EDGES[pairs[:, 1]]
    if arity == 3:
        ops[2][:, 3] = EDGES[(pairs[:, 0] + pairs[:, 1]) % k]
    bits, status = program_result(op, ops, 1, 8)
    ref_bits, ref_status = reference(op, ops, pes)
    np.testing.assert_array_equal(bits, ref_bits)
    np.testing.assert_array_equal(status, ref_status)


@pytest.mark.parametrize("op", ["TMUL", "TFMA"])
def test_results_near_the_tininess_threshold_match_the_reference(op):
    """Products and fma results within a few ulps of 2^-126 (tiny or not after rounding, exact or
    not), and results that underflow to zero: the low word sends such PEs to the full routine."""
    rng = np.random.default_rng(9)
    pes, n = 64, 32
    # a * b = m * 2^-126 with m near 1: a = m * 2^-63, b = 2^-63 (exact operands)
    m = 1.0 + rng.integers(-64, 64, (pes, n)) * 2.0 ** -24 + rng.integers(-3, 4, (pes, n)) * 2.0 ** -30
    scale = 2.0 ** rng.integers(-90, -60, (pes, n))
    a = (m * scale).astype(np.float32)
    b = (2.0 ** -126 / scale).astype(np.float32)
    ops = [a.view(np.uint32), b.view(np.uint32)]
    if op == "TFMA":
        c = np.where(rng.random((pes, n)) < 0.5, 0.0, rng.integers(-4, 5, (pes, n)) * 2.0 ** -149)
        ops.append(c.astype(np.float32).view(np.uint32))
    ops[0][::2] = ordinary(rng, (pes // 2, n))          # half the PEs ordinary: the quick pass alone
    bits, status = program_result(op, ops, 1, n)
    ref_bits, ref_status = reference(op, ops, pes)
    np.testing.assert_array_equal(bits, ref_bits)
    np.testing.assert_array_equal(status, ref_status)


@pytest.mark.parametrize("profile", ["ieee", "ftz", "a5"])
@pytest.mark.parametrize("op", OPS)
def test_every_profile_matches_the_reference(op, profile):
    """Whatever kernel the profile's tier gives the block (the quick parts only where fastvec's
    FP32 routines serve it), the program's result is the reference's under that profile."""
    pes, rows, cols = 4, 8, 16
    arity = 3 if op == "TFMA" else 2
    ops = operands(11, pes, rows * cols, arity, edges_in=[1, 3], every=5)
    prog = blockprog.program(block(op, cols, rows), profile)
    if prog is None:
        pytest.skip(f"{op} FP32 has no program under {profile}")
    d = np.ones(ops[0].shape, bool)
    out = np.empty(ops[0].shape, np.uint32)
    status = np.empty(pes, np.uint8)
    if prog.fn(*ops, *[d] * arity, prog.prm[0], out, status, *prog.extra):
        pytest.skip("marked elements: today's path settles them (test_block_programs)")
    with interpreted():
        ref_bits, flags = numeric.elementwise(op, "FP32", *ops, profile=profile)
    np.testing.assert_array_equal(out, ref_bits)
    np.testing.assert_array_equal(status, np.bitwise_or.reduce(flags.reshape(pes, -1), axis=1))


@pytest.mark.parametrize("op", ["TMUL", "TFMA"])
def test_products_near_the_quick_parts_bound_match_the_reference(op):
    """TMUL's quick part trusts the fused residual a*b - r for |r| >= 2^-100 (exact while
    e_a + e_b >= -103): products of random significands from 2^-104 to 2^-96, one operand
    subnormal or both normal, on either side of that bound."""
    rng = np.random.default_rng(13)
    pes, n = 32, 64
    ea = rng.integers(-140, -40, (pes, n))
    eb = rng.integers(-104, -96, (pes, 1)) - ea        # one product exponent per PE: some PEs all quick
    a = (rng.uniform(1, 2, (pes, n)) * 2.0 ** ea).astype(np.float32)
    b = (rng.uniform(1, 2, (pes, n)) * 2.0 ** eb).astype(np.float32)
    ops = [a.view(np.uint32), b.view(np.uint32)]
    if op == "TFMA":
        ops.append(ordinary(rng, (pes, n), -110, -90))
    bits, status = program_result(op, ops, 1, n)
    ref_bits, ref_status = reference(op, ops, pes)
    np.testing.assert_array_equal(bits, ref_bits)
    np.testing.assert_array_equal(status, ref_status)


# ---------------------------------------------------------------- the machine, result arrays reused

CONFIG = MachineConfig()


def big_machine(backend, seed, edges_in=()):
    rng = np.random.default_rng(seed)
    m = Machine(with_profile(CONFIG, "ieee"), backend=backend)
    for p in range(4):
        for t in (1, 2, 3):
            x = ordinary(rng, (128, 128), -4, 4)
            if p in edges_in:
                x.reshape(-1)[rng.integers(0, x.size, 3)] = EDGES[rng.integers(0, len(EDGES), 3)]
            m.write_tile(p, t, "FP32", x)
    return m


def state(m):
    return m.digest()


@pytest.mark.parametrize("edges_in", [(), (2,), (0, 1, 2, 3)])
def test_a_stream_of_large_fp32_blocks_ends_where_the_reference_ends(edges_in):
    stream = [block(op, 128, 128) for op in ("TADD", "TMUL", "TFMA", "TSUB", "TMUL", "TADD", "TFMA")] * 2
    ours, ref = big_machine("cpu", 3, edges_in), big_machine("reference", 3, edges_in)
    for b in stream:
        ours.execute(b)
        ref.execute(b)
        assert state(ours) == state(ref)
    # as one stream: a chain of blocks without a log, one commit a block with one
    for log in (None, Collector()):
        ours = big_machine("cpu", 3, edges_in)
        got = ours.run(stream, log=log)
        assert got.error is None and got.executed == len(stream)
        assert state(ours) == state(ref)


def test_a_tile_held_by_the_caller_keeps_its_bytes_while_later_blocks_reuse_arrays():
    m = big_machine("cpu", 4)
    add = block("TADD", 128, 128)
    held = []
    for _ in range(6):
        m.execute(add)
        t = m.read_tile(1, 3)
        held.append((t.bits, t.bits.tobytes()))
    views = [m.read_tile(p, 3).bits[5:9] for p in range(4)]         # a view keeps its base array
    copies = [v.tobytes() for v in views]
    for _ in range(6):
        m.execute(add)
    for arr, before in held:
        assert arr.tobytes() == before
    assert [v.tobytes() for v in views] == copies


def test_a_reused_array_is_one_no_tile_refers_to():
    shape, dtype = (4, 128 * 128), np.dtype(np.uint32)
    a = blockprog.destination(shape, dtype, 4 * 128 * 128 * 4)
    view = a[1]
    del a
    b = blockprog.destination(shape, dtype, 4 * 128 * 128 * 4)
    assert b.base is None and not np.shares_memory(b, view)       # the view keeps its array taken
    del view
    c = blockprog.destination(shape, dtype, 4 * 128 * 128 * 4)
    assert c.flags.writeable
    held = c                                                        # a plain reference too
    c.setflags(write=False)
    del c
    d = blockprog.destination(shape, dtype, 4 * 128 * 128 * 4)
    assert d is not held and not np.shares_memory(d, held) and not held.flags.writeable


# ---------------------------------------------------------------- TFMA's quick part, element by element
# fastvec.fp32_fma_quick decides exactness in binary32 alone (docs/numerics.md, "FP32 quick
# parts"): r - c against the product's RN24 and its fused error.  Each element below is checked
# on its own: where the words do not ask for the redo, the code is the correctly rounded result
# and the flags are NX exactly when nx is nonzero; as a one-element PE of a program, the result
# and status are the reference's.

@nb.njit
def _fma_words(a, b, c):
    words = np.empty((4, a.size), np.uint32)        # code, nx, low, high
    for i in range(a.size):
        words[0, i], words[1, i], words[2, i], words[3, i] = fastvec.fp32_fma_quick(a[i], b[i], c[i])
    return words


def _scaled(rng, n, bits, lo, hi):
    """Values k * 2^e with k a random integer of at most `bits` bits and e in [lo, hi): short
    significands, so that a*b + c lands on, beside or halfway between binary32 values."""
    k = rng.integers(1, 1 << bits, n) * np.where(rng.random(n) < 0.5, -1, 1)
    return (k * 2.0 ** rng.integers(lo, hi, n)).astype(np.float32)


def fma_sets(seed, n):
    """Operand triples (binary32 encodings) by family: short significands whose sums tie or
    nearly tie at 24 bits; c = -RN24(a*b) + a few ulps (the exact value is the product's low
    part, exact though a*b has 48 bits); overflowing products with finite results; products
    around and below 2^-100 and below the subnormal range; random encodings (NaN payloads,
    signalling NaNs, infinities, subnormals)."""
    rng = np.random.default_rng(seed)
    a, b = _scaled(rng, n, 13, -10, 10), _scaled(rng, n, 13, -10, 10)
    ab = a.astype(np.float64) * b
    e = np.floor(np.log2(np.abs(ab)))
    ties = (a, b, (rng.integers(1, 1 << 24, n) * 2.0 ** (e - rng.integers(-2, 40, n))
                   * np.where(rng.random(n) < 0.5, -1, 1)).astype(np.float32))
    x, y = ordinary(rng, (n,), -30, 30).view(np.float32), ordinary(rng, (n,), -30, 30).view(np.float32)
    ph = x * y
    near = (x, y, -ph + np.float32(rng.integers(-3, 4, n)) * np.spacing(ph))
    # a*b in [2^128, 2^128 * 1.44): no binary32, yet a*b + c is one, exact or not (short or full
    # significands), for c in (-2^128, -2^127]
    sig = np.where(rng.random(n) < 0.5, rng.integers(1 << 11, 2458, n) * 2.0 ** -11, rng.uniform(1, 1.2, n))
    big = ((sig * 2.0 ** 64).astype(np.float32), (rng.uniform(1, 1.2, n) * 2.0 ** 64).astype(np.float32),
           (-rng.integers(1 << 23, 1 << 24, n) * 2.0 ** 104).astype(np.float32))
    tiny = (ordinary(rng, (n,), -80, -40).view(np.float32), ordinary(rng, (n,), -90, -40).view(np.float32),
            np.where(rng.random(n) < 0.5, ordinary(rng, (n,), -150, -100).view(np.float32),
                     ordinary(rng, (n,), -10, 10).view(np.float32)))
    rand = tuple(rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32) for _ in range(3))
    return {name: tuple(np.ascontiguousarray(v, np.float32).view(np.uint32) for v in trio)
            for name, trio in dict(ties=ties, near=near, big=big, tiny=tiny, rand=rand).items()}


def softfloat_fma(a, b, c):
    """(bits, flags) of f32_mulAdd by Berkeley SoftFloat (NaNs canonical, as the profile's)."""
    sf = pytest.importorskip("softfloatpy")
    from kernels.numeric import flags as F
    sf.set_tininess_mode(sf.TininessMode.AFTER_ROUNDING)
    sf.set_rounding_mode(sf.RoundingMode.NEAR_EVEN)
    marks = [(sf.ExceptionFlag.INVALID, F.NV), (sf.ExceptionFlag.OVERFLOW, F.OF),
             (sf.ExceptionFlag.UNDERFLOW, F.UF), (sf.ExceptionFlag.INEXACT, F.NX)]
    f32 = lambda v: sf.Float32.from_bytes(int(v).to_bytes(4, "big"))       # noqa: E731
    bits, flags = np.empty(a.size, np.uint32), np.zeros(a.size, np.uint8)
    for i in range(a.size):
        sf.set_exception_flags(0)
        r = sf.f32_mul_add(f32(a[i]), f32(b[i]), f32(c[i]))
        bits[i] = 0x7FC00000 if sf.f32_is_nan(r) else int.from_bytes(r.to_bytes(), "big")
        raised = sf.get_exception_flags()
        flags[i] = sum(ours for theirs, ours in marks if raised & theirs)
    return bits, flags


def _decided(words):
    """Where the quick words settle an element without the redo."""
    _, _, low, high = words
    return (low >= fastvec.QUICK[fastvec.fp32_fma][3]) & (high <= fastvec.QUICK_HIGH)


@pytest.mark.parametrize("family", ["ties", "near", "big", "tiny", "rand"])
def test_the_fma_quick_words_agree_with_softfloat_on_every_element_they_settle(family):
    ops = fma_sets(21, 1500)[family]
    words = _fma_words(*ops)
    bits, flags = softfloat_fma(*ops)
    ok = _decided(words)
    np.testing.assert_array_equal(words[0][ok], bits[ok])
    np.testing.assert_array_equal(np.where(words[1][ok] != 0, NX_FLAG, 0), flags[ok])
    if family in ("ties", "near"):          # these exercise the exactness test itself, not the redo
        assert ok.mean() > 0.9 and 0.05 < (words[1][ok] == 0).mean() < 0.95


@pytest.mark.parametrize("family", ["ties", "near", "big", "tiny", "rand"])
@pytest.mark.parametrize("seed", range(2))
def test_one_element_fma_pes_match_the_reference(family, seed):
    """Each element its own PE: the status a program gives is that element's flags."""
    ops = fma_sets(seed, 20000)[family]
    ops = [x.reshape(-1, 1) for x in ops]
    bits, status = program_result("TFMA", ops, 1, 1)
    ref_bits, ref_status = reference("TFMA", ops, ops[0].shape[0])
    np.testing.assert_array_equal(bits, ref_bits)
    np.testing.assert_array_equal(status, ref_status)


@pytest.mark.parametrize("op", OPS)
def test_pes_of_exact_results_with_one_inexact_or_edge_element_anywhere_match_the_reference(op):
    """The loops read nx words chunk by chunk until one is nonzero, then only the redo words:
    PEs of exact results (small integers) where one inexact element, or an edge value after an
    inexact one, sits before, at or past a chunk boundary, or nowhere."""
    rng = np.random.default_rng(17)
    n, arity = 128 * 128, 3 if op == "TFMA" else 2
    at = [None, 0, 255, 256, 257, 5000, n - 1]
    pes = 2 * len(at)
    ops = [rng.integers(-64, 64, (pes, n)).astype(np.float32).view(np.uint32) for _ in range(arity)]
    for p, k in enumerate(at):
        if k is None:
            continue
        for q in (p, p + len(at)):
            ops[0][q, k] = np.float32(1 + 2.0 ** -20).view(np.uint32)      # inexact with the others' values
            ops[1][q, k] = np.float32(3 + 2.0 ** -21).view(np.uint32)
        later = min(k + int(rng.integers(1, 300)), n - 1)
        ops[1][p + len(at), later] = EDGES[rng.integers(0, len(EDGES))]      # an edge after it: the redo
    bits, status = program_result(op, ops, 128, 128)
    ref_bits, ref_status = reference(op, ops, pes)
    np.testing.assert_array_equal(bits, ref_bits)
    np.testing.assert_array_equal(status, ref_status)
