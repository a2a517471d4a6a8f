"""The board's SQLite schema, and opening a board database (WAL mode)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ._records import STATUSES
from ._tasks import BoardConfigError

SCHEMA_VERSION = "1"

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


def connect(path: Path, *, synchronous: str = "normal") -> sqlite3.Connection:
    """Open (or create) the database at `path`: WAL mode, foreign keys, the schema, and a
    refusal if it was written by a version with another schema. One connection may be used
    from any thread, one at a time (the caller serializes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={'FULL' if synchronous == 'full' else 'NORMAL'}")
    db.execute("PRAGMA foreign_keys=ON")
    db.execute("BEGIN IMMEDIATE")
    try:
        _create(db, path)
    except BaseException:
        db.execute("ROLLBACK")
        db.close()
        raise
    db.execute("COMMIT")
    return db


def _create(db: sqlite3.Connection, path: Path) -> None:
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)
    row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
    if row is None:
        db.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
    elif row["value"] != SCHEMA_VERSION:
        raise BoardConfigError(
            f"{path}: the board database has schema {row['value']}, this version reads "
            f"{SCHEMA_VERSION}"
        )
