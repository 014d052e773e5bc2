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
