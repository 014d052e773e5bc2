"""The fixed cost of small MachineBatch steps, as stream goldens take them (issue 32 targets 5, 6).

    python benchmarks/bench_small_steps.py record steps.pkl 11000   # record a generation's steps
    python benchmarks/bench_small_steps.py time steps.pkl 5         # CPU per step, min/median of 5
    python benchmarks/bench_small_steps.py digest steps.pkl         # sha256 of every step's records and final state

`record` runs `tile-emu golden --streams --blocks 8` in-process for about n stream-blocks (seed 5)
and keeps every group's initial stacks (StreamRun's arguments) and its blocks; `time` replays them
on a new MachineBatch per group (MachineBatch.from_stacks, then .step per block) and prints the
CPU time (time.process_time) per step; `digest` hashes every step's commit and fault records, each
group's step errors, statuses and final stacks.  Compare two trees by running `time` and `digest`
with each tree on PYTHONPATH, alternating (a recording is a pickle of descriptors, arrays and
blocks: read it only with the tree that wrote it or one with the same classes)."""
import hashlib
import os
import pickle
import sys
import tempfile
import time

import numpy as np


def record(out: str, n: int) -> None:
    from emulator.golden import streams as S, streams_dataset as SD
    groups = []
    init, step = S.StreamRun.__init__, S.StreamRun.step

    def recording_init(self, config, n, tiles, gprs, backend="cpu"):
        self._steps = []
        groups.append((config, n, {k: (d, e.copy(), f.copy()) for k, (d, e, f) in tiles.items()},
                       None if gprs is None else gprs.copy(), self._steps))
        init(self, config, n, tiles, gprs, backend)

    def recording_step(self, block, index, offset):
        self._steps.append((block, offset))
        return step(self, block, index, offset)

    S.StreamRun.__init__, S.StreamRun.step = recording_init, recording_step
    shapes = tuple(s.name for s in SD.S.SHAPES)
    p = SD.StreamParams(blocks=8, cases=max(1, -(-(-(-n // 8)) // len(shapes))), seed=1, shapes=shapes)
    folder = tempfile.mkdtemp()
    params = {**p.to_json(), "seed": 5}
    for part, k, m in SD.chunks(p):
        SD.write_chunk(folder, params, part.keys(), k, m)
    with open(out + ".tmp", "wb") as f:        # a temporary name, renamed once whole
        pickle.dump(groups, f)
    os.replace(out + ".tmp", out)
    print(f"{len(groups)} groups, {sum(len(g[4]) for g in groups)} steps, machines per group "
          f"{sorted({g[1] for g in groups})}")


def replay(groups, h=None) -> None:
    from emulator.batch import MachineBatch
    for config, n, tiles, gprs, steps in groups:
        b = MachineBatch.from_stacks(config, n, tiles, "cpu", gprs=gprs, detach_stopped=False)
        for block, offset in steps:
            recs = b.step(block, offset=offset)
            if h is not None:
                for g in recs.groups:
                    for name in type(g).__slots__:
                        v = getattr(g, name)
                        h.update(name.encode())
                        h.update(v.tobytes() + str(v.dtype).encode() if isinstance(v, np.ndarray) else repr(v).encode())
        if h is not None:
            h.update(repr(b.step_errors()).encode())
            h.update(b.statuses().tobytes())
            for p in range(4):
                for tid in range(32):
                    for ids, d, e, f in b.stacks(p, tid):
                        for part in (ids.tobytes(), repr(d).encode(), np.asarray(e).tobytes(), np.asarray(f).tobytes()):
                            h.update(part)


def main(argv) -> None:
    what, path = argv[0], argv[1]
    if what == "record":
        record(path, int(argv[2]) if len(argv) > 2 else 11000)
        return
    with open(path, "rb") as f:
        groups = pickle.load(f)
    if what == "digest":
        h = hashlib.sha256()
        replay(groups, h)
        print(h.hexdigest())
        return
    steps = sum(len(g[4]) for g in groups)
    replay(groups)                  # warm-up: imports, compiled kernels, per-key caches
    times = []
    for _ in range(int(argv[2]) if len(argv) > 2 else 5):
        t = time.process_time()
        replay(groups)
        times.append(time.process_time() - t)
    times.sort()
    print(f"{steps} steps: CPU per step min {times[0] / steps * 1e6:.1f} us, median "
          f"{times[len(times) // 2] / steps * 1e6:.1f} us")


if __name__ == "__main__":
    main(sys.argv[1:])
