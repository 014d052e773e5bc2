"""Berkeley TestFloat interoperability: `tile-emu golden export DIR --format testfloat`.

For the IEEE subset, writes the case lines `testfloat_ver` reads: operands, result and
exception flags in hexadecimal, one valid element per line.  TestFloat's flag byte orders the
exceptions inexact=1, underflow=2, overflow=4, infinite (divide by zero)=8, invalid=16; tile-emu
reports the same five IEEE exceptions in its own order (kernels/numeric/flags.py).  The numeric
status a golden row stores is per PE, so per-element flags are recomputed with the numeric
layer, and the export refuses a dataset whose stored results that recomputation does not
reproduce.  Tininess is detected after rounding (`testfloat_ver -tininessafter`).
"""
from __future__ import annotations

import pathlib

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kernels import numeric
from kernels.numeric import flags as NF

from .dataset import GoldenError, check_files, read_manifest
from .rows import binary_block, descriptor_at, tiles_of, unpack_rows

PREFIX = {"FP16": "f16", "FP32": "f32", "FP64": "f64"}
FUNCTION = {"TADD": "add", "TSUB": "sub", "TMUL": "mul", "TDIV": "div", "TSQRT": "sqrt", "TFMA": "mulAdd"}
ROUNDING = {"RNE": "-rnear_even", "RTZ": "-rminMag", "RTM": "-rmin", "RTP": "-rmax", "RNA": "-rnear_maxMag",
            "DEFAULT": "-rnear_even"}
# tile-emu flag bit -> TestFloat flag bit
TO_TESTFLOAT = ((NF.NX, 1), (NF.UF, 2), (NF.OF, 4), (NF.DZ, 8), (NF.NV, 16))


def testfloat_flags(flags: np.ndarray) -> np.ndarray:
    out = np.zeros(flags.shape, np.uint8)
    for ours, theirs in TO_TESTFLOAT:
        out |= np.where(flags & ours, np.uint8(theirs), np.uint8(0))
    return out


def function_name(op: str, dtype: str, dst: str | None) -> str:
    """TestFloat's name for the operation, e.g. f32_add, f16_to_f64; GoldenError outside the subset."""
    if dtype not in PREFIX:
        raise GoldenError(f"--format testfloat covers FP16, FP32 and FP64; not {dtype}")
    if op == "TCVT":
        if dst not in PREFIX or dst == dtype:
            raise GoldenError("--format testfloat covers TCVT between two different formats of FP16, FP32, FP64")
        return f"{PREFIX[dtype]}_to_{PREFIX[dst]}"
    if op not in FUNCTION:
        raise GoldenError(f"--format testfloat covers {', '.join(FUNCTION)} and TCVT; not {op}")
    return f"{PREFIX[dtype]}_{FUNCTION[op]}"


def _select(m: dict, op: str, dtype: str, dst: str | None, rmode: str | None) -> list[dict]:
    parts = [p for p in m["partitions"] if p.get("op") == op and p.get("dtype") == dtype
             and (op != "TCVT" or (p.get("dst") == dst and p.get("rmode") == (rmode or "RNE")
                                   and not p.get("sat")))]
    if not parts:
        raise GoldenError(f"the dataset has no partition for {op} {dtype}"
                          + (f" -> {dst} {rmode or 'RNE'} Sat=0" if op == "TCVT" else ""))
    return parts


def lines(folder, op: str, dtype: str, dst: str | None = None, rmode: str | None = None):
    """Yield blocks of TestFloat case lines (bytes, newline-terminated)."""
    op, dtype = op.upper(), dtype.upper() if dtype.upper() in PREFIX else dtype
    function_name(op, dtype, dst)
    if op == "TCVT" and (rmode or "RNE") not in ROUNDING:
        raise GoldenError(f"--rmode {rmode}: TestFloat has no such rounding mode")
    m = read_manifest(folder)
    wanted = {id(p) for p in _select(m, op, dtype, dst, rmode)}
    digits = {"FP16": 4, "FP32": 8, "FP64": 16}
    for part, rec in check_files(folder, m):
        if id(part) not in wanted:
            continue
        t = pq.read_table(pathlib.Path(folder) / rec["path"])
        t = t.filter(pc.equal(t.column("outcome"), "commit"))
        groups = t.column("group").to_numpy()
        for g in np.unique(groups):
            yield from _group_lines(t.filter(groups == g), op, dtype, dst, rmode, digits, rec["path"])


