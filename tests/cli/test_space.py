"""The numbers a user acts on, on real files: totals that count each file once, and space
that is the blocks on disk (``du``), not the sizes (``ls -l``), in ``dupes``, the report and
``dedupe``.

The library (:func:`tests.cli.test_index_cli.make_library`) holds a text, its exact copy and a
draft near both (with ``--near`` the two copies are in their exact group and in the near group),
two exact 200,000-byte binaries and an unrelated text; added here: a sparse image (8 MiB of
which 64 KiB are written, made with ``truncate``) and a copy of it whose zeros are written out,
so that the two have the same bytes and take 64 KiB and 8 MiB on disk. ``dedupe`` is measured
with ``du`` before and after, on a sparse copy and on a copy whose blocks a hard link outside
the library keeps.
"""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from isccd.cli.main import main
from isccd.cli.output import format_size
from tests.cli.test_index_cli import make_library
from tests.report.conftest import page_data
from tests.schemas import check

#: Each test scans a library with worker processes.
pytestmark = pytest.mark.slow

SPARSE = 8 << 20
WRITTEN = 64 << 10


def on_disk(path: str | Path) -> int:
    """Bytes a file takes on disk, as ``du`` counts them."""
    return Path(path).stat().st_blocks * 512


def du(*roots: Path) -> int:
    """The bytes the trees' files take on disk, each file (inode) once, as ``du -s`` counts."""
    seen: dict[tuple[int, int], int] = {}
    for root in roots:
        for path in root.rglob("*"):
            st = path.lstat()
            if path.is_file() and not path.is_symlink():
                seen[(st.st_dev, st.st_ino)] = st.st_blocks * 512
    return sum(seen.values())


def make_sparse(library: Path) -> tuple[Path, Path]:
    sparse, dense = library / "disk.img", library / "disk-copy.img"
    head = random.Random(5).randbytes(WRITTEN)
    sparse.write_bytes(head)
    subprocess.run(["truncate", "-s", str(SPARSE), str(sparse)], check=True)
    dense.write_bytes(head + bytes(SPARSE - WRITTEN))
    if on_disk(sparse) >= SPARSE // 2 or on_disk(dense) < SPARSE:
        pytest.skip("this file system allocates no holes (or no blocks for zeros)")
    return sparse, dense


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    base = tmp_path_factory.mktemp("space")
    library = make_library(base / "library")
    make_sparse(library)
    state = base / "state"
    assert main(["scan", "--state", str(state), "-j", "1", str(library)]) == 0
    yield library, state


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    saved, sys.stdout = sys.stdout, out
    try:
        status = main(list(args))
    finally:
        sys.stdout = saved
    return status, out.getvalue()


def dupes(state: Path, *args: str) -> dict[str, Any]:
    status, out = run("dupes", "--state", str(state), "--json", *args)
    assert status == 0
    result: dict[str, Any] = json.loads(out)
    check("dupes", result)
    return result


def expected_totals(groups: list[dict[str, Any]]) -> tuple[int, int, int]:
    """Distinct files, and what keeping the largest file of each set of groups that share a
    file frees on disk and by size, measured on the files themselves."""
    sets: list[set[str]] = []
    for group in groups:
        names = {m["path"] for m in group["members"]}
        joined = [s for s in sets if s & names]
        for s in joined:
            sets.remove(s)
            names |= s
        sets.append(names)
    disk = size = 0
    for names in sets:
        kept = max(names, key=lambda p: (Path(p).stat().st_size, -sorted(names).index(p)))
        disk += sum(on_disk(p) for p in names if p != kept)
        size += sum(Path(p).stat().st_size for p in names if p != kept)
    return sum(len(s) for s in sets), disk, size


def test_near_totals_count_each_file_once(scanned: tuple[Path, Path]) -> None:
    library, state = scanned
    result = dupes(state, "--near")
    groups = result["groups"]
    kinds = sorted((g["kind"], len(g["members"])) for g in groups)
    assert kinds == [("exact", 2), ("exact", 2), ("exact", 2), ("near", 3)]
    texts = {str(library / "docs" / "report.txt"), str(library / "backup_report.txt")}
    # The two copies of the text are in their exact group and in the near group ...
    assert sum(texts <= {m["path"] for m in g["members"]} for g in groups) == 2
    # ... and are two files of the totals, not four: 7 distinct files, not 9.
    files, disk, size = expected_totals(groups)
    assert files == 7 and sum(len(g["members"]) for g in groups) == 9
    assert result["totals"] == {
        "groups": 4, "files": files, "reclaimable": disk, "reclaimable_size": size
    }  # fmt: skip


