"""libtile_emu called from C programs (docs/cosim-c.md): every documented error path, several
models and a batch in one process, a Python exception turned into a message, the interpreter
failing to start, and the documented C example replaying streams exactly as `tile-emu run` does.
The library and the programs are built with AddressSanitizer (conftest.py), so a write past a
caller's buffer or a use of freed memory in the library's code stops a test.  Skipped, naming
what to install, where there is no C toolchain (conftest.py)."""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from emulator import Machine
from emulator.machine import load_machines
from isa import assemble, iter_blocks

ROOT = pathlib.Path(__file__).resolve().parents[2]
C = pathlib.Path(__file__).resolve().parent / "c"
EX = ROOT / "examples"
DOC = (ROOT / "docs" / "cosim-c.md").read_text()
SAXPY_INIT = EX / "saxpy.init.arrow"


def tile_emu(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "emulator.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


@pytest.fixture(scope="module")
def streams(tmp_path_factory):
    """(initial state, .tbs) pairs: saxpy, and stream goldens of every shape, one of them faulting."""
    out = tmp_path_factory.mktemp("streams")
    saxpy = out / "saxpy.tbs"
    saxpy.write_bytes(assemble((EX / "saxpy.s").read_text()))
    pairs = [(SAXPY_INIT, saxpy)]
    assert tile_emu("golden", "--streams", "--blocks", "6", "--cases", "2", "--group-cases", "1", "--seed", "5",
                    "--illegal-fraction", "0.5", "--quiet", "--out", out / "g").returncode == 0
    from examples_loader import load_example
    dpi_run = load_example("dpi")
    (out / "cases").mkdir()
    legal = dpi_run.stream_cases(out / "g", out / "cases")
    pairs += [(init, tbs) for _, init, tbs in legal]
    illegal = _illegal_case(out / "g", out / "cases")
    return pairs + [illegal]


def _illegal_case(dataset, out):
    """One stream of the dataset that faults part way, as (initial state, .tbs)."""
    from emulator import MachineBatch
    from emulator.golden import streams_dataset as SD
    from emulator.golden.streams_replay import rebuild
    ds = SD.open_stream_dataset(dataset)
    for part, chunk, rec in ds.files:
        t = ds.read(part, chunk, rec)
        for i in range(t.num_rows):
            row = t.slice(i, 1)
            if row.column("outcome")[0].as_py() == "fault" and row.column("fault_block")[0].as_py() > 0:
                config, n, tiles, gprs, _ = rebuild(row, ds, rec["path"])
                init, tbs = out / "faulting.init.arrow", out / "faulting.tbs"
                MachineBatch.from_stacks(config, n, tiles, "cpu", gprs=gprs).machine(0).save(init)
                tbs.write_bytes(row.column("stream")[0].as_py())
                return init, tbs
    raise AssertionError("no stream faults after its first block")


def test_every_documented_error_path_answers_its_code_and_changes_nothing(library, tmp_path):
    exe = library.compile(C / "errors.c", tmp_path)
    damaged = tmp_path / "damaged.arrow"
    damaged.write_bytes(SAXPY_INIT.read_bytes()[:3000])
    out = tmp_path / "out"
    out.mkdir()
    # the damaged file by its short relative name: a message cuts a long path (pytest's temporary
    # paths grow with -n), and the check wants the name in the message
    done = library.run(exe, SAXPY_INIT, damaged.name, EX / "saxpy.batch.arrow", out, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "PASS: 0 failure(s)" and not [x for x in lines if x.startswith("FAIL")]
    assert sum(x.startswith("ok ") for x in lines) >= 75      # every check ran
    assert "AddressSanitizer" not in done.stderr


def test_addresssanitizer_sees_a_caller_that_gives_a_buffer_smaller_than_it_says(library, tmp_path):
    """The negative control of the ASan runs: a caller lying about a buffer's size is caught
    where the library writes past it, so the clean runs above mean something."""
    if not library.asan:
        pytest.skip("the compiler has no AddressSanitizer")
    words = ", ".join(f"{w:#x}ULL" for w in np.frombuffer(assemble((EX / "saxpy.s").read_text())[16:], "<u8"))
    exe = library.compile(f"""
#include <stdlib.h>
#include "tile_emu.h"
int main(int argc, char **argv) {{
    (void)argc;
    te_model *m;
    uint64_t w[] = {{{words}}};
    uint32_t n; uint64_t nb;
    if (te_open(argv[1], NULL, &m) != TE_OK || te_step(m, w, 6, 16, &n, &nb) != TE_OK) return 3;
    te_record *r = malloc(n * sizeof *r);
    uint8_t *data = malloc(100);                         /* says 4096 below */
    return te_records(m, r, n, data, 4096, &n, &nb);
}}
""", tmp_path, "lie")
    done = library.run(exe, SAXPY_INIT)
    assert done.returncode != 0 and "heap-buffer-overflow" in done.stderr


@pytest.mark.parametrize("which", [0, 1])      # saxpy; a stream golden: six blocks of mixed instructions
def test_several_models_and_a_batch_in_one_process_agree_with_python(library, tmp_path, streams, which):
    exe = library.compile(C / "lockstep.c", tmp_path)
    init, tbs = streams[which]
    out = tmp_path / "out"
    out.mkdir()
    done = library.run(exe, init, tbs, out)
    assert done.returncode == 0, done.stderr
    data = tbs.read_bytes()
    blocks = list(iter_blocks(data))
    whole, first = Machine.load(init), Machine.load(init)
    want = []
    for k, (off, block) in enumerate(blocks):
        recs = whole.step(block, offset=off)
        if k == 0:
            first.step(block, offset=off)
        want += [_line("a", r) for r in recs.to_pylist()]
    got = (out / "records.txt").read_text().splitlines()
    assert [x for x in got if x.startswith("a ")] == want
    assert load_machines(out / "a.arrow")[0].digest() == whole.digest()
    assert load_machines(out / "b.arrow")[0].digest() == first.digest()
    fmaps = any(t.desc.fmap is not None for pe in whole.pes for t in pe.tiles.values())
    assert (out / "c.arrow").exists() == (not fmaps)
    if not fmaps:                                                             # built through te_write_tile
        assert load_machines(out / "c.arrow")[0].digest() == whole.digest()
    pair = load_machines(out / "batch.arrow")
    assert len(pair) == 2 and all(m.digest() == whole.digest() for m in pair)
    batch_lines = [x for x in got if x.startswith("batch machine ")]
    assert len(batch_lines) == 2 * len(want)
    assert [x.replace("batch machine 1", "batch machine 0") for x in batch_lines if " machine 1 " in x] == \
           [x for x in batch_lines if " machine 0 " in x]                     # the same records, machine by machine
    assert "batch machines 2" in got


def _line(who: str, r: dict) -> str:
    total = 0
    for b in r["payload"]:
        total = (total * 31 + b) & 0xFFFFFFFF
    kind = r["record"]
    name = r["mnemonic"] if kind == "commit" else r["reason"]
    return (f"{who} machine {r['machine']} block {r['block']} offset {r['offset']} {kind} {name} pe {r['pe']} "
            f"tile {r['tile']} status {r['status']} payload {total:08x}")


def test_a_python_exception_inside_comes_back_as_a_message_and_the_host_runs_on(library, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import emulator.machine\n"
        "def _broken(self, block, *, offset=None):\n"
        "    raise RuntimeError('injected failure')\n"
        "emulator.machine.Machine.step = _broken\n")
    exe = library.compile(C / "inject.c", tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    done = library.run(exe, SAXPY_INIT, out, env=library.env(PYTHONPATH=f"{site}:{ROOT}"))
    assert done.returncode == 0, done.stdout + done.stderr
    step = done.stdout.splitlines()[0]
    assert step == "step: TE_ERR_PYTHON: te_step: internal error in tile-emu: RuntimeError: injected failure"
    assert "host still running" in done.stdout
    assert (out / "before.arrow").read_bytes() == (out / "after.arrow").read_bytes()


def test_an_interpreter_that_cannot_import_tile_emu_is_te_err_init_not_an_exit(library, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.modules['emulator'] = None     # import emulator fails\n")
    exe = library.compile("""
#include <stdio.h>
#include "tile_emu.h"
int main(void) {
    te_model *m;
    int a = te_open(NULL, NULL, &m), b = te_close(m);
    printf("%s %s\\n%s\\n", te_code_name(a), te_code_name(b), te_last_message());
    return 0;
}
""", tmp_path, "noinit")
    done = library.run(exe, env=library.env(PYTHONPATH=f"{site}:{ROOT}"))
    assert done.returncode == 0, done.stderr
    first, message = done.stdout.splitlines()
    assert first == "TE_ERR_INIT TE_ERR_INIT"
    assert message.startswith("tile-emu: the embedded Python interpreter could not start or could not import tile-emu")


def _doc_block(lang: str, first_line: str) -> str:
    blocks = re.findall(rf"^```{lang}\n(.*?)^```", DOC, re.S | re.M)
    found = [b for b in blocks if b.startswith(first_line)]
    assert len(found) == 1, f"docs/cosim-c.md has {len(found)} ```{lang} blocks starting {first_line!r}"
    return found[0]


def test_the_documented_c_example_is_examples_dpi_replay_c_and_about_30_lines():
    text = _doc_block("c", "/* replay INIT.arrow")
    assert text == (EX / "dpi" / "replay.c").read_text()
    assert len(text.splitlines()) <= 32


def test_the_documented_c_example_replays_each_stream_as_tile_emu_run_does(library, tmp_path, streams):
    exe = library.compile(_doc_block("c", "/* replay INIT.arrow"), tmp_path, "replay")
    faulted = 0
    for k, (init, tbs) in enumerate(streams):
        ours, theirs = tmp_path / f"c{k}.arrow", tmp_path / f"py{k}.arrow"
        mine = library.run(exe, init, tbs, ours)
        ref = tile_emu("run", tbs, "--init", init, "--out", theirs, "-q")
        assert mine.returncode == ref.returncode, (mine.stderr, ref.stderr)
        assert ours.read_bytes() == theirs.read_bytes(), tbs
        faulted += mine.returncode == 1
    assert faulted >= 1 and len(streams) >= 4
