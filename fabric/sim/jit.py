"""The compiled engine's view of the tables and the state: Numba StructRefs.

The kernel reads `P.ai`, `S.em`, ... from whatever it is given.  The reference engine gives it
the plain namedtuples of fabric/sim/program.py.  The compiled engine gives it these StructRefs:
a StructRef crosses from Python into compiled code as one pointer, where a namedtuple of thirty
arrays is unboxed array by array on every call (measured: about 40 us a call on the loaded
development box against 5 us), which a cycle of a small graph would otherwise spend three
times.  The field types are fixed: program.py builds every array C-contiguous in these dtypes.
"""
from __future__ import annotations

import numba
from numba.core import types
from numba.experimental import structref

from .program import State, Tables

I1, I2, I3, I4 = types.int64[::1], types.int64[:, ::1], types.int64[:, :, ::1], types.int64[:, :, :, ::1]
U1, U2, U3, U4, U5 = (types.uint64[::1], types.uint64[:, ::1], types.uint64[:, :, ::1], types.uint64[:, :, :, ::1],
                      types.uint64[:, :, :, :, ::1])
B2 = types.boolean[:, ::1]

TABLE_FIELDS = {"ai": I2, "a_in": I2, "a_const": U2, "ci": I2, "c_cval": U1, "c_need": B2, "c_out": B2, "c_src": I2,
                "ei": I2, "e_ival": U2, "r_ptr": I1, "r_edges": I1, "s_ptr": I1, "s_edges": I1, "tok": I3,
                "tok_val": U2, "topo_tr": I1, "order": I1, "o_every": I1, "rt": I2}
STATE_FIELDS = {"em": U3, "data": U4, "am": U3, "pend": U3, "la": I4, "vals": U5, "si": I3, "bi": I2,
                "out_i": I2, "out_v": U2, "out_n": I1, "rs": I4}
assert tuple(TABLE_FIELDS) == Tables._fields and tuple(STATE_FIELDS) == State._fields


@structref.register
class TablesType(types.StructRef):
    pass


@structref.register
class StateType(types.StructRef):
    pass


class TablesRef(structref.StructRefProxy):
    pass


class StateRef(structref.StructRefProxy):
    pass


structref.define_boxing(TablesType, TablesRef)
structref.define_boxing(StateType, StateRef)
TABLES_T = TablesType(list(TABLE_FIELDS.items()))
STATE_T = StateType(list(STATE_FIELDS.items()))


@numba.njit(cache=True)
def _tables(ai, a_in, a_const, ci, c_cval, c_need, c_out, c_src, ei, e_ival, r_ptr, r_edges, s_ptr, s_edges, tok,
            tok_val, topo_tr, order, o_every, rt):
    p = structref.new(TABLES_T)
    p.ai, p.a_in, p.a_const, p.ci, p.c_cval, p.c_need, p.c_out = ai, a_in, a_const, ci, c_cval, c_need, c_out
    p.c_src, p.ei, p.e_ival, p.r_ptr, p.r_edges, p.s_ptr, p.s_edges = c_src, ei, e_ival, r_ptr, r_edges, s_ptr, s_edges
    p.tok, p.tok_val, p.topo_tr, p.order, p.o_every, p.rt = tok, tok_val, topo_tr, order, o_every, rt
    return p


@numba.njit(cache=True)
def _state(em, data, am, pend, la, vals, si, bi, out_i, out_v, out_n, rs):
    s = structref.new(STATE_T)
    s.em, s.data, s.am, s.pend, s.la, s.vals, s.si, s.bi = em, data, am, pend, la, vals, si, bi
    s.out_i, s.out_v, s.out_n, s.rs = out_i, out_v, out_n, rs
    return s


def tables(T: Tables):
    return _tables(*T)


def state(S: State):
    return _state(*S)
