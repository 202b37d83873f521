"""The files of a report as they are now: each one's identity, and its preview from the cache or
made in a small pool of worker processes.

The previews are made by the report command's own processes, never by the daemon: the workers
run at a lower priority (``nice`` 10) so that they do not slow the daemon's indexing, at most
``jobs`` at once, each file bounded as :mod:`isccd.report.preview` says. A worker that dies (a
decoder crash) costs that file its picture, not the report: the pool is started again, the
files that were in flight are made again one at a time, and the one that kills its worker
alone gets an icon.
"""

from __future__ import annotations

import multiprocessing
import os
import stat
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from isccd.extract.source import file_kind
from isccd.report.cache import PreviewCache
from isccd.report.model import FileFacts, FileStat, Preview, PreviewKind
from isccd.report.preview import Made, PreviewOptions, make_preview

#: Priority increment of the worker processes.
WORKER_NICENESS = 10

#: Pools started at most (the first, and one more each time a worker dies).
_POOLS = 8


def _look(path: str) -> FileStat | str:
    """``lstat`` of ``path`` (never following a link), or why it cannot be shown."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "gone since it was indexed"
    except OSError as exc:
        return f"cannot be looked at: {exc.strerror}"
    if not stat.S_ISREG(st.st_mode):
        return f"now {file_kind(st.st_mode)}"
    return file_stat(st)


def file_stat(st: os.stat_result) -> FileStat:
    """The identity and version a plan records of a file, and the space it takes."""
    return FileStat(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_blocks * 512)


def look_at(
    paths: Iterable[str],
    options: PreviewOptions,
    cache: PreviewCache | None,
    *,
    jobs: int = 2,
    progress: Callable[[int, int], None] | None = None,
    make: Callable[[str, PreviewOptions], Made] = make_preview,
) -> dict[str, FileFacts]:
    """Each file as it is now, with its preview.

    Args:
        paths: The files (each looked at once).
        options: How previews are made.
        cache: Where previews are kept between reports (``None``: made every time).
        jobs: Worker processes making previews at once.
        progress: Called with the previews made so far and the number to make.
        make: What makes one preview in a worker (a module-level function).

    Returns:
        The facts of every path.
    """
    facts: dict[str, FileFacts] = {}
    missing: dict[str, FileStat] = {}
    for path in dict.fromkeys(paths):
        seen = _look(path)
        if isinstance(seen, str):
            facts[path] = FileFacts(None, Preview(PreviewKind.ICON, note=seen))
            continue
        cached = cache.get(cache.key(path, seen)) if cache is not None else None
        if cached is not None:
            facts[path] = FileFacts(seen, cached)
        else:
            missing[path] = seen
    total = len(missing)
    for done, (path, made) in enumerate(_make_all(list(missing), options, jobs, make), 1):
        seen = missing[path]
        if made.stat is not None:
            seen = file_stat(made.stat)
            if cache is not None and made.lasting:
                cache.put(cache.key(path, seen), made.preview)
        facts[path] = FileFacts(seen, made.preview)
        if progress is not None:
            progress(done, total)
    if cache is not None:
        cache.prune()
    return facts


def _make_all(
    paths: list[str],
    options: PreviewOptions,
    jobs: int,
    make: Callable[[str, PreviewOptions], Made],
) -> Iterable[tuple[str, Made]]:
    """Make the previews of ``paths`` in worker processes, yielding each as it is done.

    When a worker dies, the files that were in flight become suspects and are made again one
    at a time: a file whose worker dies while it is made alone gets an icon.
    """
    if not paths:
        return
    queue = list(reversed(paths))
    suspects: list[str] = []
    context = multiprocessing.get_context("forkserver")
    # Workers fork from a server that has imported the decoders once: a pool (and a pool
    # started again after a worker died) is ready in milliseconds, not half a second.
    context.set_forkserver_preload([make.__module__])
    for _ in range(_POOLS):
        alone: str | None = None
        with ProcessPoolExecutor(jobs, mp_context=context, initializer=_lower_priority) as pool:
            running: dict[Future[Made], str] = {}
            try:
                while queue or suspects or running:
                    if alone is None and suspects and not running:
                        alone = suspects.pop()
                        running[pool.submit(make, alone, options)] = alone
                    # A few files queued per worker keep them busy; no more, to bound memory.
                    while alone is None and not suspects and queue and len(running) < 4 * jobs:
                        path = queue.pop()
                        running[pool.submit(make, path, options)] = path
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in finished:
                        made = future.result()  # first: a broken pool leaves it running
                        path = running.pop(future)
                        alone = None if path == alone else alone
                        yield path, made
            except BrokenProcessPool:
                if alone is not None:
                    yield alone, _died()
                else:
                    suspects.extend(running.values())
            else:
                return
    for path in [*reversed(suspects), *reversed(queue)]:
        yield path, _died()


def _died() -> Made:
    note = "no preview: the process making it died"
    return Made(Preview(PreviewKind.ICON, note=note), None, lasting=False)


def _lower_priority() -> None:
    os.nice(WORKER_NICENESS)
