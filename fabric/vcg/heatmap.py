"""Render a valid_size[slice][time] matrix: the seed's text heatmap and a PNG (zlib + struct).

Text layout (docs/vcg.md): header lines give each Slice sub-expression's digit per column and each
enabled time filter's slice class (v below, > boundary, x above: closed; TimeMajor's above
slices behave like the boundary and show >).  One row per time step: the step, its Time digits,
the cells, and per filter whether the boundary test idx < time_thres is open (v) or shut (>).
Columns are grouped by the outermost Slice sub-expression.  Wider than `max_cols` slices, the
columns are the distinct per-slice patterns (classes) with a legend of their slice ranges.
"""
from __future__ import annotations

import struct
import zlib

import numpy as np

from isa.atomicio import atomic_open

from .config import TimeFilterMode, VcgConfig
from .mapping import Mapping, dim_digits, format_terms
from .valid import EQUAL, LESS, slice_classes, time_open

# 9 colours for valid_size 0..8: dark (nothing valid) to bright (full flit).
PALETTE = np.array([
    (24, 24, 36), (52, 30, 92), (74, 46, 130), (72, 76, 152), (54, 108, 160),
    (40, 138, 150), (56, 168, 122), (132, 194, 80), (246, 226, 56)], dtype=np.uint8)
MAX_PNG_PIXELS = 1 << 26


def _class_marks(cfg: VcgConfig, slices: np.ndarray, num_slices: int) -> list[tuple[str, list[str]]]:
    out = []
    for i, tf in enumerate(cfg.time_filters):
        if not tf.enabled:
            continue
        cls = slice_classes(tf, num_slices)[slices]
        above = "x" if tf.mode is TimeFilterMode.SliceMajor else ">"
        marks = ["v" if c == LESS else ">" if c == EQUAL else above for c in cls]
        out.append((f"time filter {i} ({tf.axis})", marks))
    return out


def _ranges(ids: np.ndarray) -> str:
    """'0-62, 64' for a sorted int array."""
    parts, start = [], None
    for a, b in zip(ids, list(ids[1:]) + [None]):
        start = a if start is None else start
        if b is None or b != a + 1:
            parts.append(f"{start}" if start == a else f"{start}-{a}")
            start = None
    return ", ".join(parts)


def render_text(cfg: VcgConfig, m: Mapping, vs: np.ndarray, reduce: str = "R",
                max_cols: int = 64, max_rows: int = 512) -> str:
    num_slices, num_steps = vs.shape
    lines = [f"valid_size(s, t): {num_slices} slices x {num_steps} time steps, reduce {reduce}",
             f"  Slice  = {format_terms(m.slice)}",
             f"  Time   = {format_terms(m.time)}",
             f"  Packet = {format_terms(m.packet)}", ""]
    classes = num_slices > max_cols
    if classes:
        _, first, inverse = np.unique(vs, axis=0, return_index=True, return_inverse=True)
        order = np.argsort(first)                      # classes in order of first slice
        cols = first[order]
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        inverse = rank[np.asarray(inverse).reshape(-1)]
        head = [("slice class", [f"C{i}" for i in range(cols.size)])]
        groups = [0] * cols.size
    else:
        cols = np.arange(num_slices)
        digits = dim_digits(m.slice, cols) if m.slice else []
        head = [(str(t), [str(int(d)) for d in dg]) for t, dg in zip(m.slice, digits)]
        if not head:
            head = [("slice", [str(int(c)) for c in cols])]
        groups = list(digits[0]) if len(m.slice) > 1 else [0] * cols.size
    head += _class_marks(cfg, cols, num_slices)
    width = max(3, max(len(x) for _, marks in head for x in marks) + 1)
    label_w = max([len(k) for k, _ in head] + [24])

    def row(cells: list[str]) -> str:
        out = ""
        for j, c in enumerate(cells):
            if j and groups[j] != groups[j - 1]:
                out += " |"
            out += c.rjust(width)
        return out

    for k, marks in head:
        lines.append(f"{k.rjust(label_w)}:{row(marks)}")
    tdig = dim_digits(m.time, np.arange(num_steps)) if m.time else []
    tnames = [str(t) for t in m.time]
    lines.append(f"{'time digits'.rjust(label_w)} = ({', '.join(tnames) or '1'})")
    lines.append("-" * len(lines[-2]))
    opens = [(tf.axis, time_open(tf, num_steps)) for tf in cfg.time_filters if tf.enabled]
    for t in range(min(num_steps, max_rows)):
        if t and len(m.time) > 1 and tdig[-1][t] == 0:
            lines.append(f"{''.rjust(label_w)} {row([''] * cols.size)}".rstrip())
        label = f"t={t:3d} (" + ",".join(str(int(d[t])) for d in tdig) + ")"
        notes = " ".join(f"{a}:{'v' if o[t] else '>'}" for a, o in opens)
        lines.append(f"{label.ljust(label_w)}:{row([str(int(v)) for v in vs[cols, t]])}  {notes}".rstrip())
    if num_steps > max_rows:
        lines.append(f"... {num_steps - max_rows} more time steps (use --json for the full matrix)")
    if classes:
        lines.append("")
        for i, c in enumerate(cols):
            ids = np.flatnonzero(inverse == i)
            lines.append(f"C{i}: {ids.size} slices: {_ranges(ids)}")
    lines.append("Legend: cells = valid_size; v below (all valid), > boundary (partial), x above (closed)")
    return "\n".join(lines)


def parse_text_cells(text: str) -> np.ndarray:
    """Cells of a render_text table (no class mode), as int[T, S]: for tests and tools."""
    rows = []
    for ln in text.splitlines():
        if ln.startswith("t=") and ":" in ln:
            body = ln.split(":", 1)[1]
            cells = [tok for tok in body.replace("|", " ").split() if tok.isdigit()]
            rows.append([int(c) for c in cells])
    return np.array(rows, dtype=np.int64)


# ----------------------------------------------------------------------------- PNG

def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_bytes(vs: np.ndarray, cell: int = 8) -> bytes:
    """RGB PNG: x = slice, y = time step, each flit a cell x cell block coloured by PALETTE."""
    num_slices, num_steps = vs.shape
    if np.any(vs > 8):
        raise ValueError("valid_size values must be 0..8")
    while cell > 1 and num_slices * num_steps * cell * cell > MAX_PNG_PIXELS:
        cell //= 2
    if num_slices * num_steps * cell * cell > MAX_PNG_PIXELS:
        raise ValueError(f"heatmap of {num_slices} x {num_steps} flits exceeds {MAX_PNG_PIXELS} pixels")
    img = PALETTE[vs.T]                                       # [T, S, 3]
    img = np.repeat(np.repeat(img, cell, axis=0), cell, axis=1)
    h, w = img.shape[:2]
    raw = np.concatenate([np.zeros((h, 1), np.uint8), img.reshape(h, w * 3)], axis=1)
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)       # 8-bit RGB, no interlace
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr)
            + _chunk(b"IDAT", zlib.compress(raw.tobytes(), 6)) + _chunk(b"IEND", b""))


def write_png(path, vs: np.ndarray, cell: int = 8) -> None:
    data = png_bytes(vs, cell)
    with atomic_open(path, "wb") as f:
        f.write(data)
