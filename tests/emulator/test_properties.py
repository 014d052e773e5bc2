"""Property: any block the machine rejects leaves the whole state (digest) unchanged, and any
block it accepts changes only the selected PEs' destination tile and numeric status.  Blocks are
random, most of them illegal; no exception other than IllegalBlockException may escape."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emu_helpers import draw_datr_fields, draw_source
from emulator import FeatureMap, Machine, MachineConfig
from isa import BDatr, BDim, BIor, BIos, Block, BStart, TileBinding
from isa.errors import IllegalBlockException
from isa.datatypes import datatype
from isa.instructions import INSTRUCTIONS


def _base() -> Machine:
    rng = np.random.default_rng(11)
    m = Machine(MachineConfig(local_bytes=8192, matrix_bytes=4096))
    for p in range(4):
        m.write_tile(p, 1, "FP32", rng.integers(0, 2**32, (2, 4), dtype=np.uint64))
        m.write_tile(p, 2, "S32", rng.integers(1, 2**31, (2, 4), dtype=np.uint64))
        m.write_tile(p, 3, "U8", rng.integers(0, 256, (2, 4), dtype=np.uint64), defined=rng.random((2, 4)) > 0.1)
        m.write_tile(p, 4, None, rng.integers(0, 2, (2, 4)), kind="predicate")
        m.write_tile(p, 5, "FP16", rng.integers(0, 2**16, (2, 4)), defined=rng.random((2, 4)) > 0.2)
        m.write_tile(p, 6, "FP16", rng.integers(0, 2**16, (16, 4)), location="Matrix",
                     fmap=FeatureMap("NC1HWC0", N=1, C1=1, H=4, W=4, C0=4, filterH=2, filterW=2, channels=3))
        m.write_tile(p, 7, "S8", rng.integers(0, 256, (2, 4)), layout=(p % 2) * 3)
        m.write_tile(p, 8, "FP32", rng.integers(0, 2**32, (2, 4)), representation="cube")
        for r in range(1, 4):                # r0 is the hard-wired zero
            m.set_gpr(p, r, int(rng.integers(0, 4)) | (int(rng.integers(0, 2)) << 20))
    return m


BASE = _base()
small = st.integers(0, 5)
opt = lambda s: st.none() | s  # noqa: E731


COMPATIBLE = {1: 1, 16: 2, 23: 3, 4: 5, 18: 7}     # DataType code -> the base tile of that type


@st.composite
def blocks(draw):
    """Mostly blocks that pass the stateless rules (so the stateful ones are exercised), with a
    mutation now and then that breaks one stateless rule."""
    row = draw(st.sampled_from(INSTRUCTIONS))
    wild = draw(st.integers(0, 9)) == 0
    mode, fn = (draw(st.integers(0, 3)), draw(st.integers(0, 31))) if wild else (row.mode, row.function)
    codes = sorted(datatype(n).code for n in row.dtypes)
    dtype = draw(st.integers(0, 31)) if wild else draw(st.sampled_from([c for c in COMPATIBLE if c in codes] or codes)
                                                                       if draw(st.integers(0, 4)) else st.sampled_from(codes))
    mask = draw(st.sampled_from([0, 1, 3, 5, 15, 8, 2]) | st.integers(0, 15))
    n = row.arity + 1
    tiles = [draw(st.integers(1, 9)) if draw(st.integers(0, 3)) == 0 else draw_source(draw, row, role, COMPATIBLE.get(dtype, 1))
             for role in row.sources] + [draw(st.integers(1, 9))]
    caps = [None] * (n - 1) + [draw(st.integers(0, 300)) if draw(st.integers(0, 3)) == 0 else None]
    masks = [mask] * n
    if wild:
        masks[-1] = draw(st.integers(0, 17))
    iot = tuple(TileBinding(t, mk, c) for t, mk, c in zip(tiles, masks, caps))
    dim = BDim(4, 2) if draw(st.integers(0, 2)) else \
        BDim(draw(st.integers(1, 6)), draw(opt(st.integers(1, 5))), draw(opt(st.integers(6, 8))))
    if wild:
        dim = draw(opt(st.builds(BDim, opt(st.integers(0, 6)), opt(st.integers(0, 5)), opt(st.integers(0, 8)))))
    fields = draw_datr_fields(draw, row)
    if wild:
        fields["Layout"] = draw(opt(st.integers(0, 15)))
    datr = BDatr(**fields) if fields or wild else None
    ior = None
    if row.uses_ior or wild:
        ior = draw(opt(st.builds(BIor, st.integers(0, 3), st.integers(0, 3),
                                 st.integers(0, 1 if wild else 0), st.integers(0, 1 if wild else 0))))
    ios = BIos(0) if wild and draw(st.booleans()) else None
    return Block(BStart(mode, fn, dtype, draw(st.sampled_from([row.engine, "TEPL"]))), iot, dim, datr, ior, ios)


def _pe_state(m: Machine, p: int):
    return (m.status(p), tuple(m.gpr(p, i) for i in range(32)),
            tuple((t, m.read_tile(p, t).desc, m.read_tile(p, t).payload, m.read_tile(p, t).defined.tobytes())
                  for t in m.tiles(p)))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks())
def test_rejected_blocks_change_nothing_and_accepted_blocks_only_their_destination(block):
    m = BASE.copy()
    before = m.digest()
    states = [_pe_state(m, p) for p in range(4)]
    try:
        res = m.execute(block)
    except IllegalBlockException:
        assert m.digest() == before
        return
    for p in range(4):
        if p not in res.pes:
            assert _pe_state(m, p) == states[p]
        else:
            others = [t for t in m.tiles(p) if t != res.dest]
            old = {t: x for t, *x in states[p][2]}
            for t in others:
                v = m.read_tile(p, t)
                assert (v.desc, v.payload, v.defined.tobytes()) == tuple(old[t])
            assert res.dest in m.tiles(p)
