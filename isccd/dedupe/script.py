"""``--script sh``: the steps of a plan as a POSIX shell script to review and run by hand.

The steps are those the owner rules let through (:func:`isccd.dedupe.owner.judged`, on the
files as they were when the script was written): a step ``--apply`` would refuse is not in it.
The script checks before each action, with ordinary commands, what the engine checks: both
files are regular files reached without a symbolic link (``readlink -f`` gives the path back)
with the recorded device, inode, size and modification time (GNU ``stat``), and, for exact
duplicates, equal bytes (``cmp``). A file failing a check is skipped and named on stderr, and
the script ends with status 1. It writes no action log and cannot be undone by ``isccd dedupe
--undo``; linking replaces the name with ``ln`` then ``mv -f`` (atomic, but without the
engine's last-moment check), and moves never replace a file (``mv -n``) nor cross file systems.

No file name reaches the script but as one argument quoted for the shell (``shlex.quote``):
not in a comment either, where a newline in a name would end the comment and run the rest.
A name that is not UTF-8 is written as its bytes (the script is text in the file system's
encoding, ``surrogateescape``), so the script names the very file the plan does.

Pure: returns the text.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

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
skip() { printf 'skipped %s: %s\\n' "$1" "$2" >&2; status=1; }
# $(...) drops the newlines a name may end with: each output is ended with a / kept.
nl='
'
same() { [ -f "$1" ] && [ ! -L "$1" ] && [ "$(readlink -f -- "$1"; echo /)" = "$1$nl/" ] &&
    [ "$(stat -c '%d %i %s %.9Y' -- "$1")" = "$2" ]; }
link() { ln -- "$1" "$3" && mv -f -- "$3" "$2" || { rm -f -- "$3"; skip "$2" 'not linked'; }; }
reflink() { cp --reflink=always -- "$1" "$3" && chown --reference="$2" -- "$3" &&
    chmod --reference="$2" -- "$3" && touch -r "$2" -- "$3" && mv -f -- "$3" "$2" ||
    { rm -f -- "$3"; skip "$2" 'not reflinked'; }; }
remove() { rm -f -- "$2" || skip "$2" 'not removed'; }
move() { d=$(dirname -- "$3"; echo /); d=${d%?/};
    mkdir -p -- "$d" && [ "$(stat -c %d -- "$d")" = "$4" ] && [ ! -e "$3" ] && [ ! -L "$3" ] &&
    mv -n -- "$2" "$3" && [ ! -e "$2" ] ||
    skip "$2" "not moved to $3"; }
"""


def _stamp(member: Member) -> str:
    seconds, nanos = divmod(member.mtime_ns, 1_000_000_000)
    return f"{member.device} {member.inode} {member.size} {seconds}.{nanos:09d}"


def _line(step: Step, number: int) -> str:
    q = shlex.quote
    kept, victim = step.kept, step.path
    checks = [
        f"same {q(kept.path)} {q(_stamp(kept))}",
        f"same {q(victim)} {q(_stamp(step.member))}",
    ]
    if step.kind is GroupKind.EXACT:
        checks.append(f"cmp -s -- {q(kept.path)} {q(victim)}")
    if step.action is Action.MOVE:
        assert step.target is not None
        extra = f"{q(step.target)} {step.member.device}"
    else:  # a temporary name beside the victim, unique to this run ($$) and step
        directory = victim.rpartition("/")[0]
        extra = f'{q(directory + "/.isccd-dedupe-")}"$$"-{number}.tmp'
    command = f"{step.action.value} {q(kept.path)} {q(victim)} {extra}"
    otherwise = f"skip {q(victim)} 'changed since the plan'"
    return f"if {' && '.join(checks)}; then {command}; else {otherwise}; fi"


def shell_script(steps: Sequence[Step], summary: str, name: str = "THIS_FILE") -> str:
    """The script doing ``steps``.

    Args:
        steps: The steps.
        summary: One line saying what the script does.
        name: How the script is named in its own header.
    """
    header = _PRELUDE.replace("SUMMARY", summary.replace("\n", " "), 1)
    lines = [header.replace("NAME", name, 1)]
    group = -1
    for number, step in enumerate(steps, 1):
        if step.group != group:
            group = step.group
            # The kept file is the first argument of every line of the group; its name in the
            # comment too would be a name outside quotes.
            lines.append(f"# group {group + 1}: keep the first file named below")
        lines.append(_line(step, number))
    lines.append('exit "$status"')
    return "\n".join(lines) + "\n"
