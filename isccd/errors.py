"""The exception tree of isccd, and what each branch means for the daemon.

::

    IsccdError
    |-- ConfigError               bad settings: a clear message, exit 78 (EX_CONFIG); never retried
    |-- OptionError               a component's option out of its range (a ``ValueError`` naming
    |                             the option); from the settings it becomes a ConfigError
    |-- FileError                 a file cannot be read: recorded against it; the daemon carries on
    |   |-- NotRegularFileError   FIFO, socket, device or directory: never opened
    |   |-- FileVanishedError     gone between listing and reading: treated as removed
    |   |-- FileAccessError       permission denied or an I/O error: recorded, retried on change
    |   `-- FileUnstableError     changed while it was read: retried with backoff, then "unstable"
    |-- ExtractionError           content extraction failed: recorded for that unit only; the other
    |   |                         units (Data, Instance, Meta) are still computed
    |   |-- UnsupportedMediaTypeError   no Content-Code for this media type
    |   |-- ImageTooLargeError    a decompression bomb: refused, not decoded
    |   |-- NoContentError        nothing to code (no text, audio too short): a skip, not a fault
    |   `-- ToolError             an external tool failed or timed out
    |       `-- ToolMissingError  a tool or optional extractor is not installed: a skip
    |-- StoreError                the store cannot be opened or written: fatal at start-up, clear
    |   |                         message; during a run the daemon reports it degraded, retries
    |   |                         with a pause and reconciles what failed once it can write
    |   |-- StoreCorruptError     integrity check failed
    |   |-- StoreFullError        the disk is full
    |   |-- StoreLockedError      another process writes the store (the daemon, a scan), or
    |   |                         another daemon holds the host name on a shared database
    |   |-- StoreRemovedError     the database file was deleted or replaced while open: fatal
    |   |-- StoreNotWritableError the state directory cannot be created or written (read-only
    |   |                         file system, permissions): fatal at start-up, exit 73
    |   `-- StoreUnavailableError the database server cannot be reached or the connection was
    |                             lost: retryable; the batch failed whole, the next one reconnects
    |-- ProtocolError             a bad client request: an error reply; the connection carries on
    |   |-- InvalidCodeError      a code asked about cannot be decoded (``invalid_argument``)
    |   |-- NotIndexedError       a file asked about is not indexed and cannot be coded
    |   |                         (``not_found``)
    |   `-- UnknownWatchlistError a watchlist asked about does not exist (``not_found``)
    |-- SocketSetupError          the socket cannot be set up safely (insecure directory, another
    |                             daemon answering): fatal at start-up, clear message
    |-- DaemonUnavailableError    client side: no daemon answers on the socket
    |-- DedupeError               ``isccd dedupe``: a step cannot be done; reported, the run
    |   |                         carries on with the next
    |   |-- StaleFileError        a file is no longer what the plan recorded: skipped untouched
    |   `-- PlanFileError         a plan file or action log cannot be read, or a log is not
    |                             authentic: nothing is touched
    |-- ActionLogError            the action log (or its key) cannot be written: the run stops
    |                             before its next action; what was done is logged
    `-- CursorError               ``isccd subscribe --cursor``: the cursor file or its lock cannot
                                  be read or made, or it is not a cursor: no command is run,
                                  exit 65

The pure algorithms in :mod:`isccd.iscc` raise their own :class:`isccd.iscc.IsccError` (a
``ValueError``) and ``TypeError`` for wrong argument types; they know nothing of this tree.

This module imports nothing of isccd.
"""

from __future__ import annotations


class IsccdError(Exception):
    """Base of every error isccd raises on purpose."""


class ConfigError(IsccdError):
    """The configuration is invalid. The message names the key and the problem."""


class OptionError(IsccdError, ValueError):
    """A component's option is out of its range, raised where the options are made.

    Attributes:
        name: The option (a field of the options, and the setting of the same name).
        problem: What is wrong with its value.
    """

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name}: {problem}")
        self.name = name
        self.problem = problem