def _group_lines(t, op, dtype, dst, rmode, digits, path):
    n = len(t)
    counts, f = tiles_of(t.column("inputs"))
    ocounts, fo = tiles_of(t.column("outputs"))
    k = int(counts[0])
    if not (np.all(counts == k) and np.all(ocounts == ocounts[0])):
        raise GoldenError(f"{path}: rows of one group hold different tiles")
    ko = int(ocounts[0])
    entries = [descriptor_at(f, j) for j in range(k)]
    out_desc = descriptor_at(fo, 0)[2]
    pay = binary_block(f["payload"], n, k)
    dfn = binary_block(f["defined"], n, k)
    opay = binary_block(fo["payload"], n, ko)
    ins, valid = [], None
    tiles = sorted({tid for _, tid, _ in entries})
    for tid in tiles:                                  # source roles in tile-id order (t1, t2, t3)
        js = [j for j, e in enumerate(entries) if e[1] == tid]
        d = entries[js[0]][2]
        e = unpack_rows(pay[:, js], d.elements, d.container).reshape(n * len(js), d.Row, d.Col)
        de = unpack_rows(dfn[:, js], d.elements, 1).astype(bool).reshape(n * len(js), d.Row, d.Col)
        ins.append(e[:, : d.ValidRow, : d.ValidCol].reshape(-1))
        v = de[:, : d.ValidRow, : d.ValidCol].reshape(-1)
        valid = v if valid is None else valid & v
    res = unpack_rows(opay, out_desc.elements, out_desc.container).reshape(-1, out_desc.Row, out_desc.Col)
    res = res[:, : out_desc.ValidRow, : out_desc.ValidCol].reshape(-1)
    raw = np.dtype(f"u{digits[dtype] // 2}")
    ops = [x.astype(raw) for x in ins]
    if op == "TCVT":
        bits, flg = numeric.convert(ops[0], dtype, dst, rmode=rmode or "RNE")
    else:
        bits, flg = numeric.elementwise(op, dtype, *ops)
    bits = np.asarray(bits).astype(np.uint64)
    if len(bits) != len(res) or np.any(bits[valid] != res[valid]):
        raise GoldenError(f"{path}: stored results differ from this tile-emu's numeric layer; run `tile-emu verify`")
    fl = testfloat_flags(np.asarray(flg))
    w_out = digits[dst] if op == "TCVT" else digits[dtype]
    cols = [hex_columns(x[valid], digits[dtype]) for x in ins]
    cols += [hex_columns(res[valid], w_out), hex_columns(fl[valid], 2)]
    yield text_lines(cols)


_HEX = np.frombuffer(b"".join(b"%02X" % i for i in range(256)), np.uint8).reshape(256, 2)


def hex_columns(values: np.ndarray, digits: int) -> np.ndarray:
    """(n, digits) ASCII upper-case hex of unsigned values, zero-padded (array operations only)."""
    be = np.asarray(values, np.uint64).astype(">u8").view(np.uint8).reshape(-1, 8)
    chars = _HEX[be].reshape(-1, 16)
    return chars[:, 16 - digits:]


def text_lines(cols: list[np.ndarray]) -> bytes:
    """Space-separated columns, one line per row, as one bytes object."""
    n = cols[0].shape[0]
    parts = []
    for c in cols:
        parts += [c, np.full((n, 1), ord(" "), np.uint8)]
    parts[-1] = np.full((n, 1), ord("\n"), np.uint8)
    return np.ascontiguousarray(np.concatenate(parts, axis=1)).tobytes()
