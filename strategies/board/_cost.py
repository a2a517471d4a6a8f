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


UNKNOWN = Spending(attempts=1, cost_usd=None)
"""An attempt that ended without figures: one attempt, of unknown cost."""


def attempt_spent(usage: str | None, elapsed: float | None) -> Spending:
    """One ended attempt's figures from its row (`usage` as the JSON the store wrote); a
    missing or unreadable value makes the cost unknown."""
    if usage is None:
        return UNKNOWN
    try:
        data = json.loads(usage)
    except ValueError:
        return UNKNOWN
    if not isinstance(data, dict):
        return UNKNOWN
    tokens = [data.get("input_tokens", 0), data.get("output_tokens", 0)]
    if not all(type(t) is int and t >= 0 for t in tokens):
        return UNKNOWN
    cost = data.get("cost_usd")
    if not _amount(cost):
        cost = None
    wall = float(elapsed) if elapsed is not None and _amount(elapsed) else 0.0
    return Spending(1, tokens[0], tokens[1], cost, wall)


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


def task_costs(rows: list[Any]) -> dict[str, TaskCost]:
    """Each task's costs from attempt rows (task_id, number, agent, outcome, usage, elapsed,
    ended_at, status), ordered by task and number."""
    grouped: dict[str, list[Any]] = {}
    statuses: dict[str, str] = {}
    for row in rows:
        grouped.setdefault(row["task_id"], []).append(row)
        statuses[row["task_id"]] = row["status"]
    costs: dict[str, TaskCost] = {}
    for task, attempts in grouped.items():
        made: list[AttemptCost] = []
        total = Spending()
        opened = 0
        for row in attempts:
            spent = None
            if row["ended_at"] is None:
                opened += 1
            else:
                spent = attempt_spent(row["usage"], row["elapsed"])
                total += spent
            made.append(AttemptCost(task, row["number"], row["agent"], row["outcome"], spent))
        costs[task] = TaskCost(task, statuses[task], tuple(made), total, opened)
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
