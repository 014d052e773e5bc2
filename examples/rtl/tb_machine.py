"""cocotb testbench of the tile machine DUT (machine.v): every stream of a stream golden dataset
(docs/golden-format.md, "Stream goldens") is run on it block by block -- its initial tiles
loaded through the load port, each block's words driven one per clock -- and each block's commit
or fault records, read back through the DUT's read port, are scored against the golden's with
the lockstep scoreboard (emulator.cosim.compare).  Run it through run_machine.py (cocotb's Python
runner, Icarus Verilog); it reads TB_DATASETS (dataset folders, os.pathsep-separated),
TB_MAX_FAILS and writes its findings as JSON to TB_RESULT, which run_machine.py prints.
Before the streams it drives the subset's boundary (boundary_probes): blocks outside the subset
or rejected by its stateless rules, each expecting the model's verdict or o_unsupported.

A stream that diverges stops there (the DUT's state is no longer the golden's); with
TB_MAX_FAILS N the bench goes on with the next stream until N streams have failed."""
from __future__ import annotations

import glob
import json
import os

import numpy as np
import pyarrow.parquet as pq

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer

from emulator.cosim import compare, value_text
from isa.atomicio import atomic_open
from isa.block import BDatr, BDim, Block, BStart, TileBinding
from isa.datatypes import datatype
from isa.encoding import block_words as encode_block
from isa.errors import IllegalBlockException
from isa.fields import DATR_FIELDS as MODEL_DATR_FIELDS
from isa.instructions import by_carrier, lookup
from isa.legality import resolve

# o_reason codes of machine.v
REASONS = [None, "UNASSIGNED_OPCODE", "DATATYPE_RESERVED", "DATATYPE_UNSUPPORTED", "BINDING_COUNT",
           "PE_MASK_MISMATCH", "SOURCE_CAPACITY", "DIM_MISSING", "DIM_ZERO", "DIM_RANGE", "FIELD_NOT_APPLICABLE",
           "IOS_NOT_ALLOWED", "IOR_NOT_ALLOWED", "CAPACITY", "SOURCE_MISSING", "SOURCE_KIND", "SOURCE_DATATYPE",
           "SHAPE_MISMATCH", "ALLOCATION", "SOURCE_UNDEFINED"]
DATR_FIELDS = ("PadValueOrByteId", "CMode", "Sat", "Canonicalize", "DataType", "RMode", "Layout")
SLOTS = 32
MAXE = 64
SUBSET_OPS = ("TADD", "TSUB", "TMUL", "TAND", "TOR", "TXOR", "TSHL", "TSHR", "TMAX", "TMIN", "TSEL")
SUBSET_DTYPES = ("S8", "S16", "S32", "U8", "U16", "U32")
SLOT_STEP = 11      # stream n's initial tiles start at slot n * SLOT_STEP mod SLOTS (every slot used)


def field_text(code: int) -> str:
    """o_field [7:4] which field, [3:0] its index, as the emulator's fault record names it."""
    kind, i = code >> 4, code & 15
    return {0: "BSTART", 1: "BSTART.DataType", 2: "B.IOT", 3: f"B.IOT[{i}].PE_MASK", 4: f"B.IOT[{i}].capacity",
            5: f"B.IOT[{i}]", 6: "B.DIM.LB0", 7: "B.DIM.LB1", 8: "B.DIM.LB2",
            9: f"B.DATR.{DATR_FIELDS[i]}" if i < len(DATR_FIELDS) else f"B.DATR.?{i}", 10: "B.IOS",
            11: "B.IOR"}.get(kind, f"?{code:#x}")


def block_words(stream: bytes) -> list[list[int]]:
    """The stream's blocks as lists of 64-bit words (BSTART first), from the .tbs bytes."""
    words = np.frombuffer(stream, "<u8", offset=16).tolist()
    out, k = [], 0
    while k < len(words):
        n = (words[k] >> 8) & 0xFF
        out.append(words[k: k + 1 + n])
        k += 1 + n
    return out


