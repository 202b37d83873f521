"""Duplicate folders (``dupes --dirs``) against a real daemon: an album of real images, its
copy under other names, a copy wrapped in a folder holding only it, a copy with one image
more and a re-encoded copy; the exact group at its highest level, the near group around its
centre with the shares and the files named that the tree says, ``--share``, ``--root``, CSV,
the same answer read from the store; bad ``dirs`` requests and bad flags refused while the
daemon keeps answering; a folder name with a newline and an escape sequence shown escaped."""

from __future__ import annotations

import asyncio
import csv
import io
import itertools
import json
import os
import random
import shutil
import socket
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from isccd.hashing import compute_record
from isccd.match import Thresholds, content_apart, near_unit
from isccd.model import UnitType
from tests.cli.test_engine import COMMAND
from tests.schemas import check

from .conftest import Daemon, daemons

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow


def isccd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, *args], capture_output=True, text=True, timeout=120, check=False
    )


def blocks(seed: int) -> Image.Image:
    """An image of 8 x 8 blocks of random colours: unlike any other seed's, even at 32 x 32."""
    rng = random.Random(seed)
    small = Image.new("RGB", (8, 8))
    small.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256))
                   for _ in range(64)])  # fmt: skip
    return small.resize((160, 160), Image.Resampling.NEAREST)


