"""`tile-emu golden ... --format testfloat|arrow --out -`: cases on standard output as they are
generated, for a device under test to consume without storage (docs/golden-format.md,
"Streaming cases into a DUT").

Chunks are generated in the dataset's file order (the same chunks, the same cases as the
dataset the command would write with a folder --out), one at a time: memory holds one chunk
(at most 65,536 cases, 4,096 streams) and its output.  `testfloat`: the TestFloat case lines of
one function (emulator/golden/export.py, the same lines `golden export` writes of the dataset).
`arrow`: the Arrow IPC streaming format -- a schema message, then record batches (one a group of
cases, or a part of one), the end-of-stream marker last -- whose columns are `partition` (the
partition's path, `op=TADD/dtype=FP16`, `blocks=8/shape=r4c8`) followed by the dataset's row
columns.  A reader that closes the pipe (`| head`, a testbench that has what it wanted) ends the
run quietly, exit 0.
"""
from __future__ import annotations

import os
import sys
from types import SimpleNamespace
from typing import Callable

import pyarrow as pa

from ..config import MachineConfig


def arrow_schema(rows: pa.Schema) -> pa.Schema:
    """The record stream's schema: `partition`, then the dataset's row columns."""
    return pa.schema([pa.field("partition", pa.string()), *rows])


def replay_source(profile):
    """What export.table_lines asks of a dataset, for chunks just generated under `profile`."""
    return SimpleNamespace(profile=profile,
                           config=lambda local, matrix: MachineConfig(local, matrix, profile=profile.name))


class _Counting:
    """A binary stream that counts the bytes written through it."""

    def __init__(self, raw):
        self.raw, self.bytes = raw, 0

    def write(self, data) -> int:
        n = self.raw.write(data)
        self.bytes += len(data)
        return n

    def flush(self) -> None:
        self.raw.flush()

    @property
    def closed(self) -> bool:
        return False


def stream(tasks, table: Callable, fmt: str, rows_schema: pa.Schema | None = None,
           lines: Callable | None = None, on_chunk: Callable[[int], None] | None = None, out=None) -> int:
    """Write every chunk of `tasks` ((partition, chunk, cases); `table(part, chunk, n)` makes its
    rows) to `out` (standard output) as `fmt`; the bytes written.  `lines(t, part)` gives the
    testfloat lines of a chunk.  A closed pipe raises BrokenPipeError (see `quiet_stdout`)."""
    sink = _Counting(out if out is not None else sys.stdout.buffer)
    schema = arrow_schema(rows_schema) if fmt == "arrow" else None
    writer = pa.ipc.new_stream(sink, schema) if fmt == "arrow" else None
    for part, chunk, n in tasks:
        t = table(part, chunk, n)
        if writer is not None:
            keys = pa.repeat(pa.scalar(part.path, pa.string()), len(t))
            writer.write_table(pa.Table.from_arrays([keys, *t.columns], schema=schema))
        else:
            for block in lines(t, part):
                sink.write(block)
        sink.flush()
        if on_chunk:
            on_chunk(n)
    if writer is not None:
        writer.close()
    sink.flush()
    return sink.bytes


def quiet_stdout() -> None:
    """After the reader closed the pipe: standard output goes to /dev/null, so that the flush
    at exit does not fail (and print) once more."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
