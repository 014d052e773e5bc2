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


PROFILES: dict[str, Profile] = {
    "ieee": Profile("ieee", "1.0"),
    "ftz": Profile("ftz", "1.0", ftz=True),
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
