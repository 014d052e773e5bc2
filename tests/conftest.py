import pathlib
import sys

# Helpers shared by the tests of every folder (mutate.py, strict_device.py) sit here
# (pytest runs with --import-mode=importlib, which puts no test folder on sys.path).
sys.path.insert(0, str(pathlib.Path(__file__).parent))
