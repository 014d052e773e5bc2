"""Load an example's script (examples/rtl/run.py, examples/dpi/run.py, ...) as a module of its own.

Several examples name their driver `run.py`; `sys.path.insert` + `import run` caches whichever
was imported first under the name `run`, so a second test file silently got the other
example's functions.  Each script is loaded here from its path under a name that says which
example it is; its folder goes on sys.path for the sibling modules it imports (lanes.py, flow.py)."""
from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def load_example(folder: str, script: str = "run"):
    name = f"example_{folder}_{script}"
    if name in sys.modules:
        return sys.modules[name]
    path = EXAMPLES / folder / f"{script}.py"
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def tools_fixture(example):
    """A module-scoped `tools` fixture for an example's simulation tests: its tools are installed
    (example.missing_tools() is None), else a failure that says what to install, not a skip."""
    @pytest.fixture(scope="module")
    def tools():
        need = example.missing_tools()
        assert need is None, need
    return tools
