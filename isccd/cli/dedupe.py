"""``isccd dedupe``: act on duplicate groups (link, reflink, remove or move the redundant
copies), as a dry run by default, with ``--apply``, as a shell script, or undo a run.

The groups come from the daemon or a store, as ``isccd dupes`` lists them (through
:func:`found_groups`, the one place that reads the ``dupes`` result), or from a plan file.
The engine is :mod:`isccd.dedupe`; this module parses, chooses, prints.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from isccd.cli import EXIT_CONFIG, EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from isccd.cli.ask import Failed, bounded, configure, fail, index_config
from isccd.cli.connect import add_config_option, add_socket_option
from isccd.cli.escape import shown as show
from isccd.cli.index import add_group_filters
from isccd.cli.output import Progress, format_size, print_json
from isccd.errors import ActionLogError, ConfigError, PlanFileError
from isccd.fspath import is_under
from isccd.results import DUPES_LIMIT_MAX, DupesQuery

if TYPE_CHECKING:
    from isccd.dedupe.apply import Outcome
    from isccd.dedupe.build import Excluded, FoundGroup
    from isccd.dedupe.keep import KeepRule
    from isccd.dedupe.lock import Held
    from isccd.dedupe.log import ActionLog
    from isccd.dedupe.plan import Action, Plan, Step, Untouched
    from isccd.dedupe.undo import UndoOutcome
    from isccd.results import DupesResult

_DESCRIPTION = """\
Act on duplicates: keep one file of each group and link, reflink, remove or move the others.
Nothing is changed without --apply: by default it prints exactly what would be done.

The groups come from the daemon (or with --state DIR from that index, read directly), as
`isccd dupes` lists them, or from a plan file (--plan FILE, e.g. saved from a dry run with
--json). Exact duplicates (the same bytes) may be linked, reflinked, removed or moved; near
duplicates (a re-encoded photo, an edited document) are only ever moved, with --near --move.
"""

_EPILOG = """\
what happens to each file:
  Immediately before acting on a file, isccd checks that it and the kept file are still what
  the plan recorded (same device, inode, size and modification time, reached from their root
  without following any symbolic link) and, for exact duplicates, that their bytes are equal
  (read side by side, and the kept file's BLAKE3 equal to the one indexed). A file that
  changed, moved or vanished is skipped and reported, never acted on. The kept file is held
  open (a link is made to its open inode); both hold a read lease during the action (a writer
  waits for it to end; a file open for writing elsewhere is skipped); and after each action,
  before the file's own inode is let go, both are checked again (the kept file unmodified,
  still under its name, its bytes still the file's): on any change the action is reverted.
  Hard links already sharing the kept file's inode are nothing to do. Files under a --keep-in
  folder are never touched. Nothing outside the files' watched roots (and the --move folder)
  is touched, and only this host's roots count: the daemon's (with --state DIR, that index's,
  when you own it) and the configured [watch] roots. A file an index or a plan file names
  under any other root (a fleet's shared database can be written by any host) is left out,
  and a plan file naming one is refused.
  The kept file's owner must already be able to write the file it stands for (root, the same
  owner, or its group or others write bits), with --link and --remove; with --remove, the
  file's owner must also be able to read the kept file (root, its owner, or its group or
  others read bits), or removing the file would leave them without its content. The dry run,
  --json and --script judge the files as they are then by the same rules: a file --apply
  would refuse is shown as left, with the reason, and is not in the script. Nor is a file
  below a folder another user owns or may write (or a link on the way), nor a move into one:
  a script acts by name, and they could swap the folder between its checks and its act
  (--apply acts on open folders, and takes them).
  --link: the file's name becomes a hard link to the kept file, swapped in atomically. A hard
    link IS the kept file: it shares the kept file's permissions, owner, times and extended
    attributes, and writing to either name changes both. Both must be on one file system.
    Files of different owners, groups, permissions or ACLs are not linked unless
    --link-any-owner is given; a set-user-ID or set-group-ID file (either one) is never linked
    to a file of another owner or group, even then.
  --reflink: the file becomes a copy sharing the kept file's blocks (FICLONE; btrfs, XFS), with
    its own permissions, owner, times and extended attributes; a write to either copies the
    blocks it touches. File systems without reflinks (ext4, tmpfs, ...) are said so; nothing
    is changed there.
  --remove: the file is deleted (exact duplicates only), each one only after the kept copy
    was verified right then.
  --move DIR: the file is moved under DIR with its whole path (/srv/a/b.jpg goes to
    DIR/srv/a/b.jpg), never replacing a file there; DIR must be on the same file system (a
    rename, never a copy) and outside the watched roots. The folders made below DIR get the
    owner and mode of the folders they mirror (DIR/srv/a those of /srv/a); a folder already
    there that another user could swap for a link (one of neither you, root nor the owner of
    the folder it mirrors, or one anybody may write without the sticky bit) is refused, and
    the file stays where it is.
  The space a run frees ("freeing ...") is what the files it links, reflinks or removes take
  on disk (their blocks, as du counts them: a sparse file frees less than its size), each file
  once; a file with hard links outside its group, and a move, free nothing.

