"""The index commands: ``isccd scan``, ``isccd dupes``, ``isccd similar`` and ``isccd get``.

``scan`` reconciles roots into the store of a state directory (the same store the daemon uses),
hashing what changed in a process pool.

The other three ask the daemon on its socket when one answers (its index is warm and it knows
its roots), and otherwise read the store of the default state directory themselves; with
``--state DIR`` they read that store, with ``--socket PATH`` they need the daemon there. A store
is read through a read-only connection, so they work while the daemon or a scan writes it.
Both ways give the same result (the results of :mod:`isccd.results`), printed the same way
(:mod:`isccd.cli.answers`). A daemon's error reply (a path outside its roots) is the answer:
the store is not read instead; ``similar`` codes a file outside the daemon's roots itself and
asks by its code.

All four read the daemon's configuration (``--config FILE``, default: the daemon's default file
when it exists; ``ISCCD_*`` variables; :mod:`isccd.config`): its state directory, store
and socket, its duplicate policy, and for ``scan`` how files are coded and which are ignored.
An invalid configuration is one line on stderr and exit status 78, as for ``isccd run``. The
three readers ask the daemon before loading the configuration: its socket is found on its own
(:func:`isccd.cli.connect.find_socket`), and the rest is loaded, and checked, only when the
store is read instead.

Every command prints readable text, whether stdout is a terminal or not, and JSON with
``--json``. When no daemon answers, ``dupes``, ``similar`` and ``get`` name the store they read
on stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from socket import gethostname
from typing import TYPE_CHECKING, TypeVar

from isccd.cli import EXIT_CONFIG, EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from isccd.cli.ask import (
    Failed,
    answer,
    bounded,
    configure,
    fail,
    file_path,
    positive_int,
)
from isccd.cli.connect import (
    ANSWER_TIMEOUT,
    add_config_option,
    add_socket_option,
    config_tables,
)
from isccd.cli.errors import file_json, issues_text
from isccd.cli.escape import shown
from isccd.cli.formats import output_format
from isccd.cli.interrupts import Interrupts
from isccd.cli.output import Progress, parse_size, print_json
from isccd.collector import Collector, fewer_collections
from isccd.dirs import default_socket_path
from isccd.errors import (
    ConfigError,
    DaemonUnavailableError,
    HashingUnavailableError,
    ProtocolError,
    StoreError,
    StoreLockedError,
)
from isccd.extract.missing import MissingTools
from isccd.fspath import is_under
from isccd.model import UNIT_BITS, FileIssue, FileRecord, IssueKind, UnitType
from isccd.protocol import ErrorCode
from isccd.results import (
    DIRS_SHARE,
    DUPES_LIMIT,
    DUPES_LIMIT_MAX,
    FILE_TYPES,
    MAX_DISTANCE,
    SIMILAR_LIMIT,
    SIMILAR_LIMIT_MAX,
    DirsQuery,
    DupesQuery,
    SimilarQuery,
    WatchedQuery,
)

# The layers behind the commands (hashing, pipeline, store, the client) are imported by the
# handlers that use them: building the parser must stay cheap (isccd.cli.main).
if TYPE_CHECKING:
    from isccd.client import Client
    from isccd.config import IndexConfig
    from isccd.hashing.lazy import LazyWorkers
    from isccd.pipeline import Adopted, IndexReader, Pipeline, ScanStats
    from isccd.results import FileInfo, SimilarResult
    from isccd.walk import ScanOptions

T = TypeVar("T")

#: The variable naming the host this machine's files are stored under (``[store] host``).
_HOST_VARIABLE = "ISCCD_STORE__HOST"

#: The unit types ``--unit`` takes.
_UNIT_NAMES = tuple(t.value for t in UnitType)


_SCAN_EPILOG = """\
Only files whose size, times or inode changed since the last scan are read; renamed files keep
their codes; files gone from disk are kept as tombstones (30 days by default). Symbolic links
are not followed (--follow-symlinks to follow them); FIFOs, sockets and devices are skipped.

