"""The planner-facing check on tile-block programs: batching, pointwise fusion, and reductions
across PEs, each admitted or rejected with the first failed obligation in plain terms."""
import numpy as np
import pytest

from emulator import Machine
from emulator.calculus import builder as B
from emulator.calculus import run
from emulator.calculus.plan import Plan, Step, check_plan, serial_plan, source_events, stream_program

F32 = np.float32


def init(gpr_offsets=(0, 1)):
    m = Machine()
    for p in range(4):
        m.write_tile(p, 1, "FP32", np.arange(8, dtype=F32).reshape(2, 4).view(np.uint32))
        m.write_tile(p, 2, "FP32", np.full((2, 4), 0.5, F32).view(np.uint32))
        m.set_gpr(p, 1, gpr_offsets[0])
        m.set_gpr(p, 2, gpr_offsets[1])
    return m


def fp32(engine_op, iot, lb0=4, ior=None):
    """One FP32 block over the tiles' 2-row frame, in assembly: `engine_op` ("VEC TADD"), its
    tile operands, its row length and, for TEXTRACT/TINSERT, its GPR operands."""
    text = f"BSTART.{engine_op}, FP32\n  B.IOT {iot}\n  B.DIM LB0={lb0}, LB1=2\n"
    return text + (f"  B.IOR {ior}\n" if ior else "")


WINDOW_GPRS = "RegSrc0=r1, RegSrc1=r2"        # the window's offsets, set by `init`

CHAIN = (fp32("VEC TADD", "t1@0b1111, t2@0b1111 -> t3@0b1111")
         + fp32("VEC TMUL", "t3@0b1111, t2@0b1111 -> t4@0b1111")
         + fp32("VEC TSUB", "t4@0b1111, t1@0b1111 -> t1@0b1111"))

EXTRACT_CHAIN = (fp32("VEC TADD", "t1@0b1111, t2@0b1111 -> t3@0b1111")
                 + fp32("SFU TEXTRACT", "t3@0b1111 -> t5@0b1111", lb0=3, ior=WINDOW_GPRS)
                 + fp32("VEC TMUL", "t5@0b1111, t5@0b1111 -> t6@0b1111", lb0=3))

INSERT_CHAIN = (fp32("VEC TADD", "t1@0b0001, t2@0b0001 -> t3@0b0001")
                + fp32("SFU TINSERT", "t1@0b0001, t3@0b0001 -> t7@0b0001", ior=WINDOW_GPRS))


def by_block(n_blocks, pes=4):
    """Event ordinals of a stream program: block b on PE p is b * pes + p."""
    return [[b * pes + p for p in range(pes)] for b in range(n_blocks)]


def test_the_reference_plan_is_always_admitted():
    prog = stream_program(CHAIN)
    assert check_plan(prog, serial_plan(source_events(prog, machines=[init()])), machines=[init()])


def test_a_fusable_elementwise_chain_is_admitted_as_one_fused_scope():
    prog = stream_program(CHAIN)
    everything = [e for blk in by_block(3) for e in blk]
    v = check_plan(prog, Plan([Step("fused", everything)]), machines=[init()])
    assert v, v
    # batching each block across PEs is admitted too, and so is fusing per PE
    assert check_plan(prog, Plan([Step("parallel", blk) for blk in by_block(3)]), machines=[init()])
    assert check_plan(prog, Plan([Step("fused", [p, 4 + p, 8 + p]) for p in range(4)]), machines=[init()])


def test_a_fused_step_must_keep_the_source_order_of_dependent_blocks():
    prog = stream_program(CHAIN)
    v = check_plan(prog, Plan([Step("fused", [4, 0, 8] + [1, 5, 9, 2, 6, 10, 3, 7, 11])]), machines=[init()])
    assert v.obligation == "dependences preserved"
    assert "RAW edge $.body.seq[0] TADD on PE0 -> $.body.seq[1] TMUL on PE0" in v.detail
    assert "(cell PE0 tile t3 element [0, 0])" in v.detail


def test_batching_dependent_blocks_together_is_interference():
    prog = stream_program(CHAIN)
    v = check_plan(prog, Plan([Step("parallel", list(range(12)))]), machines=[init()])
    assert v.obligation == "parallel noninterference"
    assert "$.body.seq[0] TADD on PE0 and $.body.seq[1] TMUL on PE0" in v.detail


