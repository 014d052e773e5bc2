"""The golden model inside a SystemVerilog testbench (examples/dpi, docs/cosim-c.md): under
Verilator, tb_lockstep.sv drives te_dut.sv with stream-golden programs and steps tile-emu through
DPI-C per block (tile_emu_pkg.sv, libtile_emu); every commit of the DUT is compared.  The
correct DUT passes; the copy with a seeded bug (TSUB computes b - a) stops at its first wrong
element, named by block, PE, tile and element with both values decoded -- checked here against
the stream replayed in Python and the subtraction computed here.  Marked `rtl`: these need
`apt-get install -y verilator`, a C compiler and the rtl extra, and fail -- never skip --
without them."""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DPI = ROOT / "examples" / "dpi"
from examples_loader import load_example, tools_fixture  # noqa: E402

dpi_run = load_example("dpi")

pytestmark = pytest.mark.rtl


tools = tools_fixture(dpi_run)


@pytest.fixture(scope="module")
def bench(tmp_path_factory, tools):
    """The stream goldens as testbench cases, the library, and both Verilator builds."""
    work = tmp_path_factory.mktemp("dpi")
    dataset = dpi_run.generate(work, cases=16, seed=11, blocks=8)
    (work / "cases").mkdir()
    cases = dpi_run.stream_cases(dataset, work / "cases")
    listing = dpi_run.write_listing(cases, work / "cases.txt")
    lib = dpi_run.build_library(work / "lib")
    good = dpi_run.build_testbench(lib, work / "good", seeded_bug=False)
    bad = dpi_run.build_testbench(lib, work / "bad", seeded_bug=True)
    return {"cases": {name: (init, tbs) for name, init, tbs in cases}, "listing": listing, "good": good, "bad": bad}


def test_the_dut_matches_the_model_on_every_commit_it_makes(bench):
    status, text = dpi_run.simulate(bench["good"], bench["listing"], trace=True)
    last = text.splitlines()[-1]
    assert status == 0, text[-2000:]
    m = re.fullmatch(r"PASS: (\d+) cases, (\d+) blocks: (\d+) executed by the DUT \((\d+) commits checked\), "
                     r"(\d+) by the model", last)
    assert m, last
    cases, blocks, by_dut, commits, by_model = map(int, m.groups())
    assert cases == len(bench["cases"]) == 64 and blocks == 8 * cases and by_dut + by_model == blocks
    executed = {_mnemonic(line.split()[5]) for line in text.splitlines() if line.endswith(" dut")}
    assert by_dut >= 20 and commits >= 50 and {"TADD", "TSUB"} <= executed, (by_dut, commits, executed)


def _mnemonic(bstart_hex: str) -> str:
    from isa.instructions import by_carrier
    w = int(bstart_hex, 16)
    return by_carrier((w >> 16) & 0xFF, (w >> 24) & 0xFF).mnemonic


def test_the_seeded_bug_stops_at_its_first_wrong_element_named_and_decoded(bench):
    status, text = dpi_run.simulate(bench["bad"], bench["listing"], trace=True)
    assert status == 1, text[-2000:]
    lines = text.splitlines()
    fail = lines[-1]
    m = re.fullmatch(r"FAIL case (\S+) block (\d+): machine 0 block (\d+) PE(\d) tile (\d+) element (\d+) "
                     r"\[(\d+),(\d+)\] ([SU]\d+): expected 0x([0-9a-f]+) \((-?\d+)\), got 0x([0-9a-f]+) \((-?\d+)\)", fail)
    assert m, fail
    case, block, block2, pe, tile, element, row, col, dtype = m.groups()[:9]
    exp_hex, exp_val, got_hex, got_val = m.groups()[9:]
    assert block == block2
    # the same stream replayed in Python: the failing block is a TSUB, and the two values are
    # a - b (what the model committed) and b - a (the bug) of that element's sources, mod 2^W
    from emulator import Machine
    from isa import iter_blocks
    init, tbs = bench["cases"][case]
    machine = Machine.load(init)
    blocks = list(iter_blocks(tbs.read_bytes()))
    for k, (off, b) in enumerate(blocks[: int(block)]):
        machine.step(b, offset=off)
    off, b = blocks[int(block)]
    assert _mnemonic(f"{_bstart(b):016x}") == "TSUB"
    left, right = (machine.read_tile(int(pe), t.tile) for t in b.iot[:2])
    w = int(dtype[1:])
    a, c = int(left.bits[int(row), int(col)]), int(right.bits[int(row), int(col)])
    assert int(exp_hex, 16) == (a - c) % (1 << w) and int(got_hex, 16) == (c - a) % (1 << w)
    signed = dtype[0] == "S"
    for raw, shown in ((int(exp_hex, 16), exp_val), (int(got_hex, 16), got_val)):
        assert int(shown) == (raw - (1 << w) if signed and raw >> (w - 1) else raw)
    assert int(tile) == b.iot[-1].tile
    # the run stopped there: the case's earlier blocks went through, nothing after it did
    traced = [x.split() for x in lines if x.startswith("TRACE")]
    assert [int(x[4]) for x in traced if x[2] == case] == list(range(int(block)))
    assert traced[-1][2] == case or int(block) == 0


def _bstart(b) -> int:
    from isa.encoding import block_words
    return block_words(b)[0]


def test_the_documented_sv_scoreboard_is_the_one_the_testbench_includes():
    doc = (ROOT / "docs" / "cosim-c.md").read_text()
    blocks = re.findall(r"^```systemverilog\n(.*?)^```", doc, re.S | re.M)
    assert len(blocks) == 1 and blocks[0] == (DPI / "scoreboard.svh").read_text()
    assert len(blocks[0].splitlines()) <= 30
    assert '`include "scoreboard.svh"' in (DPI / "tb_lockstep.sv").read_text()


def test_without_verilator_the_example_says_what_to_install(tmp_path):
    done = subprocess.run([sys.executable, str(DPI / "run.py")], capture_output=True, text=True,
                          env={"PATH": str(tmp_path), "PYTHONPATH": str(ROOT)})
    assert done.returncode == 3 and done.stderr == "run.py: Verilator is not installed: apt-get install -y verilator\n"
