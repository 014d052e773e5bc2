"""kernels.numeric: the public numeric API (raw encodings in, (bits, flags) out).

    bits, flags = numeric.elementwise("TADD", "FP16", a_bits, b_bits, profile="ieee")
    bits, flags = numeric.convert(src_bits, "FP32", "E4M3", rmode="RNE", sat=False, profile="ieee")
    values = numeric.decode(bits, "E4M3");  bits = numeric.encode(values, "E4M3", rmode="RNE")
    numeric.info("E4M3")

Names resolve lazily so that importing the package stays cheap and each module owns its part.
"""
import sys
import types
from importlib import import_module

from .errors import UnsupportedOperation  # noqa: F401
from .profiles import PROFILES, Profile, profile  # noqa: F401

_EXPORTS = {
    "elementwise": ".elementwise",
    "convert": ".convert",
    "convert_status": ".convert",
    "decode": ".formats",
    "encode": ".convert",
    "info": ".formats",
    "valid_encoding": ".formats",
    "supports": ".elementwise",
    "elementwise_status": ".elementwise",
    "round_pack": ".rounding",
}


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))


class _Package(types.ModuleType):
    """Importing a submodule sets the package attribute of the same name to the module object,
    which would shadow the function of the same name (`elementwise` lives in elementwise.py,
    `convert` in convert.py): the package keeps the function instead, so that
    `numeric.elementwise(...)` stays callable without importing the compiled tiers (and Numba)
    when the package is imported (docs/performance.md, "Start-up")."""

    def __setattr__(self, name, value):
        if isinstance(value, types.ModuleType) and _EXPORTS.get(name) == "." + name:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
