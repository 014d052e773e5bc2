"""GoldenError: the one-line user-facing error of every golden module (bad parameters, a damaged
dataset, an unreachable store).  Its own module so that the lowest golden modules (store.py) can
raise it without importing the dataset code that uses them."""


class GoldenError(Exception):
    """A one-line user-facing error (bad parameters, damaged dataset)."""
