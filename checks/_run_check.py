"""`run_check`: the one place a completion check's answer becomes a `CheckVerdict`.

The check fails closed. An exception, an answer that is neither None nor a non-empty
string, or (with a time limit) a check still running at the deadline is "not complete", with
a reason naming the check and what went wrong. The policy, Ralph, `harness check` and the
stop hooks all ask a check through here, so the agent reads the same reason on every path.
"""

from __future__ import annotations

from attrs import frozen

from harness import SessionStateSnapshot
from harness.extend import Clock, SystemClock

from ._protocol import CompletionCheck


@frozen
class CheckVerdict:
    """One completion check's outcome: `reason` is None when it passed, otherwise what is
    missing (or why the check could not say)."""

    check: CompletionCheck
    reason: str | None

    @property
    def passed(self) -> bool:
        return self.reason is None

    @property
    def description(self) -> str:
        """What "done" means to the check, as it tells the agent."""
        return self.check.description()


async def run_check(
    check: CompletionCheck,
    snapshot: SessionStateSnapshot,
    *,
    time_limit: float | None = None,
    clock: Clock | None = None,
) -> CheckVerdict:
    """Ask `check` about `snapshot`, failing closed.

    With `time_limit`, the check runs under a deadline scope that many seconds from now on
    `clock` (the system clock by default): a check still running then is cancelled (and its
    processes with it) and is "not complete". Cancellation from outside is not caught.
    """
    name = type(check).__name__
    try:
        if time_limit is None:
            answer: object = await check.check(snapshot)
        else:
            clock = clock if clock is not None else SystemClock()
            with clock.deadline_scope(clock.now() + time_limit) as scope:
                answer = await check.check(snapshot)
            if scope.cancelled_caught:
                return CheckVerdict(
                    check, f"the completion check {name} did not finish within {time_limit:g}s"
                )
    except Exception as exc:
        return CheckVerdict(
            check, f"the completion check {name} failed with {type(exc).__name__}: {exc}"
        )
    return CheckVerdict(check, _reason(answer, name))


def _reason(answer: object, name: str) -> str | None:
    """The check's answer as a reason: None passes; anything but a non-empty str fails."""
    if answer is None:
        return None
    if not isinstance(answer, str):
        return f"the completion check {name} returned {answer!r} instead of None or a reason"
    if not answer.strip():
        return f"the completion check {name} returned an empty reason"
    return answer
