"""`tile-emu diff A.arrow B.arrow`: compare two states tile by tile.

Exit status as cmp(1) and diff(1): 0 the states are equal, 1 they differ, 2 trouble (a file that
cannot be read or is not a valid state file, bad arguments), so a script can tell "different"
from "could not compare".  Files of many machines are compared machine by machine, each line
naming its machine.
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


def _first(args, fa, fb, a, b, count: int) -> int:
    """`--first`: the first difference, decoded (emulator.cosim), machines read a pair at a time."""
    from emulator import Machine
    from emulator.cosim import first_state_difference
    line = first_state_difference([a], [b])
    for k in range(1, count):
        if line:
            break
        ta, tb = fa.table(k), fb.table(k)
        if not ta.equals(tb, check_metadata=True):
            line = first_state_difference([Machine.from_state(fa.state(k, table=ta))],
                                          [Machine.from_state(fb.state(k, table=tb))], k)
    if not line and len(fa) != len(fb):
        line = f"machines: expected {len(fa)}, got {len(fb)}"
    print(line if line else f"{args.a} and {args.b}: same state")
    return EXIT_DIFFERENT if line else EXIT_SAME


def run(args) -> int:
    """Machines are read and compared a pair at a time (emulator.batchio.StateFile), each
    difference printed as found: memory for two machines whatever the files hold."""
    from emulator import Machine
    from emulator.batchio import StateFile
    from emulator.stateio import StateFileError
    try:
        fa, fb = StateFile(args.a), StateFile(args.b)
        count, many = min(len(fa), len(fb)), max(len(fa), len(fb)) > 1
        a, b = Machine.from_state(fa.state(0)), Machine.from_state(fb.state(0))
        lines = []
        if a.config != b.config:
            lines.append(f"config {a.config} != {b.config}")
        if len(fa) != len(fb):
            lines.append(f"A holds {len(fa)} machine(s), B {len(fb)}; comparing the first {count}")
        if args.first:
            return _first(args, fa, fb, a, b, count)
        differ = bool(lines)
        if lines:
            print("\n".join(lines))
        for k in range(count):
            if k:
                ta, tb = fa.table(k), fb.table(k)
                a = Machine.from_state(fa.state(k, table=ta))
                if ta.equals(tb, check_metadata=True):   # the same rows and PE entry: the same state
                    continue
                b = Machine.from_state(fb.state(k, table=tb))
            lines = [f"machine {k}: {line}" if many else line for line in differences(a, b, args.max)]
            if lines:
                print("\n".join(lines))
                differ = True
    except StateFileError as exc:
        raise CommandError(str(exc), EXIT_TROUBLE) from None
    except MemoryError:                   # an address-space limit below even two machines' needs
        raise CommandError(f"not enough memory to compare {shown(args.a)} and {shown(args.b)}", EXIT_TROUBLE) from None
    if not differ:
        print(f"{args.a} and {args.b}: same state")
        return EXIT_SAME
    return EXIT_DIFFERENT
