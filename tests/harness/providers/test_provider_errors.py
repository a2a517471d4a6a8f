"""What providers send back, on both SDKs: error bodies become one readable message, requests
a server could not parse are not retried, and the API key is redacted from every reply."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from _provider_server import (
    FakeProvider,
    Reply,
    anthropic_body,
    anthropic_client,
    llama_cpp_refusal,
    openai_body,
    openai_client,
)
from structlog.testing import capture_logs

from harness import (
    Harness,
    Message,
    ModelError,
    ModelFailed,
    RecordingModelClient,
    RetryPolicy,
    write_file,
)
from harness._providers._base import ProviderClient
from harness.extend import ModelRequest
from harness.testing import FakeClock
from termination import TerminationPolicy

KEY = "sk-loopback-redact-5e6f7a8b9c0d"

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


openai, anthropic = openai_client, anthropic_client


def hi() -> ModelRequest:
    return ModelRequest([Message.user("hi")])


# What llama.cpp answered to "content": null, conversation dump included.
NULL_CONTENT = llama_cpp_refusal(
    {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}]}
)


# What llama-cpp-python's server answers to a request its pydantic model refuses.
LLAMA_CPP_PYTHON_VALIDATION = {
    "error": {
        "message": "2 validation errors for CreateChatCompletionRequest\n"
        "messages.1.content\n  Input should be a valid string [type=string_type, "
        "input_value=None, input_type=NoneType]\n"
        "tools.0.function.name\n  Field required [type=missing, input_value={}, "
        "input_type=dict]",
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }
}


@pytest.mark.parametrize(
    "error",
    [
        NULL_CONTENT,
        llama_cpp_refusal({"messages": [{"role": "assistant"}]}),
        {"error": {"code": 500, "message": "Failed to parse tools: bad", "type": "server_error"}},
        {"error": {"code": 500, "message": "[json.exception.type_error.302] type must be string"}},
        {"error": {"message": "unexpected field", "type": "invalid_request_error"}},
        {"object": "error", "message": "unexpected field", "type": "BadRequestError"},
        LLAMA_CPP_PYTHON_VALIDATION,
        {"error": {"message": "1 validation error:\n  {'type': 'missing'}", "type": "x"}},
    ],
)
async def test_a_500_saying_the_request_is_invalid_is_a_bad_request_sent_once(
    provider: FakeProvider, error: Any
) -> None:
    """A 500 whose body says the request could not be parsed is not retried: it would fail
    the same way again."""
    provider.script(*[Reply(error, 500)] * 3)
    with pytest.raises(ModelError) as caught:
        await openai(provider, FakeClock()).complete(hi())
    assert (caught.value.kind, caught.value.retryable) == ("bad_request", False)
    assert caught.value.status_code == 500
    assert len(provider.requests) == 1


@pytest.mark.parametrize(
    "message",
    [
        "Failed to parse input at pos 12: <tool_call>{",
        "CUDA error: out of memory",
        "boom",
        "3 validation errors later, the server gave up",
    ],
)
async def test_other_500s_are_still_retried(provider: FakeProvider, message: str) -> None:
    """A 500 about the server, or about the model's own output, is worth another try."""
    provider.script(
        Reply({"error": {"code": 500, "message": message, "type": "server_error"}}, 500),
        Reply(openai_body("ok")),
    )
    response = await openai(provider, FakeClock()).complete(hi())
    assert response.text == "ok"
    assert len(provider.requests) == 2


async def test_the_halt_message_shows_the_providers_error_once_and_bounded(
    provider: FakeProvider,
) -> None:
    """The halt reason is the status and the provider's own message, once, not the SDK's
    rendering of the whole body; a message that echoes a long conversation is cut short."""
    long = {"role": "user", "content": "x" * 5000}
    refusal = llama_cpp_refusal({"messages": [long, {"role": "assistant", "content": None}]})
    provider.script(Reply(refusal, 500))
    clock = FakeClock()
    result = await Harness(
        model=openai(provider, clock), policy=TerminationPolicy(), clock=clock
    ).run("say hi")
    assert isinstance(result.halt_reason, ModelFailed)
    message = result.halt_reason.message
    assert message.startswith(
        "openai HTTP 500: Failed to parse messages: [json.exception.type_error.302] type must "
        "be string, but is null; messages = ["
    )
    assert message.count("Failed to parse messages") == 1
    assert "Error code" not in message
    assert "server_error" not in message
    assert len(message) < 1200
    assert message.endswith("more characters)")
    assert len(provider.requests) == 1


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (Reply(b"<html>502 Bad Gateway</html>", 502), "openai HTTP 502: <html>502 Bad Gateway"),
        (Reply(b"", 503), "openai HTTP 503: (empty body)"),
        (Reply({"error": "model is loading"}, 503), "openai HTTP 503: model is loading"),
        (Reply({"detail": "no such model"}, 404), 'openai HTTP 404: {"detail": "no such model"}'),
    ],
)
async def test_any_error_body_becomes_the_message(
    provider: FakeProvider, reply: Reply, expected: str
) -> None:
    """Non-JSON bodies, empty bodies and odd JSON shapes all reach the message as text."""
    provider.script(reply)
    with pytest.raises(ModelError) as caught:
        await openai(provider, FakeClock(), retry=RetryPolicy.none()).complete(hi())
    assert str(caught.value).startswith(expected)


