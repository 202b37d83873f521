"""``isccd report``: the duplicate groups as one self-contained HTML page, with previews.

The groups come from the daemon or a store exactly as ``isccd dupes --near`` lists them
(:func:`isccd.cli.ask.answer`), and the duplicate folders from the same source as
``isccd dupes --dirs --near`` lists them; they become the report's view through
:func:`isccd.report.adapt.view_of_dupes` and :func:`~isccd.report.adapt.view_of_dirs`. Folders
that cannot be listed (a daemon older than the ``dirs`` request) leave the file groups shown,
and the page says why. Each file is looked at now: its identity (for a
plan) and a preview, from the preview cache or made in this command's own low-priority worker
processes (:mod:`isccd.report.thumbs`), never in the daemon.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING

from isccd import __version__
from isccd.cli import EXIT_CONFIG, EXIT_FAILURE, EXIT_OK
from isccd.cli.ask import Failed, bounded, configure, fail
from isccd.cli.connect import add_config_option, add_socket_option
from isccd.cli.output import Progress
from isccd.dirs import default_cache_dir
from isccd.errors import ConfigError
from isccd.extract.tools import ToolOptions
from isccd.results import DUPES_LIMIT, DUPES_LIMIT_MAX, DirsQuery, DupesQuery

if TYPE_CHECKING:
    # Imported by the handler: building the parser must stay cheap.
    from collections.abc import Callable, Mapping

    from isccd.client import Client
    from isccd.report.model import FileFacts, FoldersView, ReportView
    from isccd.results import DirsResult, DupesResult

#: Seconds ffmpeg may take for one video frame.
FRAME_TIMEOUT = 30.0

_DESCRIPTION = """\
Write the duplicate groups as one HTML page to look at in a browser: exact and near duplicates
apart, the most reclaimable space first, each file with a preview (a picture of an image or a
video frame, the first lines of a text or document, an icon otherwise), its path, size, date,
and its distance to the group; and the duplicate folders, as `isccd dupes --dirs --near` lists
them (with --no-near, exact ones only), each with its files, size and, in a near group, its
share of the centre and the files matched in neither. The page filters by type, unit, root
and distance, searches paths, sorts, and is driven from the keyboard (j/k, h/l, space, /).
Mark the file each group keeps and save the choice as a plan for `isccd dedupe --plan FILE`.

The page is self-contained: it loads nothing (no network, no external script or font) and
works from file://. The groups come from the daemon (or with --state DIR from that index, read
directly), as `isccd dupes --near` lists them, with the same totals: each file counted once
(exact copies are in their exact and in a near group) and reclaimable space counted on disk
(the blocks the files take: a sparse file frees less than its size).
"""

_EPILOG = """\
previews:
  Made by this command, in -j worker processes at a lower priority (nice 10), never by the
  daemon; images are decoded at a reduced scale where the format allows it and never past the
  [code] max_image_pixels limit; video frames need ffmpeg. They are kept in the cache directory
  ($CACHE_DIRECTORY, /var/cache/isccd as root, ~/.cache/isccd otherwise; at most 256 MiB, the
  least recently used dropped) by path, device, inode, size and modification time, so a second
  report decodes only what changed. A file that cannot be previewed gets an icon and the
  reason. Each file is read beneath its watched root, and only under this host's roots (the
  daemon's, or with --state DIR that index's when you own it, and the configured [watch]
  roots): no symbolic link on the way is followed (with [watch] follow_symlinks, only those
  staying beneath the root), and a row of a shared database naming any other root is shown,
  never read.

the page:
  Written whole and private to you (mode 0600: it shows what the files hold): a new file in
  the page's folder, synced, then renamed over the page. A symbolic link at the page's name is
  replaced, never followed, so the file it points to is never written.

