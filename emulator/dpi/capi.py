"""The C ABI of tile-emu, implemented in Python (docs/cosim-c.md; the declarations are tile_emu.h).

libtile_emu (built by emulator/dpi/build.py with cffi's embedding mode) exports every function of
tile_emu.h; each C entry point starts the embedded interpreter on first use and calls the
function of the same name here through cffi (`te_step` -> `step`).  The functions take and
return exactly the C arguments (cffi cdata), report every outcome as a status code of
tile_emu.h's `enum te_code`, and leave a one-line message for `te_last_message`.  No exception
leaves them: an ApiError is its code and message, anything else is TE_ERR_PYTHON naming the
exception (a bug in tile-emu), so the host simulator keeps running.  A call that fails changes
nothing.

A model is a handle to one `emulator.Machine` or one `emulator.MachineBatch` (te_open_batch,
te_batch): a small integer token, never a pointer, so a closed or foreign handle is refused
(TE_ERR_CLOSED, TE_ERR_ARG) instead of being dereferenced.  Stepping runs `Machine.step` /
`MachineBatch.step` on the block the words decode to; the step's commitlog.Records stay in the
model until the next step and are read out by te_records or the DPI accessors.  Comparisons are
`emulator.cosim.compare` on the model's records and the DUT's.
"""
from __future__ import annotations

import pathlib
import re
import threading
from functools import lru_cache

import numpy as np

from isa.memo import memo

from .. import commitlog as CL
from ..machine import StreamError

HEADER = pathlib.Path(__file__).with_name("tile_emu.h")
_BEGIN, _END = "/* ---- BEGIN CDEF", "/* ---- END CDEF"
DECODE_CACHE = 4096            # distinct blocks whose decoded form is kept (isa.memo rule 2)


# ---------------------------------------------------------------------------- the header

def cdef_text() -> str:
    """The declarations between the BEGIN CDEF and END CDEF lines of tile_emu.h (what cffi reads)."""
    text = HEADER.read_text()
    start = text.index("\n", text.index(_BEGIN)) + 1
    return text[start:text.index(_END)]


@lru_cache(maxsize=1)
def constants() -> dict[str, int]:
    """Every enumerator of tile_emu.h: name -> value (the codes, kinds and field numbers)."""
    body = re.sub(r"/\*.*?\*/", "", cdef_text(), flags=re.S)
    out = {}
    for enum in re.findall(r"enum\s+\w+\s*\{(.*?)\}", body, re.S):
        for name, value in re.findall(r"(TE_\w+)\s*=\s*(-?\d+)", enum):
            out[name] = int(value)
    return out


PROTOTYPE = re.compile(r"^(int|const char \*)\s*(te_\w+)\((.*)\);\s*$", re.M)


def prototypes() -> list[tuple[str, str, str]]:
    """(return type, name, parameter list) of each function tile_emu.h declares, in order."""
    return PROTOTYPE.findall(cdef_text())


K = constants()
OK, MISMATCH, FAULT = K["TE_OK"], K["TE_MISMATCH"], K["TE_FAULT"]
ERR_NULL, ERR_BUFFER, ERR_DECODE = K["TE_ERR_NULL"], K["TE_ERR_BUFFER"], K["TE_ERR_DECODE"]
ERR_STATE_FILE, ERR_PROFILE, ERR_CLOSED = K["TE_ERR_STATE_FILE"], K["TE_ERR_PROFILE"], K["TE_ERR_CLOSED"]
ERR_ARG, ERR_IO, ERR_ORDER = K["TE_ERR_ARG"], K["TE_ERR_IO"], K["TE_ERR_ORDER"]
ERR_PYTHON, ERR_UNAVAILABLE = K["TE_ERR_PYTHON"], K["TE_ERR_UNAVAILABLE"]
CODE_NAMES = {v: n for n, v in K.items() if n.startswith(("TE_OK", "TE_MISMATCH", "TE_ERR_")) or n == "TE_FAULT"}
FIELDS = {n: v for n, v in K.items() if n.startswith("TE_F_")}


class ApiError(Exception):
    """An outcome the caller is told about: a tile_emu.h code and its one-line message."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------------------- cffi

_ffi = None


def ffi():
    """The FFI whose cdata the functions make: the library's own once `install`ed, else one
    declared from tile_emu.h alone (types only; what the in-process tests use)."""
    global _ffi
    if _ffi is None:
        import cffi
        f = cffi.FFI()
        f.cdef(cdef_text())
        _ffi = f
    return _ffi


def install(library_ffi) -> None:
    """Register every function as the `extern "Python"` implementation of te_py_<name> in the
    embedded library (called by its init code, emulator/dpi/build.py)."""
    global _ffi, _NO_MEMORY
    _ffi = library_ffi
    _NO_MEMORY = library_ffi.new("char[]", b"tile-emu: out of memory")
    for _, name, _ in prototypes():
        if name in C_ONLY:
            continue
        fn = globals()[name[3:]]
        error = library_ffi.NULL if name in POINTER_RESULTS else ERR_PYTHON
        library_ffi.def_extern(name="te_py_" + name[3:], error=error)(fn)


C_ONLY = frozenset({"te_code_name"})                        # written in C (build.py): no Python needed
POINTER_RESULTS = frozenset({"te_last_message", "te_version"})


# ---------------------------------------------------------------------------- messages

_tls = threading.local()


def _set_message(text: str) -> None:
    _tls.message = text


def message() -> str:
    """The last call's message in this thread (what te_last_message returns)."""
    return getattr(_tls, "message", "")


