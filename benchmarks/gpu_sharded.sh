#!/bin/sh
# A sharded batch run on the GPU (docs/machine.md, "Sharded runs"): saxpy over 2,048 machines
# (examples/saxpy.batch.arrow 128 times: 2 record batches), run with `--backend gpu --workers 1`
# (dask-cuda's LocalCUDACluster, one worker on the one GPU) and in one process on the CPU; the
# final states and commit logs must be the same bytes.  Usage: sh benchmarks/gpu_sharded.sh [DIR]
# (needs dask-cuda: pip install 'tile-emu[gpu]', or its wheel in .whl/ for gpu_check.sh).
set -eu
cd "$(dirname "$0")/.."
d=${1:-/tmp/gpu_sharded}
mkdir -p "$d"
python3 -m emulator.cli asm examples/saxpy.s -o "$d/saxpy.tbs"
python3 - "$d/batch.arrow" <<'PY'
import sys
from emulator import Machine
from emulator.batchio import load_states, save_machines
machines = [Machine.from_state(s) for s in load_states("examples/saxpy.batch.arrow")]
save_machines(machines * 128, sys.argv[1])
PY
python3 -m emulator.cli run "$d/saxpy.tbs" --init "$d/batch.arrow" --out "$d/cpu.arrow" --log "$d/cpu.commits.arrow" -q \
    2>"$d/cpu.err" || true
start=$(date +%s)
python3 -m emulator.cli run "$d/saxpy.tbs" --init "$d/batch.arrow" --out "$d/gpu.arrow" --log "$d/gpu.commits.arrow" -q \
    --backend gpu --workers 1 2>"$d/gpu.err" || [ $? = 1 ]      # 1: machine 5 of each copy faults, as on the CPU
echo "sharded gpu run: $(( $(date +%s) - start )) s (cluster start included)"
sed "s/cpu\.arrow/OUT/" "$d/cpu.err" >"$d/cpu.msg"
sed "s/gpu\.arrow/OUT/" "$d/gpu.err" >"$d/gpu.msg"
cmp "$d/cpu.arrow" "$d/gpu.arrow"
cmp "$d/cpu.commits.arrow" "$d/gpu.commits.arrow"
diff "$d/cpu.msg" "$d/gpu.msg"
echo "sharded gpu run: states, log and messages match the CPU run"
