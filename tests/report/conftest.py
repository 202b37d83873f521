"""A library of duplicates for the report's tests, scanned into a store, and the report of it.

The library holds, besides unrelated files:

- an exact pair of photos and a smaller re-encoding of them (one exact group, one near group);
- a picture and its WebP re-encoding (a near group);
- a text, its copy and an edited draft (an exact group and a near group);
- two copies of random bytes (an exact group of data, shown as icons);
- exact copies of one text under hostile names: ``</script>`` across two path components,
  quotes and ``&``, a newline, a byte that is not UTF-8 and a right-to-left override.

A second library, of folders (:func:`make_folders`), holds an exact copy of a folder under a
hostile name and a copy of a folder with one file more (a hostile name too).

Every test of the package runs without the system's configuration and with its own preview
cache (``CONFIGURATION_DIRECTORY`` and ``CACHE_DIRECTORY`` point into a temporary directory).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw

from isccd.cli.main import main
from tests.cli.test_index_cli import prose


def picture(seed: int, size: tuple[int, int] = (640, 480)) -> Image.Image:
    """A picture of coarse random blocks and shapes: pictures of different seeds have
    unrelated Image-Codes."""
    rng = random.Random(seed)
    blocks = Image.new("L", (8, 6))
    blocks.putdata([rng.randrange(256) for _ in range(48)])
    base = blocks.resize(size, Image.Resampling.BICUBIC)
    tint = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
    img = Image.merge("RGB", [base.point(lambda v, t=t: (v + t) // 2) for t in tint])
    draw = ImageDraw.Draw(img)
    for _ in range(5):
        x, y = rng.randrange(size[0] - 80), rng.randrange(size[1] - 60)
        color = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
        draw.ellipse((x, y, x + 40 + rng.randrange(40), y + 30 + rng.randrange(30)), fill=color)
    return img


#: The hostile names, relative to the library (``/`` separates folders).
HOSTILE = (
    "evil<" + "/script><script>window.pwned=1<" + "/script>.txt",
    "\"quoted\" 'single' & <b>bold.txt",
    "new\nline.txt",
    os.fsdecode(b"caf\xe9.txt"),
    "\u202etxt.exe",
)

#: The text the hostile names hold (it is shown as a preview too).
HOSTILE_TEXT = "</script><script>window.pwned=2</script>\n" + prose(9, 200)


@dataclass(frozen=True)
class Library:
    """The library and what its tests need to know of it.

    Attributes:
        root: The library.
        state: The state directory of its store.
    """

    root: Path
    state: Path

    def path(self, name: str) -> str:
        """The absolute path of ``name`` as the store keeps it."""
        return str(self.root / name)


def make_library(root: Path) -> None:
    """Write the library (see the module docstring) under ``root``."""
    (root / "photos" / "backup").mkdir(parents=True)
    photo = picture(1)
    photo.save(root / "photos" / "beach.jpg", quality=90)
    (root / "photos" / "backup" / "beach.jpg").write_bytes(
        (root / "photos" / "beach.jpg").read_bytes()
    )
    photo.resize((320, 240)).save(root / "photos" / "beach-small.jpg", quality=80)
    forest = picture(2)
    forest.save(root / "photos" / "forest.png")
    forest.save(root / "photos" / "forest.webp", quality=85)
    picture(3).save(root / "photos" / "unrelated.jpg", quality=90)

    (root / "texts").mkdir()
    (root / "texts" / "report.txt").write_text(prose(1))
    (root / "texts" / "report-copy.txt").write_text(prose(1))
    (root / "texts" / "draft.txt").write_text(prose(1)[:-40] + " and a new closing sentence")
    (root / "texts" / "other.txt").write_text(prose(3))

    blob = random.Random(5).randbytes(50_000)
    (root / "data.bin").write_bytes(blob)
    (root / "data-copy.bin").write_bytes(blob)

    for name in HOSTILE:
        path = root / "hostile" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(HOSTILE_TEXT)


#: A folder's hostile name: markup, quotes, ``&``, a newline and a right-to-left override.
HOSTILE_DIR = "<img src=x onerror=\"window.pwned=3\"> 'q' &\nline\u202eexe"

#: The hostile name of the file only the larger of the near folders holds.
HOSTILE_BONUS = "bonus <b>\"x\" & 'y'\n\u202e.bin"

#: The sizes of the near folders' shared files (``music/summer`` and ``backup/summer-plus``).
SUMMER = (3000, 3001, 3002, 3003, 3004)

#: The size of the file only ``backup/summer-plus`` holds.
BONUS = 5000

#: The sizes of ``docs`` and its exact copy's files.
DOCS = {"notes/n0.bin": 2000, "notes/n1.bin": 2001, "readme.bin": 2500}


def make_folders(root: Path) -> None:
    """Write the library of folders under ``root``: ``docs`` and its exact copy
    :data:`HOSTILE_DIR`; ``music/summer`` and its copy with one file more,
    ``backup/summer-plus`` (their share 10/11, above the 90 % of near folders); a file
    of its own beside each, so that neither ``music`` nor ``backup`` stands for its folder.
    Every file holds random bytes of its own (no two are near by content)."""
    rng = random.Random(11)
    for name, size in DOCS.items():
        for folder in ("docs", HOSTILE_DIR):
            (root / folder / name).parent.mkdir(parents=True, exist_ok=True)
        data = rng.randbytes(size)
        (root / "docs" / name).write_bytes(data)
        (root / HOSTILE_DIR / name).write_bytes(data)
    (root / "music" / "summer").mkdir(parents=True)
    (root / "backup" / "summer-plus").mkdir(parents=True)
    for i, size in enumerate(SUMMER):
        data = rng.randbytes(size)
        (root / "music" / "summer" / f"track{i}.bin").write_bytes(data)
        (root / "backup" / "summer-plus" / f"track{i}.bin").write_bytes(data)
    (root / "backup" / "summer-plus" / HOSTILE_BONUS).write_bytes(rng.randbytes(BONUS))
    (root / "music" / "other.bin").write_bytes(rng.randbytes(1000))
    (root / "backup" / "unrelated.bin").write_bytes(rng.randbytes(1100))


@pytest.fixture(autouse=True)
def _own_places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "etc").mkdir(exist_ok=True)
    monkeypatch.setenv("CONFIGURATION_DIRECTORY", str(tmp_path / "etc"))
    monkeypatch.setenv("CACHE_DIRECTORY", str(tmp_path / "cache"))


def _scanned(base: Path, make: Callable[[Path], object]) -> Library:
    """A tree made by ``make`` in ``base``, scanned into a store beside it."""
    make(base / "library")
    with pytest.MonkeyPatch.context() as patch:
        (base / "etc").mkdir()
        patch.setenv("CONFIGURATION_DIRECTORY", str(base / "etc"))
        status = main(["scan", "--state", str(base / "state"), str(base / "library")])
    assert status == 0
    return Library(base / "library", base / "state")


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    """The library, scanned into a store (once per module)."""
    yield _scanned(tmp_path_factory.mktemp("report"), make_library)


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    """The library of folders, scanned into a store (once per module)."""
    yield _scanned(tmp_path_factory.mktemp("folders"), make_folders)


def dupes(library: Library) -> dict[str, object]:
    """What ``isccd dupes --near --json`` says of the library."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["dupes", "--near", "--json", "--state", str(library.state)]) == 0
    result: dict[str, object] = json.loads(out.getvalue())
    return result


def page_data(page: str) -> dict[str, Any]:
    """The data a report page embeds."""
    start = page.index('<script type="application/json" id="report-data">')
    start = page.index(">", start) + 1
    data: dict[str, Any] = json.loads(page[start : page.index("</script>", start)])
    return data
