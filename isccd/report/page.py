"""The report as one self-contained HTML page.

The page is the template ``assets/report.html`` with its style and script inlined and the
report's data embedded as JSON; previews are ``data:`` URIs inside that JSON. It loads nothing:
its Content-Security-Policy allows no source but ``data:`` images and the page's own style and
script, named by their SHA-256 digests, so it works from ``file://`` and offline, and even a
name that somehow escaped its quoting could not run or load anything.

Names reach the page only inside the JSON, which is made safe to embed in a ``<script>``
element (``<``, ``>`` and ``&`` escaped as ``\\u`` escapes, so ``</script>`` in a name stays
text); the script puts them in the page as text, never as markup. A name that does not print
as it is (a tab, a byte that is not UTF-8) comes with the form it is shown in, made by
:func:`isccd.fspath.shown` as the command line shows it: one escape rule everywhere.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from collections import Counter
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from isccd.extract.mediatype import mediatype_to_mode
from isccd.fspath import shown
from isccd.report.model import (
    FileFacts,
    FoldersView,
    FolderView,
    GroupView,
    MemberView,
    Preview,
    PreviewKind,
    ReportView,
)

#: The version of the page's data (the JSON in ``#report-data``): 2 added ``folders``.
DATA_VERSION = 2

_MARKER = re.compile(r"\{\{(\w+)\}\}")
_UNSAFE_IN_SCRIPT = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


@cache
def _asset(name: str) -> str:
    return resources.files("isccd.report").joinpath("assets", name).read_text("utf-8")


def script_json(value: object) -> str:
    """``value`` as JSON that can stand inside a ``<script>`` element as it is.

    Non-ASCII characters, and names that are not UTF-8 (their bytes as lone surrogates), are
    ``\\u`` escapes; so are ``<``, ``>`` and ``&``, so that nothing in a string can end the
    element or start a comment.
    """
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")).translate(_UNSAFE_IN_SCRIPT)


def _digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def content_security_policy(style: str, script: str) -> str:
    """The page's policy: nothing loaded, ``data:`` images, and only this style and script."""
    return (
        f"default-src 'none'; img-src data:; style-src {_digest(style)}; "
        f"script-src {_digest(script)}; base-uri 'none'; form-action 'none'"
    )


def file_type(mediatype: str) -> str:
    """The type a file is filtered by: ``image``, ``text``, ``audio``, ``video`` or ``data``
    (``""`` when its media type is not known)."""
    if not mediatype:
        return ""
    mode = mediatype_to_mode(mediatype)
    return mode.value if mode is not None else "data"


def page_data(
    view: ReportView, facts: Mapping[str, FileFacts], *, source: str, generated: float
) -> dict[str, Any]:
    """What the page's script reads (the JSON in ``#report-data``).

    Args:
        view: The groups.
        facts: Each member's file as it is now, by path (this host's members only).
        source: Where the groups came from, for people ("the daemon", "the index in DIR").
        generated: Unix time the report was made.
    """
    thumbs: dict[bytes, int] = {}
    groups = []
    for group in view.groups:
        members = [_member(m, _facts_of(m, facts), thumbs) for m in group.members]
        groups.append(_group(group, members))
    totals = view.totals()
    folders = _folders(view.folders)
    names = {n for g in groups for m in g["members"] for n in (m["path"], m["root"], *m["links"])}
    names |= {
        n
        for g in folders["groups"]
        for m in g["members"]
        for n in (m["path"], m["root"], *m["unmatched"], *m["missing"])
    }
    return {
        "version": DATA_VERSION,
        "source": source,
        "generated": generated,
        "truncated": view.truncated,
        "totals": {
            "groups": totals.groups,
            "files": totals.files,
            "reclaimable": totals.reclaimable,
            "reclaimable_size": totals.reclaimable_size,
        },
        # Each distinct picture once (exact copies have the same one).
        "thumbs": [
            "data:image/webp;base64," + base64.b64encode(picture).decode() for picture in thumbs
        ],
        "groups": groups,
        "folders": folders,
        # How each name that does not print as it is is shown (the script shows the others
        # as they are).
        "shown": {name: shown(name) for name in sorted(names) if shown(name) != name},
    }