def save(image: Image.Image, path: Path, **options: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = "PNG" if path.suffix == ".png" else "JPEG"
    image.save(path, format=fmt, **options)


#: The album: its images, by their path in it, and the seed of each.
ALBUM = {"a.jpg": 1, "b.png": 2, "c.jpg": 3, "sub/d.jpg": 4, "sub/e.png": 5}
#: The names the renamed copy gives some of them (and its subfolder's other name).
RENAMED = {"a.jpg": "IMG_0001.jpg", "c.jpg": "c.jpg", "b.png": "b.png",
           "sub/d.jpg": "more/IMG_0004.jpg", "sub/e.png": "more/e.png"}  # fmt: skip
#: The one image more of the copy with an extra file.
EXTRA = "sub/z-extra.jpg"
#: The wrapped copy's image that is a hardlink of the album's.
HARDLINKED = "c.jpg"
#: The re-encoded copy: each image saved in the other format.
REENCODED = {"a.jpg": "a.png", "b.png": "b.jpg", "c.jpg": "c.png",
             "sub/d.jpg": "sub/d.png", "sub/e.png": "sub/e.jpg"}  # fmt: skip


@dataclass
class Library:
    daemon: Daemon
    root: Path
    #: Every re-encoded image is a near duplicate of its original by its Image-Code.
    reencoded_near: bool

    def folder(self, name: str) -> str:
        return str(self.root / name)

    def size(self, name: str) -> int:
        return sum(p.stat().st_size for p in (self.root / name).rglob("*") if p.is_file())


def build(root: Path) -> bool:
    """The tree; whether the re-encoded images are near duplicates of the originals."""
    album = root / "album"
    for name, seed in ALBUM.items():
        save(blocks(seed), album / name, **({"quality": 90} if name.endswith(".jpg") else {}))
    for name, other in RENAMED.items():
        (root / "copy-2019" / other).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(album / name, root / "copy-2019" / other)
    (root / "copy-2019" / "Thumbs.db").touch()  # an empty file is no content
    shutil.copytree(album, root / "wrap" / "album")  # wrap holds only it
    # A hardlink of the album's own image: removing the wrapped copy would not free it.
    (root / "wrap" / "album" / HARDLINKED).unlink()
    (root / "wrap" / "album" / HARDLINKED).hardlink_to(album / HARDLINKED)
    shutil.copytree(album, root / "extra")
    save(blocks(99), root / "extra" / EXTRA, quality=90)
    for name, other in REENCODED.items():
        with Image.open(album / name) as image:
            save(image.convert("RGB"), root / "reenc" / other, quality=70)
    # The images are unlike each other: no near relation mixes them up.
    policy = Thresholds()
    originals = [album / n for n in ALBUM] + [root / "extra" / EXTRA]
    units = {p: {u.type: u.digest for u in compute_record(str(p)).units} for p in originals}
    for x, y in itertools.combinations(originals, 2):
        assert content_apart(units[x], units[y], policy), f"{x.name} and {y.name} are alike"
    near = True
    for name, other in REENCODED.items():
        mine = units[album / name][UnitType.IMAGE]
        theirs = {u.type: u.digest for u in compute_record(str(root / "reenc" / other)).units}
        near = near and near_unit(UnitType.IMAGE, mine, theirs[UnitType.IMAGE], policy) is not None
    return near


async def _synced(daemon: Daemon) -> None:
    async with await daemon.client() as client:
        await client.sync()


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    with daemons() as make:
        daemon = make(ISCCD_WATCH__SETTLE="0.1")
        root = Path(os.path.realpath(daemon.root))
        reencoded_near = build(root)
        daemon.start()
        asyncio.run(_synced(daemon))
        yield Library(daemon, root, reencoded_near)


def dirs(library: Library, *args: str, where: tuple[str, ...] = ()) -> dict[str, Any]:
    """``dupes --dirs --json`` of the library's daemon (or ``where`` else), checked against
    its schema."""
    return dirs_of(library.daemon, *args, where=where)


def dirs_of(daemon: Daemon, *args: str, where: tuple[str, ...] = ()) -> dict[str, Any]:
    where = where or ("--socket", str(daemon.socket))
    result = isccd("dupes", "--dirs", "--json", *args, *where)
    assert result.returncode == 0, result.stderr
    answer: dict[str, Any] = json.loads(result.stdout)
    check("dirs", answer)
    return answer


def paths(group: dict[str, Any]) -> list[str]:
    return [m["path"] for m in group["members"]]


def test_the_exact_group_is_the_album_its_copy_and_the_folder_wrapping_one(
    library: Library,
) -> None:
    answer = dirs(library)
    [group] = answer["groups"]
    assert group["kind"] == "exact"
    # At the highest level: the wrapping folder, not the album inside it; no group of the
    # subfolders.
    assert paths(group) == [library.folder(n) for n in ("album", "copy-2019", "wrap")]
    album = library.size("album")
    for member in group["members"]:
        assert (member["files"], member["size"]) == (len(ALBUM), album)
        assert member["root"] == str(library.root) and member["share"] == 1
        assert member["unmatched"] == member["missing"] == []
    # Keeping the album frees both copies, but for the hardlink of one of its images.
    freed = 2 * album - (library.root / "album" / HARDLINKED).stat().st_size
    assert group["reclaimable"] == answer["reclaimable"] == freed
    assert (answer["folders"], answer["truncated"]) == (3, False)


def test_near_groups_name_the_extra_file_and_the_re_encoded_album(library: Library) -> None:
    answer = dirs(library, "--near")
    exact, near = answer["groups"]
    assert exact == dirs(library)["groups"][0]
    assert near["kind"] == "near" and near["reclaimable"] == 0
    # The copy with one image more is near the four other albums by 10 of their 11 files
    # (the re-encoded one too, if its images are near their originals), and, the folder near
    # the most of them and the largest, their centre.
    others = ["album", "copy-2019", "wrap"] + (["reenc"] if library.reencoded_near else [])
    assert paths(near) == [library.folder("extra"), *sorted(library.folder(n) for n in others)]
    centre, *members = near["members"]
    assert (centre["files"], centre["share"]) == (len(ALBUM) + 1, 1)
    for member in members:
        assert member["share"] == pytest.approx(10 / 11)
        assert (member["unmatched"], member["unmatched_count"]) == ([], 0)
        assert (member["missing"], member["missing_count"]) == ([EXTRA], 1)
    assert answer["folders"] == 1 + len(others)
    assert answer["reclaimable"] == exact["reclaimable"]


def test_a_higher_share_leaves_the_re_encoded_album_near_the_others_by_all_its_files(
    library: Library,
) -> None:
    if not library.reencoded_near:
        pytest.fail("the re-encoded images are not near their originals by their Image-Codes")
    answer = dirs(library, "--near", "--share", "95")
    exact, near = answer["groups"]
    assert exact["kind"] == "exact"
    # 10 of 11 is below 95 %: the copy with an extra file is no near duplicate; the
    # re-encoded album, near all three copies, is their centre, every file matched.
    assert paths(near) == [library.folder(n) for n in ("reenc", "album", "copy-2019", "wrap")]
    for member in near["members"]:
        assert member["share"] == 1
        assert member["unmatched"] == member["missing"] == []
        assert member["unmatched_count"] == member["missing_count"] == 0


def test_csv_and_text_say_what_json_says(library: Library) -> None:
    socket_ = ("--socket", str(library.daemon.socket))
    answer = dirs(library, "--near")
    result = isccd("dupes", "--dirs", "--near", "--csv", *socket_)
    assert result.returncode == 0, result.stderr
    header, *rows = csv.reader(io.StringIO(result.stdout))
    assert header == ["group", "kind", "reclaimable", "member", "path", "root", "host",
                      "files", "size", "share", "unmatched", "missing", "centre"]  # fmt: skip
    expected = [
        [str(g), group["kind"], str(group["reclaimable"]), str(m), member["path"],
         str(member["files"]), member["missing_count"],
         "true" if group["kind"] == "near" and m == 1 else "false"]
        for g, group in enumerate(answer["groups"], start=1)
        for m, member in enumerate(group["members"], start=1)
    ]  # fmt: skip
    assert len(rows) == sum(len(g["members"]) for g in answer["groups"])
    assert [[r[0], r[1], r[2], r[3], r[4], r[7], int(r[11]), r[12]] for r in rows] == expected
    text = isccd("dupes", "--dirs", "--near", *socket_)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].startswith(f"exact folders: {len(ALBUM)} files each")
    assert f"  {library.folder('extra')}/  centre" in text.stdout
    # Each of the centre's members is missing its extra image.
    members = len(answer["groups"][1]["members"]) - 1
    assert [line.strip() for line in lines].count(f"- {EXTRA}") == members
    assert f"  {library.folder('album')}/  90% shared with #1" in text.stdout
    assert lines[-1].startswith(f"2 groups, {answer['folders']} folders, ")


