"""Batch state files are read one machine at a time (issue 21, item 19): `show` and `diff` hold
a bounded number of machines whatever the file holds, `show --machine K` reads machine K alone,
and what they print is what a file of that one machine prints.  The 2^16-machine file of the
issue (668 MB) is shown and diffed under a 4 GiB address-space limit (slow)."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import weakref

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import emulator.batchio as batchio
from emulator import Machine
from emulator.batchio import MACHINE_COLUMN, load_states, save_machines
from emulator.cli import main
from emulator.stateio import META_KEY

ROOT = pathlib.Path(__file__).resolve().parents[2]
BATCH = ROOT / "examples" / "saxpy.batch.arrow"        # 16 machines, 12 tiles each


def _table(path=BATCH) -> pa.Table:
    return pa.ipc.open_file(pa.memory_map(str(path))).read_all()


def _write(path, table: pa.Table, max_chunksize=None, compression=None):
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema, options=options) as w:
        w.write_table(table, max_chunksize=max_chunksize)
    return path


def _track_loads(monkeypatch) -> tuple[list, list]:
    """Every machine the loader builds (a weak reference to its first PE), and how many of those
    built before were still alive when each next one was asked for."""
    built, alive = [], []
    real = batchio.load_table

    def load_table(*args, **kwargs):
        alive.append(sum(r() is not None for r in built))
        state = real(*args, **kwargs)
        built.append(weakref.ref(state.pes[0]))
        return state
    monkeypatch.setattr(batchio, "load_table", load_table)
    return built, alive


def _track_rows(monkeypatch) -> list:
    """Every (first, stop) range of machines whose rows are read (StateFile.rows)."""
    read = []
    real = batchio.StateFile.rows

    def rows(self, first, stop):
        read.append((first, stop))
        return real(self, first, stop)
    monkeypatch.setattr(batchio.StateFile, "rows", rows)
    return read


def test_show_machine_k_reads_machine_k_alone(capsys, monkeypatch):
    read = _track_rows(monkeypatch)
    built, _ = _track_loads(monkeypatch)
    assert main(["show", str(BATCH), "--machine", "11"]) == 0
    assert read == [(11, 12)] and not built and capsys.readouterr().out.startswith("machine 11:\n")


@pytest.mark.parametrize("command", ["show", "diff"])
def test_show_and_diff_read_the_file_a_block_of_rows_at_a_time(tmp_path, capsys, monkeypatch, command):
    """Machines are read in blocks of about BLOCK_ROWS rows (here 24: two of the 12-tile
    machines), in order, each once; the tiles are checked and printed or compared as arrays, so
    no machine is loaded one at a time -- except, by `diff`, the pairs that differ, for their
    report, a pair at a time (every machine differs here)."""
    import emulator.batchscan as batchscan
    monkeypatch.setattr(batchscan, "BLOCK_ROWS", 24)
    other = tmp_path / "other.arrow"
    machines = [Machine.from_state(s) for s in load_states(BATCH)]
    for m in machines:
        m.set_gpr(0, 5, 7)
    save_machines(machines, other)
    del machines
    read = _track_rows(monkeypatch)
    built, alive = _track_loads(monkeypatch)
    assert main(["show", str(BATCH), "--machine", "all"]) == 0
    if command == "show":
        assert read == [(k, k + 2) for k in range(0, 16, 2)] and not built
        return
    read.clear()
    assert main(["diff", str(BATCH), str(BATCH)]) == 0 and not built          # equal: nothing loaded
    assert read == [(k, k + 2) for k in range(0, 16, 2) for _ in "AB"]
    assert main(["diff", str(BATCH), str(other)]) == 1
    assert len(built) == 32 and max(alive) <= 3, alive                   # before: every machine at once
    assert capsys.readouterr().out.count(": PE0: r5 0x0 != 0x7") == 16


def _blocks(text: str) -> dict[int, str]:
    """`show` output of a batch file, split at its `machine K:` headings."""
    out, k = {}, None
    for line in text.splitlines(keepends=True):
        if line.startswith("machine ") and line.rstrip().endswith(":") and line.split()[1][:-1].isdigit():
            k = int(line.split()[1][:-1])
            out[k] = ""
        else:
            out[k] += line
    return out


def test_each_machine_shows_as_a_file_of_that_machine_alone(tmp_path, capsys):
    assert main(["show", str(BATCH), "--hex", "--machine", "all"]) == 0
    blocks = _blocks(capsys.readouterr().out)
    assert sorted(blocks) == list(range(16))
    for k, state in enumerate(load_states(BATCH)):
        Machine.from_state(state).save(tmp_path / "one.arrow")
        assert main(["show", str(tmp_path / "one.arrow"), "--hex"]) == 0
        assert capsys.readouterr().out == blocks[k]


def _variants(tmp_path) -> dict[str, pathlib.Path]:
    """The same 16 machines laid out differently: rows shuffled, one row per record batch (a
    machine's rows across many batches), record batches compressed."""
    t = _table()
    order = np.random.default_rng(3).permutation(t.num_rows)
    return {
        "shuffled": _write(tmp_path / "shuffled.arrow", t.take(pa.array(order))),
        "row batches": _write(tmp_path / "rows.arrow", t, max_chunksize=1),
        "odd batches": _write(tmp_path / "odd.arrow", t.take(pa.array(order)), max_chunksize=7),
        "zstd": _write(tmp_path / "zstd.arrow", t, max_chunksize=5, compression="zstd"),
        "lz4": _write(tmp_path / "lz4.arrow", t, compression="lz4"),
    }


def test_any_row_order_and_record_batch_layout_reads_the_same_machines(tmp_path, capsys):
    want = [Machine.from_state(s).digest() for s in load_states(BATCH)]
    assert main(["show", str(BATCH), "--machine", "all"]) == 0
    shown = capsys.readouterr().out
    for name, path in _variants(tmp_path).items():
        f = batchio.StateFile(path)
        assert len(f) == 16, name
        assert [Machine.from_state(f.state(k)).digest() for k in (13, 2, 15, 0)] == [want[k] for k in (13, 2, 15, 0)]
        assert [Machine.from_state(s).digest() for s in f.states()] == want, name
        assert main(["show", str(path), "--machine", "all"]) == 0 and capsys.readouterr().out == shown, name
        assert main(["diff", str(BATCH), str(path)]) == 0, name
        capsys.readouterr()


def test_a_machine_without_rows_is_an_empty_machine(tmp_path):
    t = _table()
    ids = t.column(MACHINE_COLUMN).to_numpy()
    kept = t.filter(pa.array(ids != 4))
    f = batchio.StateFile(_write(tmp_path / "hole.arrow", kept))
    assert len(f) == 16 and all(not Machine.from_state(f.state(4)).tiles(p) for p in range(4))


# ---------------------------------------------------------------- the metadata index

_json = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats(allow_nan=False)
                     | st.text(max_size=6),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
                     max_leaves=12)


