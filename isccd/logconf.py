"""Logging, configured once at the entry point: structlog and the standard library, one pipeline.

Every line goes to stderr: readable console lines on a terminal, one JSON object per line
otherwise (under systemd the journal stores them; ``journalctl -o cat`` shows the JSON). Loggers
of the standard library (watchdog, asyncio, anything else) are routed through the same processors,
so a line from watchdog looks like a line from isccd: ``timestamp``, ``level``, ``logger``,
``event`` and the key/value context. The fields a standard library call passes in ``extra=`` are
that context: they become keys of the line, as a structlog call's keyword arguments do.

When stderr is the journal (``$JOURNAL_STREAM`` names the stream), each line is prefixed with its
syslog priority (``<4>`` for a warning), so ``journalctl -p warning`` filters by level.

Event names are snake_case facts (``file_processed``, ``watch_overflow``) with key/value fields,
whichever API writes them (``log.warning("root_device_unavailable", extra={"root": ...})`` in the
pipeline, ``log.warning("root_unavailable", root=...)`` with structlog). Loggers are obtained with
``structlog.get_logger()`` where they are used; nothing is bound at module scope.

Imports nothing of isccd.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Any, Literal, TextIO

# structlog imports rich, when it is installed, to offer its tracebacks and its printing of
# local variables: about 40 ms at the start of every command that logs, which a scan's first
# file waits for (docs/benchmarks.md). isccd uses neither: a console shows a plain
# traceback, the same on every host, and JSON lines carry tracebacks without locals. So unless
# the process has imported rich already, structlog is imported without it (it takes it for not
# installed), and ``import rich`` works again afterwards.
_WITHOUT_RICH = "rich" not in sys.modules and "structlog" not in sys.modules
if _WITHOUT_RICH:
    sys.modules["rich"] = None  # type: ignore[assignment]
try:
    import structlog
    from structlog.typing import EventDict, Processor, WrappedLogger
finally:
    if _WITHOUT_RICH:
        del sys.modules["rich"]

Format = Literal["auto", "json", "console"]

#: syslog priorities of the levels (sd-daemon(3) prefixes).
_PRIORITY = {"critical": 2, "error": 3, "warning": 4, "info": 6, "debug": 7}

#: Our handler on the root logger, replaced when logging is configured again (a reload).
_HANDLER_NAME = "isccd"


def configure_logging(
    level: str = "info",
    fmt: Format = "auto",
    *,
    stream: TextIO | None = None,
    env: Mapping[str, str] | None = None,
) -> None:
    """Configure structlog and the standard library's root logger.

    Calling it again (a configuration reload) replaces the previous configuration.

    Args:
        level: Lowest level written: ``debug``, ``info``, ``warning`` or ``error``.
        fmt: ``json``, ``console``, or ``auto`` (console on a terminal, JSON otherwise).
        stream: Where lines go; by default whatever ``sys.stderr`` is when a line is written.
        env: Where ``JOURNAL_STREAM`` is read (the process environment by default).
    """
    handler = _StderrHandler() if stream is None else logging.StreamHandler(stream)
    stream = sys.stderr if stream is None else stream
    env = os.environ if env is None else env
    console = fmt == "console" or (fmt == "auto" and _isatty(stream))
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.stdlib.PositionalArgumentsFormatter(),
        structlog.processors.StackInfoRenderer(),
    ]
    renderer: Processor
    if console:
        renderer = structlog.dev.ConsoleRenderer(
            colors=_isatty(stream), exception_formatter=structlog.dev.plain_traceback
        )
    else:
        # Tracebacks as data, without local variables: they can hold file contents and make
        # lines huge.
        shared.append(
            structlog.processors.ExceptionRenderer(
                structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
            )
        )
        renderer = structlog.processors.JSONRenderer(ensure_ascii=True, default=str)
    final: list[Processor] = [structlog.stdlib.ProcessorFormatter.remove_processors_meta]
    if _is_journal(stream, env):
        final.append(_JournalPriority(renderer))
    else:
        final.append(renderer)

    # Lines of the standard library's loggers: their ``extra=`` fields first, so that the
    # processors after it (level, logger, timestamp) win over an extra of the same name.
    foreign: list[Processor] = [_add_extra, *shared]
    formatter = structlog.stdlib.ProcessorFormatter(foreign_pre_chain=foreign, processors=final)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    logging.captureWarnings(True)

    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        context_class=dict,
        # Not cached: a reload may replace this configuration while loggers exist.
        cache_logger_on_first_use=False,
    )


#: The attributes of every log record, and those a formatter adds to it (another handler's,
#: pytest's, may have formatted the record first): anything else came in ``extra=``.
_RECORD_KEYS = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


def _add_extra(logger: WrappedLogger, name: str, event_dict: EventDict) -> EventDict:
    """Add the ``extra=`` fields of a standard library record as keys of the line.

    structlog's ``ExtraAdder`` would take the ``message`` a formatter leaves on the record for
    an extra, and repeat the event in every line.
    """
    record = event_dict.get("_record")
    if isinstance(record, logging.LogRecord):
        for key, value in vars(record).items():
            if key not in _RECORD_KEYS:
                event_dict[key] = value
    return event_dict


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to ``sys.stderr`` as it is when a line is written (it may be replaced after
    logging was configured, e.g. by a caller capturing a command's output)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass  # always sys.stderr


def _isatty(stream: TextIO | None) -> bool:
    if stream is None:  # the process started with it closed
        return False
    try:
        return stream.isatty()
    except ValueError:  # a closed stream
        return False


def _is_journal(stream: TextIO | None, env: Mapping[str, str]) -> bool:
    """True when ``stream`` is the journal connection systemd announced in $JOURNAL_STREAM."""
    announced = env.get("JOURNAL_STREAM", "")
    if not announced or stream is None:
        return False
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError):  # io.UnsupportedOperation is a ValueError and an OSError
        return False
    return announced == f"{st.st_dev}:{st.st_ino}"


class _JournalPriority:
    """Render, then prefix the line with its syslog priority for journald."""

    def __init__(self, renderer: Processor) -> None:
        self._renderer = renderer

    def __call__(
        self, logger: WrappedLogger, name: str, event_dict: EventDict
    ) -> Mapping[str, Any] | str | bytes | bytearray | tuple[Any, ...]:
        priority = _PRIORITY.get(str(event_dict.get("level", "info")), 6)
        rendered = self._renderer(logger, name, event_dict)
        if isinstance(rendered, str):
            return f"<{priority}>{rendered}"
        return rendered
