"""The tier table: which implementation computes (op, DataType, profile, arity), on the host
and on the device.

One ordered table, TIERS; `select` walks it for the host (kernels/numeric/elementwise.py) and
for the device (kernels/numeric/cuda.py), and `supports()` / `cuda.placement()` answer from it.
A tier serves a case when

  * it covers (op, DataType, arity): a row of its `kernels` table (the compiled tiers: the
    tier's rows of the kernel registry, fast.REGISTRY, which each routine registers beside
    itself with fast.kernel), or its `covers` predicate (tables, compositions, array code, the
    reference);
  * it computes the rule the profile gives (op, DataType) (`Profile.rule`): the rule of the
    row (`fast.Kernel.rule`), or one of the tier's `rules` (None: any rule, for the tiers that
    run the reference itself or read tables built from it);
  * it serves profile ftz when the profile flushes (fast64 does by marking every element with a
    subnormal operand or result for the reference: `ftz_marks`);
  * it runs where asked (`host`, `device`).

The first tier that serves a case computes it.  A compiled tier marks (flags 0xFF) the elements
it does not settle; those whose operand classes decide the result (a NaN, infinite or zero
operand) are settled by the class table of kernels/numeric/specials.py in compiled code, and
the rest go to its `fallback` tier, or to the reference of the operation (`reference(op)`, which
runs the profile's rule: the NumPy code of ops_float/transcendental for IEEE, a recipe of
kernels/numeric/recipes.py otherwise): `hand_off`.  docs/numerics.md ("Implementation and
speed") describes each tier.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Mapping

import numpy as np

from isa.datatypes import DataType, Kind

from . import ops_float, recipes, tables, transcendental
from .errors import UnsupportedOperation
from .profiles import IEEE, Profile, profile as _profile

# The compiled tiers' modules (Numba), imported on first use (`load_compiled`), so that a process
# that runs only the reference (`interpreted`) never imports Numba (issue 32 target 7).
fast = fast64 = specials = None


def load_compiled():
    """Import the compiled tiers' modules; each registers its kernels in fast.REGISTRY when
    imported.  Cheap after the first call."""
    global fast, fast64, specials
    if fast is None:
        from . import fast as f, fast64 as f64, specials as sp
        from . import fasta5, fastdiv, fastfn, fastvec  # noqa: F401  -- they register their rows
        fast, fast64, specials = f, f64, sp


# Whether the compiled tiers are off in this process, and the context that turns them off.
from .interp import INTERPRETED as _INTERPRETED, interpreted  # noqa: E402,F401

# Floating operations whose reference (ops_float.py) is array code that runs unchanged on device
# arrays: sign-bit operations, ordering, comparison and ReLU (exact comparisons of the decoded
# float64 values, no rounding).  Every integer operation (ops_int.py) is such code too.
XP_FLOAT = frozenset({"TABS", "TNEG", "TMAX", "TMIN", "TCMP", "TRELU"})

ANY = None            # Tier.rules: every rule (the tier runs the reference or a table of it)


@dataclass(frozen=True)
class Tier:
    name: str                       # kind 'kernels': the tier's name in the kernel registry
    kind: str                       # 'kernels' | 'table' | 'compose' | 'array' | 'reference'
    covers: Callable | None = None  # (op, DataType, arity) -> bool (the kinds but 'kernels')
    rules: frozenset | None = frozenset({IEEE})     # the rules a `covers` tier computes
    ftz: bool = True                # serves profile ftz
    ftz_marks: bool = False         # ... by marking elements with a subnormal operand or result
    fallback: str | None = None     # the tier that settles this tier's marked elements
    host: bool = True
    device: bool = True
    placement: str = ""             # the name cuda.placement reports (default: name)

    @property
    def kernels(self) -> Mapping | None:
        """(DataType name, op) -> fast.Kernel: the tier's rows of the kernel registry (kind
        'kernels'; None for the other kinds)."""
        if self.kind != "kernels":
            return None
        load_compiled()
        return fast.REGISTRY.get(self.name, {})

    def serves(self, op: str, dt: DataType, prof: Profile, arity: int, device: bool = False) -> bool:
        if not (self.device if device else self.host):
            return False
        if prof.ftz and not self.ftz:
            return False
        if self.kernels is not None:
            k = self.kernels.get((dt.name, op))
            return k is not None and prof.rule(op, dt.name) == k.rule
        if self.rules is not ANY and prof.rule(op, dt.name) not in self.rules:
            return False
        return self.covers(op, dt, arity)

    @property
    def where(self) -> str:
        return self.placement or self.name


def _is_float(dt: DataType) -> bool:
    return dt.kind is Kind.FLOAT


TIERS = (
    Tier("xp-int", "array", covers=lambda op, dt, arity: not _is_float(dt), rules=ANY, placement="xp"),
    Tier("fastvec", "kernels", ftz=False, fallback="fast"),
    Tier("fast64", "kernels", ftz_marks=True),
    Tier("fast", "kernels"),
    Tier("fastdiv-simd", "kernels", ftz=False, fallback="fastdiv", placement="fastdiv"),
    Tier("table", "table", covers=lambda op, dt, arity: _is_float(dt) and tables.applies(op, dt.name, arity),
         rules=ANY),
    Tier("fastdiv", "kernels"),
    Tier("fastfn", "kernels"),
    Tier("a5", "kernels", ftz=False),
    Tier("compose", "compose", covers=lambda op, dt, arity: _is_float(dt), rules=frozenset(recipes.RULES),
         ftz=False),
    Tier("xp-float", "array", covers=lambda op, dt, arity: _is_float(dt) and op in XP_FLOAT, rules=ANY,
         placement="xp"),
    Tier("reference", "reference", covers=lambda op, dt, arity: _is_float(dt), rules=ANY, device=False,
         placement="host"),
)
BY_NAME = {t.name: t for t in TIERS}


def select(op: str, dt: DataType, prof: Profile, arity: int, device: bool = False) -> Tier | None:
    """The tier that computes (op, dt) under `prof` (on the device when `device`), or None."""
    return _select(op, dt, prof, arity, device, _INTERPRETED[0])


@lru_cache(maxsize=4096)
def _select(op, dt, prof, arity, device, interpreted):
    for t in TIERS:
        if interpreted and t.kind in ("kernels", "table"):
            continue
        if t.serves(op, dt, prof, arity, device):
            return t
    return None


# ---------------------------------------------------------------- the references, by rule

# rule -> reference function (op, name, operands, prof), for the rules besides IEEE
RECIPES: dict[str, Callable] = {rule: recipes.reference(rule) for rule in recipes.RULES}
# op -> the ieee reference of every floating element-wise operation
FLOAT_REFERENCE = {**ops_float.OPS, **transcendental.OPS}


def implemented(op: str, dt: DataType, prof: Profile) -> bool:
    """Whether the reference implements the rule `prof` gives (op, dt)."""
    rule = prof.rule(op, dt.name)
    return rule == IEEE or rule in RECIPES


@lru_cache(maxsize=None)
def reference(op: str):
    """The reference of floating `op`: fn(name, *operands, prof[, cmode]) -> (bits, flags),
    running the profile's rule for (op, name)."""
    ieee = FLOAT_REFERENCE[op]

    def fn(name, *operands, prof, **kw):
        rule = prof.rule(op, name)
        if rule == IEEE:
            return ieee(name, *operands, prof=prof, **kw)
        try:
            recipe = RECIPES[rule]
        except KeyError:
            raise UnsupportedOperation(f"{op} on {name}: profile {prof.name} names rule {rule!r}, "
                                       f"which this build does not implement") from None
        return recipe(op, name, operands, prof)
    fn.__name__ = f"{op.lower()}_reference"
    return fn


