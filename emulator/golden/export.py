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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from isa.atomicio import shown
from isa.instructions import INSTRUCTIONS
from isa.legality import resolve
from kernels import numeric
from kernels.numeric import flags as NF
from kernels.numeric.profiles import DEFAULT_PROFILE

from .dataset import GoldenError, open_dataset
from .replay import rebuild_group
from .rows import binary_block, descriptor_at, tiles_of, unpack_rows

PREFIX = {"FP16": "f16", "FP32": "f32", "FP64": "f64"}
FUNCTION = {r.mnemonic: r.testfloat for r in INSTRUCTIONS if r.testfloat}    # the table's TestFloat column
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


def _select(ds, op: str, dtype: str, dst: str | None, rmode: str | None) -> set:
    parts = {p for p in ds.partitions if p.op == op and p.dtype == dtype
             and (op != "TCVT" or (p.dst == dst and p.rmode == (rmode or "RNE") and not p.sat))}
    if not parts:
        raise GoldenError(f"the dataset has no partition for {op} {dtype}"
                          + (f" -> {dst} {rmode or 'RNE'} Sat=0" if op == "TCVT" else ""))
    return parts


def lines(folder, op: str, dtype: str, dst: str | None = None, rmode: str | None = None):
    """Yield blocks of TestFloat case lines (bytes, newline-terminated).  The dataset is opened
    through open_dataset, so everything `verify` checks without a replay is checked before the
    first line; the results are then recomputed (`_group_lines`)."""
    op, dtype = op.upper(), dtype.upper() if dtype.upper() in PREFIX else dtype
    function_name(op, dtype, dst)
    if op == "TCVT" and (rmode or "RNE") not in ROUNDING:
        raise GoldenError(f"--rmode {rmode}: TestFloat has no such rounding mode")
    ds = open_dataset(folder)
    wanted = _select(ds, op, dtype, dst, rmode)
    for f in ds.files:
        if f.partition not in wanted:
            continue
        yield from table_lines(ds.read(f), ds, op, dtype, dst, rmode, f.path)


def table_lines(t: pa.Table, ds, op: str, dtype: str, dst: str | None, rmode: str | None, path: str):
    """The case lines of rows `t` of one partition (a data file, or a chunk `golden --format
    testfloat --out -` has just generated): its committed cases' groups rebuilt and recomputed.
    `ds` gives the replay's machine (`config(local_bytes, matrix_bytes)`) and `profile`."""
    digits = {"FP16": 4, "FP32": 8, "FP64": 16}
    t = t.filter(pc.equal(t.column("outcome"), "commit"))
    groups = t.column("group").to_numpy()
    for g in np.unique(groups):
        rows = t.filter(pa.array(groups == g))
        group = rebuild_group(rows, ds, path)
        if group is not None:
            yield from _group_lines(rows, group, ds, op, dtype, dst, rmode, digits, path)
            continue
        for i in range(len(rows)):                # rows verify replays one at a time: so does export
            one = rows.slice(i, 1)
            g1 = rebuild_group(one, ds, path)
            yield from _group_lines(one, g1, ds, op, dtype, dst, rmode, digits, path)


def _group_lines(t, g, ds, op, dtype, dst, rmode, digits, path):
    n = len(t)
    case = t.column("case")[0].as_py()

    def refuse(why: str):
        return GoldenError(f"{shown(path)}: case {case}: {why}; run `tile-emu verify`")

    if g is None:
        raise refuse("a malformed row")
    rb = resolve(g.block)              # open_dataset resolved every committed case's block
    held = {}
    for spec in g.tiles:               # the machine may hold more tiles than the block reads
        held.setdefault(spec.tile, []).append(spec)
    by_role = []
    for binding in rb.sources:         # the operands in B.IOT order (left, right, ...)
        spec = next((s for s in held.get(binding.tile, ()) if set(rb.pes) <= set(s.pes)), None)
        if spec is None or spec.desc.dtype is None or spec.desc.datatype.name != dtype:
            raise refuse(f"source tile {binding.tile} is not one {dtype} tile on every selected PE")
        pick = [spec.pes.index(pe) for pe in rb.pes]
        by_role.append((spec.desc, spec.elems[:, pick], spec.defined[:, pick]))
    if len({(d.ValidRow, d.ValidCol) for d, _, _ in by_role}) > 1:
        raise refuse("source tiles of different valid shapes")     # no element-wise case lines
    ins, valid = [], None
    for d, elems, defined in by_role:
        e = elems.reshape(-1, d.Row, d.Col)
        de = defined.reshape(-1, d.Row, d.Col)
        ins.append(e[:, : d.ValidRow, : d.ValidCol].reshape(-1))
        v = de[:, : d.ValidRow, : d.ValidCol].reshape(-1)
        valid = v if valid is None else valid & v
    if not valid.all():                 # a committed case reads only defined elements
        raise refuse("a committed case reads an undefined source element")
    ocounts, fo = tiles_of(t.column("outputs"))
    k = len(rb.pes)
    try:
        out_desc = descriptor_at(fo, 0)[2] if k and np.all(ocounts == k) else None
    except ValueError:
        out_desc = None
    opay = None if out_desc is None else binary_block(fo["payload"], n, k)
    if out_desc is None or opay is None or opay.shape[2] != out_desc.payload_nbytes \
            or out_desc.dtype is None or out_desc.datatype.name != (dst if op == "TCVT" else dtype):
        raise refuse("the outputs are not one result tile per selected PE")
    res = unpack_rows(opay, out_desc.elements, out_desc.container).reshape(-1, out_desc.Row, out_desc.Col)
    res = res[:, : out_desc.ValidRow, : out_desc.ValidCol].reshape(-1)
    raw = np.dtype(f"u{digits[dtype] // 2}")
    ops = [x.astype(raw) for x in ins]
    # TestFloat checks IEEE 754 results: recompute under the default profile (ieee), whatever
    # the dataset's; stored results of another profile that differ are refused below.
    if op == "TCVT":
        bits, flg = numeric.convert(ops[0], dtype, dst, rmode=rmode or "RNE", profile=DEFAULT_PROFILE)
    else:
        bits, flg = numeric.elementwise(op, dtype, *ops, profile=DEFAULT_PROFILE)
    bits = np.asarray(bits).astype(np.uint64)
    if len(bits) != len(res) or np.any(bits[valid] != res[valid]):
        if ds.profile.name != DEFAULT_PROFILE:
            raise GoldenError(f"{shown(path)}: case {case}: the stored results follow profile {ds.profile.name}, "
                              f"which differs from IEEE 754 ({DEFAULT_PROFILE}) here; TestFloat checks IEEE 754")
        raise refuse("stored results differ from this tile-emu's numeric layer")
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
