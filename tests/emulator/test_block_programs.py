"""Compiled block programs (emulator/blockprog.py, docs/machine.md "Compiled block programs"):
a machine on the `cpu` backend runs covered element-wise blocks as one compiled call, and ends
every stream exactly where the reference machine ends it -- the same state digest, the same
commit records, the same StreamError -- whatever the stream mixes: covered and uncovered blocks,
NaNs of any payload, infinities, subnormals, undefined elements, PE_MASK subsets, padding, a
destination that is one of its own sources, missing tiles, wrong DataTypes, full stores.  A
block it rejects leaves the state byte-identical."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator import Machine, MachineConfig, blockprog, engine
from emulator.config import with_profile
from emulator.commitlog import Collector
from isa import BDatr, BDim, BIor, Block, BStart, TileBinding, encoding
from isa.datatypes import datatype
from isa.errors import EncodeError
from isa.instructions import lookup

CONFIG = MachineConfig(local_bytes=2048)
# tile groups of one geometry and DataType: (DataType, tile ids, rows, cols, valid rows, valid cols)
GROUPS = {
    "FP32": ("FP32", (1, 2, 3), 4, 16, 4, 16),
    "FP32p": ("FP32", (4, 5), 4, 16, 3, 12),
    "FP16": ("FP16", (6, 7), 2, 8, 2, 8),
    "BF16": ("BF16", (8,), 2, 8, 2, 8),
    "FP64": ("FP64", (9,), 2, 4, 2, 4),
    "S32": ("S32", (10,), 2, 8, 2, 8),
}
COVERED_OPS = ["TADD", "TSUB", "TMUL", "TFMA", "TDIV", "TSQRT", "TEXP"]
OPS = ["TADD", "TSUB", "TMUL", "TFMA", "TDIV", "TSQRT", "TEXP", "TRECIP", "TMAX", "TABS", "TAND"]
# docs/machine.md, "Compiled block programs": what is covered under ieee
COVERED = {"TADD": "FP32 FP16 BF16", "TSUB": "FP32 FP16 BF16", "TMUL": "FP32 FP16 BF16", "TDIV": "FP32 FP16 BF16",
           "TFMA": "FP32 FP16 BF16", "TREM": "FP32 BF16", "TSQRT": "FP32 FP16", "TEXP": "FP32", "TLOG": "FP32",
           "TRECIP": "FP32", "TRSQRT": "FP32"}
SPECIAL32 = np.array([0x7FC00000, 0x7F800001, 0xFFC12345, 0x7F800000, 0xFF800000, 0x00000001, 0x807FFFFF,
                      0x00000000, 0x80000000, 0x7F7FFFFF, 0x00800000], np.uint64)
SPECIAL16 = np.array([0x7E00, 0x7C01, 0xFE55, 0x7C00, 0xFC00, 0x0001, 0x83FF, 0x0000, 0x8000, 0x7BFF], np.uint64)


def values(rng, dtype, shape):
    """Raw encodings of `dtype`: mostly ordinary values, with NaNs (any payload), infinities,
    zeros and subnormals mixed in."""
    if dtype in ("FP32", "FP64"):
        with np.errstate(over="ignore"):      # beyond binary32's range: infinities, on purpose
            ordinary = (rng.standard_normal(shape) * 10.0 ** rng.integers(-40, 39, shape)).astype(np.float32)
        bits = ordinary.view(np.uint32).astype(np.uint64)
        if dtype == "FP64":
            bits = rng.standard_normal(shape).view(np.uint64)
        special = SPECIAL32
    elif dtype in ("FP16", "BF16"):
        bits = rng.integers(0, 1 << 16, shape, dtype=np.uint64)
        special = SPECIAL16 if dtype == "FP16" else SPECIAL32 >> np.uint64(16)
    else:
        return rng.integers(0, 1 << 31, shape, dtype=np.uint64)
    if dtype != "FP64":
        pick = rng.random(shape) < 0.08
        bits = np.where(pick, special[rng.integers(0, len(special), shape)], bits)
    return bits


def machine(seed: int, backend: str, profile: str = "ieee") -> Machine:
    rng = np.random.default_rng(seed)
    m = Machine(with_profile(CONFIG, profile), backend=backend)
    for p in range(4):
        for dtype, ids, rows, cols, vr, vc in GROUPS.values():
            for t in ids:
                defined = rng.random((rows, cols)) > (0.01 if rng.random() < 0.05 else 0)
                m.write_tile(p, t, dtype, values(rng, dtype, (rows, cols)), valid_row=vr, valid_col=vc,
                             defined=defined)
        # a Matrix tile: its bytes count against the Matrix store only (the allocation rule per location)
        m.write_tile(p, 13, "FP32", values(rng, "FP32", (8, 16)), location="Matrix")
        if rng.random() < 0.05:
            m.delete_tile(p, int(rng.integers(1, 11)))
    return m


@st.composite
def blocks(draw):
    """Mostly blocks of the covered kind over the tiles of one group (results land in the
    group's tiles, or in new ones, 11-12), with now and then a tile of another group, another
    DataType, a PE_MASK subset, a large capacity, or B.IOR offsets."""
    mn = draw(st.sampled_from(OPS) | st.sampled_from(COVERED_OPS) | st.sampled_from(COVERED_OPS))
    row = lookup(mn)
    groups = [g for g, v in GROUPS.items() if v[0] in row.dtypes]
    if mn in COVERED_OPS and draw(st.integers(0, 3)):
        groups = [g for g in groups if g in ("FP32", "FP32p", "FP16", "BF16") and GROUPS[g][0] in COVERED[mn]] or groups
    g = draw(st.sampled_from(groups))
    dtype, ids, rows, cols, vr, vc = GROUPS[g]
    code = datatype(dtype).code if draw(st.integers(0, 19)) else draw(st.sampled_from([1, 4, 16, 18, 23]))
    mask = draw(st.sampled_from([15, 15, 15, 15, 1, 3, 6, 9, 0]) | st.integers(0, 15))
    srcs = [draw(st.sampled_from(ids) if draw(st.integers(0, 9)) else st.integers(1, 12))
            for _ in row.sources]
    dest = draw(st.sampled_from(ids + (11, 12)) | st.sampled_from(srcs))
    cap = rows * cols * datatype(dtype).container // 8
    cap = draw(st.integers(0, 1600)) if draw(st.integers(0, 14)) == 0 else (cap if vr != rows else None)
    iot = tuple(TileBinding(t, mask) for t in srcs) + (TileBinding(dest, mask, cap),)
    datr = BDatr(PadValueOrByteId=draw(st.none() | st.integers(0, 3))) if "PadValueOrByteId" in row.datr else None
    ior = BIor(0, draw(st.integers(0, 3)), 0, 0) if row.uses_ior and draw(st.integers(0, 9)) == 0 else None
    return Block(BStart(row.mode, row.function, code, row.engine), iot, BDim(vc, vr, cols), datr, ior, None)


def error_key(err):
    if err is None:
        return None
    return (err.index, err.offset, err.reason, getattr(err.cause, "field", None), str(err.cause))


def run_logged(m, stream):
    log = Collector()
    r = m.run(stream, log=log)
    return r, [g.to_pylist() for g in log.blocks]


def assert_same_as_reference(seed, stream, profile="ieee"):
    fast, ref = machine(seed, "cpu", profile), machine(seed, "reference", profile)
    assert fast.digest() == ref.digest()
    rf, lf = run_logged(fast, stream)
    rr, lr = run_logged(ref, stream)
    assert rf.executed == rr.executed
    assert error_key(rf.error) == error_key(rr.error)
    assert [(x.mnemonic, x.pes, x.dest, x.status) for x in rf.results] == \
        [(x.mnemonic, x.pes, x.dest, x.status) for x in rr.results]
    assert lf == lr
    assert fast.digest() == ref.digest()
    # without a log, consecutive covered blocks run as a chain, committed when it ends
    plain = machine(seed, "cpu", profile)
    rp = plain.run(stream)
    assert rp.executed == rr.executed and error_key(rp.error) == error_key(rr.error)
    assert [(x.mnemonic, x.pes, x.dest, x.status) for x in rp.results] == \
        [(x.mnemonic, x.pes, x.dest, x.status) for x in rr.results]
    assert plain.digest() == ref.digest()
    assert [list(pe.tiles) for pe in plain.pes] == [list(pe.tiles) for pe in ref.pes]     # the stores' order too


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.lists(blocks(), min_size=1, max_size=10), st.booleans())
def test_a_stream_on_the_cpu_backend_ends_where_it_ends_on_the_reference(seed, stream, as_bytes):
    if as_bytes:                 # decoded streams: fresh Block objects, programs found by their words
        try:
            stream = encoding.encode(stream)
        except EncodeError:
            pass
    assert_same_as_reference(seed, stream)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.lists(blocks(), min_size=1, max_size=8), st.sampled_from(["ftz", "a5"]))
def test_under_the_other_profiles_too(seed, stream, profile):
    """Programs are kept per profile: ftz flushes in the rounded routines, a5 picks other tiers."""
    assert_same_as_reference(seed, stream, profile)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.lists(blocks(), min_size=1, max_size=6), blocks())
def test_a_rejected_block_leaves_the_state_byte_identical(seed, prefix, block):
    m = machine(seed, "cpu")
    m.run(prefix)
    before = m.digest()
    try:
        m.execute(block)
    except Exception:
        assert m.digest() == before


def tadd(mask=15, rows=4, cols=16, dest=3, mn="TADD", dtype="FP32", srcs=(1, 2)):
    row = lookup(mn)
    return Block(BStart(row.mode, row.function, datatype(dtype).code, row.engine),
                 tuple(TileBinding(t, mask) for t in srcs) + (TileBinding(dest, mask),), BDim(cols, rows), None,
                 None, None)


def test_covered_blocks_have_a_program_and_the_others_do_not():
    assert blockprog.program(tadd(), "ieee") is not None
    assert blockprog.program(tadd(mn="TMUL", dtype="FP16"), "ieee") is not None
    assert blockprog.program(tadd(mn="TMAX"), "ieee") is None        # an array tier: no compiled routine
    assert blockprog.program(tadd(mn="TADD", dtype="S32"), "ieee") is None
    assert blockprog.program(tadd(mn="TADD", dtype="TF32"), "ieee") is None   # per-element encoding rule
    assert blockprog.program(tadd(mask=0), "ieee") is None                 # a strict no-op


def test_the_covered_instructions_and_datatypes_are_those_the_machine_doc_lists():
    from isa.datatypes import DATATYPES
    from isa.instructions import INSTRUCTIONS
    got = {}
    for row in INSTRUCTIONS:
        for dt in DATATYPES:
            if dt.name in row.dtypes and row.arity:
                srcs = tuple(range(1, row.arity + 1))
                if row.schema in blockprog.SCHEMAS and \
                        blockprog.program(tadd(mn=row.mnemonic, dtype=dt.name, srcs=srcs, dest=9), "ieee"):
                    got.setdefault(row.mnemonic, []).append(dt.name)
    assert {k: " ".join(v) for k, v in got.items()} == COVERED


def finished_by_programs(monkeypatch) -> list:
    """A list that gets, per covered block, whether its program finished it: alone (run) or
    inside a chain of covered blocks (step; a step that gives up is followed by run)."""
    ran = []
    run, step = blockprog.Program.run, blockprog.Program.step

    def counting_run(self, *a):
        res = run(self, *a)
        ran.append(res is not None)
        return res

    def counting_step(self, *a):
        res = step(self, *a)
        if res is not None:
            ran.append(True)
        return res
    monkeypatch.setattr(blockprog.Program, "run", counting_run)
    monkeypatch.setattr(blockprog.Program, "step", counting_step)
    return ran


def test_a_stream_of_covered_blocks_runs_as_programs(monkeypatch):
    ran = finished_by_programs(monkeypatch)
    m = machine(1, "cpu")
    for p in range(4):
        for t in (1, 2):
            m.write_tile(p, t, "FP32", np.ones((4, 16), np.uint64) * 0x3F800000)
    stream = encoding.encode([tadd(), tadd(srcs=(3, 2), dest=1), tadd(mask=6, dest=3, srcs=(1, 1))] * 3)
    r = m.run(stream)
    assert r.ok and ran == [True] * 9


def test_a_marked_element_sends_the_block_to_todays_path_with_the_same_result(monkeypatch):
    """Under profile ftz, TADD FP32 runs the `fast` tier's rounded routine, which leaves every
    element with a non-finite operand to the hand-off: a block reading a NaN falls back to
    today's path and ends where the reference does; one without runs as its program."""
    ran = finished_by_programs(monkeypatch)
    one, nan = np.full((4, 16), 0x3F800000, np.uint64), np.full((4, 16), 0x3F800000, np.uint64)
    nan[2, 5] = 0x7FC00001
    results = []
    for backend in ("cpu", "reference"):
        m = Machine(with_profile(CONFIG, "ftz"), backend=backend)
        for p in range(4):
            m.write_tile(p, 1, "FP32", one)
            m.write_tile(p, 2, "FP32", nan if p == 3 else one)
        r = m.run([tadd(srcs=(1, 1), dest=4), tadd()])
        results.append((r.executed, [x.status for x in r.results], m.digest()))
    assert results[0] == results[1]
    assert ran == [True, False]


def chain_machine(seed: int, backend: str, profile: str = "ieee", local_bytes: int = 4096) -> Machine:
    """FP32 tiles 1, 2 (4x16) and 4, 5 (3x12) on every PE, NaNs, infinities and
    subnormals among their values; tile 9 (4x16) with one undefined element on PE 2."""
    rng = np.random.default_rng(seed)
    m = Machine(with_profile(MachineConfig(local_bytes=local_bytes), profile), backend=backend)
    for p in range(4):
        for t in (1, 2, 9):
            defined = np.ones((4, 16), bool)
            defined[1, 7] = not (t == 9 and p == 2)
            m.write_tile(p, t, "FP32", values(rng, "FP32", (4, 16)), defined=defined)
        for t in (4, 5):
            m.write_tile(p, t, "FP32", values(rng, "FP32", (3, 12)))
    return m


CHAIN = [tadd(), tadd(srcs=(3, 2), dest=1), tadd(mn="TMUL", srcs=(1, 3), dest=11),
         tadd(mask=6, dest=3, srcs=(1, 11)), tadd(mask=6, mn="TSUB", srcs=(3, 11), dest=12),
         tadd(mn="TMAX", srcs=(2, 1), dest=2), tadd(mn="TFMA", srcs=(2, 11, 1), dest=12),
         tadd(srcs=(4, 5), dest=6, rows=3, cols=12), tadd(mn="TDIV", srcs=(12, 2), dest=1),
         tadd(srcs=(1, 3), dest=13), tadd(srcs=(13, 1), dest=13)]
ENDS = {"finishes": [], "undefined": [tadd(srcs=(1, 9), dest=3)], "missing": [tadd(srcs=(1, 7), dest=3)],
        "full": [tadd(srcs=(1, 2), dest=14)]}


@pytest.mark.parametrize("end", sorted(ENDS))
@pytest.mark.parametrize("bad_word_in", [None, 3, 9])
@pytest.mark.parametrize("profile", ["ieee", "ftz"])
def test_a_chain_of_covered_blocks_ends_where_the_reference_ends(end, bad_word_in, profile):
    """Covered blocks in a row (a chain), and what ends a chain -- a block over other PEs, an
    uncovered block, an element left to the hand-off (ftz), a block that reads an undefined
    element, a missing tile, a full store, a block that does not decode (a BSTART word as its
    second word: `bad_word_in`) -- give the reference's state, statuses, store order, results and
    StreamError, with and without a log."""
    stream = CHAIN + ENDS[end] + CHAIN[:3]
    data = bytearray(encoding.encode(stream))
    if bad_word_in is not None:
        at = [off for off, _ in encoding.iter_blocks(bytes(data))][bad_word_in]
        data[at + 4:at + 8] = data[at:at + 4]
    for seed in range(3):
        for given in (stream, bytes(data)):
            size = 2304 if end == "full" else 4096     # 2304: the chain fills the store
            fast, ref = (chain_machine(seed, b, profile, size) for b in ("cpu", "reference"))
            rf, rr = fast.run(given), ref.run(given)
            assert rf.executed == rr.executed and error_key(rf.error) == error_key(rr.error)
            assert [(x.mnemonic, x.pes, x.dest, x.status) for x in rf.results] == \
                [(x.mnemonic, x.pes, x.dest, x.status) for x in rr.results]
            assert fast.digest() == ref.digest()
            assert [list(pe.tiles) for pe in fast.pes] == [list(pe.tiles) for pe in ref.pes]
            lf, lr = (run_logged(chain_machine(seed, b, profile, size), given) for b in ("cpu", "reference"))
            assert lf[1] == lr[1] and error_key(lf[0].error) == error_key(lr[0].error)
        if bad_word_in is None:
            break


def test_a_generator_of_blocks_sees_every_blocks_commit_before_the_next_block():
    """A stream given as a generator can look at the machine between blocks: each block is
    committed before the next is asked for (no chain), as on the reference."""
    stream = CHAIN[:5] + CHAIN[:5]
    digests = {}
    for backend in ("cpu", "reference"):
        m = chain_machine(1, backend)
        got = digests[backend] = []

        def blocks():
            for b in stream:
                yield b
                got.append(m.digest())
        assert m.run(blocks()).ok
    assert digests["cpu"] == digests["reference"] and len(digests["cpu"]) == len(stream)


def test_the_baseline_without_programs_is_todays_path():
    m = machine(3, "cpu")
    m._engine = engine.HostPlans(compiled=False)
    assert type(m._engine.runner(m)) is engine.Here


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.lists(blocks(), min_size=1, max_size=4),
       st.lists(st.integers(0, 3), min_size=2, max_size=30))
