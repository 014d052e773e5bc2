"""`tile-emu diff A.arrow B.arrow`: compare two states tile by tile.

Exit status as cmp(1) and diff(1): 0 the states are equal, 1 they differ, 2 trouble (a file that
cannot be read or is not a valid state file, bad arguments), so a script can tell "different"
from "could not compare".  Files of many machines are compared a block of machines at a time,
as whole arrays (emulator.batchscan); each pair of machines that differs is loaded and reported
by `differences`, each line naming its machine.
"""
from __future__ import annotations

import numpy as np

from emulator.cli import CommandError
from emulator.commands import count
from isa.atomicio import shown


EXIT_SAME, EXIT_DIFFERENT, EXIT_TROUBLE = 0, 1, 2


def add_arguments(parser):
    parser.epilog = (f"exit status: {EXIT_SAME} the states are equal, {EXIT_DIFFERENT} they differ, "
                     f"{EXIT_TROUBLE} error (unreadable or invalid state file, bad arguments)")
    parser.add_argument("a", help="state file (.arrow)")
    parser.add_argument("b", help="state file (.arrow)")
    parser.add_argument("--max", type=count, default=8, metavar="N", help="list at most N differing elements per tile")
    parser.add_argument("--first", action="store_true",
                        help="print only the first difference, decoded (emulator.cosim: machine, PE, tile, element)")


def differences(a, b, limit: int = 8) -> list[str]:
    """Human-readable differences between two machines' architectural state (empty = equal)."""
    out = []
    for p in range(a.config.num_pes):
        if a.status(p) != b.status(p):
            out.append(f"PE{p}: status {a.status(p):#x} != {b.status(p):#x}")
        for i in range(a.config.gpr_count):
            if a.gpr(p, i) != b.gpr(p, i):
                out.append(f"PE{p}: r{i} {a.gpr(p, i):#x} != {b.gpr(p, i):#x}")
        ta, tb = set(a.tiles(p)), set(b.tiles(p))
        for tid in sorted(ta - tb):
            out.append(f"PE{p} tile {tid}: only in A")
        for tid in sorted(tb - ta):
            out.append(f"PE{p} tile {tid}: only in B")
        for tid in sorted(ta & tb):
            va, vb = a.read_tile(p, tid), b.read_tile(p, tid)
            if va.desc != vb.desc:
                out.append(f"PE{p} tile {tid}: descriptor {va.desc.describe()} != {vb.desc.describe()}"
                           + ("" if va.desc.fmap == vb.desc.fmap else " (feature map differs)"))
                continue
            if va.payload == vb.payload and np.array_equal(va.defined, vb.defined):
                continue
            diff = (va.bits != vb.bits) | (va.defined != vb.defined)
            where = np.argwhere(diff)
            out.append(f"PE{p} tile {tid}: {len(where)} element(s) differ")
            for r, c in where[:limit]:
                fa = f"{int(va.bits[r, c]):#x}" if va.defined[r, c] else "undefined"
                fb = f"{int(vb.bits[r, c]):#x}" if vb.defined[r, c] else "undefined"
                out.append(f"    [{r},{c}] {fa} != {fb}")
            if va.payload != vb.payload and not (va.bits != vb.bits).any():
                out.append("    (payload bytes differ outside the logical elements)")
    return out


