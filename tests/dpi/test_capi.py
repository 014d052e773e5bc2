"""The C ABI (docs/cosim-c.md) called in process: emulator/dpi/capi.py's functions with cdata made
by cffi's ABI mode from tile_emu.h itself, exactly as the compiled library calls them.  The
records must be Machine.step's / MachineBatch.step's, byte for byte (read back with NumPy here);
every failure is its documented code with one line, and changes nothing (Machine.digest)."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

pytest.importorskip("cffi")

import isa                                   # noqa: E402
from emulator import Machine, MachineBatch  # noqa: E402
from emulator.dpi import capi               # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAXPY_INIT = ROOT / "examples" / "saxpy.init.arrow"
F = capi.ffi()
K = capi.constants()


def cstr(text: str):
    return F.new("char[]", text.encode())


def words_of(text: str):
    w = np.frombuffer(isa.assemble(text)[16:], "<u8")
    return F.new("uint64_t[]", [int(x) for x in w]), len(w)


SAXPY = (ROOT / "examples" / "saxpy.s").read_text()
MISSING = """BSTART.VEC TADD, FP32
    B.IOT t1@0b1111, t9@0b1111 -> t3@0b1111
    B.DIM LB0=16, LB1=4
"""


def opened(path=SAXPY_INIT, profile=None):
    out = F.new("te_model **")
    assert capi.open(cstr(str(path)) if path else F.NULL, cstr(profile) if profile else F.NULL, out) == K["TE_OK"], \
        capi.message()
    return out[0]


def model_of(h):
    return capi._models[h]


def step(h, text=SAXPY, offset=16):
    w, n = words_of(text)
    count, nbytes = F.new("uint32_t *"), F.new("uint64_t *")
    rc = capi.step(h, w, n, offset, count, nbytes)
    return rc, count[0], nbytes[0]


def records(h):
    count, nbytes = F.new("uint32_t *"), F.new("uint64_t *")
    assert capi.records(h, F.NULL, 0, F.NULL, 0, count, nbytes) in (K["TE_OK"], K["TE_ERR_BUFFER"])
    recs, data = F.new("te_record[]", max(count[0], 1)), F.new("uint8_t[]", max(nbytes[0], 1))
    assert capi.records(h, recs, count[0], data, nbytes[0], count, nbytes) == K["TE_OK"], capi.message()
    # owning copies: an element of `recs` does not keep the array's memory alive
    return [F.new("te_record *", recs[i]) for i in range(count[0])], bytes(F.buffer(data, nbytes[0]))


def test_the_codes_are_distinct_and_named():
    codes = {v: n for n, v in K.items() if n == "TE_OK" or n.startswith(("TE_ERR_", "TE_MISMATCH")) or n == "TE_FAULT"}
    assert len(codes) == 15 and codes[0] == "TE_OK" and set(capi.CODE_NAMES) == set(codes)


def test_a_step_returns_the_records_machine_step_returns_byte_for_byte():
    h = opened()
    rc, n, nbytes = step(h)
    assert rc == K["TE_OK"] and n == 4 and nbytes == 4 * (4 * 16 * 4 + 8)
    got, data = records(h)
    want = Machine.load(SAXPY_INIT).step(isa.assemble(SAXPY)).to_pylist()
    for r, w in zip(got, want):
        assert (r.record, r.machine, r.block, r.offset, r.pe, r.tile, r.status) == \
               (K["TE_COMMIT"], w["machine"], w["block"], 16, w["pe"], w["tile"], w["status"])
        assert F.string(r.mnemonic) == w["mnemonic"].encode() and r.block_datatype == 1
        d = r.desc
        assert (d.datatype, d.row, d.col, d.valid_row, d.valid_col, d.layout, d.capacity, d.elements) == \
               (1, w["row"], w["col"], w["valid_row"], w["valid_col"], w["layout"], w["capacity"], 64)
        assert data[r.payload_offset: r.payload_offset + d.payload_bytes] == w["payload"]
        assert data[r.defined_offset: r.defined_offset + d.defined_bytes] == w["defined"]
    # the payload read back with NumPy alone is a*x + y of the initial tiles, in float32
    m = Machine.load(SAXPY_INIT)
    a, x, y = (np.asarray(m.read_tile(0, t).bits, np.uint32).view(np.float32) for t in (1, 2, 3))
    got0 = np.frombuffer(data[got[0].payload_offset: got[0].payload_offset + 256], "<u4").view(np.float32)
    assert np.array_equal(got0, (a * x + y).astype(np.float32).ravel()) or np.allclose(got0, (a * x + y).ravel())


def test_the_block_index_counts_commits_and_a_fault_changes_nothing():
    h = opened()
    m = model_of(h).machine
    before = m.digest()
    rc, n, _ = step(h, MISSING)
    assert rc == K["TE_FAULT"] and n == 1 and "SOURCE_MISSING at B.IOT[1]" in capi.message()
    (r,), _ = records(h)
    assert r.record == K["TE_FAULT_RECORD"] and F.string(r.reason) == b"SOURCE_MISSING" and r.block == 0
    assert m.digest() == before
    assert step(h)[0] == K["TE_OK"] and records(h)[0][0].block == 0
    assert step(h)[0] == K["TE_OK"] and records(h)[0][0].block == 1


def test_words_that_do_not_decode_name_the_word_and_change_nothing():
    h = opened()
    m = model_of(h).machine
    before = m.digest()
    w = F.new("uint64_t[]", [0x000000011c000201, 0x10f02, 0xAB])
    assert capi.step(h, w, 3, 0, F.NULL, F.NULL) == K["TE_ERR_DECODE"]
    assert capi.message() == "block 0: the words do not decode to one block: word 2 (0x00000000000000ab): " \
                             "unknown word tag 0xab (word 0x00000000000000ab)"
    (r,), _ = records(h)
    assert F.string(r.reason) == b"DECODE_ERROR" and r.offset == 0 and m.digest() == before


def test_too_small_buffers_say_the_sizes_and_keep_the_records():
    h = opened()
    step(h)
    recs, data = F.new("te_record[]", 4), F.new("uint8_t[]", 2000)
    count, nbytes = F.new("uint32_t *"), F.new("uint64_t *")
    assert capi.records(h, recs, 4, data, 1055, count, nbytes) == K["TE_ERR_BUFFER"]
    assert (count[0], nbytes[0]) == (4, 1056) and "4 record(s) and 1056 data bytes" in capi.message()
    assert capi.records(h, recs, 4, data, 1056, count, nbytes) == K["TE_OK"]


def test_the_dut_side_names_the_first_wrong_element_decoded():
    h = opened()
    step(h)
    got, data = records(h)
    v, d = F.new("uint64_t *"), F.new("int32_t *")
    for r in got:
        assert capi.dut_commit(h, 0, r.pe, r.tile) == K["TE_OK"]
        for e in range(64):
            assert capi.record_element(h, r.pe, e, v, d) == K["TE_OK"]
            bits = v[0] ^ (1 << 22 if (r.pe, e) == (1, 9) else 0)
            assert capi.dut_element(h, e, bits, d[0]) == K["TE_OK"]
        assert capi.dut_status(h, r.status) == K["TE_OK"]
    assert capi.check(h) == K["TE_MISMATCH"]
    text = capi.message()
    w = np.frombuffer(data[got[1].payload_offset:][:256], "<u4")[9]
    assert text.startswith(f"machine 0 block 0 PE1 tile 3 element 9 [0,9] FP32: expected 0x{w:08x} (")
    assert f"got 0x{w ^ (1 << 22):08x} (" in text
    diff = F.new("te_difference *")
    assert capi.last_difference(h, diff) == K["TE_OK"]
    assert (diff.pe, diff.tile, diff.element, diff.row, diff.col, diff.expected, diff.actual) == \
           (1, 3, 9, 0, 9, w, w ^ (1 << 22))


def test_the_dut_side_agrees_when_it_gives_the_same_elements_and_status():
    h = opened()
    step(h)
    v, d = F.new("uint64_t *"), F.new("int32_t *")
    for pe in range(4):
        capi.dut_commit(h, 0, pe, 3)
        for e in range(64):
            capi.record_element(h, pe, e, v, d)
            capi.dut_element(h, e, v[0], d[0])
    assert capi.check(h) == K["TE_OK"] and capi.message() == ""


def test_a_batch_steps_every_machine_in_one_call_as_machinebatch_step():
    out = F.new("te_model **")
    path = ROOT / "examples" / "saxpy.batch.arrow"
    assert capi.open_batch(cstr(str(path)), F.NULL, cstr("cpu"), out) == K["TE_OK"], capi.message()
    h = out[0]
    n = F.new("uint32_t *")
    assert capi.machines(h, n) == K["TE_OK"]
    rc, count, _ = step(h)
    want = MachineBatch.load(path).step(isa.assemble(SAXPY)).to_pylist()
    faults = sorted(w["machine"] for w in want if w["record"] == "fault")
    assert n[0] == 16 and faults and rc == K["TE_FAULT"] and count == len(want)      # the file plants faults
    assert capi.message().startswith(f"machine {faults[0]} block 0: SOURCE_UNDEFINED at B.IOT[2]: ")
    got, data = records(h)
    by_key = {(w["machine"], w["pe"] if w["record"] == "commit" else -1): w for w in want}
    assert [(r.machine, r.pe if r.record == K["TE_COMMIT"] else -1) for r in got] == sorted(by_key)
    for r in got:
        if r.record == K["TE_COMMIT"]:
            assert data[r.payload_offset: r.payload_offset + r.desc.payload_bytes] == by_key[(r.machine, r.pe)]["payload"]
    one = F.new("te_model **")
    assert capi.batch_machine(h, n[0] - 1, one) == K["TE_OK"]
    assert capi.read_tile(h, 0, 1, F.new("te_desc *"), F.NULL, 0, F.NULL, 0) == K["TE_ERR_ARG"]
    assert "te_batch_machine" in capi.message()


def test_te_batch_of_models_is_a_batch_of_copies():
    a, b = opened(), opened()
    out = F.new("te_model **")
    arr = F.new("te_model *[]", [a, b])
    assert capi.batch(arr, 2, F.NULL, out) == K["TE_OK"]
    assert step(out[0])[0] == K["TE_OK"]
    assert model_of(a).machine.digest() == Machine.load(SAXPY_INIT).digest()       # the models are untouched


def test_write_then_read_a_tile_and_gprs():
    h = opened(None)
    desc = F.new("te_desc *")
    desc.datatype, desc.kind, desc.location = 17, K["TE_NUMERIC"], K["TE_LOCAL"]     # S16
    desc.row, desc.col, desc.valid_row, desc.valid_col, desc.capacity = 2, 3, 2, 2, 12
    values = np.array([1, 0xFFFF, 3, 4, 5, 6], "<u2")
    payload = F.new("uint8_t[]", values.tobytes())
    defined = F.new("uint8_t[]", [0b011011])
    assert capi.write_tile(h, 2, 7, desc, payload, 12, defined, 1) == K["TE_OK"], capi.message()
    view = model_of(h).machine.read_tile(2, 7)
    assert view.bits.tolist() == [[1, 0xFFFF, 3], [4, 5, 6]] and view.defined.tolist() == [[1, 1, 0], [1, 1, 0]]
    out, p, dd = F.new("te_desc *"), F.new("uint8_t[]", 12), F.new("uint8_t[]", 1)
    assert capi.read_tile(h, 2, 7, out, p, 12, dd, 1) == K["TE_OK"]
    assert bytes(F.buffer(p, 12)) == values.tobytes() and dd[0] == 0b011011 and out.valid_col == 2
    v = F.new("int64_t *")
    assert capi.tile_field(h, 2, 7, K["TE_F_CAPACITY"], v) == K["TE_OK"] and v[0] == 12
    assert capi.set_gpr(h, 3, 5, 0xDEAD) == K["TE_OK"]
    g = F.new("uint64_t *")
    assert capi.get_gpr(h, 3, 5, g) == K["TE_OK"] and g[0] == 0xDEAD
    before = model_of(h).machine.digest()
    assert capi.set_gpr(h, 3, 0, 1) == K["TE_ERR_ARG"] and "r0" in capi.message()
    desc.datatype = 40
    assert capi.write_tile(h, 2, 8, desc, payload, 12, defined, 1) == K["TE_ERR_ARG"]
    assert model_of(h).machine.digest() == before


def test_profiles_and_state_files_that_do_not_exist():
    out = F.new("te_model **")
    assert capi.open(F.NULL, cstr("nope"), out) == K["TE_ERR_PROFILE"]
    assert "unknown numeric profile 'nope'; known: ieee" in capi.message()
    assert capi.open(cstr("/nonexistent.arrow"), F.NULL, out) == K["TE_ERR_STATE_FILE"]
    h = opened(profile="ftz")
    assert model_of(h).machine.config.profile == "ftz"


def test_an_exception_inside_is_te_err_python_and_a_message(monkeypatch):
    h = opened()
    before = model_of(h).machine.digest()
    monkeypatch.setattr(Machine, "step", lambda self, block, offset=None: 1 / 0)
    assert step(h)[0] == K["TE_ERR_PYTHON"]
    assert capi.message() == "te_step: internal error in tile-emu: ZeroDivisionError: division by zero"
    assert model_of(h).machine.digest() == before


def test_closed_and_foreign_handles_are_refused():
    h = opened()
    assert capi.close(h) == K["TE_OK"]
    for call in (lambda: step(h)[0], lambda: capi.close(h), lambda: capi.save(h, cstr("/tmp/x.arrow")),
                 lambda: capi.push_word(h, 1), lambda: capi.check(h)):
        assert call() == K["TE_ERR_CLOSED"] and "was closed" in capi.message()
    assert step(F.cast("te_model *", 1 << 40))[0] == K["TE_ERR_ARG"] and "not a handle" in capi.message()
    assert step(F.NULL)[0] == K["TE_ERR_NULL"]


def test_two_models_are_independent():
    a, b = opened(), opened()
    step(a)
    step(a)
    step(b)
    assert records(a)[0][0].block == 1 and records(b)[0][0].block == 0
    assert model_of(a).machine.digest() != model_of(b).machine.digest()


def test_building_without_a_compiler_says_what_to_install(tmp_path):
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "emulator.cli", "cosim", "build", "--out", str(tmp_path / "lib")],
                          capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "CC": "/nonexistent/cc"})
    assert done.returncode == 3
    assert done.stderr == "tile-emu cosim: no C compiler (/nonexistent/cc): apt-get install -y gcc\n"
    assert not (tmp_path / "lib").exists()
