"""Running external programs (fpcalc, ffmpeg, ffprobe) safely.

Every run:

- has a timeout, after which the tool's whole process group is killed and reaped;
- runs in a private temporary directory that is removed afterwards, whatever happened;
- gets no standard input, and its output is captured within bounds (stdout up to a limit, then
  the run fails; stderr keeps only its tail, which is where tools put the reason they failed);
- reads the input file through the descriptor isccd opened and checked (see
  :mod:`isccd.extract.source`), never by a path that could have been swapped meanwhile: the
  descriptor is passed to the child and named by a symbolic link ``input.<ext>`` to
  ``/proc/self/fd/N`` inside the private directory, which keeps the file extension tools use as
  a format hint.

Tool versions are recorded with the codes they produce (Audio- and Video-Codes depend on them).
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from isccd.errors import ToolError, ToolMissingError

_PROC_FD = Path("/proc/self/fd")
_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,10}$")
_VERSION = re.compile(r"version\s+(\S+)")
_REPEATED = re.compile(r"Last message repeated \d+ times")

#: Seconds one tool run may take by default (a feature film's signature takes minutes).
DEFAULT_TIMEOUT = 600.0

#: The version profiles give a component that is not installed (``fpcalc/missing``).
MISSING = "missing"
#: The version of a tool that printed none, or could not be asked (it failed or timed out).
UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class ToolOptions:
    """Where the tools are and how long they may run.

    Attributes:
        fpcalc: Name or path of Chromaprint's ``fpcalc``.
        ffmpeg: Name or path of ``ffmpeg``.
        ffprobe: Name or path of ``ffprobe``.
        timeout: Seconds one run may take before it is killed.
        max_output: Bytes of standard output one run may produce before it is killed.
        temp_dir: Parent of the private per-run directories (``None``: the system default).
    """

    fpcalc: str = "fpcalc"
    ffmpeg: str = "ffmpeg"
    ffprobe: str = "ffprobe"
    timeout: float = DEFAULT_TIMEOUT
    max_output: int = 64 * 1024 * 1024
    temp_dir: str | None = None


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a finished run produced.

    Attributes:
        returncode: The exit status.
        stdout: Everything written to standard output.
        stderr: The last few KiB of standard error, decoded leniently.
    """

    returncode: int
    stdout: bytes
    stderr: str

    def last_error_line(self) -> str:
        """The last non-empty line of stderr, the usual place for a tool's reason (ffmpeg's
        "Last message repeated N times" stands for the line before it)."""
        lines = [line.strip() for line in self.stderr.splitlines() if line.strip()]
        lines = [line for line in lines if not _REPEATED.fullmatch(line)]
        return lines[-1] if lines else f"exit status {self.returncode}"


@dataclass(slots=True)
class ToolInput:
    """A private working directory and a safe name for the input file.

    Attributes:
        workdir: The private directory (removed when the ``with`` block ends).
        path: The name tools read the input by.
        pass_fds: Descriptors the child must inherit for ``path`` to work.
    """

    workdir: Path
    path: str
    pass_fds: tuple[int, ...] = field(default=())


@contextlib.contextmanager
def tool_input(fd: int, name: str, temp_dir: str | None = None) -> Iterator[ToolInput]:
    """A private directory with ``input.<ext>`` standing for the open file ``fd``.

    Args:
        fd: The checked, open descriptor of the input file.
        name: The file's name (only its extension is used, as a format hint).
        temp_dir: Parent directory for the private directory.

    Yields:
        The directory and the input's path. Everything is removed afterwards.
    """
    workdir = Path(tempfile.mkdtemp(prefix="isccd-", dir=temp_dir))
    try:
        match = _SUFFIX.search(name)
        link = workdir / ("input" + (match.group(0).lower() if match else ""))
        if _PROC_FD.is_dir():
            # Resolved in whichever process opens it: the child inherits `fd` at this number.
            link.symlink_to(_PROC_FD / str(fd))
            yield ToolInput(workdir, str(link), (fd,))
        else:  # pragma: no cover - Linux always has /proc; kept for chroots without it
            yield ToolInput(workdir, os.fspath(Path("/dev/fd") / str(fd)), (fd,))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def find_tool(name: str) -> str | None:
    """The absolute path of an executable (a name is looked up on ``PATH``), or ``None``."""
    return shutil.which(name)


