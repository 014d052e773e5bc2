"""elementwise_status's lean path (kernels/numeric/elementwise.py, _lean_status: the
implementation called without elementwise's per-call argument handling, for the (op, DataType)
keys fastvec does not serve) gives exactly elementwise's bits and the OR of its flags per group.

For every element-wise (instruction, DataType) this build implements except TCMP, over operands
drawn from the DataType's edge encodings (zeros of both signs, the smallest and largest
subnormals and normals, infinities, quiet and signalling NaNs with payloads, integer wrap and
sign edges) mixed with random bit patterns, the expected answer is computed here from the public
`elementwise` and a plain OR over each group's flags."""
import importlib

import numpy as np
import pytest

from isa.datatypes import Kind, datatype
from kernels.numeric import elementwise, elementwise_status
from kernels.numeric.formats import FORMATS

E = importlib.import_module("kernels.numeric.elementwise")   # the module (the package re-exports its function)


def _edges(dt) -> np.ndarray:
    """Edge encodings of dt in its container: for an IEEE-family float, sign x {0, smallest and
    largest subnormal, smallest and largest normal, one, infinity, quiet and signalling NaNs
    with payloads} at the format's position in the container; for an integer, 0, 1, the sign
    and wrap edges; otherwise (tapered formats) the first and last few codes."""
    if dt.kind is not Kind.FLOAT:
        top = (1 << dt.bits) - 1
        half = 1 << (dt.bits - 1)
        return np.array([0, 1, 2, top, top - 1, half, half - 1, half + 1], np.uint64)
    f = FORMATS.get(dt.name)
    if f is None or f.family != "ieee":
        return np.array([0, 1, 2, 3, 0x7F, 0x80, 0xFE, 0xFF], np.uint64) & np.uint64((1 << dt.bits) - 1)
    e, t = f.ebits, f.t
    exp_all = ((1 << e) - 1) << t
    mag = [0, 1, (1 << t) - 1, 1 << t, exp_all - 1, ((1 << (e - 1)) - 1) << t, exp_all,
           exp_all | 1, exp_all | (1 << (t - 1)), exp_all | ((1 << t) - 1)]
    sign = 1 << (f.width - 1)
    return np.array([(x | s) << f.shift for x in mag for s in (0, sign)], np.uint64)


def _cases():
    out = []
    for ins, dt in E.cases():
        if ins.mnemonic == "TCMP":
            continue
        try:
            if E._direct(ins.mnemonic, dt.name, "ieee"):
                continue                  # fastvec's path: tested by test_machine_fastpaths
        except Exception:
            continue
        out.append((ins.mnemonic, dt.name))
    return out


@pytest.mark.parametrize("op, dtype", _cases())
def test_lean_status_is_elementwise_with_its_flags_ored_per_group(op, dtype):
    dt = datatype(dtype)
    raw = np.dtype(dt.raw_dtype)
    arity = E._instruction(op).arity
    rng = np.random.default_rng(sum(map(ord, op + dtype)))
    edges = _edges(dt)
    for groups, shape in ((16, (16, 2, 3)), (4, (4, 1, 8)), (1, (1, 4, 8)), (8, (8, 3, 1))):
        ops = []
        for _ in range(arity):
            x = rng.choice(edges, shape).astype(raw)
            r = rng.integers(0, np.iinfo(raw).max, shape, dtype=raw, endpoint=True)
            x = np.where(rng.random(shape) < 0.5, x, r).astype(raw)
            ops.append(x)
        if op in ("TDIV", "TREM") and dt.kind is not Kind.FLOAT:
            ops[1][ops[1] == 0] = 1       # the engine refuses a zero integer divisor first
        try:
            want_bits, flags = elementwise(op, dtype, *ops)
        except Exception as exc:          # e.g. an encoding outside the format: the lean path raises too
            with pytest.raises(type(exc)):
                elementwise_status(op, dtype, *ops, groups=groups)
            continue
        got_bits, status = elementwise_status(op, dtype, *ops, groups=groups)
        assert got_bits.dtype == want_bits.dtype and got_bits.shape == want_bits.shape
        assert np.array_equal(got_bits, want_bits), (op, dtype, shape)
        assert status.dtype == np.uint8
        want_status = np.zeros(groups, np.uint8)
        for g, row in enumerate(flags.reshape(groups, -1)):
            for f in row:
                want_status[g] |= f
        assert np.array_equal(status, want_status), (op, dtype, shape)


def test_the_lean_path_serves_the_keys_fastvec_does_not():
    """The keys above do go through _lean_status (else the test would check elementwise twice)."""
    served = []
    orig = E._lean_status

    def spy(lean, operands, groups):
        got = orig(lean, operands, groups)
        served.append(got is not None)
        return got

    E._lean_status = spy
    try:
        for op, dtype in (("TMAX", "S32"), ("TEXP", "TF32"), ("TREM", "S16"), ("TADD", "S8")):
            raw = np.dtype(datatype(dtype).raw_dtype)
            ops = [np.arange(1, 9, dtype=raw).reshape(2, 4)] * E._instruction(op).arity
            elementwise_status(op, dtype, *ops, groups=2)
    finally:
        E._lean_status = orig
    assert served and all(served)
