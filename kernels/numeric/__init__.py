"""kernels.numeric: the public numeric API (raw encodings in, (bits, flags) out).

    bits, flags = numeric.elementwise("TADD", "FP16", a_bits, b_bits, profile="ieee")
    bits, flags = numeric.convert(src_bits, "FP32", "E4M3", rmode="RNE", sat=False, profile="ieee")
    values = numeric.decode(bits, "E4M3");  bits = numeric.encode(values, "E4M3", rmode="RNE")
    numeric.info("E4M3")

Names resolve lazily so that importing the package stays cheap and each module owns its part.
"""
from importlib import import_module

from .errors import UnsupportedOperation  # noqa: F401
from .profiles import PROFILES, Profile, profile  # noqa: F401

_EXPORTS = {
    "elementwise": ".elementwise",
    "convert": ".convert",
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


# Importing a submodule sets the package attribute of the same name to the module object,
# which would shadow the lazily resolved function of the same name (`elementwise` lives in
# elementwise.py).  Binding the function eagerly keeps `numeric.elementwise(...)` callable.
from .elementwise import elementwise, elementwise_status, supports  # noqa: E402,F401
from .convert import convert  # noqa: E402,F401  (same reason: convert.py defines convert)
