"""`harness run --otel`: a tracer provider set up from the standard ``OTEL_*`` variables."""

from __future__ import annotations

import math
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from harness import ConfigurationError
from harness.events import Event, EventSink

# How long the end of a command may wait for the exporter to send the last spans: a collector
# that is down or never answers delays the exit by this much at most.
SHUTDOWN_TIMEOUT_VARIABLE = "HARNESS_OTEL_SHUTDOWN_TIMEOUT"
DEFAULT_SHUTDOWN_TIMEOUT = 2.0

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span

    from strategies.board import AttemptInfo, AttemptOutcome, AttemptSpec, BoardResult

    from .._spec import Spec


def tracer_provider_from_env(environ: Mapping[str, str] | None = None) -> TracerProvider:
    """A tracer provider for the command line (`harness run --otel`), set up from the standard
    ``OTEL_*`` variables.

    ``OTEL_TRACES_EXPORTER`` picks the exporter: ``console`` (the default: one JSON object per
    span, on one line, on stderr, so stdout keeps the outcome) or ``otlp`` (also chosen when an
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``..._TRACES_ENDPOINT`` is set; it needs
    ``opentelemetry-exporter-otlp-proto-http``, which reads its own ``OTEL_EXPORTER_OTLP_*``
    settings). ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` name the service
    (default ``completion-harness``). End it with `shutdown_provider` when the run is over:
    that waits ``HARNESS_OTEL_SHUTDOWN_TIMEOUT`` seconds at most (`shutdown_timeout`).
    """
    try:
        from opentelemetry.sdk.resources import Resource
    except ImportError:
        raise ConfigurationError(
            "--otel needs OpenTelemetry: pip install 'completion-harness[otel]'"
        ) from None
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
        SpanExporter,
    )

    env = os.environ if environ is None else environ
    timeout = shutdown_timeout(env)
    chosen = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if not chosen:
        endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get(
            "OTEL_EXPORTER_OTLP_ENDPOINT"
        )
        chosen = "otlp" if endpoint else "console"
    attributes = {} if env.get("OTEL_SERVICE_NAME") else {"service.name": "completion-harness"}
    # Not shut down again at the interpreter's exit, where a hung collector would hold it.
    provider = SdkTracerProvider(resource=Resource.create(attributes), shutdown_on_exit=False)
    exporter: SpanExporter
    if chosen == "console":
        # One line per span: the exporter's default (indented JSON) buries the progress.
        exporter = ConsoleSpanExporter(out=sys.stderr, formatter=_one_line)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    elif chosen == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            raise ConfigurationError(
                "OTEL_TRACES_EXPORTER=otlp needs the OTLP exporter: "
                "pip install opentelemetry-exporter-otlp-proto-http"
            ) from None
        # Each request within the shutdown's bound, unless the OTLP variables set their own.
        timed = any(env.get(f"OTEL_EXPORTER_OTLP{s}_TIMEOUT") for s in ("", "_TRACES"))
        otlp = OTLPSpanExporter() if timed else OTLPSpanExporter(timeout=timeout)
        provider.add_span_processor(BatchSpanProcessor(otlp))
    elif chosen != "none":
        raise ConfigurationError(
            f"OTEL_TRACES_EXPORTER={chosen!r} is not supported here "
            "(expected console, otlp or none)"
        )
    return provider