def elements(desc: dict, payload: bytes) -> list[int]:
    """A tile's physical elements (predicate: one bit each) from its tile-store bytes."""
    n = desc["row"] * desc["col"]
    if desc["kind"] == "predicate":
        return np.unpackbits(np.frombuffer(payload, np.uint8), bitorder="little")[:n].tolist()
    width = {8: "u1", 16: "<u2", 32: "<u4", 64: "<u8"}[datatype(desc["datatype"]).container]
    return np.frombuffer(payload, width)[:n].tolist()


def bits(data: bytes, n: int) -> list[int]:
    return np.unpackbits(np.frombuffer(data, np.uint8), bitorder="little")[:n].tolist()


class Stream:
    """One row of a stream dataset: its initial tiles, blocks and expected records per block."""

    def __init__(self, path: str, row: dict):
        self.file, self.case = path, row["case"]
        self.cls = row["class"]
        self.local_bytes = row["local_bytes"]
        self.asm = row["asm"]
        self.blocks = block_words(row["stream"])
        layout = json.loads(row["layout"])
        self.initial, at = [], [0, 0]
        for e in layout["initial"]:
            p = row["initial_payload"][at[0]: at[0] + e["payload_bytes"]]
            d = row["initial_defined"][at[1]: at[1] + e["defined_bytes"]]
            at = [at[0] + e["payload_bytes"], at[1] + e["defined_bytes"]]
            self.initial.append((e, p, d))
        self.records: dict[int, list[dict]] = {}
        at = [0, 0]
        for k, e in enumerate(layout["records"]):
            rec = {key: v for key, v in e.items() if key not in ("payload_bytes", "defined_bytes", "offset")}
            rec["machine"] = self.case
            if e["record"] == "commit":
                rec["payload"] = row["record_payload"][at[0]: at[0] + e["payload_bytes"]]
                rec["defined"] = row["record_defined"][at[1]: at[1] + e["defined_bytes"]]
                rec["status"] = row["record_status"][k]
                at = [at[0] + e["payload_bytes"], at[1] + e["defined_bytes"]]
            else:
                rec.update(reason=row["reason"], field=row["field"], message=row["message"])
            self.records.setdefault(e["block"], []).append(rec)
        self.executed = row["executed"]
        self.fault_block = row["fault_block"]

    def block_text(self, b: int) -> str:
        """Block b of the row's `asm` text (its BSTART line carries `# block b, byte ...`)."""
        lines, keep = [], False
        for line in self.asm.splitlines():
            if "# block " in line:
                keep = f"# block {b}," in line
            if keep and line.strip():
                lines.append(line.split("#")[0].rstrip())
        return "; ".join(x.strip() for x in lines)


def _verdict(block: Block) -> tuple | None:
    """What the machine must say about a block driven on an empty machine, from the model's
    stateless legality (isa.legality.resolve): ("fault", reason, field) for a rule the model
    raises, ("unsupported",) for a block the model accepts outside the subset, None for a block
    the model accepts inside it (its verdict needs tile state: the streams check those).  For an
    instruction outside the subset the machine knows only UNASSIGNED_OPCODE and
    DATATYPE_RESERVED; any other verdict of the model is "unsupported" there."""
    row = by_carrier(block.bstart.Mode, block.bstart.Function)
    inside = row is not None and row.mnemonic in SUBSET_OPS
    try:
        rb = resolve(block)
    except IllegalBlockException as exc:
        if inside or exc.reason in ("UNASSIGNED_OPCODE", "DATATYPE_RESERVED"):
            return ("fault", exc.reason, exc.field)
        return ("unsupported",)
    return None if inside and rb.dtype.name in SUBSET_DTYPES else ("unsupported",)


def _probe(mode: int, function: int, dtype: int, n_iot: int, datr: BDatr | None = None) -> Block:
    iot = tuple(TileBinding(tile=k, PE_MASK=1) for k in range(n_iot))
    return Block(BStart(mode, function, dtype), iot=iot, dim=BDim(LB0=1), datr=datr)


