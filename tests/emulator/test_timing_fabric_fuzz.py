"""Fuzzing the input kind "timing fabrics": mutated copies of the shipped emulator/pe.json given
to `tile-emu fabric check` and to `tile-emu run --timing --fabric` (issue 21, "Done means").

Whatever the mutation, each command ends with exit 0 or 1, never a traceback; every error is
one line naming the file; the two commands agree (a description `run` accepts is one `fabric
check` accepts); and where the engines load, the cycles of a TADD (VEC) and a TEXP (SFU) block
are the ones docs/timing.md gives for the mutated lanes and latencies, computed here by hand.
The default suite runs a small seeded sample, `-m slow` a large one."""
import copy
import json
import math
import random

import numpy as np
import pytest

from emu_helpers import blk, fill
from emulator import Machine
from emulator.cli import main
from emulator.timing import DEFAULT_FABRIC, EngineModelError, PEEngines, stream_timing
from fabric.io import load_text
from isa import encode
from mutate import paths as _paths, set_at as _set

PE = json.loads(DEFAULT_FABRIC.read_text())
DATATYPES = PE["fus"][0]["nodes"][0]["hw_params"]["datatypes"]
JUNK = [None, True, 0, -1, 1, 2 ** 32, 2 ** 64, 1.5, "", "x", [], {}, [1], {"a": 1}, "bits<64>", "tile.TADD",
        "TileVecEngine", "in.0", "vec.0", "FP32", "bits_tag<8,2>", "pipelined_beats"]


def _edit(d, rng):
    fus = d["fus"] if isinstance(d.get("fus"), list) else []
    fu = rng.choice(fus) if fus else None
    node = fu["nodes"][0] if isinstance(fu, dict) and fu.get("nodes") and isinstance(fu["nodes"][0], dict) else None
    kind = rng.randrange(14)
    if kind < 3 or node is None:
        paths = [p for p in _paths(d) if p]
        if paths:
            _set(d, rng.choice(paths), rng.choice(JUNK + [KeyError]))
    elif kind == 3:
        node["hw_params"]["datatypes"] = rng.sample(DATATYPES, rng.randint(0, len(DATATYPES)))
    elif kind == 4:
        node["op_list"] = rng.sample(node["op_list"], rng.randint(0, len(node["op_list"])))
    elif kind == 5:
        node["hw_params"]["lanes"] = rng.choice([1, 2, 3, 5, 16, 17, 64, 65536, 2 ** 20, 2 ** 32 - 1])
    elif kind == 6:
        node["hw_params"]["pipeline_latency"] = rng.choice([1, 2, 4, 12, 1000, 2 ** 32 - 1])
    elif kind == 7:
        w = rng.choice([0, 1, 8, 63, 64, 256, 1000, 1024, 4096, 2 ** 20])
        node["ports"]["inputs"] = [f"bits<{w}>"] * len(node["ports"]["inputs"])
        fu["inputs"] = list(node["ports"]["inputs"])
    elif kind == 8:
        node["ports"]["results"] = [f"bits<{rng.choice([1, 64, 256, 1024])}>"]
    elif kind == 9:
        node["op_list"].append(rng.choice(["tile.TADD", "tile.TDIV", "tile.TCVT", "arith.addi", "tile.NOPE"]))
    elif kind == 10:
        base = rng.randrange(1000)                               # 30 equal copies: one derivation
        d["fus"].extend(dict(copy.deepcopy(fu), name=f"{fu['name']}{base + i}") for i in range(rng.choice([1, 1, 30])))
    elif kind == 11:
        d["fus"].remove(fu)
    elif kind == 12:
        node["implementation_family"] = rng.choice(["TileVecEngine", "TileSfuEngine", "ScalarIntegerAddSub"])
    else:
        node["constraints"] = rng.choice([[], [{"resource_contract": "one_cycle_elastic"}],
                                          node["constraints"] * 2])


