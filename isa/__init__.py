"""isa: the tile architecture as data -- tables, block model, legality, encoding, assembly.

Names resolve on first use (PEP 562), so that `from isa.atomicio import ...` (every command) does
not import the assembler, the encoder and NumPy (docs/performance.md, "Start-up").
"""
from importlib import import_module

_MODULES = {
    "assembly": ("assemble", "assemble_blocks", "disassemble"),
    "block": ("BDatr", "BDim", "BIor", "BIos", "Block", "BStart", "TileBinding"),
    "datatypes": ("DATATYPES", "DataType", "datatype"),
    "encoding": ("decode", "encode", "iter_blocks"),
    "errors": ("AsmError", "DecodeError", "EncodeError", "IllegalBlockException"),
    "instructions": ("INSTRUCTIONS", "Instruction", "lookup"),
    "legality": ("ResolvedBlock", "resolve"),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(import_module("." + _EXPORTS[name], __name__), name)
        globals()[name] = value          # resolved once
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))
