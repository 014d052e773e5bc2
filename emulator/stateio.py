"""Machine state as an Arrow IPC file (docs/state-format.md).

One row per tile (PE, tile id, descriptor fields, the payload bytes exactly as the tile store
holds them, the definedness bitmap as an explicit binary column -- never Arrow nulls), and the
per-PE GPRs, numeric status and machine configuration as JSON in the schema metadata under the
key `tile-emu.state`.  Loading validates everything and reports the first problem as a
StateFileError naming the row and column; it never raises anything else for bad input.
"""
from __future__ import annotations

import collections
import json

import numpy as np
import pyarrow as pa

from isa import jsontext
from isa.atomicio import atomic_path, quote, shown, why
from isa.datatypes import BY_NAME
from isa.fields import GPR_COUNT, NUM_PES, ZERO_GPR
from kernels.numeric.profiles import PROFILES, UnknownProfile, known, lookup, profile

from .config import MachineConfig
from .state import MachineState, validate_tile
from .tiles import Descriptor, FeatureMap, make_tile, pack_defined, pack_elements, trailing_bits_zero, \
    unpack_defined, unpack_elements

FORMAT = "tile-emu-state"
VERSION = 1
META_KEY = b"tile-emu.state"

SCHEMA = pa.schema([
    ("pe", pa.uint8()),
    ("tile", pa.uint32()),
    ("location", pa.string()),
    ("kind", pa.string()),
    ("datatype", pa.string()),          # DataType name; "" for predicate tiles
    ("row", pa.uint32()),
    ("col", pa.uint32()),
    ("valid_row", pa.uint32()),
    ("valid_col", pa.uint32()),
    ("layout", pa.uint8()),
    ("representation", pa.string()),
    ("capacity", pa.uint64()),
    ("payload", pa.binary()),
    ("defined", pa.binary()),
    ("fmap_layout", pa.string()),       # "" = no feature-map descriptor
    ("fmap_params", pa.list_(pa.int64())),
    ("fmap_pad_bits", pa.uint64()),
    ("fmap_transposed", pa.bool_()),
])
FMAP_PARAMS = FeatureMap.PARAMS


class StateFileError(ValueError):
    """A state file that cannot be loaded; the message says where and why."""


class NotEnoughMemory(StateFileError):
    """A state file that this process has too little memory to read (not a fault of the file)."""


def tile_rows(state) -> dict[str, list]:
    """The tile rows of one machine's state (a Machine or a MachineState: `.pes`), by column."""
    cols: dict[str, list] = {f.name: [] for f in SCHEMA}
    for p in range(NUM_PES):
        pe = state.pes[p]
        for tid in sorted(pe.tiles):
            t = pe.tiles[tid]
            d = t.desc
            fm = d.fmap
            vals = dict(
                pe=p, tile=tid, location=d.location, kind=d.kind,
                datatype="" if d.dtype is None else d.datatype.name,
                row=d.Row, col=d.Col, valid_row=d.ValidRow, valid_col=d.ValidCol, layout=d.Layout,
                representation=d.representation, capacity=d.capacity,
                payload=pack_elements(t.elems, d.container), defined=pack_defined(t.defined),
                fmap_layout="" if fm is None else fm.layout,
                fmap_params=[] if fm is None else list(fm.params()),
                fmap_pad_bits=0 if fm is None else fm.pad_bits,
                fmap_transposed=False if fm is None else fm.transposed)
            for k, v in vals.items():
                cols[k].append(v)
    return cols


def config_json(config: MachineConfig) -> dict:
    """The `config` object of a state file: store sizes, the numeric profile and its version."""
    return {"local_bytes": config.local_bytes, "matrix_bytes": config.matrix_bytes, "profile": config.profile,
            "profile_version": profile(config.profile).version}


def pes_json(state) -> list[dict]:
    """The metadata's `pes` list of one machine's state: each PE's GPRs (hex) and status."""
    return [{"gprs": [f"{int(g):#018x}" for g in pe.gprs], "status": pe.status} for pe in state.pes]


