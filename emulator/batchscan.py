"""Many machines of a state file at once, a block of rows at a time (docs/state-format.md,
"Reading many machines at once"): what `show` and `diff` read a multi-machine file with.

`blocks(f)` walks an open `batchio.StateFile` in blocks of consecutive machines (about
`BLOCK_ROWS` tile rows each, read through the file's record batches) and yields each block
validated as the single-machine loader (`stateio.load_table`) would validate its machines one
by one, but without building a Python object per tile:

* the file's columns, types and nulls are checked once per block;
* the rows are grouped by everything but their payload and definedness bytes (PE, descriptor
  columns, payload and definedness lengths); one row of each group -- with zeroed payload and
  definedness -- goes through `stateio.load_table` itself, so a group is admitted by the very
  code that admits a single-machine file, and its `Descriptor` comes from there;
* what the loader checks across rows or on the bytes is then checked on whole arrays: the bits
  past the last element of each payload and definedness image are zero
  (`tiles.spare_bits`), no (PE, tile) appears twice in a machine, and each machine's tiles fit
  their PE's stores (capacities summed per machine, PE and location);
* each machine's PE entry (GPRs, status) is checked by the loader's metadata check, once per
  distinct entry text.

A machine any of this flags is loaded alone by `StateFile.state(k)`: its error (the loader's
own message, naming the machine, row and column) ends the walk after the blocks before it were
yielded, so callers print as they go.  Memory: one block (its rows and the arrays made from
them) plus what `StateFile` keeps, whatever the file holds.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from isa.atomicio import Shown, shown
from isa.fields import GPR_COUNT, NUM_PES

from .batchio import MACHINE_COLUMN, StateFile
from .config import MachineConfig
from .stateio import FORMAT, META_KEY, SCHEMA, VERSION, StateFileError, load_table
from .tiles import spare_bits, to_logical, unpack_payloads

BLOCK_ROWS = 1 << 15          # tile rows of one block (a machine is never split)
_STRINGS = ("location", "kind", "datatype", "representation", "fmap_layout")
_NUMBERS = ("row", "col", "valid_row", "valid_col", "layout", "capacity", "fmap_pad_bits", "fmap_transposed")
_DUMMY_PES = [{"gprs": ["0x0"] * GPR_COUNT, "status": 0} for _ in range(NUM_PES)]


@dataclass
class Block:
    """Machines [first, stop) of a file, validated.  Rows are sorted by (machine, PE, tile);
    `desc[i]` indexes `descs` (one interned Descriptor per distinct descriptor)."""
    first: int
    stop: int
    machine: np.ndarray             # per row: the machine (first..stop-1)
    pe: np.ndarray
    tile: np.ndarray
    desc: np.ndarray
    descs: list
    payload: pa.Array               # binary, one image per row
    defined: pa.Array
    pes: list                       # per machine: the metadata 'pes' list (4 dicts)
    config: MachineConfig
    texts: list = None              # per machine: its metadata entry's text (equal texts, equal entries)

    def __len__(self) -> int:
        return len(self.machine)

    def gprs(self, k: int) -> np.ndarray:
        """(4, GPR_COUNT) uint64: machine k's GPRs."""
        return np.array([[int(g, 0) if isinstance(g, str) else int(g) for g in pe["gprs"]]
                         for pe in self.pes[k - self.first]], np.uint64)

    def status(self, k: int) -> list[int]:
        return [int(pe["status"]) for pe in self.pes[k - self.first]]

    def images(self, rows: np.ndarray, which: str = "payload") -> np.ndarray:
        """(len(rows), nbytes) uint8: the payload (or definedness) images of `rows`, which share
        one descriptor and so one byte length."""
        cache = self.__dict__.setdefault("_buffers", {})
        if which not in cache:
            cache[which] = _buffers(self.payload if which == "payload" else self.defined)
        return _gather(*cache[which], rows)

    def logical(self, rows: np.ndarray):
        """(bits, defined), each (len(rows), Row, Col): the logical elements of `rows` (one
        descriptor), as Machine.read_tile gives them one tile at a time."""
        d = self.descs[int(self.desc[rows[0]])]
        phys = unpack_payloads(self.images(rows, "payload"), d.elements, d.container)
        dbits = np.unpackbits(self.images(rows, "defined"), axis=-1, bitorder="little", count=d.elements)
        return to_logical(d, phys), to_logical(d, dbits.astype(bool))


def _buffers(arr: pa.Array):
    """(offsets int64 of len(arr) + 1, data uint8) of a binary array."""
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    if arr.type == pa.binary():
        arr = arr.cast(pa.large_binary())
    _, off, data = arr.buffers()
    offsets = np.frombuffer(off, np.int64, len(arr) + 1, arr.offset * 8)
    raw = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    return offsets, raw