the action log and undo:
  --apply records every action in an action log (--log FILE, default: a new file under the
  state directory's dedupe/ folder, named on stderr), before and after doing it, so that an
  interrupt (Ctrl-C, a crash, SIGKILL) leaves each file untouched or fully done, and the log
  says which. Runs may share one log; a log that cannot be written (a full disk) stops the run
  before its next file. `isccd dedupe --undo LOG` moves moved files back; restores linked and
  removed files as copies of the kept file's content, with their own permissions and times
  (their owner, and set-user-ID/set-group-ID bits, only as root), each written beside the link
  with its holes kept and taking the name only once read back with the logged length and
  BLAKE3 digest; finishes or reverts actions an interrupt cut short; and says what it cannot
  undo (a file changed since, a kept file whose content changed, no room for the copy). A
  reflink needs no undo.
  Every line of a log carries an HMAC-SHA256 under the key STATE/dedupe/log.key (made, mode
  0600, by the first --apply): undo refuses, touching nothing, a log edited or written by
  hand, by an older isccd or with another state directory's key. Undo with the --state or
  --config the run had.

  isccd runs as you: the daemon stays read-only and notices the changes like any other.

one run at a time:
  --apply and --undo hold a lock (flock) on each root folder they act in, and a shared one on
  the folders above it, until they end. Another run or undo on the same tree stops at once,
  touching nothing (exit 1): run it again when the first is done.

exit status: 0 when everything planned was done (or would be, in a dry run) or undone; 1 when
a file was skipped, an action failed or could not be undone, the groups cannot be read, or the
action log or its key cannot be written or read; 2 for invalid arguments, or a plan file or
action log that is not valid or not authentic (nothing is touched); 78 for an invalid
configuration.
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``dedupe`` to the ``isccd`` parser."""
    parser = subparsers.add_parser(
        "dedupe",
        help="link, reflink, remove or move duplicates (dry run unless --apply)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--link", action="store_true", help="replace copies by hard links")
    what.add_argument("--reflink", action="store_true", help="replace copies by reflinks")
    what.add_argument("--remove", action="store_true", help="delete copies (exact only)")
    what.add_argument("--move", type=Path, metavar="DIR", help="move copies under DIR")
    what.add_argument("--undo", type=Path, metavar="LOG", help="undo what an action log did")
    parser.add_argument("--apply", action="store_true", help="do it (default: a dry run)")
    parser.add_argument(
        "--link-any-owner", action="store_true",
        help="with --link: also link files of different owners, groups, permissions or ACLs "
        "(never a set-user-ID or set-group-ID file to another owner's or group's)",
    )  # fmt: skip
    parser.add_argument(
        "--script", choices=["sh"], help="print a POSIX shell script doing it, with its checks"
    )
    parser.add_argument(
        "--near", action="store_true", help="also near-duplicate groups (only with --move)"
    )
    parser.add_argument(
        "--dirs", action="store_true",
        help="act on exact duplicate folders (as `isccd dupes --dirs` lists them): every file "
        "of a duplicate folder, each with its copy in the folder kept; a folder that changed "
        "since the plan is left whole",
    )  # fmt: skip
    parser.add_argument(
        "--keep", action="append", default=[], metavar="RULE",
        help="which file stays: oldest, newest, largest, shortest-path or path=PREFIX; "
        "repeat to break ties in order (default: oldest, then shortest-path; at last the path)",
    )  # fmt: skip
    parser.add_argument(
        "--keep-in", action="append", default=[], type=Path, metavar="DIR",
        help="a reference folder: its files are kept first and never touched (repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "--plan", type=Path, metavar="FILE",
        help="act on a plan file (its roots must be this host's: see below)",
    )  # fmt: skip
    parser.add_argument("--log", type=Path, metavar="FILE", help="the action log to append to")
    add_group_filters(parser)
    parser.add_argument(
        "--limit", type=bounded(DUPES_LIMIT_MAX), metavar="N", default=DUPES_LIMIT_MAX,
        help=f"most groups read (default and most {DUPES_LIMIT_MAX:,})",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print JSON (the plan, in a dry run)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--state", metavar="DIR", type=Path, default=None,
        help="read the groups (and, for --plan, this host's roots) from the index in DIR "
        "instead of asking the daemon",
    )  # fmt: skip
    add_socket_option(where)
    add_config_option(parser)
    parser.set_defaults(handler=run_dedupe)


class _Usage(Exception):
    """Arguments that do not go together."""


def _action(args: argparse.Namespace) -> Action:
    from isccd.dedupe.plan import Action  # noqa: PLC0415

    if args.link:
        return Action.LINK
    if args.reflink:
        return Action.REFLINK
    if args.remove:
        return Action.REMOVE
    return Action.MOVE


def _check_usage(args: argparse.Namespace) -> None:
    if args.undo is not None:
        others = [
            f
            for f in ("apply", "script", "plan", "near", "keep", "keep_in", "link_any_owner")
            if getattr(args, f)
        ]
        if others:
            raise _Usage(f"--undo takes no --{others[0].replace('_', '-')}")
        return
    if args.link_any_owner and not args.link:
        raise _Usage("--link-any-owner only goes with --link")
    if args.near and args.move is None:
        raise _Usage("--near only goes with --move: near duplicates are never linked or removed")
    if args.apply and args.script:
        raise _Usage("--script writes a script to run instead of --apply; choose one")
    if args.plan is not None and args.keep:
        raise _Usage("a plan file says which file each group keeps; --keep does not apply")
    if args.plan is not None and (args.root or args.min_size or args.types):
        raise _Usage("--root, --min-size and --type choose groups; a plan has them")
    if args.dirs:
        _check_dirs(args)


def _check_dirs(args: argparse.Namespace) -> None:
    if args.plan is not None:
        raise _Usage("a plan file has its groups (of folders too); --dirs does not apply")
    if args.near:
        raise _Usage("--dirs acts on exact duplicate folders only; --near does not apply")
    if args.script:
        raise _Usage("--dirs checks each folder whole before acting; use --apply, not --script")
    if args.min_size or args.types:
        raise _Usage("--min-size and --type choose files; --dirs acts on folders whole")
    for rule in _rules(args) if args.keep else ():
        if rule.by.value not in ("shortest-path", "path"):
            raise _Usage(f"--keep {rule} chooses files; with --dirs: shortest-path or path=DIR")


def run_dedupe(args: argparse.Namespace) -> int:
    """``isccd dedupe``."""
    try:
        _check_usage(args)
        if args.undo is not None:
            return _run_undo(args)
        return _run(args)
    except _Usage as exc:
        return fail(str(exc), EXIT_USAGE)


# -- the plan ------------------------------------------------------------------------------------


def found_groups(result: DupesResult, host: str = "") -> list[FoundGroup]:
    """The groups of a ``dupes`` result as the dedupe engine takes them: the one function to
    change when the ``dupes`` result changes shape.

    Args:
        result: What ``dupes`` answered (its query already chose the files: sizes, types).
        host: This machine's host name: files of other hosts (a fleet's shared index) are left
            out, since nothing here can act on them (their paths here may name other files).
    """
    from isccd.dedupe.build import Found, FoundGroup  # noqa: PLC0415
    from isccd.dedupe.plan import GroupKind  # noqa: PLC0415
    from isccd.dedupe.planfile import blake3_of_instance  # noqa: PLC0415
    from isccd.results import DupKind  # noqa: PLC0415 - the parser does without the groups

    groups = []
    for group in result.groups:
        exact = group.kind is DupKind.EXACT
        members = []
        for i, m in enumerate(group.members):
            if m.host not in ("", host):
                continue
            # An exact group's member code is its Instance-Code: a prefix of its BLAKE3.
            digest = blake3_of_instance(m.code) if exact and m.code else None
            centre = i == group.centre
            code = None if exact else m.code
            members.append(Found((m.path, *m.links), m.root, m.size, digest, code, centre))
        if len(members) > 1:
            kind = GroupKind.EXACT if exact else GroupKind.NEAR
            groups.append(FoundGroup(kind, tuple(members), None if exact else group.threshold))
    return groups


def _rules(args: argparse.Namespace) -> tuple[KeepRule, ...]:
    from isccd.dedupe.keep import DEFAULT_RULES, parse_rule  # noqa: PLC0415

    try:
        return tuple(parse_rule(r) for r in args.keep) or DEFAULT_RULES
    except ValueError as exc:
        raise _Usage(f"--keep {exc}") from None


def _folder(path: Path) -> str:
    return os.path.realpath(path)


class _Groups(NamedTuple):
    """The plan, the files left out of it, where it came from, and this host's roots."""

    plan: Plan
    excluded: tuple[Excluded, ...]
    source: str
    roots: tuple[str, ...]


