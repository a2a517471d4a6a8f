"""Run a spec's checks against a workspace outside any run (for `harness check` and hooks)."""

from __future__ import annotations

from pathlib import Path

from attrs import frozen

from checks import CheckVerdict, run_check
from harness import SessionStateSnapshot
from harness.extend import Clock, SystemClock

from .._spec import Spec


@frozen
class Checked:
    """The verdict of every check, in order, and whether the overall deadline cut them off."""

    verdicts: tuple[CheckVerdict, ...]
    timed_out: bool = False

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts)


async def run_checks(
    spec: Spec,
    workspace: Path | None,
    *,
    final_text: str | None = None,
    time_limit: float | None = None,
    clock: Clock | None = None,
) -> Checked:
    """Every configured check in turn, each failing closed under the spec's check timeout.

    With `time_limit`, the checks together get that many seconds: the check running at the
    deadline is cancelled (its processes with it), and it and every check not yet started
    fail with a reason naming the deadline.
    """
    clock = clock if clock is not None else SystemClock()
    snapshot = SessionStateSnapshot.standalone(
        workspace,
        task=spec.prompt or "",
        final_text=final_text,
        now=clock.now(),
    )
    deadline = float("inf") if time_limit is None else clock.now() + time_limit
    timeout = spec.policy.check_timeout
    verdicts: list[CheckVerdict] = []
    with clock.deadline_scope(deadline) as scope:
        for check in spec.checks:
            verdicts.append(await run_check(check, snapshot, time_limit=timeout, clock=clock))
    if not scope.cancelled_caught:
        return Checked(tuple(verdicts))
    for i, check in enumerate(spec.checks[len(verdicts) :]):
        status = "did not finish" if i == 0 else "was not started"
        verdicts.append(
            CheckVerdict(check, f"{status} within the checks' {time_limit:g}s deadline")
        )
    return Checked(tuple(verdicts), timed_out=True)
