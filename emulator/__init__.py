"""emulator: the machine (PEs, tile stores, GPRs), atomic block execution, streams, state I/O.

    from emulator import Machine, MachineConfig
    m = Machine();  m.write_tile(0, 1, "FP32", bits);  m.execute(block);  m.read_tile(0, 2)
    batch = MachineBatch([m, m2], backend="cpu");  batch.run(stream);  batch.machine(1)

The names resolve on first use (PEP 562), so that `import emulator.cli` and the commands that
need no machine (asm, disasm, show, diff, fabric check) do not import the engine, its compiled
kernels and Numba (docs/performance.md, "Start-up").
"""
from importlib import import_module

_EXPORTS = {
    "MachineConfig": ".config",
    "BlockResult": ".machine", "Machine": ".machine", "RunResult": ".machine",
    "StreamError": ".machine", "TileView": ".machine",
    "BatchResult": ".batch", "MachineBatch": ".batch",
    "Descriptor": ".tiles", "FeatureMap": ".tiles",
}


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value          # resolved once
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))