# ---------------------------------------------------------------- host execution

CHUNK = 1 << 14   # reference-path elements per pass: keeps its temporaries in cache (~2x faster)


def chunked(fn, name, operands, **kw):
    n = operands[0].shape[0]
    if n <= CHUNK:
        return fn(name, *operands, **kw)
    parts = [fn(name, *(x[i:i + CHUNK] for x in operands), **kw) for i in range(0, n, CHUNK)]
    return np.concatenate([b for b, _ in parts]), np.concatenate([f for _, f in parts])


def run_kernels(t: Tier, op: str, name: str, operands, prof: Profile):
    """A compiled tier alone on the host: (bits, flags) with FALLBACK marks."""
    k = t.kernels[(name, op)]          # (the property has loaded the compiled modules)
    bits, flags = fast.launch(k, operands, prof.ftz, k.loop)
    if t.ftz_marks and prof.ftz:
        fast64.mark_for_ftz(bits, flags, operands)
    return bits, flags


def settle(t: Tier, op: str, name: str, prof: Profile, cmode=None):
    """The compute of `fast.settle_marked` for tier t's marked elements: its fallback tier
    (recursively settled), or the reference."""
    load_compiled()
    if t.fallback is None:
        return fast.by_reference(reference(op), name, prof)
    nxt = BY_NAME[t.fallback]
    return lambda ops: run(nxt, op, name, ops, prof, cmode)


