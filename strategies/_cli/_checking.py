"""Run a spec's checks against a workspace outside any run (for `harness check` and hooks)."""

from __future__ import annotations

from pathlib import Path

import anyio
from attrs import evolve, frozen

from checks import CheckVerdict, run_check
from harness import SessionStateSnapshot
from harness.extend import Clock, SystemClock

from .._spec import Spec
from ._hooks._record import SessionRecord


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
    record: SessionRecord | None = None,
) -> Checked:
    """Every configured check in turn, each failing closed under the spec's check timeout.

    With `time_limit`, the checks together get that many seconds: the check running at the
    deadline is cancelled (its processes with it), and it and every check not yet started
    fail with a reason naming the deadline.

    With `record` (the stop hooks), the checks see the record's run id and baselines, and
    when the spec's protected paths changed since the record was taken, every check fails
    naming them and judges a temporary copy of the workspace with the recorded files.
    """
    clock = clock if clock is not None else SystemClock()
    snapshot = SessionStateSnapshot.standalone(
        workspace,
        task=spec.prompt or "",
        final_text=final_text,
        now=clock.now(),
        **({"run_id": record.run_id} if record is not None else {}),
    )
    deadline = float("inf") if time_limit is None else clock.now() + time_limit
    verdicts: list[CheckVerdict] = []
    with clock.deadline_scope(deadline) as scope:
        if record is None or workspace is None:
            await _run_all(spec, snapshot, verdicts, clock)
        else:
            await _run_recorded(spec, snapshot, workspace, record, verdicts, clock)
    if not scope.cancelled_caught:
        return Checked(tuple(verdicts))
    for i, check in enumerate(spec.checks[len(verdicts) :]):
        status = "did not finish" if i == 0 else "was not started"
        verdicts.append(
            CheckVerdict(check, f"{status} within the checks' {time_limit:g}s deadline")
        )
    return Checked(tuple(verdicts), timed_out=True)


async def _run_recorded(
    spec: Spec,
    snapshot: SessionStateSnapshot,
    workspace: Path,
    record: SessionRecord,
    verdicts: list[CheckVerdict],
    clock: Clock,
) -> None:
    """The checks with the record's baselines, on the pristine files if protected ones
    changed since the record was taken."""
    guard = await record.guard(spec, workspace)
    await record.baselines(spec, snapshot)
    changes = () if guard is None else await anyio.to_thread.run_sync(guard.changes, workspace)
    if guard is None or not changes:
        await _run_all(spec, snapshot, verdicts, clock)
        return
    async with guard.pristine(workspace, changes) as copy:
        judged = evolve(snapshot, workspace=copy, tampering=changes)
        await _run_all(spec, judged, verdicts, clock)


async def _run_all(
    spec: Spec, snapshot: SessionStateSnapshot, verdicts: list[CheckVerdict], clock: Clock
) -> None:
    timeout = spec.policy.check_timeout
    for check in spec.checks:
        verdicts.append(await run_check(check, snapshot, time_limit=timeout, clock=clock))
