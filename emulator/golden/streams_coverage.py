"""`tile-emu golden --coverage DIR` for a stream dataset: the stream classes, hazards, aliasing,
faults, TCVT cells and per-block classes of emulator.golden.coverage, counted from the decoded
streams and tabulated.  A module of its own because it reads the stream dataset
(streams_dataset), which itself builds on coverage's class table: kept here, the dependency
runs one way.

What the generator aims at (docs/golden-format.md, "Stream goldens") is also given as
coverpoints and crosses whose bins carry a count and a status -- `covered`, `hole` (a stream
can have it and none has) or `n/a` (no stream of the dataset's constraint can) --
(`stream_items`): the instructions committed, the fault positions, and the crosses
instruction x hazard (RAW, WAR, WAW between consecutive and distant blocks), instruction x
aliasing and fault reason x position.
"""
from __future__ import annotations

import numpy as np

from isa import instructions as I
from isa.datatypes import datatype

from .coverage import ALIASING, CLASSES, HAZARDS, bin_record, stream_aliasing, stream_hazards, streams_block_classes
from .streams import (DISTANCES, LEGAL, STREAM_ILLEGAL, aliasing_impossible, distance, later_impossible, room,
                      stream_class)
from .streams_dataset import classes_for, layouts_of, open_stream_dataset, parse_layout

def hazard_impossible(kind: str, producer: I.Instruction, consumer: I.Instruction) -> str | None:
    """Why no stream has a `kind` hazard from a block of `producer` to a later block of
    `consumer` (None: a stream can): TIMG2COL reads only a feature map, which no block writes
    (results carry no feature-map descriptor); a TIMG2COL result lives in the Matrix store,
    which only TIMG2COL reads; a TCMP predicate is read only as TSEL's mask."""
    if kind != "RAW":
        return None
    if consumer.schema == I.IMG2COL:
        return "TIMG2COL reads only a feature map, which no block writes"
    if producer.location != "Local":
        return f"{producer.mnemonic} writes the Matrix store, which only TIMG2COL reads (a feature map)"
    if producer.dest_kind == "predicate" and consumer.schema != I.SELECT:
        return "a predicate is read only as TSEL's mask"
    return None


def _add(d: dict, key, w: int) -> None:
    d[key] = d.get(key, 0) + w


def _min_capacity(b, op: I.Instruction) -> int | None:
    """The smallest capacity holding the block's destination at Row = ValidRow (None: no B.DIM)."""
    dim = b.dim
    if dim is None or dim.LB0 is None:
        return None
    vrow = dim.LB1 if dim.LB1 is not None else 1
    col = dim.LB2 if dim.LB2 is not None else dim.LB0
    if op.dest_kind == "predicate":
        bits = 1
    else:
        d = b.datr
        code = d.DataType if op.schema == I.CONVERT and d is not None and d.DataType is not None else b.bstart.DataType
        bits = datatype(code).container
    return (vrow * col * bits + 7) // 8