def _group(group: GroupView, members: list[dict[str, Any]]) -> dict[str, Any]:
    types = Counter(str(m["type"]) for m in members if m["type"])
    if types:
        kind = types.most_common(1)[0][0]
    else:
        kind = group.unit if group.unit in ("image", "text", "audio", "video") else "data"
    return {
        "kind": group.kind,
        "unit": group.unit,
        "threshold": group.threshold,
        "reclaimable": group.reclaimable,
        "type": kind,
        "members": members,
    }


def _folders(folders: FoldersView) -> dict[str, Any]:
    return {
        "groups": [
            {
                "kind": group.kind,
                "reclaimable": group.reclaimable,
                "members": [_folder(m) for m in group.members],
            }
            for group in folders.groups
        ],
        "truncated": folders.truncated,
        "folders": folders.folders,
        "reclaimable": folders.reclaimable,
        "error": folders.error,
    }


def _folder(folder: FolderView) -> dict[str, Any]:
    # Another host's folder is shown as host:path, as its files are.
    where = f"{folder.host}:" if folder.host else ""
    return {
        "path": where + folder.path,
        "root": where + folder.root,
        "files": folder.files,
        "size": folder.size,
        "centre": folder.centre,
        "share": folder.share,
        "unmatched": list(folder.unmatched),
        "unmatched_count": folder.unmatched_count,
        "missing": list(folder.missing),
        "missing_count": folder.missing_count,
    }


def _facts_of(member: MemberView, facts: Mapping[str, FileFacts]) -> FileFacts:
    """A member's facts; another host's file was not looked at (its path here may name
    another file), so no plan can name it."""
    if member.host:
        note = f"on host {member.host}: not on this machine"
        return FileFacts(None, Preview(PreviewKind.ICON, note=note))
    return facts[member.path]


def _member(member: MemberView, facts: FileFacts, thumbs: dict[bytes, int]) -> dict[str, Any]:
    preview = facts.preview
    shown: dict[str, Any] = {"kind": preview.kind.value}
    if preview.kind is PreviewKind.IMAGE:
        shown["thumb"] = thumbs.setdefault(preview.data, len(thumbs))
    elif preview.kind is PreviewKind.TEXT:
        shown["text"] = preview.data.decode("utf-8", "replace")
    stat = facts.stat
    # Another host's file is shown, and filtered by root, as host:path.
    where = f"{member.host}:" if member.host else ""
    return {
        "path": where + member.path,
        "links": [where + link for link in member.links],
        "root": where + member.root,
        "size": member.size,
        "allocated": member.allocated,
        "unit": member.unit,
        "distance": member.distance,
        "centre": member.centre,
        "code": member.code,
        "instance": member.instance,
        # Strings: JavaScript's numbers are not exact past 2**53 (an mtime in nanoseconds).
        "stat": None
        if stat is None
        else {
            "device": str(stat.device),
            "inode": str(stat.inode),
            "size": str(stat.size),
            "mtime_ns": str(stat.mtime_ns),
            "allocated": None if stat.allocated is None else str(stat.allocated),
        },
        "mediatype": preview.mediatype,
        "type": file_type(preview.mediatype),
        "preview": shown,
        "note": preview.note,
    }


def render_page(
    view: ReportView, facts: Mapping[str, FileFacts], *, source: str, generated: float,
    generator: str = "isccd",
) -> str:  # fmt: skip
    """The report page.

    Args:
        view: The groups.
        facts: Each member's file as it is now, by path.
        source: Where the groups came from, for people.
        generated: Unix time the report was made.
        generator: The program that made it, with its version.
    """
    style, script = _asset("report.css"), _asset("report.js")
    values = {
        "csp": content_security_policy(style, script),
        "generator": html.escape(generator),
        "style": style,
        "script": script,
        "data": script_json(page_data(view, facts, source=source, generated=generated)),
    }
    # One pass over the template: what is put in is never read for markers again.
    return _MARKER.sub(lambda m: values[m.group(1)], _asset("report.html"))
