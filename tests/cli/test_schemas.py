"""Real outputs of the commands that need no daemon, validated against docs/schema/: ``code``,
``explain``, ``compare``, ``selftest``, ``scan``, and ``get``, ``similar`` and ``dupes`` (of a
watchlist too, and of folders) read from a store. (A real daemon's replies and events:
tests/e2e/test_index_clients.py.)"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from isccd.cli.main import main
from tests.cli.test_index_cli import make_library, prose
from tests.schemas import check


def output(*args: str) -> str:
    out = io.StringIO()
    saved, sys.stdout = sys.stdout, out
    try:
        main(list(args))
    finally:
        sys.stdout = saved
    return out.getvalue()


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    base = tmp_path_factory.mktemp("schemas")
    root = make_library(base / "library")
    (root / "big-link.bin").hardlink_to(root / "big.bin")
    state = base / "state"
    scan = json.loads(output("scan", "--state", str(state), "--json", str(root)))
    return root, state, scan


@pytest.mark.slow
def test_scan(library: tuple[Path, Path, dict[str, Any]]) -> None:
    check("scan", library[2])


@pytest.mark.slow
def test_code_json_jsonl_and_their_issues(library: tuple[Path, Path, dict[str, Any]]) -> None:
    root = library[0]
    document = json.loads(output("code", "--json", "--units", str(root)))
    check("code", document)
    assert any("units" in f for f in document) and any("issues" in f for f in document)
    for line in output("code", "--jsonl", str(root)).splitlines():
        check("code", json.loads(line), "#/$defs/file")


@pytest.mark.slow
def test_explain_compare_and_selftest(library: tuple[Path, Path, dict[str, Any]]) -> None:
    root = library[0]
    code = json.loads(output("code", "--json", str(root / "other.txt")))[0]["iscc"]
    check(
        "explain",
        json.loads(output("explain", "--json", code, "EAASKDNZNYGUUF5A-EEASKDNZNYGUUF5A")),
    )
    for line in output("explain", "--jsonl", code).splitlines():
        check("explain", json.loads(line), "#/$defs/code")
    docs = root / "docs"
    for a, b in ((docs / "report.txt", docs / "draft.txt"), (code, root / "big.bin")):
        check("compare", json.loads(output("compare", "--json", str(a), str(b))))
    check("selftest", json.loads(output("selftest", "--json")))


@pytest.mark.slow
def test_get_similar_and_dupes_from_a_store(library: tuple[Path, Path, dict[str, Any]]) -> None:
    root, state, _ = library
    where = ("--state", str(state), "--json")
    for name in ("docs/report.txt", "big-link.bin"):
        check("get", json.loads(output("get", str(root / name), *where)))
    check("similar", json.loads(output("similar", str(root / "docs" / "report.txt"), *where)))
    code = json.loads(output("get", str(root / "big.bin"), *where))["iscc"]
    check("similar", json.loads(output("similar", "--code", code, *where)))
    dupes = json.loads(output("dupes", "--near", *where))
    check("dupes", dupes)
    assert {g["kind"] for g in dupes["groups"]} == {"exact", "near"}


@pytest.mark.slow
def test_similar_and_dupes_of_a_watchlist_from_a_store(
    library: tuple[Path, Path, dict[str, Any]],
) -> None:
    root, state, _ = library
    where = ("--state", str(state), "--json")
    output("watchlist", "add", "docs", str(root / "docs" / "report.txt"), *where)
    similar = json.loads(output("similar", "--watchlist", "docs", *where))
    check("watched", similar)
    [group] = similar["groups"]
    assert group["label"] == "report.txt"
    exact_copies = {m["path"] for m in group["matches"] if m["relation"] == "exact"}
    assert str(root / "docs" / "report.txt") in exact_copies
    dupes = json.loads(output("dupes", "--watchlist", "docs", "--near", *where))
    check("watched", dupes)
    assert dupes == similar
    exact = json.loads(output("dupes", "--watchlist", "docs", *where))
    check("watched", exact)
    assert {m["relation"] for g in exact["groups"] for m in g["matches"]} == {"exact"}


@pytest.mark.slow
def test_duplicate_folders_from_a_store(tmp_path: Path) -> None:
    root = tmp_path.resolve() / "folders"
    for folder in ("a", "b/copy", "c"):
        (root / folder / "sub").mkdir(parents=True)
        (root / folder / "one.txt").write_text(prose(11))
        (root / folder / "sub" / "two.txt").write_text(prose(12))
    (root / "c" / "sub" / "three.txt").write_text(prose(13))
    state = str(tmp_path / "state")
    output("scan", "--state", state, "--json", str(root))
    dirs = json.loads(output("dupes", "--dirs", "--near", "--share", "80", "--state", state,
                             "--json"))  # fmt: skip
    check("dirs", dirs)
    exact, near = dirs["groups"]
    assert [m["path"] for m in exact["members"]] == [str(root / "a"), str(root / "b")]
    assert [m["path"] for m in near["members"]] == [str(root / f) for f in ("c", "a", "b")]
    assert [m["missing"] for m in near["members"]] == [[], ["sub/three.txt"], ["sub/three.txt"]]
    with pytest.raises(jsonschema.ValidationError):
        check("dirs", {**dirs, "groups": [{**near, "members": near["members"][:1]}]})


@pytest.mark.slow
def test_the_schemas_refuse_the_old_shapes(library: tuple[Path, Path, dict[str, Any]]) -> None:
    root, state, _ = library
    info = json.loads(
        output("get", str(root / "docs" / "report.txt"), "--state", str(state), "--json")
    )
    info["units"] = [{"type": t, "iscc": c} for t, c in info["units"].items()]  # version 1
    with pytest.raises(jsonschema.ValidationError):
        check("get", info)
    [file] = json.loads(output("code", "--json", str(root / "other.txt")))
    file["filesize"] = file.pop("size")
    with pytest.raises(jsonschema.ValidationError):
        check("code", [file])