def stream_coverage(ds) -> dict:
    """The stream classes of an opened stream dataset (streams_dataset.open_stream_dataset):
    counts per stream class and partition, per (hazard kind, producer, consumer), per (hazard
    kind, distance, the later block's instruction), per aliasing kind and instruction, per
    (fault reason, position), per committed instruction, per (value class, instruction) and
    per (single-block shape class, instruction) of every executed block -- all recomputed from
    the decoded streams and their layouts, never from the generator's bookkeeping."""
    import pyarrow.compute as pc
    from isa import encoding
    cov = {"streams": {}, "hazards": {}, "hazard_x_instruction": {}, "aliasing": {}, "faults": {}, "commits": {},
           "values": {}, "shapes": {}, "tcvt": {}}
    for part, chunk, rec in ds.files:
        t = ds.read(part, chunk, rec)
        for name, k in rec["classes"].items():
            _add(cov["streams"], (name, part.shape), k)
        stream = t.column("stream").combine_chunks()
        texts, lay_index = layouts_of(t)
        # rows of one stream and one layout run one program on other values: counted once, weighted
        s_index = pc.index_in(stream, pc.unique(stream)).to_numpy().astype(np.int64)
        _, first, index = np.unique(s_index * len(texts) + lay_index, return_index=True, return_inverse=True)
        weight = np.bincount(index.reshape(-1), minlength=len(first))
        executed_col = t.column("executed").to_numpy()
        outcome, reason, vclass = (t.column(c).to_pylist() for c in ("outcome", "reason", "value_class"))
        for u, row in enumerate(first.tolist()):
            blocks = encoding.decode(stream[row].as_py())
            executed = int(executed_col[row])
            names = [I.by_carrier(b.bstart.Mode, b.bstart.Function) for b in blocks]
            w = int(weight[u])
            for kind, j, i in stream_hazards(blocks, executed):
                _add(cov["hazards"], (kind, names[j].mnemonic, names[i].mnemonic), w)
                _add(cov["hazard_x_instruction"], (kind, distance(j, i), names[i].mnemonic), w)
            lay = parse_layout(texts[lay_index[row]])
            initial = {(p, e["tile"]): "initial" for e in lay.initial for p in e["pes"]}
            for i, kinds in enumerate(stream_aliasing(blocks, executed, initial)):
                for k in kinds:
                    _add(cov["aliasing"], (k, names[i].mnemonic), w)
            if outcome[row] == "fault":
                _add(cov["faults"], (reason[row], executed), w)
            tall = {r["block"] for r in lay.records if r["record"] == "commit" and r["row"] > r["valid_row"]}
            for i, b in enumerate(blocks[:executed]):
                op = names[i]
                mn = op.mnemonic
                _add(cov["commits"], mn, w)
                _add(cov["values"], (vclass[row], mn), w)
                if op.schema == I.CONVERT:
                    d = b.datr
                    key4 = (b.bstart.DataType, b.bstart.DataType if d is None or d.DataType is None else d.DataType,
                            0 if d is None or d.RMode is None else d.RMode, bool(d is not None and d.Sat))
                    _add(cov["tcvt"], key4, w)
                shapes = streams_block_classes(b)
                if i in tall:                                 # the destination's Row > ValidRow
                    shapes.append("valid_row_lt_row")
                cap = b.iot[-1].capacity
                if cap is not None and cap == _min_capacity(b, op):
                    shapes.append("capacity_limit")
                for cls in shapes:
                    _add(cov["shapes"], (cls, mn), w)
    return cov


# ---------------------------------------------------------------------------- coverpoints and crosses

