"""The binary tile instructions as reduction merges: their declared laws per DataType kind and the
load-time check of a tile reduction's policy.

Pure data over the isa tables, so the static program check (program.py) can ask it without
reaching up into the tile leaves that execute blocks (tiles.py).
"""
from __future__ import annotations

from isa import instructions as I
from isa.atomicio import quote

from .errors import RegionError
from .functions import Function
from .reduction import check_policy

# Laws of the binary tile instructions as reduction merges, per DataType kind:
# (associative, commutative, regroup) -- the instruction table's merge_laws column.
MERGE_LAWS: dict[str, dict[str, tuple[bool, bool, bool]]] = {
    r.mnemonic: dict(r.merge_laws) for r in I.INSTRUCTIONS if r.merge_laws}
NO_LAWS = (False, False, False)    # TSUB, TDIV, TREM, TSHL, TSHR: strict folds only


def merge_laws(mnemonic: str, kind: str) -> tuple[bool, bool, bool]:
    return MERGE_LAWS.get(mnemonic, {}).get(kind, NO_LAWS)


def _binary_row(mnemonic: str):
    row = I.BY_MNEMONIC.get(mnemonic)
    return row if row is not None and row.schema == I.BINARY else None


def check_tile_merge(node) -> None:
    """Load-time check of a tile reduction: a binary tile instruction whose declared laws allow
    the policy for every DataType it supports (diagnosed, never assumed)."""
    row = _binary_row(node.combine)
    if row is None:
        names = ", ".join(r.mnemonic for r in I.INSTRUCTIONS if r.schema == I.BINARY)
        raise RegionError(f"{node.path}.combine", f"a tile reduction combines with a binary tile instruction "
                                                  f"({names}); {quote(node.combine)} is not one")
    for kind, (a, c, g) in MERGE_LAWS.get(node.combine, {"int": NO_LAWS, "float": NO_LAWS}).items():
        check_policy(node.policy, Function(node.combine, 2, "merge", None, a, c, g), f"{node.path}.policy")
