"""Inside a package, modules read bottom-up: no import cycle between its modules.

Every import counts as an edge, at module level or inside a function (a deferred import still
makes the importer depend on the imported module).  The package's __init__ is its facade and is
left out.  Packages are added here as their cycles are untangled (issue 12).
"""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ["kernels/numeric", "fabric/vcg", "emulator", "emulator/golden", "emulator/calculus",
            "emulator/commands", "fabric", "fabric/sim", "isa"]


def edges(pkg: str) -> dict[str, set[str]]:
    """module -> sibling modules it imports (relative or absolute, any nesting)."""
    folder = ROOT / pkg
    dotted = pkg.replace("/", ".")
    mods = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    graph = {m: set() for m in mods}
    for m in mods:
        for node in ast.walk(ast.parse((folder / f"{m}.py").read_text())):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level == 0:
                    base = base[len(dotted) + 1:] if base.startswith(dotted + ".") else \
                        ("" if base == dotted else None)
                    if base is None:
                        continue
                elif node.level != 1:
                    continue
                names = [base.split(".")[0]] if base else [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name[len(dotted) + 1:].split(".")[0] for a in node.names
                         if a.name.startswith(dotted + ".")]
            graph[m] |= {n for n in names if n in mods and n != m}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        state[m] = 2
        stack.pop()
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


@pytest.mark.parametrize("pkg", PACKAGES)
def test_no_import_cycle_inside_the_package(pkg):
    cycle = find_cycle(edges(pkg))
    assert cycle is None, f"{pkg}: " + " -> ".join(cycle)


def test_the_cycle_finder_sees_function_level_imports(tmp_path):
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    g = edges("kernels/numeric")
    assert "formats" in g["rounding"] and "classes" in g["hif8"]
