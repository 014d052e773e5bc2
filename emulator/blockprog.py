"""Compiled block programs: the `cpu` engine's fast path for one machine's element-wise blocks
(engine.HostPlans).  A covered block runs its per-block element work -- read the source stacks,
check that every element read is defined, compute with the kernel the tier table selects,
each PE's status as the OR of its flags, padding -- in one compiled (Numba) call, then one
Python commit; anything it does not cover, and any block on which a rule might fail, runs on
today's path (the reference's own steps, engine.HostPlans.plan), which gives the exact result
or rejection.  docs/machine.md ("Compiled block programs") states what is covered.

A program is a fact of the block and the numeric profile alone (isa.memo rule 1 on the Block;
rule 2 by the block's words, for the fresh Block objects each decode of a stream makes):
  * the block is binary, unary or ternary element-wise (TADD ... TFMA), PE_MASK not 0000, no
    B.IOR offsets, its destination descriptor legal (preflight._dest);
  * the tier table (kernels/numeric/tiers.py) gives (op, DataType, profile) to a compiled
    kernel whose scalar routine takes and returns encodings (kind 'raw', or 'bits': a rounded
    routine on decoded binary32 patterns), with no fix pass, and every pattern of the
    container encodes the DataType (no per-element encoding rule; semantics._may_be_invalid).
    The routine is the registry's own (fast.REGISTRY): no numeric rule is restated here.
Per block, what depends on the state is checked afresh: every source tile exists and its
descriptor passes the role's descriptor rules (preflight._source_passes; a descriptor object
that passed is kept per role and recognised by identity), the store has room for the
destination (preflight.check_allocation), and in the compiled call every element read is
defined and no element is marked for the hand-off (FALLBACK: the tier's kernel does not settle
it alone).  Any of these failing sends the whole block to today's path before anything
changed: nothing is committed by a block the compiled call did not finish.

Chains (Program.step, Chain): in a stream run without a log, the second and later of
consecutive covered blocks over one PE set keep their destination arrays in the chain instead
of committing Tile objects one block at a time; the chain commits them once when it ends (a
block it cannot finish, another PE set, an uncovered block, the end of the stream), exactly as
the blocks would have one by one.  engine.Compiled decides when a chain runs and ends.
"""
from __future__ import annotations

import itertools
import operator

import numba as nb
import numpy as np

from isa import instructions as I
from isa.encoding import WORDS_MEMO
from isa.errors import IllegalBlockException
from isa.legality import resolve
from isa.memo import MEMO, memo
from kernels.numeric import fast, fastvec
from kernels.numeric.fast import wide_vectors  # noqa: F401 (named in the loops _loop writes)
from kernels.numeric.flags import NAMES as _FLAG_BITS, NX as _FLAG_BITS_NX
from kernels.numeric.profiles import profile as resolve_profile

from .reuse import destination
from . import preflight, schemas, semantics
from .padding import pad_encoding
from .reference import BlockResult, Staged, commit_records
from .state import used_bytes
from .tiles import element_dtype, rows_of_one_stack, stack_rows, stacked_tiles

_CAPACITY = operator.attrgetter("desc.capacity")
_values = dict.values
_chain = itertools.chain

SCHEMAS = (I.UNARY, I.BINARY, I.TERNARY)
KINDS = ("raw", "bits")
MARK = 0xFF                     # fast.FALLBACK: an element the kernel leaves to the hand-off
UNDEFINED, MARKED = 1, 2        # the compiled call's answers besides 0 (done)
MARK_BIT = np.uint8(0x80)       # set in MARK, in no flag: an OR of flags has it iff one was a mark
assert MARK & MARK_BIT and all(bit < MARK_BIT for bit in _FLAG_BITS)

RESULTS_KEPT = 16               # BlockResults kept per program (Program._result): distinct statuses
SCALAR = READ = None            # bound in each program's own globals (fast.bind)