def test_a_chain_broken_by_textract_offsets_is_rejected_naming_the_crossing_edge():
    prog = stream_program(EXTRACT_CHAIN)
    m = init(gpr_offsets=(0, 1))               # column offset 1: element [r, c] reads [r, c + 1]
    everything = [e for blk in by_block(3) for e in blk]
    v = check_plan(prog, Plan([Step("fused", everything)]), machines=[m])
    assert v.obligation == "Dep ⊆ diagonal"
    assert ("crossing RAW edge $.body.seq[0] TADD on PE0 at element [0, 1] of PE0 -> "
            "$.body.seq[1] TEXTRACT on PE0 at element [0, 0] of PE0") in v.detail
    # the same chain with zero offsets stays pointwise
    assert check_plan(prog, Plan([Step("fused", everything)]), machines=[init(gpr_offsets=(0, 0))])
    # and the fix for nonzero offsets: a launch boundary before TEXTRACT
    assert check_plan(prog, Plan([Step("parallel", by_block(3)[0]),
                                  Step("fused", by_block(3)[1] + by_block(3)[2])]), machines=[m])


def test_a_chain_broken_by_tinsert_offsets_is_rejected():
    prog = stream_program(INSERT_CHAIN)
    v = check_plan(prog, Plan([Step("fused", [0, 1])]), machines=[init(gpr_offsets=(1, 0))])
    assert v.obligation == "Dep ⊆ diagonal"
    assert "$.body.seq[0] TADD on PE0 at element [0, 0] of PE0 -> $.body.seq[1] TINSERT on PE0 at element [1, 0]" \
        in v.detail
    assert check_plan(prog, Plan([Step("fused", [0, 1])]), machines=[init(gpr_offsets=(0, 0))])


def test_offsets_set_by_the_program_are_seen_by_the_planner():
    prog = B.program(B.seq(B.gpr(0, 1, 0), B.gpr(0, 2, 2),
                           B.block("BSTART.VEC TADD, FP32\n B.IOT t1@0b0001, t2@0b0001 -> t3@0b0001\n B.DIM LB0=4, LB1=2"),
                           B.block("BSTART.SFU TEXTRACT, FP32\n B.IOT t3@0b0001 -> t5@0b0001\n B.DIM LB0=2, LB1=2\n"
                                   " B.IOR RegSrc0=r1, RegSrc1=r2")))
    v = check_plan(prog, Plan([Step("serial", [0, 1]), Step("fused", [2, 3])]), machines=[init(gpr_offsets=(0, 0))])
    assert v.obligation == "Dep ⊆ diagonal" and "element [0, 2]" in v.detail
    # a GPR write and the block that reads it cannot share one fused scope either
    v = check_plan(prog, Plan([Step("fused", [0, 1, 2, 3])]), machines=[init()])
    assert v.obligation == "Dep ⊆ diagonal" and "the whole block" in v.detail


def test_renamed_storage_drops_write_after_read_hazards_in_place_storage_keeps_them():
    prog = stream_program(CHAIN)
    order = [8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7]     # hoist TSUB's blocks first: they read t4 (RAW)
    for renamed in (False, True):
        v = check_plan(prog, Plan([Step("parallel", [b]) for b in order], renamed=renamed), machines=[init()])
        assert v.obligation == "dependences preserved" and "RAW edge" in v.detail
    hoist_writer = stream_program(fp32("VEC TADD", "t1@0b0001, t2@0b0001 -> t3@0b0001")
                                  + fp32("VEC TMUL", "t2@0b0001, t2@0b0001 -> t1@0b0001"))
    reorder = [Step("serial", [1]), Step("serial", [0])]
    v = check_plan(hoist_writer, Plan(reorder), machines=[init()])          # named storage: TADD would
    assert v.obligation == "dependences preserved" and "WAR edge" in v.detail   # read TMUL's t1
    # a realization that keeps t1's two versions apart may run TMUL first
    assert check_plan(hoist_writer, Plan(reorder, renamed=True), machines=[init()])


def test_coverage_and_references_are_checked_first():
    prog = stream_program(CHAIN)
    m = [init()]
    assert check_plan(prog, Plan([Step("fused", list(range(11)))]), machines=m).obligation == "exact coverage"
    v = check_plan(prog, Plan([Step("fused", list(range(12)) + [3])]), machines=m)
    assert v.obligation == "exact coverage" and "would run twice" in v.detail
    assert check_plan(prog, Plan([Step("fused", [99])]), machines=m).obligation == "events exist"
    assert check_plan(prog, Plan([Step("warp", list(range(12)))]), machines=m).obligation == "step kinds"
    labels = [e.label for e in source_events(prog, machines=m)]
    assert check_plan(prog, Plan([Step("fused", labels)]), machines=m)


# ---- reductions across PEs -------------------------------------------------------------------

def reduction(policy, combine="TADD", dtype="FP32"):
    prog = B.program(B.seq(
        B.parallel([("pe", 4)], B.block(f"BSTART.VEC TMUL, {dtype}\n B.IOT t1@${{1 << pe}}, t2@${{1 << pe}} "
                                        f"-> t5@${{1 << pe}}\n B.DIM LB0=4, LB1=2")),
        B.reduce([("pe", 4)], B.tile(0, 9), B.tile("pe", 5), combine, policy=policy)))
    m = Machine()
    for p in range(4):
        for t in (1, 2):
            raw = (np.arange(8).reshape(2, 4) + p + t) % 5
            m.write_tile(p, t, dtype, raw.astype(F32).view(np.uint32) if dtype == "FP32" else raw)
    m.write_tile(0, 9, dtype, np.zeros((2, 4), np.uint32))
    return prog, m