def stream_items(ds, cov: dict) -> dict:
    """The coverpoints and crosses the generator aims at, over the whole dataset:
    {"coverpoints": [instruction, fault_position], "crosses": [hazard_x_instruction,
    aliasing_x_instruction, fault_x_position]}, each bin with its count and status.  A bin is
    n/a where no stream of the dataset can have it: an instruction the dataset's constraint
    excludes, a hazard or aliasing kind the instruction cannot show (later_impossible,
    aliasing_impossible), a distance its streams have no room for (consecutive needs 2
    executed blocks, distant 3; a dataset of illegal streams only executes at most K - 1), a
    fault reason no shape class of the dataset carries, any fault when it holds no illegal
    streams."""
    con = ds.params.constraint
    K = ds.params.blocks
    shapes = [p.shape for p in ds.partitions]
    prm = ds.params
    sizes = {min(prm.chunk_cases, prm.cases - k * prm.chunk_cases) for k in (0, (prm.cases - 1) // prm.chunk_cases)}
    # blocks a stream can execute: K where a chunk keeps a legal stream, else K - 1 (every stream
    # stops at its planted block)
    longest = K if any(n - round(n * prm.illegal_fraction) > 0 for n in sizes) else K - 1

    def excluded(op):
        return None if op in con.instructions else "outside the dataset's --ops/--dtypes"

    instruction = [bin_record(op.mnemonic, cov["commits"].get(op.mnemonic, 0), not excluded(op)) for op in I.INSTRUCTIONS]
    hazards = []
    for kind in HAZARDS:
        for dist in DISTANCES:
            for op in I.INSTRUCTIONS:
                why = excluded(op) or room(dist, longest) or later_impossible(kind, op)
                hazards.append(bin_record(f"{kind}/{dist}/{op.mnemonic}", cov["hazard_x_instruction"].get(
                    (kind, dist, op.mnemonic), 0), not why, (kind, dist, op.mnemonic)))
    aliasing = [bin_record(f"{a}/{op.mnemonic}", cov["aliasing"].get((a, op.mnemonic), 0),
                     not (excluded(op) or aliasing_impossible(a, op)), (a, op.mnemonic))
                for a in ALIASING for op in I.INSTRUCTIONS]
    illegal = ds.params.illegal_fraction > 0
    positions = [bin_record(str(i), sum(k for (r, at), k in cov["faults"].items() if at == i), illegal)
                 for i in range(K)]
    faults = []
    for r in STREAM_ILLEGAL:
        carried = illegal and not all(stream_class(r) in classes_for(s, con)[1] for s in shapes)
        faults += [bin_record(f"{r}/{i}", cov["faults"].get((r, i), 0), carried, (r, str(i))) for i in range(K)]
    return {"coverpoints": [{"name": "instruction", "bins": instruction},
                            {"name": "fault_position", "bins": positions}],
            "crosses": [{"name": "hazard_x_instruction", "axes": ["hazard", "distance", "instruction"],
                         "bins": hazards},
                        {"name": "aliasing_x_instruction", "axes": ["aliasing", "instruction"], "bins": aliasing},
                        {"name": "fault_x_position", "axes": ["reason", "block"], "bins": faults}]}


def _summary_line(name: str, bins: list[dict], show_holes: int = 40) -> str:
    aimed = [b for b in bins if b["status"] != "n/a"]
    holes = [b["name"] for b in aimed if b["status"] == "hole"]
    line = f"{name}: {len(aimed) - len(holes)} of {len(aimed)} bins covered ({len(bins) - len(aimed)} n/a)"
    if holes:
        line += "; holes: " + ", ".join(holes[:show_holes]) + (", ..." if len(holes) > show_holes else "")
    return line


# ---------------------------------------------------------------------------- the text table

def stream_coverage_table(folder) -> str:
    """`tile-emu golden --coverage DIR` for a stream dataset (opened through the checked open)."""
    ds = open_stream_dataset(folder)
    cov = stream_coverage(ds)
    con = ds.params.constraint
    shapes = [p.shape for p in ds.partitions]
    lines = ["stream classes (streams)          " + "  ".join(s.rjust(8) for s in shapes)]
    for name in [LEGAL] + [stream_class(r) for r in STREAM_ILLEGAL]:
        cells = []
        for s in shapes:
            cells.append(("n/a" if name in classes_for(s, con)[1] else
                          f"{cov['streams'].get((name, s), 0):,}").rjust(8))
        lines.append(name.ljust(34) + "  ".join(cells))
    ops = [i.mnemonic for i in I.INSTRUCTIONS]
    items = stream_items(ds, cov)
    lines.append("\ninstructions committed (executed blocks)")
    lines.append("  " + " ".join(f"{b['name']}={b['count']:,}" if b["status"] != "n/a" else f"{b['name']}=n/a"
                                 for b in items["coverpoints"][0]["bins"]))
    lines.append("  " + _summary_line("instruction", items["coverpoints"][0]["bins"]))
    hx = items["crosses"][0]["bins"]
    lines.append("\nhazards x instruction (the later block: RAW its read, WAR and WAW its write), consecutive/distant "
                 "blocks")
    lines.append("  " + " " * 9 + "  ".join(f"{k}:{d[:4]}".rjust(9) for k in HAZARDS for d in DISTANCES))
    by = {b["name"]: b for b in hx}
    for op in ops:
        cells = []
        for k in HAZARDS:
            for d in DISTANCES:
                b = by[f"{k}/{d}/{op}"]
                cells.append(("n/a" if b["status"] == "n/a" else f"{b['count']:,}").rjust(9))
        lines.append(f"  {op:9s}" + "  ".join(cells))
    lines.append("  " + _summary_line("hazard_x_instruction", hx))
    reasons = sorted({later_impossible(k, op) for k in HAZARDS for op in I.INSTRUCTIONS} - {None})
    lines.append(f"  n/a: {'; '.join(reasons)}")
    for kind in HAZARDS:
        seen = sum(1 for (k, _, _) in cov["hazards"] if k == kind)
        lines.append(f"\n{kind} hazards (streams) by producer -> consumer; {seen} instruction pairs seen")
        missing, impossible = [], 0
        for a in I.INSTRUCTIONS:
            cells = []
            for b in I.INSTRUCTIONS:
                n = cov["hazards"].get((kind, a.mnemonic, b.mnemonic), 0)
                if hazard_impossible(kind, a, b):
                    impossible += 1
                    continue
                if n:
                    cells.append(f"{b.mnemonic}={n:,}")
                elif a in con.instructions and b in con.instructions:
                    missing.append(f"{a.mnemonic}->{b.mnemonic}")
            lines.append(f"  {a.mnemonic:9s} " + (" ".join(cells) if cells else "-"))
        why = sorted({w for a in I.INSTRUCTIONS for b in I.INSTRUCTIONS for w in [hazard_impossible(kind, a, b)] if w})
        lines.append(f"  impossible: {impossible} pair(s)" + (f" ({'; '.join(why)})" if why else ""))
        lines.append(f"  possible without streams: {len(missing)}" + (f" ({', '.join(missing[:12])}"
                     + (", ..." if len(missing) > 12 else "") + ")" if missing else ""))
    lines.append("\naliasing (blocks)  " + " ".join(a.rjust(16) for a in ALIASING))
    al = {b["name"]: b for b in items["crosses"][1]["bins"]}
    for op in ops:
        lines.append(f"  {op:16s} " + " ".join(("n/a" if al[f"{a}/{op}"]["status"] == "n/a" else
                                                f"{al[f'{a}/{op}']['count']:,}").rjust(16) for a in ALIASING))
    lines.append("  " + _summary_line("aliasing_x_instruction", items["crosses"][1]["bins"]))
    lines.append("\nfaults (streams) by reason x position (block index)")
    K = ds.params.blocks
    for r in STREAM_ILLEGAL:
        counts = [cov["faults"].get((r, i), 0) for i in range(K)]
        na = all(stream_class(r) in classes_for(s, con)[1] for s in shapes)
        lines.append(f"  {r:22s} " + ("n/a (no shape class of this dataset can carry it)" if na else
                                      " ".join(f"{c:,}".rjust(5) for c in counts)))
    lines.append("  " + _summary_line("fault_position", items["coverpoints"][1]["bins"]))
    lines.append("  " + _summary_line("fault_x_position", items["crosses"][2]["bins"], 12))
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
    for sc in [c.name for c in CLASSES if c.kind == "shape"]:
        row = [f"{op}={cov['shapes'][(sc, op)]:,}" for op in ops if (sc, op) in cov["shapes"]]
        lines.append(f"  {sc:20s} " + (" ".join(row) if row else "0"))
    every = [b for item in items["coverpoints"] + items["crosses"] for b in item["bins"]]
    holes = sum(1 for b in every if b["status"] == "hole")
    aimed = sum(1 for b in every if b["status"] != "n/a")
    lines.append(f"\n{holes} hole(s) of {aimed} aimed bins (instruction, fault_position, hazard_x_instruction, "
                 f"aliasing_x_instruction, fault_x_position)" + ("" if holes else " (complete)"))
    return "\n".join(lines)
