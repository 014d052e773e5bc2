"""`tile-emu fabric check FILE` and `tile-emu fabric format FILE`.

check:  load a fabric description (docs/fabric-format.md), verify every fabric.op, FU
        topology and the optional mapping, then print each op's ResolvedFabricOpCapabilityView
        (family, enabled schemas, typed hw_params, ports, resource contract, semantic-field
        relation with its canonical keys or direct carrier layout) and the configured
        projection.  Invalid descriptions print one diagnostic per line on stderr and exit 1.
format: print the description's canonical text (exit 1 when it does not load).
sim:    `tile-emu fabric sim GRAPH --fabric FABRIC --cycles N [--trace out.arrow] [--vcd out.vcd]`
        runs a dataflow graph (docs/fabric-graph.md) on the configured fabric with the
        cycle-level simulator (fabric/sim/) and prints the outputs, the cycle count and
        per-resource fire/stall counts; a rejected graph, a deadlock or a fault is one line on
        stderr and exit 1.
"""
from __future__ import annotations

import sys

from emulator.cli import CommandError
from isa.atomicio import OutputPathError, check_output_path, quote, shown, why


def add_arguments(parser):
    parser.add_argument("action", choices=["check", "format", "sim"],
                        help="check: verify and print capabilities; format: print canonical text; "
                             "sim: run a dataflow graph on a configured fabric")
    parser.add_argument("file", help="fabric description (.json); for sim, the dataflow graph (.json)")
    parser.add_argument("--fabric", help="sim: the configured fabric description the graph runs on")
    parser.add_argument("--cycles", type=int, default=None, help="sim: cycle limit (required)")
    parser.add_argument("--trace", help="sim: write the per-cycle event trace as an Arrow IPC file")
    parser.add_argument("--vcd", help="sim: write a VCD waveform of valid/ready/data per edge")
    parser.add_argument("-q", "--quiet", action="store_true", help="check: print nothing on success")
    parser.add_argument("--full-keys", action="store_true", help="check: print complete canonical key bytes")


def run(args) -> int:
    from fabric.errors import FormatError
    from fabric.io import dump, load
    from fabric.view import check_fabric, render

    if args.action == "sim":
        return run_sim(args)
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


MAX_CYCLES = 1 << 40
OUTPUT_TOKEN_BYTES = 64          # memory per collected output token (list slot, int object)
MAX_OUTPUT_BYTES = 2 << 30


def _free_bytes(path) -> int:
    import os
    import shutil
    folder = os.path.dirname(os.path.abspath(path)) or "."
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return 0


def _check_budget(args, g) -> None:
    """Refuse before starting when the run's trace, waveform or outputs cannot fit."""
    from fabric.sim.trace import MAX_TRACE_BYTES, estimate_bytes

    n = args.cycles
    if n is None:
        raise CommandError("sim needs --cycles N (the cycle limit)", 2)
    if not 1 <= n <= MAX_CYCLES:
        raise CommandError(f"--cycles {n} is outside [1, 2^40]", 2)
    widths = [e.width for e in g.edges]
    for kind, path in (("arrow", args.trace), ("vcd", args.vcd)):
        if path is None:
            continue
        try:
            check_output_path(path)
        except OutputPathError as exc:
            raise CommandError(str(exc), 1) from None
        need = estimate_bytes(kind, n, len(g.actors), widths)
        room = min(MAX_TRACE_BYTES, _free_bytes(path))
        if need > room:
            raise CommandError(f"--cycles {n}: the {'trace' if kind == 'arrow' else 'waveform'} {quote(path)} could "
                               f"need {need >> 20} MiB, more than the {room >> 20} MiB available "
                               f"(limit {MAX_TRACE_BYTES >> 20} MiB); lower --cycles", 2)
    if n * len(g.outputs) * OUTPUT_TOKEN_BYTES > MAX_OUTPUT_BYTES:
        raise CommandError(f"--cycles {n}: the outputs of {len(g.outputs)} stream(s) could need "
                           f"{n * len(g.outputs) * OUTPUT_TOKEN_BYTES >> 20} MiB, more than the "
                           f"{MAX_OUTPUT_BYTES >> 20} MiB limit; lower --cycles", 2)


