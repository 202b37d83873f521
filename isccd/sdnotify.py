"""The systemd notification protocol (``sd_notify(3)``) without libsystemd.

systemd passes a datagram socket in ``$NOTIFY_SOCKET``: a filesystem path, or an abstract-namespace
name written with a leading ``@``. Each message is newline-separated ``KEY=VALUE`` assignments.
isccd sends ``READY=1`` once it serves, ``STATUS=...`` as scans progress, ``WATCHDOG=1`` from a
heartbeat that proves work moves, ``RELOADING=1`` with ``MONOTONIC_USEC`` around a reload and
``STOPPING=1`` at shutdown.

Without ``$NOTIFY_SOCKET`` (not started by systemd) every call does nothing and returns False.
Sending never raises: a lost notification must not take the daemon down. The watchdog interval
comes from ``$WATCHDOG_USEC`` and applies only when ``$WATCHDOG_PID`` is unset or names this
process.

Imports nothing of isccd.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping


class Notifier:
    """A connection to systemd's notification socket, or a no-op without one.

    Args:
        env: Where ``NOTIFY_SOCKET``, ``WATCHDOG_USEC`` and ``WATCHDOG_PID`` are read (the
            process environment by default). Read once, here.
    """

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        self._address = _address(env.get("NOTIFY_SOCKET", ""))
        self._watchdog_usec = _watchdog_usec(env)
        self._sock: socket.socket | None = None

    @property
    def enabled(self) -> bool:
        """True when started by systemd with a notification socket."""
        return self._address is not None

    @property
    def watchdog_interval(self) -> float | None:
        """Seconds between the heartbeats systemd expects (half of ``WatchdogSec=``), or None."""
        if self._watchdog_usec is None:
            return None
        return self._watchdog_usec / 2_000_000

    def notify(self, **fields: str | int) -> bool:
        """Send one message of ``KEY=VALUE`` assignments (keys upper-cased).

        Returns:
            True when the datagram was sent; False without a socket or on any send error.
        """
        if self._address is None:
            return False
        lines = []
        for key, value in fields.items():
            text = str(value).replace("\n", " ")
            lines.append(f"{key.upper()}={text}")
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
                self._sock.setblocking(False)
            self._sock.sendto("\n".join(lines).encode("utf-8", "surrogateescape"), self._address)
        except OSError:
            return False
        return True

    def ready(self, status: str | None = None) -> bool:
        """Tell systemd the service is up (``READY=1``), with an optional status line."""
        if status is None:
            return self.notify(ready=1)
        return self.notify(ready=1, status=status)

    def status(self, text: str) -> bool:
        """Set the free-form status line shown by ``systemctl status``."""
        return self.notify(status=text)

    def watchdog(self) -> bool:
        """Keep the watchdog from firing (``WATCHDOG=1``)."""
        return self.notify(watchdog=1)

    def reloading(self) -> bool:
        """Announce a configuration reload (``RELOADING=1`` with ``MONOTONIC_USEC``).

        Follow with :meth:`ready` once the reload is done (or was refused).
        """
        return self.notify(
            reloading=1, monotonic_usec=time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        )

    def stopping(self) -> bool:
        """Announce an orderly shutdown (``STOPPING=1``)."""
        return self.notify(stopping=1)

    def extend_timeout(self, seconds: float) -> bool:
        """Ask for more time for the current start, reload or stop (``EXTEND_TIMEOUT_USEC``)."""
        return self.notify(extend_timeout_usec=int(seconds * 1_000_000))

    def close(self) -> None:
        """Close the socket; idempotent. Later calls reopen it."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _address(value: str) -> str | None:
    if not value:
        return None
    if value.startswith("@"):
        return "\0" + value[1:]
    if value.startswith("/"):
        return value
    # systemd also allows vsock:CID:PORT for VMs; isccd does not run there.
    return None


def _watchdog_usec(env: Mapping[str, str]) -> int | None:
    try:
        usec = int(env.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    pid = env.get("WATCHDOG_PID")
    if pid and pid != str(os.getpid()):
        return None
    return usec if usec > 0 else None
