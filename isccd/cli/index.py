"""The index commands: ``isccd scan``, ``isccd dupes``, ``isccd similar`` and ``isccd get``.

``scan`` reconciles roots into the store of a state directory (the same store the daemon uses),
hashing what changed in a process pool.

The other three ask the daemon on its socket when one answers (its index is warm and it knows
its roots), and otherwise read the store of the default state directory themselves; with
``--state DIR`` they read that store, with ``--socket PATH`` they need the daemon there. A store
is read through a read-only connection, so they work while the daemon or a scan writes it.
Both ways give the same result (:mod:`isccd.pipeline.answers`), printed the same way
(:mod:`isccd.cli.answers`). A daemon's error reply (a path outside its roots) is the answer:
the store is not read instead.

Every command prints readable text on a terminal and JSON with ``--json`` or when piped.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from isccd.cli.answers import format_dupes, format_file, format_similar
from isccd.cli.connect import ANSWER_TIMEOUT, add_socket_option, connect
from isccd.cli.output import Progress, print_json, wants_json
from isccd.client import Client
from isccd.dirs import default_socket_path, default_state_dir
from isccd.errors import DaemonUnavailableError, ProtocolError, StoreError, StoreLockedError
from isccd.hashing import CodeOptions, compute_record, current_versions
from isccd.pipeline import Indexer, Pipeline, PipelineOptions, PoolHasher, ScanStats, answers
from isccd.protocol import DupesQuery, ErrorCode, FileInfo, SimilarQuery, SimilarResult, to_wire
from isccd.protocol.requests import (
    DUPES_LIMIT,
    DUPES_LIMIT_MAX,
    MAX_DISTANCE,
    SIMILAR_LIMIT,
    SIMILAR_LIMIT_MAX,
)
from isccd.store import StoredFile, open_store, state_url
from isccd.watch.scan import ScanOptions, compile_ignore

T = TypeVar("T")

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2

_SCAN_EPILOG = """\
Only files whose size, times or inode changed since the last scan are read; renamed files keep
their codes; files gone from disk are kept as tombstones for 30 days. Symbolic links are not
followed (--follow-symlinks to follow them); FIFOs, sockets and devices are skipped.

