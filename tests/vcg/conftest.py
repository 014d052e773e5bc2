import pathlib
import sys

# vcg_reference.py sits next to the tests (pytest runs with --import-mode=importlib).
sys.path.insert(0, str(pathlib.Path(__file__).parent))
