"""`tile-emu show FINAL.arrow`: every PE's GPRs and numeric status, every tile's descriptor and
logical elements (decoded values; `--hex` for raw encodings; `?` = undefined).  A file of many
machines prints a summary line and its first machines (`SHOWN`), each under a `machine K`
heading; `--machine K` picks others, `--machine all` prints every one.

The text is made a block of machines at a time (emulator.batchscan), with the tiles of one
descriptor rendered together as arrays: values are formatted once per distinct encoding, rows
and cells are joined by array operations, and nothing runs per element in Python."""
from __future__ import annotations

import sys

import numpy as np

from emulator.cli import CommandError
from emulator.commands import count
from isa.atomicio import shown
from isa.datatypes import datatype
from isa.fields import NUM_PES
from kernels.numeric.flags import describe

SHOWN = 4          # machines a multi-machine file shows without --machine
S = np.strings


def machines(text: str):
    """argparse type of --machine: a machine number, or `all`."""
    return "all" if text == "all" else count(text)


def add_arguments(parser):
    parser.add_argument("state", help="state file (.arrow)")
    parser.add_argument("--hex", action="store_true", help="print raw encodings instead of decoded values")
    parser.add_argument("--pe", type=int, action="append", choices=range(NUM_PES), metavar="PE",
                        help="only this PE, 0..3 (repeatable)")
    parser.add_argument("--tile", type=count, action="append", help="only this tile id (repeatable)")
    parser.add_argument("--machine", type=machines, action="append", metavar="K",
                        help=f"only machine K of a multi-machine file (repeatable), or `all`; without it a "
                             f"multi-machine file shows a summary and its first {SHOWN} machines")
    parser.add_argument("--max", type=count, default=16, metavar="N",
                        help="print at most N rows and N columns per tile (default 16; 0 = all rows and "
                             "columns; it does not select machines)")


# ---------------------------------------------------------------- element text

def _arrow_text(values: np.ndarray, width: int) -> np.ndarray:
    """Arrow's cast to string of a 1-D numeric array, as a NumPy bytes array (the strings padded
    with NUL to `width` in Arrow and read in place: no Python object per element)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    s = pc.ascii_rpad(pc.cast(pa.array(values), pa.string()), width=width, padding="\x00")
    return np.frombuffer(s.buffers()[2], f"S{width}", len(values), s.offset * width)


_EXPONENT = np.array([f"{k:02d}".encode() for k in range(400)])


def float_text(x: np.ndarray) -> np.ndarray:
    """Each float64 as `np.format_float_positional(x, trim="-")` when it is 0 or finite with
    1e-6 <= |x| < 1e16, else as `repr(float(x))`, as a bytes array.  The shortest round-trip
    digits come from Arrow's cast (double-conversion: shortest, then closest, as Python's repr
    and NumPy's Dragon4 choose them); their layout (positional or d.ddde+XX) is made here."""
    flat = np.ascontiguousarray(np.asarray(x, np.float64).ravel())
    s = _arrow_text(flat, 32)                 # the longest shortest form, '-2.2250738585072014e-308', is 24
    neg = S.startswith(s, b"-")
    mant, _, ex = S.partition(np.where(neg, S.slice(s, 1, None), s), b"e")
    v = ex.astype("S4").view(np.uint8).reshape(-1, 4).astype(np.int64)
    e = np.zeros(len(flat), np.int64)
    for j in (1, 2, 3):                       # the exponent's digits after its sign
        e = np.where(v[:, j] >= 48, e * 10 + v[:, j] - 48, e)
    e = np.where(v[:, 0] == 45, -e, e)
    whole, _, frac = S.partition(mant, b".")
    digits = S.add(whole, frac)
    significant = S.lstrip(digits, b"0")
    point = S.str_len(whole) + e - (S.str_len(digits) - S.str_len(significant))   # digits before the point
    digits = S.rstrip(significant, b"0")
    n = S.str_len(digits)
    cut = np.clip(point, 0, None)
    positional = np.where(point <= 0, S.add(S.add(b"0.", S.multiply(b"0", np.maximum(-point, 0))), digits),
                          np.where(point >= n, S.add(digits, S.multiply(b"0", np.maximum(point - n, 0))),
                                   S.add(S.add(S.slice(digits, 0, cut), b"."), S.slice(digits, cut, None))))
    positional = np.where(n == 0, b"0", positional)
    e10 = point - 1
    scientific = S.add(S.slice(digits, 0, 1), np.where(n > 1, S.add(b".", S.slice(digits, 1, None)), b""))
    scientific = S.add(S.add(scientific, np.where(e10 < 0, b"e-", b"e+")), _EXPONENT[np.minimum(np.abs(e10), 399)])
    a = np.abs(flat)
    near = np.isfinite(flat) & ((flat == 0) | ((a >= 1e-6) & (a < 1e16)))
    out = S.add(np.where(neg, b"-", b""), np.where(near, positional, scientific))
    out = np.where(np.isnan(flat), b"nan", np.where(np.isinf(flat), np.where(flat > 0, b"inf", b"-inf"), out))
    return out.reshape(np.shape(x))


