"""This host's watched roots, as the commands that act on or read indexed files trust them.

``dedupe`` and ``report`` act on, or read, files an index names. Only the files under this
host's own roots are theirs to touch, each reached beneath its root: a plan file, or a row of a
database a fleet shares (any host with access can write one, its root and host included), may
name any path. The roots are taken from what this host alone decides:

- the daemon's roots, when the daemon answers (its ``status``);
- else the configured ``[watch] roots``, and the roots of a SQLite index owned by the user
  running the command (``isccd scan --state DIR`` writes one; nobody else could have written
  its rows). A PostgreSQL index's roots are never taken from its rows.
"""

from __future__ import annotations

import argparse
import os
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from isccd.cli.ask import answer

if TYPE_CHECKING:
    from isccd.client import Client
    from isccd.config import IndexConfig
    from isccd.pipeline import IndexReader

T = TypeVar("T")


def configured_roots(config: IndexConfig) -> tuple[str, ...]:
    """The configured ``[watch] roots``, their links resolved as the daemon resolves them."""
    return tuple(os.path.realpath(root) for root in config.settings.watch.roots)


def _own_sqlite(config: IndexConfig) -> bool:
    """Whether the index is a SQLite file owned by the user running the command."""
    scheme, sep, location = config.store_url.partition("://")
    if sep and scheme.lower() != "sqlite":
        return False
    path = os.fsdecode(urllib.parse.unquote_to_bytes(location)) if sep else config.store_url
    try:
        return Path(path).stat().st_uid == os.geteuid()
    except OSError:
        return False


def local_roots(reader: IndexReader, config: IndexConfig) -> tuple[str, ...]:
    """This host's roots when the index is read without the daemon (see the module
    docstring)."""
    roots = list(configured_roots(config))
    if _own_sqlite(config):
        roots += [r for r in reader.roots() if r not in roots]
    return tuple(roots)


def daemon_roots(client: Client) -> tuple[str, ...]:
    """The roots the daemon watches."""
    return tuple(root.path for root in client.status().roots)


def answer_with_roots(
    args: argparse.Namespace,
    ask: Callable[[Client], T],
    read: Callable[[IndexReader, IndexConfig], T],
) -> tuple[T, tuple[str, ...]]:
    """:func:`isccd.cli.ask.answer`, with this host's roots from the same source.

    Raises:
        Failed: As :func:`~isccd.cli.ask.answer`.
    """
    return answer(
        args,
        lambda client: (ask(client), daemon_roots(client)),
        lambda reader, config: (read(reader, config), local_roots(reader, config)),
    )
