"""Region programs whose leaves are tile blocks: they run on the emulator, parallel over PEs or
over a batch, serial loops with GPR-dependent windows, and reductions across PEs under each
fold policy.  Float results are checked against NumPy float32 arithmetic done here (IEEE
binary32, round to nearest even), never against the code under test."""
import json

import numpy as np
import pytest

from emulator import Machine
from emulator.calculus import (InterferenceError, ReductionPolicyError, RegionError, RegionRuntimeError,
                               loads, run)
from emulator.calculus import builder as B
from emulator.calculus import reduction as R
from emulator.calculus.effects import events
from emulator.calculus.tiles import tile_merge_function

F32 = np.float32


def f32bits(x):
    return np.asarray(x, dtype=F32).view(np.uint32)


def vals(m, pe, tile):
    return m.read_tile(pe, tile).valid.astype(np.uint32).view(F32)


def machine(contribs=None):
    m = Machine()
    rng = np.random.default_rng(7)
    for p in range(4):
        m.write_tile(p, 1, "FP32", f32bits(rng.integers(-8, 8, (2, 4)) / 4))
        m.write_tile(p, 2, "FP32", f32bits(rng.integers(-8, 8, (2, 4)) / 8))
        if contribs is not None:
            m.write_tile(p, 5, "FP32", f32bits(np.full((2, 4), contribs[p])))
    return m


ADD = "BSTART.VEC TADD, FP32\n B.IOT t1@{m}, t2@{m} -> t3@{m}\n B.DIM LB0=4, LB1=2"
MUL = "BSTART.VEC TMUL, FP32\n B.IOT t3@{m}, t2@{m} -> t4@{m}\n B.DIM LB0=4, LB1=2"


def test_parallel_over_pes_is_the_same_as_one_block_over_all_pes():
    per_pe = B.program(B.parallel([("pe", 4)], B.seq(B.block(ADD.format(m="${1 << pe}")),
                                                     B.block(MUL.format(m="${1 << pe}")))))
    whole = B.program(B.seq(B.block(ADD.format(m="0b1111")), B.block(MUL.format(m="0b1111"))))
    a, b = machine(), machine()
    run(per_pe, machines=[a], validate=True)
    run(whole, machines=[b])
    assert a.digest() == b.digest()
    for p in range(4):     # and the numbers are the float32 ones
        t1, t2 = vals(machine(), p, 1), vals(machine(), p, 2)
        assert np.array_equal(vals(a, p, 4), (t1 + t2) * t2)


def test_parallel_instances_that_write_one_tile_interfere():
    prog = B.program(B.parallel([("pe", 2)], B.block("BSTART.VEC TADD, FP32\n B.IOT t1@0b0001, t2@0b0001 "
                                                     "-> t3@0b0001\n B.DIM LB0=4, LB1=2")))
    with pytest.raises(InterferenceError) as e:
        run(prog, machines=[machine()], validate=True)
    assert e.value.cell == "PE0 tile 3" and e.value.kind == "write/write"


def test_a_rejected_block_is_reported_with_its_path_and_leaves_state_unchanged():
    prog = B.program(B.seq(B.block(ADD.format(m="0b0011")),
                           B.block("BSTART.VEC TADD, FP32\n B.IOT t1@0b0011, t7@0b0011 -> t3@0b0011\n B.DIM LB0=4, LB1=2")))
    m = machine()
    ref = machine()
    ref.run([loads(json.dumps({"body": {"block": ADD.format(m="0b0011")}})).body.block])
    with pytest.raises(RegionRuntimeError) as e:
        run(prog, machines=[m])
    assert e.value.path == "$.body.seq[1]" and "SOURCE_MISSING" in e.value.why
    assert m.digest() == ref.digest()


def test_serial_loops_walk_gpr_windows():
    # Reverse the rows of a 4x4 tile with TEXTRACT/TINSERT at GPR offsets.
    m = Machine()
    m.write_tile(0, 1, "U8", np.arange(16, dtype=np.uint8).reshape(4, 4))
    prog = B.program(B.seq(
        B.block("BSTART.SFU TEXTRACT, U8\n B.IOT t1@0b0001 -> t2@0b0001\n B.DIM LB0=4, LB1=4"),
        B.serial([("w", 4)], B.seq(
            B.gpr(0, 1, "w"), B.gpr(0, 2, "3 - w"),
            B.block("BSTART.SFU TEXTRACT, U8\n B.IOT t1@0b0001 -> t3@0b0001\n B.DIM LB0=4\n B.IOR RegSrc0=r1"),
            B.block("BSTART.SFU TINSERT, U8\n B.IOT t2@0b0001, t3@0b0001 -> t2@0b0001\n B.DIM LB0=4, LB1=4\n"
                    " B.IOR RegSrc0=r2")))))
    run(prog, machines=[m], validate=True)
    assert np.array_equal(m.read_tile(0, 2).valid, np.arange(16).reshape(4, 4)[::-1])


