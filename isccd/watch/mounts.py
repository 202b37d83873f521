"""Which filesystem a path lives on, from ``/proc/self/mountinfo``, and whether inotify sees it.

inotify reports only changes made through this kernel. On network filesystems (NFS, SMB, 9p,
Ceph...) and most FUSE filesystems (sshfs, rclone, s3fs, mergerfs...) changes made elsewhere are
never reported, so such roots and mounts below a root are polled instead. ``fuseblk`` (NTFS,
exFAT on a local disk) is local: every change goes through this kernel.

Parsing and lookup are pure; only :func:`read_mountinfo` touches the disk.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from isccd.fspath import is_under

#: Filesystem types whose changes may not pass through this kernel.
REMOTE_TYPES = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "9p",
        "afs",
        "ceph",
        "glusterfs",
        "lustre",
        "gpfs",
        "ncpfs",
        "coda",
        "davfs",
        "virtiofs",
        "fuse",
    }
)

#: FUSE filesystems that sit on a local block device: inotify sees their changes.
LOCAL_FUSE_TYPES = frozenset({"fuseblk"})


@dataclass(frozen=True, slots=True)
class Mount:
    """One line of mountinfo: where a filesystem is mounted and its type."""

    mount_point: str
    fstype: str
    source: str


def is_remote(fstype: str) -> bool:
    """True when inotify cannot be trusted to see every change on this filesystem type."""
    if fstype in LOCAL_FUSE_TYPES:
        return False
    return fstype in REMOTE_TYPES or fstype.startswith("fuse.")


_ESCAPE = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str) -> list[Mount]:
    """Parse the contents of ``/proc/<pid>/mountinfo`` (see proc(5)), in mount order."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(" ")
        try:
            sep = fields.index("-", 6)
        except ValueError:
            continue  # not a mountinfo line
        if len(fields) < sep + 3:
            continue
        mounts.append(Mount(_unescape(fields[4]), fields[sep + 1], _unescape(fields[sep + 2])))
    return mounts


def mount_of(path: str, mounts: list[Mount]) -> Mount | None:
    """The mount a resolved absolute path lives on: the deepest mount point above it (the
    latest mounted when several share one)."""
    best: Mount | None = None
    for mount in mounts:
        if is_under(path, mount.mount_point) and (
            best is None or len(mount.mount_point) >= len(best.mount_point)
        ):
            best = mount
    return best


def mounts_below(path: str, mounts: list[Mount]) -> list[Mount]:
    """Mounts strictly below a resolved absolute path, the latest for each mount point."""
    latest: dict[str, Mount] = {}
    for mount in mounts:
        if mount.mount_point != path and is_under(mount.mount_point, path):
            latest[mount.mount_point] = mount
    return list(latest.values())


def read_mountinfo(source: Path = Path("/proc/self/mountinfo")) -> list[Mount]:
    """The current mounts, or none when mountinfo cannot be read (then nothing is polled)."""
    try:
        return parse_mountinfo(source.read_text(encoding="utf-8", errors="surrogateescape"))
    except OSError:
        return []


def resolve(path: str) -> str:
    """The real path a root stands for (mount points are compared with resolved paths)."""
    return os.path.realpath(path)
