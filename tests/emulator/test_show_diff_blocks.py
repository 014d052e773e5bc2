"""`show` and `diff` of multi-machine state files read, check and print or compare a block of
machines at a time, as arrays (issue 26 item 9; docs/state-format.md, "Reading many machines
at once").

* A file of many machines shows a summary line and its first machines unless `--machine`
  asks for others or `--machine all` for every one; `--max` limits rows and columns, never
  machines (`--max 0` printed every machine of a 2^16-machine file).
* What is printed is what the documented format says, element for element: the reference here
  renders each tile with plain Python per element (Machine.read_tile, numpy's positional and
  Python's repr forms of each float), as `show` printed before it was vectorised.
* The array checks of a block admit exactly what the single-machine loader admits, machine by
  machine, and a refused file is refused with the loader's own message for its first bad
  machine, after the machines before it.
* `diff` compares whole blocks; equal states written differently are still equal."""
from __future__ import annotations

import json
import pathlib
import random

import numpy as np
import pyarrow as pa
import pytest

from emulator import Machine
from emulator.batchio import MACHINE_COLUMN, StateFile, load_states, save_machines
from emulator.batchscan import blocks
from emulator.cli import main
from emulator.stateio import META_KEY, StateFileError
from emulator.tiles import FeatureMap
from isa.datatypes import BY_NAME
from test_batch_file_hostile import _sections        # `show` text split at its `machine K:` headings

ROOT = pathlib.Path(__file__).resolve().parents[2]
BATCH = ROOT / "examples" / "saxpy.batch.arrow"        # 16 machines, 12 tiles each


def _show(capsys, *args) -> str:
    assert main(["show", *map(str, args)]) == 0
    return capsys.readouterr().out


# ---------------------------------------------------------------- which machines are shown

def test_a_multi_machine_file_shows_a_summary_and_its_first_four_machines(capsys):
    out = _show(capsys, BATCH)
    # 16 machines of 12 tiles each (examples/saxpy.batch.arrow: 4 PEs x tiles 1, 2, 3)
    assert out.splitlines()[0] == (f"{BATCH}: 16 machines, 192 tile(s), 12..12 per machine; showing machines "
                                   f"0..3 (--machine K for machine K, --machine all for all 16)")
    every = _sections(_show(capsys, BATCH, "--machine", "all"))
    assert sorted(every) == list(range(16))
    assert _sections(out) == {k: every[k] for k in range(4)}
    # --max limits rows and columns of each tile, not machines: 0 is every row and column of
    # the same four machines
    assert sorted(_sections(_show(capsys, BATCH, "--max", "0"))) == [0, 1, 2, 3]
    assert sorted(_sections(_show(capsys, BATCH, "--machine", "7", "--machine", "all"))) == list(range(16))
    picked = _show(capsys, BATCH, "--machine", "9", "--machine", "2")
    assert picked.startswith("machine 2:\n") and _sections(picked) == {2: every[2], 9: every[9]}


def test_a_file_of_at_most_four_machines_shows_them_all_without_a_summary(tmp_path, capsys):
    save_machines([Machine.from_state(s) for s in load_states(BATCH)[:3]], tmp_path / "three.arrow")
    out = _show(capsys, tmp_path / "three.arrow")
    assert out.startswith("machine 0:\n") and sorted(_sections(out)) == [0, 1, 2]


@pytest.mark.parametrize("bad, words", [("x", "'x' is not an integer"), ("-1", "-1 is negative"), ("ALL", "'ALL'")])
def test_machine_takes_a_number_or_all(bad, words, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["show", str(BATCH), "--machine", bad])
    assert exc.value.code == 2 and words in capsys.readouterr().err


# ---------------------------------------------------------------- the text, element for element

