"""The one cycle kernel: the valid/ready handshake, the claims and the transition cases of every
resource, for every instance of a batch.  Both engines run these functions unchanged: the
reference engine as the plain Python below (no compilation, every step inspectable), the
compiled engine as Numba builds of the same source (`compiled`).  Nothing here is specific to a
family: the resources' behaviour is the `Program` tables (fabric/sim/program.py), built from
their cycle models and contract records (fabric/sim/models.py).

One cycle t of instance b (docs/fabric-graph.md, "Execution semantics"):

  settle  1. registered results present their held group; input streams their current token;
             an edge with an initial token presents it first;
          2. transparent resources forward, in topological order, as if every consumer took;
          3. the handshakes settle: from "every valid token is taken", each resource selects its
             case (state and condition), checks its operands, its holding slot or its active
             consumers, and its in-flight next-state update; an operand it does not consume is
             withdrawn (its producer decides again), a transparent result it cannot commit is
             withdrawn (its consumers decide again).  Valid and ready only fall, so this ends at
             the greatest consistent set of handoffs;
          4. the operands of every firing with computed results are copied for the semantic
             kernels (fabric/sim/semantics.py), which the engine runs between settle and apply.
  apply   tokens move on valid && ready; a registered result is discharged when every consumer
          has taken it (its claim released at the final handoff, before a new acceptance);
          firings commit their cases: state, stored values, claims; counters; input streams
          advance.
  pace    an instance in which nothing happened sleeps until the next cycle that can differ, or
          ends after its quiet window.

The tables and the state are a few packed arrays (columns named below): Numba's compile time
grows with the number of array arguments, not with their size.  Values are `NW` uint64 words,
least significant first; `vals[b, a]` holds an actor's current group (slots 0..MO-1), its
stored values (MO..MO+2) and the operands of its computed firing (MO+3..).
"""
from __future__ import annotations

import types as _types

import numpy as np

# result sources (Tables.c_src): >= 0 an operand
SRC_COMPUTED, SRC_STORED, SRC_ONE, SRC_ZERO, SRC_CONST, SRC_GROUP, SRC_NONE = -1, -2, -3, -4, -5, -6, -7
# resource kinds (ai[:, A_KIND])
K_ELASTIC, K_ROUTED, K_STREAM, K_TRANSPARENT, K_PARALLELIZE, K_SERIALIZE = 0, 1, 2, 3, 4, 5
# why an actor did not fire (sa[..., REASON]): counted stalls, counted waits, nothing to report
R_FIRE, R_BACKPRESSURE, R_NEXT_STATE, R_OPERANDS, R_IDLE = 0, 1, 2, 3, 4
NEXT_BY_CONTINUE = -2
STORE_CLEAR = -2
NEVER = 1 << 62

# Tables.ai columns (per actor)
A_REG, A_KIND, A_NIN, A_NOUT, A_RBASE, A_C0, A_C1, A_GRP, A_LAT, A_LANES, A_EW = range(11)
# Tables.ci columns (per case)
C_SLO, C_SHI, C_COND, C_NEXT, C_STORE, C_WAIT, C_ACASE = range(7)
# Tables.ei columns (per edge)
E_PK, E_P, E_PJ, E_CK, E_C, E_INIT, E_EVERY = range(7)
# State.eb columns (per instance and edge)
VALID, READY, TAKEN, INITP, HAND = range(5)
# State.sa columns (per instance and actor)
HELD, NOGROUP, VIS, COMMIT, GLEFT, NEXTAT, LSTATE, AUX, FIRE, CASE, REASON, FIRES, STALLS, WAITS = range(14)
# State.si columns (per instance and input stream), State.bi (per instance)
POS, SRCAT = range(2)
ACT, FAULT, FAULT_VALUE = range(3)

_KERNELS: list = []


def kernel(fn):
    """Mark a function of this module as part of the kernel (compiled together by `compiled`)."""
    _KERNELS.append(fn.__name__)
    return fn


@kernel
def get_field(vals, b, a, slot, off, width):
    """Bits [off, off + width) (width <= 64) of the value in vals[b, a, slot]."""
    k = off // 64
    s = off % 64
    v = vals[b, a, slot, k] >> np.uint64(s)
    if s != 0 and s + width > 64 and k + 1 < vals.shape[3]:
        v = v | (vals[b, a, slot, k + 1] << np.uint64(64 - s))
    if width < 64:
        v = v & ((np.uint64(1) << np.uint64(width)) - np.uint64(1))
    return v


