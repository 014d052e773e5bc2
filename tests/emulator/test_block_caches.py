"""The per-block caches (isa.legality.resolve per Block object, the destination descriptor per
resolved block, interned tile descriptors) change no answer: a block that differs from an
accepted one only in what equality ignores (its engine spelling) or in a value's type still
gets its own rejection, before any effect."""
import numpy as np
import pytest

from emu_helpers import blk
from emulator import Machine, MachineConfig
from isa.errors import IllegalBlockException
from isa.instructions import lookup
from isa.legality import resolve


def machine():
    m = Machine(MachineConfig(local_bytes=4096))
    for p in range(4):
        m.write_tile(p, 1, "FP32", np.arange(16, dtype=np.uint32).reshape(1, 16) | 0x3F800000)
    return m


def test_a_block_equal_to_an_accepted_one_but_spelled_for_another_engine_still_rejects():
    good = blk("TADD", "FP32", [1, 1], 9, mask=15, vc=16)
    wrong = blk("TADD", "FP32", [1, 1], 9, mask=15, vc=16, spelling="SFU" if lookup("TADD").engine == "VEC" else "VEC")
    assert good == wrong                      # BStart.spelling is not compared
    m = machine()
    m.execute(good)
    m.execute(good)                           # resolved once, from the cache
    before = m.digest()
    with pytest.raises(IllegalBlockException) as exc:
        m.execute(wrong)
    assert exc.value.reason == "ENGINE_SPELLING" and m.digest() == before


def test_a_capacity_equal_in_value_but_not_a_byte_count_type_still_rejects():
    good = blk("TADD", "FP32", [1, 1], 9, mask=15, vc=16, cap=64)
    odd = blk("TADD", "FP32", [1, 1], 9, mask=15, vc=16, cap=64.0)
    assert good == odd
    m = machine()
    m.execute(good)
    before = m.digest()
    with pytest.raises(IllegalBlockException) as exc:
        m.execute(odd)
    assert exc.value.reason == "CAPACITY" and m.digest() == before


def test_a_rejected_block_rejects_again_identically():
    bad = blk("TADD", "FP32", [1, 2], 9, mask=15, vc=16)   # tile 2 exists nowhere
    m = machine()
    errors = []
    for _ in range(2):
        with pytest.raises(IllegalBlockException) as exc:
            m.execute(bad)
        errors.append((exc.value.reason, exc.value.field, str(exc.value)))
    assert errors[0] == errors[1] and errors[0][0] == "SOURCE_MISSING"


def test_resolve_answers_each_block_object_with_its_own_resolution():
    a = blk("TADD", "FP32", [1, 1], 9, mask=15, vc=16)
    b = blk("TADD", "FP32", [1, 1], 9, mask=3, vc=16)
    assert resolve(a) is resolve(a) and resolve(a).block is a
    assert resolve(b).PE_MASK == 3 and resolve(a).PE_MASK == 15


def test_tiles_of_equal_descriptors_share_one_but_types_stay_apart():
    m = machine()
    descs = {id(m.read_tile(p, 1).desc) for p in range(4)}
    assert len(descs) == 1
    other = Machine(MachineConfig(local_bytes=4096))
    other.write_tile(0, 1, "FP32", np.zeros((1, 16), np.uint32), capacity=np.int64(64))
    assert type(other.read_tile(0, 1).desc.capacity) is np.int64
    assert type(m.read_tile(0, 1).desc.capacity) is int
