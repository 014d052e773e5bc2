"""The one cycle kernel: the valid/ready handshake, the claims and the transition cases of every
resource, for every instance of a batch.  Both engines run these functions unchanged: the
reference engine as the plain Python below (no compilation, every step inspectable), the
compiled engine as Numba builds of the same source (`compiled`).  Nothing here is specific to a
family: the resources' behaviour is the `Program` tables (fabric/sim/program.py), built from
their cycle models and contract records (fabric/sim/models.py).

Instances are bit-sliced: 64 instances form a word, and every handshake signal of a word -
an edge's valid, ready, taken, initial-pending and handoff, a resource's held claim, its
pending results, its firing - is one uint64 whose bit l is instance 64w + l.  The settling
rules are bitwise, so one pass over the actors settles 64 instances; what differs per instance
(the case a resource selects from its state and condition value, payloads, counters) is kept
per lane and visited only for the lanes concerned.  A single run is one word with one lane.

One cycle t of the live lanes m of word w (docs/fabric-graph.md, "Execution semantics"):

  settle  1. registered results present their held group; input streams their current token;
             an edge with an initial token presents it first;
          2. transparent resources forward, in topological order, as if every consumer took;
          3. the handshakes settle: from "every valid token is taken", each resource selects its
             case (state and condition), checks its operands, its holding slot or its active
             consumers, and its in-flight next-state update; an operand it does not consume is
             withdrawn (its producer decides again), a transparent result it cannot commit is
             withdrawn (its consumers decide again).  Valid and ready only fall, so this ends at
             the greatest consistent set of handoffs, whatever order the resources decide in;
             a shared resource's granted context that cannot fire then loses the grant, and the
             cycle settles again from step 1 with the next requester granted;
          4. the operands of every firing with computed results are copied for the semantic
             kernels (fabric/sim/semantics.py), which the engine runs between settle and apply.
  apply   tokens move on valid && ready; a registered result is discharged when every consumer
          has taken it (its claim released at the final handoff, before a new acceptance, so a
          replacement may be accepted in the same cycle); firings commit their cases: state,
          stored values, claims; counters; input streams advance.
  pace    a lane in which nothing happened sleeps until the next cycle that can differ, or ends
          after its quiet window.

A registered result becomes visible the cycle after it is accepted, and an input stream's next
token the cycle after its last take, which is always the next settle: no coordinate needs
storing for them.  Values are `NW` uint64 words, least significant first; `vals[w, a, slot, l]`
holds an actor's current group (slots 0..MO-1), its stored values (MO..MO+2) and the operands
of its computed firing (MO+3..).  Lanes are the innermost index of every per-lane array
(`vals[w, a, slot, l]`, `la[w, a, column, l]`, `data[w, e, l]`): a batch in lock step reads and
writes whole contiguous rows (the `full_mask` paths), not one cache line per instance.
Numba's compile time grows with the number of array arguments, so the tables and the state are
a few packed arrays with named columns.
"""
from __future__ import annotations

import types as _types

import numpy as np

# result sources (Tables.c_src): >= 0 an operand
SRC_COMPUTED, SRC_STORED, SRC_ONE, SRC_ZERO, SRC_CONST, SRC_GROUP, SRC_NONE = -1, -2, -3, -4, -5, -6, -7
# resource kinds (ai[:, A_KIND])
K_ELASTIC, K_ROUTED, K_STREAM, K_TRANSPARENT, K_PARALLELIZE, K_SERIALIZE = 0, 1, 2, 3, 4, 5
# why a lane of an actor did not fire: counted stalls, counted waits, nothing to report
R_FIRE, R_BACKPRESSURE, R_NEXT_STATE, R_OPERANDS, R_IDLE, R_GRANT = 0, 1, 2, 3, 4, 5
NEXT_BY_CONTINUE = -2
STORE_CLEAR = -2
NEVER = 1 << 62

# Tables.ai columns (per actor); A_UNIFORM: one case, no condition, any state, one group, no wait
A_REG, A_KIND, A_NIN, A_NOUT, A_RBASE, A_C0, A_C1, A_GRP, A_LAT, A_LANES, A_EW, A_UNIFORM, A_RES = range(13)
# Tables.rt columns (per shared temporal resource): initiation interval, grant policy, member count,
# then the member actors in context order
RT_II, RT_POLICY, RT_N, RT_MEMBERS = 0, 1, 2, 3
ROUND_ROBIN, FIXED_PRIORITY = 0, 1
# Tables.ci columns (per case)
C_SLO, C_SHI, C_COND, C_NEXT, C_STORE, C_WAIT, C_ACASE = range(7)
# Tables.ei columns (per edge)
E_PK, E_P, E_PJ, E_CK, E_C, E_INIT, E_EVERY = range(7)
# State.em: per word and edge, masks over the word's lanes
VALID, READY, TAKEN, INITP, HAND = range(5)
# State.am: per word and actor, masks: held claim, firing, more groups to come, stall reasons,
# the shared resource's grant, and the lanes in which its grant was withdrawn this cycle
HELD, FIRE, MORE, RBP, RNS, ROP, GRANT, RGR, DENY = range(9)
# State.rs: per word, shared resource and lane: the first cycle it may grant again, the last granted
NEXT_GRANT, LAST_GRANT = range(2)
# State.la: per word, actor and lane
GLEFT, NEXTAT, LSTATE, AUX, CASE, FIRES, STALLS, WAITS = range(8)
# State.bi: per lane of the batch
ACT, FAULT, FAULT_VALUE = range(3)

ONES = np.uint64(0xFFFFFFFFFFFFFFFF)

_KERNELS: list = []


def kernel(fn):
    """Mark a function of this module as part of the kernel (compiled together by `compiled`)."""
    _KERNELS.append(fn.__name__)
    return fn


@kernel
def lane_of(bit):
    """The index of the one set bit of `bit` (the bits below it, counted)."""
    x = bit - np.uint64(1)
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    # the byte counts summed by shifts, not by a wrapping multiply (NumPy scalars warn on overflow)
    x = x + (x >> np.uint64(8))
    x = x + (x >> np.uint64(16))
    x = x + (x >> np.uint64(32))
    return np.int64(x & np.uint64(0x7F))