def boundary_probes() -> list[tuple[str, list[int], tuple]]:
    """The blocks of the subset's boundary, each with the verdict the model implies (_verdict):
    every subset instruction with every DataType code, each explicit B.DATR field (one and two
    at a time) on each subset instruction, and every other (Mode, Function) of Modes 0-3 with an
    integer and a float DataType.  (label, words, verdict)."""
    s32, fp32 = datatype("S32").code, datatype("FP32").code
    blocks = []
    for mn in SUBSET_OPS:
        row = lookup(mn)
        n = row.arity + 1
        blocks += [_probe(row.mode, row.function, dt, n) for dt in range(32)]
        values = {"PadValueOrByteId": 0, "CMode": 1, "Sat": 1, "Canonicalize": 1, "DataType": datatype("S16").code,
                  "RMode": 1, "Layout": 1}
        for i, a in enumerate(MODEL_DATR_FIELDS):
            for b in MODEL_DATR_FIELDS[i:]:
                blocks.append(_probe(row.mode, row.function, s32, n, BDatr(**{a: values[a], b: values[b]})))
    for mode in range(4):
        for function in range(32):
            if by_carrier(mode, function) is None or by_carrier(mode, function).mnemonic not in SUBSET_OPS:
                # three bindings: outside the subset the machine still checks a binary block's
                # binding masks, B.DIM and B.DATR before saying unsupported (docs/rtl-machine.md)
                blocks += [_probe(mode, function, dt, 3) for dt in (s32, fp32)]
    out = []
    for blk in blocks:
        v = _verdict(blk)
        if v is not None:
            row = by_carrier(blk.bstart.Mode, blk.bstart.Function)
            label = (f"{row.mnemonic if row else f'Mode {blk.bstart.Mode} Function {blk.bstart.Function}'} "
                     f"DataType {blk.bstart.DataType}" + (f", {blk.datr}" if blk.datr else ""))
            out.append((label, encode_block(blk), v))
    return out


def logic(v) -> int:
    """A signal's value as an integer, X and Z bits read as 0 (a DUT that outputs X where the
    golden has a value is scored as that value's mismatch)."""
    return int(str(v).lower().replace("x", "0").replace("z", "0"), 2)


async def tick(dut):
    await RisingEdge(dut.clk)
    await Timer(1, unit="ns")


async def reset(dut):
    await tick(dut)                 # in step with the clock (read_tile leaves any phase; see run_block)
    dut.rst.value = 1
    dut.in_valid.value = 0
    dut.ld_desc.value = 0
    dut.ld_elem.value = 0
    await tick(dut)
    dut.rst.value = 0


async def load(dut, s: Stream, base: int = 0) -> str | None:
    """Reset the DUT and load the stream's initial tiles, PE p's n-th one into slot (base + n)
    mod SLOTS; an error text if one does not fit."""
    await reset(dut)
    dut.local_bytes.value = s.local_bytes
    slot = [0, 0, 0, 0]
    for e, payload, defined in s.initial:
        n = e["row"] * e["col"]
        if n > MAXE or e["location"] != "Local" or e["representation"] != "standard":
            return f"initial tile {e['tile']} ({e['row']}x{e['col']} {e['location']}) is outside the machine's tiles"
        vals, dfn = elements(e, payload), bits(defined, n)
        pred = e["kind"] == "predicate"
        for pe in e["pes"]:
            if slot[pe] >= SLOTS:
                return f"PE{pe} holds more than {SLOTS} initial tiles"
            dut.ld_pe.value = pe
            dut.ld_slot.value = (base + slot[pe]) % SLOTS
            dut.ld_tile.value = e["tile"]
            dut.ld_pred.value = int(pred)
            dut.ld_dtype.value = 0 if pred else datatype(e["datatype"]).code
            dut.ld_row.value, dut.ld_col.value = e["row"], e["col"]
            dut.ld_vrow.value, dut.ld_vcol.value = e["valid_row"], e["valid_col"]
            dut.ld_layout.value = e["layout"]
            dut.ld_cap.value = e["capacity"]
            dut.ld_desc.value = 1
            dut.ld_elem.value = 1
            for i in range(n):
                dut.ld_idx.value = i
                dut.ld_data.value = int(vals[i]) & 0xFFFFFFFF
                dut.ld_def.value = dfn[i]
                await tick(dut)
                dut.ld_desc.value = 0
            dut.ld_elem.value = 0
            slot[pe] += 1
    return None


