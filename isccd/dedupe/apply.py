"""Carrying out the steps of a plan, one name at a time, each checked, logged and atomic.

For each step: open the victim and the kept file beneath their roots without following links,
and hold both open to the end of the step; check both are what the plan recorded, and that the
kept file may stand for the victim (:mod:`isccd.dedupe.owner`); for exact groups, compare their
bytes and the kept file's BLAKE3 with the recorded digest; log the intent. Once the intents of
a batch of steps are on disk (one fsync for the batch, batches growing from 64 steps to 1,024:
the log's cost, not the checks'), each step in turn, immediately:

1. checks the kept file's name and the victim's again (cheap: ``lstat``), and takes a read
   lease on both (no one may open them for writing until the step ends; a file already open
   for writing elsewhere is skipped);
2. acts (:mod:`isccd.dedupe.actions`): links to the open kept file's inode itself, clones it
   or takes the victim's name away, the victim's inode kept aside under a temporary name;
3. checks everything again (:func:`isccd.dedupe.verify.confirm`): both files unmodified, the
   kept one still under its name, and their bytes, read side by side once more, still equal
   with the digest logged, and the leases unbroken. Only then is the victim's inode let go;
   on any difference the action is reverted and the step reported skipped.

So a kept file rewritten while a batch is checked, or removed by another run that keeps the
victim, never costs the victim's bytes. The caller also holds the tree lock
(:mod:`isccd.dedupe.lock`) that keeps other runs and undos off the same roots. A file that
fails a check is skipped and reported, never acted on; a failure of one step never stops the
others.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import os
import resource
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from isccd.dedupe import actions
from isccd.dedupe.beneath import Folders
from isccd.dedupe.log import ActionLog, Intent
from isccd.dedupe.owner import check_owners
from isccd.dedupe.plan import Action, GroupKind, Step
from isccd.dedupe.syscalls import drop_lease, lease_intact, read_lease
from isccd.dedupe.verify import (
    Handle,
    check_recorded,
    confirm,
    name_unchanged,
    open_in,
    same_bytes,
)
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


#: Steps checked and logged per sync of the log, in the first batch. The intents of a batch
#: reach the disk in one fsync before any of its actions (one fsync costs 1-10 ms on ext4: one
#: per step made 10,000 links take two minutes); each action still checks both files again,
#: just before and just after it, so the batch separates the log's sync from the act, never a
#: check. The first actions come after this many checks; each next batch is twice as large, up
#: to :data:`BATCH_MOST` (10,000 steps: 14 fsyncs, not 157).
BATCH = 64
#: The most steps in a batch (each holds up to four descriptors open until it is done; fewer
#: where the limit of open files is lower, see :func:`batch_most`).
BATCH_MOST = 1024
#: A batch ends once its files hold this many bytes: every one is read before the first
#: action, so large files are acted on in small batches (an fsync is nothing beside the reads).
BATCH_BYTES = 256 << 20


def batch_most() -> int:
    """The most steps in a batch here: :data:`BATCH_MOST`, or what a quarter of the limit of
    open files allows (four descriptors a step), at least :data:`BATCH`."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return BATCH_MOST
    return max(BATCH, min(BATCH_MOST, soft // 16))


@dataclass(frozen=True, slots=True)
class _Ready:
    """A step checked and logged, its files open, waiting for the log to be synced."""

    step: Step
    victim: Handle
    kept: Handle
    action_id: int
    temp: str | None
    digest: bytes | None


class Phase(enum.StrEnum):
    """The moments of a step an observer of :class:`Applier` is told of (progress, tracing,
    and the tests that change files at these very moments)."""

    CHECKED = "checked"
    """Its files were checked (the last time just now), its intent is on disk; the leases
    and the action come next."""
    SWAPPED = "swapped"
    """The action took the victim's name (its inode is aside); the last checks come next."""


class Applier:
    """Carries out steps, logging each in an :class:`ActionLog`."""

    def __init__(
        self,
        log: ActionLog,
        move_to: str | None = None,
        *,
        any_owner: bool = False,
        on_phase: Callable[[Phase, Step], None] | None = None,
    ) -> None:
        """Start with the log each action is recorded in and the ``--move`` folder, if any.

        Args:
            log: The action log, open.
            move_to: The ``--move`` folder.
            any_owner: ``--link-any-owner`` (see :mod:`isccd.dedupe.owner`).
            on_phase: Called at each :class:`Phase` of each step that gets there.
        """
        self.log = log
        self.move_to = move_to
        self.any_owner = any_owner
        self._on_phase = on_phase
        #: Devices found unable to reflink, and why: later steps there fail at once.
        self._no_reflink: dict[int, str] = {}

    def run(self, steps: Iterable[Step]) -> Iterator[Outcome]:
        """Carry out ``steps`` in order, yielding each outcome as it is known."""
        batch: list[Step] = []
        size, most, held = BATCH, batch_most(), 0
        for step in steps:
            batch.append(step)
            held += step.member.size
            if len(batch) >= size or held >= BATCH_BYTES:
                yield from self._run_batch(batch)
                batch, size, held = [], min(2 * size, most), 0
        if batch:
            yield from self._run_batch(batch)

    def _run_batch(self, steps: list[Step]) -> Iterator[Outcome]:
        with contextlib.ExitStack() as stack:
            # The batch's folders are closed last, after the files in them.
            folders = Folders()
            stack.callback(folders.close)
            ready = [self._prepare(step, folders, stack) for step in steps]
            self.log.sync()
            for item in ready:
                yield item if isinstance(item, Outcome) else self._act(item)

    def _prepare(
        self, step: Step, folders: Folders, stack: contextlib.ExitStack
    ) -> Outcome | _Ready:
        """Open and check a step's files (held open on ``stack``, in ``folders``) and log its
        intent (not yet synced)."""
        try:
            victim = open_in(folders, step.member.root, step.path)
            stack.callback(os.close, victim.fd)
            if (victim.stat.st_dev, victim.stat.st_ino) == step.kept.identity:
                why = f"{step.path}: already a hard link of the kept file"
                return Outcome(step, Status.NOTHING, why)
            check_recorded(victim.stat, step.member, step.path)
            kept = open_in(folders, step.kept.root, step.kept.path)
            stack.callback(os.close, kept.fd)
            check_recorded(kept.stat, step.kept, step.kept.path)
            self._require_reflink(step, victim)
            digest = None
            if step.kind is GroupKind.EXACT:
                if step.action in (Action.LINK, Action.REMOVE):
                    check_owners(
                        (step.path, victim.fd, victim.stat), (kept.path, kept.fd, kept.stat),
                        action=step.action, any_owner=self.any_owner,
                    )  # fmt: skip
                digest = same_bytes(victim, kept, step.kept.blake3 or step.member.blake3)
        except StaleFileError as exc:
            self.log.skip(step.path, str(exc))
            return Outcome(step, Status.SKIPPED, str(exc))
        except DedupeError as exc:  # refused before anything was logged
            self.log.skip(step.path, str(exc))
            return Outcome(step, Status.FAILED, str(exc))
        except OSError as exc:  # a read failed (EIO, ...): nothing was logged or done
            why = f"{step.path}: cannot be read: {exc.strerror}"
            self.log.skip(step.path, why)
            return Outcome(step, Status.FAILED, why)
        action_id = self.log.next_id()
        temp = temp_name(action_id) if step.action is not Action.MOVE else None
        st = victim.stat
        self.log.intent(
            Intent(
                action_id, step.action, step.path, step.member.root, kept.path,
                step.kept.root, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
                st.st_atime_ns, st.st_mode, st.st_uid, st.st_gid,
                digest.hex() if digest is not None else None, temp, step.target,
                self.move_to if step.action is Action.MOVE else None,
            )
        )  # fmt: skip
        return _Ready(step, victim, kept, action_id, temp, digest)

    def _phase(self, phase: Phase, step: Step) -> None:
        if self._on_phase is not None:
            self._on_phase(phase, step)

    def _require_reflink(self, step: Step, victim: Handle) -> None:
        """Fail a reflink at once on a file system already found unable to."""
        if step.action is Action.REFLINK and victim.stat.st_dev in self._no_reflink:
            raise DedupeError(step.path, self._no_reflink[victim.stat.st_dev])

    def _act(self, ready: _Ready) -> Outcome:
        step, action_id = ready.step, ready.action_id
        try:
            self._do(ready)
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
        except OSError as exc:  # a read of the last checks failed: the action was reverted
            why = f"{step.path}: cannot be checked: {exc.strerror}"
            self.log.outcome(action_id, "failed", why)
            return Outcome(step, Status.FAILED, why)
        self.log.outcome(action_id, "done")
        return Outcome(step, Status.DONE)

    def _do(self, ready: _Ready) -> None:
        """Act, check everything again, and keep the result only if nothing changed.

        Raises:
            StaleFileError: A file changed before or during the action (it was reverted).
            DedupeError: The action could not be done or reverted.
        """
        step, victim, kept, temp = ready.step, ready.victim, ready.kept, ready.temp
        if step.action is Action.MOVE:
            assert step.target is not None and self.move_to is not None
            self._phase(Phase.CHECKED, step)
            actions.move(victim, self.move_to, step.target)
            return
        assert temp is not None and ready.digest is not None
        # Cheap first: the kept file as verified, before anything is done to the victim.
        name_unchanged(kept)
        self._phase(Phase.CHECKED, step)
        with _leased(victim, kept) as leased:
            if step.action is Action.LINK:
                swapped = actions.link(victim, kept, temp)
            elif step.action is Action.REFLINK:
                swapped = actions.reflink(victim, kept, temp)
            else:
                swapped = actions.remove(victim, kept, temp)
            try:
                self._phase(Phase.SWAPPED, step)
                confirm(victim, temp, swapped.holder_fd, kept, ready.digest,
                        kept_named=step.action is not Action.REFLINK)  # fmt: skip
                _require_leases(leased)
            except BaseException:
                actions.revert(swapped)
                raise
            actions.finish(swapped)


def _require_leases(leased: list[Handle]) -> None:
    """Raise unless no one asked to open the leased files for writing during the action
    (whoever did waits for the lease, so what was checked still holds)."""
    for handle in leased:
        if not lease_intact(handle.fd):
            raise StaleFileError(handle.path, "was opened for writing while being acted on")


@contextlib.contextmanager
def _leased(*handles: Handle) -> Iterator[list[Handle]]:
    """Hold a read lease on each file (:func:`isccd.dedupe.syscalls.read_lease`) for the
    block: no one can open them for writing meanwhile, so the last checks hold until the
    action is finished; the handles leased.

    A file that cannot be leased (one this user does not own, without ``CAP_LEASE``; a file
    system without leases) is acted on with the checks alone.

    Raises:
        StaleFileError: A file is open for writing by another process (it may change at any
            moment): not acted on.
    """
    leased: list[Handle] = []
    try:
        for handle in handles:
            refused = read_lease(handle.fd)
            if refused is None:
                leased.append(handle)
            elif refused.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                raise StaleFileError(
                    handle.path, "is open for writing by another process: not acted on while "
                    "it may change"
                )  # fmt: skip
        yield leased
    finally:
        for handle in leased:
            drop_lease(handle.fd)


def apply_steps(
    steps: Iterable[Step],
    log: ActionLog,
    *,
    move_to: str | None = None,
    any_owner: bool = False,
    on_outcome: Callable[[Outcome], None] | None = None,
    on_phase: Callable[[Phase, Step], None] | None = None,
) -> list[Outcome]:
    """Carry out ``steps``, logging each in ``log``; the outcomes in order.

    The caller holds the tree lock (:func:`isccd.dedupe.lock.tree_lock`) on the steps' roots.

    Args:
        steps: The steps (from :func:`isccd.dedupe.plan.steps_of`).
        log: The action log, open.
        move_to: The ``--move`` folder, for moves.
        any_owner: ``--link-any-owner``.
        on_outcome: Called after each step (progress, output).
        on_phase: Called at each phase of each step (see :class:`Applier`).
    """
    applier = Applier(log, move_to, any_owner=any_owner, on_phase=on_phase)
    outcomes = []
    for outcome in applier.run(steps):
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return outcomes
