"""``isccd dupes`` as people and scripts read it: the totals line, near groups as members with
their nearest distance, the filters, ``--csv``; and ``isccd dedupe --type``.

The library (:func:`tests.cli.test_index_cli.make_library`) holds two exact pairs (two
200,000-byte binaries, two texts), a draft near the texts and an unrelated text; a hardlink of
one binary is added, so that a file with two names is seen once.
"""

from __future__ import annotations

import csv
import gc
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import pytest

from isccd.cli.answers import CSV_COLUMNS
from isccd.cli.dedupe import run_dedupe
from isccd.cli.engine import run_explain
from isccd.cli.index import run_get, run_similar
from isccd.cli.main import main
from isccd.pipeline import groups
from tests.cli.test_index_cli import Terminal, make_library, prose

BIG = 200_000
CODE = "ISCC:KACYPXW445FTYNJ3CYSXHAFJMA2HUWULUNRFE3BLHRSCXYH2M5AEGQY"
TEXT = len(prose(1).encode())


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    base = tmp_path_factory.mktemp("dupes")
    library = make_library(base / "library")
    (library / "big-link.bin").hardlink_to(library / "big.bin")
    state = base / "state"
    assert main(["scan", "--state", str(state), "-j", "1", str(library)]) in (0, 1)
    yield library, state


def dupes(scanned: tuple[Path, Path], *args: str) -> dict[str, Any]:
    _, state = scanned
    out = io.StringIO()
    saved, sys.stdout = sys.stdout, out
    try:
        assert main(["dupes", "--state", str(state), "--json", *args]) == 0
    finally:
        sys.stdout = saved
    result: dict[str, Any] = json.loads(out.getvalue())
    return result


def names(group: dict[str, Any]) -> set[str]:
    return {Path(p).name for m in group["members"] for p in (m["path"], *m["links"])}


@pytest.mark.slow
def test_totals_count_groups_files_once_and_reclaimable_bytes(
    scanned: tuple[Path, Path],
) -> None:
    result = dupes(scanned)
    # The binaries' group has two files (big.bin and its hardlink are one), the texts' two.
    assert [len(g["members"]) for g in result["groups"]] == [2, 2]
    # What keeping the first of each frees is the others' blocks on disk, not their size.
    others = [m["path"] for g in result["groups"] for m in g["members"][1:]]
    on_disk = sum(Path(p).stat().st_blocks * 512 for p in others)
    assert result["totals"] == {
        "groups": 2, "files": 4, "reclaimable": on_disk, "reclaimable_size": BIG + TEXT
    }  # fmt: skip


def test_text_ends_with_the_totals_and_near_members_name_their_nearest(
    scanned: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, state = scanned
    screen = Terminal()
    monkeypatch.setattr(sys, "stdout", screen)
    assert main(["dupes", "--state", str(state), "--near"]) == 0
    lines = screen.getvalue().splitlines()
    totals = dupes(scanned, "--near")["totals"]
    assert totals["groups"] == 3
    reclaimable = f"{totals['reclaimable'] / 1024:.1f} KiB"
    assert lines[-1] == f"3 groups, {totals['files']} files, {reclaimable} reclaimable"
    near = lines.index(next(line for line in lines if line.startswith("near by text: 3 files")))
    members = lines[near + 1 : near + 4]
    # Each member once: the centre first, then the others with their distance and unit to it;
    # no list of pairs.
    assert members[0].endswith("  centre"), members
    assert all(m.endswith(" by text to #1") for m in members[1:]), members
    assert not any("near: #" in line for line in lines)
    assert any(line.strip() == f"= {scanned[0] / 'big.bin'} (hardlink)" for line in lines)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--type", "data"), [{"big.bin", "big-link.bin", "big_copy.bin"}]),
        (("--type", "text"), [{"report.txt", "backup_report.txt"}]),
        (("--min-size", "100K"), [{"big.bin", "big-link.bin", "big_copy.bin"}]),
        (("--near", "--unit", "text"), [{"report.txt", "backup_report.txt", "draft.txt"}]),
        (("--near", "--unit", "instance"), [{"big.bin", "big-link.bin", "big_copy.bin"},
                                             {"report.txt", "backup_report.txt"}]),
        (("--near", "--root", "ROOT/docs"), [{"report.txt", "backup_report.txt", "draft.txt"},
                                              {"report.txt", "backup_report.txt"}]),
        # The draft is more than 0 bits from the texts: no near group is left.
        (("--near", "--max-distance", "0"), [{"big.bin", "big-link.bin", "big_copy.bin"},
                                              {"report.txt", "backup_report.txt"}]),
    ],
)  # fmt: skip
def test_filters_narrow_the_groups(
    scanned: tuple[Path, Path], args: tuple[str, ...], expected: list[set[str]]
) -> None:
    library, _ = scanned
    given = [a.replace("ROOT", str(library)) for a in args]
    result = dupes(scanned, *given)
    assert [names(g) for g in result["groups"]] == expected
    assert result["totals"]["groups"] == len(expected)


