"""Run a spec's checks against a workspace outside any run (for `harness check` and hooks)."""

from __future__ import annotations

from pathlib import Path

from attrs import frozen

from harness import SessionStateSnapshot, SessionStore, Usage
from harness._clock import Clock, SystemClock
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


def standalone_snapshot(
    workspace: Path | None, *, task: str = "", final_text: str | None = None, clock: Clock
) -> SessionStateSnapshot:
    """A snapshot of a workspace with no session behind it."""
    now = clock.now()
    return SessionStateSnapshot(
        run_id="standalone",
        task=task,
        agent="builder",
        iteration=0,
        workspace=workspace.resolve() if workspace is not None else None,
        messages=(),
        tool_outcomes=(),
        check_reasons=(),
        turns=0,
        tool_calls=0,
        usage=Usage(),
        run_turns=0,
        run_tool_calls=0,
        run_usage=Usage(),
        started_at=now,
        now=now,
        deadline=None,
        claims_done=final_text is not None,
        final_text=final_text,
        store=SessionStore().frozen(),
        session_started_at=now,
    )


async def run_checks(
    spec: Spec, workspace: Path | None, *, final_text: str | None = None
) -> list[Verdict]:
    """Every configured check, each failing closed under the spec's check timeout."""
    clock = SystemClock()
    snapshot = standalone_snapshot(workspace, task=spec.prompt, final_text=final_text, clock=clock)
    verdicts: list[Verdict] = []
    for check in spec.checks:
        policy = TerminationPolicy(completion_check=check, check_timeout=spec.policy.check_timeout)
        reason = await policy.start_session(clock=clock).check(snapshot)
        verdicts.append(Verdict(check.description(), reason))
    return verdicts