class FileError(IsccdError):
    """A problem reading one file. Recorded against that file; never fatal."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class NotRegularFileError(FileError):
    """The path is not a regular file (FIFO, socket, device, directory). It is never opened."""


class FileVanishedError(FileError):
    """The file disappeared before or while it was read."""


class FileAccessError(FileError):
    """The file cannot be read: permission denied, or an I/O error."""


class FileUnstableError(FileError):
    """The file changed while it was read (its fstat differs before and after)."""


class ExtractionError(IsccdError):
    """Content extraction failed for one unit; the other units are unaffected."""


class UnsupportedMediaTypeError(ExtractionError):
    """The media type has no Content-Code."""


class ImageTooLargeError(ExtractionError):
    """The image has more pixels than allowed (a decompression bomb) and was not decoded."""


class NoContentError(ExtractionError):
    """The file has nothing to code: no text, audio too short, no video frames, encrypted."""


class ToolError(ExtractionError):
    """An external tool (fpcalc, ffmpeg, ...) or extractor library failed or timed out."""


class ToolMissingError(ToolError):
    """A tool or optional extractor library is not installed; the message says what to install.

    Attributes:
        component: The profile component that is missing (``"fpcalc"``, ``"tika"``), when one
            is: once it is installed, what it would have computed is computed.
    """

    def __init__(self, message: str, component: str | None = None) -> None:
        super().__init__(message)
        self.component = component


class HashingUnavailableError(IsccdError):
    """No file can be hashed at all (the hashing workers cannot start). Fatal to a scan; never
    recorded against a file."""


class StoreError(IsccdError):
    """The store cannot be opened or written."""


class StoreCorruptError(StoreError):
    """The store failed its integrity check."""


class StoreFullError(StoreError):
    """The disk holding the store is full."""


class StoreRemovedError(StoreError):
    """The database file was deleted or replaced while it was open (its state directory
    removed): whatever is written goes to a file no one will read again, and the writer lock
    went with it. Never retried: the daemon stops (exit 74)."""


class StoreNotWritableError(StoreError):
    """The state directory, or the files the store keeps in it, cannot be created or written
    (a read-only file system, its permissions). Never retried: the daemon exits with 73
    (EX_CANTCREAT) and says which directory."""


class StoreLockedError(StoreError):
    """Another process writes the store; one writer at a time (per host name, on a database
    shared by a fleet).

    Attributes:
        holder: That process's id, when it could be read.
    """

    def __init__(self, message: str, holder: int | None = None) -> None:
        super().__init__(message)
        self.holder = holder


class StoreUnavailableError(StoreError):
    """The database server cannot be reached, or the connection to it was lost (a restart, a
    network failure). Nothing of the failed transaction was kept; trying again later may
    succeed, and the store reconnects by itself on its next transaction."""


class ProtocolError(IsccdError):
    """A client request is invalid. Carries a machine-readable code for the error reply."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class InvalidCodeError(ProtocolError):
    """A code asked about (``similar --code``) cannot be decoded, or holds no unit to compare."""

    def __init__(self, message: str) -> None:
        super().__init__("invalid_argument", message)


class NotIndexedError(ProtocolError):
    """A file asked about is not in the index and cannot be coded; the message says why."""

    def __init__(self, message: str) -> None:
        super().__init__("not_found", message)


class UnknownWatchlistError(ProtocolError):
    """A watchlist asked about (``similar --watchlist``) does not exist."""

    def __init__(self, message: str) -> None:
        super().__init__("not_found", message)


class SocketSetupError(IsccdError):
    """The daemon's socket cannot be set up safely; the message says why and what to do."""


class DaemonUnavailableError(IsccdError):
    """No daemon answers on the socket: it is not running, or the socket is not accessible."""


class DedupeError(IsccdError):
    """A dedupe step cannot be done. The file is left as it was and the run carries on.

    Attributes:
        path: The file concerned.
        reason: Why, for the user.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class StaleFileError(DedupeError):
    """A file changed, moved or vanished since the plan was made (or is not what it must be:
    a symbolic link, another file system): it is skipped, never acted on."""


class PlanFileError(DedupeError):
    """A plan file or an action log is unreadable or invalid; the message says where."""


class ActionLogError(IsccdError):
    """The action log of ``isccd dedupe`` cannot be written (a full disk, an I/O error), or
    its key cannot be made or read: the run stops before its next action, since an action
    that cannot be logged must not be done."""


class CursorError(IsccdError):
    """The cursor file of ``isccd subscribe --exec --cursor`` cannot be used: it cannot be read,
    or its lock cannot be made, or it is not a cursor (corrupt, another program's, a newer
    version). Nothing is run: a subscriber never starts again from scratch on its own."""
