"""The report page in a real headless Chromium, loaded from ``file://``: what renders, the
filters, the keyboard, the keep marks and the plan file they save, hostile names, and no error
in the console (every test checks that at its end).

One report of the library (tests/report/conftest.py) and one browser serve the module; each
test opens the page in a new tab.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from isccd.cli.main import main
from isccd.report.model import (
    FileFacts,
    FolderGroupView,
    FoldersView,
    FolderView,
    GroupView,
    MemberView,
    Preview,
    PreviewKind,
    ReportView,
)
from isccd.report.page import render_page
from isccd.report.thumbs import file_stat
from tests.report.browser import CHROMIUM, Browser, Page
from tests.report.conftest import HOSTILE, Library, dupes, page_data

# Slow: Chromium works for a good part of a second of CPU in every test.
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed"),
    pytest.mark.slow,
]

SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "schema" / "plan.schema.json"


@pytest.fixture(scope="module")
def report(library: Library, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The library's report page."""
    base = tmp_path_factory.mktemp("page")
    out = base / "report.html"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CACHE_DIRECTORY", str(base / "cache"))
        assert main(["report", "--state", str(library.state), "-o", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    with Browser(tmp_path_factory.mktemp("chromium")) as running:
        yield running


@pytest.fixture
def page(browser: Browser, report: Path) -> Iterator[Page]:
    """The report in a new tab, rendered; no error may be logged while the test uses it."""
    tab = browser.open(report.as_uri())
    tab.wait_for("document.documentElement.dataset.firstRender")
    yield tab
    errors = tab.errors
    tab.close()
    assert errors == []


def dataset(page: Page, name: str) -> Any:
    return page.evaluate(f"document.documentElement.dataset.{name}")


def choose(page: Page, control: str, value: str) -> int:
    """Set a filter as a user does (its value, then the input event); the matching groups."""
    page.evaluate(
        f"(() => {{ const c = document.getElementById({json.dumps(control)});"
        f" c.value = {json.dumps(value)}; c.dispatchEvent(new Event('input')); }})()"
    )
    return int(dataset(page, "matched"))


def test_previews_render(page: Page) -> None:
    loaded = page.evaluate(
        "[...document.images].filter(i => i.complete && i.naturalWidth > 0).length"
    )
    # beach.jpg and its copy twice (exact and near groups), beach-small.jpg, forest.png/.webp.
    assert loaded == 7
    assert page.evaluate("document.images.length") == 7
    texts = page.evaluate("[...document.querySelectorAll('.thumb pre')].map(p => p.textContent)")
    assert any(t.startswith("</script><script>window.pwned=2</script>") for t in texts)
    assert page.evaluate("document.querySelectorAll('.thumb svg use').length") >= 2  # data.bin


def test_totals_are_those_of_dupes(page: Page, library: Library) -> None:
    listed = dupes(library)
    groups: list[dict[str, Any]] = listed["groups"]  # type: ignore[assignment]
    totals: dict[str, int] = listed["totals"]  # type: ignore[assignment]
    assert int(dataset(page, "groups")) == len(groups) == int(dataset(page, "matched"))
    # Each file once (4 are in an exact and a near group), space on disk: as dupes counts.
    assert int(dataset(page, "files")) == totals["files"] < sum(len(g["members"]) for g in groups)
    assert int(dataset(page, "reclaimable")) == totals["reclaimable"]
    shown = page.evaluate("document.querySelectorAll('section.group').length")
    assert shown == len(groups)
    # Exact and near apart: two sections, exact first.
    titles = page.evaluate("[...document.querySelectorAll('h2.section')].map(h => h.textContent)")
    assert [t.split(" duplicates")[0] for t in titles] == ["Exact", "Near"]


def test_filters_search_and_sorting(page: Page) -> None:
    assert choose(page, "kind", "exact") == 4
    assert choose(page, "kind", "near") == 3
    assert choose(page, "kind", "all") == 7
    assert choose(page, "type", "image") == 3
    assert choose(page, "type", "all") == 7
    assert choose(page, "unit", "text") == 1
    assert choose(page, "unit", "all") == 7
    # The draft is 1 bit from the texts; at most 0 bits leaves that near group out.
    assert page.evaluate("document.getElementById('distance').max") == "1"
    assert choose(page, "distance", "0") == 6
    assert choose(page, "distance", "1") == 7
    assert choose(page, "search", "forest") == 1
    assert choose(page, "search", "BEACH small") == 1  # every word, any case
    assert choose(page, "search", "beach") == 2
    assert page.evaluate("document.querySelectorAll('section.group').length") == 2
    assert choose(page, "search", "no such file") == 0
    assert page.evaluate("document.querySelector('main .empty').textContent") == (
        "No group matches the filters."
    )
    assert choose(page, "search", "") == 7
    choose(page, "sort", "files")
    first = page.evaluate("document.querySelector('section.group .path').title")
    assert "/hostile/" in first  # the exact group of five comes first


def test_the_keyboard_moves_and_marks(page: Page) -> None:
    def current() -> list[Any]:
        found: list[Any] = page.evaluate(
            "[document.documentElement.dataset.cursor,"
            " document.querySelector('article.member.current .path').title]"
        )
        return found

    page.press("j")
    assert current()[0] == "0"  # the most reclaimable group: data.bin and its copy
    page.press("ArrowDown")
    page.press("l")
    group, path = current()
    assert path.endswith("/photos/beach.jpg")
    page.press(" ", "Space", " ")
    assert dataset(page, "kept") == "1"
    assert page.evaluate("document.querySelector('article.member.current input').checked")
    page.press(" ", "Space", " ")
    assert dataset(page, "kept") == "0"
    page.press("k")
    assert current()[0] == "0"
    page.press("/", "Slash", "/")
    assert page.evaluate("document.activeElement.id") == "search"
    page.press("Escape")
    assert page.evaluate("document.activeElement === document.body")
    assert group == "2"


def _mark(page: Page, group: int, path: str) -> None:
    page.evaluate(
        f"[...document.querySelectorAll('section.group[data-group=\"{group}\"] article.member')]"
        f".find(m => m.querySelector('.path').title === {json.dumps(path)})"
        ".querySelector('input').click()"
    )


def _save(page: Page, browser: Browser, folder: Path) -> tuple[dict[str, Any], str]:
    """Press Save plan; the plan downloaded, and what the page says."""
    saved = {e["params"]["guid"] for e in browser.events(None) if "guid" in e.get("params", {})}
    browser.allow_downloads(folder)
    page.evaluate("document.getElementById('save').click()")
    done = browser.wait_event(
        "Browser.downloadProgress",
        lambda e: e["params"]["state"] == "completed" and e["params"]["guid"] not in saved,
    )
    plan = json.loads(Path(done["params"]["filePath"]).read_text())
    return plan, page.evaluate("document.getElementById('status').textContent")


def test_the_marks_save_a_plan_that_validates(
    page: Page, browser: Browser, library: Library, tmp_path: Path
) -> None:
    import jsonschema

    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    data = page_data(Path(page.evaluate("location.pathname")).read_text())
    # Each group by any of its members (a near group lists its centre first).
    index = {
        os.path.relpath(m["path"], library.root) + ":" + g["kind"]: i
        for i, g in enumerate(data["groups"])
        for m in g["members"]
    }
    beach, backup = library.path("photos/beach.jpg"), library.path("photos/backup/beach.jpg")
    newline = library.path("hostile/new\nline.txt")
    _mark(page, index["data-copy.bin:exact"], library.path("data.bin"))
    _mark(page, index["photos/backup/beach.jpg:near"], beach)
    _mark(page, index["photos/backup/beach.jpg:exact"], backup)
    _mark(page, index["texts/report-copy.txt:near"], library.path("texts/draft.txt"))
    hostile = next(k for k in index if k.startswith("hostile/"))
    _mark(page, index[hostile], library.path("hostile/new\\nline.txt"))
    assert dataset(page, "kept") == "5"

    plan, status = _save(page, browser, tmp_path)
    validator.validate(plan)
    # The near group keeps beach.jpg, the exact one (marked after it) its backup: each would act
    # on the file the other keeps, so the later group is left out.
    assert status == (
        "Saved isccd-plan.json: 4 groups. Left out the group of "
        f"{backup}: {backup} is in an earlier group of the plan and not kept in both."
    )
    kept = {m["path"] for g in plan["groups"] for m in g["members"] if m["keep"]}
    assert kept == {library.path("data.bin"), beach, library.path("texts/draft.txt"), newline}
    assert [g["kind"] for g in plan["groups"]] == ["exact", "near", "exact", "near"]
    for group in plan["groups"]:
        for member in group["members"]:
            st = os.lstat(member["path"])
            assert (member["device"], member["inode"], member["size"], member["mtime_ns"]) == (
                st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
            )  # fmt: skip
            assert member["root"] == str(library.root)
            assert member["allocated"] == st.st_blocks * 512  # what acting on it frees
            assert ("instance" in member) == (group["kind"] == "exact")
            assert ("code" in member) == (group["kind"] == "near")
    # Every hostile name comes back byte for byte.
    hostile = next(g for g in plan["groups"] if "/hostile/" in g["members"][0]["path"])
    assert {m["path"] for m in hostile["members"]} == {
        library.path(f"hostile/{name}") for name in HOSTILE
    }


def test_a_file_kept_by_two_groups_may_be_in_both(browser: Browser, tmp_path: Path) -> None:
    import jsonschema

    files = {}
    for name in ("a.jpg", "b.jpg", "c.jpg"):
        (tmp_path / name).write_bytes(name.encode())
        st = os.lstat(tmp_path / name)
        files[str(tmp_path / name)] = FileFacts(
            file_stat(st), Preview(PreviewKind.ICON, "image/jpeg")
        )
    a, b, c = files

    def member(path: str, instance: str | None = None) -> MemberView:
        return MemberView(path, (), str(tmp_path), 2, "instance" if instance else "image", 0,
                          instance)  # fmt: skip

    code = "ISCC:IAAZV3ZSNCAD3X7B"
    view = ReportView(
        (
            GroupView("near", "image", 12, 2, (member(a), member(c))),
            GroupView("exact", "instance", 0, 2, (member(a, code), member(b, code))),
        )
    )
    page_file = tmp_path / "page.html"
    page_file.write_text(render_page(view, files, source="a test", generated=1.0))
    tab = browser.open(page_file.as_uri())
    tab.wait_for("document.documentElement.dataset.ready")
    _mark(tab, 0, a)
    _mark(tab, 1, a)
    plan, status = _save(tab, browser, tmp_path)
    assert status == "Saved isccd-plan.json: 2 groups."
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(plan)
    assert [[m["path"] for m in g["members"] if m["keep"]] for g in plan["groups"]] == [[a], [a]]
    # Kept in one group and acted on in the other, it may not.
    _mark(tab, 1, b)
    plan, status = _save(tab, browser, tmp_path)
    assert len(plan["groups"]) == 1
    assert status.endswith(f": {a} is in an earlier group of the plan and not kept in both.")
    assert tab.errors == []
    tab.close()


def test_hostile_names_are_shown_as_text(page: Page, library: Library) -> None:
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.evaluate("document.scripts.length") == 2
    titles = set(page.evaluate("[...document.querySelectorAll('.path')].map(p => p.title)"))
    assert {
        library.path("hostile/evil</script><script>window.pwned=1</script>.txt"),
        library.path("hostile/\"quoted\" 'single' & <b>bold.txt"),
        library.path("hostile/new\\nline.txt"),
        library.path("hostile/caf\\xe9.txt"),
        library.path("hostile/\\u202etxt.exe"),
    } <= titles
    assert page.evaluate("document.querySelectorAll('main b, main script').length") == 0


def test_a_script_the_policy_does_not_name_does_not_run(
    browser: Browser, report: Path, tmp_path: Path
) -> None:
    changed = tmp_path / "changed.html"
    html = report.read_text()
    changed.write_text(html.replace('"use strict";', '"use strict"; // changed', 1))
    tab = browser.open(changed.as_uri())
    assert tab.evaluate("document.documentElement.dataset.ready") is None
    assert any("Content Security Policy" in e for e in tab.errors), tab.errors
    tab.close()


def test_a_screenshot(page: Page, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    page.screenshot(shot)
    head = shot.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", head[16:24]) == (1280, 900)


@pytest.fixture(scope="module")
def folders_report(folders: Library, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report page of the library of folders."""
    base = tmp_path_factory.mktemp("folders-page")
    out = base / "report.html"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CACHE_DIRECTORY", str(base / "cache"))
        assert main(["report", "--state", str(folders.state), "-o", str(out)]) == 0
    return out


def _open(browser: Browser, page: Path) -> Page:
    tab = browser.open(page.as_uri())
    tab.wait_for("document.documentElement.dataset.ready")
    return tab


#: Each folder group as the page shows it: its header, then each folder's path (its title),
#: text and names listed.
FOLDER_CARDS = """[...document.querySelectorAll('#folder-groups section.dirgroup')].map(g => ({
  head: [...g.querySelectorAll('header span')].map(s => s.textContent),
  folders: [...g.querySelectorAll('li.folder')].map(f => ({
    title: f.querySelector('.path').title,
    path: f.querySelector('.path').textContent,
    facts: f.querySelector('.facts').textContent,
    centre: f.classList.contains('centre'),
    names: [...f.querySelectorAll('.names li')].map(n => n.textContent),
  })),
}))"""


def test_the_duplicate_folders_are_shown(browser: Browser, folders_report: Path,
                                         folders: Library) -> None:  # fmt: skip
    tab = _open(browser, folders_report)
    copy = folders.path("<img src=x onerror=\"window.pwned=3\"> 'q' &\\nline\\u202eexe")
    assert tab.evaluate(FOLDER_CARDS) == [
        {
            "head": ["exact", "6.3 KiB reclaimable", "2 folders"],
            "folders": [
                {"title": copy, "path": copy + "/", "facts": "3 files \u00b7 6.3 KiB",
                 "centre": False, "names": []},
                {"title": folders.path("docs"), "path": folders.path("docs") + "/",
                 "facts": "3 files \u00b7 6.3 KiB", "centre": False, "names": []},
            ],
        },
        {
            "head": ["near", "2 folders"],
            "folders": [
                {"title": folders.path("backup/summer-plus"),
                 "path": folders.path("backup/summer-plus") + "/",
                 "facts": "6 files \u00b7 19.5 KiB \u00b7 centre", "centre": True, "names": []},
                {"title": folders.path("music/summer"), "path": folders.path("music/summer") + "/",
                 "facts": "5 files \u00b7 14.7 KiB \u00b7 90% shared with the centre",
                 "centre": False, "names": ["- bonus <b>\"x\" & 'y'\\n\\u202e.bin"]},
            ],
        },
    ]  # fmt: skip
    assert tab.evaluate("document.getElementById('folders-totals').textContent") == (
        "2 groups, 4 folders, 6.3 KiB reclaimable"
    )
    assert tab.evaluate("document.documentElement.dataset.folderGroups") == "2"
    # The hostile names are text: no element, no script ran.
    assert tab.evaluate("typeof window.pwned") == "undefined"
    assert tab.evaluate("document.querySelectorAll('#folders img, #folders b').length") == 0
    assert tab.evaluate("document.getElementById('folders-note').hidden")
    assert tab.evaluate("document.getElementById('folders-truncated').hidden")
    # The file groups are there too, below.
    assert tab.evaluate("document.querySelectorAll('main section.group').length") == 8
    errors = tab.errors
    tab.close()
    assert errors == []


def test_a_page_without_duplicate_folders_says_so(page: Page) -> None:
    assert page.evaluate("document.querySelector('#folder-groups .empty').textContent") == (
        "No duplicate folders."
    )
    assert page.evaluate("document.querySelectorAll('section.dirgroup').length") == 0


def _folder_page(tmp_path: Path, dirs: FoldersView) -> Path:
    """A page of one exact file group and the folders ``dirs``."""
    (tmp_path / "a").write_bytes(b"a")
    seen = FileFacts(file_stat(os.lstat(tmp_path / "a")), Preview(PreviewKind.ICON))
    facts = {str(tmp_path / name): seen for name in ("a", "b")}
    members = tuple(MemberView(p, (), str(tmp_path), 1, "instance", 0, "ISCC:IAAZV3ZSNCAD3X7B")
                    for p in facts)  # fmt: skip
    view = ReportView((GroupView("exact", "instance", 0, 1, members),), folders=dirs)
    page_file = tmp_path / "page.html"
    page_file.write_text(render_page(view, facts, source="a test", generated=1.0))
    return page_file


def test_names_past_those_listed_are_counted(browser: Browser, tmp_path: Path) -> None:
    evil = "/r/</script><script>window.pwned=5</script>"
    centre = FolderView(evil, "/r", 40, 4000, centre=True)
    member = FolderView(
        "/r/b", "/r", 41, 4100, host="nas", share=0.58, unmatched=("x<i>1</i>", "x2"),
        unmatched_count=25, missing=("gone\u202e",), missing_count=3,
    )  # fmt: skip
    dirs = FoldersView((FolderGroupView("near", 0, (centre, member)),), truncated=True, folders=9)
    tab = _open(browser, _folder_page(tmp_path, dirs))
    [card] = tab.evaluate(FOLDER_CARDS)
    assert [(f["path"], f["facts"], f["names"]) for f in card["folders"]] == [
        (evil + "/", "40 files \u00b7 3.9 KiB \u00b7 centre", []),
        ("nas:/r/b/", "41 files \u00b7 4.0 KiB \u00b7 58% shared with the centre",
         ["+ x<i>1</i>", "+ x2", "+ 23 more", "- gone\\u202e", "- 2 more"]),
    ]  # fmt: skip
    assert not tab.evaluate("document.getElementById('folders-truncated').hidden")
    assert tab.evaluate("typeof window.pwned") == "undefined"
    assert tab.evaluate("document.querySelectorAll('#folders i, #folders script').length") == 0
    assert tab.errors == []
    tab.close()


def test_folders_that_could_not_be_listed_are_said_so(browser: Browser, tmp_path: Path) -> None:
    note = "the daemon does not list duplicate folders (it is older than this isccd)"
    tab = _open(browser, _folder_page(tmp_path, FoldersView(error=note)))
    assert tab.evaluate("document.getElementById('folders-note').hidden") is False
    assert tab.evaluate("document.getElementById('folders-note').textContent") == (
        f"Duplicate folders could not be listed: {note}."
    )
    assert tab.evaluate("document.querySelectorAll('#folder-groups > *').length") == 0
    # The file groups are shown.
    assert tab.evaluate("document.querySelectorAll('main section.group').length") == 1
    assert tab.errors == []
    tab.close()
