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
place to stop; later signals only add to the count. The held section ends what it has begun
(the workers stopped, the store committed and closed) and, on leaving, raises
:class:`KeyboardInterrupt`: the command ends as interrupted, as Ctrl-C ends it. Outside a
held section both signals raise at once, as SIGINT always does.

The signals' dispositions never pass through the default (which for SIGTERM kills the
process on the spot): they go from the previous handler to this one and back.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import Callable, Iterator
from types import FrameType, TracebackType

#: The signals taken as a request to stop.
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    """SIGINT and SIGTERM, from ``with Interrupts():`` until it is left (main thread only)."""

    def __init__(self) -> None:
        self._held = 0
        self._pending = False  # a signal came in a held section, not raised yet
        self._wake: Callable[[], None] | None = None
        self._previous: dict[signal.Signals, object] = {}

    def __enter__(self) -> Interrupts:
        for sig in SIGNALS:
            self._previous[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for sig, handler in self._previous.items():
            # None: a disposition set outside Python, which Python cannot restore; the default.
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)  # type: ignore[arg-type]

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Within: a signal does not raise; the section is left with :class:`KeyboardInterrupt`
        if one came meanwhile."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            if not self._held and self._pending:
                self._pending = False
                raise KeyboardInterrupt from None

    @contextlib.contextmanager
    def cancelling(self) -> Iterator[None]:
        """Within a held section, on the running event loop: the first signal cancels the
        current task (at once if one came already).

        A signal the kernel hands to another thread (the store's, a worker's) wakes the loop
        through a wake-up socket, so that it is acted on at once, not when the loop next wakes
        for another reason.
        """
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("cancelling() needs a task")
        reader, writer = socket.socketpair()
        reader.setblocking(False)
        writer.setblocking(False)
        loop.add_reader(reader.fileno(), _drain, reader)
        previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)

        def wake() -> None:
            loop.call_soon_threadsafe(task.cancel)

        self._wake = wake
        if self._pending:
            task.cancel()
        try:
            yield
        finally:
            self._wake = None
            signal.set_wakeup_fd(previous)
            loop.remove_reader(reader.fileno())
            reader.close()
            writer.close()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if not self._held:
            raise KeyboardInterrupt
        first, self._pending = not self._pending, True
        if first and self._wake is not None:
            self._wake()


def _drain(reader: socket.socket) -> None:
    """Empty the wake-up socket (its bytes are the signals' numbers, handled already)."""
    with contextlib.suppress(BlockingIOError):
        while reader.recv(512):
            pass
