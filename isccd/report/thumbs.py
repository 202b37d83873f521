"""The files of a report as they are now: each one's identity, and its preview from the cache or
made in a small pool of worker processes.

Every file is read beneath its watched root (:class:`isccd.beneath.RootDir` for the identity,
:func:`~isccd.extract.source.open_source` with the root for the preview), and only when that
root is one of this host's: a row of the index names a path and a root, and in a database a
fleet shares any host can write one. A folder swapped for a symbolic link to a private folder
after indexing, or a forged row naming a file outside the roots, gives an icon, never the
file's first lines or picture.

The previews are made by the report command's own processes, never by the daemon: the workers
run at a lower priority (``nice`` 10) so that they do not slow the daemon's indexing, at most
``jobs`` at once, each file bounded as :mod:`isccd.report.preview` says. A worker that dies (a
decoder crash) costs that file its picture, not the report: the pool is started again, the
files that were in flight are made again one at a time, and the one that kills its worker
alone gets an icon.
"""

from __future__ import annotations

import contextlib
import errno
import multiprocessing
import os
import stat
from collections.abc import Callable, Collection, Generator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from isccd.beneath import RootDir
from isccd.extract.source import file_kind
from isccd.fspath import is_below
from isccd.report.cache import PreviewCache
from isccd.report.model import FileFacts, FileStat, Preview, PreviewKind
from isccd.report.preview import Made, PreviewOptions, make_preview

#: Priority increment of the worker processes.
WORKER_NICENESS = 10

#: Pools started at most (the first, and one more each time a worker dies).
_POOLS = 8


#: Why a file whose root is not this host's is not looked at.
NOT_UNDER_A_ROOT = "not under a watched root of this host: not looked at"

#: Why a file cannot be shown, by the errno of looking it up beneath its root.
_REFUSED = {
    errno.ENOENT: "gone since it was indexed",
    errno.ELOOP: "reached through a symbolic link: not looked at",
    errno.EXDEV: NOT_UNDER_A_ROOT,
}


def _look(path: str, root: str, beneath: RootDir | str) -> FileStat | str:
    """``lstat`` of ``path`` reached beneath its root (never following a link out of it, nor
    the last component), or why it cannot be shown."""
    if isinstance(beneath, str):
        return beneath
    if not is_below(path, root):
        return NOT_UNDER_A_ROOT
    try:
        st = beneath.stat(path)
    except OSError as exc:
        return _REFUSED.get(exc.errno or 0, f"cannot be looked at: {exc.strerror}")
    if not stat.S_ISREG(st.st_mode):
        return f"now {file_kind(st.st_mode)}"
    return file_stat(st)


def _root_dir(root: str, roots: Collection[str], options: PreviewOptions) -> RootDir | str:
    if root not in roots:
        return NOT_UNDER_A_ROOT
    try:
        return RootDir(root, follow_symlinks=options.follow_symlinks)
    except OSError as exc:
        return f"its root cannot be opened: {exc.strerror}"


def file_stat(st: os.stat_result) -> FileStat:
    """The identity and version a plan records of a file, and the space it takes."""
    return FileStat(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_blocks * 512)


def look_at(
    files: Mapping[str, str],
    options: PreviewOptions,
    cache: PreviewCache | None,
    *,
    roots: Collection[str],
    jobs: int = 2,
    progress: Callable[[int, int], None] | None = None,
    make: Callable[[str, PreviewOptions, str], Made] = make_preview,
) -> dict[str, FileFacts]:
    """Each file as it is now, with its preview.

    Args:
        files: The files, each with the watched root the index says it is in.
        options: How previews are made.
        cache: Where previews are kept between reports (``None``: made every time).
        roots: This host's watched roots: a file whose root is not one of them, or that is
            not inside its root, is not looked at (an icon says so).
        jobs: Worker processes making previews at once.
        progress: Called with the previews made so far and the number to make.
        make: What makes one preview in a worker (a module-level function of the path, the
            options and the root to read it beneath).

    Returns:
        The facts of every path.
    """
    with contextlib.ExitStack() as stack:
        dirs: dict[str, RootDir | str] = {}
        for root in set(files.values()):
            opened = dirs[root] = _root_dir(root, roots, options)
            if isinstance(opened, RootDir):
                stack.callback(opened.close)
        looks = {path: _look(path, root, dirs[root]) for path, root in files.items()}
    facts: dict[str, FileFacts] = {}
    missing: dict[str, FileStat] = {}
    for path, seen in looks.items():
        if isinstance(seen, str):
            facts[path] = FileFacts(None, Preview(PreviewKind.ICON, note=seen))
            continue
        cached = cache.get(cache.key(path, seen)) if cache is not None else None
        if cached is not None:
            facts[path] = FileFacts(seen, cached)
        else:
            missing[path] = seen
    total = len(missing)
    todo = {path: files[path] for path in missing}
    # Closed as this function is left, whatever ends it: its workers with it, not whenever
    # the generator is collected.
    with contextlib.closing(_make_all(todo, options, jobs, make)) as making:
        for done, (path, made) in enumerate(making, 1):
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
    files: Mapping[str, str],
    options: PreviewOptions,
    jobs: int,
    make: Callable[[str, PreviewOptions, str], Made],
) -> Generator[tuple[str, Made], None, None]:
    """Make the previews of ``files`` (each read beneath its root) in worker processes,
    yielding each as it is done.

    When a worker dies, the files that were in flight become suspects and are made again one
    at a time: a file whose worker dies while it is made alone gets an icon.
    """
    if not files:
        return
    queue = list(reversed(list(files)))
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
                        running[pool.submit(make, alone, options, files[alone])] = alone
                    # A few files queued per worker keep them busy; no more, to bound memory.
                    while alone is None and not suspects and queue and len(running) < 4 * jobs:
                        path = queue.pop()
                        running[pool.submit(make, path, options, files[path])] = path
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
            except BaseException:
                # Interrupted (Ctrl-C), or the caller stopped reading: the files not yet
                # handed to a worker are dropped, and only the previews under way waited for.
                # A file whose submission the interrupt cut short is dropped with them, rather
                # than waited for for ever.
                pool.shutdown(wait=True, cancel_futures=True)
                raise
            else:
                return
    for path in [*reversed(suspects), *reversed(queue)]:
        yield path, _died()


def _died() -> Made:
    note = "no preview: the process making it died"
    return Made(Preview(PreviewKind.ICON, note=note), None, lasting=False)


def _lower_priority() -> None:
    os.nice(WORKER_NICENESS)
