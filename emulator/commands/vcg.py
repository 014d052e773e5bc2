"""`tile-emu vcg`: compile a VCG mapping; print the VcgConfig and the valid_size heatmap.

    tile-emu vcg --axes "R=44,X=64" --slice "R # 48 / 8 # 8, X" --time "R # 48 / 2 % 4" \
                 --packet "R # 48 % 2" --reduce R [--json] [--heatmap out.png]
    tile-emu vcg --mapping examples/vcg/hcw.json
"""
from __future__ import annotations

import json
import sys

from emulator.cli import CommandError
from emulator.commands import cannot_write, distinct_paths, output_path
from isa.atomicio import shown
from fabric.vcg.config import AUTO
from fabric.vcg.errors import MappingError, VcgError
from fabric.vcg.heatmap import render_text, write_png
from fabric.vcg.spec import SpecError, load_spec, spec_from_dict
from fabric.vcg.valid import valid_size_matrix

MAX_JSON_CELLS = 1 << 24


def add_arguments(parser):
    parser.add_argument("--mapping", metavar="M.json", help="mapping file (docs/vcg.md); replaces --axes ... --reduce")
    parser.add_argument("--axes", help='axis declarations, e.g. "R=43,X=64" or "A = 8, R = 12"')
    parser.add_argument("--slice", default="1", help='Slice expression, e.g. "R # 48 / 8, X" (default 1)')
    parser.add_argument("--time", default="1", help="Time expression (default 1)")
    parser.add_argument("--packet", default="1", help="Packet expression (default 1)")
    parser.add_argument("--reduce", help="REDUCE_LABEL: the axis the intra-slice reduce eliminates")
    parser.add_argument("--track", default=AUTO,
                        help="extra padded axes given time filters: auto (default), none, or A,B")
    parser.add_argument("--narrow", choices=("auto", "trim", "split"), default="auto",
                        help="narrow applied before the reduce (checks vector_narrow_trim's v <= 4)")
    parser.add_argument("--json", action="store_true",
                        help="print config and the full valid_size[slice][time] matrix as JSON")
    parser.add_argument("--heatmap", type=output_path, metavar="OUT.png", help="also write the heatmap as a PNG")
    parser.add_argument("--cell", type=int, default=8, help="PNG pixels per flit (default 8)")
    parser.add_argument("--max-cols", type=int, default=64,
                        help="wider than this many slices the text heatmap shows slice classes")


def _spec(args):
    if args.mapping:
        if args.axes or args.reduce:
            raise CommandError("give either --mapping or --axes/--reduce, not both", 2)
        return load_spec(args.mapping)
    if not args.axes or not args.reduce:
        raise CommandError("--axes and --reduce are required (or --mapping M.json)", 2)
    track = args.track
    if track not in (AUTO,):
        track = [] if track.strip() in ("", "none") else [a.strip() for a in track.split(",")]
    return spec_from_dict({"axes": args.axes, "slice": args.slice, "time": args.time,
                           "packet": args.packet, "reduce": args.reduce, "narrow": args.narrow,
                           "track": track})


def run(args) -> int:
    distinct_paths({"--mapping": args.mapping}, {"--heatmap": args.heatmap})
    where = f"{shown(args.mapping)}: " if args.mapping else ""   # SpecErrors name the file already
    try:
        spec = _spec(args)
        cfg = spec.compile()
    except MappingError as exc:
        print(exc.caret(), file=sys.stderr)
        raise CommandError(f"{where}{exc}") from None
    except VcgError as exc:
        raise CommandError(f"{where}{exc}") from None
    except SpecError as exc:
        raise CommandError(str(exc)) from None
    m = spec.mapping
    try:
        vs = valid_size_matrix(cfg, m.num_slices, m.num_steps)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    if args.heatmap is not None:
        try:
            write_png(args.heatmap, vs, max(1, args.cell))
        except (OSError, ValueError) as exc:   # ValueError: OutputPathError, or too many pixels
            raise CommandError(cannot_write(args.heatmap, exc)) from None
    if args.json:
        if vs.size > MAX_JSON_CELLS:
            raise CommandError(f"{vs.shape[0]} x {vs.shape[1]} flits is too many for --json "
                               f"(limit {MAX_JSON_CELLS}); use --heatmap")
        json.dump({"mapping": spec.to_dict(), "config": cfg.to_dict(),
                   "num_slices": m.num_slices, "num_steps": m.num_steps,
                   "valid_size": vs.tolist()}, sys.stdout, separators=(",", ":"))
        sys.stdout.write("\n")
        return 0
    print(f"mapping: {m}  reduce {spec.reduce}  narrow {spec.narrow}")
    print(cfg.format())
    print()
    print(render_text(cfg, m, vs, spec.reduce, max_cols=max(1, args.max_cols)))
    if args.heatmap:
        print(f"heatmap written to {args.heatmap}")
    return 0