def _reference(m: Machine, limit: int = 16, hex_: bool = False) -> str:
    """The documented `show` text of one machine, rendered per element in plain Python."""
    from kernels import numeric
    from kernels.numeric.flags import describe
    c = m.config
    out = [f"machine: Local {c.local_bytes} B, Matrix {c.matrix_bytes} B per PE, profile {c.profile}"]
    for p in range(c.num_pes):
        gprs = [f"r{i}={m.gpr(p, i):#x}" for i in range(c.gpr_count) if m.gpr(p, i)]
        out.append(f"PE{p}: status {describe(m.status(p))}; GPRs " + (" ".join(gprs) or "all zero"))
        for tid in m.tiles(p):
            v = m.read_tile(p, tid)
            d = v.desc
            out.append(f"  tile {tid}: {d.describe()}")
            if d.fmap is not None:
                fm = d.fmap
                out.append(f"    feature map {fm.layout}: " + ", ".join(f"{n}={getattr(fm, n)}" for n in fm.PARAMS)
                           + f", pad={fm.pad_bits:#x}" + (", transposed" if fm.transposed else ""))
            rows, cols = (d.Row, d.Col) if not limit else (min(d.Row, limit), min(d.Col, limit))
            dt = v.dtype and BY_NAME[v.dtype]

            def text(x):
                x = int(x)
                if dt is None:
                    return str(x)
                if hex_:
                    return f"0x{x:0{max(1, dt.container // 4)}x}"
                if dt.is_int:
                    return str(x - (1 << dt.bits) if dt.signed and x >= 1 << (dt.bits - 1) else x)
                f = float(numeric.decode(np.array([x], v.bits.dtype), dt.name)[0])
                return (np.format_float_positional(f, trim="-") if np.isfinite(f) and abs(f) < 1e16
                        and (f == 0 or abs(f) >= 1e-6) else repr(f))
            cells = [[text(v.bits[r, k]) if v.defined[r, k] else "?" for k in range(cols)] for r in range(rows)]
            width = max(len(s) for row in cells for s in row)
            for r in range(rows):
                if r == d.ValidRow:
                    out.append("    " + "-" * 10 + " (rows below are outside ValidRow)")
                row = [s.rjust(width) for s in cells[r]]
                if d.ValidCol < cols:
                    row.insert(d.ValidCol, "|")
                out.append(f"    {f'[{r}]'.rjust(len(str(rows - 1)) + 2)} " + " ".join(row)
                           + (" ..." if cols < d.Col else ""))
            if rows < d.Row:
                out.append(f"    ... {d.Row - rows} more row(s)")
            if (~v.defined).sum():
                out.append(f"    {int((~v.defined).sum())} undefined element(s)")
    return "\n".join(out) + "\n"


SPECIALS = {"FP32": [0x7F800000, 0xFF800000, 0x7FC00001, 0x80000000, 0x00000001, 0x5A0E1BCA, 0x33D6BF95],
            "FP64": [0x7FF0000000000000, 0x0000000000000001, 0x4341C37937E08000, 0x3EB0C6F7A0B5ED8D],
            "FP16": [0x7C00, 0xFC00, 0x7E00, 0x8000, 0x0001, 0x7BFF]}
TILES = [("FP32", 4, 16, dict(valid_row=3, valid_col=10)), ("FP16", 16, 16, dict(layout=2)), ("BF16", 20, 20, {}),
         ("E4M3", 2, 32, {}), ("E2M1X2", 4, 8, {}), ("S4X2", 3, 5, {}), ("U64", 2, 3, {}), ("S64", 2, 3, {}),
         ("FP64", 3, 4, {}), ("HiF8", 2, 9, {}), ("E8M0", 1, 7, {}), ("S16", 5, 3, {}), ("U8", 17, 2, {}),
         ("FP32", 16, 16, dict(representation="cube")), ("FP16", 16, 16, dict(layout=7)),
         ("FP16", 16, 16, dict(location="Matrix", fmap=FeatureMap("NC1HWC0", 1, 1, 1, 4, 4, 16, pad_bits=3))),
         (None, 4, 8, dict(kind="predicate"))]


