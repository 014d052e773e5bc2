"""A mutation score for the goldens: Yosys's `mutate` pass plants faults in a DUT, the default
golden flow must catch each one.

    python examples/rtl/mutate.py --dut alu                       # 100 mutants of the lane
    python examples/rtl/mutate.py --dut alu --count 400 --seed 3 --jobs 2 --json score.json
    python examples/rtl/mutate.py --dut alu --seed 1 --only 50,56,57               # just these mutants
    python examples/rtl/mutate.py --dut path/to/x.v --top x --bench tb_x --dataset DIR   # another DUT

The DUT is elaborated once (`prep -top TOP`); `mutate -list N -seed S` samples N mutations of
its cells (a port bit inverted, tied to 0 or 1, or XORed with another bit of the cell: modes
inv, const0, const1, cnot0, cnot1), and each mutant is written as a Verilog netlist
(`write_verilog`).  The golden datasets are generated once (run.py's default: every coverage
class and cross bin of the lane's partitions once; with --bench tb_machine run_machine.py's
default stream dataset) and every mutant runs the cocotb bench
against them, up to --jobs at a time (--only ID,... runs just those ids of the listing).  The
unmutated netlist runs first as the control: it must pass, and a mutant is killed when the bench
reports a failing case, breaks (an X on an output, a timeout), or drives fewer partitions or
lanes than the control (the mutant turned `supported` off).  The lane's bench (tb_alu) runs
through run.py itself (`run.simulate`, `run.report`): the same phases as `run.py --dut` -- the
port check, every illegal (instruction, DataType) pair and Function code driven with `supported`
required 0, then the cases -- and run.py's verdict, the partitions the control reports
unsupported declared.  Survivors are listed with Yosys's description of the mutation.

The bench (--bench, default tb_alu for the lane) is a cocotb test module that reads the
dataset folders from TB_DATASETS and writes JSON to TB_RESULT with `failure` (null when every
case matched), `error`, `partitions` and `lanes` (examples/rtl/tb_alu.py).

Exit status: 0 the run completed (the score is printed; survivors do not fail it), 1 the
control fails or a golden/simulation step broke, 2 bad arguments or a design Yosys cannot
read (or one with no mutation candidate), 3 Yosys, Icarus Verilog or cocotb is not installed.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _fail(message: str, status: int) -> int:
    print(f"mutate.py: {message}", file=sys.stderr)
    return status


def _run_py(script: str = "run.py"):
    """examples/rtl/run.py (or run_machine.py), loaded from its path (its default dataset and tool checks)."""
    name = "example_rtl_" + script[:-3]
    if name in sys.modules:
        return sys.modules[name]
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    spec = importlib.util.spec_from_file_location(name, HERE / script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def missing_yosys() -> str | None:
    return None if shutil.which("yosys") else "Yosys is not installed: apt-get install -y yosys"


def resolve_dut(dut: str) -> pathlib.Path | None:
    """A DUT name in examples/rtl (alu) or a Verilog file's path."""
    p = pathlib.Path(dut)
    if p.suffix == ".v" and p.is_file():
        return p.resolve()
    q = HERE / f"{dut}.v"
    return q if "/" not in dut and q.is_file() else None


# ------------------------------------------------------------------ Yosys
def _yosys(script: str, cwd: pathlib.Path, quiet: bool = True) -> tuple[int, str]:
    path = cwd / "script.ys"
    path.write_text(script)
    done = subprocess.run(["yosys", *(["-q"] if quiet else []), "-s", path.name], cwd=cwd, capture_output=True,
                          text=True)
    return done.returncode, done.stdout + done.stderr


def _first_error(log: str) -> str:
    for line in log.splitlines():
        if "ERROR" in line:
            return line.strip()
    lines = [x for x in log.splitlines() if x.strip()]
    return lines[-1].strip() if lines else "yosys failed without a message"