@kernel
def pop_lane(mask):
    """(mask less its lowest set bit, that bit, its lane): one step of the walk over the lanes of
    a mask, lowest first, that every per-lane loop below takes."""
    bit = mask & (~mask + np.uint64(1))
    return mask ^ bit, bit, lane_of(bit)


@kernel
def full_mask(LW):
    """Every lane of a word of LW lanes: a mask equal to it takes the row-at-a-time paths below
    (no per-lane bit search), which are what a batch in lock step runs."""
    return ONES if LW >= 64 else (np.uint64(1) << np.uint64(LW)) - np.uint64(1)


@kernel
def get_field(vals, w, a, l, slot, off, width):
    """Bits [off, off + width) (width <= 64) of the value in vals[w, a, slot, l]."""
    k = off // 64
    s = off % 64
    v = vals[w, a, slot, l, k] >> np.uint64(s)
    if s != 0 and s + width > 64 and k + 1 < vals.shape[4]:
        v = v | (vals[w, a, slot, l, k + 1] << np.uint64(64 - s))
    if width < 64:
        v = v & ((np.uint64(1) << np.uint64(width)) - np.uint64(1))
    return v


@kernel
def set_field(vals, w, a, l, slot, off, width, v):
    k = off // 64
    s = off % 64
    m = ONES if width >= 64 else (np.uint64(1) << np.uint64(width)) - np.uint64(1)
    v = v & m
    lo = m << np.uint64(s)
    vals[w, a, slot, l, k] = (vals[w, a, slot, l, k] & ~lo) | (v << np.uint64(s))
    if s + width > 64:
        hm = (np.uint64(1) << np.uint64(s + width - 64)) - np.uint64(1)
        vals[w, a, slot, l, k + 1] = (vals[w, a, slot, l, k + 1] & ~hm) | (v >> np.uint64(64 - s))


@kernel
def sizes(P, S):
    """(actors, edges, words per value, lanes per word, the mask of every lane, result slots per
    case): the sizes settle and apply read off the tables and the state."""
    LW = S.data.shape[2]
    return P.ai.shape[0], P.ei.shape[0], S.data.shape[3], LW, full_mask(LW), P.c_out.shape[1]


# --- settle ----------------------------------------------------------------------------------------