@kernel
def set_field(vals, b, a, slot, off, width, v):
    k = off // 64
    s = off % 64
    m = np.uint64(0xFFFFFFFFFFFFFFFF) if width >= 64 else (np.uint64(1) << np.uint64(width)) - np.uint64(1)
    v = v & m
    lo = m << np.uint64(s)
    vals[b, a, slot, k] = (vals[b, a, slot, k] & ~lo) | (v << np.uint64(s))
    if s + width > 64:
        hm = (np.uint64(1) << np.uint64(s + width - 64)) - np.uint64(1)
        vals[b, a, slot, k + 1] = (vals[b, a, slot, k + 1] & ~hm) | (v >> np.uint64(64 - s))


# --- settle ----------------------------------------------------------------------------------------

@kernel
def settle(P, S, t, live, stack, queued):
    ai, a_in, ci, c_cval, c_need, c_out, c_src, ei = P.ai, P.a_in, P.ci, P.c_cval, P.c_need, P.c_out, P.c_src, P.ei
    r_ptr, r_edges, s_ptr, s_edges, tok, tok_val = P.r_ptr, P.r_edges, P.s_ptr, P.s_edges, P.tok, P.tok_val
    eb, data, sa, pend, vals, si, bi = S.eb, S.data, S.sa, S.pend, S.vals, S.si, S.bi
    A, E, NW = ai.shape[0], ei.shape[0], data.shape[2]
    MO = c_out.shape[1]
    ST = MO
    OP = MO + 3

    def select_case(b, a):
        """The case of actor a: its index, -2 when its condition operand is not valid (undecidable),
        -1 when no case applies (a runtime selector addressing no port)."""
        st = sa[b, a, LSTATE]
        for c in range(ai[a, A_C0], ai[a, A_C1]):
            if st < ci[c, C_SLO] or st > ci[c, C_SHI]:
                continue
            k = ci[c, C_COND]
            if k >= 0:
                e = a_in[a, k]
                if not eb[b, e, VALID]:
                    return -2
                if data[b, e, 0] != c_cval[c]:
                    continue
            return c
        return -1

    def result_done(b, a, j):
        """Result j's obligation is discharged this cycle: every consumer edge has taken (a held
        result) or takes now the token; an edge still presenting its initial token is not done."""
        r = ai[a, A_RBASE] + j
        reg = ai[a, A_REG] != 0
        for q in range(r_ptr[r], r_ptr[r + 1]):
            e = r_edges[q]
            if eb[b, e, INITP]:
                return False
            if not (eb[b, e, READY] or (reg and eb[b, e, TAKEN])):
                return False
        return True

    def slot_free(b, a):
        """A registered resource's holding slot can take a new acceptance at t: empty, a claim with
        no production group past its commit, or its last group visible and discharged this cycle."""
        if sa[b, a, HELD] == 0:
            return True
        if sa[b, a, NOGROUP] != 0:
            return t >= sa[b, a, COMMIT]
        if t < sa[b, a, VIS] or sa[b, a, GLEFT] > 0:
            return False
        for j in range(ai[a, A_NOUT]):
            if pend[b, a, j] and not result_done(b, a, j):
                return False
        return True

    def needs_met(b, a, c):
        for k in range(ai[a, A_NIN]):
            if c_need[c, k] and not eb[b, a_in[a, k], VALID]:
                return False
        return True

    def decide(b, a):
        c = select_case(b, a)
        sa[b, a, CASE] = c
        sa[b, a, FIRE] = 0
        if c < 0:
            if c == -1 and ai[a, A_KIND] == K_ROUTED:
                bi[b, FAULT] = a
                bi[b, FAULT_VALUE] = np.int64(data[b, a_in[a, 0], 0])
            sa[b, a, REASON] = R_OPERANDS
            return
        if not needs_met(b, a, c):
            sa[b, a, REASON] = R_OPERANDS
            return
        if ai[a, A_REG] != 0:
            if not slot_free(b, a):
                sa[b, a, REASON] = R_BACKPRESSURE
                return
            if ci[c, C_WAIT] != 0 and t < sa[b, a, NEXTAT]:
                sa[b, a, REASON] = R_NEXT_STATE
                return
        else:
            for j in range(ai[a, A_NOUT]):
                if c_out[c, j] and not result_done(b, a, j):
                    sa[b, a, REASON] = R_BACKPRESSURE
                    return
        sa[b, a, FIRE] = 1
        sa[b, a, REASON] = R_FIRE

    def publish(b, a, c, j, e):
        """Edge e carries what a transparent case publishes on result j: an operand, the stored
        value, or a constant."""
        src = c_src[c, j]
        if src >= 0:
            f = a_in[a, src]
            for w in range(NW):
                data[b, e, w] = data[b, f, w]
        elif src == SRC_STORED:
            for w in range(NW):
                data[b, e, w] = vals[b, a, ST, w]
        else:
            for w in range(NW):
                data[b, e, w] = np.uint64(0)
            if src == SRC_ONE:
                data[b, e, 0] = np.uint64(1)

    def present(b):
        for e in range(E):
            eb[b, e, VALID] = False
        for a in range(A):
            if ai[a, A_REG] != 0 and sa[b, a, HELD] != 0 and sa[b, a, NOGROUP] == 0 and t >= sa[b, a, VIS]:
                for j in range(ai[a, A_NOUT]):
                    if pend[b, a, j]:
                        r = ai[a, A_RBASE] + j
                        for q in range(r_ptr[r], r_ptr[r + 1]):
                            e = r_edges[q]
                            if not eb[b, e, TAKEN]:
                                eb[b, e, VALID] = True
                                for w in range(NW):
                                    data[b, e, w] = vals[b, a, j, w]
        for s in range(s_ptr.shape[0] - 1):
            if si[b, s, POS] < tok[s, b, 1] and t >= si[b, s, SRCAT]:
                k = tok[s, b, 0] + si[b, s, POS]
                for q in range(s_ptr[s], s_ptr[s + 1]):
                    e = s_edges[q]
                    if not eb[b, e, TAKEN]:
                        eb[b, e, VALID] = True
                        for w in range(NW):
                            data[b, e, w] = tok_val[k, w]
        for e in range(E):
            if eb[b, e, INITP]:
                eb[b, e, VALID] = True
                for w in range(NW):
                    data[b, e, w] = P.e_ival[e, w]
        # transparent resources forward (acyclic among themselves: the loader refuses a combinational loop)
        for i in range(P.topo_tr.shape[0]):
            a = P.topo_tr[i]
            c = select_case(b, a)
            if c < 0 or not needs_met(b, a, c):
                continue
            for j in range(ai[a, A_NOUT]):
                if c_out[c, j]:
                    r = ai[a, A_RBASE] + j
                    for q in range(r_ptr[r], r_ptr[r + 1]):
                        e = r_edges[q]
                        if not eb[b, e, INITP]:
                            eb[b, e, VALID] = True
                            publish(b, a, c, j, e)
        for e in range(E):
            v = eb[b, e, VALID]
            k = ei[e, E_EVERY]
            if v and k > 1:
                v = (t % k) == k - 1
            eb[b, e, READY] = v

    def push(n, a):
        if not queued[a]:
            queued[a] = True
            stack[n] = a
            return n + 1
        return n

    def settle_one(b):
        present(b)
        n = 0
        for i in range(A):
            n = push(n, P.order[i])
        while n > 0:
            n -= 1
            a = stack[n]
            queued[a] = False
            decide(b, a)
            f = sa[b, a, FIRE] != 0
            c = sa[b, a, CASE]
            for k in range(ai[a, A_NIN]):
                e = a_in[a, k]
                if eb[b, e, READY] and not (f and c_need[c, k]):
                    eb[b, e, READY] = False
                    if ei[e, E_PK] == 0:
                        n = push(n, ei[e, E_P])
            if ai[a, A_REG] == 0:
                for j in range(ai[a, A_NOUT]):
                    live_j = f and c_out[c, j]
                    r = ai[a, A_RBASE] + j
                    for q in range(r_ptr[r], r_ptr[r + 1]):
                        e = r_edges[q]
                        if eb[b, e, VALID] and not eb[b, e, INITP] and not live_j:
                            eb[b, e, VALID] = False
                            eb[b, e, READY] = False
                            if ei[e, E_CK] == 0:
                                n = push(n, ei[e, E_C])
        # operands of the firings whose results a semantic kernel computes
        for a in range(A):
            if sa[b, a, FIRE] != 0 and ai[a, A_GRP] >= 0:
                if ai[a, A_KIND] == K_STREAM:
                    init = sa[b, a, LSTATE] == 0
                    for w in range(NW):                  # (base, step, limit, is_step)
                        if init:                         # Init: (start, step, limit, 0)
                            vals[b, a, OP, w] = data[b, a_in[a, 0], w]
                            vals[b, a, OP + 1, w] = data[b, a_in[a, 2], w]
                            vals[b, a, OP + 2, w] = data[b, a_in[a, 1], w]
                        else:                            # step: (current, step, limit, 1)
                            vals[b, a, OP, w] = vals[b, a, ST, w]
                            vals[b, a, OP + 1, w] = vals[b, a, ST + 2, w]
                            vals[b, a, OP + 2, w] = vals[b, a, ST + 1, w]
                        vals[b, a, OP + 3, w] = np.uint64(0)
                    if not init:
                        vals[b, a, OP + 3, 0] = np.uint64(1)
                else:
                    for k in range(ai[a, A_NIN]):
                        e = a_in[a, k]
                        for w in range(NW):
                            vals[b, a, OP + k, w] = data[b, e, w]

    for b in range(live.shape[0]):
        if live[b]:
            settle_one(b)


