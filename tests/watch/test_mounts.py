"""Mount table parsing and the choice between inotify and polling."""

from __future__ import annotations

from pathlib import Path

import pytest

from isccd.watch.mounts import (
    Mount,
    is_remote,
    mount_of,
    mounts_below,
    parse_mountinfo,
    read_mountinfo,
)

# Lines in the format of proc(5), including optional fields and an escaped space.
MOUNTINFO = """\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 0:40 / /srv rw,relatime shared:5 - ext4 /dev/vdb rw
31 30 0:41 / /srv/nfs\\040share rw,relatime shared:6 master:2 - nfs4 fs:/export rw,vers=4.2
32 30 0:42 / /srv/photos/remote rw,nosuid - fuse.sshfs me@host:/p rw,user_id=0
33 30 0:43 / /srv/usb rw - fuseblk /dev/sdc1 rw
34 22 0:44 / /mnt rw - tmpfs tmpfs rw
35 22 0:45 / /mnt rw - cifs //nas/share rw
garbage line
"""


def test_parse_reads_point_type_and_source_with_escapes() -> None:
    mounts = parse_mountinfo(MOUNTINFO)
    assert mounts[0] == Mount("/", "ext4", "/dev/vda")
    assert mounts[2] == Mount("/srv/nfs share", "nfs4", "fs:/export")
    assert len(mounts) == 7


@pytest.mark.parametrize(
    ("path", "fstype"),
    [
        ("/", "ext4"),
        ("/home/ann", "ext4"),
        ("/srv", "ext4"),
        ("/srvx", "ext4"),  # a shared prefix is not a parent
        ("/srv/nfs share/docs", "nfs4"),
        ("/srv/photos/remote", "fuse.sshfs"),
        ("/mnt/x", "cifs"),  # the later of two mounts on one point hides the first
    ],
)
def test_mount_of_is_the_deepest_latest_mount(path: str, fstype: str) -> None:
    mount = mount_of(path, parse_mountinfo(MOUNTINFO))
    assert mount is not None
    assert mount.fstype == fstype


def test_mounts_below_a_root() -> None:
    below = {m.mount_point: m.fstype for m in mounts_below("/srv", parse_mountinfo(MOUNTINFO))}
    assert below == {
        "/srv/nfs share": "nfs4",
        "/srv/photos/remote": "fuse.sshfs",
        "/srv/usb": "fuseblk",
    }


@pytest.mark.parametrize(
    ("fstype", "remote"),
    [
        ("ext4", False),
        ("xfs", False),
        ("btrfs", False),
        ("tmpfs", False),
        ("fuseblk", False),
        ("nfs", True),
        ("nfs4", True),
        ("cifs", True),
        ("smb3", True),
        ("9p", True),
        ("fuse", True),
        ("fuse.sshfs", True),
        ("fuse.rclone", True),
        ("ceph", True),
        ("virtiofs", True),
    ],
)
def test_remote_filesystems_are_polled(fstype: str, remote: bool) -> None:
    assert is_remote(fstype) is remote


def test_this_machine_has_a_mount_table(tmp_path: Path) -> None:
    mount = mount_of(str(tmp_path.resolve()), read_mountinfo())
    assert mount is not None
    assert mount.fstype
    assert read_mountinfo(tmp_path / "missing") == []
