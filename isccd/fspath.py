"""Containment of absolute, normalized path names, by their text alone (nothing is looked up
on disk): what every layer asks of the roots, the store's paths and the clients' paths."""

from __future__ import annotations


def is_under(path: str, top: str) -> bool:
    """True when ``path`` is ``top`` or inside it."""
    return path == top or path.startswith(top.rstrip("/") + "/")


def is_below(path: str, parent: str) -> bool:
    """True when ``path`` is inside ``parent`` (not ``parent`` itself)."""
    return path != parent and is_under(path, parent)
