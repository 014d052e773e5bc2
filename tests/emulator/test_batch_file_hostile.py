"""Hostile batch state files (issue 21: the new input kind "batch state files"): real
multi-machine files mutated -- truncated, bytes flipped, columns dropped, renamed, repeated or
retyped, machine indices out of range, unsorted, merged or null, metadata lists too long or
wrong in kind, entries and JSON text damaged, record batches cut and compressed.  `show`,
`show --machine K`, `diff` and `run --machine K` each give one line and a non-zero exit, or a
correct result: a file that only moved rows between record batches or reordered them holds the
original machines; `show --machine K` prints what `show` prints for machine K; `diff F F` finds
no difference.  Never a traceback or a hang."""
import json
import pathlib
import random
import signal

import numpy as np
import pyarrow as pa
import pytest

from emulator import Machine
from emulator.batchio import MACHINE_COLUMN, MAX_MACHINES, load_states, save_machines
from emulator.cli import main
from emulator.stateio import META_KEY
from isa import assemble

ROOT = pathlib.Path(__file__).resolve().parents[2]
EX = ROOT / "examples"


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """Five real machines (the saxpy batch's first four and an empty one), and a stream."""
    d = tmp_path_factory.mktemp("good")
    machines = [Machine.from_state(s) for s in load_states(EX / "saxpy.batch.arrow")[:4]] + [Machine()]
    machines[2].set_gpr(1, 7, 2 ** 64 - 1)
    save_machines(machines, d / "good.arrow")
    (d / "saxpy.tbs").write_bytes(assemble((EX / "saxpy.s").read_text()))
    return d


def _read(path):
    t = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    return t, t.schema.metadata[META_KEY].decode()


def _write(path, table, meta_text=None, max_chunksize=None, compression=None):
    if meta_text is not None:
        table = table.replace_schema_metadata({META_KEY: meta_text.encode("utf-8", "surrogatepass")})
    with pa.OSFile(str(path), "wb") as sink, \
            pa.ipc.new_file(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression=compression)) as w:
        w.write_table(table, max_chunksize=max_chunksize)


def _set(table, name, values, type_=None):
    i = table.column_names.index(name)
    type_ = type_ or table.schema.field(name).type
    return table.set_column(i, pa.field(name, type_), pa.array(values, type_))


# ---------------------------------------------------------------- mutations
# each: (rng, table, metadata text, path) -> writes path; returns True when the file must hold
# exactly the original machines (a layout change only)

def m_truncate(rng, t, meta, path, src):
    data = src.read_bytes()
    path.write_bytes(data[: rng.randrange(len(data))])


def m_flip_bytes(rng, t, meta, path, src):
    data = bytearray(src.read_bytes())
    for _ in range(rng.randint(1, 8)):
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))


def m_layout(rng, t, meta, path, src):
    order = np.arange(t.num_rows)
    if rng.random() < 0.5:
        order = np.random.default_rng(rng.randrange(1 << 30)).permutation(t.num_rows)
    _write(path, t.take(pa.array(order)), meta, max_chunksize=rng.choice([None, 1, 2, 5, 7]),
           compression=rng.choice([None, "lz4", "zstd"]))
    return True


def m_column(rng, t, meta, path, src):
    name = rng.choice(t.column_names)
    kind = rng.choice(["drop", "rename", "repeat", "retype"])
    if kind == "drop":
        t = t.drop_columns([name])
    elif kind == "rename":
        t = t.rename_columns([n + "x" if n == name else n for n in t.column_names])
    elif kind == "repeat":
        t = t.append_column(name, t.column(name))
    else:
        to = rng.choice([pa.int64(), pa.uint8(), pa.uint64(), pa.string(), pa.float64(), pa.binary()])
        try:
            t = t.set_column(t.column_names.index(name), pa.field(name, to), t.column(name).cast(to, safe=False))
        except (pa.ArrowException, ValueError):
            t = t.set_column(t.column_names.index(name), pa.field(name, to), pa.nulls(t.num_rows, to))
    _write(path, t, meta)


