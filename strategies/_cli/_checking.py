"""Run a spec's checks against a workspace outside any run (for `harness check` and hooks)."""

from __future__ import annotations

from pathlib import Path

from attrs import frozen

from harness import SessionStateSnapshot
from harness._clock import SystemClock
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


async def run_checks(
    spec: Spec, workspace: Path | None, *, final_text: str | None = None
) -> list[Verdict]:
    """Every configured check, each failing closed under the spec's check timeout."""
    clock = SystemClock()
    snapshot = SessionStateSnapshot.standalone(
        workspace,
        task=spec.prompt,
        final_text=final_text,
        now=clock.now(),
    )
    verdicts: list[Verdict] = []
    for check in spec.checks:
        policy = TerminationPolicy(completion_check=check, check_timeout=spec.policy.check_timeout)
        reason = await policy.start_session(clock=clock).check(snapshot)
        verdicts.append(Verdict(check.description(), reason))
    return verdicts
