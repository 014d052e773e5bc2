"""Numeric profiles: the named, versioned "specialisation" every numeric rule reads.

The seed leaves numeric detail to "the selected numeric profile".  A profile is plain data:

  name, version   recorded in state files, golden manifests and bench output; a file naming a
                  (name, version) this build does not have is refused (`lookup`);
  ftz             subnormal inputs read as zero, subnormal results flush to zero (UF|NX);
  rules           for each (operation, class) where the profile departs from the default rule
                  IEEE (the exact result rounded once to the destination), the name of the rule
                  it follows instead.  The class is the DataType for an element-wise operation
                  (("TREM", "FP16")) and the pair "SRC->DST" for TCVT (("TCVT", "FP16->U8")).

Every numeric module asks `profile.rule(op, cls)` and runs the rule of that name; the reference
implements every rule once (kernels/numeric/recipes.py, convert.py), and the tier table
(kernels/numeric/tiers.py) places each (op, DataType, rule) on a compiled path or the reference.
A new hardware profile is one more row here plus the recipes it names.  docs/numerics.md states
each rule with its evidence.
"""
from __future__ import annotations

from dataclasses import dataclass, field

IEEE = "ieee"          # the default rule of every (op, class): one correct rounding of the exact result

# The rules of profile a5 (kernels/numeric/recipes.py and convert.py implement them;
# docs/numerics.md "Profile a5" states each with its evidence in the public PTO A5 sources)
SQRT_THEN_DIV = "sqrt_then_div"          # RN(1 / RN(sqrt x)) in the operand's format
REM_UNFUSED = "rem_unfused"              # q = RN(x/y), floor, p = RN(q*y), RN(x - p), sign fix-up
REM_VIA_FP32 = "rem_via_fp32"            # those FP32 steps on widened FP16, RTZ back, FP16 fix-up
DIV_NORMALISED = "div_normalised"        # A5 DivIEEE754HalfImpl: normalised significands, rescale
RECIP_NORMALISED = "recip_normalised"    # DIV_NORMALISED(1, x)
WRAP = "wrap"                            # TCVT float -> int, Sat=0, out of range: the low N bits
INTEGRAL = "integral"                    # TCVT same-type float: rounded to an integral value

@dataclass(frozen=True)
class Profile:
    name: str
    version: str
    ftz: bool = False
    rules: tuple = ()          # ((op, class, rule), ...): the departures from IEEE
    _index: dict = field(default=None, compare=False, repr=False, hash=False)

    def __post_init__(self):
        index = {}
        for op, cls, rule in self.rules:
            if (op, cls) in index:
                raise ValueError(f"profile {self.name}: two rules for ({op}, {cls})")
            index[(op, cls)] = rule
        object.__setattr__(self, "_index", index)

    def rule(self, op: str, cls: str) -> str:
        """The rule (op, class) follows in this profile: IEEE unless the row names another."""
        return self._index.get((op, cls), IEEE)

    def departs(self, op: str) -> bool:
        """Whether any class of `op` follows a rule other than IEEE."""
        return any(o == op for o, _ in self._index)

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"


_A5 = (
    ("TRSQRT", "FP32", SQRT_THEN_DIV), ("TRSQRT", "FP16", SQRT_THEN_DIV),
    ("TREM", "FP32", REM_UNFUSED), ("TREM", "FP16", REM_VIA_FP32),
    ("TDIV", "FP16", DIV_NORMALISED), ("TRECIP", "FP16", RECIP_NORMALISED),
    ("TCVT", "FP16->U8", WRAP), ("TCVT", "FP16->S8", WRAP), ("TCVT", "FP16->S16", WRAP),
    ("TCVT", "FP32->S16", WRAP), ("TCVT", "FP32->FP32", INTEGRAL),
)

PROFILES: dict[str, Profile] = {
    "ieee": Profile("ieee", "1.0"),
    "ftz": Profile("ftz", "1.0", ftz=True),
    "a5": Profile("a5", "1.0", rules=_A5),       # the A5 vector unit (docs/numerics.md "Profile a5")
}
DEFAULT_PROFILE = "ieee"


class UnknownProfile(ValueError):
    """A profile name (or name and version) this build does not have; the message is one line
    listing the known ones."""


def known() -> str:
    return ", ".join(f"{p.name} {p.version}" for p in PROFILES.values())


def profile(key: str | Profile | None = None) -> Profile:
    if isinstance(key, Profile):
        return key
    key = DEFAULT_PROFILE if key is None else key
    try:
        return PROFILES[key]
    except (KeyError, TypeError):
        raise UnknownProfile(f"unknown numeric profile {key!r}; known: {', '.join(PROFILES)}") from None


def lookup(name, version=None) -> Profile:
    """The profile a file names: `name` must be a known profile and `version`, when given, its
    version in this build (a golden set or state file made under another version of the rules
    cannot be replayed bit for bit)."""
    p = profile(name) if isinstance(name, str) else None
    if p is None:
        raise UnknownProfile(f"unknown numeric profile {name!r}; known: {known()}")
    if version is not None and version != p.version:
        raise UnknownProfile(f"numeric profile {p.name!r} version {version!r} is not this build's "
                             f"({p.version}); known: {known()}")
    return p
