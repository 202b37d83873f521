"""Commands run with their stderr on a terminal (a pseudo-terminal) and stdout on a pipe, as a
person piping the results somewhere sees them: progress is drawn, results stay clean."""

from __future__ import annotations

import os
import pty
import subprocess


def run_with_terminal_stderr(argv: list[str], timeout: float = 60) -> tuple[int, str, bytes]:
    """Run ``argv`` to its end: its exit status, its stdout (a pipe), and every byte it wrote
    to the terminal that was its stderr."""
    leader, follower = pty.openpty()
    try:
        with subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=follower, stdin=subprocess.DEVNULL
        ) as proc:
            os.close(follower)
            follower = -1
            err = b""
            while chunk := _read(leader):
                err += chunk
            assert proc.stdout is not None
            out = proc.stdout.read().decode()
            status = proc.wait(timeout=timeout)
    finally:
        os.close(leader)
        if follower != -1:
            os.close(follower)
    return status, out, err


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 4096)
    except OSError:  # EIO: the child closed the terminal
        return b""
