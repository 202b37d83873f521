"""The external tools' versions, remembered between processes.

A tool says its version when it runs (``ffmpeg -version``: about 50 ms, most of it loading its
200 shared libraries), and the versions go into every profile (:mod:`isccd.hashing.versions`).
Asking the three tools at every command's start cost each ``isccd scan`` three processes and
about 0.15 s of CPU. :func:`installed_versions` keeps what they said in a file of the cache
directory, ``tool-versions.json``, and asks a tool again as soon as anything its run loads may
have changed:

- each file it loads (:func:`isccd.extract.tools.loaded_files`: the executable, its dynamic
  loader and every shared library, as the loader resolves them) has the identity it had when
  the tool was asked: device, inode, size, modification and change time (the change time is
  set by the kernel at every change of the file or its metadata: no user can set it back);
- so have the loader's configuration, ``/etc/ld.so.cache`` (rewritten whenever libraries are
  installed) and ``/etc/ld.so.preload``, and the environment it reads, ``LD_LIBRARY_PATH`` and
  ``LD_PRELOAD``.

A tool whose files cannot be told (a script runs whatever it names) and a version that could not
be read (``unknown``) are never remembered: they are asked every time, as without the file. The
file is written whole under another name and renamed over the old one, so a reader sees either;
a file that cannot be read, or whose content is not exactly what this module writes, is ignored
(and replaced), never trusted nor an error.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from isccd.extract.tools import MISSING, find_tool, installed_version, loaded_files

_log = logging.getLogger("isccd.hashing")

#: The file in the cache directory.
CACHE_FILE = "tool-versions.json"
#: Raised when the file's layout changes: a file of another layout is ignored.
FORMAT = 1
#: The dynamic loader's configuration files, whose change may change the libraries a tool loads.
LOADER_FILES = ("/etc/ld.so.cache", "/etc/ld.so.preload")
#: The environment the dynamic loader reads.
LOADER_ENV = ("LD_LIBRARY_PATH", "LD_PRELOAD")
#: A version as :func:`isccd.extract.tools.tool_version` reads it: a profile component's word.
_VERSION = re.compile(r"\S+")
#: A version not remembered: the tool printed none, or could not be asked (a timeout under load).
_UNKNOWN = "unknown"

#: A file's identity: device, inode, size, modification and change time (ns); ``None``: absent.
Identity = list[int] | None
#: A remembered tool: its version, the loader's environment and each file's identity.
_Entry = dict[str, Any]


def installed_versions(names: Sequence[str], cache_dir: Path | None = None) -> list[str]:
    """The version of each tool, as :func:`isccd.extract.tools.installed_version` says it,
    :data:`~isccd.extract.tools.MISSING` for one not installed.

    The tools not remembered unchanged in ``cache_dir`` are asked side by side (each start is
    about 50 ms, mostly loading libraries), and what they say is remembered there.

    Args:
        names: Names (looked up on ``PATH``) or paths of the tools.
        cache_dir: The directory of the file (created when missing); ``None``: ask every tool.
    """
    paths = [find_tool(name) for name in names]
    known = _read(cache_dir / CACHE_FILE) if cache_dir is not None else {}
    env = {name: os.environ.get(name) for name in LOADER_ENV}
    seen: dict[str, Identity] = {}  # the tools share most of their libraries
    versions = [_remembered(known.get(p), env, seen) if p else MISSING for p in paths]
    ask = sorted({p for p, v in zip(paths, versions, strict=True) if p is not None and v is None})
    asked: dict[str, tuple[str, _Entry | None]] = {}
    if ask:
        probe = _probe_remembering if cache_dir is not None else _probe
        with ThreadPoolExecutor(len(ask), thread_name_prefix="isccd-versions") as asking:
            asked = dict(zip(ask, asking.map(probe, ask), strict=True))
    fresh = {path: entry for path, (_, entry) in asked.items() if entry is not None}
    if cache_dir is not None and fresh:
        _write(cache_dir, {**known, **fresh})
    return [
        v if v is not None else asked[p][0] if p is not None else MISSING
        for p, v in zip(paths, versions, strict=True)
    ]


def _remembered(
    entry: _Entry | None, env: Mapping[str, str | None], seen: dict[str, Identity]
) -> str | None:
    """The entry's version if nothing the tool loads has changed since, else ``None``.

    Args:
        entry: What was remembered of the tool.
        env: The loader's environment now.
        seen: The identities read so far, by path (filled in).
    """
    if entry is None or entry["env"] != env:
        return None
    files: list[list[Any]] = entry["files"]
    for name, identity in files:
        if name not in seen:
            seen[name] = _identity(name)
        if seen[name] != identity:
            return None
    version: str = entry["version"]
    return version


def _probe(path: str) -> tuple[str, _Entry | None]:
    """Ask the tool its version, not to be remembered."""
    return installed_version(path), None


def _probe_remembering(path: str) -> tuple[str, _Entry | None]:
    """Ask the tool its version, and make the entry to remember it by: ``None`` when it must
    not be remembered (see the module's docstring), or when a file changed while it was asked."""
    files = loaded_files(path)
    if files is None:
        return _probe(path)
    names = list(dict.fromkeys([*files, *LOADER_FILES]))
    before = [_identity(name) for name in names]
    env = {name: os.environ.get(name) for name in LOADER_ENV}
    version, _ = _probe(path)
    if version in (MISSING, _UNKNOWN) or [_identity(name) for name in names] != before:
        return version, None
    return version, {
        "version": version,
        "env": env,
        "files": [[name, identity] for name, identity in zip(names, before, strict=True)],
    }


def _identity(path: str) -> Identity:
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _read(path: Path) -> dict[str, _Entry]:
    """The well-formed entries of the file, by the tool's path; none if it is unreadable or not
    of this :data:`FORMAT`."""
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        _log.debug("tool_versions_unreadable", extra={"path": str(path), "error": str(exc)})
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return {}
    tools = data.get("tools")
    if not isinstance(tools, dict):
        return {}
    return {path: entry for path, entry in tools.items() if _well_formed(entry)}


def _well_formed(entry: object) -> bool:
    """Whether ``entry`` is exactly what :func:`_probe_remembering` makes."""
    if not isinstance(entry, dict) or set(entry) != {"version", "env", "files"}:
        return False
    version, env, files = entry["version"], entry["env"], entry["files"]
    return (
        isinstance(version, str)
        and _VERSION.fullmatch(version) is not None  # one word, as tools' versions are read
        and version not in (MISSING, _UNKNOWN)
        and isinstance(env, dict)
        and set(env) == set(LOADER_ENV)
        and all(value is None or isinstance(value, str) for value in env.values())
        and isinstance(files, list)
        and bool(files)
        and all(_well_formed_file(file) for file in files)
    )


def _well_formed_file(file: object) -> bool:
    if not isinstance(file, list) or len(file) != 2 or not isinstance(file[0], str):
        return False
    identity = file[1]
    return identity is None or (
        isinstance(identity, list)
        and len(identity) == 5
        and all(isinstance(n, int) and not isinstance(n, bool) for n in identity)
    )


def _write(cache_dir: Path, tools: Mapping[str, _Entry]) -> None:
    """Replace the file at once (written under a temporary name, then renamed); a directory
    that cannot be written only means asking the tools again next time."""
    tmp: str | None = None
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{CACHE_FILE}.", dir=cache_dir)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"format": FORMAT, "tools": tools}, f)
        Path(tmp).replace(cache_dir / CACHE_FILE)
    except OSError as exc:
        _log.debug("tool_versions_unwritable", extra={"dir": str(cache_dir), "error": str(exc)})
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
