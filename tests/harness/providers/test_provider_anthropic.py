"""The Anthropic client, driven through the real SDK against a loopback server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _provider_server import FakeProvider, FileCheck, Reply, anthropic_body, anthropic_client

from harness import (
    AnthropicClient,
    ConfigurationError,
    Harness,
    Message,
    ModelError,
    ModelFailed,
    ToolCall,
    write_file,
)
from harness.extend import ModelRequest, ToolSpec
from harness.testing import FakeClock
from termination import TerminationPolicy

KEY = "sk-ant-loopback-0a1b2c3d4e5f"

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


make = anthropic_client


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


SPEC = ToolSpec(
    "run", "Run a command.", {"type": "object", "properties": {"cmd": {"type": "string"}}}
)


async def test_system_goes_to_its_parameter_and_tool_results_become_user_blocks(
    provider: FakeProvider,
) -> None:
    """Roles alternate: tool results and feedback merge into one user turn; system is separate."""
    provider.script(Reply(anthropic_body([text("ok")])))
    first = ToolCall("t1", "run", {"cmd": "ls"})
    second = ToolCall("t2", "run", {"cmd": "pwd"})
    messages = [
        Message.system("be careful"),
        Message.user("look around"),
        Message.assistant("checking", [first, second]),
        Message.tool_result(first, "a.txt"),
        Message.tool_result(second, "error: no such dir", is_error=True),
        Message.assistant(""),
        Message.feedback("completion_check", "b.txt is missing"),
    ]
    request = ModelRequest(messages, (SPEC,))
    await make(provider, max_tokens=512, options={"temperature": 0}).complete(request)
    [got] = provider.requests
    assert got.path == "/v1/messages"
    assert got.body["system"] == "be careful"
    assert got.body["max_tokens"] == 512
    assert got.body["temperature"] == 0
    assert got.body["tools"] == [
        {"name": "run", "description": "Run a command.", "input_schema": dict(SPEC.parameters)}
    ]
    assert got.body["messages"] == [
        {"role": "user", "content": [text("look around")]},
        {
            "role": "assistant",
            "content": [
                text("checking"),
                {"type": "tool_use", "id": "t1", "name": "run", "input": {"cmd": "ls"}},
                {"type": "tool_use", "id": "t2", "name": "run", "input": {"cmd": "pwd"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"},
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": "error: no such dir",
                    "is_error": True,
                },
                text(messages[6].content),
            ],
        },
    ]


async def test_blocks_usage_and_cache_pricing_come_back_typed(provider: FakeProvider) -> None:
    """Text blocks join, tool_use blocks become calls, and cache reads and writes are priced."""
    provider.script(
        Reply(
            anthropic_body(
                [
                    text("first "),
                    {"type": "thinking", "thinking": "hmm", "signature": "s"},
                    text("second"),
                    {"type": "tool_use", "id": "tu", "name": "run", "input": {"cmd": "ls"}},
                ],
                input_tokens=100,
                output_tokens=50,
                cache_read=1000,
                cache_write=200,
                stop_reason="tool_use",
            )
        )
    )
    response = await make(provider).complete(ModelRequest([Message.user("go")]))
    assert response.text == "first second"
    assert response.tool_calls == (ToolCall("tu", "run", {"cmd": "ls"}),)
    assert response.stop_reason == "tool_use"
    assert response.model == "claude-sonnet-4-20250514"
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cached_tokens) == (1300, 50, 1000)
    # $3 fresh, $15 output, $0.30 cache read, $3.75 cache write, per million tokens.
    expected = (100 * 3 + 50 * 15 + 1000 * 0.3 + 200 * 3.75) / 1_000_000
    assert usage.cost_usd == pytest.approx(expected)


async def test_overloaded_is_retried_and_auth_is_not(provider: FakeProvider) -> None:
    """A 529 is a retryable server error; a 401 then fails at once as 'auth', key redacted."""
    clock = FakeClock()
    provider.script(
        Reply({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}, 529),
        Reply({"type": "error", "error": {"type": "authentication_error", "message": KEY}}, 401),
    )
    with pytest.raises(ModelError) as caught:
        await make(provider, clock).complete(ModelRequest([Message.user("go")]))
    assert caught.value.kind == "auth"
    assert KEY not in str(caught.value)
    assert clock.now() == 1.0
    assert len(provider.requests) == 2
    headers = provider.requests[0].headers
    assert KEY in (
        headers.get("x-api-key"),
        headers.get("authorization", "").removeprefix("Bearer "),
    )


async def test_rate_limit_with_retry_after_ms_is_honoured(provider: FakeProvider) -> None:
    """The retry-after-ms header sets the wait when it is longer than the backoff."""
    clock = FakeClock()
    provider.script(
        Reply({"type": "error", "error": {"message": "slow"}}, 429, {"retry-after-ms": "2500"}),
        Reply(anthropic_body([text("ok")])),
    )
    response = await make(provider, clock).complete(ModelRequest([Message.user("go")]))
    assert response.text == "ok"
    assert clock.now() == 2.5


@pytest.mark.parametrize(
    "body",
    [
        {"type": "message"},
        {"content": "not a list"},
        {"content": [{"type": "tool_use", "id": "x", "name": "run", "input": "ls"}]},
        {"content": [{"type": "text", "text": 5}]},
        {"content": [{"no": "type"}]},
    ],
)
async def test_bodies_of_the_wrong_shape_are_malformed(provider: FakeProvider, body: Any) -> None:
    """A body without a usable content list is a `malformed` error, not retried."""
    provider.script(Reply(body))
    with pytest.raises(ModelError) as caught:
        await make(provider).complete(ModelRequest([Message.user("go")]))
    assert caught.value.kind == "malformed"
    assert len(provider.requests) == 1


async def test_a_run_with_tools_completes_and_a_bad_request_halts_another(
    provider: FakeProvider, tmp_path: Path
) -> None:
    """A full run uses a tool and passes the check; a 400 in a second run halts it, typed."""
    provider.script(
        Reply(
            anthropic_body(
                [
                    {
                        "type": "tool_use",
                        "id": "w",
                        "name": "write_file",
                        "input": {"path": "f", "content": "yes"},
                    }
                ],
                stop_reason="tool_use",
            )
        ),
        Reply(anthropic_body([text("finished")])),
        Reply({"type": "error", "error": {"message": "messages: roles must alternate"}}, 400),
    )
    clock = FakeClock()
    harness = Harness(
        model=make(provider, clock),
        policy=TerminationPolicy(completion_check=FileCheck("f", "yes")),
        tools=[write_file],
        workspace=tmp_path,
        clock=clock,
    )
    result = await harness.run("write yes to f")
    assert result.verified
    assert provider.requests[1].body["messages"][-1] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "w", "content": "wrote 3 bytes to f"}],
    }
    (tmp_path / "f").unlink()
    failed = await harness.run("write yes to f")
    assert isinstance(failed.halt_reason, ModelFailed)
    assert failed.halt_reason.kind == "bad_request"
    assert "roles must alternate" in failed.halt_reason.message
    assert failed.transcript[-1].role == "user"


def test_max_tokens_must_be_positive() -> None:
    """A max_tokens of zero is refused by name."""
    with pytest.raises(ConfigurationError, match="'max_tokens'"):
        AnthropicClient("claude-sonnet-4", max_tokens=0)
