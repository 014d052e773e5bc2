"""`tile-emu fabric check FILE` and `tile-emu fabric format FILE`.

check:  load a fabric description (docs/fabric-format.md), verify every fabric.op, FU
        topology and the optional mapping, then print each op's ResolvedFabricOpCapabilityView
        (family, enabled schemas, typed hw_params, ports, resource contract, semantic-field
        relation with its canonical keys or direct carrier layout) and the configured
        projection.  Invalid descriptions print one diagnostic per line on stderr and exit 1.
format: print the description's canonical text (exit 1 when it does not load).
sim:    `tile-emu fabric sim GRAPH --fabric FABRIC --cycles N [--trace out.arrow] [--vcd out.vcd]
        [--engine auto|reference|compiled] [--instances N]` runs a dataflow graph
        (docs/fabric-graph.md) on the configured fabric with the cycle-level simulator
        (fabric/sim/) and prints the engine that ran, the outputs, the cycle count and
        per-resource fire/stall counts (per instance with --instances); a rejected graph, a
        deadlock or a fault is one line on stderr and exit 1.
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
    parser.add_argument("--engine", choices=["auto", "reference", "compiled"], default="auto",
                        help="sim: the compiled engine (auto: whenever the graph is within it) or the reference one")
    parser.add_argument("--instances", type=int, default=1,
                        help="sim: run N instances of the graph in one batch, each with its own input streams "
                             "(an input's instance_tokens list i mod K)")
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


OUTPUT_TOKEN_BYTES = 64          # memory per collected output token (list slot, int object)
MAX_OUTPUT_BYTES = 2 << 30


def _size(n: int) -> str:
    """A byte count for a message: exact below 1 KiB, else in the largest binary unit."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} bytes"


def _room(kind: str, path) -> int:
    """The bytes a trace written to `path` may take: the free space of its folder (an existing
    device such as /dev/null takes none) within MAX_TRACE_BYTES; or a CommandError saying in one
    line why nothing can be written there."""
    import os
    import shutil

    from fabric.sim.trace import MAX_TRACE_BYTES

    what = f"the {'trace' if kind == 'arrow' else 'waveform'} {quote(path)}"
    try:
        check_output_path(path)
    except OutputPathError as exc:
        raise CommandError(str(exc), 1) from None
    if os.path.exists(path) and not os.path.isfile(path):
        return MAX_TRACE_BYTES          # a device or FIFO: written in place, no disk space used
    folder = os.path.dirname(os.path.abspath(path)) or "."
    try:
        st = os.statvfs(folder)
        free = shutil.disk_usage(folder).free
    except OSError as exc:
        raise CommandError(f"cannot write {what}: {quote(folder)}: {why(exc)}", 1) from None
    if st.f_blocks == 0:
        raise CommandError(f"cannot write {what}: its folder {quote(folder)} is on a filesystem without "
                           f"storage (such as /proc or /sys), not a regular filesystem", 1)
    if not os.access(folder, os.W_OK) or st.f_flag & os.ST_RDONLY:
        raise CommandError(f"cannot write {what}: its folder {quote(folder)} is not writable", 1)
    return min(MAX_TRACE_BYTES, free)


STATE_BYTES_PER_ACTOR = 256       # the kernel's per-instance state of one actor, values of one word
MAX_STATE_BYTES = 4 << 30


