"""The fast paths of one machine on the engine (Machine(backend="cpu"), emulator/engine.py
HostPlans) change no answer.

Sources read in place (a role's tiles restacked once into one (P, elements) array and the
machine's tiles re-pointed at its rows), the memoised "every element defined" of a tile, a
repeated block reusing its plan when its source tiles are the very same objects, and the per-PE
status from one pass over the flags (kernels.numeric.elementwise_status): each must give what
the reference machine without any of them gives -- the same results, the same rejections
(reason, field, message), the same state -- and a rejected block must leave the state
byte-identical.

The reference is the same state rebuilt tile by tile on the reference backend (`rebuilt`): no
tile is a row of a stack, no memo is set, no plan is remembered.
"""
import numpy as np
import pytest

from emu_helpers import blk
from emulator import Machine, MachineConfig
from emulator.tiles import make_tile, rows_of_one_stack
from isa import BIor
from isa.errors import IllegalBlockException
from kernels.numeric import elementwise, elementwise_status

ONE = 0x3F800000


def rebuilt(m: Machine) -> Machine:
    """m's state with every tile made alone (fresh arrays, no stack, no memo) on the reference."""
    r = Machine(m.config)
    for p, pe in enumerate(m._pes):
        for tid, t in pe.tiles.items():
            r._pes[p].tiles[tid] = make_tile(t.desc, t.elems.copy(), t.defined.copy())
        r._pes[p].gprs[:] = pe.gprs
        r._pes[p].status = pe.status
    return r


def outcome(m: Machine, block):
    try:
        res = m.execute(block)
    except IllegalBlockException as exc:
        return ("rejected", exc.reason, exc.field, str(exc))
    return ("ok", res.pes, res.dest, res.status)


def same_as_rebuilt(m: Machine, block):
    """Execute `block` on m and on its rebuilt twin: same outcome, same state after."""
    ref = rebuilt(m)
    before = m.digest()
    assert ref.digest() == before
    got, want = outcome(m, block), outcome(ref, block)
    assert got == want
    assert m.digest() == ref.digest()
    if got[0] == "rejected":
        assert m.digest() == before
    return got


def machine(rows=2, cols=8, seed=0):
    rng = np.random.default_rng(seed)
    m = Machine(MachineConfig(local_bytes=1 << 14), backend="cpu")
    for p in range(4):
        for tid in (1, 2):
            vals = (rng.random((rows, cols), dtype=np.float32) + 1).view(np.uint32)
            m.write_tile(p, tid, "FP32", vals)
    return m


def test_reading_written_tiles_restacks_them_without_changing_any_tile_or_the_digest():
    m = machine()
    views = {(p, t): m.read_tile(p, t) for p in range(4) for t in (1, 2)}
    assert all(m._pes[p].tiles[1].stack is None for p in range(4))
    same_as_rebuilt(m, blk("TADD", "FP32", [1, 2], 3, mask=15, vc=8, vr=2))
    tiles = [m._pes[p].tiles[1] for p in range(4)]
    assert rows_of_one_stack(tiles) is not None          # now rows of one stack
    for (p, t), v in views.items():
        now = m.read_tile(p, t)
        assert now.desc == v.desc and now.payload == v.payload
        assert np.array_equal(now.bits, v.bits) and np.array_equal(now.defined, v.defined)
    assert all(not t.elems.flags.writeable and not t.defined.flags.writeable for t in tiles)


def test_a_block_rejected_after_its_sources_were_restacked_leaves_the_digest_identical():
    m = machine()
    m.write_tile(3, 2, "FP32", np.full((2, 8), ONE, np.uint32),
                 defined=np.arange(16).reshape(2, 8) != 13)       # element [1,5] undefined on PE3
    before = m.digest()
    got = same_as_rebuilt(m, blk("TADD", "FP32", [1, 2], 3, mask=15, vc=8, vr=2))
    assert got[:2] == ("rejected", "SOURCE_UNDEFINED") and "PE3" in got[3] and "[1,5]" in got[3]
    assert m.digest() == before
    assert rows_of_one_stack([m._pes[p].tiles[2] for p in range(4)]) is not None
    again = same_as_rebuilt(m, blk("TADD", "FP32", [1, 2], 3, mask=15, vc=8, vr=2))
    assert again == got                                    # rejected again, identically


def test_the_definedness_memo_agrees_with_the_mask_for_every_tile_a_stream_leaves():
    m = machine()
    m.write_tile(0, 4, "FP32", np.full((2, 8), ONE, np.uint32), defined=np.eye(2, 8, dtype=bool) == 0)
    m.write_tile(1, 4, "FP32", np.full((2, 8), ONE, np.uint32))
    blocks = [blk("TADD", "FP32", [1, 2], 3, mask=15, vc=8, vr=2),
              blk("TADD", "FP32", [1, 2], 5, mask=15, vc=4, vr=1, cap=64),   # padded: undefined outside
              blk("TMUL", "FP32", [3, 3], 6, mask=5, vc=8, vr=2),
              blk("TADD", "FP32", [4, 1], 7, mask=3, vc=8, vr=2)]             # PE0's tile 4 is partly undefined
    for b in blocks:
        same_as_rebuilt(m, b)
    for pe in m._pes:
        for t in pe.tiles.values():
            assert t.fully_defined == bool(t.defined.all())