def test_parallel_over_a_batch_runs_each_case_on_its_own_machine():
    prog = B.program(B.parallel([("case", 3)], B.seq(B.gpr(0, 1, "case"),
                     B.block("BSTART.SFU TEXTRACT, U8\n B.IOT t1@0b0001 -> t2@0b0001\n B.DIM LB0=2\n B.IOR RegSrc0=r1")),
                     batch=True))
    base = Machine()
    base.write_tile(0, 1, "U8", np.arange(12, dtype=np.uint8).reshape(3, 4))
    res = run(prog, machines=[base.copy()], validate=True, batch_template=base)
    assert [res.machines[k].read_tile(0, 2).valid.tolist() for k in range(3)] == [[[0, 1]], [[4, 5]], [[8, 9]]]


# ---- reductions across PEs --------------------------------------------------------------------

CONTRIB = [1.0, 2.0 ** 24, 1.0, -(2.0 ** 24)]      # float32 absorbs 1 next to 2^24: order matters


def reduce_prog(policy, combine="TADD"):
    return B.program(B.reduce([("pe", 4)], B.tile(0, 9), B.tile("pe", 5), combine, policy=policy))


def seeded(seed=0.5):
    m = machine(CONTRIB)
    m.write_tile(0, 9, "FP32", f32bits(np.full((2, 4), seed)))
    return m


def test_a_reduction_across_pes_under_each_fold_policy_matches_float32():
    s, c = F32(0.5), [F32(x) for x in CONTRIB]
    expected = {
        "fold_left": (((s + c[0]) + c[1]) + c[2]) + c[3],
        "fold_right": c[0] + (c[1] + (c[2] + (c[3] + s))),
        "unordered_tree": s + ((c[0] + c[1]) + (c[2] + c[3])),     # the canonical pairwise tree
    }
    assert len({float(v) for v in expected.values()}) > 1          # the policies really differ here
    for policy, want in expected.items():
        m = seeded()
        run(reduce_prog(policy), machines=[m], validate=True)
        assert np.all(vals(m, 0, 9) == want), policy


def test_a_tile_fiber_keeps_source_order_whatever_its_keys():
    s, c = F32(0.5), [F32(x) for x in CONTRIB]
    m = seeded()
    prog = B.program(B.reduce([("pe", 4)], B.tile(0, 9), B.tile("pe", 5), "TADD", policy="fold_left",
                              key=["3 - pe"]))
    run(prog, machines=[m], validate=True)
    assert np.all(vals(m, 0, 9) == (((s + c[0]) + c[1]) + c[2]) + c[3])       # not c[3] first


def test_the_tree_policy_admits_a_serial_realization_and_rejects_an_invented_result():
    m = seeded()
    serial = run(reduce_prog("unordered_tree"), machines=[m], validate=True,
                 realize=lambda node, f, s, xs, lift: R.fold_left(f, s, xs))
    assert np.all(vals(m, 0, 9) == (((F32(0.5) + F32(1.0)) + F32(2.0 ** 24)) + F32(1.0)) + F32(-(2.0 ** 24)))
    (_, _, policy, seed, fiber, result), = serial.reductions
    f = tile_merge_function("TADD", "FP32", m.config)
    assert R.admits("unordered_tree", f, seed, fiber, result)
    bogus = R.fold_left(f, seed, fiber[:2])             # drops two contributions
    assert not R.admits("unordered_tree", f, seed, fiber, bogus)
    with pytest.raises(RegionRuntimeError, match="not admitted"):
        run(reduce_prog("unordered_tree"), machines=[seeded()], validate=True,
            realize=lambda node, f, s, xs, lift: R.fold_left(f, s, xs[:2]))


