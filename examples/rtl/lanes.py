"""Golden cases as work for one PE lane, and the lane's outputs as commit records.

A golden case (docs/golden-format.md) that committed has one destination tile per selected
PE; each is one lane job: the destination's physical elements in order, each with the two
source elements at the same position, whether it lies inside ValidRow x ValidCol and the
resolved PadValue.  `expected_record` / `actual_record` give the golden output and the DUT's
as commit records (docs/commit-log.md), so `emulator.cosim.compare` scores them: the case
number stands in the record's `machine` (each case is a machine of its own).

Plain Python over pyarrow rows: it runs inside the simulator (cocotb) and in the tests.
"""
from __future__ import annotations

import pathlib
from dataclasses import dataclass

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

import isa
from emulator.golden.dataset import open_dataset
from isa.datatypes import datatype
from isa.instructions import lookup

NULL = 3                         # resolved PadValue codes: 0 Zero, 1 Max, 2 Min, 3 Null (isa/fields.py)


@dataclass
class Lane:
    file: str
    case: int
    cls: str
    op: str
    dtype: str
    pe: int
    pe_mask: int                 # the destination binding's PE_MASK (the lane checks it selects its PE)
    pad: int
    a: list[int]                 # per destination element (physical order = row-major, NORM)
    b: list[int]
    inside: list[int]
    expected: dict               # the golden output tile as a commit record


@dataclass
class Partition:
    path: str
    op: str
    dtype: str
    func: int                    # TEPL Function code
    code: int                    # DataType code
    files: list[pathlib.Path]


def partitions(folder) -> list[Partition]:
    """The binary element-wise partitions of a dataset (after its integrity check)."""
    folder = pathlib.Path(folder)
    out: dict[str, Partition] = {}
    for part, f in open_dataset(folder).listed():
        instr = lookup(part["op"])
        if instr.schema != "binary" or part.get("dst"):
            continue
        key = f.path.rsplit("/", 1)[0]
        p = out.setdefault(key, Partition(key, part["op"], part["dtype"], instr.function,
                                          datatype(part["dtype"]).code, []))
        p.files.append(folder / f.path)
    return list(out.values())


def _elements(tile: dict) -> list[int]:
    d = datatype(tile["dtype"])
    width = {8: "u1", 16: "<u2", 32: "<u4", 64: "<u8"}[d.container]
    return np.frombuffer(tile["payload"], width)[: tile["Row"] * tile["Col"]].astype(object).tolist()


def record(tile: dict, case: int, dest: int, payload: bytes, defined: bytes, status: int) -> dict:
    """A commit record (docs/commit-log.md) of a golden tile entry with these bytes and status."""
    return {"machine": case, "block": 0, "record": "commit", "pe": tile["pe"], "tile": dest,
            "location": tile["location"], "kind": tile["kind"], "datatype": tile["dtype"], "row": tile["Row"],
            "col": tile["Col"], "valid_row": tile["ValidRow"], "valid_col": tile["ValidCol"],
            "layout": tile["Layout"], "representation": "standard", "capacity": tile["capacity"],
            "fmap_layout": "", "fmap_params": [], "fmap_pad_bits": 0, "fmap_transposed": False,
            "payload": payload, "defined": defined, "status": status}


def lanes(part: Partition):
    """(lane jobs, rejected cases) of a partition's files."""
    jobs, rejected = [], 0
    for path in part.files:
        t = pq.read_table(path)
        rejected += int(pc.sum(pc.equal(t.column("outcome"), "reject")).as_py() or 0)
        for row in t.filter(pc.equal(t.column("outcome"), "commit")).to_pylist():
            block = isa.decode(row["stream"])[0]
            srcs, dest = [x.tile for x in block.iot[:-1]], block.iot[-1].tile
            pad = NULL if block.datr is None or block.datr.PadValueOrByteId is None else block.datr.PadValueOrByteId
            for out in row["outputs"]:
                a, b = (next(x for x in row["inputs"] if x["pe"] == out["pe"] and x["tile"] == s) for s in srcs)
                rows, cols = out["Row"], out["Col"]
                inside = [int(r < out["ValidRow"] and c < out["ValidCol"]) for r in range(rows) for c in range(cols)]
                jobs.append(Lane(str(path), row["case"], row["class"], part.op, part.dtype, out["pe"], row["pe_mask"], pad,
                                 _elements(a), _elements(b), inside,
                                 record(out, row["case"], dest, out["payload"], out["defined"], out["status"])))
    return jobs, rejected


def actual_record(lane: Lane, y: list[int], defined: list[int], flags: list[int]) -> dict:
    """The DUT's outputs for a lane as a commit record: payload packed in the DataType's
    container, definedness one bit per element, status the OR of the valid elements' flags."""
    d = datatype(lane.dtype)
    payload = np.array(y, dtype=np.uint64).astype(f"<u{d.container // 8}").tobytes()
    bits = np.packbits(np.array(defined, np.uint8), bitorder="little").tobytes()
    status = 0
    for f, ins in zip(flags, lane.inside):
        if ins:
            status |= f
    e = lane.expected
    return {**e, "payload": payload, "defined": bits, "status": status}