PAIRWISE = ["seed", [[0, 1], [2, 3]]]
LEFT = [[[["seed", 0], 1], 2], 3]
RIGHT = [0, [1, [2, [3, "seed"]]]]
SHUFFLED = [[[2, 0], "seed"], [3, 1]]


def reduction_plan(tree):
    # events: 0..3 TMUL per PE, 4..7 contributions, 8 the reduction's result
    return Plan([Step("parallel", [0, 1, 2, 3]), Step("parallel", [4, 5, 6, 7]), Step("merge", [8], tree=tree)])


@pytest.mark.parametrize("policy,tree,ok", [
    ("unordered_tree", PAIRWISE, True),
    ("unordered_tree", SHUFFLED, True),
    ("unordered_tree", LEFT, True),
    ("fold_left", LEFT, True),
    ("fold_left", PAIRWISE, False),
    ("fold_left", RIGHT, False),
    ("fold_right", RIGHT, True),
    ("fold_right", LEFT, False),
    ("ordered_tree", PAIRWISE, True),
    ("ordered_tree", SHUFFLED, False),
])
def test_a_float_reduction_across_pes_under_each_fold_policy(policy, tree, ok):
    prog, m = reduction(policy)
    v = check_plan(prog, reduction_plan(tree), machines=[m])
    assert bool(v) == ok, v
    if not ok:
        assert v.obligation == "reduction policy"
    run(prog, machines=[m], validate=True)            # and the program itself runs


def test_an_exact_integer_merge_may_be_regrouped_even_under_a_strict_fold():
    prog, m = reduction("fold_left", dtype="S32")
    assert check_plan(prog, reduction_plan(SHUFFLED), machines=[m])   # wrapping add: exact monoid
    prog, m = reduction("fold_left", combine="TSUB", dtype="S32")
    v = check_plan(prog, reduction_plan(PAIRWISE), machines=[m])
    assert v.obligation == "reduction policy" and "strict fold order" in v.detail


def test_a_merge_before_its_contributions_is_rejected():
    prog, m = reduction("unordered_tree")
    plan = Plan([Step("parallel", [0, 1, 2, 3]), Step("merge", [8], tree=PAIRWISE), Step("parallel", [4, 5, 6, 7])])
    v = check_plan(prog, plan, machines=[m])
    assert v.obligation == "dependences preserved" and "#result" in v.detail


def test_a_merge_tree_must_account_for_every_contribution_once():
    prog, m = reduction("unordered_tree")
    v = check_plan(prog, reduction_plan(["seed", [[0, 1], [2, 2]]]), machines=[m])
    assert v.obligation == "reduction policy" and "merged twice" in v.detail
    v = check_plan(prog, reduction_plan(["seed", [[0, 1], 2]]), machines=[m])
    assert "contribution 3 is omitted" in v.detail


def test_scope_fusion_of_per_pe_scopes_and_a_misaligned_map():
    from emulator.calculus import FusionWitness, check_scope_fusion
    from emulator.calculus.domains import IndexMap
    prog = B.program(B.seq(
        B.parallel([("pe", 4)], B.block("BSTART.VEC TADD, FP32\n B.IOT t1@${1 << pe}, t2@${1 << pe} -> t3@${1 << pe}\n"
                                        " B.DIM LB0=4, LB1=2")),
        B.parallel([("pe", 4)], B.block("BSTART.SFU TEXTRACT, FP32\n B.IOT t3@${1 << pe} -> t5@${1 << pe}\n"
                                        " B.DIM LB0=3, LB1=2\n B.IOR RegSrc0=r1, RegSrc1=r2"))))
    w = FusionWitness("$.body.seq[0]", "$.body.seq[1]")
    assert check_scope_fusion(prog, w, machines=[init()])        # each PE runs its TADD then its TEXTRACT
    shifted = FusionWitness("$.body.seq[0]", "$.body.seq[1]", map=IndexMap(("pe",), ["(pe + 1) % 4"]))
    v = check_scope_fusion(prog, shifted, machines=[init()])
    assert v.obligation == "Dep_AB ⊆ diagonal"
    assert ("crossing RAW edge $.body.seq[0] (pe=3) -> $.body.seq[1] (pe=3) on PE3 tile t3 element [0, 1]: "
            "the fused scope runs the second with $.body.seq[0] (pe=0)") in v.detail
    # without the initial state the offsets are unknown: TEXTRACT is taken to read all of t3, which
    # still stays on its PE, so per-PE fusion is admitted and the shifted map still rejected
    assert check_scope_fusion(prog, w)
    assert not check_scope_fusion(prog, shifted)
