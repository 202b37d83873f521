"""The file-name fallback of the Meta-Code: the same name and stem as pathlib gives."""

from __future__ import annotations

from pathlib import PurePath

from hypothesis import example, given
from hypothesis import strategies as st

from isccd.extract.meta import file_name, name_from_filename

#: Paths made of the characters that matter to pathlib: separators, dots, dashes, underscores.
paths = st.text(alphabet=st.sampled_from("/.-_ab\u00e9\udcff"), max_size=20)


@given(paths)
@example("/root/dir/report.final.txt")
@example("dir/")
@example("dir/.")
@example("a/..")
@example(".bashrc")
@example("name.")
@example("")
def test_file_name_and_title_are_pathlibs(path: str) -> None:
    assert file_name(path) == PurePath(path).name
    expected = PurePath(path).stem.replace("-", " ").replace("_", " ")
    assert name_from_filename(path) == expected
