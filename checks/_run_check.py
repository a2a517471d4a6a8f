"""`run_check`: the one place a completion check's answer becomes a `CheckVerdict`.

A check that can count what it verifies (`MeasuresProgress`) is asked with `measure`, and
the verdict carries its `WorkProgress` too.

The check fails closed. An exception, an answer that is neither None nor a non-empty
string, or (with a time limit) a check still running at the deadline is "not complete", with
a reason naming the check and what went wrong. The policy, Ralph, `harness check` and the
stop hooks all ask a check through here, so the agent reads the same reason on every path.
"""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from attrs import frozen

from harness import SessionStateSnapshot
from harness.extend import CheckError, Clock, SystemClock

from ._progress import Assessment, WorkProgress
from ._protocol import CompletionCheck

if TYPE_CHECKING:
    from harness.extend import Tampering


class CheckCannotRun(Exception):
    """Raised by a check whose command could not start (the message says why, and is the
    claim's reason): not the agent's work, so the run counts it toward `CheckBroken`."""


@frozen
class CheckVerdict:
    """One completion check's outcome: `reason` is None when it passed, otherwise what is
    missing (or why the check could not say)."""

    check: CompletionCheck
    reason: str | None
    progress: WorkProgress | None = None
    """How far the work is (`done` of `total`), when the check measures it."""
    error: CheckError | None = None
    """Why the check could not judge the work, when it could not: it raised (with the
    traceback) or its command could not start (`CheckCannotRun`)."""
    flaky: tuple[str, ...] = ()
    """Tests that failed and passed on the same code: neither a pass nor a fail."""

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

    A snapshot whose `tampering` names protected paths the agent changed is judged "not
    complete" whatever the check says (the run gave it the pristine files, see
    `RunState.judge`); the reason names the files, then what the check said.
    """
    verdict = await ask(check, snapshot, time_limit=time_limit, clock=clock)
    if not snapshot.tampering:
        return verdict
    reason = tampering_reason(snapshot.tampering, verdict.reason)
    return CheckVerdict(check, reason, verdict.progress, verdict.error, verdict.flaky)


async def ask(
    check: CompletionCheck,
    snapshot: SessionStateSnapshot,
    *,
    time_limit: float | None = None,
    clock: Clock | None = None,
) -> CheckVerdict:
    """`run_check` without the verdict on tampering: for the children of a composition, whose
    parent gives it once."""
    name = name_of(check)
    try:
        if time_limit is None:
            answer: object = await _ask(check, snapshot)
        else:
            clock = clock if clock is not None else SystemClock()
            with clock.deadline_scope(clock.now() + time_limit) as scope:
                answer = await _ask(check, snapshot)
            if scope.cancelled_caught:
                return CheckVerdict(
                    check, f"the completion check {name} did not finish within {time_limit:g}s"
                )
    except CheckCannotRun as exc:
        reason = str(exc) or f"the completion check {name} cannot run"
        return CheckVerdict(check, reason, error=CheckError(reason, cannot_run=True))
    except Exception as exc:
        summary = f"{type(exc).__name__}: {exc}"
        trace = "".join(traceback.format_exception(exc))
        return CheckVerdict(
            check,
            f"the completion check {name} failed with {summary}",
            error=CheckError(summary, trace),
        )
    if isinstance(answer, Assessment):
        said = _reason(answer.reason, name)
        return CheckVerdict(check, said, answer.progress, answer.error, answer.flaky)
    return CheckVerdict(check, _reason(answer, name))


async def _ask(check: CompletionCheck, snapshot: SessionStateSnapshot) -> object:
    # `isinstance(check, MeasuresProgress)` asks exactly this (the one method is there and not
    # None) by walking the protocol, which costs ~10 µs on Python 3.11 at every claim.
    measure: Callable[[SessionStateSnapshot], Awaitable[object]] | None = getattr(
        check, "measure", None
    )
    if measure is not None:
        answer: object = await measure(snapshot)
        if not isinstance(answer, Assessment):
            name = name_of(check)
            return f"the completion check {name} measured {answer!r} instead of an Assessment"
        return answer
    return await check.check(snapshot)


def name_of(check: CompletionCheck) -> str:
    """How the run names `check`: its `label` (a spec's ``checks[0] (module:name)``), when it
    has one, else its class's name."""
    label = getattr(check, "label", None)
    return label if isinstance(label, str) and label else type(check).__name__


def _reason(answer: object, name: str) -> str | None:
    """The check's answer as a reason: None passes; anything but a non-empty str fails."""
    if answer is None:
        return None
    if not isinstance(answer, str):
        return f"the completion check {name} returned {answer!r} instead of None or a reason"
    if not answer.strip():
        return f"the completion check {name} returned an empty reason"
    return answer


def tampering_reason(changes: Sequence[Tampering], reason: str | None) -> str:
    """Why a claim that changed protected paths is rejected, and what the check said of the
    work with them as they were."""
    changed = "\n".join(f"- {t}" for t in changes)
    verdict = (
        "With them as they were, the completion check passes: restore them and claim again."
        if reason is None
        else f"With them as they were, the completion check reports:\n{reason}"
    )
    return (
        "Protected files were changed. They judge the work, so the claim is rejected and "
        f"they are judged as they were when the run started:\n{changed}\n{verdict}"
    )
