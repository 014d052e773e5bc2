"""Compiled block programs on large tiles (emulator/blockprog.py; docs/machine.md "Compiled block
programs"): on 4 PEs x 128x128 the vectorised element loop of a `cpu` machine ends every stream
where the reference machine ends it -- the same state digest, results, statuses, commit records
and StreamError -- with NaNs of any payload, infinities and subnormals among the values, PE_MASK
subsets, padding (ValidRow < Row, ValidCol < Col), and a fault in the very last element read
(an undefined element, or under profile ftz an element the fast routine leaves to the hand-off).
A rejected block leaves the state byte-identical."""
import numpy as np
import pytest

from emulator import Machine, MachineConfig, blockprog
from emulator.commitlog import Collector
from emulator.config import with_profile
from isa import BDatr, BDim, Block, BStart, TileBinding
from isa.datatypes import datatype
from isa.instructions import lookup
from emu_helpers import record_results

ROWS = COLS = 128
VR, VC = 100, 120                       # the padded group's valid rectangle
WHOLE = (1, 2, 3)                       # FP32 128x128, every element valid
PADDED = (4, 5, 6)                      # FP32 128x128 stored, 100x120 valid
SPECIAL = np.array([0x7FC00000, 0x7F800001, 0xFFC12345, 0x7F800000, 0xFF800000, 0x00000001, 0x807FFFFF,
                    0x00000000, 0x80000000, 0x7F7FFFFF, 0x00800000, 0x7FBFFFFF], np.uint64)


def values(rng, shape, special=0.08):
    """binary32 encodings over the whole exponent range, a `special` share of them NaNs (any
    payload), infinities, zeros, subnormals or the largest finite (none: normal values only)."""
    if not special:
        return (rng.uniform(1, 2, shape) * 2.0 ** rng.integers(-60, 60, shape)).astype(np.float32) \
            .view(np.uint32).astype(np.uint64)
    with np.errstate(over="ignore"):
        ordinary = (rng.standard_normal(shape) * 10.0 ** rng.integers(-45, 39, shape)).astype(np.float32)
    bits = ordinary.view(np.uint32).astype(np.uint64)
    pick = rng.random(shape) < special
    return np.where(pick, SPECIAL[rng.integers(0, len(SPECIAL), shape)], bits)


def machine(seed, backend, profile="ieee", undefined_last=None, nan_last=None, special=0.08):
    """Tiles 1-3 whole, 4-6 padded, on 4 PEs; `undefined_last`/`nan_last`: (pe, tile) whose last
    valid element is undefined / a quiet NaN."""
    rng = np.random.default_rng(seed)
    m = Machine(with_profile(MachineConfig(local_bytes=1 << 20), profile), backend=backend)
    for p in range(4):
        for t in WHOLE + PADDED:
            vr, vc = (ROWS, COLS) if t in WHOLE else (VR, VC)
            data = values(rng, (ROWS, COLS), special)
            defined = np.ones((ROWS, COLS), bool)
            if (p, t) == undefined_last:
                defined[vr - 1, vc - 1] = False
            if (p, t) == nan_last:
                data[vr - 1, vc - 1] = 0x7FC00000
            m.write_tile(p, t, "FP32", data, valid_row=vr, valid_col=vc, defined=defined)
    return m


def block(mn, srcs, dest, mask=15, padded=False, pad=None):
    row = lookup(mn)
    vr, vc = (VR, VC) if padded else (ROWS, COLS)
    cap = ROWS * COLS * 4 if padded else None
    iot = tuple(TileBinding(t, mask) for t in srcs) + (TileBinding(dest, mask, cap),)
    datr = BDatr(PadValueOrByteId=pad) if pad is not None else None
    return Block(BStart(row.mode, row.function, datatype("FP32").code, row.engine), iot, BDim(vc, vr, COLS),
                 datr, None, None)


def outcome(m, stream, log):
    r = m.run(stream, log=log)
    err = None if r.error is None else (r.error.index, r.error.reason, str(r.error.cause))
    return (r.executed, err, [(x.mnemonic, x.pes, x.dest, x.status) for x in r.results], m.digest())


def assert_same_as_reference(stream, **kw):
    ref = machine(7, "reference", **kw)
    ref_log = Collector()
    want = outcome(ref, stream, ref_log)
    for logged in (True, False):          # with a log: one commit a block; without: a chain
        fast = machine(7, "cpu", **kw)
        log = Collector() if logged else None
        assert outcome(fast, stream, log) == want
        if logged:
            assert [g.to_pylist() for g in log.blocks] == [g.to_pylist() for g in ref_log.blocks]
    return want


STREAMS = {
    "whole tiles, every op, PE_MASK subsets": [
        block("TADD", (1, 2), 3), block("TMUL", (3, 1), 2, mask=5), block("TFMA", (1, 2, 3), 3, mask=8),
        block("TSUB", (2, 3), 1, mask=14), block("TDIV", (1, 3), 2), block("TSQRT", (2,), 3, mask=3),
        block("TADD", (3, 3), 3)],
    "padding": [
        block("TADD", (4, 5), 6, padded=True, pad=1), block("TMUL", (6, 4), 5, mask=9, padded=True, pad=2),
        block("TFMA", (4, 5, 6), 6, padded=True, pad=3), block("TSUB", (6, 5), 4, mask=6, padded=True),
        block("TADD", (4, 4), 5, padded=True, pad=0)],
}


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_a_large_tile_stream_ends_where_the_reference_ends(name):
    executed, err, _, _ = assert_same_as_reference(STREAMS[name])
    assert err is None and executed == len(STREAMS[name])


@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("mask", [15, 8])
def test_an_undefined_last_element_rejects_the_block_and_changes_nothing(padded, mask):
    """The last element of the last selected PE's valid rectangle is undefined: the block is
    rejected (SOURCE_UNDEFINED) on both machines and the state is what the block before left."""
    a, b, d = PADDED if padded else WHOLE
    first = block("TADD", (a, a), d, padded=padded, pad=1 if padded else None)
    bad = block("TMUL", (d, b), a, mask=mask, padded=padded)
    executed, err, _, digest = assert_same_as_reference([first, bad], undefined_last=(3, b))
    assert executed == 1 and err[:2] == (1, "SOURCE_UNDEFINED")
    m = machine(7, "cpu", undefined_last=(3, b))
    m.execute(first)
    before = m.digest()
    with pytest.raises(Exception):
        m.execute(bad)
    assert m.digest() == before == digest


@pytest.mark.parametrize("padded", [False, True])
def test_a_last_element_left_to_the_hand_off_gives_the_references_result(padded, monkeypatch):
    """Under profile ftz the FP32 adder's rounded routine leaves an element with a NaN operand
    to the hand-off: on normal values the block runs as its program, and the one NaN, in the
    last valid element of PE 3, sends the block reading it to today's path; both end where the
    reference does."""
    a, b, d = PADDED if padded else WHOLE
    stream = [block("TADD", (a, a), d, padded=padded), block("TADD", (d, b), a, mask=12, padded=padded)]
    finished = record_results(monkeypatch, blockprog.Program, "run")
    executed, err, _, _ = assert_same_as_reference(stream, profile="ftz", nan_last=(3, b), special=0)
    assert executed == 2 and err is None
    assert finished[:2] == [True, False]        # the logged run: one commit a block, through run
