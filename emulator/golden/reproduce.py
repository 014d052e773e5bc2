"""One golden case as a reproducer: the `.tbs` stream, the initial state, the expected final
state and the expected commit log (docs/golden-format.md, "Extracting a case").

    r = emulator.golden.extract("vectors/", "op=TADD/dtype=FP16:17")     # or case=17, partition=...
    r.machine.run(r.blocks, log=...)        # a fresh Machine holding the case's initial state
    r.expected, r.log                       # the expected final state (a Machine) and records
    r.write("case17/")                      # what `tile-emu golden extract` writes

A case is named as `tile-emu verify` names it: the `case` column (the case number within its
partition) and the partition, given as its folder (`op=TADD/dtype=FP16`, `blocks=8/shape=r4c8`)
or as the data file verify and examples/rtl/run.py print (`op=TADD/dtype=FP16/part-00000.parquet`,
relative to the dataset or as a path to it).  A dataset of one partition needs no partition.

The expected results come from the dataset's own stored columns, never from a run: the final
state is the initial state overlaid with the stored output tiles (single-block: `outputs`;
streams: the commit records of the blocks run), every PE's status the one the dataset stores
(single-block: `status`; streams: its last commit record's `status`, 0 where no block of the
prefix selected it), and the log the stored records (a fault record from `reason`, `field`,
`message`).  So replaying the files with `tile-emu run` and comparing checks the run against
the dataset, as `verify` does for the whole dataset.
"""
from __future__ import annotations

import json
import os
import pathlib
import shlex
import shutil
import tempfile
from dataclasses import dataclass, field

import numpy as np

from isa import encoding
from isa.atomicio import quote, shown

from .dataset import GoldenError

# file names inside an extract folder (docs/golden-format.md, "Extracting a case")
STREAM, ASM, INIT, EXPECTED, LOG, CASE = "stream.tbs", "stream.s", "init.arrow", "expected.arrow", \
    "expected.jsonl", "case.json"
FINAL, RUN_LOG = "final.arrow", "commits.jsonl"      # what the printed `tile-emu run` writes


class NoSuchCase(GoldenError):
    """A case, partition or block the dataset does not have (a usage error: exit 2)."""


class NotAStateFile(GoldenError):
    """A case whose state a state file cannot hold (docs/state-format.md's checks): exit 1."""


