"""The per-file issue each exception stands for."""

from __future__ import annotations

from isccd.errors import (
    ExtractionError,
    FileAccessError,
    FileError,
    FileUnstableError,
    FileVanishedError,
    ImageTooLargeError,
    NoContentError,
    NotRegularFileError,
    ToolError,
    ToolMissingError,
    UnsupportedMediaTypeError,
)
from isccd.model import (
    FileIssue,
    IssueCode,
    IssueKind,
)

_ISSUES: tuple[tuple[type[BaseException], IssueKind, IssueCode], ...] = (
    (NotRegularFileError, IssueKind.ERROR, IssueCode.NOT_REGULAR),
    (FileVanishedError, IssueKind.ERROR, IssueCode.VANISHED),
    (FileUnstableError, IssueKind.ERROR, IssueCode.UNSTABLE),
    (FileAccessError, IssueKind.ERROR, IssueCode.ACCESS),
    (UnsupportedMediaTypeError, IssueKind.SKIPPED, IssueCode.UNSUPPORTED),
    (NoContentError, IssueKind.SKIPPED, IssueCode.NO_CONTENT),
    (ToolMissingError, IssueKind.SKIPPED, IssueCode.TOOL_MISSING),
    (ImageTooLargeError, IssueKind.ERROR, IssueCode.TOO_LARGE),
    (ToolError, IssueKind.ERROR, IssueCode.TOOL_FAILED),
    (ExtractionError, IssueKind.ERROR, IssueCode.INVALID),
)


def issue_from_exception(stage: str, exc: BaseException) -> FileIssue:
    """The per-file issue an exception stands for (unexpected ones are ``INTERNAL`` errors)."""
    for exc_type, kind, code in _ISSUES:
        if isinstance(exc, exc_type):
            reason = exc.reason if isinstance(exc, FileError) else str(exc)
            return FileIssue(stage, kind, reason or type(exc).__name__, code)
    detail = str(exc).strip()
    reason = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    return FileIssue(stage, IssueKind.ERROR, reason, IssueCode.INTERNAL)