def same_machines(ba, bb, lo: int, hi: int) -> np.ndarray:
    """Per machine of [lo, hi) (validated blocks `ba` of A and `bb` of B covering it): True where
    the two states are equal by their rows -- the same (PE, tile) rows with equal descriptors,
    payload and definedness bytes -- and their PEs' GPRs and status.  Whole arrays at once; a
    machine found False may still hold an equal state written differently (`differences` then
    says nothing)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    ks = np.arange(lo, hi)
    sa = np.searchsorted(ba.machine, np.arange(lo, hi + 1))
    sb = np.searchsorted(bb.machine, np.arange(lo, hi + 1))
    na, nb = np.diff(sa), np.diff(sb)
    same = na == nb
    rows = np.repeat(np.flatnonzero(same), na[same])              # machines aligned row by row
    offset = np.arange(len(rows)) - np.repeat(np.cumsum(na[same]) - na[same], na[same])
    ra, rb = sa[rows] + offset, sb[rows] + offset
    eq = (ba.pe[ra] == bb.pe[rb]) & (ba.tile[ra] == bb.tile[rb])
    if len(ra):
        code = ba.desc[ra] * len(bb.descs) + bb.desc[rb]           # each pair of descriptors compared once
        kinds, which = np.unique(code, return_inverse=True)
        eq &= np.array([ba.descs[c // len(bb.descs)] == bb.descs[c % len(bb.descs)] for c in kinds.tolist()])[which]
        whole = len(ra) == len(ba) == len(bb) and ra[-1] == len(ra) - 1 and rb[-1] == len(rb) - 1  # row i with row i
        for col in ("payload", "defined"):
            a, b = getattr(ba, col), getattr(bb, col)
            if not whole:
                a, b = a.take(pa.array(ra)), b.take(pa.array(rb))
            eq &= pc.equal(a, b).to_numpy(zero_copy_only=False).astype(bool)
    bad = np.unique(rows[~eq])
    same[bad] = False
    for i in np.flatnonzero(same):                      # GPRs and status (one entry per machine)
        k = int(ks[i])
        if ba.texts[k - ba.first] != bb.texts[k - bb.first] and \
                (ba.status(k) != bb.status(k) or not np.array_equal(ba.gprs(k), bb.gprs(k))):
            same[i] = False
    return same


def _pairs(fa, fb, count: int):
    """(lo, hi, block of A, block of B) over machines [0, count) in order, both validated; the
    first invalid machine (A's before B's) raises its error after the ranges before it."""
    from emulator.batchscan import ranges, read, reader
    seen_a, seen_b = reader(fa), reader(fb)
    for lo, hi in ranges(fa, range(count)):
        ba, ea = read(fa, lo, hi, seen_a)
        bb, eb = read(fb, lo, hi, seen_b)
        stop, error = hi, None
        for blk, err in ((ba, ea), (bb, eb)):
            if err is not None:
                k = lo if blk is None else blk.stop
                if k < stop:
                    stop, error = k, err
        if stop > lo:
            yield lo, stop, ba, bb
        if error is not None:
            raise error


def _first(args, fa, fb, count: int) -> int:
    """`--first`: the first difference, decoded (emulator.cosim), machines compared a block at a
    time and the first differing pair loaded."""
    from emulator.cosim import first_state_difference
    from emulator.reference import ReferenceMachine as Machine     # reads states only: no engine
    line = None
    for lo, hi, ba, bb in _pairs(fa, fb, count):
        if lo == 0 and ba.config != bb.config:
            line = f"config: expected {ba.config}, got {bb.config}"
            break
        for i in np.flatnonzero(~same_machines(ba, bb, lo, hi)):
            k = lo + int(i)
            line = first_state_difference([Machine.from_state(fa.state(k))], [Machine.from_state(fb.state(k))], k)
            if line:
                break
        if line:
            break
    if not line and len(fa) != len(fb):
        line = f"machines: expected {len(fa)}, got {len(fb)}"
    print(line if line else f"{args.a} and {args.b}: same state")
    return EXIT_DIFFERENT if line else EXIT_SAME


def run(args) -> int:
    """Machines are read, checked and compared a block at a time (emulator.batchscan), as whole
    arrays; a pair of machines that differs is loaded and reported by `differences`, as found:
    memory for a block of each file whatever the files hold."""
    from emulator.batchio import StateFile
    from emulator.reference import ReferenceMachine as Machine     # reads states only: no engine
    from emulator.stateio import NotEnoughMemory, StateFileError
    try:
        fa, fb = StateFile(args.a), StateFile(args.b)
        count, many = min(len(fa), len(fb)), max(len(fa), len(fb)) > 1
        if args.first:
            return _first(args, fa, fb, count)
        differ = False
        for lo, hi, ba, bb in _pairs(fa, fb, count):
            if lo == 0:
                lines = []
                if ba.config != bb.config:
                    lines.append(f"config {ba.config} != {bb.config}")
                if len(fa) != len(fb):
                    lines.append(f"A holds {len(fa)} machine(s), B {len(fb)}; comparing the first {count}")
                if lines:
                    print("\n".join(lines))
                    differ = True
            for i in np.flatnonzero(~same_machines(ba, bb, lo, hi)):
                k = lo + int(i)
                a, b = Machine.from_state(fa.state(k)), Machine.from_state(fb.state(k))
                lines = [f"machine {k}: {line}" if many else line for line in differences(a, b, args.max)]
                if lines:
                    print("\n".join(lines))
                    differ = True
    except NotEnoughMemory:
        raise CommandError(f"not enough memory to compare {shown(args.a)} and {shown(args.b)}", EXIT_TROUBLE) from None
    except StateFileError as exc:
        raise CommandError(str(exc), EXIT_TROUBLE) from None
    except MemoryError:                   # an address-space limit below even two blocks' needs
        raise CommandError(f"not enough memory to compare {shown(args.a)} and {shown(args.b)}", EXIT_TROUBLE) from None
    if not differ:
        print(f"{args.a} and {args.b}: same state")
        return EXIT_SAME
    return EXIT_DIFFERENT
