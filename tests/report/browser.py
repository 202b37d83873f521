"""A headless Chromium driven over the DevTools protocol, for the report's browser tests and
benchmark.

Chromium is started with ``--remote-debugging-pipe``: it reads protocol messages from its file
descriptor 3 and writes its own to descriptor 4, each a JSON object ended by a NUL byte. That
needs no port, no websocket and no driver binary, and the browser dies with its pipe.

Everything a page logs as an error (``console.error``, an uncaught exception, a refused
resource or a Content-Security-Policy violation) is collected in :attr:`Page.errors`.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

#: The flags every test run uses: no sandbox (root in CI), nothing fetched in the background.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--remote-debugging-pipe",
)


def _high(fd: int) -> int:
    """``fd`` moved to a number above 9 (close-on-exec, as before)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class BrowserError(Exception):
    """The browser answered a command with an error, or did not answer in time."""


class Browser:
    """A headless Chromium with its own profile in ``profile``.

    Args:
        profile: A directory for the browser's profile (``--user-data-dir``) and log (made
            when missing).
        width: Window width in CSS pixels.
        height: Window height.
    """

    def __init__(self, profile: Path, width: int = 1280, height: int = 900) -> None:
        if CHROMIUM is None:
            raise BrowserError("chromium is not installed")
        profile.mkdir(parents=True, exist_ok=True)
        self.profile = profile
        self.size = (width, height)
        self._next_id = 0
        self._buffer = b""
        self._events: list[dict[str, Any]] = []
        # Both ends the browser gets are moved above 9 first, so that placing one at 3
        # cannot overwrite the other.
        to_browser_r, self._to_browser = (_high(fd) for fd in os.pipe())
        self._from_browser, from_browser_w = (_high(fd) for fd in os.pipe())
        log = profile / "chromium.log"
        argv = [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={profile / 'data'}",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        actions = [
            (os.POSIX_SPAWN_DUP2, to_browser_r, 3),
            (os.POSIX_SPAWN_DUP2, from_browser_w, 4),
            (os.POSIX_SPAWN_OPEN, 1, str(log), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
            (os.POSIX_SPAWN_DUP2, 1, 2),
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        ]
        self.pid = os.posix_spawn(CHROMIUM, argv, os.environ, file_actions=actions, setsid=True)
        os.close(to_browser_r)
        os.close(from_browser_w)

    # -- the protocol ----------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._to_browser, data) :]

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BrowserError("the browser did not answer in time")
            ready, _, _ = select.select([self._from_browser], [], [], remaining)
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise BrowserError(f"the browser exited; see {self.profile}/chromium.log")
                self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return dict(json.loads(message))

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = 15.0,
    ) -> dict[str, Any]:
        """Send a command and return its result; events that arrive meanwhile are kept.

        Raises:
            BrowserError: The command failed or was not answered within ``timeout`` seconds.
        """
        self._next_id += 1
        ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self._send(message)
        deadline = time.monotonic() + timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == ident:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))
            if "method" in reply:
                self._events.append(reply)

    def wait_event(
        self, method: str, accept: Callable[[dict[str, Any]], bool], timeout: float = 15.0
    ) -> dict[str, Any]:
        """The first event ``method`` that ``accept`` takes (already received or to come).

        Raises:
            BrowserError: None came within ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for event in self._events[seen:]:
                if event["method"] == method and accept(event):
                    return event
            seen = len(self._events)
            message = self._receive(deadline)
            if "method" in message:
                self._events.append(message)

    def events(self, session: str | None) -> list[dict[str, Any]]:
        """The events received so far for ``session`` (``None``: the browser's own)."""
        return [e for e in self._events if e.get("sessionId") == session]

    # -- pages -----------------------------------------------------------------------------------

    def open(self, url: str, timeout: float = 15.0) -> Page:
        """A new tab showing ``url``, once it has loaded."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        page = Page(self, session, target)
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=session)
        # The page gets the whole window: screenshots of one size, whatever the browser's frame.
        width, height = self.size
        metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
        self.call("Emulation.setDeviceMetricsOverride", metrics, session=session)
        self.call("Page.navigate", {"url": url}, session=session)
        self.wait_event("Page.loadEventFired", lambda e: e.get("sessionId") == session, timeout)
        return page

    def allow_downloads(self, folder: Path) -> None:
        """Save downloads in ``folder`` and report their progress as events."""
        self.call(
            "Browser.setDownloadBehavior",
            {"behavior": "allow", "downloadPath": str(folder), "eventsEnabled": True},
        )

    def close(self) -> None:
        """Close the browser and reap it (killed if it does not exit within a few seconds)."""
        with contextlib.suppress(BrowserError, OSError):
            self.call("Browser.close", timeout=5.0)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                break
            select.select([self._from_browser], [], [], 0.1)  # wakes when the pipe closes
        else:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self._to_browser)
        os.close(self._from_browser)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Page:
    """One tab of a :class:`Browser`."""

    def __init__(self, browser: Browser, session: str, target: str) -> None:
        self.browser = browser
        self.session = session
        self.target = target

    def close(self) -> None:
        """Close the tab."""
        self.browser.call("Target.closeTarget", {"targetId": self.target})

    def evaluate(self, expression: str, timeout: float = 15.0) -> Any:
        """The value of a JavaScript expression (a promise is awaited).

        Raises:
            BrowserError: It threw.
        """
        result = self.browser.call(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
            session=self.session,
            timeout=timeout,
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, condition: str, timeout: float = 10.0) -> None:
        """Wait until the JavaScript ``condition`` is true, checked in the page every few
        milliseconds.

        Raises:
            BrowserError: It did not become true within ``timeout`` seconds.
        """
        ms = int(timeout * 1000)
        met = self.evaluate(
            "new Promise((resolve) => { const end = performance.now() + " + str(ms) + ";"
            "(function check() { if (" + condition + ") resolve(true);"
            " else if (performance.now() > end) resolve(false);"
            " else setTimeout(check, 5); })(); })",
            timeout=timeout + 5,
        )
        if not met:
            raise BrowserError(f"not true within {timeout} s: {condition}")

    def press(self, key: str, code: str | None = None, text: str | None = None) -> None:
        """Press and release a key, as a user would (``"j"``, ``"ArrowDown"``, ``" "``)."""
        common: dict[str, Any] = {"key": key, "code": code or key}
        if text is not None:
            common["text"] = text
        self.browser.call(
            "Input.dispatchKeyEvent", {"type": "keyDown", **common}, session=self.session
        )
        self.browser.call(
            "Input.dispatchKeyEvent", {"type": "keyUp", **common}, session=self.session
        )

    def screenshot(self, path: Path) -> None:
        """Save what the tab shows as a PNG."""
        data = self.browser.call("Page.captureScreenshot", {"format": "png"}, session=self.session)[
            "data"
        ]
        path.write_bytes(base64.b64decode(data))

    @property
    def errors(self) -> list[str]:
        """Every error the page logged so far."""
        found = []
        for event in self.browser.events(self.session):
            params = event.get("params", {})
            if event["method"] == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                found.append(str(details.get("exception", {}).get("description", details)))
            elif event["method"] == "Runtime.consoleAPICalled" and params["type"] in (
                "error",
                "assert",
            ):
                found.append(" ".join(str(a.get("value", a)) for a in params["args"]))
            elif event["method"] == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(params["entry"]["text"])
        return found