@kernel
def settle(P, S, t, live, stack, queued, cons, outm):
    """Settle cycle t of the live lanes (`live[w]`, a mask per word).  `stack`, `queued` (one
    entry per actor) and `cons`, `outm` (one mask per operand / result) are scratch."""
    ai, a_in, ci, c_cval, c_need, c_out, c_src, ei = P.ai, P.a_in, P.ci, P.c_cval, P.c_need, P.c_out, P.c_src, P.ei
    r_ptr, r_edges, s_ptr, s_edges, tok, tok_val = P.r_ptr, P.r_edges, P.s_ptr, P.s_edges, P.tok, P.tok_val
    em, data, am, pend, la, vals, si, bi = S.em, S.data, S.am, S.pend, S.la, S.vals, S.si, S.bi
    A, E, NW, LW, FULL, MO = sizes(P, S)
    ST = MO
    OP = MO + 3

    def select_case(w, a, l):
        """The case of lane l of actor a: its index, -2 when its condition operand is not valid
        (undecidable), -1 when no case applies (a runtime selector addressing no port)."""
        st = la[w, a, LSTATE, l]
        bit = np.uint64(1) << np.uint64(l)
        for c in range(ai[a, A_C0], ai[a, A_C1]):
            if st < ci[c, C_SLO] or st > ci[c, C_SHI]:
                continue
            k = ci[c, C_COND]
            if k >= 0:
                e = a_in[a, k]
                if em[w, e, VALID] & bit == 0:
                    return -2
                if data[w, e, l, 0] != c_cval[c]:
                    continue
            return c
        return -1

    def done_mask(w, a, j):
        """Lanes whose result j is discharged this cycle: every consumer edge has taken (a held
        result) or takes now the token; an edge still presenting its initial token is not done."""
        r = ai[a, A_RBASE] + j
        d = ONES
        for q in range(r_ptr[r], r_ptr[r + 1]):
            e = r_edges[q]
            x = em[w, e, READY]
            if ai[a, A_REG] != 0:
                x = x | em[w, e, TAKEN]
            d = d & x & ~em[w, e, INITP]
        return d

    def free_mask(w, a):
        """Lanes whose holding slot can take a new acceptance: empty, or its last group
        discharged this cycle (the final handoff releases the claim first)."""
        ok = ~am[w, a, MORE]
        for j in range(ai[a, A_NOUT]):
            p = pend[w, a, j]
            if p != 0:
                ok = ok & (~p | done_mask(w, a, j))
        return ~am[w, a, HELD] | ok

    def decide(w, a, m):
        """Set the actor's firing lanes, its per-operand consumption masks `cons` and active
        result masks `outm`, its reasons, and (cased resources) each lane's case."""
        nin, nout = ai[a, A_NIN], ai[a, A_NOUT]
        reg = ai[a, A_REG] != 0
        if ai[a, A_UNIFORM] != 0:
            c = ai[a, A_C0]
            ok = m
            for k in range(nin):
                if c_need[c, k]:
                    ok = ok & em[w, a_in[a, k], VALID]
            f = ok
            if reg:
                f = ok & free_mask(w, a)
            else:
                for j in range(nout):
                    if c_out[c, j]:
                        f = f & done_mask(w, a, j)
            bp = ok & ~f
            gr = np.uint64(0)
            if ai[a, A_RES] >= 0:                    # a context of a shared resource: only if granted
                gr = f & ~am[w, a, GRANT]
                f = f & am[w, a, GRANT]
            for k in range(nin):
                cons[k] = f if c_need[c, k] else np.uint64(0)
            for j in range(nout):
                outm[j] = f if c_out[c, j] else np.uint64(0)
            am[w, a, FIRE] = f
            am[w, a, RBP] = bp
            am[w, a, RNS] = np.uint64(0)
            am[w, a, ROP] = m & ~ok
            am[w, a, RGR] = gr
            return
        for k in range(nin):
            cons[k] = np.uint64(0)
        for j in range(nout):
            outm[j] = np.uint64(0)
        free = free_mask(w, a) if reg else ONES
        granted = am[w, a, GRANT] if ai[a, A_RES] >= 0 else ONES
        f = np.uint64(0)
        bp = np.uint64(0)
        ns = np.uint64(0)
        op = np.uint64(0)
        gr = np.uint64(0)
        mm = m
        while mm != 0:
            mm, bit, l = pop_lane(mm)
            c = select_case(w, a, l)
            la[w, a, CASE, l] = c
            if c < 0:
                if c == -1 and ai[a, A_KIND] == K_ROUTED:
                    L = w * 64 + l
                    bi[L, FAULT] = a
                    bi[L, FAULT_VALUE] = np.int64(data[w, a_in[a, 0], l, 0])
                op = op | bit
                continue
            ok = True
            for k in range(nin):
                if c_need[c, k] and em[w, a_in[a, k], VALID] & bit == 0:
                    ok = False
            if not ok:
                op = op | bit
                continue
            if reg:
                if free & bit == 0:
                    bp = bp | bit
                    continue
                if ci[c, C_WAIT] != 0 and t < la[w, a, NEXTAT, l]:
                    ns = ns | bit
                    continue
            else:
                blocked = False
                for j in range(nout):
                    if c_out[c, j] and done_mask(w, a, j) & bit == 0:
                        blocked = True
                if blocked:
                    bp = bp | bit
                    continue
            if granted & bit == 0:
                gr = gr | bit
                continue
            f = f | bit
            for k in range(nin):
                if c_need[c, k]:
                    cons[k] = cons[k] | bit
            for j in range(nout):
                if c_out[c, j]:
                    outm[j] = outm[j] | bit
        am[w, a, FIRE] = f
        am[w, a, RBP] = bp
        am[w, a, RNS] = ns
        am[w, a, ROP] = op
        am[w, a, RGR] = gr

    def requests(w, a, l):
        """Lane l of actor a asks for its resource: a case selected, its operands valid, its
        holding slot free and its next state available (as the cycle begins)."""
        c = select_case(w, a, l)
        if c < 0:
            return False
        bit = np.uint64(1) << np.uint64(l)
        if am[w, a, DENY] & bit != 0:            # granted earlier this cycle, and it could not fire
            return False
        for k in range(ai[a, A_NIN]):
            if c_need[c, k] and em[w, a_in[a, k], VALID] & bit == 0:
                return False
        if ai[a, A_REG] != 0 and free_mask(w, a) & bit == 0:
            return False
        return not (ci[c, C_WAIT] != 0 and t < la[w, a, NEXTAT, l])

    def arbitrate(w, m):
        """Each shared resource grants, per lane, one requesting context in its policy's order,
        once its initiation interval since the last grant has passed."""
        rt, rs = P.rt, S.rs
        for r in range(rt.shape[0]):
            nm = rt[r, RT_N]
            for i in range(nm):
                a = rt[r, RT_MEMBERS + i]
                am[w, a, GRANT] = am[w, a, GRANT] & ~m
            mm = m
            while mm != 0:
                mm, bit, l = pop_lane(mm)
                if t < rs[w, r, l, NEXT_GRANT]:
                    continue
                start = (rs[w, r, l, LAST_GRANT] + 1) % nm if rt[r, RT_POLICY] == ROUND_ROBIN else 0
                for i in range(nm):
                    a = rt[r, RT_MEMBERS + (start + i) % nm]
                    if requests(w, a, l):
                        am[w, a, GRANT] = am[w, a, GRANT] | bit
                        break

    def publish(w, a, c, j, e, l):
        """Edge e, lane l, carries what a transparent case publishes on result j: an operand,
        the stored value, or a constant."""
        src = c_src[c, j]
        if src >= 0:
            f = a_in[a, src]
            for x in range(NW):
                data[w, e, l, x] = data[w, f, l, x]
        elif src == SRC_STORED:
            for x in range(NW):
                data[w, e, l, x] = vals[w, a, ST, l, x]
        else:
            for x in range(NW):
                data[w, e, l, x] = np.uint64(0)
            if src == SRC_ONE:
                data[w, e, l, 0] = np.uint64(1)

    def present(w, m):
        for e in range(E):
            em[w, e, VALID] = em[w, e, VALID] & ~m
        for a in range(A):
            h = am[w, a, HELD] & m
            if ai[a, A_REG] == 0 or h == 0:
                continue
            for j in range(ai[a, A_NOUT]):
                pm = pend[w, a, j] & h
                if pm == 0:
                    continue
                r = ai[a, A_RBASE] + j
                for q in range(r_ptr[r], r_ptr[r + 1]):
                    e = r_edges[q]
                    v = pm & ~em[w, e, TAKEN]
                    em[w, e, VALID] = em[w, e, VALID] | v
                    if v == FULL:
                        if NW == 1:
                            for l in range(LW):
                                data[w, e, l, 0] = vals[w, a, j, l, 0]
                        else:
                            for l in range(LW):
                                for x in range(NW):
                                    data[w, e, l, x] = vals[w, a, j, l, x]
                        continue
                    while v != 0:
                        v, bit, l = pop_lane(v)
                        for x in range(NW):
                            data[w, e, l, x] = vals[w, a, j, l, x]
        for s in range(s_ptr.shape[0] - 1):
            mm = m
            while mm != 0:
                mm, bit, l = pop_lane(mm)
                L = w * 64 + l
                if si[w, s, l] < tok[s, L, 1]:
                    k = tok[s, L, 0] + si[w, s, l]
                    for q in range(s_ptr[s], s_ptr[s + 1]):
                        e = s_edges[q]
                        if em[w, e, TAKEN] & bit == 0:
                            em[w, e, VALID] = em[w, e, VALID] | bit
                            for x in range(NW):
                                data[w, e, l, x] = tok_val[k, x]
        for e in range(E):
            ip = em[w, e, INITP] & m
            if ip != 0:
                em[w, e, VALID] = em[w, e, VALID] | ip
                while ip != 0:
                    ip, bit, l = pop_lane(ip)
                    for x in range(NW):
                        data[w, e, l, x] = P.e_ival[e, x]
        # transparent resources forward (acyclic among themselves: the loader refuses a combinational loop)
        for i in range(P.topo_tr.shape[0]):
            a = P.topo_tr[i]
            mm = m
            while mm != 0:
                mm, bit, l = pop_lane(mm)
                c = select_case(w, a, l)
                if c < 0:
                    continue
                ok = True
                for k in range(ai[a, A_NIN]):
                    if c_need[c, k] and em[w, a_in[a, k], VALID] & bit == 0:
                        ok = False
                if not ok:
                    continue
                for j in range(ai[a, A_NOUT]):
                    if c_out[c, j]:
                        r = ai[a, A_RBASE] + j
                        for q in range(r_ptr[r], r_ptr[r + 1]):
                            e = r_edges[q]
                            if em[w, e, INITP] & bit == 0:
                                em[w, e, VALID] = em[w, e, VALID] | bit
                                publish(w, a, c, j, e, l)
        for e in range(E):
            v = em[w, e, VALID] & m
            k = ei[e, E_EVERY]
            if k > 1 and (t % k) != k - 1:
                v = np.uint64(0)
            em[w, e, READY] = (em[w, e, READY] & ~m) | v

    def push(n, a):
        if not queued[a]:
            queued[a] = True
            stack[n] = a
            return n + 1
        return n

    def withdraw(w, m):
        """Lanes in which a shared resource granted a context that then could not fire (its
        holding slot frees only by a handoff that did not happen, e.g. to a context of the same
        resource waiting for the grant): that context was no requester, so its grant is
        withdrawn for the cycle.  True if any was."""
        rt = P.rt
        again = False
        for r in range(rt.shape[0]):
            for i in range(rt[r, RT_N]):
                a = rt[r, RT_MEMBERS + i]
                g = am[w, a, GRANT] & m & ~am[w, a, FIRE]
                if g != 0:
                    am[w, a, DENY] = am[w, a, DENY] | g
                    again = True
        return again

    def handshakes(w, m):
        n = 0
        for i in range(A):
            n = push(n, P.order[i])
        while n > 0:
            n -= 1
            a = stack[n]
            queued[a] = False
            decide(w, a, m)
            for k in range(ai[a, A_NIN]):
                e = a_in[a, k]
                r = em[w, e, READY]
                nr = r & (cons[k] | ~m)
                if nr != r:
                    em[w, e, READY] = nr
                    if ei[e, E_PK] == 0:
                        n = push(n, ei[e, E_P])
            if ai[a, A_REG] == 0:
                for j in range(ai[a, A_NOUT]):
                    r = ai[a, A_RBASE] + j
                    for q in range(r_ptr[r], r_ptr[r + 1]):
                        e = r_edges[q]
                        kill = em[w, e, VALID] & ~em[w, e, INITP] & m & ~outm[j]
                        if kill != 0:
                            em[w, e, VALID] = em[w, e, VALID] & ~kill
                            em[w, e, READY] = em[w, e, READY] & ~kill
                            if ei[e, E_CK] == 0:
                                n = push(n, ei[e, E_C])

    def stream_operands(w):
        # a stream's computed firing takes its operands from its state: set them out (the other
        # semantic kernels read their operands from the edges, `gather`)
        for a in range(A):
            f = am[w, a, FIRE]
            if f == 0 or ai[a, A_GRP] < 0 or ai[a, A_KIND] != K_STREAM:
                continue
            while f != 0:
                f, bit, l = pop_lane(f)
                init = la[w, a, LSTATE, l] == 0
                for x in range(NW):                      # (base, step, limit, is_step)
                    if init:                             # Init: (start, step, limit, 0)
                        vals[w, a, OP, l, x] = data[w, a_in[a, 0], l, x]
                        vals[w, a, OP + 1, l, x] = data[w, a_in[a, 2], l, x]
                        vals[w, a, OP + 2, l, x] = data[w, a_in[a, 1], l, x]
                    else:                                # step: (current, step, limit, 1)
                        vals[w, a, OP, l, x] = vals[w, a, ST, l, x]
                        vals[w, a, OP + 1, l, x] = vals[w, a, ST + 2, l, x]
                        vals[w, a, OP + 2, l, x] = vals[w, a, ST + 1, l, x]
                    vals[w, a, OP + 3, l, x] = np.uint64(0)
                if not init:
                    vals[w, a, OP + 3, l, 0] = np.uint64(1)

    def settle_word(w, m):
        shared = P.rt.shape[0] > 0
        if shared:
            for a in range(A):
                am[w, a, DENY] = am[w, a, DENY] & ~m
        # while a granted context could not fire, withdraw its grant and settle the cycle again
        # from its start, the resource granting the next requester in its policy's order (each
        # round denies one more context at least, so this ends)
        while True:
            present(w, m)
            if shared:
                arbitrate(w, m)
            handshakes(w, m)
            if not shared or not withdraw(w, m):
                break
        stream_operands(w)

    for w in range(live.shape[0]):
        if live[w] != 0:
            settle_word(w, live[w])


