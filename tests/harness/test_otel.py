"""OtelSink: a run's events become GenAI-convention spans, nested run > session > turn > call,
timed by the events, with the halt on the run span; checked against the SDK's in-memory
exporter on both backends."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from _otel_support import ORIGIN, Traced
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from harness import (
    CheckFailed,
    ConfigurationError,
    Event,
    Harness,
    OtelSink,
    RunStarted,
    ScriptedModelClient,
    SessionStateSnapshot,
    TurnFinished,
    TurnStarted,
    workspace_tools,
)
from harness.testing import FakeClock, ListSink
from strategies import Ralph, SelfVerifying
from strategies._cli import main
from strategies._cli._telemetry import tracer_provider_from_env
from termination import Budget, TerminationPolicy

ROOT = Path(__file__).resolve().parents[2]


class PartsCheck:
    """Complete when notes.txt has both parts."""

    async def check(self, state: SessionStateSnapshot) -> str | None:
        assert state.workspace is not None
        notes = state.workspace / "notes.txt"
        text = notes.read_text() if notes.exists() else ""
        missing = [p for p in ("part one", "part two") if p not in text]
        return f"notes.txt lacks {' and '.join(missing)}" if missing else None

    def description(self) -> str:
        return "notes.txt has part one and part two."


def parent_of(span: ReadableSpan, traced: Traced) -> ReadableSpan:
    assert span.parent is not None
    return next(s for s in traced.spans if s.context and s.context.span_id == span.parent.span_id)


def writes(call_id: str, content: str, delay: float = 1.0) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "id": call_id,
                "name": "write_file",
                "arguments": {"path": "notes.txt", "content": content},
            }
        ],
        "usage": {"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.001},
        "model": "gpt-test-2025",
        "stop_reason": "tool_calls",
        "delay": delay,
    }


def claims(text: str = "Done.", delay: float = 1.0) -> dict[str, Any]:
    return {
        "text": text,
        "usage": {"input_tokens": 120, "output_tokens": 5, "cost_usd": 0.001},
        "model": "gpt-test-2025",
        "stop_reason": "stop",
        "delay": delay,
    }


def run_with(
    traced: Traced,
    responses: Sequence[dict[str, Any]],
    workspace: Path,
    *,
    sink_options: dict[str, Any] | None = None,
    **harness: Any,
) -> Harness:
    options = {"request_model": "gpt-test", "provider_name": "openai", **(sink_options or {})}
    policy = harness.pop("policy", None) or TerminationPolicy(completion_check=PartsCheck())
    return Harness(
        model=harness.pop("model", None) or ScriptedModelClient.from_responses(responses),
        policy=policy,
        tools=workspace_tools(),
        workspace=workspace,
        clock=FakeClock(),
        sinks=[traced.sink(**options), *harness.pop("sinks", [])],
        **harness,
    )


pytestmark = pytest.mark.anyio


async def test_a_loop_run_is_one_trace_nested_run_session_turn_call(tmp_path: Path) -> None:
    """Every model call, tool call and check is a span under its turn, under the session,
    under the run; the model call carries its tokens and the check its verdict."""
    traced = Traced()
    events = ListSink()
    script = [
        writes("c1", "part one\n"),
        claims(),
        writes("c2", "part one\npart two\n"),
        claims(),
    ]
    result = await run_with(traced, script, tmp_path, sinks=[events]).run("write both parts")
    assert result.verified

    run = traced.one("invoke_agent loop")
    assert run.parent is None
    assert run.kind is SpanKind.INTERNAL
    assert run.attributes is not None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "loop"
    assert run.attributes["gen_ai.provider.name"] == "openai"
    assert run.attributes["harness.verified"] is True
    assert run.attributes["harness.halt.reason"] == "Completed"
    assert run.attributes["gen_ai.usage.input_tokens"] == 440
    assert run.attributes["gen_ai.usage.output_tokens"] == 30
    assert run.status.status_code is StatusCode.UNSET
    assert run.context is not None
    assert {s.context.trace_id for s in traced.spans if s.context} == {run.context.trace_id}

    (session,) = traced.children(run)
    assert session.name == "session builder"
    turns = sorted(traced.children(session), key=lambda s: s.start_time or 0)
    assert [t.name for t in turns] == ["turn 1", "turn 2", "turn 3", "turn 4"]
    names = [sorted(c.name for c in traced.children(t)) for t in turns]
    assert names == [
        ["chat gpt-test", "execute_tool write_file"],
        ["chat gpt-test", "completion_check"],
        ["chat gpt-test", "execute_tool write_file"],
        ["chat gpt-test", "completion_check"],
    ]

    chats = traced.named("chat gpt-test")
    first = min(chats, key=lambda s: s.start_time or 0)
    assert first.kind is SpanKind.CLIENT
    assert dict(first.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-test",
        "gen_ai.provider.name": "openai",
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 10,
        "harness.tool_calls": 1,
        "harness.cost_usd": 0.001,
        "gen_ai.response.model": "gpt-test-2025",
        "gen_ai.response.finish_reasons": ("tool_calls",),
    }

    tools = sorted(traced.named("execute_tool write_file"), key=lambda s: s.start_time or 0)
    assert [(t.attributes or {})["gen_ai.tool.call.id"] for t in tools] == ["c1", "c2"]
    assert (tools[0].attributes or {})["gen_ai.tool.name"] == "write_file"
    assert (tools[0].attributes or {})["gen_ai.operation.name"] == "execute_tool"
    assert "gen_ai.tool.call.arguments" not in (tools[0].attributes or {})

    failed, passed = sorted(traced.named("completion_check"), key=lambda s: s.start_time or 0)
    assert (failed.attributes or {})["gen_ai.evaluation.score.label"] == "fail"
    assert (failed.attributes or {})["gen_ai.evaluation.explanation"] == "notes.txt lacks part two"
    assert (passed.attributes or {})["harness.check.passed"] is True
    assert [e.name for e in passed.events] == ["gen_ai.evaluation.result"]

    # Times are the events' own, on the wall clock read when the run started.
    started = [e for e in events.events if isinstance(e, TurnStarted)]
    finished = [e for e in events.events if isinstance(e, TurnFinished)]
    ordered = sorted(chats, key=lambda s: s.start_time or 0)
    assert [c.start_time for c in ordered] == [ORIGIN + round(e.at * 1e9) for e in started]
    assert [c.end_time for c in ordered] == [ORIGIN + round(e.at * 1e9) for e in finished]
    assert ordered[0].end_time == ORIGIN + 10**9  # the first answer took its 1 s delay
    assert tools[0].start_time == ordered[0].end_time
    assert run.start_time == ORIGIN
    assert run.end_time == ORIGIN + round(events.events[-1].at * 1e9)
    for span in traced.spans:
        parent = parent_of(span, traced) if span.parent else None
        if parent is not None:
            assert parent.start_time <= span.start_time  # type: ignore[operator]
            assert span.end_time <= parent.end_time  # type: ignore[operator]


async def test_a_ralph_run_has_a_session_span_per_iteration(tmp_path: Path) -> None:
    """Each Ralph iteration is its own session span; the check at the boundary hangs under the
    iteration's last turn, and the carried reason is an event on the next session."""
    traced = Traced()
    model = ScriptedModelClient.from_jsonl(ROOT / "fixtures" / "loop" / "ralph_fresh_context.jsonl")
    harness = run_with(traced, [], tmp_path, model=model, strategy=Ralph(max_iterations=3))
    result = await harness.run("Write notes.txt with part one and part two.")
    assert result.verified
    assert result.iterations == 2

    run = traced.one("invoke_agent ralph")
    sessions = sorted(traced.children(run), key=lambda s: s.start_time or 0)
    assert [(s.name, (s.attributes or {})["harness.iteration"]) for s in sessions] == [
        ("session builder", 1),
        ("session builder", 2),
    ]
    assert sessions[0].end_time <= sessions[1].start_time  # type: ignore[operator]
    assert [t.name for t in traced.children(sessions[0])] == ["turn 1", "turn 2"]
    assert sorted(t.name for t in traced.children(sessions[1])) == ["turn 1", "turn 2", "turn 3"]
    checks = traced.named("completion_check")
    labels = [
        (
            parent_of(parent_of(c, traced), traced) is sessions[0],
            (c.attributes or {})["gen_ai.evaluation.score.label"],
        )
        for c in sorted(checks, key=lambda s: s.start_time or 0)
    ]
    assert labels == [(True, "fail"), (False, "pass")]
    carried = [e for e in sessions[1].events if e.name == "harness.feedback.injected"]
    assert [(e.attributes or {})["harness.feedback.source"] for e in carried] == [
        "previous_iteration"
    ]