def test_a_stream_repeating_a_few_blocks_ends_where_the_reference_ends(seed, pool, picks):
    """A stream of a few distinct blocks repeated (as a stream decodes them: one Block object per
    distinct block, taken from its words at once; each object's program kept by identity for the
    run): long chains of the same programs, reading tiles the chain wrote in one or two roles."""
    stream = [pool[i % len(pool)] for i in picks]
    try:
        stream = encoding.encode(stream)
    except EncodeError:
        pass
    assert_same_as_reference(seed, stream)


def test_a_chain_that_stops_inside_a_block_keeps_the_statuses_of_the_block_before():
    """A block whose compiled call stops on a later PE (an undefined element on PE 2, a NaN on
    PE 3 under ftz) has written the statuses of the PEs before it; the chain keeps the last
    finished block's statuses, and the block runs on today's path: the reference's statuses,
    state and StreamError."""
    big = np.full((4, 16), 0x7F000000, np.uint64)          # 2^127: doubling overflows (flags differ per block)
    for profile, bad in (("ieee", "undefined"), ("ftz", "nan")):
        got = []
        for backend in ("cpu", "reference"):
            m = Machine(with_profile(MachineConfig(local_bytes=4096), profile), backend=backend)
            for p in range(4):
                d = np.ones((4, 16), bool)
                x = big.copy()
                if p == 2 and bad == "undefined":
                    d[3, 15] = False
                if p == 3 and bad == "nan":
                    x[3, 15] = 0x7FC00001
                m.write_tile(p, 1, "FP32", np.full((4, 16), 0x3F800000, np.uint64))
                m.write_tile(p, 2, "FP32", x, defined=d)
            stream = [tadd(srcs=(1, 1), dest=3), tadd(srcs=(3, 3), dest=1), tadd(srcs=(1, 3), dest=4),
                      tadd(srcs=(2, 2), dest=5), tadd(srcs=(4, 1), dest=3)]
            r = m.run(encoding.encode(stream))
            got.append((r.executed, error_key(r.error), [x.status for x in r.results], m.digest(),
                        [m.status(p) for p in range(4)], [list(pe.tiles) for pe in m.pes]))
        assert got[0] == got[1]


