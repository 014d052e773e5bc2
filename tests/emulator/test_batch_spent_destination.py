"""The fused pass writes a block's results over the destination array it replaces when nothing
but the destination's own slots holds that array (emulator/engine.py, _spent): every batch here
ends as each machine ends alone on the reference, arrays a caller holds keep their bytes, and a
member a block refuses keeps the state of its last commit byte for byte."""
from __future__ import annotations

import numpy as np
import pytest

from emulator import MachineBatch, batchfuse, engine
from isa import BDim

from test_batch_differential import (_fp32_batch, _fp32_block, assert_batch_matches_reference,
                                     fused_everywhere, special_values)

DIM = BDim(16, 16)


@pytest.fixture
def passes(monkeypatch) -> list:
    """Per fused call: (whether a spent destination was offered, whether the results are in it)."""
    seen = []
    real = batchfuse.Program.run

    def spy(self, plan, m, spent=None):
        out = real(self, plan, m, spent)
        into = spent is not None and hasattr(out, "bits") and out.bits.base is spent
        seen.append((spent is not None, into))
        del spent                        # the spy holds no array past the call
        return out
    monkeypatch.setattr(batchfuse.Program, "run", spy)
    return seen


def test_a_result_nobody_holds_is_written_over_and_every_machine_ends_as_on_the_reference(passes):
    """64 machines x 4 PEs x 16x16 FP32 holding NaNs with payloads, infinities, zeros, subnormals
    and overflowing sums: TADD/TSUB rewriting tile 3 (all PEs, then PEs 1-2, then all again)."""
    machines = _fp32_batch(64, np.random.default_rng(21))
    stream = [_fp32_block("TADD", (1, 2), 3, dim=DIM), _fp32_block("TSUB", (1, 2), 3, dim=DIM),
              _fp32_block("TADD", (2, 1), 3, dim=DIM), _fp32_block("TSUB", (2, 1), 3, dim=DIM)]
    assert_batch_matches_reference(machines, stream)
    assert passes[0] == (False, False)              # no tile 3 yet: a fresh array
    assert all(into for _, into in passes[1:])      # then each block writes over the one it replaces


def test_a_pe_subset_writes_over_the_result_it_replaces(passes):
    """A block over PEs 1 and 2 only replaces the rows of a stack over those two PEs; a block
    over every PE then takes a fresh array (tile 3's rows on PEs 0 and 3 are older)."""
    machines = _fp32_batch(80, np.random.default_rng(22))
    stream = [_fp32_block("TADD", (1, 2), 3, dim=DIM), _fp32_block("TADD", (1, 2), 3, mask=6, dim=DIM),
              _fp32_block("TSUB", (2, 1), 3, mask=6, dim=DIM), _fp32_block("TADD", (2, 1), 3, dim=DIM)]
    with fused_everywhere():
        assert_batch_matches_reference(machines, stream)
    assert [into for _, into in passes] == [False, False, True, False]


def test_arrays_a_caller_holds_keep_their_bytes(passes):
    """tile_arrays' arrays, a materialized machine and a row view held across the next block:
    that block takes a fresh array, and what was held reads as before."""
    machines = _fp32_batch(64, np.random.default_rng(23))
    first, second = _fp32_block("TADD", (1, 2), 3, dim=DIM), _fp32_block("TSUB", (1, 2), 3, dim=DIM)
    batch = MachineBatch(machines)
    batch.run([first])
    (_, _, elems, _), = batch.tile_arrays(2, 3)
    copy = elems.copy()
    batch.run([second])
    assert np.array_equal(elems, copy) and passes[-1] == (False, False)
    row = batch.tile_arrays(0, 3)[0][2][5]          # a view of one machine's row
    kept = row.copy()
    del elems
    batch.run([first])
    assert np.array_equal(row, kept) and not passes[-1][1]
    m = batch.machine(7)
    digest = m.digest()
    del row
    batch.run([second])
    assert m.digest() == digest and not passes[-1][1]
    del m
    batch.run([first])
    assert passes[-1][1]                             # nothing held any more: written over
    for k, machine in enumerate(machines):
        alone = machine.copy()
        for block in (first, second, first, second, first):
            alone.run([block])
        assert batch.machine(k).digest() == alone.digest()


def test_a_refused_member_keeps_its_last_commit_byte_for_byte(passes):
    """Machine 5 reads an undefined element in the second block (tile 4 on PE 1): it stops
    there with tile 3 as the first block left it, and no pass wrote over a destination while
    a source could be refused."""
    rng = np.random.default_rng(24)
    machines = _fp32_batch(64, rng)
    for k, m in enumerate(machines):
        defined = np.ones((16, 16), bool)
        if k == 5:
            defined[9, 4] = False
        for p in range(4):
            m.write_tile(p, 4, "FP32", special_values(rng, "FP32", (16, 16)), defined=defined)
    stream = [_fp32_block("TADD", (1, 2), 3, dim=DIM), _fp32_block("TSUB", (1, 4), 3, dim=DIM),
              _fp32_block("TADD", (2, 1), 3, dim=DIM)]
    batch, result = assert_batch_matches_reference(machines, stream)
    assert result.errors[5].index == 1 and result.errors[5].reason == "SOURCE_UNDEFINED"
    assert passes[1] == (True, False)                # offered, not taken: tile 4 is not known defined
    alone = machines[5].copy()
    alone.run(stream[:1])
    assert batch.machine(5).digest() == alone.digest()