def require_tool(name: str, purpose: str, component: str | None = None) -> str:
    """Like :func:`find_tool`, but a missing tool raises.

    Args:
        name: The tool's name (looked up on ``PATH``) or path.
        purpose: What needs it, for the message.
        component: The profile component the tool stands for (``"fpcalc"``), carried by the
            error so that what it would have computed is computed once it is installed.

    Raises:
        ToolMissingError: The tool is not installed; the message says what needs it.
    """
    found = find_tool(name)
    if found is None:
        raise ToolMissingError(f"{name} not found on PATH ({purpose} needs it)", component)
    return found


def installed_version(name: str) -> str:
    """The version of the tool ``name`` would run (see :func:`tool_version`), or
    :data:`MISSING` when it is not installed."""
    found = find_tool(name)
    if found is None:
        return MISSING
    try:
        return tool_version(found)
    except OSError:  # removed since it was found
        return MISSING


def tool_version(path: str) -> str:
    """The version a tool reports (``fpcalc -version``, ``ffmpeg -version``), e.g. ``"1.5.1"``.

    Cached per binary and its identity (device, inode, size, modification and change time: the
    change time no user can set back), so an upgrade or a replacement is noticed.
    """
    st = Path(path).stat()
    return _tool_version(path, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))


@lru_cache(maxsize=16)
def _tool_version(path: str, _identity: tuple[int, int, int, int, int]) -> str:
    try:
        result = run_tool([path, "-version"], timeout=30.0, max_output=1 << 20)
    except ToolError:
        return UNKNOWN
    match = _VERSION.search(result.stdout.decode("utf-8", "replace"))
    return match.group(1) if match else UNKNOWN


def run_tool(
    argv: Sequence[str],
    *,
    timeout: float,
    max_output: int,
    cwd: Path | None = None,
    pass_fds: Sequence[int] = (),
    stderr_tail: int = 16 * 1024,
) -> ToolResult:
    """Run a program to completion within bounds and return what it printed.

    A non-zero exit status is not an error here: some tools (Debian's fpcalc 1.5.1) exit with
    status 3 after printing a complete result, so callers judge the output.

    Args:
        argv: The program and its arguments.
        timeout: Seconds before the program's process group is killed.
        max_output: Bytes of stdout allowed.
        cwd: Working directory.
        pass_fds: Descriptors the program inherits.
        stderr_tail: Bytes of stderr kept (the last ones).

    Returns:
        The exit status and captured output.

    Raises:
        ToolMissingError: The program does not exist.
        ToolError: It could not be started, timed out, or printed too much.
    """
    env = dict(os.environ, LC_ALL="C", AV_LOG_FORCE_NOCOLOR="1")
    try:
        proc = subprocess.Popen(  # noqa: S603 - argv is a configured tool and our own args
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            pass_fds=tuple(pass_fds),
            close_fds=True,
            start_new_session=True,  # its own process group, so a timeout kills its children too
            env=env,
        )
    except FileNotFoundError as exc:
        raise ToolMissingError(f"{argv[0]} not found") from exc
    except OSError as exc:
        raise ToolError(f"cannot start {argv[0]}: {exc.strerror}") from exc

    name = Path(argv[0]).name
    try:
        stdout, stderr = _collect(proc, timeout, max_output, stderr_tail, name)
    except BaseException:
        _kill(proc)
        raise
    return ToolResult(proc.returncode, stdout, stderr.decode("utf-8", "replace"))


def _collect(
    proc: subprocess.Popen[bytes], timeout: float, max_output: int, tail: int, name: str
) -> tuple[bytes, bytes]:
    assert proc.stdout is not None and proc.stderr is not None
    out = bytearray()
    err = bytearray()
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ, out)
        sel.register(proc.stderr, selectors.EVENT_READ, err)
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ToolError(f"{name} timed out after {timeout:g} s")
            for key, _ in sel.select(remaining):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                buf: bytearray = key.data
                buf += chunk
                if buf is out and len(out) > max_output:
                    raise ToolError(f"{name} printed more than {max_output} bytes")
                if buf is err and len(err) > 2 * tail:
                    del err[:-tail]
    remaining = max(deadline - time.monotonic(), 0.1)
    try:
        proc.wait(remaining)
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"{name} timed out after {timeout:g} s") from exc
    finally:
        proc.stdout.close()
        proc.stderr.close()
    return bytes(out), bytes(err[-tail:])


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the tool and everything it started, and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait()
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
