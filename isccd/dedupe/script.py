"""``--script sh``: the steps of a plan as a POSIX shell script to review and run by hand.

The steps are those the owner rules let through (:func:`isccd.dedupe.owner.judged`, on the
files as they were when the script was written): a step ``--apply`` would refuse is not in it.
Nor is a step whose files or move target lie below a folder another user could change
(:func:`isccd.dedupe.owner.scriptable`: a folder of theirs, one they may write, a link on the
way): a script acts by name, and such a user could swap a folder for a link between its checks
and its act; ``--apply`` takes those steps, acting on open folders. The folders a move needs
are made private to the user running the script (``umask 077``), where ``--apply`` gives them
the owners and modes of the folders they mirror.
The script checks before each action, with ordinary commands, what the engine checks: both
files are regular files reached without a symbolic link (``readlink -f`` gives the path back)
with the recorded device, inode, size and modification time (GNU ``stat``) and the owner, group
and permissions the owner rules judged when it was written, and, for exact
duplicates, equal bytes (``cmp``). A file failing a check is skipped and named on stderr, and
the script ends with status 1. It writes no action log and cannot be undone by ``isccd dedupe
--undo``. A link or reflink is made in a private folder (``mktemp -d``, mode 0700, in the
victim's own folder, so on its file system; removed after the step and, by a ``trap``, when the
script ends), never under a name another user could plant first, then renamed over the victim
(``ln -T``, ``cp -T``, ``mv -T -f``: atomic, but without the engine's last-moment check; a
directory swapped in for the victim is refused, never entered). Moves never replace a file nor
enter a directory at the target (``mv -T -n``) and never cross file systems.

No file name reaches the script but as one argument quoted for the shell (``shlex.quote``):
not in a comment either, where a newline in a name would end the comment and run the rest.
A name that is not UTF-8 is written as its bytes (the script is text in the file system's
encoding, ``surrogateescape``), so the script names the very file the plan does.

Pure: returns the text.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from isccd.dedupe.plan import Action, GroupKind, Member, Step

_PRELUDE = """\
#!/bin/sh
# isccd dedupe: SUMMARY
# Review it, then run it with: sh NAME
# Before each action both files are checked to be what the plan recorded (regular files
# reached without symbolic links, same device, inode, size and modification time) and, for
# exact duplicates, to hold the same bytes (cmp). A file failing a check is skipped and named
# on stderr. Exit status: 0 when every action was done, 1 when some were skipped or failed.
# Hard links share the kept file's permissions, owner and times. This script keeps no action
# log: `isccd dedupe --undo` cannot revert what it does.
set -u
status=0
tmp=
# Each replacement is made in a private folder (mktemp -d, mode 0700) in the file's own
# folder, removed right after and, whatever happens, when the script ends.
trap 'if [ -n "$tmp" ]; then rm -rf -- "$tmp"; fi' EXIT
trap 'exit 1' HUP INT TERM
skip() { printf 'skipped %s: %s\\n' "$1" "$2" >&2; status=1; }
# $(...) drops the newlines a name may end with: each output is ended with a / kept.
nl='
'
same() { [ -f "$1" ] && [ ! -L "$1" ] && [ "$(readlink -f -- "$1"; echo /)" = "$1$nl/" ] &&
    [ "$(stat -c '%d %i %s %.9Y' -- "$1")" = "$2" ] &&
    { [ -z "${3-}" ] || [ "$(stat -c '%u %g %a' -- "$1")" = "$3" ]; }; }
# Named as the daemon ignores: .isccd-dedupe-*.tmp
private() { t=$(mktemp -d -- "$1/.isccd-dedupe-XXXXXX.tmp" && echo /) && tmp=${t%?/}; }
cleanup() { rm -rf -- "$tmp"; tmp=; }
link() { private "$3" || { skip "$2" 'no private folder can be made beside it'; return; }
    ln -T -- "$1" "$tmp/f" && mv -T -f -- "$tmp/f" "$2" || skip "$2" 'not linked'; cleanup; }
