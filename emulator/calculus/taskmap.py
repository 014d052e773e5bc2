"""Hidet task mappings and their product (Hidet, Section 5.1), the binding/schedule witness for
independent rectangular work.

A task mapping f has a task shape d (a tuple: tasks are coordinates in the box d) and n
workers; f(w) is worker w's ordered task list.  `spatial(*d)` gives every task its own worker;
`repeat(*d)` gives one worker every task in row-major order.  The product

    (f ⊗ h)(w) = [x*d2 + y | x in f(w div n2), y in h(w mod n2)]     (componentwise)
    shape(f ⊗ h) = d1*d2,  workers(f ⊗ h) = n1*n2

is associative and not commutative.  `spatial` contributes worker factors, `repeat` ordered
local tasks.  The product builds a Bind/serialize witness (witnesses.BindWitness accepts a
TaskMapping as its binding); it proves nothing about effects by itself.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product as _cartesian
from typing import Callable


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def _unravel(w: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for s in reversed(shape):
        out.append(w % s)
        w //= s
    return tuple(reversed(out))


@dataclass(frozen=True)
class TaskMapping:
    shape: tuple[int, ...]
    workers: int
    fn: Callable[[int], list]
    name: str = "f"

    def __call__(self, w: int) -> list[tuple[int, ...]]:
        if not 0 <= w < self.workers:
            raise IndexError(f"worker {w} outside 0..{self.workers - 1}")
        return [tuple(t) for t in self.fn(w)]

    def table(self) -> tuple[tuple[tuple[int, ...], ...], ...]:
        """Every worker's ordered task list: the mapping's complete, comparable value."""
        return tuple(tuple(self(w)) for w in range(self.workers))

    def __eq__(self, other) -> bool:
        return (isinstance(other, TaskMapping) and self.shape == other.shape
                and self.workers == other.workers and self.table() == other.table())

    def __hash__(self):
        return hash((self.shape, self.workers, self.table()))

    def __mul__(self, other: "TaskMapping") -> "TaskMapping":
        return product(self, other)

    def coverage(self) -> tuple[list, list]:
        """(missing tasks, tasks assigned more than once) over the task shape."""
        count: dict = {}
        for w in range(self.workers):
            for t in self(w):
                count[t] = count.get(t, 0) + 1
        missing = [t for t in _cartesian(*(range(s) for s in self.shape)) if t not in count]
        dup = [t for t, c in count.items() if c > 1]
        return missing, dup


def spatial(*shape: int) -> TaskMapping:
    shape = tuple(shape)
    return TaskMapping(shape, _prod(shape), lambda w: [_unravel(w, shape)], f"spatial{shape}")


def repeat(*shape: int) -> TaskMapping:
    shape = tuple(shape)
    tasks = list(_cartesian(*(range(s) for s in shape)))
    return TaskMapping(shape, 1, lambda w: tasks, f"repeat{shape}")


def product(f: TaskMapping, h: TaskMapping) -> TaskMapping:
    if len(f.shape) != len(h.shape):
        raise ValueError(f"task shapes {f.shape} and {h.shape} have different ranks")
    d2, n2 = h.shape, h.workers

    def fn(w: int):
        return [tuple(xi * di + yi for xi, di, yi in zip(x, d2, y))
                for x in f(w // n2) for y in h(w % n2)]
    return TaskMapping(tuple(a * b for a, b in zip(f.shape, d2)), f.workers * n2, fn,
                       f"({f.name} x {h.name})")