def state_table(state) -> pa.Table:
    """The state file table of one machine (a Machine or a MachineState)."""
    meta = {"format": FORMAT, "version": VERSION, "config": config_json(state.config), "pes": pes_json(state)}
    table = pa.table(tile_rows(state), schema=SCHEMA)
    return table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})


def save_state(state, path) -> None:
    """Write `state` (a Machine or a MachineState) to `path` atomically: a failed write leaves
    an existing file as it was.  An Arrow IPC file needs a regular file: a device path
    (/dev/null) is an OutputPathError."""
    table = state_table(state)
    with atomic_path(path, devices=False) as tmp, pa.OSFile(tmp, "wb") as sink, \
            pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def open_file(path, mapped: bool = True) -> pa.ipc.RecordBatchFileReader:
    """A reader over the IPC file at `path`, its column names checked; record batches are read
    by `read_batch`, one at a time (emulator/batchio.py reads batch files so).  `mapped`: the
    file is memory-mapped (a batch is not copied); otherwise each batch is read into memory of
    its own, freed with it (the pages of a mapped file count as the process's memory while it
    is open)."""
    try:
        reader = pa.ipc.open_file(pa.memory_map(str(path), "r") if mapped else pa.OSFile(str(path), "rb"))
    except FileNotFoundError:
        raise StateFileError(f"{shown(path)}: no such file") from None
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise StateFileError(f"{shown(path)}: not an Arrow IPC file ({why(exc)})") from None
    _column_names(path, reader)    # before validate(), which decodes the names too
    return reader


def read_batch(path, reader: pa.ipc.RecordBatchFileReader, i: int, validate: bool = True) -> pa.RecordBatch:
    """Record batch `i`, validated in full unless it was before (`validate`=False)."""
    try:
        batch = reader.get_batch(i)
    except MemoryError:              # pyarrow's out-of-memory is also an ArrowException: not a bad file
        raise NotEnoughMemory(f"{shown(path)}: not enough memory to read record batch {i}") from None
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise StateFileError(f"{shown(path)}: not an Arrow IPC file ({why(exc)})") from None
    if validate:
        try:   # IPC reads trust buffer offsets; a corrupt offset would abort the process later
            batch.validate(full=True)
        except pa.ArrowException as exc:
            raise StateFileError(f"{shown(path)}: corrupt Arrow data ({why(exc)})") from None
    return batch


def read_table(path) -> pa.Table:
    """The validated Arrow table of a state file (StateFileError when it is none)."""
    reader = open_file(path)
    return pa.Table.from_batches([read_batch(path, reader, i) for i in range(reader.num_record_batches)],
                                 reader.schema)