# --- apply -----------------------------------------------------------------------------------------

@kernel
def apply(P, S, t, live):
    ai, a_in, ci, c_out, c_src, ei = P.ai, P.a_in, P.ci, P.c_out, P.c_src, P.ei
    r_ptr, r_edges, s_ptr, s_edges, tok = P.r_ptr, P.r_edges, P.s_ptr, P.s_edges, P.tok
    em, data, am, pend, la, vals, si, bi = S.em, S.data, S.am, S.pend, S.la, S.vals, S.si, S.bi
    A, E, NW, LW, FULL, MO = sizes(P, S)
    ST = MO

    def clear(w, a, l, slot):
        for x in range(NW):
            vals[w, a, slot, l, x] = np.uint64(0)

    def copy_in(w, a, l, slot, e):
        for x in range(NW):
            vals[w, a, slot, l, x] = data[w, e, l, x]

    def open_claim(w, a, l, c, bit):
        am[w, a, HELD] = am[w, a, HELD] | bit
        am[w, a, MORE] = am[w, a, MORE] & ~bit
        la[w, a, GLEFT, l] = 0
        for j in range(ai[a, A_NOUT]):
            if c_out[c, j]:
                pend[w, a, j] = pend[w, a, j] | bit
            else:
                pend[w, a, j] = pend[w, a, j] & ~bit

    def no_group(w, a, bit):
        """A case with no production group commits and retires at t + 1: no claim remains."""
        am[w, a, HELD] = am[w, a, HELD] & ~bit
        for j in range(ai[a, A_NOUT]):
            pend[w, a, j] = pend[w, a, j] & ~bit

    def next_group(w, a, l, bit):
        """An adapter's following production group (the claim stays; visible next cycle)."""
        for j in range(ai[a, A_NOUT]):
            clear(w, a, l, j)
            pend[w, a, j] = pend[w, a, j] | bit
        if ai[a, A_KIND] == K_SERIALIZE:       # the next defined-one mask lane above the current one
            ew = ai[a, A_EW]
            i = la[w, a, AUX, l] + 1
            while i < ai[a, A_LANES] and get_field(vals, w, a, l, ST + 1, i, 1) == 0:
                i += 1
            la[w, a, AUX, l] = i
            vals[w, a, 0, l, 0] = get_field(vals, w, a, l, ST, i * ew, ew)
            vals[w, a, 1, l, 0] = np.uint64(1)
        # parallelize: the partial close's terminating (zero vector, zero mask, false) group

    def commit_adapter(w, a, l, c, bit):
        L = ai[a, A_LANES]
        ew = ai[a, A_EW]
        ac = ci[c, C_ACASE]
        if ai[a, A_KIND] == K_PARALLELIZE:
            n = la[w, a, LSTATE, l]
            if ac <= 1:                                      # accumulate / full: store the element
                set_field(vals, w, a, l, ST, n * ew, ew, data[w, a_in[a, 0], l, 0])
                n += 1
            if ac == 0:                                      # accumulate: commit, no group
                la[w, a, LSTATE, l] = n
                no_group(w, a, bit)
                return
            open_claim(w, a, l, c, bit)
            for j in range(3):
                clear(w, a, l, j)
            if ac == 1 or ac == 3:                           # a true group of the n stored lanes
                for x in range(NW):
                    vals[w, a, 0, l, x] = vals[w, a, ST, l, x]
                for i in range(n):
                    set_field(vals, w, a, l, 1, i, 1, np.uint64(1))
                vals[w, a, 2, l, 0] = np.uint64(1)
            if ac == 3:                                      # then the false group, same claim
                la[w, a, GLEFT, l] = 1
                am[w, a, MORE] = am[w, a, MORE] | bit
            clear(w, a, l, ST)
            la[w, a, LSTATE, l] = 0
            return
        # serialize
        if ac == 1:                                          # close: (zero, false)
            open_claim(w, a, l, c, bit)
            clear(w, a, l, 0)
            clear(w, a, l, 1)
            return
        copy_in(w, a, l, ST, a_in[a, 0])
        copy_in(w, a, l, ST + 1, a_in[a, 1])
        count = 0
        first = -1
        for i in range(L):                                   # lanes at or above L are never read
            if get_field(vals, w, a, l, ST + 1, i, 1) != 0:
                if first < 0:
                    first = i
                count += 1
        if count == 0:                                       # all-zero mask: commit and retire at t + 1
            no_group(w, a, bit)
            return
        open_claim(w, a, l, c, bit)
        la[w, a, AUX, l] = first
        la[w, a, GLEFT, l] = count - 1
        if count > 1:
            am[w, a, MORE] = am[w, a, MORE] | bit
        clear(w, a, l, 0)
        clear(w, a, l, 1)
        vals[w, a, 0, l, 0] = get_field(vals, w, a, l, ST, first * ew, ew)
        vals[w, a, 1, l, 0] = np.uint64(1)

    def copy_sources(w, a, l, c):
        """The results of case c that carry an operand or the constant into lane l's group
        (SRC_COMPUTED ones: the semantic kernel has written them)."""
        for j in range(ai[a, A_NOUT]):
            src = c_src[c, j]
            if src >= 0:
                copy_in(w, a, l, j, a_in[a, src])
            elif src == SRC_CONST:
                for x in range(NW):
                    vals[w, a, j, l, x] = P.a_const[a, x]

    def commit(w, a, l, c, bit):
        """Lane l of actor a commits case c."""
        kind = ai[a, A_KIND]
        if kind == K_PARALLELIZE or kind == K_SERIALIZE:
            commit_adapter(w, a, l, c, bit)
            return
        if ai[a, A_REG] != 0:
            open_claim(w, a, l, c, bit)
            copy_sources(w, a, l, c)
        if kind == K_STREAM:
            if la[w, a, LSTATE, l] == 0:
                copy_in(w, a, l, ST + 1, a_in[a, 1])             # limit
                copy_in(w, a, l, ST + 2, a_in[a, 2])             # step
            for x in range(NW):
                vals[w, a, ST, l, x] = vals[w, a, 0, l, x]       # the published index
        if ci[c, C_WAIT] != 0:
            la[w, a, NEXTAT, l] = t + ai[a, A_LAT]               # the in-flight next-state update
        st = ci[c, C_STORE]
        if st >= 0:
            copy_in(w, a, l, ST, a_in[a, st])
        elif st == STORE_CLEAR:
            clear(w, a, l, ST)
        nx = ci[c, C_NEXT]
        if nx == NEXT_BY_CONTINUE:
            la[w, a, LSTATE, l] = 1 if vals[w, a, 1, l, 0] != 0 else 0
        elif nx >= 0:
            la[w, a, LSTATE, l] = nx

    def apply_word(w, m):
        act = np.uint64(0)
        for e in range(E):
            h = em[w, e, VALID] & em[w, e, READY] & m
            em[w, e, HAND] = (em[w, e, HAND] & ~m) | h
            if h == 0:
                continue
            act = act | h
            ip = h & em[w, e, INITP]
            em[w, e, INITP] = em[w, e, INITP] & ~ip
            rest = h & ~ip
            if ei[e, E_PK] == 1 or ai[ei[e, E_P], A_REG] != 0:
                em[w, e, TAKEN] = em[w, e, TAKEN] | rest
            if ei[e, E_CK] == 1:
                while rest != 0:
                    rest, bit, l = pop_lane(rest)
                    n = S.out_n[0]
                    if n < S.out_v.shape[0]:
                        S.out_i[n, 0] = ei[e, E_C]
                        S.out_i[n, 1] = w * 64 + l
                        for x in range(NW):
                            S.out_v[n, x] = data[w, e, l, x]
                    S.out_n[0] = n + 1
        # discharge and release (before acceptance: same-coordinate replacement)
        for a in range(A):
            h = am[w, a, HELD] & m
            if ai[a, A_REG] == 0 or h == 0:
                continue
            left = np.uint64(0)
            for j in range(ai[a, A_NOUT]):
                pm = pend[w, a, j] & h
                if pm == 0:
                    continue
                r = ai[a, A_RBASE] + j
                done = pm
                for q in range(r_ptr[r], r_ptr[r + 1]):
                    done = done & em[w, r_edges[q], TAKEN]
                if done != 0:
                    pend[w, a, j] = pend[w, a, j] & ~done
                    for q in range(r_ptr[r], r_ptr[r + 1]):
                        em[w, r_edges[q], TAKEN] = em[w, r_edges[q], TAKEN] & ~done
                left = left | (pm & ~done)
            finished = h & ~left
            if finished == 0:
                continue
            more = finished & am[w, a, MORE]
            am[w, a, HELD] = am[w, a, HELD] & ~(finished & ~more)
            while more != 0:
                more, bit, l = pop_lane(more)
                la[w, a, GLEFT, l] -= 1
                if la[w, a, GLEFT, l] == 0:
                    am[w, a, MORE] = am[w, a, MORE] & ~bit
                next_group(w, a, l, bit)
        # firings commit their cases; the others count their stall or wait
        for a in range(A):
            f = am[w, a, FIRE] & m
            stalled = (am[w, a, RBP] | am[w, a, RNS] | am[w, a, RGR]) & m
            while stalled != 0:
                stalled, bit, l = pop_lane(stalled)
                la[w, a, STALLS, l] += 1
            op = am[w, a, ROP] & m
            if op != 0:
                some = np.uint64(0)
                for k in range(ai[a, A_NIN]):
                    some = some | em[w, a_in[a, k], VALID]
                op = op & some                       # waiting for some operands, not idle
                am[w, a, ROP] = (am[w, a, ROP] & ~m) | op
                while op != 0:
                    op, bit, l = pop_lane(op)
                    la[w, a, WAITS, l] += 1
            if f == 0:
                continue
            act = act | f
            if ai[a, A_UNIFORM] != 0 and ai[a, A_REG] != 0:
                c = ai[a, A_C0]
                am[w, a, HELD] = am[w, a, HELD] | f
                for j in range(ai[a, A_NOUT]):
                    pend[w, a, j] = pend[w, a, j] | f
                copies = False
                for j in range(ai[a, A_NOUT]):
                    if c_src[c, j] != SRC_COMPUTED:
                        copies = True
                if f == FULL:
                    # two loops: the counting one stays a plain loop (with the copies inlined
                    # into it, it measured 3x slower)
                    for l in range(LW):
                        la[w, a, FIRES, l] += 1
                    if copies:
                        for l in range(LW):
                            copy_sources(w, a, l, c)
                    continue
                while f != 0:
                    f, bit, l = pop_lane(f)
                    la[w, a, FIRES, l] += 1
                    if copies:
                        copy_sources(w, a, l, c)
                continue
            while f != 0:
                f, bit, l = pop_lane(f)
                la[w, a, FIRES, l] += 1
                commit(w, a, l, ai[a, A_C0] if ai[a, A_UNIFORM] != 0 else la[w, a, CASE, l], bit)
        # a shared resource that granted an acceptance waits its initiation interval
        rt, rs = P.rt, S.rs
        for r in range(rt.shape[0]):
            for i in range(rt[r, RT_N]):
                f = am[w, rt[r, RT_MEMBERS + i], FIRE] & m
                while f != 0:
                    f, bit, l = pop_lane(f)
                    rs[w, r, l, NEXT_GRANT] = t + rt[r, RT_II]
                    rs[w, r, l, LAST_GRANT] = i
        # input streams advance once every consumer has taken the current token
        for s in range(s_ptr.shape[0] - 1):
            lo = s_ptr[s]
            hi = s_ptr[s + 1]
            if hi <= lo:
                continue
            adv = m
            for q in range(lo, hi):
                adv = adv & em[w, s_edges[q], TAKEN]
            if adv == 0:
                continue
            for q in range(lo, hi):
                em[w, s_edges[q], TAKEN] = em[w, s_edges[q], TAKEN] & ~adv
            while adv != 0:
                adv, bit, l = pop_lane(adv)
                si[w, s, l] += 1
        mm = m
        while mm != 0:
            mm, bit, l = pop_lane(mm)
            bi[w * 64 + l, ACT] = 1 if act & bit != 0 else 0

    for w in range(live.shape[0]):
        if live[w] != 0:
            apply_word(w, live[w])


