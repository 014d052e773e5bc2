"""A loaded graph as the tables the cycle kernel reads (`Program`), and the kernel's state (`State`).

`build_program(graph, streams)` turns every actor's cycle model (fabric/sim/models.py) into rows
of case tables and every edge into producer/consumer rows; `streams` gives each instance its
input tokens.  Values are `NW` uint64 words (the widest value of the graph), least significant
word first.  The semantic kernels of the computed results are grouped (`Program.groups`): all
actors with one kernel are evaluated in one call per cycle.
"""
from __future__ import annotations

import graphlib
from collections import namedtuple
from dataclasses import dataclass

import numpy as np

from . import kernel as K
from .models import ModelError, build
from .semantics import token_of, value_bits, words

_SRC = {"computed": K.SRC_COMPUTED, "stored": K.SRC_STORED, "true": K.SRC_ONE, "false": K.SRC_ZERO,
        "const": K.SRC_CONST, "group": K.SRC_GROUP, "": K.SRC_NONE}
_KIND = {"elastic": K.K_ELASTIC, "routed": K.K_ROUTED, "stream": K.K_STREAM, "transparent": K.K_TRANSPARENT,
         "parallelize": K.K_PARALLELIZE, "serialize": K.K_SERIALIZE}

Tables = namedtuple("Tables", ["ai", "a_in", "a_const", "ci", "c_cval", "c_need", "c_out", "c_src", "ei", "e_ival",
                               "r_ptr", "r_edges", "s_ptr", "s_edges", "tok", "tok_val", "topo_tr", "order",
                               "o_every", "rt"])
State = namedtuple("State", ["em", "data", "am", "pend", "la", "vals", "si", "bi", "out_i", "out_v", "out_n", "rs"])


class ProgramError(ValueError):
    """A use the kernel cannot run; `actor` names it (the loader reports NoCycleModel)."""

    def __init__(self, actor: str, why: str, code: str = "NoCycleModel"):
        super().__init__(why)
        self.actor, self.code = actor, code


@dataclass
class Group:
    key: tuple
    fn: object
    actors: np.ndarray          # actor indices
    in_words: tuple             # words per operand
    out_words: tuple


@dataclass
class Program:
    graph: object
    T: Tables
    B: int
    NW: int
    models: list
    groups: list
    names: list
    labels: list
    widths: list
    edge_types: list
    window: int


def _use_view(a):
    class U:  # what models.build reads
        pass
    u = U()
    u.name, u.actor, u.corr, u.family, u.fabric_op = a.name, a.actor, a.corr, a.family, a.fabric_op
    return u


def models_of(graph) -> list:
    out = []
    for a in graph.actors:
        try:
            out.append(build(_use_view(a)))
        except ModelError as exc:
            raise ProgramError(a.name, str(exc), exc.code) from None
        except Exception as exc:  # a FabricError of the adapter contract matcher
            diags = getattr(exc, "diagnostics", None)
            if diags is None:
                raise
            raise ProgramError(a.name, "; ".join(str(d) for d in diags)) from None
    return out


def _csr(lists):
    ptr = np.zeros(len(lists) + 1, np.int64)
    ptr[1:] = np.cumsum([len(x) for x in lists])
    flat = np.array([v for x in lists for v in x], np.int64)
    return ptr, flat


def _src_code(s: str) -> int:
    if s.startswith("operand "):
        return int(s.split()[1])
    return _SRC[s]


def edge_type(graph, e):
    s = e.src
    if s[0] == "@input":
        return graph.inputs[s[1]][2]
    return next(a for a in graph.actors if a.name == s[0]).out_types[s[1]]


