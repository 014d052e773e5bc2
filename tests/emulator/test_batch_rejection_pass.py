"""Members of a batch that a block rejects on their element data -- an undefined element read,
a zero integer divisor, an encoding that is no value of the DataType, in any source role and on
any selected PE, or a later PE group's missing source -- each stop with exactly the StreamError
that machine gets alone on the reference (index, offset, reason, field, and the message naming
the PE and the element), keep the state of their last commit byte for byte, and log the
reference's fault record; the others go on.  The engine decides such rejections in one pass
over the rejected members (engine._first_faults), without running the reference once per member
(BatchEngine._rare), with or without the fused element pass and whether stopped members are
detached or kept stacked.  The values are special ones: NaNs with payloads, infinities, signed
zeros, subnormals."""
import numpy as np
import pytest
from test_batch_differential import fused_everywhere, special_values
from test_batch_stop_option import assert_matches_reference

from emu_helpers import blk
from emulator import Machine, MachineBatch, MachineConfig
from emulator import engine as E
from emulator.commitlog import Collector
from isa import BDatr, BIor, encoding
from isa.datatypes import datatype

CONFIG = MachineConfig(local_bytes=8192, matrix_bytes=2048)
SHAPE = (4, 8)
FLOATS = {1: "FP16", 2: "FP16", 3: "FP16", 4: "TF32", 5: "TF32", 8: "FP32", 9: "FP32"}
INTS = {6: "S16", 7: "S16"}


def rejecting_machine(seed: int, faults: bool = True) -> Machine:
    """One shape for every seed (one cohort): FP16 tiles 1-3, TF32 4-5, S16 6-7 on every PE,
    FP32 8 with 4 rows on PEs 0-1 and 8 on PEs 2-3 (TCVT runs two PE groups), FP32 9 on PEs
    0-1 only (a TCVT from it fails preflight on its second group).  About half the machines
    hold something a rule rejects: undefined elements anywhere, zero S16 divisors, TF32
    encodings with low mantissa bits set (none with `faults` False)."""
    rng = np.random.default_rng(seed)
    m = Machine(CONFIG)
    for p in range(4):
        for tid, name in FLOATS.items():
            if tid == 9 and p >= 2:
                continue
            shape = (8, 8) if tid == 8 and p >= 2 else SHAPE     # valid 4x8 on every PE
            m.write_tile(p, tid, name, special_values(rng, name, shape), defined=np.ones(shape, bool), valid_row=4)
        for tid, name in INTS.items():
            m.write_tile(p, tid, name, rng.integers(1, 2**16, SHAPE))
        m.set_gpr(p, 1, int(rng.integers(0, 4)))       # TEXTRACT's row and column offsets: windows that fit
        m.set_gpr(p, 2, int(rng.integers(0, 5)))
    for _ in range(rng.integers(1, 4) if faults and rng.random() < 0.5 else 0):
        p, tid = int(rng.integers(0, 4)), int(rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 9]))
        if tid not in m.tiles(p):
            continue
        t = m.read_tile(p, tid)
        r, c = int(rng.integers(0, t.bits.shape[0])), int(rng.integers(0, t.bits.shape[1]))
        kind = int(rng.integers(0, 2)) and {7: 1, 4: 2, 5: 2}.get(tid, 0)
        if kind == 0:                                  # an undefined element
            defined = t.defined.copy()
            defined[r, c] = False
            m.write_tile(p, tid, t.dtype, t.bits, defined=defined)
        elif kind == 1:                                # a zero divisor
            bits = t.bits.copy()
            bits[r, c] = 0
            m.write_tile(p, tid, t.dtype, bits, defined=t.defined)
        else:                                          # no TF32 encoding: bits below its mantissa
            bits = t.bits.astype(np.uint64)
            bits[r, c] |= int(rng.integers(1, 1 << 13))
            m.write_tile(p, tid, t.dtype, bits, defined=t.defined)
    return m


