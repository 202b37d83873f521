"""The current version of every component unit profiles name.

A unit's profile (:attr:`isccd.model.Unit.profile`) is a space-separated list of
``name/version`` components: the ISCC algorithms, the bit length, isccd's extraction revision,
and the libraries and tools the unit depends on (``pillow/11.0.0``, ``fpcalc/1.5.1``,
``fps/5``), and for the Meta-Code where its fields come from (``meta/embedded``, ``meta/name``).
A unit not computed because a component is missing records the profile it was attempted with,
the component as ``name/missing`` (:attr:`isccd.model.FileIssue.profile`); a Meta-Code turned
off records ``meta/off``.

:func:`current_versions` says what each component is now; a stored unit (or skip) whose profile
names a component at another version is outdated, and only that unit of that file is computed
again. Every component :mod:`isccd.hashing` writes into a profile is a key here (a test computes
files of every mode and checks it).

Tools are looked up on ``PATH`` as the workers would run them, so a tool installed or upgraded
under a running daemon is seen when the versions are asked again (``systemctl reload``).
Libraries are reported as loaded in this process: one upgraded on disk takes effect at a
restart, which is also when the workers load it. Telling a library's version has a price
(Pillow's HEIF plugin is imported, the document extractors' installed metadata read: about
10 ms together), so a scan asks it only when a stored profile names the library.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor

from isccd.extract import audio, image, probe, tags, text, video
from isccd.extract.tools import MISSING, UNKNOWN, installed_version
from isccd.hashing.options import ALGORITHM, EXTRACTION_REVISION, META_SOURCE, CodeOptions

#: Components named by :data:`ALGORITHM` and :data:`EXTRACTION_REVISION`, and the bit length.
ISCC = ALGORITHM.partition("/")[0]
EXTRACTION = EXTRACTION_REVISION.partition("/")[0]
BITS = "bits"

__all__ = ["MISSING", "UNKNOWN", "Versions", "current_versions"]


class Versions(Mapping[str, str]):
    """Component name -> version, where the libraries' and external tools' versions may be
    asked only when first needed (:func:`current_versions` with ``lazy``).

    Which components there are is known at once (``in``, iteration and ``len`` ask nothing);
    the first value of a library asks its extractor's libraries, once; the first value of a
    tool asks all the tools, side by side, once. Safe to share between threads.
    """

    def __init__(
        self,
        fixed: Mapping[str, str],
        tools: Mapping[str, str],
        libraries: Mapping[str, Callable[[], Mapping[str, str]]] | None = None,
    ) -> None:
        """Args:
        fixed: The components known without asking anything.
        tools: Each tool's component -> the name (on ``PATH``) or path of the tool.
        libraries: Each library's component -> what tells its version, with those asked
            along with it (a cached function of its extractor, e.g.
            :func:`isccd.extract.image.component_versions`).
        """
        self._fixed = dict(fixed)
        self._libraries = {c: f for c, f in (libraries or {}).items() if c not in self._fixed}
        self._tools = {
            c: t for c, t in tools.items() if c not in self._fixed and c not in self._libraries
        }
        self._asked: dict[str, str] | None = None
        self._lock = threading.Lock()

    @property
    def asked(self) -> bool:
        """Whether the tools have been asked their versions."""
        return self._asked is not None

    def tool_versions(self) -> Mapping[str, str]:
        """The tools' versions: asked now (each starts a program, about 50 ms, mostly loading
        its libraries; the three side by side), or as they were asked before."""
        with self._lock:
            if self._asked is None:
                components, names = list(self._tools), list(self._tools.values())
                with ThreadPoolExecutor(
                    len(names) or 1, thread_name_prefix="isccd-versions"
                ) as ask:
                    self._asked = dict(
                        zip(components, ask.map(installed_version, names), strict=True)
                    )
            return self._asked

    def library_versions(self) -> dict[str, str]:
        """The libraries' versions: asked now, or as they were asked before."""
        return {c: ask()[c] for c, ask in self._libraries.items()}

    def __getitem__(self, component: str) -> str:
        found = self._fixed.get(component)
        if found is not None:
            return found
        ask = self._libraries.get(component)
        if ask is not None:
            return ask()[component]
        if component in self._tools:
            return self.tool_versions()[component]
        raise KeyError(component)

    def __contains__(self, component: object) -> bool:
        return component in self._fixed or component in self._libraries or component in self._tools

    def __iter__(self) -> Iterator[str]:
        yield from self._fixed
        yield from self._libraries
        yield from self._tools

    def __len__(self) -> int:
        return len(self._fixed) + len(self._libraries) + len(self._tools)

    def __repr__(self) -> str:
        tools = self._asked if self._asked is not None else dict.fromkeys(self._tools, "?")
        return f"Versions({self._fixed | self.library_versions() | tools!r})"


def current_versions(options: CodeOptions | None = None, *, lazy: bool = False) -> Versions:
    """The version each profile component has when files are coded with ``options`` now.

    Each external tool's ``-version`` runs once per binary (cached while the binary is
    unchanged), the three at once: now, or with ``lazy`` when a tool's version is first read.
    A scan reads one only to judge a stored unit whose profile names the tool (an audio or
    video file's): a scan of other files never starts the tools, and one that does asks them
    as they are then. The libraries' versions (Pillow and its HEIF plugin, the document
    extractors) are likewise asked now, or with ``lazy`` when first read.

    Args:
        options: How files are coded (bit length, frame rate, which tools).
        lazy: Ask the libraries' and the tools' versions when first read, not now.

    Returns:
        Component name -> version, e.g. ``{"iscc": "1.5.0", "bits": "64", "fpcalc": "1.5.1",
        "ffmpeg": "missing", ...}``; a component that is not installed is
        :data:`~isccd.extract.tools.MISSING`.
    """
    options = options or CodeOptions()
    tools = options.tools
    versions = Versions(
        {
            ISCC: ALGORITHM.partition("/")[2],
            BITS: str(options.bits),
            EXTRACTION: EXTRACTION_REVISION.partition("/")[2],
            META_SOURCE: options.meta_source,
            video.FPS_COMPONENT: str(options.video_fps),
            tags.COMPONENT: tags.VERSION,
        },
        {
            audio.COMPONENT: tools.fpcalc,
            video.COMPONENT: tools.ffmpeg,
            probe.COMPONENT: tools.ffprobe,
        },
        {
            **dict.fromkeys((image.PILLOW, image.HEIF), image.component_versions),
            **dict.fromkeys((text.TIKA, text.PDFIUM, text.CHARSET), text.component_versions),
        },
    )
    if not lazy:
        versions.library_versions()
        versions.tool_versions()
    return versions