# ---------------------------------------------------------------- compiled templates
# One per (operand reading, arity).  a, b, c: (S, Row*Col) source stacks (NORM: physical index
# r*col + c); ad, bd, cd their definedness, read only when `check`; out (S, Row*Col) is written
# everywhere: results in the valid vr x vc rectangle, `pad` outside it; status (S,) the OR of
# each PE's flags over its valid rectangle.  prm: the int64 parameters (check, vr, vc, rows,
# col, pad; and a rounded routine's op code) in one array (Program.prm): the call's dispatch
# costs by the argument.  The definedness check runs first, then the element loop without an
# early exit, so an answer besides 0 may come with out and status written: the caller then
# keeps neither (run's are fresh, a chain's step writes its spare status buffer).
#
# The element loop is written so that LLVM vectorises it (4-5x the scalar loop on 4 x 128x128
# FP32, docs/performance.md): each PE's valid rectangle is walked as 1-D row slices -- one run
# of vr*col elements when vc == col -- with the `wide_vectors` hint the numeric layer's loops
# carry, and the only loop-carried value is the uint8 OR of the flags.  A marked element is
# found from that OR: MARK (0xFF) has bit 7 set and no flag does (kernels/numeric/flags.py), so
# a PE's OR has bit 7 iff one of its elements was marked.

@nb.njit(inline="always")
def _runs(vr, vc, col):
    """(runs, width): the valid rectangle's row runs -- one run of vr*col elements when vc == col."""
    return (1, vr * col) if vc == col else (vr, vc)


@nb.njit(inline="always")
def _undefined(d, n, runs, width, col):
    """True when one of the n PEs' valid rectangles in definedness stack d holds an undefined
    element (a block reading several sources asks for each: the AND of their definedness)."""
    for p in range(n):
        dp = d[p]
        for r in range(runs):
            base = r * col
            dr = dp[base:base + width]
            ok = True
            for k in range(width):
                ok &= dr[k]
            if not ok:
                return True
    return False


@nb.njit(inline="always")
def _pad(outp, rows, vr, vc, col, pad):
    """PadValue everywhere in a PE's Row x Col destination outside its valid vr x vc rectangle."""
    for r in range(rows):
        for c in range(vc if r < vr else 0, col):
            outp[r * col + c] = pad


# The loops differ only in their arity, in the routine's call and, for the quick parts, in the
# words they carry, so each is written out from the pieces below (_loop) rather than by hand
# eight times.  What _loop writes is the hand-written loop, statement for statement (the same
# bytecode, hence the same compiled loop and the same bits; tests/emulator/test_block_programs.py
# holds _quick2 to the hand-written one).  A raw loop, e.g. _prog2, per PE p:
#     st = np.uint8(0)
#     for r in range(runs):
#         base = r * col
#         ar = ap[base:base + width]; br = bp[base:base + width]; outr = outp[base:base + width]
#         for k in range(width):
#             code, f = SCALAR(ar[k], br[k])       # bits: SCALAR(op, READ(ar[k], dec), ..., fmt)
#             outr[k] = code
#             st |= f
#     status[p] = st; marks |= st; _pad(outp, rows, vr, vc, col, pad)

_SRC = ("a", "b", "cc")                 # the source stacks (cc: `c` is a column elsewhere)
_DEF = ("ad", "bd", "cd")               # their definedness stacks
_CHUNK = ("ac", "bc", "cc_")            # their slices of one chunk (quick loops)


def _full(arity: int, rounded: bool, pad: str) -> list:
    """A PE's element loop by the full routine SCALAR: results into outr, the OR of the flags
    into st.  A rounded routine takes its op code, each element as READ decodes it, and the
    format's records."""
    src = _SRC[:arity]
    if rounded:
        args = "op, " + ", ".join(f"READ({s}r[k], dec)" for s in src) + ", fmt"
    else:
        args = ", ".join(f"{s}r[k]" for s in src)
    run = "; ".join(f"{s}r = {s}p[base:base + width]" for s in src) + "; outr = outp[base:base + width]"
    return [pad + line for line in (
        "st = np.uint8(0)",
        "for r in range(runs):",
        "    base = r * col",
        "    " + run,
        "    for k in range(width):",
        f"        code, f = SCALAR({args})",
        "        outr[k] = code",
        "        st |= f")]


