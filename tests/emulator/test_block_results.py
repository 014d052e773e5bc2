"""A compiled block program's BlockResults (emulator/blockprog.py, Program._result): a program
hands out one BlockResult per distinct statuses, so every result must still be the one the
reference gives for that block -- its mnemonic, PEs, destination and each PE's status -- in
chains, in lone blocks, past the number of results a program keeps, and with statuses that
change from block to block (NaNs of any payload, infinities, overflow, tiny results, exact and
inexact PEs)."""
import numpy as np

from emulator import Machine, MachineConfig, blockprog
from emulator.reference import BlockResult
from isa import assemble_blocks, encode

from test_block_programs_quick import EDGES, block, ordinary

ROWS, COLS = 4, 16


def fields(results):
    """Each result as plain values, read independently of how it was made."""
    return [(r.mnemonic, tuple(r.pes), r.dest, dict(r.status)) for r in results]


def machines(seed):
    """(reference, cpu) machines holding the same FP32 tiles 1, 2 and 3 on 4 PEs: ordinary values,
    and on each PE some edge values (NaNs, infinities, zeros, subnormals, near overflow and
    tininess) in some tiles, so that statuses differ per PE and block."""
    rng = np.random.default_rng(seed)
    ms = [Machine(MachineConfig()), Machine(MachineConfig(), backend="cpu")]
    for p in range(4):
        for t in (1, 2, 3):
            bits = ordinary(rng, (ROWS, COLS), -60, 60)
            if rng.random() < 0.5:
                at = rng.integers(0, ROWS * COLS, int(rng.integers(1, 4)))
                bits.reshape(-1)[at] = EDGES[rng.integers(0, len(EDGES), len(at))]
            for m in ms:
                m.write_tile(p, t, "FP32", bits)
    return ms


def stream(rng, blocks):
    """`blocks` blocks cycling at random through TADD, TSUB, TMUL and TFMA on tiles 1-3 (each
    reading two or three of them, writing a third) on every PE or a PE subset."""
    text = []
    for _ in range(blocks):
        op = ("TADD", "TSUB", "TMUL", "TFMA")[int(rng.integers(4))]
        a, b, d = (int(x) for x in rng.permutation([1, 2, 3]))
        mask = "0b1111" if rng.random() < 0.8 else "0b0101"
        srcs = [a, b, d] if op == "TFMA" else [a, b]
        iot = ", ".join(f"t{t}@{mask}" for t in srcs)
        text.append(f"BSTART.VEC {op}, FP32\n    B.IOT {iot} -> t{d}@{mask}\n"
                    f"    B.DIM LB0={COLS}, LB1={ROWS}\n")
    return assemble_blocks("".join(text))


def test_stream_results_are_the_references_while_statuses_change():
    for seed in range(4):
        rng = np.random.default_rng(100 + seed)
        blocks = stream(rng, 300)
        ref, cpu = machines(seed)
        got = [m.run(encode(blocks)) for m in (ref, cpu)]
        assert got[0].ok and got[1].ok
        assert fields(got[1].results) == fields(got[0].results)
        assert cpu.digest() == ref.digest()
        assert len({tuple(r.status.values()) for r in got[0].results}) > 1     # statuses did change


def test_lone_blocks_results_are_the_references():
    ref, cpu = machines(7)
    rng = np.random.default_rng(7)
    for b in stream(rng, 60):
        assert fields([cpu.execute(b)]) == fields([ref.execute(b)])
    assert cpu.digest() == ref.digest()


def test_a_program_gives_each_statuses_its_own_result_past_the_ones_it_keeps():
    prog = blockprog.program(block("TADD", COLS, ROWS), "ieee")
    rng = np.random.default_rng(3)
    statuses = [rng.integers(0, 32, 4).astype(np.uint8) for _ in range(3 * blockprog.RESULTS_KEPT)]
    for _ in range(2):                      # first made, then (for those kept) handed out again
        for st in statuses:
            want = BlockResult("TADD", prog.pes, 3, {p: int(s) for p, s in zip(prog.pes, st)})
            assert prog._result(st) == want
    assert len(prog.results) <= blockprog.RESULTS_KEPT