async def read_tile(dut, pe: int, tile: int) -> dict | None:
    """Tile `tile` of PE `pe` as the DUT holds it, as a commit record's tile fields."""
    dut.rd_pe.value = pe
    dut.rd_tile.value = tile
    dut.rd_idx.value = 0
    await Timer(1, unit="ns")
    if not int(dut.rd_hit.value):
        return None
    pred = int(dut.rd_pred.value)
    row, col = int(dut.rd_row.value), int(dut.rd_col.value)
    name = None if pred else datatype(int(dut.rd_dtype.value)).name
    vals, dfn = [], []
    for i in range(min(row * col, MAXE)):
        dut.rd_idx.value = i
        await Timer(1, unit="ns")
        dfn.append(logic(dut.rd_def.value))
        vals.append(logic(dut.rd_data.value) if dfn[-1] else 0)
    if pred:
        payload = np.packbits(np.array(vals, np.uint8) & 1, bitorder="little").tobytes()
    else:
        payload = np.array(vals, np.uint64).astype(f"<u{datatype(name).container // 8}").tobytes()
    return {"location": "Local", "kind": "predicate" if pred else "numeric", "datatype": name or "",
            "row": row, "col": col, "valid_row": int(dut.rd_vrow.value), "valid_col": int(dut.rd_vcol.value),
            "layout": int(dut.rd_layout.value), "representation": "standard", "capacity": int(dut.rd_cap.value),
            "fmap_layout": "", "fmap_params": [], "fmap_pad_bits": 0, "fmap_transposed": False,
            "payload": payload, "defined": np.packbits(np.array(dfn, np.uint8), bitorder="little").tobytes(),
            "status": 0}


async def drive(dut, words: list[int]) -> str | None:
    """Drive one block's words and wait for o_done; an error text when the DUT does not take them."""
    await tick(dut)
    for k, w in enumerate(words):
        if logic(dut.in_ready.value) != 1:        # the machine takes a word per clock while it reads a block
            dut.in_valid.value = 0
            return f"in_ready is not 1 at word {k} of the block"
        dut.in_word.value = w
        dut.in_valid.value = 1
        await tick(dut)
    dut.in_valid.value = 0
    for _ in range(20000):
        if int(dut.o_done.value):
            return None
        await tick(dut)
    return "the DUT did not finish the block (no o_done in 20,000 clocks)"


async def run_probes(dut, result: dict, max_fails: int):
    """The subset's boundary (boundary_probes) on an empty machine: each block's verdict --
    o_illegal with the model's reason and field, or o_unsupported -- must be the model's."""
    await reset(dut)
    dut.local_bytes.value = 0
    for k, (label, words, want) in enumerate(boundary_probes()):
        if len(result["failures"]) >= max_fails:
            return
        err = await drive(dut, words)
        if err:
            result["errors"].append(f"boundary probe {k} ({label}): {err}")
            continue
        result["probes"] += 1
        if int(dut.o_illegal.value):
            code = int(dut.o_reason.value)
            got = ("fault", REASONS[code] if code < len(REASONS) else f"?{code}", field_text(int(dut.o_field.value)))
        elif int(dut.o_unsupported.value):
            got = ("unsupported",)
        else:
            got = ("commit" if int(dut.o_pes.value) else "no-op" if not int(dut.o_full.value) else "full",)
        if got != want:
            result["failures"].append({"file": "(boundary probes)", "case": k, "class": "boundary", "block": 0,
                                       "asm": label, "difference": f"expected {' '.join(want)}, got {' '.join(got)}",
                                       "sources": ""})


async def run_block(dut, s: Stream, b: int) -> tuple[list[dict], str | None]:
    """Drive block b's words; (the DUT's records of it, an error text when it cannot run it)."""
    # back in step with the clock first: read_tile's 1 ns steps leave the bench at any phase, and a
    # word written in the very time step of a rising edge is a race (machine.v's clocked block
    # read it at that edge, its Yosys netlist's flops did not)
    err = await drive(dut, s.blocks[b])
    if err:
        return [], err
    head = {"machine": s.case, "block": b}       # mnemonic, block DataType: the DUT does not say
    if int(dut.o_unsupported.value):
        return [], "the block is outside the machine's subset (o_unsupported)"
    if int(dut.o_full.value):
        return [], f"a selected PE has no free slot ({SLOTS} tiles)"
    if int(dut.o_illegal.value):
        reason = REASONS[int(dut.o_reason.value)] if int(dut.o_reason.value) < len(REASONS) else "?"
        return [{**head, "record": "fault", "reason": reason, "field": field_text(int(dut.o_field.value))}], None
    pes, tile = int(dut.o_pes.value), int(dut.o_tile.value)
    out = []
    for pe in range(4):
        if pes >> pe & 1:
            t = await read_tile(dut, pe, tile)
            if t is None:
                return [], f"the DUT says it committed PE{pe} tile {tile}, which its read port does not find"
            out.append({**head, "record": "commit", "pe": pe, "tile": tile, **t})
    return out, None


