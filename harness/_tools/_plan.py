"""A plan the agent keeps in the session: steps with a status, written by the `update_plan` tool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

from attrs import frozen

from ._base import Tool, ToolContext, tool

PlanStatus = Literal["pending", "in_progress", "done"]
_STATUSES: tuple[str, ...] = get_args(PlanStatus)


@frozen
class PlanStep:
    """One step of a plan."""

    title: str
    status: PlanStatus = "pending"


@frozen
class Plan:
    """The agent's plan: an ordered list of steps."""

    steps: tuple[PlanStep, ...] = ()

    @property
    def open_steps(self) -> tuple[PlanStep, ...]:
        return tuple(s for s in self.steps if s.status != "done")

    @property
    def done_count(self) -> int:
        return len(self.steps) - len(self.open_steps)

    @classmethod
    def from_items(cls, items: Sequence[Mapping[str, Any]]) -> Plan:
        """Build a plan from ``{"title": ..., "status": ...}`` items, naming the bad field."""
        steps = []
        for i, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise ValueError(f"steps[{i}] must be an object with 'title' and 'status'")
            title = item.get("title")
            status = item.get("status", "pending")
            if not isinstance(title, str) or not title.strip():
                raise ValueError(f"steps[{i}].title must be a non-empty string (got {title!r})")
            if status not in _STATUSES:
                raise ValueError(
                    f"steps[{i}].status must be one of {list(_STATUSES)} (got {status!r})"
                )
            steps.append(PlanStep(title.strip(), status))
        return cls(tuple(steps))


def _update_plan(steps: list[dict[str, Any]], ctx: ToolContext) -> str:
    """Replace your plan with these steps; mark each step pending, in_progress or done.

    Args:
        steps: every step of the plan, in order, as {"title": ..., "status": ...}
    """
    plan = Plan.from_items(steps)
    ctx.store.put(plan)
    return f"plan updated: {plan.done_count}/{len(plan.steps)} steps done"


update_plan: Tool = tool(name="update_plan", inline=True)(_update_plan)
