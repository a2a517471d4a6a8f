"""`Ralph`: every iteration starts from a fresh context; only the workspace and the check's
last reason carry over."""

from __future__ import annotations

from attrs import frozen

from harness import BudgetExceeded, Completed, ConfigurationError, HaltReason
from harness.extend import Run, check_positive
from termination import Budget

from ._reasons import RalphCompletionUnmet


@frozen(kw_only=True)
class Ralph:
    """Run up to `max_iterations` fresh sessions against a persistent workspace.

    An iteration ends when the agent claims done or its `iteration_budget` runs out; the
    completion check then runs on the workspace. A pass completes the run; otherwise the
    next iteration starts with only the system prompt, the task and the check's reason.
    The run's own budget still bounds the whole run, and `cooldown` seconds (on the run's
    clock) pass between iterations.
    """

    max_iterations: int = 5
    iteration_budget: Budget | None = None
    cooldown: float = 0.0
    name: str = "ralph"

    def __attrs_post_init__(self) -> None:
        check_positive("max_iterations", self.max_iterations, integer=True)
        if (
            isinstance(self.cooldown, bool)
            or not isinstance(self.cooldown, int | float)
            or self.cooldown < 0
        ):
            raise ConfigurationError(f"'cooldown' must be a number >= 0 (got {self.cooldown!r})")
        if self.iteration_budget is not None and not isinstance(self.iteration_budget, Budget):
            raise ConfigurationError(
                f"'iteration_budget' must be a Budget (got {self.iteration_budget!r})"
            )

    async def run(self, run: Run) -> HaltReason:
        carry: str | None = None
        last_reason = ""
        for iteration in range(1, self.max_iterations + 1):
            if iteration > 1 and self.cooldown:
                await run.clock.sleep(self.cooldown)
            session = run.new_session(carry=carry, limit=self.iteration_budget, on_claim="return")
            end = await session.run()
            reason = end.reason
            if reason is not None and not _iteration_ran_out(reason):
                return reason
            missing = await session.check(end.snapshot)
            if missing is None:
                return Completed()
            last_reason = missing
            carry = _carry(
                iteration, self.max_iterations, end.snapshot.claims_done, reason, missing
            )
        return RalphCompletionUnmet(self.max_iterations, last_reason)


def _carry(
    iteration: int, most: int, claimed: bool, reason: HaltReason | None, missing: str
) -> str:
    """What the next iteration is told about how this one ended.

    A claim of done is what happened whenever the agent made one, even on the very turn that
    used up the iteration's budget (the budget is checked first and ends the session, but the
    agent did not run out of room: it stopped)."""
    if claimed or reason is None:
        how = (
            f"Iteration {iteration} ended when you claimed the task was done, and the "
            "completion check rejected the claim, saying what is still missing"
        )
    else:
        how = (
            f"Iteration {iteration} ran out of its iteration budget ({reason.describe()}) "
            "before you claimed the task was done; the completion check then looked at the "
            "workspace and reported what is still missing"
        )
    return (
        f"This is iteration {iteration + 1} of at most {most}, in a fresh context. {how}:\n"
        f"{missing}\n"
        "The workspace keeps everything done so far; look at it before you continue."
    )


def _iteration_ran_out(reason: HaltReason) -> bool:
    return isinstance(reason, BudgetExceeded) and reason.scope == "session"
