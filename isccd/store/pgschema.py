"""The PostgreSQL schema, as an ordered list of migrations (the same contract as SQLite's,
:mod:`isccd.store.schema`).

The table ``isccd_schema`` holds one row per migration applied; the database's version is the
highest. Opening a store for writing applies the missing migrations in order, each in its own
transaction together with its row, under an advisory lock (:data:`MIGRATION_LOCK`), so two
daemons starting at once migrate once and a crash leaves a whole version. A migration, once
released, never changes: new needs are new migrations appended to :data:`MIGRATIONS`.

Layout (version 6). One database holds the index of a whole fleet; every row that describes a
host's files carries that host's name (``host``), and each daemon reads and writes its own
host's rows, except where it asks for the fleet's (exact matches, unit digests, the event log):

- ``hosts``: one row per host name that opened the database: its number (the key of its
  advisory lock, see :mod:`isccd.store.pgdatabase`), when it was last opened and last heard
  from (``seen_at``: its last commit of events, or its daemon's heartbeat), the highest
  sequence number of its events (kept when the log is purged, so that it never goes back) and
  the highest its purges removed (``purged_seq``).
- ``roots``, ``dirs``: a host's interned root and directory paths, as ``bytea`` of
  ``os.fsencode(path)``: byte-exact, and byte order is path order (a subtree is a range).
  Paths may be longer than a B-tree entry (about 2,700 bytes), so uniqueness is on
  ``sha256(path)`` and ranges use an index on the path's first 1,024 bytes, rechecked on the
  whole path. ``roots.live`` counts the root's live files, kept by triggers (a
  statement's new files counted once per root).
- ``profiles``: interned unit profiles, shared by the fleet.
- ``files``: one row per file a path held, live (``removed_at`` NULL) or a tombstone, as in
  SQLite. ``id`` is a ``bigserial``: unique across the fleet and never reused. ``datahash`` is
  indexed for exact matches over the whole fleet (a B-tree lookup).
- ``units``, ``skips``: a file's ISCC units and the units skipped for a missing component.
- ``near``: near-duplicate relations, one row per host of the two files (a relation across
  hosts is each host's), so that each host reads its files' relations alone.
- ``events``: the event log of every host. ``seq`` comes from one sequence and is assigned
  under a transaction-scoped advisory lock (:data:`EVENTS_LOCK`), so that sequence order is
  commit order (``docs/protocol.md``, "The event log of a shared database"). ``host`` is the
  host the event is about (another host's daemon logs the other side of a duplicate it
  found), ``file_id`` the file a ``file.*`` event changed.
- ``properties``: named values about a host's index (its duplicate policy, ...); under the
  empty host name, the database's own: its identity (``store_id``) and the runs of its log
  that began when it was found restored from an older dump (``run``, ``run:<uuid>``, see
  :mod:`isccd.store.pgruns`).
- ``watchlists``, ``watch_refs``, ``watch_units``: the fleet's watchlists (named sets of
  reference content, shared by every host); the database's property ``watchlists`` counts
  their changes, which each daemon polls at every batch.
"""

from __future__ import annotations

from isccd.store.schema import Migration

#: The first key of every advisory lock isccd takes (``pg_advisory_lock(int, int)``):
#: "ISCC" in ASCII, so that other applications' locks in the same database are told apart.
LOCK_SPACE = 0x49534343
#: Second key: one migration at a time.
MIGRATION_LOCK = 1
#: Second key: writers take turns, from their first write to their commit, so that event
#: sequence numbers are assigned by one transaction at a time (and in commit order).
EVENTS_LOCK = 2
#: Host locks use the second key ``HOST_LOCK_BASE + hosts.id``.
HOST_LOCK_BASE = 1024

