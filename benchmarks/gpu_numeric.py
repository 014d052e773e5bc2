"""GPU check of the numeric layer: every element-wise (op, DataType, profile) -- every profile of
kernels/numeric/profiles.py, a5 included -- and every TCVT pair (and every pair a profile gives a
rule of its own, in every mode) computed on the device, compared bit for bit (bits, flags, shape,
dtype) with the CPU path, then the GPU benchmark cases of `tile-emu bench --backend gpu`.

    python benchmarks/gpu_numeric.py [--n N] [--out DIR] [--no-bench]   # on a GPU machine
    NUMBA_ENABLE_CUDASIM=1 python benchmarks/gpu_numeric.py --n 64 --no-bench   # anywhere

Operands: n random codes of the DataType (every class: NaNs, infinities, subnormals) plus its
special and boundary codes.  On the device the public API runs on CuPy arrays; under the CUDA
simulator (no CuPy) the same device code runs on NumPy arrays (xp=numpy).  Operations the device
layer computes on the host (kernels/numeric/cuda.py, `placement`) are checked on fewer elements:
only their copy-down/copy-back glue is new there.  TEXP/TLOG/TRSQRT need gmpy2; without it they
are reported as skipped.  Writes gpu_numeric.json and gpu_numeric.txt to --out (default $OUT,
else the current folder); exits 1 if any bit differs.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time

import numpy as np

from isa import datatypes as dts
from isa import instructions as instrs
from isa.atomicio import atomic_open
from kernels import device
from kernels.numeric import cuda as kcuda
from kernels.numeric import fastconvert, formats
from kernels.numeric.profiles import PROFILES

E = importlib.import_module("kernels.numeric.elementwise")
CV = importlib.import_module("kernels.numeric.convert")
NEEDS_MPFR = {"TEXP", "TLOG", "TRSQRT"}


def special_codes(dt) -> list[int]:
    """Zeros, ones, boundaries, infinities and NaNs of a DataType, in its container."""
    if dt.is_int:
        n = dt.bits
        return [0, 1, 2, (1 << (n - 1)) - 1, 1 << (n - 1), (1 << (n - 1)) + 1, (1 << n) - 1, (1 << n) - 2]
    f = formats.FORMATS[dt.name]
    if f.family != "ieee":
        return list(range(min(1 << f.width, 256)))[:: max(1, (1 << f.width) // 64)] + [(1 << f.width) - 1]
    top = (1 << f.ebits) - 1
    mags = [0, 1, 2, (1 << f.t) - 1, 1 << f.t, (1 << f.t) + 1, f.bias << f.t, (f.bias << f.t) + 1,
            f.max_mag, top << f.t, (top << f.t) | 1, (top << f.t) | (1 << max(f.t - 1, 0))]
    sign = 1 << (f.width - 1)
    return [((m | s) & ((1 << f.width) - 1)) << f.shift for m in mags for s in (0, sign)]


def operands(dt, arity: int, n: int, rng) -> list[np.ndarray]:
    raw = np.dtype(dt.raw_dtype)
    mask = formats.field_mask(dt)
    edges = np.array(special_codes(dt), np.uint64) & np.uint64(mask)
    out = []
    for k in range(arity):
        r = rng.integers(0, 1 << (8 * raw.itemsize), n, dtype=np.uint64) & np.uint64(mask)
        e = edges if k == 0 else rng.permutation(edges)
        out.append(np.concatenate([e, r]).astype(raw))
    return out


class Device:
    """The device side: CuPy and the public API, or NumPy through the same device code."""

    def __init__(self):
        self.sim = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
        self.xp = np if self.sim else device._cupy()

    def put(self, x):
        return device.to_device(x, self.xp)

    def elementwise(self, op, dt, ops, prof, cmode):
        if self.sim:
            ins = instrs.lookup(op)
            return E._device_elementwise(ins, dt, E.TABLE[(op, dt.kind)], ops, prof, cmode, xp=np)
        from kernels import numeric
        return numeric.elementwise(op, dt.name, *ops, profile=prof, cmode=cmode)

    def convert(self, x, s, d, rm, sat, profile):
        prof = PROFILES[profile]
        if self.sim:
            return CV.convert_device(x, s, d, rm, sat, prof.ftz, np, prof.rule("TCVT", CV.pair(s, d)))
        from kernels import numeric
        return numeric.convert(x, s.name, d.name, rmode=rm, sat=sat, profile=profile)

    def sync(self):
        if not self.sim:
            self.xp.cuda.Device().synchronize()


def same(got, want) -> tuple[bool, str]:
    gb, gf = (device.to_host(x) for x in got)
    wb, wf = want
    if gb.shape != wb.shape or gb.dtype != wb.dtype:
        return False, f"shape/dtype {gb.shape} {gb.dtype} != {wb.shape} {wb.dtype}"
    bad = np.flatnonzero((gb != wb).ravel() | (gf != wf).ravel())
    if bad.size:
        i = int(bad[0])
        return False, (f"{bad.size} elements differ; first at {i}: got {int(gb.ravel()[i]):#x}/{int(gf.ravel()[i])}"
                       f" want {int(wb.ravel()[i]):#x}/{int(wf.ravel()[i])}")
    return True, ""


def check_elementwise(dev: Device, n: int, n_host: int, rng, records: list):
    have_mpfr = importlib.import_module("kernels.numeric.transcendental").gmpy2 is not None
    for op in sorted(E.OPERATIONS):
        ins = instrs.lookup(op)
        for dt in dts.DATATYPES:
            if dt.name not in ins.dtypes or (op, dt.kind) not in E.TABLE:
                continue
            for pname in (tuple(PROFILES) if dt.kind is dts.Kind.FLOAT else ("ieee",)):
                prof = PROFILES[pname]
                where = kcuda.placement(op, dt, prof, ins.arity)
                rec = {"check": "elementwise", "op": op, "dtype": dt.name, "profile": pname, "placement": where}
                if op in NEEDS_MPFR and not have_mpfr:
                    records.append({**rec, "skipped": "gmpy2 not installed"})
                    continue
                host = operands(dt, ins.arity, n if where != "host" else n_host, rng)
                for cmode in (("LT", "EQ") if op == "TCMP" else (None,)):
                    t0 = time.perf_counter()
                    with np.errstate(all="ignore"):
                        want = E.elementwise(op, dt.name, *host, profile=pname, cmode=cmode)
                    t_cpu = time.perf_counter() - t0
                    dops = [dev.put(x) for x in host]
                    dev.sync()
                    t0 = time.perf_counter()
                    got = dev.elementwise(op, dt, dops, prof, cmode)
                    dev.sync()
                    t_dev = time.perf_counter() - t0
                    ok, why = same(got, want)
                    records.append({**rec, "cmode": cmode, "elements": int(host[0].size), "bits_match_cpu": ok,
                                    "detail": why, "cpu_s": round(t_cpu, 4), "device_s_first_call": round(t_dev, 4)})


def check_convert(dev: Device, n: int, rng, records: list):
    for s in dts.DATATYPES:
        x = operands(s, 1, n, rng)[0]
        dx = dev.put(x)
        for d in dts.DATATYPES:
            wide = fastconvert.supports(s, d)
            modes = tuple(fastconvert.MODE_CODE) if wide else ("DEFAULT",)
            # every profile whose rule for the pair is not ieee's (a5: wrap, integral), in every mode
            ruled = [p for p in PROFILES if PROFILES[p].rule("TCVT", CV.pair(s, d)) != "ieee"]
            cases = [(m, sat, p) for m in modes
                     for sat, p in (((False, "ieee"), (True, "ieee"), (False, "ftz")) if wide else ((False, "ieee"),))]
            cases += [(m, False, p) for p in ruled for m in fastconvert.MODE_CODE]
            for mode, sat, pname in cases:
                prof = PROFILES[pname]
                rm = CV.resolve_rmode(mode, s, d)
                want = CV.convert_generic(x, s, d, rm, sat, prof.ftz, np, prof.rule("TCVT", CV.pair(s, d)))
                got = dev.convert(dx, s, d, rm, sat, pname)
                ok, why = same(got, want)
                records.append({"check": "convert", "src": s.name, "dst": d.name, "rmode": rm, "sat": sat,
                                "profile": pname, "elements": int(x.size), "bits_match_cpu": ok, "detail": why})


def benchmarks(n: int, repeat: int, records: list):
    from emulator.commands import bench
    for case in bench.GPU_CASES:
        r = bench.measure(case, n, repeat)
        r["fraction_of_copy_bandwidth"] = round(r["ratio"], 3)
        records.append({"check": "bench", **r})


def report(records, status, out_dir, wall):
    checks = [r for r in records if r["check"] != "bench"]
    bad = [r for r in checks if r.get("bits_match_cpu") is False]
    summary = {"device": status, "checks": len(checks), "mismatches": len(bad),
               "skipped": sum(1 for r in checks if "skipped" in r), "wall_s": round(wall, 1)}
    with atomic_open(os.path.join(out_dir, "gpu_numeric.json"), "w") as f:
        json.dump({"summary": summary, "records": records}, f, indent=1)
    lines = [f"device: {status}",
             f"{summary['checks']} differential checks, {len(bad)} mismatches, {summary['skipped']} skipped, "
             f"{summary['wall_s']} s"]
    lines += [f"MISMATCH {json.dumps(r)}" for r in bad]
    places = {}
    for r in checks:
        if r["check"] == "elementwise" and "placement" in r:
            places[r["placement"]] = places.get(r["placement"], 0) + 1
    lines.append("elementwise placements: " + ", ".join(f"{k} {v}" for k, v in sorted(places.items())))
    benches = [r for r in records if r["check"] == "bench"]
    if benches:
        lines.append(f"{'case':26} {'M elem/s':>10} {'copy-eq':>10} {'fraction':>9} {'target':>7}")
        for r in benches:
            lines.append(f"{r['case']:26} {r['elements_per_s'] / 1e6:10.1f} {r['baseline_elements_per_s'] / 1e6:10.1f} "
                         f"{r['ratio']:9.3f} {r['target'] or 0:7.2f}" + ("" if r["ratio"] >= (r["target"] or 0) else "  MISSED"))
    text = "\n".join(lines) + "\n"
    with atomic_open(os.path.join(out_dir, "gpu_numeric.txt"), "w") as f:
        f.write(text)
    print(text, end="")
    return not bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 20, help="random elements per device-computed check")
    ap.add_argument("--n-host", type=int, default=1 << 12, help="elements per host-placed check")
    ap.add_argument("--n-convert", type=int, default=1 << 18)
    ap.add_argument("--bench-n", type=int, default=1 << 24)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--out", default=os.environ.get("OUT") or ".")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    dev = Device()
    ok, why = device.gpu_status()
    if not ok and not dev.sim:
        print(f"gpu_numeric: no usable GPU ({why})", file=sys.stderr)
        return 2
    rng = np.random.default_rng(2026)
    records: list = []
    check_elementwise(dev, args.n, min(args.n, args.n_host), rng, records)
    check_convert(dev, min(args.n, args.n_convert), rng, records)
    if not args.no_bench and not dev.sim:
        benchmarks(args.bench_n, args.repeat, records)
    good = report(records, why, args.out, time.perf_counter() - t0)
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
