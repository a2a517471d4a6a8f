"""What an attempt got done, read back from its transcript on disk.

An attempt's events go to a JSONL transcript line by line as they happen. When the board
stops in the middle of an attempt (killed, or the machine went down), the next board reads
that transcript: if it ends with ``run.halted`` the attempt had finished and only its outcome
was not recorded; otherwise the turns, tool calls, tokens, cost and time it used and the Ralph
iterations it completed (an iteration is complete once the check at its end has run) are
carried into the next attempt, which resumes after them. The attempt's best checkpoint (of
its ``checkpoint.saved`` events, by Ralph's rule) is read the same way. The turn a usage
limit cut off was not executed (it has no ``turn.finished``) and a pause that does not count
toward wall time is taken off the time used: neither is carried.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attrs import asdict, frozen

from harness import FixtureError
from harness.checkpoints import improves_on
from harness.events import (
    CheckFailed,
    CheckPassed,
    CheckpointSaved,
    Event,
    IterationStarted,
    RunHalted,
    RunResumed,
    RunTally,
    TranscriptReader,
    TurnFinished,
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
    """An attempt's transcript, summed up: its own progress, its halt if it got that far, and
    `problem`, what in the transcript could not be trusted (None when all of it could), and
    its best checkpoint (the id of the one a rollback would restore), if it kept any."""

    progress: AttemptProgress
    halt: dict[str, Any] | None = None
    verified: bool = False
    problem: str | None = None
    checkpoint: str | None = None


def read_attempt(path: str | Path) -> AttemptRecord:
    """Sum up a transcript, read one event at a time, with the counts of `RunTally`, trusting
    nothing in it: the attempt that wrote it died, and the file may be torn, damaged or not
    the harness's at all.

    A missing file is an attempt that did nothing; a torn last line (the process died while
    writing it) is ignored. A line that cannot be read as an event, or whose values the
    harness would not write (a negative or non-integer count, a time or cost that is not a
    finite number >= 0, a verified halt that is not `Completed`), stops the reading there:
    what came before counts, nothing after it does (a halt after it neither), and `problem`
    names the file, the line and the field. A path that is not a regular file (a FIFO, a
    device) counts nothing and says so. Never raises for the file's content.
    """
    source = Path(path)
    if not source.exists() and not source.is_symlink():
        return AttemptRecord(AttemptProgress())
    tally = RunTally()
    iteration = 0
    completed: set[int] = set()
    last_reason: str | None = None
    problem: str | None = None
    best = BestCheckpoint()
    paused = 0.0  # time paused for usage limits that does not count toward wall time
    try:
        for number, event in TranscriptReader(source, allow_cut_off=True):
            why = _untrusted(event)
            if why is not None:
                problem = f"{source}:{number}: {why}; nothing from this line on counts"
                break
            tally = tally.add(event)
            match event:
                case IterationStarted():
                    iteration = event.iteration
                case CheckPassed() | CheckFailed():
                    if iteration > 0:  # not the check before the first turn
                        completed.add(iteration)
                    if isinstance(event, CheckFailed):
                        last_reason = event.reason
                case CheckpointSaved():
                    best.saw(event)
                case RunResumed(counted=False):
                    paused += event.paused_for
    except FixtureError as exc:  # what came before the bad line is what is known to be done
        problem = str(exc) if exc.line is None else f"{exc}; nothing from this line on counts"
    progress = AttemptProgress(
        iterations=len(completed),
        turns=tally.turns_finished,
        tool_calls=tally.tool_calls,
        input_tokens=tally.usage.input_tokens,
        output_tokens=tally.usage.output_tokens,
        cost_usd=tally.usage.cost_usd,
        wall_time=max(tally.at - paused, 0.0),
        last_reason=last_reason,
    )
    if tally.halt is None:
        return AttemptRecord(progress, problem=problem, checkpoint=best.id)
    return AttemptRecord(
        progress,
        tally.halt.reason.to_dict(),
        tally.halt.verified,
        problem,
        checkpoint=best.id,
    )


def _untrusted(event: Event) -> str | None:
    """Why `event`'s values are not ones the harness writes, or None (its fields' types are
    checked by the reader already)."""
    if not _amount(event.at):
        return f"'at' must be a finite number >= 0 (got {event.at!r})"
    if isinstance(event, TurnFinished | RunHalted):
        usage = event.response.usage if isinstance(event, TurnFinished) else event.usage
        for key in ("input_tokens", "output_tokens", "cached_tokens"):
            value = getattr(usage, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                return f"{key!r} must be a whole number >= 0 (got {value!r})"
        if usage.cost_usd is not None and not _amount(usage.cost_usd):
            return f"'cost_usd' must be a finite number >= 0 (got {usage.cost_usd!r})"
    if isinstance(event, RunHalted) and event.verified and not event.reason.verified:
        return f"a {type(event.reason).__name__} halt cannot be verified"
    return None


def _amount(value: object) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and value >= 0
    )


class BestCheckpoint:
    """The best of an attempt's checkpoints (its ``checkpoint.saved`` events), by the rule
    Ralph's rollback uses (`harness.checkpoints.improves_on`)."""

    def __init__(self) -> None:
        self.best: CheckpointSaved | None = None

    @property
    def id(self) -> str | None:
        return self.best.checkpoint if self.best is not None else None

    def saw(self, event: CheckpointSaved) -> None:
        if improves_on(event, self.best):
            self.best = event
