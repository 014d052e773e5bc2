"""The package layout the design card fixes: isa -> kernels -> fabric -> emulator, nothing upward."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
ORDER = ["isa", "kernels", "fabric", "emulator"]


def _imports(path: pathlib.Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]


def test_no_package_imports_upward():
    bad = []
    for rank, pkg in enumerate(ORDER):
        for path in (ROOT / pkg).rglob("*.py"):
            for name in _imports(path):
                if name in ORDER and ORDER.index(name) > rank:
                    bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, bad


# ---------------------------------------------------------------------------------------------
# Inside each package, modules read bottom-up: no import cycle between modules, counting imports
# inside functions too (a deferred import is still a dependency a reader has to follow).

def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _import_targets(name: str, path: pathlib.Path):
    """(module, imported name or None) for every import statement anywhere in the file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            for a in node.names:
                yield module, a.name


def module_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports.  Package `__init__` files are facades, not nodes:
    `from pkg import X` counts as an import of the submodule that `pkg/__init__.py` takes X from
    (or of the submodule `pkg.X` itself)."""
    files = {_module_name(p): p for pkg in ORDER for p in (ROOT / pkg).rglob("*.py")}
    facades = {m for m, p in files.items() if p.name == "__init__.py"}
    reexport = {(m, n): mod for m in facades for mod, n in _import_targets(m, files[m])
                if n and mod in files and mod not in facades}

    def resolve(module, name):
        if name and f"{module}.{name}" in files:
            return f"{module}.{name}"
        if module in facades:
            return reexport.get((module, name))
        return module if module in files else None

    graph = {m: set() for m in files if m not in facades}
    for m in graph:
        for module, name in _import_targets(m, files[m]):
            target = resolve(module, name)
            if target in graph and target != m:
                graph[m].add(target)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def test_the_cycle_finder_sees_function_level_imports():
    graph = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": {"p.a"}}
    assert import_cycles(graph) == [{"p.a", "p.b", "p.c"}]
    files = module_graph()
    # calculus/interp.py imports tiles only inside functions; the edge must still be there.
    assert "emulator.calculus.tiles" in files["emulator.calculus.interp"]


def test_no_import_cycle_inside_a_package():
    cycles = [sorted(c) for c in import_cycles(module_graph())]
    assert not cycles, f"import cycles: {cycles}"