# --- apply -----------------------------------------------------------------------------------------

@kernel
def apply(P, S, t, live):
    ai, a_in, ci, c_out, c_src, ei = P.ai, P.a_in, P.ci, P.c_out, P.c_src, P.ei
    r_ptr, r_edges, s_ptr, s_edges = P.r_ptr, P.r_edges, P.s_ptr, P.s_edges
    eb, data, sa, pend, vals, si, bi = S.eb, S.data, S.sa, S.pend, S.vals, S.si, S.bi
    A, E, NW = ai.shape[0], ei.shape[0], data.shape[2]
    MO = c_out.shape[1]
    ST = MO

    def clear(b, a, slot):
        for w in range(NW):
            vals[b, a, slot, w] = np.uint64(0)

    def copy_in(b, a, slot, e):
        for w in range(NW):
            vals[b, a, slot, w] = data[b, e, w]

    def open_claim(b, a, c):
        sa[b, a, HELD] = 1
        sa[b, a, VIS] = t + 1
        sa[b, a, COMMIT] = t + 1
        sa[b, a, NOGROUP] = 0
        sa[b, a, GLEFT] = 0
        for j in range(ai[a, A_NOUT]):
            pend[b, a, j] = c_out[c, j]

    def next_group(b, a):
        """An adapter's following production group (the claim stays; visible next cycle)."""
        for j in range(ai[a, A_NOUT]):
            clear(b, a, j)
            pend[b, a, j] = True
        if ai[a, A_KIND] == K_SERIALIZE:       # the next defined-one mask lane above the current one
            ew = ai[a, A_EW]
            i = sa[b, a, AUX] + 1
            while i < ai[a, A_LANES] and get_field(vals, b, a, ST + 1, i, 1) == 0:
                i += 1
            sa[b, a, AUX] = i
            vals[b, a, 0, 0] = get_field(vals, b, a, ST, i * ew, ew)
            vals[b, a, 1, 0] = np.uint64(1)
        # parallelize: the partial close's terminating (zero vector, zero mask, false) group

    def commit_adapter(b, a, c):
        L = ai[a, A_LANES]
        ew = ai[a, A_EW]
        ac = ci[c, C_ACASE]
        if ai[a, A_KIND] == K_PARALLELIZE:
            n = sa[b, a, LSTATE]
            if ac <= 1:                                      # accumulate / full: store the element
                set_field(vals, b, a, ST, n * ew, ew, data[b, a_in[a, 0], 0])
                n += 1
            open_claim(b, a, c)
            if ac == 0:                                      # accumulate: commit, no group
                sa[b, a, LSTATE] = n
                sa[b, a, NOGROUP] = 1
                return
            for j in range(3):
                clear(b, a, j)
            if ac == 1 or ac == 3:                           # a true group of the n stored lanes
                for w in range(NW):
                    vals[b, a, 0, w] = vals[b, a, ST, w]
                for i in range(n):
                    set_field(vals, b, a, 1, i, 1, np.uint64(1))
                vals[b, a, 2, 0] = np.uint64(1)
            if ac == 3:
                sa[b, a, GLEFT] = 1                          # then the false group, same claim
            clear(b, a, ST)
            sa[b, a, LSTATE] = 0
            return
        # serialize
        open_claim(b, a, c)
        clear(b, a, 0)
        clear(b, a, 1)
        if ac == 1:                                          # close: (zero, false)
            return
        copy_in(b, a, ST, a_in[a, 0])
        copy_in(b, a, ST + 1, a_in[a, 1])
        count = 0
        first = -1
        for i in range(L):                                   # lanes at or above L are never read
            if get_field(vals, b, a, ST + 1, i, 1) != 0:
                if first < 0:
                    first = i
                count += 1
        if count == 0:                                       # all-zero mask: commit and retire at t + 1
            sa[b, a, NOGROUP] = 1
            return
        sa[b, a, AUX] = first
        sa[b, a, GLEFT] = count - 1
        vals[b, a, 0, 0] = get_field(vals, b, a, ST, first * ew, ew)
        vals[b, a, 1, 0] = np.uint64(1)

    def apply_one(b):
        act = False
        for e in range(E):
            h = eb[b, e, VALID] and eb[b, e, READY]
            eb[b, e, HAND] = h
            if h:
                act = True
                if eb[b, e, INITP]:
                    eb[b, e, INITP] = False
                    continue
                if ei[e, E_PK] == 1 or ai[ei[e, E_P], A_REG] != 0:
                    eb[b, e, TAKEN] = True
                if ei[e, E_CK] == 1:
                    n = S.out_n[0]
                    if n < S.out_v.shape[0]:
                        S.out_i[n, 0] = ei[e, E_C]
                        S.out_i[n, 1] = b
                        for w in range(NW):
                            S.out_v[n, w] = data[b, e, w]
                    S.out_n[0] = n + 1
        # discharge and release (before acceptance: same-coordinate replacement)
        for a in range(A):
            if ai[a, A_REG] == 0 or sa[b, a, HELD] == 0:
                continue
            if sa[b, a, NOGROUP] != 0:
                if t >= sa[b, a, COMMIT]:
                    sa[b, a, HELD] = 0
                    sa[b, a, NOGROUP] = 0
                continue
            if t < sa[b, a, VIS]:
                continue
            left = False
            for j in range(ai[a, A_NOUT]):
                if not pend[b, a, j]:
                    continue
                r = ai[a, A_RBASE] + j
                done = True
                for q in range(r_ptr[r], r_ptr[r + 1]):
                    if not eb[b, r_edges[q], TAKEN]:
                        done = False
                if done:
                    pend[b, a, j] = False
                    for q in range(r_ptr[r], r_ptr[r + 1]):
                        eb[b, r_edges[q], TAKEN] = False
                else:
                    left = True
            if not left:
                if sa[b, a, GLEFT] > 0:
                    sa[b, a, GLEFT] -= 1
                    next_group(b, a)
                    sa[b, a, VIS] = t + 1
                else:
                    sa[b, a, HELD] = 0
        # firings commit their cases; the others count their stall or wait
        for a in range(A):
            if sa[b, a, FIRE] == 0:
                r = sa[b, a, REASON]
                if r == R_BACKPRESSURE or r == R_NEXT_STATE:
                    sa[b, a, STALLS] += 1
                elif r == R_OPERANDS:
                    some = False
                    for k in range(ai[a, A_NIN]):
                        if eb[b, a_in[a, k], VALID]:
                            some = True
                    if some:
                        sa[b, a, WAITS] += 1
                    else:
                        sa[b, a, REASON] = R_IDLE
                continue
            act = True
            sa[b, a, FIRES] += 1
            c = sa[b, a, CASE]
            kind = ai[a, A_KIND]
            if kind == K_PARALLELIZE or kind == K_SERIALIZE:
                commit_adapter(b, a, c)
                continue
            if ai[a, A_REG] != 0:
                open_claim(b, a, c)
                for j in range(ai[a, A_NOUT]):
                    src = c_src[c, j]
                    if src >= 0:
                        copy_in(b, a, j, a_in[a, src])
                    elif src == SRC_CONST:
                        for w in range(NW):
                            vals[b, a, j, w] = P.a_const[a, w]
                    # SRC_COMPUTED: the semantic kernel has written the group
            if kind == K_STREAM:
                if sa[b, a, LSTATE] == 0:
                    copy_in(b, a, ST + 1, a_in[a, 1])            # limit
                    copy_in(b, a, ST + 2, a_in[a, 2])            # step
                for w in range(NW):
                    vals[b, a, ST, w] = vals[b, a, 0, w]         # the published index
            if ci[c, C_WAIT] != 0:
                sa[b, a, NEXTAT] = t + ai[a, A_LAT]              # the in-flight next-state update
            st = ci[c, C_STORE]
            if st >= 0:
                copy_in(b, a, ST, a_in[a, st])
            elif st == STORE_CLEAR:
                clear(b, a, ST)
            nx = ci[c, C_NEXT]
            if nx == NEXT_BY_CONTINUE:
                sa[b, a, LSTATE] = 1 if vals[b, a, 1, 0] != 0 else 0
            elif nx >= 0:
                sa[b, a, LSTATE] = nx
        # input streams advance once every consumer has taken the current token
        for s in range(s_ptr.shape[0] - 1):
            lo = s_ptr[s]
            hi = s_ptr[s + 1]
            if hi > lo:
                all_taken = True
                for q in range(lo, hi):
                    if not eb[b, s_edges[q], TAKEN]:
                        all_taken = False
                if all_taken:
                    for q in range(lo, hi):
                        eb[b, s_edges[q], TAKEN] = False
                    si[b, s, POS] += 1
                    si[b, s, SRCAT] = t + 1
        bi[b, ACT] = 1 if act else 0

    for b in range(live.shape[0]):
        if live[b]:
            apply_one(b)