def _plan_roots(args: argparse.Namespace) -> tuple[str, ...]:
    """This host's roots, for a plan file: the daemon's, or the index's (see
    :mod:`isccd.cli.roots`); only the configured ones when no index can be read and none was
    named.

    Raises:
        Failed: The named daemon or index cannot be read, or the configuration is invalid.
    """
    from isccd.cli.roots import answer_with_roots, configured_roots  # noqa: PLC0415

    try:
        return answer_with_roots(args, lambda _: None, lambda _, __: None)[1]
    except Failed:
        if args.state is not None or args.socket is not None:
            raise
    try:
        return configured_roots(configure(args))
    except ConfigError as exc:
        raise Failed(str(exc), EXIT_CONFIG) from None


def _read_groups(args: argparse.Namespace) -> _Groups:
    """The plan: from the plan file, or made from the index's groups now; every file in it
    is under one of this host's roots.

    Raises:
        Failed: The groups (or this host's roots) cannot be read.
        PlanFileError: The plan file is not valid, or names a root that is not this host's.
    """
    from isccd.cli.roots import answer_with_roots  # noqa: PLC0415
    from isccd.dedupe.build import build_plan, observe  # noqa: PLC0415
    from isccd.dedupe.planfile import check_roots, load_plan  # noqa: PLC0415

    if args.plan is not None:
        plan = load_plan(args.plan)
        roots = _plan_roots(args)
        check_roots(plan, roots, str(args.plan))
        return _Groups(plan, (), str(args.plan), roots)
    if args.dirs:
        return _read_folder_groups(args)
    rules = _rules(args)
    root = _folder(Path(args.root)) if args.root else None
    query = DupesQuery(
        near=args.near, root=root, limit=args.limit, min_size=args.min_size,
        types=tuple(args.types) if args.types else None,
    )  # fmt: skip
    result, roots = answer_with_roots(
        args, lambda c: c.dupes(query), lambda index, _: index.dupes(query)
    )
    if result.truncated:
        print(
            f"isccd: more than {args.limit:,} groups: these first; run again for the rest",
            file=sys.stderr,
        )
    found = observe(found_groups(result, configure(args).store_host), roots)
    keep_in = tuple(_folder(d) for d in args.keep_in)
    source = f"index in {args.state}" if args.state else "the index"
    plan = build_plan(found.groups, rules, keep_in, found.thresholds)
    return _Groups(plan, found.excluded, source, roots)