def build_program(graph, streams=None, instances: int = 1, models=None) -> Program:
    """streams: None (every instance runs the graph's own input tokens) or one dict per instance
    mapping an input name to its token list (raw values as the graph writes them)."""
    models = models_of(graph) if models is None else models
    B = instances if streams is None else len(streams)
    A, E = len(graph.actors), len(graph.edges)
    index = {a.name: i for i, a in enumerate(graph.actors)}
    widths = [e.width for e in graph.edges]
    types = [edge_type(graph, e) for e in graph.edges]
    wide = [e.width + (t.tag.width if hasattr(t, "tag") else 0) for e, t in zip(graph.edges, types)]
    store_bits = [m.lanes * m.element_width for m in models]
    NW = words(max([1] + wide + store_bits))
    MI = max([1] + [len(a.in_types) for a in graph.actors])
    MO = max([1] + [len(a.out_types) for a in graph.actors])
    MI = max(MI, 4)          # the stream kernel's four operands

    a_in = -np.ones((A, MI), np.int64)
    res_edges = [[[] for _ in a.out_types] for a in graph.actors]
    e_pk, e_p, e_pj, e_ck, e_c = (np.zeros(E, np.int64) for _ in range(5))
    e_init = np.zeros(E, np.bool_)
    e_ival = np.zeros((E, NW), np.uint64)
    e_every = np.ones(E, np.int64)
    s_lists = [[] for _ in graph.inputs]
    for k, ed in enumerate(graph.edges):
        if ed.src[0] == "@input":
            e_pk[k], e_p[k] = 1, ed.src[1]
            s_lists[ed.src[1]].append(k)
        else:
            e_p[k], e_pj[k] = index[ed.src[0]], ed.src[1]
            res_edges[index[ed.src[0]]][ed.src[1]].append(k)
        if ed.dst[0] == "@output":
            e_ck[k], e_c[k] = 1, ed.dst[1]
            e_every[k] = graph.outputs[ed.dst[1]][1]
        else:
            e_c[k] = index[ed.dst[0]]
            a_in[index[ed.dst[0]], ed.dst[1]] = k
        if ed.initial is not None:
            e_init[k] = True
            e_ival[k] = _words(value_bits(ed.initial, types[k], ed.width), NW)
    a_rbase = np.zeros(A, np.int64)
    flat_res = []                    # result r = a_rbase[a] + j: its consumer edges
    for i in range(A):
        a_rbase[i] = len(flat_res)
        flat_res += res_edges[i]
    r_ptr, r_edges = _csr(flat_res)
    s_ptr, s_edges = _csr(s_lists)

    cases = [c for m in models for c in m.cases]
    C = max(1, len(cases))
    ai = np.zeros((A, 13), np.int64)
    ai[:, K.A_RES] = -1
    ci = np.zeros((C, 7), np.int64)
    c_cval = np.zeros(C, np.uint64)
    c_need = np.zeros((C, MI), np.bool_)
    c_out = np.zeros((C, MO), np.bool_)
    c_src = np.full((C, MO), K.SRC_NONE, np.int64)
    a_const = np.zeros((A, NW), np.uint64)
    groups: dict = {}
    n = 0
    for i, (a, m) in enumerate(zip(graph.actors, models)):
        ai[i, [K.A_REG, K.A_KIND, K.A_NIN, K.A_NOUT, K.A_RBASE, K.A_C0, K.A_GRP, K.A_LAT, K.A_LANES, K.A_EW]] = (
            m.registered, _KIND[m.kind], len(a.in_types), len(a.out_types), a_rbase[i], n, -1, m.latency,
            m.lanes, m.element_width)
        a_const[i] = _words(m.const, NW)
        for c in m.cases:
            ci[n] = (c.state[0], c.state[1], c.cond, c.next, c.store, c.wait, c.adapter_case)
            c_cval[n] = c.cval
            c_need[n, list(c.need)] = True
            c_out[n, list(c.out)] = True
            for j, src in enumerate(c.src):
                c_src[n, j] = _src_code(src)
            n += 1
        ai[i, K.A_C1] = n
        c0 = m.cases[0]
        ai[i, K.A_UNIFORM] = (len(m.cases) == 1 and c0.cond < 0 and c0.state == (0, 1 << 30) and not c0.wait
                              and c0.groups == 1 and m.kind in ("elastic", "transparent"))
        if m.kernel is not None:
            g = groups.setdefault(m.kernel.key, (m.kernel.fn, [], a, m))
            g[1].append(i)
    glist = []
    for gi, (key, (fn, acts, a, m)) in enumerate(groups.items()):
        ai[acts, K.A_GRP] = gi
        if m.kind == "stream":
            iw = (words(a.widths_in[0]),) * 4
        else:
            iw = tuple(words(w) for w in a.widths_in)
        glist.append(Group(key, fn, np.array(acts, np.int64), iw, tuple(words(w) for w in a.widths_out)))

    # input tokens per instance
    S = len(graph.inputs)
    tok = np.zeros((S, B, 2), np.int64)             # (offset, length) per instance
    vals = []
    for s, (name, toks, t) in enumerate(graph.inputs):
        w = graph_input_width(graph, s)
        for b in range(B):
            ts = toks if streams is None else streams[b].get(name, toks)
            tok[s, b] = len(vals), len(ts)
            vals += [value_bits(v, t, w) for v in ts]
    tok_val = _words_array(vals, NW)

    topo_tr, order = orders(graph, [m.registered for m in models])
    o_every = np.array([ev for _, ev, _ in graph.outputs], np.int64)
    ei = np.stack([e_pk, e_p, e_pj, e_ck, e_c, e_init.astype(np.int64), e_every], axis=1) if E else np.zeros((0, 7), np.int64)
    shared = getattr(graph, "temporal", [])
    rt = -np.ones((len(shared), K.RT_MEMBERS + max([1] + [len(x.members) for x in shared])), np.int64)
    for r, x in enumerate(shared):
        rt[r, K.RT_II], rt[r, K.RT_N] = x.initiation_interval, len(x.members)
        rt[r, K.RT_POLICY] = K.ROUND_ROBIN if x.grant_policy == "round_robin" else K.FIXED_PRIORITY
        for i, (_, name) in enumerate(x.members):
            rt[r, K.RT_MEMBERS + i] = index[name]
            ai[index[name], K.A_RES] = r
    T = Tables(ai, a_in, a_const, ci, c_cval, c_need, c_out, c_src, ei, e_ival, r_ptr, r_edges, s_ptr, s_edges,
               tok, tok_val, topo_tr, order, o_every, rt)
    lat = max([m.latency for m in models] + [1])
    window = max([lat] + [ev for _, ev, _ in graph.outputs]) + 2
    return Program(graph, T, B, NW, models, glist, [a.name for a in graph.actors], [e.label for e in graph.edges],
                   widths, types, window)


