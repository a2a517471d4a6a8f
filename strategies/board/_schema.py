"""The board's SQLite schema, and opening a board database (WAL mode, or read-only for a look).

What goes wrong (`BoardStateError`, `BoardConfigError`) is in `_errors`, loaded when it does:
`harness board status` reads a database without importing `harness`."""

from __future__ import annotations

import sqlite3
from contextlib import suppress
from pathlib import Path

from ._records import STATUSES

SCHEMA_VERSION = "2"
# Each step brings a database from the version before it: (from, statements).
_MIGRATIONS = {
    # 2: an attempt records its best checkpoint (the one a rollback would restore).
    "1": ("ALTER TABLE attempts ADD COLUMN checkpoint TEXT",),
}

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    role TEXT NOT NULL,
    priority INTEGER NOT NULL,
    file TEXT NOT NULL,
    digest TEXT NOT NULL,
    present INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ({", ".join(repr(s) for s in STATUSES)})),
    reason TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0,
    carry TEXT,
    owner TEXT,
    agent TEXT,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_ready ON tasks (status, role, priority DESC, id);
-- `harness board status`: the first rows of each status, and the counts, without a table scan.
CREATE INDEX IF NOT EXISTS tasks_listing ON tasks (status, present DESC, priority DESC, id);
CREATE TABLE IF NOT EXISTS deps (
    task_id TEXT NOT NULL REFERENCES tasks (id),
    depends_on TEXT NOT NULL REFERENCES tasks (id),
    PRIMARY KEY (task_id, depends_on)
);
CREATE INDEX IF NOT EXISTS deps_reverse ON deps (depends_on);
CREATE TABLE IF NOT EXISTS runs (
    owner TEXT PRIMARY KEY,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    engine TEXT NOT NULL,
    agents INTEGER NOT NULL,
    started_at REAL NOT NULL,
    heartbeat_at REAL NOT NULL,
    ended_at REAL
);
CREATE TABLE IF NOT EXISTS attempts (
    task_id TEXT NOT NULL REFERENCES tasks (id),
    number INTEGER NOT NULL,
    agent TEXT NOT NULL,
    owner TEXT NOT NULL REFERENCES runs (owner),
    engine TEXT NOT NULL,
    started_at REAL NOT NULL,
    heartbeat_at REAL NOT NULL,
    ended_at REAL,
    outcome TEXT,
    message TEXT,
    halt TEXT,
    resume TEXT NOT NULL,
    transcript TEXT NOT NULL,
    turns INTEGER,
    tool_calls INTEGER,
    iterations INTEGER,
    usage TEXT,
    elapsed REAL,
    checkpoint TEXT,
    PRIMARY KEY (task_id, number)
);
CREATE UNIQUE INDEX IF NOT EXISTS one_open_attempt ON attempts (task_id) WHERE ended_at IS NULL;
CREATE TABLE IF NOT EXISTS accounts (
    name TEXT PRIMARY KEY,
    paused_until REAL,
    reason TEXT,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    task_id TEXT,
    attempt INTEGER,
    agent TEXT,
    owner TEXT,
    message TEXT NOT NULL
);
"""


def connect(
    path: Path, *, synchronous: str = "normal", read_only: bool = False
) -> sqlite3.Connection:
    """Open (or create) the database at `path`: WAL mode, foreign keys, the schema, and a
    refusal if it was written by a version with another schema. One connection may be used
    from any thread, one at a time (the caller serializes). `read_only` opens an existing
    database to read it, also where nothing may be written (a read-only folder). A database
    that cannot be used is a `BoardStateError`."""
    try:
        if read_only:
            return _open_read_only(path)
        return _open(path, synchronous)
    except (sqlite3.Error, OSError) as exc:
        from ._errors import state_error

        raise state_error(exc, path) from None


def _open_read_only(path: Path) -> sqlite3.Connection:
    # A WAL database needs its -shm file to be read; where it cannot be made (a read-only
    # folder, so no board writes there either), the file is read as it is ("immutable").
    last: sqlite3.Error | None = None
    for mode in ("mode=ro", "immutable=1"):
        db = sqlite3.connect(
            f"{path.resolve().as_uri()}?{mode}", uri=True, check_same_thread=False, timeout=30.0
        )
        db.row_factory = sqlite3.Row
        try:
            row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        except sqlite3.Error as exc:
            db.close()
            last = exc
            if isinstance(exc, sqlite3.OperationalError):
                continue  # could not open its -shm: try again as it is
            raise
        if row is None or row["value"] != SCHEMA_VERSION:
            db.close()
            from ._errors import BoardConfigError

            raise BoardConfigError(
                f"{path}: the board database has schema {row and row['value']}, this version "
                f"reads {SCHEMA_VERSION}"
            )
        return db
    assert last is not None
    raise last


def _open(path: Path, synchronous: str) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    try:
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={'FULL' if synchronous == 'full' else 'NORMAL'}")
        db.execute("PRAGMA foreign_keys=ON")
        db.execute("BEGIN IMMEDIATE")
        try:
            _create(db, path)
        except BaseException:
            with suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    except BaseException:
        db.close()
        raise
    return db


def _create(db: sqlite3.Connection, path: Path) -> None:
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)
    row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
    if row is None:
        db.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        return
    version = row["value"]
    while version in _MIGRATIONS:
        for statement in _MIGRATIONS[version]:
            db.execute(statement)
        version = str(int(version) + 1)
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (version,))
    if version != SCHEMA_VERSION:
        from ._errors import BoardConfigError

        raise BoardConfigError(
            f"{path}: the board database has schema {version}, this version reads {SCHEMA_VERSION}"
        )
