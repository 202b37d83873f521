"""The index commands: ``isccd scan``, ``isccd dupes``, ``isccd similar`` and ``isccd get``.

``scan`` reconciles roots into the store of a state directory (the same store the daemon uses),
hashing what changed in a process pool. The other three only read the store, through a
read-only connection, so they work while the daemon or another scan writes it.

Every command prints readable text on a terminal and JSON with ``--json`` or when piped.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

from isccd.cli.output import Progress, print_json, wants_json
from isccd.dirs import default_state_dir
from isccd.errors import StoreError
from isccd.hashing import CodeOptions, compute_record, current_versions
from isccd.pipeline import (
    DupGroup,
    FileView,
    Indexer,
    Peer,
    Pipeline,
    PipelineOptions,
    PoolHasher,
    ScanStats,
    dupes,
    get,
    similar,
)
from isccd.store import StoredFile, open_store, state_url
from isccd.watch.scan import ScanOptions, compile_ignore

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

    dup = subparsers.add_parser(
        "dupes",
        parents=[common],
        help="list duplicate files, the most wasted space first",
        description="List groups of exact duplicates (same bytes; hardlinks are one file), "
        "and with --near also groups of near duplicates, the most wasted bytes first.",
    )
    dup.add_argument("--near", action="store_true", help="include near-duplicate groups")
    dup.set_defaults(handler=run_dupes)

    sim = subparsers.add_parser(
        "similar",
        parents=[common],
        help="list files similar to a file",
        description="List indexed files whose units are within reach of PATH's (PATH is coded "
        "on the fly if it is not indexed).",
    )
    sim.add_argument("path", metavar="PATH")
    sim.add_argument(
        "--max-distance", type=int, metavar="N", default=None,
        help="Hamming distance in bits of 64 (default: each unit type's threshold)",
    )  # fmt: skip
    sim.set_defaults(handler=run_similar)

    show = subparsers.add_parser(
        "get",
        parents=[common],
        help="show what the index knows about a file",
        description="Show a file's record, units, hardlinks and duplicates from the index.",
    )
    show.add_argument("path", metavar="PATH")
    show.set_defaults(handler=run_get)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


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


def _reader(args: argparse.Namespace) -> Indexer:
    store = open_store(state_url(_state(args)), readonly=True)
    return Indexer(store, PipelineOptions(), load=False)


def run_dupes(args: argparse.Namespace) -> int:
    """``isccd dupes``."""
    try:
        ix = _reader(args)
        try:
            groups = dupes(ix, near=args.near)
        finally:
            ix.close()
    except StoreError as exc:
        return _fail(str(exc))
    if wants_json(args.json):
        print_json({"groups": [g.as_dict() for g in groups]}, indent=2)
    else:
        _print_groups(groups)
    return EXIT_OK


def _print_groups(groups: list[DupGroup]) -> None:
    if not groups:
        print("no duplicates")
        return
    for group in groups:
        print(f"{group.kind}: {len(group.members)} files, {_size(group.wasted)} wasted")
        for member in group.members:
            print(f"  {_size(member.size)}  {member.paths[0]}")
            for other in member.paths[1:]:
                print(f"        = {other} (hardlink)")
        for link in group.links:
            pair = f"#{link.a + 1} ~ #{link.b + 1}"
            print(f"    near: {pair} by {link.unit.value}, {link.distance} bits")


def run_similar(args: argparse.Namespace) -> int:
    """``isccd similar``."""
    path = file_path(args.path)
    try:
        ix = _reader(args)
        try:
            stored = ix.store.file_at(path)
            if stored is None:
                if not Path(path).is_file():
                    return _fail(f"{args.path}: not indexed and not a file")
                stored = StoredFile(0, "", compute_record(path), time.time())
            peers = similar(ix, stored, args.max_distance)
        finally:
            ix.close()
    except StoreError as exc:
        return _fail(str(exc))
    if wants_json(args.json):
        print_json(
            {"path": path, "iscc": stored.record.iscc, "similar": [p.as_dict() for p in peers]},
            indent=2,
        )
    else:
        _print_peers(peers)
    return EXIT_OK


def _print_peers(peers: list[Peer]) -> None:
    if not peers:
        print("nothing similar")
    for peer in peers:
        how = (
            peer.kind.value
            if peer.kind.value != "near"
            else f"{peer.unit.value} {peer.distance}/{peer.threshold}"
        )
        print(f"{how:>16}  {peer.path}")


def run_get(args: argparse.Namespace) -> int:
    """``isccd get``."""
    path = file_path(args.path)
    try:
        ix = _reader(args)
        try:
            view = get(ix, path)
        finally:
            ix.close()
    except StoreError as exc:
        return _fail(str(exc))
    if view is None:
        return _fail(f"{args.path}: not in the index")
    if wants_json(args.json):
        print_json(view.as_dict(), indent=2)
    else:
        _print_view(view)
    return EXIT_OK


def _print_view(view: FileView) -> None:
    data: dict[str, Any] = view.as_dict()
    state = "removed" if view.file.removed_at is not None else "indexed"
    print(f"{data['path']} ({state})")
    for key in ("iscc", "mediatype", "mode", "filesize", "datahash"):
        if data.get(key) is not None:
            print(f"  {key}: {data[key]}")
    for unit in data["units"]:
        print(f"  {unit['type']}: {unit['iscc']}")
    for issue in data["issues"]:
        print(f"  {issue['kind']} ({issue['stage']}): {issue['reason']}")
    for link in view.links:
        print(f"  hardlink: {link}")
    for peer in view.duplicates:
        how = (
            peer.kind.value
            if peer.kind.value != "near"
            else f"near by {peer.unit.value}, {peer.distance}/{peer.threshold} bits"
        )
        print(f"  {how}: {peer.path}")


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover
