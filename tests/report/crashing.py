"""A preview maker that dies on some files, as a crashing decoder would; a module of its own
so that the worker processes that import it stay light."""

from __future__ import annotations

import os
from pathlib import Path

from isccd.report.preview import Made, PreviewOptions, make_preview


def crash_on(path: str, options: PreviewOptions, root: str | None = None) -> Made:
    """:func:`make_preview`, except that the process dies on files named ``crash*``."""
    if Path(path).name.startswith("crash"):
        os._exit(70)
    return make_preview(path, options, root)
