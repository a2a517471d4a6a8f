"""Halt reasons that belong to a strategy."""

from __future__ import annotations

from attrs import frozen

from harness import HaltReason


@frozen
class RalphCompletionUnmet(HaltReason):
    """Ralph ran every iteration and the completion check still did not pass."""

    iterations: int
    last_reason: str

    def describe(self) -> str:
        return (
            f"ralph ran {self.iterations} iterations and the check still fails: {self.last_reason}"
        )


@frozen
class SelfVerifyExhausted(HaltReason):
    """The evaluator did not pass the work within `max_rounds` rounds."""

    rounds: int
    last_reason: str

    def describe(self) -> str:
        return f"the evaluator failed the work in all {self.rounds} rounds: {self.last_reason}"


@frozen
class NoAttemptVerified(HaltReason):
    """No attempt of a best-of run got its work accepted by the check; the user's workspace
    was not touched. `best` is the attempt the check measured furthest along (0: none was
    measured) and `reason` what the check last said of it."""

    attempts: int
    best: int
    reason: str

    def describe(self) -> str:
        if not self.best:
            return f"none of {self.attempts} attempts was verified: {self.reason}"
        return (
            f"none of {self.attempts} attempts was verified; the furthest along was attempt "
            f"{self.best}: {self.reason}"
        )


@frozen
class WinnerRefused(HaltReason):
    """The check accepted attempt `attempt` in its own workspace but refused its changes in
    the user's (`reason`); the user's workspace was put back as it was."""

    attempt: int
    reason: str

    def describe(self) -> str:
        return (
            f"attempt {self.attempt} was verified in its own workspace, but the final check in "
            f"the workspace refused it (the workspace was left as it was): {self.reason}"
        )


@frozen
class WorkspaceUnwritable(HaltReason):
    """Best-of could not make, read or write a workspace (a full disk, a git command that
    failed): `doing` says what it was doing, `reason` what the system said. The user's
    workspace was not changed, or was put back as it was (`doing` says so; `reason` names any
    file that could not be)."""

    doing: str
    reason: str

    def describe(self) -> str:
        return f"best_of could not {self.doing}: {self.reason}"
