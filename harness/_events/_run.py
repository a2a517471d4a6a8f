"""The events of every run: its start and end, iterations, turns, the checks' verdicts and the
feedback they send back, and a sink that failed (see `harness.events`); a tool call's event,
which a session snapshot also keeps, is in `_tool`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from attrs import field, frozen

from .._halt import HaltReason, halt_from_dict
from .._messages import ModelResponse
from .._usage import Usage
from ._base import Event, Fields, omitted, reads


@frozen
class RunStarted(Event):
    name: ClassVar[str] = "run.started"
    level: ClassVar[str] = "debug"
    run_id: str = field(metadata=omitted(""))
    task: str = field(metadata=omitted(""))
    strategy: str = field(metadata=omitted(""))
    workspace: str | None
    check: str = field(metadata=omitted(""))


@frozen
class IterationStarted(Event):
    name: ClassVar[str] = "iteration.started"
    level: ClassVar[str] = "debug"
    agent: str
    iteration: int


@frozen
class TurnStarted(Event):
    name: ClassVar[str] = "turn.started"
    level: ClassVar[str] = "debug"
    agent: str
    iteration: int
    turn: int


@frozen
class TurnFinished(Event):
    name: ClassVar[str] = "turn.finished"
    level: ClassVar[str] = "debug"
    agent: str
    iteration: int
    turn: int
    response: ModelResponse


@frozen
class ToolServerStarted(Event):
    """An MCP server started (or, in a replay, its recording was loaded): its transport and
    the tools the model is offered, each as ``{"name", "tool", "description",
    "input_schema"}`` (``name`` as the model sees it, ``tool`` as the server does)."""

    name: ClassVar[str] = "mcp.started"
    server: str
    transport: str
    tools: tuple[Mapping[str, Any], ...]


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


@frozen
class CheckPassed(Event):
    """The completion check passed (what follows, `run.halted` or a verdict, says so at INFO)."""

    name: ClassVar[str] = "check.passed"
    level: ClassVar[str] = "debug"
    agent: str
    turn: int
    check: str = field(metadata=omitted(""))


@frozen
class CheckFailed(Event):
    name: ClassVar[str] = "check.failed"
    agent: str
    turn: int
    check: str = field(metadata=omitted(""))
    reason: str
    error: str | None = None
    """The traceback, when the check raised (the reason says only its last line)."""


@frozen
class CheckFlaky(Event):
    """Tests that failed and passed on the same code, reported apart from pass and fail with
    the verdict that follows (`check.passed` or `check.failed`): they neither block a claim
    nor count as fixed."""

    name: ClassVar[str] = "check.flaky"
    level: ClassVar[str] = "warning"
    agent: str
    turn: int
    check: str = field(metadata=omitted(""))
    flaky: tuple[str, ...] = ()
    """The tests, by name (the key `harness stats` counts them by)."""


@frozen
class FeedbackInjected(Event):
    name: ClassVar[str] = "feedback.injected"
    agent: str
    turn: int
    source: str
    text: str


@frozen
class VerdictReached(Event):
    name: ClassVar[str] = "verdict.reached"
    round: int
    passed: bool
    reasons: str = field(metadata=omitted(""))


@frozen
class RunHalted(Event):
    name: ClassVar[str] = "run.halted"
    reason: HaltReason
    verified: bool
    turns: int
    tool_calls: int
    usage: Usage


@reads(HaltReason)
def _halt(f: Fields) -> HaltReason:
    f.text("type")
    return halt_from_dict(f.data)


@frozen
class RunWarning(Event):
    """Something the run cannot do as configured, said once at its start (a rollback whose
    check cannot measure progress, a check's `prepare` that recorded no baseline): the run
    goes on, and the log has the line."""

    name: ClassVar[str] = "run.warning"
    level: ClassVar[str] = "warning"
    source: str
    message: str


@frozen
class SinkFailed(Event):
    """A sink raised on event `failed_on` and was detached: it gets no more events of this run,
    which goes on. `sink` is the sink's repr, `error` the exception's type and message."""

    name: ClassVar[str] = "sink.failed"
    level: ClassVar[str] = "warning"
    sink: str
    failed_on: str
    error: str
