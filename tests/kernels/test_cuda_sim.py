"""The GPU element-wise path (kernels/numeric/cuda.py) gives the CPU path's bits and flags for
every operation and DataType it computes on the device.

Runs in a subprocess under the CUDA simulator (NUMBA_ENABLE_CUDASIM=1 must be set before
numba.cuda is first imported), with NumPy arrays standing in for CuPy ones: the kernels are the
CPU's scalar routines compiled by numba.cuda, the array glue is the same source that runs on
CuPy arrays (elementwise._device_elementwise with xp=numpy).  Every (op, DataType, profile) the
device computes is checked (kernel, table gather and the host settlement of marked elements,
which random codes -- NaNs, infinities, subnormals -- always exercise), and TCVT of every
source/destination pair (convert_device: device tables, the Numba-CUDA IEEE kernel, host pairs)
against the generic reference path.  The CPU path is checked
against independent references in test_ops_float.py / test_fastvec.py / test_ops_fast.py.
"""
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import importlib, sys
    import numpy as np
    from isa import datatypes as dts, instructions as instrs
    from kernels.numeric import cuda as C
    from kernels.numeric.profiles import PROFILES
    E = importlib.import_module("kernels.numeric.elementwise")
    rng = np.random.default_rng(0)
    seen, bad = {}, []
    for op in sorted(E.OPERATIONS):
        ins = instrs.lookup(op)
        for dt in dts.DATATYPES:
            if dt.name not in ins.dtypes or (op, dt.kind) not in E.TABLE:
                continue
            for pname in ("ieee", "ftz"):
                prof = PROFILES[pname]
                where = C.placement(op, dt, prof, ins.arity)
                if where == "host":
                    continue
                seen[where] = seen.get(where, 0) + 1
                raw = np.dtype(dt.raw_dtype)
                ops = [rng.integers(0, 1 << (8 * raw.itemsize), 40, dtype=np.uint64).astype(raw).reshape(5, 8)
                       for _ in range(ins.arity)]
                mode = "LT" if op == "TCMP" else None
                want = E.elementwise(op, dt.name, *ops, profile=pname, cmode=mode)
                got = E._device_elementwise(ins, dt, E.TABLE[(op, dt.kind)], ops, prof, mode, xp=np)
                if not (np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
                        and got[0].shape == want[0].shape and got[0].dtype == want[0].dtype):
                    bad.append((op, dt.name, pname, where))
    cv = importlib.import_module("kernels.numeric.convert")
    from kernels.numeric import fastconvert
    for s in dts.DATATYPES:
        raw = np.dtype(s.raw_dtype)
        x = rng.integers(0, 1 << (8 * raw.itemsize), 48, dtype=np.uint64).astype(raw).reshape(6, 8)
        if s.bits != s.container or s.bits != 8 * raw.itemsize:
            x = x & raw.type(int(cv.valid_mask_hex(s), 16))
        for d in dts.DATATYPES:
            wide = fastconvert.supports(s, d)
            for mode in (("RNE", "RTZ", "RTO") if wide else ("DEFAULT",)):
                for sat, ftz in (((False, False), (True, True)) if wide else ((False, False),)):
                    rm = cv.resolve_rmode(mode, s, d)
                    want = cv.convert_generic(x, s, d, rm, sat, ftz, np)
                    got = cv.convert_device(x, s, d, rm, sat, ftz, np)
                    seen["convert"] = seen.get("convert", 0) + 1
                    if not (np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])):
                        bad.append(("TCVT", s.name, d.name, mode, sat, ftz))
    print("SEEN", sorted(seen.items()), "BAD", bad)
    sys.exit(1 if bad else 0)
""")


def test_device_elementwise_and_convert_match_the_cpu_path_under_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONWARNINGS="ignore")
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:])
    seen = dict(eval(r.stdout.split("SEEN", 1)[1].split("BAD")[0]))
    assert seen.get("fastvec") == 11 and seen.get("fast", 0) >= 20 and seen.get("table", 0) >= 40, seen
    assert seen.get("convert", 0) >= 400, seen