def _gather(offsets: np.ndarray, raw: np.ndarray, rows: np.ndarray) -> np.ndarray:
    starts = offsets[rows]
    width = int(offsets[rows[0] + 1] - starts[0]) if len(rows) else 0
    return raw[starts[:, None] + np.arange(width)[None, :]]


def _last_bytes(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(lengths, last byte or 0) of every image of a binary array."""
    offsets, raw = _buffers(arr)
    lengths = np.diff(offsets)
    last = np.zeros(len(lengths), np.uint8)
    some = lengths > 0
    last[some] = raw[offsets[1:][some] - 1]
    return lengths, last


def _codes(col) -> np.ndarray:
    """Dictionary codes of a string column: equal strings, equal codes."""
    enc = pc.dictionary_encode(col)
    enc = enc.combine_chunks() if isinstance(enc, pa.ChunkedArray) else enc
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)


def _params(col) -> np.ndarray:
    """(n, 1 + len(FMAP_PARAMS)) int64: each row's fmap_params length, then its values when it
    has the expected count (a row of another count is a group of its own: its row number)."""
    from .stateio import FMAP_PARAMS
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    k = len(FMAP_PARAMS)
    n = len(arr)
    lengths = pc.list_value_length(arr).to_numpy(zero_copy_only=False).astype(np.int64)
    out = np.zeros((n, 1 + k), np.int64)
    out[:, 0] = lengths
    odd = (lengths != 0) & (lengths != k)
    out[odd, 1] = np.flatnonzero(odd)
    full = np.flatnonzero(lengths == k)
    if len(full):
        offsets = arr.offsets.to_numpy()[full]
        values = arr.values.to_numpy(zero_copy_only=False)
        out[full, 1:] = values[offsets[:, None] + np.arange(k)[None, :]]
    return out


class _Admitted:
    """What the single-machine loader said of each group key and PE-entry text so far (a
    file's groups repeat from block to block)."""

    def __init__(self, f: StateFile):
        self.f = f
        self.keys: dict = {}          # group key (_group_key) -> (Descriptor, config) or None
        self.entries: dict = {}       # entry text -> parsed 'pes' list or None

    def group(self, key: tuple, row: pa.Table, config: MachineConfig | None):
        if key not in self.keys:
            one = row.drop_columns([MACHINE_COLUMN]) if MACHINE_COLUMN in row.column_names else row
            for name in ("payload", "defined"):      # zeroed: only lengths and descriptor matter here
                n = one.column(name)[0].as_buffer().size
                one = one.set_column(one.schema.get_field_index(name), name, pa.array([bytes(n)], pa.binary()))
            meta = {"format": FORMAT, "version": VERSION, "pes": _DUMMY_PES}
            try:
                if self.f._entries is None:
                    from isa import jsontext
                    raw = jsontext.loads((self.f._reader.schema.metadata or {}).get(META_KEY) or b"{}")
                    if isinstance(raw, dict) and "config" in raw:
                        meta["config"] = raw["config"]
                elif self.f._has_config:
                    meta["config"] = self.f._config
                state = load_table("group", one.replace_schema_metadata({META_KEY: json.dumps(meta).encode()}), config)
                pe, tile = row.column("pe")[0].as_py(), row.column("tile")[0].as_py()
                self.keys[key] = (state.pes[pe].tiles[tile].desc, state.config)
            except (StateFileError, ValueError, TypeError, KeyError, OverflowError, RecursionError):
                self.keys[key] = None          # (jsontext.JsonTextError is a ValueError)
        return self.keys[key]

    def entry(self, k: int):
        """(machine k's metadata entry text, its 'pes' list when the loader's metadata check
        admits it, else None)."""
        from .stateio import _meta
        f = self.f
        if f._entries is None:
            key = raw = (f._reader.schema.metadata or {}).get(META_KEY)
        else:
            key = f._entries._text[f._entries._starts[k]:f._entries._ends[k]]
        if key not in self.entries:
            try:
                if f._entries is not None:                # as StateFile.table(k) builds it
                    entry = f._entries[k]
                    raw = json.dumps({"format": FORMAT, "version": VERSION,
                                      "pes": entry.get("pes") if isinstance(entry, dict) else None}).encode()
                one = pa.table({}).replace_schema_metadata({META_KEY: raw}) if raw is not None else pa.table({})
                self.entries[key] = _meta("entry", one)["pes"]
            except (StateFileError, ValueError, TypeError, AttributeError, RecursionError):
                self.entries[key] = None
        return key, self.entries[key]


def _schema_ok(table: pa.Table) -> bool:
    names = table.column_names
    for f in SCHEMA:
        if f.name not in names or table.schema.field(f.name).type != f.type or table.column(f.name).null_count:
            return False
    return all(n in SCHEMA.names or n == MACHINE_COLUMN for n in names)


def _validate(f: StateFile, first: int, stop: int, table: pa.Table, seen: _Admitted, config):
    """(Block, None) for machines [first, stop); (Block of [first, k) or None, the loader's
    error) when machine k is the first invalid one; (None, None) when a machine the arrays doubt
    loads after all (the caller then reads the range the slow way)."""
    if not _schema_ok(table):
        return None, None                        # the loader names the column, one machine at a time
    n = table.num_rows
    count = stop - first
    if MACHINE_COLUMN in table.column_names:
        machine = table.column(MACHINE_COLUMN).to_numpy().astype(np.int64)
    else:
        machine = np.full(n, first, np.int64)
    flagged = np.zeros(count, bool)
    pe = table.column("pe").to_numpy().astype(np.int64)
    tile = table.column("tile").to_numpy().astype(np.int64)
    m, p, t = machine[1:] - machine[:-1], pe[1:] - pe[:-1], tile[1:] - tile[:-1]
    ascending = (m > 0) | ((m == 0) & ((p > 0) | ((p == 0) & (t >= 0))))
    order = np.arange(n) if ascending.all() else np.lexsort((tile, pe, machine))   # written sorted, any order loads
    descs: list = []
    desc_of = np.zeros(n, np.int64)
    cfg = config
    if n:
        plen, plast = _last_bytes(table.column("payload"))
        dlen, dlast = _last_bytes(table.column("defined"))
        cols = [pe] + [_codes(table.column(c)) for c in _STRINGS] + [_integers(table.column(c)) for c in _NUMBERS]
        key = np.column_stack(cols + [_params(table.column("fmap_params")), plen, dlen])
        inverse, first_row = _groups(key)
        good = np.zeros(len(first_row), bool)
        spare_p = np.zeros(len(first_row), np.int64)
        spare_d = np.zeros(len(first_row), np.int64)
        for g, r in enumerate(first_row):
            one = table.slice(int(r), 1)
            got = seen.group(_group_key(one), one, config)
            if got is None:
                continue
            d, cfg = got
            good[g] = True
            spare_p[g] = spare_bits(d.elements, d.container)
            spare_d[g] = spare_bits(d.elements, 1)
            descs.append(d)
        desc_of = (np.cumsum(good) - 1)[inverse]
        ok = good[inverse]
        ok &= (plast.astype(np.int64) >> (8 - spare_p[inverse])) == 0       # the bits past the last
        ok &= (dlast.astype(np.int64) >> (8 - spare_d[inverse])) == 0       # element are zero
        m, p, t = machine[order], pe[order], tile[order]
        dup = np.zeros(n, bool)
        dup[order[1:]] = (m[1:] == m[:-1]) & (p[1:] == p[:-1]) & (t[1:] == t[:-1])
        ok &= ~dup
        flagged[np.unique(machine[~ok] - first)] = True
        if cfg is not None:                       # each machine's tiles fit its PEs' stores
            matrix = pc.equal(table.column("location"), "Matrix").to_numpy(zero_copy_only=False).astype(bool)
            store = np.where(matrix, cfg.matrix_bytes, cfg.local_bytes).astype(np.int64)
            cap = np.minimum(table.column("capacity").to_numpy().astype(np.uint64),
                             (store + 1).astype(np.uint64)).astype(np.int64)
            slot = ((machine - first) * NUM_PES + np.minimum(pe, NUM_PES - 1)) * 2 + matrix
            total = np.bincount(slot, weights=cap, minlength=count * NUM_PES * 2)
            limit = np.tile([cfg.local_bytes, cfg.matrix_bytes], count * NUM_PES)
            flagged |= (total > limit).reshape(count, -1).any(axis=1)
    pes, texts = [], []
    for k in range(first, stop):
        text, e = seen.entry(k)
        flagged[k - first] |= e is None
        pes.append(e)
        texts.append(text)
    if cfg is None:
        cfg = MachineConfig()
    error = None
    for j in np.flatnonzero(flagged):
        try:
            f.state(first + int(j))               # the loader's own verdict and message
        except StateFileError as exc:
            error, stop = exc, first + int(j)
            break
        return None, None                         # admitted after all: read the slow way
    if stop == first:
        return None, error
    keep = order[machine[order] < stop]
    if len(keep) == n and (n == 0 or keep[-1] == n - 1 and (keep[1:] > keep[:-1]).all()):
        payload, defined = table.column("payload"), table.column("defined")      # in order already: no copy
    else:
        payload, defined = table.column("payload").take(pa.array(keep)), table.column("defined").take(pa.array(keep))
    block = Block(first, stop, machine[keep], pe[keep], tile[keep], desc_of[keep], descs, payload, defined,
                  pes[:stop - first], cfg, texts[:stop - first])
    return block, error


def _group_key(row: pa.Table) -> tuple:
    """What the loader's verdict on a row depends on, as plain values: every column but the tile
    id (a uint32 is always below 2^32) and the payload and definedness bytes, whose lengths stand
    in for them.  (Plain values, not a block's dictionary codes, which mean other strings in
    another block.)"""
    values = row.drop_columns([c for c in (MACHINE_COLUMN, "tile") if c in row.column_names]).to_pylist()[0]
    for name in ("payload", "defined"):
        values[name] = len(values[name])
    return tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in values.items())


def _groups(key: np.ndarray):
    """(group of each row, first row of each group) of the rows of an int64 matrix: a hash table
    (Arrow's dictionary encoding of the rows' bytes), not a sort."""
    n, width = key.shape
    rows = pa.FixedSizeBinaryArray.from_buffers(pa.binary(8 * width), n,
                                                [None, pa.py_buffer(np.ascontiguousarray(key).tobytes())])
    inverse = pc.dictionary_encode(rows).indices.to_numpy().astype(np.int64)
    first = np.full(int(inverse.max()) + 1, n, np.int64)
    np.minimum.at(first, inverse, np.arange(n))
    return inverse, first


def _integers(col) -> np.ndarray:
    a = col.to_numpy(zero_copy_only=False)
    return a.astype(np.uint64).view(np.int64) if a.dtype == np.uint64 else a.astype(np.int64)


def _canonical(f: StateFile, first: int, stop: int):
    """Machines [first, stop) loaded one at a time and written back as one canonical table
    (sorted rows, canonical bytes), and the error of the first that does not load (None)."""
    from .stateio import tile_rows
    cols: dict = {name: [] for name in [MACHINE_COLUMN] + SCHEMA.names}
    error = None
    for k in range(first, stop):
        try:
            state = f.state(k)
        except StateFileError as exc:
            error = exc
            stop = k
            break
        rows = tile_rows(state)
        cols[MACHINE_COLUMN] += [k] * len(rows["pe"])
        for name, values in rows.items():
            cols[name] += values
    return pa.table(cols, schema=pa.schema([(MACHINE_COLUMN, pa.uint32())] + list(SCHEMA))), stop, error


def ranges(f: StateFile, machines=None, rows: int | None = None):
    """Consecutive machine ranges [a, b) of about `rows` tile rows each (a machine is never
    split), over `machines` (sorted machine numbers, or a range; default every machine)."""
    bounds = getattr(f, "_bounds", None)
    rows = BLOCK_ROWS if rows is None else rows
    if machines is None:
        machines = range(len(f))
    if isinstance(machines, range) and machines.step == 1:
        a, n = machines.start, machines.stop
        while a < n:
            b = n if bounds is None else int(np.searchsorted(bounds, bounds[a] + rows, "right")) - 1
            b = min(max(b, a + 1), n)
            yield a, b
            a = b
        return
    run: list = []
    for k in machines:
        if run and (k != run[-1] + 1 or (bounds is not None and bounds[k + 1] - bounds[run[0]] > rows)):
            yield run[0], run[-1] + 1
            run = []
        run.append(k)
    if run:
        yield run[0], run[-1] + 1


def read(f: StateFile, first: int, stop: int, seen: "_Admitted", config: MachineConfig | None = None):
    """(Block of machines [first, stop) or of those before the first invalid one (None when it
    is `first`), that machine's StateFileError or None)."""
    block, error = _validate(f, first, stop, f.rows(first, stop), seen, config)
    if block is None and error is None:
        # a machine the arrays doubted loads after all (or a column is off): load the range one
        # machine at a time and check its canonical image
        table, stop, error = _canonical(f, first, stop)
        if stop > first:
            block, again = _validate(f, first, stop, table, _Admitted(f), config)
            if block is None or again is not None:
                raise StateFileError(f"{shown(f.path)}: machines {first}..{stop - 1} load but their rows do not "
                                     f"check as arrays (please report this file)")
    return block, error


def blocks(f: StateFile, machines=None, config: MachineConfig | None = None, rows: int | None = None):
    """Validated blocks of `machines` (sorted machine numbers; default all), in order; the
    first invalid machine raises its StateFileError after the blocks before it."""
    seen = _Admitted(f)
    for a, b in ranges(f, machines, rows):
        block, error = read(f, a, b, seen, config)
        if block is not None:
            yield block
        if error is not None:
            raise error


def reader(f: StateFile) -> "_Admitted":
    """What `read` remembers of a file between blocks."""
    return _Admitted(f)


def label(f: StateFile, k: int):
    return f.path if len(f) == 1 else Shown(f"{shown(f.path)}: machine {k}")
