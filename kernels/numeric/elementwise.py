"""`elementwise(op, dtype, *operands)`: the element-wise instructions on raw encodings.

    bits, flags = elementwise("TADD", "FP16", a_bits, b_bits, profile="ieee")
    pred, flags = elementwise("TCMP", "S32", a_bits, b_bits, cmode="LT")   # uint8 0/1

Operands are unsigned-integer arrays of raw encodings in the DataType's container dtype
(`DataType.raw_dtype`; smaller unsigned dtypes and in-range Python ints are accepted), broadcast
like NumPy.  The result has the broadcast shape: encodings in the container dtype (TCMP: uint8
0/1), and `flags`, a uint8 array of kernels.numeric.flags bits (NV DZ OF UF NX) per element.

Dispatch: the operand count and the DataType set come from the instruction's row in
isa.instructions; integer operations run ops_int (TABLE[(mnemonic, Kind)]), floating ones the
tier the tier table (kernels/numeric/tiers.py) selects for (op, DataType, profile, arity), so a
rule lives in exactly one place.  docs/numerics.md ("Operations") defines every result.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from isa import datatypes as dts
from isa import fields
from isa import instructions as instrs
from isa.datatypes import DataType, Kind

from . import ops_float, ops_int, tiers, transcendental
from .errors import UnsupportedOperation
from .profiles import Profile, profile as resolve_profile

CMODES = tuple(fields.CMODES.values())      # EQ NE LT GT LE GE, in CMode code order

# An implementation: fn(dtype, operands, profile, cmode) -> (bits, flags); operands are
# container-dtype arrays of one common shape.
Impl = Callable[[DataType, tuple, Profile, "str | None"], tuple]


def _int_impl(op: str, fn, signed: bool) -> Impl:
    def run(dt, operands, prof, cmode):
        out = fn(*operands, signed, cmode) if op == "TCMP" else fn(*operands, signed)
        if op in ops_int.WITH_FLAGS:
            return out
        return out, np.zeros_like(out, dtype=np.uint8)     # on out's device
    run.__name__ = f"{op.lower()}_{'s' if signed else 'u'}int"
    return run


def _float_impl(op: str) -> Impl:
    """The tier the tier table selects (tiers.py: compiled loops, tables of the reference, the
    reference itself in cache-sized chunks), each handing the elements it does not settle on."""
    def run(dt, operands, prof, cmode):
        t = tiers.select(op, dt, prof, len(operands))
        if t is None:
            raise UnsupportedOperation(f"{op} on {dt.name}: profile {prof.name} names a rule this build "
                                       f"does not implement ({prof.rule(op, dt.name)!r})")
        return tiers.run(t, op, dt.name, operands, prof, cmode)
    run.__name__ = f"{op.lower()}_float"
    return run


TABLE: dict[tuple[str, Kind], Impl] = {}
for _op, _fn in ops_int.OPS.items():
    TABLE[(_op, Kind.SINT)] = _int_impl(_op, _fn, True)
    TABLE[(_op, Kind.UINT)] = _int_impl(_op, _fn, False)
for _op in {**ops_float.OPS, **transcendental.OPS}:
    TABLE[(_op, Kind.FLOAT)] = _float_impl(_op)

OPERATIONS = frozenset(op for op, _ in TABLE)
# the floating reference of each op (the profile's rule: tiers.reference)
REFERENCE = {op: tiers.reference(op) for op in {**ops_float.OPS, **transcendental.OPS}}


def cases():
    """(Instruction, DataType) of every element-wise operation and every DataType of its set that
    this build implements, in the instruction table's order, then the DataType table's."""
    for ins in instrs.INSTRUCTIONS:
        for dt in dts.DATATYPES:
            if dt.name in ins.dtypes and (ins.mnemonic, dt.kind) in TABLE:
                yield ins, dt


# ---------------------------------------------------------------- lookup

def _instruction(op: str) -> instrs.Instruction:
    name = str(op).upper()
    if name not in OPERATIONS:
        known = ", ".join(sorted(OPERATIONS))
        extra = " (use numeric.convert)" if name == "TCVT" else ""
        raise UnsupportedOperation(f"{op!r} is not an element-wise operation{extra}; known: {known}")
    return instrs.lookup(name)


_RESOLVED: dict = {}          # (op, dtype) -> _resolve's answer: a hot path pays one dict lookup


def _resolve(op: str, dtype) -> tuple[instrs.Instruction, DataType, Impl]:
    key = (op, dtype) if isinstance(dtype, str) else None
    hit = _RESOLVED.get(key) if key else None
    if hit is None:
        hit = _resolve_uncached(op, dtype)
        if key and len(_RESOLVED) < 4096:
            _RESOLVED[key] = hit
    return hit


def _resolve_uncached(op: str, dtype) -> tuple[instrs.Instruction, DataType, Impl]:
    ins = _instruction(op)
    try:
        dt = dts.datatype(dtype)
    except dts.UnknownDataType as exc:
        raise UnsupportedOperation(f"{ins.mnemonic}: {exc}") from None
    if dt.name not in ins.dtypes:
        allowed = ", ".join(d.name for d in dts.DATATYPES if d.name in ins.dtypes)
        raise UnsupportedOperation(f"{ins.mnemonic} does not support DataType {dt.name} "
                                   f"(its DataType set is {allowed})")
    impl = TABLE.get((ins.mnemonic, dt.kind))
    if impl is None:
        raise UnsupportedOperation(f"{ins.mnemonic} on {dt.name} is not implemented in this build")
    return ins, dt, impl


def supports(op: str, dtype, profile: str | Profile = "ieee") -> bool:
    """True when elementwise(op, dtype, ..., profile=profile) is defined and implemented: the
    instruction admits the DataType and the tier table has a host tier for the profile's rule."""
    try:
        prof = resolve_profile(profile)
        ins, dt, _ = _resolve(op, dtype)
    except (UnsupportedOperation, ValueError):
        return False
    return tiers.select(ins.mnemonic, dt, prof, ins.arity) is not None and (
        not dt.is_float or tiers.implemented(ins.mnemonic, dt, prof))


