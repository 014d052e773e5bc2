"""One hostile-input smoke over every input kind issue 21 names, through the command line as a
user runs it: dataflow graphs (`fabric sim`), golden manifests (`verify`, `verify --oracle`,
`golden --coverage`, both exports), stream golden datasets (their manifests, data files and
layouts, through the same commands), batch state files (`show`, `show --machine`, `diff`,
`run --machine`), timing fabrics (`fabric check`, `run --timing --fabric`) and `bench` /
`--backend` arguments.  Each input is a seeded random mutation of a real one (a JSON value
replaced, deleted, retyped or duplicated; bytes flipped, cut or repeated; an argument swapped
for a hostile one).

Whatever the mutation: the command returns an exit status (0, 1, 2 or 3), never raises; a
failure is exactly one line on stderr; no input file changes; and no output is left behind by
a failed run.  The per-kind fuzz tests beside this one check each kind's results in depth;
this one runs every kind through one harness.  The default suite runs a few cases per kind,
`-m slow` a thousand."""
from __future__ import annotations

import copy
import json
import pathlib
import random
import shutil

import pytest

from emulator.cli import main
from isa import assemble
from mutate import paths as _paths

ROOT = pathlib.Path(__file__).resolve().parents[2]
EX = ROOT / "examples"
JUNK = [None, True, False, 0, -1, 1, 2 ** 31, 2 ** 63, 2 ** 64, -2 ** 63, 1.5, float("nan"), "", "x" * 300,
        "\u0000", "nosuch.0", "op=TADD", "FP32", [], {}, [None], {"a": 1}, [1, 2, 3]]
BENCH_N = ["0", "-1", "1", "7", str(2 ** 20), str(2 ** 31), str(2 ** 40), str(2 ** 62), str(2 ** 64), "1e3",
           "0x10", "", "nan", " 5"]
BENCH_CASES = ["numeric.TADD.FP32", "vcg", "batch", "machine", "numeric", "nosuch", "", "x" * 500, "numeric.TADD.\n",
               "fabric.sim", "profile"]
BACKENDS = ["reference", "cpu", "gpu", "auto", "", "nosuch", "CPU", "cpu ", "x" * 200]


# ---------------------------------------------------------------------------- mutators

def mutate_json(doc, rng: random.Random, edits: int):
    """`edits` random edits of a JSON document: a value replaced by junk or by another value of
    the document, a key deleted, a list entry repeated or dropped, a key renamed."""
    doc = copy.deepcopy(doc)
    for _ in range(edits):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            return rng.choice(JUNK)
        path = rng.choice(paths)
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        key, kind = path[-1], rng.randrange(6)
        if kind == 0:
            parent[key] = rng.choice(JUNK)
        elif kind == 1:
            other = rng.choice(paths)
            src = doc
            for k in other:
                src = src[k]
            parent[key] = copy.deepcopy(src)
        elif kind == 2:
            del parent[key]
        elif kind == 3 and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        elif kind == 4 and isinstance(parent, dict):
            parent[str(key) + rng.choice(["_", "x", " "])] = parent.pop(key)
        elif isinstance(parent[key], int) and not isinstance(parent[key], bool):
            parent[key] = parent[key] + rng.choice([-1, 1, 2 ** 32, -2 ** 32])
        else:
            parent[key] = rng.choice(JUNK)
    return doc


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    kind = rng.randrange(4)
    if kind == 0:
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    elif kind == 1:
        del b[rng.randrange(len(b)):]
    elif kind == 2:
        i = rng.randrange(len(b))
        b[i:i] = b[i:i + rng.randint(1, 4096)]
    else:
        i, j = sorted(rng.randrange(len(b)) for _ in range(2))
        b[i:j] = bytes(j - i)
    return bytes(b)


# ---------------------------------------------------------------------------- the harness

def _tree(folder: pathlib.Path) -> dict:
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None)
            for p in sorted(folder.rglob("*"))}


