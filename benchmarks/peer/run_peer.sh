#!/usr/bin/env bash
# Peer comparison (issue 32): builds peer_driver.cpp against the public PTO tile library's CPU
# simulator (hw-native-sys/pto-isa, header-only) at -O2 and at -O3 -march=native, single-threaded,
# runs it and our side (ours.py, NUMBA_NUM_THREADS=1: one thread like the peer) alternately for
# ROUNDS rounds, and prints the best elem/s of each case and ours / peer.
#
#   PTO_ISA_DIR=/path/to/pto-isa benchmarks/peer/run_peer.sh [ROUNDS]
#
# PEER_CLOCK=cpu times both sides by their process's CPU time instead of the wall clock (on a shared
# machine the time a contender waits for a core then does not count; cache contention still does).
# PEER_PERCALL=N times each case by the 10th percentile of N single calls on both sides instead of
# the best 0.2 s window (a call's own time; less exposed to waits for a core on a shared machine).
#
# Needs a compiler with C++23's static_assert(false) in uninstantiated templates (the peer's headers
# use it): clang >= 17 or g++ >= 13 (CXX, default clang++-19 if present).  Exit 2: PTO_ISA_DIR unset
# or without include/pto/pto-inst.hpp; 3: the peer does not build (the compiler's first errors shown).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
rounds=${1:-2}
if [[ -z "${PTO_ISA_DIR:-}" || ! -f "$PTO_ISA_DIR/include/pto/pto-inst.hpp" ]]; then
    echo "run_peer.sh: PTO_ISA_DIR must name a pto-isa checkout (no include/pto/pto-inst.hpp under '${PTO_ISA_DIR:-}')" >&2
    exit 2
fi
CXX=${CXX:-$(command -v clang++-19 || command -v clang++ || echo g++)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The peer's own CPU-sim build flags (tests/cpu/st/CMakeLists.txt): -D__CPU_SIM, -include stdint.h
# and stddef.h; plus NDEBUG (its TDIV asserts on every element otherwise) and one thread.
flags=(-std=c++20 -include stdint.h -include stddef.h -D__CPU_SIM -DNDEBUG -DPTO_CPU_MAX_THREADS=1u
       -Wno-ignored-attributes -Wno-macro-redefined -I"$PTO_ISA_DIR/include")
for v in O2 O3n; do
    opt=(-O2); [[ $v == O3n ]] && opt=(-O3 -march=native)
    if ! "$CXX" "${flags[@]}" "${opt[@]}" "$here/peer_driver.cpp" -o "$work/peer_$v" 2>"$work/cc_$v.log"; then
        echo "run_peer.sh: the peer does not build with $CXX ${opt[*]}:" >&2
        grep -m5 error "$work/cc_$v.log" >&2 || tail -5 "$work/cc_$v.log" >&2
        exit 3
    fi
done
echo "# $("$CXX" --version | head -1); pto-isa at $PTO_ISA_DIR; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); clock ${PEER_CLOCK:-wall}"
# 16,384 tiles of 3 operands at once: enlarge the simulator's UB region (its documented override).
export PTO_CPU_SIM_UB_BYTES=$((128 * 1024 * 1024))
for ((r = 1; r <= rounds; r++)); do
    "$work/peer_O2" >>"$work/o2.tsv"
    "$work/peer_O3n" >>"$work/o3n.tsv"
    (cd "$repo" && NUMBA_NUM_THREADS=1 PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}" python "$here/ours.py" --rounds 1) >>"$work/ours.tsv"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python "$here/ratios.py" "$work/ours.tsv" "$work/o2.tsv" "$work/o3n.tsv"