async def test_anthropic_errors_show_the_message_once(provider: FakeProvider) -> None:
    """The Anthropic client words its errors the same way."""
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad role"}}
    provider.script(Reply(body, 400))
    with pytest.raises(ModelError) as caught:
        await anthropic(provider, FakeClock()).complete(hi())
    assert str(caught.value) == "anthropic HTTP 400: bad role"
    assert caught.value.kind == "bad_request"


# The key as a JSON escape spells it: the raw body does not contain it, the decoded text does.
ESCAPED = "".join(f"\\u{ord(c):04x}" for c in KEY)


async def test_a_key_echoed_by_replies_and_errors_is_redacted_everywhere(
    provider: FakeProvider, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Text, tool calls, a non-JSON error body: none brings the key into the result, the
    transcript, the recorded fixture or the logs."""
    caplog.set_level(logging.DEBUG)
    reply = openai_body(
        f"your key is {KEY}",
        tool_calls=[{"id": "w", "name": "write_file", "arguments": {"path": "k", "content": KEY}}],
        finish_reason="tool_calls",
    )
    raw = json.dumps(reply).replace("your key is " + KEY, "escaped: " + ESCAPED)
    page = f"<html><body>proxy refused Authorization: Bearer {KEY}</body></html>".encode()
    provider.script(Reply(raw.encode()), Reply(page, 502), Reply(page, 401))
    clock = FakeClock()
    transcript = tmp_path / "run.jsonl"
    fixture = tmp_path / "fixture.jsonl"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    model = RecordingModelClient(openai(provider, clock), fixture)
    with capture_logs() as logs:
        result = await Harness(
            model=model,
            policy=TerminationPolicy(),
            tools=[write_file],
            workspace=workspace,
            clock=clock,
            transcript=transcript,
        ).run("say hi")
    assert isinstance(result.halt_reason, ModelFailed)
    assert result.halt_reason.kind == "auth"
    assert "Bearer [redacted]" in result.halt_reason.message
    assert result.transcript[2].content == "escaped: [redacted]"
    assert result.transcript[2].tool_calls[0].arguments["content"] == "[redacted]"
    for text in (
        repr(result.halt_reason),
        repr(result.transcript),
        transcript.read_text(),
        fixture.read_text(),
        (workspace / "k").read_text(),
        repr(logs),
        caplog.text,
    ):
        assert KEY not in text


async def test_a_key_cut_by_the_snippet_limit_is_still_redacted(provider: FakeProvider) -> None:
    """A body that is not JSON is quoted only in part; the key is removed before the cut, so
    not even its first half gets through."""
    provider.script(Reply(("." * 190 + KEY + "." * 50).encode()))
    with pytest.raises(ModelError) as caught:
        await openai(provider, FakeClock()).complete(hi())
    assert caught.value.kind == "malformed"
    assert KEY[:10] not in str(caught.value)
    assert "[redacted]" in str(caught.value)


@pytest.mark.parametrize("make", [openai, anthropic])
async def test_the_key_is_redacted_from_successful_replies_on_both_sdks(
    provider: FakeProvider, make: Any
) -> None:
    """Both clients read every reply through the same redaction."""
    if make is openai:
        provider.script(Reply(openai_body(f"k={KEY}")))
    else:
        provider.script(Reply(anthropic_body([{"type": "text", "text": f"k={KEY}"}])))
    client: ProviderClient = make(provider, FakeClock())
    response = await client.complete(hi())
    assert response.text == "k=[redacted]"
