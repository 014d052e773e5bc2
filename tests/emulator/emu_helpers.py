"""Block builders for the emulator tests: a block from a mnemonic and plain numbers."""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from emulator import Machine
from isa import BDatr, BDim, BIor, BIos, Block, BStart, TileBinding
from isa.datatypes import datatype
from isa.instructions import lookup

UNSET = object()


def blk(mn, dtype, srcs, dst, *, mask=0b0001, vc=4, vr=None, col=None, cap=None, datr=None, ior=None,
        ios=None, dim=UNSET, spelling=None, **datr_fields):
    """Block for `mn` reading tiles `srcs` and writing tile `dst` on PE_MASK `mask`."""
    row = lookup(mn)
    iot = tuple(TileBinding(t, mask) for t in srcs) + (TileBinding(dst, mask, cap),)
    if datr is None and datr_fields:
        datr = BDatr(**datr_fields)
    if dim is UNSET:
        dim = BDim(vc, vr, col)
    return Block(BStart(row.mode, row.function, datatype(dtype).code, spelling or row.engine), iot, dim, datr,
                 ior, ios)


# ---------------------------------------------------------------- random blocks (hypothesis)
# The random machines of the property tests hold tile 4 = a predicate, 6 = a Matrix feature map
# and 8 = an FP32 tile in the private CUBE representation, besides their typed tiles.

def draw_source(draw, row, role: str, typed_tile: int) -> int:
    """A source tile for operand `role` of `row`: the mask or the feature map where the role
    needs one, now and then the CUBE tile for TCVT, else `typed_tile`."""
    from hypothesis import strategies as st
    if role == "mask":
        return 4
    if role == "feature_map":
        return 6
    if row.mnemonic == "TCVT" and draw(st.integers(0, 3)) == 0:
        return 8
    return typed_tile


def draw_datr_fields(draw, row) -> dict:
    """Each B.DATR field `row` consumes: omitted, or a (mostly assigned) code."""
    from hypothesis import strategies as st
    codes = {"PadValueOrByteId": st.integers(0, 3), "CMode": st.integers(0, 5), "Sat": st.integers(0, 1),
             "Canonicalize": st.integers(0, 1), "DataType": st.sampled_from([1, 4, 16, 18, 23, 5, 0]),
             "RMode": st.integers(0, 6), "Layout": st.integers(0, 12)}
    return {name: draw(st.none() | codes[name]) for name in row.datr}


def run_binary(mn, dtype, a, b, machine: Machine | None = None, **kw):
    """One binary block t3 = t1 op t2 on PE0 (a, b: the logical elements); (result tile, result)."""
    m = Machine() if machine is None else machine
    m.write_tile(0, 1, dtype, a)
    m.write_tile(0, 2, dtype, b)
    res = m.execute(blk(mn, dtype, [1, 2], 3, vc=a.shape[1], vr=a.shape[0], **kw))
    return m.read_tile(0, 3), res


def fill(m: Machine, pe, tile, dtype, values, **kw):
    return m.write_tile(pe, tile, dtype, np.asarray(values), **kw)


def everywhere(m: Machine, tile, dtype, values, pes=range(4), **kw):
    for p in pes:
        m.write_tile(p, tile, dtype, np.asarray(values), **kw)


# ---------------------------------------------------------------- exact IEEE references

F16 = {"p": 11, "emin": -14, "emax": 15, "bits": 16, "ebits": 5}
F32 = {"p": 24, "emin": -126, "emax": 127, "bits": 32, "ebits": 8}
F64 = {"p": 53, "emin": -1022, "emax": 1023, "bits": 64, "ebits": 11}
FMT = {"FP16": F16, "FP32": F32, "FP64": F64}


def fdecode(bits, f):
    """Exact value of a finite IEEE encoding (or 'inf'/'nan' strings)."""
    bits = int(bits)
    mb = f["p"] - 1
    s = bits >> (f["bits"] - 1)
    e = (bits >> mb) & ((1 << f["ebits"]) - 1)
    man = bits & ((1 << mb) - 1)
    if e == (1 << f["ebits"]) - 1:
        return "nan" if man else ("-inf" if s else "inf")
    v = Fraction(man, 1 << mb) * Fraction(2) ** (f["emin"]) if e == 0 else \
        Fraction((1 << mb) + man, 1 << mb) * Fraction(2) ** (e - (1 << (f["ebits"] - 1)) + 1)
    return -v if s else v


def round_rne(x: Fraction, f):
    """Encoding of exact x rounded to nearest-even (no NaN input)."""
    sign = 1 if x < 0 else 0
    a = abs(x)
    mb = f["p"] - 1
    if a == 0:
        return sign << (f["bits"] - 1)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, f["emin"])
    scaled = a / Fraction(2) ** (e - mb)
    q, r = divmod(scaled.numerator, scaled.denominator)
    rem = Fraction(r, scaled.denominator)
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and q & 1):
        q += 1
    if q == 1 << (mb + 1):
        q, e = q >> 1, e + 1
    if e > f["emax"]:
        return (sign << (f["bits"] - 1)) | (((1 << f["ebits"]) - 1) << mb)
    biased = 0 if q < (1 << mb) else e + (1 << (f["ebits"] - 1)) - 1
    return (sign << (f["bits"] - 1)) | (biased << mb) | (q & ((1 << mb) - 1))


__all__ = ["FMT", "fdecode", "round_rne", "blk", "fill", "everywhere", "BDatr", "BDim", "BIor", "BIos", "Block", "BStart", "TileBinding", "Machine"]


def record_results(monkeypatch, cls, name: str) -> list[bool]:
    """Wrap method `name` of `cls` so each call appends whether it gave a result (not None):
    which blocks a compiled program finished, and which it handed to today's path."""
    real = getattr(cls, name)
    seen: list[bool] = []

    def recording(self, *args):
        res = real(self, *args)
        seen.append(res is not None)
        return res
    monkeypatch.setattr(cls, name, recording)
    return seen