# --- idle stretches --------------------------------------------------------------------------------

@kernel
def pace(P, S, t, live, quiet, last, wake, done, window, limit, skip):
    """After cycle t: per live lane, note activity, end it after a quiet window, or let it sleep
    through the idle cycles up to the next one that can differ.  Returns the number of repeated
    cycles of lane 0 (the engine traces them) and sets wake/done.

    In a cycle in which nothing fired and no token moved no state changed, so the next cycle
    repeats it unless a time-dependent coordinate is reached: an in-flight next-state update
    completing, a shared resource's initiation interval ending, or a slow output's next ready
    cycle."""
    ai, o_every = P.ai, P.o_every
    am, la, bi = S.am, S.la, S.bi
    A = ai.shape[0]

    def next_event(w, l):
        best = NEVER
        for a in range(A):
            x = la[w, a, NEXTAT, l]
            if t < x < best:
                best = x
        for o in range(o_every.shape[0]):
            k = o_every[o]
            if k > 1:
                x = t + 1 + (k - 1 - (t + 1) % k) % k
                if x < best:
                    best = x
        for r in range(P.rt.shape[0]):
            x = S.rs[w, r, l, NEXT_GRANT]
            if t < x < best:
                best = x
        return best

    def repeat_idle(w, l, n):
        """Count n more cycles like the idle one just applied (its stalls and waits)."""
        bit = np.uint64(1) << np.uint64(l)
        for a in range(A):
            if (am[w, a, RBP] | am[w, a, RNS] | am[w, a, RGR]) & bit != 0:
                la[w, a, STALLS, l] += n
            elif am[w, a, ROP] & bit != 0:
                la[w, a, WAITS, l] += n

    rep0 = 0
    for w in range(live.shape[0]):
        mm = live[w]
        while mm != 0:
            mm, bit, l = pop_lane(mm)
            b = w * 64 + l
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
            nxt = next_event(w, l)
            if nxt - 1 < upto:
                upto = nxt - 1
            if limit - 1 < upto:
                upto = limit - 1
            if upto > t:
                repeat_idle(w, l, upto - t)
                quiet[b] += upto - t
                wake[b] = upto + 1
                if b == 0:
                    rep0 = upto - t
                if quiet[b] >= window:
                    done[b] = True
    return rep0


