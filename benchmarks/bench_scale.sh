#!/bin/sh
# Scale-out figures (docs/performance.md, "Beyond one machine"), all in one run so the ratios
# share the machine's load:
#   1. golden generation in process, on a local cluster of 1 and of 2 workers (wall, cluster
#      start included; and, as the command prints them, the cluster's start -- its workers'
#      warm-up included -- apart from the chunks' time) -> the 1 -> 2 worker scaling of the work;
#   2. the fixed cost of starting (and closing) a local cluster of 1 and of 2 workers;
#   3. a sharded batch run (`tile-emu run --workers`) of 1 and of 2 workers, and in process
#      (the cluster's start, the shards' and the writing's time as the command prints them);
#   4. bytes per case on disk of the datasets written;
#   5. `golden --format testfloat|arrow --out -` into a reader (`wc -c`; testfloat_ver is not
#      installed here) against writing the same cases as Parquet.
# Usage: sh benchmarks/bench_scale.sh [DIR] [CASES]   (default /tmp/bench_scale, 524288 cases)
set -eu
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
d=${1:-/tmp/bench_scale}
cases=${2:-524288}
rm -rf "$d"
mkdir -p "$d"
now() { python3 -c 'import time; print(time.monotonic())'; }
took() { python3 -c "print(f'{$2 - $1:.1f}')"; }
echo "load: $(uptime)"
gen="golden --ops TADD,TCVT --dtypes FP32 --dst-dtypes E4M3 --rmodes RNE --sat 1 --cases $cases --seed 7 --quiet"
for how in inproc w1 w2; do
    extra=""
    [ "$how" = w1 ] && extra="--workers 1"
    [ "$how" = w2 ] && extra="--workers 2"
    t0=$(now)
    python3 -m emulator.cli $gen $extra --out "$d/g-$how" >"$d/g-$how.out" 2>/dev/null
    t1=$(now)
    echo "golden $how: $(took "$t0" "$t1") s wall, $(du -sb "$d/g-$how" | cut -f1) bytes, $((2 * cases)) cases"
    # with --workers: the cluster's start (its warm-up included) and the chunks' time, apart
    grep -h "ready in" "$d/g-$how.out" || true
done
cmp -s "$d/g-inproc/manifest.json" "$d/g-w2/manifest.json" && echo "golden: manifests of 1 process and 2 workers equal"
cat >"$d/cluster_start.py" <<'PY'
import time
from distributed import Client, LocalCluster
if __name__ == "__main__":          # worker processes are spawned: they import this file
    for n in (1, 2):
        t0 = time.monotonic()
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None) as c:
            with Client(c) as client:
                client.submit(abs, -1).result()
                t1 = time.monotonic()
        print(f"local cluster of {n}: {t1 - t0:.1f} s to the first result, {time.monotonic() - t0:.1f} s with closing")
PY
python3 "$d/cluster_start.py" 2>/dev/null
python3 -m emulator.cli asm examples/saxpy.s -o "$d/saxpy1.tbs"
python3 - "$d" <<'PY'
import sys
from emulator import Machine
from emulator.batchio import load_states, save_machines
d = sys.argv[1]
one = open(f"{d}/saxpy1.tbs", "rb").read()
open(f"{d}/saxpy.tbs", "wb").write(one * 32)          # 64 blocks
machines = [Machine.from_state(s) for s in load_states("examples/saxpy.batch.arrow")]
save_machines(machines * 512, f"{d}/batch.arrow")       # 8,192 machines, 8 record batches
PY
for how in inproc w1 w2; do
    extra=""
    [ "$how" = w1 ] && extra="--workers 1"
    [ "$how" = w2 ] && extra="--workers 2"
    t0=$(now)
    python3 -m emulator.cli run "$d/saxpy.tbs" --init "$d/batch.arrow" --out "$d/r-$how.arrow" $extra \
        >"$d/r-$how.out" 2>/dev/null || true
    t1=$(now)
    echo "run $how: $(took "$t0" "$t1") s wall (8,192 machines x 64 blocks; machine 5 of each copy faults at block 0)"
    grep -h "ready in" "$d/r-$how.out" || true
done
cmp -s "$d/r-inproc.arrow" "$d/r-w2.arrow" && echo "run: final states of 1 process and 2 workers equal"
one="golden --ops TADD --dtypes FP32 --cases $cases --seed 7 --quiet"
t0=$(now); python3 -m emulator.cli $one --out "$d/p" >/dev/null 2>&1; t1=$(now)
echo "TADD FP32 as Parquet: $(took "$t0" "$t1") s wall, $(du -sb "$d/p" | cut -f1) bytes"
for fmt in testfloat arrow; do
    t0=$(now)
    n=$(python3 -m emulator.cli $one --format $fmt --out - 2>/dev/null | wc -c)
    t1=$(now)
    echo "TADD FP32 --format $fmt --out - | wc -c: $(took "$t0" "$t1") s wall, $n bytes"
done
echo "load: $(uptime)"