def _quick(arity: int) -> list:
    """A PE's element loop by the quick part QUICK (nx words read until one is nonzero, in
    _NX_CHUNK chunks), redone by the full routine when its words say so."""
    src, chunk = _SRC[:arity], _CHUNK[:arity]
    run = "; ".join(f"{s}r = {s}p[base:base + width]" for s in src) + "; outr = outp[base:base + width]"
    head = "; ".join(f"{c} = {s}r[k:end]" for s, c in zip(src, chunk)) + "; oc = outr[k:end]"
    rest = "; ".join(f"{c} = {s}r[k:]" for s, c in zip(src, chunk)) + "; oc = outr[k:]"
    args = ", ".join(c + "[j]" for c in chunk)
    return ["        nx = NX0; low = LOW0; high = np.uint32(0)",
            "        for r in range(runs):",
            "            base = r * col",
            "            " + run,
            "            k = 0",
            "            while nx == 0 and k < width:",            # the nx words until one element is inexact
            "                end = min(k + _NX_CHUNK, width)",
            "                " + head,
            "                for j in range(end - k):",
            f"                    code, x, lo, hi = QUICK({args})",
            "                    oc[j] = code",
            "                    nx = max(nx, x)",         # nonzero iff some x is: max keeps uint32 (| widens)
            "                    low = min(low, lo)",
            "                    high = max(high, hi)",
            "                k = end",
            "            " + rest,
            "            for j in range(width - k):",      # the rest without them (LLVM drops their arithmetic)
            f"                code, _, lo, hi = QUICK({args})",
            "                oc[j] = code",
            "                low = min(low, lo)",
            "                high = max(high, hi)",
            "        st = _status(nx, low, high, LOW)",
            "        if st == 0xFF:"] + _full(arity, False, " " * 12)     # the full routine on this PE


def _loop(name: str, arity: int, kind: str):
    """The program loop `name` of `arity` sources: kind 'raw' (SCALAR on encodings), 'bits'
    (SCALAR on READ's decoded patterns, with the op code and format records) or 'quick'."""
    src, dfn = _SRC[:arity], _DEF[:arity]
    bits = kind == "bits"
    undefined = " or ".join(f"_undefined({d}, n, runs, width, col)" for d in dfn)
    body = _quick(arity) if kind == "quick" else _full(arity, bits, " " * 8)
    lines = [f"def {name}({', '.join(src + dfn)}, prm, out, status{', fmt, dec' if bits else ''}):",
             "    wide_vectors()",
             "    check, vr, vc, rows, col, pad" + (", op" if bits else "")
             + " = prm[0], prm[1], prm[2], prm[3], prm[4], prm[5]" + (", prm[6]" if bits else ""),
             "    runs, width = _runs(vr, vc, col)",
             "    n = out.shape[0]",
             f"    if check and ({undefined}):",
             "        return UNDEFINED",
             "    marks = np.uint8(0)",
             "    for p in range(n):",
             "        " + "; ".join(f"{s}p = {s}[p]" for s in src) + "; outp = out[p]",
             *body,
             "        status[p] = st",
             "        marks |= st",
             "        _pad(outp, rows, vr, vc, col, pad)",
             "    return MARKED if marks & MARK_BIT else 0"]
    space: dict = {}
    # compiled after `import numpy as np`, as in this module: Python 3.11 calls an imported
    # module's functions by LOAD_ATTR, anything else's by LOAD_METHOD (the bytecode would differ)
    code = compile("import numpy as np\n" + "\n".join(lines) + "\n", f"<blockprog {name}>", "exec")
    exec(code, globals(), space)
    return space[name]


_prog1, _prog2, _prog3 = (_loop(f"_prog{n}", n, "raw") for n in (1, 2, 3))
_progbits1, _progbits2, _progbits3 = (_loop(f"_progbits{n}", n, "bits") for n in (1, 2, 3))


# FP32 add, sub, mul and fma (the fastvec routines that have a quick part, fastvec.QUICK): the
# element loop runs the quick part, which reduces three words per PE instead of OR-ing flag bytes
# (fastvec.py, "FP32 quick parts"), and a PE whose words say an element may have a flag besides
# NX (a non-finite operand or result, a tiny result) is redone by the full routine SCALAR.  The
# nx words reduce by max, not OR (the same question: is one nonzero): Numba types uint32 | uint32
# as uint64, which halved the loops' vector lanes (measured 1.3x on TADD/TMUL, 1.9x on TFMA).
# A PE's status needs one inexact element, not each one's: once a chunk's nx words showed one, the
# rest of the PE computes the result and the redo words alone (TFMA's exactness test is half its
# instructions, TADD's TwoSum error and TMUL's residual most of theirs); a PE of exact results
# reads every nx word, as before, one chunk at a time.

QUICK = NX0 = LOW0 = LOW = None     # bound in each quick program's globals (compiled): fastvec.QUICK's row
_QUICK_HIGH, _NX = fastvec.QUICK_HIGH, np.uint8(_FLAG_BITS_NX)
_NX_CHUNK = 256      # elements whose nx words are read before asking whether one was nonzero


