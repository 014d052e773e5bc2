import pathlib
import sys

# The numeric tests share independent references (oracles.py, op_reference.py) by plain import.
# No __init__.py here: a package named `kernels` under tests/ would shadow the real one.
sys.path.insert(0, str(pathlib.Path(__file__).parent))
