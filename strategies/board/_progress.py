"""What an attempt got done, read back from its transcript on disk.

An attempt's events go to a JSONL transcript line by line as they happen. When the board
stops in the middle of an attempt (killed, or the machine went down), the next board reads
that transcript: if it ends with ``run.halted`` the attempt had finished and only its outcome
was not recorded; otherwise the turns, tool calls, tokens, cost and time it used and the Ralph
iterations it completed (an iteration is complete once the check at its end has run) are
carried into the next attempt, which resumes after them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attrs import asdict, frozen

from harness import (
    CheckFailed,
    CheckPassed,
    FixtureError,
    IterationStarted,
    RunTally,
    TranscriptReader,
)


@frozen
class AttemptProgress:
    """Work done by interrupted attempts, carried into the next one: budgets count it, and a
    Ralph task resumes after its completed iterations."""

    iterations: int = 0
    turns: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    wall_time: float = 0.0
    last_reason: str | None = None

    def __add__(self, other: AttemptProgress) -> AttemptProgress:
        cost = None
        if self.cost_usd is not None and other.cost_usd is not None:
            cost = self.cost_usd + other.cost_usd
        return AttemptProgress(
            iterations=self.iterations + other.iterations,
            turns=self.turns + other.turns,
            tool_calls=self.tool_calls + other.tool_calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost_usd=cost,
            wall_time=self.wall_time + other.wall_time,
            last_reason=other.last_reason if other.last_reason is not None else self.last_reason,
        )

    @property
    def empty(self) -> bool:
        return self == AttemptProgress()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> AttemptProgress:
        return cls(**data) if data else cls()


@frozen
class AttemptRecord:
    """An attempt's transcript, summed up: its own progress, and its halt if it got that far."""

    progress: AttemptProgress
    halt: dict[str, Any] | None = None
    verified: bool = False


def read_attempt(path: str | Path) -> AttemptRecord:
    """Sum up a transcript, read one event at a time, with the counts of `RunTally`. A missing
    file is an attempt that did nothing; a torn last line (the process died while writing it)
    is ignored, and so is everything from a line that cannot be read as an event on."""
    source = Path(path)
    if not source.exists():
        return AttemptRecord(AttemptProgress())
    tally = RunTally()
    iteration = 0
    completed: set[int] = set()
    last_reason: str | None = None
    try:
        for _, event in TranscriptReader(source, allow_cut_off=True):
            tally = tally.add(event)
            match event:
                case IterationStarted():
                    iteration = event.iteration
                case CheckPassed() | CheckFailed():
                    if iteration > 0:  # not the check before the first turn
                        completed.add(iteration)
                    if isinstance(event, CheckFailed):
                        last_reason = event.reason
    except FixtureError:
        pass  # what came before the bad line is what the attempt is known to have done
    progress = AttemptProgress(
        iterations=len(completed),
        turns=tally.turns_finished,
        tool_calls=tally.tool_calls,
        input_tokens=tally.usage.input_tokens,
        output_tokens=tally.usage.output_tokens,
        cost_usd=tally.usage.cost_usd,
        wall_time=tally.at,
        last_reason=last_reason,
    )
    if tally.halt is None:
        return AttemptRecord(progress)
    return AttemptRecord(progress, tally.halt.reason.to_dict(), tally.halt.verified)