def shutdown_timeout(environ: Mapping[str, str] | None = None) -> float:
    """The seconds `shutdown_provider` waits at most: ``HARNESS_OTEL_SHUTDOWN_TIMEOUT``, a
    number >= 0 (`DEFAULT_SHUTDOWN_TIMEOUT` when unset)."""
    env = os.environ if environ is None else environ
    raw = env.get(SHUTDOWN_TIMEOUT_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_SHUTDOWN_TIMEOUT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise ConfigurationError(
            f"{SHUTDOWN_TIMEOUT_VARIABLE} must be a number of seconds >= 0 (got {raw!r})"
        )
    return seconds


def shutdown_provider(provider: Any, timeout: float | None = None) -> bool:
    """Shut `provider` down (its exporter sends the spans still queued), waiting `timeout`
    seconds at most (`shutdown_timeout()` by default); False, with a note on stderr, when the
    exporter was still busy then: the spans it had not sent are dropped, and the command
    exits all the same (the shutdown goes on in a daemon thread that does not hold the
    interpreter)."""
    seconds = shutdown_timeout() if timeout is None else timeout
    worker = threading.Thread(target=provider.shutdown, name="harness-otel-shutdown", daemon=True)
    worker.start()
    worker.join(seconds)
    if not worker.is_alive():
        return True
    print(
        f"harness: the OpenTelemetry exporter did not finish within {seconds:g}s "
        f"(a collector down or not answering?); the spans it had not sent are dropped "
        f"({SHUTDOWN_TIMEOUT_VARIABLE} sets the wait)",
        file=sys.stderr,
    )
    return False


def _one_line(span: Any) -> str:
    return str(span.to_json(indent=None)) + "\n"


def otel_sink_for(spec: Spec | None, model: Mapping[str, Any] | None, provider: Any) -> EventSink:
    """An `OtelSink` on `provider`, told the requested models (the builder's from `model`, a
    model table, the evaluator's from the spec's strategy) and the provider."""
    from harness import OtelSink

    models: dict[str, str] = {}
    evaluator = spec.strategy.get("evaluator") if spec is not None else None
    for agent, table in (("builder", model), ("evaluator", evaluator)):
        if isinstance(table, Mapping) and isinstance(table.get("model"), str):
            models[agent] = table["model"]
    kind = model.get("type") if model is not None else None
    return OtelSink(
        provider,
        request_model=models,
        provider_name=kind if kind in ("openai", "anthropic") else None,
    )


class BoardTracer:
    """`harness board run --otel`: the board's run as one trace. A ``harness.board`` span
    spans the run; each attempt is a ``harness.attempt`` span under it (the task id, the
    attempt number, the agent, its role, then the outcome); the attempt's run is the
    ``invoke_agent`` tree of an `OtelSink` under that (for attempts run in the board's
    process: with the Ray engine the attempt spans come alone). An `AttemptWatcher`; open it
    with `start`; `end` ends it and shuts the provider down."""

    def __init__(self, provider: TracerProvider, *, folder: str, engine: str) -> None:
        from opentelemetry import trace

        self._trace = trace
        self._provider = provider
        self._tracer = provider.get_tracer("completion-harness")
        self._folder = folder
        self._engine = engine
        self._board: Span | None = None
        self._attempts: dict[AttemptInfo, Span] = {}

    def start(self) -> None:
        self._board = self._tracer.start_span(
            "harness.board",
            attributes={"harness.board.folder": self._folder, "harness.board.engine": self._engine},
        )

    def end(self, result: BoardResult | None, stopped: str | None = None) -> None:
        """End the board's span (and any attempt span still open): with the tasks' counts, or
        as an error when the board was stopped (`stopped` says by what) or refused to run."""
        for info in list(self._attempts):
            self._end_attempt(info, "cancelled", stopped or "the board stopped")
        board = self._board
        if board is None:
            return
        self._board = None
        if result is not None:
            board.set_attributes(
                {f"harness.board.tasks.{status}": n for status, n in result.counts.items()}
            )
            board.set_attribute("harness.board.complete", result.complete)
        if result is None or not result.complete:
            why = stopped or ("not every task is complete" if result else "the board did not run")
            board.set_attribute("error.type", "stopped" if stopped else "incomplete")
            board.set_status(self._trace.Status(self._trace.StatusCode.ERROR, why))
        board.end()
        shutdown_provider(self._provider)  # flushes the exporter before the table is printed

    # -- AttemptWatcher

    def started(self, spec: AttemptSpec) -> Sequence[EventSink]:
        if self._board is None:
            return ()
        info = spec.info
        span = self._tracer.start_span(
            "harness.attempt",
            context=self._trace.set_span_in_context(self._board),
            attributes={
                "harness.task.id": info.task,
                "harness.attempt.number": info.attempt,
                "harness.agent": info.agent,
                "harness.role": info.role,
            },
        )
        self._attempts[info] = span
        model = spec.model if isinstance(spec.model, Mapping) else None
        return [_Within(otel_sink_for(spec.spec, model, self._provider), span, self._trace)]

    def finished(self, spec: AttemptSpec, outcome: AttemptOutcome | None) -> None:
        if outcome is None:
            self._end_attempt(spec.info, "cancelled", "the attempt was cancelled")
        else:
            self._end_attempt(spec.info, outcome.outcome, outcome.message)

    def _end_attempt(self, info: AttemptInfo, outcome: str, message: str) -> None:
        span = self._attempts.pop(info, None)
        if span is None:
            return
        span.set_attributes(
            {"harness.attempt.outcome": outcome, "harness.attempt.message": message}
        )
        if outcome != "complete":
            span.set_attribute("error.type", outcome)
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, message))
        span.end()


class _Within:
    """An `OtelSink` whose run span is a child of `parent` (the attempt's span): the parent is
    the current span while the sink handles each event."""

    def __init__(self, sink: EventSink, parent: Span, trace: Any) -> None:
        from opentelemetry import context

        self._sink = sink
        self._context = context
        self._parent = trace.set_span_in_context(parent)

    def emit(self, event: Event) -> None:
        token = self._context.attach(self._parent)
        try:
            self._sink.emit(event)
        finally:
            self._context.detach(token)

    def __repr__(self) -> str:
        return repr(self._sink)