@nb.njit(inline="always")
def _status(nx, low, high, bound):
    """A PE's status from its quick words, or 0xFF (no status: flags use bits 0-4) when the PE
    must be redone by the full routine."""
    if low < bound or high > _QUICK_HIGH:
        return np.uint8(0xFF)
    return _NX if nx != 0 else np.uint8(0)


_quick2, _quick3 = (_loop(f"_quick{n}", n, "quick") for n in (2, 3))


QUICK_TEMPLATES = {2: _quick2, 3: _quick3}


TEMPLATES = {("raw", 1): _prog1, ("raw", 2): _prog2, ("raw", 3): _prog3,
             ("bits", 1): _progbits1, ("bits", 2): _progbits2, ("bits", 3): _progbits3}
_COMPILED: dict = {}            # (kind, arity, scalar) -> the compiled program loop; a few dozen routines


def compiled(kind: str, arity: int, scalar):
    """The compiled block loop of a kernel kind and arity running `scalar` (one per routine,
    shared by every format it serves), cached on disk like the tiers' loops (fast.bind)."""
    key = (kind, arity, scalar)
    fn = _COMPILED.get(key)
    if fn is None:
        row = fastvec.QUICK.get(scalar) if kind == "raw" else None
        if row is not None:
            quick = row[0]
            py = fast.bind(QUICK_TEMPLATES[arity], scalar, name=f"_quick{arity}__fastvec_{quick.py_func.__name__}")
            py.__globals__.update(QUICK=quick, NX0=row[1], LOW0=row[2], LOW=row[3])
        else:
            py = fast.bind(TEMPLATES[(kind, arity)], scalar, fast.READERS["bits"] if kind == "bits" else None)
        fn = _COMPILED[key] = nb.njit(cache=True, error_model="numpy", nogil=True)(py)
    return fn


# ---------------------------------------------------------------- programs