def _check_budget(args, g, engine: str) -> None:
    """Refuse before starting when the run is past the engine's budget or its state, trace,
    waveform or outputs cannot fit."""
    from fabric.sim.engine import MAX_ACTOR_CYCLES, MAX_COMPILED_ACTOR_CYCLES, MAX_CYCLES, MAX_INSTANCES
    from fabric.sim.semantics import words

    n, m = args.cycles, args.instances
    if n is None:
        raise CommandError("sim needs --cycles N (the cycle limit)", 2)
    if not 1 <= n <= MAX_CYCLES:
        raise CommandError(f"--cycles {n} is outside [1, 2^{MAX_CYCLES.bit_length() - 1}]", 2)
    if not 1 <= m <= MAX_INSTANCES:
        raise CommandError(f"--instances {m} is outside [1, 2^{MAX_INSTANCES.bit_length() - 1}]", 2)
    budget = MAX_COMPILED_ACTOR_CYCLES if engine == "compiled" else MAX_ACTOR_CYCLES
    work = n * max(1, len(g.actors)) * m
    if work > budget:
        what = f"{n} cycles of {len(g.actors)} actor(s)" + (f" in {m} instances" if m > 1 else "")
        raise CommandError(f"--cycles {n}: {what} exceed the {engine} engine's budget of "
                           f"2^{budget.bit_length() - 1} actor-cycles per run; lower --cycles"
                           + (" or --instances" if m > 1 else ""), 2)
    nw = words(max([1] + [e.width for e in g.edges])) + 1       # a tag may add a word
    state = m * (STATE_BYTES_PER_ACTOR * nw * max(1, len(g.actors)) + 16 * nw * len(g.edges))
    if state > MAX_STATE_BYTES:
        raise CommandError(f"--instances {m}: the simulator state of {m} instance(s) could need {_size(state)}, "
                           f"more than the {_size(MAX_STATE_BYTES)} limit; lower --instances", 2)
    widths = [e.width for e in g.edges]
    for kind, path in (("arrow", args.trace), ("vcd", args.vcd)):
        if path is None:
            continue
        from fabric.sim.trace import MAX_TRACE_BYTES, estimate_bytes     # imports pyarrow: only when tracing
        room = _room(kind, path)
        need = estimate_bytes(kind, n, len(g.actors), widths, m)
        if need > room:
            limit = (f"the trace limit of {_size(room)}" if room == MAX_TRACE_BYTES
                     else f"the {_size(room)} free in its folder (trace limit {_size(MAX_TRACE_BYTES)})")
            raise CommandError(f"--cycles {n}: the {'trace' if kind == 'arrow' else 'waveform'} {quote(path)} could "
                               f"need {_size(need)}, more than {limit}; lower --cycles"
                               + (" or --instances" if m > 1 else ""), 2)
    # an output takes at most one token per cycle in which it is ready: every k-th cycle
    tokens = m * sum(-(-n // every) for _, every, _ in g.outputs)
    if tokens * OUTPUT_TOKEN_BYTES > MAX_OUTPUT_BYTES:
        raise CommandError(f"--cycles {n}: the outputs of {len(g.outputs)} stream(s) could collect {tokens} "
                           f"tokens, {_size(tokens * OUTPUT_TOKEN_BYTES)}, more than the "
                           f"{_size(MAX_OUTPUT_BYTES)} limit; lower --cycles", 2)


def _fmt_token(v) -> str:
    return "[" + ", ".join(map(str, v)) + "]" if isinstance(v, tuple) else str(v)


def run_sim(args) -> int:
    import contextlib

    from fabric.errors import FormatError
    from fabric.io import load
    from fabric.sim.engine import Simulator, resolve_engine
    from fabric.sim.graph import GraphError, load_graph
    from isa.atomicio import atomic_path

    # the trace writers (and pyarrow, about a tenth of a second to import) only for a run that
    # writes a trace or a waveform: a plain run's start-up is issue 32 target 8's figure
    tracing = args.trace is not None or args.vcd is not None
    if tracing:
        import pyarrow as pa

        from fabric.sim.trace import ArrowTrace, TraceWriteError, VcdTrace, fan_out
        write_errors = (OSError, pa.ArrowException)
    else:
        class TraceWriteError(Exception):      # never raised without a trace: the except below stays valid
            pass
        write_errors = (OSError,)

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
    engine = resolve_engine(args.engine)
    _check_budget(args, g, engine)
    try:
        sim = Simulator(g, engine, args.instances, g.streams(args.instances))
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
            results = sim.run_all(args.cycles, fan_out(*tracers) if tracing else None)
    except OutputPathError as exc:
        raise CommandError(str(exc), 1) from None
    except TraceWriteError as exc:
        path = args.trace if exc.kind == "trace" else args.vcd
        raise CommandError(f"cannot write the {exc.kind} {quote(path)}: {why(exc.error)}", 1) from None
    except write_errors as exc:   # creating or renaming the temporary file
        paths = " and ".join(quote(p) for p in (args.trace, args.vcd) if p is not None)
        raise CommandError(f"cannot write {paths}: {why(exc)}", 1) from None
    print(f"graph {g.name} on fabric {f.name}: {len(g.actors)} actor(s), {len(g.edges)} edge(s)")
    print(f"engine: {engine}" + (f", {args.instances} instances" if args.instances > 1 else ""))
    many = len(results) > 1
    for k, res in enumerate(results):
        at = f"instance {k}: " if many else ""
        print(f"{at}status: {res.status}, {res.cycles} cycle(s)" + (
            f" ({res.message})" if res.message and res.status in ("complete", "cycle_limit") else ""))
        for name, toks in res.outputs.items():
            print(f"{at}output {name}: {len(toks)} token(s): [{', '.join(_fmt_token(v) for v in toks)}]")
    w = max([8] + [len(a.name) for a in g.actors])
    print(f"{'resource':<{w}}  {'family':<24} {'fires':>8} {'stalls':>8} {'waits':>8}"
          + ("   (all instances)" if many else ""))
    for a in g.actors:
        c = [r.counters[a.name] for r in results]
        print(f"{a.name:<{w}}  {a.family:<24} {sum(x.fires for x in c):>8} {sum(x.stalls for x in c):>8} "
              f"{sum(x.waits for x in c):>8}")
    for k, res in enumerate(results):
        if res.status in ("deadlock", "starved", "fault"):
            raise CommandError(f"{shown(args.file)}: " + (f"instance {k}: " if many else "") + res.message, 1)
    return 0