def m_machine_ids(rng, t, meta, path, src):
    ids = t.column(MACHINE_COLUMN).to_pylist()
    kind = rng.choice(["huge", "out of range", "merge", "nulls", "one", "shuffle"])
    if kind == "nulls":
        ids[rng.randrange(len(ids))] = None
    elif kind == "huge":
        ids[rng.randrange(len(ids))] = 2 ** 32 - 1
    elif kind == "out of range":
        ids[rng.randrange(len(ids))] = 5
    elif kind == "merge":               # two machines' rows under one id: duplicate (pe, tile)
        ids = [0 if i == 1 else i for i in ids]
    elif kind == "one":                 # one row moved to another machine (may be legal)
        ids[rng.randrange(len(ids))] = rng.randrange(5)
    else:
        rng.shuffle(ids)
    _write(path, _set(t, MACHINE_COLUMN, ids), meta)


def m_rows(rng, t, meta, path, src):
    k = rng.randrange(t.num_rows)
    if rng.random() < 0.5:
        t = t.filter(pa.array(np.arange(t.num_rows) != k))        # a tile fewer: still a state
    else:
        t = pa.concat_tables([t, t.slice(k, 1)])                 # a (machine, pe, tile) twice
    _write(path, t, meta)


def m_metadata(rng, t, meta, path, src):
    doc = json.loads(meta)
    kind = rng.choice(["too many", "none", "not a list", "entry kind", "pes", "gpr", "status", "config",
                       "version", "format", "both", "missing", "huge int", "deep", "duplicate key", "count"])
    text = None
    if kind == "too many":
        doc["machines"] = doc["machines"] + [{}] * (MAX_MACHINES + 1 - len(doc["machines"]))
    elif kind == "none":
        doc["machines"] = []
    elif kind == "not a list":
        doc["machines"] = rng.choice([5, "x", None, {"pes": []}, True])
    elif kind == "entry kind":
        doc["machines"][rng.randrange(5)] = rng.choice([5, "x", None, [], {"pes": 3}])
    elif kind == "pes":
        doc["machines"][rng.randrange(5)]["pes"].pop()
    elif kind == "gpr":
        doc["machines"][rng.randrange(5)]["pes"][rng.randrange(4)]["gprs"][rng.randrange(32)] = \
            rng.choice(["0x1" + "0" * 16, -1, "zz", 1.5, None, "0x1"])
    elif kind == "status":
        doc["machines"][rng.randrange(5)]["pes"][rng.randrange(4)]["status"] = rng.choice([32, -1, "0", True])
    elif kind == "config":
        doc["config"] = rng.choice([5, {"local_bytes": -1}, {"profile": "nope"}, {"matrix_bytes": 2 ** 40}])
    elif kind == "version":
        doc["version"] = rng.choice([2, "1", None, True])
    elif kind == "format":
        doc["format"] = "other"
    elif kind == "both":
        doc["pes"] = doc["machines"][0]["pes"]
    elif kind == "missing":
        del doc[rng.choice(["machines", "format", "version", "config"])]
    elif kind == "huge int":
        text = json.dumps(doc).replace('"status": 0', '"status": ' + "9" * 5000, 1)
    elif kind == "deep":
        text = json.dumps(doc)[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    elif kind == "duplicate key":
        text = json.dumps(doc)[:-1] + ', "machines": ' + json.dumps(doc["machines"][:rng.randint(0, 5)]) + "}"
    else:                               # fewer entries than the rows name
        doc["machines"] = doc["machines"][: rng.randint(1, 4)]
    _write(path, t, json.dumps(doc) if text is None else text)


def m_metadata_text(rng, t, meta, path, src):
    text = meta
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(text) + 1)
        op = rng.choice(["cut", "insert", "delete"])
        if op == "cut":
            text = text[:i]
        elif op == "insert":
            text = text[:i] + rng.choice(['"', ",", "]", "}", "[", "{", ":", " ", "\x00", "\udcff", "1e999",
                                          "NaN", "\\u"]) + text[i:]
        else:
            text = text[:i] + text[i + rng.randint(1, 40):]
    _write(path, t, text)


