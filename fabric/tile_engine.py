"""Tile engines as fabric resources: the element actor of a block and the engine's admitted image.

Each PE has a VEC and an SFU engine (ADR 0080 assigns every instruction to one).  A concrete
engine is a `fabric.op` of family TileVecEngine or TileSfuEngine whose op_list enables
`tile.<MNEMONIC>` schemas and whose TileEngineParams give its DataTypes, lanes and pipeline
latency (emulator/pe.json).  The block decoder admits a block through
`capability.supports(engine, block_actor(...))`; the timing model (emulator/timing.py) reads
lanes and latency.  docs/timing.md is the model.
"""
from __future__ import annotations

from isa.instructions import BY_MNEMONIC

from .schemas import SCHEMAS, Actor, make_actor, tile_operand_types, tile_schema_id


def block_actor(instr, dtype: str, destination: str | None = None) -> Actor:
    """The exact element actor of a block of `instr` on BSTART DataType `dtype` (TCVT: with
    B.DATR.DataType `destination`, None when omitted)."""
    ins, outs = tile_operand_types(instr, dtype, destination)
    return make_actor(tile_schema_id(instr), ins, outs, datatype=dtype, destination_datatype=destination)


def gen_tile_engine(op, rec):
    """Every enabled instruction at every DataType (TCVT: every destination) of the engine's
    relation, in the family's member order; atoms name the declarations each point uses."""
    dts = tuple(rec.datatypes or ())
    for schema in op.descriptor.admitted:
        if schema not in op.op_list:
            continue
        instr = BY_MNEMONIC[schema.split(".", 1)[1]]
        for d in (x for x in dts if x in instr.dtypes):
            if "DataType" in instr.datr:       # TCVT: the explicit destination (absent = d)
                for e in (x for x in dts if x in instr.dtypes):
                    yield (block_actor(instr, d, e), None, (("datatypes", d), ("datatypes", e)))
            else:
                yield block_actor(instr, d), None, (("datatypes", d),)


def tile_roles(desc) -> dict:
    """schema -> (role, key slots) of an engine family: the role is the mnemonic (the block's
    BSTART selects it), the components its DataType and TCVT's destination DataType."""
    return {s: (s.split(".", 1)[1], ("datatype",) + (("destination_datatype",)
                                                      if "destination_datatype" in SCHEMAS[s].attributes else ()))
            for s in desc.admitted}
