"""The numeric profile outside kernels/ (issue 16): state files record its name and version,
Machine.load and MachineBatch take one, an unknown name or version is one line; every command's
profile comes from kernels.numeric.profiles, so a new profile needs no change here."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from emulator import Machine, MachineBatch, MachineConfig
from emulator.cli import main
from emulator.stateio import META_KEY, StateFileError, load_state, save_state, state_table
from isa import BDim, Block, BStart, TileBinding
from isa.datatypes import datatype
from isa.instructions import lookup
from kernels.numeric.profiles import PROFILES, UnknownProfile

X = 0x8001          # TREM FP16: a5 gives 0x3BFF, ieee 0x3C00 (docs/numerics.md "Profile a5")
Y = 0x3C00


def trem_machine(config=None) -> Machine:
    m = Machine(config)
    for p in range(4):
        m.write_tile(p, 1, "FP16", np.array([X], np.uint16))
        m.write_tile(p, 2, "FP16", np.array([Y], np.uint16))
    return m


def trem_block() -> Block:
    row = lookup("TREM")
    return Block(BStart(row.mode, row.function, datatype("FP16").code, row.engine),
                 (TileBinding(1, 15), TileBinding(2, 15), TileBinding(3, 15)), BDim(1, 1))


def test_a_state_file_records_the_profile_and_its_version(tmp_path):
    for name, p in PROFILES.items():
        path = tmp_path / f"{name}.arrow"
        save_state(trem_machine(MachineConfig(profile=name)), path)
        cfg = json.loads(pa.ipc.open_file(str(path)).schema.metadata[META_KEY])["config"]
        assert (cfg["profile"], cfg["profile_version"]) == (name, p.version)
        assert load_state(path).config.profile == name


def _with_config(tmp_path, **changes):
    t = state_table(trem_machine())
    key = META_KEY
    meta = json.loads(t.schema.metadata[key])
    meta["config"].update(changes)
    path = tmp_path / "s.arrow"
    t = t.replace_schema_metadata({key: json.dumps(meta).encode()})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, t.schema) as w:
        w.write_table(t)
    return path


def test_a_state_file_naming_another_version_is_one_line_and_run_writes_nothing(tmp_path, capsys):
    path = _with_config(tmp_path, profile="a5", profile_version="0.9")
    with pytest.raises(StateFileError, match=r"profile a5 version '0.9' is not this build's \(known: ieee 1.0"):
        load_state(path)
    (tmp_path / "p.s").write_text("")
    out = tmp_path / "final.arrow"
    assert main(["run", str(tmp_path / "p.s"), "--init", str(path), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "version '0.9'" in err and not out.exists()


def test_a_state_file_without_a_version_loads_under_this_builds(tmp_path):
    t = state_table(trem_machine(MachineConfig(profile="a5")))
    key = META_KEY
    meta = json.loads(t.schema.metadata[key])
    del meta["config"]["profile_version"]
    path = tmp_path / "old.arrow"
    t = t.replace_schema_metadata({key: json.dumps(meta).encode()})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, t.schema) as w:
        w.write_table(t)
    assert load_state(path).config.profile == "a5"


def test_machine_load_takes_a_profile(tmp_path):
    path = tmp_path / "s.arrow"
    save_state(trem_machine(), path)
    m = Machine.load(path, profile="a5")
    assert m.config.profile == "a5"
    m.execute(trem_block())
    assert int(m.read_tile(0, 3).bits.ravel()[0]) == 0x3BFF
    m = Machine.load(path)
    m.execute(trem_block())
    assert int(m.read_tile(0, 3).bits.ravel()[0]) == 0x3C00
    with pytest.raises(UnknownProfile, match="known"):
        Machine.load(path, profile="a6")


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_machine_batch_takes_a_profile_on_every_backend(tmp_path, backend):
    machines = [trem_machine() for _ in range(3)]
    want = {"a5": 0x3BFF, "ieee": 0x3C00, None: 0x3C00}
    for profile, bits in want.items():
        batch = MachineBatch(machines, backend, profile=profile)
        batch.run([trem_block()])
        got = {int(batch.machine(k).read_tile(p, 3).bits.ravel()[0]) for k in range(3) for p in range(4)}
        assert got == {bits}, (backend, profile)
        assert batch.machine(0).config.profile == (profile or "ieee")
    assert machines[0].config.profile == "ieee"            # the callers' machines are not changed
    path = tmp_path / "b.arrow"
    MachineBatch(machines, backend).save(path)
    assert MachineBatch.load(path, backend, profile="a5").machine(1).config.profile == "a5"


def test_machine_batch_takes_a_profile_on_the_gpu_backend():
    """The gpu backend on a device stand-in (test_strict_device.py runs this again on the strict
    CuPy stand-in under the CUDA simulator, Numba-CUDA kernels included): a5's TREM FP16 on the
    device, ieee by default."""
    from test_batch_differential import device_stand_in
    machines = [trem_machine() for _ in range(2)]
    for profile, bits in {"a5": 0x3BFF, None: 0x3C00}.items():
        with device_stand_in():
            batch = MachineBatch(machines, "gpu", profile=profile)
            batch.run([trem_block()])
        assert batch.backend == "gpu"
        got = {int(batch.machine(k).read_tile(p, 3).bits.ravel()[0]) for k in range(2) for p in range(4)}
        assert got == {bits}, profile


def test_run_profile_a5_runs_the_block_under_a5(tmp_path, capsys):
    init = tmp_path / "s.arrow"
    save_state(trem_machine(), init)
    stream = tmp_path / "p.tbs"
    from isa.encoding import encode
    stream.write_bytes(encode([trem_block()]))
    out = tmp_path / "final.arrow"
    assert main(["run", str(stream), "--init", str(init), "--profile", "a5", "--out", str(out), "-q"]) == 0
    final = load_state(out)
    assert final.config.profile == "a5"
    assert int(Machine.from_state(final).read_tile(0, 3).bits.ravel()[0]) == 0x3BFF
