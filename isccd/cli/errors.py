"""``isccd errors``: every indexed file with issues, grouped by kind, with the fix where there is
one.

The files come from the index the daemon writes (the configuration's store, ``--state DIR`` for
another), read directly and read-only, so the command answers the same with or without a
running daemon, and names the store it read on stderr. A daemon that answers on the socket must
serve that index, and one named by ``--socket``, ``ISCCD_SERVER__SOCKET`` or ``[server] socket``
must answer (see :func:`isccd.cli.ask.index_config`). By default it lists the files that could
not be fully indexed: errors, and units skipped for want of a tool; ``--all`` adds the other
skips (a media type without a Content-Code, an empty file) and warnings.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from isccd.cli import EXIT_FAILURE, EXIT_OK
from isccd.cli.connect import add_config_option, add_socket_option
from isccd.cli.escape import shown
from isccd.cli.formats import add_format_options, output_format
from isccd.cli.output import print_json
from isccd.extract.missing import missing_tool
from isccd.model import FileIssue, IssueCode

#: The store could not be read (EX_IOERR, as the daemon exits when it cannot open it).
EXIT_STORE = 74

_EPILOG = """\
kinds and their fixes: tool_missing (install the package named), access (check the file's and
its folders' permissions: the daemon's user must be able to read them), too_large (over the
hashing workers' memory limit: raise [hashing] worker_memory, if the file is to be trusted),
tool_failed and invalid (the file is damaged, or a tool cannot decode it), unstable (it kept
changing while read: it is retried once it settles), internal (a bug in isccd: please report
it). With --all also: unsupported, no_content, disabled and warnings, which need no fix.

exit status: 0 when no file has issues; 1 when some do (they are listed); 2 for invalid
arguments; 74 when the index cannot be read; 78 for an invalid configuration.
"""

#: What to do about each kind of issue (a missing tool names its package, :func:`fix`).
FIXES: dict[str, str] = {
    IssueCode.ACCESS: "check the permissions: the daemon's user must be able to read the file "
    "and its folders",
    IssueCode.TOO_LARGE: "raise [hashing] worker_memory if the file is to be trusted",
    IssueCode.TOOL_FAILED: "check the file: the tool could not decode it",
    IssueCode.INVALID: "check the file: it is corrupt or truncated",
    IssueCode.UNSTABLE: "none: it is indexed again once it stops changing",
    IssueCode.INTERNAL: "a bug in isccd: please report it, with the file's type",
}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``errors`` to the ``isccd`` parser."""
    parser = subparsers.add_parser(
        "errors",
        help="list the indexed files with issues, and how to fix them",
        description="List every indexed file that could not be fully indexed, grouped by the "
        "kind of issue, with the fix where there is one. Reads the daemon's index directly "
        "(it works with or without a running daemon) and names it on stderr.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="only files at or below PATH (default: all)"
    )
    parser.add_argument(
        "--all", action="store_true", help="also skips and warnings that need no fix"
    )
    parser.add_argument(
        "--state", metavar="DIR", type=Path, help="read the index in DIR (default: the daemon's)"
    )
    add_format_options(
        parser,
        json_help="print one JSON document: the store and the files with their issues",
        jsonl="print one JSON object per file",
    )
    add_config_option(parser)
    add_socket_option(parser)
    parser.set_defaults(handler=run_errors)


def fix(issue: FileIssue) -> str | None:
    """What to do about an issue, or ``None`` when nothing is to be done."""
    if issue.code is IssueCode.TOOL_MISSING:
        tool, remedy = missing_tool(issue.reason)
        return f"{tool}: {remedy}" if tool else remedy
    return FIXES.get(issue.code) if issue.code is not None else None


def listed(issue: FileIssue, every: bool) -> bool:
    """Whether ``errors`` lists an issue: errors and missing tools, or with ``every`` all."""
    return every or issue.actionable


def run_errors(args: argparse.Namespace) -> int:
    """``isccd errors``."""
    from isccd.cli.ask import Failed, file_path, index_config  # noqa: PLC0415 -- keeps --help fast
    from isccd.errors import StoreError  # noqa: PLC0415
    from isccd.pipeline import IndexReader  # noqa: PLC0415

    try:
        # The index of the daemon the other commands ask (checked to be the one it serves).
        config = index_config(args)
    except Failed as exc:
        print(f"isccd: {exc}", file=sys.stderr)
        return exc.status
    try:
        with IndexReader(config.store_url, config.reading(), host=config.store_host) as reader:
            troubled = reader.problems([file_path(p) for p in args.paths], actionable=not args.all)
    except StoreError as exc:
        print(f"isccd: {exc}", file=sys.stderr)
        return EXIT_STORE
    print(f"isccd: read {shown(config.store_name)}", file=sys.stderr)
    files = [(path, [i for i in issues if listed(i, args.all)]) for path, issues in troubled]
    files = [(path, issues) for path, issues in files if issues]
    fmt = output_format(args)
    if fmt == "jsonl":
        for path, issues in files:
            print_json(file_json(path, issues))
    elif fmt == "json":
        print_json(
            {"store": config.store_name, "files": [file_json(p, i) for p, i in files]}, indent=2
        )
    else:
        sys.stdout.write(format_errors(files))
    return EXIT_FAILURE if files else EXIT_OK


def format_errors(files: Iterable[tuple[str, list[FileIssue]]]) -> str:
    """The text of ``errors``: one block per kind, its fixes, then its files and reasons."""
    kinds: dict[str, list[tuple[str, FileIssue]]] = {}
    for path, issues in files:
        for issue in issues:
            kinds.setdefault(_kind(issue), []).append((path, issue))
    if not kinds:
        return "no files with issues\n"
    lines = []
    for kind, found in sorted(kinds.items(), key=lambda k: (-len(k[1]), k[0])):
        count = len({path for path, _ in found})
        lines.append(f"{kind}: {count} file{'' if count == 1 else 's'}")
        fixes = dict.fromkeys(f for _, issue in found if (f := fix(issue)) is not None)
        lines += [f"  fix: {shown(f)}" for f in fixes]
        lines += [f"  {shown(path)}: {shown(issue.reason)}" for path, issue in found]
    return "\n".join(lines) + "\n"


def _kind(issue: FileIssue) -> str:
    if issue.code is not None:
        return issue.code.value
    return issue.kind.value


def file_json(path: str, issues: list[FileIssue]) -> dict[str, Any]:
    """A file and its issues, each with its fix, as ``errors --json`` and ``scan --json`` give
    them."""
    return {
        "path": path,
        "issues": [
            {
                "stage": i.stage,
                "kind": i.kind.value,
                "code": i.code.value if i.code is not None else None,
                "reason": i.reason,
                "profile": i.profile,
                "fix": fix(i),
            }
            for i in issues
        ],
    }


def issues_text(files: Iterable[tuple[str, list[FileIssue]]]) -> str:
    """Files and their issues, one line per issue with its fix (``scan`` lists its failures
    so)."""
    return "".join(
        f"  {shown(path)}: {shown(i.reason)}" + (f" (fix: {fx})" if (fx := fix(i)) else "") + "\n"
        for path, issues in files
        for i in issues
    )
