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
    """The verdict of every check, in order, whether the overall deadline cut them off, and
    notes on what the record could not do (a last verdict not used or not kept)."""

    verdicts: tuple[CheckVerdict, ...]
    timed_out: bool = False
    notes: tuple[str, ...] = ()

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

    With `record` (the stop hooks), the checks see the record's run id, baselines and last
    verdicts (which are kept again after the checks, for the next stop), and when the spec's
    protected paths changed since the record was taken, every check fails naming them and
    judges a temporary copy of the workspace with the recorded files.
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
    notes: list[str] = []
    with clock.deadline_scope(deadline) as scope:
        if record is None or workspace is None:
            await _run_all(spec, snapshot, verdicts, clock)
        else:
            await _run_recorded(spec, snapshot, workspace, record, verdicts, notes, clock)
    if not scope.cancelled_caught:
        return Checked(tuple(verdicts), notes=tuple(notes))
    for i, check in enumerate(spec.checks[len(verdicts) :]):
        status = "did not finish" if i == 0 else "was not started"
        verdicts.append(
            CheckVerdict(check, f"{status} within the checks' {time_limit:g}s deadline")
        )
    return Checked(tuple(verdicts), timed_out=True, notes=tuple(notes))


async def _run_recorded(
    spec: Spec,
    snapshot: SessionStateSnapshot,
    workspace: Path,
    record: SessionRecord,
    verdicts: list[CheckVerdict],
    notes: list[str],
    clock: Clock,
) -> None:
    """The checks with the record's baselines and last verdicts, on the pristine files if
    protected ones changed since the record was taken; then the last verdicts are kept, also
    when the deadline cut off a later check (a whole run that finished is worth keeping)."""
    guard = await record.guard(spec, workspace)
    await record.baselines(spec, snapshot)
    notes.extend(record.restore_last_verdicts(spec))
    try:
        changes = () if guard is None else await anyio.to_thread.run_sync(guard.changes, workspace)
        if guard is None or not changes:
            await _run_all(spec, snapshot, verdicts, clock)
            return
        async with guard.pristine(workspace, changes) as copy:
            judged = evolve(snapshot, workspace=copy, tampering=changes)
            await _run_all(spec, judged, verdicts, clock)
    finally:
        notes.extend(record.keep_last_verdicts(spec))


async def _run_all(
    spec: Spec, snapshot: SessionStateSnapshot, verdicts: list[CheckVerdict], clock: Clock
) -> None:
    timeout = spec.check_timeout
    for check in spec.checks:
        verdicts.append(await run_check(check, snapshot, time_limit=timeout, clock=clock))