def entry(fn):
    """A C entry point: the status code of `fn`, never an exception; the message set."""
    def call(*args):
        _tls.message = ""
        try:
            return fn(*args)
        except ApiError as exc:
            _set_message(str(exc))
            return exc.code
        except MemoryError:
            _set_message(f"te_{fn.__name__}: out of memory")
            return ERR_PYTHON
        except BaseException as exc:          # noqa: BLE001 - nothing may cross into C
            text = str(exc).splitlines()[0] if str(exc) else ""
            _set_message(f"te_{fn.__name__}: internal error in tile-emu: {type(exc).__name__}: {text}")
            return ERR_PYTHON
    call.__name__ = fn.__name__
    call.__doc__ = fn.__doc__
    return call


# ---------------------------------------------------------------------------- models and handles

_models: dict = {}                 # handle (a te_model * cdata: hashed and compared by address) -> Model
_next = [1]
_lock = threading.Lock()


class Model:
    """One handle: a Machine (`machine`) or a MachineBatch (`batch`), the last step's records,
    the words pushed for te_step_pushed, and the DUT records being built for te_check."""

    def __init__(self, machine=None, batch=None):
        self.machine, self.batch = machine, batch
        self.records = None          # commitlog.Records of the last step
        self.block = -1              # the last step's block index
        self.index = 0               # the next step's block index (blocks stepped so far; a
                                     # Machine counts commits, a batch every step, as its step does)
        self._rows = None            # [(group, row)] of `records` in (machine, PE) order
        self._expected = None        # `records` as record dicts (cosim.compare's input)
        self.pushed: list[int] = []
        self.dut: list[dict] = []
        self.difference = None       # the last comparison's cosim.Difference (or a CompareError text)

    @property
    def machines(self) -> int:
        return 1 if self.batch is None else len(self.batch)

    def one(self, what: str):
        if self.batch is not None:
            raise ApiError(ERR_ARG, f"{what}: the handle is a batch of {len(self.batch)} machines; take one "
                                    f"with te_batch_machine")
        return self.machine

    def set_records(self, records, block: int) -> None:
        self.records, self.block, self._rows, self._expected = records, block, None, None
        self.dut, self.difference = [], None

    def rows(self) -> list:
        if self._rows is None:
            rows = [(g, r) for g in self.records.groups for r in range(g.rows)]
            if self.batch is not None:               # the engine groups machines; the log's order is by machine
                rows.sort(key=lambda x: int(x[0].machine[x[1]]))
            self._rows = rows
        return self._rows

    def expected(self) -> list[dict]:
        if self._expected is None:
            self._expected = self.records.to_pylist() if len(self.records) else []
        return self._expected


def _register(model: Model):
    with _lock:
        k = _next[0]
        _next[0] += 1
    h = ffi().cast("te_model *", k)
    _models[h] = model
    return h


def _model(h) -> Model:
    m = _models.get(h)
    if m is not None:
        return m
    if not h:
        raise ApiError(ERR_NULL, "model: a null pointer")
    k = int(ffi().cast("uintptr_t", h))
    if 0 < k < _next[0]:
        raise ApiError(ERR_CLOSED, f"model {k} was closed")
    raise ApiError(ERR_ARG, f"model {k:#x} is not a handle this library returned")


def _need(ptr, name: str) -> None:
    if not ptr:
        raise ApiError(ERR_NULL, f"{name}: a null pointer")


def _text(ptr, name: str, default: str | None = None) -> str | None:
    """A C string argument; NULL (or "") is `default`."""
    if ptr == ffi().NULL:
        return default
    raw = ffi().string(ptr)
    try:
        s = raw.decode()
    except UnicodeDecodeError:
        raise ApiError(ERR_ARG, f"{name}: not UTF-8 text") from None
    return s if s else default


def _out(ptr, value) -> None:
    if ptr:
        ptr[0] = value


# ---------------------------------------------------------------------------- opening and closing

def _profile(name: str | None) -> str | None:
    if name is None:
        return None
    from kernels.numeric.profiles import UnknownProfile, profile
    try:
        return profile(name).name
    except UnknownProfile as exc:
        raise ApiError(ERR_PROFILE, f"profile {name!r}: {exc}") from None


def _backend(name: str | None) -> str:
    from ..backends import BACKENDS, resolve_backend, BackendError
    name = name or "cpu"
    if name not in BACKENDS:
        raise ApiError(ERR_ARG, f"backend {name!r}: choose one of {', '.join(BACKENDS)}")
    try:
        resolve_backend(name)
    except BackendError as exc:
        raise ApiError(ERR_UNAVAILABLE, f"backend {name!r}: {exc}") from None
    return name


def _state_errors():
    from ..stateio import StateFileError
    return (StateFileError, OSError)


@entry
def open(path, profile_name, out):             # noqa: A001 - the C name is te_open
    """te_open: one machine from a state file (or, path NULL or "", an empty one)."""
    _need(out, "model")
    path, prof = _text(path, "state_path"), _profile(_text(profile_name, "profile"))
    from .. import Machine, MachineConfig
    if path is None:
        m = Machine(MachineConfig(profile=prof or "ieee"))
    else:
        try:
            m = Machine.load(path, profile=prof)
        except _state_errors() as exc:
            hint = "; open it with te_open_batch" if "machines" in str(exc) else ""
            raise ApiError(ERR_STATE_FILE, f"{exc}{hint}") from None
    out[0] = _register(Model(machine=m))
    return OK


@entry
def new(profile_name, local_bytes, matrix_bytes, out):
    """te_new: an empty machine of the given store sizes (0: the default)."""
    _need(out, "model")
    prof = _profile(_text(profile_name, "profile")) or "ieee"
    from .. import Machine, MachineConfig
    from ..config import DEFAULT_LOCAL_BYTES, DEFAULT_MATRIX_BYTES
    try:
        config = MachineConfig(int(local_bytes) or DEFAULT_LOCAL_BYTES, int(matrix_bytes) or DEFAULT_MATRIX_BYTES,
                               profile=prof)
    except ValueError as exc:
        raise ApiError(ERR_ARG, str(exc)) from None
    out[0] = _register(Model(machine=Machine(config)))
    return OK