def test_a_destination_that_is_also_a_source_is_never_written_in_place(passes):
    machines = _fp32_batch(64, np.random.default_rng(25))
    stream = [_fp32_block("TADD", (1, 2), 3, dim=DIM), _fp32_block("TADD", (3, 1), 3, dim=DIM),
              _fp32_block("TSUB", (2, 3), 3, dim=DIM)]
    assert_batch_matches_reference(machines, stream)
    assert not any(into for _, into in passes)


def test_other_blocks_and_cohorts_between_reuses_match_the_reference(passes):
    """TMUL (no in-place pass) and TADD alternating on one destination, in two cohorts (some
    machines hold 8 x 16 tiles), run twice as one batch: the reference's states throughout."""
    rng = np.random.default_rng(26)
    machines = _fp32_batch(48, rng) + _fp32_batch(40, rng, shape=(8, 16))
    stream = [_fp32_block("TADD", (1, 2), 3, dim=DIM), _fp32_block("TMUL", (1, 2), 3, dim=DIM),
              _fp32_block("TADD", (2, 1), 3, dim=DIM), _fp32_block("TSUB", (1, 2), 3, dim=DIM)]
    with fused_everywhere():
        batch, _ = assert_batch_matches_reference(machines, stream + stream)
    assert any(into for _, into in passes)


def test_the_counts_of_a_sole_holder_are_measured_on_a_real_commit():
    """_sole's counts are what _holds reads on a stack a commit installed and nothing else holds
    (so a spent destination is found), and one more holder anywhere makes it not spent."""
    for S in (1, 2, 4):
        group = tuple(range(S))
        slots = [{} for _ in range(4)]
        engine._place(slots, 3, engine._stand_in(group))
        owner, counts = engine._holds(slots, 3, group)
        assert counts == engine._sole(S)
        del owner
        held = slots[S - 1][3].elems
        assert engine._holds(slots, 3, group)[1] != engine._sole(S)
        del held
        assert engine._holds(slots, 3, group)[1] == engine._sole(S)


def test_a_hand_off_after_writing_over_a_destination_raises_instead_of_going_on(monkeypatch):
    """writes_in_place rests on the screened routines never handing an element off; were one to
    (a pass's summary with the mark), the batch raises rather than run today's path on a
    destination already overwritten."""
    machines = _fp32_batch(64, np.random.default_rng(27))
    block = _fp32_block("TADD", (1, 2), 3, dim=DIM)
    batch = MachineBatch(machines)
    batch.run([block])
    prog = next(p for key, p in batchfuse._PROGRAMS.items() if p and key[0] == "TADD" and p.writes_in_place)
    real = prog.screened
    monkeypatch.setattr(prog, "screened", lambda *a: (lambda r: (r[0], r[1] | batchfuse._MARK_BIT))(real(*a)))
    monkeypatch.setattr(prog, "unscreened", 0)
    with pytest.raises(RuntimeError, match="hand-off"):
        batch.run([block])


def test_random_streams_over_few_tiles_match_the_reference(passes):
    """Seeded random streams of FP32 TADD/TSUB/TMUL over four tiles (each a source or the
    destination), PE masks among all, pairs and singles, on machines of special values, in a
    third of the batches two holding an undefined element: the reference's states and errors,
    with spent destinations written over along the way."""
    rng = np.random.default_rng(28)
    holed = np.ones((16, 16), bool)
    holed[3, 11] = False
    for i in range(6):
        machines = _fp32_batch(24, rng)
        for m in machines:
            for p in range(4):
                m.write_tile(p, 3, "FP32", special_values(rng, "FP32", (16, 16)))
                m.write_tile(p, 4, "FP32", special_values(rng, "FP32", (16, 16)))
        for k in rng.choice(24, 2, replace=False) if i % 3 == 0 else ():
            machines[k].write_tile(int(rng.integers(0, 4)), 2, "FP32", special_values(rng, "FP32", (16, 16)),
                                   defined=holed)
        stream = []
        for _ in range(6):
            op = str(rng.choice(["TADD", "TSUB", "TADD", "TMUL"]))
            srcs = [int(t) for t in rng.choice([1, 2, 3, 4], 2)]
            stream.append(_fp32_block(op, srcs, int(rng.choice([3, 4])), mask=int(rng.choice([15, 15, 6, 9, 1])),
                                      dim=DIM))
        with fused_everywhere():
            assert_batch_matches_reference(machines, stream)
    assert any(into for _, into in passes)