def _fmt_token(v) -> str:
    return "[" + ", ".join(map(str, v)) + "]" if isinstance(v, tuple) else str(v)


def run_sim(args) -> int:
    import contextlib

    import pyarrow as pa

    from fabric.errors import FormatError
    from fabric.io import load
    from fabric.sim.engine import Simulator
    from fabric.sim.graph import GraphError, load_graph
    from fabric.sim.trace import ArrowTrace, VcdTrace, fan_out
    from isa.atomicio import atomic_path

    if not args.fabric:
        raise CommandError("sim needs --fabric FABRIC (the configured fabric description)", 2)
    from emulator.commands import distinct_paths
    distinct_paths({"GRAPH": args.file, "--fabric": args.fabric}, {"--trace": args.trace, "--vcd": args.vcd})
    try:
        f = load(args.fabric)
    except FormatError as exc:
        where = "" if exc.path == str(args.fabric) else f"{shown(exc.path)}: "
        raise CommandError(f"{shown(args.fabric)}: {where}{exc.reason}", 1) from None
    try:
        g = load_graph(args.file, f)
    except FormatError as exc:
        where = "" if exc.path == str(args.file) else f"{shown(exc.path)}: "
        raise CommandError(f"{shown(args.file)}: {where}{exc.reason}", 1) from None
    except GraphError as exc:
        for d in exc.diagnostics[1:]:
            print(f"tile-emu fabric: {shown(args.file)}: {d}", file=sys.stderr)
        raise CommandError(f"{shown(args.file)}: {exc.diagnostics[0]}", 1) from None
    _check_budget(args, g)
    try:
        sim = Simulator(g)
    except GraphError as exc:
        raise CommandError(f"{shown(args.file)}: {exc.diagnostics[0]}", 1) from None
    try:
        with contextlib.ExitStack() as stack:
            tracers = []
            if args.trace is not None:
                tmp = stack.enter_context(atomic_path(args.trace, devices=False))  # the IPC file format seeks
                tr = ArrowTrace(tmp, sim)
                stack.callback(tr.close)  # runs before the rename: the file is complete when renamed
                tracers.append(tr)
            if args.vcd is not None:
                tmp = stack.enter_context(atomic_path(args.vcd))
                vc = VcdTrace(tmp, sim)
                stack.callback(vc.close)
                tracers.append(vc)
            res = sim.run(args.cycles, fan_out(*tracers))
    except OutputPathError as exc:
        raise CommandError(str(exc), 1) from None
    except (OSError, pa.ArrowException) as exc:
        raise CommandError(f"cannot write the trace: {why(exc)}", 1) from None
    print(f"graph {g.name} on fabric {f.name}: {len(g.actors)} actor(s), {len(g.edges)} edge(s)")
    print(f"status: {res.status}, {res.cycles} cycle(s)" + (f" ({res.message})" if res.message and res.status
                                                           in ("complete", "cycle_limit") else ""))
    for name, toks in res.outputs.items():
        print(f"output {name}: {len(toks)} token(s): [{', '.join(_fmt_token(v) for v in toks)}]")
    w = max([8] + [len(a.name) for a in g.actors])
    print(f"{'resource':<{w}}  {'family':<24} {'fires':>8} {'stalls':>8} {'waits':>8}")
    for a in g.actors:
        c = res.counters[a.name]
        print(f"{a.name:<{w}}  {a.family:<24} {c.fires:>8} {c.stalls:>8} {c.waits:>8}")
    if res.status in ("deadlock", "starved", "fault"):
        raise CommandError(f"{shown(args.file)}: {res.message}", 1)
    return 0