def _read_folder_groups(args: argparse.Namespace) -> _Groups:
    """The plan of ``--dirs``: the exact duplicate folders, each file with its copy kept.

    Raises:
        Failed: The groups (or this host's roots) cannot be read.
    """
    from isccd.cli.folderplan import folder_plan  # noqa: PLC0415
    from isccd.cli.roots import answer_with_roots  # noqa: PLC0415
    from isccd.results import DirsQuery  # noqa: PLC0415

    root = _folder(Path(args.root)) if args.root else None
    query = DirsQuery(root=root, limit=args.limit, files=True)
    result, roots = answer_with_roots(
        args, lambda c: c.dup_dirs(query), lambda index, _: index.dup_dirs(query)
    )
    if result.truncated:
        print(
            f"isccd: more than {args.limit:,} folder groups: these first; run again for the rest",
            file=sys.stderr,
        )
    prefixes = [r.prefix for r in _rules(args) if r.prefix is not None] if args.keep else []
    made = folder_plan(
        result, roots, host=configure(args).store_host,
        keep_in=tuple(_folder(d) for d in args.keep_in), prefix=prefixes[0] if prefixes else None,
    )  # fmt: skip
    source = f"index in {args.state}" if args.state else "the index"
    return _Groups(made.plan, made.excluded, source, roots)