class Program:
    """One covered block's facts (see the module doc) and its per-block run."""

    def __init__(self, rb, dest, kernel, prof):
        self.rb = rb
        self.pes = rb.pes
        self.mnemonic = rb.instr.mnemonic
        self.dest = dest
        self.dest_tile = rb.dest.tile
        self.tiles = tuple(b.tile for b in rb.sources)
        self.roles = tuple(rb.instr.sources)
        self.shapes = schemas.SCHEMAS[rb.instr.schema].sources
        self.accepted = [None] * len(self.tiles)      # per role: a descriptor object that passed
        reads = {}
        for i, tid in enumerate(self.tiles):
            reads.setdefault(tid, []).append(i)
        # each tile id read: (tile id, its roles, its key in the engine's `seen`: PE_MASK and id)
        self.reads = tuple((tid, tuple(roles), rb.PE_MASK << 32 | tid) for tid, roles in reads.items())
        order = [r[0] for r in self.reads]
        self.read_of_role = tuple(order.index(tid) for tid in self.tiles)
        self.shuffled = self.read_of_role != tuple(range(len(self.reads)))   # a tile id read in two roles
        # the roles that read the destination's tile id (their operand slots: run's record, _LAST)
        self.dest_roles = tuple(i for i, tid in enumerate(self.tiles) if tid == rb.dest.tile)
        self.mask = rb.PE_MASK
        self.dest_key = rb.PE_MASK << 32 | rb.dest.tile
        self.room = (None, 0)           # (config, its store's bytes less the destination's capacity)
        self.raw = element_dtype(dest)
        self.location = dest.location
        S, n = len(self.pes), dest.Row * dest.Col
        self.shape = (S, n)
        self.nbytes = S * n * np.dtype(self.raw).itemsize
        self.vr, self.vc, self.rows, self.col = dest.ValidRow, dest.ValidCol, dest.Row, dest.Col
        enc = pad_encoding(rb.PadValue, rb.dtype.name)
        self.pad = 0 if enc is None else int(enc)
        whole = self.vr == self.rows and self.vc == self.col
        if whole:           # as the reference: the shared all-defined array of the result's shape
            defined = semantics.all_defined((S, 1, n)).reshape(S, n)
        else:
            grid = np.zeros((self.rows, self.col), bool)
            grid[:self.vr, :self.vc] = True
            if enc is not None:
                grid[:] = True
            defined = np.ascontiguousarray(np.broadcast_to(grid.reshape(1, n), (S, n)))
            defined.setflags(write=False)
        self.defined = defined
        self.whole = bool(whole)
        self.all_defined = bool(defined.all())
        prm = [0, self.vr, self.vc, self.rows, self.col, self.pad]
        if kernel.kind == "bits":         # a rounded routine: the op code and the format's records too
            p = fast.params(kernel.format, bool(prof.ftz))
            self.extra = (p.fmt, p.dec)
            prm.append(int(kernel.op))
        else:
            self.extra = ()
        # the compiled call's int parameters, without and with the definedness check
        self.prm = (np.array(prm, np.int64), np.array([1] + prm[1:], np.int64))
        self.fn = compiled(kernel.kind, len(self.tiles), kernel.scalar)
        self.results = {}               # the PEs' status bytes -> this block's BlockResult (_result)

    def _accepts(self, i: int, t, pe: int) -> bool:
        """Whether tile t passes role i's descriptor rules (kept by identity once it did)."""
        try:
            preflight._source_passes(i, self.roles[i], self.shapes[i], t, pe, self.tiles[i], self.rb, self.dest)
        except IllegalBlockException:
            return False
        self.accepted[i] = t.desc
        return True

    def _accepts_all(self, i: int, tiles) -> bool:
        """Whether every tile of `tiles` (one per selected PE) passes role i's descriptor rules:
        a descriptor object that passed already (or as the tile before) is not checked again."""
        acc = self.accepted[i]
        pes = self.pes
        for k, t in enumerate(tiles):
            if t.desc is not acc:
                if not self._accepts(i, t, pes[k]):
                    return False
                acc = t.desc
        return True

    def _checks(self, m, stores, seen):
        """(operands of the compiled call, whether it checks definedness, whether it would on
        the state this block's commit leaves) for the block on m's `stores` (the selected PEs'
        tile stores), or None when today's path must run it: every source tile exists and passes
        its roles' descriptor rules, and the store has room for the destination
        (preflight.check_allocation)."""
        pes = self.pes
        check = after = False
        gots = []
        accepted = self.accepted
        dest_tile = self.dest_tile
        for tid, roles, key in self.reads:
            tiles = [s.get(tid) for s in stores]
            got = seen.get(key)
            if got is None or got[0] != tiles:      # not the very tiles read last time: stack them
                got = _stacked(m, pes, stores, tid, tiles, key, seen)
                if got is None:
                    return None
                tiles = got[0]                      # re-pointed at the rows of one stack
            d0 = got[4]
            for i in roles:                         # each role's descriptor rules (kept by identity)
                if (d0 is None or accepted[i] is not d0) and not self._accepts_all(i, tiles):
                    return None
            check = check or not got[3]
            after = after or not (self.all_defined if tid == dest_tile else got[3])
            gots.append(got)
        operands = [gots[j][1] for j in self.read_of_role] + [gots[j][2] for j in self.read_of_role]
        # the allocation rule (preflight.check_allocation) on the stores as they are: a store
        # without room sends the block to today's path, which raises ALLOCATION
        config = m.config
        if config is not self.room[0]:
            self.room = (config, config.store_bytes(self.location) - self.dest.capacity)
        room = self.room[1]
        # every tile's bytes, all selected stores together: room enough in each store
        if sum(map(_CAPACITY, _chain.from_iterable(map(_values, stores)))) > room:
            location = self.location
            for s in stores:
                if sum(map(_CAPACITY, s.values())) <= room:     # every tile's bytes, any store: room enough
                    continue
                if used_bytes(s, location) > room:
                    return None
        return operands, check, after

    def _keeps(self, stores) -> bool:
        """Whether the state this block's commit will leave may be recorded (_record): each
        store's bytes stay as they are (the destination's tile id holds a tile of the
        destination's capacity and location already), and each role reading the destination's
        tile id accepts the destination's descriptor.  Asked after _checks passed, before the
        commit."""
        dest, dest_tile = self.dest, self.dest_tile
        for s in stores:
            old = s.get(dest_tile)
            if old is None or old.desc.capacity != dest.capacity or old.desc.location != dest.location:
                return False
        accepted = self.accepted
        return all(accepted[i] is dest for i in self.dest_roles)

    def _record(self, stores, config, operands, after, out, seen) -> None:
        """seen[_LAST]: what run's checks found, for the state this block's commit just left
        (a copy of each store, the config): the next block, when it is this program again on
        that very state (stores equal to the copies: the same tile ids holding the very same
        Tile objects, since tiles compare by identity), skips the checks.  Sound because every
        check is a function of the tile objects the stores hold (immutable), their tile ids and
        the config alone: the
        sources the checks passed are still there (a role reading the destination's tile id now
        reads the destination, whose descriptor that role accepted: _keeps), and each store's
        bytes are what they were (_keeps), so the allocation rule passes again.  The operands
        are those of the checks with the destination's slots now `out` (and its definedness);
        `after`: whether the call checks definedness on that state (_checks)."""
        operands = list(operands)       # the record's own: run updates it block by block
        A = len(self.tiles)
        for i in self.dest_roles:
            operands[i], operands[A + i] = out, self.defined
        seen[_LAST] = (self, config, list(map(dict.copy, stores)), operands, after)

    def run(self, m, block, log, index, offset, seen):
        """The block on machine m: its BlockResult, committed, or None (nothing changed) when
        today's path must run it.  `seen`: the machine's (PEs, tile id) -> (the tiles read
        there last, their stacked elems and defined, all defined), kept by its engine
        (engine.HostPlans.seen): the very same tiles again are not stacked again."""
        pes = self.pes
        pe_states = m.pes
        stores = [pe_states[p].tiles for p in pes]
        config = m.config
        rec = seen.get(_LAST)
        if rec is not None and rec[0] is self and rec[1] is config and stores == rec[2]:
            # the state this program's last commit on this machine left, unchanged: every check
            # would pass as it did then (_record)
            operands, check, keep = rec[3], rec[4], False
        else:
            got = self._checks(m, stores, seen)
            if got is None:
                return None
            operands, check, after = got
            # recorded only when this program ran last as well (a block repeated): a stream of
            # other blocks in turn would pay for copies no block uses
            keep = rec is not None and rec[0] is self and self._keeps(stores)
            rec = None
        out = destination(self.shape, self.raw, self.nbytes)
        status = np.empty(self.shape[0], np.uint8)
        # the new tiles (the rows of `out`) made before the compiled call: after a large block's
        # call the caches are cold for Python, so as little as may be is left for then
        new = stack_rows(self.dest, out, self.defined, self.all_defined)
        if self.fn(*operands, self.prm[check], out, status, *self.extra):
            return None
        # the commit (as ReferenceMachine._commit): nothing here can fail
        out.setflags(write=False)       # as stacked_tiles leaves it (self.defined is read-only)
        dest_tile = self.dest_tile
        statuses = status.tolist()
        for p, store, tile, s in zip(pes, stores, new, statuses):
            store[dest_tile] = tile
            pe_states[p].status = s
        # the tiles just committed are the rows of `out`: a later block over these PEs reading
        # them finds them here (what the stacking above would find: the same arrays and flags)
        seen[self.dest_key] = (new, out, self.defined, self.all_defined, self.dest)
        if rec is not None:
            # the record follows this commit: its copies as the stores are now (the
            # destination's tile id was in each already, so it keeps its place), the
            # destination's operand slots `out`; the rest (definedness, check) is as it was
            for c, tile in zip(rec[2], new):
                c[dest_tile] = tile
            for i in self.dest_roles:
                operands[i] = out
        elif keep:
            self._record(stores, config, operands, after, out, seen)
        else:                           # no record (an old one holds tiles no longer in the state)
            seen[_LAST] = (self, None, None, None, None)        # but this program ran last
        if log is not None:
            S = self.shape[0]
            staged = [Staged(pes, self.dest, out.reshape(S, 1, -1), self.defined.reshape(S, 1, -1),
                             status.reshape(S, 1), self.whole)]
            log.write(commit_records(staged, block, index, offset, dest_tile))
        return self._result(status)

    def step(self, m, chain, seen):
        """The block inside a run of consecutive covered blocks over the same PEs (Chain, a
        stream run without a log): its BlockResult, its tiles held in the chain until the chain
        is materialised (Chain.flush) -- or None, with nothing changed: the caller flushes the
        chain and runs the block as `run` does.  The checks are run's, on the state the blocks
        so far would have left: a tile the chain wrote is read from it (its descriptor the
        program's destination, passed by identity or sent to `run`), any other from the stores;
        the allocation rule's sufficient test on each store's bytes as the chain left them."""
        if chain.mask != self.mask:
            if chain.pending:
                return None
            chain.start(m, self)
        pending = chain.pending
        accepted = self.accepted
        read = chain.read
        check = 0
        elems = []
        defs = []
        for tid, roles, key in self.reads:
            got = pending.get(tid)
            if got is not None:             # a tile the chain wrote: its descriptor the writer's
                d0 = got[4]
                for i in roles:
                    if accepted[i] is not d0:
                        return None
            else:
                # a tile the chain did not write: the stores' own, unchanged while the chain lasts
                got = read.get(tid)
                d0 = None if got is None else got[4]
                fresh = d0 is None
                if not fresh:
                    for i in roles:
                        if accepted[i] is not d0:
                            fresh = True
                if fresh:
                    got = self._read(m, chain, tid, roles, key, seen)
                    if got is None:
                        return None
            if not got[3]:
                check = 1
            elems.append(got[1])
            defs.append(got[2])
        if self.shuffled:
            order = self.read_of_role
            elems = [elems[j] for j in order]
            defs = [defs[j] for j in order]
        config = m.config
        if config is not self.room[0]:
            self.room = (config, config.store_bytes(self.location) - self.dest.capacity)
        if chain.most > self.room[1]:
            return None
        out = destination(self.shape, self.raw, self.nbytes)
        status = chain.spare            # the status buffer the chain's last block did not write
        if self.fn(*elems, *defs, self.prm[check], out, status, *self.extra):
            return None
        chain.spare = chain.status
        dest_tile = self.dest_tile
        dest = self.dest
        was = pending.get(dest_tile)
        if was is None or was[4].capacity != dest.capacity:      # the stores' bytes as the chain leaves them
            cap = dest.capacity
            totals = chain.totals
            for k, s in enumerate(chain.stores):
                old = was[4].capacity if was is not None else (s[dest_tile].desc.capacity if dest_tile in s else 0)
                totals[k] += cap - old
            chain.most = max(totals)
        pending[dest_tile] = (None, out, self.defined, self.all_defined, dest)
        chain.status = status
        return self._result(status)

    def _result(self, status) -> BlockResult:
        """The block's BlockResult for its PEs' statuses `status` (uint8, PEs ascending): one
        object per distinct statuses, kept (RESULTS_KEPT per program) and handed out again.
        Why: a fresh BlockResult and its __dict__ are two objects the cyclic collector tracks,
        and a stream's results list keeps them all, so a long stream paid for collector passes
        over them -- full collections included, each a walk of the whole heap -- more than for
        the block's compiled call (docs/performance.md, "mstream").  A BlockResult is frozen and
        equal ones are interchangeable; its status dict is to be read, not written."""
        key = status.tobytes()
        res = self.results.get(key)
        if res is None:
            pes = self.pes
            res = BlockResult(self.mnemonic, pes, self.dest_tile, dict(zip(pes, status.tolist())))
            if len(self.results) < RESULTS_KEPT:
                self.results[key] = res
        return res

    def _read(self, m, chain, tid, roles, key, seen):
        """step's read of a tile the chain did not write: chain.read's entry for it, stacked
        from the stores if need be, its descriptor passing each role's rules (kept by
        identity); or None when a tile is missing or fails them."""
        pes = self.pes
        stores = chain.stores
        got = chain.read.get(tid)
        if got is not None:
            tiles = got[0]
        else:
            tiles = [s.get(tid) for s in stores]
            got = seen.get(key)
        if got is None or got[0] != tiles:
            got = _stacked(m, pes, stores, tid, tiles, key, seen)
            if got is None:
                return None
            tiles = got[0]
        chain.read[tid] = got
        d0 = got[4]
        accepted = self.accepted
        for i in roles:
            if (d0 is None or accepted[i] is not d0) and not self._accepts_all(i, tiles):
                return None
        return got