MUTATIONS = [m_truncate, m_flip_bytes, m_layout, m_column, m_machine_ids, m_rows, m_metadata, m_metadata_text]


# ---------------------------------------------------------------- the checks

class _Hang(Exception):
    pass


def _cli(argv, capsys):
    """(status, stdout, stderr) of one command, which must end within 120 s, raise nothing, and
    fail (if it fails) in one bounded line."""
    def alarm(*_):
        raise _Hang(" ".join(map(str, argv)))
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(120)
    try:
        rc = main([str(a) for a in argv])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    out, err = capsys.readouterr()
    if rc and not (argv[0] == "diff" and rc == 1):          # diff's 1: the states differ
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"tile-emu {argv[0]}: ") and len(lines[0]) < 600, err[:2000]
    else:
        assert not err, err[:2000]
    return rc, out, err


def _sections(text: str) -> dict:
    out, k = {}, None
    for line in text.splitlines(keepends=True):
        head = line.split()
        if len(head) == 2 and head[0] == "machine" and head[1].endswith(":") and head[1][:-1].isdigit():
            k = int(head[1][:-1])
            out[k] = ""
        elif k is not None:
            out[k] += line
    return out


def _check(seed, good, tmp_path, capsys):
    rng = random.Random(seed)
    src = good / "good.arrow"
    t, meta = _read(src)
    mutate = MUTATIONS[seed % len(MUTATIONS)]
    f = tmp_path / "f.arrow"
    layout_only = mutate(rng, t, meta, f, src)
    k = rng.randrange(6)

    rc, out, _ = _cli(["show", f, "--machine", "all"], capsys)
    assert rc in (0, 1)
    whole = _sections(out)
    rc_s, out_s, _ = _cli(["show", f], capsys)                      # a summary and the first machines
    assert rc_s in (0, 1) and (rc_s == 0 or rc == 1)
    if rc_s == 0 and len(whole) > 4:
        assert out_s.splitlines()[0].endswith(f"--machine all for all {len(whole)})")
        assert _sections(out_s) == {k: whole[k] for k in range(4)}
    rc_k, out_k, _ = _cli(["show", f, "--machine", k], capsys)
    assert rc_k in (0, 1, 2)
    if rc_k == 0 and k in whole and (rc == 0 or k + 1 in whole):     # machine k was shown whole
        assert _sections(out_k)[k] == whole[k]
    rc_d, out_d, _ = _cli(["diff", f, f], capsys)
    assert rc_d in (0, 2) and (rc_d == 2) == (rc == 1)               # invalid for one, invalid for all
    rc_g, out_g, _ = _cli(["diff", src, f], capsys)
    assert rc_g in (0, 1, 2)
    rc_r, _, _ = _cli(["run", good / "saxpy.tbs", "--init", f, "--machine", k, "-q"], capsys)
    assert rc_r in (0, 1, 2)
    if layout_only:                                                   # the very same machines
        assert rc == 0 and rc_g == 0 and "same state" in out_g
        assert [m.digest() for m in map(Machine.from_state, load_states(f))] == \
            [m.digest() for m in map(Machine.from_state, load_states(src))]


@pytest.mark.parametrize("seed", range(32))
def test_hostile_batch_files_give_one_line_or_a_correct_result(seed, good, tmp_path, capsys):
    _check(seed, good, tmp_path, capsys)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(32, 1032))
def test_hostile_batch_files_give_one_line_or_a_correct_result_at_length(seed, good, tmp_path, capsys):
    _check(seed, good, tmp_path, capsys)


def test_a_machines_list_past_the_limit_is_refused_before_any_machine_is_read(good, tmp_path, capsys):
    t, meta = _read(good / "good.arrow")
    doc = json.loads(meta)
    doc["machines"] += [{}] * (MAX_MACHINES + 1 - len(doc["machines"]))
    _write(tmp_path / "f.arrow", t, json.dumps(doc))
    rc, out, err = _cli(["show", tmp_path / "f.arrow", "--machine", "0"], capsys)
    assert rc == 1 and not out and f"'machines' must list 1..{MAX_MACHINES} machines" in err
