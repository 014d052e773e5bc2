"""`tile-emu asm` / `tile-emu disasm`: round trip through files and stdin/stdout, one-line errors."""
import io
import sys

from emulator.cli import main
from isa import assemble

PROGRAM = "BSTART.VEC TADD, FP16\n  B.IOT t1@0b0011, t2@0b0011 -> t3@0b0011 CAP=4096\n  B.DIM LB0=64, LB1=4\n"


def test_asm_then_disasm_round_trips(tmp_path, capsys):
    src, tbs, out = tmp_path / "p.s", tmp_path / "p.tbs", tmp_path / "p2.s"
    src.write_text(PROGRAM)
    assert main(["asm", str(src), "-o", str(tbs)]) == 0
    assert tbs.read_bytes() == assemble(PROGRAM)
    assert main(["disasm", str(tbs), "-o", str(out)]) == 0
    assert assemble(out.read_text()) == tbs.read_bytes()
    assert main(["disasm", str(tbs)]) == 0
    assert capsys.readouterr().out == out.read_text()


def test_asm_reads_stdin(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(PROGRAM))
    assert main(["asm", "-", "-o", str(tmp_path / "x.tbs")]) == 0
    assert (tmp_path / "x.tbs").read_bytes() == assemble(PROGRAM)


def test_asm_error_is_one_line_with_file_line_column(tmp_path, capsys):
    src = tmp_path / "bad.s"
    src.write_text("BSTART.VEC TADD, FP16\n  B.DIM LB0=70000\n")
    assert main(["asm", str(src), "-o", str(tmp_path / "x.tbs")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{src}:2:13: LB0 70000 does not fit" in err
    assert not (tmp_path / "x.tbs").exists()


def test_asm_check_reports_illegal_blocks(tmp_path, capsys):
    src = tmp_path / "ill.s"
    src.write_text("# header\nBSTART.TEPL M0.F5, FP16\n")
    assert main(["asm", str(src), "-o", str(tmp_path / "x.tbs")]) == 0   # well formed
    assert main(["asm", "--check", str(src), "-o", str(tmp_path / "y.tbs")]) == 1
    assert f"{src}:2:1: block 0 is illegal: UNASSIGNED_OPCODE" in capsys.readouterr().err


def test_disasm_error_names_the_byte_offset(tmp_path, capsys):
    tbs = tmp_path / "t.tbs"
    tbs.write_bytes(assemble(PROGRAM)[:-3])
    assert main(["disasm", str(tbs)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{tbs}: byte offset {len(tbs.read_bytes())}: stream truncated" in err