def _materialised(meta):
    if meta is None:
        return None
    return {k: [v[i] for i in range(len(v))] if isinstance(v, batchio._Entries) else v for k, v in meta.items()}


JSON_TEXTS = dict(doc=st.dictionaries(st.sampled_from(["machines", "format", "config", "x"]), _json, max_size=4)
                  | _json, space=st.sampled_from(["", " ", "\n\t ", "  \r\n"]),
                  machines=st.lists(_json, max_size=5), cut=st.integers(0, 400),
                  junk=st.sampled_from(["", ",", "]", "}", "x", "[", " 1"]))


def _agrees_with_json_loads(doc, space, machines, cut, junk):
    """The index walks the two outer levels itself (the `machines` list is indexed, not parsed):
    on any text, whole or cut or with junk appended, it gives json.loads's object or None."""
    if isinstance(doc, dict):
        doc = dict(doc, machines=machines)
    text = json.dumps(doc, indent=space.count(" ") or None).replace(", ", "," + space).replace(": ", ":" + space)
    for variant in (text, text[:cut], text + junk, space + text + space, junk + text):
        raw = variant.encode()
        try:
            want = json.loads(raw)
        except (ValueError, RecursionError):
            want = None
        assert _materialised(batchio._index_meta(raw)) == (want if isinstance(want, dict) else None), variant


@settings(max_examples=60, deadline=None)
@given(**JSON_TEXTS)
def test_the_metadata_index_accepts_exactly_what_json_loads_accepts(**kw):
    _agrees_with_json_loads(**kw)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(**JSON_TEXTS)