def test_the_store_read_directly_gives_the_same_answer(library: Library) -> None:
    store = ("--state", str(library.daemon.state))
    for args in ((), ("--near",), ("--near", "--share", "95")):
        assert dirs(library, *args, where=store) == dirs(library, *args)


def test_root_limits_the_groups_to_those_with_a_folder_at_under_or_above_it(
    library: Library,
) -> None:
    everything = dirs(library, "--near")["groups"]
    exact, near = everything
    assert dirs(library, "--near", "--root", library.folder("extra"))["groups"] == [near]
    assert dirs(library, "--near", "--root", library.folder("wrap"))["groups"] == everything
    # A subfolder of a copied tree is in its tree's groups.
    assert dirs(library, "--root", library.folder("album/sub"))["groups"] == [exact]
    assert dirs(library, "--near", "--root", library.folder("wrap/album"))["groups"] == everything
    nothing = dirs(library, "--root", library.folder("reenc"))
    assert nothing == {"groups": [], "truncated": False, "folders": 0, "reclaimable": 0}
    assert dirs(library, "--root", library.folder("copy-2019"))["groups"] == [exact]
    # The root as another path to it names the same folders.
    link = library.daemon.base / "link-to-extra"
    link.symlink_to(library.root / "extra")
    assert dirs(library, "--near", "--root", str(link))["groups"] == [near]
    text = isccd("dupes", "--dirs", "--root", library.folder("reenc"),
                 "--socket", str(library.daemon.socket))  # fmt: skip
    assert (text.returncode, text.stdout) == (0, "no duplicate folders\n")


