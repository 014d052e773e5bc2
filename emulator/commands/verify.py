"""tile-emu verify DATASET: check a golden dataset, replay every case and compare every field."""
from __future__ import annotations

import os

from emulator.cli import UNAVAILABLE, CommandError
from emulator.backends import BackendError, resolve_backend
from emulator.golden.dataset import GoldenError


def add_arguments(p) -> None:
    p.add_argument("dataset", help="a golden dataset folder (tile-emu golden --out), a hex export of one, or a "
                                   "commit log (.arrow, .jsonl: tile-emu run --log)")
    p.add_argument("--backend", default="cpu", choices=["reference", "cpu", "gpu", "auto"],
                   help="the engine that recomputes each case (default cpu: the batch engine)")
    p.add_argument("--max-report", type=int, default=20, help="mismatches to print before stopping")
    p.add_argument("--oracle", action="store_true",
                   help="check the expected results against independent references (softfloatpy, MPFR, exact "
                        "integers) instead of replaying them through the emulator")
    p.add_argument("--quiet", action="store_true", help="no progress line")


def run(args) -> int:
    from emulator.golden.store import Unavailable
    try:
        return _run(args)
    except Unavailable as exc:      # a dataset URL whose fsspec library is not installed
        raise CommandError(str(exc), UNAVAILABLE) from None


def _run(args) -> int:
    from emulator.commitlog import SUFFIXES
    if os.path.isfile(args.dataset) and args.dataset.endswith(SUFFIXES):
        return _log(args)
    from emulator.golden import kinds
    kind = kinds.detect(args.dataset)       # emulator/golden/kinds: one module per dataset kind
    if args.oracle:
        return _oracle(args, kind)
    if kind is kinds.FALLBACK:              # no other kind claims it: a hex export of any kind, or a dataset
        for k in kinds.KINDS:
            try:
                line = k.hex_export(args.dataset)
            except GoldenError as exc:
                raise CommandError(str(exc), 1) from None
            if line is not None:
                print("verify: " + line)
                return 0
    ds, rows, bad = _replay(args, kind.open_dataset, kind.replay)
    return _verdict(bad, *kind.verdict(ds, rows, args.backend))


def _log(args) -> int:
    """verify LOG.arrow|LOG.jsonl: a commit log read and checked (emulator.commitlog.check_log:
    whole, of the record schema and a version this build reads, every checksum, every column's
    nulls, types and domains, the records in the order a log is written)."""
    from emulator.commitlog import COMMIT, CommitLogError, check_log
    if args.oracle:
        raise CommandError("--oracle checks golden datasets; a commit log is checked without it", 2)
    try:
        got = check_log(args.dataset)
    except CommitLogError as exc:
        raise CommandError(str(exc), 1) from None
    t = got.table
    rec = t["record"].to_numpy(zero_copy_only=False)
    machines = len(set(t["machine"].to_numpy().tolist()))
    if got.checksums:
        sums = f"; {got.checksums:,} checksums match"
    else:
        sums = ""
        print(f"verify: note: {args.dataset} is a format version {got.version} commit log, which carries no "
              f"checksums: a value changed so that its record stays well formed (a payload byte, a status) cannot "
              f"be found by verify")
    print(f"verify: commit log intact ({t.num_rows:,} records: {int((rec == COMMIT).sum()):,} commits, "
          f"{int((rec != COMMIT).sum()):,} faults, {machines:,} machine(s){sums})")
    return 0


def _verdict(bad, replayed: str, matched: str) -> int:
    """Print the mismatch lines and the last line; the exit status (1: a mismatch)."""
    for b in bad:
        print(b)
    if bad:
        print(f"verify: MISMATCH ({len(bad)} shown) after {replayed}")
        return 1
    print(f"verify: {matched}")
    return 0


def _replay(args, open_fn, verify_fn):
    """(dataset, rows replayed, mismatches): the backend resolved first (no usable GPU is one
    line, exit 3, before any progress line), the dataset opened by `open_fn` (every check that
    needs no replay, before any replay), then replayed by `verify_fn` with a progress line."""
    from emulator.golden.runner import Progress
    try:
        resolve_backend(args.backend)
        ds = open_fn(args.dataset)
        progress = Progress(ds.rows, 0, enabled=not args.quiet, label="verify")
        rows, bad = verify_fn(ds, args.backend, progress=lambda k: progress.add(k, 0), limit=max(args.max_report, 1))
        progress.close()
    except BackendError as exc:           # a GPU backend without a usable GPU
        raise CommandError(str(exc), UNAVAILABLE) from None
    except GoldenError as exc:
        raise CommandError(str(exc), 1) from None
    return ds, rows, bad


def _oracle(args, kind) -> int:
    """verify --oracle: the kind's oracle (emulator/golden/oracle.py, streams_oracle.py; no
    emulator kernel runs)."""
    from emulator.golden.runner import Progress
    try:
        m = kind.read_manifest(args.dataset)
        progress = Progress(sum(f["rows"] for p in m["partitions"] for f in p["files"]), 0,
                            enabled=not args.quiet, label="oracle")
        rep = kind.oracle(args.dataset, limit=max(args.max_report, 1), progress=lambda k: progress.add(k, 0))
        progress.close()
    except GoldenError as exc:
        raise CommandError(str(exc), 1) from None
    for line in rep.mismatches:
        print(line)
    print(f"verify --oracle: {rep.rows:,} {rep.rows_are}; "
          + ("MISMATCH" if rep.mismatches else "every checked result matches"))
    print("\n".join(rep.lines()))
    return 1 if rep.mismatches else 0
