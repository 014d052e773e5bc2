"""isa: the tile architecture as data -- tables, block model, legality, encoding, assembly."""
from .assembly import assemble, assemble_blocks, disassemble  # noqa: F401
from .block import BDatr, BDim, BIor, BIos, Block, BStart, TileBinding  # noqa: F401
from .datatypes import DATATYPES, DataType, datatype  # noqa: F401
from .encoding import decode, encode, iter_blocks  # noqa: F401
from .errors import AsmError, DecodeError, EncodeError, IllegalBlockException  # noqa: F401
from .instructions import INSTRUCTIONS, Instruction, lookup  # noqa: F401
from .legality import ResolvedBlock, resolve  # noqa: F401
