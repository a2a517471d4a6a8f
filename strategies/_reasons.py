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
