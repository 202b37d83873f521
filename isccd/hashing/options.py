"""The options of :func:`~isccd.hashing.compute_record` and the state of one file's run."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar

from isccd.errors import ToolMissingError
from isccd.extract.image import DEFAULT_MAX_PIXELS
from isccd.extract.text import MAX_CHARS
from isccd.extract.tools import MISSING, ToolOptions
from isccd.extract.video import DEFAULT_FPS
from isccd.hashing.issues import issue_from_exception
from isccd.model import FileIssue, UnitType

if TYPE_CHECKING:
    from isccd.hashing.content import Described

#: The algorithms every unit is computed with (conformant to iscc-core 1.5.0).
ALGORITHM = "iscc/1.5.0"

#: Revision of isccd's extraction recipes (normalization, metadata mapping, tool arguments).
#: Raise it when a change alters what an extractor produces, so stored units are recomputed.
EXTRACTION_REVISION = "isccd-extract/1"

#: The profile component saying where a Meta-Code's name and description come from: the file's
#: ``embedded`` metadata (falling back to its name), its ``name`` only, or nowhere (``off``: no
#: Meta-Code; a skip records it). Changing ``meta`` or ``extract_meta`` outdates the Meta-Codes.
META_SOURCE = "meta"

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class CodeOptions:
    """How files are coded. The defaults are the ISCC SDK 0.9.7's.

    Attributes:
        bits: Length of each unit, a multiple of 32 from 64 to 256.
        wide: Make a WIDE ISCC-CODE (128-bit Data and Instance) for files without Meta- and
            Content-Code, when ``bits >= 128``.
        meta: Compute the Meta-Code.
        extract_meta: Take the Meta-Code's name and description from the file's embedded
            metadata (else from the file name only).
        max_image_pixels: Larger images are refused before decoding (decompression bombs).
        max_text_chars: Text extraction stops here (the SDK's fixed 10,000,000).
        video_fps: Frames per second the video signature samples.
        read_size: Bytes per read of the Data/Instance pass (memory used for the pass).
        noatime: Do not update files' access times when allowed.
        tools: External tools, their timeout and output limit, and the temporary directory.
    """

    bits: int = 64
    wide: bool = False
    meta: bool = True
    extract_meta: bool = True
    max_image_pixels: int = DEFAULT_MAX_PIXELS
    max_text_chars: int = MAX_CHARS
    video_fps: int = DEFAULT_FPS
    read_size: int = 2 * 1024 * 1024
    noatime: bool = True
    tools: ToolOptions = field(default_factory=ToolOptions)

    @property
    def meta_source(self) -> str:
        """Where the Meta-Code's fields come from: ``embedded``, ``name`` or ``off``."""
        if not self.meta:
            return "off"
        return "embedded" if self.extract_meta else "name"


class Run:
    """Collects the results of one file's stages."""

    def __init__(self, options: CodeOptions) -> None:
        self.options = options
        self.issues: list[FileIssue] = []
        self.timings: list[tuple[str, float]] = []
        #: The embedded metadata read along with the content, kept for the Meta-Code even when
        #: the Content-Code then fails (so that it is not read twice).
        self.described: Described | None = None

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings.append((name, round((time.perf_counter() - start) * 1000.0, 3)))

    def issue(self, stage: str, exc: BaseException) -> None:
        issue = issue_from_exception(stage, exc)
        if isinstance(exc, ToolMissingError) and stage in _UNIT_STAGES:
            # The profile the unit would have had, with the component as missing: once it is
            # installed, the profile is outdated and the unit computed (see FileIssue.profile).
            # Without a named component, only a new extraction revision tries again.
            missing = (f"{exc.component}/{MISSING}",) if exc.component else ()
            issue = replace(issue, profile=self.profile(*missing, EXTRACTION_REVISION))
        self.issues.append(issue)

    def guarded(self, stage: str, compute: Callable[[], _T]) -> _T | None:
        """Run one stage; any failure becomes an issue of that stage instead of an exception."""
        with self.stage(stage):
            try:
                return compute()
            except Exception as exc:
                # Decoders and tools fail in ways no list of exception types covers; a bad
                # file must cost only this stage, never the record or the worker.
                self.issue(stage, exc)
                return None

    def profile(self, *parts: str) -> str:
        """The profile of a unit made by ``parts`` (``name/version`` components, or ``""``)."""
        return " ".join((ALGORITHM, f"bits/{self.options.bits}", *(p for p in parts if p)))


_UNIT_STAGES = frozenset(t.value for t in UnitType)
