"""A real PostgreSQL server for the tests, from Debian's ``postgresql`` package.

One server per test run (:class:`PgServer`), in a temporary directory under a short ``/tmp``
path, listening only on a Unix socket there (no TCP port). When the tests run as root the
server runs as the ``postgres`` user (PostgreSQL refuses to run as root), on a data directory
given to it. Each test gets a database of its own, created from ``template0``.

Roles: ``postgres`` (the superuser, trusted on the socket) and ``isccd_pw``, whose password is
:data:`PASSWORD` and which the server asks for (SCRAM), to test password handling.

The binaries are looked up on ``PATH``, then in ``/usr/lib/postgresql/*/bin``; without them the
tests that need a server are skipped with the reason.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
import urllib.parse
from pathlib import Path

#: The password of the ``isccd_pw`` role.
PASSWORD = "s3cret-Pw/with:odd@chars"

_HBA = """\
local all isccd_pw scram-sha-256
local all all trust
"""


def find_bin_dir() -> Path | None:
    """The directory of ``initdb`` and ``pg_ctl``, or ``None`` when PostgreSQL is missing."""
    on_path = shutil.which("pg_ctl")
    if on_path is not None and shutil.which("initdb") is not None:
        return Path(on_path).resolve().parent
    found = [p for p in Path("/usr/lib/postgresql").glob("*/bin/pg_ctl") if _major(p) >= 0]
    return max(found, key=_major).parent if found else None


def _major(pg_ctl: Path) -> float:
    """The version of ``/usr/lib/postgresql/VERSION/bin/pg_ctl`` (the newest is used)."""
    try:
        return float(pg_ctl.parents[1].name)
    except ValueError:
        return -1.0


class PgServer:
    """One PostgreSQL server in a temporary directory; :meth:`stop` removes it."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.base = Path(tempfile.mkdtemp(prefix="pg", dir="/tmp"))
        self.data = self.base / "data"
        self.log = self.base / "server.log"
        self._names = itertools.count(1)
        self._as: list[str] = []
        self._options = ""
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(self.base, owner.pw_uid, owner.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]

    @property
    def socket_dir(self) -> str:
        """The directory of the server's Unix socket (libpq's ``host``)."""
        return str(self.base)

    def _run(self, *command: str) -> None:
        subprocess.run(
            [*self._as, *command], check=True, capture_output=True, cwd=self.base, timeout=120
        )

    def start(self, *, durable: bool = False) -> None:
        """``initdb`` and start, waiting until the server accepts connections.

        Args:
            durable: Flush to disk as a production server does (benchmarks); the tests run
                with ``fsync`` off.
        """
        self._run(
            str(self.bin_dir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        (self.data / "pg_hba.conf").write_text(_HBA)
        # fsync off: a test server that loses its data in a power cut loses nothing of value.
        options = f"-k {self.base} -c listen_addresses='' -c max_connections=200"
        self._options = options + ("" if durable else " -F")
        self.resume()
        self.sql("postgres", f"CREATE ROLE isccd_pw LOGIN PASSWORD '{PASSWORD}'")

    def pause(self) -> None:
        """Stop the server (fast shutdown: every session is ended), keeping its data."""
        self.ctl("stop", "-m", "fast")

    def resume(self) -> None:
        """Start the server (again), waiting until it accepts connections."""
        self.ctl("start", "-o", self._options, "-l", str(self.log))

    def ctl(self, action: str, *args: str) -> None:
        """``pg_ctl ACTION`` (``start``, ``stop``, ``restart``), waiting for it to finish."""
        self._run(str(self.bin_dir / "pg_ctl"), action, "-D", str(self.data), "-w", *args)

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its directory."""
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self.ctl("stop", "-m", "fast")
        shutil.rmtree(self.base, ignore_errors=True)

    def sql(self, database: str, sql: str) -> list[tuple[object, ...]]:
        """Run one statement as the superuser; the rows it returns."""
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            cursor = conn.execute(sql.encode())
            return cursor.fetchall() if cursor.description else []

    def url(self, database: str, user: str = "postgres", password: str | None = None) -> str:
        """A ``postgresql://`` URL of ``database`` on the socket."""
        auth = urllib.parse.quote(user, safe="")
        if password is not None:
            auth += ":" + urllib.parse.quote(password, safe="")
        host = urllib.parse.quote(self.socket_dir, safe="")
        return f"postgresql://{auth}@{host}/{database}"

    def new_database(self) -> str:
        """A new, empty database; its name."""
        name = f"t{next(self._names)}"
        self.sql("postgres", f"CREATE DATABASE {name} TEMPLATE template0 STRATEGY FILE_COPY")
        self.sql("postgres", f"GRANT ALL ON DATABASE {name} TO isccd_pw")
        self.sql(name, "GRANT ALL ON SCHEMA public TO isccd_pw")
        return name

    def dump(self, database: str) -> Path:
        """``pg_dump`` of ``database`` (custom format), as an administrator backs it up; the
        file it wrote."""
        path = self.base / f"{database}-{next(self._names)}.dump"
        self._run(str(self.bin_dir / "pg_dump"), "-Fc", "-f", str(path), self.url(database))
        return path

    def restore(self, database: str, dump: Path) -> None:
        """Put ``database`` back as it was in ``dump``: dropped (its sessions ended), made
        again, and ``pg_restore``'d."""
        self.drop_database(database)
        self.sql("postgres", f"CREATE DATABASE {database} TEMPLATE template0")
        self._run(str(self.bin_dir / "pg_restore"), "-d", self.url(database), str(dump))

    def drop_database(self, name: str) -> None:
        """Drop a database, disconnecting whoever still uses it."""
        self.sql("postgres", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