_HEX_DIGITS = np.array(list(b"0123456789abcdef"), np.uint8)


def _hex(v: np.ndarray, digits: int) -> np.ndarray:
    v = np.asarray(v).astype(np.uint64).ravel()
    chars = np.empty((len(v), digits + 2), np.uint8)
    chars[:, 0], chars[:, 1] = ord("0"), ord("x")
    for k in range(digits):
        chars[:, 2 + k] = _HEX_DIGITS[((v >> np.uint64(4 * (digits - 1 - k))) & np.uint64(0xF)).astype(np.intp)]
    return chars.view(f"S{digits + 2}").ravel()


def _distinct(bits: np.ndarray):
    """(the distinct values of `bits` as uint64, the index of each element's value): a hash
    table (Arrow's dictionary encoding), not a sort."""
    import pyarrow as pa
    import pyarrow.compute as pc
    enc = pc.dictionary_encode(pa.array(np.ascontiguousarray(bits, np.uint64).ravel()))
    return enc.dictionary.to_numpy(), enc.indices.to_numpy()


def _texts(bits: np.ndarray, dtype: str | None, hex_: bool) -> np.ndarray:
    """The text of each element (a bytes array of bits' shape), formatted once per distinct
    encoding: integers exactly, floats by kernels.numeric.decode then `float_text` (raw hex
    when this build has no codec), raw hex with --hex."""
    bits = np.asarray(bits)
    if bits.size == 0:
        return np.zeros(bits.shape, "S1")
    if dtype is None:
        return np.array([b"0", b"1"])[bits.astype(np.uint8) & 1]
    dt = datatype(dtype)
    digits = max(1, dt.container // 4)
    values, inverse = _distinct(bits)
    if hex_:
        text = _hex(values, digits)
    elif dt.is_int:
        v = values
        if dt.signed:
            v = v.astype(np.int64)                    # S64: the two's-complement view
            if dt.bits < 64:
                v = np.where(v >= 1 << (dt.bits - 1), v - (1 << dt.bits), v)
        text = _arrow_text(v, 24)
    else:
        try:
            from kernels import numeric
            text = float_text(np.asarray(numeric.decode(values.astype(bits.dtype), dt.name), dtype=np.float64))
        except Exception:  # noqa: BLE001 -- a build without the codec still shows raw bits
            text = _hex(values, digits)
    return text[inverse].reshape(bits.shape)


def decode_values(bits: np.ndarray, dtype: str | None, hex_: bool) -> np.ndarray:
    """Text for each element: integers decoded exactly, floats via kernels.numeric.decode when
    this build has it, raw hex otherwise (and with --hex)."""
    return _texts(bits, dtype, hex_).astype(str)


def hex_text(bits: np.ndarray, digits: int) -> np.ndarray:
    """'0x' + `digits` lowercase hex digits per element."""
    return _hex(bits, digits).astype(str).reshape(np.shape(bits))


# ---------------------------------------------------------------- tiles, a descriptor at a time

ELEMENTS_AT_ONCE = 1 << 20       # logical elements of the tiles rendered in one array
SPACE = 32


def _chars(text: np.ndarray) -> np.ndarray:
    """A bytes array as (..., itemsize) uint8 (NUL padded)."""
    return np.ascontiguousarray(text).view(np.uint8).reshape(text.shape + (text.dtype.itemsize,))


def _const(line: bytes, shape) -> np.ndarray:
    return np.broadcast_to(np.frombuffer(line, np.uint8), tuple(shape) + (len(line),))


def _cells(text: np.ndarray, valid_col: int) -> np.ndarray:
    """(n, rows, cols) element texts of tiles whose widest text has one width w -> (n, rows,
    bytes) uint8: each cell right-justified to w, cells joined by a space, a `|` cell before
    column `valid_col` (when it is a shown column)."""
    n, nr, nc = text.shape
    w = int(S.str_len(text).max())
    field = _chars(S.rjust(text, w).astype(f"S{w}"))
    spaced = np.concatenate([field, np.full((n, nr, nc, 1), SPACE, np.uint8)], axis=-1).reshape(n, nr, -1)
    if valid_col < nc:
        at = valid_col * (w + 1)
        spaced = np.concatenate([spaced[..., :at], _const(b"| ", (n, nr)), spaced[..., at:]], axis=-1)
    return spaced[..., :-1]


def _tile_texts(block, rows: np.ndarray, hex_: bool, limit: int) -> list:
    """The text of each tile of `rows` (one descriptor): what `show` prints for it, without the
    final newline (bytes, one per row)."""
    d = block.descs[int(block.desc[rows[0]])]
    nr = d.Row if not limit else min(d.Row, limit)
    nc = d.Col if not limit else min(d.Col, limit)
    suffix = f": {d.describe()}\n".encode()
    fm = d.fmap
    if fm is not None:
        params = ", ".join(f"{n}={getattr(fm, n)}" for n in fm.PARAMS)
        suffix += (f"    feature map {fm.layout}: {params}, pad={fm.pad_bits:#x}"
                   + (", transposed" if fm.transposed else "") + "\n").encode()
    labels = np.array([list(("    " + f"[{r}]".rjust(len(str(nr - 1)) + 2) + " ").encode()) for r in range(nr)],
                      np.uint8)
    tail = b" ..." if nc < d.Col else b""
    separator = b"    " + b"-" * 10 + b" (rows below are outside ValidRow)\n"
    more = f"\n    ... {d.Row - nr} more row(s)".encode() if nr < d.Row else b""
    dtype = None if d.dtype is None else d.datatype.name
    out: list = [None] * len(rows)
    step = max(1, ELEMENTS_AT_ONCE // max(1, d.Row * d.Col))
    for at in range(0, len(rows), step):
        part = rows[at:at + step]
        bits, defined = block.logical(part)
        text = np.where(defined[:, :nr, :nc], _texts(bits[:, :nr, :nc], dtype, hex_), b"?")
        width = S.str_len(text).reshape(len(part), -1).max(axis=1)
        undefined = (~defined).reshape(len(part), -1).sum(axis=1)
        heads = S.add(b"  tile ", block.tile[part].astype("S10")).tolist()
        notes = np.where(undefined > 0, S.add(S.add(b"\n    ", undefined.astype("S20")), b" undefined element(s)"),
                         b"").tolist()
        for w in np.unique(width):
            sub = np.flatnonzero(width == w)
            m = len(sub)
            lines = np.concatenate([np.broadcast_to(labels, (m, nr, labels.shape[1])), _cells(text[sub], d.ValidCol),
                                    _const(tail + b"\n", (m, nr))], axis=-1)
            if d.ValidRow < nr:                          # the line before row ValidRow
                cut = d.ValidRow * lines.shape[-1]
                flat = lines.reshape(m, -1)
                lines = np.concatenate([flat[:, :cut], _const(separator, (m,)), flat[:, cut:]], axis=-1)
            body = np.ascontiguousarray(lines.reshape(m, -1)[:, :-1])    # without the last newline
            body = body.view(f"S{body.shape[1]}").ravel().tolist()
            for i, b in zip(sub.tolist(), body):
                out[at + i] = heads[i] + suffix + b + more + notes[i]
    return out


def render_block(block, hex_=False, pes=None, tiles=None, limit=16, headings=False) -> bytes:
    """The text of every machine of a validated block (emulator.batchscan.Block)."""
    keep = np.ones(len(block), bool)
    if pes:
        keep &= np.isin(block.pe, pes)
    if tiles:
        keep &= np.isin(block.tile, tiles)
    text = np.empty(len(block), object)
    for g in np.unique(block.desc[keep]):
        rows = np.flatnonzero(keep & (block.desc == g))
        text[rows] = _tile_texts(block, rows, hex_, limit)
    c = block.config
    head = f"machine: Local {c.local_bytes} B, Matrix {c.matrix_bytes} B per PE, profile {c.profile}".encode()
    starts = np.searchsorted(block.machine, np.arange(block.first, block.stop + 1))
    lines: dict = {}                  # PE lines by entry (equal entry texts share one parsed list)
    out = []
    for k in range(block.first, block.stop):
        if headings:
            out.append(f"machine {k}:".encode())
        out.append(head)
        lo, hi = starts[k - block.first], starts[k - block.first + 1]
        pe = block.pe[lo:hi]
        entry = block.pes[k - block.first]
        if id(entry) not in lines:
            gprs, status = block.gprs(k), block.status(k)
            regs = [" ".join(f"r{i}={int(v):#x}" for i, v in enumerate(gprs[p]) if v) for p in range(NUM_PES)]
            lines[id(entry)] = [f"PE{p}: status {describe(status[p])}; GPRs {regs[p] or 'all zero'}".encode()
                                for p in range(NUM_PES)]
        for p in range(NUM_PES):
            if pes and p not in pes:
                continue
            out.append(lines[id(entry)][p])
            a, b = lo + np.searchsorted(pe, p), lo + np.searchsorted(pe, p, "right")
            out += [t for t in text[a:b] if t is not None]
    return b"\n".join(out) + b"\n" if out else b""


# ---------------------------------------------------------------- the command

def _summary(f, chosen) -> str:
    n = len(f)
    per = np.diff(f._bounds) if getattr(f, "_bounds", None) is not None else np.zeros(0)
    tiles = f"{int(per.sum())} tile(s), {int(per.min())}..{int(per.max())} per machine" if len(per) else "no tiles"
    shown_ = f"machines {chosen[0]}..{chosen[-1]}" if len(chosen) > 1 else f"machine {chosen[0]}"
    return (f"{shown(f.path)}: {n} machines, {tiles}; showing {shown_} (--machine K for machine K, "
            f"--machine all for all {n})")


def _write(out, data: bytes) -> None:
    """Bytes to a text stream: through its binary buffer when it has one (the console, a file)."""
    buf = getattr(out, "buffer", None)
    if buf is None:
        out.write(data.decode("ascii"))
    else:
        buf.write(data)
        buf.flush()


def run(args) -> int:
    """Blocks of machines are read, checked and printed one at a time (emulator.batchscan):
    memory for one block whatever the file holds; `--machine K` reads machine K alone."""
    from emulator.batchio import StateFile
    from emulator.batchscan import blocks
    from emulator.stateio import NotEnoughMemory, StateFileError
    out = sys.stdout
    try:
        f = StateFile(args.state)
        n = len(f)
        asked = args.machine or []
        if "all" in asked:
            chosen = None
        elif asked:
            chosen = sorted(set(asked))
            if chosen[-1] >= n:
                raise CommandError(f"{args.state}: no machine {chosen[-1]}; the file holds {n} (0..{n - 1})", 2)
        else:
            chosen = None if n <= SHOWN else list(range(SHOWN))
            if chosen is not None:
                print(_summary(f, chosen))
        out.flush()
        for block in blocks(f, chosen):
            _write(out, render_block(block, args.hex, args.pe, args.tile, args.max, headings=n > 1))
    except NotEnoughMemory:
        raise CommandError(f"{shown(args.state)}: not enough memory to read it", 2) from None
    except StateFileError as exc:
        raise CommandError(str(exc)) from None
    except MemoryError:                   # an address-space limit below even one block's needs
        raise CommandError(f"{shown(args.state)}: not enough memory to read it", 2) from None
    return 0

