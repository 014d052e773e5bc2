"""The C ABI's tests from C: one libtile_emu per session, built by `emulator.dpi.build` with
AddressSanitizer where the compiler has it, and a compiler for the test programs.

These tests need cffi, a C compiler, the Python headers and a shared libpython; where one is
missing they skip, naming it (`emulator.dpi.build.missing()`: what to install).  The tests of
`test_capi.py` need cffi alone."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
ASAN = ("-fsanitize=address", "-fno-omit-frame-pointer")


@dataclass
class Library:
    folder: pathlib.Path
    asan: bool

    @property
    def so(self) -> pathlib.Path:
        return self.folder / "libtile_emu.so"

    def env(self, **extra) -> dict:
        """The environment a test program runs in: ASan without leak reports (the embedded
        interpreter keeps its objects to the end), this tile-emu on the path."""
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if self.asan:
            env["ASAN_OPTIONS"] = "detect_leaks=0"
        env.update(extra)
        return env

    def compile(self, source: pathlib.Path | str, out: pathlib.Path, name: str | None = None) -> pathlib.Path:
        """A C program (a file, or its text) linked with the library; AddressSanitizer with it."""
        if not isinstance(source, pathlib.Path):
            path = out / f"{name or 'prog'}.c"
            path.write_text(source)
            source = path
        exe = out / (name or source.stem)
        cmd = [os.environ.get("CC", "cc"), "-std=c11", "-g", "-Wall", "-Werror", *(ASAN if self.asan else ()),
               "-I", str(self.folder), str(source), "-o", str(exe), str(self.so), f"-Wl,-rpath,{self.folder}"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return exe

    def run(self, exe: pathlib.Path, *args, env=None, timeout: int = 300, cwd=None) -> subprocess.CompletedProcess:
        return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=timeout,
                              env=env or self.env(), cwd=cwd)


def _asan_works(tmp: pathlib.Path) -> bool:
    src = tmp / "probe.c"
    src.write_text("int main(void) { return 0; }\n")
    cc = os.environ.get("CC", "cc")
    done = subprocess.run([cc, *ASAN, str(src), "-o", str(tmp / "probe")], capture_output=True)
    return done.returncode == 0 and subprocess.run([str(tmp / "probe")], capture_output=True).returncode == 0


@pytest.fixture(scope="session")
def library(tmp_path_factory) -> Library:
    sys.path.insert(0, str(ROOT))
    from emulator.dpi import build
    need = build.missing()
    if need:
        pytest.skip(f"the C ABI tests need a C toolchain: {need}")
    folder = tmp_path_factory.mktemp("libtile_emu")
    asan = _asan_works(folder)
    build.build(folder, cflags=ASAN if asan else ())
    return Library(folder, asan)
