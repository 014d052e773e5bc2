"""A compiled engine for graphs of one-cycle elastic integer ops, single instance or a batch of
many independent instances of one graph in one pass.

It implements exactly the semantics of `fabric/sim/engine.py` restricted to registered
one-cycle elastic scalar integer actors (the `FAST_OPS` schemas, widths up to 64), input
streams, outputs with `ready_every`, initial tokens and eager-fork broadcast: valid/ready on
every edge, publication at t + 1, one holding slot, same-coordinate replacement, the greatest
consistent set of handoffs.  The differential tests check it against the reference engine
(outputs, fire counts and cycle counts); the reference is never checked against it.

State arrays carry a trailing instance axis; one Numba-compiled loop steps every actor of
every instance per cycle (the instance loop innermost, contiguous).  `compile_graph` rejects
(`FastUnsupported`) any graph with another actor kind; run those on the reference engine.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ..types import IntegerType
from .graph import Graph
from .semantics import INTEGER_PREDICATE

# opcode table: schema (and cmpi predicate) -> code; the kernel's switch follows this order
FAST_OPS = ("arith.addi", "arith.subi", "arith.muli", "arith.andi", "arith.ori", "arith.xori",
            "arith.minui", "arith.maxui", "arith.minsi", "arith.maxsi", "arith.shli", "arith.shrui",
            "arith.select", "llvm.or")
_CMP = tuple(INTEGER_PREDICATE)         # eq ne slt sle sgt sge ult ule ugt uge
CMP_BASE = 32


class FastUnsupported(ValueError):
    """The graph has an actor kind the compiled engine does not run."""


@dataclass
class FastGraph:
    names: list
    op: np.ndarray          # [A] opcode
    width: np.ndarray       # [A] operand width (bits)
    mask: np.ndarray        # [A] result mask
    in_edge: np.ndarray     # [A, 3] edge ids (-1 unused)
    order: np.ndarray       # [A] reverse topological order (consumers first) for settling
    out_ptr: np.ndarray     # [A + 1] CSR into out_list
    out_list: np.ndarray
    src_ptr: np.ndarray     # [S + 1] CSR into src_list (input stream edges)
    src_list: np.ndarray
    e_kind: np.ndarray      # [E] producer: 0 actor, 1 input stream
    e_src: np.ndarray
    e_dkind: np.ndarray     # [E] consumer: 0 actor, 1 output
    e_dst: np.ndarray
    init_val: np.ndarray    # [E] initial token (valid where has_init)
    has_init: np.ndarray
    every: np.ndarray       # [O]
    input_names: list
    output_names: list
    quiet: int


def _opcode(a) -> int:
    s = a.actor.schema
    if s == "arith.cmpi":
        return CMP_BASE + _CMP.index(a.actor.attr("predicate"))
    return FAST_OPS.index("arith.ori" if s == "llvm.or" else s)


def compile_graph(g: Graph) -> FastGraph:
    A = len(g.actors)
    idx = {a.name: i for i, a in enumerate(g.actors)}
    op = np.zeros(A, np.int64)
    width = np.zeros(A, np.int64)
    mask = np.zeros(A, np.uint64)
    for i, a in enumerate(g.actors):
        s = a.actor.schema
        t = a.in_types[-1]
        if s not in FAST_OPS + ("arith.cmpi",) or a.family == "FixedVectorIntegerAddSub" or not isinstance(
                t, IntegerType) or t.width > 64:
            raise FastUnsupported(f"actor {a.name!r} ({s} on {t}) is not run by the compiled engine")
        op[i], width[i] = _opcode(a), t.width
        w = a.out_types[0].width
        mask[i] = np.uint64((1 << w) - 1)
    E = len(g.edges)
    in_edge = -np.ones((A, 3), np.int64)
    outs = [[] for _ in range(A)]
    srcs = [[] for _ in g.inputs]
    e_kind, e_src, e_dkind, e_dst = (np.zeros(E, np.int64) for _ in range(4))
    init_val, has_init = np.zeros(E, np.uint64), np.zeros(E, np.bool_)
    for e, ed in enumerate(g.edges):
        if ed.src[0] == "@input":
            e_kind[e], e_src[e] = 1, ed.src[1]
            srcs[ed.src[1]].append(e)
        else:
            e_src[e] = idx[ed.src[0]]
            outs[idx[ed.src[0]]].append(e)
        if ed.dst[0] == "@output":
            e_dkind[e], e_dst[e] = 1, ed.dst[1]
        else:
            e_dst[e] = idx[ed.dst[0]]
            in_edge[idx[ed.dst[0]], ed.dst[1]] = e
        if ed.initial is not None:
            init_val[e], has_init[e] = ed.initial, True
    # consumers before producers (cycles broken arbitrarily: settling iterates to the fixpoint)
    seen, order = set(), []

    def visit(i):
        stack = [(i, iter(outs[i]))]
        seen.add(i)
        while stack:
            n, it = stack[-1]
            e = next(it, None)
            if e is None:
                order.append(n)
                stack.pop()
            elif e_dkind[e] == 0 and e_dst[e] not in seen:
                seen.add(int(e_dst[e]))
                stack.append((int(e_dst[e]), iter(outs[int(e_dst[e])])))
    for i in range(A):
        if i not in seen:
            visit(i)

    def csr(lists):
        ptr = np.zeros(len(lists) + 1, np.int64)
        ptr[1:] = np.cumsum([len(x) for x in lists])
        return ptr, np.array([e for x in lists for e in x], np.int64)
    out_ptr, out_list = csr(outs)
    src_ptr, src_list = csr(srcs)
    every = np.array([ev for _, ev, _ in g.outputs], np.int64)
    return FastGraph([a.name for a in g.actors], op, width, mask, in_edge, np.array(order, np.int64),
                     out_ptr, out_list, src_ptr, src_list, e_kind, e_src, e_dkind, e_dst, init_val, has_init,
                     every, [n for n, _, _ in g.inputs], [n for n, _, _ in g.outputs],
                     max([1] + list(every)) + 2)


@njit(cache=True)
def _signed(x, w):
    v = np.int64(x)
    if w < 64 and (x >> np.uint64(w - 1)) & np.uint64(1):
        v -= np.int64(1) << np.int64(w)
    return v


@njit(cache=True)
def _apply_op(code, w, m, x, y, z):
    if code == 0:
        return (x + y) & m
    if code == 1:
        return (x - y) & m
    if code == 2:
        return (x * y) & m
    if code == 3:
        return x & y
    if code == 4:
        return x | y
    if code == 5:
        return x ^ y
    if code == 6:
        return min(x, y)
    if code == 7:
        return max(x, y)
    if code == 8:
        return x if _signed(x, w) <= _signed(y, w) else y
    if code == 9:
        return x if _signed(x, w) >= _signed(y, w) else y
    if code == 10:
        return (x << y) & m if y < np.uint64(w) else np.uint64(0)
    if code == 11:
        return x >> y if y < np.uint64(w) else np.uint64(0)
    if code == 12:
        return y if x != np.uint64(0) else z
    p = code - 32
    if p >= 2 and p <= 5:
        a, b = _signed(x, w), _signed(y, w)
        r = (a < b) if p == 2 else (a <= b) if p == 3 else (a > b) if p == 4 else (a >= b)
    else:
        r = (x == y) if p == 0 else (x != y) if p == 1 else (x < y) if p == 6 else (
            x <= y) if p == 7 else (x > y) if p == 8 else (x >= y)
    return np.uint64(1) if r else np.uint64(0)


@njit(cache=True)
def _run_one(b, n_cycles, op, width, mask, in_edge, order, out_ptr, out_list, src_ptr, src_list,
             e_kind, e_src, e_dkind, e_dst, init_val, has_init, every, quiet,
             tok_ptr, tok_len, tok_vals, out_buf, out_cnt, out_sum, fires, last_active):
    """One instance, all its cycles: state stays small and contiguous."""
    A = op.shape[0]
    E = e_kind.shape[0]
    S = src_ptr.shape[0] - 1
    held = np.zeros(A, np.bool_)
    held_val = np.zeros(A, np.uint64)
    pub = np.zeros(A, np.int64)
    fire = np.zeros(A, np.bool_)
    taken = np.zeros(E, np.bool_)
    init_p = has_init.copy()
    valid = np.zeros(E, np.bool_)
    R = np.zeros(E, np.bool_)
    data = np.zeros(E, np.uint64)
    pos = np.zeros(S, np.int64)
    at = np.zeros(S, np.int64)
    cap = out_buf.shape[2]
    quiet_run = 0
    t = 0
    while t < n_cycles and quiet_run < quiet:
        # 1. what every edge offers
        for e in range(E):
            p = e_src[e]
            if init_p[e]:
                valid[e] = True
                data[e] = init_val[e]
            elif e_kind[e] == 0:
                valid[e] = held[p] and t >= pub[p] and not taken[e]
                data[e] = held_val[p]
            else:
                q = pos[p]
                v = q < tok_len[p, b] and t >= at[p] and not taken[e]
                valid[e] = v
                if v:
                    data[e] = tok_vals[b, tok_ptr[p] + q]
            R[e] = valid[e]
            if e_dkind[e] == 1 and valid[e]:
                ev = every[e_dst[e]]
                R[e] = (t % ev) == ev - 1
        # 2. settle: consumers first; repeat until nothing falls
        changed = True
        while changed:
            changed = False
            for oi in range(A):
                a = order[oi]
                f = True
                if held[a]:
                    if t < pub[a]:
                        f = False
                    else:
                        for j in range(out_ptr[a], out_ptr[a + 1]):
                            e = out_list[j]
                            if init_p[e] or not (R[e] or taken[e]):
                                f = False
                                break
                for k in range(3):
                    e = in_edge[a, k]
                    if e >= 0 and not valid[e]:
                        f = False
                fire[a] = f
                if not f:
                    for k in range(3):
                        e = in_edge[a, k]
                        if e >= 0 and R[e]:
                            R[e] = False
                            changed = True
        # 3. handoffs, releases, acceptances
        act = False
        for e in range(E):
            if valid[e] and R[e]:
                act = True
                if init_p[e]:
                    init_p[e] = False
                else:
                    taken[e] = True
                if e_dkind[e] == 1:
                    o = e_dst[e]
                    c = out_cnt[o, b]
                    if c < cap:
                        out_buf[o, b, c] = data[e]
                    out_cnt[o, b] = c + 1
                    out_sum[o, b] += data[e]
        for a in range(A):
            if held[a] and t >= pub[a]:
                done = True
                for j in range(out_ptr[a], out_ptr[a + 1]):
                    if not taken[out_list[j]]:
                        done = False
                        break
                if done:
                    held[a] = False
                    for j in range(out_ptr[a], out_ptr[a + 1]):
                        taken[out_list[j]] = False
            if fire[a]:
                act = True
                fires[a, b] += 1
                x = data[in_edge[a, 0]]
                y = data[in_edge[a, 1]] if in_edge[a, 1] >= 0 else np.uint64(0)
                z = data[in_edge[a, 2]] if in_edge[a, 2] >= 0 else np.uint64(0)
                held_val[a] = _apply_op(op[a], width[a], mask[a], x, y, z)
                held[a] = True
                pub[a] = t + 1
        for s in range(S):
            lo, hi = src_ptr[s], src_ptr[s + 1]
            if hi > lo:
                alltaken = True
                for j in range(lo, hi):
                    if not taken[src_list[j]]:
                        alltaken = False
                        break
                if alltaken:
                    for j in range(lo, hi):
                        taken[src_list[j]] = False
                    pos[s] += 1
                    at[s] = t + 1
        if act:
            last_active[b] = t
            quiet_run = 0
        else:
            quiet_run += 1
        t += 1
    pending = False
    for a in range(A):
        if held[a]:
            pending = True
    for e in range(E):
        if valid[e] or init_p[e]:
            pending = True
    return t, pending


@njit(cache=True)
def _run(n_cycles, B, op, width, mask, in_edge, order, out_ptr, out_list, src_ptr, src_list,
         e_kind, e_src, e_dkind, e_dst, init_val, has_init, every, quiet,
         tok_ptr, tok_len, tok_vals, out_buf, out_cnt, out_sum, fires, last_active):
    ran = np.zeros(B, np.int64)
    pending = np.zeros(B, np.bool_)
    for b in range(B):
        ran[b], pending[b] = _run_one(b, n_cycles, op, width, mask, in_edge, order, out_ptr, out_list, src_ptr,
                                      src_list, e_kind, e_src, e_dkind, e_dst, init_val, has_init, every, quiet,
                                      tok_ptr, tok_len, tok_vals, out_buf, out_cnt, out_sum, fires, last_active)
    return ran, pending


# --- the batch: 64 instances per machine word ------------------------------------------------------
#
# Every handshake signal of 64 instances is one uint64 (bit l = instance l of the word): valid,
# taken, initial-pending, held, fire.  The settling rules are bitwise, so one pass over the
# actors settles 64 instances at once; payloads live in [.., 64] lanes and an op computes all
# 64 lanes of a word and keeps the fired ones.  A held result of a one-cycle elastic op is
# visible in every cycle after its acceptance, and an input stream's next token one cycle after
# the last take, so no per-instance time comparison is needed.

ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(cache=True)
def _lanes_op(code, w, m, x, y, z, out):
    for l in range(64):
        out[l] = _apply_op(code, w, m, x[l], y[l], z[l])


@njit(cache=True)
def _fetch(e, e_kind, e_src, held_val, tok_vals, tok_ptr, pos, base, hi, init_val, buf):
    p = e_src[e]
    if e_kind[e] == 0:
        for l in range(64):
            buf[l] = held_val[p, l]
    else:
        for l in range(64):
            q = tok_ptr[p] + pos[p, l]
            buf[l] = tok_vals[base + l, q] if q < tok_vals.shape[1] else np.uint64(0)
    if hi:
        for l in range(64):
            if (hi >> np.uint64(l)) & np.uint64(1):
                buf[l] = init_val[e]


@njit(cache=True)
def _run_word(wd, B, n_cycles, op, width, mask, in_edge, order, out_ptr, out_list, src_ptr, src_list,
              e_kind, e_src, e_dkind, e_dst, init_val, has_init, every, quiet,
              tok_ptr, tok_len, tok_vals_w, out_buf, out_cnt, out_sum, fires, last_active):
    A = op.shape[0]
    E = e_kind.shape[0]
    S = src_ptr.shape[0] - 1
    base = 64 * wd
    nl = min(64, B - base)
    lanes = ALL if nl == 64 else (np.uint64(1) << np.uint64(nl)) - np.uint64(1)
    held = np.zeros(A, np.uint64)
    held_val = np.zeros((A, 64), np.uint64)
    tmp = np.zeros((A, 64), np.uint64)
    fire = np.zeros(A, np.uint64)
    taken = np.zeros(E, np.uint64)
    init_p = np.zeros(E, np.uint64)
    for e in range(E):
        if has_init[e]:
            init_p[e] = lanes
    valid = np.zeros(E, np.uint64)
    R = np.zeros(E, np.uint64)
    hi_e = np.zeros(E, np.uint64)
    pos = np.zeros((S, 64), np.int64)
    has = np.zeros(S, np.uint64)
    for s in range(S):
        for l in range(nl):
            if tok_len[s, base + l] > 0:
                has[s] |= np.uint64(1) << np.uint64(l)
    x = np.zeros(64, np.uint64)
    y = np.zeros(64, np.uint64)
    z = np.zeros(64, np.uint64)
    cap = out_buf.shape[2]
    quiet_run = 0
    t = 0
    while t < n_cycles and quiet_run < quiet:
        for e in range(E):
            src_bits = held[e_src[e]] if e_kind[e] == 0 else has[e_src[e]]
            v = init_p[e] | (src_bits & ~taken[e])
            valid[e] = v
            if e_dkind[e] == 1:
                ev = every[e_dst[e]]
                R[e] = v if (t % ev) == ev - 1 else np.uint64(0)
            else:
                R[e] = v
        changed = True
        while changed:
            changed = False
            for oi in range(A):
                a = order[oi]
                free = ALL
                for j in range(out_ptr[a], out_ptr[a + 1]):
                    e = out_list[j]
                    free &= ~init_p[e] & (R[e] | taken[e])
                f = (~held[a] | free) & lanes
                for k in range(3):
                    e = in_edge[a, k]
                    if e >= 0:
                        f &= valid[e]
                fire[a] = f
                for k in range(3):
                    e = in_edge[a, k]
                    if e >= 0:
                        r = R[e] & f
                        if r != R[e]:
                            R[e] = r
                            changed = True
        act = np.uint64(0)
        for e in range(E):
            h = valid[e] & R[e]
            hi = h & init_p[e]
            hi_e[e] = hi
            if h:
                act |= h
                init_p[e] &= ~hi
                taken[e] |= h & ~hi
                if e_dkind[e] == 1:
                    o = e_dst[e]
                    _fetch(e, e_kind, e_src, held_val, tok_vals_w, tok_ptr, pos, base, hi, init_val, x)
                    for l in range(nl):
                        if (h >> np.uint64(l)) & np.uint64(1):
                            c = out_cnt[o, base + l]
                            if c < cap:
                                out_buf[o, base + l, c] = x[l]
                            out_cnt[o, base + l] = c + 1
                            out_sum[o, base + l] += x[l]
        for a in range(A):
            f = fire[a]
            if f:
                act |= f
                e0, e1, e2 = in_edge[a, 0], in_edge[a, 1], in_edge[a, 2]
                _fetch(e0, e_kind, e_src, held_val, tok_vals_w, tok_ptr, pos, base, hi_e[e0], init_val, x)
                if e1 >= 0:
                    _fetch(e1, e_kind, e_src, held_val, tok_vals_w, tok_ptr, pos, base, hi_e[e1], init_val, y)
                if e2 >= 0:
                    _fetch(e2, e_kind, e_src, held_val, tok_vals_w, tok_ptr, pos, base, hi_e[e2], init_val, z)
                _lanes_op(op[a], width[a], mask[a], x, y, z, tmp[a])
                for l in range(nl):
                    if (f >> np.uint64(l)) & np.uint64(1):
                        fires[a, base + l] += 1
        for a in range(A):
            done = held[a]
            for j in range(out_ptr[a], out_ptr[a + 1]):
                done &= taken[out_list[j]]
            if done:
                held[a] &= ~done
                for j in range(out_ptr[a], out_ptr[a + 1]):
                    taken[out_list[j]] &= ~done
            f = fire[a]
            if f:
                for l in range(64):
                    if (f >> np.uint64(l)) & np.uint64(1):
                        held_val[a, l] = tmp[a, l]
                held[a] |= f
        for s in range(S):
            lo, hi2 = src_ptr[s], src_ptr[s + 1]
            if hi2 > lo:
                adv = has[s]
                for j in range(lo, hi2):
                    adv &= taken[src_list[j]]
                if adv:
                    for j in range(lo, hi2):
                        taken[src_list[j]] &= ~adv
                    for l in range(nl):
                        if (adv >> np.uint64(l)) & np.uint64(1):
                            pos[s, l] += 1
                            if pos[s, l] >= tok_len[s, base + l]:
                                has[s] &= ~(np.uint64(1) << np.uint64(l))
        if act:
            quiet_run = 0
            for l in range(nl):
                if (act >> np.uint64(l)) & np.uint64(1):
                    last_active[base + l] = t
        else:
            quiet_run += 1
        t += 1
    pend = np.uint64(0)
    for a in range(A):
        pend |= held[a]
    for e in range(E):
        pend |= valid[e] | init_p[e]
    return t, pend


@njit(cache=True)
def _run_words(n_cycles, B, op, width, mask, in_edge, order, out_ptr, out_list, src_ptr, src_list,
               e_kind, e_src, e_dkind, e_dst, init_val, has_init, every, quiet,
               tok_ptr, tok_len, tok_vals, out_buf, out_cnt, out_sum, fires, last_active):
    W = (B + 63) // 64
    ran = np.zeros(B, np.int64)
    pending = np.zeros(B, np.bool_)
    for wd in range(W):
        t, pend = _run_word(wd, B, n_cycles, op, width, mask, in_edge, order, out_ptr, out_list, src_ptr,
                            src_list, e_kind, e_src, e_dkind, e_dst, init_val, has_init, every, quiet,
                            tok_ptr, tok_len, tok_vals, out_buf, out_cnt, out_sum, fires, last_active)
        for l in range(min(64, B - 64 * wd)):
            ran[64 * wd + l] = t
            pending[64 * wd + l] = (pend >> np.uint64(l)) & np.uint64(1)
    return ran, pending


@dataclass
class BatchResult:
    cycles: np.ndarray       # [B] cycles up to the last activity
    complete: np.ndarray     # [B] nothing pending when the run ended
    outputs: dict            # name -> list (per instance) of token lists (up to capacity)
    counts: dict             # name -> [B] token counts
    sums: dict               # name -> [B] token sums (mod 2^64)
    fires: np.ndarray        # [A, B]
    simulated: np.ndarray    # [B] cycles the loop ran per instance


def run_batch(fg: FastGraph, streams, n_cycles: int, capacity: int | None = None,
              bitsliced: bool | None = None) -> BatchResult:
    """streams: one dict (input name -> token list or array) per instance.  A batch of more than
    one instance (or `bitsliced=True`) runs 64 instances per machine word."""
    B = len(streams)
    S = len(fg.input_names)
    lens = np.array([[len(st[n]) for st in streams] for n in fg.input_names], np.int64).reshape(S, B)
    widest = lens.max(axis=1) if S else np.zeros(0, np.int64)
    tok_ptr = np.zeros(S + 1, np.int64)
    tok_ptr[1:] = np.cumsum(widest)
    tok_vals = np.zeros((64 * ((B + 63) // 64), max(1, int(tok_ptr[-1]))), np.uint64)
    for s, n in enumerate(fg.input_names):
        for b, st in enumerate(streams):
            v = np.asarray(st[n], np.uint64)
            tok_vals[b, tok_ptr[s]:tok_ptr[s] + len(v)] = v
    O = len(fg.output_names)
    cap = n_cycles if capacity is None else capacity
    out_buf = np.zeros((O, B, cap), np.uint64)
    out_cnt = np.zeros((O, B), np.int64)
    out_sum = np.zeros((O, B), np.uint64)
    fires = np.zeros((len(fg.names), B), np.int64)
    last = -np.ones(B, np.int64)
    kernel = _run_words if (B > 1 if bitsliced is None else bitsliced) else _run
    ran, pending = kernel(n_cycles, B, fg.op, fg.width, fg.mask, fg.in_edge, fg.order, fg.out_ptr, fg.out_list,
                        fg.src_ptr, fg.src_list, fg.e_kind, fg.e_src, fg.e_dkind, fg.e_dst, fg.init_val,
                        fg.has_init, fg.every, fg.quiet, tok_ptr, lens, tok_vals, out_buf, out_cnt, out_sum,
                        fires, last)
    outputs = {n: [out_buf[o, b, :min(cap, out_cnt[o, b])].tolist() for b in range(B)]
               for o, n in enumerate(fg.output_names)}
    return BatchResult(last + 1, ~pending, outputs, {n: out_cnt[o] for o, n in enumerate(fg.output_names)},
                       {n: out_sum[o] for o, n in enumerate(fg.output_names)}, fires, ran)
