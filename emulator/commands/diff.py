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


def run(args) -> int:
    from emulator.machine import load_machines
    from emulator.stateio import StateFileError
    try:
        ma, mb = load_machines(args.a), load_machines(args.b)
    except StateFileError as exc:
        raise CommandError(str(exc), EXIT_TROUBLE) from None
    if args.first:
        from emulator.cosim import first_state_difference
        line = first_state_difference(ma, mb)
        print(line if line else f"{args.a} and {args.b}: same state")
        return EXIT_DIFFERENT if line else EXIT_SAME
    lines = []
    if ma[0].config != mb[0].config:
        lines.append(f"config {ma[0].config} != {mb[0].config}")
    if len(ma) != len(mb):
        lines.append(f"A holds {len(ma)} machine(s), B {len(mb)}; comparing the first {min(len(ma), len(mb))}")
    many = max(len(ma), len(mb)) > 1
    for k, (a, b) in enumerate(zip(ma, mb)):
        lines += [f"machine {k}: {line}" if many else line for line in differences(a, b, args.max)]
    if not lines:
        print(f"{args.a} and {args.b}: same state")
        return EXIT_SAME
    print("\n".join(lines))
    return EXIT_DIFFERENT