def _machine(seed: int) -> Machine:
    """A machine with tiles of many DataTypes, layouts and shapes: random raw bits (with
    infinities, NaNs, signed zeros, subnormals and numbers needing the exponent form), some
    elements undefined, GPRs and a status set."""
    rng = np.random.default_rng(seed)
    m = Machine()
    for i, (dt, r, c, kw) in enumerate(TILES):
        d = BY_NAME.get(dt)
        if d is None:
            data = rng.integers(0, 2, (r, c), dtype=np.uint8)
        else:
            w = d.bits if d.is_int else d.container
            top = rng.integers(0, 1 << min(w, 63), (r, c), dtype=np.uint64)
            data = top if w < 64 else top * np.uint64(2) + rng.integers(0, 2, (r, c), dtype=np.uint64)
            flat = data.reshape(-1)
            for j, x in enumerate(SPECIALS.get(dt, [])):
                flat[j] = x
            data = data.astype(d.raw_dtype)
        defined = rng.random((r, c)) > 0.1 if i % 3 else None
        m.write_tile(i % 4, 3 * i + 1, dt, data, defined=defined, **kw)
    m.set_gpr(seed % 4, 5, 0xDEAD + seed)
    return m


@pytest.mark.parametrize("limit, hex_", [(16, False), (0, False), (2, False), (16, True)])
def test_each_machine_prints_as_the_documented_format_renders_it(tmp_path, capsys, limit, hex_):
    ms = [_machine(s) for s in range(3)]
    save_machines(ms, tmp_path / "b.arrow")
    ms[0].save(tmp_path / "one.arrow")
    opts = ["--max", limit] + (["--hex"] if hex_ else [])
    assert _show(capsys, tmp_path / "one.arrow", *opts) == _reference(ms[0], limit, hex_)
    got = _sections(_show(capsys, tmp_path / "b.arrow", "--machine", "all", *opts))
    assert got == {k: _reference(m, limit, hex_) for k, m in enumerate(ms)}


def test_pe_and_tile_filters_keep_their_lines(tmp_path, capsys):
    m = _machine(5)
    m.save(tmp_path / "one.arrow")
    whole = _show(capsys, tmp_path / "one.arrow").splitlines(keepends=True)
    out = _show(capsys, tmp_path / "one.arrow", "--pe", 1, "--tile", 4, "--tile", 16)
    pe1 = [line for line in whole if line.startswith("PE1")]
    assert out.splitlines()[:2] == [whole[0].rstrip("\n"), pe1[0].rstrip("\n")]
    assert "  tile 4: " in out and "  tile 16: " in out and "PE0" not in out and out.count("  tile ") == 2


def _python_float_text(x: float) -> str:
    return (np.format_float_positional(x, trim="-") if np.isfinite(x) and abs(x) < 1e16 and (x == 0 or abs(x) >= 1e-6)
            else repr(float(x)))


def test_float_text_is_numpys_positional_form_or_pythons_repr():
    from emulator.commands.show import float_text
    rng = np.random.default_rng(7)
    with np.errstate(invalid="ignore"):                  # signalling NaNs widened
        values = _values(rng)
    got = float_text(values).astype(str).tolist()
    want = [_python_float_text(x) for x in values]
    bad = [(x, g, w) for x, g, w in zip(values, got, want) if g != w]
    assert not bad, bad[:5]


def _values(rng):
    return np.concatenate([
        [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e16, 9999999999999998.0, 1e15, 1e-6, 9.999999999999999e-07,
         1e-7, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 0.1, 123456789.0, 1.5, -2.5e-300],
        np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float64),
        rng.integers(0, 1 << 32, 100_000, dtype=np.uint64).astype(np.uint32).view(np.float32).astype(np.float64),
        rng.integers(0, 1 << 63, 100_000, dtype=np.uint64).view(np.float64) * rng.choice([-1, 1], 100_000),
        rng.standard_normal(50_000) * 10.0 ** rng.integers(-12, 20, 50_000)])


