"""`tile-emu golden --coverage DIR` for a stream dataset: the stream classes, hazards, aliasing,
faults, TCVT cells and per-block classes of emulator.golden.coverage, counted and tabulated.  A module of its
own because it reads the stream dataset (streams_dataset), which itself builds on coverage's
class table: kept here, the dependency runs one way."""
from __future__ import annotations

import numpy as np

from isa import instructions as I

from .coverage import (ALIASING, CLASSES, HAZARDS, raw_impossible, stream_aliasing, stream_hazards,
                       streams_block_classes, war_impossible)
from .streams import LEGAL, STREAM_ILLEGAL, stream_class
from .streams_dataset import classes_for, open_stream_dataset, parse_layout


def stream_coverage(ds) -> dict:
    """The stream classes of an opened stream dataset (streams_dataset.open_stream_dataset):
    counts per stream class and partition, per (hazard kind, instruction pair), per aliasing
    kind and instruction, per (fault reason, position), per (value class, instruction) and
    per (single-block shape class, instruction) of every executed block."""
    import pyarrow.compute as pc
    from isa import encoding
    cov = {"streams": {}, "hazards": {}, "aliasing": {}, "faults": {}, "values": {}, "shapes": {}, "tcvt": {}}
    for part, chunk, rec in ds.files:
        t = ds.read(part, chunk, rec)
        for name, k in rec["classes"].items():
            cov["streams"][(name, part.shape)] = cov["streams"].get((name, part.shape), 0) + k
        stream = t.column("stream").combine_chunks()
        uniq = pc.unique(stream)
        index = pc.index_in(stream, uniq).to_numpy()
        first = {int(u): int(np.flatnonzero(index == u)[0]) for u in range(len(uniq))}
        weight = np.bincount(index, minlength=len(uniq))
        for u, row in first.items():
            blocks = encoding.decode(uniq[u].as_py())
            executed = int(t.column("executed")[row].as_py())
            names = [I.by_carrier(b.bstart.Mode, b.bstart.Function) for b in blocks]
            w = int(weight[u])
            for kind, j, i in stream_hazards(blocks, executed):
                key = (kind, names[j].mnemonic, names[i].mnemonic)
                cov["hazards"][key] = cov["hazards"].get(key, 0) + w
            initial = {(p, e["tile"]): "initial" for e in parse_layout(t.column("layout")[row].as_py()).initial
                       for p in e["pes"]}
            for i, kinds in enumerate(stream_aliasing(blocks, executed, initial)):
                for k in kinds:
                    key = (k, names[i].mnemonic)
                    cov["aliasing"][key] = cov["aliasing"].get(key, 0) + w
            if t.column("outcome")[row].as_py() == "fault":
                key = (t.column("reason")[row].as_py(), executed)
                cov["faults"][key] = cov["faults"].get(key, 0) + w
            vc = t.column("value_class")[row].as_py()
            for i, b in enumerate(blocks[:executed]):
                mn = names[i].mnemonic
                cov["values"][(vc, mn)] = cov["values"].get((vc, mn), 0) + w
                if names[i].schema == I.CONVERT:
                    d = b.datr
                    key = (b.bstart.DataType, b.bstart.DataType if d is None or d.DataType is None else d.DataType,
                           0 if d is None or d.RMode is None else d.RMode, bool(d is not None and d.Sat))
                    cov["tcvt"][key] = cov["tcvt"].get(key, 0) + w
                for cls in streams_block_classes(b):
                    cov["shapes"][(cls, mn)] = cov["shapes"].get((cls, mn), 0) + w
    return cov


