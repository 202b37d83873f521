"""What only the PostgreSQL backend promises: one database for many hosts (each reading its own
rows unless it asks for the fleet's), one daemon per host name, passwords never shown, a lost
connection that is retryable and reconnects with the host's lock, a schema that is versioned
and refuses what it does not know."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest

from isccd.errors import StoreCorruptError, StoreError, StoreLockedError, StoreUnavailableError
from isccd.model import EventType, UnitType
from isccd.store import NearPair, Store, open_store, redact_url
from isccd.store.owner import StoreOwner
from isccd.store.pgschema import EVENTS_CHANNEL, LATEST
from tests.pg import PASSWORD, PgServer
from tests.store.conftest import hashed, make_record

ROOT = "/data"


def _add(store: Store, path: str, ino: int, datahash: str, data: bytes = b"\x01" * 8) -> int:
    store.begin()
    file_id = store.add_file(ROOT, make_record(path, ino=ino, datahash=datahash, data=data), 1.0)
    store.commit()
    return file_id


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://isccd:hunter2@db.example/isccd", "postgresql://isccd:***@db.example/isccd"),
        (
            "postgres://u:p%40ss@h:5433/db?sslmode=require",
            "postgres://u:***@h:5433/db?sslmode=require",
        ),
        # An unencoded "@" in the password: the user information ends at the last one.
        ("postgresql://u:p@ss@h/db", "postgresql://u:***@h/db"),
        (
            "postgresql:///db?host=/run/pg&password=hunter2&sslmode=disable",
            "postgresql:///db?host=/run/pg&password=***&sslmode=disable",
        ),
        ("postgresql://u@h1:5432,h2:5433/db", "postgresql://u@h1:5432,h2:5433/db"),
        # libpq knows no PASSWORD parameter (nor fragments): text it refuses is hidden whole.
        ("postgresql://h/db?PASSWORD=x#frag", "postgresql://***"),
        ("sqlite:///var/lib/isccd/isccd.db", "sqlite:///var/lib/isccd/isccd.db"),
    ],
)
def test_urls_are_shown_without_their_password(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_the_password_is_used_and_never_shown(pg_server: PgServer, pg_url: str) -> None:
    database = pg_url.rsplit("/", 1)[1]
    url = pg_server.url(database, "isccd_pw", PASSWORD)
    store = open_store(url, host="a")
    try:
        assert PASSWORD not in repr(store) and "isccd_pw:***@" in repr(store)
    finally:
        store.close()
    wrong = pg_server.url(database, "isccd_pw", "not-" + PASSWORD)
    with pytest.raises(StoreError) as caught:
        open_store(wrong, host="a")
    assert not isinstance(caught.value, StoreUnavailableError)  # retrying will not help
    assert "password authentication failed" in str(caught.value)
    assert "not-" not in str(caught.value) and PASSWORD not in str(caught.value)


def test_an_unreachable_server_is_unavailable(pg_server: PgServer) -> None:
    url = pg_server.url("postgres").replace("%2Ftmp%2F", "%2Ftmp%2Fnowhere-")
    with pytest.raises(StoreUnavailableError, match="cannot connect"):
        open_store(url, host="a")


def test_one_daemon_per_host_name(pg_url: str) -> None:
    first = open_store(pg_url, host="media-01")
    try:
        with pytest.raises(StoreLockedError, match="host name 'media-01' is in use") as caught:
            open_store(pg_url, host="media-01")
        assert "isccd media-01 pid" in str(caught.value)  # who holds it
        open_store(pg_url, host="media-02").close()  # another host is welcome
        reader = open_store(pg_url, host="media-01", readonly=True)  # and readers are
        reader.close()
    finally:
        first.close()
    open_store(pg_url, host="media-01").close()  # released on close


def test_hosts_share_exact_matches_and_keep_their_own_paths(pg_url: str) -> None:
    a = open_store(pg_url, host="a")
    b = open_store(pg_url, host="b")
    try:
        on_a = _add(a, "/data/x", 1, hashed(1))
        copy_a = _add(a, "/data/y", 2, hashed(2))
        on_b = _add(b, "/data/x", 1, hashed(1))  # the same path and inode, another machine
        _add(b, "/data/z", 3, hashed(2))
        assert on_b != on_a  # ids are unique across the fleet
        local = a.file_at("/data/x")
        assert local is not None and (local.id, local.host) == (on_a, "a")
        assert [f.path for f in a.files_under("/")] == ["/data/x", "/data/y"]
        assert a.validators_in_dir("/data").keys() == {"x", "y"}
        assert [f.id for f in a.files_by_identity(1, 1)] == [on_a]
        assert a.live_by_root() == {ROOT: 2} and b.live_by_root() == {ROOT: 2}
        # Exact matches: the host's own, or the fleet's.
        assert [f.id for f in a.files_by_datahash(hashed(1))] == [on_a]
        fleet = a.files_by_datahash(hashed(1), fleet=True)
        assert [(f.id, f.host) for f in fleet] == [(on_a, "a"), (on_b, "b")]
        assert a.exact_datahashes() == []
        assert a.exact_datahashes(fleet=True) == [hashed(1), hashed(2)]
        coded = [i for ids, _ in a.unit_codes(UnitType.DATA, fleet=True) for i in ids]
        assert len(coded) == 4
        assert [i for ids, _ in a.unit_codes(UnitType.DATA) for i in ids] == [on_a, copy_a]
        # Lookups by id find any host's files.
        assert [f.host for f in a.files_by_id([on_b, on_a])] == ["b", "a"]
        # Relations, properties and purges stay with their host.
        a.begin()
        a.add_near([NearPair.of(on_a, copy_a, UnitType.DATA, 1)])
        a.set_property("policy", "a's")
        a.remove_file(copy_a, 2.0)
        a.commit()
        assert b.near_of(on_a) == [] and b.get_property("policy") is None
        b.begin()
        assert b.purge_tombstones(before=10.0) == 0
        b.commit()
        assert [t.id for t in a.tombstones_at("/data/y")] == [copy_a]
    finally:
        a.close()
        b.close()


def test_each_host_has_its_log_and_the_fleet_one_order(pg_url: str) -> None:
    a = open_store(pg_url, host="a")
    b = open_store(pg_url, host="b")
    try:
        seqs = []
        for store, path in ((a, "/a1"), (b, "/b1"), (a, "/a2")):
            store.begin()
            seqs.append(store.append_event(EventType.FILE_ADDED, ROOT, path, {}, 1.0).seq)
            store.commit()
        assert [e.path for e in a.events_since(0)] == ["/a1", "/a2"]
        assert [e.path for e in a.events_since(0, fleet=True)] == ["/a1", "/b1", "/a2"]
        assert (a.first_seq(), a.last_seq(), b.first_seq(), b.last_seq()) == (
            seqs[0],
            seqs[2],
            seqs[1],
            seqs[1],
        )
        a.begin()
        assert a.purge_events(before=5.0) == 2
        a.commit()
        assert a.last_seq() == seqs[2] and a.first_seq() == seqs[2] + 1
        assert [e.path for e in b.events_since(0)] == ["/b1"]
    finally:
        a.close()
        b.close()


def test_a_commit_with_events_notifies_listeners(pg_url: str) -> None:
    store = open_store(pg_url, host="media-01")
    listener = psycopg.connect(pg_url, autocommit=True)
    try:
        listener.execute(f"LISTEN {EVENTS_CHANNEL}")
        store.begin()
        store.add_file(ROOT, make_record("/data/quiet"), 1.0)
        store.commit()  # no event: no notification
        store.begin()
        store.append_event(EventType.FILE_ADDED, ROOT, "/data/a", {}, 1.0)
        store.append_event(EventType.FILE_ADDED, ROOT, "/data/b", {}, 1.0)
        store.commit()
        received = list(listener.notifies(timeout=5, stop_after=1))
        assert [(n.channel, n.payload) for n in received] == [(EVENTS_CHANNEL, "media-01")]
        assert list(listener.notifies(timeout=0.2)) == []  # one per transaction
    finally:
        listener.close()
        store.close()


def _kill_session(pg_server: PgServer, pg_url: str, application: str) -> int:
    database = pg_url.rsplit("/", 1)[1]
    rows = pg_server.sql(
        "postgres",
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        f"WHERE datname = '{database}' AND application_name LIKE '{application}%'",
    )
    (count,) = rows[0]
    assert isinstance(count, int)
    return count


def test_a_lost_connection_is_retryable_and_the_next_transaction_reconnects(
    pg_server: PgServer, pg_url: str
) -> None:
    store = open_store(pg_url, host="media-01")
    try:
        _add(store, "/data/kept", 1, hashed(1))
        store.begin()
        store.add_file(ROOT, make_record("/data/lost", ino=2), 1.0)
        assert _kill_session(pg_server, pg_url, "isccd media-01") == 1
        with pytest.raises(StoreUnavailableError, match="unavailable"):
            store.append_event(EventType.FILE_ADDED, ROOT, "/data/lost", {}, 1.0)
        # Nothing more of that transaction runs, not even on a new connection.
        with pytest.raises(StoreUnavailableError, match="middle of a transaction"):
            store.add_file(ROOT, make_record("/data/after", ino=3), 1.0)
        with pytest.raises(StoreUnavailableError):
            store.commit()
        store.rollback()
        # The next transaction reconnects, with the host's lock taken again.
        _add(store, "/data/next", 4, hashed(4))
        assert store.file_at("/data/lost") is None and store.file_at("/data/after") is None
        assert {f.path for f in store.files_under("/")} == {"/data/kept", "/data/next"}
        with pytest.raises(StoreLockedError):
            open_store(pg_url, host="media-01")
        # Reads outside a transaction reconnect too (the pool may hold a spare connection).
        assert _kill_session(pg_server, pg_url, "isccd media-01") >= 1
        assert store.file_at("/data/kept") is not None
    finally:
        store.close()


def test_the_owner_fails_the_batch_of_a_lost_connection_and_carries_on(
    pg_server: PgServer, pg_url: str
) -> None:
    owner: StoreOwner[Store] = StoreOwner(lambda: open_store(pg_url, host="media-01"))
    owner.start()
    try:
        owner.call(lambda s: s.add_file(ROOT, make_record("/data/a", ino=1), 1.0))

        def lost(s: Store) -> None:
            _kill_session(pg_server, pg_url, "isccd media-01")
            s.add_file(ROOT, make_record("/data/b", ino=2), 1.0)

        with pytest.raises(StoreUnavailableError):
            owner.call(lost)
        owner.call(lambda s: s.add_file(ROOT, make_record("/data/c", ino=3), 1.0))
        paths = owner.call(lambda s: [f.path for f in s.files_under("/")])
        assert paths == ["/data/a", "/data/c"]
    finally:
        owner.close()


def test_the_schema_is_versioned_and_a_newer_one_refused(pg_server: PgServer, pg_url: str) -> None:
    database = pg_url.rsplit("/", 1)[1]
    with pytest.raises(StoreError, match="run `isccd scan` or start the daemon"):
        open_store(pg_url, host="a", readonly=True)
    open_store(pg_url, host="a").close()
    open_store(pg_url, host="b").close()  # opening again migrates nothing
    rows = pg_server.sql(database, "SELECT version FROM isccd_schema ORDER BY version")
    assert rows == [(v,) for v in range(1, LATEST + 1)]
    pg_server.sql(
        database, f"INSERT INTO isccd_schema (version, summary) VALUES ({LATEST + 1}, 'x')"
    )
    with pytest.raises(StoreError, match="newer than this isccd knows"):
        open_store(pg_url, host="a")


def test_a_schema_5_database_counts_a_statement_s_new_files_once_per_root(
    pg_server: PgServer, pg_url: str
) -> None:
    # Version 6 counts a statement's new live files into their roots once per root; a
    # database written before it (its row trigger) keeps its counts and counts on.
    database = pg_url.rsplit("/", 1)[1]
    store = open_store(pg_url, host="a")
    store.begin()
    store.add_files("/r", [make_record(f"/r/{i}", ino=i) for i in range(5)], 1.0)
    store.commit()
    store.close()
    pg_server.sql(database, "DROP TRIGGER files_live_insert ON files")
    pg_server.sql(database, "DROP FUNCTION isccd_count_live_inserted()")
    pg_server.sql(database, "CREATE TRIGGER files_live_insert AFTER INSERT ON files FOR EACH ROW "
                  "WHEN (NEW.removed_at IS NULL) EXECUTE FUNCTION isccd_count_live()")  # fmt: skip
    pg_server.sql(database, "DELETE FROM isccd_schema WHERE version = 6")

    store = open_store(pg_url, host="a")
    try:
        assert pg_server.sql(database, "SELECT max(version) FROM isccd_schema") == [(6,)]
        [(kind,)] = pg_server.sql(
            database,
            "SELECT action_orientation FROM information_schema.triggers "
            "WHERE trigger_name = 'files_live_insert'",
        )
        assert kind == "STATEMENT"
        assert store.live_by_root() == {"/r": 5}
        store.begin()
        store.add_files("/r", [make_record(f"/r/n{i}", ino=10 + i) for i in range(3)], 2.0)
        store.add_files("/s", [make_record(f"/s/{i}", ino=20 + i) for i in range(2)], 2.0)
        store.add_files("/s", [], 2.0)
        store.commit()
        assert store.live_by_root() == {"/r": 8, "/s": 2}
    finally:
        store.close()


def test_a_foreign_database_is_not_taken_over(pg_server: PgServer, pg_url: str) -> None:
    pg_server.sql(pg_url.rsplit("/", 1)[1], "CREATE TABLE customers (name text)")
    with pytest.raises(StoreCorruptError, match="not an isccd index"):
        open_store(pg_url, host="a")


def test_a_read_only_store_refuses_writes(pg_url: str) -> None:
    open_store(pg_url, host="a").close()
    reader = open_store(pg_url, host="a", readonly=True)
    try:
        reader.begin()
        with pytest.raises(StoreError, match="reading only"):
            reader.add_file(ROOT, make_record("/data/no"), 1.0)
        reader.rollback()
    finally:
        reader.close()


def test_hosts_starting_together_migrate_once(pg_url: str) -> None:
    errors: list[BaseException] = []
    barrier = threading.Barrier(3)

    def start(host: str) -> None:
        barrier.wait(10)
        try:
            open_store(pg_url, host=host).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(h,)) for h in ("a", "b", "c")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []


@pytest.mark.slow
def test_the_driver_is_imported_only_for_a_postgres_url(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from isccd.store import open_store, state_url\n"
        "import isccd.cli.main, isccd.daemon.app\n"
        f"open_store(state_url({str(tmp_path)!r}), host='a').close()\n"
        "assert not any(m.split('.')[0] in ('psycopg', 'psycopg_pool') for m in sys.modules)\n"
        "sys.modules['psycopg'] = None  # as if isccd[fleet] were not installed\n"
        "try:\n"
        "    open_store('postgresql://u:hunter2@db.example/isccd', host='a')\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.startswith("StoreError ") and "isccd[fleet]" in done.stdout
    assert "hunter2" not in done.stdout and "u:***@db.example" in done.stdout
