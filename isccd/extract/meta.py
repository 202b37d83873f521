"""Embedded metadata (title, description) as the ISCC SDK reads it, and the file-name fallback.

Each extractor reads its format's tags and maps them with a table (tag -> field); the first tag
present wins a field. Values come from untrusted files, so they are sanitized as the SDK does
(``text_sanitize``): script and style blocks removed, markup stripped, HTML entities decoded,
whitespace collapsed.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import PurePath

_SCRIPT = re.compile(r"<script[^>]*>.*?</script>", re.DOTALL | re.IGNORECASE)
_STYLE = re.compile(r"<style[^>]*>.*?</style>", re.DOTALL | re.IGNORECASE)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Metadata:
    """What a file says about itself, as input for the Meta-Code.

    Attributes:
        name: The title, if the file has one.
        description: The description, if any.
        meta: An ISCC ``meta`` value embedded by an ISCC tool (a data-URL), if any.
    """

    name: str | None = None
    description: str | None = None
    meta: str | None = None


class _TextOnly(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def sanitize(text: str) -> str:
    """Plain text from an untrusted metadata value: no markup, no entities, single spaces."""
    text = _STYLE.sub("", _SCRIPT.sub("", text))
    if "<" in text:
        parser = _TextOnly()
        parser.feed(text)
        parser.close()
        text = "".join(parser.parts)
    else:
        text = html.unescape(text)
    return _SPACE.sub(" ", text).strip()


def pick(
    fields: Iterable[tuple[str, str]], values: Mapping[str, object], *, clean: bool = True
) -> Metadata:
    """Map tags to metadata fields; the first tag with a non-empty value wins each field.

    Args:
        fields: ``(tag, field)`` pairs in order of preference; ``field`` is ``"name"``,
            ``"description"`` or ``"meta"``.
        values: Tag values as read from the file: a string, or a list whose first element is
            used.
        clean: Sanitize the values (the SDK does for image and document metadata, not for
            audio and video tags).

    Returns:
        The sanitized fields that were found.
    """
    found: dict[str, str] = {}
    for tag, target in fields:
        if target in found:
            continue
        value = values.get(tag)
        if isinstance(value, list | tuple):
            value = value[0] if value else None
        if not isinstance(value, str):
            continue
        text = sanitize(value) if clean and target != "meta" else value.strip()
        if text:
            found[target] = text
    return Metadata(**found)


def file_name(path: str) -> str:
    """The last component of ``path``, exactly as ``PurePath(path).name``."""
    name = path.rpartition("/")[2]
    # pathlib parses the whole path (about 2 µs); only a trailing "/" or "." needs its rules.
    return name if name not in ("", ".") else PurePath(path).name


def name_from_filename(path: str) -> str:
    """The SDK's fallback title: the file name without its extension, ``-`` and ``_`` as spaces."""
    name = file_name(path)
    dot = name.rfind(".")
    # A name with an inner dot has the same stem in every Python; leave the others to pathlib.
    stem = name[:dot] if 0 < dot < len(name) - 1 else PurePath(path).stem
    return stem.replace("-", " ").replace("_", " ")