def _cmode(op: str, cmode) -> str | None:
    if op != "TCMP":
        if cmode is not None:
            raise TypeError(f"{op} takes no cmode (only TCMP does)")
        return None
    if cmode is None:
        return "EQ"            # omission retains encoded zero: EQ (Decision 069)
    if isinstance(cmode, str) and cmode.upper() in CMODES:
        return cmode.upper()
    if isinstance(cmode, (int, np.integer)) and not isinstance(cmode, bool) and int(cmode) in fields.CMODES:
        return fields.CMODES[int(cmode)]
    raise ValueError(f"TCMP cmode must be one of {', '.join(CMODES)} or a code 0..5, not {cmode!r}")


# ---------------------------------------------------------------- operands

def _as_raw(x, dt: DataType, where: str) -> np.ndarray:
    """One operand as an array of the container dtype, without changing any value."""
    raw = np.dtype(dt.raw_dtype)
    arr = np.asarray(x)
    if arr.dtype == raw:
        return arr
    if arr.dtype.kind == "u" and arr.dtype.itemsize <= raw.itemsize:
        return arr.astype(raw)
    if arr.dtype.kind in "iuO":
        try:
            in_range = arr.size == 0 or (0 <= int(arr.min()) and int(arr.max()) < 1 << (8 * raw.itemsize))
        except (TypeError, ValueError):
            in_range = False
        if in_range:
            return arr.astype(raw)
        raise ValueError(f"{where}: values must be raw {dt.name} encodings in 0..2^{8 * raw.itemsize}-1")
    raise TypeError(f"{where}: expected an unsigned-integer array of raw {dt.name} encodings "
                    f"({raw.name}), got dtype {arr.dtype}")


def _on_device(x) -> bool:
    """A device (CuPy) array: kernels.device knows which type that is."""
    from ..device import array_module
    return array_module(x) is not np


