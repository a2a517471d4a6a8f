"""What a board's tasks cost: per attempt, per task, per verified task, read from the
attempts the database recorded.

An attempt's tokens, cost and time are recorded when it ends. An open attempt (running, or
left by a board that stopped) has no figures yet and is counted apart, as ``open``; an
attempt that ended without figures, or whose model had no price, makes every sum it enters
unknown (None): a cost is never guessed, and never zero for want of one.

Reading this module's figures needs neither `harness` nor anyio: `harness board status` is a
fresh process that only reads the database.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable
from typing import Any

from attrs import frozen


@frozen
class Spending:
    """Tokens, cost (None: unknown) and wall time of some attempts."""

    attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    wall_time: float = 0.0

    def __add__(self, other: Spending) -> Spending:
        cost = None
        if self.cost_usd is not None and other.cost_usd is not None:
            cost = self.cost_usd + other.cost_usd
        return Spending(
            self.attempts + other.attempts,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            cost,
            self.wall_time + other.wall_time,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "attempts": self.attempts,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.input_tokens + self.output_tokens,
            "cost_usd": self.cost_usd,
            "wall_time": self.wall_time,
        }


def attempt_spent(usage: str | None, elapsed: float | None) -> Spending:
    """One ended attempt's figures from its row (`usage` as the JSON the store wrote); a
    missing or unreadable value makes the cost unknown."""
    tokens_in, tokens_out, cost = _figures(usage)
    wall = float(elapsed) if elapsed is not None and _amount(elapsed) else 0.0
    return Spending(1, tokens_in, tokens_out, cost, wall)


def _figures(usage: str | None) -> tuple[int, int, float | None]:
    """Input and output tokens and the cost (None: unknown) of a recorded usage text; no
    tokens and an unknown cost when it is missing or not what the store writes."""
    if usage is None:
        return 0, 0, None
    try:
        data = json.loads(usage)
    except ValueError:
        return 0, 0, None
    if not isinstance(data, dict):
        return 0, 0, None
    tokens_in, tokens_out = data.get("input_tokens", 0), data.get("output_tokens", 0)
    if type(tokens_in) is not int or type(tokens_out) is not int or min(tokens_in, tokens_out) < 0:
        return 0, 0, None
    cost = data.get("cost_usd")
    return tokens_in, tokens_out, float(cost) if cost is not None and _amount(cost) else None


def _amount(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


@frozen
class AttemptCost:
    """One attempt of a task: its number, agent and outcome, and what it spent (None while it
    is open)."""

    task: str
    number: int
    agent: str
    outcome: str | None
    spent: Spending | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "agent": self.agent,
            "outcome": self.outcome,
            "spent": None if self.spent is None else self.spent.to_dict(),
        }


@frozen
class TaskCost:
    """A task's attempts and what they spent together. `verified_cost` is what getting the
    task verified cost, every attempt before the one that passed included: the same sum,
    for a complete task only."""

    task: str
    status: str
    attempts: tuple[AttemptCost, ...]
    spent: Spending
    open: int

    @property
    def verified_cost(self) -> Spending | None:
        return self.spent if self.status == "complete" else None

    def to_dict(self) -> dict[str, Any]:
        verified = self.verified_cost
        return {
            "spent": self.spent.to_dict(),
            "verified_cost": None if verified is None else verified.to_dict(),
            "open_attempts": self.open,
            "attempts": [a.to_dict() for a in self.attempts],
        }


@frozen
class BoardCost:
    """A board's spending: everything its ended attempts spent, how many tasks were verified,
    and per verified task both the mean of what each cost (`mean_verified_task_usd`) and
    everything spent, failed tasks included, over their number (`spent_per_verified_task_usd`),
    which is what a verified task really costs the board. Either is None when no task was
    verified or a cost is unknown."""

    spent: Spending
    verified_tasks: int
    verified_spent: Spending
    open_attempts: int

    @property
    def mean_verified_task_usd(self) -> float | None:
        cost = self.verified_spent.cost_usd
        return None if cost is None or not self.verified_tasks else cost / self.verified_tasks

    @property
    def spent_per_verified_task_usd(self) -> float | None:
        cost = self.spent.cost_usd
        return None if cost is None or not self.verified_tasks else cost / self.verified_tasks

    def to_dict(self) -> dict[str, Any]:
        return {
            "spent": self.spent.to_dict(),
            "verified_tasks": self.verified_tasks,
            "verified_spent": self.verified_spent.to_dict(),
            "mean_verified_task_usd": self.mean_verified_task_usd,
            "spent_per_verified_task_usd": self.spent_per_verified_task_usd,
            "open_attempts": self.open_attempts,
        }


def board_totals(rows: Iterable[Any]) -> BoardCost:
    """The board's totals straight from attempt rows (task_id, usage, elapsed, ended_at,
    status), in one pass that builds no value per attempt: `harness board status` reads every
    attempt of a big board for them (`board_cost` gives the same from `TaskCost`s)."""
    sums = [[0, 0, 0, 0.0, 0.0, False], [0, 0, 0, 0.0, 0.0, False]]  # all, verified
    verified: set[str] = set()
    opened = 0
    for task, usage, elapsed, ended_at, status in rows:
        if ended_at is None:
            opened += 1
            continue
        tokens_in, tokens_out, cost = _figures(usage)
        wall = float(elapsed) if elapsed is not None and _amount(elapsed) else 0.0
        complete = status == "complete"
        if complete:
            verified.add(task)
        for into in (sums[0], sums[1]) if complete else (sums[0],):
            into[0] += 1
            into[1] += tokens_in
            into[2] += tokens_out
            if cost is None:
                into[5] = True
            else:
                into[3] += cost
            into[4] += wall
    made = [
        Spending(int(a), int(i), int(o), None if unknown else float(c), float(w))
        for a, i, o, c, w, unknown in sums
    ]
    return BoardCost(made[0], len(verified), made[1], opened)


_TOTALS = """
WITH rows AS (
    SELECT a.task_id AS task, t.status = 'complete' AS complete, a.ended_at IS NOT NULL AS ended,
           CASE WHEN a.elapsed >= 0 THEN a.elapsed ELSE 0 END AS wall,
           CASE WHEN a.usage IS NOT NULL AND json_valid(a.usage) THEN a.usage END AS u
    FROM attempts a JOIN tasks t ON t.id = a.task_id
), judged AS (
    SELECT task, complete, ended, wall, u,
        CASE WHEN u IS NOT NULL AND json_type(u) = 'object'
              AND COALESCE(json_type(u, '$.input_tokens'), 'integer') = 'integer'
              AND COALESCE(json_type(u, '$.output_tokens'), 'integer') = 'integer'
              AND COALESCE(json_extract(u, '$.input_tokens'), 0) >= 0
              AND COALESCE(json_extract(u, '$.output_tokens'), 0) >= 0
             THEN 1 ELSE 0 END AS ok
    FROM rows
), priced AS (
    SELECT *, CASE WHEN ok = 1
                    AND COALESCE(json_type(u, '$.cost_usd'), 'null') IN ('integer', 'real')
                    AND json_extract(u, '$.cost_usd') >= 0
                   THEN 1 ELSE 0 END AS known
    FROM judged
)
SELECT complete,
       COUNT(DISTINCT CASE WHEN ended THEN task END),
       SUM(NOT ended),
       SUM(ended),
       SUM(CASE WHEN ended AND ok THEN COALESCE(json_extract(u, '$.input_tokens'), 0) END),
       SUM(CASE WHEN ended AND ok THEN COALESCE(json_extract(u, '$.output_tokens'), 0) END),
       SUM(CASE WHEN ended AND known THEN json_extract(u, '$.cost_usd') END),
       SUM(CASE WHEN ended AND NOT known THEN 1 ELSE 0 END),
       SUM(CASE WHEN ended THEN wall ELSE 0 END)
