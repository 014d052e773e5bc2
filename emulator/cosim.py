"""Lockstep co-simulation: the scoreboard that names the first difference between two sets of
commit records (docs/commit-log.md) or two machine states.

    d = cosim.compare(expected, actual)     # a Difference, or None when they agree
    print(d)   # machine 0 block 3 PE1 tile 9 element 5 [0,5] E4M3: expected 0x3c (1.5), got 0x3b (1.375)

`expected` and `actual` are commit logs as tables (commitlog.read_log), record batches, or
lists of record dicts; the records of a state file (stateio.state_table) compare too, without
block and status.  Records pair up by (machine, block, PE, tile) and are compared in that
order.  Two records whose descriptors differ (shape, DataType, layout, ...) are not element-
comparable: `compare` raises CompareError, one line naming the field.  Elements undefined in
both records are equal whatever their payload bits (they are not architectural values).
Values are decoded by the format codecs (kernels.numeric.decode).  Nothing here depends on
the RTL example that uses it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isa.datatypes import datatype
from kernels.numeric.flags import describe as describe_flags

from .tiles import Descriptor, FeatureMap, index_grid, unpack_defined, unpack_elements

# Fields that must be equal before elements can be compared: the descriptor, and what the
# record says about the block.
DESCRIPTOR_FIELDS = ("kind", "datatype", "row", "col", "valid_row", "valid_col", "layout", "representation",
                     "location", "capacity", "fmap_layout", "fmap_params", "fmap_pad_bits", "fmap_transposed")
BLOCK_FIELDS = ("mnemonic", "block_datatype")


class CompareError(ValueError):
    """Records that cannot be compared element by element; the message names the field."""


@dataclass(frozen=True)
class Difference:
    """The first place two record sets differ.  `element` is the physical element index
    (`row`, `col` its logical position) for an element difference, None for a record-level one
    (`field` says which: payload, defined, status, record, reason, field, tile, rN, ...).
    `expected`/`actual` are the raw encodings (ints) or a short text; `*_value` decoded."""
    machine: int
    block: int | None
    pe: int | None
    tile: int | None
    field: str
    expected: object
    actual: object
    expected_value: str = ""
    actual_value: str = ""
    element: int | None = None
    row: int | None = None
    col: int | None = None
    datatype: str | None = None

    @property
    def where(self) -> str:
        s = f"machine {self.machine}"
        if self.block is not None:
            s += f" block {self.block}"
        if self.pe is not None:
            s += f" PE{self.pe}"
        if self.tile is not None:
            s += f" tile {self.tile}"
        return s

    def __str__(self) -> str:
        if self.element is not None:
            what = f"element {self.element} [{self.row},{self.col}] {self.datatype or 'PRED'}"
            return (f"{self.where} {what}: expected {self.expected_value}, got {self.actual_value}")
        exp = self.expected_value or self.expected
        act = self.actual_value or self.actual
        return f"{self.where}: {self.field}: expected {exp}, got {act}"


# ---------------------------------------------------------------------------- values

def _descriptor(r: dict) -> Descriptor:
    kind = r["kind"]
    code = None if kind == "predicate" else datatype(r["datatype"]).code
    fm = None
    if r.get("fmap_layout"):
        fm = FeatureMap(r["fmap_layout"], *r["fmap_params"], pad_bits=r["fmap_pad_bits"],
                        transposed=r["fmap_transposed"])
    return Descriptor(r["location"], kind, code, r["row"], r["col"], r["valid_row"], r["valid_col"], r["layout"],
                      r["representation"], r["capacity"], fm)


def encoding_text(bits: int, desc: Descriptor) -> str:
    """A raw encoding in hex, as many digits as the container has."""
    return f"0x{int(bits):0{max(1, (desc.container + 3) // 4)}x}"


def value_text(bits: int, dtype: str | None) -> str:
    """The value an encoding stands for (kernels.numeric.decode): '1.5', '-0.0', 'NaN', '-7'."""
    if dtype is None:
        return str(int(bits))
    from kernels import numeric
    d = datatype(dtype)
    v = numeric.decode(np.array([bits], d.raw_dtype), d.name)[0]
    if d.is_int:
        return str(int(v))
    v = float(v)
    if np.isnan(v):
        return "-NaN" if np.signbit(v) else "NaN"
    return repr(v)


def element_text(bits: int, defined: bool, desc: Descriptor) -> str:
    if not defined:
        return "undefined"
    return f"{encoding_text(bits, desc)} ({value_text(bits, None if desc.dtype is None else desc.datatype.name)})"


def _logical(desc: Descriptor, p: int) -> tuple[int, int]:
    if desc.layout_key == 0:
        return divmod(p, desc.Col)
    r, c = np.argwhere(index_grid(desc) == p)[0]
    return int(r), int(c)


# ---------------------------------------------------------------------------- records

def _rows(records) -> list[dict]:
    """Record dicts of a table, record batch, commitlog.Records, or a list of dicts."""
    if hasattr(records, "to_pylist"):
        return records.to_pylist()
    return list(records)


def _at(r: dict, pe=True) -> str:
    s = f"machine {r.get('machine', 0)}"
    if r.get("block") is not None:
        s += f" block {r['block']}"
    if pe and r.get("record", "commit") == "commit":
        s += f" PE{r['pe']} tile {r['tile']}"
    return s


def compare_tiles(e: dict, a: dict) -> Difference | None:
    """The first difference between two records of the same (machine, block, PE, tile):
    elements in physical order, then definedness-only differences, then status."""
    for name in BLOCK_FIELDS + DESCRIPTOR_FIELDS:
        if name in e and name in a and e[name] != a[name]:
            raise CompareError(f"{_at(e)}: field {name!r} differs: expected {e[name]!r}, actual {a[name]!r}; "
                               f"records of different shapes or DataTypes are not element-comparable")
    try:
        desc = _descriptor(e)
    except (ValueError, KeyError, TypeError) as exc:
        raise CompareError(f"{_at(e)}: not a tile record ({exc})") from None
    n = desc.elements
    for name, want in (("payload", desc.payload_nbytes), ("defined", (n + 7) // 8)):
        for who, r in (("expected", e), ("actual", a)):
            if len(r[name]) != want:
                raise CompareError(f"{_at(e)}: field {name!r} of the {who} record holds {len(r[name])} bytes; "
                                   f"its descriptor needs {want}")
    ee = unpack_elements(e["payload"], n, desc.container)
    ea = unpack_elements(a["payload"], n, desc.container)
    de = unpack_defined(e["defined"], n)
    da = unpack_defined(a["defined"], n)
    bad = (de != da) | (de & (ee != ea))
    where = dict(machine=e.get("machine", 0), block=e.get("block"), pe=e["pe"], tile=e["tile"])
    if bad.any():
        p = int(np.argmax(bad))
        r, c = _logical(desc, p)
        field = "payload" if de[p] == da[p] else "defined"
        return Difference(**where, field=field, element=p, row=r, col=c,
                          datatype=None if desc.dtype is None else desc.datatype.name,
                          expected=int(ee[p]) if de[p] else None, actual=int(ea[p]) if da[p] else None,
                          expected_value=element_text(ee[p], de[p], desc),
                          actual_value=element_text(ea[p], da[p], desc))
    if "status" in e and "status" in a and e["status"] != a["status"]:
        return Difference(**where, field="status", expected=e["status"], actual=a["status"],
                          expected_value=describe_flags(e["status"]), actual_value=describe_flags(a["status"]))
    return None


def _fault_text(r: dict) -> str:
    return f"fault {r.get('reason')} at {r.get('field') or '-'}"


def _blocks(rows: list[dict]) -> dict:
    """(machine, block) -> (fault record or None, {(pe, tile): commit record})."""
    out: dict = {}
    for r in rows:
        entry = out.setdefault((r.get("machine", 0), r.get("block")), [None, {}])
        if r.get("record", "commit") == "fault":
            entry[0] = entry[0] or r
        else:
            entry[1].setdefault((r["pe"], r["tile"]), r)
    return out


def _side(fault, commits) -> str:
    if fault is not None:
        return _fault_text(fault)
    return "commit on " + ", ".join(f"PE{p} tile {t}" for p, t in sorted(commits)) if commits else "none"


def compare(expected, actual) -> Difference | None:
    """The first difference between two sets of commit records, in (machine, block, PE, tile)
    order, or None when they agree.  A record present on one side only, a fault against a
    commit, or faults of different reason codes or fields are record-level differences (fault
    messages are text and are not compared); differing descriptors raise CompareError."""
    exp, act = _blocks(_rows(expected)), _blocks(_rows(actual))
    order = sorted(set(exp) | set(act), key=lambda k: (k[0], -1 if k[1] is None else k[1]))
    for k in order:
        fe, ce = exp.get(k, (None, {}))
        fa, ca = act.get(k, (None, {}))
        if (fe is None) != (fa is None):
            return Difference(machine=k[0], block=k[1], pe=None, tile=None, field="record",
                              expected=_side(fe, ce), actual=_side(fa, ca))
        if fe is not None:
            for name in ("reason", "field"):
                if fe.get(name) != fa.get(name):
                    return Difference(machine=k[0], block=k[1], pe=None, tile=None, field=name,
                                      expected=fe.get(name), actual=fa.get(name))
        for pt in sorted(set(ce) | set(ca)):
            e, a = ce.get(pt), ca.get(pt)
            if e is None or a is None:
                return Difference(machine=k[0], block=k[1], pe=pt[0], tile=pt[1], field="record",
                                  expected="a commit" if e else "none", actual="a commit" if a else "none")
            d = compare_tiles(e, a)
            if d is not None:
                return d
    return None


# ---------------------------------------------------------------------------- states

def compare_states(expected: list, actual: list, start: int = 0) -> Difference | None:
    """The first difference between two lists of machines (emulator.Machine): per machine and
    PE, the numeric status, the GPRs, then the tiles in id order.  Machines are numbered from
    `start` (a caller comparing two files a pair at a time passes the pair's index)."""
    from .stateio import state_table
    for k, (me, ma) in enumerate(zip(expected, actual), start):
        te = {(r["pe"], r["tile"]): r for r in state_table(me).to_pylist()}
        ta = {(r["pe"], r["tile"]): r for r in state_table(ma).to_pylist()}
        for p in range(me.config.num_pes):
            if me.status(p) != ma.status(p):
                return Difference(k, None, p, None, "status", me.status(p), ma.status(p),
                                  describe_flags(me.status(p)), describe_flags(ma.status(p)))
            for i in range(me.config.gpr_count):
                if me.gpr(p, i) != ma.gpr(p, i):
                    return Difference(k, None, p, None, f"r{i}", f"{me.gpr(p, i):#x}", f"{ma.gpr(p, i):#x}")
            for tid in sorted({t for q, t in te if q == p} | {t for q, t in ta if q == p}):
                e, a = te.get((p, tid)), ta.get((p, tid))
                if e is None or a is None:
                    return Difference(k, None, p, tid, "tile", "present" if e else "absent",
                                      "present" if a else "absent")
                d = compare_tiles({**e, "machine": k}, {**a, "machine": k})
                if d is not None:
                    return d
    return None


def first_state_difference(expected: list, actual: list, start: int = 0) -> str | None:
    """One line for `tile-emu diff A B --first`: the first difference of two states (a
    configuration or machine count first, then compare_states from machine `start`), or None
    when equal."""
    if expected and actual and expected[0].config != actual[0].config:
        return f"config: expected {expected[0].config}, got {actual[0].config}"
    try:
        d = compare_states(expected, actual, start)
    except CompareError as exc:
        return str(exc).split("; records of different")[0]
    if d is not None:
        return str(d)
    if len(expected) != len(actual):
        return f"machines: expected {len(expected)}, got {len(actual)}"
    return None
