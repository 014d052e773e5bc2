"""The stream builder's view of the state (emulator/golden/streams.py, StreamBuilder).

Before each block the builder lists what the state offers on the PEs of a PE_MASK: the regular,
tall and predicate tiles of the shape class that every selected PE holds with one descriptor,
and which integer tiles are never-zero divisors.  These tests recompute that view from the
descriptors the builder tracks and from the initial state, with code of this file, at every
block choice of seeded groups (legal and illegal, constrained and not), and check the initial
tiles' arrays against their descriptors."""
from __future__ import annotations

import numpy as np
import pytest

from emulator.config import MachineConfig
from emulator.golden import streams as S
from emulator.tiles import element_dtype
from isa import fields as F
from isa.datatypes import datatype

NEVER_ZERO = S.REGULAR_IDS[3:S.INITIAL_REGULAR]     # the initial divisors (ids 4..6)
CON = S.Constraint(frozenset({"TADD", "TDIV", "TREM", "TSEL", "TCMP", "TCVT", "TEXTRACT"}),
                   frozenset({"FP16", "S16", "S32", "U8", "FP32"}))


def _shape_class_tile(desc, shape) -> bool:
    """A regular, tall or predicate tile of the shape class (what a block may read from the state)."""
    return (desc.Layout == 0 and desc.fmap is None and desc.location == "Local" and desc.Col == shape.cols
            and desc.ValidRow == shape.vrow and desc.ValidCol == shape.vcol
            and desc.Row in (shape.vrow, shape.vrow + S.TALL_ROWS)) or \
        (desc.kind == "predicate" and desc.Col == shape.cols and desc.ValidRow == shape.vrow
         and desc.ValidCol == shape.vcol)


def _expected_view(builder, mask: int, initial: dict):
    """(have, preds, never-zero ids) of the state on the PEs of `mask`, from the descriptors."""
    pes = F.SELECTED_PES[mask]
    have, preds = {}, {}
    for tid in sorted(S.REGULAR_IDS + (S.PRED_TILE,)):
        descs = [builder.state[p].get(tid) for p in pes]
        d = descs[0]
        if d is None or any(x != d for x in descs) or not _shape_class_tile(d, builder.shape):
            continue
        if d.kind == "predicate":
            preds.setdefault(d.Row, []).append(tid)
        else:
            have.setdefault((d.datatype.name, d.Row), []).append(tid)
    # a never-zero divisor: an initial integer divisor no block has written on any selected PE
    nonzero = {t for t in NEVER_ZERO
               if all((p, t) not in builder.writer and builder.state[p][t] is initial[(p, t)][0]
                      and builder.state[p][t].datatype.is_int for p in pes)}
    return have, preds, nonzero


@pytest.mark.parametrize("seed, reason, con", [(1, None, S.EVERY), (2, None, CON), (3, "SOURCE_MISSING", S.EVERY),
                                               (4, "INT_DIVIDE_BY_ZERO", CON), (5, None, S.EVERY)])
@pytest.mark.parametrize("shape", S.SHAPES, ids=lambda s: s.name)
def test_every_block_choice_sees_the_state_the_descriptors_hold(seed, reason, con, shape, monkeypatch):
    rng = np.random.default_rng(seed)
    checked = []
    original = S.StreamBuilder._candidates

    def candidates(self, mask):
        got = original(self, mask)
        _, have, preds = got
        want_have, want_preds, nonzero = _expected_view(self, mask, self._initial_tiles)
        assert have == want_have and preds == want_preds
        pes = F.SELECTED_PES[mask]
        assert self._nonzero_on(pes) & set(t for ids in have.values() for t in ids) == \
            nonzero & set(t for ids in have.values() for t in ids)
        checked.append(mask)
        return got

    original_initial = S.StreamBuilder._initial

    def initial(self):
        tiles, gprs = original_initial(self)
        self._initial_tiles = tiles
        for (p, tid), (desc, e, d) in tiles.items():       # arrays of the descriptor's element type
            assert e.dtype == element_dtype(desc) and e.shape == (self.n, desc.elements)
            assert d.dtype == bool and d.shape == (self.n, desc.elements)
            if desc.kind == "numeric" and tid in NEVER_ZERO and datatype(desc.dtype).is_int:
                assert (e != 0).all()
        return tiles, gprs

    monkeypatch.setattr(S.StreamBuilder, "_candidates", candidates)
    monkeypatch.setattr(S.StreamBuilder, "_initial", initial)
    for _ in range(3):
        S.build_group(shape, 8, 3, rng, MachineConfig(), reason, "cpu", con, S.Aim(con, 8))
    assert checked