async def test_a_budget_halt_is_the_run_spans_error(tmp_path: Path) -> None:
    """A run halted by its budget ends its span with an error status naming the limit."""
    traced = Traced()
    script = [writes("a", "x"), writes("b", "y"), writes("c", "z")]
    policy = TerminationPolicy(budget=Budget(max_turns=2), completion_check=PartsCheck())
    harness = run_with(traced, script[:2], tmp_path, policy=policy)
    result = await harness.run("never finishes")
    assert not result.verified

    run = traced.one("invoke_agent loop")
    attributes = run.attributes or {}
    assert run.status.status_code is StatusCode.ERROR
    assert run.status.description == result.halt_reason.describe()
    assert attributes["error.type"] == "BudgetExceeded"
    assert attributes["harness.halt.limit"] == "max_turns"
    assert attributes["harness.halt.limit_value"] == 2
    assert attributes["harness.verified"] is False
    assert traced.named("completion_check") == []
    assert len(traced.named("chat gpt-test")) == 2


async def test_a_failed_model_call_ends_its_span_with_the_error(tmp_path: Path) -> None:
    """A call that never answered is a chat span with an error; no span is left open."""
    traced = Traced()
    script = [{"error": {"kind": "auth", "message": "bad key"}, "delay": 0.5}]
    result = await run_with(traced, script, tmp_path).run("task")
    assert not result.verified
    (chat,) = traced.named("chat gpt-test")
    assert chat.status.status_code is StatusCode.ERROR
    assert (chat.attributes or {})["error.type"] == "ModelFailed"
    assert chat.end_time == ORIGIN + round(0.5 * 1e9)
    assert len(traced.spans) == 4  # run, session, turn, chat: all ended


