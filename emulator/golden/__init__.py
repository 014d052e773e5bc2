"""Golden vectors (docs/golden-format.md).  `emulator.golden.extract(dataset, case, block=None)`
turns one case into a Reproducer (emulator/golden/reproduce.py; imported when first used)."""


def __getattr__(name):
    if name in ("extract", "Reproducer", "NoSuchCase"):
        import importlib
        return getattr(importlib.import_module(".reproduce", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