def _meta(path, table: pa.Table) -> dict:
    raw = (table.schema.metadata or {}).get(META_KEY)
    if raw is None:
        raise StateFileError(f"{shown(path)}: schema metadata has no {META_KEY.decode()!r} key")
    try:
        meta = jsontext.loads(raw, max_depth=jsontext.MAX_DEPTH)
    except jsontext.JsonTextError as exc:
        raise StateFileError(f"{shown(path)}: metadata {META_KEY.decode()!r} is not JSON ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise StateFileError(f"{shown(path)}: metadata format is not {FORMAT!r}")
    if meta.get("version") != VERSION:
        raise StateFileError(f"{shown(path)}: state format version {shown(repr(meta.get('version')))} "
                             f"(this build reads {VERSION})")
    pes = meta.get("pes")
    if not isinstance(pes, list) or len(pes) != NUM_PES:
        raise StateFileError(f"{shown(path)}: metadata 'pes' must list {NUM_PES} PEs")
    for p, pe in enumerate(pes):
        gprs = pe.get("gprs") if isinstance(pe, dict) else None
        if not isinstance(gprs, list) or len(gprs) != GPR_COUNT:
            raise StateFileError(f"{shown(path)}: metadata pes[{p}].gprs must list {GPR_COUNT} values")
        for i, g in enumerate(gprs):
            try:
                v = int(g, 0) if isinstance(g, str) else g
            except ValueError:
                v = None
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 1 << 64:
                raise StateFileError(f"{shown(path)}: metadata pes[{p}].gprs[{i}] = {shown(repr(g))} "
                                     "is not a 64-bit value")
            if i == ZERO_GPR and v:           # r0 holds nothing: a value there is no machine state
                raise StateFileError(f"{shown(path)}: metadata pes[{p}].gprs[0] = {v:#x}: "
                                     f"r0 is the hard-wired zero register")
        st = pe.get("status")
        if not isinstance(st, int) or isinstance(st, bool) or not 0 <= st < 32:
            raise StateFileError(f"{shown(path)}: metadata pes[{p}].status = {shown(repr(st))} is not a 5-bit flag set")
    return meta


def _config(path, meta: dict) -> MachineConfig:
    cfg = meta.get("config", {})
    if not isinstance(cfg, dict):
        raise StateFileError(f"{shown(path)}: metadata config must be an object, not {type(cfg).__name__}")
    profile = cfg.get("profile", MachineConfig.profile)
    if not isinstance(profile, str) or profile not in PROFILES:
        raise StateFileError(f"{shown(path)}: metadata config: unknown profile {shown(repr(profile))} "
                             f"(known: {', '.join(sorted(PROFILES))})")
    version = cfg.get("profile_version")       # absent in files written before versions were recorded
    if version is not None:
        try:
            lookup(profile, version)
        except UnknownProfile:
            raise StateFileError(f"{shown(path)}: metadata config: profile {profile} version "
                                 f"{shown(repr(version))} is not this build's (known: {known()})") from None
    try:   # MachineConfig checks the store sizes' types and ranges
        return MachineConfig(**{k: cfg[k] for k in ("local_bytes", "matrix_bytes") if k in cfg}, profile=profile)
    except (TypeError, ValueError) as exc:
        raise StateFileError(f"{shown(path)}: metadata config: {exc}") from None


def _column_names(path, table) -> list[str]:
    """The column names of a table, file reader or schema, each UTF-8 and none repeated
    (commitlog's reader asks too)."""
    try:
        names = (table if isinstance(table, pa.Schema) else table.schema).names
    except UnicodeDecodeError as exc:
        raise StateFileError(f"{shown(path)}: a column name is not UTF-8 text (byte {exc.start} of a name)") from None
    repeated = [n for n, k in collections.Counter(names).items() if k > 1]
    if repeated:
        raise StateFileError(f"{shown(path)}: column {quote(repeated[0])} appears more than once")
    return names


def _type_text(t: pa.DataType) -> str:
    try:
        return str(t)
    except UnicodeDecodeError:     # a nested field name that is not UTF-8
        return "(a type whose nested field name is not UTF-8)"


def load_state(path, config: MachineConfig | None = None) -> MachineState:
    return load_table(path, read_table(path), config)


def load_table(path, table: pa.Table, config: MachineConfig | None = None) -> MachineState:
    """The machine state one state table holds (`path` names it in messages); emulator/batchio.py
    hands it one machine's rows of a multi-machine file."""
    meta = _meta(path, table)
    names = table.column_names      # read_table checked them
    # An unknown column is refused rather than ignored, so one state has exactly one file
    # image and `diff` never calls two different files the same.
    unknown = [n for n in names if n not in SCHEMA.names]
    if unknown:
        raise StateFileError(f"{shown(path)}: unknown column(s) {quote(', '.join(unknown))} "
                             f"(a state file has exactly the columns of docs/state-format.md)")
    for f in SCHEMA:
        if f.name not in names:
            raise StateFileError(f"{shown(path)}: column {f.name!r} is missing")
        got = table.schema.field(f.name).type
        if got != f.type:
            raise StateFileError(f"{shown(path)}: column {f.name!r} has type {_type_text(got)}, expected {f.type}")
        if table.column(f.name).null_count:
            raise StateFileError(f"{shown(path)}: column {f.name!r} holds nulls (the format uses none)")
    m = MachineState(config or _config(path, meta))
    for p, pe in enumerate(meta["pes"]):
        for i, g in enumerate(pe["gprs"]):
            m.pes[p].gprs[i] = np.uint64(int(g, 0) if isinstance(g, str) else g)
        m.pes[p].status = pe["status"]
    cols = {name: table.column(name).to_pylist() for name in table.column_names
            if name not in ("payload", "defined")}
    payloads = table.column("payload")
    defineds = table.column("defined")
    used: dict[tuple[int, str], int] = {}
    for i in range(table.num_rows):
        def bad(column, why):
            raise StateFileError(f"{shown(path)}: row {i} column {column!r}: {why}")
        pe, tid = cols["pe"][i], cols["tile"][i]
        if pe >= NUM_PES:
            bad("pe", f"PE {pe} out of range 0..{NUM_PES - 1}")
        if tid in m.pes[pe].tiles:
            bad("tile", f"tile {tid} appears twice on PE{pe}")
        kind = cols["kind"][i]
        name = cols["datatype"][i]
        if kind == "predicate":
            if name != "":
                bad("datatype", "predicate tiles carry no DataType (empty string)")
            code = None
        else:
            if name not in BY_NAME:
                bad("datatype", f"{quote(name)} is not an assigned DataType name")
            code = BY_NAME[name].code
        fm = None
        if cols["fmap_layout"][i]:
            params = cols["fmap_params"][i]
            if len(params) != len(FMAP_PARAMS):
                bad("fmap_params", f"{len(params)} values; expected {len(FMAP_PARAMS)} ({', '.join(FMAP_PARAMS)})")
            fm = FeatureMap(cols["fmap_layout"][i], *params, pad_bits=cols["fmap_pad_bits"][i],
                            transposed=cols["fmap_transposed"][i])
        else:   # no descriptor: its columns hold their documented empty values, so one file is one state
            for column, empty in (("fmap_params", []), ("fmap_pad_bits", 0), ("fmap_transposed", False)):
                if cols[column][i] != empty:
                    bad(column, f"{shown(repr(cols[column][i]))} without fmap_layout (no feature map: {empty!r})")
        desc = Descriptor(cols["location"][i], kind, code, cols["row"][i], cols["col"][i], cols["valid_row"][i],
                          cols["valid_col"][i], cols["layout"][i], cols["representation"][i], cols["capacity"][i], fm)
        # Structural checks before touching the payload, so a huge Row cannot allocate memory.
        if desc.location not in ("Local", "Matrix") or kind not in ("numeric", "predicate") \
                or desc.representation not in ("standard", "cube"):
            bad("location/kind/representation", f"{quote(desc.location)}/{quote(kind)}/{quote(desc.representation)}")
        if desc.Row == 0 or desc.Col == 0:
            bad("row/col", "Row and Col must be nonzero")
        payload = payloads[i].as_buffer()
        nbytes = desc.payload_nbytes
        if payload is None or payload.size != nbytes:
            bad("payload", f"{0 if payload is None else payload.size} bytes; the descriptor needs {nbytes}")
        if not trailing_bits_zero(payload, desc.elements, desc.container):
            bad("payload", "bits past the last element of the final byte must be zero")
        dbytes = defineds[i].as_buffer()
        dneed = (desc.elements + 7) // 8
        if dbytes is None or dbytes.size != dneed:
            bad("defined", f"{0 if dbytes is None else dbytes.size} bytes; {desc.elements} elements need {dneed}")
        if not trailing_bits_zero(dbytes, desc.elements, 1):
            bad("defined", "bits past the last element must be zero")
        tile = make_tile(desc, unpack_elements(payload, desc.elements, desc.container),
                         unpack_defined(dbytes, desc.elements))
        store = (pe, desc.location)
        problem = validate_tile(tile, m.config, pe, tid, used.get(store, 0))
        if problem:
            bad("descriptor", problem)
        m.pes[pe].tiles[tid] = tile
        used[store] = used.get(store, 0) + desc.capacity   # running sums: loading stays linear
    return m