def test_csv_has_a_header_and_a_row_per_file_name(scanned: tuple[Path, Path]) -> None:
    library, state = scanned
    out = io.StringIO()
    saved, sys.stdout = sys.stdout, out
    try:
        assert main(["dupes", "--state", str(state), "--near", "--csv"]) == 0
    finally:
        sys.stdout = saved
    header, *rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert tuple(header) == CSV_COLUMNS
    table = [dict(zip(header, row, strict=True)) for row in rows]
    result = dupes(scanned, "--near")
    assert len(table) == sum(1 + len(m["links"]) for g in result["groups"] for m in g["members"])
    [link] = [r for r in table if r["link"] == "true"]
    assert (link["path"], link["group"], link["kind"]) == (str(library / "big.bin"), "1", "exact")
    near = [r for r in table if r["kind"] == "near"]
    assert {r["unit"] for r in near} == {"text"}
    centre = near[0]
    assert (centre["member"], centre["centre"], centre["nearest"], centre["distance"]) == (
        "1",
        "true",
        "",
        "0",
    )
    assert all((r["centre"], r["nearest"]) == ("false", "1") for r in near[1:])
    assert all(int(r["distance"]) <= int(r["threshold"]) for r in near)


def test_dedupe_takes_the_file_types_too(
    scanned: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    library, state = scanned
    assert main(["dedupe", "--link", "--state", str(state), "--type", "text"]) == 0
    out = capsys.readouterr().out
    assert (
        f"link    {library}/backup_report.txt" in out or f"link    {library}/docs/report.txt" in out
    )
    assert "big" not in out and "1 of 1 groups" in out


def collected_while(codes: set[CodeType], commands: list[list[str]]) -> tuple[list[int], int, str]:
    """Run ``commands`` with the collector set to collect at every allocation it is let see:
    their statuses, the collections that started while one of ``codes`` ran, and their
    output."""
    during: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        frame: FrameType | None = sys._getframe(1)
        while phase == "start" and frame is not None:
            if frame.f_code in codes:
                during.append(info["generation"])
                break
            frame = frame.f_back

    out = io.StringIO()
    saved, sys.stdout = sys.stdout, out
    pace = gc.get_threshold()
    gc.set_threshold(1)
    gc.callbacks.append(seen)
    try:
        statuses = [main(words) for words in commands]
        assert gc.isenabled()
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*pace)
        sys.stdout = saved
    return statuses, len(during), out.getvalue()


def test_dupes_runs_without_the_cycle_collector_and_gives_it_back(
    scanned: tuple[Path, Path],
) -> None:
    # Its results hold no cycle: the collector would only walk them as they pile up. It is
    # paused for the command alone, even one that fails, and collects again after it.
    _, state = scanned
    statuses, during, out = collected_while(
        {groups.dupes.__code__},
        [
            ["dupes", "--state", str(state), "--near", "--json"],
            ["dupes", "--state", str(state / "none")],
        ],
    )
    assert statuses[0] == 0 and statuses[1] != 0
    assert json.loads(out)["groups"]
    assert during == 0


def test_the_other_answers_and_dedupe_run_without_the_cycle_collector_and_only_they(
    scanned: tuple[Path, Path],
) -> None:
    library, state = scanned
    text = str(library / "docs" / "report.txt")
    answers = [
        ["get", "--state", str(state), text],
        ["similar", "--state", str(state), text],
        ["dedupe", "--link", "--state", str(state), "--type", "text"],
    ]
    handlers = {run_get.__code__, run_similar.__code__, run_dedupe.__code__}
    statuses, during, _ = collected_while(handlers, answers)
    assert statuses == [0, 0, 0]
    assert during == 0
    # Any other command is left the collector's pace.
    statuses, during, _ = collected_while({run_explain.__code__}, [["explain", CODE]])
    assert statuses == [0] and during > 0