class Chain:
    """A run of consecutive covered blocks over one PE set, run without a log: the destination
    tiles they wrote, kept as (None, elems, defined, all defined, descriptor) per tile id in
    first-write order, the last block's statuses, and each selected store's bytes (every tile,
    any location) as the blocks left them.  `flush` commits them to the machine as the blocks
    one by one would have (the same tiles, bytes, statuses and store order)."""

    def __init__(self):
        self.mask = None
        self.pending = {}
        self.status = None

    def start(self, m, prog) -> None:
        self.mask, self.pes = prog.mask, prog.pes
        self.stores = [m.pes[p].tiles for p in prog.pes]
        self.read = {}          # tile id -> its `seen` entry, for tiles read from the stores
        self.totals = [sum(map(_CAPACITY, s.values())) for s in self.stores]
        self.most = max(self.totals)
        # two status buffers, alternating: a block writes the one the chain's last block did not
        self.spare = np.empty(len(prog.pes), np.uint8)
        self.status = np.empty(len(prog.pes), np.uint8)

    def flush(self, m, seen) -> None:
        """The chain's tiles and statuses into the machine, and the chain ended (the next block
        starts another from the stores as they are then)."""
        mask, self.mask = self.mask, None
        pending = self.pending
        if not pending:
            return
        stores, pes = self.stores, self.pes
        for tid, (_, out, defined, known, desc) in pending.items():
            new = stacked_tiles(desc, out, defined, known)
            for s, t in zip(stores, new):
                s[tid] = t
            seen[mask << 32 | tid] = (new, out, defined, known, desc)
        for p, st in zip(pes, self.status.tolist()):
            m.pes[p].status = st
        self.pending = {}
        self.status = None


