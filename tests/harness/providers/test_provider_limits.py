"""On the API providers, a 429 whose reset lies beyond the retry budget is a usage limit: the run
pauses until the reset instead of failing. The provider is a loopback server."""

from __future__ import annotations

from typing import Any

import pytest
from _provider_server import FakeProvider, FileCheck, Reply, anthropic_body, openai_body
from _provider_server import anthropic_client as make_anthropic
from _provider_server import openai_client as make_openai

from harness import Harness, ModelError, PauseSettings, RetryPolicy, write_file
from harness._providers._retry import call_with_retry, wait_seconds
from harness.events import RunPaused
from harness.extend import UsageLimitError
from harness.testing import FakeClock, ListSink
from termination import TerminationPolicy

pytestmark = pytest.mark.anyio

DATE = "Thu, 26 Nov 2026 12:00:00 GMT"


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "30", "x-ratelimit-reset-requests": "6m0s"}, 30.0),
        # OpenAI's rate-limit headers: durations, for the limit with nothing remaining.
        (
            {
                "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": "6m30s",
                "x-ratelimit-remaining-tokens": "1000",
                "x-ratelimit-reset-tokens": "2h",
            },
            390.0,
        ),
        ({"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "250ms"}, 0.25),
        # Anthropic's: RFC 3339 times, measured against the response's Date.
        (
            {
                "anthropic-ratelimit-tokens-remaining": "0",
                "anthropic-ratelimit-tokens-reset": "2026-11-26T13:00:00Z",
                "date": DATE,
            },
            3600.0,
        ),
        (
            {
                "anthropic-ratelimit-requests-remaining": "0",
                "anthropic-ratelimit-requests-reset": "2026-11-26T13:00:00Z",
            },
            None,  # no Date: this machine's clock is never used
        ),
        ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "soon"}, None),
        ({"x-ratelimit-remaining-requests": "5", "x-ratelimit-reset-requests": "6m"}, None),
    ],
)
def test_the_wait_a_rate_limited_response_asks_for(
    headers: dict[str, str], expected: float | None
) -> None:
    assert wait_seconds(headers) == expected


async def test_a_429_beyond_max_wait_is_a_usage_limit() -> None:
    """A Retry-After longer than max_wait is not waited out by the client: it is a typed
    usage limit carrying the reset, without a wait."""
    clock = FakeClock()

    async def attempt() -> str:
        raise ModelError("slow down", kind="rate_limit", retryable=True, retry_after=3600)

    with pytest.raises(UsageLimitError) as caught:
        await call_with_retry(
            attempt, policy=RetryPolicy(max_wait=120), clock=clock, deadline=None, what="p m"
        )
    assert caught.value.limit.retry_in == 3600
    assert caught.value.limit.source == "p m"
    assert clock.now() == 0.0


async def test_a_server_error_with_a_long_retry_after_is_not_a_usage_limit() -> None:
    async def attempt() -> str:
        raise ModelError("down", kind="server", retryable=True, retry_after=3600)

    with pytest.raises(ModelError) as caught:
        await call_with_retry(
            attempt, policy=RetryPolicy(), clock=FakeClock(), deadline=None, what="p"
        )
    assert not isinstance(caught.value, UsageLimitError)


@pytest.mark.parametrize("provider_name", ["openai", "anthropic"])
async def test_a_run_pauses_on_a_long_429_and_completes_after_the_reset(
    provider: FakeProvider, tmp_path: Any, provider_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 429 asking for an hour pauses the run for the hour; the same turn then succeeds."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    clock = FakeClock()
    limited = Reply({"error": {"message": "rate limited"}}, 429, {"retry-after": "3600"})
    if provider_name == "openai":
        model: Any = make_openai(provider, clock)
        calls = openai_body(
            None, tool_calls=[{"id": "c1", "name": "write_file", "arguments": _write()}]
        )
        done = openai_body("done")
    else:
        model = make_anthropic(provider, clock)
        block = {"type": "tool_use", "id": "c1", "name": "write_file", "input": _write()}
        calls = anthropic_body([block], stop_reason="tool_use")
        done = anthropic_body([{"type": "text", "text": "done"}])
    provider.script(limited, Reply(calls), Reply(done))
    sink = ListSink()
    harness = Harness(
        model=model,
        policy=TerminationPolicy(completion_check=FileCheck("out.txt", "ok")),
        tools=[write_file],
        workspace=tmp_path,
        clock=clock,
        pause=PauseSettings(jitter=0),
        sinks=[sink],
    )
    result = await harness.run("write ok to out.txt")
    assert result.verified
    assert result.turns == 2
    (paused,) = sink.of_type(RunPaused)
    assert isinstance(paused, RunPaused)
    assert (paused.retry_in, paused.wait, paused.turn) == (3600.0, 3600.0, 1)
    assert clock.now() == 3600.0


def _write() -> dict[str, str]:
    return {"path": "out.txt", "content": "ok"}
