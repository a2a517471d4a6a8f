"""`Ralph`: every iteration starts from a fresh context; only the workspace and the check's
last reason carry over (and, with ``rollback="on_regression"``, an iteration that broke what
worked is undone: see `strategies._rollback`)."""

from __future__ import annotations

from typing import Literal

from attrs import evolve, frozen

from harness import BudgetExceeded, Completed, ConfigurationError, HaltReason
from harness.extend import Run, check_positive
from termination import Budget

from ._reasons import RalphCompletionUnmet
from ._rollback import ROLLBACK_SOURCE, RollbackGuard

Rollback = Literal["never", "on_regression"]
ROLLBACKS: tuple[Rollback, ...] = ("never", "on_regression")


@frozen(kw_only=True)
class Ralph:
    """Run up to `max_iterations` fresh sessions against a persistent workspace.

    An iteration ends when the agent claims done or its `iteration_budget` runs out; the
    completion check then runs on the workspace. A pass completes the run; otherwise the
    next iteration starts with only the system prompt, the task and the check's reason.
    The run's own budget still bounds the whole run, and `cooldown` seconds (on the run's
    clock) pass between iterations.

    The workspace is checkpointed at the end of every iteration when the run keeps
    checkpoints (`Harness(checkpoints=True)`). With ``rollback="on_regression"`` it always
    is, before the first iteration too, with the progress the check measured; an iteration
    that ends below the best checkpoint so far is rolled back to it, and the next iteration
    is told what broke (tagged feedback from ``rollback``).

    Args:
        max_iterations: Fresh sessions at most.
        iteration_budget: Limits of each iteration (a `Budget`); the run's budget still bounds
            them all.
        cooldown: Seconds between iterations, on the run's clock.
        rollback: ``"never"``, or ``"on_regression"``: roll an iteration that ends below the
            best checkpoint back to it.
        name: The strategy's name in events and results.
    """

    max_iterations: int = 5
    iteration_budget: Budget | None = None
    cooldown: float = 0.0
    rollback: Rollback = "never"
    name: str = "ralph"

    @property
    def measures_start(self) -> bool:
        """With rollback, the run's start is checkpointed and measured: the first best."""
        return self.rollback == "on_regression"

    def __attrs_post_init__(self) -> None:
        check_positive("max_iterations", self.max_iterations, integer=True)
        if (
            isinstance(self.cooldown, bool)
            or not isinstance(self.cooldown, int | float)
            or self.cooldown < 0
        ):
            raise ConfigurationError(f"'cooldown' must be a number >= 0 (got {self.cooldown!r})")
        if self.rollback not in ROLLBACKS:
            raise ConfigurationError(
                f"'rollback' must be one of {', '.join(ROLLBACKS)} (got {self.rollback!r})"
            )
        if self.iteration_budget is not None and not isinstance(self.iteration_budget, Budget):
            raise ConfigurationError(
                f"'iteration_budget' must be a Budget (got {self.iteration_budget!r})"
            )

    async def run(self, run: Run) -> HaltReason:
        guard = await RollbackGuard.start(run) if self.rollback == "on_regression" else None
        carry: str | None = None
        rolled_back: str | None = None
        last_reason = ""
        for iteration in range(1, self.max_iterations + 1):
            if iteration > 1 and self.cooldown:
                await run.clock.sleep(self.cooldown)
            session = run.new_session(carry=carry, limit=self.iteration_budget, on_claim="return")
            if rolled_back is not None:
                session.inject(ROLLBACK_SOURCE, rolled_back)
            end = await session.run()
            reason = end.reason
            if reason is not None and not _iteration_ran_out(reason):
                return reason
            # With rollback, this verdict's progress is compared with the best checkpoint's:
            # the check measures the whole work (no quicker rejection).
            judged = end.snapshot if guard is None else evolve(end.snapshot, measure_whole=True)
            assessed = await session.assess(judged)
            saved = await run.checkpoint(f"iteration {iteration} ended", assessed.progress)
            if assessed.reason is None:
                return Completed()
            if run.check_broken is not None:  # the check cannot judge: no iteration can fix it
                return run.check_broken
            last_reason = assessed.reason
            rolled_back = await guard.after(iteration, saved) if guard is not None else None
            carry = _carry(
                iteration,
                self.max_iterations,
                end.snapshot.claims_done,
                reason,
                last_reason,
                rolled_back=rolled_back is not None,
            )
        return RalphCompletionUnmet(self.max_iterations, last_reason)


def _carry(
    iteration: int,
    most: int,
    claimed: bool,
    reason: HaltReason | None,
    missing: str,
    *,
    rolled_back: bool = False,
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
    workspace = (
        "The workspace was then rolled back (the harness says how below); look at it before "
        "you continue."
        if rolled_back
        else "The workspace keeps everything done so far; look at it before you continue."
    )
    return (
        f"This is iteration {iteration + 1} of at most {most}, in a fresh context. {how}:\n"
        f"{missing}\n{workspace}"
    )


def _iteration_ran_out(reason: HaltReason) -> bool:
    return isinstance(reason, BudgetExceeded) and reason.scope == "session"