# --- idle stretches --------------------------------------------------------------------------------

@kernel
def pace(P, S, t, live, quiet, last, wake, done, window, limit, skip):
    """After cycle t: per live instance, note activity, end it after a quiet window, or let it
    sleep through the idle cycles up to the next one that can differ.  Returns the number of
    repeated cycles of instance 0 (the engine traces them) and sets wake/done.

    In a cycle in which nothing fired and no token moved no state changed, so the next cycle
    repeats it unless a time-dependent coordinate is reached: a group becoming visible, a claim
    without a group retiring, an in-flight next-state update completing, an input stream's next
    token, or a slow output's next ready cycle."""
    ai, s_ptr, tok, o_every = P.ai, P.s_ptr, P.tok, P.o_every
    sa, si, bi = S.sa, S.si, S.bi
    A = ai.shape[0]

    def next_event(b):
        best = NEVER
        for a in range(A):
            if ai[a, A_REG] != 0 and sa[b, a, HELD] != 0:
                x = sa[b, a, COMMIT] if sa[b, a, NOGROUP] != 0 else sa[b, a, VIS]
                if t < x < best:
                    best = x
            if t < sa[b, a, NEXTAT] < best:
                best = sa[b, a, NEXTAT]
        for s in range(s_ptr.shape[0] - 1):
            if s_ptr[s + 1] > s_ptr[s] and si[b, s, POS] < tok[s, b, 1] and t < si[b, s, SRCAT] < best:
                best = si[b, s, SRCAT]
        for o in range(o_every.shape[0]):
            k = o_every[o]
            if k > 1:
                x = t + 1 + (k - 1 - (t + 1) % k) % k
                if x < best:
                    best = x
        return best

    def repeat_idle(b, n):
        """Count n more cycles like the idle one just applied (its stalls and waits)."""
        for a in range(A):
            r = sa[b, a, REASON]
            if r == R_BACKPRESSURE or r == R_NEXT_STATE:
                sa[b, a, STALLS] += n
            elif r == R_OPERANDS:
                sa[b, a, WAITS] += n

    rep0 = 0
    for b in range(live.shape[0]):
        if not live[b]:
            continue
        if bi[b, ACT] != 0:
            quiet[b] = 0
            last[b] = t
            wake[b] = t + 1
            continue
        quiet[b] += 1
        if quiet[b] >= window:
            done[b] = True
            continue
        wake[b] = t + 1
        if not skip:
            continue
        upto = t + window - quiet[b]
        nxt = next_event(b)
        if nxt - 1 < upto:
            upto = nxt - 1
        if limit - 1 < upto:
            upto = limit - 1
        if upto > t:
            repeat_idle(b, upto - t)
            quiet[b] += upto - t
            wake[b] = upto + 1
            if b == 0:
                rep0 = upto - t
            if quiet[b] >= window:
                done[b] = True
    return rep0


def compiled():
    """The kernel compiled by Numba: the same functions, calling each other's compiled builds."""
    import numba

    g = dict(globals())
    ns = {}
    for name in _KERNELS:
        f = globals()[name]
        copy = _types.FunctionType(f.__code__, g, name, f.__defaults__, f.__closure__)
        ns[name] = g[name] = numba.njit(cache=True)(copy)
    return _types.SimpleNamespace(**ns)


REFERENCE = _types.SimpleNamespace(**{n: globals()[n] for n in _KERNELS})