def test_reclaimable_is_the_blocks_on_disk_and_size_stays_the_size(
    scanned: tuple[Path, Path],
) -> None:
    library, state = scanned
    [group] = [g for g in dupes(state)["groups"] if g["members"][0]["path"].endswith(".img")]
    by_name = {Path(m["path"]).name: m for m in group["members"]}
    for name in ("disk.img", "disk-copy.img"):
        assert by_name[name]["size"] == SPARSE
        assert by_name[name]["allocated"] == on_disk(library / name)
    # Keeping the first frees the other's blocks; by size it would be 8 MiB either way.
    other = group["members"][1]
    assert group["reclaimable"] == on_disk(other["path"]) and group["reclaimable_size"] == SPARSE


def test_the_text_says_each_file_once_and_space_on_disk(scanned: tuple[Path, Path]) -> None:
    _, state = scanned
    totals = dupes(state, "--near")["totals"]
    status, out = run("dupes", "--state", str(state), "--near")
    assert status == 0
    lines = out.splitlines()
    assert lines[-1] == (
        f"4 groups, {totals['files']} files, {format_size(totals['reclaimable'])} reclaimable "
        f"on disk ({format_size(totals['reclaimable_size'])} by size: sparse files)"
    )
    # A sparse member says what it holds on disk; a dense one only its size.
    sparse = on_disk(state.parent / "library" / "disk.img")
    [line] = [line for line in lines if "/disk.img" in line]
    assert line.endswith(f"/disk.img  ({format_size(sparse)} on disk)")
    [line] = [line for line in lines if "/disk-copy.img" in line]
    assert line.endswith("/disk-copy.img")
    status, out = run("dupes", "--state", str(state), "--csv")
    header, *rows = out.splitlines()
    # ``allocated`` before ``centre``, the last column (an exact group has no centre).
    assert header.split(",")[-2:] == ["allocated", "centre"]
    [row] = [r for r in rows if "/disk.img," in r]
    assert row.split(",")[-2:] == [str(sparse), "false"]


def test_the_report_counts_as_dupes_does(
    scanned: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, state = scanned
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    page = tmp_path / "report.html"
    totals = dupes(state, "--near")["totals"]
    status, out = run("report", "--state", str(state), "-o", str(page), "-j", "1")
    assert status == 0
    assert out.startswith(
        f"{page}: 4 groups, {totals['files']} files, "
        f"{format_size(totals['reclaimable'])} reclaimable"
    )
    data = page_data(page.read_text())
    assert data["totals"] == totals
    sizes = {Path(m["path"]).name: m["allocated"] for g in data["groups"] for m in g["members"]}
    assert sizes["disk.img"] == on_disk(state.parent / "library" / "disk.img")


def test_dedupe_says_what_it_frees_on_disk_as_du_measures_it(tmp_path: Path) -> None:
    library = tmp_path / "library"
    (library / "keep").mkdir(parents=True)
    sparse, dense = make_sparse(library)
    dense = dense.rename(library / "keep" / dense.name)
    state = tmp_path / "state"
    assert main(["scan", "--state", str(state), "-j", "1", str(library)]) == 0
    before = du(library)
    status, out = run(
        "dedupe", "--link", "--state", str(state), "--keep-in", str(library / "keep"),
        "--apply", "--log", str(tmp_path / "log"),
    )  # fmt: skip
    assert status == 0, out
    assert sparse.stat().st_ino == dense.stat().st_ino  # the sparse one is now a link
    freed = before - du(library)
    # The sparse file's blocks, as du measures them: not the 8 MiB of its size.
    assert freed == WRITTEN or 0 < freed < SPARSE // 2
    assert f"freeing {format_size(freed)}" in out, (out, freed)


def test_a_file_with_names_outside_its_group_frees_nothing(tmp_path: Path) -> None:
    library, outside = tmp_path / "library", tmp_path / "outside"
    (library / "keep").mkdir(parents=True)
    outside.mkdir()
    content = random.Random(9).randbytes(256 << 10)
    (library / "keep" / "a.bin").write_bytes(content)
    (library / "b.bin").write_bytes(content)
    (outside / "b.bin").hardlink_to(library / "b.bin")  # not watched: it keeps the blocks
    state = tmp_path / "state"
    assert main(["scan", "--state", str(state), "-j", "1", str(library)]) == 0
    before = du(library, outside)
    status, out = run(
        "dedupe", "--link", "--state", str(state), "--keep-in", str(library / "keep"),
        "--apply", "--log", str(tmp_path / "log"),
    )  # fmt: skip
    assert status == 0, out
    assert (library / "b.bin").stat().st_ino == (library / "keep" / "a.bin").stat().st_ino
    assert du(library, outside) == before  # the outside name still holds the old file's blocks
    assert "linked 1 files in 1 of 1 groups, freeing 0 B" in out, out
