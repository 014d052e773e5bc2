"""MachineConfig: the sizes the seed leaves to the implementation (docs/machine.md)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from isa.fields import GPR_BITS, GPR_COUNT, NUM_PES
from kernels.numeric.profiles import profile as numeric_profile

DEFAULT_LOCAL_BYTES = 256 * 1024    # per-PE Local tile store
DEFAULT_MATRIX_BYTES = 64 * 1024    # per-PE Matrix-location store (TIMG2COL source/destination)
# Bounds what an untrusted state file can make one block allocate: the largest destination is
# 64 MiB per PE (at most 128 Mi nibble elements), so a block's working arrays stay a few GiB.
MAX_STORE_BYTES = 64 << 20


@dataclass(frozen=True)
class MachineConfig:
    local_bytes: int = DEFAULT_LOCAL_BYTES
    matrix_bytes: int = DEFAULT_MATRIX_BYTES
    profile: str = "ieee"           # numeric profile (kernels.numeric.profiles)

    num_pes = NUM_PES
    gpr_count = GPR_COUNT
    gpr_bits = GPR_BITS

    def __post_init__(self):
        for name in ("local_bytes", "matrix_bytes"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= MAX_STORE_BYTES:
                raise ValueError(f"MachineConfig.{name}={v!r}: must be an int in [0, {MAX_STORE_BYTES}]")

    def store_bytes(self, location: str) -> int:
        return self.local_bytes if location == "Local" else self.matrix_bytes


def with_profile(config: MachineConfig, profile: str) -> MachineConfig:
    """`config` under numeric profile `profile` (kernels.numeric.profiles raises UnknownProfile,
    a ValueError listing the known ones, for a name it does not have)."""
    return replace(config, profile=numeric_profile(profile).name)
