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
    from isa import datatypes as dts
    from kernels.numeric import cuda as C
    from kernels.numeric.profiles import PROFILES
    E = importlib.import_module("kernels.numeric.elementwise")
    rng = np.random.default_rng(0)
    seen, bad = {}, []
    for ins, dt in E.cases():
        op = ins.mnemonic
        for pname in PROFILES:
            prof = PROFILES[pname]
            where = C.placement(op, dt, prof, ins.arity)
            if where == "host":
                continue
            key = where if pname != "a5" else "a5:" + where
            seen[key] = seen.get(key, 0) + 1
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
            rule = PROFILES["a5"].rule("TCVT", cv.pair(s, d))
            if rule != "ieee":
                for mode in ("RNE", "RTZ", "RTM", "RTO"):
                    rm = cv.resolve_rmode(mode, s, d)
                    want = cv.convert_generic(x, s, d, rm, False, False, np, rule)
                    got = cv.convert_device(x, s, d, rm, False, False, np, rule)
                    seen["convert a5"] = seen.get("convert a5", 0) + 1
                    if not (np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])):
                        bad.append(("TCVT a5", s.name, d.name, mode))
    print("SEEN", sorted(seen.items()), "BAD", bad)
    sys.exit(1 if bad else 0)
""")


def test_device_elementwise_and_convert_match_the_cpu_path_under_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONWARNINGS="ignore")
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:])
    seen = dict(eval(r.stdout.split("SEEN", 1)[1].split("BAD")[0]))
    # fastdiv: TDIV/TRECIP/TSQRT on FP32/TF32/HF32 and TDIV on FP16/BF16, both profiles, and
    # TSQRT on FP16 in profile ieee
    assert seen.get("fastdiv") == 23 and seen.get("fast64") == 22, seen     # fast64: FP64 add/sub/mul/fma/div/recip/sqrt/rem/rsqrt/exp/log, ieee and ftz
    assert seen.get("fastfn") == 22, seen         # TRSQRT/TLOG on FP32/TF32/HF32, TREM on those and BF16/FP16; 2 profiles
    assert seen.get("fastvec") == 12 and seen.get("fast", 0) >= 20 and seen.get("table", 0) >= 40, seen
    assert seen.get("convert", 0) >= 400, seen
    # profile a5: its compiled TREM FP32/FP16 and TDIV FP16, the composed FP32 TRSQRT, tables of
    # its FP16 TRSQRT/TRECIP, and every other case where ieee's is; no a5 case on the host
    assert seen.get("a5:a5") == 3 and seen.get("a5:compose") == 1 and seen.get("a5:table", 0) >= 20, seen
    assert seen.get("convert a5") == 20, seen


FAKE_CUPY = textwrap.dedent("""
    # NumPy dressed as CuPy: arrays whose type lives in a module named "cupy", so the public API
    # takes its device branch (kernels under the simulator, the device glue on NumPy arrays)
    import numpy as _np
    class ndarray(_np.ndarray):
        pass
    ndarray.__module__ = "cupy"
    def asarray(x, dtype=None):
        return _np.asarray(x, dtype).view(ndarray)
    def asnumpy(x):
        return _np.asarray(x).view(_np.ndarray)
    def __getattr__(name):
        return getattr(_np, name)
""")

PUBLIC_API = textwrap.dedent("""
    import importlib
    import numpy as np, cupy
    from isa.datatypes import datatype
    from kernels import numeric
    from kernels.numeric import cuda as kcuda
    cv = importlib.import_module("kernels.numeric.convert")
    calls = []
    def counted(fn):
        def wrapper(*a, **k):
            calls.append(fn.__name__)
            return fn(*a, **k)
        return wrapper
    kcuda.elementwise_device = counted(kcuda.elementwise_device)
    cv.convert_device = counted(cv.convert_device)
    rng = np.random.default_rng(1)
    bad = []
    def codes(name, shape):
        raw = np.dtype(datatype(name).raw_dtype)
        x = rng.integers(0, 1 << (8 * raw.itemsize), shape, dtype=np.uint64).astype(raw)
        return x & raw.type(0xFFFFE000) if name == "TF32" else x
    for op, dt, n in (("TADD", "FP32", 2), ("TFMA", "BF16", 3), ("TMUL", "TF32", 2), ("TEXP", "FP32", 1),
                      ("TADD", "E4M3", 2), ("TDIV", "FP32", 2), ("TADD", "S32", 2), ("TCMP", "FP16", 2)):
        ops = [codes(dt, (5, 8)) for _ in range(n)]
        kw = {"cmode": "LT"} if op == "TCMP" else {}
        want = numeric.elementwise(op, dt, *ops, **kw)
        got = numeric.elementwise(op, dt, *[cupy.asarray(o) for o in ops], **kw)
        if not all(np.array_equal(cupy.asnumpy(g), w) and g.shape == w.shape for g, w in zip(got, want)):
            bad.append((op, dt))
    for s, d in (("FP32", "FP16"), ("FP32", "E4M3"), ("FP16", "FP32"), ("S32", "FP32"), ("FP64", "BF16")):
        x = codes(s, 40)
        want, got = numeric.convert(x, s, d), numeric.convert(cupy.asarray(x), s, d)
        if not all(np.array_equal(cupy.asnumpy(g), w) for g, w in zip(got, want)):
            bad.append(("TCVT", s, d))
    for name in ("E4M3", "FP16", "BF16", "FP32", "TF32", "S8", "U16", "HiF8"):
        x = codes(name, 40)
        for fn in (numeric.decode, numeric.valid_encoding):
            want, got = fn(x, name), fn(cupy.asarray(x), name)
            if not np.array_equal(cupy.asnumpy(got), want, equal_nan=got.dtype.kind == "f"):
                bad.append((fn.__name__, name))
    v = rng.standard_normal(40) * 100
    if not np.array_equal(cupy.asnumpy(numeric.encode(cupy.asarray(v), "E4M3")), numeric.encode(v, "E4M3")):
        bad.append(("encode", "E4M3"))
    print("BAD", bad, "CALLS", sorted(set(calls)), len(calls))
    raise SystemExit(1 if bad or len(calls) != 14 else 0)
""")


def test_the_public_api_takes_the_device_branch_for_cupy_arrays(tmp_path):
    """elementwise/convert reach the device code; decode/valid_encoding/encode run their array
    code (written against `xp`) on the CuPy-typed arrays with the same results."""
    (tmp_path / "cupy.py").write_text(FAKE_CUPY)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONWARNINGS="ignore",
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", PUBLIC_API], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:])
