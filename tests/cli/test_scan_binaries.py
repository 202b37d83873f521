"""``isccd scan`` of random binaries: Meta-less generic data, never an error, exit status 0.

About 1 in 256 random files begins or ends like some format in a signature database (a ``{``,
an MPEG end code, two bytes of MPEG audio sync); they must not be sent to a decoder. And where
the content does show a format's signature (a random file that begins like a JPEG), a decoder
that then fails means the guess was wrong: a warning, not an error.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.cli.test_index_cli import run
from tests.extract.media import needs_ffmpeg

#: Beginnings and ends that weak signatures take for a format, and strong signatures that
#: random content then fails to live up to.
PREFIXES = (
    *(b"{", b"\xff\xfb\x90\x00", b"BM", b"if", b"\xff\xfe", b"\xfe\xff"),
    *(b"\xff\xd8\xff\xe0", b"OggS\x00\x02"),
)
SUFFIXES = (b"\x00\x00\x01\xb7", b"\x00\x00\x01\xb9")


@needs_ffmpeg
@pytest.mark.slow
def test_random_binaries_scan_without_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(9)
    tree = tmp_path / "blobs"
    tree.mkdir()
    for i in range(300):
        data = rng.randbytes(rng.randrange(100, 8192))
        if i < len(PREFIXES) * 4:
            data = PREFIXES[i % len(PREFIXES)] + data
        elif i < len(PREFIXES) * 4 + len(SUFFIXES) * 4:
            data += SUFFIXES[i % len(SUFFIXES)]
        (tree / (f"b{i}.bin" if i % 2 else f"b{i}")).write_bytes(data)
    status, report, err = run(["scan", "--state", str(tmp_path / "state"), str(tree)], capsys)
    [root] = report["roots"]
    assert (status, root["errors"], root["added"]) == (0, 0, 300), (report, err)
