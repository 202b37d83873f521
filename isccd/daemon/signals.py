"""Signals the daemon answers: SIGTERM and SIGINT stop it, SIGHUP reloads its configuration.

Handlers run on the event loop (``loop.add_signal_handler``), never in the middle of other
code, and are removed again when the daemon is done, so whatever handled the signals before
(the default, a test harness) is in charge again.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def handle_signals(
    loop: asyncio.AbstractEventLoop, on_stop: Callable[[str], None], on_reload: Callable[[], None]
) -> Iterator[None]:
    """Route SIGTERM/SIGINT to ``on_stop(signal name)`` and SIGHUP to ``on_reload()``.

    The previous dispositions are restored on exit.
    """
    previous = {
        sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    }
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, on_stop, sig.name)
        loop.add_signal_handler(signal.SIGHUP, on_reload)
        yield
    finally:
        for sig, handler in previous.items():
            loop.remove_signal_handler(sig)
            if handler is not None:  # None: set outside Python; left as it is
                signal.signal(sig, handler)
