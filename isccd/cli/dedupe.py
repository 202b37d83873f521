"""``isccd dedupe``: act on duplicate groups (link, reflink, remove or move the redundant
copies), as a dry run by default, with ``--apply``, as a shell script, or undo a run.

The groups come from the daemon or a store, as ``isccd dupes`` lists them (through
:func:`found_groups`, the one place that reads the ``dupes`` result), or from a plan file.
The engine is :mod:`isccd.dedupe`; this module parses, chooses, prints.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from isccd.cli import EXIT_CONFIG, EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from isccd.cli.ask import Failed, answer, bounded, configure, fail
from isccd.cli.connect import add_config_option, add_socket_option
from isccd.cli.escape import shown as show
from isccd.cli.index import add_group_filters
from isccd.cli.output import Progress, format_size, print_json
from isccd.errors import ConfigError, PlanFileError
from isccd.fspath import is_under
from isccd.results import DUPES_LIMIT_MAX, DupesQuery

if TYPE_CHECKING:
    from isccd.dedupe.apply import Outcome
    from isccd.dedupe.build import Excluded, FoundGroup
    from isccd.dedupe.keep import KeepRule
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
  changed, moved or vanished is skipped and reported, never acted on. Hard links already
  sharing the kept file's inode are nothing to do. Files under a --keep-in folder are never
  touched. Nothing outside the files' watched roots (and the --move folder) is touched.
  --link: the file's name becomes a hard link to the kept file, swapped in atomically. A hard
    link IS the kept file: it shares the kept file's permissions, owner, times and extended
    attributes, and writing to either name changes both. Both must be on one file system.
  --reflink: the file becomes a copy sharing the kept file's blocks (FICLONE; btrfs, XFS), with
    its own permissions, owner, times and extended attributes; a write to either copies the
    blocks it touches. File systems without reflinks (ext4, tmpfs, ...) are said so; nothing
    is changed there.
  --remove: the file is deleted (exact duplicates only), each one only after the kept copy
    was verified right then.
  --move DIR: the file is moved under DIR with its whole path (/srv/a/b.jpg goes to
    DIR/srv/a/b.jpg), never replacing a file there; DIR must be on the same file system (a
    rename, never a copy) and outside the watched roots.

the action log and undo:
  --apply records every action in an action log (--log FILE, default: a new file under the
  state directory's dedupe/ folder, named on stderr), before and after doing it, so that an
  interrupt (Ctrl-C, a crash, SIGKILL) leaves each file untouched or fully done, and the log
  says which. `isccd dedupe --undo LOG` moves moved files back; restores linked and removed
  files as copies of the kept file's content, with their own permissions and times, when that
  content is still theirs (BLAKE3 checked; their owner only as root); finishes or reverts
  actions an interrupt cut short; and says what it cannot undo (a file changed since, a kept
  file whose content changed). A reflink needs no undo.

  isccd runs as you: the daemon stays read-only and notices the changes like any other.

exit status: 0 when everything planned was done (or would be, in a dry run) or undone; 1 when
a file was skipped, an action failed or could not be undone, or the groups cannot be read; 2
for invalid arguments or a plan file that is not valid (nothing is touched); 78 for an invalid
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
        "--script", choices=["sh"], help="print a POSIX shell script doing it, with its checks"
    )
    parser.add_argument(
        "--near", action="store_true", help="also near-duplicate groups (only with --move)"
    )
    parser.add_argument(
        "--keep", action="append", default=[], metavar="RULE",
        help="which file stays: oldest, newest, largest, shortest-path or path=PREFIX; "
        "repeat to break ties in order (default: oldest, then shortest-path; at last the path)",
    )  # fmt: skip
    parser.add_argument(
        "--keep-in", action="append", default=[], type=Path, metavar="DIR",
        help="a reference folder: its files are kept first and never touched (repeatable)",
    )  # fmt: skip
    parser.add_argument("--plan", type=Path, metavar="FILE", help="act on a plan file")
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
        help="read the groups from the index in DIR instead of asking the daemon",
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
            f for f in ("apply", "script", "plan", "near", "keep", "keep_in") if getattr(args, f)
        ]
        if others:
            raise _Usage(f"--undo takes no --{others[0].replace('_', '-')}")
        return
    if args.near and args.move is None:
        raise _Usage("--near only goes with --move: near duplicates are never linked or removed")
    if args.apply and args.script:
        raise _Usage("--script writes a script to run instead of --apply; choose one")
    if args.plan is not None and args.keep:
        raise _Usage("a plan file says which file each group keeps; --keep does not apply")
    if args.plan is not None and (
        args.root or args.min_size or args.types or args.state or args.socket
    ):
        raise _Usage(
            "--root, --min-size, --type, --state and --socket choose groups; a plan has them"
        )


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


def _read_groups(args: argparse.Namespace) -> tuple[Plan, tuple[Excluded, ...], str]:
    """The plan: from the plan file, or made from the index's groups now.

    Raises:
        Failed: The groups cannot be read.
        PlanFileError: The plan file is not valid.
    """
    from isccd.dedupe.build import build_plan, observe  # noqa: PLC0415
    from isccd.dedupe.planfile import load_plan  # noqa: PLC0415

    if args.plan is not None:
        return load_plan(args.plan), (), str(args.plan)
    rules = _rules(args)
    root = _folder(Path(args.root)) if args.root else None
    query = DupesQuery(
        near=args.near, root=root, limit=args.limit, min_size=args.min_size,
        types=tuple(args.types) if args.types else None,
    )  # fmt: skip
    result = answer(args, lambda c: c.dupes(query), lambda index, _: index.dupes(query))
    if result.truncated:
        print(
            f"isccd: more than {args.limit:,} groups: these first; run again for the rest",
            file=sys.stderr,
        )
    found = observe(found_groups(result, configure(args).store_host))
    keep_in = tuple(_folder(d) for d in args.keep_in)
    source = f"index in {args.state}" if args.state else "the index"
    plan = build_plan(found.groups, rules, keep_in, found.thresholds)
    return plan, found.excluded, source


def _move_dir(args: argparse.Namespace, plan: Plan) -> str | None:
    if args.move is None:
        return None
    directory = _folder(args.move)
    from isccd.dedupe.plan import move_target  # noqa: PLC0415

    roots = {m.root for g in plan.groups for m in g.members}
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
        plan, excluded, source = _read_groups(args)
    except Failed as exc:
        return fail(str(exc), exc.status)
    except PlanFileError as exc:
        return fail(f"{exc}; nothing was touched", EXIT_USAGE)
    action = _action(args)
    move_to = _move_dir(args, plan)
    keep_in = tuple(_folder(d) for d in args.keep_in)
    steps, untouched = steps_of(plan, action, near=args.near, move_to=move_to, protected=keep_in)
    if args.script:
        from isccd.dedupe.script import shell_script  # noqa: PLC0415

        sys.stdout.write(shell_script(steps, _summary(action, steps, plan, dry=True)))
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


# -- output --------------------------------------------------------------------------------------


_VERB = {"link": "link", "reflink": "reflink", "remove": "remove", "move": "move"}
_DONE = {"link": "linked", "reflink": "reflinked", "remove": "removed", "move": "moved"}


def _freed(steps: Sequence[Step]) -> int:
    """Bytes the steps free (each victim file once); a move frees nothing where it was."""
    victims = {(s.member.identity, s.member.size) for s in steps if s.action.value != "move"}
    return sum(size for _, size in victims)


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
    for g, group in enumerate(plan.groups):
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
    sys.stdout.write("\n".join(out) + "\n")
    return EXIT_OK


def _default_log(args: argparse.Namespace) -> Path:
    try:
        config = configure(args)
    except ConfigError as exc:
        raise Failed(str(exc), EXIT_CONFIG) from None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return config.state_dir / "dedupe" / f"{stamp}-{os.getpid()}.jsonl"


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
    from isccd.dedupe.apply import Status, apply_steps  # noqa: PLC0415
    from isccd.dedupe.log import ActionLog  # noqa: PLC0415

    try:
        log_path = args.log if args.log is not None else _default_log(args)
    except Failed as exc:
        return fail(str(exc), exc.status)
    try:
        log = ActionLog(log_path)
    except (OSError, PlanFileError) as exc:
        return fail(f"the action log {log_path} cannot be written: {exc}; nothing was touched")
    print(f"isccd: action log: {log_path}", file=sys.stderr)
    with log, Progress(_DONE[action.value], len(steps)) as progress:
        log.run(action, apply=True)
        for e in excluded:
            log.skip(e.path, e.reason)

        def shown(outcome: Outcome) -> None:
            progress.advance()
            if not args.json:
                progress.close()
                print(_outcome_line(outcome), flush=True)

        outcomes = apply_steps(steps, log, move_to=move_to, on_outcome=shown)
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
            },
            indent=1,
        )
    else:
        for e in excluded:
            print(f"left out {show(e.path)}: {e.reason}")
        print(f"{_summary(action, done, plan, dry=False)}; {len(bad):,} skipped or failed")
        print(f"action log: {log_path} (undo: isccd dedupe --undo {log_path})")
    return EXIT_FAILURE if bad else EXIT_OK


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
    from isccd.dedupe.undo import UndoStatus, undo_log  # noqa: PLC0415

    if not args.undo.is_file():
        return fail(f"{args.undo}: no such action log")
    try:
        outcomes = undo_log(args.undo)
    except PlanFileError as exc:
        return fail(f"{exc}; nothing was touched", EXIT_USAGE)
    except OSError as exc:
        return fail(f"{args.undo} cannot be appended to: {exc.strerror}; nothing was touched")
    cannot = [o for o in outcomes if o.status is UndoStatus.CANNOT]
    if args.json:
        print_json({"log": str(args.undo), "outcomes": [_undo_json(o) for o in outcomes]}, indent=1)
    else:
        for o in outcomes:
            print(f"{o.status.value:<8} {show(o.intent.path)}: {o.reason}")
        undone = sum(o.status is UndoStatus.UNDONE for o in outcomes)
        print(f"{undone:,} undone, {len(cannot):,} cannot be undone")
    return EXIT_FAILURE if cannot else EXIT_OK


def _undo_json(outcome: UndoOutcome) -> dict[str, Any]:
    return {
        "path": outcome.intent.path,
        "action": outcome.intent.action.value,
        "status": outcome.status.value,
        "reason": outcome.reason,
    }
