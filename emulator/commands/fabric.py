"""`tile-emu fabric check FILE` and `tile-emu fabric format FILE`.

check:  load a fabric description (docs/fabric-format.md), verify every fabric.op, FU
        topology and the optional mapping, then print each op's ResolvedFabricOpCapabilityView
        (family, enabled schemas, typed hw_params, ports, resource contract, semantic-field
        relation with its canonical keys or direct carrier layout) and the configured
        projection.  Invalid descriptions print one diagnostic per line on stderr and exit 1.
format: print the description's canonical text (exit 1 when it does not load).
"""
from __future__ import annotations

import sys

from emulator.cli import CommandError
from isa.atomicio import shown


def add_arguments(parser):
    parser.add_argument("action", choices=["check", "format"], help="check: verify and print capabilities; "
                                                                    "format: print canonical text")
    parser.add_argument("file", help="fabric description (.json)")
    parser.add_argument("-q", "--quiet", action="store_true", help="check: print nothing on success")
    parser.add_argument("--full-keys", action="store_true", help="check: print complete canonical key bytes")


def run(args) -> int:
    from fabric.errors import FormatError
    from fabric.io import dump, load
    from fabric.view import check_fabric, render

    try:
        f = load(args.file)
    except FormatError as exc:
        where = "" if exc.path == str(args.file) else f"{shown(exc.path)}: "
        raise CommandError(f"{shown(args.file)}: {where}{exc.reason}", 1) from None
    if args.action == "format":
        sys.stdout.write(dump(f))
        return 0
    rep = check_fabric(f)
    if not args.quiet or not rep.ok:
        print("\n".join(render(rep, args.full_keys)))
    for d in rep.diagnostics:
        print(f"tile-emu fabric: {shown(args.file)}: {d}", file=sys.stderr)
    if not rep.ok:
        print(f"tile-emu fabric: {shown(args.file)}: invalid ({len(rep.diagnostics)} diagnostic(s))", file=sys.stderr)
        return 1
    return 0
