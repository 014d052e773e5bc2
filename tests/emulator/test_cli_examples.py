"""`tile-emu run/show/diff` and the shipped examples, end to end (in process)."""
import pathlib

import numpy as np
import pytest

from emulator import Machine
from emulator.cli import main
from isa import assemble

ROOT = pathlib.Path(__file__).resolve().parents[2]
EX = ROOT / "examples"


def run_example(name, tmp_path, capsys):
    tbs = tmp_path / f"{name}.tbs"
    tbs.write_bytes(assemble((EX / f"{name}.s").read_text()))
    out = tmp_path / f"{name}.final.arrow"
    rc = main(["run", str(tbs), "--init", str(EX / f"{name}.init.arrow"), "--out", str(out)])
    return rc, out, capsys.readouterr()


def test_init_files_are_what_make_inits_writes(tmp_path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_inits", EX / "make_inits.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for name, build in mod.INITS.items():
        assert Machine.load(EX / f"{name}.init.arrow").digest() == build().digest(), name


def test_absdiff_example_computes_abs_difference(tmp_path, capsys):
    rc, out, _ = run_example("absdiff", tmp_path, capsys)
    assert rc == 0
    init, final = Machine.load(EX / "absdiff.init.arrow"), Machine.load(out)
    for p in (0, 1):
        a = init.read_tile(p, 1).bits.astype(np.uint32).view(np.int32).astype(np.int64)
        b = init.read_tile(p, 2).bits.astype(np.uint32).view(np.int32).astype(np.int64)
        v = final.read_tile(p, 6)
        got = v.bits.astype(np.uint32).view(np.int32)
        assert np.array_equal(got[:, :6], np.abs(a - b)[:, :6])
        assert (got[:, 6:] == -2**31).all()          # PAD=MIN
        pred = np.pad((a > b)[:, :6], ((0, 0), (0, 2)))          # PAD=ZERO: 0 bits outside
        assert final.read_tile(p, 5).payload == np.packbits(pred.ravel().astype(np.uint8), bitorder="little").tobytes()
    assert 6 not in final.tiles(2)


def test_window_example_moves_windows_by_private_gpr_offsets(tmp_path, capsys):
    rc, out, _ = run_example("window", tmp_path, capsys)
    assert rc == 0
    final = Machine.load(out)
    img = np.arange(256).reshape(16, 16)
    for p in range(4):
        r, c = 3 * p, 12 - 2 * p
        win = img[r:r + 4, c:c + 4]
        v = final.read_tile(p, 2)
        assert v.Layout == 1 and np.array_equal(v.bits, win)
        assert v.payload == win.T.astype(np.uint8).tobytes()       # DN: column-major placement
        want = img.copy()
        want[c:c + 4, r:r + 4] = win
        assert np.array_equal(final.read_tile(p, 3).bits, want)


def test_img2col_example(tmp_path, capsys):
    rc, out, _ = run_example("img2col", tmp_path, capsys)
    assert rc == 0
    init, final = Machine.load(EX / "img2col.init.arrow"), Machine.load(out)
    x = init.read_tile(0, 1).bits.reshape(6, 6, 16)
    got = final.read_tile(0, 2).bits
    for r in range(8):
        oh, ow = divmod(r, 6)
        for c in range(32):
            k = 16 + c
            c0, kc, kr = k % 16, (k // 16) % 3, k // 48
            ih, iw = oh + kr - 1, ow + kc - 1
            inside = 0 <= ih < 6 and 0 <= iw < 6 and c0 < 12
            assert got[r, c] == (x[ih, iw, c0] if inside else 0), (r, c)


def test_saxpy_example_runs(tmp_path, capsys):
    rc, out, io = run_example("saxpy", tmp_path, capsys)
    assert rc == 0, io.err
    init, final = Machine.load(EX / "saxpy.init.arrow"), Machine.load(out)
    for p in range(4):
        a, x, y = (init.read_tile(p, t).bits.astype(np.uint32).view(np.float32).astype(np.float64) for t in (1, 2, 3))
        # a*x + y is exact in float64 here (few significant bits), so rounding once to FP32 is exact too
        want = (a * x + y).astype(np.float32).view(np.uint32)
        assert np.array_equal(final.read_tile(p, 3).bits.astype(np.uint32), want)


def test_run_failing_block_prints_index_offset_reason_writes_partial_state(tmp_path, capsys):
    src = (EX / "absdiff.s").read_text().replace("t2@0b0011, t1@0b0011 -> t4", "t2@0b0011, t9@0b0011 -> t4")
    tbs = tmp_path / "bad.tbs"
    tbs.write_bytes(assemble(src))
    out = tmp_path / "partial.arrow"
    rc = main(["run", str(tbs), "--init", str(EX / "absdiff.init.arrow"), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 1 and "block 1 (byte offset" in err and "SOURCE_MISSING" in err
    m = Machine.load(out)
    assert 3 in m.tiles(0) and 4 not in m.tiles(0)


def test_run_rejects_a_bad_init_file_in_one_line(tmp_path, capsys):
    (tmp_path / "bad.arrow").write_bytes(b"nope")
    (tmp_path / "x.tbs").write_bytes(assemble((EX / "absdiff.s").read_text()))
    rc = main(["run", str(tmp_path / "x.tbs"), "--init", str(tmp_path / "bad.arrow")])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1 and "not an Arrow IPC file" in err


def test_run_reports_a_truncated_stream(tmp_path, capsys):
    data = assemble((EX / "absdiff.s").read_text())
    (tmp_path / "t.tbs").write_bytes(data[:-4])
    rc = main(["run", str(tmp_path / "t.tbs"), "--init", str(EX / "absdiff.init.arrow")])
    assert rc == 1 and "DECODE_ERROR" in capsys.readouterr().err


def test_run_names_the_failing_blocks_bstart_and_the_offending_word(tmp_path, capsys):
    from isa import encoding
    data = bytearray(assemble((EX / "saxpy.s").read_text()))
    start = [off for off, _ in encoding.iter_blocks(bytes(data))][0]
    data[start + 16] = 0xEE                              # the block's second descriptor word: bad tag
    (tmp_path / "bad.tbs").write_bytes(bytes(data))
    rc = main(["run", str(tmp_path / "bad.tbs"), "--init", str(EX / "saxpy.init.arrow")])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1
    assert f"block 0 (byte offset {start}): DECODE_ERROR at byte offset {start + 16}: unknown word tag" in err


def test_show_prints_descriptors_values_definedness_gprs_and_status(capsys):
    assert main(["show", str(EX / "window.init.arrow"), "--pe", "2"]) == 0
    out = capsys.readouterr().out
    assert "PE2: status -; GPRs r1=0x6 r2=0x8" in out and "tile 1: Local U8 16x16" in out
    assert main(["show", str(EX / "img2col.init.arrow"), "--hex", "--max", "2"]) == 0
    out = capsys.readouterr().out
    assert "feature map NC1HWC0" in out and "0x0000" in out and "more row(s)" in out


def test_show_marks_undefined_elements(tmp_path, capsys):
    m = Machine()
    m.write_tile(0, 1, "S8", np.array([[1, 255]], np.uint8), defined=np.array([[True, False]]))
    m.save(tmp_path / "u.arrow")
    main(["show", str(tmp_path / "u.arrow")])
    out = capsys.readouterr().out
    assert "[0] 1 ?" in out and "1 undefined element(s)" in out


def test_diff_exit_status_and_element_report(tmp_path, capsys):
    a = EX / "window.init.arrow"
    assert main(["diff", str(a), str(a)]) == 0
    m = Machine.load(a)
    m.write_tile(1, 1, "U8", np.where(np.arange(256).reshape(16, 16) == 17, 0, np.arange(256).reshape(16, 16)))
    m.set_gpr(3, 1, 99)
    m.save(tmp_path / "b.arrow")
    capsys.readouterr()
    assert main(["diff", str(a), str(tmp_path / "b.arrow")]) == 1
    out = capsys.readouterr().out
    assert "PE1 tile 1: 1 element(s) differ" in out and "[1,1] 0x11 != 0x0" in out and "PE3: r1 0x9 != 0x63" in out


@pytest.mark.parametrize("cmd,status", [("show", 1), ("diff", 2)])
def test_show_and_diff_reject_missing_files(cmd, status, tmp_path, capsys):
    """show: the input was rejected (1); diff: trouble (2), as cmp and diff, since its 1 means "differ"."""
    args = [cmd, str(tmp_path / "missing.arrow")] + ([str(tmp_path / "missing.arrow")] if cmd == "diff" else [])
    assert main(args) == status and "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("bad", [b"", b"nope", None])
def test_diff_exit_status_separates_equal_different_and_trouble(bad, tmp_path, capsys):
    """cmp/diff convention: 0 the states are equal, 1 they differ, 2 the files could not be compared."""
    init = str(EX / "saxpy.init.arrow")
    assert main(["diff", init, init]) == 0
    m = Machine.load(init)
    m.set_gpr(0, 1, 7)
    m.save(tmp_path / "changed.arrow")
    assert main(["diff", init, str(tmp_path / "changed.arrow")]) == 1
    broken = tmp_path / "broken.arrow"
    if bad is None:
        broken.write_bytes((EX / "saxpy.init.arrow").read_bytes()[:100])      # truncated
    else:
        broken.write_bytes(bad)
    capsys.readouterr()
    assert main(["diff", init, str(broken)]) == 2
    assert main(["diff", str(broken), init]) == 2
    assert capsys.readouterr().err.count("\n") == 2
    with pytest.raises(SystemExit) as exc:
        main(["diff", init])                                                  # a missing argument
    assert exc.value.code == 2


def test_diff_help_documents_its_exit_status(capsys):
    with pytest.raises(SystemExit):
        main(["diff", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "0 the states are equal, 1 they differ, 2 error" in out


def test_version_is_the_package_version(capsys):
    import tomllib
    want = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"tile-emu {want}\n"


def test_version_falls_back_to_pyproject_without_installed_metadata(monkeypatch, capsys):
    import tomllib
    from importlib import metadata

    def not_installed(name):
        raise metadata.PackageNotFoundError(name)
    monkeypatch.setattr(metadata, "version", not_installed)
    want = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert main(["--version"]) == 0 and capsys.readouterr().out == f"tile-emu {want}\n"


def test_top_level_help_lists_version_and_exit_status(capsys):
    assert main(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--version" in out and "exit status: 0 success" in out and "2 the command could not run" in out


def test_run_profile_lists_every_profile_from_the_table(capsys):
    from kernels.numeric.profiles import PROFILES
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert "one of " + ", ".join(PROFILES) in " ".join(out.split())
    assert main(["run", "x.tbs", "--profile", "nonsense"]) == 2          # before anything is read
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'nonsense': unknown numeric profile; known: " in err
    assert all(f"{p.name} {p.version}" in err for p in PROFILES.values())


@pytest.mark.parametrize("args,words", [
    (["show", "--max", "-1"], "--max: -1 is negative"),
    (["show", "--pe", "4"], "--pe: invalid choice: 4"),
    (["show", "--tile", "-5"], "--tile: -5 is negative"),
    (["diff", "--max", "-3"], "--max: -3 is negative"),
])
def test_show_and_diff_limits_are_usage_errors(args, words, capsys):
    state = str(EX / "saxpy.init.arrow")
    argv = args[:1] + [state] + ([state] if args[0] == "diff" else []) + args[1:]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and words in capsys.readouterr().err


def test_run_hands_regions_programs_to_the_calculus(monkeypatch, tmp_path):
    import sys
    import types
    seen = []
    fake = types.ModuleType("emulator.calculus.cli")
    fake.run_regions = lambda args, *_: seen.append(args.stream) or 0
    monkeypatch.setitem(sys.modules, "emulator.calculus.cli", fake)
    path = str(tmp_path / "p.regions.json")
    assert main(["run", path]) == 0 and seen == [path]


@pytest.mark.parametrize("dtype", ["S8", "U8", "S16", "S32", "S64", "U64", "S4X2", "U4X2", "FP16", "TF32", "FP64"])
def test_show_text_of_raw_encodings_matches_python_formatting(dtype):
    from emulator.commands.show import decode_values
    from isa.datatypes import datatype
    d = datatype(dtype)
    w = d.bits if d.is_int else d.container
    vals = [0, 1, (1 << (w - 1)) - 1, 1 << (w - 1), (1 << w) - 1, 5 % (1 << w)]
    bits = np.array(vals, dtype=np.uint64).astype(d.raw_dtype).reshape(2, 3)
    digits = max(1, d.container // 4)
    assert decode_values(bits, dtype, True).tolist() == [[f"0x{v:0{digits}x}" for v in vals[:3]],
                                                         [f"0x{v:0{digits}x}" for v in vals[3:]]]
    if d.is_int:
        signed = [v - (1 << w) if d.signed and v >= 1 << (w - 1) else v for v in vals]
        assert decode_values(bits, dtype, False).ravel().tolist() == [str(v) for v in signed]


def test_python_dash_m_reports_errors_in_one_line_like_the_console_script():
    """`python -m emulator.cli` loads the module as __main__ too; its errors are still one line."""
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "emulator.cli", "show", "/nonexistent/x.arrow"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1
