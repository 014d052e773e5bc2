"""The fold every reduce backend shares: element types, ops, identities and the plan's shape.
The bottom layer of the reduce: `reduce.py` (NumPy/CuPy backend and dispatch), `jit.py` (the
compiled scalar fold) and `gpu.py` (its CUDA kernel) import from here and never from each other
upward.  docs/vcg.md "Reduction order" is the contract.

Numerics are kernels.numeric's: each float element type is a floating DataType (`DATATYPE`),
whose format row, canonical NaN and encoder live in kernels/numeric/formats.py and convert.py.
16-bit floats (FP16 = float16, BF16 = ml_dtypes.bfloat16) have no native arithmetic on every
backend, so every backend gives the bits of one rule: each Add is the exact sum rounded to
nearest even in the 16-bit format, i.e. the element-wise TADD of that DataType (profile ieee),
and Max/Min are its TMAX/TMIN.  The compiled kernels (jit.py) fold float16 in binary64 and
bfloat16 in binary32 and round each Add once more to the format (jit._add16 says why that is the
same sum); where an array module lacks the 16-bit type (bfloat16 on CuPy) the fold runs
kernels.numeric.elementwise on the raw encodings.  NaN results are the format's canonical quiet
NaN (`canonical_nan_bits`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
SUPPORTED_DTYPES = tuple(np.dtype(t) for t in (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", BF16, "float32", "float64"))
# op name -> element kinds it is defined for (seed: IntraSliceReduceOpI32 / OpF32, plus integer Add)
OPS: dict[str, tuple[str, ...]] = {"AddSat": ("int",), "Add": ("int", "float"),
                                   "Min": ("int", "float"), "Max": ("int", "float")}
OP_CODES = {"AddSat": 0, "Add": 1, "Min": 2, "Max": 3}
# the element-wise instruction of kernels.numeric that is each float op (one step of the fold)
TILE_OPS = {"Add": "TADD", "Max": "TMAX", "Min": "TMIN"}
# float element type -> the DataType it is (kernels/numeric/formats.py holds the format)
DATATYPE = {np.dtype(np.float16): "FP16", BF16: "BF16", np.dtype(np.float32): "FP32",
            np.dtype(np.float64): "FP64"}
# the 16-bit floats, which no backend computes with natively on every array module
NARROW = frozenset({np.dtype(np.float16), BF16})


@lru_cache(maxsize=None)
def canonical_nan_bits(dt) -> int:
    """The canonical quiet NaN of a float element type (kernels.numeric.formats.nan_bits).
    kernels.numeric is imported on first use: an integer reduce never loads the numeric layer."""
    from kernels.numeric import formats
    return formats.nan_bits(DATATYPE[np.dtype(dt)])


def is_float(dt) -> bool:
    dt = np.dtype(dt)
    return dt.kind == "f" or dt == BF16


def kind(dtype) -> str:
    dt = np.dtype(dtype)
    if dt not in SUPPORTED_DTYPES:
        raise TypeError(f"element type {dt} is not supported; use one of "
                        f"{', '.join(map(str, SUPPORTED_DTYPES))}")
    return "float" if is_float(dt) else "int"


def check_op(op: str, dtype) -> None:
    if op not in OPS:
        raise ValueError(f"unknown reduce op {op!r}; known: {', '.join(OPS)}")
    if kind(dtype) not in OPS[op]:
        raise ValueError(f"reduce op {op} is not defined for {np.dtype(dtype)} "
                         f"(float ops: Add, Min, Max; integer ops: AddSat, Add, Min, Max)")


def identity(op: str, dtype):
    """The seed of the fold: the op's identity element as a 0-d array of `dtype`."""
    dt = np.dtype(dtype)
    if is_float(dt):
        return np.array({"Add": -0.0, "Max": -np.inf, "Min": np.inf}[op], dtype=dt)
    info = np.iinfo(dt)
    return np.array({"AddSat": 0, "Add": 0, "Max": info.min, "Min": info.max}[op], dtype=dt)


def raw_dtype(dt) -> np.dtype:
    """The unsigned integer dtype of the same width (the storage of an element's bits)."""
    return np.dtype(f"u{np.dtype(dt).itemsize}")


def fold_dtype(dt) -> np.dtype:
    """The dtype the compiled fold computes in: binary64 for float16, binary32 for bfloat16 (its
    truncation), else the element type."""
    dt = np.dtype(dt)
    return np.dtype(np.float32) if dt == BF16 else np.dtype(np.float64) if dt in NARROW else dt


# ----------------------------------------------------------------------------- plan

@dataclass(frozen=True)
class ReducePlan:
    num_slices: int
    num_steps: int            # 8-way time steps per slice
    narrow: str               # 'trim' | 'split'
    r_in_packet: bool         # True: tree-reduce lanes, OutPacket = m![1 # 4]
    fiber: np.ndarray         # int64[O, J]: 4-way time steps folded into slot o, in order

    @property
    def out_steps(self) -> int:
        return self.fiber.shape[0]

    @property
    def out_lanes(self) -> int:
        """Valid lanes of each output 4-way flit."""
        return 1 if self.r_in_packet else 4