# --- the semantic kernels' operands and results ------------------------------------------------------

@kernel
def gather(am, acts, vals, slot, data, a_in, from_edges, n_ops, nw, ops, where, wmask):
    """The operands of the lanes of the group's actors `acts` that fired (`am[w, a, FIRE]`:
    read in place, not copied out per cycle), in (word, actor, lane)
    order: ops[k][i] is operand k of firing i (its first nw words), from its edge or (a stream)
    from vals slot + k.  Segment s is one (word, actor): where[s] = (word, actor, its first
    firing) and wmask[s] its firing lanes.  Returns (firings, segments)."""
    n = 0
    s = 0
    LW = data.shape[2]
    full = full_mask(LW)
    for w in range(am.shape[0]):
        for i in range(acts.shape[0]):
            a = acts[i]
            f = am[w, a, FIRE]
            if f == 0:
                continue
            where[s, 0] = w
            where[s, 1] = a
            where[s, 2] = n
            wmask[s] = f
            s += 1
            if f == full and from_edges:             # every lane fired: copy whole rows
                for k in range(n_ops):
                    e = a_in[a, k]
                    if nw == 1:
                        for l in range(LW):
                            ops[k, n + l, 0] = data[w, e, l, 0]
                    else:
                        for l in range(LW):
                            for x in range(nw):
                                ops[k, n + l, x] = data[w, e, l, x]
                n += LW
                continue
            while f != 0:
                f, bit, l = pop_lane(f)
                for k in range(n_ops):
                    if from_edges:
                        e = a_in[a, k]
                        for x in range(nw):
                            ops[k, n, x] = data[w, e, l, x]
                    else:
                        for x in range(nw):
                            ops[k, n, x] = vals[w, a, slot + k, l, x]
                n += 1
    return n, s