The daemon's configuration applies (--config FILE, ISCCD_* variables): the state directory, how
files are coded ([code]: bits, WIDE, Meta-Code, tools), what is ignored ([watch] ignore and
follow_symlinks), which files are duplicates ([match]) and the hashing workers; the options
here win over it, and --ignore adds to its patterns.

When [match] is not the policy the index's duplicates were decided under, the stored files it
affects are re-evaluated first, as the daemon does at a reload (dup.near, dup.exact and
dup.resolved events in the index's log).

The duplicate findings are the files this scan found to have the same bytes as another file,
or to be near one (dup.exact and dup.near events); the summary ends with the command that lists
them as groups (`isccd dupes --near --state DIR`).

The files that could not be indexed are listed after the counts, each with its reason and fix
(`isccd errors` lists those of earlier scans too); a missing tool is named once, on stderr.

exit status: 0 when every file was indexed; 1 when some could not be (unreadable, changing while
read, parts of the tree that could not be listed: each is in the summary), or the store could
not be used; 2 for invalid arguments; 78 for an invalid configuration; 130 when interrupted
(Ctrl-C or SIGTERM: what was indexed so far is kept).
"""

_READ_SOURCE = (
    " In a database a fleet of hosts shares, the answer spans the fleet and names each "
    "file's host (--host NAME narrows it to one host's files)."
    " The answer comes from the daemon, asked on its socket (--socket PATH, or the default "
    "one), which answers from its in-memory index about paths inside its roots; with --state "
    "DIR, from the index in DIR, read directly; and when no daemon answers on the default "
    "socket, from the index in the default state directory, read directly. It has the same "
    "form either way. The daemon's configuration (--config FILE, ISCCD_* variables) names its "
    "socket and state directory, and which files are duplicates ([match]) when the index is "
    "read directly."
)

_READ_EPILOG = (
    "exit status: 0 success; 1 when the daemon refuses the request (e.g. a path outside its "
    "roots), the file is not in the index, no daemon answers on the --socket given, or the "
    "index cannot be read; 2 for invalid arguments; 78 for an invalid configuration."
)


def add_group_filters(parser: argparse._ActionsContainer) -> None:
    """The filters of duplicate groups that ``dupes`` and ``dedupe`` share: ``--root``,
    ``--min-size`` and ``--type``."""
    parser.add_argument("--root", metavar="DIR", help="only groups with a file under DIR")
    parser.add_argument(
        "--min-size", type=parse_size, default=0, metavar="BYTES",
        help="only files of at least this size (suffixes K, M, G, T)",
    )  # fmt: skip
    parser.add_argument(
        "--type", dest="types", action="append", choices=FILE_TYPES, metavar="TYPE",
        help=f"only files of this type (repeatable): {', '.join(FILE_TYPES)}",
    )  # fmt: skip


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
    common.add_argument("--json", action="store_true", help="print JSON")
    add_config_option(common)

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
        "-j", "--jobs", type=positive_int, default=None,
        help="files hashed in parallel (default: [hashing] workers, else the number of CPUs)",
    )  # fmt: skip
    scan.add_argument(
        "--ignore", action="append", default=[], metavar="PATTERN",
        help="gitignore-style pattern relative to each root, besides [watch] ignore "
        "(repeatable)",
    )  # fmt: skip
    scan.add_argument(
        "--follow-symlinks", action=argparse.BooleanOptionalAction, default=None,
        help="follow symbolic links to directories (default: [watch] follow_symlinks, off)",
    )  # fmt: skip
    scan.add_argument(
        "--bits", type=int, choices=UNIT_BITS, default=None,
        help="bits per unit (default: [code] bits, 64)",
    )  # fmt: skip
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
    reader.add_argument("--json", action="store_true", help="print JSON")
    reader.add_argument(
        "--host",
        metavar="NAME",
        help="in a database a fleet shares: only files on host NAME (dupes: groups with a "
        "file there); every host's by default",
    )
    add_config_option(reader)

    dup = subparsers.add_parser(
        "dupes",
        parents=[reader],
        help="list duplicate files, the most reclaimable space first",
        description="List groups of exact duplicates (same bytes; hardlinks are one file), "
        "and with --near also groups of near duplicates, the most reclaimable bytes first, "
        "then a totals line (groups, files, reclaimable bytes). Reclaimable bytes are space on "
        "disk (the blocks the files take, as du counts them: a sparse file frees less than "
        "its size). The totals count each file once: a file in two groups (exact copies are "
        "near duplicates of each other too) is one file, and groups that share a file are "
        "taken together, keeping the largest file of each such set. A near group is a centre "
        "and the files within the threshold of it by one unit: its centre first, then each "
        "member with its distance to the centre. The "
        "filters narrow the configured [match] policy, never widen it." + _READ_SOURCE,
        epilog=_READ_EPILOG,
    )
    dup.add_argument("--near", action="store_true", help="include near-duplicate groups")
    add_group_filters(dup)
    dup.add_argument(
        "--unit", dest="units", action="append", choices=_UNIT_NAMES, metavar="UNIT",
        help="only groups by this unit type (repeatable; instance: exact groups): "
        + ", ".join(_UNIT_NAMES),
    )  # fmt: skip
    dup.add_argument(
        "--max-distance", type=bounded(MAX_DISTANCE, 0), metavar="N", default=None,
        help="only near relations within N bits of 64 (default: each unit type's threshold)",
    )  # fmt: skip
    dup.add_argument(
        "--watchlist", metavar="NAME",
        help="instead of groups: the files matching the watchlist's references, a group per "
        "reference (exact matches; near ones too with --near)",
    )  # fmt: skip
    dup.add_argument(
        "--dirs", action="store_true",
        help="instead of files: folders holding the same file contents as another folder "
        "(names and layout aside; with --near, folders sharing at least --share of their "
        "files), each at the highest level that qualifies",
    )  # fmt: skip
    dup.add_argument(
        "--share", type=_percent, metavar="PERCENT", default=None,
        help=f"with --dirs --near: the least share of two folders' files that have a duplicate "
        f"in the other (default {round(DIRS_SHARE * 100)})",
    )  # fmt: skip
    dup.add_argument(
        "--csv", action="store_true",
        help="print CSV: a header, then one row per file name (columns in the README)",
    )  # fmt: skip
    dup.add_argument(
        "--limit", type=bounded(DUPES_LIMIT_MAX), metavar="N", default=DUPES_LIMIT,
        help=f"most groups listed (default {DUPES_LIMIT}, at most {DUPES_LIMIT_MAX:,})",
    )  # fmt: skip
    dup.set_defaults(handler=run_dupes)

    sim = subparsers.add_parser(
        "similar",
        help="list files similar to a file or a code",
        parents=[reader],
        description="List the indexed files related to PATH, or to an ISCC code (--code: is "
        "this already in my library?), nearest first: its other names (hardlinks), its exact "
        "copies, and the files with a unit within reach of its units; a file with several "
        "names is listed once. A file that is not indexed is coded on the fly and not stored: "
        "inside the daemon's roots by the daemon, anywhere else by this command, which then "
        "asks by its code (the daemon never reads outside its roots), so the answer is the "
        "same with or without a daemon." + _READ_SOURCE,
        epilog=_READ_EPILOG,
    )
    what = sim.add_mutually_exclusive_group(required=True)
    what.add_argument("path", metavar="PATH", nargs="?", help="a file (indexed or not)")
    what.add_argument("--code", metavar="ISCC", help="an ISCC-CODE or ISCC unit instead of a file")
    what.add_argument(
        "--watchlist", metavar="NAME",
        help="the files matching the watchlist's references instead, a group per reference",
    )  # fmt: skip
    sim.add_argument(
        "--unit", dest="units", action="append", choices=_UNIT_NAMES, metavar="UNIT",
        help="compare only this unit type (repeatable; instance: exact copies and hardlinks): "
        + ", ".join(_UNIT_NAMES),
    )  # fmt: skip
    sim.add_argument(
        "--max-distance", type=bounded(MAX_DISTANCE, 0), metavar="N", default=None,
        help="Hamming distance in bits of 64 (default: each unit type's threshold)",
    )  # fmt: skip
    sim.add_argument(
        "--limit", type=bounded(SIMILAR_LIMIT_MAX), metavar="N", default=SIMILAR_LIMIT,
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


# -- scan ----------------------------------------------------------------------------------------


def run_scan(args: argparse.Namespace) -> int:
    """``isccd scan``."""
    from isccd import forkserver  # noqa: PLC0415

    # Started before anything else is imported (by isccd.cli.main, before the parser; here
    # again, a no-op then, for callers of run_scan): it loads the kernels on another core
    # while this process starts, so the workers are warm when the walk finds the first file.
    early = forkserver.start_early()
    # SIGINT and SIGTERM (`timeout`, a stopped unit) end a scan where it is safe to: its
    # workers are ended and its temporary files removed, what it stored is committed and the
    # store closed, and the command ends as interrupted; killed, it left both.
    with Interrupts() as interrupts:
        try:
            with fewer_collections() as collector:
                return _scan_command(args, collector, interrupts)
        finally:
            if early:  # a scan that hashed nothing leaves nothing behind either
                with interrupts.held():
                    forkserver.end()


def _scan_command(args: argparse.Namespace, collector: Collector, interrupts: Interrupts) -> int:
    import asyncio  # noqa: PLC0415

    from isccd.hashing.lazy import LazyWorkers  # noqa: PLC0415
    from isccd.pipeline import LOG_MARK_NAME, Pipeline  # noqa: PLC0415
    from isccd.walk import compile_ignore  # noqa: PLC0415

    roots = []
    for root in args.roots:
        real = os.path.realpath(root)
        if not Path(real).is_dir():
            return fail(f"{root}: not a directory", EXIT_USAGE)
        roots.append(real)
    try:
        compile_ignore(args.ignore)
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    overrides: dict[str, dict[str, object]] = {}
    if args.bits is not None:
        overrides["code"] = {"bits": args.bits}
    if args.follow_symlinks is not None:
        overrides["watch"] = {"follow_symlinks": args.follow_symlinks}
    try:
        config = configure(args, overrides, asked=False)  # its own index, never a daemon's
        scan_options = config.scan_options(roots, args.ignore)
    except ConfigError as exc:
        return fail(str(exc), EXIT_CONFIG)
    jobs: int = args.jobs or config.workers
    hasher = LazyWorkers(config.hashing(jobs))
    pipeline = Pipeline(
        config.store_url,
        config.scanning(jobs),
        host=config.store_host,
        hasher=hasher,
        log_mark=config.state_dir / LOG_MARK_NAME,
    )
    collector.settled()
    try:
        with interrupts.held():
            try:
                adopted, results = asyncio.run(
                    _scan(pipeline, hasher, roots, scan_options, interrupts)
                )
            finally:
                pipeline.close()
    except StoreLockedError as exc:
        return fail(_locked(exc, roots, config.socket))
    except (StoreError, HashingUnavailableError) as exc:
        return fail(str(exc))
    print(f"isccd: indexed into {shown(config.store_name)}", file=sys.stderr)
    return _report_scan(args, config, roots, adopted, results)


def _report_scan(
    args: argparse.Namespace,
    config: IndexConfig,
    roots: list[str],
    adopted: Adopted,
    results: list[ScanStats],
) -> int:
    """Print what a scan did, and the files under its roots that could not be indexed, each
    with its issues (read back from the index, as ``isccd errors`` lists them); a missing tool
    is told once, on stderr. Returns the exit status (see the epilog)."""
    troubled: list[tuple[str, tuple[FileIssue, ...]]] = []
    # A scan that hashed nothing (all unchanged, the common rescan) found nothing new to report.
    if any(s.hashed or s.errors or s.unstable for s in results):
        from isccd.pipeline import IndexReader  # noqa: PLC0415

        try:
            with IndexReader(config.store_url, config.reading(), host=config.store_host) as reader:
                troubled = reader.problems(roots, actionable=True)
        except StoreError as exc:
            return fail(str(exc))
    failed = [(path, [i for i in issues if i.kind is IssueKind.ERROR]) for path, issues in troubled]
    failed = [(path, issues) for path, issues in failed if issues]
    if output_format(args) != "text":
        files = [file_json(path, issues) for path, issues in failed]
        print_json({"roots": [s.as_dict() for s in results], "failed": files}, indent=2)
    else:
        _print_adopted(adopted)
        for stats in results:
            _print_scan(stats)
        found = sum(s.duplicates for s in results)
        if found:
            print(_dupes_hint(args, config, found))
        if failed:
            print(f"{len(failed)} files could not be indexed:")
            sys.stdout.write(issues_text(failed))
    missing = MissingTools()
    for _, issues in troubled:
        missing.add(issues)
    for line in missing.lines():
        print(f"isccd: {line}", file=sys.stderr)
    incomplete = any(s.errors or s.unstable or s.issues for s in results)
    return EXIT_FAILURE if incomplete else EXIT_OK


async def _scan(
    pipeline: Pipeline,
    hasher: LazyWorkers,
    roots: list[str],
    options: ScanOptions,
    interrupts: Interrupts,
) -> tuple[Adopted, list[ScanStats]]:
    with interrupts.cancelling():  # a signal cancels the scan at the await it waits on
        return await _scan_roots(pipeline, hasher, roots, options)


async def _scan_roots(
    pipeline: Pipeline, hasher: LazyWorkers, roots: list[str], options: ScanOptions
) -> tuple[Adopted, list[ScanStats]]:
    import asyncio  # noqa: PLC0415

    adopted = await asyncio.to_thread(pipeline.open)
    results = []
    try:
        for root in roots:
            with Progress(f"scanning {shown(root)}") as progress:

                def show(stats: ScanStats, progress: Progress = progress) -> None:
                    progress.total = stats.queued or None
                    progress.done = stats.hashed
                    progress.advance(0, f"{stats.seen} files seen")

                results.append(await pipeline.reconcile(root, scan=options, progress=show))
    finally:
        await hasher.close()
    await pipeline.purge()
    return adopted, results


def _locked(exc: StoreLockedError, roots: list[str], socket: Path) -> str:
    """Why a scan cannot write the store, and what to do instead: when the writer is the
    daemon on its socket, ask it to reconcile the roots it watches."""
    from isccd.client import Client  # noqa: PLC0415

    try:
        with Client(socket, timeout=ANSWER_TIMEOUT) as client:
            status = client.status()
    except (DaemonUnavailableError, ProtocolError):
        status = None
    if status is None or exc.holder is None or status.pid != exc.holder:
        return f"{exc}: wait until it is done (a daemon's index is updated with `isccd rescan`)"
    watched = [r.path for r in status.roots]
    outside = [r for r in roots if not any(is_under(r, w) for w in watched)]
    if outside:
        return (
            f"{exc}: it is the daemon, which does not watch {', '.join(outside)}; add "
            "the folder to its roots (`[watch] roots` in its configuration) and reload it"
        )
    command = "isccd rescan --wait"
    if socket != default_socket_path():
        command += f" --socket {shlex.quote(str(socket))}"
    command += f" {shlex.quote(roots[0])}" if len(roots) == 1 else ""
    return f"{exc}: it is the daemon; ask it to reconcile instead: `{command}`"


def _print_adopted(adopted: Adopted) -> None:
    if adopted.previous is not None:
        print(
            f"duplicate policy changed since the index was written: {adopted.files} files "
            f"re-evaluated, {len(adopted.events)} events"
        )


def _dupes_hint(args: argparse.Namespace, config: IndexConfig, found: int) -> str:
    """What the duplicate findings of a scan are, and the command that lists them from the
    store the scan wrote (whichever daemon runs, or none)."""
    command = "isccd dupes --near"
    if config.store_url.startswith("sqlite:"):
        command += f" --state {shlex.quote(str(config.state_dir))}"
    elif args.config is not None:
        command += f" --config {shlex.quote(str(args.config))}"
    return (
        f"{found:,} duplicate findings: files found to have the same bytes as another file, "
        f"or to be near one; list them as groups: {shown(command)}"
    )


def _print_scan(stats: ScanStats) -> None:
    print(
        f"{shown(stats.root)}: {stats.seen} files, {stats.unchanged} unchanged, "
        f"{stats.added} added, {stats.changed} changed, {stats.moved} moved, "
        f"{stats.removed} removed, "
        f"{stats.duplicates} duplicate findings, {stats.errors} errors, "
        f"{stats.unstable} unstable ({stats.hashed} hashed in {stats.seconds:.1f} s)"
    )
    for issue in stats.issues:
        print(f"  {shown(issue.path)}: {issue.message}")


# -- read-only commands --------------------------------------------------------------------------


def _percent(text: str) -> float:
    """A ``--share``: a percentage above 0 and at most 100, as a fraction."""
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage") from None
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"{text} is not above 0 and at most 100")
    return value / 100


def run_dupes(args: argparse.Namespace) -> int:
    """``isccd dupes``."""
    if args.watchlist is not None:
        if args.dirs:
            return fail("--dirs and --watchlist do not go together", EXIT_USAGE)
        return _watched(args, near=args.near, csv=args.csv)
    if args.dirs:
        return _dirs(args)
    if args.share is not None:
        return fail("--share applies to --dirs --near only", EXIT_USAGE)
    query = DupesQuery(
        near=args.near,
        root=os.path.realpath(args.root) if args.root else None,
        limit=args.limit,
        host=args.host,
        units=_unit_types(args.units),
        max_distance=args.max_distance,
        min_size=args.min_size,
        types=tuple(dict.fromkeys(args.types)) if args.types else None,
    )
    try:
        result = answer(args, lambda c: c.dupes(query), lambda index, _: index.dupes(query))
    except Failed as exc:
        return fail(str(exc), exc.status)
    from isccd.cli.answers import format_dupes, write_dupes_csv  # noqa: PLC0415 - see _print

    if args.csv:
        write_dupes_csv(result, sys.stdout)
    else:
        _print(args, result, format_dupes)
    return EXIT_OK


def _dirs(args: argparse.Namespace) -> int:
    """``dupes --dirs``: duplicate folders (the file filters do not apply: a folder is all of
    its files)."""
    given = [
        flag
        for flag, value in (
            ("--unit", args.units), ("--max-distance", args.max_distance),
            ("--min-size", args.min_size), ("--type", args.types),
        )
        if value
    ]  # fmt: skip
    if given:
        return fail(f"{', '.join(given)} does not apply to --dirs: a folder is all its files",
                    EXIT_USAGE)  # fmt: skip
    if args.share is not None and not args.near:
        return fail("--share applies to --dirs --near only", EXIT_USAGE)
    query = DirsQuery(
        near=args.near,
        share=DIRS_SHARE if args.share is None else args.share,
        root=os.path.realpath(args.root) if args.root else None,
        limit=args.limit,
        host=args.host,
    )
    try:
        result = answer(args, lambda c: c.dup_dirs(query), lambda index, _: index.dup_dirs(query))
    except Failed as exc:
        return fail(str(exc), exc.status)
    from isccd.cli import answers  # noqa: PLC0415 - see _print

    if args.csv:
        answers.write_dirs_csv(result, sys.stdout)
    else:
        _print(args, result, answers.format_dirs)
    return EXIT_OK


def _watched(args: argparse.Namespace, *, near: bool, csv: bool) -> int:
    """``similar --watchlist`` and ``dupes --watchlist``: the files matching a watchlist's
    references, by the watchlist's own rule (so ``--max-distance`` does not apply)."""
    if args.max_distance is not None:
        return fail("--max-distance does not apply to --watchlist: its threshold does", EXIT_USAGE)
    filters = vars(args)
    query = WatchedQuery(
        watchlist=args.watchlist,
        near=near,
        root=os.path.realpath(filters["root"]) if filters.get("root") else None,
        limit=args.limit,
        host=args.host,
        units=_unit_types(args.units),
        min_size=filters.get("min_size", 0),
        types=tuple(dict.fromkeys(filters["types"])) if filters.get("types") else None,
    )
    try:
        result = answer(args, lambda c: c.watched(query), lambda index, _: index.watched(query))
    except Failed as exc:
        return fail(str(exc), exc.status)
    from isccd.cli import answers  # noqa: PLC0415 - see _print

    if csv:
        answers.write_watched_csv(result, sys.stdout)
    else:
        text = answers.format_watched_dupes if args.handler is run_dupes else answers.format_watched
        _print(args, result, text)
    return EXIT_OK


def _unit_types(names: list[str] | None) -> tuple[UnitType, ...] | None:
    return tuple(dict.fromkeys(UnitType(n) for n in names)) if names else None


def run_similar(args: argparse.Namespace) -> int:
    """``isccd similar``: about a file, or a code. A file outside the daemon's roots (it
    answers ``outside_roots``) is coded here and asked about by its code."""
    if args.watchlist is not None:
        return _watched(args, near=True, csv=False)
    units = _unit_types(args.units)
    path = None if args.path is None else file_path(args.path)
    query = SimilarQuery(
        path=path,
        code=args.code,
        max_distance=args.max_distance,
        limit=args.limit,
        host=args.host,
        units=units,
    )

    from isccd.hashing import compute_record  # noqa: PLC0415

    def ask(client: Client) -> SimilarResult:
        try:
            return client.similar(query)
        except ProtocolError as exc:
            if path is None or exc.code != ErrorCode.OUTSIDE_ROOTS:
                raise
        # Coded with the configuration the daemon reads, as it would code the file itself.
        return client.similar(_coded_query(query, compute_record(path, configure(args).code)))

    def read(index: IndexReader, config: IndexConfig) -> SimilarResult:
        return index.similar(query, lambda unindexed: compute_record(unindexed, config.code))

    try:
        result = answer(args, ask, read)
    except Failed as exc:
        return fail(str(exc), exc.status)
    from isccd.cli.answers import format_similar  # noqa: PLC0415 - see _print

    _print(args, result, format_similar)
    return EXIT_OK


def _coded_query(query: SimilarQuery, record: FileRecord) -> SimilarQuery:
    """``query`` asked by the ISCC-CODE of a file coded here, not by its path.

    Raises:
        ProtocolError: ``not_found`` when the file could not be coded (the daemon's answer for
            a file inside its roots).
    """
    if record.iscc is None:
        reason = record.issues[0].reason if record.issues else "nothing could be computed"
        raise ProtocolError(
            ErrorCode.NOT_FOUND, f"{query.path!r} is not in the index and cannot be coded: {reason}"
        )
    return dataclasses.replace(query, path=None, code=record.iscc)


def run_get(args: argparse.Namespace) -> int:
    """``isccd get``."""
    path = file_path(args.path)

    def read(index: IndexReader, _: IndexConfig) -> FileInfo:
        info = index.get(path, args.host)
        if info is None:
            raise ProtocolError(ErrorCode.NOT_FOUND, f"{path!r} is not in the index")
        return info

    try:
        info = answer(args, lambda c: c.get(path, args.host), read)
    except Failed as exc:
        return fail(str(exc), exc.status)
    from isccd.cli.answers import format_file  # noqa: PLC0415 - see _print

    _print(args, info, format_file)
    return EXIT_OK


def _print(args: argparse.Namespace, result: T, text: Callable[[T, str], str]) -> None:
    # The answers' text forms (isccd.cli.answers, and the results they render) are imported by
    # the command that prints one: every other command, and the parser, do without them.
    if output_format(args) != "text":
        # A result's items (groups, files, matches) a line each: 100,000 of them are written
        # in a fraction of the time of indenting every level, from the result's dataclasses
        # themselves (isccd.cli.output.dumps).
        print_json(result, indent=2, depth=2)
    else:
        sys.stdout.write(text(result, _this_host(args)))


def _this_host(args: argparse.Namespace) -> str:
    """The host name this machine's files are stored under (``[store] host``, else the
    machine's name), so that an answer naming only another host's files still shows their
    host. Read without the settings model, as the socket is (:func:`find_socket`)."""
    named = {k.upper(): v for k, v in os.environ.items()}.get(_HOST_VARIABLE)
    if named:
        return named
    try:
        store = config_tables(args.config).get("store")
    except ConfigError:  # the command already read it, or said why it cannot
        store = None
    host = store.get("host") if isinstance(store, dict) else None
    return host if isinstance(host, str) and host else gethostname()
