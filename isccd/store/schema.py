"""The SQLite schema, as an ordered list of migrations.

The database's ``PRAGMA user_version`` is the number of migrations applied. Opening a store for
writing applies the missing ones in order, each in its own transaction together with the version
bump, so a crash leaves the database at a whole version. A migration, once released, never
changes: new needs are new migrations appended to :data:`MIGRATIONS` (``tests/store`` migrates a
database created at every older version).

Layout (version 9):

- ``roots``, ``dirs``, ``profiles``: interned strings. Paths are stored as BLOBs of
  ``os.fsencode(path)``, so names that are not valid UTF-8 are kept byte-exact, and byte order is
  path order (``dir/`` < ``dir0`` makes a subtree a range).
- ``files``: one row per file a path held: live rows (``removed_at`` NULL) and tombstones. The
  identity ``(dev, ino)`` and the validators ``size, mtime_ns, ctime_ns`` decide whether a file
  changed; ``datahash`` (raw multihash bytes) finds exact duplicates; the rest is the record
  (``named_by_file``: whether the Meta-Code's name is the file name, NULL when not known;
  ``blocks``: the 512-byte blocks allocated to the file, which a sparse file's holes do not
  take, NULL when not known).
  ``AUTOINCREMENT`` so that ids, which the in-memory index and relations refer to, are never
  reused.
- ``roots.dev``: the ``st_dev`` of the root directory when it was last reconciled, so that a
  root that is suddenly on another device (an unmounted disk's empty mount point) is told apart
  from a root whose files were deleted.
- ``roots.live``: how many live files the root holds, kept by triggers on ``files`` in the
  transaction that changes them, so that ``isccd status`` counts per root without a scan.
- ``units``: one row per ISCC unit of a file, with its profile.
- ``skips``: one row per unit a file lacks because a component is missing, with the profile it
  was attempted with (``... fpcalc/missing ...``): when that profile is outdated, the unit is
  computed.
- ``near``: near-duplicate relations, one row per pair of files and unit type.
- ``events``: the event log; ``seq`` is ``AUTOINCREMENT`` so it only ever grows.
- ``properties``: named values about the index as a whole (the duplicate policy its relations
  were decided under), each a text the layer above interprets; and ``store_id``, the store's
  identity: a random UUID (version 4) made when the database is created, or migrated from a
  version before 6.
- ``watchlists``, ``watch_refs``, ``watch_units``: named sets of reference content, each
  reference one item (a file the codes were computed from, a line of a codes list) with its
  label and units; ``properties.watchlists`` counts the changes to them, so that a writer
  polling it at each batch sees a watchlist another process added.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step.

    Attributes:
        version: The ``user_version`` after this step (1, 2, ...).
        summary: What it changes.
        statements: SQL statements, run in order in one transaction.
    """

    version: int
    summary: str
    statements: Sequence[str]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "files, units, near relations and the event log",
        (
            """CREATE TABLE roots (
                id INTEGER PRIMARY KEY,
                path BLOB NOT NULL UNIQUE
            )""",
            """CREATE TABLE dirs (
                id INTEGER PRIMARY KEY,
                path BLOB NOT NULL UNIQUE
            )""",
            """CREATE TABLE profiles (
                id INTEGER PRIMARY KEY,
                profile TEXT NOT NULL UNIQUE
            )""",
            """CREATE TABLE files (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                root_id INTEGER NOT NULL REFERENCES roots(id),
                dir_id INTEGER NOT NULL REFERENCES dirs(id),
                name BLOB NOT NULL,
                dev INTEGER,
                ino INTEGER,
                size INTEGER,
                mtime_ns INTEGER,
                ctime_ns INTEGER,
                nlink INTEGER,
                datahash BLOB,
                iscc TEXT,
                mediatype TEXT,
                mode TEXT,
                meta_name TEXT,
                description TEXT,
                metahash TEXT,
                filesize INTEGER,
                characters INTEGER,
                width INTEGER,
                height INTEGER,
                duration REAL,
                extractor TEXT,
                issues TEXT,
                indexed_at REAL NOT NULL,
                removed_at REAL
            )""",
            "CREATE UNIQUE INDEX files_live_path ON files(dir_id, name) WHERE removed_at IS NULL",
            "CREATE INDEX files_live_identity ON files(dev, ino) WHERE removed_at IS NULL",
            "CREATE INDEX files_live_datahash ON files(datahash) WHERE removed_at IS NULL",
            """CREATE TABLE units (
                file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
                type TEXT NOT NULL,
                iscc TEXT NOT NULL,
                digest BLOB NOT NULL,
                profile_id INTEGER NOT NULL REFERENCES profiles(id),
                PRIMARY KEY (file_id, type)
            ) WITHOUT ROWID""",
            """CREATE TABLE near (
                a INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
                b INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
                unit TEXT NOT NULL,
                distance INTEGER NOT NULL,
                PRIMARY KEY (a, b, unit)
            ) WITHOUT ROWID""",
            "CREATE INDEX near_b ON near(b)",
            """CREATE TABLE events (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                type TEXT NOT NULL,
                time REAL NOT NULL,
                root BLOB NOT NULL,
                path BLOB NOT NULL,
                data TEXT NOT NULL
            )""",
        ),
    ),
    Migration(
        2,
        "tombstone lookups by path, and indexes for purging tombstones and events by age",
        (
            "CREATE INDEX files_tombstone_path ON files(dir_id, name) WHERE removed_at IS NOT NULL",
            "CREATE INDEX files_tombstones ON files(removed_at) WHERE removed_at IS NOT NULL",
            "CREATE INDEX events_time ON events(time)",
        ),
    ),
    Migration(
        3,
        "the device of each root; units skipped for a missing component, to compute them once "
        "it is installed (skips recorded before are retried once: profile isccd-extract/0)",
        (
            "ALTER TABLE roots ADD COLUMN dev INTEGER",
            """CREATE TABLE skips (
                file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
                type TEXT NOT NULL,
                profile_id INTEGER NOT NULL REFERENCES profiles(id),
                PRIMARY KEY (file_id, type)
            ) WITHOUT ROWID""",
            "CREATE INDEX skips_profile ON skips(profile_id)",
            "INSERT OR IGNORE INTO profiles (profile) VALUES ('isccd-extract/0')",
            """INSERT OR IGNORE INTO skips (file_id, type, profile_id)
                SELECT f.id, json_extract(i.value, '$.stage'),
                       (SELECT id FROM profiles WHERE profile = 'isccd-extract/0')
                FROM files f, json_each(f.issues) i
                WHERE f.removed_at IS NULL AND f.issues IS NOT NULL
                  AND json_extract(i.value, '$.code') = 'tool_missing'
                  AND json_extract(i.value, '$.stage')
                      IN ('meta', 'text', 'image', 'audio', 'video')""",
        ),
    ),
    Migration(
        4,
        "named values about the index as a whole: the duplicate policy its relations were "
        "decided under (none recorded: the next writer's)",
        (
            """CREATE TABLE properties (
                name TEXT PRIMARY KEY,
                value TEXT NOT NULL
            ) WITHOUT ROWID""",
        ),
    ),
    Migration(
        5,
        "live files per root, counted once and kept by triggers",
        (
            "ALTER TABLE roots ADD COLUMN live INTEGER NOT NULL DEFAULT 0",
            """UPDATE roots SET live = (
                SELECT count(*) FROM files f WHERE f.root_id = roots.id AND f.removed_at IS NULL
            )""",
            """CREATE TRIGGER files_live_insert AFTER INSERT ON files
                WHEN new.removed_at IS NULL
                BEGIN UPDATE roots SET live = live + 1 WHERE id = new.root_id; END""",
            """CREATE TRIGGER files_live_delete AFTER DELETE ON files
                WHEN old.removed_at IS NULL
                BEGIN UPDATE roots SET live = live - 1 WHERE id = old.root_id; END""",
            # A rename to another root, a removal (a tombstone), or a record stored again.
            """CREATE TRIGGER files_live_update AFTER UPDATE OF root_id, removed_at ON files
                BEGIN
                    UPDATE roots SET live = live - 1
                        WHERE id = old.root_id AND old.removed_at IS NULL;
                    UPDATE roots SET live = live + 1
                        WHERE id = new.root_id AND new.removed_at IS NULL;
                END""",
        ),
    ),
    Migration(
        6,
        "the store's identity, a random UUID: a client resuming the event log with a sequence "
        "number tells this store's log from another's",
        (
            # A version 4 UUID from SQLite's random bytes: 8-4-4-4-12 hex digits, the version
            # nibble 4, the variant's two high bits 10.
            """INSERT INTO properties (name, value) VALUES ('store_id', lower(
                hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4'
                || substr(hex(randomblob(2)), 2) || '-'
                || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2)
                || '-' || hex(randomblob(6))
            ))""",
        ),
    ),
    Migration(
        7,
        "whether a file's Meta-Code was made from its file name, so that a rename makes it "
        "again (NULL for the files stored before: not known)",
        ("ALTER TABLE files ADD COLUMN named_by_file INTEGER",),
    ),
    Migration(
        8,
        "the 512-byte blocks a file takes on disk (st_blocks), which is what removing it "
        "frees (NULL for the files stored before: not known until they are stored again)",
        ("ALTER TABLE files ADD COLUMN blocks INTEGER",),
    ),
    Migration(
        9,
        "watchlists: named sets of reference codes every new or changed file is matched "
        "against, and a count of their changes",
        (
            """CREATE TABLE watchlists (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                name TEXT NOT NULL UNIQUE,
                threshold INTEGER,
                created REAL NOT NULL
            )""",
            """CREATE TABLE watch_refs (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                watchlist_id INTEGER NOT NULL REFERENCES watchlists(id) ON DELETE CASCADE,
                label TEXT NOT NULL,
                iscc TEXT
            )""",
            "CREATE INDEX watch_refs_list ON watch_refs(watchlist_id)",
            # One row per unit, its own id the key of the in-memory search.
            """CREATE TABLE watch_units (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                ref_id INTEGER NOT NULL REFERENCES watch_refs(id) ON DELETE CASCADE,
                type TEXT NOT NULL,
                iscc TEXT NOT NULL,
                digest BLOB NOT NULL
            )""",
            "CREATE INDEX watch_units_ref ON watch_units(ref_id)",
            "INSERT OR IGNORE INTO properties (name, value) VALUES ('watchlists', '0')",
        ),
    ),
)

#: The schema version this isccd writes.
LATEST = MIGRATIONS[-1].version
