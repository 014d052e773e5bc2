"""emulator: the machine (PEs, tile stores, GPRs), atomic block execution, streams, state I/O.

    from emulator import Machine, MachineConfig
    m = Machine();  m.write_tile(0, 1, "FP32", bits);  m.execute(block);  m.read_tile(0, 2)
    batch = MachineBatch([m, m2], backend="cpu");  batch.run(stream);  batch.machine(1)
"""
from .config import MachineConfig  # noqa: F401
from .machine import BlockResult, Machine, RunResult, StreamError, TileView  # noqa: F401
from .batch import BatchResult, MachineBatch  # noqa: F401
from .tiles import Descriptor, FeatureMap  # noqa: F401
