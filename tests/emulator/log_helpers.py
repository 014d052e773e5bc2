"""Commit-log checksums as docs/commit-log.md ("Checksums") defines them, computed here with
plain pyarrow, xxhash and int.to_bytes (not emulator.commitlog's code): the tests' reference,
and the tool that re-seals a log a test has edited, so that what `verify` then finds is the
edit itself and not the broken checksum."""
from __future__ import annotations

import json

import pyarrow as pa
import xxhash

CHAIN_START = bytes(16)
CHECKSUM_KEY, RECORDS_KEY = b"tile-emu.commitlog.xxh3_128", b"tile-emu.commitlog.records"
META = {b"tile-emu.commitlog": b'{"format": "tile-emu commit log", "version": 2}'}


def _u64(n: int) -> bytes:
    return n.to_bytes(8, "little")


def arrow_checksum(previous: bytes, batch: pa.RecordBatch) -> bytes:
    """XXH3-128 of the checksum before and the batch's columns in schema order: integers
    little-endian at their width, booleans one byte each, strings/binaries/lists their
    per-record lengths (uint64) then their values (list items int64)."""
    h = xxhash.xxh3_128(previous)
    for f in batch.schema:
        t = f.type
        empty = [] if pa.types.is_list(t) else "" if pa.types.is_string(t) or pa.types.is_binary(t) else 0
        values = [empty if v is None else v for v in batch.column(f.name).to_pylist()]   # a test's nulls
        if pa.types.is_list(t):
            values = [[0 if x is None else x for x in v] for v in values]
        if t == pa.bool_():
            h.update(bytes(int(v) for v in values))
        elif pa.types.is_integer(t):
            signed = pa.types.is_signed_integer(t)
            h.update(b"".join(v.to_bytes(t.bit_width // 8, "little", signed=signed) for v in values))
        elif pa.types.is_list(t):
            h.update(b"".join(_u64(len(v)) for v in values))
            h.update(b"".join(x.to_bytes(8, "little", signed=True) for v in values for x in v))
        else:
            raw = [v.encode() if isinstance(v, str) else v for v in values]
            h.update(b"".join(_u64(len(v)) for v in raw))
            h.update(b"".join(raw))
    return h.digest()


def write_sealed_arrow(path, table: pa.Table, batch_rows: int = 3, metadata=META) -> None:
    """`table` as a version 2 Arrow log: record batches of `batch_rows`, each with its chained
    checksum, and the closing batch (no records: the checksum before alone, the count)."""
    schema = table.schema.with_metadata(metadata) if metadata is not None else table.schema.remove_metadata()
    prev = CHAIN_START
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, schema) as w:
        for b in table.to_batches(max_chunksize=batch_rows):
            if not b.num_rows:
                continue
            prev = arrow_checksum(prev, b)
            w.write_batch(b, custom_metadata={CHECKSUM_KEY: prev.hex().encode()})
        w.write_batch(pa.RecordBatch.from_pylist([], schema=schema),
                      custom_metadata={CHECKSUM_KEY: xxhash.xxh3_128(prev).hexdigest().encode(),
                                       RECORDS_KEY: str(table.num_rows).encode()})


def sealed_jsonl(record_lines: list[str], group: int = 3, version: int = 2) -> str:
    """The text of a version 2 JSON-lines log holding these record lines (each without its
    newline): the header, groups of `group` lines each closed by its checksum line, the
    closing line."""
    out = [json.dumps({"format": "tile-emu commit log", "version": version}, separators=(",", ":"))]
    prev = CHAIN_START
    for i in range(0, len(record_lines), group):
        chunk = record_lines[i: i + group]
        prev = xxhash.xxh3_128(prev + "".join(line + "\n" for line in chunk).encode()).digest()
        out += chunk + ['{"xxh3_128":"%s"}' % prev.hex()]
    out.append('{"records":%d,"xxh3_128":"%s"}' % (len(record_lines), xxhash.xxh3_128(prev).hexdigest()))
    return "\n".join(out) + "\n"


def record_lines(text: str) -> list[str]:
    """The record lines of a version 2 JSON-lines log (header, checksum and closing lines left out)."""
    return [line for line in text.splitlines() if line.startswith('{"machine"')]