exit status: 0 when every file was indexed; 1 when some could not be (unreadable, changing while
read, parts of the tree that could not be listed: each is in the summary), or the store could
not be used; 2 for invalid arguments.
"""

_READ_SOURCE = (
    " The answer comes from the daemon, asked on its socket (--socket PATH, or the default "
    "one), which answers from its in-memory index about paths inside its roots; with --state "
    "DIR, from the index in DIR, read directly; and when no daemon answers on the default "
    "socket, from the index in the default state directory, read directly. It has the same "
    "form either way."
)

_READ_EPILOG = (
    "exit status: 0 success; 1 when the daemon refuses the request (e.g. a path outside its "
    "roots), the file is not in the index, no daemon answers on the --socket given, or the "
    "index cannot be read; 2 for invalid arguments."
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``scan``, ``dupes``, ``similar`` and ``get`` to the ``isccd`` parser."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--state",
        metavar="DIR",
        type=Path,
        default=None,
        help="state directory holding the index (default: the daemon's)",
    )
    common.add_argument("--json", action="store_true", help="print JSON (default when piped)")

    scan = subparsers.add_parser(
        "scan",
        parents=[common],
        help="index folders once (reconcile the store with the disk)",
        description="Scan folders into the index: hash new and changed files, follow renames "
        "without rehashing, remember removals, and report duplicates.",
        epilog=_SCAN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    scan.add_argument("roots", nargs="+", metavar="ROOT", help="a folder to index")
    scan.add_argument(
        "-j", "--jobs", type=_positive_int, default=os.cpu_count() or 1,
        help="files hashed in parallel (default: the number of CPUs)",
    )  # fmt: skip
    scan.add_argument(
        "--ignore", action="append", default=[], metavar="PATTERN",
        help="gitignore-style pattern relative to each root (repeatable)",
    )  # fmt: skip
    scan.add_argument("--follow-symlinks", action="store_true", help="follow symbolic links")
    scan.add_argument(
        "--bits", type=int, choices=(64, 128, 256), default=64, help="bits per unit (default 64)"
    )
    scan.set_defaults(handler=run_scan)

    reader = argparse.ArgumentParser(add_help=False)
    where = reader.add_mutually_exclusive_group()
    where.add_argument(
        "--state",
        metavar="DIR",
        type=Path,
        default=None,
        help="read the index in DIR directly instead of asking the daemon",
    )
    add_socket_option(where)
    reader.add_argument("--json", action="store_true", help="print JSON (default when piped)")

    dup = subparsers.add_parser(
        "dupes",
        parents=[reader],
        help="list duplicate files, the most wasted space first",
        description="List groups of exact duplicates (same bytes; hardlinks are one file), "
        "and with --near also groups of near duplicates, the most wasted bytes first."
        + _READ_SOURCE,
        epilog=_READ_EPILOG,
    )
    dup.add_argument("--near", action="store_true", help="include near-duplicate groups")
    dup.add_argument(
        "--limit", type=_limit(DUPES_LIMIT_MAX), metavar="N", default=DUPES_LIMIT,
        help=f"most groups listed (default {DUPES_LIMIT}, at most {DUPES_LIMIT_MAX:,})",
    )  # fmt: skip
    dup.set_defaults(handler=run_dupes)

    sim = subparsers.add_parser(
        "similar",
        help="list files similar to a file",
        parents=[reader],
        description="List the indexed files related to PATH, nearest first: its other names "
        "(hardlinks), its exact copies, and the files with a unit within reach of PATH's. A "
        "file that is not indexed is coded on the fly and not stored (by the daemon, only "
        "inside its roots and outside its ignore patterns)." + _READ_SOURCE,
        epilog=_READ_EPILOG,
    )
    sim.add_argument("path", metavar="PATH", help="a file (indexed or not)")
    sim.add_argument(
        "--max-distance", type=_limit(MAX_DISTANCE, 0), metavar="N", default=None,
        help="Hamming distance in bits of 64 (default: each unit type's threshold)",
    )  # fmt: skip
    sim.add_argument(
        "--limit", type=_limit(SIMILAR_LIMIT_MAX), metavar="N", default=SIMILAR_LIMIT,
        help=f"most files listed (default {SIMILAR_LIMIT}, at most {SIMILAR_LIMIT_MAX:,})",
    )  # fmt: skip
    sim.set_defaults(handler=run_similar)

    show = subparsers.add_parser(
        "get",
        help="show what the index knows about a file",
        parents=[reader],
        description="Show a file's record, units, hardlinks and duplicates from the index "
        "(a removed file's last record while its tombstone is kept)." + _READ_SOURCE,
        epilog=_READ_EPILOG,
    )
    show.add_argument("path", metavar="PATH", help="a file, or the name of a removed one")
    show.set_defaults(handler=run_get)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _limit(maximum: int, minimum: int = 1) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be {minimum} to {maximum}, got {value}")
        return value

    return parse


def _state(args: argparse.Namespace) -> Path:
    state: Path | None = args.state
    return state if state is not None else default_state_dir()


def _fail(message: str, status: int = EXIT_FAILURE) -> int:
    print(f"isccd: {message}", file=sys.stderr)
    return status


def file_path(path: str) -> str:
    """An absolute path with its directory resolved (as the store keeps paths) but the last
    component kept, so that a symbolic link is asked about as itself."""
    absolute = Path(path).absolute()
    if absolute.name in ("", ".", ".."):
        return str(absolute.resolve())
    return str(absolute.parent.resolve() / absolute.name)


# -- scan ----------------------------------------------------------------------------------------


def run_scan(args: argparse.Namespace) -> int:
    """``isccd scan``."""
    roots = []
    for root in args.roots:
        real = os.path.realpath(root)
        if not Path(real).is_dir():
            return _fail(f"{root}: not a directory", EXIT_USAGE)
        roots.append(real)
    scan_options = ScanOptions(follow_symlinks=args.follow_symlinks, ignore=tuple(args.ignore))
    try:
        compile_ignore(scan_options.ignore)
    except ValueError as exc:
        return _fail(str(exc), EXIT_USAGE)
    code_options = CodeOptions(bits=args.bits)
    options = PipelineOptions(
        versions=current_versions(code_options), hash_concurrency=2 * args.jobs + 2
    )
    hasher = PoolHasher(code_options, workers=args.jobs)
    pipeline = Pipeline(state_url(_state(args)), options, hasher=hasher)
    try:
        results = asyncio.run(_scan(pipeline, roots, scan_options))
    except StoreLockedError as exc:
        return _fail(_locked(exc, roots))
    except StoreError as exc:
        return _fail(str(exc))
    finally:
        pipeline.close()
        hasher.close()
    if wants_json(args.json):
        print_json({"roots": [s.as_dict() for s in results]}, indent=2)
    else:
        for stats in results:
            _print_scan(stats)
    incomplete = any(s.errors or s.unstable or s.issues for s in results)
    return EXIT_FAILURE if incomplete else EXIT_OK


async def _scan(pipeline: Pipeline, roots: list[str], options: ScanOptions) -> list[ScanStats]:
    await asyncio.to_thread(pipeline.open)
    results = []
    for root in roots:
        with Progress(f"scanning {root}") as progress:

            def show(stats: ScanStats, progress: Progress = progress) -> None:
                progress.total = stats.queued or None
                progress.done = stats.hashed
                progress.advance(0, f"{stats.seen} files seen")

            results.append(await pipeline.reconcile(root, scan=options, progress=show))
    await pipeline.purge()
    return results


def _locked(exc: StoreLockedError, roots: list[str]) -> str:
    """Why a scan cannot write the store, and what to do instead: when the writer is the
    daemon on the default socket, ask it to reconcile the roots it watches."""
    try:
        with Client(default_socket_path(), timeout=ANSWER_TIMEOUT) as client:
            status = client.status()
    except (DaemonUnavailableError, ProtocolError):
        status = None
    if status is None or exc.holder is None or status.pid != exc.holder:
        return f"{exc}: wait until it is done (a daemon's index is updated with `isccd rescan`)"
    watched = [r.path for r in status.roots]
    outside = [r for r in roots if not any(r == w or r.startswith(w + "/") for w in watched)]
    if outside:
        return (
            f"{exc}: it is the daemon, which does not watch {', '.join(outside)}; add "
            "the folder to its roots (`[watch] roots` in its configuration) and reload it"
        )
    command = "isccd rescan --wait" + (f" {shlex.quote(roots[0])}" if len(roots) == 1 else "")
    return f"{exc}: it is the daemon; ask it to reconcile instead: `{command}`"


def _print_scan(stats: ScanStats) -> None:
    print(
        f"{stats.root}: {stats.seen} files, {stats.unchanged} unchanged, {stats.added} added, "
        f"{stats.changed} changed, {stats.moved} moved, {stats.removed} removed, "
        f"{stats.duplicates} duplicate findings, {stats.errors} errors, "
        f"{stats.unstable} unstable ({stats.hashed} hashed in {stats.seconds:.1f} s)"
    )
    for issue in stats.issues:
        print(f"  {issue.path}: {issue.message}")


# -- read-only commands --------------------------------------------------------------------------


class _Failed(Exception):
    """A read-only command cannot answer; the message says why."""


def _answer(
    args: argparse.Namespace, ask: Callable[[Client], T], read: Callable[[Indexer], T]
) -> T:
    """Ask the daemon, or read the store (see the module docstring).

    Raises:
        _Failed: The daemon refused, none answers on an explicit ``--socket``, or the store
            cannot be read.
    """
    unavailable: DaemonUnavailableError | None = None
    if args.state is None:
        try:
            client = connect(args)
        except DaemonUnavailableError as exc:
            if args.socket is not None:
                raise _Failed(str(exc)) from None
            unavailable = exc
        except ProtocolError as exc:
            raise _Failed(f"{exc.message} ({exc.code})") from None
        else:
            # A daemon that answered is the source from now on: its refusal, or its loss, is
            # the outcome. It works on the request (a large `dupes`, a file coded on the fly)
            # for as long as that takes.
            try:
                with client, client.waiting(None):
                    return ask(client)
            except DaemonUnavailableError as exc:
                raise _Failed(str(exc)) from None
            except ProtocolError as exc:
                raise _Failed(f"{exc.message} ({exc.code})") from None
    try:
        store = open_store(state_url(_state(args)), readonly=True)
        ix = Indexer(store, PipelineOptions(), load=False)
        try:
            return read(ix)
        finally:
            ix.close()
    except ProtocolError as exc:  # the same refusals as the daemon's
        raise _Failed(f"{exc.message} ({exc.code})") from None
    except StoreError as exc:
        # Say why the daemon was not asked either: its socket may just be out of reach.
        raise _Failed(f"{exc}; {unavailable}" if unavailable else str(exc)) from None


def run_dupes(args: argparse.Namespace) -> int:
    """``isccd dupes``."""
    query = DupesQuery(near=args.near, limit=args.limit)
    try:
        result = _answer(args, lambda c: c.dupes(query), lambda ix: answers.dupes(ix, query))
    except _Failed as exc:
        return _fail(str(exc))
    _print(args, result, format_dupes)
    return EXIT_OK


def run_similar(args: argparse.Namespace) -> int:
    """``isccd similar``."""
    path = file_path(args.path)
    query = SimilarQuery(path=path, max_distance=args.max_distance, limit=args.limit)

    def read(ix: Indexer) -> SimilarResult:
        stored = ix.store.file_at(path)
        if stored is None:
            stored = _coded(path)
        return answers.similar(ix, stored, query)

    try:
        result = _answer(args, lambda c: c.similar(query), read)
    except _Failed as exc:
        return _fail(str(exc))
    _print(args, result, format_similar)
    return EXIT_OK


def _coded(path: str) -> StoredFile:
    """A file that is not indexed, coded on the fly (as the daemon does)."""
    record = compute_record(path)
    if not record.units:
        reason = record.issues[0].reason if record.issues else "nothing could be computed"
        raise ProtocolError(
            ErrorCode.NOT_FOUND, f"{path!r} is not in the index and cannot be coded: {reason}"
        )
    return answers.unsaved(record)


def run_get(args: argparse.Namespace) -> int:
    """``isccd get``."""
    path = file_path(args.path)

    def read(ix: Indexer) -> FileInfo:
        info = answers.get(ix, path)
        if info is None:
            raise ProtocolError(ErrorCode.NOT_FOUND, f"{path!r} is not in the index")
        return info

    try:
        info = _answer(args, lambda c: c.get(path), read)
    except _Failed as exc:
        return _fail(str(exc))
    _print(args, info, format_file)
    return EXIT_OK


def _print(args: argparse.Namespace, result: T, text: Callable[[T], str]) -> None:
    if wants_json(args.json):
        print_json(to_wire(result), indent=2)
    else:
        sys.stdout.write(text(result))
