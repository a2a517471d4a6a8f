"""Run a spec's checks against a workspace outside any run (for `harness check` and hooks)."""

from __future__ import annotations

from pathlib import Path

from attrs import frozen

from harness import SessionStateSnapshot
from harness.extend import Clock, SystemClock
from termination import TerminationPolicy

from ._spec import Spec


@frozen
class Verdict:
    """One check's verdict: `reason` is None when it passed."""

    description: str
    reason: str | None

    @property
    def passed(self) -> bool:
        return self.reason is None


@frozen
class Checked:
    """The verdict of every check, in order, and whether the overall deadline cut them off."""

    verdicts: tuple[Verdict, ...]
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
    verdicts: list[Verdict] = []
    with clock.deadline_scope(deadline) as scope:
        for check in spec.checks:
            policy = TerminationPolicy(
                completion_check=check, check_timeout=spec.policy.check_timeout
            )
            reason = await policy.start_session(clock=clock).check(snapshot)
            verdicts.append(Verdict(check.description(), reason))
    if not scope.cancelled_caught:
        return Checked(tuple(verdicts))
    for i, check in enumerate(spec.checks[len(verdicts) :]):
        status = "did not finish" if i == 0 else "was not started"
        verdicts.append(
            Verdict(check.description(), f"{status} within the checks' {time_limit:g}s deadline")
        )
    return Checked(tuple(verdicts), timed_out=True)