def mutate(rng: random.Random) -> bytes:
    """One hostile timing fabric: structural replacements anywhere, targeted engine edits
    (DataType and op_list subsets, extreme lanes and latencies, port widths, extra or missing
    engines, wrong families and contracts), or byte-level damage of the JSON text."""
    d = copy.deepcopy(PE)
    for _ in range(rng.randint(1, 3)):
        try:
            _edit(d, rng)
        except (KeyError, TypeError, AttributeError, IndexError, ValueError):
            pass                    # an earlier edit broke the structure this one needed
    raw = bytearray(json.dumps(d).encode())
    if rng.random() < 0.15:                                  # byte damage on top
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(raw))
            op = rng.choice(["flip", "drop", "dup"])
            if op == "flip":
                raw[at] ^= rng.randint(1, 255)
            elif op == "drop":
                del raw[at:at + rng.randint(1, 8)]
            else:
                raw[at:at] = raw[at:at + rng.randint(1, 8)]
    return bytes(raw)


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    """A TADD (VEC) and a TEXP (SFU) block, independent, on PE0: 4 x 16 FP32 destinations."""
    tmp = tmp_path_factory.mktemp("timing-fuzz")
    m = Machine()
    for t in (1, 2):
        fill(m, 0, t, "FP32", np.full((4, 16), 0x3F800000 + t, np.uint32))
    blocks = [blk(mn, "FP32", srcs, dst, vc=16, vr=4, cap=256) for mn, srcs, dst in
              (("TADD", [1, 2], 3), ("TEXP", [1], 4))]
    s, init = tmp / "s.tbs", tmp / "init.arrow"
    s.write_bytes(encode(blocks))
    m.save(init)
    return s, init, blocks, m


def _expected_cycles(engines):
    """docs/timing.md by hand: each block issues at 0 (different engines, no dependence) and
    completes at ceil(64 / lanes) + pipeline_latency; total is the later completion."""
    out = {}
    for mn, e in (("TADD", "VEC"), ("TEXP", "SFU")):
        eng = engines.engines.get(e)
        if eng is not None:
            out[mn] = math.ceil(64 / eng.lanes) + eng.latency
    return out


def _one_line_error(err: str, path) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert str(path) in lines[0] and "Traceback" not in lines[0]


def check_one(seed, stream, tmp_path, capsys, run_cli):
    rng = random.Random(seed)
    text = mutate(rng)
    path = tmp_path / f"pe-{seed}.json"
    path.write_bytes(text)
    rc = main(["fabric", "check", str(path)])
    out = capsys.readouterr()
    assert rc in (0, 1)
    if rc == 0:
        assert out.err == "" and out.out.startswith("fabric ")
    else:
        assert out.err and all(line.startswith("tile-emu fabric: ") for line in out.err.splitlines())
    try:
        engines = PEEngines.load(path)
    except EngineModelError as exc:
        assert "\n" not in str(exc) and str(path) in str(exc)
        engines = None
    if engines is not None:
        assert rc == 0, "run admits a description fabric check rejects"
        s, init, blocks, m = stream
        rows = {b.mnemonic: b for b in stream_timing_admitted(blocks, m, engines)}
        for mn, complete in _expected_cycles(engines).items():
            if mn in rows:
                assert (rows[mn].issue, rows[mn].complete) == (0, complete)
    else:
        fabric = _loadable(text)
        if rc == 0 and fabric is not None:          # a valid description that is not a PE model
            engines_of = [op.family for op in fabric.all_ops() if op.family in ("TileVecEngine", "TileSfuEngine")]
            assert not engines_of or len(set(engines_of)) < len(engines_of)
    if run_cli:
        s, init, _, _ = stream
        rc_run = main(["run", str(s), "--init", str(init), "--timing", "--fabric", str(path)])
        out = capsys.readouterr()
        assert rc_run in (0, 1)
        if engines is None:
            assert rc_run == 1
            _one_line_error(out.err, path)
        elif rc_run == 0:
            assert "total cycles" in out.out
        else:                                       # an engine the description lacks: one block rejected
            assert "ENGINE_CAPABILITY" in out.err


def stream_timing_admitted(blocks, m, engines):
    """The timing of the blocks the engines admit (the rest would stop `run`)."""
    from isa.errors import IllegalBlockException
    from isa.legality import resolve
    admitted = []
    for b in blocks:
        try:
            engines.admit(resolve(b))
        except IllegalBlockException:
            continue
        admitted.append(b)
    return stream_timing(admitted, m, engines).blocks if admitted else []


def _loadable(text):
    try:
        return load_text(text)
    except Exception:               # the loader's own errors; check_one already checked the CLI
        return None


SMALL = 24
LARGE = 600


@pytest.mark.parametrize("seed", range(SMALL))
def test_mutated_timing_fabrics_fail_cleanly_and_time_by_the_model(seed, stream, tmp_path, capsys):
    check_one(seed, stream, tmp_path, capsys, run_cli=seed % 4 == 0)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(SMALL, SMALL + LARGE))
def test_mutated_timing_fabrics_fail_cleanly_and_time_by_the_model_at_scale(seed, stream, tmp_path, capsys):
    check_one(seed, stream, tmp_path, capsys, run_cli=seed % 3 == 0)
