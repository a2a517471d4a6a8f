"""`PlanCheck`: the plan the agent keeps in the session has every step done."""

from __future__ import annotations

from attrs import frozen

from harness import Plan, SessionStateSnapshot

from ._compose import Combinable

_SHOW = 3


@frozen
class PlanCheck(Combinable):
    """Complete when the latest `Plan` in the session store has steps and all are done.

    The plan is written by the `update_plan` tool; a session without one is not complete.
    """

    def description(self) -> str:
        return (
            "Every step of your plan is done: keep the plan with the update_plan tool and mark "
            "a step done only when it is."
        )

    async def check(self, state: SessionStateSnapshot) -> str | None:
        plan = state.latest(Plan)
        if plan is None:
            return "there is no plan in this session; write it with update_plan and finish it"
        if not plan.steps:
            return "the plan has no steps; write the real steps with update_plan and finish them"
        open_steps = plan.open_steps
        if not open_steps:
            return None
        names = ", ".join(repr(step.title) for step in open_steps[:_SHOW])
        more = f" and {len(open_steps) - _SHOW} more" if len(open_steps) > _SHOW else ""
        return (
            f"{len(open_steps)} of {len(plan.steps)} plan steps are not done: {names}{more}; "
            "finish them and mark them done with update_plan"
        )
