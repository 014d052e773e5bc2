"""`tile-emu reduce IN.arrow --mapping M.json --op AddSat --out OUT.arrow`: VCG-tagged
intra-slice reduce of an Arrow flit file (schemas and M.json in docs/vcg.md)."""
from __future__ import annotations

import sys

import numpy as np

from emulator.cli import UNAVAILABLE, CommandError
from emulator.commands import cannot_write, distinct_paths, output_path
from isa.atomicio import OutputPathError, shown
from fabric.vcg.arrow_io import FlitFileError, output_table, read_flits, write_table
from fabric.vcg.errors import MappingError, VcgError
from fabric.vcg.reduce import BACKENDS, OPS, backend_unavailable, check_op, plan_reduce, reduce_flits
from fabric.vcg.spec import SpecError, load_spec
from fabric.vcg.valid import valid_size_matrix


def add_arguments(parser):
    parser.add_argument("input", metavar="IN.arrow", help="input flits (Arrow IPC file)")
    parser.add_argument("--mapping", required=True, metavar="M.json", help="mapping file")
    parser.add_argument("--op", required=True, choices=sorted(OPS), help="reduce op")
    parser.add_argument("--out", required=True, type=output_path, metavar="OUT.arrow", help="output file")
    parser.add_argument("--backend", choices=BACKENDS, default="numba",
                        help="numba (CPU, default), numpy, cuda (Numba-CUDA), cupy; all give the same bits")
    parser.add_argument("--dtype", help="reinterpret same-width raw flit bits, e.g. float16 for uint16")


def run(args) -> int:
    distinct_paths({"IN.arrow": args.input, "--mapping": args.mapping}, {"--out": args.out})
    why = backend_unavailable(args.backend)
    if why is not None:                   # before reading anything: nothing is written
        raise CommandError(f"backend {args.backend}: {why}", UNAVAILABLE)
    try:
        spec = load_spec(args.mapping)
        cfg = spec.compile()
    except MappingError as exc:
        print(exc.caret(), file=sys.stderr)
        raise CommandError(f"{shown(args.mapping)}: {exc}") from None
    except SpecError as exc:              # names the file already
        raise CommandError(str(exc)) from None
    except VcgError as exc:
        raise CommandError(f"{shown(args.mapping)}: {exc}") from None
    m = spec.mapping
    try:
        x8, tagged = read_flits(args.input, args.dtype)
    except FlitFileError as exc:          # names the file already
        raise CommandError(str(exc)) from None
    try:
        check_op(args.op, x8.dtype)
    except (TypeError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    s, t = m.num_slices, m.num_steps
    if x8.shape[0] != s * t:
        raise CommandError(f"{shown(args.input)}: {x8.shape[0]} flits, but the mapping has "
                           f"{s} slices x {t} time steps = {s * t}")
    try:
        vs = valid_size_matrix(cfg, s, t).reshape(-1)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    if tagged is not None and not np.array_equal(tagged, vs):
        row = int(np.flatnonzero(tagged != vs)[0])
        raise CommandError(f"{shown(args.input)}: valid_size {int(tagged[row])} at row {row} (slice {row // t}, "
                           f"t = {row % t}) disagrees with the VCG's {int(vs[row])}")
    plan = plan_reduce(m, spec.reduce, spec.narrow)
    try:
        out, out_valid = reduce_flits(x8, vs, plan, args.op, args.backend)
    except (ImportError, TypeError) as exc:
        raise CommandError(f"backend {args.backend}: {exc}") from None
    out = np.asarray(out.get() if hasattr(out, "get") else out)
    out_valid = np.asarray(out_valid.get() if hasattr(out_valid, "get") else out_valid)
    meta = {"mapping": spec.to_dict(), "op": args.op, "dtype": str(x8.dtype)}
    try:
        write_table(args.out, output_table(out, out_valid, meta))
    except (OSError, OutputPathError) as exc:
        raise CommandError(cannot_write(args.out, exc)) from None
    print(f"{args.op} over {spec.reduce}: {s} slices x {t} steps of {x8.dtype} -> "
          f"{s} x {plan.out_steps} output flits ({spec.narrow}, {args.backend}) -> {args.out}")
    return 0
