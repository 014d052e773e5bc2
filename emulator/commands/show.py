"""`tile-emu show FINAL.arrow`: every PE's GPRs and numeric status, every tile's descriptor and
logical elements (decoded values; `--hex` for raw encodings; `?` = undefined).  A file of many
machines prints each under a `machine K` heading; `--machine K` picks some."""
from __future__ import annotations

import numpy as np

from emulator.cli import CommandError
from emulator.commands import count
from isa.atomicio import shown
from isa.fields import NUM_PES


def add_arguments(parser):
    parser.add_argument("state", help="state file (.arrow)")
    parser.add_argument("--hex", action="store_true", help="print raw encodings instead of decoded values")
    parser.add_argument("--pe", type=int, action="append", choices=range(NUM_PES), metavar="PE",
                        help="only this PE, 0..3 (repeatable)")
    parser.add_argument("--tile", type=count, action="append", help="only this tile id (repeatable)")
    parser.add_argument("--machine", type=count, action="append", metavar="K",
                        help="only machine K of a multi-machine file (repeatable)")
    parser.add_argument("--max", type=count, default=16, metavar="N",
                        help="print at most N rows and N columns per tile (default 16; 0 = all)")


def decode_values(bits: np.ndarray, dtype: str | None, hex_: bool) -> np.ndarray:
    """Text for each element: integers decoded exactly, floats via kernels.numeric.decode when
    this build has it, raw hex otherwise (and with --hex)."""
    from isa.datatypes import datatype
    if dtype is None:
        return bits.astype(np.uint8).astype(str)
    dt = datatype(dtype)
    digits = max(1, dt.container // 4)
    if hex_:
        return hex_text(bits, digits)
    if dt.is_int:
        if not dt.signed:
            return bits.astype(np.uint64).astype(str)
        v = bits.astype(np.uint64).astype(np.int64)       # S64: the two's-complement view
        if dt.bits < 64:
            v = np.where(v >= 1 << (dt.bits - 1), v - (1 << dt.bits), v)
        return v.astype(str)
    try:
        from kernels import numeric
        vals = np.asarray(numeric.decode(bits, dt.name), dtype=np.float64)
        return np.array([np.format_float_positional(x, trim="-") if np.isfinite(x) and x == x
                         and abs(x) < 1e16 and (x == 0 or abs(x) >= 1e-6) else repr(float(x))
                         for x in vals.ravel()], dtype=object).reshape(bits.shape).astype(str)
    except Exception:  # noqa: BLE001 -- a build without the codec still shows raw bits
        return hex_text(bits, digits)


_HEX_DIGITS = np.array(list("0123456789abcdef"))


def hex_text(bits: np.ndarray, digits: int) -> np.ndarray:
    """'0x' + `digits` lowercase hex digits per element, built one digit position at a time."""
    v = np.asarray(bits).astype(np.uint64)
    out = np.full(v.shape, "0x", dtype=f"<U{digits + 2}")
    for k in range(digits - 1, -1, -1):
        out = np.strings.add(out, _HEX_DIGITS[((v >> np.uint64(4 * k)) & np.uint64(0xF)).astype(np.intp)])
    return out


def format_tile(view, hex_: bool = False, limit: int = 16) -> list[str]:
    d = view.desc
    lines = [f"  tile {view.tile}: {d.describe()}"]
    fm = d.fmap
    if fm is not None:
        params = ", ".join(f"{n}={getattr(fm, n)}" for n in fm.PARAMS)
        lines.append(f"    feature map {fm.layout}: {params}, pad={fm.pad_bits:#x}"
                     + (", transposed" if fm.transposed else ""))
    rows = d.Row if not limit else min(d.Row, limit)
    cols = d.Col if not limit else min(d.Col, limit)
    text = decode_values(view.bits[:rows, :cols], view.dtype, hex_)
    text = np.where(view.defined[:rows, :cols], text, "?")
    width = max(len(s) for s in text.ravel())
    for r in range(rows):
        if r == d.ValidRow:
            lines.append("    " + "-" * 10 + " (rows below are outside ValidRow)")
        cells = [s.rjust(width) for s in text[r]]
        if d.ValidCol < cols:
            cells.insert(d.ValidCol, "|")
        label = f"[{r}]".rjust(len(str(rows - 1)) + 2)
        lines.append(f"    {label} " + " ".join(cells) + (" ..." if cols < d.Col else ""))
    if rows < d.Row:
        lines.append(f"    ... {d.Row - rows} more row(s)")
    undefined = int((~view.defined).sum())
    if undefined:
        lines.append(f"    {undefined} undefined element(s)")
    return lines


def render(m, hex_=False, pes=None, tiles=None, limit=16) -> str:
    from kernels.numeric.flags import describe
    out = [f"machine: Local {m.config.local_bytes} B, Matrix {m.config.matrix_bytes} B per PE, "
           f"profile {m.config.profile}"]
    for p in range(m.config.num_pes):
        if pes and p not in pes:
            continue
        gprs = [f"r{i}={m.gpr(p, i):#x}" for i in range(m.config.gpr_count) if m.gpr(p, i)]
        out.append(f"PE{p}: status {describe(m.status(p))}; GPRs " + (" ".join(gprs) or "all zero"))
        for tid in m.tiles(p):
            if tiles and tid not in tiles:
                continue
            out += format_tile(m.read_tile(p, tid), hex_, limit)
    return "\n".join(out)


def run(args) -> int:
    """Machines are read and printed one at a time (emulator.batchio.StateFile): memory for one
    machine whatever the file holds, and `--machine K` reads machine K alone."""
    from emulator import Machine
    from emulator.batchio import StateFile
    from emulator.stateio import StateFileError
    try:
        f = StateFile(args.state)
        count = len(f)
        chosen = sorted(set(args.machine or range(count)))
        if chosen[-1] >= count:
            raise CommandError(f"{args.state}: no machine {chosen[-1]}; the file holds {count} "
                               f"(0..{count - 1})", 2)
        if count == 1:
            print(render(Machine.from_state(f.state(0)), args.hex, args.pe, args.tile, args.max))
            return 0
        for k in chosen:
            print(f"machine {k}:\n" + render(Machine.from_state(f.state(k)), args.hex, args.pe, args.tile, args.max))
    except StateFileError as exc:
        raise CommandError(str(exc)) from None
    except MemoryError:                   # an address-space limit below even one machine's needs
        raise CommandError(f"{shown(args.state)}: not enough memory to read it", 2) from None
    return 0
