"""Mutations for the fuzz tests (hostile manifests, graphs, fabric descriptions, region
programs, data files, commit logs): paths into a JSON document and edits at them, byte edits
of a file's text, record edits of a table -- one copy instead of one in each fuzz test."""
from __future__ import annotations

import copy

from hypothesis import strategies as st


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


def set_copy(doc, path, value):
    """A deep copy of `doc` with `set_at(path, value)` applied."""
    doc = copy.deepcopy(doc)
    set_at(doc, path, value)
    return doc


def byte_edits(raw: bytearray, data, edits) -> bytearray:
    """`edits` random edits of `raw` in place, drawn with hypothesis `data`: a byte flipped, a
    run of up to 8 bytes dropped or repeated."""
    for _ in range(edits):
        at = data.draw(st.integers(0, len(raw) - 1))
        op = data.draw(st.sampled_from(["flip", "drop", "dup"]))
        if op == "flip":
            raw[at] ^= data.draw(st.integers(1, 255))
        elif op == "drop":
            del raw[at:at + data.draw(st.integers(1, 8))]
        else:
            raw[at:at] = raw[at:at + data.draw(st.integers(1, 8))]
    return raw


def damaged(raw: bytearray, data, truncate: bool, most: int = 4) -> bytes:
    """A file's bytes cut at a drawn offset (`truncate`), or with 1..`most` byte_edits."""
    if truncate:
        del raw[data.draw(st.integers(0, len(raw) - 1)):]
    else:
        byte_edits(raw, data, data.draw(st.integers(1, most)))
    return bytes(raw)


def row_edit(rows: list, data) -> None:
    """One edit of a list of records in place, drawn with hypothesis `data`: a record dropped,
    repeated, or swapped with another."""
    i = data.draw(st.integers(0, len(rows) - 1))
    action = data.draw(st.sampled_from(["drop", "dup", "swap"]))
    if action == "drop":
        rows.pop(i)
    elif action == "dup":
        rows.insert(i, dict(rows[i]))
    else:
        j = data.draw(st.integers(0, len(rows) - 1))
        rows[i], rows[j] = rows[j], rows[i]


def json_edits(doc, data, values):
    """1 to 3 random edits of JSON document `doc` in place, drawn with hypothesis `data`: a value
    set to one drawn from `values`, deleted, or replaced by a copy of another of the document's;
    `doc`, edited."""
    import json
    found = list(paths(doc))[1:]
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(found))
        parent = doc
        try:
            for k in path[:-1]:
                parent = parent[k]
            action = data.draw(st.sampled_from(["set", "delete", "copy"]))
            if action == "delete":
                del parent[path[-1]]
            elif action == "copy":
                other = doc
                for k in data.draw(st.sampled_from(found)):
                    other = other[k]
                parent[path[-1]] = json.loads(json.dumps(other))
            else:
                parent[path[-1]] = data.draw(values)
        except (KeyError, IndexError, TypeError):
            pass                                  # an earlier edit removed the path
    return doc
