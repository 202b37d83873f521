"""Preview makers for the tests of worker processes: one that dies on some files, as a
crashing decoder would, and one that waits for a gate; a module of its own so that the worker
processes that import it stay light."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from isccd.report.preview import Made, PreviewOptions, make_preview


def crash_on(path: str, options: PreviewOptions, root: str | None = None) -> Made:
    """:func:`make_preview`, except that the process dies on files named ``crash*``."""
    if Path(path).name.startswith("crash"):
        os._exit(70)
    return make_preview(path, options, root)


def gated(path: str, options: PreviewOptions, root: str | None = None) -> Made:
    """:func:`make_preview`, logged to ``made.log`` beside the file; a file not named
    ``first*`` waits first until the lock on ``gate`` beside it is let go."""
    folder = Path(path).parent
    if not Path(path).name.startswith("first"):
        with (folder / "gate").open("rb") as gate:
            fcntl.flock(gate, fcntl.LOCK_SH)
    with (folder / "made.log").open("a") as log:
        log.write(Path(path).name + "\n")
    return make_preview(path, options, root)
