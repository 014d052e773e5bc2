"""Which runs the compiled cycle loop (`kernel.run_cycles`) takes, and its semantic table.

The loop runs many cycles of one instance in one compiled call, evaluating the semantic kernels
itself (`kernel.evaluate`) instead of the engine's NumPy kernels of fabric/sim/semantics.py.  It
covers a run when every kernel of the program is one it evaluates, on values of one word:

- integer arith.addi, subi, muli, andi, ori (and llvm.or), xori, maxui, minui, maxsi, minsi,
  shli, shrui, divui, remui and cmpi (every predicate), on iN of at most 64 bits;
- arith.select on values of at most 64 bits;
- arith.addf, subf, mulf on f32 and f64, rounding to nearest even;
- dataflow.stream with any step kind and predicate;

and the run is one instance without a trace.  Everything else - batches, traces and waveforms,
`step`, vectors and values wider than 64 bits, other schemas, formats and rounding modes - runs
the engine's per-cycle path, unchanged.
"""
from __future__ import annotations

import numpy as np

from . import kernel as K
from .program import Program
from .semantics import STEP_SCHEMA

INT_OPS = {"arith.addi": K.S_ADD, "arith.subi": K.S_SUB, "arith.muli": K.S_MUL, "arith.andi": K.S_AND,
           "arith.ori": K.S_OR, "llvm.or": K.S_OR, "arith.xori": K.S_XOR, "arith.maxui": K.S_MAXU,
           "arith.minui": K.S_MINU, "arith.maxsi": K.S_MAXS, "arith.minsi": K.S_MINS, "arith.shli": K.S_SHL,
           "arith.shrui": K.S_SHRU, "arith.divui": K.S_DIVU, "arith.remui": K.S_REMU}
FLOAT_OPS = {("arith.addf", "f32"): K.S_ADDF32, ("arith.subf", "f32"): K.S_SUBF32,
             ("arith.mulf", "f32"): K.S_MULF32, ("arith.addf", "f64"): K.S_ADDF64,
             ("arith.subf", "f64"): K.S_SUBF64, ("arith.mulf", "f64"): K.S_MULF64}
PREDICATES = {"eq": K.P_EQ, "ne": K.P_NE, "slt": K.P_SLT, "sle": K.P_SLE, "sgt": K.P_SGT, "sge": K.P_SGE,
              "ult": K.P_ULT, "ule": K.P_ULE, "ugt": K.P_UGT, "uge": K.P_UGE}
VECTOR_FAMILIES = ("FixedVectorIntegerAddSub", "FixedVectorIntegerLogic", "FixedVectorFloatSign")


def _attr(attributes, name):
    return dict(attributes).get(name)


def _stateless(key):
    """(opcode, width, predicate) of a stateless kernel's key (semantics.stateless_kernel), or None."""
    from ..schemas import Actor, effective_rounding
    from ..types import FloatType, IntegerType

    schema, inputs, results, attributes, _, family = key
    t = inputs[0] if inputs else None
    if family in VECTOR_FAMILIES:
        return None
    if isinstance(t, IntegerType) and t.width <= 64:
        if schema in INT_OPS:
            return INT_OPS[schema], t.width, 0
        if schema == "arith.cmpi" and _attr(attributes, "predicate") in PREDICATES:
            return K.S_CMP, t.width, PREDICATES[_attr(attributes, "predicate")]
        return None
    if isinstance(t, FloatType) and (schema, t.format) in FLOAT_OPS:
        if effective_rounding(Actor(schema, inputs, results, attributes)) == "to_nearest_even":
            return FLOAT_OPS[schema, t.format], t.width, 0
    return None


def _code(key):
    """(opcode, width, predicate, step opcode) of a group's kernel key, or None (not covered)."""
    from ..types import IntegerType

    if not isinstance(key, tuple) or not key:
        return None
    if key[0] == "arith.select" and len(key) == 3:
        return K.S_SELECT, 64, 0, 0
    if key[0] == "dataflow.stream" and len(key) == 3:
        _, attributes, inputs = key
        kind, pred = _attr(attributes, "step_kind"), _attr(attributes, "predicate")
        if not (isinstance(inputs[0], IntegerType) and inputs[0].width <= 64) or pred not in PREDICATES \
                or STEP_SCHEMA.get(kind) not in INT_OPS:
            return None
        return K.S_STREAM, inputs[0].width, PREDICATES[pred], INT_OPS[STEP_SCHEMA[kind]]
    if len(key) == 6:
        c = _stateless(key)
        return None if c is None else (*c, 0)
    return None


def semantic_table(p: Program):
    """The loop's table ([actors, 4]: kernel.SM_* columns) for a program it covers, else None."""
    T = p.T
    if p.B != 1:
        return None
    sem = np.zeros((T.ai.shape[0], 4), np.int64)
    sem[:, K.SM_OP] = -1
    for g in p.groups:
        c = _code(g.key)
        if c is None or max(g.in_words) != 1 or max(g.out_words) != 1:
            return None
        sem[g.actors] = c
    return sem
