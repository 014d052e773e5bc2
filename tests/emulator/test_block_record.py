"""A compiled block program run again on the very state its own last commit left skips its
checks (emulator/blockprog.py, Program._record); anything else -- a tile re-declared, removed or
added, another block's commit, another PE_MASK, another config or numeric profile, undefined
elements -- runs them afresh.  Either way the cpu machine gives what the reference machine
gives, step by step: the same results, the same rejections (reason, field, message), the same
state, and a rejected block leaves the state unchanged."""
import numpy as np
import pytest

from emu_helpers import blk
from emulator import Machine, MachineConfig, blockprog
from emulator.config import with_profile
from isa.errors import IllegalBlockException

ONE = 0x3F800000
STORE = 4096                    # bytes of each PE's Local store: room for four 1x16 FP32 tiles ...


def fill(m: Machine, seed: int = 0) -> Machine:
    rng = np.random.default_rng(seed)
    for p in range(4):
        for t in (1, 2, 3):
            x = (rng.uniform(0.5, 2.0, (4, 16)).astype(np.float32)).view(np.uint32)
            x.reshape(-1)[rng.integers(0, 64, 2)] = [0x7FC12345, 0x00000001]   # a NaN payload, a subnormal
            m.write_tile(p, t, "FP32", x)
    return m


def pair(config=None, seed=0):
    """(cpu, reference) machines holding the same tiles."""
    config = config or MachineConfig(local_bytes=STORE)
    return fill(Machine(config, "cpu"), seed), fill(Machine(config), seed)


def outcome(m: Machine, action):
    try:
        res = action(m)
    except (IllegalBlockException, ValueError) as exc:
        return ("rejected", type(exc).__name__, getattr(exc, "reason", None), str(exc))
    return ("ok",) if res is None else ("ok", res.pes, res.dest, res.status)


def lockstep(ours: Machine, ref: Machine, actions) -> list:
    """Each action on both machines: the same outcome and the same state after each; a
    rejection changes nothing."""
    got = []
    for action in actions:
        before = ours.digest()
        a, b = outcome(ours, action), outcome(ref, action)
        assert a == b
        assert ours.digest() == ref.digest()
        if a[0] == "rejected":
            assert ours.digest() == before
        got.append(a)
    return got


def run(block):
    return lambda m: m.execute(block)


ADD = blk("TADD", "FP32", [1, 2], 3, mask=15, vc=16, vr=4)
FMA = blk("TFMA", "FP32", [1, 3, 2], 3, mask=15, vc=16, vr=4)      # reads its destination's tile id
ADD_LOW = blk("TADD", "FP32", [1, 2], 3, mask=0b0011, vc=16, vr=4)


@pytest.fixture
def checks(monkeypatch):
    """How many blocks ran the programs' checks (the record skips them)."""
    count = [0]
    real = blockprog.Program._checks

    def counted(self, *a):
        count[0] += 1
        return real(self, *a)
    monkeypatch.setattr(blockprog.Program, "_checks", counted)
    return count


@pytest.mark.parametrize("block", [ADD, FMA], ids=["TADD", "TFMA"])
def test_a_block_repeated_on_the_state_it_left_skips_its_checks_and_matches_the_reference(block, checks):
    ours, ref = pair()
    got = lockstep(ours, ref, [run(block)] * 8)
    assert all(g[0] == "ok" for g in got)
    assert checks[0] <= 2           # the first block, and at most one more to record its state


def test_a_source_redeclared_with_another_datatype_is_rejected_again(checks):
    ours, ref = pair()
    half = lambda m: [m.write_tile(p, 2, "FP16", np.full((4, 16), 0x3C00, np.uint16)) for p in range(4)][-1] and None
    got = lockstep(ours, ref, [run(ADD), run(ADD), half, run(ADD), run(ADD)])
    assert got[3][0] == got[4][0] == "rejected"


def test_a_source_redeclared_with_new_bytes_is_read_afresh():
    ours, ref = pair()
    new = lambda m: m.write_tile(2, 1, "FP32", np.full((4, 16), 0x7F800000, np.uint32)) and None   # infinities
    got = lockstep(ours, ref, [run(ADD), run(ADD), new, run(ADD), run(ADD), run(FMA), run(FMA)])
    assert got[3][3] != got[1][3]   # PE 2's status now has the infinity's flags


