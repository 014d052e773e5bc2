"""cocotb testbench of the lane DUT (alu.v): every committed golden case of every partition the
DUT implements is driven into it, one element per clock, and scored with emulator.cosim.compare
against the golden output tile.  Run it through run.py (cocotb's Python runner, Icarus Verilog);
it reads TB_DATASETS (dataset folders, os.pathsep-separated) and writes its findings as JSON to
TB_RESULT, which run.py prints."""
from __future__ import annotations

import json
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer

import lanes
from emulator.cosim import compare, value_text
from isa.atomicio import atomic_open


async def unselected(dut, lane: lanes.Lane) -> int | None:
    """The first PE that the lane's PE_MASK leaves out but the DUT says it writes (`we`), or
    None: every PE of the case is asked once."""
    dut.pe_mask.value = lane.pe_mask
    for pe in range(4):
        if not lane.pe_mask >> pe & 1:
            dut.pe.value = pe
            await Timer(1, unit="ns")
            if int(dut.we.value):
                return pe
    return None


async def run_lane(dut, lane: lanes.Lane):
    """Drive a lane's elements on consecutive clocks; the result of element k is registered at
    edge k and read at edge k + 1 (before that edge's update).  `we` must select the lane's PE
    (False in the returned flag where it does not)."""
    y, defined, flags = [], [], []
    n = len(lane.a)
    dut.pe.value = lane.pe
    dut.pe_mask.value = lane.pe_mask
    await Timer(1, unit="ns")
    writes = bool(int(dut.we.value))
    dut.pad.value = lane.pad
    for k in range(n + 1):
        if k < n:
            dut.a.value = lane.a[k]
            dut.b.value = lane.b[k]
            dut.in_rect.value = lane.inside[k]
        await RisingEdge(dut.clk)
        if k:
            y.append(int(dut.y.value))
            defined.append(int(dut.y_defined.value))
            flags.append(int(dut.flags.value))
    return y, defined, flags, writes


def failure(lane: lanes.Lane, d) -> dict:
    """The first failing case, decoded: instruction, DataType, inputs, expected, got."""
    out = {"file": lane.file, "case": lane.case, "class": lane.cls, "op": lane.op, "dtype": lane.dtype,
           "pe": lane.pe, "field": d.field, "difference": str(d).replace(f"machine {lane.case} block 0 ", "")}
    if d.element is not None:
        out.update(element=d.element, row=d.row, col=d.col,
                   a=f"0x{lane.a[d.element]:x} ({value_text(lane.a[d.element], lane.dtype)})",
                   b=f"0x{lane.b[d.element]:x} ({value_text(lane.b[d.element], lane.dtype)})",
                   expected=d.expected_value, got=d.actual_value)
    else:
        out.update(expected=str(d.expected_value or d.expected), got=str(d.actual_value or d.actual))
    return out


def mask_failure(lane: lanes.Lane, pe: int, selected: bool) -> dict:
    """A case whose PE_MASK the DUT's write enable gets wrong on PE `pe`."""
    return {"file": lane.file, "case": lane.case, "class": lane.cls, "op": lane.op, "dtype": lane.dtype, "pe": pe,
            "field": "we", "expected": f"we={int(selected)} (PE_MASK 0b{lane.pe_mask:04b})",
            "got": f"we={int(not selected)}",
            "difference": f"PE {pe} {'is' if selected else 'is not'} selected by PE_MASK 0b{lane.pe_mask:04b}"}


@cocotb.test()
async def golden_cases(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    result = {"cases": 0, "lanes": 0, "elements": 0, "partitions": [], "unsupported": [], "rejected": 0,
              "failure": None}
    try:
        for folder in filter(None, os.environ["TB_DATASETS"].split(os.pathsep)):
            for part in lanes.partitions(folder):
                dut.func.value = part.func
                dut.dtype.value = part.code
                await Timer(1, unit="ns")
                if not int(dut.supported.value):
                    result["unsupported"].append(part.path)
                    continue
                jobs, rejected = lanes.lanes(part)
                result["partitions"].append(part.path)
                result["rejected"] += rejected
                result["cases"] += len({j.case for j in jobs})
                seen = set()
                for lane in jobs:
                    y, dfn, fl, writes = await run_lane(dut, lane)
                    if not writes:
                        result["failure"] = mask_failure(lane, lane.pe, True)
                        return
                    if lane.case not in seen:
                        seen.add(lane.case)
                        other = await unselected(dut, lane)
                        if other is not None:
                            result["failure"] = mask_failure(lane, other, False)
                            return
                    d = compare([lane.expected], [lanes.actual_record(lane, y, dfn, fl)])
                    result["lanes"] += 1
                    result["elements"] += len(y)
                    if d is not None:
                        result["failure"] = failure(lane, d)
                        return
    except Exception as exc:        # the verdict file says the bench itself broke, not "0 cases"
        result["error"] = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        with atomic_open(os.environ["TB_RESULT"], "w") as f:
            json.dump(result, f)
        assert result["failure"] is None, result["failure"]
