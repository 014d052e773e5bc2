"""Target-neutral scalar primitives for the compiled numeric routines (Numba CPU and Numba-CUDA).

`mul_rn(a, b)` / `add_rn(a, b)`: one IEEE operation rounded to nearest even, never contracted
with a neighbouring one.  On the CPU they are plain fmul/fadd (LLVM contracts only under
fast-math, which no kernel here enables); on CUDA they are the `llvm.nvvm.mul.rn` / `add.rn`
intrinsics, which become `mul.rn` / `add.rn` in PTX and which ptxas never fuses.  (NVVM fuses a
plain `a * b + c` into `fma.rn` even without fast-math: docs/numerics.md, "GPU".)  Every product
whose rounding the reference performs separately from a following sum goes through `mul_rn`.

`f32_bits` / `bits_f32`: binary32 <-> uint32 bit casts (LLVM bitcasts, on both targets).
"""
from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic


def _rn(cpu_op: str, nvvm: str):
    @intrinsic
    def op(typingctx, a, b):
        if not (isinstance(a, types.Float) and a == b):
            return None

        def codegen(context, builder, sig, args):
            if "CUDA" in type(context).__name__:
                kind = "d" if sig.return_type == types.float64 else "f"
                fnty = ir.FunctionType(args[0].type, [args[0].type, args[1].type])
                fn = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.nvvm.{nvvm}.rn.{kind}")
                return builder.call(fn, args)
            return getattr(builder, cpu_op)(*args)
        return a(a, b), codegen
    return op


mul_rn = _rn("fmul", "mul")
add_rn = _rn("fadd", "add")


@intrinsic
def f32_bits(typingctx, x):
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.uint32(types.float32), codegen


@intrinsic
def bits_f32(typingctx, x):
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.uint32), codegen