@entry
def open_batch(path, profile_name, backend, out):
    """te_open_batch: every machine of a (multi-machine) state file, stepped together."""
    _need(out, "model")
    path = _text(path, "state_path")
    if path is None:
        raise ApiError(ERR_NULL, "state_path: a batch is opened from a state file")
    prof, name = _profile(_text(profile_name, "profile")), _backend(_text(backend, "backend"))
    from .. import MachineBatch
    try:
        b = MachineBatch.load(path, backend=name, profile=prof)
    except _state_errors() as exc:
        raise ApiError(ERR_STATE_FILE, str(exc)) from None
    out[0] = _register(Model(batch=b))
    return OK


@entry
def batch(models, count, backend, out):
    """te_batch: a batch of copies of `count` one-machine models' states."""
    _need(out, "model")
    _need(models, "models")
    if count == 0:
        raise ApiError(ERR_ARG, "count: a batch needs at least one machine")
    name = _backend(_text(backend, "backend"))
    ms = []
    for k in range(count):
        if models[k] == ffi().NULL:
            raise ApiError(ERR_NULL, f"models[{k}]: a null pointer")
        ms.append(_model(models[k]).one(f"models[{k}]"))
    from .. import MachineBatch
    try:
        b = MachineBatch([m.copy() for m in ms], backend=name)
    except ValueError as exc:
        raise ApiError(ERR_ARG, str(exc)) from None
    out[0] = _register(Model(batch=b))
    return OK


@entry
def batch_machine(h, k, out):
    """te_batch_machine: a new one-machine model holding a copy of machine k of a batch."""
    _need(out, "model")
    m = _model(h)
    if m.batch is None:
        raise ApiError(ERR_ARG, "batch: the handle is one machine, not a batch")
    if k >= len(m.batch):
        raise ApiError(ERR_ARG, f"machine {k} out of range 0..{len(m.batch) - 1}")
    out[0] = _register(Model(machine=m.batch.machine(int(k))))
    return OK


@entry
def machines(h, count):
    _need(count, "count")
    count[0] = _model(h).machines
    return OK


@entry
def save(h, path):
    """te_save: the state to a state file (written to a temporary name and renamed)."""
    m = _model(h)
    path = _text(path, "path")
    if path is None:
        raise ApiError(ERR_NULL, "path: a null pointer or empty")
    from isa.atomicio import OutputPathError
    try:
        (m.machine or m.batch).save(path)
    except (OSError, OutputPathError) as exc:
        raise ApiError(ERR_IO, f"{path}: cannot write ({exc})") from None
    return OK


@entry
def close(h):
    _model(h)
    del _models[h]
    return OK


# ---------------------------------------------------------------------------- stepping

class Undecodable(Exception):
    """Words that are not exactly one block; `.error` the DecodeError, `.text` one line."""

    def __init__(self, error, text: str):
        super().__init__(text)
        self.error, self.text = error, text


