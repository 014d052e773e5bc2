"""tile-emu inside C, C++ and SystemVerilog testbenches (docs/cosim-c.md).

    tile-emu cosim build --out DIR      # DIR/libtile_emu.so, DIR/tile_emu.h, DIR/tile_emu_pkg.sv

`tile_emu.h` declares the C ABI, `capi.py` implements it, `build.py` compiles the library with
cffi's embedding mode (the interpreter starts on the first call), and `tile_emu_pkg.sv` is the
SystemVerilog DPI-C package over it.  The header and the package are package data.
"""
from __future__ import annotations

import pathlib

HERE = pathlib.Path(__file__).resolve().parent
HEADER = HERE / "tile_emu.h"
SV_PACKAGE = HERE / "tile_emu_pkg.sv"
