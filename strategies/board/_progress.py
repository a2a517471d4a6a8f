"""What an attempt got done, read back from its transcript on disk.

An attempt's events go to a JSONL transcript line by line as they happen. When the board
stops in the middle of an attempt (killed, or the machine went down), the next board reads
that transcript: if it ends with ``run.halted`` the attempt had finished and only its outcome
was not recorded; otherwise the turns, tool calls, tokens, cost and time it used and the Ralph
iterations it completed (an iteration is complete once the check at its end has run) are
carried into the next attempt, which resumes after them. The turn a usage limit cut off was
not executed (it has no ``turn.finished``) and a pause that does not count toward wall time is
taken off the time used: neither is carried.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attrs import asdict, frozen


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
    """Sum up a transcript. A missing file is an attempt that did nothing; a torn last line
    (the process died while writing it) is ignored, and so is everything after a bad line."""
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return AttemptRecord(AttemptProgress())
    turns = tool_calls = input_tokens = output_tokens = 0
    cost: float | None = 0.0
    wall = 0.0
    iteration = 0
    completed: set[int] = set()
    last_reason: str | None = None
    halt: dict[str, Any] | None = None
    verified = False
    paused = 0.0  # time paused for usage limits that does not count toward wall time
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            break
        if not isinstance(event, dict):
            break
        name = event.get("event")
        at = event.get("at")
        if isinstance(at, int | float):
            wall = max(wall, float(at))
        if name == "iteration.started":
            iteration = int(event.get("iteration", iteration + 1))
        elif name == "turn.finished":
            turns += 1
            usage = (event.get("response") or {}).get("usage") or {}
            input_tokens += int(usage.get("input_tokens", 0))
            output_tokens += int(usage.get("output_tokens", 0))
            spent = usage.get("cost_usd")
            cost = None if cost is None or spent is None else cost + float(spent)
        elif name == "tool.called":
            tool_calls += 1
        elif name == "run.resumed" and event.get("counted") is False:
            spent = event.get("paused_for")
            paused += float(spent) if isinstance(spent, int | float) else 0.0
        elif name in ("check.failed", "check.passed"):
            if iteration > 0:
                completed.add(iteration)
            if name == "check.failed":
                last_reason = str(event.get("reason", ""))
        elif name == "run.halted":
            reason = event.get("reason")
            halt = reason if isinstance(reason, dict) else {"type": str(reason)}
            verified = event.get("verified") is True
    progress = AttemptProgress(
        iterations=len(completed),
        turns=turns,
        tool_calls=tool_calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=cost,
        wall_time=max(wall - paused, 0.0),
        last_reason=last_reason,
    )
    return AttemptRecord(progress, halt, verified)
