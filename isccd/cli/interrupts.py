"""SIGINT and SIGTERM for a command that writes a store: a request to stop, taken where it is
safe, instead of an exception raised wherever the main thread happens to be.

Python turns SIGINT into :class:`KeyboardInterrupt` at whatever line the main thread runs.
Raised in the middle of handing a job to the store's thread (inside ``queue.Queue.put``,
between the wake-up of the thread that waits and its removal from the waiters), it leaves a
waiter behind that swallows the next wake-up, the stop the store's close sends: the command
then waits for ever. Raised while the hashing workers are let go, it leaves them attached and
the fork server waiting for them.

While :meth:`Interrupts.held` is entered, the first signal is recorded and the scan's task is
cancelled on its event loop (:meth:`Interrupts.cancelling`), where every ``await`` is a safe
place to stop; a second only counts. The held section ends what it has begun (the workers
stopped, the store committed and closed) and, on leaving, raises :class:`KeyboardInterrupt`:
the command ends as interrupted, as Ctrl-C ends it. A third signal ends the process at once
(exit 130), for a stop that waits on something that does not end (a stalled disk): what it
had not committed then is lost, as a kill loses it, and the store is as a killed writer
leaves it. Outside a held section both signals raise at once, as SIGINT always does. A
signal the command started with ignored (SIGINT of a job a shell started in the background)
is left ignored. A command done, its exit handlers (multiprocessing's removal of its
temporary files among them) may be left a first signal to finish (``exiting``).

The signals' dispositions never pass through the default (which for SIGTERM kills the
process on the spot): they go from the previous handler to this one and back.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from types import FrameType, TracebackType
from typing import TYPE_CHECKING

from isccd.cli import EXIT_INTERRUPTED

if TYPE_CHECKING:
    import socket

#: The signals taken as a request to stop.
SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: The signal, counted from the first of a held section, that ends the process at once.
_AT_ONCE = 3


class Interrupts:
    """SIGINT and SIGTERM, from ``with Interrupts():`` until it is left (main thread only).

    ``exiting``: left, the signals are not handed back to what handled them before but to
    the command's exit, which a first signal lets finish (its exit handlers remove
    multiprocessing's temporary files) and a second ends at once (exit 130).
    """

    def __init__(self, *, exiting: bool = False) -> None:
        self._held = 0
        self._pending = 0  # signals that came in a held section, not raised yet
        self._wake: Callable[[], None] | None = None
        self._previous: dict[signal.Signals, object] = {}
        self._exiting = exiting

    def __enter__(self) -> Interrupts:
        for sig in SIGNALS:
            if signal.getsignal(sig) is not signal.SIG_IGN:
                self._previous[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        exiting = _Exiting() if self._exiting else None
        for sig, previous in self._previous.items():
            # None: a disposition set outside Python, which Python cannot restore; the default.
            handler = exiting or (signal.SIG_DFL if previous is None else previous)
            signal.signal(sig, handler)  # type: ignore[arg-type]

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Within: a signal does not raise; the section is left with :class:`KeyboardInterrupt`
        if one came meanwhile, in place of the cancellation it caused (an error, such as a
        store that could not commit, is raised as it is)."""
        self._held += 1
        try:
            yield
        except BaseException as exc:
            if _cancelled(exc):
                self._left()
                raise
            self._held -= 1
            if not self._held:
                self._pending = 0  # answered: the command ends with the error
            raise
        self._left()

    def _left(self) -> None:
        self._held -= 1
        if not self._held and self._pending:
            self._pending = 0
            raise KeyboardInterrupt from None

    @contextlib.contextmanager
    def cancelling(self) -> Iterator[None]:
        """Within a held section, on the running event loop: the first signal cancels the
        current task (at once if one came already).

        A signal the kernel hands to another thread (the store's, a worker's) wakes the loop
        through a wake-up socket, so that it is acted on at once, not when the loop next wakes
        for another reason.
        """
        import asyncio  # noqa: PLC0415 -- a command that runs no loop does without it
        import socket  # noqa: PLC0415

        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("cancelling() needs a task")

        def wake() -> None:
            loop.call_soon_threadsafe(task.cancel)

        with contextlib.ExitStack() as undo:
            reader, writer = socket.socketpair()
            undo.callback(writer.close)
            undo.callback(reader.close)
            reader.setblocking(False)
            writer.setblocking(False)
            loop.add_reader(reader.fileno(), _drain, reader)
            undo.callback(loop.remove_reader, reader.fileno())
            previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
            undo.callback(signal.set_wakeup_fd, previous)
            self._wake = wake
            undo.callback(setattr, self, "_wake", None)
            if self._pending:
                task.cancel()
            yield

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if not self._held:
            raise KeyboardInterrupt
        self._pending += 1
        if self._pending == 1 and self._wake is not None:
            self._wake()
        elif self._pending >= _AT_ONCE:
            _stop_at_once()


class _Exiting:
    """The signals of a command that is exiting: the first is let go, the second ends it."""

    def __init__(self) -> None:
        self._seen = 0

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self._seen += 1
        if self._seen > 1:
            _stop_at_once()


def _stop_at_once() -> None:
    with contextlib.suppress(OSError):
        os.write(2, b"isccd: interrupted again: stopping at once\n")
    os._exit(EXIT_INTERRUPTED)


def _cancelled(exc: BaseException) -> bool:
    """Whether ``exc`` is what a signal's stop raises: the scan's task cancelled, or Ctrl-C."""
    if isinstance(exc, KeyboardInterrupt):
        return True
    asyncio = sys.modules.get("asyncio")  # no loop ran without it: nothing to cancel
    return asyncio is not None and isinstance(exc, asyncio.CancelledError)


def _drain(reader: socket.socket) -> None:
    """Empty the wake-up socket (its bytes are the signals' numbers, handled already)."""
    with contextlib.suppress(BlockingIOError):
        while reader.recv(512):
            pass