def _stream(data: bytes) -> bytes:
    """The one-block .tbs stream of a block's words (docs/encoding.md: header, then the words)."""
    from isa import encoding
    return encoding.HEADER.pack(encoding.MAGIC, encoding.VERSION, 0, 1, len(data) // 8) + data


@lru_cache(maxsize=DECODE_CACHE)
def decoded(data: bytes):
    """The isa Block that the little-endian words `data` encode, or Undecodable naming the
    word.  Kept per distinct words (a block stepped again is the same Block object, whose
    resolution isa.legality keeps on it); a failure is computed afresh each time."""
    from isa import encoding
    from isa.errors import DecodeError
    if not data:
        raise Undecodable(DecodeError(encoding.HEADER_BYTES, "no words"), "no words: a block is at least its BSTART")
    try:
        (_, block), = encoding.iter_blocks(_stream(data))
    except DecodeError as exc:
        k = (exc.offset - encoding.HEADER_BYTES) // encoding.WORD_BYTES
        if 0 <= k < len(data) // 8:
            word = int.from_bytes(data[8 * k: 8 * k + 8], "little")
            where = f"word {k} ({word:#018x})"
        else:
            where = f"after word {len(data) // 8 - 1}"
        reason = re.sub(r"\bbyte (\d+)", lambda x: f"word {(int(x.group(1)) - encoding.HEADER_BYTES) // 8}",
                        exc.reason.replace("the 1 the header declares", "one block"))
        raise Undecodable(exc, f"the words do not decode to one block: {where}: {reason}") from None
    return block


def _step(m: Model, data: bytes, offset: int) -> int:
    """Step the model's machine(s) on the block `data` encodes; the records kept; the code.
    The block index is the engine's own (Machine.step: blocks committed through step;
    MachineBatch.step: steps taken)."""
    off = None if offset < 0 else int(offset)
    try:
        block = decoded(data)
    except Undecodable as exc:
        return _undecodable(m, data, off, exc)
    if m.batch is not None:
        recs = m.batch.step(block, offset=-1 if off is None else off)
        index = recs.groups[0].block if len(recs) else m.index
        m.index = index + 1
        m.set_records(recs, index)
        faults = [g for g in recs.groups if g.record == CL.FAULT]
        if faults:
            g, more = faults[0], sum(x.rows for x in faults) - 1
            _set_message(f"machine {int(g.machine[0])} block {index}: {g.reason} at {g.field or '-'}: {g.message}"
                         + (f" (and {more} more machine(s))" if more else ""))
            return FAULT
        return OK
    try:
        recs = m.machine.step(block, offset=off)
    except StreamError as exc:
        m.set_records(CL.fault_records(exc, block=block), exc.index)
        _set_message(f"block {exc.index}: {exc.detail}")
        return FAULT
    m.index = recs.groups[0].block + 1 if len(recs) else m.index + 1      # a strict no-op counts too
    m.set_records(recs, m.index - 1)
    return OK


def _undecodable(m: Model, data: bytes, off: int | None, exc: Undecodable) -> int:
    """Words that do not decode: the DECODE_ERROR fault record(s), state unchanged (a batch's
    live machines stop there, as MachineBatch.step does).  `m.index` is the next block's index
    (the engine's numbering, as the last step's records gave it)."""
    index = m.index
    if m.batch is not None:
        recs = m.batch.step(_stream(data), offset=-1) if len(data) else CL.Records()
        m.index += 1
        m.set_records(recs.renumbered(block=index, offset=off), index)
    else:
        err = StreamError(index, off, exc.error)
        m.set_records(CL.fault_records(err).renumbered(block=index, offset=off), index)
    raise ApiError(ERR_DECODE, f"block {index}: {exc.text}")


def _desc_sizes(d) -> tuple[int, int]:
    """(payload, definedness) bytes of a commit record of descriptor d, kept on the (immutable)
    descriptor (isa.memo rule 1)."""
    facts = memo(d)
    sizes = facts.get(_SIZES)
    if sizes is None:
        sizes = facts[_SIZES] = (d.payload_nbytes, (d.elements + 7) // 8)
    return sizes


_SIZES = "te_sizes"


def _sizes(m: Model) -> tuple[int, int]:
    """(records, data bytes) of the last step."""
    n, nbytes = 0, 0
    for g in m.records.groups:
        n += g.rows
        if g.desc is not None:
            p, d = _desc_sizes(g.desc)
            nbytes += g.rows * (p + d)
    return n, nbytes


@entry
def step(h, words, nwords, offset, records, data_bytes):
    """te_step: execute one block given its words; its records are kept for te_records."""
    m = _model(h)
    if nwords and not words:
        raise ApiError(ERR_NULL, "words: a null pointer")
    data = ffi().buffer(words, 8 * nwords)[:] if nwords else b""
    if _BIG_ENDIAN:                                # words are host-order uint64; a stream is little-endian
        data = np.frombuffer(data, "=u8").astype("<u8").tobytes()
    if m.pushed:
        m.pushed = []
    return _stepped_counts(m, data, offset, records, data_bytes)


_BIG_ENDIAN = not np.little_endian


def _stepped_counts(m: Model, data: bytes, offset: int, records, data_bytes) -> int:
    """_step, then the step's record count and data bytes into the outputs (a fault or a decode
    fault has its records too)."""
    try:
        code = _step(m, data, offset)
    except ApiError:
        _counts(m, records, data_bytes)
        raise
    _counts(m, records, data_bytes)
    return code


def _counts(m: Model, records, data_bytes) -> None:
    n, nbytes = _sizes(m)
    _out(records, n)
    _out(data_bytes, nbytes)


@entry
def push_word(h, word):
    """te_push_word: one word of the next block (DPI-C: a block word by word)."""
    m = _model(h)
    if len(m.pushed) >= 256:
        raise ApiError(ERR_ARG, "more than 256 words pushed: a block is its BSTART and at most 255 descriptor words")
    m.pushed.append(int(word))
    return OK


@entry
def step_pushed(h, offset, records):
    """te_step_pushed: te_step on the words pushed since the last step."""
    m = _model(h)
    data = np.array(m.pushed, "<u8").tobytes()
    m.pushed = []
    return _stepped_counts(m, data, offset, records, ffi().NULL)


def _stepped(m: Model) -> None:
    if m.records is None:
        raise ApiError(ERR_ORDER, "no block has been stepped on this model")


def _zeroed(ctype: str):
    return ffi().new(ctype + " *")


def _fill_desc(c, d) -> None:
    """A te_desc from an emulator Descriptor."""
    c.datatype = -1 if d.dtype is None else d.dtype
    c.kind = K["TE_PREDICATE"] if d.kind == "predicate" else K["TE_NUMERIC"]
    c.location = K["TE_MATRIX"] if d.location == "Matrix" else K["TE_LOCAL"]
    c.representation = K["TE_CUBE"] if d.representation == "cube" else K["TE_STANDARD"]
    c.row, c.col, c.valid_row, c.valid_col = d.Row, d.Col, d.ValidRow, d.ValidCol
    c.layout = d.Layout
    c.has_fmap = d.fmap is not None
    c.capacity = d.capacity
    c.elements = d.elements
    c.container_bits = d.container
    c.payload_bytes, c.defined_bytes = _desc_sizes(d)


def _name(text: str, size: int) -> bytes:
    return text.encode()[: size - 1]


@lru_cache(maxsize=64)
def _dtype_code(name: str) -> int:
    from isa.datatypes import BY_NAME
    return BY_NAME[name].code if name in BY_NAME else -1


def _record_image(g):
    """A te_record holding what every record of group g shares (all but machine, PE, status
    and the data offsets)."""
    t = _zeroed("te_record")
    t.block = g.block
    t.offset = g.offset
    t.mnemonic = _name(g.mnemonic, 16)
    t.block_datatype = _dtype_code(g.block_datatype)
    if g.desc is None:
        t.record = K["TE_FAULT_RECORD"]
        t.reason = _name(g.reason, 32)
        t.field = _name(g.field, 32)
    else:
        t.record = K["TE_COMMIT"]
        t.tile = g.tile
        _fill_desc(t.desc, g.desc)
    return t


@entry
def records(h, out, capacity, data, data_capacity, count, data_bytes):
    """te_records: the last step's records into caller buffers (TE_ERR_BUFFER: the sizes)."""
    m = _model(h)
    _stepped(m)
    n, nbytes = _sizes(m)
    _out(count, n)
    _out(data_bytes, nbytes)
    if capacity < n or data_capacity < nbytes:
        raise ApiError(ERR_BUFFER, f"the step has {n} record(s) and {nbytes} data bytes; the buffers hold "
                                   f"{capacity} and {data_capacity}")
    if (n and out == ffi().NULL) or (nbytes and data == ffi().NULL):
        raise ApiError(ERR_NULL, "records/data: a null pointer")
    f = ffi()
    size = f.sizeof("te_record")
    at = 0
    made = {}
    for i, (g, r) in enumerate(m.rows()):
        key = id(g)
        if key not in made:
            made[key] = (_record_image(g), None if g.desc is None else tuple(np.ascontiguousarray(x) for x in g.packed()))
        t, packed = made[key]
        t.machine = int(g.machine[r])
        if packed is not None:
            t.pe, t.status = int(g.pe[r]), int(g.status[r])
            payload, defined = packed
            t.payload_offset = at
            f.memmove(data + at, payload[r], payload.shape[1])
            at += payload.shape[1]
            t.defined_offset = at
            f.memmove(data + at, defined[r], defined.shape[1])
            at += defined.shape[1]
        f.memmove(out + i, t, size)
    return OK


def _row(m: Model, index: int):
    _stepped(m)
    rows = m.rows()
    if index >= len(rows):
        raise ApiError(ERR_ARG, f"record {index} out of range: the step has {len(rows)} record(s)")
    return rows[index]


def _desc_value(d, field: int) -> int:
    F = FIELDS
    table = {
        F["TE_F_DATATYPE"]: lambda: -1 if d.dtype is None else d.dtype,
        F["TE_F_KIND"]: lambda: int(d.kind == "predicate"),
        F["TE_F_LOCATION"]: lambda: int(d.location == "Matrix"),
        F["TE_F_REPRESENTATION"]: lambda: int(d.representation == "cube"),
        F["TE_F_ROW"]: lambda: d.Row, F["TE_F_COL"]: lambda: d.Col,
        F["TE_F_VALID_ROW"]: lambda: d.ValidRow, F["TE_F_VALID_COL"]: lambda: d.ValidCol,
        F["TE_F_LAYOUT"]: lambda: d.Layout, F["TE_F_CAPACITY"]: lambda: d.capacity,
        F["TE_F_ELEMENTS"]: lambda: d.elements, F["TE_F_CONTAINER"]: lambda: d.container,
    }
    get = table.get(field)
    if get is None:
        raise ApiError(ERR_ARG, f"field {field}: not a descriptor field (TE_F_DATATYPE..TE_F_CONTAINER)")
    return int(get())


@entry
def record_field(h, index, field, value):
    """te_record_field: one field of record `index` of the last step (DPI-C)."""
    _need(value, "value")
    g, r = _row(_model(h), index)
    F = FIELDS
    head = {F["TE_F_RECORD"]: lambda: int(g.desc is None), F["TE_F_MACHINE"]: lambda: int(g.machine[r]),
            F["TE_F_BLOCK"]: lambda: g.block, F["TE_F_OFFSET"]: lambda: g.offset,
            F["TE_F_BLOCK_DATATYPE"]: lambda: _dtype_code(g.block_datatype)}
    if field in head:
        value[0] = int(head[field]())
        return OK
    if g.desc is None:
        raise ApiError(ERR_ARG, f"record {index} is a fault record ({g.reason}): it has no field {field}")
    if field == F["TE_F_PE"]:
        value[0] = int(g.pe[r])
    elif field == F["TE_F_TILE"]:
        value[0] = int(g.tile)
    elif field == F["TE_F_STATUS"]:
        value[0] = int(g.status[r])
    else:
        value[0] = _desc_value(g.desc, field)
    return OK


def _group_elements(g):
    """(elems (M, E), defined (M, E)) of a commit group, from its tile-store images."""
    from ..tiles import unpack_payloads
    payload, defined = g.packed()
    e = unpack_payloads(payload, g.desc.elements, g.desc.container)
    d = np.unpackbits(defined, axis=-1, bitorder="little", count=g.desc.elements).astype(bool)
    return e, d


@entry
def record_element(h, index, element, value, defined):
    """te_record_element: physical element `element` of commit record `index` (DPI-C)."""
    _need(value, "value")
    _need(defined, "defined")
    g, r = _row(_model(h), index)
    if g.desc is None:
        raise ApiError(ERR_ARG, f"record {index} is a fault record ({g.reason}): it has no elements")
    if element >= g.desc.elements:
        raise ApiError(ERR_ARG, f"element {element} out of range: the tile has {g.desc.elements}")
    e, d = _group_elements(g)
    value[0] = int(e[r, element])
    defined[0] = int(bool(d[r, element]))
    return OK


# ---------------------------------------------------------------------------- comparing

def _difference_text(m: Model, d) -> None:
    m.difference = d
    _set_message(str(d))


def _compare(m: Model, actual: list[dict]) -> int:
    from .. import cosim
    try:
        d = cosim.compare(m.expected(), actual)
    except cosim.CompareError as exc:
        m.difference = str(exc)
        _set_message(str(exc).split("; records of different")[0])
        return MISMATCH
    m.difference = d
    if d is None:
        return OK
    _set_message(str(d))
    return MISMATCH


def _template(m: Model, machine: int, pe: int, tile: int) -> dict | None:
    for r in m.expected():
        if r["record"] == "commit" and r["machine"] == machine and r["pe"] == pe and r["tile"] == tile:
            return r
    return None


def _descriptor_of(row: dict):
    from ..cosim import _descriptor
    return _descriptor(row)


@entry
def dut_commit(h, machine, pe, tile):
    """te_dut_commit: the DUT committed tile `tile` on PE `pe` (of machine `machine`) in the
    last stepped block; its elements follow (te_dut_element), all undefined until given."""
    m = _model(h)
    _stepped(m)
    if machine >= m.machines:
        raise ApiError(ERR_ARG, f"machine {machine} out of range 0..{m.machines - 1}")
    if pe >= 4:
        raise ApiError(ERR_ARG, f"PE {pe} out of range 0..3")
    t = _template(m, machine, pe, tile)
    rec = {"kind": "commit", "machine": int(machine), "pe": int(pe), "tile": int(tile), "template": t,
           "status": None, "elems": None, "defined": None}
    if t is not None:
        n = _descriptor_of(t).elements
        rec["elems"] = np.zeros(n, np.uint64)
        rec["defined"] = np.zeros(n, bool)
    m.dut.append(rec)
    return OK


def _open_commit(m: Model, what: str) -> dict:
    if not m.dut or m.dut[-1]["kind"] != "commit":
        raise ApiError(ERR_ORDER, f"{what}: no DUT commit open (call te_dut_commit first)")
    return m.dut[-1]


@entry
def dut_status(h, status):
    """te_dut_status: the numeric status the DUT reports with its open commit."""
    m = _model(h)
    rec = _open_commit(m, "te_dut_status")
    if status >= 32:
        raise ApiError(ERR_ARG, f"status {status:#x}: the flags are 5 bits (NV=1 DZ=2 OF=4 UF=8 NX=16)")
    rec["status"] = int(status)
    return OK


@entry
def dut_element(h, element, value, defined):
    """te_dut_element: physical element `element` of the open DUT commit."""
    m = _model(h)
    rec = _open_commit(m, "te_dut_element")
    if rec["template"] is None:
        return OK        # the model committed no such tile: te_check reports the record itself
    d = _descriptor_of(rec["template"])
    if element >= d.elements:
        raise ApiError(ERR_ARG, f"element {element} out of range: PE{rec['pe']} tile {rec['tile']} has "
                                f"{d.elements} elements ({d.describe()})")
    if d.container < 64 and value >> d.container:
        raise ApiError(ERR_ARG, f"element {element}: value {value:#x} does not fit the {d.container}-bit container "
                                f"of {d.datatype.name if d.dtype is not None else 'a predicate'}")
    rec["elems"][element] = value
    rec["defined"][element] = bool(defined)
    return OK


@entry
def dut_fault(h, machine, reason, field):
    """te_dut_fault: the DUT rejected the last stepped block with `reason` (at `field`)."""
    m = _model(h)
    _stepped(m)
    if machine >= m.machines:
        raise ApiError(ERR_ARG, f"machine {machine} out of range 0..{m.machines - 1}")
    r = _text(reason, "reason")
    if r is None:
        raise ApiError(ERR_NULL, "reason: a fault names its reason code")
    m.dut.append({"kind": "fault", "machine": int(machine), "reason": r, "field": _text(field, "field", "")})
    return OK


def _dut_rows(m: Model) -> list[dict]:
    from ..tiles import element_dtype, pack_payloads
    out = []
    for rec in m.dut:
        base = {"machine": rec["machine"], "block": m.block}
        if rec["kind"] == "fault":
            out.append({**base, "record": "fault", "reason": rec["reason"], "field": rec["field"]})
            continue
        t = rec["template"]
        if t is None:
            out.append({**base, "record": "commit", "pe": rec["pe"], "tile": rec["tile"]})
            continue
        d = _descriptor_of(t)
        row = dict(t)
        row["payload"] = pack_payloads(rec["elems"].astype(element_dtype(d)), d.container).tobytes()
        row["defined"] = np.packbits(rec["defined"], bitorder="little").tobytes()
        if rec["status"] is None:
            row.pop("status", None)
        else:
            row["status"] = rec["status"]
        out.append(row)
    return out


@entry
def check(h):
    """te_check: the DUT records given since the last step against the model's: TE_OK, or
    TE_MISMATCH with the first difference as the message (and te_last_difference)."""
    m = _model(h)
    _stepped(m)
    actual = _dut_rows(m)
    m.dut = []
    return _compare(m, actual)


def _c_row(m: Model, c, data: bytes, i: int) -> dict:
    """A record dict (docs/commit-log.md's columns) of a caller's te_record."""
    from isa.datatypes import datatype
    from ..tiles import Descriptor
    f = ffi()
    base = {"machine": int(c.machine), "block": int(c.block)}
    if c.record == K["TE_FAULT_RECORD"]:
        return {**base, "record": "fault", "reason": f.string(c.reason).decode(errors="replace"),
                "field": f.string(c.field).decode(errors="replace")}
    if c.record != K["TE_COMMIT"]:
        raise ApiError(ERR_ARG, f"actual[{i}].record {c.record}: TE_COMMIT or TE_FAULT_RECORD")
    d = c.desc
    try:
        kind = "predicate" if d.kind == K["TE_PREDICATE"] else "numeric"
        code = None if kind == "predicate" else datatype(int(d.datatype)).code
        desc = Descriptor("Matrix" if d.location == K["TE_MATRIX"] else "Local", kind, code, int(d.row), int(d.col),
                          int(d.valid_row), int(d.valid_col), int(d.layout),
                          "cube" if d.representation == K["TE_CUBE"] else "standard", int(d.capacity))
        need = (desc.payload_nbytes, (desc.elements + 7) // 8)
    except (KeyError, ValueError, TypeError) as exc:
        raise ApiError(ERR_ARG, f"actual[{i}].desc: {exc}") from None
    parts = []
    for name, n in zip(("payload_offset", "defined_offset"), need):
        at = int(getattr(c, name))
        if at + n > len(data):
            raise ApiError(ERR_BUFFER, f"actual[{i}].{name} {at} + {n} bytes lies past the {len(data)} data bytes")
        parts.append(data[at: at + n])
    exp = _template(m, int(c.machine), int(c.pe), int(c.tile)) or {}
    return {**base, "offset": int(c.offset), "record": "commit",
            "mnemonic": exp.get("mnemonic", f.string(c.mnemonic).decode(errors="replace")),
            "block_datatype": exp.get("block_datatype", ""), "pe": int(c.pe), "tile": int(c.tile),
            "location": desc.location, "kind": kind, "datatype": "" if code is None else desc.datatype.name,
            "row": desc.Row, "col": desc.Col, "valid_row": desc.ValidRow, "valid_col": desc.ValidCol,
            "layout": desc.Layout, "representation": desc.representation, "capacity": desc.capacity,
            "payload": parts[0], "defined": parts[1], "fmap_layout": "", "fmap_params": [], "fmap_pad_bits": 0,
            "fmap_transposed": False, "status": int(c.status)}


@entry
def compare(h, actual, count, data, data_bytes, difference):
    """te_compare: a DUT's records (caller structs and data) against the last step's."""
    m = _model(h)
    _stepped(m)
    if count:
        _need(actual, "actual")
    if data_bytes:
        _need(data, "data")
    raw = bytes(ffi().buffer(data, data_bytes)) if data_bytes else b""
    rows = [_c_row(m, actual[i], raw, i) for i in range(count)]
    code = _compare(m, rows)
    if difference != ffi().NULL:
        _fill_difference(m, difference)
    return code


def _fill_difference(m: Model, out) -> None:
    f = ffi()
    f.memmove(out, bytes(f.sizeof("te_difference")), f.sizeof("te_difference"))
    d = m.difference
    neg = lambda v: -1 if v is None else int(v)      # noqa: E731
    out.block, out.pe, out.tile, out.element, out.row, out.col = -1, -1, -1, -1, -1, -1
    if d is None:
        return
    if isinstance(d, str):
        out.field = b"descriptor"
        return
    out.machine = d.machine
    out.block, out.pe, out.tile = neg(d.block), neg(d.pe), neg(d.tile)
    out.field = _name(d.field, 32)
    if d.element is not None:
        out.element, out.row, out.col = d.element, d.row, d.col
        out.expected_defined, out.actual_defined = int(d.expected is not None), int(d.actual is not None)
        out.expected, out.actual = d.expected or 0, d.actual or 0


@entry
def last_difference(h, out):
    """te_last_difference: the first difference of the last te_compare / te_check."""
    _need(out, "difference")
    _fill_difference(_model(h), out)
    return OK


@entry
def difference_field(h, field, value):
    """te_difference_field: one field of the last difference (DPI-C); -1 where it has none."""
    _need(value, "value")
    m = _model(h)
    d = _zeroed("te_difference")
    _fill_difference(m, d)
    F = FIELDS
    table = {F["TE_F_MACHINE"]: d.machine, F["TE_F_BLOCK"]: d.block, F["TE_F_PE"]: d.pe, F["TE_F_TILE"]: d.tile,
             F["TE_F_ELEMENT"]: d.element, F["TE_F_ROW"]: d.row, F["TE_F_COL"]: d.col,
             F["TE_F_EXPECTED"]: d.expected if d.expected_defined else -1,
             F["TE_F_ACTUAL"]: d.actual if d.actual_defined else -1}
    if field not in table:
        raise ApiError(ERR_ARG, f"field {field}: a difference has TE_F_MACHINE, BLOCK, PE, TILE, ELEMENT, ROW, COL, "
                                f"EXPECTED, ACTUAL")
    value[0] = int(table[field])
    return OK


# ---------------------------------------------------------------------------- state

def _pe(pe: int) -> int:
    if pe >= 4:
        raise ApiError(ERR_ARG, f"PE {pe} out of range 0..3")
    return int(pe)


def _tile(machine, pe: int, tile: int):
    t = machine.store(_pe(pe)).get(int(tile))
    if t is None:
        raise ApiError(ERR_ARG, f"PE{pe} has no tile {tile}")
    return t


@entry
def tile_ids(h, pe, ids, capacity, count):
    """te_tile_ids: the tile ids PE `pe` holds, ascending."""
    _need(count, "count")
    m = _model(h).one("te_tile_ids")
    got = m.tiles(_pe(pe))
    count[0] = len(got)
    if capacity < len(got):
        raise ApiError(ERR_BUFFER, f"PE{pe} holds {len(got)} tiles; the buffer holds {capacity}")
    if got:
        _need(ids, "ids")
        for i, t in enumerate(got):
            ids[i] = t
    return OK


@entry
def tile_count(h, pe, count):
    _need(count, "count")
    count[0] = len(_model(h).one("te_tile_count").tiles(_pe(pe)))
    return OK


@entry
def tile_id(h, pe, index, tile):
    _need(tile, "tile")
    got = _model(h).one("te_tile_id").tiles(_pe(pe))
    if index >= len(got):
        raise ApiError(ERR_ARG, f"index {index} out of range: PE{pe} holds {len(got)} tiles")
    tile[0] = got[index]
    return OK


@entry
def tile_field(h, pe, tile, field, value):
    _need(value, "value")
    t = _tile(_model(h).one("te_tile_field"), pe, tile)
    value[0] = _desc_value(t.desc, field)
    return OK


@entry
def tile_element(h, pe, tile, element, value, defined):
    _need(value, "value")
    _need(defined, "defined")
    t = _tile(_model(h).one("te_tile_element"), pe, tile)
    if element >= t.desc.elements:
        raise ApiError(ERR_ARG, f"element {element} out of range: PE{pe} tile {tile} has {t.desc.elements}")
    value[0] = int(t.elems[element])
    defined[0] = int(bool(t.defined[element]))
    return OK


@entry
def read_tile(h, pe, tile, desc, payload, payload_capacity, defined, defined_capacity):
    """te_read_tile: the descriptor, and (where the buffers are given) the payload and bitmap."""
    _need(desc, "desc")
    from ..tiles import pack_defined, pack_elements
    t = _tile(_model(h).one("te_read_tile"), pe, tile)
    d = t.desc
    f = ffi()
    f.memmove(desc, bytes(f.sizeof("te_desc")), f.sizeof("te_desc"))
    _fill_desc(desc, d)
    need_p, need_d = d.payload_nbytes, (d.elements + 7) // 8
    if (payload != f.NULL and payload_capacity < need_p) or (defined != f.NULL and defined_capacity < need_d):
        raise ApiError(ERR_BUFFER, f"PE{pe} tile {tile}: {need_p} payload and {need_d} definedness bytes; the "
                                   f"buffers hold {payload_capacity} and {defined_capacity}")
    if payload != f.NULL:
        f.memmove(payload, pack_elements(t.elems, d.container), need_p)
    if defined != f.NULL:
        f.memmove(defined, pack_defined(t.defined), need_d)
    return OK


@entry
def write_tile(h, pe, tile, desc, payload, payload_bytes, defined, defined_bytes):
    """te_write_tile: create or replace a tile from its descriptor, tile-store image and
    definedness bitmap (NULL: every element defined), as Machine.write_tile accepts it."""
    _need(desc, "desc")
    m = _model(h).one("te_write_tile")
    pe = _pe(pe)
    from isa.datatypes import datatype
    from ..tiles import Descriptor, to_logical, trailing_bits_zero, unpack_defined, unpack_elements
    kind = "predicate" if desc.kind == K["TE_PREDICATE"] else "numeric"
    if desc.has_fmap:
        raise ApiError(ERR_ARG, "desc.has_fmap: a tile with a TIMG2COL feature-map descriptor comes from a state file "
                                "(te_open); te_write_tile writes tiles without one")
    if desc.kind not in (K["TE_NUMERIC"], K["TE_PREDICATE"]):
        raise ApiError(ERR_ARG, f"desc.kind {desc.kind}: TE_NUMERIC or TE_PREDICATE")
    try:
        code = None if kind == "predicate" else datatype(int(desc.datatype)).code
    except (KeyError, ValueError):
        raise ApiError(ERR_ARG, f"desc.datatype {desc.datatype}: not an assigned DataType code") from None
    rep = "cube" if desc.representation == K["TE_CUBE"] else "standard"
    loc = "Matrix" if desc.location == K["TE_MATRIX"] else "Local"
    rows, cols = int(desc.row), int(desc.col)
    if rows == 0 or cols == 0:
        raise ApiError(ERR_ARG, "desc: Row and Col must be nonzero")
    probe = Descriptor(loc, kind, code, rows, cols, int(desc.valid_row), int(desc.valid_col), int(desc.layout), rep,
                       int(desc.capacity))
    if rep == "standard" and kind == "numeric":
        derived = int(desc.capacity) * 8 // (cols * probe.container)
        if derived != rows:
            raise ApiError(ERR_ARG, f"desc: Row {rows}, but a standard numeric tile's Row is capacity*8 // (Col*bits) "
                                    f"= {derived} (docs/machine.md, 'Capacity and physical rows')")
    if probe.elements > (m.config.store_bytes(loc) * 8) // max(probe.container, 1) + 1:
        raise ApiError(ERR_ARG, f"desc: {probe.elements} elements do not fit the {loc} store")
    if payload_bytes != probe.payload_nbytes:
        raise ApiError(ERR_ARG, f"payload: {payload_bytes} bytes; the descriptor needs {probe.payload_nbytes}")
    _need(payload, "payload")
    image = bytes(ffi().buffer(payload, payload_bytes))
    if not trailing_bits_zero(image, probe.elements, probe.container):
        raise ApiError(ERR_ARG, "payload: bits past the last element of the final byte must be zero")
    elems = unpack_elements(image, probe.elements, probe.container)
    if defined == ffi().NULL:
        mask = np.ones(probe.elements, bool)
    else:
        need = (probe.elements + 7) // 8
        if defined_bytes != need:
            raise ApiError(ERR_ARG, f"defined: {defined_bytes} bytes; {probe.elements} elements need {need}")
        mask = unpack_defined(bytes(ffi().buffer(defined, defined_bytes)), probe.elements)
    try:
        bits, dmask = to_logical(probe, elems), to_logical(probe, mask)
        m.write_tile(pe, int(tile), None if code is None else probe.datatype.name, bits,
                     valid_row=probe.ValidRow, valid_col=probe.ValidCol, capacity=probe.capacity, kind=kind,
                     location=loc, layout=probe.Layout, defined=dmask, representation=rep)
    except (ValueError, KeyError, IndexError) as exc:
        raise ApiError(ERR_ARG, f"PE{pe} tile {tile}: {exc}") from None
    return OK


@entry
def get_gpr(h, pe, index, value):
    _need(value, "value")
    m = _model(h).one("te_get_gpr")
    if index >= m.config.gpr_count:
        raise ApiError(ERR_ARG, f"GPR index {index} out of range 0..{m.config.gpr_count - 1}")
    value[0] = m.gpr(_pe(pe), int(index))
    return OK


@entry
def set_gpr(h, pe, index, value):
    m = _model(h).one("te_set_gpr")
    try:
        m.set_gpr(_pe(pe), int(index), int(value))
    except ValueError as exc:
        raise ApiError(ERR_ARG, str(exc)) from None
    return OK


@entry
def get_status(h, pe, status):
    _need(status, "status")
    status[0] = _model(h).one("te_get_status").status(_pe(pe))
    return OK


# ---------------------------------------------------------------------------- messages

def last_message():
    """te_last_message: the last call's message in this thread (library-owned; valid until the
    thread's next call)."""
    text = message()
    held = getattr(_tls, "buffer", None)
    if held is None or held[0] is not text:
        try:
            held = _tls.buffer = (text, ffi().new("char[]", text.encode(errors="replace")))
        except MemoryError:
            return _NO_MEMORY
    return held[1]


_NO_MEMORY = None          # set by install: a static "out of memory" text (never NULL to C)


_VERSION = []


def version():
    """te_version: the tile-emu version string."""
    if not _VERSION:
        from ..cli import version as v
        _VERSION.append(ffi().new("char[]", f"tile-emu {v()}".encode()))
    return _VERSION[0]
