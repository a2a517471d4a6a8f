"""`OtelSink`: a run's events as OpenTelemetry spans, named and attributed after the GenAI
semantic conventions (``pip install 'completion-harness[otel]'``).

The spans are built from the typed events alone, so the loop needs no tracing of its own::

    invoke_agent {name}                 the run; its status and attributes carry the halt
      session {agent}                   one per session (a Ralph iteration, an evaluator)
        turn {n}                        one per turn
          chat {model}                  the model call: tokens, response model, finish reason
          execute_tool {tool}           each tool call (from the model's answer to the result)
          completion_check              the check's verdict, with gen_ai.evaluation.* keys

A check that runs before the first turn is a child of the run. Sensor readings and injected
feedback are span events on their turn (or session); an evaluator's verdict is a
``gen_ai.evaluation.result`` event on the run span. Event times (`Event.at`, seconds since the
run started on the run's clock) are placed on the wall clock read when the run starts, so a
replay on a `FakeClock` still gives spans with the run's own durations.

The attribute names follow the GenAI conventions' development status (``gen_ai.provider.name``,
``gen_ai.usage.input_tokens``, ``gen_ai.tool.call.id``, ...); the harness's own facts are under
``harness.*``. Message and tool contents are recorded only with ``capture_content=True``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._errors import ConfigurationError
from .._events._base import Event
from .._events._run import (
    CheckFailed,
    CheckPassed,
    FeedbackInjected,
    IterationStarted,
    RunHalted,
    RunStarted,
    SensorRead,
    TurnFinished,
    TurnStarted,
    VerdictReached,
)
from .._events._tool import ToolCalled
from .._log import get_logger

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

_CONTENT_LIMIT = 4096


def _import_otel() -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        raise ConfigurationError(
            "OpenTelemetry is not installed: pip install 'completion-harness[otel]'"
        ) from None
    return trace


class _Open:
    """A span still open, and the time of the last event that belongs to it (its end)."""

    __slots__ = ("last", "number", "span", "started")

    def __init__(self, span: Span, at: int, number: int = 0) -> None:
        self.span = span
        self.started = at
        self.last = at
        self.number = number


class OtelSink:
    """Emits one OpenTelemetry span tree per run (see the module's docstring).

    `tracer_provider` defaults to the global one. `agent_name` names the run span
    (``invoke_agent {agent_name}``; default: the strategy's name). `request_model` is the model
    the builder asks (a string), or a mapping from agent name (``builder``, ``evaluator``) to
    model; `provider_name` is ``gen_ai.provider.name`` (``openai``, ``anthropic``). A sink
    follows one run at a time: give concurrent runs one each (``harness.run(task,
    sinks=[OtelSink()])``). A run that never halts (cancelled from outside) has its spans ended
    at its last event, marked ``error.type = abandoned``, when the next run starts.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        *,
        agent_name: str | None = None,
        request_model: str | Mapping[str, str] | None = None,
        provider_name: str | None = None,
        capture_content: bool = False,
        wall_clock: Callable[[], int] = time.time_ns,
    ) -> None:
        trace = _import_otel()
        self._trace = trace
        self._tracer: Tracer = (tracer_provider or trace.get_tracer_provider()).get_tracer(
            "completion-harness", _version()
        )
        self.agent_name = agent_name
        self._models: Mapping[str, str] = (
            {} if request_model is None
            else request_model if isinstance(request_model, Mapping)
            else {"*": request_model}
        )  # fmt: skip
        self.provider_name = provider_name
        self.capture_content = capture_content
        self._wall_clock = wall_clock
        self._origin = 0
        self._run: _Open | None = None
        self._sessions: dict[str, _Open] = {}
        self._turns: dict[str, _Open] = {}
        self._chats: dict[str, _Open] = {}

    def emit(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self._start_run(event)
            return
        run = self._run
        if run is None:
            return  # attached after the run started: nothing to hang the spans on
        at = self._ns(event.at)
        run.last = max(run.last, at)
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event, at)

    # --- the run -------------------------------------------------------------------------

    def _ns(self, at: float) -> int:
        return self._origin + round(at * 1e9)

    def _start_run(self, event: RunStarted) -> None:
        if self._run is not None:
            self._abandon()
        self._origin = self._wall_clock() - round(event.at * 1e9)
        name = self.agent_name or event.strategy
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": name,
            "harness.run_id": event.run_id,
            "harness.strategy": event.strategy,
            "harness.check": event.check,
        }
        if self.provider_name is not None:
            attributes["gen_ai.provider.name"] = self.provider_name
        if "builder" in self._models or "*" in self._models:
            attributes["gen_ai.request.model"] = self._model_for("builder")
        if event.workspace is not None:
            attributes["harness.workspace"] = event.workspace
        if self.capture_content:
            attributes["harness.task"] = _clip(event.task)
        at = self._ns(event.at)
        span = self._tracer.start_span(
            f"invoke_agent {name}",
            kind=self._trace.SpanKind.INTERNAL,
            attributes=attributes,
            start_time=at,
        )
        self._run = _Open(span, at)

    def _halted(self, event: RunHalted, at: int) -> None:
        run = self._run
        assert run is not None
        reason = event.reason
        for agent in list(self._sessions):
            self._close_session(agent, failed=reason, at=at)
        span = run.span
        usage = event.usage
        span.set_attributes(
            {
                "harness.halt.reason": type(reason).__name__,
                "harness.halt.description": reason.describe(),
                "harness.verified": event.verified,
                "harness.turns": event.turns,
                "harness.tool_calls": event.tool_calls,
                "gen_ai.usage.input_tokens": usage.input_tokens,
                "gen_ai.usage.output_tokens": usage.output_tokens,
            }
        )
        for key, value in reason.to_dict().items():
            if key != "type" and isinstance(value, str | int | float | bool):
                span.set_attribute(f"harness.halt.{key}", value)
        if usage.cost_usd is not None:
            span.set_attribute("harness.cost_usd", usage.cost_usd)
        if not event.verified:
            span.set_attribute("error.type", type(reason).__name__)
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, reason.describe()))
        span.end(end_time=at)
        self._run = None

    def _abandon(self) -> None:
        """End a run that never halted (cancelled from outside, or a run sharing this sink)."""
        run = self._run
        assert run is not None
        get_logger("harness.otel").warning(
            "otel.run_abandoned",
            message="a run started before the last one halted; give concurrent runs a sink each",
        )
        last = max([run.last, *(s.last for s in self._sessions.values())])
        for agent in list(self._sessions):
            self._close_session(agent, at=last)
        run.span.set_attribute("error.type", "abandoned")
        run.span.set_status(
            self._trace.Status(self._trace.StatusCode.ERROR, "the run ended without halting")
        )
        run.span.end(end_time=last)
        self._run = None

    def _verdict(self, event: VerdictReached, at: int) -> None:
        assert self._run is not None
        self._run.span.add_event(
            "gen_ai.evaluation.result",
            {
                "gen_ai.evaluation.name": "evaluator_verdict",
                "gen_ai.evaluation.score.label": "pass" if event.passed else "fail",
                "gen_ai.evaluation.explanation": _clip(event.reasons),
                "harness.round": event.round,
            },
            timestamp=at,
        )

    # --- sessions and turns --------------------------------------------------------------

    def _iteration(self, event: IterationStarted, at: int) -> None:
        run = self._run
        assert run is not None
        self._close_session(event.agent, at=at)
        span = self._tracer.start_span(
            f"session {event.agent}",
            context=self._trace.set_span_in_context(run.span),
            attributes={"harness.agent": event.agent, "harness.iteration": event.iteration},
            start_time=at,
        )
        self._sessions[event.agent] = _Open(span, at, event.iteration)

    def _close_session(self, agent: str, *, at: int, failed: Any = None) -> None:
        self._close_turn(agent, failed=failed, at=at)
        session = self._sessions.pop(agent, None)
        if session is not None:
            session.span.end(end_time=session.last)

    def _close_turn(self, agent: str, *, at: int, failed: Any = None) -> None:
        chat = self._chats.pop(agent, None)
        if chat is not None:  # the call never answered: it failed, or a deadline cut it off
            chat.span.set_attribute("error.type", type(failed).__name__ if failed else "_OTHER")
            description = failed.describe() if failed is not None else "no response"
            chat.span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, description))
            chat.span.end(end_time=at)
            self._touch(agent, at)
        turn = self._turns.pop(agent, None)
        if turn is not None:
            turn.span.end(end_time=turn.last)

    def _touch(self, agent: str, at: int) -> None:
        for table in (self._sessions, self._turns):
            open_ = table.get(agent)
            if open_ is not None and at > open_.last:
                open_.last = at

    def _parent(self, agent: str, turn: int | None = None) -> _Open:
        """The innermost open span an agent's event belongs to: its turn (the same turn, when
        `turn` is given), else its session, else the run."""
        current = self._turns.get(agent)
        if current is not None and (turn is None or current.number == turn):
            return current
        session = self._sessions.get(agent)
        if session is not None:
            return session
        assert self._run is not None
        return self._run

    def _turn_started(self, event: TurnStarted, at: int) -> None:
        self._close_turn(event.agent, at=at)
        parent = self._parent(event.agent)
        context = self._trace.set_span_in_context(parent.span)
        turn = self._tracer.start_span(
            f"turn {event.turn}",
            context=context,
            attributes={
                "harness.agent": event.agent,
                "harness.iteration": event.iteration,
                "harness.turn": event.turn,
            },
            start_time=at,
        )
        self._turns[event.agent] = _Open(turn, at, event.turn)
        model = self._model_for(event.agent)
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat"}
        if model is not None:
            attributes["gen_ai.request.model"] = model
        if self.provider_name is not None:
            attributes["gen_ai.provider.name"] = self.provider_name
        chat = self._tracer.start_span(
            f"chat {model}" if model else "chat",
            context=self._trace.set_span_in_context(turn),
            kind=self._trace.SpanKind.CLIENT,
            attributes=attributes,
            start_time=at,
        )
        self._chats[event.agent] = _Open(chat, at, event.turn)
        self._touch(event.agent, at)

    def _turn_finished(self, event: TurnFinished, at: int) -> None:
        chat = self._chats.pop(event.agent, None)
        if chat is None:
            return
        response = event.response
        span = chat.span
        usage = response.usage
        span.set_attributes(
            {
                "gen_ai.usage.input_tokens": usage.input_tokens,
                "gen_ai.usage.output_tokens": usage.output_tokens,
                "harness.tool_calls": len(response.tool_calls),
            }
        )
        if usage.cached_tokens:
            span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cached_tokens)
        if usage.cost_usd is not None:
            span.set_attribute("harness.cost_usd", usage.cost_usd)
        if response.model is not None:
            span.set_attribute("gen_ai.response.model", response.model)
            if self._model_for(event.agent) is None:
                span.update_name(f"chat {response.model}")
        if response.stop_reason is not None:
            span.set_attribute("gen_ai.response.finish_reasons", [response.stop_reason])
        if self.capture_content and response.text:
            span.set_attribute("harness.response.text", _clip(response.text))
        span.end(end_time=at)
        self._touch(event.agent, at)
        turn = self._turns.get(event.agent)
        if turn is not None:
            turn.started = at  # tool calls start when the answer arrives

    def _tool(self, event: ToolCalled, at: int) -> None:
        parent = self._parent(event.agent, event.turn)
        call = event.call
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        }
        if self.capture_content:
            import json

            attributes["gen_ai.tool.call.arguments"] = _clip(json.dumps(dict(call.arguments)))
            attributes["gen_ai.tool.call.result"] = _clip(event.content)
        span = self._tracer.start_span(
            f"execute_tool {call.name}",
            context=self._trace.set_span_in_context(parent.span),
            attributes=attributes,
            start_time=min(parent.started, at),
        )
        if event.is_error:
            span.set_attribute("error.type", "tool_error")
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, event.content[:200]))
        span.end(end_time=at)
        self._touch(event.agent, at)

    def _check(self, event: CheckPassed | CheckFailed, at: int) -> None:
        parent = self._parent(event.agent, event.turn)
        passed = isinstance(event, CheckPassed)
        attributes: dict[str, Any] = {
            "gen_ai.evaluation.name": "completion_check",
            "gen_ai.evaluation.score.label": "pass" if passed else "fail",
            "harness.check": event.check,
            "harness.check.passed": passed,
            "harness.agent": event.agent,
        }
        if isinstance(event, CheckFailed):
            attributes["gen_ai.evaluation.explanation"] = _clip(event.reason)
        span = self._tracer.start_span(
            "completion_check",
            context=self._trace.set_span_in_context(parent.span),
            attributes=attributes,
            start_time=min(parent.last, at),
        )
        span.add_event(
            "gen_ai.evaluation.result",
            {k: v for k, v in attributes.items() if k.startswith("gen_ai.")},
            timestamp=at,
        )
        span.end(end_time=at)
        self._touch(event.agent, at)

    def _sensor(self, event: SensorRead, at: int) -> None:
        self._parent(event.agent, event.turn).span.add_event(
            "harness.sensor.reading",
            {
                "harness.sensor": event.sensor,
                "harness.sensor.status": event.status,
                "harness.sensor.message": _clip(event.message),
            },
            timestamp=at,
        )
        self._touch(event.agent, at)

    def _feedback(self, event: FeedbackInjected, at: int) -> None:
        attributes: dict[str, Any] = {"harness.feedback.source": event.source}
        if self.capture_content:
            attributes["harness.feedback.text"] = _clip(event.text)
        self._parent(event.agent, event.turn).span.add_event(
            "harness.feedback.injected", attributes, timestamp=at
        )
        self._touch(event.agent, at)

    def _model_for(self, agent: str) -> str | None:
        return self._models.get(agent) or self._models.get("*")

    def __repr__(self) -> str:
        state = "following a run" if self._run is not None else "idle"
        return f"OtelSink({state})"


_HANDLERS: dict[type, Callable[[OtelSink, Any, int], None]] = {
    IterationStarted: OtelSink._iteration,
    TurnStarted: OtelSink._turn_started,
    TurnFinished: OtelSink._turn_finished,
    ToolCalled: OtelSink._tool,
    CheckPassed: OtelSink._check,
    CheckFailed: OtelSink._check,
    SensorRead: OtelSink._sensor,
    FeedbackInjected: OtelSink._feedback,
    VerdictReached: OtelSink._verdict,
    RunHalted: OtelSink._halted,
}


def _version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("completion-harness")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        return None


def _clip(text: str) -> str:
    return text if len(text) <= _CONTENT_LIMIT else text[:_CONTENT_LIMIT] + "..."