def test_an_undefined_source_element_is_found_after_the_record():
    ours, ref = pair()
    mask = np.ones((4, 16), bool)
    mask[3, 15] = False
    undefined = lambda m: m.write_tile(1, 2, "FP32", np.full((4, 16), ONE, np.uint32), defined=mask) and None
    got = lockstep(ours, ref, [run(ADD), run(ADD), undefined, run(ADD), run(ADD)])
    assert got[3] == got[4]


def test_a_tile_added_beside_them_leaves_no_room_and_the_block_rejects_with_allocation():
    ours, ref = pair(MachineConfig(local_bytes=4 * 256))         # four 256-byte tiles: 1, 2, 3 and one more
    big = lambda m: m.write_tile(0, 7, "FP32", np.full((4, 16), ONE, np.uint32)) and None
    free = lambda m: m.store(0).pop(7) and None
    got = lockstep(ours, ref, [run(ADD), run(ADD), big, run(ADD), run(ADD), free, run(ADD), run(ADD)])
    assert got[3][0] == got[4][0] == "rejected" and got[3][2] == "ALLOCATION"
    assert got[6][0] == got[7][0] == "ok"


def test_a_smaller_store_in_a_new_config_rejects_with_allocation():
    ours, ref = pair(MachineConfig(local_bytes=STORE))

    def shrink(m):
        m.config = MachineConfig(local_bytes=3 * 256)    # tiles 1, 2, 3 fill it: no room beside them
    got = lockstep(ours, ref, [run(ADD), run(ADD), shrink, run(ADD), run(ADD)])
    assert got[3][0] == got[4][0] == "rejected" and got[3][2] == "ALLOCATION"


@pytest.mark.parametrize("profile", ["ftz", "a5"])
def test_another_numeric_profile_runs_under_its_own_rules(profile):
    ours, ref = pair()
    tiny = lambda m: [m.write_tile(p, 1, "FP32", np.full((4, 16), 0x00000003, np.uint32)) for p in range(4)] and None

    def switch(m):
        m.config = with_profile(m.config, profile)
    lockstep(ours, ref, [run(FMA), run(FMA), tiny, run(ADD), run(ADD), switch, run(ADD), run(ADD), run(FMA), run(FMA)])


def test_another_pe_mask_and_another_block_between_repeats_match_the_reference():
    ours, ref = pair()
    mul = blk("TMUL", "FP32", [3, 2], 1, mask=15, vc=16, vr=4)
    lockstep(ours, ref, [run(ADD), run(ADD), run(ADD_LOW), run(ADD_LOW), run(ADD), run(ADD),
                         run(mul), run(ADD), run(ADD), run(FMA), run(ADD), run(FMA), run(FMA)])


def test_a_copy_of_the_machine_and_a_stream_between_repeats_match_the_reference():
    ours, ref = pair()
    lockstep(ours, ref, [run(FMA), run(FMA)])
    twin, twin_ref = ours.copy(), ref.copy()
    lockstep(twin, twin_ref, [run(FMA), run(FMA), run(ADD)])
    lockstep(ours, ref, [run(FMA), lambda m: m.run([FMA, ADD, FMA]) and None, run(FMA), run(FMA)])
    assert ours.digest() != twin.digest()



def test_a_block_built_with_its_bindings_in_a_list_is_the_same_block_on_both_machines():
    """Block's B.IOT bindings are a tuple whatever sequence built the block (a list once made
    the cpu machine fail with 'unhashable type' where the reference ran the block)."""
    from isa.block import Block
    b = blk("TADD", "FP32", (1, 2), 3, mask=0b1111, vc=16, vr=4)
    listed = Block(b.bstart, list(b.iot), b.dim, b.datr, b.ior, b.ios)
    assert listed == b and hash(listed) == hash(b) and isinstance(listed.iot, tuple)
    ours, ref = pair()
    lockstep(ours, ref, [run(listed), run(b), run(listed)])