@kernel
def scatter(where, wmask, segments, vals, j, res):
    """Result j of the gathered firings into their current group, segment by segment (gather's
    `where`, `wmask`)."""
    nw = res.shape[1]
    LW = vals.shape[3]
    full = full_mask(LW)
    for s in range(segments):
        w, a, q = where[s, 0], where[s, 1], where[s, 2]
        f = wmask[s]
        if f == full:
            if nw == 1:
                for l in range(LW):
                    vals[w, a, j, l, 0] = res[q + l, 0]
            else:
                for l in range(LW):
                    for x in range(nw):
                        vals[w, a, j, l, x] = res[q + l, x]
            continue
        while f != 0:
            f, bit, l = pop_lane(f)
            for x in range(nw):
                vals[w, a, j, l, x] = res[q, x]
            q += 1


# --- the compiled cycle loop: many cycles of a one-instance run in one call ------------------------

# The semantic kernels the loop evaluates itself, lane by lane (fabric/sim/loop.py maps a
# Program's groups to them; a graph with any other kernel runs the engine's per-cycle path).
# Each is the function of fabric/sim/semantics.py it stands for, on raw bits of at most 64.
(S_ADD, S_SUB, S_MUL, S_AND, S_OR, S_XOR, S_MAXU, S_MINU, S_MAXS, S_MINS, S_SHL, S_SHRU, S_DIVU, S_REMU,
 S_CMP, S_SELECT, S_ADDF32, S_SUBF32, S_MULF32, S_ADDF64, S_SUBF64, S_MULF64, S_STREAM) = range(23)
# arith.cmpi predicates (semantics.INTEGER_PREDICATE)
P_EQ, P_NE, P_SLT, P_SLE, P_SGT, P_SGE, P_ULT, P_ULE, P_UGT, P_UGE = range(10)
# the loop's semantic table, per actor: opcode (-1: no computed result), width, predicate, stream step
SM_OP, SM_W, SM_PRED, SM_STEP = range(4)
NAN32, NAN64 = np.uint64(0x7FC00000), np.uint64(0x7FF8000000000000)   # the canonical quiet NaNs


@kernel
def int_compare(pred, w, x, y):
    """arith.cmpi on w-bit raw values: the signed order is the unsigned order of the values
    with their sign bit flipped."""
    if pred == P_EQ:
        return x == y
    if pred == P_NE:
        return x != y
    if pred < P_ULT:
        sb = np.uint64(1) << np.uint64(w - 1)
        x = x ^ sb
        y = y ^ sb
    k = (pred - P_SLT) % 4                       # lt, le, gt, ge
    if k == 0:
        return x < y
    if k == 1:
        return x <= y
    if k == 2:
        return x > y
    return x >= y


