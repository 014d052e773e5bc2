"""cocotb testbench of the lane DUT (alu.v, or any module with its ports: PORTS): the ports are
checked first; then every illegal (instruction, DataType) pair of the instruction table --
every binary element-wise instruction with each DataType it does not support, and each DataType
code the table does not assign -- is driven on `func`/`dtype`, and `supported` must be 0 for
each; then every committed golden case of every partition the DUT implements is driven into it,
one element per clock, and scored with emulator.cosim.compare against the golden output tile.
Run it through run.py (cocotb's Python runner, Icarus Verilog); it reads TB_DATASETS (dataset
folders, os.pathsep-separated) and writes its findings as JSON to TB_RESULT, which run.py
prints."""
from __future__ import annotations

import json
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer

import lanes
from emulator.cosim import compare, value_text
from isa.atomicio import atomic_open
from isa.datatypes import DATATYPES
from isa.instructions import INSTRUCTIONS

# The lane's ports (README, "RTL verification"): name -> (direction, width in bits)
PORTS = {"clk": ("input", 1), "func": ("input", 5), "dtype": ("input", 5), "in_rect": ("input", 1),
         "pad": ("input", 2), "a": ("input", 64), "b": ("input", 64), "pe": ("input", 2),
         "pe_mask": ("input", 4), "we": ("output", 1), "y": ("output", 64), "y_defined": ("output", 1),
         "flags": ("output", 5), "supported": ("output", 1)}


def port_mismatch(dut) -> str | None:
    """The first port of PORTS the DUT lacks or has with another width, or None."""
    for name, (direction, width) in PORTS.items():
        try:
            handle = getattr(dut, name)
        except AttributeError:
            return f"no port {name!r} ({direction} [{width - 1}:0])"
        got = len(handle)
        if got != width:
            return f"port {name!r} is {got} bit(s) wide, not {width}"
    return None


def illegal_pairs() -> list[tuple[str, int, str, int]]:
    """(instruction, Function code, DataType name, DataType code) of every binary element-wise
    instruction with every DataType the instruction table does not give it, and with every
    DataType code (5 bits) the DataType table does not assign; then every Function code (5 bits)
    that no binary element-wise instruction has (`func` carries one: README, "RTL
    verification"), as "func N", with every DataType code."""
    names = {d.code: d.name for d in DATATYPES}
    out = []
    binary = [i for i in INSTRUCTIONS if i.schema == "binary"]
    for instr in binary:
        for code in range(32):
            name = names.get(code)
            if name is None or name not in instr.dtypes:
                out.append((instr.mnemonic, instr.function, name or f"code {code}", code))
    taken = {i.function for i in binary}
    for func in range(32):
        if func not in taken:
            out.extend((f"func {func}", func, names.get(code, f"code {code}"), code) for code in range(32))
    return out


async def claimed_illegal(dut) -> list[str]:
    """The illegal pairs the DUT says it supports, as OP:DTYPE."""
    claims = []
    for op, func, dtype, code in illegal_pairs():
        dut.func.value = func
        dut.dtype.value = code
        await Timer(1, unit="ns")
        if int(dut.supported.value):
            claims.append(f"{op}:{dtype}")
    return claims


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
    result = {"cases": 0, "lanes": 0, "elements": 0, "partitions": [], "unsupported": [], "rejected": 0,
              "failure": None, "illegal_driven": 0, "claims": [], "ports": None}
    try:
        result["ports"] = port_mismatch(dut)
        if result["ports"]:
            return
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        result["illegal_driven"] = len(illegal_pairs())
        result["claims"] = await claimed_illegal(dut)
        if result["claims"]:
            return
        for folder in filter(None, os.environ["TB_DATASETS"].split(os.pathsep)):
            for part in lanes.partitions(folder):
                dut.func.value = part.func
                dut.dtype.value = part.code
                await Timer(1, unit="ns")
                if not int(dut.supported.value):
                    result["unsupported"].append(f"{part.op}:{part.dtype}")
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
        assert result["failure"] is None and not result["claims"] and not result["ports"], result