def _move_dir(args: argparse.Namespace, plan: Plan, watched: Sequence[str]) -> str | None:
    if args.move is None:
        return None
    directory = _folder(args.move)
    from isccd.dedupe.plan import move_target  # noqa: PLC0415

    roots = {m.root for g in plan.groups for m in g.members} | set(watched)
    for root in sorted(roots):
        if is_under(directory, root) or is_under(move_target(directory, root), root):
            raise _Usage(
                f"--move {directory} is inside the watched root {root}: the moved files would "
                "be indexed there again; choose a folder outside the roots"
            )
    return directory


def _run(args: argparse.Namespace) -> int:
    from isccd.dedupe.plan import steps_of  # noqa: PLC0415

    try:
        plan, excluded, source, roots = _read_groups(args)
    except Failed as exc:
        return fail(str(exc), exc.status)
    except PlanFileError as exc:
        return fail(f"{exc}; nothing was touched", EXIT_USAGE)
    action = _action(args)
    move_to = _move_dir(args, plan, roots)
    keep_in = tuple(_folder(d) for d in args.keep_in)
    steps, untouched = steps_of(plan, action, near=args.near, move_to=move_to, protected=keep_in)
    if any(g.folder is not None for g in plan.groups):
        if args.script:
            return fail("this plan acts on folders whole; use --apply, not --script", EXIT_USAGE)
        steps, untouched = _folders_unchanged(plan, steps, untouched)
    refused: tuple[Untouched, ...] = ()
    if not args.apply:
        # What --apply would refuse for the owners is left, in a dry run and a script alike
        # (--apply judges each file itself, on the open file).
        from isccd.dedupe.owner import judged  # noqa: PLC0415

        steps, refused = judged(steps, any_owner=args.link_any_owner)
        untouched = (*untouched, *refused)
    if args.script:
        from isccd.dedupe.owner import scriptable, stamp_of  # noqa: PLC0415
        from isccd.dedupe.script import shell_script  # noqa: PLC0415

        steps, by_name = scriptable(steps, os.geteuid())
        refused = (*refused, *by_name)
        for u in refused:  # not in the script: said here, never as a name in a comment
            print(f"isccd: left {show(u.path)}: {u.reason}", file=sys.stderr)
        # What the owner rules judged, checked again by the script before each act.
        named = {p for step in steps for p in (step.path, step.kept.path)}
        owners = {p: found for p in named if (found := stamp_of(p)) is not None}
        script = shell_script(steps, _summary(action, steps, plan, dry=True), owners=owners)
        # As bytes: a name that is not UTF-8 must reach the script as the bytes it is.
        sys.stdout.flush()
        sys.stdout.buffer.write(os.fsencode(script))
        sys.stdout.buffer.flush()
        return EXIT_OK
    if not args.apply:
        return _print_dry_run(
            args, plan=plan, action=action, steps=steps, untouched=untouched,
            excluded=excluded, source=source,
        )  # fmt: skip
    return _apply(
        args, plan=plan, action=action, steps=steps, move_to=move_to, untouched=untouched,
        excluded=excluded,
    )  # fmt: skip


def _folders_unchanged(
    plan: Plan, steps: Sequence[Step], untouched: Sequence[Untouched]
) -> tuple[tuple[Step, ...], tuple[Untouched, ...]]:
    """The steps of the folders that still hold what the plan says; the others' files are
    left, each with why (a folder is acted on whole or not at all)."""
    from isccd.dedupe.folders import changed  # noqa: PLC0415
    from isccd.dedupe.plan import Untouched  # noqa: PLC0415

    left = changed(plan)
    if not left:
        return tuple(steps), tuple(untouched)
    kept = tuple(s for s in steps if s.group not in left)
    gone = tuple(Untouched(s.group, s.path, left[s.group]) for s in steps if s.group in left)
    return kept, (*untouched, *gone)


# -- output --------------------------------------------------------------------------------------


_VERB = {"link": "link", "reflink": "reflink", "remove": "remove", "move": "move"}
_DONE = {"link": "linked", "reflink": "reflinked", "remove": "removed", "move": "moved"}


