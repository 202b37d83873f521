"""What to install when an external tool is missing, told once per run, not once per file.

A missing ``fpcalc`` leaves every audio file without its Audio-Code; each file's record says so
(a ``tool_missing`` issue), but a person needs the fix once: ``fpcalc: install
libchromaprint-tools``. :class:`MissingTools` collects the issues of a run (``isccd code``,
``isccd scan``, the daemon's life) and gives each fix once, grouped by the package that
provides the tools.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePath

from isccd.model import FileIssue, IssueCode

#: The Debian and Ubuntu package that installs each external tool.
PACKAGES = {"fpcalc": "libchromaprint-tools", "ffmpeg": "ffmpeg", "ffprobe": "ffmpeg"}

#: How :func:`isccd.extract.tools.require_tool` and ``run_tool`` name a tool that is not there.
_NOT_FOUND = re.compile(r"(?P<name>[^\s(]+) not found")


def missing_tool(reason: str) -> tuple[str, str]:
    """The tool a ``tool_missing`` issue's reason names, and what provides it.

    Returns:
        ``(tool, fix)``: e.g. ``("fpcalc", "install libchromaprint-tools")``. A missing optional
        extractor (its reason names the ``pip install`` that adds it) gives ``("", reason)``.
    """
    found = _NOT_FOUND.search(reason)
    if found is None:
        return "", reason
    name = found["name"]
    package = PACKAGES.get(PurePath(name).name)
    return name, f"install {package}" if package else "install it or configure its path"


@dataclass(slots=True)
class MissingTools:
    """The tools found missing during one run, with the number of files each one left short."""

    _tools: dict[str, list[str]] = field(default_factory=dict)  # fix -> tool names
    _files: dict[str, int] = field(default_factory=dict)  # fix -> files

    def add(self, issues: Iterable[FileIssue]) -> list[str]:
        """Count one file's issues.

        Returns:
            The lines (:meth:`lines`' form, without counts) of fixes not seen before in this
            run: the daemon logs them as they appear.
        """
        new = []
        counted = set()
        for issue in issues:
            if issue.code is not IssueCode.TOOL_MISSING:
                continue
            tool, fix = missing_tool(issue.reason)
            if fix not in self._tools:
                self._tools[fix] = []
                new.append(fix)
            if tool and tool not in self._tools[fix]:
                self._tools[fix].append(tool)
            if fix not in counted:
                counted.add(fix)
                self._files[fix] = self._files.get(fix, 0) + 1
        return [self._line(fix) for fix in new]

    def lines(self) -> list[str]:
        """One line per fix, e.g. ``"ffmpeg/ffprobe: install ffmpeg (3 files)"``."""
        return [f"{self._line(fix)} ({_files(self._files[fix])})" for fix in self._tools]

    def _line(self, fix: str) -> str:
        tools = self._tools[fix]
        return f"{'/'.join(tools)}: {fix}" if tools else fix


def _files(n: int) -> str:
    return "1 file" if n == 1 else f"{n:,} files"
