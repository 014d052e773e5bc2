"""A golden dataset made with `tile-emu golden` and its hex export (docs/golden-format.md, "Hex
export"), for the tests that read exports: the single-block and stream exports of
tests/emulator/test_hexport_fields.py and tests/rtl/test_plain_tb.py."""
from __future__ import annotations

import pathlib

from emulator.cli import main


def golden_hex(root: pathlib.Path, name: str, hex_name: str, *args: str) -> None:
    """`tile-emu golden ARGS --quiet --out ROOT/NAME`, then `golden export ROOT/NAME --format hex
    --out ROOT/HEX_NAME`; each exits 0."""
    assert main(["golden", *args, "--quiet", "--out", str(root / name)]) == 0
    assert main(["golden", "export", str(root / name), "--format", "hex", "--out", str(root / hex_name)]) == 0