@dataclass
class Reproducer:
    """A golden case ready to replay.  `machine` is a fresh Machine at the case's initial state
    (a new one on each access); `blocks` the blocks to run (the stream, or its prefix up to
    `block`); `stream` their `.tbs` bytes; `expected` a Machine holding the expected final
    state; `log` the expected commit records (emulator.commitlog.Records, machine 0)."""
    dataset: str
    kind: str                     # "golden" (single-block) or "streams"
    partition: str
    file: str                     # the data file, relative to the dataset
    case: int
    cls: str
    block: int | None             # --block: the last block of the prefix (None: the whole stream)
    blocks: list
    stream: bytes
    asm: str
    outcome: str                  # "commit" (every block of the prefix) or "fault"
    fault: dict | None            # block, reason, field, message of the fault the prefix ends at
    expected: object              # emulator.Machine
    log: object                   # emulator.commitlog.Records
    _initial: object = field(repr=False, default=None)

    @property
    def machine(self):
        return self._initial.copy()

    @property
    def spec(self) -> str:
        """The --case text naming this case."""
        return f"{self.partition}:{self.case}"

    def info(self) -> dict:
        return {"dataset": self.dataset, "kind": self.kind, "partition": self.partition, "file": self.file,
                "case": self.case, "class": self.cls, "block": self.block, "blocks": len(self.blocks),
                "outcome": self.outcome, "fault": self.fault, "asm": self.asm,
                "local_bytes": self.expected.config.local_bytes, "matrix_bytes": self.expected.config.matrix_bytes,
                "profile": self.expected.config.profile}

    def write(self, out) -> dict:
        """Write the files into the new folder `out` (a temporary folder beside it, renamed
        when complete: an interrupted write leaves nothing under `out`); their paths by name."""
        from ..commitlog import open_log
        out = pathlib.Path(out)
        parent = out.parent if str(out.parent) else pathlib.Path(".")
        tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=parent))
        try:
            (tmp / STREAM).write_bytes(self.stream)
            (tmp / ASM).write_text(self.asm + "\n")
            self._initial.save(tmp / INIT)
            self.expected.save(tmp / EXPECTED)
            self._loads(tmp)
            with open_log(tmp / LOG, machines=1) as log:
                log.write(self.log)
            (tmp / CASE).write_text(json.dumps(self.info(), indent=1) + "\n")
            if out.is_dir():
                out.rmdir()                   # an empty folder (the caller checked): replaced
            os.rename(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return {name: out / name for name in (STREAM, ASM, INIT, EXPECTED, LOG, CASE)}

    def _loads(self, tmp: pathlib.Path) -> None:
        """Both states load as state files (`tile-emu run --init` reads them): a golden case may
        hold a tile the state-file format refuses (a TIMG2COL SOURCE_KIND case's Local tile with
        a feature-map descriptor), which only the Python API replays."""
        from ..machine import Machine
        from ..stateio import StateFileError
        for name in (INIT, EXPECTED):
            try:
                Machine.load(tmp / name)
            except StateFileError as exc:
                why_not = str(exc).split(": ", 1)[-1]
                raise NotAStateFile(f"{self.spec}: its {'initial' if name == INIT else 'expected final'} state holds "
                                    f"what no state file can ({shown(why_not, 160)}); replay it from Python: "
                                    f"emulator.golden.extract(DIR, {self.spec!r}).machine") from None

    def commands(self, out) -> list[str]:
        """The shell commands that replay the written files and compare the results."""
        q = lambda name: shlex.quote(str(pathlib.Path(out) / name))     # noqa: E731
        return [f"tile-emu run {q(STREAM)} --init {q(INIT)} --out {q(FINAL)} --log {q(RUN_LOG)}",
                f"tile-emu diff {q(EXPECTED)} {q(FINAL)}",
                f"cmp {q(LOG)} {q(RUN_LOG)}"]


def extract(dataset, case, block: int | None = None, partition: str | None = None) -> Reproducer:
    """The Reproducer of case `case` of the dataset in folder `dataset` (checked as `verify`
    checks it before its replay: GoldenError for a damaged dataset).  `case`: the case number,
    or `PARTITION:K` / `FILE:K` text; `partition` names the partition when `case` is a number.
    `block` (stream datasets): the prefix of blocks 0..block.  NoSuchCase for a partition, case
    or block the dataset does not have."""
    from . import kinds
    folder = str(dataset)
    kind = kinds.detect(folder)
    ds = kind.open_dataset(folder)
    part, k = _parse(ds, folder, case, partition)
    files = _files(ds, kind)
    cc = ds.params.chunk_cases
    for p, chunk, rec, read in files:
        if p.path == part and chunk * cc <= k < chunk * cc + rec["rows"]:
            t = read()
            cases = t.column("case").to_numpy()
            hit = np.flatnonzero(cases == k)
            if len(hit):
                row = t.slice(int(hit[0]), 1)
                if kind.NAME == "streams":
                    return _stream_case(ds, folder, part, rec["path"], row, block)
                return _single_case(ds, folder, part, rec["path"], row, block)
    total = sum(rec["rows"] for p, _, rec, _ in files if p.path == part)
    raise NoSuchCase(f"{part}: no case {k} (its cases are 0 to {total - 1})" if total else f"{part}: holds no case")


def _files(ds, kind) -> list:
    """(partition, chunk, manifest record, read()) for every data file of the dataset."""
    if kind.NAME == "streams":
        return [(p, c, rec, lambda p=p, c=c, rec=rec: ds.read(p, c, rec)) for p, c, rec in ds.files]
    return [(f.partition, f.chunk, f.record, lambda f=f: ds.read(f)) for f in ds.files]


def _parse(ds, folder: str, case, partition: str | None) -> tuple[str, int]:
    """(partition path, case number) of a --case text (docs: "Extracting a case")."""
    names = [p.path for p in ds.partitions]
    text = str(case)
    where, sep, number = text.rpartition(":")
    if not sep:
        where = partition or ""
    elif partition:
        raise NoSuchCase(f"case {quote(text)} names its partition; give --case K or PARTITION:K, not both")
    try:
        k = int(number)
        if k < 0:
            raise ValueError
    except ValueError:
        raise NoSuchCase(f"case {quote(text)}: not a case number (K, PARTITION:K or FILE:K)") from None
    if not where:
        if len(names) != 1:
            raise NoSuchCase(f"the dataset has {len(names)} partitions: name one, as in --case {names[0]}:{k} "
                             f"(partitions: {shown(', '.join(names), 200)})")
        return names[0], k
    rel = where
    if os.path.isabs(where) or os.path.exists(where):     # a path to the file or partition folder
        base = os.path.realpath(folder)
        full = os.path.realpath(where)
        if os.path.commonpath([base, full]) == base:
            rel = os.path.relpath(full, base)
    rel = rel.replace(os.sep, "/").strip("/")
    if rel.endswith(".parquet"):
        rel = rel.rsplit("/", 1)[0] if "/" in rel else ""
    if rel not in names:
        raise NoSuchCase(f"no partition {quote(where)} in {shown(folder)} (partitions: "
                         f"{shown(', '.join(names), 200)})")
    return rel, k


# ---------------------------------------------------------------------------- machines

def _machine(config, tiles: dict, gprs: np.ndarray | None, status):
    """A Machine of `config` holding tiles {(pe, tile): (desc, elems (E,), defined (E,))}
    (physical order), GPRs (4, 32) and per-PE status."""
    from ..machine import Machine
    from ..state import MachineState
    from ..tiles import make_tile
    state = MachineState(config)
    for (pe, tid), (desc, elems, defined) in sorted(tiles.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        state.pes[pe].tiles[tid] = make_tile(desc, np.asarray(elems).reshape(-1), np.asarray(defined).reshape(-1))
    for p, pe in enumerate(state.pes):
        if gprs is not None:
            pe.gprs = np.asarray(gprs[p], np.uint64).copy()
        pe.status = int(status[p])
    return Machine.from_state(state)


def _values(desc, payload: bytes, defined: bytes):
    from ..tiles import element_dtype, unpack_payloads
    pay = np.frombuffer(payload, np.uint8).reshape(1, -1)
    elems = unpack_payloads(np.ascontiguousarray(pay), desc.elements, desc.container).astype(element_dtype(desc))
    dfn = np.unpackbits(np.frombuffer(defined, np.uint8).reshape(1, -1), axis=-1, bitorder="little",
                        count=desc.elements).astype(bool)
    return elems[0], dfn[0]


def _malformed(path: str, k: int) -> GoldenError:
    return GoldenError(f"{shown(path)}: case {k}: a malformed row; run `tile-emu verify`")


def _single_case(ds, folder: str, part: str, path: str, t, block: int | None) -> Reproducer:
    from ..commitlog import Records, block_names, commit_records, fault_group
    from .rows import descriptor_at, tiles_of
    from .replay import rebuild_group
    k = int(t.column("case")[0].as_py())
    if block not in (None, 0):
        raise NoSuchCase(f"{part}: case {k} is a single-block case: --block {block} does not exist (block 0 only)")
    g = rebuild_group(t, ds, path)
    if g is None:
        raise _malformed(path, k)
    tiles = {(pe, s.tile): (s.desc, s.elems[0, j], s.defined[0, j]) for s in g.tiles for j, pe in enumerate(s.pes)}
    gprs = None if g.gprs is None else g.gprs[0]
    initial = _machine(g.config, tiles, gprs, [0] * 4)
    row = t.to_pylist()[0]
    mnemonic, dt = block_names(g.block)
    offset = encoding.HEADER_BYTES
    log, final = Records(), dict(tiles)
    if row["outcome"] == "commit":
        counts, f = tiles_of(t.column("outputs"))
        for j in range(int(counts[0])):
            pe, tid, desc = descriptor_at(f, j)
            payload, defined = f["payload"][j].as_py(), f["defined"][j].as_py()
            final[(pe, tid)] = (desc, *_values(desc, payload, defined))
            log = log + commit_records(block=0, offset=offset, mnemonic=mnemonic, block_datatype=dt, tile=tid,
                                       desc=desc, machine=0, pe=pe, status=int(f["status"][j].as_py()),
                                       payload=np.frombuffer(payload, np.uint8).reshape(1, -1),
                                       defined_bits=np.frombuffer(defined, np.uint8).reshape(1, -1))
        fault = None
    else:
        fault = {"block": 0, "reason": row["reason"], "field": row["field"], "message": row["message"]}
        log = fault_group(0, 0, offset, row["reason"], row["field"], row["message"], mnemonic, dt)
    expected = _machine(g.config, final, gprs, row["status"])
    return Reproducer(folder, "golden", part, path, k, row["class"], block, [g.block], row["stream"], row["asm"],
                      row["outcome"], fault, expected, log, initial)


def _stream_case(ds, folder: str, part: str, path: str, t, block: int | None) -> Reproducer:
    from ..commitlog import COMMIT, Records, commit_records, fault_group
    from . import streams_dataset as SD
    from .streams_replay import rebuild
    k = int(t.column("case")[0].as_py())
    got = rebuild(t, ds, path)
    if got is None:
        raise _malformed(path, k)
    config, _, tiles, gprs, blocks = got
    if block is not None and not 0 <= block < len(blocks):
        raise NoSuchCase(f"{part}: case {k} has blocks 0 to {len(blocks) - 1}: --block {block} does not exist")
    last = len(blocks) - 1 if block is None else block
    row = t.to_pylist()[0]
    layout = SD.parse_layout(row["layout"])
    init = {key: (d, e[0], f[0]) for key, (d, e, f) in tiles.items()}
    initial = _machine(config, init, gprs[0], [0] * 4)
    final, status = dict(init), [0] * 4
    po, do = layout.record_offsets
    log, fault = Records(), None
    rpay, rdef, rstat = row["record_payload"], row["record_defined"], row["record_status"]
    for i, (e, d) in enumerate(zip(layout.records, layout.record_descs)):
        if e["block"] > last:
            break
        if e["record"] == COMMIT:
            payload, defined = rpay[po[i]:po[i + 1]], rdef[do[i]:do[i + 1]]
            final[(e["pe"], e["tile"])] = (d, *_values(d, payload, defined))
            status[e["pe"]] = rstat[i]
            log = log + commit_records(block=e["block"], offset=e["offset"], mnemonic=e["mnemonic"],
                                       block_datatype=e["block_datatype"], tile=e["tile"], desc=d, machine=0,
                                       pe=e["pe"], status=rstat[i],
                                       payload=np.frombuffer(payload, np.uint8).reshape(1, -1),
                                       defined_bits=np.frombuffer(defined, np.uint8).reshape(1, -1))
        else:
            fault = {"block": e["block"], "reason": row["reason"], "field": row["field"], "message": row["message"]}
            log = log + fault_group(0, e["block"], e["offset"], row["reason"], row["field"], row["message"],
                                    e["mnemonic"], e["block_datatype"])
    prefix = blocks[:last + 1]
    stream = encoding.encode(prefix)
    asm = "\n".join(line for line in encoding_text(prefix).splitlines())
    expected = _machine(config, final, gprs[0], status)
    return Reproducer(folder, "streams", part, path, k, row["class"], block, prefix, stream, asm,
                      "fault" if fault else "commit", fault, expected, log, initial)


def encoding_text(blocks) -> str:
    """The canonical text of blocks (with the `# block i, byte N` comment lines disasm prints)."""
    from isa.assembly import disassemble
    return disassemble(blocks)