def test_a_non_commutative_tile_merge_is_diagnosed_under_the_tree_policy():
    with pytest.raises(ReductionPolicyError, match="TSUB"):
        reduce_prog("unordered_tree", "TSUB")
    with pytest.raises(RegionError, match="binary tile instruction"):
        reduce_prog("fold_left", "TEXP")
    left, right = seeded(), seeded()
    run(reduce_prog("fold_left", "TSUB"), machines=[left])
    run(reduce_prog("fold_right", "TSUB"), machines=[right])
    s, c = F32(0.5), [F32(x) for x in CONTRIB]
    assert np.all(vals(left, 0, 9) == (((s - c[0]) - c[1]) - c[2]) - c[3])
    assert np.all(vals(right, 0, 9) == c[0] - (c[1] - (c[2] - (c[3] - s))))


def test_masks_and_empty_fibers_in_tile_reductions():
    prog = B.program(B.reduce([("pe", 4)], B.tile(0, 9), B.tile("pe", 5), "TADD", mask="pe % 2 == 0",
                              policy="fold_left"))
    m = seeded()
    run(prog, machines=[m])
    assert np.all(vals(m, 0, 9) == (F32(0.5) + F32(1.0)) + F32(1.0))
    none = B.program(B.reduce([("pe", 4)], B.tile(0, 9), B.tile("pe", 5), "TADD", mask="pe > 9"))
    m2, ref = seeded(), seeded()
    run(none, machines=[m2])
    assert m2.digest() == ref.digest()                  # the seed stays


# ---- effects derived from the isa tables ------------------------------------------------------

def test_block_effects_follow_the_instruction_rows_and_gpr_windows():
    m = Machine()
    m.write_tile(1, 1, "U8", np.zeros((4, 8), np.uint8))
    prog = B.program(B.seq(
        B.gpr(1, 3, 2), B.gpr(1, 4, 5),
        B.block("BSTART.SFU TEXTRACT, U8\n B.IOT t1@0b0010 -> t2@0b0010\n B.DIM LB0=3, LB1=2\n"
                " B.IOR RegSrc0=r3, RegSrc1=r4")))
    evs = events(prog, machines=[m])
    ex = evs[2]
    assert ex.kind == "block" and ex.pe == 1 and ex.label == "$.body.seq[2] TEXTRACT on PE1"
    acc = {(a.key, a.write): a for a in ex.accesses}
    src = acc[("tile:m0:pe1:t1@v0", False)]
    cells = sorted(((c >> 16), c & 0xFFFF) for c in src.cells.tolist())
    assert cells == [(r, c) for r in (2, 3) for c in (5, 6, 7)]          # rows 2.., cols 5.. (GPRs)
    assert acc[("tile:m0:pe1:t2@v1", True)].cells.size == 2 * 3           # the renamed destination
    assert sorted(acc[("gpr:m0:pe1", False)].cells.tolist()) == [3, 4]


def test_tinsert_reads_the_old_destination_outside_and_the_insertion_inside_the_window():
    m = Machine()
    m.write_tile(0, 1, "U8", np.zeros((3, 3), np.uint8))
    m.write_tile(0, 2, "U8", np.zeros((1, 2), np.uint8))
    m.set_gpr(0, 1, 1)
    m.set_gpr(0, 2, 1)
    prog = B.program(B.block("BSTART.SFU TINSERT, U8\n B.IOT t1@0b0001, t2@0b0001 -> t1@0b0001\n"
                             " B.DIM LB0=3, LB1=3\n B.IOR RegSrc0=r1, RegSrc1=r2"))
    (ev,) = events(prog, machines=[m])
    acc = {(a.key, a.write): a for a in ev.accesses}
    ins = acc[("tile:m0:pe0:t2@v0", False)]
    assert sorted((p >> 16 & 0xFFFF, p & 0xFFFF) for p in ins.points.tolist()) == [(1, 1), (1, 2)]
    assert sorted((c >> 16, c & 0xFFFF) for c in ins.cells.tolist()) == [(0, 0), (0, 1)]
    assert acc[("tile:m0:pe0:t1@v0", False)].cells.size == 9 - 2


def test_effects_that_need_the_initial_state_say_so():
    prog = B.program(B.block("BSTART.VEC TCMP, FP32\n B.IOT t1@0b0001, t2@0b0001 -> t3@0b0001\n B.DIM LB0=4"))
    with pytest.raises(RegionError, match="give the initial machine"):
        events(prog)
    assert len(events(prog, machines=[machine()])) == 1