FROM priced GROUP BY complete
"""


def sql_totals(db: sqlite3.Connection) -> BoardCost | None:
    """`board_totals` computed by SQLite (its JSON functions read each attempt's usage, several
    times faster than Python on a big board); None where SQLite has no JSON functions."""
    try:
        groups = db.execute(_TOTALS).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such function" in str(exc):
            return None
        raise
    sums = {True: Spending(), False: Spending()}
    verified = opened = 0
    for complete, tasks, open_, ended, tokens_in, tokens_out, cost, unknown, wall in groups:
        spent = Spending(
            int(ended or 0),
            int(tokens_in or 0),
            int(tokens_out or 0),
            None if unknown else float(cost or 0.0),
            float(wall or 0.0),
        )
        sums[bool(complete)] = spent
        opened += int(open_ or 0)
        if complete:
            verified = int(tasks or 0)
    return BoardCost(sums[True] + sums[False], verified, sums[True], opened)


def task_costs(rows: list[Any]) -> dict[str, TaskCost]:
    """Each task's costs from attempt rows (task_id, number, agent, outcome, usage, elapsed,
    ended_at, status), ordered by task and number."""
    costs: dict[str, TaskCost] = {}
    index, count = 0, len(rows)
    while index < count:
        task, status = rows[index]["task_id"], rows[index]["status"]
        made: list[AttemptCost] = []
        ended = tokens_in = tokens_out = opened = 0
        cost: float | None = 0.0
        wall = 0.0
        while index < count and rows[index]["task_id"] == task:
            row = rows[index]
            index += 1
            spent = None
            if row["ended_at"] is None:
                opened += 1
            else:
                spent = attempt_spent(row["usage"], row["elapsed"])
                ended += 1
                tokens_in += spent.input_tokens
                tokens_out += spent.output_tokens
                cost = None if cost is None or spent.cost_usd is None else cost + spent.cost_usd
                wall += spent.wall_time
            made.append(AttemptCost(task, row["number"], row["agent"], row["outcome"], spent))
        total = Spending(ended, tokens_in, tokens_out, cost, wall)
        costs[task] = TaskCost(task, status, tuple(made), total, opened)
    return costs


def board_cost(costs: dict[str, TaskCost]) -> BoardCost:
    """The board's totals over its tasks' costs."""
    spent = Spending()
    verified = Spending()
    count = opened = 0
    for cost in costs.values():
        spent += cost.spent
        opened += cost.open
        if cost.verified_cost is not None:
            verified += cost.verified_cost
            count += 1
    return BoardCost(spent, count, verified, opened)


def money(cost: float | None) -> str:
    """``$0.0123``, or ``unknown``."""
    return "unknown" if cost is None else f"${cost:.4f}"