def raw(daemon: Daemon, *requests: dict[str, Any]) -> list[dict[str, Any]]:
    """Each request's reply, sent as a line of its own over one connection."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(daemon.socket))
        replies = []
        data = b""
        for request in requests:
            sock.sendall(json.dumps(request).encode() + b"\n")
            while b"\n" not in data:
                chunk = sock.recv(1 << 16)
                assert chunk, "the daemon closed the connection"
                data += chunk
            line, data = data.split(b"\n", 1)
            replies.append(json.loads(line))
        return replies


def test_bad_dirs_requests_are_refused_and_the_daemon_answers_on(library: Library) -> None:
    bad: list[dict[str, Any]] = [
        {"share": 0}, {"share": 2}, {"share": "x"}, {"share": True}, {"share": -0.5},
        {"folders": 1}, {"near": "yes"}, {"limit": 0},
    ]  # fmt: skip
    requests = [{"id": i, "cmd": "dirs", **args} for i, args in enumerate(bad, start=1)]
    good = {"id": "last", "cmd": "dirs", "near": True, "share": 0.95}
    replies = raw(library.daemon, *requests, good)
    for args, reply in zip(bad, replies[:-1], strict=True):
        assert reply.get("error", {}).get("code") == "invalid_argument", (args, reply)
        assert "result" not in reply
    assert "folders" in replies[bad.index({"folders": 1})]["error"]["message"]
    assert replies[-1]["id"] == "last"
    check("dirs", replies[-1]["result"])
    assert replies[-1]["result"] == dirs(library, "--near", "--share", "95")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--dirs", "--near", "--share", "0"), "0 is not above 0 and at most 100"),
        (("--dirs", "--near", "--share", "101"), "101 is not above 0 and at most 100"),
        (("--dirs", "--near", "--share", "x"), "'x' is not a percentage"),
        (("--dirs", "--unit", "text"), "--unit does not apply to --dirs"),
        (("--dirs", "--min-size", "1K"), "--min-size does not apply to --dirs"),
        (("--dirs", "--watchlist", "x"), "--dirs and --watchlist do not go together"),
        (("--dirs", "--share", "50"), "--share applies to --dirs --near only"),
        (("--near", "--share", "50"), "--share applies to --dirs --near only"),
    ],
)
def test_bad_flags_are_usage_errors(library: Library, args: tuple[str, ...], message: str) -> None:
    result = isccd("dupes", *args, "--socket", str(library.daemon.socket))
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert message in result.stderr and result.stdout == ""


ODD = "odd\nname\x1b[31m"


def test_a_folder_name_with_a_newline_and_an_escape_is_shown_escaped(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon(ISCCD_WATCH__SETTLE="0.1")
    root = Path(os.path.realpath(daemon.root))
    for folder in ("plain", ODD):
        (root / folder / "inner").mkdir(parents=True)
        (root / folder / "notes.txt").write_text("Notes that two folders hold alike.\n" * 20)
        (root / folder / "inner" / "list.txt").write_text("A list: eggs, milk, bread.\n" * 20)
    daemon.start()
    asyncio.run(_synced(daemon))
    socket_ = ("--socket", str(daemon.socket))
    answer = json.loads(isccd("dupes", "--dirs", "--json", *socket_).stdout)
    check("dirs", answer)
    [group] = answer["groups"]
    assert paths(group) == sorted([str(root / "plain"), str(root / ODD)])
    text = isccd("dupes", "--dirs", *socket_)
    assert text.returncode == 0, text.stderr
    assert f"  {root}/odd\\nname\\x1b[31m/" in text.stdout
    assert "\x1b" not in text.stdout and ODD not in text.stdout
    assert len(text.stdout.splitlines()) == 4  # the head, two folders, the totals
    rows = list(csv.reader(io.StringIO(isccd("dupes", "--dirs", "--csv", *socket_).stdout)))
    assert sorted(r[4] for r in rows[1:]) == paths(group)  # CSV quotes, it does not escape


def test_a_limit_cuts_the_groups_not_the_totals(library: Library) -> None:
    everything = dirs(library, "--near")
    cut = dirs(library, "--near", "--limit", "1")
    assert cut["groups"] == everything["groups"][:1] and cut["truncated"] is True
    assert (cut["folders"], cut["reclaimable"]) == (everything["folders"],
                                                     everything["reclaimable"])  # fmt: skip
    text = isccd("dupes", "--dirs", "--near", "--limit", "1",
                 "--socket", str(library.daemon.socket))  # fmt: skip
    assert "(only the first 1 groups shown: raise --limit)" in text.stdout
    assert text.stdout.splitlines()[-1].startswith(f"1+ groups, {everything['folders']} folders")


def test_host_keeps_the_groups_of_that_host(library: Library) -> None:
    everything = dirs(library, "--near")
    [host] = {m["host"] for g in everything["groups"] for m in g["members"]}
    assert dirs(library, "--near", "--host", host) == everything
    assert dirs(library, "--near", "--host", "no-such-host")["groups"] == []


def test_a_folder_made_equal_on_disk_joins_the_exact_group(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon(ISCCD_WATCH__SETTLE="0.1")
    root = Path(os.path.realpath(daemon.root))
    album = root / "album"
    for name, seed in list(ALBUM.items())[:3]:
        save(blocks(seed), album / name)
    shutil.copytree(album, root / "copy")
    save(blocks(99), root / "copy" / "new.jpg")
    daemon.start()
    asyncio.run(_synced(daemon))
    before = dirs_of(daemon, "--near", "--share", "50")
    [near] = before["groups"]
    assert (near["kind"], paths(near)) == ("near", [str(root / "copy"), str(album)])
    assert near["members"][1]["missing"] == ["new.jpg"]
    (root / "copy" / "new.jpg").unlink()
    asyncio.run(_synced(daemon))
    [exact] = dirs_of(daemon, "--near", "--share", "50")["groups"]
    assert (exact["kind"], paths(exact)) == ("exact", [str(album), str(root / "copy")])
    # And apart again once a file differs.
    save(blocks(7), root / "copy" / "a.jpg")
    asyncio.run(_synced(daemon))
    assert dirs_of(daemon)["groups"] == []
