"""One run of a hook's command for one event (``isccd subscribe --exec CMD``): its input, its
environment, its process group and its time limit.

The command is started without a shell: ``CMD`` is split into words as a POSIX shell would
(:func:`shlex.split`) once, when the subscriber starts, and nothing of an event ever becomes part
of its command line. What an event says reaches it only as data:

- on its standard input, the event's JSON object exactly as the daemon's socket carries it (one
  line, ASCII, ended by a newline);
- in its environment, the subscriber's own with the event's fields added (:func:`event_environment`)
  and ``ISCCD_HOOK_STORE`` (the store identity the ``seq`` belongs to: with ``ISCCD_EVENT_SEQ``, a
  key unique to the event) and ``ISCCD_HOOK_REDELIVERED`` (``1`` when a command may have run for
  this event before: a retry, or an event run again after the subscriber was killed; else ``0``).

It runs as a session and process group of its own, in the subscriber's working directory, with
the subscriber's standard output and error, and the cursor's lock open
(:func:`isccd.cli.cursor.holding`). When it outlives ``timeout`` seconds, its process
group is sent SIGTERM, and SIGKILL ``kill_grace`` seconds later if the command is still running.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import re
import signal
from collections.abc import Mapping
from typing import Any

#: The prefix of the variables made from an event's fields.
EVENT_PREFIX = "ISCCD_EVENT_"
STORE_VARIABLE = "ISCCD_HOOK_STORE"
REDELIVERED_VARIABLE = "ISCCD_HOOK_REDELIVERED"

_NOT_IN_A_NAME = re.compile(r"[^A-Za-z0-9]")


def variable_name(member: str) -> str:
    """The variable of an event member: ``ISCCD_EVENT_`` and its name in capitals, each
    character other than an ASCII letter or digit made ``_``; the event's type (``event``) is
    ``ISCCD_EVENT_TYPE``."""
    return EVENT_PREFIX + ("TYPE" if member == "event" else _word(member))


def _word(member: str) -> str:
    return _NOT_IN_A_NAME.sub("_", member).upper()


def event_environment(wire: Mapping[str, Any]) -> dict[str, str]:
    """The variables of an event's JSON object.

    Each member whose value is a string, a number, a boolean or null is one variable
    (:func:`variable_name`); each such member of an object member is one too, named by both
    joined with ``_`` (``previous.iscc`` is ``ISCCD_EVENT_PREVIOUS_ISCC``, ``units.image``
    ``ISCCD_EVENT_UNITS_IMAGE``), unless a member of the event has that name. Lists and deeper
    members are on standard input only. Values: strings as they are (a path with its bytes as on
    disk), numbers as JSON writes them, ``true`` and ``false``, null as the empty string. A
    value holding a NUL character cannot be in an environment and is left out.
    """
    variables: dict[str, str] = {}
    nested: dict[str, str] = {}
    for member, value in wire.items():
        name = variable_name(member)
        if isinstance(value, Mapping):
            for inner, item in value.items():
                if _scalar(item):
                    nested.setdefault(f"{name}_{_word(inner)}", _text(item))
        elif _scalar(value):
            variables[name] = _text(value)
    for name, text in nested.items():
        variables.setdefault(name, text)
    return {name: text for name, text in variables.items() if "\0" not in text}


def _scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _text(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def command_environment(
    base: Mapping[str, str], wire: Mapping[str, Any], store: str, *, redelivered: bool
) -> dict[str, str]:
    """A command's environment: ``base`` without any ``ISCCD_EVENT_*`` of its own (a variable
    that this event does not have must not come from elsewhere), and this event's."""
    env = {k: v for k, v in base.items() if not k.startswith(EVENT_PREFIX)}
    env.update(event_environment(wire))
    env[STORE_VARIABLE] = store
    env[REDELIVERED_VARIABLE] = "1" if redelivered else "0"
    return env


@dataclasses.dataclass(frozen=True, slots=True)
class Outcome:
    """How one run of a command ended."""

    #: Its exit status; negative: the signal that ended it (as :mod:`subprocess` gives it).
    returncode: int | None = None
    #: It outlived the timeout and was ended.
    timed_out: bool = False
    #: Why it could not be started.
    error: str | None = None

    @property
    def ok(self) -> bool:
        """It ran and exited with status 0."""
        return self.returncode == 0 and not self.timed_out

    def describe(self, timeout: float) -> str:
        """What went wrong, for the report of a failure."""
        if self.error is not None:
            return f"the command could not be started: {self.error}"
        if self.timed_out:
            return f"the command did not finish within {timeout:g} s and was killed"
        if self.returncode is not None and self.returncode < 0:
            return f"the command was killed by {signal.Signals(-self.returncode).name}"
        return f"the command exited with status {self.returncode}"


async def run_command(
    argv: tuple[str, ...],
    line: bytes,
    env: Mapping[str, str],
    *,
    timeout: float | None,
    kill_grace: float = 5.0,
    keep_fds: tuple[int, ...] = (),
) -> Outcome:
    """Run ``argv`` with ``line`` on its standard input and wait for it, up to ``timeout``
    seconds (``None``: as long as it takes); ``keep_fds`` stay open in it (the cursor's
    lock)."""
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            env=dict(env),
            start_new_session=True,
            pass_fds=keep_fds,
        )
    except (OSError, ValueError) as exc:
        return Outcome(error=str(exc))
    try:
        # A command that does not read its input is no failure: communicate() ignores the
        # broken pipe of its standard input.
        await asyncio.wait_for(process.communicate(line), timeout)
    except TimeoutError:
        await _end(process, kill_grace)
        return Outcome(returncode=process.returncode, timed_out=True)
    return Outcome(returncode=process.returncode)


async def _end(process: asyncio.subprocess.Process, grace: float) -> None:
    """SIGTERM to the command's process group, SIGKILL after ``grace`` seconds."""
    _signal_group(process.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), grace)
    except TimeoutError:
        _signal_group(process.pid, signal.SIGKILL)
        await process.wait()


def _signal_group(pid: int, sig: signal.Signals) -> None:
    # The group is the command's session (start_new_session), named by its leader's pid; a
    # group's id is not given to another process while a member of it lives.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)