reflink() { private "$3" || { skip "$2" 'no private folder can be made beside it'; return; }
    cp --reflink=always -T -- "$1" "$tmp/f" && chown --reference="$2" -- "$tmp/f" &&
    chmod --reference="$2" -- "$tmp/f" && touch -r "$2" -- "$tmp/f" &&
    mv -T -f -- "$tmp/f" "$2" || skip "$2" 'not reflinked'; cleanup; }
remove() { rm -f -- "$2" || skip "$2" 'not removed'; }
me=$(id -u)
# A folder nobody else may change: a folder, not a link, this user's or root's, that only they
# may write (or sticky, as /tmp).
safe() { [ -d "$1" ] && [ ! -L "$1" ] &&
    case $(stat -c %u -- "$1") in 0|"$me") ;; *) false ;; esac &&
    case $(stat -c %A -- "$1") in ?????w???[!tT]|????????w[!tT]) false ;; *) true ;; esac; }
# Every folder from $1 up to /, before the target's folders are made and after: one made since
# the script was written by someone else, or a link, and the file stays where it is.
trusted() { p=$1; while :; do safe "$p" || return 1; [ "$p" = / ] && return 0
    p=$(dirname -- "$p"; echo /); p=${p%?/}; done; }
# The deepest folder of $1 that is there (or a link there).
there() { e=$1; while [ ! -e "$e" ] && [ ! -L "$e" ]; do e=$(dirname -- "$e"; echo /)
    e=${e%?/}; done; }
unlinked() { [ "$(readlink -f -- "$1"; echo /)" = "$1$nl/" ]; }
move() { d=$(dirname -- "$3"; echo /); d=${d%?/}; there "$d"
    unlinked "$e" && trusted "$e" && (umask 077 && mkdir -p -- "$d") && unlinked "$d" &&
    trusted "$d" && [ "$(stat -c %d -- "$d")" = "$4" ] &&
    [ ! -e "$3" ] && [ ! -L "$3" ] && mv -T -n -- "$2" "$3" && [ ! -e "$2" ] ||
    skip "$2" "not moved to $3"; }
"""


def _stamp(member: Member) -> str:
    seconds, nanos = divmod(member.mtime_ns, 1_000_000_000)
    return f"{member.device} {member.inode} {member.size} {seconds}.{nanos:09d}"


def _line(step: Step, owners: Mapping[str, str]) -> str:
    q = shlex.quote

    def judged(path: str) -> str:
        return f" {q(owners[path])}" if path in owners else ""

    kept, victim = step.kept, step.path
    checks = [
        f"same {q(kept.path)} {q(_stamp(kept))}{judged(kept.path)}",
        f"same {q(victim)} {q(_stamp(step.member))}{judged(victim)}",
    ]
    if step.kind is GroupKind.EXACT:
        checks.append(f"cmp -s -- {q(kept.path)} {q(victim)}")
    if step.action is Action.MOVE:
        assert step.target is not None
        extra = f"{q(step.target)} {step.member.device}"
    else:  # the victim's folder, where the private folder for its replacement is made
        extra = q(victim.rpartition("/")[0] or "/")
    command = f"{step.action.value} {q(kept.path)} {q(victim)} {extra}"
    otherwise = f"skip {q(victim)} 'changed since the plan'"
    return f"if {' && '.join(checks)}; then {command}; else {otherwise}; fi"


def shell_script(
    steps: Sequence[Step],
    summary: str,
    name: str = "THIS_FILE",
    owners: Mapping[str, str] | None = None,
) -> str:
    """The script doing ``steps``.

    Args:
        steps: The steps.
        summary: One line saying what the script does.
        name: How the script is named in its own header.
        owners: Per path, its owner, group and permissions as the owner rules judged them
            (``stat -c '%u %g %a'``): a file whose own differ when the script runs is skipped,
            as one changed since the plan.
    """
    owners = owners or {}
    header = _PRELUDE.replace("SUMMARY", summary.replace("\n", " "), 1)
    lines = [header.replace("NAME", name, 1)]
    group = -1
    for step in steps:
        if step.group != group:
            group = step.group
            # The kept file is the first argument of every line of the group; its name in the
            # comment too would be a name outside quotes.
            lines.append(f"# group {group + 1}: keep the first file named below")
        lines.append(_line(step, owners))
    lines.append('exit "$status"')
    return "\n".join(lines) + "\n"
