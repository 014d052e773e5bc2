"""Fill Numba's on-disk cache with every compiled loop of the numeric layer, before timed work
(`tile-emu compile`; issue 32 target 5: "compile them before the timed work and say so").

A first run after install otherwise compiles each loop it meets inside its own work (about
0.75 s of CPU per specialisation; a first `tile-emu golden --streams` run took 15-20x its warm
time).  `precompile` runs every element-wise operation of every DataType under every profile,
and every conversion, on a few dozen elements holding zeros, subnormals, normals, infinities
and NaNs -- so the compiled tiers, their hand-offs (specials.settle_marked) and the conversion
loops all run once -- and with `parallel`, builds the parallel twin of every serial loop that
ran.  What it compiles is what the same calls in any later process load from the cache
(fast.Uniform compiles one body per dtype set, whether operands are read-only or not).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np


@dataclass
class Report:
    specialisations: int      # compiled loops' bodies in this process after the run (compiled or loaded)
    loops: int                # compiled loops (dispatchers) that hold at least one
    cases: int                # numeric calls made
    seconds: float


def _values(rng) -> np.ndarray:
    """64 binary64 values: every class of every format once rounded (zeros, subnormals, normals,
    overflow, infinities, NaNs) and random magnitudes."""
    special = [0.0, -0.0, 1.0, -1.5, 3.0, 0.1, 1e-3, 1e-6, 1e-30, 1e-40, 1e-310, 6.0e4, 1e38, 1e300,
               np.inf, -np.inf, np.nan, 2.0 ** -14, 2.0 ** -24, 2.0 ** -126, 2.0 ** -149, 448.0, 57344.0]
    rand = rng.standard_normal(64 - len(special)) * 10.0 ** rng.integers(-45, 45, 64 - len(special))
    return np.concatenate([np.array(special), rand])


def precompile(parallel: bool = False, on_case=None) -> Report:
    """Run every compiled path once (module doc); `on_case(what)` is called before each call."""
    from isa import datatypes as dts
    from isa.datatypes import Kind
    from . import fast, tiers
    from .convert import convert, encode       # (the package keeps the functions under these names)
    from .elementwise import cases as ew_cases, elementwise, elementwise_status
    from .errors import UnsupportedOperation
    from .profiles import PROFILES

    t0 = time.perf_counter()
    tiers.load_compiled()
    rng = np.random.default_rng(2026)
    vals = _values(rng)
    floats = [d for d in dts.DATATYPES if d.kind is Kind.FLOAT]
    codes = {}
    for d in floats:
        try:
            codes[d.name] = np.ascontiguousarray(encode(vals, d.name, sat=False))
        except (UnsupportedOperation, ValueError):
            continue
    cases = 0
    for ins, dt in ew_cases():
        if dt.name not in codes:
            continue
        x = codes[dt.name]
        ops = [np.roll(x, 5 * k) for k in range(ins.arity)]
        for prof in PROFILES:
            if on_case:
                on_case(f"{ins.mnemonic} {dt.name} {prof}")
            kw = {"cmode": "LT"} if ins.mnemonic == "TCMP" else {}
            try:
                elementwise(ins.mnemonic, dt.name, *ops, profile=prof, **kw)
                elementwise_status(ins.mnemonic, dt.name, *[o.reshape(4, -1) for o in ops], groups=4,
                                   profile=prof, **kw)
            except UnsupportedOperation:
                pass
            cases += 1
    for s in floats:
        if s.name not in codes:
            continue
        for d in dts.DATATYPES:
            for rmode in ("DEFAULT", "RTZ"):
                for sat in (False, True):
                    for prof in PROFILES:
                        if on_case:
                            on_case(f"TCVT {s.name}->{d.name} {rmode} sat={sat} {prof}")
                        try:
                            convert(codes[s.name], s.name, d.name, rmode=rmode, sat=sat, profile=prof)
                        except (UnsupportedOperation, ValueError):
                            pass
                        cases += 1
    from . import fastconvert            # the hi16 gathers of large FP32-class conversions
    x32 = np.ascontiguousarray(codes["FP32"].view(np.uint32))
    for dtype in (np.uint8, np.uint16):
        fastconvert.gather_hi16(x32, np.zeros(1 << 17, dtype), np.zeros(1 << 17, np.uint8))
        cases += 1
    if parallel:
        for tw in fast.Twin.every:
            if isinstance(tw.serial, fast.Uniform):
                for sig in tw.serial.signatures:
                    tw.parallel.add(tuple(sig))
    bodies = [len(w.overloads) for w in fast.Uniform.every]
    return Report(sum(bodies), sum(1 for b in bodies if b), cases, time.perf_counter() - t0)