exit status: 0 when the page was written; 1 when the groups cannot be read or the page cannot
be written; 2 for invalid arguments; 78 for an invalid configuration.
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``report`` to the ``isccd`` parser."""
    parser = subparsers.add_parser(
        "report",
        help="write the duplicates as an HTML page with previews",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-o", "--out", type=Path, metavar="FILE", default=Path("isccd-report.html"),
        help="the page to write (default: isccd-report.html in the current directory; "
        "- for standard output)",
    )  # fmt: skip
    parser.add_argument("--open", action="store_true", help="open the page in a web browser")
    parser.add_argument(
        "--near", action=argparse.BooleanOptionalAction, default=True,
        help="include near-duplicate groups, as `isccd dupes --near` does (the default; "
        "--no-near: exact duplicates only)",
    )  # fmt: skip
    parser.add_argument("--root", metavar="PATH", help="only groups with a file under PATH")
    parser.add_argument(
        "--host",
        metavar="NAME",
        help="in a database a fleet shares: only groups with a file on host NAME (every "
        "host's by default; other hosts' files are shown, never looked at here)",
    )
    parser.add_argument(
        "--limit", type=bounded(DUPES_LIMIT_MAX), metavar="N", default=DUPES_LIMIT,
        help=f"most groups shown (default {DUPES_LIMIT:,}, at most {DUPES_LIMIT_MAX:,})",
    )  # fmt: skip
    parser.add_argument(
        "-j", "--jobs", type=bounded(64), metavar="N", default=None,
        help="previews made at once (default: the number of CPUs, at most 4)",
    )  # fmt: skip
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--state", metavar="DIR", type=Path, default=None,
        help="read the groups from the index in DIR instead of asking the daemon",
    )  # fmt: skip
    add_socket_option(where)
    add_config_option(parser)
    parser.set_defaults(handler=run_report)


def run_report(args: argparse.Namespace) -> int:
    """``isccd report``."""
    from isccd.cli.roots import answer_with_roots  # noqa: PLC0415
    from isccd.forkserver import import_from_here  # noqa: PLC0415
    from isccd.report.adapt import view_of_dupes  # noqa: PLC0415
    from isccd.report.cache import PreviewCache  # noqa: PLC0415
    from isccd.report.page import render_page  # noqa: PLC0415
    from isccd.report.preview import PreviewOptions  # noqa: PLC0415
    from isccd.report.thumbs import look_at  # noqa: PLC0415

    try:
        config = configure(args)
    except ConfigError as exc:
        return fail(str(exc), EXIT_CONFIG)
    root = os.path.realpath(args.root) if args.root else None
    query = DupesQuery(near=args.near, root=root, limit=args.limit, host=args.host)
    dirs = DirsQuery(near=args.near, root=root, limit=args.limit, host=args.host)
    daemon: list[Path] = []

    def ask(client: Client) -> tuple[DupesResult, DirsResult | str]:
        daemon.append(config.socket)
        return client.dupes(query), _folders(lambda: client.dup_dirs(dirs))

    try:
        (result, found), roots = answer_with_roots(
            args, ask, lambda index, _: (index.dupes(query), _folders(lambda: index.dup_dirs(dirs)))
        )
    except Failed as exc:
        return fail(str(exc), exc.status)
    source = f"the daemon on {daemon[0]}" if daemon else f"the index in {config.state_dir}"
    if result.truncated:
        print(f"isccd: more than {args.limit:,} groups: the first are shown; raise --limit",
              file=sys.stderr)  # fmt: skip
    folders = _folders_view(found, config.store_host, args.limit)
    view = view_of_dupes(result, config.store_host, folders)
    code = config.code
    options = PreviewOptions(
        max_pixels=code.max_image_pixels,
        tools=ToolOptions(
            ffmpeg=code.tools.ffmpeg, timeout=FRAME_TIMEOUT, temp_dir=code.tools.temp_dir
        ),
        follow_symlinks=config.settings.watch.follow_symlinks,
    )
    cache = PreviewCache(default_cache_dir() / "previews", recipe=f"size={options.size}")
    jobs = args.jobs or min(4, os.cpu_count() or 1)
    # This host's files, each to be read beneath its root (other hosts' are never read).
    files = {m.path: m.root for g in view.groups for m in g.members if not m.host}
    with Progress("previews") as progress:

        def show(done: int, total: int) -> None:
            progress.total = total
            progress.advance(done - progress.done)

        # The preview workers start from a fork server too: never from the working directory.
        with import_from_here():
            facts = look_at(files, options, cache, roots=roots, jobs=jobs, progress=show)
    page = render_page(
        view, facts, source=source, generated=time.time(), generator=f"isccd {__version__}"
    )
    try:
        where_to = _write(args.out, page)
    except OSError as exc:
        return fail(f"cannot write {args.out}: {exc.strerror}")
    summary = _summary(view, facts)
    if where_to is None:
        print(f"isccd: report: {summary}", file=sys.stderr)
        return EXIT_OK
    print(f"{where_to}: {summary}")
    if args.open and not webbrowser.open(where_to.as_uri()):
        print(f"isccd: no web browser could be started; open {where_to}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


def _summary(view: ReportView, facts: Mapping[str, FileFacts]) -> str:
    """What the report holds, in a line: the totals, the groups of folders, the files without
    a preview."""
    from isccd.cli.answers import format_totals  # noqa: PLC0415 - the parser does without it

    summary = format_totals(view.totals())
    folders = view.folders
    if folders.groups:
        count = len(folders.groups)
        summary += f"; {count:,}{'+' if folders.truncated else ''} "
        summary += f"group{'' if count == 1 and not folders.truncated else 's'} of folders"
    without = sum(1 for f in facts.values() if f.preview.note)
    if without:
        summary += f"; {without:,} files without a preview (the page says why)"
    return summary


def _folders(ask: Callable[[], DirsResult]) -> DirsResult | str:
    """The duplicate folders, or why they cannot be had: the report shows its file groups
    without them (a daemon older than the ``dirs`` request answers ``unknown_command``)."""
    from isccd.errors import DaemonUnavailableError, ProtocolError, StoreError  # noqa: PLC0415
    from isccd.protocol import ErrorCode  # noqa: PLC0415

    try:
        return ask()
    except ProtocolError as exc:
        if exc.code == ErrorCode.UNKNOWN_COMMAND:
            return "the daemon does not list duplicate folders (it is older than this isccd)"
        return f"{exc.message} ({exc.code})"
    except (DaemonUnavailableError, StoreError) as exc:
        return str(exc)


def _folders_view(found: DirsResult | str, host: str, limit: int) -> FoldersView:
    """The page's duplicate folders; what was cut, or why there are none, said on stderr."""
    from isccd.report.adapt import view_of_dirs  # noqa: PLC0415
    from isccd.report.model import FoldersView  # noqa: PLC0415

    if isinstance(found, str):
        print(f"isccd: duplicate folders not shown: {found}", file=sys.stderr)
        return FoldersView(error=found)
    if found.truncated:
        print(f"isccd: more than {limit:,} groups of folders: the first are shown; raise --limit",
              file=sys.stderr)  # fmt: skip
    return view_of_dirs(found, host)


def _write(out: Path, page: str) -> Path | None:
    """Write the page to ``out`` whole and private (:func:`isccd.report.save.save_whole`:
    mode 0600, a symbolic link at ``out`` replaced, never followed), or to standard output for
    ``-``; the absolute path written, or ``None`` for standard output.

    Raises:
        OSError: The file cannot be written.
    """
    from isccd.report.save import save_whole  # noqa: PLC0415

    if str(out) == "-":
        sys.stdout.write(page)
        sys.stdout.flush()
        return None
    target = out.absolute()
    save_whole(target, page.encode("utf-8"))
    return target