def check(argv, capsys, inputs: pathlib.Path, outputs=()) -> int:
    """Run argv: an exit status, no exception; each stderr line one message of the command
    (`tile-emu CMD: ...`, a few at most: `fabric` lists one line per diagnostic); inputs
    unchanged; a failed run leaves none of `outputs` -- unless it ran to an outcome that is a
    result (a simulation that deadlocked, a batch in which machines faulted: their states and
    traces are written, and the summary says so)."""
    before = _tree(inputs)
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:                  # argparse: a usage error
        rc = exc.code
    cap = capsys.readouterr()
    assert rc in (0, 1, 2, 3), (argv, rc, cap.err[-2000:])
    assert "Traceback" not in cap.err, (argv, cap.err[-3000:])
    lines = cap.err.splitlines()
    if rc not in (0, 2):
        assert len(lines) <= 64 and all(line.startswith(f"tile-emu {argv[0]}: ") and len(line) < 2000
                                        for line in lines), (argv, cap.err[-2000:])
    assert _tree(inputs) == before, argv
    ran = "status: " in cap.out or "faulted) written to" in cap.err
    if rc != 0 and not ran:
        for out in outputs:
            out = pathlib.Path(out)
            assert not out.exists() or (out.is_dir() and not any(out.iterdir())), (argv, out)
    return rc


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Real inputs of every kind, made once: a small golden dataset, the example graph and
    fabric, the example batch file and its stream, the shipped PE description."""
    root = tmp_path_factory.mktemp("smoke")
    assert main(["golden", "--ops", "TADD,TCVT", "--dtypes", "FP16", "--dst-dtypes", "FP32", "--rmodes", "RNE",
                 "--sat", "0", "--cases", "12", "--seed", "2", "--quiet", "--out", str(root / "golden")]) == 0
    assert main(["golden", "--streams", "--blocks", "3", "--cases", "4", "--group-cases", "2", "--shapes", "r1c8,r3c1",
                 "--illegal-fraction", "0.5", "--seed", "2", "--quiet", "--out", str(root / "streams")]) == 0
    shutil.copy(EX / "saxpy.batch.arrow", root / "batch.arrow")
    (root / "saxpy.tbs").write_bytes(assemble((EX / "saxpy.s").read_text()))
    shutil.copy(EX / "saxpy.init.arrow", root / "init.arrow")
    return root


def _fresh(tmp_path, world, *names) -> pathlib.Path:
    d = tmp_path / "in"
    d.mkdir()
    for n in names:
        src = world / n
        (shutil.copytree if src.is_dir() else shutil.copy)(src, d / n)
    return d


def graph_case(seed, world, tmp_path, capsys):
    rng = random.Random(seed)
    d = tmp_path / "in"
    d.mkdir()
    name = rng.choice(["sum-loop", "temporal"])               # temporal: two contexts of a temporal PE
    g = json.loads((EX / "fabric" / f"{name}.graph.json").read_text())
    f = json.loads((EX / "fabric" / f"{name}.fabric.json").read_text())
    if rng.random() < 0.7:
        g = mutate_json(g, rng, rng.randint(1, 3))
    else:
        f = mutate_json(f, rng, rng.randint(1, 3))
    (d / "g.json").write_text(json.dumps(g))
    (d / "f.json").write_text(json.dumps(f))
    out = tmp_path / "out"
    out.mkdir()
    argv = ["fabric", "sim", d / "g.json", "--fabric", d / "f.json", "--cycles", rng.choice(["50", "2000"]),
            "--engine", rng.choice(["reference", "compiled"]), "--trace", out / "t.arrow", "--vcd", out / "w.vcd"]
    if rng.random() < 0.3:
        argv = ["fabric", rng.choice(["check", "format"]), d / "f.json"] + rng.choice([[], ["--full-keys"]])
    check(argv, capsys, d, [out / "t.arrow", out / "w.vcd"])


def golden_case(seed, world, tmp_path, capsys):
    rng = random.Random(seed)
    d = _fresh(tmp_path, world, "golden")
    ds = d / "golden"
    if rng.random() < 0.75:
        m = json.loads((ds / "manifest.json").read_text())
        (ds / "manifest.json").write_text(json.dumps(mutate_json(m, rng, rng.randint(1, 2))))
    else:
        path = rng.choice(sorted(ds.rglob("*.parquet")))
        path.write_bytes(mutate_bytes(path.read_bytes(), rng))
    out = tmp_path / "out"
    check(_dataset_command(rng, ds, out, ["golden", "export", ds, "--format", "testfloat", "--op", "TCVT", "--dtype",
                                          "FP16", "--dst", "FP32", "--out", out]), capsys, d, [out])


def _dataset_command(rng, ds, out, *more):
    """One of the commands that read a golden dataset `ds` (an export writing to `out`)."""
    return rng.choice([
        ["verify", ds, "--quiet", "--backend", rng.choice(["reference", "cpu"])],
        ["verify", ds, "--quiet", "--oracle"],
        ["golden", "--coverage", ds],
        ["golden", "export", ds, "--format", "hex", "--out", out],
        *more,
    ])


def streams_case(seed, world, tmp_path, capsys):
    """A stream golden dataset: its manifest or generation.json edited as JSON, a data file's
    bytes, or one group's layout text edited as JSON (its checksums updated)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from emulator.golden.dataset import sha256
    rng = random.Random(seed)
    d = _fresh(tmp_path, world, "streams")
    ds = d / "streams"
    path = rng.choice(sorted(ds.rglob("*.parquet")))
    kind = rng.randrange(4)
    if kind < 2:
        name = ds / ("manifest.json" if kind == 0 else "generation.json")
        name.write_text(json.dumps(mutate_json(json.loads(name.read_text()), rng, rng.randint(1, 2))))
    else:
        if kind == 2:
            path.write_bytes(mutate_bytes(path.read_bytes(), rng))
        else:
            t = pq.read_table(path)
            col = t.column("layout").combine_chunks()
            texts = col.dictionary.to_pylist()
            texts[0] = json.dumps(mutate_json(json.loads(texts[0]), rng, rng.randint(1, 3)))
            layout = pa.DictionaryArray.from_arrays(col.indices, pa.array(texts, pa.string()))
            pq.write_table(t.set_column(t.schema.get_field_index("layout"), "layout", layout), path)
        m = json.loads((ds / "manifest.json").read_text())
        for part in m["partitions"]:
            for rec in part["files"]:
                if ds / rec["path"] == path:
                    rec["sha256"], rec["bytes"] = sha256(path), path.stat().st_size
        (ds / "manifest.json").write_text(json.dumps(m))
    out = tmp_path / "out"
    check(_dataset_command(rng, ds, out), capsys, d, [out])


def batch_case(seed, world, tmp_path, capsys):
    rng = random.Random(seed)
    d = _fresh(tmp_path, world, "batch.arrow", "saxpy.tbs")
    (d / "batch.arrow").write_bytes(mutate_bytes((d / "batch.arrow").read_bytes(), rng))
    out = tmp_path / "o.arrow"
    k = rng.choice(["0", "3", "15", "16", "-1", str(2 ** 40)])
    argv = rng.choice([
        ["show", d / "batch.arrow"],
        ["show", d / "batch.arrow", "--machine", k],
        ["diff", d / "batch.arrow", world / "batch.arrow"],
        ["run", d / "saxpy.tbs", "--init", d / "batch.arrow", "--machine", k, "--out", out, "-q"],
        ["run", d / "saxpy.tbs", "--init", d / "batch.arrow", "--backend", rng.choice(BACKENDS), "--out", out, "-q"],
    ])
    check(argv, capsys, d, [out])


def timing_case(seed, world, tmp_path, capsys):
    rng = random.Random(seed)
    d = _fresh(tmp_path, world, "saxpy.tbs", "init.arrow")
    pe = json.loads((ROOT / "emulator" / "pe.json").read_text())
    (d / "pe.json").write_text(json.dumps(mutate_json(pe, rng, rng.randint(1, 3))))
    out = tmp_path / "o.arrow"
    argv = rng.choice([
        ["fabric", "check", d / "pe.json"],
        ["run", d / "saxpy.tbs", "--init", d / "init.arrow", "--timing", "--fabric", d / "pe.json", "--out", out, "-q"],
    ])
    check(argv, capsys, d, [out])


def bench_case(seed, world, tmp_path, capsys):
    """Hostile bench arguments: refused before any case runs (the harness would take minutes
    otherwise), so every --n here is either refused or paired with --list."""
    rng = random.Random(seed)
    d = tmp_path / "in"
    d.mkdir()
    n, case = rng.choice(BENCH_N), rng.choice(BENCH_CASES)
    argv = ["bench", "--case", case, "--n", n]
    if n.strip().isdigit() and 0 < int(n) < 2 ** 30:
        argv += ["--list"]
    argv += rng.choice([[], ["--repeat", rng.choice(["0", "101", str(2 ** 70), "x"])], ["--json"],
                        ["--backend", rng.choice(BACKENDS)], ["--profile", rng.choice(["a9", "", "ftz" * 40])]])
    rc = check(argv, capsys, d)
    assert rc != 0 or "--list" in argv, argv


KINDS = {"graph": graph_case, "golden": golden_case, "streams": streams_case, "batch": batch_case,
         "timing": timing_case, "bench": bench_case}


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("seed", range(3))
def test_hostile_inputs_of_every_new_kind(kind, seed, world, tmp_path, capsys):
    KINDS[kind](seed, world, tmp_path, capsys)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("seed", range(100, 300))
def test_many_hostile_inputs_of_every_new_kind(kind, seed, world, tmp_path, capsys):
    KINDS[kind](seed, world, tmp_path, capsys)


@pytest.mark.parametrize("streams", [False, True], ids=["cases", "streams"])
def test_a_generator_profile_that_names_no_profile_is_one_line(tmp_path, capsys, streams):
    """Found by the manifest fuzz: `generator.profile` set to a string that is no profile raised
    UnknownProfile from open_dataset (and its stream twin) instead of the one-line refusal."""
    out = tmp_path / "d"
    argv = ["--streams", "--blocks", "2"] if streams else ["--ops", "TADD", "--dtypes", "FP32"]
    assert main(["golden", *argv, "--cases", "4", "--seed", "1", "--quiet", "--out", str(out)]) == 0
    capsys.readouterr()                 # the generation's own lines (its coverage holes on stderr)
    m = json.loads((out / "manifest.json").read_text())
    m["generator"]["profile"] = m["format"]
    (out / "manifest.json").write_text(json.dumps(m))
    (out / "generation.json").write_text(json.dumps(m["generator"]))
    rc = check(["verify", out, "--quiet"], capsys, out)
    assert rc == 1
