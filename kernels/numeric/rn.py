"""Target-neutral scalar primitives for the compiled numeric routines (Numba CPU and Numba-CUDA).

`mul_rn(a, b)` / `add_rn(a, b)`: one IEEE operation rounded to nearest even, never contracted
with a neighbouring one.  On the CPU they are plain fmul/fadd (LLVM contracts only under
fast-math, which no kernel here enables); on CUDA they are the `llvm.nvvm.mul.rn` / `add.rn`
intrinsics, which become `mul.rn` / `add.rn` in PTX and which ptxas never fuses.  (NVVM fuses a
plain `a * b + c` into `fma.rn` even without fast-math: docs/numerics.md, "GPU".)  Every product
whose rounding the reference performs separately from a following sum goes through `mul_rn`.

`prod_err(a, b, r)`: the exact error a*b - r of a binary32 product (CPU: one llvm.fma; CUDA:
binary64 arithmetic, no fma).  `fma_rn(a, b, c)`: an explicit single-rounding fma, for
FP32 TFMA only (`fma_rn`, binary32 for the result and binary64 for its exactness test).

`f32_bits` / `bits_f32`: binary32 <-> uint32 bit casts (LLVM bitcasts, on both targets).
`two_sum(a, b)`: TwoSum in binary32 or binary64, its sum by add_rn.
"""
from __future__ import annotations

from llvmlite import ir
from numba import njit
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


@njit(inline="always", error_model="numpy")
def two_sum(a, b):
    """(s, e): s = RN(a + b) and its exact error (Knuth's TwoSum) in the operands' format, exact
    unless an intermediate overflows; the sum by add_rn, so it is never contracted."""
    s = add_rn(a, b)
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


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


@intrinsic
def prod_err(typingctx, a, b, r):
    """a*b - r for binary32 a, b and r = RN(a*b): the exact error of the product whenever it is
    representable (no underflow or overflow; callers check the range).  CPU: one fused
    multiply-add (llvm.fma.f32, a single instruction where the CPU has FMA) -- an explicit
    error-free transformation, not a contraction.  CUDA: a*b exactly in binary64 (48 bits) minus
    r, with the .rn intrinsics, so the PTX holds no fma at all."""
    if not (a == b == r == types.float32):
        return None

    def codegen(context, builder, sig, args):
        x, y, rr = args
        if "CUDA" in type(context).__name__:
            d = ir.DoubleType()
            fnty = ir.FunctionType(d, [d, d])
            mul = cgutils.get_or_insert_function(builder.module, fnty, "llvm.nvvm.mul.rn.d")
            add = cgutils.get_or_insert_function(builder.module, fnty, "llvm.nvvm.add.rn.d")
            p = builder.call(mul, [builder.fpext(x, d), builder.fpext(y, d)])
            minus_r = builder.fsub(ir.Constant(d, -0.0), builder.fpext(rr, d))   # NVVM's IR has no fneg
            e = builder.call(add, [p, minus_r])
            return builder.fptrunc(e, x.type)
        fnty = ir.FunctionType(x.type, [x.type] * 3)
        fma = cgutils.get_or_insert_function(builder.module, fnty, "llvm.fma.f32")
        return builder.call(fma, [x, y, builder.fneg(rr)])
    return types.float32(types.float32, types.float32, types.float32), codegen


@intrinsic
def fma_rn(typingctx, a, b, c):
    """a*b + c rounded once (RNE, no flush to zero), binary32 or binary64: an explicit fused
    multiply-add (llvm.fma on the CPU, PTX fma.rn on CUDA), used only where one rounding is what
    the algorithm needs; tests/kernels/test_cuda_ptx.py allows exactly these."""
    if not (isinstance(a, types.Float) and a == b == c):
        return None

    def codegen(context, builder, sig, args):
        wide = sig.return_type == types.float64
        if "CUDA" in type(context).__name__:
            name = "llvm.nvvm.fma.rn." + ("d" if wide else "f")
        else:
            name = "llvm.fma." + ("f64" if wide else "f32")
        fnty = ir.FunctionType(args[0].type, [args[0].type] * 3)
        return builder.call(cgutils.get_or_insert_function(builder.module, fnty, name), list(args))
    return a(a, b, c), codegen


# ---------------------------------------------------------------- binary16 <-> binary32

def _hardware_half() -> bool:
    """Whether the CPU code Numba generates converts binary16 <-> binary32 in hardware: x86-64
    with F16C (LLVM's `fptrunc`/`fpext` to `half` become vcvtps2ph/vcvtph2ps) or AArch64
    (fcvt).  Without it LLVM calls compiler-rt's __truncsfhf2/__extendhfsf2, which Numba's JIT
    does not link (a build for NUMBA_CPU_NAME=generic crashed), so `f32_half`/`half_f32` are
    then the integer routines of fastvec.py."""
    from llvmlite import binding as llvm
    from numba.core import config
    triple = llvm.get_process_triple()
    if triple.startswith(("aarch64", "arm64")):
        return True
    if not triple.startswith("x86_64"):
        return False
    if config.CPU_FEATURES is not None:
        return "+f16c" in config.CPU_FEATURES.split(",")
    if config.CPU_NAME not in (None, "host"):
        return False
    return bool(llvm.get_host_cpu_features().get("f16c"))


HARDWARE_HALF = _hardware_half()


@intrinsic
def hw_f32_half(typingctx, x):
    """binary32 -> binary16 bits, rounded to nearest even (LLVM fptrunc: vcvtps2ph on x86 F16C,
    cvt.rn.f16.f32 on CUDA): subnormals and overflow to infinity as IEEE 754 rounds them, NaNs
    quiet with the payload's top bits kept."""
    if x != types.float32:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))
    return types.uint16(types.float32), codegen


@intrinsic
def hw_half_f32(typingctx, h):
    """binary16 bits -> binary32 (exact; LLVM fpext: vcvtph2ps, cvt.f32.f16; a signalling NaN
    comes back quiet with its payload, which callers that need it read from the code)."""
    if not isinstance(h, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        v = args[0]
        if h.bitwidth > 16:
            v = builder.trunc(v, ir.IntType(16))            # the low 16 bits: the code
        elif h.bitwidth < 16:
            v = builder.zext(v, ir.IntType(16))
        return builder.fpext(builder.bitcast(v, ir.HalfType()), ir.FloatType())
    return types.float32(h), codegen
