"""The OpenAI-compatible client, driven through the real SDK against a loopback server."""

from __future__ import annotations

import logging
import socket
from pathlib import Path
from typing import Any

import pytest
from _provider_server import FakeProvider, FileCheck, Reply, openai_body, openai_client
from structlog.testing import capture_logs

from harness import (
    ConfigurationError,
    Harness,
    Message,
    ModelError,
    ModelFailed,
    ModelPrice,
    OpenAIClient,
    RetryPolicy,
    ToolCall,
    Usage,
    write_file,
)
from harness.extend import ModelRequest, ToolSpec
from harness.testing import FakeClock
from termination import Budget, TerminationPolicy

KEY = "sk-loopback-9f8e7d6c5b4a3210"

pytestmark = pytest.mark.anyio


@pytest.fixture
def unused_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


make = openai_client


def request(*messages: Message, tools: tuple[ToolSpec, ...] = (), **kwargs: Any) -> ModelRequest:
    return ModelRequest(list(messages) or [Message.user("hi")], tools, **kwargs)


SPEC = ToolSpec(
    "write", "Write a file.", {"type": "object", "properties": {"path": {"type": "string"}}}
)


async def test_messages_tools_and_key_reach_the_server_in_chat_completions_form(
    provider: FakeProvider,
) -> None:
    """System, user, assistant tool calls and tool results map one to one, with the key sent."""
    provider.script(Reply(openai_body("ok")))
    call = ToolCall("c1", "write", {"path": "a.txt"})
    messages = [
        Message.system("be careful"),
        Message.user("write a.txt"),
        Message.assistant("", [call]),
        Message.tool_result(call, "error: disk full", is_error=True),
        Message.feedback("completion_check", "a.txt is missing"),
    ]
    await make(provider, options={"temperature": 0.5}).complete(request(*messages, tools=(SPEC,)))
    [got] = provider.requests
    assert got.path == "/v1/chat/completions"
    assert got.headers["authorization"] == f"Bearer {KEY}"
    assert got.body["model"] == "gpt-4o"
    assert got.body["temperature"] == 0.5
    assert got.body["messages"] == [
        {"role": "system", "content": "be careful"},
        {"role": "user", "content": "write a.txt"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "write", "arguments": '{"path": "a.txt"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "error: disk full"},
        {"role": "user", "content": messages[4].content},
    ]
    assert got.body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "write",
                "description": "Write a file.",
                "parameters": dict(SPEC.parameters),
            },
        }
    ]


async def test_text_tool_calls_usage_and_cost_come_back_typed(provider: FakeProvider) -> None:
    """Tool-call arguments are parsed, cached tokens split out, and the cost priced per part."""
    provider.script(
        Reply(
            openai_body(
                "let me write",
                tool_calls=[{"id": "c9", "name": "write", "arguments": {"path": "b"}}],
                prompt_tokens=1000,
                completion_tokens=100,
                cached_tokens=400,
                finish_reason="tool_calls",
            )
        )
    )
    response = await make(provider).complete(request())
    assert response.text == "let me write"
    assert response.tool_calls == (ToolCall("c9", "write", {"path": "b"}),)
    assert response.model == "gpt-4o-2024-08-06"
    assert response.stop_reason == "tool_calls"
    # 600 fresh at $2.50, 400 cached at $1.25, 100 output at $10 (per million).
    assert response.usage.cost_usd == pytest.approx(0.003)
    assert response.usage == Usage(1000, 100, 400, response.usage.cost_usd)


async def test_arguments_that_are_not_json_reach_the_tool_as_raw_text(
    provider: FakeProvider,
) -> None:
    """A tool call with broken JSON arguments is kept, raw, so the tool can say what is wrong."""
    provider.script(
        Reply(openai_body(None, tool_calls=[{"id": "c1", "name": "write", "arguments": "{oops"}]))
    )
    response = await make(provider).complete(request())
    assert response.text == ""
    assert response.tool_calls == (ToolCall("c1", "write", {"_invalid_json": "{oops"}),)


def test_arguments_that_are_no_object_are_refused_saying_what_they_are() -> None:
    """JSON of another kind, or nested past what the parser takes, is refused by name."""
    from harness._tools._raw_arguments import read_arguments, refusal

    assert refusal(read_arguments('{"a": 1}')) is None
    said = refusal(read_arguments("[1]"))
    assert said is not None
    assert "(they are an array, not an object of named arguments)" in said
    deep = refusal(read_arguments("[" * 100_000))
    assert deep is not None
    assert "(nested too deeply)" in deep
    assert len(deep) < 400


async def test_a_refusal_is_the_answer_text(provider: FakeProvider) -> None:
    """A message with no content but a refusal answers with the refusal."""
    body = openai_body(None)
    body["choices"][0]["message"]["refusal"] = "I cannot help with that."
    provider.script(Reply(body))
    response = await make(provider).complete(request())
    assert response.text == "I cannot help with that."


