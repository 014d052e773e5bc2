"""Picking a plan's steps out of a program's source events (emulator.calculus.plan.source_events)."""


def ordinals(evs, kind=None, path=None) -> list[int]:
    """The ordinals, in source order, of the events of that kind (or at that path)."""
    return [e.ordinal for e in evs if (kind is None or e.kind == kind) and (path is None or e.path == path)]


def stages(evs) -> tuple[list[int], list[int], list[int]]:
    """(contributions, results, consumer) of a program whose first statement reduces or scans
    and whose second uses what it makes."""
    return ordinals(evs, "contribution"), ordinals(evs, "result"), ordinals(evs, path="$.body.seq[1]")