def _freed(steps: Sequence[Step]) -> int:
    """Bytes on disk the steps free (each victim file once, its blocks: a sparse file frees
    less than its size); a move frees nothing where it was."""
    victims = {s.member.identity: s.member.space for s in steps if s.action.value != "move"}
    return sum(victims.values())


def _summary(action: Action, steps: Sequence[Step], plan: Plan, *, dry: bool) -> str:
    files = len(steps)
    groups = len({s.group for s in steps})
    verb = _VERB[action.value] if dry else _DONE[action.value]
    what = f"{verb} {files:,} files in {groups:,} of {len(plan.groups):,} groups"
    if action.value == "move":
        moved = sum(s.member.size for s in steps)
        return f"{what} ({format_size(moved)})"
    return f"{what}, freeing {format_size(_freed(steps))}"


def _print_dry_run(
    args: argparse.Namespace,
    *,
    plan: Plan,
    action: Action,
    steps: Sequence[Step],
    untouched: Sequence[Untouched],
    excluded: Sequence[Excluded],
    source: str,
) -> int:
    from isccd.dedupe.planfile import plan_document  # noqa: PLC0415

    if args.json:
        document = plan_document(
            plan, action=action, steps=steps, untouched=untouched, source=source,
            created=time.time(),
        )  # fmt: skip
        if excluded:
            # Not part of the plan: said on stderr so the document stays a valid plan file.
            for e in excluded:
                print(f"isccd: left out {show(e.path)}: {e.reason}", file=sys.stderr)
        print_json(document, indent=1)
        return EXIT_OK
    by_group: dict[int, dict[str, str]] = {}
    for s in steps:
        by_group.setdefault(s.group, {})[s.member.path] = s.action.value
    notes = {(u.group, u.path): u.reason for u in untouched}
    out = []
    folder: tuple[str, str] | None = None
    for g, group in enumerate(plan.groups):
        if group.folder is not None:
            # A duplicate folder: its files, each with its copy kept, under one heading.
            here = (group.folder.path, group.folder.kept)
            if here != folder:
                folder = here
                count = sum(1 for x in plan.groups if x.folder == group.folder)
                out.append(
                    f"folder {show(here[0])}/: {count:,} files, each a copy of one in "
                    f"{show(here[1])}/ (kept)"
                )
            member = next(m for i, m in enumerate(group.members) if i != group.keep)
            verb = by_group.get(g, {}).get(member.path, "leave")
            note = notes.get((g, member.path))
            line = f"  {verb:<7} {show(member.path)}  = {show(group.kept.path)}"
            out.append(line + (f"  ({note})" if note else ""))
            continue
        size = format_size(group.kept.size)
        out.append(f"{group.kind.value} group {g + 1}: {len(group.members)} files, {size} each")
        for i, member in enumerate(group.members):
            verb = "keep" if i == group.keep else by_group.get(g, {}).get(member.path, "leave")
            note = notes.get((g, member.path))
            centre = "  (centre)" if member.centre else ""
            line = f"  {verb:<7} {show(member.path)}{centre}" + (f"  ({note})" if note else "")
            out.append(line)
            out += [f"  {'':<7} = {show(link)} (hardlink)" for link in member.paths[1:]]
    out += [f"left out {show(e.path)}: {e.reason}" for e in excluded]
    summary = _summary(action, steps, plan, dry=True)
    out.append(f"dry run: would {summary}. Add --apply to do it.")
    if action.value == "link":
        out.append("A hard link shares the kept file's permissions, owner and times.")
        if not args.link_any_owner:
            out.append(
                "Files whose owner, group, permissions or ACL differ from the kept file's are "
                "left as they are (--link-any-owner links them)."
            )
    sys.stdout.write("\n".join(out) + "\n")
    return EXIT_OK


def _default_log(state_dir: Path) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return state_dir / "dedupe" / f"{stamp}-{os.getpid()}.jsonl"


def _log_key(state_dir: Path, *, create: bool) -> bytes:
    """The action-log key of a state directory (``--state``, or the configured one).

    Raises:
        ActionLogError: The key cannot be made or read, or is not the user's own.
    """
    from isccd.dedupe.logkey import load_key  # noqa: PLC0415

    return load_key(state_dir, create=create)


