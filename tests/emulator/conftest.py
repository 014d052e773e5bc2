import pathlib
import sys

# The emulator tests share block builders in emu_helpers.py (pytest runs with importlib mode).
sys.path.insert(0, str(pathlib.Path(__file__).parent))
