"""The calculus's errors: each says where (a JSON path into the program) and why, in one line.

`RegionError` is a malformed or ill-typed program (found by the loader or a static check);
`RegionRuntimeError` is a failure while interpreting a well-formed program at one instance
(an out-of-range index, a read of an undefined element, a noninterference violation found in
validate mode).  Neither ever carries a traceback to the user: the CLI prints `str(exc)`.
"""
from __future__ import annotations


class Located(ValueError):
    """An error at a place (`where`, shown first) with a plain reason (`why`)."""

    def __init__(self, where: str, why: str):
        super().__init__(f"{where}: {why}")
        self.why = why


class RegionError(Located):
    """A program that is not well formed: `path` is a JSON path (`$.body.seq[2].do`)."""

    def __init__(self, path: str, why: str):
        super().__init__(path, why)
        self.path = path


class ReductionPolicyError(RegionError):
    """A reduction policy the combine function cannot support (diagnosed, never guessed)."""


class RegionRuntimeError(RuntimeError):
    """Interpretation failed at one instance: `path` names the node, `at` its coordinates."""

    def __init__(self, path: str, why: str, at: dict | None = None):
        where = "" if not at else " at " + format_coords(at)
        super().__init__(f"{path}{where}: {why}")
        self.path = path
        self.why = why
        self.at = dict(at or {})


class InterferenceError(RegionRuntimeError):
    """`parallel` noninterference W(i) ∩ (R(j) ∪ W(j)) = ∅ fails for the pair (first, second)."""

    def __init__(self, path: str, first: dict, second: dict, cell: str, kind: str):
        why = (f"parallel instances {format_coords(first)} and {format_coords(second)} interfere: "
               f"{kind} on {cell}")
        super().__init__(path, why)
        self.first = dict(first)
        self.second = dict(second)
        self.cell = cell
        self.kind = kind


class PipelineHazardError(RegionRuntimeError):
    """A pipelined schedule would reorder or overlap two dependent stage instances."""


class UndecidedError(RuntimeError):
    """A question the calculus declines to decide (too large, or data-dependent): not 'false'."""


def format_coords(coords: dict) -> str:
    if not coords:
        return "()"
    return "(" + ", ".join(f"{k}={v}" for k, v in coords.items()) + ")"
