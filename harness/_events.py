"""Typed events: one for every step of a run, sent to every sink the run has.

Log levels: a run logs one INFO line when it ends (``run.halted``: the outcome, turns, usage),
as an HTTP client logs one per request, and one each time the harness refuses the agent or
judges its work (``check.failed``, ``verdict.reached``, ``feedback.injected``); WARNING is a
sensor's warning or halt; every routine step (the start, turns, tool calls, a new iteration, a
check that passed) is DEBUG. Every event, whatever its level, reaches the other sinks.

Sinks are synchronous and must not block: a structlog logger, an in-memory stream the caller
iterates, and a JSONL transcript. `at` is seconds since the run started, on the run's clock.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from logging import DEBUG
from pathlib import Path
from typing import IO, Any, ClassVar, Protocol, runtime_checkable

import structlog
from attrs import fields, frozen

from ._messages import ModelResponse, ToolCall, Usage
from ._records import fast_init
from ._result import HaltReason


@fast_init
@frozen
class Event:
    """Base of every event. `name` is the dotted event name used in logs and transcripts."""

    name: ClassVar[str] = "event"
    level: ClassVar[str] = "info"
    at: float

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"event": self.name}
        for name in _field_names(type(self)):
            data[name] = _plain(getattr(self, name))
        return data

    def replay_key(self) -> dict[str, Any]:
        """The event without its timing, for comparing a replay with the original run."""
        data = self.to_dict()
        data.pop("at", None)
        return data


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(kind: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(kind)
    if names is None:
        names = _FIELD_NAMES[kind] = tuple(f.name for f in fields(kind))
    return names


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain(value: object) -> object:
    if type(value) in _SCALARS:  # most fields: skip the attribute lookup below
        return value
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


@fast_init
@frozen
class RunStarted(Event):
    name: ClassVar[str] = "run.started"
    level: ClassVar[str] = "debug"
    run_id: str
    task: str
    strategy: str
    workspace: str | None
    check: str


@fast_init
@frozen
class IterationStarted(Event):
    name: ClassVar[str] = "iteration.started"
    level: ClassVar[str] = "debug"
    agent: str
    iteration: int


@fast_init
@frozen
class TurnStarted(Event):
    name: ClassVar[str] = "turn.started"
    level: ClassVar[str] = "debug"
    agent: str
    iteration: int
    turn: int


@fast_init
@frozen
class TurnFinished(Event):
    name: ClassVar[str] = "turn.finished"
    level: ClassVar[str] = "debug"
    agent: str
    iteration: int
    turn: int
    response: ModelResponse


@fast_init
@frozen
class ToolCalled(Event):
    """One tool call and what it returned; the session keeps these as its tool outcomes."""

    name: ClassVar[str] = "tool.called"
    level: ClassVar[str] = "debug"
    agent: str
    turn: int
    call: ToolCall
    content: str
    is_error: bool


@fast_init
@frozen
class SensorRead(Event):
    """A sensor reported something other than "ok" (a warning or a halt)."""

    name: ClassVar[str] = "sensor.reading"
    level: ClassVar[str] = "warning"
    agent: str
    turn: int
    sensor: str
    status: str
    message: str


@fast_init
@frozen
class CheckPassed(Event):
    """The completion check passed (what follows, `run.halted` or a verdict, says so at INFO)."""

    name: ClassVar[str] = "check.passed"
    level: ClassVar[str] = "debug"
    agent: str
    turn: int
    check: str


@fast_init
@frozen
class CheckFailed(Event):
    name: ClassVar[str] = "check.failed"
    agent: str
    turn: int
    check: str
    reason: str


@fast_init
@frozen
class FeedbackInjected(Event):
    name: ClassVar[str] = "feedback.injected"
    agent: str
    turn: int
    source: str
    text: str


@fast_init
@frozen
class VerdictReached(Event):
    name: ClassVar[str] = "verdict.reached"
    round: int
    passed: bool
    reasons: str


@fast_init
@frozen
class RunHalted(Event):
    name: ClassVar[str] = "run.halted"
    reason: HaltReason
    verified: bool
    turns: int
    tool_calls: int
    usage: Usage


@runtime_checkable
class EventSink(Protocol):
    """Anything that takes events. `emit` is called on the loop and must not block.

    A sink that drops every debug event for good may say so with an attribute
    ``takes_debug = False``; a run then hands it none (the turn and tool events are debug
    events, several a turn). Without the attribute, a sink gets every event.
    """

    def emit(self, event: Event) -> None: ...


# One lazy proxy for every run, as structlog advises for a module: it reads the configuration
# when a run resolves it (or once, with ``cache_logger_on_first_use``).
_LOGGER = structlog.get_logger("harness")


class StructlogSink:
    """Logs each event under its name, with `run_id` and then every field as keys."""

    __slots__ = ("_debug", "_enabled_for", "_log", "_run_id")

    def __init__(self, run_id: str, logger: Any = None) -> None:
        base = logger if logger is not None else _LOGGER
        # Resolved once for the run: a lazy proxy reads the configuration here (and, cached,
        # hands back the same logger), where binding `run_id` would build a new logger per run
        # for the one or two lines a run usually renders. `run_id` goes with each line instead,
        # first, as a bound value would.
        self._log = base.bind()
        self._run_id = run_id
        # Looked up once: the per-turn events are debug events, and below that level each
        # one should cost a comparison, not a lookup, a dict and a call that does nothing.
        enabled_for = getattr(self._log, "is_enabled_for", None)
        # Whether debug events are logged, when that can never change: structlog's filtering
        # loggers fix their level in their class (`make_filtering_bound_logger`). Any other
        # logger (stdlib logging's, whose level may change mid-run) is asked every time.
        self._debug: bool | None = None if enabled_for is None else _fixed_debug(self._log)
        self._enabled_for: Any = enabled_for if self._debug is None else None

    @property
    def takes_debug(self) -> bool:
        """False when the logger is known never to log debug events (see `EventSink`)."""
        return self._debug is not False

    def emit(self, event: Event) -> None:
        level = event.level
        if level == "debug":
            debug = self._debug
            if debug is None:
                debug = self._enabled_for is None or self._enabled_for(DEBUG)
            if not debug:
                return
        data = event.to_dict()
        del data["event"]
        getattr(self._log, level)(event.name, **{"run_id": self._run_id, **data})


# Per logger class: for structlog's filtering loggers the answer is fixed by the class itself,
# and for any other class it is None; so it is worked out once per class, not once per run.
_FIXED_DEBUG: dict[type, bool | None] = {}


def _fixed_debug(log: Any) -> bool | None:
    """For a structlog filtering logger, whether it logs debug events; else None."""
    kind = type(log)
    if kind in _FIXED_DEBUG:
        return _FIXED_DEBUG[kind]
    level = getattr(log, "get_effective_level", None)
    if not callable(level):
        return None
    try:
        fixed = kind is structlog.make_filtering_bound_logger(level())
    except (TypeError, ValueError, KeyError):  # not a level structlog knows
        return None
    answer = _FIXED_DEBUG[kind] = bool(log.is_enabled_for(DEBUG)) if fixed else None
    return answer


class JsonlTranscript:
    """Writes each event as one JSON line, flushed at once so a crash loses nothing."""

    __slots__ = ("_file", "path")

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = self.path.open("w", encoding="utf-8")

    def emit(self, event: Event) -> None:
        if self._file is None:
            return
        self._file.write(json.dumps(event.to_dict(), ensure_ascii=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class ListSink:
    """Keeps every event in a list (for tests and in-process consumers)."""

    __slots__ = ("emit", "events")

    def __init__(self) -> None:
        self.events: list[Event] = []
        # The list's own append: a run emits a few events a turn, each a C call, not a method.
        self.emit: Callable[[Event], None] = self.events.append

    def names(self) -> list[str]:
        return [e.name for e in self.events]

    def of_type(self, kind: type[Event]) -> list[Event]:
        return [e for e in self.events if isinstance(e, kind)]


def read_transcript(path: str | Path) -> list[dict[str, Any]]:
    """Load a JSONL transcript written by `JsonlTranscript`; a file that cannot be read, a line
    that is not UTF-8 and a line that is not a JSON event are `FixtureError`s naming the line."""
    from ._errors import FixtureError
    from ._jsonl import json_rows, read_lines

    rows: list[dict[str, Any]] = []
    for lineno, row in json_rows(read_lines(path, what="transcript"), path):
        if not isinstance(row, dict) or "event" not in row:
            raise FixtureError("not a transcript event", path=path, line=lineno, field="event")
        rows.append(row)
    return rows
