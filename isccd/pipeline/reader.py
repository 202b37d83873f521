"""The index of a store read directly, for the commands when no daemon answers.

A read-only connection, so it works while the daemon or a scan writes the store; the search
loads only the unit types a question needs. Its answers are the daemon's (the same functions
of :mod:`isccd.pipeline.queries` and :mod:`~isccd.pipeline.groups`), member for member.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType

from isccd.model import FileIssue, FileRecord
from isccd.pipeline import groups, queries, watched
from isccd.pipeline.index import Index
from isccd.pipeline.options import PipelineOptions
from isccd.results import (
    DupesQuery,
    DupesResult,
    FileInfo,
    SimilarQuery,
    SimilarResult,
    WatchedQuery,
    WatchedResult,
)
from isccd.results.folders import DirsResult
from isccd.results.queries import DirsQuery
from isccd.store import open_store


class IndexReader:
    """Answers ``get``, ``similar``, ``dupes`` and ``watched`` from a store, read-only.

    Args:
        store_url: Where the store lives (see :func:`isccd.store.open_store`).
        options: The duplicate policy the answers follow.
        host: The host name the store is opened for (default: the machine's).

    Raises:
        StoreError: The store cannot be opened.
    """

    def __init__(
        self, store_url: str, options: PipelineOptions, *, host: str | None = None
    ) -> None:
        self._ix = Index(open_store(store_url, host=host, readonly=True), options, load=False)

    def close(self) -> None:
        """Close the store."""
        self._ix.close()

    def store_id(self) -> str:
        """The store's identity (what a daemon serving it says in ``hello``)."""
        return self._ix.store.identity

    def __enter__(self) -> IndexReader:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def get(self, path: str, host: str | None = None) -> FileInfo | None:
        """What the index knows about ``path`` (a tombstone if it was removed), or ``None``;
        ``host``: only its duplicates on that host."""
        return queries.get(self._ix, path, host)

    def similar(self, query: SimilarQuery, code: Callable[[str], FileRecord]) -> SimilarResult:
        """Files related to a file or a code, as :meth:`isccd.pipeline.Pipeline.similar`.

        Args:
            query: The question.
            code: Codes a file the index does not hold (``query.path``), without storing it.

        Raises:
            InvalidCodeError: The code cannot be decoded.
            NotIndexedError: The file is not indexed and cannot be coded.
        """
        found = queries.subject(self._ix, query)
        subject = queries.coded(found, code(found)) if isinstance(found, str) else found
        return queries.similar(self._ix, subject, query)

    def dupes(self, query: DupesQuery) -> DupesResult:
        """Duplicate groups, the most reclaimable bytes first."""
        return groups.dupes(self._ix, query)

    def dup_dirs(self, query: DirsQuery) -> DirsResult:
        """Duplicate folders, as :meth:`isccd.pipeline.Pipeline.dup_dirs`."""
        return groups.dup_dirs(self._ix, query)

    def watched(self, query: WatchedQuery) -> WatchedResult:
        """The indexed files matching a watchlist, as :meth:`isccd.pipeline.Pipeline.watched`.

        Raises:
            UnknownWatchlistError: There is no such watchlist.
        """
        return watched.watched(self._ix, query)

    def roots(self) -> tuple[str, ...]:
        """The roots this host's live files are under, as the store records them (a shared
        database's rows may have been written by any host: see :mod:`isccd.cli.roots`)."""
        return tuple(self._ix.store.live_by_root())

    def problems(
        self, under: Sequence[str] = (), *, actionable: bool = False
    ) -> list[tuple[str, tuple[FileIssue, ...]]]:
        """The path and issues of each live file with issues at or below ``under`` (every
        root's when it is empty), by path; their records are not read.

        Args:
            actionable: Only the files with an :attr:`~isccd.model.FileIssue.actionable`
                issue (all their issues).
        """
        store = self._ix.store
        places = under or list(store.live_by_root())
        found = {
            path: issues
            for place in places
            for path, issues in store.issues_under(place, actionable=actionable)
        }
        return sorted(found.items())