def source_values(s: Stream, state: dict, b: int, pe: int, element: int) -> str:
    """The golden values of block b's sources at `element` on PE `pe` (the state before block b)."""
    words = s.blocks[b]
    tiles = [(w >> 16) & 0xFFFF for w in words[1:] if w & 0xFF == 0x02][:-1]
    out = []
    for t in tiles:
        got = state.get((pe, t))
        if got is None or element >= got[0]["row"] * got[0]["col"]:
            out.append(f"t{t}: -")
            continue
        desc, payload, defined = got
        if not bits(defined, element + 1)[element]:
            out.append(f"t{t}: undefined")
            continue
        v = int(elements(desc, payload)[element])
        out.append(f"t{t}: {v}" if desc["kind"] == "predicate" else f"t{t}: 0x{v:x} ({value_text(v, desc['datatype'])})")
    return ", ".join(out)


def failure(s: Stream, state: dict, b: int, d) -> dict:
    sources = source_values(s, state, b, d.pe, d.element) if d.element is not None else ""
    return {"sources": sources, "file": s.file, "case": s.case, "class": s.cls, "block": b, "asm": s.block_text(b),
            "difference": str(d), "field": d.field, "pe": d.pe, "tile": d.tile, "element": d.element,
            "row": d.row, "col": d.col, "expected": d.expected_value or str(d.expected),
            "got": d.actual_value or str(d.actual)}


@cocotb.test()
async def golden_streams(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    max_fails = int(os.environ.get("TB_MAX_FAILS", "1"))
    result = {"probes": 0, "streams": 0, "blocks": 0, "commits": 0, "faults": 0, "classes": {}, "failures": [],
              "errors": []}
    try:
        files = []
        for folder in filter(None, os.environ["TB_DATASETS"].split(os.pathsep)):
            files += sorted(glob.glob(os.path.join(folder, "**", "*.parquet"), recursive=True))
        await run_probes(dut, result, max_fails)
        for path in files:
            for row in pq.read_table(path).to_pylist():
                if len(result["failures"]) >= max_fails:
                    return
                s = Stream(path, row)
                err = await load(dut, s, result["streams"] * SLOT_STEP % SLOTS)
                if err:
                    result["errors"].append(f"{path}: case {s.case}: {err}")
                    continue
                state = {(pe, e["tile"]): (e, p, d) for e, p, d in s.initial for pe in e["pes"]}
                result["streams"] += 1
                result["classes"][s.cls] = result["classes"].get(s.cls, 0) + 1
                last = s.executed if s.fault_block >= 0 else len(s.blocks) - 1
                for b in range(last + 1):
                    actual, err = await run_block(dut, s, b)
                    if err:
                        result["errors"].append(f"{path}: case {s.case} block {b}: {err}")
                        break
                    exp = s.records.get(b, [])
                    d = compare(exp, actual)
                    result["blocks"] += 1
                    if d is not None:
                        result["failures"].append(failure(s, state, b, d))
                        break
                    for r in exp:              # the golden state after block b
                        if r["record"] == "commit":
                            state[(r["pe"], r["tile"])] = (r, r["payload"], r["defined"])
                    result["commits"] += sum(1 for r in actual if r["record"] == "commit")
                    result["faults"] += sum(1 for r in actual if r["record"] == "fault")
    except Exception as exc:        # the verdict file says the bench itself broke
        result["error"] = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        with atomic_open(os.environ["TB_RESULT"], "w") as f:
            json.dump(result, f)