def _device_elementwise(ins, dt, impl, operands, prof, mode, xp=None):
    """CuPy operands: computed on the device (kernels/numeric/cuda.py), CuPy results.  (xp=numpy
    runs this same code on NumPy arrays under the CUDA simulator: tests/kernels/test_cuda_sim.py.)"""
    from .. import device
    from . import cuda
    xp = xp if xp is not None else device.array_module(*operands)
    raw = np.dtype(dt.raw_dtype)
    arrays = []
    for i, x in enumerate(operands):
        a = xp.asarray(x)
        if a.dtype != raw:
            if not (a.dtype.kind == "u" and a.dtype.itemsize <= raw.itemsize):
                raise TypeError(f"{ins.mnemonic} operand {i} ({ins.sources[i]}): expected an unsigned-integer "
                                f"array of raw {dt.name} encodings ({raw.name}), got dtype {a.dtype}")
            a = a.astype(raw)
        arrays.append(a)
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        raise ValueError(f"{ins.mnemonic}: operand shapes {[a.shape for a in arrays]} do not broadcast") from None
    flat = tuple(xp.ascontiguousarray(a if a.shape == shape else xp.broadcast_to(a, shape)).reshape(-1)
                 for a in arrays)
    with np.errstate(all="ignore"):      # host-settled elements: IEEE exceptions are results, as on the CPU path
        bits, flags = cuda.elementwise_device(ins.mnemonic, dt, flat, prof, mode, impl,
                                              fn=REFERENCE.get(ins.mnemonic), xp=xp, paths=_paths)
    out_dtype = np.uint8 if ins.mnemonic == "TCMP" else raw
    return bits.astype(out_dtype, copy=False).reshape(shape), flags.reshape(shape)


def _paths(op: str, dt: DataType):
    """(implementation, reference) of (op, dt): what the device needs of each step of a
    composition (kernels/numeric/cuda.py)."""
    return TABLE[(op, dt.kind)], REFERENCE.get(op)


def elementwise(op: str, dtype, *operands, profile: str | Profile = "ieee", cmode=None):
    """Apply instruction `op` element-wise to raw encodings of `dtype`: (bits, flags).  CuPy
    operands are computed on their device and give CuPy results (kernels/numeric/cuda.py)."""
    ins, dt, impl = _resolve(op, dtype)
    prof = resolve_profile(profile)
    mode = _cmode(ins.mnemonic, cmode)
    if len(operands) != ins.arity:
        raise TypeError(f"{ins.mnemonic} takes {ins.arity} operand(s) ({', '.join(ins.sources)}), "
                        f"got {len(operands)}")
    if not all(type(x) is np.ndarray for x in operands) and any(_on_device(x) for x in operands):
        return _device_elementwise(ins, dt, impl, operands, prof, mode)
    arrays = [_as_raw(x, dt, f"{ins.mnemonic} operand {i} ({ins.sources[i]})") for i, x in enumerate(operands)]
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        raise ValueError(f"{ins.mnemonic}: operand shapes {[a.shape for a in arrays]} do not broadcast") from None
    flat = tuple(a.reshape(-1) if a.shape == shape else np.broadcast_to(a, shape).reshape(-1)
                 for a in arrays)                                    # copies only if broadcast
    with np.errstate(all="ignore"):
        bits, flags = impl(dt, flat, prof, mode)
    return _shaped(bits, flags, np.uint8 if ins.mnemonic == "TCMP" else np.dtype(dt.raw_dtype), shape)


def _shaped(bits, flags, out_dtype, shape: tuple):
    """An implementation's flat (bits, flags) as `elementwise` returns them: bits in `out_dtype`,
    flags a writable uint8 array, both of `shape`."""
    bits = np.asarray(bits).astype(out_dtype, copy=False).reshape(shape)
    flags = np.asarray(flags, np.uint8).reshape(-1)
    if flags.size != bits.size or not flags.flags.writeable:   # a scalar or a broadcast view
        flags = np.broadcast_to(flags, (bits.size,)).copy()
    return bits, flags.reshape(shape)


def elementwise_status(op: str, dtype, *operands, groups: int, profile: str | Profile = "ieee", cmode=None):
    """(bits, status): `elementwise`'s bits, and for flags the OR of its per-element flags over
    each of `groups` equal consecutive parts of the elements in C order (uint8 [groups]): the
    numeric status of each PE of a block whose operands are stacked with a leading PE axis.
    Bit-identical to elementwise followed by that reduction, which is what runs unless the
    operands are NumPy arrays of one shape, already in the container dtype, of an op fastvec
    serves: then the compiled loop runs without elementwise's per-call argument handling and
    one pass over the flags gives both the status and the elements left to settle."""
    direct = None
    if cmode is None and isinstance(dtype, str) and isinstance(profile, str):
        key = (op, dtype, profile, tiers._INTERPRETED[0])
        direct = _DIRECT.get(key)
        if direct is None:
            direct = _direct(op, dtype, profile)
            if len(_DIRECT) < 4096:
                _DIRECT[key] = direct
                if direct is False:
                    _LEAN[key] = _lean(op, dtype, profile)
    if direct:
        raw, arity, kernel, settle, run_status = direct
        flat = _flat_operands(operands, raw, arity)
        if flat is not None:
            bits, status = run_status(kernel, flat, groups, settle)
            return bits.reshape(operands[0].shape), status
    elif direct is False:
        got = _lean_status(_LEAN.get(key), operands, groups)
        if got is not None:
            return got
    bits, flags = elementwise(op, dtype, *operands, profile=profile, cmode=cmode)
    return bits, _or_status(np.asarray(flags, np.uint8), groups)