async def test_an_unknown_model_reports_an_unknown_cost_and_refuses_a_cost_budget(
    provider: FakeProvider, tmp_path: Path
) -> None:
    """No price means cost None (never zero), and a cost budget is a configuration error."""
    provider.script(Reply(openai_body("hi", model="local-llama")))
    client = OpenAIClient("local-llama", base_url=provider.url + "/v1", api_key_env=None)
    assert client.prices_known is False
    response = await client.complete(request())
    assert response.usage.cost_usd is None
    assert provider.requests[0].headers["authorization"] == "Bearer EMPTY"
    with pytest.raises(ConfigurationError, match="max_cost_usd"):
        Harness(model=client, policy=TerminationPolicy(budget=Budget(max_cost_usd=1.0)))
    priced = OpenAIClient("local-llama", api_key_env=None, price=ModelPrice(0.0, 0.0))
    assert priced.prices_known is True


async def test_a_rate_limit_waits_for_retry_after_then_succeeds(provider: FakeProvider) -> None:
    """A 429 with Retry-After: 7 is retried after exactly 7 seconds on the harness clock."""
    clock = FakeClock()
    provider.script(
        Reply({"error": {"message": "slow down"}}, status=429, headers={"retry-after": "7"}),
        Reply(openai_body("done")),
    )
    response = await make(provider, clock).complete(request())
    assert response.text == "done"
    assert len(provider.requests) == 2
    assert clock.now() == 7.0


async def test_a_retry_after_date_without_a_zone_is_waited_for(provider: FakeProvider) -> None:
    """A 429 whose Retry-After date has the zone -0000 (or none) waits until that time."""
    clock = FakeClock()
    provider.script(
        Reply(
            {"error": {"message": "slow down"}},
            status=429,
            headers={
                "retry-after": "Wed, 21 Oct 2026 07:28:42 -0000",
                "date": "Wed, 21 Oct 2026 07:28:30 GMT",
            },
        ),
        Reply(openai_body("done")),
    )
    response = await make(provider, clock).complete(request())
    assert response.text == "done"
    assert clock.now() == 12.0


async def test_server_errors_back_off_exponentially(provider: FakeProvider) -> None:
    """Two 500s are retried after 1s and then 2s of backoff."""
    clock = FakeClock()
    provider.script(
        Reply({"error": {"message": "boom"}}, status=500),
        Reply({"error": {"message": "boom"}}, status=503),
        Reply(openai_body("done")),
    )
    with capture_logs() as logs:
        response = await make(provider, clock).complete(request())
    assert response.text == "done"
    assert clock.now() == 3.0
    retries = [e for e in logs if e["event"] == "model.retry"]
    assert [(e["attempt"], e["wait"], e["status_code"]) for e in retries] == [
        (1, 1.0, 500),
        (2, 2.0, 503),
    ]


async def test_server_errors_that_persist_halt_the_run_keeping_the_transcript(
    provider: FakeProvider,
) -> None:
    """After max_attempts 500s the run halts with ModelFailed('server') and keeps its messages."""
    provider.script(*[Reply({"error": {"message": "down"}}, status=500)] * 3)
    clock = FakeClock()
    harness = Harness(model=make(provider, clock), policy=TerminationPolicy(), clock=clock)
    result = await harness.run("say hi")
    assert isinstance(result.halt_reason, ModelFailed)
    assert result.halt_reason.kind == "server"
    assert "gave up after 3 attempt(s)" in result.halt_reason.message
    assert [m.role for m in result.transcript] == ["system", "user"]
    assert len(provider.requests) == 3


@pytest.mark.parametrize(
    ("status", "kind"), [(401, "auth"), (403, "auth"), (400, "bad_request"), (404, "bad_request")]
)
async def test_auth_and_bad_request_errors_are_not_retried(
    provider: FakeProvider, status: int, kind: str
) -> None:
    """Authentication and bad-request errors fail at once, typed, with the key redacted."""
    provider.script(Reply({"error": {"message": f"Incorrect API key provided: {KEY}"}}, status))
    with pytest.raises(ModelError) as caught:
        await make(provider).complete(request())
    assert (caught.value.kind, caught.value.retryable) == (kind, False)
    assert caught.value.status_code == status
    assert KEY not in str(caught.value)
    assert "[redacted]" in str(caught.value)
    assert len(provider.requests) == 1


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (408, "timeout", True),
        (409, "other", True),
        (413, "bad_request", False),
        (418, "other", False),
        (502, "server", True),
    ],
)
async def test_each_status_is_classified(
    provider: FakeProvider, status: int, kind: str, retryable: bool
) -> None:
    """Every HTTP error status maps to one kind, retried only when trying again can help."""
    provider.script(Reply({"error": {"message": "no"}}, status))
    client = make(provider, retry=RetryPolicy.none())
    with pytest.raises(ModelError) as caught:
        await client.complete(request())
    assert (caught.value.kind, caught.value.retryable) == (kind, retryable)


