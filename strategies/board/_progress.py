"""What an attempt got done, read back from its transcript on disk.

An attempt's events go to a JSONL transcript line by line as they happen. When the board
stops in the middle of an attempt (killed, or the machine went down), the next board reads
that transcript: if it ends with ``run.halted`` the attempt had finished and only its outcome
was not recorded; otherwise the turns, tool calls, tokens, cost and time it used and the Ralph
iterations it completed (an iteration is complete once the check at its end has run) are
carried into the next attempt, which resumes after them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any

from attrs import asdict, frozen

from harness.extend import FileRefused, read_regular_file


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
    `problem`, what in the transcript could not be trusted (None when all of it could)."""

    progress: AttemptProgress
    halt: dict[str, Any] | None = None
    verified: bool = False
    problem: str | None = None


class _Untrusted(ValueError):
    """A line of the transcript, or a field of it, that is not what the harness writes."""


# The largest transcript read back: far above a long attempt's; a bound on memory besides.
MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024


def read_attempt(path: str | Path) -> AttemptRecord:
    """Sum up a transcript, trusting nothing in it: the attempt that wrote it died, and the
    file may be torn, damaged or not the harness's at all.

    A missing file is an attempt that did nothing; a torn last line (the process died while
    writing it) is ignored. A line that is not JSON, or whose fields are not what the harness
    writes (a count that is not a whole number >= 0, a time or cost that is not a finite
    number >= 0, a halt without its type), stops the reading there: what came before counts,
    nothing after it does (a halt after it neither), and `problem` names the line and field.
    A path that is not a regular file (a FIFO, a device) or is too large counts nothing and
    says so. Never raises for the file's content.
    """
    source = Path(path)
    try:
        data = read_regular_file(source, limit=MAX_TRANSCRIPT_BYTES, what="transcript")
    except FileNotFoundError:
        return AttemptRecord(AttemptProgress())
    except (OSError, FileRefused) as exc:
        reason = exc.reason if isinstance(exc, FileRefused) else (exc.strerror or str(exc))
        return AttemptRecord(AttemptProgress(), problem=f"{source}: cannot be read: {reason}")
    lines = data.split(b"\n")
    torn = lines.pop()  # after the last newline: empty, or a line cut off mid-write
    tally = _Tally()
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            tally.add(_event(raw))
        except _Untrusted as exc:
            return tally.record(f"{source}:{number}: {exc}; nothing from this line on counts")
    if torn.strip():
        with suppress(_Untrusted):  # a whole event that only lacks its newline still counts
            tally.add(_event(torn))
    return tally.record(None)


def _event(raw: bytes) -> dict[str, Any]:
    try:
        event = json.loads(raw)
    except RecursionError:
        raise _Untrusted("JSON nested too deeply to read") from None
    except ValueError:
        raise _Untrusted("not a JSON line") from None
    if not isinstance(event, dict) or not isinstance(event.get("event"), str):
        raise _Untrusted("not an event (a JSON object with a string 'event')")
    return event


def _count(where: Mapping[str, Any], key: str, default: int = 0) -> int:
    value = where.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Untrusted(f"{key!r} must be a whole number >= 0 (got {value!r})")
    return value


def _amount(where: Mapping[str, Any], key: str) -> float | None:
    value = where.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Untrusted(f"{key!r} must be a number >= 0 (got {value!r})")
    if not math.isfinite(value) or value < 0:
        raise _Untrusted(f"{key!r} must be a finite number >= 0 (got {value!r})")
    return float(value)


def _table(where: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = where.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _Untrusted(f"{key!r} must be an object (got {type(value).__name__})")
    return value


class _Tally:
    """The sums of the events read so far."""

    def __init__(self) -> None:
        self.turns = self.tool_calls = self.input_tokens = self.output_tokens = 0
        self.cost: float | None = 0.0
        self.wall = 0.0
        self.iteration = 0
        self.completed: set[int] = set()
        self.last_reason: str | None = None
        self.halt: dict[str, Any] | None = None
        self.verified = False

    def add(self, event: dict[str, Any]) -> None:
        """Count one event; `_Untrusted` (counting nothing of it) when a field is wrong."""
        name = event["event"]
        at = _amount(event, "at")
        if name == "iteration.started":
            iteration = _count(event, "iteration", self.iteration + 1)
        elif name == "turn.finished":
            usage = _table(_table(event, "response"), "usage")
            tokens = _count(usage, "input_tokens"), _count(usage, "output_tokens")
            spent = _amount(usage, "cost_usd")
        elif name == "check.failed":
            reason = event.get("reason", "")
            if not isinstance(reason, str):
                raise _Untrusted(f"'reason' must be a string (got {type(reason).__name__})")
        elif name == "run.halted":
            halt = event.get("reason")
            if not isinstance(halt, dict) or not isinstance(halt.get("type"), str):
                raise _Untrusted(f"'reason' must be a halt with its 'type' (got {halt!r:.80})")
            if not isinstance(event.get("verified"), bool):
                raise _Untrusted(
                    f"'verified' must be true or false (got {event.get('verified')!r})"
                )
            if event["verified"] and halt["type"] != "Completed":
                raise _Untrusted(f"a {halt['type']} halt cannot be verified")
        # Everything checked: count it.
        if at is not None:
            self.wall = max(self.wall, at)
        if name == "iteration.started":
            self.iteration = iteration
        elif name == "turn.finished":
            self.turns += 1
            self.input_tokens += tokens[0]
            self.output_tokens += tokens[1]
            self.cost = None if self.cost is None or spent is None else self.cost + spent
        elif name == "tool.called":
            self.tool_calls += 1
        elif name in ("check.failed", "check.passed"):
            if self.iteration > 0:
                self.completed.add(self.iteration)
            if name == "check.failed":
                self.last_reason = reason
        elif name == "run.halted":
            self.halt, self.verified = halt, event["verified"]

    def record(self, problem: str | None) -> AttemptRecord:
        progress = AttemptProgress(
            iterations=len(self.completed),
            turns=self.turns,
            tool_calls=self.tool_calls,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=self.cost,
            wall_time=self.wall,
            last_reason=self.last_reason,
        )
        return AttemptRecord(progress, self.halt, self.verified, problem)
