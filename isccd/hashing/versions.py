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
restart, which is also when the workers load it.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

from isccd.extract import audio, image, probe, tags, text, video
from isccd.extract.tools import installed_version
from isccd.hashing.options import ALGORITHM, EXTRACTION_REVISION, META_SOURCE, CodeOptions

#: Components named by :data:`ALGORITHM` and :data:`EXTRACTION_REVISION`, and the bit length.
ISCC = ALGORITHM.partition("/")[0]
EXTRACTION = EXTRACTION_REVISION.partition("/")[0]
BITS = "bits"


def current_versions(options: CodeOptions | None = None) -> Mapping[str, str]:
    """The version each profile component has when files are coded with ``options`` now.

    Runs each external tool's ``-version`` once per binary (cached while the binary is
    unchanged), the three at once.

    Args:
        options: How files are coded (bit length, frame rate, which tools).

    Returns:
        Component name -> version, e.g. ``{"iscc": "1.5.0", "bits": "64", "fpcalc": "1.5.1",
        "ffmpeg": "missing", ...}``; a component that is not installed is
        :data:`~isccd.extract.tools.MISSING`.
    """
    options = options or CodeOptions()
    tools = options.tools
    # Each asks a program to start (about 50 ms, mostly loading its libraries): side by side.
    with ThreadPoolExecutor(max_workers=3, thread_name_prefix="isccd-versions") as asking:
        fpcalc, ffmpeg, ffprobe = asking.map(
            installed_version, (tools.fpcalc, tools.ffmpeg, tools.ffprobe)
        )
    return {
        ISCC: ALGORITHM.partition("/")[2],
        BITS: str(options.bits),
        EXTRACTION: EXTRACTION_REVISION.partition("/")[2],
        META_SOURCE: options.meta_source,
        **image.component_versions(),
        **text.component_versions(),
        audio.COMPONENT: fpcalc,
        video.COMPONENT: ffmpeg,
        video.FPS_COMPONENT: str(options.video_fps),
        probe.COMPONENT: ffprobe,
        tags.COMPONENT: tags.VERSION,
    }