async def test_self_verifying_names_each_agents_model_and_records_the_verdict(
    tmp_path: Path,
) -> None:
    """The evaluator's session and calls are spans of their own, named by its model, and its
    verdict is a gen_ai.evaluation.result event on the run."""
    traced = Traced()
    (tmp_path / "notes.txt").write_text("part one\npart two\n")
    evaluator = ScriptedModelClient.from_responses(
        [{"text": "Looks right.\nVERDICT: PASS", "model": "judge-1"}], name="evaluator"
    )
    harness = run_with(
        traced,
        [claims()],
        tmp_path,
        strategy=SelfVerifying(evaluator=evaluator, evaluator_must_use_tools=False),
        sink_options={"request_model": {"builder": "gpt-test", "evaluator": "judge"}},
    )
    result = await harness.run("task")
    assert result.verified
    run = traced.one("invoke_agent self_verifying")
    assert sorted(s.name for s in traced.children(run)) == ["session builder", "session evaluator"]
    assert len(traced.named("chat judge")) == 1
    (verdict,) = [e for e in run.events if e.name == "gen_ai.evaluation.result"]
    assert (verdict.attributes or {})["gen_ai.evaluation.score.label"] == "pass"
    assert (verdict.attributes or {})["gen_ai.evaluation.name"] == "evaluator_verdict"


async def test_content_is_recorded_only_when_asked(tmp_path: Path) -> None:
    """capture_content adds tool arguments and results, off by default."""
    traced = Traced()
    script = [writes("c1", "part one\npart two\n"), claims()]
    harness = run_with(traced, script, tmp_path, sink_options={"capture_content": True})
    await harness.run("task")
    (tool,) = traced.named("execute_tool write_file")
    attributes = tool.attributes or {}
    assert json.loads(str(attributes["gen_ai.tool.call.arguments"]))["path"] == "notes.txt"
    assert "notes.txt" in str(attributes["gen_ai.tool.call.result"])


def _started(run_id: str) -> Event:
    return RunStarted(0.0, run_id, "task", "loop", None, "check")


def test_a_run_that_never_halted_is_ended_as_abandoned() -> None:
    """A second run on the same sink ends the first one's spans, marked abandoned."""
    traced = Traced()
    sink = traced.sink()
    sink.emit(_started("one"))
    sink.emit(CheckFailed(2.0, "builder", 0, "check", "not yet"))
    sink.emit(_started("two"))
    (first,) = traced.named("invoke_agent loop")
    assert (first.attributes or {})["error.type"] == "abandoned"
    assert first.end_time == ORIGIN + 2 * 10**9
    assert repr(sink) == "OtelSink(following a run)"


def test_without_opentelemetry_the_sink_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The extra is optional: without it the error names the install command."""
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(ConfigurationError, match=r"pip install 'completion-harness\[otel\]'"):
        OtelSink()


def test_the_exporter_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Console by default; otlp by name or by endpoint (and a clear error without the
    package); anything else is refused."""
    console = tracer_provider_from_env({})
    processors = console._active_span_processor._span_processors
    assert type(processors[0].span_exporter).__name__ == "ConsoleSpanExporter"  # type: ignore[attr-defined]
    assert console.resource.attributes["service.name"] == "completion-harness"
    assert (
        tracer_provider_from_env(
            {"OTEL_TRACES_EXPORTER": "none"}
        )._active_span_processor._span_processors
        == ()
    )
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    with pytest.raises(ConfigurationError, match="opentelemetry-exporter-otlp-proto-http"):
        tracer_provider_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    with pytest.raises(ConfigurationError, match="'zipkin' is not supported"):
        tracer_provider_from_env({"OTEL_TRACES_EXPORTER": "zipkin"})


def test_harness_run_otel_prints_spans_on_stderr(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`harness run --otel` exports the run's spans (console exporter on stderr by default)
    and still prints the outcome on stdout."""
    monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    spec = ROOT / "fixtures" / "demo" / "ralph.toml"
    assert main(["run", str(spec), "--otel", "-q", "--transcript", "/dev/null"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("VERIFIED COMPLETE")
    names = [json.loads(chunk)["name"] for chunk in _json_objects(err)]
    assert "invoke_agent ralph" in names
    assert names.count("session builder") == 2

    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin")
    assert main(["run", str(spec), "--otel", "-q", "--transcript", "/dev/null"]) == 2
    assert "'zipkin' is not supported" in capsys.readouterr().err


def _json_objects(text: str) -> list[str]:
    """The top-level JSON objects the console exporter printed, one after another."""
    decoder = json.JSONDecoder()
    found: list[str] = []
    index = 0
    while True:
        start = text.find("{", index)
        if start < 0:
            return found
        _, end = decoder.raw_decode(text, start)
        found.append(text[start:end])
        index = end
