"""The board's state in SQLite: tasks and their statuses, runs of the board, attempts, and the
event log, each change one transaction committed as it happens.

The database is a real file in WAL mode, so `harness board status` reads it while a board
runs. `BoardStore` is synchronous and not thread-safe: a running board uses it only through
its `Writer` (one operation at a time, in a worker thread), the command line directly.

Nothing runs twice concurrently: the state folder's lock file admits one board process at a
time (`_lock.py`), and a partial unique index admits at most one open attempt per task, so
even a bug could not start a second one. An attempt stays open (``ended_at`` is NULL) from
its assignment until its outcome is recorded; the run that owns it renews its heartbeat.
An open attempt found by the next board belonged to a board that died: its transcript says
whether it had finished (then its outcome is recorded) or what it got done (carried into a
new attempt, which resumes after it).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from attrs import frozen

from ._attempt import AttemptOutcome, classify
from ._events import BoardEvent, Kind
from ._progress import Progress, read_attempt
from ._tasks import BoardConfigError, BoardTask

Status = Literal["pending", "blocked", "in_progress", "complete", "review", "failed"]
STATUSES: tuple[Status, ...] = (
    "pending",
    "blocked",
    "in_progress",
    "complete",
    "review",
    "failed",
)
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


@frozen
class Claim:
    """A task an agent has taken: the attempt it opened."""

    task: str
    number: int
    agent: str
    carry: Progress
    transcript: Path


FINISHED = "finished"
"""`claim` when no task is pending or in progress: nothing can change any more."""


@frozen
class OpenAttempt:
    """An attempt left open by an earlier board."""

    task: str
    number: int
    engine: str
    heartbeat_at: float


@frozen
class TaskState:
    """A task as the board sees it now (one row of `harness board status`)."""

    id: str
    title: str
    role: str
    priority: int
    status: Status
    depends_on: tuple[str, ...]
    attempts: int
    agent: str | None
    reason: str | None
    updated_at: float
    present: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "role": self.role,
            "priority": self.priority,
            "status": self.status,
            "depends_on": list(self.depends_on),
            "attempts": self.attempts,
            "agent": self.agent,
            "reason": self.reason,
            "updated_at": self.updated_at,
            "present": self.present,
        }


@frozen
class AttemptState:
    """One attempt, as recorded."""

    task: str
    number: int
    agent: str
    owner: str
    engine: str
    started_at: float
    heartbeat_at: float
    ended_at: float | None
    outcome: str | None
    message: str | None
    resume: Progress
    transcript: Path


class BoardStore:
    """The board's database (see the module docstring)."""

    def __init__(
        self, path: str | Path, *, synchronous: str = "normal", transcripts: Path | None = None
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.transcripts = transcripts or self.path.parent / "transcripts"
        self._db = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=30.0
        )
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={'FULL' if synchronous == 'full' else 'NORMAL'}")
        self._db.execute("PRAGMA foreign_keys=ON")
        with self._tx():
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self._db.execute(statement)
            row = self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None:
                self._db.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            elif row["value"] != SCHEMA_VERSION:
                raise BoardConfigError(
                    f"{self.path}: the board database has schema {row['value']}, this version "
                    f"reads {SCHEMA_VERSION}"
                )
        self.recorded: list[BoardEvent] = []

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> BoardStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def take_events(self) -> list[BoardEvent]:
        """The events recorded since the last call (committed), for the board to publish."""
        events, self.recorded = self.recorded, []
        return events

    def _event(
        self,
        kind: Kind,
        message: str,
        *,
        task: str | None = None,
        attempt: int | None = None,
        agent: str | None = None,
        owner: str | None = None,
        now: float | None = None,
    ) -> None:
        at = time.time() if now is None else now
        cursor = self._db.execute(
            "INSERT INTO events (at, kind, task_id, attempt, agent, owner, message) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (at, kind, task, attempt, agent, owner, message),
        )
        assert cursor.lastrowid is not None
        self.recorded.append(BoardEvent(cursor.lastrowid, at, kind, message, task, attempt, agent))

    # --- starting a board ------------------------------------------------------------------

    def open_attempts(self) -> list[OpenAttempt]:
        rows = self._db.execute(
            "SELECT task_id, number, engine, heartbeat_at FROM attempts WHERE ended_at IS NULL"
        ).fetchall()
        return [OpenAttempt(r[0], r[1], r[2], r[3]) for r in rows]

    def start(
        self,
        tasks: Sequence[BoardTask],
        *,
        owner: str,
        pid: int,
        host: str,
        engine: str,
        agents: int,
        roles: set[str],
        max_attempts: int,
    ) -> None:
        """Begin a run: record it, bring the task table in line with the task files, close
        the attempts an earlier board left open, and work out what is blocked. Refuses (and
        writes nothing) when a task that still has to run has a role no agent has."""
        now = time.time()
        with self._tx():
            self._db.execute(
                "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
                (owner, pid, host, engine, agents, now, now),
            )
            self._sync_tasks(tasks, now)
            self._recover(owner, max_attempts, now)
            self._update_blocked(now)
            waiting = self._db.execute(
                "SELECT role, group_concat(id, ', ') FROM tasks WHERE present = 1 AND status "
                "IN ('pending', 'blocked', 'in_progress') GROUP BY role ORDER BY role"
            ).fetchall()
            missing = [(r[0], r[1]) for r in waiting if r[0] not in roles]
            if missing:
                role, ids = missing[0]
                raise BoardConfigError(
                    f"no agent has the role {role!r}, which tasks {ids} need "
                    f"(the agents' roles: {sorted(roles)})"
                )
            counts = self._counts()
            self._event(
                "board.started",
                f"{agents} agent(s) on the {engine} engine; " + _describe_counts(counts),
                owner=owner,
                now=now,
            )

    def _sync_tasks(self, tasks: Sequence[BoardTask], now: float) -> None:
        self._db.execute("UPDATE tasks SET present = 0")
        for task in tasks:
            self._db.execute(
                "INSERT INTO tasks (id, title, role, priority, file, digest, present, status, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, 1, 'blocked', ?) "
                "ON CONFLICT (id) DO UPDATE SET title = excluded.title, role = excluded.role, "
                "priority = excluded.priority, file = excluded.file, digest = excluded.digest, "
                "present = 1",
                (task.id, task.title, task.role, task.priority, str(task.path), task.digest, now),
            )
        self._db.execute("DELETE FROM deps")
        self._db.executemany(
            "INSERT INTO deps VALUES (?, ?)",
            [(task.id, dep) for task in tasks for dep in task.depends_on],
        )

    def _recover(self, owner: str, max_attempts: int, now: float) -> None:
        """Close every open attempt (their board is gone: this one holds the lock)."""
        for row in self._db.execute(
            "SELECT task_id, number, agent, resume, transcript FROM attempts WHERE ended_at IS NULL"
        ).fetchall():
            task, number, agent = row["task_id"], row["number"], row["agent"]
            record = read_attempt(row["transcript"])
            if record.halt is not None:
                # The run had ended; the board died before it recorded the outcome.
                outcome = AttemptOutcome(
                    classify(record.halt, record.verified),
                    f"(recovered from the transcript) {_describe_halt(record.halt)}",
                    halt=record.halt,
                    turns=record.progress.turns,
                    tool_calls=record.progress.tool_calls,
                )
                claim = Claim(task, number, agent, Progress(), Path(row["transcript"]))
                self._finish(claim, outcome, owner=owner, max_attempts=max_attempts, now=now)
                continue
            carried = Progress.from_dict(json.loads(row["resume"])) + record.progress
            self._db.execute(
                "UPDATE attempts SET ended_at = ?, outcome = 'interrupted', message = ?, "
                "turns = ?, tool_calls = ? WHERE task_id = ? AND number = ?",
                (
                    now,
                    "the board stopped while the attempt ran",
                    record.progress.turns,
                    record.progress.tool_calls,
                    task,
                    number,
                ),
            )
            self._db.execute(
                "UPDATE tasks SET status = 'pending', owner = NULL, agent = NULL, carry = ?, "
                "reason = NULL, updated_at = ? WHERE id = ?",
                (json.dumps(carried.to_dict()), now, task),
            )
            where = (
                f"after {carried.iterations} completed iteration(s)"
                if carried.iterations
                else "from the start"
            )
            self._event(
                "task.retried",
                f"attempt {number} was interrupted (the board stopped); the next attempt "
                f"resumes {where}, with {carried.turns} turn(s) already spent",
                task=task,
                attempt=number,
                agent=agent,
                owner=owner,
                now=now,
            )

    def _update_blocked(self, now: float, *, dependents_of: str | None = None) -> list[str]:
        """Pending or blocked tasks (only those that depend on `dependents_of`, when given)
        take the status their dependencies give them; returns the ids that became pending."""
        query = (
            "SELECT t.id, t.status, EXISTS (SELECT 1 FROM deps d JOIN tasks u ON "
            "u.id = d.depends_on WHERE d.task_id = t.id AND u.status != 'complete') AS waits "
            "FROM tasks t WHERE t.present = 1 AND t.status IN ('pending', 'blocked')"
        )
        if dependents_of is None:
            rows = self._db.execute(query).fetchall()
        else:
            query += " AND t.id IN (SELECT task_id FROM deps WHERE depends_on = ?)"
            rows = self._db.execute(query, (dependents_of,)).fetchall()
        freed = []
        for row in rows:
            status = "blocked" if row["waits"] else "pending"
            if status != row["status"]:
                self._db.execute(
                    "UPDATE tasks SET status = ?, updated_at = ? WHERE id = ?",
                    (status, now, row["id"]),
                )
                if status == "pending":
                    freed.append(row["id"])
        return freed

    # --- running -----------------------------------------------------------------------------

    def claim(self, owner: str, agent: str, role: str, engine: str) -> Claim | str | None:
        """Give `agent` the highest-priority pending task of `role` (ties: by id) and open an
        attempt; None when there is none for it now; `FINISHED` when no task is pending or in
        progress at all."""
        now = time.time()
        with self._tx():
            row = self._db.execute(
                "SELECT id, attempts, carry FROM tasks WHERE status = 'pending' AND present = 1 "
                "AND role = ? ORDER BY priority DESC, id LIMIT 1",
                (role,),
            ).fetchone()
            if row is None:
                busy = self._db.execute(
                    "SELECT 1 FROM tasks WHERE present = 1 AND status IN "
                    "('pending', 'in_progress') LIMIT 1"
                ).fetchone()
                return None if busy else FINISHED
            task, number = row["id"], row["attempts"] + 1
            carry = Progress.from_dict(json.loads(row["carry"])) if row["carry"] else Progress()
            transcript = self.transcripts / f"{task}.{number}.jsonl"
            self._db.execute(
                "UPDATE tasks SET status = 'in_progress', attempts = ?, owner = ?, agent = ?, "
                "reason = NULL, updated_at = ? WHERE id = ?",
                (number, owner, agent, now, task),
            )
            self._db.execute(
                "INSERT INTO attempts (task_id, number, agent, owner, engine, started_at, "
                "heartbeat_at, resume, transcript) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    task,
                    number,
                    agent,
                    owner,
                    engine,
                    now,
                    now,
                    json.dumps(carry.to_dict()),
                    str(transcript),
                ),
            )
            resumed = ""
            if carry.iterations:
                resumed = f", resuming after iteration {carry.iterations}"
            elif not carry.empty:
                resumed = ", restarting after an interruption"
            self._event(
                "task.assigned",
                f"attempt {number} by {agent}{resumed}",
                task=task,
                attempt=number,
                agent=agent,
                owner=owner,
                now=now,
            )
        return Claim(task, number, agent, carry, transcript)

    def heartbeat(self, owner: str) -> None:
        """Renew the lease of this run and of every attempt it has open."""
        now = time.time()
        with self._tx():
            self._db.execute("UPDATE runs SET heartbeat_at = ? WHERE owner = ?", (now, owner))
            self._db.execute(
                "UPDATE attempts SET heartbeat_at = ? WHERE owner = ? AND ended_at IS NULL",
                (now, owner),
            )

    def note(self, owner: str, claim: Claim, kind: Kind, message: str) -> None:
        """Record something an attempt did on its way (a claim sent back)."""
        with self._tx():
            self._event(
                kind,
                message,
                task=claim.task,
                attempt=claim.number,
                agent=claim.agent,
                owner=owner,
            )

    def finish(self, owner: str, claim: Claim, outcome: AttemptOutcome, max_attempts: int) -> None:
        """Record an attempt's outcome and move the task (and its dependents) on."""
        with self._tx():
            self._finish(claim, outcome, owner=owner, max_attempts=max_attempts, now=time.time())

    def _finish(
        self,
        claim: Claim,
        outcome: AttemptOutcome,
        *,
        owner: str,
        max_attempts: int,
        now: float,
    ) -> None:
        task = claim.task
        status: Status
        kind: Kind
        if outcome.outcome == "complete":
            status, kind = "complete", "task.complete"
        elif outcome.outcome == "review":
            status, kind = "review", "task.review"
        elif outcome.outcome == "failed":
            status, kind = "failed", "task.failed"
        else:
            failures = self._db.execute(
                "SELECT failures FROM tasks WHERE id = ?", (task,)
            ).fetchone()[0]
            if failures + 1 < max_attempts:
                status, kind = "pending", "task.retried"
            else:
                status, kind = "failed", "task.failed"
        self._db.execute(
            "UPDATE attempts SET ended_at = ?, outcome = ?, message = ?, halt = ?, turns = ?, "
            "tool_calls = ?, iterations = ?, usage = ?, elapsed = ? "
            "WHERE task_id = ? AND number = ?",
            (
                now,
                outcome.outcome,
                outcome.message,
                json.dumps(outcome.halt) if outcome.halt is not None else None,
                outcome.turns,
                outcome.tool_calls,
                outcome.iterations,
                json.dumps(dict(outcome.usage)),
                outcome.elapsed,
                task,
                claim.number,
            ),
        )
        failures_sql = "failures + 1" if outcome.outcome == "retry" else "0"
        self._db.execute(
            f"UPDATE tasks SET status = ?, reason = ?, owner = NULL, carry = NULL, "
            f"failures = {failures_sql}, updated_at = ? WHERE id = ?",
            (status, None if status == "complete" else outcome.message, now, task),
        )
        message = outcome.message
        if kind == "task.retried":
            message = f"transient failure, will try again: {message}"
        elif outcome.outcome == "retry":
            message = f"gave up after {max_attempts} attempt(s): {message}"
        self._event(
            kind, message, task=task, attempt=claim.number, agent=claim.agent, owner=owner, now=now
        )
        if status == "complete":
            for freed in self._update_blocked(now, dependents_of=task):
                self._event(
                    "task.unblocked",
                    f"its dependencies are complete (the last: {task})",
                    task=freed,
                    owner=owner,
                    now=now,
                )

    def end(self, owner: str) -> dict[str, int]:
        """Record the end of the run; returns the count of tasks per status."""
        now = time.time()
        with self._tx():
            self._db.execute("UPDATE runs SET ended_at = ? WHERE owner = ?", (now, owner))
            counts = self._counts()
            self._event("board.finished", _describe_counts(counts), owner=owner, now=now)
        return counts

    # --- by hand -------------------------------------------------------------------------------

    def retry(self, ids: Sequence[str]) -> list[str]:
        """Put tasks in review or failed back to pending (or blocked); returns what each became.
        Unknown ids and tasks in another status are refused before anything changes."""
        now = time.time()
        with self._tx():
            rows = {}
            for task in ids:
                row = self._db.execute(
                    "SELECT status, reason FROM tasks WHERE id = ?", (task,)
                ).fetchone()
                if row is None:
                    raise BoardConfigError(f"the board has no task {task!r}")
                if row["status"] not in ("review", "failed"):
                    raise BoardConfigError(
                        f"task {task!r} is {row['status']}; only a task in review or failed "
                        "can be retried"
                    )
                rows[task] = row
            for task, row in rows.items():
                self._db.execute(
                    "UPDATE tasks SET status = 'pending', reason = NULL, failures = 0, "
                    "carry = NULL, updated_at = ? WHERE id = ?",
                    (now, task),
                )
                self._event(
                    "task.retried",
                    f"by hand (it was {row['status']}: {row['reason']})",
                    task=task,
                    now=now,
                )
            self._update_blocked(now)
            return [
                self._db.execute("SELECT status FROM tasks WHERE id = ?", (t,)).fetchone()[0]
                for t in ids
            ]

    # --- reading ---------------------------------------------------------------------------------

    def tasks(self) -> list[TaskState]:
        deps: dict[str, list[str]] = {}
        for task, dep in self._db.execute("SELECT task_id, depends_on FROM deps ORDER BY 1, 2"):
            deps.setdefault(task, []).append(dep)
        rows = self._db.execute(
            "SELECT * FROM tasks ORDER BY present DESC, priority DESC, id"
        ).fetchall()
        status = {r["id"]: r["status"] for r in rows}
        states = []
        for r in rows:
            reason = r["reason"]
            if r["status"] == "blocked":
                waiting = [d for d in deps.get(r["id"], []) if status.get(d) != "complete"]
                reason = "waits for " + ", ".join(f"{d} ({status.get(d)})" for d in waiting)
            states.append(
                TaskState(
                    id=r["id"],
                    title=r["title"],
                    role=r["role"],
                    priority=r["priority"],
                    status=r["status"],
                    depends_on=tuple(deps.get(r["id"], [])),
                    attempts=r["attempts"],
                    agent=r["agent"],
                    reason=reason,
                    updated_at=r["updated_at"],
                    present=bool(r["present"]),
                )
            )
        return states

    def attempts(self, task: str | None = None) -> list[AttemptState]:
        query = "SELECT * FROM attempts"
        args: tuple[str, ...] = ()
        if task is not None:
            query += " WHERE task_id = ?"
            args = (task,)
        rows = self._db.execute(query + " ORDER BY task_id, number", args).fetchall()
        return [
            AttemptState(
                task=r["task_id"],
                number=r["number"],
                agent=r["agent"],
                owner=r["owner"],
                engine=r["engine"],
                started_at=r["started_at"],
                heartbeat_at=r["heartbeat_at"],
                ended_at=r["ended_at"],
                outcome=r["outcome"],
                message=r["message"],
                resume=Progress.from_dict(json.loads(r["resume"])),
                transcript=Path(r["transcript"]),
            )
            for r in rows
        ]

    def events(self, *, after: int = 0, limit: int | None = None) -> list[BoardEvent]:
        """The event log after `seq` `after`, oldest first; with `limit`, only the newest."""
        if limit is not None:
            rows = self._db.execute(
                "SELECT * FROM (SELECT * FROM events WHERE seq > ? ORDER BY seq DESC LIMIT ?) "
                "ORDER BY seq",
                (after, limit),
            ).fetchall()
        else:
            rows = self._db.execute(
                "SELECT * FROM events WHERE seq > ? ORDER BY seq", (after,)
            ).fetchall()
        return [
            BoardEvent(
                r["seq"], r["at"], r["kind"], r["message"], r["task_id"], r["attempt"], r["agent"]
            )
            for r in rows
        ]

    def last_run(self) -> dict[str, Any] | None:
        row = self._db.execute("SELECT * FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()
        return dict(row) if row is not None else None

    def counts(self) -> dict[str, int]:
        return self._counts()

    def _counts(self) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(STATUSES, 0)
        for status, n in self._db.execute(
            "SELECT status, COUNT(*) FROM tasks WHERE present = 1 GROUP BY status"
        ):
            counts[status] = n
        return counts


def _describe_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {status}" for status, n in counts.items() if n) or "no tasks"


def _describe_halt(halt: dict[str, Any]) -> str:
    kind = halt.get("type", "?")
    rest = ", ".join(f"{k}={v!r}" for k, v in halt.items() if k != "type")
    return f"{kind}({rest})"