# The FP32 quick loop for two sources as it reads written out by hand (never called: its
# globals are blockprog's).  blockprog writes its loops from pieces (_loop); this is the one
# with every piece in it: the chunked quick part, the redo by the full routine, the pads.
def _quick2(a, b, ad, bd, prm, out, status):
    wide_vectors()
    check, vr, vc, rows, col, pad = prm[0], prm[1], prm[2], prm[3], prm[4], prm[5]
    runs, width = _runs(vr, vc, col)
    n = out.shape[0]
    if check and (_undefined(ad, n, runs, width, col) or _undefined(bd, n, runs, width, col)):
        return UNDEFINED
    marks = np.uint8(0)
    for p in range(n):
        ap = a[p]; bp = b[p]; outp = out[p]
        nx = NX0; low = LOW0; high = np.uint32(0)
        for r in range(runs):
            base = r * col
            ar = ap[base:base + width]; br = bp[base:base + width]; outr = outp[base:base + width]
            k = 0
            while nx == 0 and k < width:
                end = min(k + _NX_CHUNK, width)
                ac = ar[k:end]; bc = br[k:end]; oc = outr[k:end]
                for j in range(end - k):
                    code, x, lo, hi = QUICK(ac[j], bc[j])
                    oc[j] = code
                    nx = max(nx, x)
                    low = min(low, lo)
                    high = max(high, hi)
                k = end
            ac = ar[k:]; bc = br[k:]; oc = outr[k:]
            for j in range(width - k):
                code, _, lo, hi = QUICK(ac[j], bc[j])
                oc[j] = code
                low = min(low, lo)
                high = max(high, hi)
        st = _status(nx, low, high, LOW)
        if st == 0xFF:
            st = np.uint8(0)
            for r in range(runs):
                base = r * col
                ar = ap[base:base + width]; br = bp[base:base + width]; outr = outp[base:base + width]
                for k in range(width):
                    code, f = SCALAR(ar[k], br[k])
                    outr[k] = code
                    st |= f
        status[p] = st
        marks |= st
        _pad(outp, rows, vr, vc, col, pad)
    return MARKED if marks & MARK_BIT else 0


def test_the_written_out_loops_are_the_hand_written_ones():
    """Same bytecode, names and constants: the same compiled loop, whatever wrote its source."""
    made, hand = blockprog._quick2.__code__, _quick2.__code__
    for field in ("co_code", "co_consts", "co_names", "co_varnames", "co_argcount"):
        assert getattr(made, field) == getattr(hand, field), field
    assert blockprog.QUICK_TEMPLATES[2] is blockprog._quick2
    # every template the programs use is one _loop wrote, with its own name
    for (kind, arity), loop in blockprog.TEMPLATES.items():
        assert loop.__name__ == ("_prog" if kind == "raw" else "_progbits") + str(arity)
        assert loop.__code__.co_argcount == 2 * arity + 3 + (2 if kind == "bits" else 0)
