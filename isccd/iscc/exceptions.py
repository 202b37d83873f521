"""The one exception the ISCC algorithms raise for invalid input."""

from __future__ import annotations


class IsccError(ValueError):
    """Invalid input to an ISCC algorithm: a malformed code, a bad bit length, an empty list
    where at least one item is required, units that cannot be combined.

    It is a ``ValueError``, so code written against the reference implementation (which raises
    ``ValueError`` and ``AssertionError``) can catch it the usual way. Wrong argument *types*
    raise ``TypeError``.
    """