def hand_off(t: Tier, op: str, name: str, prof: Profile, cmode=None):
    """What settles, in place, the elements a compiled tier t marked: first the class table of
    the reference (kernels/numeric/specials.py: NaN, infinite and zero operands, in compiled
    code), then `fast.settle_marked` with `settle`'s compute for what is left.  A function
    (bits, flags, operands) -> (bits, flags), made once per case by its callers."""
    compute = settle(t, op, name, prof, cmode)
    fn = reference(op)

    def finish(bits, flags, operands):
        if bits.shape[0] and flags.max() == fast.FALLBACK:
            if specials.settle(op, name, prof, fn, operands, bits, flags):
                fast.settle_marked(bits, flags, operands, compute)
        return bits, flags
    return finish


def run(t: Tier, op: str, name: str, operands, prof: Profile, cmode=None):
    """(bits, flags) of floating `op` on 1-D container-dtype NumPy operands by tier t (kinds
    'kernels', 'table', 'array', 'reference'; integer operations run ops_int in elementwise)."""
    if t.kind == "kernels":
        bits, flags = run_kernels(t, op, name, operands, prof)
        return _hand_off(t, op, name, prof, cmode)(bits, flags, operands)
    fn = reference(op)
    if t.kind == "table":
        return tables.lookup(op, name, prof, cmode, fn, operands)
    if t.kind == "compose":
        return compose(op, name, operands, prof, run_primitive)
    kw = {"prof": prof} if op != "TCMP" else {"prof": prof, "cmode": cmode}
    return chunked(fn, name, operands, **kw)



@lru_cache(maxsize=4096)
def _hand_off(t, op, name, prof, cmode):
    return hand_off(t, op, name, prof, cmode)


# ---------------------------------------------------------------- compositions

def compose(op, name, operands, prof, primitive):
    """The recipe of the rule `prof` gives (op, name) (kernels/numeric/recipes.py), its IEEE
    steps run by `primitive(op, name, *operands)`: the best tier of each step on the host
    (`run_primitive`) or on the device (kernels/numeric/cuda.py), so a composition runs as the
    compiled kernels it is made of."""
    with np.errstate(all="ignore"):
        return recipes.RULES[prof.rule(op, name)](primitive, name, *operands)


def run_primitive(op, name, *operands):
    """One IEEE operation on the host by the tier the table selects for it under profile ieee."""
    from isa.datatypes import datatype
    ieee = _profile(IEEE)
    t = select(op, datatype(name), ieee, len(operands))
    return run(t, op, name, [np.ascontiguousarray(x) for x in operands], ieee)