def tcvt(src: int, dst: int, mask: int):
    return blk("TCVT", "FP32", [src], dst, mask=mask, vc=8, vr=4, datr=BDatr(DataType=datatype("FP16").code))


BLOCKS = [
    lambda mask: blk("TADD", "FP16", [1, 2], 11, mask=mask, vc=8, vr=4),
    lambda mask: blk("TMUL", "FP16", [2, 3], 12, mask=mask, vc=8, vr=4),
    lambda mask: blk("TFMA", "FP16", [3, 1, 2], 13, mask=mask, vc=8, vr=4),
    lambda mask: blk("TADD", "TF32", [4, 5], 14, mask=mask, vc=8, vr=4),
    lambda mask: blk("TDIV", "S16", [6, 7], 15, mask=mask, vc=8, vr=4),
    lambda mask: tcvt(8, 16, mask),
    lambda mask: tcvt(9, 17, mask),
]


def stream_of(rng, length: int):
    """Random blocks of BLOCKS; now and then the TCVT that stops every machine."""
    last = len(BLOCKS) - (rng.random() >= 0.1)
    return [BLOCKS[int(rng.integers(0, last))](int(rng.choice([15, 15, 1, 6, 9, 12, 3])))
            for _ in range(length)]


@pytest.fixture
def rare_runs(monkeypatch):
    """The members that ran the block on the reference alone (BatchEngine._rare)."""
    calls = []
    real = E.BatchEngine._rare
    monkeypatch.setattr(E.BatchEngine, "_rare", lambda self, c, j, *a: calls.append(j) or real(self, c, j, *a))
    return calls


def assert_as_alone(machines, stream, as_bytes=False, **options):
    """The batch's results, states, statuses and log against each machine alone on the
    reference; a rejected machine's state is also the one after its last committed block, byte
    for byte.  With `as_bytes` the stream runs encoded (the errors' byte offsets are checked)."""
    log = Collector()
    batch = MachineBatch(machines, "cpu", **options)
    blocks, stream = stream, encoding.encode(stream) if as_bytes else stream
    result = batch.run(stream, log=log)
    assert_matches_reference(batch, result, machines, stream)
    for k, err in enumerate(result.errors):
        if err is not None:                    # state unchanged by the rejected block
            before = machines[k].copy()
            before.run(blocks[: err.index])
            assert batch.machine(k).digest() == before.digest(), f"machine {k}"
    whole = Collector()
    MachineBatch(machines, "reference").run(stream, log=whole)
    assert log.table().equals(whole.table())
    return result


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("detach", [True, False])
def test_members_rejected_on_their_data_stop_as_each_does_alone_without_a_reference_run(seed, detach, rare_runs):
    rng = np.random.default_rng(seed)
    machines = [rejecting_machine(int(s)) for s in rng.integers(0, 2**32, 24)]
    stream = stream_of(rng, 5)
    result = assert_as_alone(machines, stream, as_bytes=True, detach_stopped=detach)
    assert rare_runs == []
    assert result.faulted, "the seed's machines reject nothing: the test checks nothing"


@pytest.mark.parametrize("seed", range(3))
def test_the_fused_element_pass_refuses_the_same_members_with_the_same_errors(seed, rare_runs):
    rng = np.random.default_rng(100 + seed)
    machines = [rejecting_machine(int(s)) for s in rng.integers(0, 2**32, 24)]
    stream = [BLOCKS[i](mask) for i, mask in ((0, 15), (1, 6), (2, 15), (3, 9))]
    with fused_everywhere():
        assert_as_alone(machines, stream)
    assert rare_runs == []