def _flat_operands(operands, raw, arity: int) -> list | None:
    """The operands as flat views when they are `arity` NumPy arrays of one shape, already in
    the container dtype `raw` (what the paths without elementwise's argument handling take);
    None otherwise."""
    if len(operands) != arity:
        return None
    shape = operands[0].shape
    for x in operands:
        if type(x) is not np.ndarray or x.dtype != raw or x.shape != shape:
            return None
    return [x.reshape(-1) for x in operands]


def _or_status(flags: np.ndarray, groups: int) -> np.ndarray:
    """The OR of per-element flags over `groups` equal consecutive parts (uint8 [groups])."""
    if flags.size == 0:
        return np.zeros(groups, np.uint8)
    return np.bitwise_or.reduce(flags.reshape(groups, -1), axis=1)


# (op, dtype name, profile name, tiers interpreted) -> what elementwise_status's compiled path needs, or False when
# the tier table does not give it to fastvec (or the names are not valid: elementwise then
# raises as it does).  The tier table is read once per key: the kernel it names and the
# hand-off that settles the kernel's marked elements (tiers.hand_off), not on every block.
_DIRECT: dict = {}


def _direct(op: str, dtype: str, profile: str):
    try:
        ins, dt, _ = _resolve(op, dtype)
        prof = resolve_profile(profile)
    except (UnsupportedOperation, ValueError):
        return False
    tier = tiers.select(ins.mnemonic, dt, prof, ins.arity)
    if tier is None or tier.name != "fastvec":
        return False
    from . import fastvec           # loaded by the tier table already (tiers.load_compiled)
    return (np.dtype(dt.raw_dtype), ins.arity, tier.kernels[(dt.name, ins.mnemonic)],
            tiers.hand_off(tier, ins.mnemonic, dt.name, prof), fastvec.run_status)


# (op, dtype name, profile name, tiers interpreted) -> what _lean_status needs, for each key of
# _DIRECT that fastvec does not serve; None where the names are not valid (elementwise raises).
_LEAN: dict = {}


def _lean(op: str, dtype: str, profile: str):
    """(container dtype, arity, DataType, implementation, Profile, integer routine or None) of
    (op, dtype, profile): elementwise's own lookups, done once per key rather than once per
    call.  The integer routine is set for an integer operation that raises no flag (all but
    TDIV and TREM, and never TCMP, which elementwise_status does not serve): its status is zero."""
    try:
        ins, dt, impl = _resolve(op, dtype)
        prof = resolve_profile(profile)
    except (UnsupportedOperation, ValueError):
        return None
    if ins.mnemonic == "TCMP":
        return None
    plain = None
    if dt.kind in (Kind.SINT, Kind.UINT) and ins.mnemonic not in ops_int.WITH_FLAGS:
        fn, signed = ops_int.OPS[ins.mnemonic], dt.kind is Kind.SINT
        plain = lambda *flat: fn(*flat, signed)     # noqa: E731  (_int_impl's call, without its zero flags)
    return np.dtype(dt.raw_dtype), ins.arity, dt, impl, prof, plain


def _lean_status(lean, operands, groups: int):
    """elementwise_status for NumPy operands of one shape already in the container dtype, on a
    key fastvec does not serve: the implementation called as elementwise calls it, without its
    per-call argument handling (name lookups, conversions, broadcasting: about half the cost of
    a call on a small batch's few hundred elements).  None when the operands are not such
    arrays (elementwise then runs, and raises what it raises)."""
    if lean is None:
        return None
    raw, arity, dt, impl, prof, plain = lean
    flat = _flat_operands(operands, raw, arity)
    if flat is None:
        return None
    shape = operands[0].shape
    with np.errstate(all="ignore"):
        if plain is not None:
            return np.asarray(plain(*flat)).astype(raw, copy=False).reshape(shape), np.zeros(groups, np.uint8)
        bits, flags = impl(dt, tuple(flat), prof, None)
    bits, flags = _shaped(bits, flags, raw, shape)
    return bits, _or_status(flags, groups)