# ---------------------------------------------------------------- checking as arrays, as the loader

def _table(path):
    t = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    return t, t.schema.metadata[META_KEY]


def _write(path, table, meta: bytes, chunk=None):
    table = table.replace_schema_metadata({META_KEY: meta})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table, max_chunksize=chunk)
    return path


def _set(t: pa.Table, row: int, column: str, value):
    values = t.column(column).to_pylist()
    values[row] = value
    return t.set_column(t.schema.get_field_index(column), column, pa.array(values, t.schema.field(column).type))


def _mutated(rng, t: pa.Table) -> pa.Table:
    """One row-level change the loader may refuse (or may not: a change can stay legal)."""
    r = rng.randrange(t.num_rows)
    kind = rng.choice(["pe", "tile", "datatype", "kind", "shape", "valid", "layout", "capacity", "payload", "trailing",
                       "defined", "fmap", "location", "representation"])
    row = {c: t.column(c)[r].as_py() for c in t.column_names}
    if kind == "pe":
        return _set(t, r, "pe", rng.choice([0, 1, 3, 4, 255]))
    if kind == "tile":
        return _set(t, r, "tile", rng.choice([row["tile"], (row["tile"] % 3) + 1, 2 ** 32 - 1]))
    if kind == "datatype":
        return _set(t, r, "datatype", rng.choice(["FP16", "", "NOPE", "S8", "E2M1X2"]))
    if kind == "kind":
        return _set(t, r, "kind", rng.choice(["predicate", "numeric", "vector"]))
    if kind == "shape":
        return _set(t, r, rng.choice(["row", "col"]), rng.choice([0, 1, row["row"] * 2, 2 ** 31]))
    if kind == "valid":
        return _set(t, r, rng.choice(["valid_row", "valid_col"]), rng.choice([0, 1, 5, 2 ** 32 - 1]))
    if kind == "layout":
        return _set(t, r, "layout", rng.choice([0, 1, 2, 13, 200]))
    if kind == "capacity":
        return _set(t, r, "capacity", rng.choice([0, 255, 256, 1 << 17, 1 << 18, 2 ** 64 - 1]))
    if kind == "payload":
        p = row["payload"]
        return _set(t, r, "payload", rng.choice([p[:-1], p + b"\0", b"", bytes(len(p))]))
    if kind == "trailing":                    # a 4-bit type makes the last byte's high nibble spare
        t = _set(t, r, "datatype", "E2M1X2")
        n = row["row"] * row["col"]
        p = bytes((n + 1) // 2)
        return _set(t, r, "payload", p[:-1] + bytes([rng.choice([0, 0x10, 0x01])]) if n % 2 else p)
    if kind == "defined":
        d = row["defined"]
        return _set(t, r, "defined", rng.choice([d[:-1], d + b"\xff", d[:-1] + bytes([d[-1] | 0x80])]))
    if kind == "fmap":
        t = _set(t, r, "fmap_layout", rng.choice(["", "NC1HWC0", "NDC1HWC0"]))
        return _set(t, r, "fmap_params", rng.choice([[], [1] * 17, [1] * 3]))
    if kind == "location":
        return _set(t, r, "location", rng.choice(["Matrix", "Local", "Elsewhere"]))
    return _set(t, r, "representation", rng.choice(["cube", "standard", "odd"]))


def _loader_verdict(path):
    """(machines the single-machine loader admits before the first it refuses, its message)."""
    f = StateFile(path)
    for k in range(len(f)):
        try:
            f.state(k)
        except StateFileError as exc:
            return k, str(exc)
    return len(f), None


def _agree(seed, tmp_path, monkeypatch):
    import emulator.batchscan as batchscan
    monkeypatch.setattr(batchscan, "BLOCK_ROWS", 30)        # several blocks, machines across blocks
    rng = random.Random(seed)
    t, meta = _table(BATCH)
    for _ in range(rng.randint(1, 3)):
        t = _mutated(rng, t)
    path = _write(tmp_path / "m.arrow", t, meta, chunk=rng.choice([None, 7, 50]))
    good, message = _loader_verdict(path)
    seen, error = [], None
    try:
        for b in blocks(StateFile(path)):
            seen += list(range(b.first, b.stop))
    except StateFileError as exc:
        error = str(exc)
    assert seen == list(range(good)) and error == message


# seed 228: a group verdict remembered from one block under another block's dictionary codes
@pytest.mark.parametrize("seed", list(range(40)) + [228])
def test_the_array_checks_admit_and_refuse_what_the_loader_does(seed, tmp_path, monkeypatch):
    _agree(seed, tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(40, 1040))
def test_the_array_checks_admit_and_refuse_what_the_loader_does_at_length(seed, tmp_path, monkeypatch):
    _agree(seed, tmp_path, monkeypatch)


def test_capacities_are_summed_per_machine_pe_and_store(tmp_path):
    """Each PE of saxpy's machines holds 3 FP32 tiles of 256 B in Local (256 KiB): raising one
    to the store's size less 512 fits exactly, one byte more does not."""
    t, meta = _table(BATCH)
    cap = json.loads(meta)["config"]["local_bytes"]
    ok = _write(tmp_path / "ok.arrow", _set(t, 13, "capacity", cap - 512), meta)
    assert [b.stop for b in blocks(StateFile(ok))][-1] == 16
    over = _write(tmp_path / "over.arrow", _set(t, 13, "capacity", cap - 511), meta)
    with pytest.raises(StateFileError) as exc:
        list(blocks(StateFile(over)))
    # machine 1's rows 0..2 are PE0's tiles 1..3: row 1 now takes cap - 511 after row 0's 256
    # bytes (261,889 in all), and row 2's 256 more are one byte past the store
    assert str(exc.value) == _loader_verdict(over)[1]
    assert str(exc.value).endswith("machine 1: row 2 column 'descriptor': PE0 Local store: 261889 bytes used + 256 "
                                   "exceeds 262144")


# ---------------------------------------------------------------- diff

def test_diff_calls_equal_states_equal_however_they_are_written(tmp_path, capsys):
    """Rows shuffled within each machine, record batches of 5 rows, GPRs spelled without
    leading zeros: the same states."""
    t, meta = _table(BATCH)
    order = np.lexsort((-t.column("tile").to_numpy(), t.column(MACHINE_COLUMN).to_numpy()))
    doc = json.loads(meta)
    for e in doc["machines"]:
        for pe in e["pes"]:
            pe["gprs"] = [hex(int(g, 16)) for g in pe["gprs"]]
    other = _write(tmp_path / "o.arrow", t.take(pa.array(order)), json.dumps(doc).encode(), chunk=5)
    assert main(["diff", str(BATCH), str(other)]) == 0
    assert capsys.readouterr().out.endswith("same state\n")


def test_diff_reports_each_differing_machine_as_found(tmp_path, capsys):
    ms = [Machine.from_state(s) for s in load_states(BATCH)]
    ms[3].set_gpr(2, 7, 9)
    v = ms[12].read_tile(1, 2)
    bits = v.bits.copy()
    bits[1, 4] ^= 1
    ms[12].write_tile(1, 2, v.dtype, bits)
    save_machines(ms, tmp_path / "o.arrow")
    assert main(["diff", str(BATCH), str(tmp_path / "o.arrow")]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "machine 3: PE2: r7 0x0 != 0x9", "machine 12: PE1 tile 2: 1 element(s) differ",
        f"machine 12:     [1,4] {int(v.bits[1, 4]):#x} != {int(bits[1, 4]):#x}"]
    assert main(["diff", str(BATCH), str(tmp_path / "o.arrow"), "--first"]) == 1
    assert capsys.readouterr().out.startswith("machine 3")