async def test_a_refused_connection_is_retried_then_reported(unused_port: int) -> None:
    """Nothing listening is a retryable 'connection' error."""
    clock = FakeClock()
    client = OpenAIClient(
        "gpt-4o",
        base_url=f"http://127.0.0.1:{unused_port}/v1",
        retry=RetryPolicy(max_attempts=2, jitter=0.0),
        clock=clock,
    )
    with pytest.raises(ModelError, match=r"gave up after 2") as caught:
        await client.complete(request())
    assert (caught.value.kind, caught.value.retryable) == ("connection", True)
    assert clock.now() == 1.0


async def test_a_response_that_is_not_json_is_malformed_and_not_retried(
    provider: FakeProvider,
) -> None:
    """A 200 whose body is HTML is a `malformed` error, raised at once."""
    provider.script(Reply(b"<html>proxy error</html>"))
    with pytest.raises(ModelError, match="not JSON") as caught:
        await make(provider).complete(request())
    assert caught.value.kind == "malformed"
    assert len(provider.requests) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"id": "x", "choices": []},
        {"choices": [{"message": "hi"}]},
        {"choices": [{"message": {"content": 3}}]},
        {"choices": [{"message": {"content": "", "tool_calls": [{"id": "c"}]}}]},
        ["not", "an", "object"],
    ],
)
async def test_json_of_the_wrong_shape_is_malformed(provider: FakeProvider, body: Any) -> None:
    """Bodies without a usable choice, message or tool call are `malformed` errors."""
    provider.script(Reply(body))
    with pytest.raises(ModelError) as caught:
        await make(provider).complete(request())
    assert caught.value.kind == "malformed"


async def test_a_hung_response_times_out_and_is_retried(provider: FakeProvider) -> None:
    """A provider that never answers hits the per-attempt timeout; timeouts are retried."""
    provider.script(Reply(hold=True), Reply(openai_body("late but fine")))
    client = make(provider, timeout=1.0)  # time for a loaded machine to connect
    response = await client.complete(request())
    assert response.text == "late but fine"
    assert len(provider.requests) == 2


async def test_timeouts_that_persist_are_a_timeout_error(provider: FakeProvider) -> None:
    """When every attempt times out the error is kind 'timeout'."""
    provider.script(Reply(hold=True), Reply(hold=True))
    # Long enough for each request to reach the server on a loaded machine (at 0.2 s an
    # attempt could time out while its connection was still being made, and the server saw
    # one request); the replies are held, so every attempt still times out.
    client = make(provider, timeout=1.0, retry=RetryPolicy(max_attempts=2, jitter=0.0))
    with pytest.raises(ModelError) as caught:
        await client.complete(request())
    assert caught.value.kind == "timeout"
    assert len(provider.requests) == 2


async def test_retries_stop_when_the_wait_would_pass_the_deadline(
    provider: FakeProvider,
) -> None:
    """A Retry-After that ends past the request's deadline gives up at once, without waiting."""
    clock = FakeClock()
    provider.script(Reply({"error": {"message": "later"}}, 429, {"retry-after": "100"}))
    with pytest.raises(ModelError, match="would pass the run's deadline") as caught:
        await make(provider, clock).complete(request(deadline=50.0))
    assert caught.value.kind == "rate_limit"
    assert caught.value.retry_after == 100.0
    assert clock.now() == 0.0
    assert len(provider.requests) == 1


async def test_a_wall_time_budget_bounds_the_retries_of_a_run(provider: FakeProvider) -> None:
    """The run's deadline reaches the client: a long Retry-After halts the run, never sleeps."""
    clock = FakeClock()
    provider.script(Reply({"error": {"message": "later"}}, 429, {"retry-after": "90"}))
    harness = Harness(
        model=make(provider, clock),
        policy=TerminationPolicy(budget=Budget(max_wall_time=60.0)),
        clock=clock,
    )
    result = await harness.run("say hi")
    assert isinstance(result.halt_reason, ModelFailed)
    assert result.halt_reason.kind == "rate_limit"
    assert clock.now() == 0.0