def _state_dir(args: argparse.Namespace) -> Path:
    """The configured state directory (``--state``, or the configuration's).

    Raises:
        Failed: The configuration is invalid.
    """
    try:
        return configure(args).state_dir
    except ConfigError as exc:
        raise Failed(str(exc), EXIT_CONFIG) from None


def _apply(
    args: argparse.Namespace,
    *,
    plan: Plan,
    action: Action,
    steps: Sequence[Step],
    move_to: str | None,
    untouched: Sequence[Untouched],
    excluded: Sequence[Excluded],
) -> int:
    from isccd.dedupe.apply import Status  # noqa: PLC0415
    from isccd.dedupe.lock import TreeLockedError, tree_lock  # noqa: PLC0415

    try:
        # A log of its own goes beside the index the groups came from; the key is that of the
        # configured state directory, which the index's is when the log is its own.
        log_path = args.log if args.log is not None else _default_log(index_config(args).state_dir)
        key = _log_key(_state_dir(args), create=True)
    except Failed as exc:
        return fail(str(exc), exc.status)
    except ActionLogError as exc:
        return fail(f"{exc}; nothing was touched")
    with contextlib.ExitStack() as stack:
        try:
            roots = {r for s in steps for r in (s.member.root, s.kept.root)}
            _locked(stack.enter_context(tree_lock(roots)))
        except TreeLockedError as exc:
            return fail(str(exc))
        if any(g.folder is not None for g in plan.groups):
            # Read again now that no other run can act on these roots.
            steps, untouched = _folders_unchanged(plan, steps, untouched)
        try:
            log = _open_log(log_path, key, action)
        except ActionLogError as exc:
            return fail(f"{exc}; nothing was touched")
        print(f"isccd: action log: {log_path}", file=sys.stderr)
        try:
            outcomes = _apply_logged(args, log, action=action, steps=steps, move_to=move_to,
                                     excluded=excluded)  # fmt: skip
        except ActionLogError as exc:
            return fail(
                f"{exc}; stopped before the next file (each file is untouched or done, as "
                f"logged so far: isccd dedupe --undo {log_path})"
            )
        emptied = _emptied(plan, outcomes) if action.value == "remove" else []
    bad = [o for o in outcomes if o.status in (Status.SKIPPED, Status.FAILED)]
    done = [o.step for o in outcomes if o.status is Status.DONE]
    if args.json:
        print_json(
            {
                "log": str(log_path),
                "action": action.value,
                "outcomes": [_outcome_json(o) for o in outcomes],
                "left": [{"path": u.path, "reason": u.reason} for u in untouched],
                "excluded": [{"path": e.path, "reason": e.reason} for e in excluded],
                "folders_emptied": emptied,
            },
            indent=1,
        )
    else:
        for e in excluded:
            print(f"left out {show(e.path)}: {e.reason}")
        print(f"{_summary(action, done, plan, dry=False)}; {len(bad):,} skipped or failed")
        for path in emptied:
            print(f"emptied {show(path)}/ (its folders are left in place, for undo)")
        print(f"action log: {log_path} (undo: isccd dedupe --undo {log_path})")
    return EXIT_FAILURE if bad else EXIT_OK


def _emptied(plan: Plan, outcomes: Sequence[Outcome]) -> list[str]:
    """After ``--remove`` of duplicate folders: the folders all of whose files went. They are
    left in place, with every folder below them: undo then puts each file back in the folder
    it was in, with that folder's owner and mode."""
    from isccd.dedupe.apply import Status  # noqa: PLC0415

    acted: dict[str, list[bool]] = {}
    for outcome in outcomes:
        folder = plan.groups[outcome.step.group].folder
        if folder is not None:
            done = outcome.status in (Status.DONE, Status.NOTHING)
            acted.setdefault(folder.path, []).append(done)
    return sorted(path for path, done in acted.items() if all(done))


def _open_log(path: Path, key: bytes, action: Action) -> ActionLog:
    """The action log at ``path``, this run's record written.

    Raises:
        ActionLogError: It cannot be opened or written (it is closed again).
    """
    from isccd.dedupe.log import ActionLog  # noqa: PLC0415

    log = ActionLog(path, key)
    try:
        log.run(action, apply=True)
    except ActionLogError:
        with contextlib.suppress(ActionLogError):
            log.close()
        raise
    return log