def stream_coverage_table(folder) -> str:
    """`tile-emu golden --coverage DIR` for a stream dataset (opened through the checked open)."""
    ds = open_stream_dataset(folder)
    cov = stream_coverage(ds)
    shapes = [p.shape for p in ds.partitions]
    lines = ["stream classes (streams)          " + "  ".join(s.rjust(8) for s in shapes)]
    for name in [LEGAL] + [stream_class(r) for r in STREAM_ILLEGAL]:
        cells = []
        for s in shapes:
            cells.append(("n/a" if name in classes_for(s)[1] else f"{cov['streams'].get((name, s), 0):,}").rjust(8))
        lines.append(name.ljust(34) + "  ".join(cells))
    ops = [i.mnemonic for i in I.INSTRUCTIONS]
    for kind in HAZARDS:
        seen = sum(1 for (k, _, _) in cov["hazards"] if k == kind)
        lines.append(f"\n{kind} hazards (streams) by producer -> consumer; {seen} instruction pairs seen")
        missing, impossible = [], 0
        for a in I.INSTRUCTIONS:
            cells = []
            for b in I.INSTRUCTIONS:
                why = raw_impossible(a, b) if kind == "RAW" else war_impossible(a) if kind == "WAR" else None
                n = cov["hazards"].get((kind, a.mnemonic, b.mnemonic), 0)
                if why:
                    impossible += 1
                    continue
                if n:
                    cells.append(f"{b.mnemonic}={n:,}")
                else:
                    missing.append(f"{a.mnemonic}->{b.mnemonic}")
            lines.append(f"  {a.mnemonic:9s} " + (" ".join(cells) if cells else "-"))
        reasons = sorted({w for a in I.INSTRUCTIONS for b in I.INSTRUCTIONS
                          for w in [raw_impossible(a, b) if kind == "RAW" else war_impossible(a) if kind == "WAR"
                                    else None] if w})
        lines.append(f"  impossible: {impossible} pair(s)" + (f" ({'; '.join(reasons)})" if reasons else ""))
        lines.append(f"  possible without streams: {len(missing)}" + (f" ({', '.join(missing[:12])}"
                     + (", ..." if len(missing) > 12 else "") + ")" if missing else ""))
    lines.append("\naliasing (blocks)  " + " ".join(a.rjust(16) for a in ALIASING))
    for op in ops:
        lines.append(f"  {op:16s} " + " ".join(f"{cov['aliasing'].get((a, op), 0):,}".rjust(16) for a in ALIASING))
    lines.append("\nfaults (streams) by reason x position (block index)")
    K = ds.params.blocks
    for r in STREAM_ILLEGAL:
        counts = [cov["faults"].get((r, i), 0) for i in range(K)]
        na = all(stream_class(r) in classes_for(s)[1] for s in shapes)
        lines.append(f"  {r:22s} " + ("n/a (no shape class of this dataset can carry it)" if na else
                                      " ".join(f"{c:,}".rjust(5) for c in counts)))
    from isa.datatypes import DATATYPES
    from isa.fields import RMODES
    pairs = {(a, b) for a, b, _, _ in cov["tcvt"]}
    lines.append(f"\nTCVT (executed blocks): {len(pairs)} of {len(DATATYPES) ** 2} (source, destination) DataType "
                 f"pairs, {len(cov['tcvt'])} of {len(DATATYPES) ** 2 * len(RMODES) * 2} (pair, RMode, Sat) cells; "
                 f"RModes seen: {', '.join(RMODES[m] for m in sorted({m for _, _, m, _ in cov['tcvt']}))}")
    lines.append("\nvalue classes of the initial tiles x instruction (executed blocks)")
    for vc in sorted({v for v, _ in cov["values"]}):
        lines.append(f"  {vc:16s} " + " ".join(f"{op}={cov['values'][(vc, op)]:,}" for op in ops
                                               if (vc, op) in cov["values"]))
    lines.append("\nshape classes x instruction (executed blocks)")
    shape_names = [c.name for c in CLASSES if c.kind == "shape"]
    for sc in shape_names:
        row = [f"{op}={cov['shapes'][(sc, op)]:,}" for op in ops if (sc, op) in cov["shapes"]]
        lines.append(f"  {sc:20s} " + (" ".join(row) if row else "n/a (streams keep Row = ValidRow and omit capacities)"
                                       if sc in ("valid_row_lt_row", "capacity_limit") else " ".join(row) or "0"))
    return "\n".join(lines)