#: The channel notified when a transaction that logged events commits; the payload is the
#: host name.
EVENTS_CHANNEL = "isccd_events"

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "hosts, files, units, near relations, properties and the event log, for a fleet",
        (
            """CREATE TABLE hosts (
                id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                name text NOT NULL UNIQUE,
                opened_at double precision,
                last_seq bigint NOT NULL DEFAULT 0
            )""",
            """CREATE TABLE roots (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                host text NOT NULL,
                path bytea NOT NULL,
                dev bigint,
                live bigint NOT NULL DEFAULT 0
            )""",
            "CREATE UNIQUE INDEX roots_path ON roots (host, sha256(path))",
            """CREATE TABLE dirs (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                host text NOT NULL,
                path bytea NOT NULL
            )""",
            "CREATE UNIQUE INDEX dirs_path ON dirs (host, sha256(path))",
            "CREATE INDEX dirs_range ON dirs (host, substr(path, 1, 1024))",
            """CREATE TABLE profiles (
                id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                profile text NOT NULL UNIQUE
            )""",
            """CREATE TABLE files (
                id bigserial PRIMARY KEY,
                host text NOT NULL,
                root_id bigint NOT NULL REFERENCES roots(id),
                dir_id bigint NOT NULL REFERENCES dirs(id),
                name bytea NOT NULL,
                dev bigint,
                ino bigint,
                size bigint,
                mtime_ns bigint,
                ctime_ns bigint,
                nlink bigint,
                datahash bytea,
                iscc text,
                mediatype text,
                mode text,
                meta_name text,
                description text,
                metahash text,
                filesize bigint,
                characters bigint,
                width bigint,
                height bigint,
                duration double precision,
                extractor text,
                issues text,
                named_by_file boolean,
                indexed_at double precision NOT NULL,
                removed_at double precision
            )""",
            # A directory belongs to one host, so (dir_id, name) is a path on that host.
            "CREATE UNIQUE INDEX files_live_path ON files (dir_id, name) WHERE removed_at IS NULL",
            "CREATE INDEX files_tombstone_path ON files (dir_id, name) "
            "WHERE removed_at IS NOT NULL",
            "CREATE INDEX files_live_identity ON files (host, dev, ino) WHERE removed_at IS NULL",
            "CREATE INDEX files_live_datahash ON files (datahash) WHERE removed_at IS NULL",
            "CREATE INDEX files_tombstones ON files (host, removed_at) "
            "WHERE removed_at IS NOT NULL",
            """CREATE TABLE units (
                file_id bigint NOT NULL REFERENCES files(id) ON DELETE CASCADE,
                type text NOT NULL,
                iscc text NOT NULL,
                digest bytea NOT NULL,
                profile_id integer NOT NULL REFERENCES profiles(id),
                PRIMARY KEY (file_id, type)
            )""",
            "CREATE INDEX units_type ON units (type, file_id)",
            "CREATE INDEX units_profile ON units (profile_id)",
            """CREATE TABLE skips (
                file_id bigint NOT NULL REFERENCES files(id) ON DELETE CASCADE,
                type text NOT NULL,
                profile_id integer NOT NULL REFERENCES profiles(id),
                PRIMARY KEY (file_id, type)
            )""",
            "CREATE INDEX skips_profile ON skips (profile_id)",
            """CREATE TABLE near (
                host text NOT NULL,
                a bigint NOT NULL REFERENCES files(id) ON DELETE CASCADE,
                b bigint NOT NULL REFERENCES files(id) ON DELETE CASCADE,
                unit text NOT NULL,
                distance integer NOT NULL,
                PRIMARY KEY (host, a, b, unit)
            )""",
            "CREATE INDEX near_a ON near (a)",
            "CREATE INDEX near_b ON near (b)",
            """CREATE TABLE events (
                seq bigserial PRIMARY KEY,
                host text NOT NULL,
                type text NOT NULL,
                time double precision NOT NULL,
                root bytea NOT NULL,
                path bytea NOT NULL,
                data text NOT NULL
            )""",
            "CREATE INDEX events_host ON events (host, seq)",
            "CREATE INDEX events_time ON events (host, time)",
            """CREATE TABLE properties (
                host text NOT NULL,
                name text NOT NULL,
                value text NOT NULL,
                PRIMARY KEY (host, name)
            )""",
            # Live files per root, kept in the transaction that changes them (as SQLite's
            # triggers do), so that `isccd status` counts without reading the files.
            """CREATE FUNCTION isccd_count_live() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.removed_at IS NULL THEN
                    UPDATE roots SET live = live - 1 WHERE id = OLD.root_id;
                END IF;
                IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.removed_at IS NULL THEN
                    UPDATE roots SET live = live + 1 WHERE id = NEW.root_id;
                END IF;
                RETURN NULL;
            END $$""",
            """CREATE TRIGGER files_live_insert AFTER INSERT ON files
                FOR EACH ROW WHEN (NEW.removed_at IS NULL) EXECUTE FUNCTION isccd_count_live()""",
            """CREATE TRIGGER files_live_delete AFTER DELETE ON files
                FOR EACH ROW WHEN (OLD.removed_at IS NULL) EXECUTE FUNCTION isccd_count_live()""",
            # A rename to another root, a removal (a tombstone), or a record stored again.
            """CREATE TRIGGER files_live_update AFTER UPDATE OF root_id, removed_at ON files
                FOR EACH ROW WHEN (OLD.root_id IS DISTINCT FROM NEW.root_id
                                   OR OLD.removed_at IS DISTINCT FROM NEW.removed_at)
                EXECUTE FUNCTION isccd_count_live()""",
        ),
    ),
    Migration(
        2,
        "the store's identity, one for the database: its event log is the fleet's",
        (
            # The empty host name holds what belongs to the database rather than to a host.
            "INSERT INTO properties (host, name, value) "
            "VALUES ('', 'store_id', gen_random_uuid()::text)",
        ),
    ),
    Migration(
        3,
        "events name the file they changed; hosts keep when they were last heard from and "
        "how far their log was purged",
        (
            # The daemons of the other hosts follow the log to keep their in-memory index of
            # the fleet's codes current: the file an event changed is what they read again.
            "ALTER TABLE events ADD COLUMN file_id bigint",
            "ALTER TABLE hosts ADD COLUMN seen_at double precision",
            # The highest seq a host's purge removed: events below the highest of these may be
            # gone, whatever older events other hosts still keep.
            "ALTER TABLE hosts ADD COLUMN purged_seq bigint NOT NULL DEFAULT 0",
        ),
    ),
    Migration(
        4,
        "the 512-byte blocks a file takes on disk (st_blocks), which is what removing it "
        "frees (NULL for the files stored before: not known until they are stored again)",
        ("ALTER TABLE files ADD COLUMN blocks bigint",),
    ),
    Migration(
        5,
        "watchlists: named sets of reference codes every new or changed file is matched "
        "against, shared by the fleet, and a count of their changes",
        (
            """CREATE TABLE watchlists (
                id bigserial PRIMARY KEY,
                name text NOT NULL UNIQUE,
                threshold integer,
                created double precision NOT NULL
            )""",
            """CREATE TABLE watch_refs (
                id bigserial PRIMARY KEY,
                watchlist_id bigint NOT NULL REFERENCES watchlists(id) ON DELETE CASCADE,
                label text NOT NULL,
                iscc text
            )""",
            "CREATE INDEX watch_refs_list ON watch_refs (watchlist_id)",
            """CREATE TABLE watch_units (
                id bigserial PRIMARY KEY,
                ref_id bigint NOT NULL REFERENCES watch_refs(id) ON DELETE CASCADE,
                type text NOT NULL,
                iscc text NOT NULL,
                digest bytea NOT NULL
            )""",
            "CREATE INDEX watch_units_ref ON watch_units (ref_id)",
            "INSERT INTO properties (host, name, value) VALUES ('', 'watchlists', '0') "
            "ON CONFLICT DO NOTHING",
        ),
    ),
    Migration(
        6,
        "a statement's new live files are counted into their roots once per root, not once "
        "per file",
        (
            # A job stores hundreds of files in one statement: a row trigger updated their
            # root's row once for each (a new version of the row each time).
            """CREATE FUNCTION isccd_count_live_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE roots SET live = roots.live + added.live
                    FROM (SELECT root_id, count(*) AS live FROM inserted
                          WHERE removed_at IS NULL GROUP BY root_id) AS added
                    WHERE roots.id = added.root_id;
                RETURN NULL;
            END $$""",
            "DROP TRIGGER files_live_insert ON files",
            """CREATE TRIGGER files_live_insert AFTER INSERT ON files
                REFERENCING NEW TABLE AS inserted
                FOR EACH STATEMENT EXECUTE FUNCTION isccd_count_live_inserted()""",
        ),
    ),
)

#: The schema version this isccd writes.
LATEST = MIGRATIONS[-1].version
