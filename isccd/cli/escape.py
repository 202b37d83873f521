"""Names shown on one line: :func:`isccd.fspath.shown`, the one escape rule of every output
(text answers, messages, the report), under the name the commands import it by."""

from __future__ import annotations

from isccd.fspath import shown

__all__ = ["shown"]
