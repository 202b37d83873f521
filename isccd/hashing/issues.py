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
    FileRecord,
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


#: The reason of a stage that ran out of memory: it needed more than the process may use (the
#: hashing workers' limit, ``[hashing] worker_memory``).
OUT_OF_MEMORY = "out of memory: it needs more than a hashing worker may use"


def issue_from_exception(stage: str, exc: BaseException) -> FileIssue:
    """The per-file issue an exception stands for (unexpected ones are ``INTERNAL`` errors).

    A :class:`MemoryError`, raised or wrapped by an extractor (the cause or context of the
    exception), is ``TOO_LARGE``: the file needs more memory than the process may use.
    """
    if _ran_out_of_memory(exc):
        return FileIssue(stage, IssueKind.ERROR, OUT_OF_MEMORY, IssueCode.TOO_LARGE)
    for exc_type, kind, code in _ISSUES:
        if isinstance(exc, exc_type):
            reason = exc.reason if isinstance(exc, FileError) else str(exc)
            return FileIssue(stage, kind, reason or type(exc).__name__, code)
    detail = str(exc).strip()
    reason = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    return FileIssue(stage, IssueKind.ERROR, reason, IssueCode.INTERNAL)


def out_of_memory(record: FileRecord) -> bool:
    """Whether a stage of the record ran out of memory (:data:`OUT_OF_MEMORY`)."""
    return any(i.code is IssueCode.TOO_LARGE and i.reason == OUT_OF_MEMORY for i in record.issues)


def _ran_out_of_memory(exc: BaseException) -> bool:
    seen: set[int] = set()
    found: BaseException | None = exc
    while found is not None and id(found) not in seen:
        if isinstance(found, MemoryError):
            return True
        seen.add(id(found))
        found = found.__cause__ or found.__context__
    return False
