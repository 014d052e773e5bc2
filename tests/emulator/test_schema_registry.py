"""Issue 27: one registry row per instruction schema (emulator/schemas.py) holds its executor,
its source relation and its calculus effect rule; preflight and the calculus are generic over
the registry, so a new schema needs no edit there."""
import ast
import collections
import pathlib

from isa import instructions as I
from emulator import schemas

EMULATOR = pathlib.Path(__file__).resolve().parents[2] / "emulator"


def test_every_instruction_schema_has_exactly_one_registry_row():
    used = {row.schema for row in I.INSTRUCTIONS}
    counts = collections.Counter(s.name for s in schemas.ROWS)
    assert set(counts) == used
    assert all(n == 1 for n in counts.values()), counts


def test_every_row_has_an_executor_a_source_relation_and_an_effect_rule():
    for row in I.INSTRUCTIONS:
        entry = schemas.SCHEMAS[row.schema]
        assert callable(entry.executor) and callable(entry.reads), row.mnemonic
        # one relation per source role the instruction row names (B.IOT order)
        assert len(entry.sources) == len(row.sources), row.mnemonic
        assert all(isinstance(s, schemas.Source) and s.kind in ("numeric", "predicate") for s in entry.sources)
        assert schemas.EXECUTORS[row.mnemonic] is entry.executor


def _schema_names_used(path: pathlib.Path) -> set[str]:
    """The schema constants of isa.instructions (I.BINARY, ...) a module names."""
    constants = {name for name in dir(I) if isinstance(getattr(I, name), str)
                 and getattr(I, name) in {row.schema for row in I.INSTRUCTIONS}}
    tree = ast.parse(path.read_text())
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in constants
            and isinstance(n.value, ast.Name) and n.value.id == "I"}


def test_preflight_and_the_calculus_effect_walk_name_no_schema():
    assert not _schema_names_used(EMULATOR / "preflight.py")
    assert not _schema_names_used(EMULATOR / "calculus" / "tiles.py")