def graph_input_width(graph, s):
    """The payload width of input stream s (the width of its edges)."""
    for e in graph.edges:
        if e.src == ("@input", s):
            return e.width
    return 0


def _words(v: int, nw: int) -> np.ndarray:
    return np.array([(v >> (64 * k)) & 0xFFFFFFFFFFFFFFFF for k in range(nw)], np.uint64)


def _words_array(vals, nw: int) -> np.ndarray:
    out = np.zeros((max(1, len(vals)), nw), np.uint64)
    if nw == 1 and vals:
        out[:len(vals), 0] = np.array(vals, np.uint64)
        return out
    for i, v in enumerate(vals):
        for k in range(nw):
            out[i, k] = (v >> (64 * k)) & 0xFFFFFFFFFFFFFFFF
    return out


def orders(graph, registered):
    """(transparent actors in topological order, the settling worklist order).

    The transparent resources form no cycle among themselves (the loader refuses a
    combinational loop), so graphlib orders them.  The worklist pops consumers first: actors
    in a topological order of the graph without the edges that close a cycle (any order
    reaches the same fixpoint; this one needs the fewest revisits)."""
    index = {a.name: i for i, a in enumerate(graph.actors)}
    tr = [i for i, r in enumerate(registered) if not r]
    ts = graphlib.TopologicalSorter({i: set() for i in tr})
    for e in graph.edges:
        if e.src[0] in index and e.dst[0] in index:
            s, d = index[e.src[0]], index[e.dst[0]]
            if not registered[s] and not registered[d]:
                ts.add(d, s)
    topo_tr = np.array(list(ts.static_order()), np.int64)
    # producers first, cycles broken where a back edge is met (iterative DFS post-order, reversed)
    succ = [[] for _ in graph.actors]
    for e in graph.edges:
        if e.src[0] in index and e.dst[0] in index:
            succ[index[e.src[0]]].append(index[e.dst[0]])
    seen, post = [False] * len(graph.actors), []
    for root in range(len(graph.actors)):
        if seen[root]:
            continue
        seen[root] = True
        stack = [(root, iter(succ[root]))]
        while stack:
            n, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                post.append(n)
                stack.pop()
            elif not seen[nxt]:
                seen[nxt] = True
                stack.append((nxt, iter(succ[nxt])))
    return topo_tr, np.array(post[::-1], np.int64)


def lanes(B: int) -> tuple[int, int]:
    """(words, lanes per word) of a batch of B instances: 64 lanes a word, fewer for a small batch."""
    return -(-B // 64), min(64, B)


def new_state(p: Program, out_capacity: int = 1024) -> State:
    T, B, NW = p.T, p.B, p.NW
    A, E = len(T.ai), len(T.ei)
    MI, MO = T.a_in.shape[1], T.c_out.shape[1]
    W, LW = lanes(B)
    em = np.zeros((W, E, 5), np.uint64)
    full = np.array([(1 << min(64, B - 64 * w)) - 1 for w in range(W)], np.uint64)
    em[:, :, K.INITP] = np.where(T.ei[:, K.E_INIT][None, :] != 0, full[:, None], np.uint64(0))
    bi = np.zeros((B, 3), np.int64)
    bi[:, K.FAULT] = -1
    rs = np.zeros((W, len(T.rt), LW, 2), np.int64)
    rs[:, :, :, K.LAST_GRANT] = -1
    return State(em, np.zeros((W, E, LW, NW), np.uint64), np.zeros((W, A, K.DENY + 1), np.uint64),
                 np.zeros((W, A, MO), np.uint64), np.zeros((W, A, 8, LW), np.int64),
                 np.zeros((W, A, MO + 3 + MI, LW, NW), np.uint64), np.zeros((W, len(T.s_ptr) - 1, LW), np.int64), bi,
                 np.zeros((out_capacity, 2), np.int64), np.zeros((out_capacity, NW), np.uint64), np.zeros(1, np.int64),
                 rs)


def grow_outputs(st: State, need: int) -> State:
    cap = st.out_i.shape[0]
    if need <= cap:
        return st
    new = max(need, 2 * cap)
    i, v = np.zeros((new, 2), np.int64), np.zeros((new, st.out_v.shape[1]), np.uint64)
    i[:cap], v[:cap] = st.out_i, st.out_v
    return st._replace(out_i=i, out_v=v)


def decode(p: Program, wd, t, width):
    """A value's words as the token the outputs and traces spell."""
    v = 0
    for k in range(len(wd) - 1, -1, -1):
        v = (v << 64) | int(wd[k])
    tag = t.tag.width if hasattr(t, "tag") else 0
    return token_of(v & ((1 << (width + tag)) - 1), t, width)