def parse_mutation(line: str) -> dict:
    """`mutate -mode M -module X -cell C ...` as {mode, module, cell, port, portbit, ...};
    `src` is a list (a cell has several source locations)."""
    words = shlex.split(line, posix=False)
    out: dict = {"src": []}
    for key, value in zip(words[1::2], words[2::2]):
        key = key.lstrip("-")
        if key == "src":
            out["src"].append(value)
        else:
            out[key] = int(value) if key in ("portbit", "ctrlbit", "wirebit") else value
    return out


def describe(m: dict) -> str:
    """One line: mode, module.cell port[bit] (wire), where in the source."""
    text = f"{m['mode']} {m['module']}.{m['cell']} port {m['port']}[{m['portbit']}]"
    if "ctrlbit" in m:
        text += f" (XOR with {'' if m['mode'] == 'cnot1' else 'not '}{m['port']}[{m['ctrlbit']}])"
    if "wire" in m:
        text += f", wire {m['wire']}[{m['wirebit']}]"
    if m["src"]:
        text += f", at {m['src'][0]}"
    return text


def make_mutants(source: pathlib.Path, top: str, count: int, seed: int, work: pathlib.Path):
    """(control netlist, [(mutation, netlist)]): the elaborated design and its mutants as Verilog
    files in `work`; a design Yosys cannot read is ValueError with Yosys's one-line reason."""
    design = work / "yosys"
    design.mkdir()
    local = design / re.sub(r"\s", "_", source.name)      # src tags name the file, without its folder
    shutil.copyfile(source, local)
    rc, log = _yosys(f"read_verilog -I {shlex.quote(str(source.parent))} {local.name}\n"
                     f"prep -top {top}\nwrite_rtlil base.il\nwrite_verilog -noattr control.v\n"
                     f"mutate -list {count} -seed {seed} -o list.txt\n", design)
    if rc:
        raise ValueError(f"yosys cannot read {source.name} (top {top}): {_first_error(log)}")
    lines = [x for x in (design / "list.txt").read_text().splitlines() if x.startswith("mutate ")]
    if not lines:
        raise ValueError(f"yosys found no mutation candidate in {source.name} (top {top})")
    script = ["read_rtlil base.il", "design -save base"]
    mutants = []
    for k, line in enumerate(lines):
        out = f"mutant{k:04d}.v"
        script += ["design -load base", line, f"write_verilog -noattr {out}"]
        mutants.append((parse_mutation(line) | {"line": line}, design / out))
    rc, log = _yosys("\n".join(script) + "\n", design)
    if rc:
        raise ValueError(f"yosys could not apply its own mutations: {_first_error(log)}")
    return design / "control.v", mutants


def prove(work: pathlib.Path, line: str, equiv: pathlib.Path, timeout: int) -> str:
    """Whether a mutation is equivalent under the assertions of `equiv` (a wrapper module that
    instantiates `gold` and `gate`, the elaborated design and its mutant): Yosys's SAT solver over
    two clock steps.  `opt` first merges the cells the two copies share (the same cell of the
    same inputs), so the solver sees only the mutated cone.  "equivalent" (no counterexample), "differs" (one found) or "unknown" (the
    solver's timeout, in seconds)."""
    top = re.search(r"^\s*module\s+(\w+)", equiv.read_text(), re.M)
    if top is None:
        return "unknown"
    folder = pathlib.Path(tempfile.mkdtemp(prefix="prove-", dir=work))
    shutil.copyfile(equiv, folder / "equiv.sv")
    script = (f"read_rtlil {work / 'yosys' / 'base.il'}\nrename {top_of(line)} gold\n"
              f"read_rtlil {work / 'yosys' / 'base.il'}\n{line}\nrename {top_of(line)} gate\n"
              f"read_verilog -formal -sv equiv.sv\nprep -top {top.group(1)}\nflatten\nopt\n"
              f"sat -prove-asserts -seq 2 -prove-skip 1 -set-init-zero -timeout {timeout} {top.group(1)}\n")
    rc, log = _yosys(script, folder, quiet=False)      # the verdict is in the log
    shutil.rmtree(folder, ignore_errors=True)
    if "no model found: SUCCESS" in log:
        return "equivalent"
    if "model found: FAIL" in log:
        return "differs"
    return "unknown"