@pytest.mark.parametrize("layout", range(13))
def test_the_definedness_memo_of_a_result_in_any_layout_agrees_with_its_mask(layout):
    m = machine(rows=16, cols=16)
    assert same_as_rebuilt(m, blk("TEXTRACT", "FP32", [1], 3, mask=15, vc=16, vr=16, Layout=layout))[0] == "ok"
    assert same_as_rebuilt(m, blk("TEXTRACT", "FP32", [1], 4, mask=15, vc=8, vr=8, col=16, cap=1024,
                                  Layout=layout))[0] == "ok"           # padded: partly undefined
    for pe in m._pes:
        for tid in (3, 4):
            t = pe.tiles[tid]
            assert t.fully_defined == bool(t.defined.all())


def test_a_window_inside_a_partly_defined_tile_is_still_read_and_checked_element_by_element():
    m = machine()
    defined = np.ones((2, 8), bool)
    defined[1, 7] = False                               # outside the 1 x 4 window read below
    for p in range(4):
        m.write_tile(p, 4, "FP32", np.full((2, 8), ONE, np.uint32), defined=defined, valid_row=1, valid_col=4)
    add = blk("TADD", "FP32", [4, 4], 3, mask=15, vc=4, vr=1, cap=64, col=8)
    assert same_as_rebuilt(m, add)[0] == "ok"
    assert not any(m._pes[p].tiles[4].fully_defined for p in range(4))
    defined[0, 3] = False                               # inside the window, on PE1 only
    m.write_tile(1, 4, "FP32", np.full((2, 8), ONE, np.uint32), defined=defined, valid_row=1, valid_col=4)
    got = same_as_rebuilt(m, add)
    assert got[:2] == ("rejected", "SOURCE_UNDEFINED") and "PE1" in got[3] and "[0,3]" in got[3]


@pytest.mark.parametrize("mask", [0b0101, 0b0011, 0b1100, 0b1010, 0b0001, 0b1000, 0b0110, 0b1011])
def test_a_block_over_a_subset_of_the_pes_reads_a_committed_stack_in_place(mask):
    m = machine()
    same_as_rebuilt(m, blk("TADD", "FP32", [1, 2], 3, mask=15, vc=8, vr=2))   # tile 3: one stack
    same_as_rebuilt(m, blk("TMUL", "FP32", [3, 1], 4, mask=mask, vc=8, vr=2))
    same_as_rebuilt(m, blk("TSUB", "FP32", [3, 4], 5, mask=mask, vc=8, vr=2))


def test_a_repeated_block_rechecks_what_changed_since_it_last_ran():
    m = machine()
    add = blk("TADD", "FP32", [1, 2], 3, mask=15, vc=8, vr=2)
    for _ in range(2):
        same_as_rebuilt(m, add)
    # another tile now fills PE2's store: the repeated block's destination no longer fits
    m.write_tile(2, 9, "FP32", np.full((1, 8), ONE, np.uint32),
                 capacity=m.config.local_bytes - m.used_bytes(2, "Local"))
    got = same_as_rebuilt(m, add)
    assert got[:2] == ("rejected", "ALLOCATION") and "PE2" in got[3]
    m.delete_tile(2, 9)
    same_as_rebuilt(m, add)
    # a source replaced by a tile of another DataType
    m.write_tile(1, 2, "S32", np.ones((2, 8), np.uint32))
    got = same_as_rebuilt(m, add)
    assert got[:2] == ("rejected", "SOURCE_DATATYPE") and "PE1" in got[3]
    # the same tile objects again, but each PE's status changed: a data-movement block keeps it
    m = machine()
    sel = blk("TSEL", "FP32", [5, 1, 2], 6, mask=15, vc=8, vr=2)
    for p in range(4):
        m.write_tile(p, 5, None, np.eye(2, 8, dtype=np.uint8), kind="predicate")
    assert same_as_rebuilt(m, sel)[3] == {0: 0, 1: 0, 2: 0, 3: 0}
    for p in range(4):
        m._pes[p].status = p + 16
    assert same_as_rebuilt(m, sel)[3] == {0: 16, 1: 17, 2: 18, 3: 19}


def test_a_repeated_block_reading_through_gpr_offsets_checks_its_windows_each_time():
    m = machine()
    ext = blk("TEXTRACT", "FP32", [1], 3, mask=15, vc=4, vr=1, cap=16, ior=BIor(1, 2))
    for p in range(4):
        m.set_gpr(p, 1, 1)
        m.set_gpr(p, 2, 4)
    assert same_as_rebuilt(m, ext)[0] == "ok"
    m.set_gpr(3, 2, 5)                                   # PE3's window now runs past ValidCol
    got = same_as_rebuilt(m, ext)
    assert got[:3] == ("rejected", "OFFSET_RANGE", "B.IOR.RegSrc1") and "PE3" in got[3]