def _stacked(m, pes, stores, tid, tiles, key, seen):
    """seen[key] = (tiles, elems, defined, all defined, the shared descriptor or None) for the
    role's tiles read afresh, or None (nothing changed) when a tile is missing or the tiles
    differ in descriptor per PE: one program serves one geometry, today's path the rest."""
    if None in tiles:
        return None
    d0 = tiles[0].desc
    if any(t.desc != d0 for t in tiles[1:]):
        return None
    both = rows_of_one_stack(tiles)
    if both is None:
        both = _restack(m, pes, tid, tiles)
        tiles = [s.get(tid) for s in stores]
    d0 = tiles[0].desc
    same = all(t.desc is d0 for t in tiles)
    # each tile's definedness scanned once in its life (Tile.fully_defined is memoised): a tile
    # written whole from outside (Machine.write_tile) is then read without the compiled call's
    # definedness check, block after block
    known = all(t.fully_defined for t in tiles)
    seen[key] = got = (tiles, both[0], both[1], known, d0 if same else None)
    return got


def _restack(m, pes, tid, tiles):
    """(elems, defined) (S, elements) of `tiles`: stacked once, and m's tiles re-pointed at the
    rows when they share one descriptor object (engine.HostPlans._stack_sources does the same;
    same descriptor and bytes, read-only: nothing architectural changes)."""
    d0 = tiles[0].desc
    elems = np.stack([t.elems for t in tiles])
    defined = np.stack([t.defined for t in tiles])
    if all(t.desc is d0 for t in tiles):
        known = all(t.__dict__.get("fully_defined", False) for t in tiles)
        for p, t in zip(pes, stacked_tiles(d0, elems, defined, known)):
            m.store(p)[tid] = t
    return elems, defined


