"""`tile-emu golden --coverage DIR` for a stream dataset: the stream classes, hazards, aliasing,
faults, TCVT cells and per-block classes of emulator.golden.coverage, tabulated.  A module of its
own because it reads the stream dataset (streams_dataset), which itself builds on coverage's
class table: kept here, the dependency runs one way."""
from __future__ import annotations

from isa import instructions as I

from .coverage import ALIASING, CLASSES, HAZARDS, raw_impossible, stream_coverage, war_impossible
from .streams import LEGAL, STREAM_ILLEGAL, stream_class
from .streams_dataset import classes_for, open_stream_dataset


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