async def test_a_run_uses_tools_and_completes_against_the_provider(
    provider: FakeProvider, tmp_path: Path
) -> None:
    """A full run: the model calls write_file, the tool result goes back, the check passes."""
    provider.script(
        Reply(
            openai_body(
                None,
                tool_calls=[
                    {"id": "w1", "name": "write_file", "arguments": {"path": "a", "content": "x"}}
                ],
                finish_reason="tool_calls",
            )
        ),
        Reply(openai_body("all done", prompt_tokens=30, completion_tokens=2)),
    )
    clock = FakeClock()
    harness = Harness(
        model=make(provider, clock),
        policy=TerminationPolicy(completion_check=FileCheck("a", "x")),
        tools=[write_file],
        workspace=tmp_path,
        clock=clock,
    )
    result = await harness.run("write x to a")
    assert result.verified
    assert result.turns == 2
    assert result.usage.input_tokens == 40
    second = provider.requests[1].body["messages"]
    assert second[-1] == {"role": "tool", "tool_call_id": "w1", "content": "wrote 1 bytes to a"}
    assert [t["function"]["name"] for t in provider.requests[0].body["tools"]] == ["write_file"]


async def test_raw_newlines_in_a_string_argument_are_read_and_broken_json_is_refused_with_why(
    provider: FakeProvider, tmp_path: Path
) -> None:
    """A small model writes a file's content with raw newlines inside the JSON string: the call
    succeeds. JSON no parser could read is refused with the parser's reason and position,
    never as a missing argument."""
    raw_newlines = '{"path": "a", "content": "1\n2\n3"}'  # newlines, not JSON's escapes
    provider.script(
        Reply(
            openai_body(
                None,
                tool_calls=[
                    {"id": "w1", "name": "write_file", "arguments": raw_newlines},
                    {"id": "w2", "name": "write_file", "arguments": '{"path": "b" "content": 1}'},
                ],
                finish_reason="tool_calls",
            )
        ),
        Reply(openai_body("all done")),
    )
    clock = FakeClock()
    harness = Harness(
        model=make(provider, clock),
        policy=TerminationPolicy(completion_check=FileCheck("a", "1\n2\n3")),
        tools=[write_file],
        workspace=tmp_path,
        clock=clock,
    )
    result = await harness.run("write 1, 2 and 3 to a, one a line")
    assert result.verified
    assert (tmp_path / "a").read_text() == "1\n2\n3"
    answers = {
        m["tool_call_id"]: m["content"]
        for m in provider.requests[1].body["messages"]
        if m["role"] == "tool"
    }
    assert answers["w1"] == "wrote 5 bytes to a"
    assert answers["w2"] == (
        "error: the tool call's arguments are not a JSON object (Expecting ',' delimiter at "
        'line 1 column 14 (character 13)); they were: \'{"path": "b" "content": 1}\''
    )
    assert "missing required argument" not in answers["w2"]
    assert not (tmp_path / "b").exists()


async def test_the_key_never_appears_in_events_logs_or_repr(
    provider: FakeProvider, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With the key set and echoed by the server, no transcript, log line or repr holds it."""
    caplog.set_level(logging.DEBUG)
    provider.script(
        Reply({"error": {"message": f"busy, key {KEY}"}}, 500),
        Reply({"error": {"message": f"Incorrect API key provided: {KEY}"}}, 401),
    )
    clock = FakeClock()
    client = make(provider, clock)
    transcript = tmp_path / "run.jsonl"
    with capture_logs() as logs:
        harness = Harness(
            model=client, policy=TerminationPolicy(), clock=clock, transcript=transcript
        )
        result = await harness.run("say hi")
    assert isinstance(result.halt_reason, ModelFailed)
    assert result.halt_reason.kind == "auth"
    assert KEY not in transcript.read_text()
    assert KEY not in repr(logs)
    assert KEY not in caplog.text
    assert KEY not in repr(client)
    assert KEY not in repr(result.halt_reason)
    assert not any(KEY in str(v) for v in vars(client).values())


def test_a_missing_key_variable_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client refuses to start when the variable it reads the key from is unset."""
    monkeypatch.delenv("MY_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="MY_KEY"):
        OpenAIClient("gpt-4o", api_key_env="MY_KEY")


async def test_a_key_removed_after_construction_is_an_auth_error(
    provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key is read at each call, so unsetting it fails the next call as 'auth'."""
    client = make(provider)
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ModelError) as caught:
        await client.complete(request())
    assert caught.value.kind == "auth"
    assert provider.requests == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": ""}, "'model'"),
        ({"timeout": 0}, "'timeout'"),
        ({"api_key_env": ""}, "'api_key_env'"),
        ({"price": 3}, "'price'"),
    ],
)
def test_bad_settings_are_configuration_errors(kwargs: dict[str, Any], message: str) -> None:
    """Each bad constructor argument is refused with its name in the message."""
    args: dict[str, Any] = {"model": "gpt-4o", **kwargs}
    model = args.pop("model")
    with pytest.raises(ConfigurationError, match=message):
        OpenAIClient(model, **args)
