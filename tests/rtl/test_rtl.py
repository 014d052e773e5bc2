"""The RTL client (examples/rtl): a Verilog lane DUT driven by cocotb under Icarus Verilog with
every golden case of the partitions it implements, scored by emulator.cosim.compare; the copy
with a seeded bug fails on its first wrong element, decoded; hex exports load with a real
$readmemh.  Marked `rtl` (python -m pytest -m rtl; deselected by default): these need
`apt-get install -y iverilog` and the rtl extra, and fail -- never skip -- without them."""
from __future__ import annotations

import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUN = ROOT / "examples" / "rtl" / "run.py"
from examples_loader import load_example, tools_fixture  # noqa: E402

rtl_run = load_example("rtl")

pytestmark = pytest.mark.rtl


def run(*args):
    done = subprocess.run([sys.executable, str(RUN), *args], capture_output=True, text=True, cwd=ROOT)
    return done.returncode, done.stdout, done.stderr


tools = tools_fixture(rtl_run)


@pytest.fixture(scope="module")
def golden(tmp_path_factory, tools):
    return rtl_run.generate(tmp_path_factory.mktemp("rtl"), cases=16, seed=3)


def test_the_lane_matches_every_golden_case_it_implements(tools):
    rc, out, err = run("--dut", "alu")               # generates its own dataset with tile-emu golden
    assert rc == 0, out + err
    assert out.startswith("alu: PASS: ") and "of 83 partitions match the golden outputs" in out


def test_the_seeded_bug_fails_on_its_first_wrong_element_decoded(golden):
    rc, out, err = run("--dut", "alu_bug", *[x for g in golden for x in ("--dataset", str(g))])
    assert rc == 1, out + err
    kept = err.split("build folder: ")[1].strip()          # the failing case's reproducer lives there
    import shutil
    shutil.rmtree(kept)
    lines = out.splitlines()
    assert lines[0].startswith("alu_bug: FAIL: first failing case ") and " of TSHR S" in lines[0]
    op, dtype = "TSHR", lines[0].split(" of TSHR ")[1].split(",")[0]
    assert lines[1].strip().startswith(f"{op} {dtype} element ") and "inputs 0x" in lines[1]
    # the two values: the sign-filled shift the seed asks for, and the zero-filled one the bug gives
    a = int(lines[1].split("inputs ")[1].split(" ")[0], 16)
    b = int(lines[1].split(", ")[-1].split(" ")[0], 16)
    w = int(dtype[1:])
    signed = a - (1 << w) if a >> (w - 1) else a
    count = b & (w - 1)
    want = (signed >> count) & ((1 << w) - 1)
    got = a >> count
    assert lines[2].strip().startswith(f"expected 0x{want:0{w // 4}x} (") and f"got 0x{got:0{w // 4}x} (" in lines[2]


def test_a_damaged_dataset_is_one_line_naming_the_file(golden, tmp_path):
    import shutil
    d = tmp_path / "d"
    shutil.copytree(golden[1], d)
    victim = next(d.rglob("*.parquet"))
    victim.write_bytes(victim.read_bytes()[:-100])
    rc, out, err = run("--dut", "alu", "--dataset", str(d))
    assert rc == 1 and err.count("\n") == 1 and victim.name in err and "the manifest says" in err      # its size, checked before its SHA-256


def test_a_hex_export_loads_with_readmemh(tmp_path, tools):
    from emulator.cli import main
    assert main(["golden", "--ops", "TADD", "--dtypes", "FP16", "--cases", "12", "--quiet",
                 "--out", str(tmp_path / "v")]) == 0
    assert main(["golden", "export", str(tmp_path / "v"), "--format", "hex", "--out", str(tmp_path / "h")]) == 0
    part = tmp_path / "h" / "op=TADD" / "dtype=FP16"
    want = {name: [int(x, 16) for x in (part / name).read_text().split()] for name in ("dst.hex", "dst.def.hex")}
    n = len(want["dst.hex"])
    (tmp_path / "tb.v").write_text(f"""
module tb;
  reg [15:0] dst [0:{n - 1}];
  reg        dfn [0:{n - 1}];
  integer i;
  initial begin
    $readmemh("{part}/dst.hex", dst);
    $readmemh("{part}/dst.def.hex", dfn);
    for (i = 0; i < {n}; i = i + 1) $display("%h %h", dst[i], dfn[i]);
    $finish;
  end
endmodule
""")
    subprocess.run(["iverilog", "-g2012", "-o", str(tmp_path / "tb.vvp"), str(tmp_path / "tb.v")], check=True)
    out = subprocess.run(["vvp", "-n", str(tmp_path / "tb.vvp")], capture_output=True, text=True, check=True).stdout
    got = [line.split() for line in out.splitlines() if len(line.split()) == 2]
    assert [int(a, 16) for a, _ in got] == want["dst.hex"]
    assert [int(b, 16) for _, b in got] == want["dst.def.hex"]
    assert np.sum(want["dst.def.hex"]) > 0


def test_a_stream_hex_export_of_mixed_widths_loads_with_readmemh(tmp_path, tools):
    # one element a line with its DataType's digits: a 64-bit memory takes every width
    from emulator.cli import main
    assert main(["golden", "--streams", "--blocks", "3", "--cases", "4", "--shapes", "r1c8", "--quiet",
                 "--out", str(tmp_path / "s")]) == 0
    assert main(["golden", "export", str(tmp_path / "s"), "--format", "hex", "--out", str(tmp_path / "h")]) == 0
    part = tmp_path / "h" / "blocks=3" / "shape=r1c8"
    names = ("initial.hex", "commit.hex", "stream.hex")
    want = {name: [int(x, 16) for x in (part / name).read_text().split()] for name in names}
    assert len({len(x) for x in (part / "initial.hex").read_text().split()}) > 1      # mixed widths
    mems = "".join(f"  reg [63:0] m{k} [0:{len(want[n]) - 1}];\n" for k, n in enumerate(names))
    loads = "".join(f'    $readmemh("{part}/{n}", m{k});\n'
                    f'    for (i = 0; i < {len(want[n])}; i = i + 1) $display("{k} %h", m{k}[i]);\n'
                    for k, n in enumerate(names))
    (tmp_path / "tb.v").write_text(f"module tb;\n{mems}  integer i;\n  initial begin\n{loads}    $finish;\n  end\nendmodule\n")
    subprocess.run(["iverilog", "-g2012", "-o", str(tmp_path / "tb.vvp"), str(tmp_path / "tb.v")], check=True)
    out = subprocess.run(["vvp", "-n", str(tmp_path / "tb.vvp")], capture_output=True, text=True, check=True).stdout
    got = [line.split() for line in out.splitlines() if len(line.split()) == 2]
    for k, name in enumerate(names):
        assert [int(v, 16) for m, v in got if m == str(k)] == want[name]