def _locked(held: Held) -> None:
    """Say which roots could not be locked (other runs there are not kept off)."""
    for path, why in held.unlocked:
        print(f"isccd: the dedupe lock on {show(path)} {why}: other runs there are not kept "
              "off", file=sys.stderr)  # fmt: skip


def _apply_logged(
    args: argparse.Namespace,
    log: ActionLog,
    *,
    action: Action,
    steps: Sequence[Step],
    move_to: str | None,
    excluded: Sequence[Excluded],
) -> list[Outcome]:
    """Carry out the steps, the log open and the roots locked."""
    from isccd.dedupe.apply import apply_steps  # noqa: PLC0415

    with log, Progress(_DONE[action.value], len(steps)) as progress:
        for e in excluded:
            log.skip(e.path, e.reason)

        def shown(outcome: Outcome) -> None:
            progress.advance()
            if not args.json:
                progress.close()
                print(_outcome_line(outcome), flush=True)

        return apply_steps(steps, log, move_to=move_to, any_owner=args.link_any_owner,
                           on_outcome=shown)  # fmt: skip


def _outcome_line(outcome: Outcome) -> str:
    step = outcome.step
    if outcome.status.value == "done":
        where = step.target if step.target is not None else step.kept.path
        sign = "->" if step.target is not None else "="
        return f"{_DONE[step.action.value]:<9} {show(step.path)} {sign} {show(where)}"
    return f"{outcome.status.value:<9} {show(outcome.reason or step.path)}"


def _outcome_json(outcome: Outcome) -> dict[str, Any]:
    step = outcome.step
    out: dict[str, Any] = {
        "path": step.path,
        "action": step.action.value,
        "kept": step.kept.path,
        "status": outcome.status.value,
    }
    if step.target is not None:
        out["target"] = step.target
    if outcome.reason is not None:
        out["reason"] = outcome.reason
    return out


# -- undo ----------------------------------------------------------------------------------------


def _run_undo(args: argparse.Namespace) -> int:
    from isccd.dedupe.lock import TreeLockedError, tree_lock  # noqa: PLC0415
    from isccd.dedupe.logread import read_log  # noqa: PLC0415
    from isccd.dedupe.undo import undo_log  # noqa: PLC0415

    if not args.undo.is_file():
        return fail(f"{args.undo}: no such action log")
    try:
        key = _log_key(_state_dir(args), create=False)
    except Failed as exc:
        return fail(str(exc), exc.status)
    except ActionLogError as exc:
        return fail(f"{exc}; nothing was touched")
    outcomes: list[UndoOutcome] = []

    def shown(outcome: UndoOutcome) -> None:
        outcomes.append(outcome)
        if not args.json:
            print(f"{outcome.status.value:<8} {show(outcome.intent.path)}: {outcome.reason}")

    stopped = None
    try:
        roots = {r for a in read_log(args.undo, key) for r in (a.intent.root, a.intent.kept_root)}
        with tree_lock(roots) as held:
            _locked(held)
            undo_log(args.undo, key, on_outcome=shown)
    except TreeLockedError as exc:
        return fail(str(exc))
    except PlanFileError as exc:
        return fail(f"{exc}; nothing was touched", EXIT_USAGE)
    except ActionLogError as exc:
        stopped = str(exc)
    return _undo_report(args, outcomes, stopped)


def _undo_report(args: argparse.Namespace, outcomes: list[UndoOutcome], stopped: str | None) -> int:
    """Print the end of an undo (the outcomes were printed as they came, but in JSON); its
    exit status."""
    from isccd.dedupe.undo import UndoStatus  # noqa: PLC0415

    cannot = [o for o in outcomes if o.status is UndoStatus.CANNOT]
    if args.json:
        print_json({"log": str(args.undo), "outcomes": [_undo_json(o) for o in outcomes]}, indent=1)
    elif stopped is None:
        undone = sum(o.status is UndoStatus.UNDONE for o in outcomes)
        print(f"{undone:,} undone, {len(cannot):,} cannot be undone")
    if stopped is None:
        return EXIT_FAILURE if cannot else EXIT_OK
    if not outcomes:
        return fail(f"{stopped}; nothing was touched")
    return fail(f"{stopped}; undo stopped after {len(outcomes):,}: run it again to finish")


def _undo_json(outcome: UndoOutcome) -> dict[str, Any]:
    return {
        "path": outcome.intent.path,
        "action": outcome.intent.action.value,
        "status": outcome.status.value,
        "reason": outcome.reason,
    }