_NOT_COVERED = False
# the engine's `seen` key of Program.run's record (Program._record), or of (program, None, ...):
# that program ran last on the machine without a record
_LAST = "last"
_BY_WORDS: dict = {}            # (block words, profile) -> Program or _NOT_COVERED; bound: 4096 entries
BY_WORDS_LIMIT = 4096


def program(block, profile: str):
    """The Program of `block` under numeric profile `profile`, or None: not covered, or the
    block fails a stateless rule (today's path raises it)."""
    key = ("blockprog", profile)
    kept = block.__dict__.get(MEMO)
    if kept is not None:
        got = kept.get(key)
        if got is not None:
            return got or None
        words = kept.get(WORDS_MEMO)
    else:
        words = None
    got = _BY_WORDS.get((words, profile)) if words is not None else None
    if got is None:
        try:
            rb = resolve(block)
        except Exception:                   # today's path raises it, as the reference does
            return None
        got = _build(rb, profile)
        if words is not None and len(_BY_WORDS) < BY_WORDS_LIMIT:
            _BY_WORDS[(words, profile)] = got
    if type(block.iot) is tuple:
        memo(block)[key] = got
    return got or None


def _build(rb, profile: str):
    """A Program of resolved block rb, or _NOT_COVERED."""
    if rb.PE_MASK == 0 or rb.instr.schema not in SCHEMAS or rb.offset_regs is not None:
        return _NOT_COVERED
    try:
        prof = resolve_profile(profile)
    except Exception:
        return _NOT_COVERED
    got = semantics.element_kernel(rb, prof, KINDS)
    if got is None:
        return _NOT_COVERED
    k, raw = got
    try:
        dest = preflight._dest(rb, None)
    except IllegalBlockException:
        return _NOT_COVERED               # today's path raises the CAPACITY rejection, every time
    if element_dtype(dest) != raw or dest.Layout != 0:
        return _NOT_COVERED
    return Program(rb, dest, k, prof)
