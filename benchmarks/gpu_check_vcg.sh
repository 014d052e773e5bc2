#!/bin/sh
# VCG reduce on a real GPU: Numba-CUDA kernel and CuPy path, bits checked against the CPU.
# Callable on its own or from benchmarks/gpu_check.sh; exits non-zero if any bit differs.
set -e
cd "$(dirname "$0")/.."
exec python benchmarks/gpu_vcg.py "$@"
