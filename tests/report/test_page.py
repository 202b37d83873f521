"""The report page as HTML (isccd.report.page): self-contained, its policy, and names that
stay text whatever they hold."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re

from isccd.fspath import shown
from isccd.report.model import (
    FileFacts,
    FileStat,
    FolderGroupView,
    FoldersView,
    FolderView,
    GroupView,
    MemberView,
    Preview,
    PreviewKind,
    ReportView,
)
from isccd.report.page import render_page, script_json
from tests.report.conftest import page_data

HOSTILE = [
    "/r/evil</script><script>window.pwned=1</script>.txt",
    "/r/<!--<script>",
    "/r/\"quoted\" 'single' & <b>bold",
    "/r/new\nline.txt",
    "/r/" + os.fsdecode(b"caf\xe9.txt"),
    "/r/\u2028\u2029\u202e.txt",
]


def _view(paths: list[str], kind: str = "exact") -> ReportView:
    members = tuple(
        MemberView(p, (), "/r", 10, "instance", 0, "ISCC:IAAZV3ZSNCAD3X7B") for p in paths
    )
    return ReportView((GroupView(kind, "instance", 0, 10 * (len(paths) - 1), members),))


def _facts(paths: list[str], preview: Preview) -> dict[str, FileFacts]:
    return {p: FileFacts(FileStat(1, i, 10, 2**62 + i), preview) for i, p in enumerate(paths)}


def _page(paths: list[str], preview: Preview | None = None) -> str:
    preview = preview or Preview(PreviewKind.ICON, "text/plain")
    return render_page(_view(paths), _facts(paths, preview), source="a test", generated=1.0)


def test_json_in_a_script_element_cannot_end_it() -> None:
    value = {"</script><!--": ["<script>", "&amp;", "\u2028", os.fsdecode(b"\xff")]}
    text = script_json(value)
    assert not set(text) & {"<", ">", "&"}
    assert text.isascii()
    assert json.loads(text) == value


def test_hostile_names_reach_the_page_only_as_json_text() -> None:
    page = _page(HOSTILE, Preview(PreviewKind.TEXT, "text/plain", b"</script><b>x</b>"))
    raw = ("<script>window", "<!--", "<b>bold", "<b>x", "new\nline", "\udce9", "\u2028", "\u202e")
    assert [r for r in raw if r in page] == []
    # The page has exactly its own two scripts, and the data is the names, exactly.
    assert page.count("</script>") == 2
    assert page.count("<script") == 2
    data = page_data(page)
    members = data["groups"][0]["members"]
    assert [m["path"] for m in members] == HOSTILE
    assert members[0]["preview"] == {"kind": "text", "text": "</script><b>x</b>"}


def test_the_policy_allows_only_the_page_own_style_and_script() -> None:
    page = _page(["/r/a", "/r/b"])
    [policy] = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    [style] = re.findall(r"<style>(.*?)</style>", page, re.DOTALL)
    [script] = re.findall(r"<script>(.*?)</script>", page, re.DOTALL)

    def digest(text: str) -> str:
        return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    assert policy == (
        f"default-src 'none'; img-src data:; style-src 'sha256-{digest(style)}'; "
        f"script-src 'sha256-{digest(script)}'; base-uri 'none'; form-action 'none'"
    )


def test_the_page_loads_nothing() -> None:
    page = _page(["/r/a", "/r/b"], Preview(PreviewKind.IMAGE, "image/webp", b"RIFFxxxxWEBP"))
    references = re.findall(r'\b(?:src|href|action|srcset)\s*=\s*"([^"]*)"', page)
    assert references and all(r.startswith(("data:", "#")) for r in references), references
    # The one URL in the page is the SVG namespace, a name that is never fetched.
    assert set(re.findall(r"\w+://[^\s\"'`]+", page)) == {"http://www.w3.org/2000/svg"}
    assert not re.search(r"\bfetch\(|XMLHttpRequest|WebSocket|import\(|@import|url\(", page)


def test_the_data_carries_what_a_plan_needs_exactly() -> None:
    paths = ["/r/a", "/r/b"]
    picture = Preview(PreviewKind.IMAGE, "image/jpeg", b"same picture")
    data = page_data(_page(paths, picture))
    a, b = data["groups"][0]["members"]
    # Integers past 2**53 as strings, digit for digit.
    assert a["stat"] == {
        "device": "1", "inode": "0", "size": "10", "mtime_ns": str(2**62), "allocated": None
    }  # fmt: skip
    assert b["stat"]["mtime_ns"] == str(2**62 + 1)
    assert a["instance"] == "ISCC:IAAZV3ZSNCAD3X7B"
    # The same picture is embedded once.
    embedded = base64.b64encode(b"same picture").decode()
    assert data["thumbs"] == [f"data:image/webp;base64,{embedded}"]
    assert a["preview"] == b["preview"] == {"kind": "image", "thumb": 0}
    assert data["groups"][0]["type"] == "image"
    assert data["totals"] == {"groups": 1, "files": 2, "reclaimable": 10, "reclaimable_size": 10}


def test_a_file_that_is_gone_has_no_identity_on_the_page() -> None:
    view = _view(["/r/a", "/r/b"])
    facts = _facts(["/r/a"], Preview(PreviewKind.TEXT, "text/plain", b"hello"))
    facts["/r/b"] = FileFacts(None, Preview(PreviewKind.ICON, note="gone since it was indexed"))
    data = page_data(render_page(view, facts, source="a test", generated=1.0))
    b = data["groups"][0]["members"][1]
    assert (b["stat"], b["note"], b["type"]) == (None, "gone since it was indexed", "")
    assert data["groups"][0]["type"] == "text"


def test_the_page_shows_a_name_as_the_command_line_does() -> None:
    # One escape rule: each name that does not print as it is comes with the form the
    # command line shows it in (a tab as \t, not \x09), and the script shows that form.
    names = ["/r/tab\there.txt", "/r/" + os.fsdecode(b"caf\xe9.txt"), "/r/plain.txt"]
    data = page_data(_page(names))
    assert data["shown"] == {
        "/r/tab\there.txt": "/r/tab\\there.txt",
        "/r/" + os.fsdecode(b"caf\xe9.txt"): "/r/caf\\xe9.txt",
    }
    assert data["shown"] == {n: shown(n) for n in names if shown(n) != n}
    # The script escapes nothing itself: it shows the forms it is given.
    assert '"\\\\x" + hex' not in _page(names)


def test_hostile_folder_names_reach_the_page_only_as_json_text() -> None:
    folder = "/r/<img src=x onerror=\"pwned=1\"> 'q' &\nline\u202e"
    unmatched = "</script><script>pwned=2</script>"
    missing = os.fsdecode(b"caf\xe9<u>")
    dirs = FoldersView(
        (
            FolderGroupView(
                "near",
                0,
                (
                    FolderView(folder, "/r", 3, 30, centre=True),
                    FolderView("/r/b", "/r", 3, 30, share=0.9, unmatched=(unmatched,),
                               unmatched_count=1, missing=(missing,), missing_count=4),
                ),
            ),
        ),
        folders=2,
    )  # fmt: skip
    view = ReportView(_view(["/r/a", "/r/c"]).groups, folders=dirs)
    page = render_page(view, _facts(["/r/a", "/r/c"], Preview(PreviewKind.ICON)), source="t",
                       generated=1.0)  # fmt: skip
    raw = ("<img", "<script>pwned", "<u>", "\nline", "\u202e", "\udce9")
    assert [r for r in raw if r in page] == []
    assert page.count("<script") == 2
    data = page_data(page)
    centre, member = data["folders"]["groups"][0]["members"]
    assert (centre["path"], centre["centre"]) == (folder, True)
    assert (member["unmatched"], member["missing"], member["missing_count"]) == (
        [unmatched], [missing], 4
    )  # fmt: skip
    assert data["shown"][folder] == "/r/<img src=x onerror=\"pwned=1\"> 'q' &\\nline\\u202e"
    assert data["shown"][missing] == "caf\\xe9<u>"
    assert unmatched not in data["shown"]  # it prints as it is


def test_a_page_without_folders_has_an_empty_list_and_an_error_when_asked() -> None:
    data = page_data(_page(["/r/a", "/r/b"]))
    assert data["folders"] == {
        "groups": [], "truncated": False, "folders": 0, "reclaimable": 0, "error": ""
    }  # fmt: skip
    view = ReportView(_view(["/r/a", "/r/b"]).groups, folders=FoldersView(error="refused"))
    facts = _facts(["/r/a", "/r/b"], Preview(PreviewKind.ICON))
    data = page_data(render_page(view, facts, source="t", generated=1.0))
    assert (data["folders"]["groups"], data["folders"]["error"]) == ([], "refused")
    assert data["groups"][0]["members"][0]["path"] == "/r/a"