@kernel
def int_binary(op, w, x, y):
    """The integer binary kernels of semantics.INTEGER_BINARY the loop covers, on w-bit values."""
    m = ONES if w >= 64 else (np.uint64(1) << np.uint64(w)) - np.uint64(1)
    if op == S_ADD:
        return (x + y) & m
    if op == S_SUB:
        return (x - y) & m
    if op == S_MUL:
        return (x * y) & m
    if op == S_AND:
        return x & y
    if op == S_OR:
        return x | y
    if op == S_XOR:
        return x ^ y
    if op == S_MAXU:
        return x if x >= y else y
    if op == S_MINU:
        return x if x <= y else y
    if op == S_MAXS:
        return x if int_compare(P_SGE, w, x, y) else y
    if op == S_MINS:
        return x if int_compare(P_SLE, w, x, y) else y
    if op == S_SHL or op == S_SHRU:
        if y >= np.uint64(w):                    # a shift by at least the width gives 0
            return np.uint64(0)
        return ((x << y) & m) if op == S_SHL else (x >> y)
    if y == 0:                                   # division by zero: all ones, or the dividend
        return m if op == S_DIVU else x
    return x // y if op == S_DIVU else x % y


@kernel
def float_binary(op, x, y, b32, f32, b64, f64):
    """arith.addf/subf/mulf rounding to nearest even (kernels.numeric's TADD/TSUB/TMUL, ieee
    profile): the hardware operation of the format, a NaN result canonical.  b32/f32 and
    b64/f64 are one scratch array seen as bits and as floats."""
    if op <= S_MULF32:
        b32[0] = np.uint32(x)
        b32[1] = np.uint32(y)
        float_apply(op - S_ADDF32, f32)
        return NAN32 if f32[2] != f32[2] else np.uint64(b32[2])
    b64[0] = x
    b64[1] = y
    float_apply(op - S_ADDF64, f64)
    return NAN64 if f64[2] != f64[2] else b64[2]


@kernel
def float_apply(k, f):
    """f[2] = f[0] + f[1], f[0] - f[1] or f[0] * f[1] for k = 0, 1, 2 (the order of the addf,
    subf, mulf codes of each width), in f's own format."""
    if k == 0:
        f[2] = f[0] + f[1]
    elif k == 1:
        f[2] = f[0] - f[1]
    else:
        f[2] = f[0] * f[1]


@kernel
def evaluate(P, S, sem, b32, f32, b64, f64):
    """The semantic kernels of this cycle's firings (`am[w, a, FIRE]`), lane by lane, into
    their current group: what the engine's gather, kernel call and scatter do, for the kernels
    of the loop's table.  A stream's operands are its stored slots, the others' their edges."""
    ai, a_in = P.ai, P.a_in
    am, data, vals = S.am, S.data, S.vals
    OP = P.c_out.shape[1] + 3
    for w in range(am.shape[0]):
        for a in range(sem.shape[0]):
            op = sem[a, SM_OP]
            f = am[w, a, FIRE]
            if op < 0 or f == 0:
                continue
            wd = sem[a, SM_W]
            while f != 0:
                f, bit, l = pop_lane(f)
                if op == S_STREAM:               # (base, step, limit, is_step) -> (index, continue)
                    v = vals[w, a, OP, l, 0]
                    if vals[w, a, OP + 3, l, 0] != 0:
                        v = int_binary(sem[a, SM_STEP], wd, v, vals[w, a, OP + 1, l, 0])
                    vals[w, a, 0, l, 0] = v
                    c = int_compare(sem[a, SM_PRED], wd, v, vals[w, a, OP + 2, l, 0])
                    vals[w, a, 1, l, 0] = np.uint64(1) if c else np.uint64(0)
                    continue
                x = data[w, a_in[a, 0], l, 0]
                y = data[w, a_in[a, 1], l, 0] if ai[a, A_NIN] > 1 else x
                if op == S_SELECT:
                    r = y if x != 0 else data[w, a_in[a, 2], l, 0]
                elif op == S_CMP:
                    r = np.uint64(1) if int_compare(sem[a, SM_PRED], wd, x, y) else np.uint64(0)
                elif op >= S_ADDF32:
                    r = float_binary(op, x, y, b32, f32, b64, f64)
                else:
                    r = int_binary(op, wd, x, y)
                vals[w, a, 0, l, 0] = r


@kernel
def run_cycles(P, S, t, limit, quiet, last, wake, done, window, skip, sem, reserve, scratch):
    """Cycles t, t + 1, ... of a run of one instance without a trace, in one call: per cycle
    what the engine's `run_all` does - wait for the wake cycle, settle, evaluate, apply, pace -
    with the same functions, so the same cycle-level semantics.  Returns the next cycle: at
    `limit`, after the cycle in which the instance ended (the engine words its end: a fault
    where `bi[0, FAULT]` is set, else from the state), or before
    a cycle whose outputs might not fit the output buffer (`reserve` rows; the engine grows it
    and calls again)."""
    live = np.ones(1, np.uint64)
    stack, queued, cons, outm = scratch
    b32 = np.zeros(3, np.uint32)
    b64 = np.zeros(3, np.uint64)
    f32 = b32.view(np.float32)
    f64 = b64.view(np.float64)
    while t < limit and not done[0]:
        if wake[0] > t:                          # asleep through idle cycles already counted
            t = wake[0]
            continue
        if S.out_n[0] + reserve > S.out_i.shape[0]:
            break
        settle(P, S, t, live, stack, queued, cons, outm)
        if S.bi[0, FAULT] >= 0:                  # a routed selector addressed no port: the run
            for a in range(S.am.shape[1]):       # ends in this cycle, nothing fired (the engine
                S.am[0, a, FIRE] = np.uint64(0)  # words the fault)
            done[0] = True
            return t + 1
        evaluate(P, S, sem, b32, f32, b64, f64)
        apply(P, S, t, live)
        pace(P, S, t, live, quiet, last, wake, done, window, limit, skip)
        t += 1
    return t


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
