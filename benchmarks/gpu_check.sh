#!/bin/sh
# The one prepared GPU check (run it on a lent GPU machine through the device tool):
#   sh benchmarks/gpu_check.sh
# Every GPU path is checked bit-for-bit against the CPU reference and timed.  Output lines are
# JSON; with $OUT set (device tool) a copy lands in $OUT/gpu_check.jsonl.  Exit 1 on any
# mismatch.  The device image has numpy, numba(-cuda), cupy, pyarrow; gmpy2 is only needed for
# the rare correctly-rounded fallbacks and is not exercised here.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
log=${OUT:-/tmp}/gpu_check.jsonl
: >"$log"
status=0
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | tee -a "$log"
for script in benchmarks/gpu_numeric.py benchmarks/gpu_vcg.py; do
    echo "== $script" | tee -a "$log"
    python3 "$script" 2>&1 | tee -a "$log" || status=1
done
exit $status
