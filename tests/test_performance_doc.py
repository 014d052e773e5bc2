"""docs/performance.md holds the current figure of every benchmark, one table per area; the dated
narrative is docs/performance-history.md.  A figure is only useful with the machine it ran on,
the day it was taken and a command that reproduces it, so: every table row has a date and a
machine, every `tile-emu bench --case NAME` the tables name is a case `tile-emu bench` has, and
every link into the history names one of its sections."""
from __future__ import annotations

import pathlib
import re

from emulator.commands.bench import CASES, GPU_CASES

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"
CURRENT = (DOCS / "performance.md").read_text()
HISTORY = (DOCS / "performance-history.md").read_text()
CASE_NAMES = {c.name for c in CASES} | {c.name for c in GPU_CASES}
CASE_FAMILY = re.compile(r"^(numeric|profile|special|fp16|batch|machine|run\.log|golden|verify|vcg|fabric\.sim|startup|gpu)\.")


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Each Markdown table as (header cells, body rows' cells), the separator line dropped."""
    found, block = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            block.append(line)
            continue
        if block:
            assert len(block) >= 3 and set(block[1].replace("|", "").strip()) <= set("-: "), block[:2]
            found.append((cells(block[0]), [cells(b) for b in block[2:]]))
            block = []
    return found


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


TABLES = tables(CURRENT)


def test_the_current_figures_are_tables_and_the_history_is_kept_apart():
    assert len(TABLES) >= 10
    assert HISTORY.startswith("# Performance history\n")
    assert "[performance.md](performance.md)" in HISTORY.split("\n## ", 1)[0]
    assert "## Adding a figure" in CURRENT and "performance-history.md" in CURRENT.split("## Adding a figure")[1]


def test_every_table_row_has_a_date_and_a_machine():
    for header, rows in TABLES:
        lower = [h.lower() for h in header]
        assert "date" in lower and "machine" in lower, header
        date, machine = lower.index("date"), lower.index("machine")
        for row in rows:
            assert len(row) == len(header), row
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", row[date]), row
            assert row[machine] not in ("", "-"), row


def test_every_bench_case_the_tables_name_is_a_case_of_tile_emu_bench():
    named = []
    for header, rows in TABLES:
        for row in rows:
            for cell in row:
                for command in re.findall(r"`([^`]*tile-emu bench[^`]*)`", cell):
                    named += re.findall(r"--case\s+(\S+)", command)
            first = re.findall(r"`([^`\s]+)`", row[0])
            named += [t for t in first if CASE_FAMILY.match(t) and "*" not in t]
    assert named, "the tables name no bench case"
    unknown = sorted(set(named) - CASE_NAMES)
    assert not unknown, f"not cases of tile-emu bench: {unknown}"


def test_every_case_prefix_in_the_prose_selects_a_case():
    """`--case` takes a prefix: one in the text outside the tables must still pick a case."""
    for prefix in re.findall(r"--case\s+([\w.\-]+)", CURRENT):
        if prefix.isupper():                 # a placeholder (PREFIX), not a name
            continue
        assert any(name.startswith(prefix) for name in CASE_NAMES), prefix


def test_every_link_into_the_history_names_one_of_its_sections():
    anchors = {github_anchor(line.lstrip("#")) for line in HISTORY.splitlines() if line.startswith("#")}
    links = re.findall(r"\]\(performance-history\.md#([^)]+)\)", CURRENT)
    assert links
    missing = sorted(set(links) - anchors)
    assert not missing, missing


def test_every_row_links_to_where_its_figure_came_from():
    for header, rows in TABLES:
        source = [h.lower() for h in header].index("from")
        for row in rows:
            assert "performance-history.md#" in row[source], row
