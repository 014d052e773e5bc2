"""Paths into a JSON document, for the tests that mutate one (hostile manifests, graphs, fabric
descriptions, region programs): one walker instead of a copy in each fuzz test."""
from __future__ import annotations


def paths(doc, prefix=()):
    """Every path (a tuple of keys and indices) into `doc`, the root's () first."""
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, prefix + (i,))


def set_at(doc, path, value) -> None:
    """Set the value at (non-empty) `path` in place; `value` KeyError deletes it."""
    cur = doc
    for k in path[:-1]:
        cur = cur[k]
    if value is KeyError:
        del cur[path[-1]]
    else:
        cur[path[-1]] = value