def test_random_streams_match_a_machine_rebuilt_before_every_block():
    rng = np.random.default_rng(7)
    masks = [15, 15, 15, 5, 3, 12, 1, 8, 10, 7]
    kinds = []
    for seed in range(4):
        m = machine(seed=seed)
        for _ in range(25):
            mn = ["TADD", "TSUB", "TMUL"][rng.integers(3)]
            a, b = (int(x) for x in rng.integers(1, 5, 2))
            d = int(rng.integers(2, 7))
            got = same_as_rebuilt(m, blk(mn, "FP32", [a, b], d, mask=masks[rng.integers(len(masks))], vc=8, vr=2))
            kinds.append(got[0] if got[0] == "ok" else got[1])
            if rng.random() < 0.2:                       # rewrite a tile, sometimes partly undefined
                p, t = int(rng.integers(4)), int(rng.integers(1, 6))
                m.write_tile(p, t, "FP32", np.full((2, 8), ONE, np.uint32),
                             defined=rng.random((2, 8)) > 0.05)
    assert kinds.count("ok") >= 30 and {"SOURCE_MISSING", "SOURCE_UNDEFINED"} <= set(kinds)


SPECIAL32 = np.array([0, 0x80000000, 1, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000,
                      0xFF800000, 0x7FC00000, 0x7F800001, ONE, 0xBF800000, 0x33800000, 0x4B800000],
                     np.uint32)


def _elementwise_pairs():
    from kernels.numeric import supports
    return [(op, dt) for op in ("TADD", "TSUB", "TMUL", "TFMA", "TDIV", "TMAX")
            for dt in ("FP32", "BF16", "FP16", "S32") if supports(op, dt)]


@pytest.mark.parametrize("op, dtype", _elementwise_pairs())
def test_elementwise_status_is_elementwise_with_its_flags_ored_per_group(op, dtype):
    from kernels.numeric.elementwise import _instruction
    arity = _instruction(op).arity
    rng = np.random.default_rng(1)
    raw = {"FP32": np.uint32, "BF16": np.uint16, "FP16": np.uint16, "S32": np.uint32}[dtype]
    if dtype == "FP32":
        pool = SPECIAL32
    elif dtype == "S32":
        pool = np.array([0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF], np.uint32)
    else:
        pool = (SPECIAL32 >> 16).astype(np.uint16)
    for groups, shape in ((4, (4, 3, 40)), (1, (1, 2, 8)), (3, (3, 1, 16))):
        ops = [rng.choice(pool, shape).astype(raw) for _ in range(arity)]
        ops[0].reshape(-1)[: rng.integers(2, 9)] = rng.integers(0, 1 << 16, 1)   # random bits too
        want_bits, flags = elementwise(op, dtype, *ops)
        got_bits, status = elementwise_status(op, dtype, *ops, groups=groups)
        assert got_bits.dtype == want_bits.dtype and np.array_equal(got_bits, want_bits)
        assert status.dtype == np.uint8
        assert np.array_equal(status, np.bitwise_or.reduce(flags.reshape(groups, -1), axis=1))


def test_the_encoding_check_is_skipped_only_where_every_pattern_of_the_container_encodes_the_format():
    """semantics skips the per-element encoding check (INVALID_ENCODING) when every value the
    operand's array dtype can hold is a valid encoding: exhaustively for <= 16-bit containers,
    over random and boundary patterns for 32/64-bit ones, kernels.numeric.valid_encoding agrees."""
    from emulator import semantics
    from isa import datatypes as dts
    from kernels.numeric import valid_encoding
    rng = np.random.default_rng(3)
    skipped = []
    for dt in dts.DATATYPES:
        for np_dtype in map(np.dtype, (np.uint8, np.uint16, np.uint32, np.uint64)):
            if not semantics._all_patterns_valid(dt.name, dt.container, np_dtype):
                continue
            width = 8 * np_dtype.itemsize
            if width <= 16:
                x = np.arange(1 << width, dtype=np_dtype)
            else:
                edges = np.array([0, 1, (1 << width) - 1, 1 << (width - 1), (1 << (width - 1)) - 1], np.uint64)
                x = np.concatenate([edges, rng.integers(0, (1 << 64) - 1, 1 << 14, dtype=np.uint64, endpoint=True)]).astype(np_dtype)
            assert np.asarray(valid_encoding(x, dt.name)).all(), (dt.name, np_dtype)
            skipped.append(dt.name)
    assert {"FP32", "FP16", "BF16", "E4M3", "E5M2", "FP64"} <= set(skipped)
    assert "TF32" not in skipped and "HF32" not in skipped       # 19/20 bits in a 32-bit container
