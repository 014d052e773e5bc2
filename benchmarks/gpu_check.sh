#!/bin/sh
# The one prepared GPU check (run it on a lent GPU machine through the device tool):
#   sh benchmarks/gpu_check.sh
# 1. benchmarks/gpu_numeric.py: every element-wise (op, DataType, profile: ieee, ftz and a5) and
#    every TCVT pair (and a5's wrap/integral pairs in every mode)
#    computed on the device (CuPy arrays in, CuPy arrays out) and compared bit for bit with the
#    CPU path, then the `tile-emu bench --backend gpu` cases as fractions of the device copy
#    bandwidth measured in the same run -> $OUT/gpu_numeric.json and $OUT/gpu_numeric.txt.
# 2. benchmarks/gpu_golden.sh: the batch engine on the device for every instruction the golden
#    generator covers (every instruction and DataType; profile a5's rules under --profile a5): cases generated on
#    the CPU, every one replayed with `tile-emu verify --backend gpu` and compared field by field.
# 3. benchmarks/gpu_vcg.py: the VCG reduce kernels (JSON lines).
# 4. benchmarks/gpu_sharded.sh: a sharded batch run, `--backend gpu --workers 1` (dask-cuda, one
#    worker on the one GPU), against the CPU run's bytes (needs dask-cuda: its wheel in .whl/).
# Everything goes to $OUT (the device tool's output folder; /tmp/gpu_check without it):
# gpu_check.txt is the whole console log.  No network; needs numpy, numba, numba-cuda, cupy;
# gmpy2 is optional (without it TEXP/TLOG/TRSQRT are reported as skipped).  Budget: under
# 8 minutes on one H200; the step time limits (360 + 100 + 90 + 40 s) cap it at 9 min 50 s.  Exit 1 on any mismatch or failure.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
out=${OUT:-/tmp/gpu_check}
mkdir -p "$out"
# The GPU machine has no registry and does not install this package: wheels of what it lacks
# (gmpy2, softfloatpy) travel in the git-ignored .whl/ (device tool: carry [".whl"]; fetch them
# with the `pip download` line in docs/performance.md, "GPU"), and `tile-emu` runs as a module.
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/tile-emu-site .whl/*.whl && export PYTHONPATH="$PYTHONPATH:/tmp/tile-emu-site"
fi
if ! command -v tile-emu >/dev/null 2>&1; then
    mkdir -p /tmp/tile-emu-bin
    printf '#!/bin/sh\nexec python3 -m emulator.cli "$@"\n' >/tmp/tile-emu-bin/tile-emu
    chmod +x /tmp/tile-emu-bin/tile-emu
    export PATH="/tmp/tile-emu-bin:$PATH"
fi
log=$out/gpu_check.txt
: >"$log"
status=0
{
    date -u
    nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv,noheader 2>&1
    python3 -c "import numpy, numba, cupy; print('numpy', numpy.__version__, 'numba', numba.__version__, 'cupy', cupy.__version__)" 2>&1
    python3 -c "from kernels.device import gpu_status; print('gpu_status', gpu_status())" 2>&1
} | tee -a "$log"
step() {    # step SECONDS NAME COMMAND...: run with a time limit, log it, status 1 on failure
    limit=$1; name=$2; shift 2
    echo "== $name" | tee -a "$log"
    start=$(date +%s)
    { timeout "$limit" "$@"; echo $? >"$out/.rc"; } 2>&1 | tee -a "$log"
    rc=$(cat "$out/.rc")
    echo "== $name: exit $rc, $(( $(date +%s) - start )) s" | tee -a "$log"
    [ "$rc" = 0 ] || status=1
}
step 360 numeric python3 benchmarks/gpu_numeric.py --out "$out"
step 100 batch-engine sh benchmarks/gpu_golden.sh "$out/golden" 32
step 90 vcg python3 benchmarks/gpu_vcg.py
step 40 sharded-gpu sh benchmarks/gpu_sharded.sh "$out/sharded"
rm -f "$out/.rc"
echo "gpu_check: exit $status" | tee -a "$log"
exit $status
