"""The mapping file (M.json) of `tile-emu reduce`, documented in docs/vcg.md:

    {"axes": {"A": 8, "R": 12, "X": 128}      (or the text "A = 8, R = 12, X = 128")
     "slice": "X, A / 4", "time": "R # 16", "packet": "A % 4 # 8",   (m![...] optional; "1" default)
     "reduce": "R",
     "narrow": "auto" | "trim" | "split",     (optional, default auto: trim when legal, else split)
     "track": "auto" | ["H", "C"]}            (optional, default auto: every padded non-reduce axis)
"""
from __future__ import annotations

from dataclasses import dataclass

from isa.atomicio import quote, shown, why
from isa.jsontext import JsonTextError, loads

from .config import AUTO, VcgConfig, compile_vcg, real_lanes
from .errors import MappingError
from .mapping import MAX_INT, MAX_NAME, Mapping, parse_axes

KEYS = ("axes", "slice", "time", "packet", "reduce", "narrow", "track")


class SpecError(ValueError):
    """A mapping file whose structure (not its mapping expressions) is wrong."""


@dataclass(frozen=True)
class Spec:
    mapping: Mapping
    reduce: str
    narrow: str
    track: object

    def compile(self) -> VcgConfig:
        return compile_vcg(self.mapping, self.reduce, self.track, self.narrow)

    def to_dict(self) -> dict:
        d = self.mapping.to_dict()
        d.update(reduce=self.reduce, narrow=self.narrow,
                 track=self.track if self.track == AUTO else list(self.track))
        return d


def default_narrow(m: Mapping) -> str:
    return "trim" if not real_lanes(m)[4:].any() else "split"


def _text(obj: dict, key: str, default: str | None = None) -> str:
    v = obj.get(key, default)
    if not isinstance(v, str):
        raise SpecError(f"'{key}' must be a string" + ("" if default is not None else " (required)"))
    return v


def spec_from_dict(obj) -> Spec:
    if not isinstance(obj, dict):
        raise SpecError("a mapping file holds one JSON object")
    unknown = sorted(set(obj) - set(KEYS))
    if unknown:
        raise SpecError(f"unknown key(s) {quote(', '.join(map(str, unknown)))}; known: {', '.join(KEYS)}")
    axes = obj.get("axes")
    if isinstance(axes, str):
        axes = parse_axes(axes)
    elif isinstance(axes, dict):
        for k, v in axes.items():
            if not (isinstance(k, str) and k.isidentifier() and len(k) <= MAX_NAME) or type(v) is not int or not 1 <= v <= MAX_INT:
                raise SpecError(f"axes entry {quote(k, 40)}: {shown(repr(v), 40)} must be NAME: SIZE with an integer size >= 1 "
                                f"and <= 2**40 (a name of at most {MAX_NAME} characters)")
        axes = dict(axes)
    else:
        raise SpecError("'axes' must be an object {NAME: SIZE} or a text 'A = 8, R = 12' (required)")
    m = Mapping.parse(axes, _text(obj, "slice", "1"), _text(obj, "time", "1"), _text(obj, "packet", "1"))
    reduce = _text(obj, "reduce")
    narrow = _text(obj, "narrow", "auto")
    if narrow not in ("auto", "trim", "split"):
        raise SpecError(f"'narrow' must be auto, trim or split, not {quote(narrow)}")
    if narrow == "auto":
        narrow = default_narrow(m)
    track = obj.get("track", AUTO)
    if track != AUTO and not (isinstance(track, list) and all(isinstance(a, str) for a in track)):
        raise SpecError("'track' must be \"auto\" or a list of axis names")
    return Spec(m, reduce, narrow, track if track == AUTO else tuple(track))


def load_spec(path) -> Spec:
    """The Spec of a mapping file; every SpecError names the file (MappingError and VcgError
    point into the mapping text instead)."""
    try:
        with open(path, "rb") as f:
            obj = loads(f.read())
    except OSError as e:
        raise SpecError(f"cannot read {shown(path)}: {why(e)}") from None
    except JsonTextError as e:
        raise SpecError(f"{shown(path)} is not valid JSON: {e}") from None
    try:
        return spec_from_dict(obj)
    except SpecError as e:
        raise SpecError(f"{shown(path)}: {e}") from None


__all__ = ["Spec", "SpecError", "MappingError", "load_spec", "spec_from_dict", "default_narrow"]
