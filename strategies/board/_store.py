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
from contextlib import contextmanager, suppress
from pathlib import Path

from harness import HaltReason

from ._attempt import AttemptOutcome, classify
from ._errors import BoardConfigError, state_error
from ._events import BoardEvent, Kind
from ._records import FINISHED, BoardReader, Claim, OpenAttempt, Status
from ._recovery import AttemptProgress, read_attempt
from ._schema import connect
from ._tasks import BoardTask

__all__ = ["FINISHED", "BoardStore", "Claim"]


class BoardStore(BoardReader):
    """The board's database (see the module docstring)."""

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: str = "normal",
        transcripts: Path | None = None,
        read_only: bool = False,
    ) -> None:
        self.path = Path(path)
        self.transcripts = transcripts or self.path.parent / "transcripts"
        self._db = connect(self.path, synchronous=synchronous, read_only=read_only)
        self.recorded: list[BoardEvent] = []

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> BoardStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[None]:
        """One transaction; the database failing in it (damaged, read-only, a full disk) is a
        `BoardStateError`, and nothing of the transaction is kept."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                with suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            with suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
            raise state_error(exc, self.path) from None

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
            # A transcript not all trusted is never taken for a finished run: the attempt is
            # interrupted, and the next one checks the work first.
            if record.halt is not None and record.problem is None:
                # The run had ended; the board died before it recorded the outcome.
                halt = HaltReason.from_dict(record.halt)
                outcome = AttemptOutcome(
                    classify(record.halt, record.verified),
                    f"(recovered from the transcript) {halt.describe()}",
                    halt=record.halt,
                    turns=record.progress.turns,
                    tool_calls=record.progress.tool_calls,
                    checkpoint=record.checkpoint,
                )
                claim = Claim(task, number, agent, AttemptProgress(), Path(row["transcript"]))
                self._finish(claim, outcome, owner=owner, max_attempts=max_attempts, now=now)
                continue
            carried = AttemptProgress.from_dict(json.loads(row["resume"])) + record.progress
            self._db.execute(
                "UPDATE attempts SET ended_at = ?, outcome = 'interrupted', message = ?, "
                "turns = ?, tool_calls = ?, checkpoint = ? WHERE task_id = ? AND number = ?",
                (
                    now,
                    "the board stopped while the attempt ran",
                    record.progress.turns,
                    record.progress.tool_calls,
                    record.checkpoint,
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
            damaged = (
                "" if record.problem is None else f"; its transcript is damaged ({record.problem})"
            )
            self._event(
                "task.retried",
                f"attempt {number} was interrupted (the board stopped){damaged}; the next "
                f"attempt resumes {where}, with {carried.turns} turn(s) already spent",
                task=task,
                attempt=number,
                agent=agent,
                owner=owner,
                now=now,
            )

    def _update_blocked(self, now: float, *, dependents_of: str | None = None) -> list[str]:
        """Pending or blocked tasks (only those that depend on `dependents_of`, when given)
        take the status their dependencies give them; returns the ids that became pending."""
        waits = (
            "SELECT t.id, t.status, EXISTS (SELECT 1 FROM deps d JOIN tasks u ON "
            "u.id = d.depends_on WHERE d.task_id = t.id AND u.status != 'complete') AS waits "
        )
        where = "t.present = 1 AND t.status IN ('pending', 'blocked')"
        if dependents_of is None:
            rows = self._db.execute(f"{waits} FROM tasks t WHERE {where}").fetchall()
        else:
            # From the dependents (CROSS JOIN keeps that order): a task that completes costs
            # what depends on it, not a scan of every pending task.
            rows = self._db.execute(
                f"{waits} FROM deps r CROSS JOIN tasks t ON t.id = r.task_id "
                f"WHERE r.depends_on = ? AND {where}",
                (dependents_of,),
            ).fetchall()
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
                # The index on (status, role, priority, id): the first row is the answer, when
                # the planner, not knowing how many tasks each role has, might pick another.
                "SELECT id, attempts, carry FROM tasks INDEXED BY tasks_ready WHERE status = "
                "'pending' AND present = 1 AND role = ? ORDER BY priority DESC, id LIMIT 1",
                (role,),
            ).fetchone()
            if row is None:
                busy = self._db.execute(
                    "SELECT 1 FROM tasks WHERE present = 1 AND status IN "
                    "('pending', 'in_progress') LIMIT 1"
                ).fetchone()
                return None if busy else FINISHED
            # The attempt's number is the next in `attempts`; `tasks.attempts` counts the
            # charged ones (an attempt stopped for its account's usage limit is not).
            task = row["id"]
            number = self._db.execute(
                "SELECT COALESCE(MAX(number), 0) + 1 FROM attempts WHERE task_id = ?", (task,)
            ).fetchone()[0]
            carry = (
                AttemptProgress.from_dict(json.loads(row["carry"]))
                if row["carry"]
                else AttemptProgress()
            )
            transcript = self.transcripts / f"{task}.{number}.jsonl"
            self._db.execute(
                "UPDATE tasks SET status = 'in_progress', attempts = attempts + 1, owner = ?, "
                "agent = ?, reason = NULL, updated_at = ? WHERE id = ?",
                (owner, agent, now, task),
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
        carry: AttemptProgress | None = None
        if outcome.outcome == "complete":
            status, kind = "complete", "task.complete"
        elif outcome.outcome == "paused":
            # Not charged: pending again, resuming after what this attempt got done.
            status, kind = "pending", "task.paused"
            carry = claim.carry + read_attempt(claim.transcript).progress
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
            "tool_calls = ?, iterations = ?, usage = ?, elapsed = ?, checkpoint = ? "
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
                outcome.checkpoint,
                task,
                claim.number,
            ),
        )
        failures_sql = {"retry": "failures + 1", "paused": "failures"}.get(outcome.outcome, "0")
        attempts_sql = "attempts - 1" if outcome.outcome == "paused" else "attempts"
        self._db.execute(
            f"UPDATE tasks SET status = ?, reason = ?, owner = NULL, carry = ?, "
            f"failures = {failures_sql}, attempts = {attempts_sql}, updated_at = ? WHERE id = ?",
            (
                status,
                None if status == "complete" else outcome.message,
                None if carry is None else json.dumps(carry.to_dict()),
                now,
                task,
            ),
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

    # --- accounts ----------------------------------------------------------------------------

    def pause_account(
        self, owner: str, account: str, until: float, reason: str, claim: Claim | None = None
    ) -> None:
        """Record that `account` is at its usage limit until `until` (Unix time); a pause
        already recorded is extended, never shortened."""
        now = time.time()
        with self._tx():
            row = self._db.execute(
                "SELECT paused_until FROM accounts WHERE name = ?", (account,)
            ).fetchone()
            before = row["paused_until"] if row is not None else None
            if before is not None and before >= until:
                return
            self._db.execute(
                "INSERT INTO accounts (name, paused_until, reason, updated_at) VALUES "
                "(?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET paused_until = "
                "excluded.paused_until, reason = excluded.reason, updated_at = excluded.updated_at",
                (account, until, reason, now),
            )
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(until))
            self._event(
                "account.paused",
                f"{account} is at its usage limit until {when}: {reason}",
                task=claim.task if claim is not None else None,
                attempt=claim.number if claim is not None else None,
                agent=account,
                owner=owner,
                now=now,
            )

    def resume_account(self, owner: str, account: str, why: str) -> None:
        """Record that `account` works again (nothing happens when it was not paused)."""
        now = time.time()
        with self._tx():
            cursor = self._db.execute(
                "UPDATE accounts SET paused_until = NULL, reason = NULL, updated_at = ? "
                "WHERE name = ? AND paused_until IS NOT NULL",
                (now, account),
            )
            if cursor.rowcount:
                message = f"{account} works again: {why}"
                self._event("account.resumed", message, agent=account, owner=owner, now=now)

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


def _describe_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {status}" for status, n in counts.items() if n) or "no tasks"
