"""Reading a JSONL transcript back as typed events, one line at a time, and folding the events
into a run's counts.

`TranscriptReader` is the one reader: it streams the file (a line at a time, never the whole
file), turns each line into its event class with `Event.from_dict`, and names the file, the
line and the field of anything wrong: a line that is not UTF-8, not JSON, nested deeper than
`MAX_DEPTH`, not an object, or an event whose field is missing or of the wrong type. A line
whose event name this harness does not know becomes an `UnknownEvent` (a newer harness's
transcript still reads), and a halt reason of an unknown type an `UnknownHalt`.

Fields a person might leave out of a hand-written transcript have the defaults the events
themselves would write: ``at`` 0, texts of ``run.started`` empty, ``is_error`` false, a
response's text empty and its usage zero. A usage without ``cost_usd`` has an unknown price.

`RunTally` is the one fold of the counts (turns, tool calls, tool errors, tokens and cost,
the latest time, the halt) that the viewer, the board's recovery and the progress display
share.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar, cast

from attrs import evolve, field, frozen

from ._checkpoints import CheckpointFailed, CheckpointRestored, CheckpointSaved
from ._compaction import ContextCompacted
from ._errors import ConfigurationError, FixtureError
from ._events import (
    CheckFailed,
    CheckPassed,
    Event,
    FeedbackInjected,
    IterationStarted,
    RunHalted,
    RunStarted,
    RunWarning,
    SensorRead,
    SinkFailed,
    ToolCalled,
    ToolServerStarted,
    TurnFinished,
    TurnStarted,
    VerdictReached,
)
from ._files import FileRefused, open_regular_file
from ._jsonl import load_line
from ._messages import ModelResponse, ToolCall, Usage
from ._pause_events import RunPaused, RunResumed
from ._protected import Change, Tampering
from ._result import HaltReason
from ._verification import Baseline, BaselineRecorded, ProtectedPathsChanged, ProtectedPathsRecorded
from ._work_progress import WorkProgress

T = TypeVar("T")
_MISSING: Any = object()


@frozen
class UnknownEvent(Event):
    """An event this harness does not know (from a newer harness, or another tool): its name
    and its other fields, kept as they were."""

    name: ClassVar[str] = "unknown"
    event: str
    fields: Mapping[str, Any] = field(factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.event, "at": self.at, **self.fields}


@frozen
class UnknownHalt(HaltReason):
    """A halt reason this harness cannot rebuild (an unknown type, or fields its class does
    not take): its type and fields, kept as they were."""

    type: str
    fields: Mapping[str, Any] = field(factory=dict)

    def describe(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.fields.items())
        return f"{self.type}({shown})"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self.fields}


class _Fields:
    """Typed getters over one JSON object; an error names the file, line and field (with the
    path of nested objects: ``response.usage.input_tokens``)."""

    __slots__ = ("data", "line", "path", "prefix")

    def __init__(
        self, data: Mapping[str, Any], path: str | None, line: int | None, prefix: str = ""
    ) -> None:
        self.data = data
        self.path = path
        self.line = line
        self.prefix = prefix

    def error(self, key: str, message: str) -> FixtureError:
        return FixtureError(message, path=self.path, line=self.line, field=self.prefix + key)

    def _get(self, key: str, kind: type[T], expected: str, default: Any) -> T:
        value = self.data.get(key, _MISSING)
        if value is _MISSING or (value is None and default is not _MISSING):
            if default is _MISSING:
                raise self.error(key, "missing")
            return cast(T, default)
        if kind is float and type(value) is int:
            return cast(T, float(value))
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            shown = repr(value)
            if len(shown) > 60:
                shown = shown[:57] + "..."
            raise self.error(key, f"expected {expected} (got {shown})")
        return value

    def text(self, key: str, default: Any = _MISSING) -> str:
        return self._get(key, str, "a string", default)

    def integer(self, key: str, default: Any = _MISSING) -> int:
        return self._get(key, int, "an integer", default)

    def number(self, key: str, default: Any = _MISSING) -> float:
        return self._get(key, float, "a number", default)

    def flag(self, key: str, default: Any = _MISSING) -> bool:
        return self._get(key, bool, "true or false", default)

    def nested(self, key: str, default: Any = _MISSING) -> _Fields | None:
        value: dict[str, Any] | None = self._get(key, dict, "an object", default)
        if value is None:
            return None
        return _Fields(value, self.path, self.line, f"{self.prefix}{key}.")

    def texts(self, key: str) -> list[str]:
        """The strings in the list in `key` (absent: none)."""
        values = self._get(key, list, "a list", ())
        for index, value in enumerate(values):
            if not isinstance(value, str):
                raise self.error(f"{key}[{index}]", f"expected a string (got {value!r:.60})")
        return list(values)

    def objects(self, key: str) -> list[_Fields]:
        """The objects in the list in `key` (absent: none)."""
        values = self._get(key, list, "a list", ())
        found = []
        for index, value in enumerate(values):
            where = f"{key}[{index}]"
            if not isinstance(value, dict):
                raise self.error(where, f"expected an object (got {value!r:.60})")
            found.append(_Fields(value, self.path, self.line, f"{self.prefix}{where}."))
        return found


def _usage(f: _Fields | None) -> Usage:
    if f is None:
        return Usage()
    cost = f.number("cost_usd", None)
    return Usage(
        f.integer("input_tokens", 0),
        f.integer("output_tokens", 0),
        f.integer("cached_tokens", 0),
        cost,
    )


def _call(f: _Fields) -> ToolCall:
    arguments = f.nested("arguments", {})
    return ToolCall(f.text("id"), f.text("name"), arguments.data if arguments else {})


def _response(f: _Fields) -> ModelResponse:
    return ModelResponse(
        f.text("text", ""),
        tuple(_call(c) for c in f.objects("tool_calls")),
        _usage(f.nested("usage", None)),
        f.text("model", None),
        f.text("stop_reason", None),
    )


def _halt_classes() -> dict[str, type[HaltReason]]:
    found: dict[str, type[HaltReason]] = {}
    pending: list[type[HaltReason]] = [HaltReason]
    while pending:
        cls = pending.pop()
        found.setdefault(cls.__name__, cls)
        pending.extend(cls.__subclasses__())
    found.pop(UnknownHalt.__name__, None)
    return found


def halt_from_dict(data: Mapping[str, Any]) -> HaltReason:
    """The halt reason a ``reason`` object describes: its class when this process knows its
    ``type`` (the strategies' reasons once `strategies` is imported) and its fields fit, else
    an `UnknownHalt`."""
    kind = str(data.get("type", "?"))
    fields = {k: v for k, v in data.items() if k != "type"}
    cls = _halt_classes().get(kind)
    if cls is not None:
        try:
            return cls(**fields)
        except (TypeError, ValueError):
            pass
    return UnknownHalt(kind, fields)


def _halt(f: _Fields) -> HaltReason:
    f.text("type")
    return halt_from_dict(f.data)


def _progress(f: _Fields | None) -> WorkProgress | None:
    if f is None:
        return None
    failing = f._get("failing", list, "a list of names", ())
    for index, name in enumerate(failing):
        if not isinstance(name, str):
            raise f.error(f"failing[{index}]", f"expected a string (got {name!r:.60})")
    try:
        return WorkProgress(
            f.integer("done"), f.integer("total"), f.text("unit", "items"), tuple(failing)
        )
    except ConfigurationError as exc:
        raise f.error("done", str(exc)) from None


def _names_of(f: _Fields, key: str) -> tuple[str, ...]:
    names = f._get(key, list, "a list of names", ())
    for index, name in enumerate(names):
        if not isinstance(name, str):
            raise f.error(f"{key}[{index}]", f"expected a string (got {name!r:.60})")
    return tuple(names)


def _baseline(f: _Fields) -> Baseline:
    return Baseline(
        f.text("check"),
        f.text("runner", None),
        f.integer("passed", 0),
        _names_of(f, "failing"),
        f.integer("exit_code", None),
        f.text("unreadable", None),
    )


def _tampering(f: _Fields) -> Tampering:
    change = f.text("change")
    if change not in _CHANGES:
        raise f.error("change", f"expected one of {', '.join(_CHANGES)} (got {change!r:.60})")
    return Tampering(f.text("path"), cast(Change, change), f.text("rule"))


_CHANGES = ("modified", "deleted", "added", "replaced")


def _nested(f: _Fields, key: str) -> _Fields:
    found = f.nested(key)
    assert found is not None
    return found


_PARSERS: dict[str, Callable[[_Fields, float], Event]] = {
    RunStarted.name: lambda f, at: RunStarted(
        at,
        f.text("run_id", ""),
        f.text("task", ""),
        f.text("strategy", ""),
        f.text("workspace", None),
        f.text("check", ""),
    ),
    IterationStarted.name: lambda f, at: IterationStarted(
        at, f.text("agent"), f.integer("iteration")
    ),
    TurnStarted.name: lambda f, at: TurnStarted(
        at, f.text("agent"), f.integer("iteration"), f.integer("turn")
    ),
    TurnFinished.name: lambda f, at: TurnFinished(
        at,
        f.text("agent"),
        f.integer("iteration"),
        f.integer("turn"),
        _response(_nested(f, "response")),
    ),
    ToolCalled.name: lambda f, at: ToolCalled(
        at,
        f.text("agent"),
        f.integer("turn"),
        _call(_nested(f, "call")),
        f.text("content"),
        f.flag("is_error", False),
    ),
    ToolServerStarted.name: lambda f, at: ToolServerStarted(
        at,
        f.text("server"),
        f.text("transport"),
        tuple(dict(t.data) for t in f.objects("tools")),
    ),
    SensorRead.name: lambda f, at: SensorRead(
        at,
        f.text("agent"),
        f.integer("turn"),
        f.text("sensor"),
        f.text("status"),
        f.text("message"),
    ),
    CheckPassed.name: lambda f, at: CheckPassed(
        at, f.text("agent"), f.integer("turn"), f.text("check", "")
    ),
    CheckFailed.name: lambda f, at: CheckFailed(
        at,
        f.text("agent"),
        f.integer("turn"),
        f.text("check", ""),
        f.text("reason"),
        f.text("error", None),
    ),
    RunWarning.name: lambda f, at: RunWarning(at, f.text("source"), f.text("message")),
    FeedbackInjected.name: lambda f, at: FeedbackInjected(
        at, f.text("agent"), f.integer("turn"), f.text("source"), f.text("text")
    ),
    ContextCompacted.name: lambda f, at: ContextCompacted(
        at,
        f.text("agent"),
        f.integer("turn"),
        f.text("method"),
        f.integer("messages"),
        tuple(f.texts("tool_calls")),
        f.integer("tokens_before"),
        f.integer("chars_before"),
        f.integer("chars_after"),
        f.text("summary", None),
        _usage(f.nested("usage", None)),
    ),
    VerdictReached.name: lambda f, at: VerdictReached(
        at, f.integer("round"), f.flag("passed"), f.text("reasons", "")
    ),
    RunHalted.name: lambda f, at: RunHalted(
        at,
        _halt(_nested(f, "reason")),
        f.flag("verified"),
        f.integer("turns"),
        f.integer("tool_calls"),
        _usage(_nested(f, "usage")),
    ),
    CheckpointSaved.name: lambda f, at: CheckpointSaved(
        at,
        f.text("label"),
        f.text("checkpoint"),
        f.text("tree"),
        f.integer("seq"),
        f.text("kind"),
        _progress(f.nested("progress", None)),
    ),
    CheckpointRestored.name: lambda f, at: CheckpointRestored(
        at,
        f.text("checkpoint"),
        f.text("label"),
        f.text("reason", ""),
        f.integer("added", 0),
        f.integer("modified", 0),
        f.integer("deleted", 0),
    ),
    CheckpointFailed.name: lambda f, at: CheckpointFailed(at, f.text("label"), f.text("error")),
    BaselineRecorded.name: lambda f, at: BaselineRecorded(at, _baseline(_nested(f, "baseline"))),
    ProtectedPathsRecorded.name: lambda f, at: ProtectedPathsRecorded(
        at, _names_of(f, "rules"), f.integer("files", 0)
    ),
    ProtectedPathsChanged.name: lambda f, at: ProtectedPathsChanged(
        at,
        f.text("agent"),
        f.integer("turn"),
        tuple(_tampering(c) for c in f.objects("changes")),
    ),
    SinkFailed.name: lambda f, at: SinkFailed(
        at, f.text("sink"), f.text("failed_on"), f.text("error")
    ),
    BaselineRecorded.name: lambda f, at: BaselineRecorded(at, _baseline(_nested(f, "baseline"))),
    ProtectedPathsRecorded.name: lambda f, at: ProtectedPathsRecorded(
        at, tuple(f.texts("rules")), f.integer("files")
    ),
    ProtectedPathsChanged.name: lambda f, at: ProtectedPathsChanged(
        at, f.text("agent"), f.integer("turn"), tuple(_tampering(c) for c in f.objects("changes"))
    ),
    RunPaused.name: lambda f, at: RunPaused(
        at,
        f.text("agent"),
        f.integer("iteration"),
        f.integer("turn"),
        f.text("source", ""),
        f.text("message", ""),
        f.number("retry_in", None),
        f.number("resets_at", None),
        f.number("wait"),
        f.flag("counted", False),
    ),
    RunResumed.name: lambda f, at: RunResumed(
        at,
        f.text("agent"),
        f.integer("iteration"),
        f.integer("turn"),
        f.number("paused_for"),
        f.flag("counted", False),
    ),
}


def event_from_dict(
    data: object, *, path: str | Path | None = None, line: int | None = None
) -> Event:
    """The event a transcript line's object describes (see the module docstring); anything
    wrong is a `FixtureError` naming `path`, `line` and the field."""
    where = str(path) if path is not None else None
    if not isinstance(data, dict):
        raise FixtureError("not a transcript event (not an object)", path=where, line=line)
    f = _Fields(data, where, line)
    name = f.text("event")
    at = f.number("at", 0.0)
    parse = _PARSERS.get(name)
    if parse is None:
        rest = {k: v for k, v in data.items() if k not in ("event", "at")}
        return UnknownEvent(at, name, rest)
    return parse(f, at)


class TranscriptReader:
    """The events of the JSONL transcript `path`, in order, as ``(line number, event)``,
    read one line at a time (see the module docstring).

    With `allow_cut_off`, a last line without its newline that is not valid JSON (a run that
    crashed mid-write leaves one) is not an error: iteration ends before it and
    `cut_off_line` names it. Each iteration reads the file afresh.
    """

    __slots__ = ("allow_cut_off", "cut_off_line", "path")

    def __init__(self, path: str | Path, *, allow_cut_off: bool = False) -> None:
        self.path = Path(path)
        self.allow_cut_off = allow_cut_off
        self.cut_off_line: int | None = None

    def __iter__(self) -> Iterator[tuple[int, Event]]:
        for number, data in self.rows():
            yield number, event_from_dict(data, path=self.path, line=number)

    def rows(self) -> Iterator[tuple[int, object]]:
        """The lines as parsed JSON, ``(line number, value)``, blank lines skipped."""
        self.cut_off_line = None
        try:  # a FIFO or a device is refused, never waited on or read without end
            handle = open_regular_file(self.path, what="transcript")
        except OSError as exc:
            raise FixtureError(
                f"cannot read the transcript: {exc.strerror or exc}", path=self.path
            ) from None
        except FileRefused as exc:
            raise FixtureError(
                f"cannot read the transcript: it {exc.reason}", path=self.path
            ) from None
        with handle:
            number = 0
            for raw in handle:  # binary files split on b"\n" only, as JSONL must
                number += 1
                if number == 1 and raw.startswith(codecs.BOM_UTF8):
                    raw = raw[len(codecs.BOM_UTF8) :]
                if not raw.strip():
                    continue
                try:
                    value = load_line(raw, path=self.path, line=number)
                except FixtureError:
                    if self.allow_cut_off and not raw.endswith(b"\n"):
                        self.cut_off_line = number
                        return
                    raise
                yield number, value

    def __repr__(self) -> str:
        return f"TranscriptReader({str(self.path)!r})"


@frozen
class RunTally:
    """A run's counts folded from its events, in order: `add` returns the tally with one more
    event counted.

    `turns` counts the model calls started (as the run and its budget do: a call in flight
    counts, and a call a usage limit cut off does not: ``run.paused`` takes it back) and
    `turns_finished` those that returned; `tool_calls` counts the tool results
    recorded and `tool_errors` those that failed; `usage` adds up the finished calls' tokens
    and cost, a compaction's summary call included (an unknown price makes the cost unknown
    from there on); `at` is the latest event's time. Once ``run.halted`` comes, its totals
    (turns, tool calls, usage) are the run's own and `halt` holds it.
    """

    turns: int = 0
    turns_finished: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    usage: Usage = Usage()
    at: float = 0.0
    halt: RunHalted | None = None

    def add(self, event: Event) -> RunTally:
        at = max(self.at, event.at)
        match event:
            case TurnStarted():
                return evolve(self, turns=self.turns + 1, at=at)
            case RunPaused():  # the call was cut off by a usage limit: not a turn
                return evolve(self, turns=max(self.turns - 1, 0), at=at)
            case TurnFinished():
                usage = self.usage + event.response.usage
                return evolve(self, turns_finished=self.turns_finished + 1, usage=usage, at=at)
            case ContextCompacted():  # a summary is a model call of its own
                return evolve(self, usage=self.usage + event.usage, at=at)
            case ToolCalled():
                errors = self.tool_errors + event.is_error
                return evolve(self, tool_calls=self.tool_calls + 1, tool_errors=errors, at=at)
            case RunHalted():
                return evolve(
                    self,
                    turns=event.turns,
                    tool_calls=event.tool_calls,
                    usage=event.usage,
                    at=at,
                    halt=event,
                )
        return evolve(self, at=at) if at != self.at else self
