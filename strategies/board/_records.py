"""What the board's database holds, as values, and the reading half of `BoardStore`
(`harness board status` reads a board's database while the board runs)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from attrs import frozen

if TYPE_CHECKING:
    # Loaded by the methods that build them: both import `harness`, which listing the tasks
    # and counting them (`harness board status`) does not need.
    from ._cost import BoardCost, TaskCost
    from ._events import BoardEvent
    from ._recovery import AttemptProgress

Status = Literal["pending", "blocked", "in_progress", "complete", "review", "failed"]
STATUSES: tuple[Status, ...] = (
    "pending",
    "blocked",
    "in_progress",
    "complete",
    "review",
    "failed",
)


@frozen
class Claim:
    """A task an agent has taken: the attempt it opened."""

    task: str
    number: int
    agent: str
    carry: AttemptProgress
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
class AccountState:
    """An account agents draw their quota from, as the board last saw it: paused until
    `paused_until` (Unix time), or working (None)."""

    name: str
    paused_until: float | None
    reason: str | None
    updated_at: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "paused_until": self.paused_until,
            "reason": self.reason,
            "updated_at": self.updated_at,
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
    resume: AttemptProgress
    transcript: Path
    checkpoint: str | None = None
    """The attempt's best checkpoint (`harness checkpoints restore` takes it), if any."""


class BoardReader:
    """Reads the tasks, attempts, runs and events of a board's database."""

    path: Path
    _db: sqlite3.Connection

    def tasks(self, *, status: str | None = None, limit: int | None = None) -> list[TaskState]:
        """The tasks (present ones first, then by priority and id); with `status`, only those
        in it, and with `limit`, only the first `limit` of them: `harness board status` reads
        a few rows of a big board through the index, not every row."""
        query = "SELECT * FROM tasks"
        args: list[object] = []
        if status is not None:
            query += " WHERE status = ?"
            args.append(status)
        query += " ORDER BY present DESC, priority DESC, id"
        if limit is not None:
            query += " LIMIT ?"
            args.append(limit)
        rows = self._db.execute(query, args).fetchall()
        deps: dict[str, list[tuple[str, str | None]]] = {}
        if status is None:
            links = self._db.execute(
                "SELECT d.task_id, d.depends_on, u.status FROM deps d "
                "LEFT JOIN tasks u ON u.id = d.depends_on ORDER BY 1, 2"
            )
        else:
            # Only the dependencies of the rows read (SQLite's default cap on variables is
            # 32766; a page of a listing is far below it).
            ids = [r["id"] for r in rows]
            links = self._db.execute(
                "SELECT d.task_id, d.depends_on, u.status FROM deps d LEFT JOIN tasks u ON "
                f"u.id = d.depends_on WHERE d.task_id IN ({', '.join('?' * len(ids))}) "
                "ORDER BY 1, 2",
                ids,
            )
        for task, dep, dep_status in links:
            deps.setdefault(task, []).append((dep, dep_status))
        states = []
        for r in rows:
            reason = r["reason"]
            mine = deps.get(r["id"], [])
            if r["status"] == "blocked":
                waiting = [(d, s) for d, s in mine if s != "complete"]
                reason = "waits for " + ", ".join(f"{d} ({s})" for d, s in waiting)
            states.append(
                TaskState(
                    id=r["id"],
                    title=r["title"],
                    role=r["role"],
                    priority=r["priority"],
                    status=r["status"],
                    depends_on=tuple(d for d, _ in mine),
                    attempts=r["attempts"],
                    agent=r["agent"],
                    reason=reason,
                    updated_at=r["updated_at"],
                    present=bool(r["present"]),
                )
            )
        return states

    def attempts(self, task: str | None = None) -> list[AttemptState]:
        from ._recovery import AttemptProgress

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
                resume=AttemptProgress.from_dict(json.loads(r["resume"])),
                transcript=Path(r["transcript"]),
                checkpoint=r["checkpoint"],
            )
            for r in rows
        ]

    def events(self, *, after: int = 0, limit: int | None = None) -> list[BoardEvent]:
        """The event log after `seq` `after`, oldest first; with `limit`, only the newest."""
        from ._events import BoardEvent

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

    def accounts(self) -> list[AccountState]:
        """Every account that was ever paused, by name."""
        rows = self._db.execute("SELECT * FROM accounts ORDER BY name").fetchall()
        return [
            AccountState(r["name"], r["paused_until"], r["reason"], r["updated_at"]) for r in rows
        ]

    def paused_accounts(self) -> list[AccountState]:
        """The accounts paused now."""
        return [a for a in self.accounts() if a.paused_until is not None]

    def costs(self, tasks: Sequence[str] | None = None) -> dict[str, TaskCost]:
        """What each task's attempts spent, by task id (tasks never attempted are absent);
        with `tasks`, those tasks' only. See `strategies.board._cost`."""
        from ._cost import task_costs

        query = (
            "SELECT a.task_id, a.number, a.agent, a.outcome, a.usage, a.elapsed, a.ended_at, "
            "t.status FROM attempts a JOIN tasks t ON t.id = a.task_id"
        )
        args: list[str] = []
        if tasks is not None:
            # A listing's page of tasks, far below SQLite's cap on variables (32766).
            query += f" WHERE a.task_id IN ({', '.join('?' * len(tasks))})"
            args = list(tasks)
        rows = self._db.execute(query + " ORDER BY a.task_id, a.number", args).fetchall()
        return task_costs(rows)

    def board_cost(self) -> BoardCost:
        """What the board's attempts spent, and per verified task, read in one pass (by
        SQLite's JSON functions where it has them)."""
        from ._cost import board_totals, sql_totals

        totals = sql_totals(self._db)
        if totals is not None:
            return totals
        return board_totals(
            self._db.execute(
                "SELECT a.task_id, a.usage, a.elapsed, a.ended_at, t.status "
                "FROM attempts a JOIN tasks t ON t.id = a.task_id"
            )
        )

    def last_run(self) -> dict[str, Any] | None:
        row = self._db.execute("SELECT * FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()
        return dict(row) if row is not None else None

    def counts(self) -> dict[str, int]:
        """The tasks per status, of the tasks whose file is present."""
        return self._counts()

    def recorded_counts(self) -> dict[str, int]:
        """The tasks per status, those whose file was removed included (what `tasks(status=)`
        can list)."""
        counts: dict[str, int] = dict.fromkeys(STATUSES, 0)
        for status, n in self._db.execute("SELECT status, COUNT(*) FROM tasks GROUP BY status"):
            counts[status] = n
        return counts

    def _counts(self) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(STATUSES, 0)
        for status, n in self._db.execute(
            "SELECT status, COUNT(*) FROM tasks WHERE present = 1 GROUP BY status"
        ):
            counts[status] = n
        return counts
