"""Carrying out the steps of a plan, one name at a time, each checked, logged and atomic.

For each step: open the victim and the kept file beneath their roots without following links;
check both are what the plan recorded; for exact groups, compare their bytes and the kept
file's BLAKE3 with the recorded digest; log the intent (on disk before anything changes); act
(:mod:`isccd.dedupe.actions`); log the outcome. A file that fails a check is skipped and
reported, never acted on; a failure of one step never stops the others.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from isccd.dedupe import actions
from isccd.dedupe.log import ActionLog, Intent
from isccd.dedupe.plan import Action, GroupKind, Step
from isccd.dedupe.verify import Handle, check_recorded, opened, same_bytes
from isccd.errors import DedupeError, StaleFileError


class Status(enum.StrEnum):
    """How a step ended."""

    DONE = "done"
    """Carried out."""
    NOTHING = "nothing"
    """Nothing to do: the name already is what the action would make it."""
    SKIPPED = "skipped"
    """A check failed: the file changed, moved or vanished since the plan. Left untouched."""
    FAILED = "failed"
    """The action could not be done (permissions, file system); nothing was changed."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one step.

    Attributes:
        step: The step.
        status: How it ended.
        reason: Why it was skipped, failed or had nothing to do.
    """

    step: Step
    status: Status
    reason: str | None = None


def temp_name(action_id: int) -> str:
    """The temporary name an action uses in the victim's directory (recorded in its intent)."""
    return f".isccd-dedupe-{os.getpid()}-{action_id}.tmp"


class Applier:
    """Carries out steps, logging each in an :class:`ActionLog`."""

    def __init__(self, log: ActionLog, move_to: str | None = None) -> None:
        """Start with the log each action is recorded in and the ``--move`` folder, if any."""
        self.log = log
        self.move_to = move_to
        #: Devices found unable to reflink, and why: later steps there fail at once.
        self._no_reflink: dict[int, str] = {}

    def run(self, steps: Iterable[Step]) -> Iterator[Outcome]:
        """Carry out ``steps`` in order, yielding each outcome as it is known."""
        for step in steps:
            yield self.apply(step)

    def apply(self, step: Step) -> Outcome:
        """Carry out one step."""
        try:
            with opened(step.member.root, step.path) as victim:
                if (victim.stat.st_dev, victim.stat.st_ino) == step.kept.identity:
                    why = f"{step.path}: already a hard link of the kept file"
                    return Outcome(step, Status.NOTHING, why)
                check_recorded(victim.stat, step.member, step.path)
                with opened(step.kept.root, step.kept.path) as kept:
                    check_recorded(kept.stat, step.kept, step.kept.path)
                    return self._act(step, victim, kept)
        except StaleFileError as exc:
            self.log.skip(step.path, str(exc))
            return Outcome(step, Status.SKIPPED, str(exc))
        except DedupeError as exc:  # refused before anything was logged
            self.log.skip(step.path, str(exc))
            return Outcome(step, Status.FAILED, str(exc))

    def _act(self, step: Step, victim: Handle, kept: Handle) -> Outcome:
        if step.action is Action.REFLINK and victim.stat.st_dev in self._no_reflink:
            raise DedupeError(step.path, self._no_reflink[victim.stat.st_dev])
        digest = None
        if step.kind is GroupKind.EXACT:
            digest = same_bytes(victim, kept, step.kept.blake3 or step.member.blake3).hex()
        action_id = self.log.next_id()
        temp = temp_name(action_id) if step.action is not Action.MOVE else None
        st = victim.stat
        self.log.intent(
            Intent(
                action_id, step.action, step.path, step.member.root, kept.path,
                step.kept.root, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
                st.st_atime_ns, st.st_mode, st.st_uid, st.st_gid, digest, temp, step.target,
                self.move_to if step.action is Action.MOVE else None,
            )
        )  # fmt: skip
        try:
            self._do(step, victim, kept, temp)
        except actions.ReflinkUnsupportedError as exc:
            self._no_reflink[exc.device] = exc.reason
            self.log.outcome(action_id, "failed", str(exc))
            return Outcome(step, Status.FAILED, str(exc))
        except StaleFileError as exc:
            self.log.outcome(action_id, "failed", str(exc))
            return Outcome(step, Status.SKIPPED, str(exc))
        except DedupeError as exc:
            self.log.outcome(action_id, "failed", str(exc))
            return Outcome(step, Status.FAILED, str(exc))
        self.log.outcome(action_id, "done")
        return Outcome(step, Status.DONE)

    def _do(self, step: Step, victim: Handle, kept: Handle, temp: str | None) -> None:
        if step.action is Action.MOVE:
            assert step.target is not None and self.move_to is not None
            actions.move(victim, self.move_to, step.target)
            return
        assert temp is not None
        if step.action is Action.LINK:
            actions.link(victim, kept, temp)
        elif step.action is Action.REFLINK:
            actions.reflink(victim, kept, temp)
        else:
            actions.remove(victim, temp)


def apply_steps(
    steps: Iterable[Step],
    log: ActionLog,
    *,
    move_to: str | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Carry out ``steps``, logging each in ``log``; the outcomes in order.

    Args:
        steps: The steps (from :func:`isccd.dedupe.plan.steps_of`).
        log: The action log, open.
        move_to: The ``--move`` folder, for moves.
        on_outcome: Called after each step (progress, output).
    """
    applier = Applier(log, move_to)
    outcomes = []
    for outcome in applier.run(steps):
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return outcomes