def test_the_metadata_index_accepts_exactly_what_json_loads_accepts_at_length(**kw):
    _agrees_with_json_loads(**kw)


def test_a_later_duplicate_machines_key_wins_as_in_json_loads():
    raw = b'{"machines": [1, 2, 3], "machines": [{"pes": []}]}'
    meta = batchio._index_meta(raw)
    assert len(meta["machines"]) == 1 and meta["machines"][0] == {"pes": []}
    assert batchio._index_meta(b'{"machines": [1, 2], "machines": 5}') == {"machines": 5}


# ---------------------------------------------------------------- 2^16 machines under 4 GiB

CLI = "import sys; from emulator.cli import main; sys.exit(main(sys.argv[1:]))"


def replicate(src, dst, count: int, per_batch: int = 4096, edit=None):
    """`count` machines made of copies of `src`'s, written a record batch at a time (the metadata
    text is built once by repetition, never parsed); `edit(meta_text, k)` may change machine k."""
    t = _table(src)
    meta = json.loads(t.schema.metadata[META_KEY])
    base = len(meta["machines"])
    entries = ", ".join(json.dumps(e) for e in meta["machines"])
    head = json.dumps({k: v for k, v in meta.items() if k != "machines"})[:-1]
    text = head + ', "machines": [' + ", ".join([entries] * (count // base)) + "]}"
    schema = t.schema.with_metadata({META_KEY: text.encode()})
    ids = t.column(MACHINE_COLUMN).to_numpy()
    per = max(1, per_batch // base)
    with pa.OSFile(str(dst), "wb") as sink, pa.ipc.new_file(sink, schema) as w:
        for c0 in range(0, count // base, per):
            k = min(per, count // base - c0)
            chunk = t.take(pa.array(np.tile(np.arange(t.num_rows), k)))
            machine = np.repeat(np.arange(c0, c0 + k), t.num_rows) * base + np.tile(ids, k)
            chunk = chunk.set_column(0, MACHINE_COLUMN, pa.array(machine.astype(np.uint32)))
            if edit is not None:
                chunk = edit(chunk)
            w.write_batch(chunk.combine_chunks().to_batches()[0])
    return dst


def _limited(args, stdout=subprocess.PIPE, limit=4 << 30, timeout=3600):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(["prlimit", f"--as={limit}", sys.executable, "-c", CLI, *args], env=env,
                          stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs util-linux prlimit")
def test_2_16_machines_are_shown_and_diffed_under_4_gib_of_address_space(tmp_path):
    # The file: examples/saxpy.batch.arrow's 16 machines 4,096 times over (668 MB).
    big = replicate(BATCH, tmp_path / "big.arrow", 1 << 16)
    assert big.stat().st_size > 600 << 20

    def one_changed(chunk):                    # machine 40000's first payload byte flipped
        ids = chunk.column(0).to_numpy()
        if 40000 not in ids:
            return chunk
        row = int(np.flatnonzero(ids == 40000)[0])
        payloads = chunk.column("payload").to_pylist()
        payloads[row] = bytes([payloads[row][0] ^ 1]) + payloads[row][1:]
        return chunk.set_column(chunk.schema.get_field_index("payload"), "payload", pa.array(payloads, pa.binary()))
    other = replicate(BATCH, tmp_path / "other.arrow", 1 << 16, edit=one_changed)

    r = _limited(["show", str(big), "--machine", "65535", "--pe", "0", "--tile", "3"])
    assert r.returncode == 0 and r.stdout.startswith("machine 65535:\n") and not r.stderr, r.stderr
    r = _limited(["diff", str(big), str(other)])
    assert r.returncode == 1 and not r.stderr, r.stderr
    assert r.stdout.startswith("machine 40000: PE") and all(line.startswith("machine 40000: ") or
                                                             line.startswith("    ") for line in r.stdout.splitlines())
    with open(tmp_path / "shown.txt", "w") as out:
        r = _limited(["show", str(big), "--max", "2", "--machine", "all"], stdout=out)
    assert r.returncode == 0 and not r.stderr, r.stderr
    with open(tmp_path / "shown.txt") as f:
        headings = [line for line in f if line.startswith("machine ") and not line.startswith("machine: ")]
    assert headings == [f"machine {k}:\n" for k in range(1 << 16)]