def top_of(line: str) -> str:
    return parse_mutation(line)["module"]


# ------------------------------------------------------------------ simulation
def simulate(source: pathlib.Path, top: str, bench: pathlib.Path, folders, build: pathlib.Path) -> dict:
    """Build `source` with Icarus Verilog and run the cocotb bench over the datasets (in this
    process): the bench's TB_RESULT, or {"error": ...} when it wrote none."""
    from cocotb_tools.runner import get_runner
    runner = get_runner("icarus")
    build.mkdir(parents=True, exist_ok=True)
    try:
        runner.build(sources=[source], hdl_toplevel=top, build_dir=build, timescale=("1ns", "1ps"),
                     log_file=build / "build.log")
    except SystemExit:
        tail = (build / "build.log").read_text(errors="replace").splitlines()[-3:] if (build / "build.log").exists() else []
        return {"error": "the netlist does not build: " + " / ".join(tail)}
    result = build / "result.json"
    env = {"TB_DATASETS": os.pathsep.join(str(f) for f in folders), "TB_RESULT": str(result),
           "PYTHONPATH": os.pathsep.join([str(bench.parent), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    os.environ.pop("PYTEST_CURRENT_TEST", None)     # see run.py: the verdict is ours, from TB_RESULT
    try:
        runner.test(hdl_toplevel=top, test_module=bench.stem, test_dir=bench.parent, build_dir=build, extra_env=env,
                    results_xml=str(build / "results.xml"), log_file=build / "sim.log")
    except SystemExit:
        pass
    if not result.is_file():
        return {"error": "the simulation wrote no result"}
    return json.loads(result.read_text())


def lane_bench(bench: pathlib.Path) -> bool:
    """Whether `bench` is run.py's own testbench (examples/rtl/tb_alu.py): then run.py runs it."""
    return bench.resolve() == (HERE / "tb_alu.py").resolve()


def simulate_lane(source: pathlib.Path, top: str, folders, build: pathlib.Path) -> dict:
    """The lane bench through run.py itself (`run.simulate`): the same phases as `run.py --dut`
    -- the port check, every illegal (instruction, DataType) pair driven with `supported` required
    0, then every case --, the bench's result or {"error": ...}."""
    run = _run_py()
    try:
        return run.simulate(source.stem, folders, build, source=source, top=top)
    except run.BuildError as exc:
        return {"error": f"the netlist does not build: {exc}"}
    except SystemExit:
        return {"error": "the simulation wrote no result"}


def run_verdict(r: dict, name: str, declared=()) -> tuple[int, str]:
    """run.py's verdict on a lane result (`run.report`: its exit status, and its first line of
    output), the partitions in `declared` declared unsupported (--expect-unsupported)."""
    import contextlib
    import io
    text = io.StringIO()
    with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
        status = _run_py().report(name, r, list(declared), (), None)
    first = next((x.strip() for x in text.getvalue().splitlines() if x.strip()), "")
    return status, first.removeprefix("run.py: ")


def _simulate_child(args: list[str]) -> int:
    """`mutate.py --simulate SOURCE TOP BENCH BUILD DATASET...`: one simulation in a process of
    its own (cocotb's runner changes the environment); the result goes to BUILD/verdict.json."""
    source, top, bench, build, *folders = args
    if lane_bench(pathlib.Path(bench)):
        r = simulate_lane(pathlib.Path(source), top, folders, pathlib.Path(build))
    else:
        r = simulate(pathlib.Path(source), top, pathlib.Path(bench), folders, pathlib.Path(build))
    (pathlib.Path(build) / "verdict.json").write_text(json.dumps(r))
    return 0


def run_one(source: pathlib.Path, top: str, bench: pathlib.Path, folders, build: pathlib.Path, timeout: float) -> dict:
    build.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--simulate", str(source), top, str(bench),
           str(build), *map(str, folders)]
    start = time.monotonic()
    try:
        subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=build)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s", "seconds": time.monotonic() - start}
    verdict = build / "verdict.json"
    r = json.loads(verdict.read_text()) if verdict.is_file() else {"error": "the simulation process died"}
    r["seconds"] = time.monotonic() - start
    return r


def judge(r: dict, control: dict, lane: bool = False, name: str = "dut") -> tuple[str, str]:
    """(killed | survived, why) of a mutant's result against the control's.  With the lane bench
    (`lane`) run.py's verdict decides first (the partitions the control reports unsupported
    declared): a port mismatch, `supported` = 1 for an illegal pair, an undeclared unsupported
    partition or a failing case kill the mutant as they fail `run.py --dut`."""
    if r.get("error"):
        return "killed", f"bench error: {r['error']}"
    if lane:
        status, first = run_verdict(r, name, control.get("unsupported", ()))
        if status and not r.get("failure"):
            return "killed", first
    if r.get("claims"):
        return "killed", f"supported = 1 for illegal pair(s) {', '.join(r['claims'][:4])}"
    if r.get("failures"):                    # tb_machine's protocol: a list of failing streams
        f = r["failures"][0]
        return "killed", "; ".join(f"{k} {f[k]}" for k in ("case", "block", "difference") if k in f)[:300]
    if r.get("errors"):
        return "killed", f"bench error: {r['errors'][0]}"[:300]
    f = r.get("failure")
    if f:
        where = f"case {f.get('case')} ({f.get('class')}) of {f.get('op')} {f.get('dtype')}, PE {f.get('pe')}"
        return "killed", f"{where}: expected {f.get('expected')}, got {f.get('got')}"
    lost = sorted(set(control.get("partitions", [])) - set(r.get("partitions", [])))
    if lost:
        return "killed", f"reports {len(lost)} partition(s) unsupported, e.g. {lost[0]}"
    if r.get("lanes", 0) < control.get("lanes", 0):
        return "killed", f"drove {r.get('lanes')} lanes of the control's {control.get('lanes')}"
    if r.get("blocks", 0) < control.get("blocks", 0):
        return "killed", f"ran {r.get('blocks')} blocks of the control's {control.get('blocks')}"
    return "survived", ""


# ------------------------------------------------------------------ command line
def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--simulate"]:
        return _simulate_child(argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dut", required=True, help="a DUT in examples/rtl (alu) or a Verilog file")
    p.add_argument("--top", help="the top module (default: the DUT file's name)")
    p.add_argument("--bench", help="the cocotb test module, a name in examples/rtl or a .py file (default tb_alu)")
    p.add_argument("--dataset", action="append", default=[],
                   help="a golden dataset folder (repeatable; default: run.py's default datasets, generated once; "
                   "with --bench tb_machine run_machine.py's)")
    p.add_argument("--count", type=int, default=100, help="mutants to sample (default 100)")
    p.add_argument("--seed", type=int, default=1, help="Yosys's sampling seed (default 1)")
    p.add_argument("--only", metavar="ID,...", help="run only these mutants of the listing (the ids the report "
                   "prints, 0 to --count - 1)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="simulations at a time (default: the CPUs)")
    p.add_argument("--equiv", help="assertions of what the bench observes, over modules gold and gate: each "
                   "survivor is proved equivalent or not with Yosys's SAT solver (default for alu: alu_equiv.sv)")
    p.add_argument("--prove-timeout", type=int, default=300, help="seconds of SAT per survivor (default 300)")
    p.add_argument("--json", help="write the report (every mutant, its mutation and verdict) to this file")
    p.add_argument("--keep", action="store_true", help="keep the work folder (netlists, logs)")
    args = p.parse_args(argv)
    source = resolve_dut(args.dut)
    if source is None:
        return _fail(f"--dut {args.dut!r}: not a Verilog file nor a DUT in examples/rtl "
                     f"({', '.join(sorted(x.stem for x in HERE.glob('*.v')))})", 2)
    top = args.top or source.stem
    if top == "alu_bug" and args.top is None:
        top = "alu"
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", top):
        return _fail(f"--top {top!r}: not a Verilog module name", 2)
    bench_name = args.bench or "tb_alu"
    bench = pathlib.Path(bench_name) if bench_name.endswith(".py") else HERE / f"{bench_name}.py"
    if not bench.is_file():
        return _fail(f"--bench {bench_name!r}: no such cocotb test module", 2)
    bench = bench.resolve()
    equiv = args.equiv or (str(HERE / "alu_equiv.sv") if top == "alu" and args.bench in (None, "tb_alu") else None)
    if equiv is not None and not pathlib.Path(equiv).is_file():
        return _fail(f"--equiv {equiv!r}: no such file", 2)
    args.equiv = pathlib.Path(equiv).resolve() if equiv else None
    if args.prove_timeout <= 0:
        return _fail("--prove-timeout must be positive", 2)
    if args.count <= 0:
        return _fail("--count must be positive", 2)
    if args.jobs <= 0:
        return _fail("--jobs must be positive", 2)
    try:
        args.only = parse_only(args.only, args.count)
    except ValueError as exc:
        return _fail(str(exc), 2)
    if args.json:
        from isa.atomicio import OutputPathError, check_output_path
        try:
            check_output_path(args.json)
        except OutputPathError as exc:
            return _fail(f"--json: {exc}", 2)
    for d in args.dataset:
        if not pathlib.Path(d).is_dir():
            return _fail(f"--dataset {d!r}: not a folder", 2)
    need = missing_yosys()
    if need:
        return _fail(need, 3)
    work = pathlib.Path(tempfile.mkdtemp(prefix=f"mutate-{top}-"))
    try:
        return _score(args, source, top, bench, work)
    finally:
        if args.keep:
            print(f"work folder: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def check_datasets(folders) -> str | None:
    """A damaged dataset is one line before any simulation: stream datasets (tile-emu golden
    --streams, for a bench such as tb_machine) through the stream reader, the others through
    run.py's check."""
    from emulator.golden.dataset import GoldenError
    from emulator.golden.streams_dataset import is_stream_dataset, open_stream_dataset
    for f in folders:
        try:
            if is_stream_dataset(f):
                open_stream_dataset(f)
                continue
        except GoldenError as exc:
            return f"--dataset {f}: {exc}"
        bad = _run_py().check_datasets([f])
        if bad:
            return bad
    return None


def parse_only(text: str | None, count: int) -> list[int] | None:
    """--only ID,...: mutant ids of the listing, each below --count (ValueError naming the first
    that is not)."""
    if text is None:
        return None
    out = []
    for item in (x.strip() for x in text.split(",")):
        if not item.isdigit() or int(item) >= count:
            raise ValueError(f"--only {item!r}: a mutant id from 0 to {count - 1} (--count {count})")
        out.append(int(item))
    return sorted(set(out))


def _score(args, source, top, bench, work) -> int:
    start = time.monotonic()
    try:
        control_v, listing = make_mutants(source, top, args.count, args.seed, work)
    except ValueError as exc:
        return _fail(str(exc), 2)
    mutants = [(k, m, v) for k, (m, v) in enumerate(listing) if args.only is None or k in args.only]
    if args.only is not None and len(mutants) < len(args.only):
        return _fail(f"--only: Yosys listed {len(listing)} mutant(s), ids {args.only[-1]} and above do not exist", 2)
    run = _run_py()
    need = run.missing_tools()
    if need:
        return _fail(need, 3)
    folders = [pathlib.Path(d).resolve() for d in args.dataset]
    bad = check_datasets(folders)
    if bad:
        return _fail(bad, 1)
    if not folders and bench.name == "tb_machine.py" and bench.parent == HERE:
        # run_machine.py's default dataset: the flow the machine's score measures
        m = _run_py("run_machine.py")
        d = {a.dest: a.default for a in m.parser()._actions}
        folders = [m.generate(work / "golden", d["cases"], d["blocks"], d["seed"], d["group_cases"],
                              d["illegal_fraction"])]
    elif not folders:
        folders = run.generate(work / "golden")
    # the smallest dataset first: a mutant stops at its first failing case, so one that breaks the
    # small partitions (E4M3 of the lane) is not kept waiting behind the large ones
    folders.sort(key=lambda f: sum(x.stat().st_size for x in pathlib.Path(f).rglob("*") if x.is_file()))
    golden_s = time.monotonic() - start
    control = run_one(control_v, top, bench, folders, work / "control", timeout=3600)
    lane = lane_bench(bench)
    status, first = run_verdict(control, top, control.get("unsupported", ())) if lane and not control.get("error") else (0, "")
    if (control.get("error") or control.get("failure") or control.get("failures") or control.get("errors")
            or not (control.get("lanes") or control.get("blocks")) or status):
        why = control.get("error") or (f"case {control['failure'].get('case')} fails" if control.get("failure")
                                       else judge(control, {})[1] if control.get("failures") or control.get("errors")
                                       else first or "no lane was driven")
        return _fail(f"the unmutated netlist of {top} does not pass the flow ({why}): no score", 1)
    timeout = max(120.0, 10 * control["seconds"])
    done = f"{control['cases']:,} cases" if "cases" in control else f"{control.get('blocks', 0):,} blocks"
    print(f"{top}: {len(mutants)} mutants of {source.name}; control passes {done} "
          f"in {control['seconds']:.1f} s; {args.jobs} at a time", file=sys.stderr)
    rows = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_one, v, top, bench, folders, work / f"m{k:04d}", timeout): (k, m)
                   for k, m, v in mutants}
        for fut in concurrent.futures.as_completed(futures):
            k, m = futures[fut]
            r = fut.result()
            verdict, why = judge(r, control, lane, top)
            rows.append({"id": k, "mutation": m, "description": describe(m), "verdict": verdict, "by": why,
                         "seconds": round(r["seconds"], 2)})
            shutil.rmtree(work / f"m{k:04d}", ignore_errors=True)
            if len(rows) % 10 == 0 and len(rows) < len(mutants):
                print(f"  {len(rows)}/{len(mutants)} run, {sum(x['verdict'] == 'killed' for x in rows)} killed",
                      file=sys.stderr, flush=True)
    rows.sort(key=lambda x: x["id"])
    killed = sum(r["verdict"] == "killed" for r in rows)
    survivors = [r for r in rows if r["verdict"] == "survived"]
    if args.equiv and survivors:
        print(f"{top}: proving {len(survivors)} survivor(s) against {args.equiv.name}", file=sys.stderr)
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            proofs = pool.map(lambda r: prove(work, r["mutation"]["line"], args.equiv, args.prove_timeout), survivors)
            for r, proof in zip(survivors, proofs):
                r["equivalence"] = proof
    equivalent = sum(r.get("equivalence") == "equivalent" for r in survivors)
    seconds = time.monotonic() - start
    report = {"dut": str(source), "top": top, "bench": bench.stem, "datasets": [str(f) for f in args.dataset],
              "count": args.count, "seed": args.seed, "only": args.only, "jobs": args.jobs, "total": len(rows), "killed": killed,
              "survived": len(survivors), "equivalent": equivalent if args.equiv else None,
              "equiv": str(args.equiv) if args.equiv else None, "seconds": round(seconds, 1), "golden_seconds": round(golden_s, 1),
              "control_seconds": round(control["seconds"], 1), "mutants": rows}
    proved = f"; {equivalent} proved equivalent, score {killed}/{len(rows) - equivalent}" if args.equiv else ""
    print(f"{top}: {killed}/{len(rows)} mutants killed, {len(survivors)} survived "
          f"({100 * killed / len(rows):.1f}%){proved} in {seconds:.0f} s")
    for r in survivors:
        tag = f" [{r['equivalence']}]" if "equivalence" in r else ""
        print(f"  survived #{r['id']}{tag}: {r['description']}")
    if args.json:
        from isa.atomicio import atomic_open
        with atomic_open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