def test_every_rule_reason_is_decided_in_one_pass(rare_runs):
    """Each reason the pass decides, on a known machine: the error's message names the element."""
    base = rejecting_machine(7, faults=False)
    cases = []
    for tid, reason, edit in ((2, "SOURCE_UNDEFINED", "defined"), (7, "INT_DIVIDE_BY_ZERO", "zero"),
                              (5, "INVALID_ENCODING", "bits")):
        m = base.copy()
        t = m.read_tile(2, tid)
        bits, defined = t.bits.astype(np.uint64), t.defined.copy()
        if edit == "defined":
            defined[3, 5] = False
        elif edit == "zero":
            bits[3, 5] = 0
        else:
            bits[3, 5] |= 1
        m.write_tile(2, tid, t.dtype, bits, defined=defined)
        cases.append((m, reason))
    for block, (m, reason) in zip([BLOCKS[0](15), BLOCKS[4](15), BLOCKS[3](15)], cases):
        result = assert_as_alone([m, base], [block])
        err = result.errors[0]
        assert err.reason == reason and "PE2" in err.cause.message and "[3,5]" in err.cause.message
    assert rare_runs == []


def test_a_later_groups_missing_source_is_every_members_error_unless_an_earlier_group_faults(rare_runs):
    machines = [rejecting_machine(s) for s in range(30)]
    m = machines[3]
    t = m.read_tile(1, 9)
    defined = t.defined.copy()
    defined[0, 0] = False
    m.write_tile(1, 9, t.dtype, t.bits, defined=defined)
    result = assert_as_alone(machines, [tcvt(9, 17, 15)], detach_stopped=False)
    assert result.errors[3].reason == "SOURCE_UNDEFINED"
    assert {e.reason for k, e in enumerate(result.errors) if k != 3} <= {"SOURCE_MISSING", "SOURCE_UNDEFINED"}
    assert rare_runs == []


def test_a_window_read_at_gpr_offsets_names_the_element_at_its_offset(rare_runs):
    """TEXTRACT at each member's own GPR offsets: the undefined element is named in source
    coordinates (offset added), as the reference names it."""
    machines = [rejecting_machine(s) for s in range(12)]
    for k in (2, 7):
        m = machines[k]
        t = m.read_tile(3, 1)
        defined = np.zeros_like(t.defined)
        m.write_tile(3, 1, t.dtype, t.bits, defined=defined)
    ext = blk("TEXTRACT", "FP16", [1], 18, mask=15, vc=4, vr=1, cap=64, ior=BIor(1, 2))
    result = assert_as_alone(machines, [ext])
    assert {2, 7} <= set(result.faulted)
    assert rare_runs == []


def test_what_the_pass_cannot_decide_runs_on_the_reference_per_member(monkeypatch, rare_runs):
    """The fallback: where the pass gives no verdict, each rejected member runs the reference."""
    monkeypatch.setattr(E, "_first_faults", lambda *a: None)
    rng = np.random.default_rng(3)
    machines = [rejecting_machine(int(s)) for s in rng.integers(0, 2**32, 16)]
    result = assert_as_alone(machines, stream_of(rng, 4))
    assert result.faulted and rare_runs


def test_a_member_faulting_in_two_pe_groups_is_named_by_the_first_group_the_reference_runs(rare_runs):
    """TCVT from tile 8 runs PEs 0-1 and PEs 2-3 as two groups (their source Row differs): a
    member with an undefined element in both is named on PE1, one with it on PE3 alone on PE3."""
    machines = [rejecting_machine(s, faults=False) for s in range(8)]
    for k, pes in ((1, (3, 1)), (4, (3,)), (6, (2, 0))):
        for p in pes:
            t = machines[k].read_tile(p, 8)
            defined = t.defined.copy()
            defined[1, 2] = False
            machines[k].write_tile(p, 8, t.dtype, t.bits, defined=defined, valid_row=4)
    result = assert_as_alone(machines, [tcvt(8, 16, 15)])
    assert result.faulted == [1, 4, 6]
    assert [("PE1" in result.errors[1].cause.message), ("PE3" in result.errors[4].cause.message),
            ("PE0" in result.errors[6].cause.message)] == [True] * 3
    assert rare_runs == []
