"""Numeric profiles: the named, versioned "specialisation" every numeric rule hangs off.

The seed leaves numeric detail to "the selected numeric profile"; a profile here is plain data
that the format codecs and operations read.  Golden datasets record `name` and `version`.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    name: str
    version: str
    ftz: bool = False   # subnormal inputs read as zero; subnormal results flush to zero (UF|NX)


PROFILES: dict[str, Profile] = {
    "ieee": Profile("ieee", "1.0"),
    "ftz": Profile("ftz", "1.0", ftz=True),
}
DEFAULT_PROFILE = "ieee"


def profile(key: str | Profile | None = None) -> Profile:
    if isinstance(key, Profile):
        return key
    key = DEFAULT_PROFILE if key is None else key
    try:
        return PROFILES[key]
    except KeyError:
        raise ValueError(f"unknown numeric profile {key!r}; known: {sorted(PROFILES)}") from None
