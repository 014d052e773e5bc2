"""README.md is what a new user runs first: its Python example prints what the README says it
prints, every path it names is a file of this repository, and the CLI tour writes outside it."""
import functools
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
BLOCKS = [(m.group(1), m.group(2), m.start(), m.end()) for m in FENCE.finditer(README)]
PYTHON = [i for i, b in enumerate(BLOCKS) if b[0] == "python"]

# A token is a path when it has a lowercase path component with a slash, or a file extension.
EXTENSIONS = ("py", "md", "s", "arrow", "json", "sh", "toml", "tbs", "txt", "png")
TOKEN = re.compile(r"[^\s`'\"()\[\]<>,;|]+")


def path_tokens(text: str) -> list[str]:
    out = []
    for tok in TOKEN.findall(text):
        tok = tok.rstrip(".:")
        if "://" in tok or tok.startswith(("/", "-")) or (tok.startswith(".") and not tok.startswith(("./", "../"))):
            continue
        has_dir = "/" in tok and re.search(r"[a-z]", tok) and len(tok) > 1
        if has_dir or tok.rsplit(".", 1)[-1] in EXTENSIONS and "." in tok:
            out.append(tok)
    return out


@functools.lru_cache(maxsize=None)            # each snippet runs once per session (a subprocess)
def run_snippet(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_readme_has_a_python_example():
    assert PYTHON


@pytest.mark.parametrize("index", PYTHON)
def test_each_python_example_prints_what_the_readme_says(index):
    """Each ```python block is followed by 'It prints:' and a ```text block with its exact output."""
    _, code, _, end = BLOCKS[index]
    assert index + 1 < len(BLOCKS), "a python example without its output block"
    lang, expected, start, _ = BLOCKS[index + 1]
    assert lang == "text" and README[end:start].strip() == "It prints:"
    assert run_snippet(code) == expected


def test_the_hif8_result_is_decoded_as_hif8_and_reads_one():
    """Converting FP32 1.0 to HiF8 and decoding that byte as HiF8 gives 1.0 (as E4M3 it read 2^-6)."""
    code = next(BLOCKS[i][1] for i in PYTHON if '"HiF8"' in BLOCKS[i][1])
    assert 'numeric.decode(bits, "HiF8")' in code and '"E4M3"' not in code
    last = run_snippet(code).splitlines()[-1].split()
    assert last[1] == "[1.0]"


def test_every_path_the_readme_names_is_in_the_repository():
    tokens = path_tokens(README)
    assert "examples/saxpy.s" in tokens and "docs/encoding.md" in tokens     # the scan sees paths
    outside = [t for t in tokens if ".." in pathlib.PurePosixPath(t).parts]
    missing = [t for t in tokens if t not in outside and not (ROOT / t).exists()]
    assert not outside, f"paths outside the repository: {outside}"
    assert not missing, f"paths the repository does not have: {missing}"


def test_markdown_links_are_relative_paths_into_the_repository():
    for target in re.findall(r"\]\(([^)\s]+)\)", README):
        path = target.split("#", 1)[0]
        assert "://" in target or (path and ".." not in pathlib.PurePosixPath(path).parts
                                   and (ROOT / path).exists()), target


OUTPUT_OPTION = re.compile(r"(?:^|\s)(?:-o|--out|--heatmap)\s+(\S+)")


def test_the_cli_tour_writes_only_under_tmp_and_the_names_are_ignored_anyway():
    shell = "\n".join(b[1] for b in BLOCKS if b[0] == "" and "tile-emu" in b[1])
    outputs = OUTPUT_OPTION.findall(shell)
    assert {"/tmp/saxpy.tbs", "/tmp/final.arrow", "/tmp/out.arrow"} <= set(outputs)
    assert all(p.startswith("/tmp/") for p in outputs), outputs
    ignored = {line.strip() for line in (ROOT / ".gitignore").read_text().splitlines()}
    for name in ("saxpy.tbs", "final.arrow", "out.arrow"):
        assert f"/{name}" in ignored or name in ignored, name


def test_the_cli_tour_runs_with_the_exit_status_it_states(tmp_path, capsys, monkeypatch):
    """Every tour command, run in process with its /tmp outputs redirected to a private folder;
    a command whose comment says 'exit 1' must exit 1, every other 0.  (bench is timing, skipped.)"""
    import shlex

    from emulator.cli import main
    monkeypatch.chdir(ROOT)                          # the tour runs from the repository root
    shell = "\n".join(b[1] for b in BLOCKS if b[0] == "" and "tile-emu" in b[1]).replace("\\\n", " ")
    ran = 0
    for line in shell.splitlines():
        words = shlex.split(line.replace("/tmp/", f"{tmp_path}/"), comments=True)
        if words[:1] != ["tile-emu"] or words[1:2] == ["bench"]:
            continue
        comment = line[len(line.split("  #", 1)[0]):]
        rc = main(words[1:])
        assert rc == (1 if "exit 1" in comment else 0), (line, capsys.readouterr().err)
        ran += 1
    assert ran >= 14 and (tmp_path / "final.arrow").exists() and (tmp_path / "out.arrow").exists()


def test_the_readme_documents_the_exit_status_of_every_outcome():
    table = re.search(r"^\| status \| meaning \|\n\|---\|---\|\n((?:\|.*\n)+)", README, re.M)
    assert table, "exit status table"
    rows = {int(r.split("|")[1]): r for r in table.group(1).splitlines()}
    assert sorted(rows) == [0, 1, 2, 3]
    assert "usable GPU" in rows[3] and "unknown `--backend`" in rows[2]
    assert "states differ" in rows[1] and "diff" in rows[2] and "--version" in README
